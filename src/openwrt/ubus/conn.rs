//! `UbusConn`: the ubus protocol of one connection without I/O. Bytes from the broker go in
//! (`on_bytes`), bytes to send and events come out (`outgoing`, `poll_event`).

use super::wire::*;
use crate::log;
use crate::openwrt::blobmsg::{self, attrs, DecodeError, Value};
use std::collections::VecDeque;

/// Our calls awaiting an answer. They are rare (one per endpoint resolved from DNS); past
/// this the oldest is forgotten, so an object that never answers cannot grow the list.
pub(super) const MAX_CALLS: usize = 16;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Method {
    pub name: String,
    pub args: Vec<(String, ArgType)>,
}

impl Method {
    pub fn new(name: &str, args: &[(&str, ArgType)]) -> Method {
        Method {
            name: name.into(),
            args: args.iter().map(|(n, t)| (n.to_string(), *t)).collect(),
        }
    }
}

/// The one object a connection provides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectSpec {
    pub path: String,
    pub methods: Vec<Method>,
}

/// Identifies a method call to answer. It is bound to the connection it came in on: after a
/// reconnect, replying to it does nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Token {
    generation: u32,
    peer: u32,
    seq: u16,
    no_reply: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// The object is registered (again, after a reconnect) under this id.
    Registered { object_id: u32 },
    /// A call of one of our methods. `args` is a table holding only the declared arguments
    /// (unknown ones such as uhttpd's `ubus_rpc_session` are dropped), each of its declared
    /// type. Answer with `reply(token, ..)`.
    Invoke {
        method: String,
        args: Value,
        token: Token,
    },
    /// The outcome of one of our [`UbusConn::call`]s: the object's status, or NotFound
    /// when the path is not there.
    CallDone {
        path: String,
        method: String,
        status: u32,
    },
}

/// One of our calls: looked up, then invoked.
pub(super) struct Call {
    path: String,
    method: String,
    /// The encoded argument table (the DATA attribute's payload).
    data: Vec<u8>,
    stage: CallStage,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum CallStage {
    Lookup { seq: u16, id: Option<u32> },
    Invoke { seq: u16 },
}

#[derive(Debug, PartialEq, Eq)]
pub enum UbusError {
    /// Malformed or oversized input: the connection must be dropped.
    Protocol(&'static str),
    /// The broker refused our object (e.g. the path is taken).
    Rejected(u32),
    /// A message we were asked to send would exceed [`MAX_MESSAGE`].
    TooLarge,
    /// Not connected (or not yet greeted), or the token is from an earlier connection.
    NotConnected,
}

impl std::fmt::Display for UbusError {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            UbusError::Protocol(what) => write!(f, "ubus protocol error: {what}"),
            UbusError::Rejected(s) => write!(f, "ubus broker refused our object (status {s})"),
            UbusError::TooLarge => write!(f, "ubus message too large"),
            UbusError::NotConnected => write!(f, "ubus not connected"),
        }
    }
}

impl std::error::Error for UbusError {}

impl From<DecodeError> for UbusError {
    fn from(e: DecodeError) -> UbusError {
        UbusError::Protocol(e.0)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    AwaitHello,
    /// ADD_OBJECT sent with this sequence number; the id arrives in a DATA reply.
    AwaitAdd {
        seq: u16,
        id: Option<u32>,
    },
    Ready {
        id: u32,
    },
}

/// The ubus protocol of one connection, without I/O.
pub struct UbusConn {
    object: ObjectSpec,
    state: State,
    rx: Vec<u8>,
    tx: Vec<u8>,
    seq: u16,
    generation: u32,
    events: VecDeque<Event>,
    pub(super) calls: VecDeque<Call>,
}

/// Drops the first `n` bytes of `v`, leaving zeros (not stale copies) everywhere else in its
/// allocation.
fn wipe_front(v: &mut Vec<u8>, n: usize) {
    let rest = v.len() - n;
    v.copy_within(n.., 0);
    zeroize::Zeroize::zeroize(&mut v[rest..]);
    v.truncate(rest);
}

impl UbusConn {
    pub fn new(object: ObjectSpec) -> UbusConn {
        UbusConn {
            object,
            state: State::AwaitHello,
            rx: Vec::new(),
            tx: Vec::new(),
            seq: 0,
            generation: 0,
            events: VecDeque::new(),
            calls: VecDeque::new(),
        }
    }

    /// Forgets the connection (call on every new socket): buffers, events and outstanding
    /// tokens are dropped; the next HELLO registers the object again.
    pub fn reset(&mut self) {
        self.state = State::AwaitHello;
        self.rx = Vec::new();
        self.tx = Vec::new();
        self.events.clear();
        // Their answers would come from a broker that no longer knows them.
        self.calls.clear();
        self.generation = self.generation.wrapping_add(1);
    }

    pub fn object(&self) -> &ObjectSpec {
        &self.object
    }

    /// The broker's id of our object once registered.
    pub fn object_id(&self) -> Option<u32> {
        match self.state {
            State::Ready { id } => Some(id),
            _ => None,
        }
    }

    /// Bytes waiting to be written to the socket.
    pub fn outgoing(&self) -> &[u8] {
        &self.tx
    }

    /// Drops the first `n` bytes of `outgoing()` (they were written).
    pub fn consume(&mut self, n: usize) {
        // Replies may hold a key (genkey, genpsk): wipe what was written, and the tail
        // left behind by the shift.
        let n = n.min(self.tx.len());
        wipe_front(&mut self.tx, n);
    }

    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    fn next_seq(&mut self) -> u16 {
        self.seq = self.seq.wrapping_add(1);
        self.seq
    }

    /// Queues one message; `body` is the payload of the outer blob attribute.
    fn queue(&mut self, ty: u8, seq: u16, peer: u32, body: &[u8]) -> Result<(), UbusError> {
        if 4 + body.len() > MAX_MESSAGE {
            return Err(UbusError::TooLarge);
        }
        // Queued replies may hold a key (genkey): growing the buffer must not leave a copy.
        crate::proto::uapi::reserve_wiping(&mut self.tx, HEADER + 4 + body.len());
        put_frame(&mut self.tx, ty, seq, peer, body);
        Ok(())
    }

    /// Feeds bytes read from the socket. An error means the stream is unusable: reconnect.
    pub fn on_bytes(&mut self, data: &[u8]) -> Result<(), UbusError> {
        // Calls may carry a key (pubkey's private_key): no copy left behind by growth.
        crate::proto::uapi::reserve_wiping(&mut self.rx, data.len());
        self.rx.extend_from_slice(data);
        let mut at = 0;
        let result = loop {
            let Some(head) = self.rx.get(at..at + HEADER + 4) else {
                break Ok(());
            };
            if head[0] != 0 {
                break Err(UbusError::Protocol("unknown message version"));
            }
            let hdr = Header {
                ty: head[1],
                seq: u16::from_be_bytes([head[2], head[3]]),
                peer: u32::from_be_bytes([head[4], head[5], head[6], head[7]]),
            };
            let word = u32::from_be_bytes([head[8], head[9], head[10], head[11]]);
            let len = (word & 0x00ff_ffff) as usize;
            if len < 4 {
                break Err(UbusError::Protocol("message blob shorter than its header"));
            }
            if len > MAX_MESSAGE {
                break Err(UbusError::Protocol("message larger than 1 MiB"));
            }
            let Some(frame) = self.rx.get(at + HEADER + 4..at + HEADER + len) else {
                break Ok(());
            };
            // The handlers queue output and events only; copying the body out lets them
            // borrow `self` mutably.
            let mut body = frame.to_vec();
            at += HEADER + len;
            let r = self.handle(hdr, &body);
            // Arguments may hold a key (pubkey's private_key).
            zeroize::Zeroize::zeroize(&mut body);
            if let Err(e) = r {
                break Err(e);
            }
        };
        wipe_front(&mut self.rx, at);
        result
    }

    fn handle(&mut self, hdr: Header, body: &[u8]) -> Result<(), UbusError> {
        let mut tb: [Option<&[u8]>; ATTR_MAX] = [None; ATTR_MAX];
        for a in attrs(body) {
            let a = a?;
            if let Some(slot) = tb.get_mut(usize::from(a.id)) {
                slot.get_or_insert(a.payload);
            }
        }
        match (hdr.ty, self.state) {
            (MSG_HELLO, State::AwaitHello) => self.add_object(),
            (MSG_DATA, State::AwaitAdd { seq, id: None }) if hdr.seq == seq => {
                let id = tb[usize::from(ATTR_OBJID)].and_then(u32_of);
                self.state = State::AwaitAdd { seq, id };
                Ok(())
            }
            (MSG_STATUS, State::AwaitAdd { seq, id }) if hdr.seq == seq => {
                let status = tb[usize::from(ATTR_STATUS)]
                    .and_then(u32_of)
                    .ok_or(UbusError::Protocol("STATUS without status"))?;
                match (status, id) {
                    (0, Some(id)) => {
                        self.state = State::Ready { id };
                        self.events.push_back(Event::Registered { object_id: id });
                        Ok(())
                    }
                    (0, None) => Err(UbusError::Protocol("ADD_OBJECT reply without object id")),
                    (s, _) => Err(UbusError::Rejected(s)),
                }
            }
            (MSG_INVOKE, _) => self.invoke(hdr, &tb),
            (MSG_DATA | MSG_STATUS, _) if self.call_answered(hdr, &tb)? => Ok(()),
            // Replies to our event sends (the C broker sends none) and anything else we did
            // not ask for; the brokers don't ping clients, and a PING needs no answer.
            (MSG_STATUS | MSG_DATA | MSG_PING, _) => Ok(()),
            _ => Ok(()),
        }
    }

    /// Moves one of our calls on if `hdr` answers it; false when the message is not ours.
    fn call_answered(
        &mut self,
        hdr: Header,
        tb: &[Option<&[u8]>; ATTR_MAX],
    ) -> Result<bool, UbusError> {
        let Some(i) = self.calls.iter().position(|c| match c.stage {
            CallStage::Lookup { seq, .. } | CallStage::Invoke { seq } => seq == hdr.seq,
        }) else {
            return Ok(false);
        };
        let status = tb[usize::from(ATTR_STATUS)].and_then(u32_of);
        match (hdr.ty, self.calls[i].stage) {
            (MSG_DATA, CallStage::Lookup { seq, id: None }) => {
                let id = tb[usize::from(ATTR_OBJID)].and_then(u32_of);
                self.calls[i].stage = CallStage::Lookup { seq, id };
            }
            (MSG_STATUS, CallStage::Lookup { id: Some(id), .. }) if status == Some(0) => {
                let seq = self.next_seq();
                let c = &mut self.calls[i];
                c.stage = CallStage::Invoke { seq };
                let mut b = Vec::new();
                blobmsg::put_blob_u32(&mut b, ATTR_OBJID, id);
                blobmsg::put_blob_str(&mut b, ATTR_METHOD, &c.method);
                let at = blobmsg::begin(&mut b);
                b.extend_from_slice(&c.data);
                blobmsg::end(&mut b, at, false, ATTR_DATA);
                self.queue(MSG_INVOKE, seq, id, &b)?;
            }
            (MSG_STATUS, stage) => {
                let c = self.calls.remove(i).expect("index found above");
                let status = match (status, stage) {
                    // A lookup that found nothing answers 0 with no DATA before it.
                    (Some(0) | None, CallStage::Lookup { .. }) => Status::NotFound as u32,
                    (Some(s), _) => s,
                    (None, _) => Status::UnknownError as u32,
                };
                self.events.push_back(Event::CallDone {
                    path: c.path,
                    method: c.method,
                    status,
                });
            }
            // The called method's DATA, or a second DATA of a lookup: nothing we use.
            _ => {}
        }
        Ok(true)
    }

    /// Calls `method` of the object at `path` with the argument table `args`; the outcome
    /// comes as [`Event::CallDone`]. Only once registered: before that the broker is not
    /// known to be there.
    pub fn call(
        &mut self,
        path: &str,
        method: &str,
        args: &[(String, Value)],
    ) -> Result<(), UbusError> {
        if self.object_id().is_none() {
            return Err(UbusError::NotConnected);
        }
        let mut data = Vec::new();
        blobmsg::encode_table(&mut data, args);
        if data.len() + 64 + path.len() + method.len() > MAX_MESSAGE {
            return Err(UbusError::TooLarge);
        }
        if self.calls.len() >= MAX_CALLS {
            if let Some(old) = self.calls.pop_front() {
                log::error(format_args!(
                    "ubus: no answer to {} {}; given up",
                    old.path, old.method
                ));
            }
        }
        let seq = self.next_seq();
        let mut b = Vec::new();
        blobmsg::put_blob_str(&mut b, ATTR_OBJPATH, path);
        self.queue(MSG_LOOKUP, seq, 0, &b)?;
        self.calls.push_back(Call {
            path: path.to_string(),
            method: method.to_string(),
            data,
            stage: CallStage::Lookup { seq, id: None },
        });
        Ok(())
    }

    fn add_object(&mut self) -> Result<(), UbusError> {
        let mut b = Vec::new();
        blobmsg::put_blob_str(&mut b, ATTR_OBJPATH, &self.object.path);
        let sig = blobmsg::begin(&mut b);
        for m in &self.object.methods {
            let args = m
                .args
                .iter()
                .map(|(n, t)| (n.clone(), Value::Int(t.blob_type().into())))
                .collect();
            blobmsg::encode_attr(&mut b, &m.name, &Value::Table(args));
        }
        blobmsg::end(&mut b, sig, false, ATTR_SIGNATURE);
        let seq = self.next_seq();
        self.queue(MSG_ADD_OBJECT, seq, 0, &b)?;
        self.state = State::AwaitAdd { seq, id: None };
        Ok(())
    }

    fn invoke(&mut self, hdr: Header, tb: &[Option<&[u8]>; ATTR_MAX]) -> Result<(), UbusError> {
        let token = Token {
            generation: self.generation,
            peer: hdr.peer,
            seq: hdr.seq,
            no_reply: tb[usize::from(ATTR_NO_REPLY)]
                .and_then(|p| p.first())
                .is_some_and(|&b| b != 0),
        };
        let target = tb[usize::from(ATTR_OBJID)].and_then(u32_of);
        if target.is_none() || target != self.object_id() {
            return self.reply_status(token, target.unwrap_or(0), Status::NotFound as u32);
        }
        let name = tb[usize::from(ATTR_METHOD)]
            .map(cstr_of)
            .unwrap_or_default();
        let Some(method) = self.object.methods.iter().find(|m| m.name == name) else {
            return self.reply_status(token, target.unwrap_or(0), Status::MethodNotFound as u32);
        };
        // Arguments that don't decode are the caller's problem, not the stream's: the
        // outer framing is intact, so answer and carry on.
        let given = match tb[usize::from(ATTR_DATA)].map(blobmsg::decode_table) {
            None => Vec::new(),
            Some(Ok(t)) => t,
            Some(Err(_)) => {
                let id = target.unwrap_or(0);
                return self.reply_status(token, id, Status::InvalidArgument as u32);
            }
        };
        let mut args = Vec::new();
        for (k, v) in given {
            let Some((_, ty)) = method.args.iter().find(|(n, _)| *n == k) else {
                continue;
            };
            if !ty.accepts(&v) {
                let id = target.unwrap_or(0);
                return self.reply_status(token, id, Status::InvalidArgument as u32);
            }
            if !args.iter().any(|(n, _)| *n == k) {
                args.push((k, v));
            }
        }
        self.events.push_back(Event::Invoke {
            method: name,
            args: Value::Table(args),
            token,
        });
        Ok(())
    }

    fn reply_status(&mut self, token: Token, objid: u32, status: u32) -> Result<(), UbusError> {
        if token.no_reply {
            return Ok(());
        }
        let mut b = Vec::new();
        blobmsg::put_blob_u32(&mut b, ATTR_STATUS, status);
        blobmsg::put_blob_u32(&mut b, ATTR_OBJID, objid);
        self.queue(MSG_STATUS, token.seq, token.peer, &b)
    }

    /// Answers a call: DATA with `data` (if any), then STATUS. A data table too large to
    /// send becomes an UNKNOWN_ERROR status (the caller is not left waiting) and
    /// `Err(TooLarge)`. Tokens of an earlier connection give `Err(NotConnected)`.
    pub fn reply(
        &mut self,
        token: Token,
        status: Status,
        data: Option<&[(String, Value)]>,
    ) -> Result<(), UbusError> {
        let Some(id) = self
            .object_id()
            .filter(|_| token.generation == self.generation)
        else {
            return Err(UbusError::NotConnected);
        };
        if token.no_reply {
            return Ok(());
        }
        let mut result = Ok(());
        let mut status = status as u32;
        if let Some(data) = data {
            // Sized so a reply with a key (genkey: ~150 bytes) never reallocates, and wiped
            // once queued.
            let mut b = zeroize::Zeroizing::new(Vec::with_capacity(1024));
            blobmsg::put_blob_u32(&mut b, ATTR_OBJID, id);
            let at = blobmsg::begin(&mut b);
            blobmsg::encode_table(&mut b, data);
            if b.len() + 4 > MAX_MESSAGE {
                status = Status::UnknownError as u32;
                result = Err(UbusError::TooLarge);
            } else {
                blobmsg::end(&mut b, at, false, ATTR_DATA);
                self.queue(MSG_DATA, token.seq, token.peer, &b)?;
            }
        }
        self.reply_status(token, id, status)?;
        result
    }

    /// Broadcasts event `name` with `data` to the broker's listeners (`ubus listen`).
    pub fn send_event(&mut self, name: &str, data: &[(String, Value)]) -> Result<(), UbusError> {
        if self.state == State::AwaitHello {
            return Err(UbusError::NotConnected);
        }
        let mut b = Vec::new();
        blobmsg::put_blob_u32(&mut b, ATTR_OBJID, EVENT_OBJECT);
        blobmsg::put_blob_str(&mut b, ATTR_METHOD, "send");
        let at = blobmsg::begin(&mut b);
        blobmsg::encode_attr(&mut b, "id", &Value::str(name));
        let named = blobmsg::begin_named(&mut b, "data");
        blobmsg::encode_table(&mut b, data);
        if b.len() + 4 > MAX_MESSAGE {
            return Err(UbusError::TooLarge);
        }
        blobmsg::end(&mut b, named, true, blobmsg::TYPE_TABLE);
        blobmsg::end(&mut b, at, false, ATTR_DATA);
        let seq = self.next_seq();
        self.queue(MSG_INVOKE, seq, EVENT_OBJECT, &b)
    }
}
