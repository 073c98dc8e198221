//! A ubus object provider: `UbusConn` is the sans-IO protocol (bytes in, bytes and events
//! out), `UbusClient` the non-blocking unix-socket shell for our epoll loop.
//!
//! Wire format (OpenWrt `ubusmsg.h`): every message is an 8-byte header (version 0, type,
//! big-endian u16 sequence number, big-endian u32 peer id) followed by one blob attribute
//! (id 0) whose payload is a list of blob attributes (`ATTR_*`). The broker greets a new
//! client with HELLO; we then ADD_OBJECT with a signature (one blobmsg table per method,
//! argument name -> blobmsg type as INT32) and get DATA (object id) and STATUS back. A
//! method call arrives as INVOKE; the answer is DATA (optional) and STATUS with the same
//! sequence number, addressed to the caller's peer id. Events are INVOKEs of method `send`
//! on the broker's event object (id 1). Our own calls of other objects (netifd's
//! `notify_proto`) are a LOOKUP of the path (DATA with its id, then STATUS) followed by an
//! INVOKE addressed to that id, answered by STATUS.

use crate::log;
use crate::openwrt::blobmsg::{self, attrs, DecodeError, Value};
use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub const DEFAULT_SOCKET: &str = "/var/run/ubus/ubus.sock";
/// Environment variable that overrides [`DEFAULT_SOCKET`].
pub const SOCKET_ENV: &str = "UBUS_SOCKET";

/// Largest message either side may send (the brokers' `UBUS_MAX_MSGLEN`), blob included.
pub const MAX_MESSAGE: usize = 1 << 20;
/// Unsent bytes allowed to pile up before the connection is dropped as stuck.
pub const MAX_QUEUE: usize = 1 << 20;

const HEADER: usize = 8;

// Message types.
const MSG_HELLO: u8 = 0;
const MSG_STATUS: u8 = 1;
const MSG_DATA: u8 = 2;
const MSG_PING: u8 = 3;
const MSG_LOOKUP: u8 = 4;
const MSG_INVOKE: u8 = 5;
const MSG_ADD_OBJECT: u8 = 6;

// Envelope attributes.
const ATTR_STATUS: u8 = 1;
const ATTR_OBJPATH: u8 = 2;
const ATTR_OBJID: u8 = 3;
const ATTR_METHOD: u8 = 4;
const ATTR_SIGNATURE: u8 = 6;
const ATTR_DATA: u8 = 7;
const ATTR_NO_REPLY: u8 = 10;
const ATTR_MAX: usize = 14;

/// The broker's event object: events are INVOKE "send" on it.
const EVENT_OBJECT: u32 = 1;

/// Our calls awaiting an answer. They are rare (one per endpoint resolved from DNS); past
/// this the oldest is forgotten, so an object that never answers cannot grow the list.
const MAX_CALLS: usize = 16;

/// ubus status codes (`enum ubus_msg_status`), all of them: the numbering is the protocol's.
#[allow(dead_code)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Status {
    Ok = 0,
    InvalidCommand = 1,
    InvalidArgument = 2,
    MethodNotFound = 3,
    NotFound = 4,
    NoData = 5,
    PermissionDenied = 6,
    Timeout = 7,
    NotSupported = 8,
    UnknownError = 9,
    ConnectionFailed = 10,
    NoMemory = 11,
    ParseError = 12,
    SystemError = 13,
}

/// What the `ubus` CLI prints for a status code, for logs; the number for one outside the
/// protocol's list.
pub fn status_text(status: u32) -> std::borrow::Cow<'static, str> {
    const TEXT: [&str; 14] = [
        "Success",
        "Invalid command",
        "Invalid argument",
        "Method not found",
        "Not found",
        "No response",
        "Permission denied",
        "Request timed out",
        "Operation not supported",
        "Unknown error",
        "Connection failed",
        "Out of memory",
        "Parsing message data failed",
        "System error",
    ];
    match TEXT.get(status as usize) {
        Some(t) => std::borrow::Cow::Borrowed(t),
        None => std::borrow::Cow::Owned(format!("status {status}")),
    }
}

/// Declared type of a method argument (what `ubus -v list` shows), each blobmsg type a
/// policy may name.
#[allow(dead_code)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgType {
    Array,
    Table,
    String,
    Int64,
    Int32,
    Int16,
    Bool,
    Double,
}

impl ArgType {
    fn blob_type(self) -> u8 {
        match self {
            ArgType::Array => blobmsg::TYPE_ARRAY,
            ArgType::Table => blobmsg::TYPE_TABLE,
            ArgType::String => blobmsg::TYPE_STRING,
            ArgType::Int64 => blobmsg::TYPE_INT64,
            ArgType::Int32 => blobmsg::TYPE_INT32,
            ArgType::Int16 => blobmsg::TYPE_INT16,
            ArgType::Bool => blobmsg::TYPE_BOOL,
            ArgType::Double => blobmsg::TYPE_DOUBLE,
        }
    }

    /// Whether a decoded argument has this declared type.
    pub fn accepts(self, v: &Value) -> bool {
        matches!(
            (self, v),
            (ArgType::Array, Value::Array(_))
                | (ArgType::Table, Value::Table(_))
                | (ArgType::String, Value::Str(_))
                | (
                    ArgType::Int64 | ArgType::Int32 | ArgType::Int16,
                    Value::Int(_)
                )
                | (ArgType::Bool, Value::Bool(_))
                | (ArgType::Double, Value::Double(_))
        )
    }
}

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
struct Call {
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
    calls: VecDeque<Call>,
}

/// One message header.
#[derive(Clone, Copy, Debug)]
struct Header {
    ty: u8,
    seq: u16,
    peer: u32,
}

/// Appends one message: header (version 0, type, sequence, peer) and the outer blob
/// attribute holding `body`. Also what tests and the fuzz target build their input with.
pub fn put_frame(out: &mut Vec<u8>, ty: u8, seq: u16, peer: u32, body: &[u8]) {
    out.extend_from_slice(&[0, ty]);
    out.extend_from_slice(&seq.to_be_bytes());
    out.extend_from_slice(&peer.to_be_bytes());
    out.extend_from_slice(&((4 + body.len()) as u32).to_be_bytes());
    out.extend_from_slice(body);
}

/// Drops the first `n` bytes of `v`, leaving zeros (not stale copies) everywhere else in its
/// allocation.
fn wipe_front(v: &mut Vec<u8>, n: usize) {
    let rest = v.len() - n;
    v.copy_within(n.., 0);
    zeroize::Zeroize::zeroize(&mut v[rest..]);
    v.truncate(rest);
}

fn u32_of(p: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(p.get(..4)?.try_into().ok()?))
}

fn cstr_of(p: &[u8]) -> String {
    String::from_utf8_lossy(&p[..p.iter().position(|&c| c == 0).unwrap_or(p.len())]).into_owned()
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

/// Where to find the broker: `$UBUS_SOCKET`, else [`DEFAULT_SOCKET`].
pub fn socket_path() -> PathBuf {
    std::env::var_os(SOCKET_ENV)
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_SOCKET))
}

const BACKOFF_MIN: Duration = Duration::from_millis(250);
const BACKOFF_MAX: Duration = Duration::from_secs(10);
/// A broker that accepted us but hasn't confirmed our object within this is dropped.
const REGISTER_TIMEOUT: Duration = Duration::from_secs(5);
/// Reads per `on_readable` call before yielding to other sources.
const READ_BATCH: usize = 16;
const READ_CHUNK: usize = 16 * 1024;

/// The I/O shell: a non-blocking unix socket to the broker, reconnecting with backoff.
///
/// Loop contract: after `on_timer` returns true, register `fd()` (edge-triggered, read and
/// write) and call `on_readable`; on readiness call `on_readable`/`on_writable`; sleep no
/// longer than `next_deadline()`; take `poll_event()` until None after each call. A closed
/// socket leaves epoll by itself, so there is nothing to unregister.
pub struct UbusClient {
    path: PathBuf,
    conn: UbusConn,
    sock: Option<UnixStream>,
    /// Disconnected: when to try again. Connected: when to give up waiting for registration.
    deadline: Option<Instant>,
    backoff: Duration,
    chunk: Vec<u8>,
}

impl UbusClient {
    /// Nothing happens until the first `on_timer`, which is due at once.
    pub fn new(path: impl Into<PathBuf>, object: ObjectSpec) -> UbusClient {
        UbusClient {
            path: path.into(),
            conn: UbusConn::new(object),
            sock: None,
            deadline: Some(Instant::now()),
            backoff: BACKOFF_MIN,
            chunk: Vec::new(),
        }
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.sock.as_ref().map(|s| s.as_fd())
    }

    pub fn is_connected(&self) -> bool {
        self.sock.is_some()
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn object_id(&self) -> Option<u32> {
        self.conn.object_id()
    }

    pub fn next_deadline(&self) -> Option<Instant> {
        self.deadline
    }

    pub fn poll_event(&mut self) -> Option<Event> {
        let ev = self.conn.poll_event();
        if let Some(Event::Registered { object_id }) = &ev {
            log::info(format_args!(
                "ubus: object {} registered (id {object_id:#x})",
                self.conn.object().path
            ));
        }
        ev
    }

    /// Reconnects when due, or gives up on a broker that didn't register us in time.
    /// Returns true when a new socket is up: register `fd()` with the poller.
    pub fn on_timer(&mut self, now: Instant) -> bool {
        match self.deadline {
            Some(d) if d <= now => {}
            _ => return false,
        }
        if self.sock.is_some() {
            self.drop_connection("no registration from the broker", now);
            return false;
        }
        match connect(&self.path) {
            Ok(s) => {
                self.conn.reset();
                self.sock = Some(s);
                self.deadline = Some(now + REGISTER_TIMEOUT);
                true
            }
            Err(e) => {
                log::verbose(format_args!("ubus: connect {}: {e}", self.path.display()));
                self.deadline = Some(now + self.backoff);
                self.backoff = (self.backoff * 2).min(BACKOFF_MAX);
                false
            }
        }
    }

    fn drop_connection(&mut self, why: &str, now: Instant) {
        if self.sock.take().is_some() {
            log::info(format_args!("ubus: {why}; reconnecting"));
        }
        self.conn.reset();
        self.deadline = Some(now + self.backoff);
        self.backoff = (self.backoff * 2).min(BACKOFF_MAX);
    }

    /// Reads until WouldBlock or a batch limit; returns true when input may remain (call
    /// again without waiting for epoll).
    pub fn on_readable(&mut self) -> bool {
        let Some(sock) = self.sock.as_mut() else {
            return false;
        };
        self.chunk.resize(READ_CHUNK, 0);
        let mut failure: Option<String> = None;
        let mut more = true;
        for _ in 0..READ_BATCH {
            match crate::sys::recv(sock.as_fd(), &mut self.chunk, 0) {
                Ok(0) => {
                    failure = Some("broker closed the connection".into());
                    break;
                }
                Ok(n) => {
                    if let Err(e) = self.conn.on_bytes(&self.chunk[..n]) {
                        failure = Some(e.to_string());
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    more = false;
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    failure = Some(format!("read: {e}"));
                    break;
                }
            }
        }
        zeroize::Zeroize::zeroize(&mut self.chunk); // it held the last read (maybe a key)
        self.chunk = Vec::new();
        if let Some(why) = failure {
            self.drop_connection(&why, Instant::now());
            return false;
        }
        if self.conn.object_id().is_some() && self.deadline.is_some() {
            self.deadline = None;
            self.backoff = BACKOFF_MIN;
        }
        self.on_writable();
        more
    }

    /// Writes queued output until WouldBlock; drops a connection whose queue outgrew
    /// [`MAX_QUEUE`].
    pub fn on_writable(&mut self) {
        let Some(sock) = self.sock.as_mut() else {
            return;
        };
        let mut failure = None;
        // Each write either makes progress or stops the loop; the bound is a backstop.
        for _ in 0..1024 {
            if self.conn.outgoing().is_empty() {
                break;
            }
            match crate::sys::send(sock.as_fd(), self.conn.outgoing(), 0) {
                Ok(0) => {
                    failure = Some("write returned 0".to_string());
                    break;
                }
                Ok(n) => self.conn.consume(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    failure = Some(format!("write: {e}"));
                    break;
                }
            }
        }
        if failure.is_none() && self.conn.outgoing().len() > MAX_QUEUE {
            failure = Some("broker does not read; send queue full".into());
        }
        if let Some(why) = failure {
            self.drop_connection(&why, Instant::now());
        }
    }

    /// Leaves the broker for good (no reconnection): the object disappears at once.
    pub fn close(&mut self) {
        self.sock = None;
        self.conn.reset();
        self.deadline = None;
    }

    /// See [`UbusConn::reply`]; the answer is written at once where the socket allows.
    pub fn reply(
        &mut self,
        token: Token,
        status: Status,
        data: Option<&[(String, Value)]>,
    ) -> Result<(), UbusError> {
        let r = self.conn.reply(token, status, data);
        self.on_writable();
        r
    }

    /// See [`UbusConn::call`]; the request is written at once where the socket allows.
    pub fn call(
        &mut self,
        path: &str,
        method: &str,
        args: &[(String, Value)],
    ) -> Result<(), UbusError> {
        let r = self.conn.call(path, method, args);
        self.on_writable();
        r
    }

    /// See [`UbusConn::send_event`]. Events while disconnected are lost.
    pub fn send_event(&mut self, name: &str, data: &[(String, Value)]) -> Result<(), UbusError> {
        if self.sock.is_none() {
            return Err(UbusError::NotConnected);
        }
        let r = self.conn.send_event(name, data);
        self.on_writable();
        r
    }
}

fn connect(path: &Path) -> io::Result<UnixStream> {
    use socket2::{Domain, SockAddr, Socket, Type};
    let s = Socket::new(Domain::UNIX, Type::STREAM.nonblocking().cloexec(), None)?;
    // A unix stream connect completes at once or fails (EAGAIN: backlog full, retried later).
    s.connect(&SockAddr::unix(path)?)?;
    Ok(s.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openwrt::blobmsg::{put_blob, put_blob_str, put_blob_u32};

    const ATTR_OBJTYPE: u8 = 5;

    fn spec() -> ObjectSpec {
        ObjectSpec {
            path: "t".into(),
            methods: vec![
                Method::new("status", &[]),
                Method::new("echo", &[("msg", ArgType::String), ("n", ArgType::Int32)]),
            ],
        }
    }

    fn frame(ty: u8, seq: u16, peer: u32, body: &[u8]) -> Vec<u8> {
        let mut f = Vec::new();
        put_frame(&mut f, ty, seq, peer, body);
        f
    }

    type Parsed = (u8, u16, u32, Vec<(u8, Vec<u8>)>);

    /// Splits outgoing bytes into messages and their envelope attributes.
    fn parse(mut b: &[u8]) -> Vec<Parsed> {
        let mut out = Vec::new();
        while !b.is_empty() {
            let len = u32::from_be_bytes(b[8..12].try_into().unwrap()) as usize;
            let body = &b[12..8 + len];
            let a = attrs(body)
                .map(|a| a.unwrap())
                .map(|a| (a.id, a.payload.to_vec()))
                .collect();
            out.push((
                b[1],
                u16::from_be_bytes([b[2], b[3]]),
                u32::from_be_bytes(b[4..8].try_into().unwrap()),
                a,
            ));
            b = &b[8 + len..];
        }
        out
    }

    fn attr(m: &Parsed, id: u8) -> &[u8] {
        &m.3.iter().find(|(i, _)| *i == id).expect("attribute").1
    }

    fn take_out(c: &mut UbusConn) -> Vec<Parsed> {
        let p = parse(c.outgoing());
        let n = c.outgoing().len();
        c.consume(n);
        p
    }

    const OBJ: u32 = 0x8765_4321;

    /// A connection with the object registered under OBJ, outgoing empty.
    fn registered() -> UbusConn {
        let mut c = UbusConn::new(spec());
        c.on_bytes(&frame(MSG_HELLO, 0, 0x42, &[])).unwrap();
        let add = take_out(&mut c);
        let seq = add[0].1;
        let mut d = Vec::new();
        put_blob_u32(&mut d, ATTR_OBJID, OBJ);
        put_blob_u32(&mut d, ATTR_OBJTYPE, 0x99);
        let mut s = Vec::new();
        put_blob_u32(&mut s, ATTR_STATUS, 0);
        c.on_bytes(&frame(MSG_DATA, seq, 0, &d)).unwrap();
        c.on_bytes(&frame(MSG_STATUS, seq, 0, &s)).unwrap();
        assert_eq!(c.poll_event(), Some(Event::Registered { object_id: OBJ }));
        c
    }

    fn invoke(seq: u16, peer: u32, obj: u32, method: &str, args: &[(String, Value)]) -> Vec<u8> {
        let mut b = Vec::new();
        put_blob_u32(&mut b, ATTR_OBJID, obj);
        put_blob_str(&mut b, ATTR_METHOD, method);
        let mut data = Vec::new();
        blobmsg::encode_table(&mut data, args);
        put_blob(&mut b, ATTR_DATA, &data);
        frame(MSG_INVOKE, seq, peer, &b)
    }

    fn kv(k: &str, v: Value) -> (String, Value) {
        (k.to_string(), v)
    }

    fn status(seq: u16, st: u32) -> Vec<u8> {
        let mut s = Vec::new();
        put_blob_u32(&mut s, ATTR_STATUS, st);
        frame(MSG_STATUS, seq, 0, &s)
    }

    #[test]
    fn status_texts() {
        assert_eq!(
            status_text(Status::PermissionDenied as u32),
            "Permission denied"
        );
        assert_eq!(status_text(Status::SystemError as u32), "System error");
        assert_eq!(status_text(99), "status 99");
    }

    /// Our own call (netifd's notify_proto): LOOKUP of the path, INVOKE of the id it gave,
    /// and the STATUS of that as the outcome.
    #[test]
    fn call_looks_up_then_invokes() {
        let mut c = registered();
        let args = [
            kv("action", Value::Int(6)),
            kv("host", Value::str("192.0.2.7")),
        ];
        c.call("network.interface", "notify_proto", &args).unwrap();
        let out = take_out(&mut c);
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].0, out[0].2), (MSG_LOOKUP, 0));
        assert_eq!(attr(&out[0], ATTR_OBJPATH), b"network.interface\0");
        let seq = out[0].1;
        let mut d = Vec::new();
        put_blob_str(&mut d, ATTR_OBJPATH, "network.interface");
        put_blob_u32(&mut d, ATTR_OBJID, 0x77);
        c.on_bytes(&frame(MSG_DATA, seq, 0, &d)).unwrap();
        c.on_bytes(&status(seq, 0)).unwrap();
        let out = take_out(&mut c);
        assert_eq!((out[0].0, out[0].2), (MSG_INVOKE, 0x77));
        assert_eq!(attr(&out[0], ATTR_OBJID), 0x77u32.to_be_bytes());
        assert_eq!(attr(&out[0], ATTR_METHOD), b"notify_proto\0");
        let sent = blobmsg::decode_table(attr(&out[0], ATTR_DATA)).unwrap();
        assert_eq!(sent, args.to_vec());
        assert_ne!(out[0].1, seq);
        assert_eq!(c.poll_event(), None);
        // The object's DATA is not ours to use; its STATUS ends the call.
        c.on_bytes(&frame(MSG_DATA, out[0].1, 0x77, &[])).unwrap();
        c.on_bytes(&status(out[0].1, 6)).unwrap();
        assert_eq!(
            c.poll_event(),
            Some(Event::CallDone {
                path: "network.interface".into(),
                method: "notify_proto".into(),
                status: 6
            })
        );
        assert!(take_out(&mut c).is_empty());
    }

    #[test]
    fn call_of_a_missing_object_and_bounds() {
        let mut c = UbusConn::new(spec());
        assert_eq!(c.call("x", "m", &[]), Err(UbusError::NotConnected));
        let mut c = registered();
        c.call("nobody", "m", &[]).unwrap();
        let seq = take_out(&mut c)[0].1;
        // ubusd answers a lookup that found nothing with STATUS alone.
        c.on_bytes(&status(seq, 0)).unwrap();
        let done = c.poll_event();
        assert!(
            matches!(done, Some(Event::CallDone { status, .. }) if status == Status::NotFound as u32),
            "{done:?}"
        );
        // Unanswered calls: the oldest are given up, the list stays bounded.
        for _ in 0..MAX_CALLS + 5 {
            c.call("slow", "m", &[]).unwrap();
        }
        assert_eq!(c.calls.len(), MAX_CALLS);
        c.reset();
        assert!(c.calls.is_empty());
    }

    #[test]
    fn hello_sends_add_object_bytes() {
        let mut c = UbusConn::new(ObjectSpec {
            path: "t".into(),
            methods: vec![Method::new("m", &[("a", ArgType::String)])],
        });
        // HELLO from the broker, peer id 5, empty blob.
        c.on_bytes(&[0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 4]).unwrap();
        #[rustfmt::skip]
        let want = [
            0, 6, 0, 1, 0, 0, 0, 0,             // v0 ADD_OBJECT seq 1 peer 0
            0, 0, 0, 36,                        // outer blob, id 0
            2, 0, 0, 6, b't', 0, 0, 0,          // OBJPATH "t"
            6, 0, 0, 24,                        // SIGNATURE
            0x82, 0, 0, 20, 0, 1, b'm', 0,      //   table "m"
            0x85, 0, 0, 12, 0, 1, b'a', 0, 0, 0, 0, 3, // INT32 a = STRING
        ];
        assert_eq!(c.outgoing(), want);
        assert_eq!(c.object_id(), None);
    }

    #[test]
    fn registration_survives_byte_at_a_time_input() {
        let mut c = UbusConn::new(spec());
        let mut input = frame(MSG_HELLO, 0, 0x42, &[]);
        c.on_bytes(&input).unwrap();
        let seq = take_out(&mut c)[0].1;
        input.clear();
        let mut d = Vec::new();
        put_blob_u32(&mut d, ATTR_OBJID, OBJ);
        input.extend(frame(MSG_DATA, seq, 0, &d));
        let mut s = Vec::new();
        put_blob_u32(&mut s, ATTR_STATUS, 0);
        input.extend(frame(MSG_STATUS, seq, 0, &s));
        for b in &input {
            assert_eq!(c.object_id(), None);
            c.on_bytes(std::slice::from_ref(b)).unwrap();
        }
        assert_eq!(c.object_id(), Some(OBJ));
        assert_eq!(c.poll_event(), Some(Event::Registered { object_id: OBJ }));
        assert!(c.outgoing().is_empty());
    }

    #[test]
    fn rejected_registration_is_an_error() {
        let mut c = UbusConn::new(spec());
        c.on_bytes(&frame(MSG_HELLO, 0, 1, &[])).unwrap();
        let seq = take_out(&mut c)[0].1;
        let mut s = Vec::new();
        put_blob_u32(&mut s, ATTR_STATUS, Status::InvalidArgument as u32);
        assert_eq!(
            c.on_bytes(&frame(MSG_STATUS, seq, 0, &s)),
            Err(UbusError::Rejected(2))
        );
    }

    #[test]
    fn invoke_filters_arguments_and_reply_frames() {
        let mut c = registered();
        let args = [
            kv("ubus_rpc_session", Value::str("x")),
            kv("msg", Value::str("a'b")),
            kv("n", Value::Int(7)),
        ];
        c.on_bytes(&invoke(77, 0xabc, OBJ, "echo", &args)).unwrap();
        let Some(Event::Invoke {
            method,
            args,
            token,
        }) = c.poll_event()
        else {
            panic!("no invoke")
        };
        assert_eq!(method, "echo");
        assert_eq!(args.to_json(), r#"{"msg":"a'b","n":7}"#);
        assert!(c.outgoing().is_empty(), "nothing is sent before the reply");
        c.reply(token, Status::Ok, Some(&[kv("msg", Value::str("a'b"))]))
            .unwrap();
        let out = take_out(&mut c);
        assert_eq!(out.len(), 2);
        let (data, status) = (&out[0], &out[1]);
        assert_eq!((data.0, data.1, data.2), (MSG_DATA, 77, 0xabc));
        assert_eq!(u32_of(attr(data, ATTR_OBJID)), Some(OBJ));
        let table = blobmsg::decode_table(attr(data, ATTR_DATA)).unwrap();
        assert_eq!(table, [kv("msg", Value::str("a'b"))]);
        assert_eq!((status.0, status.1, status.2), (MSG_STATUS, 77, 0xabc));
        assert_eq!(u32_of(attr(status, ATTR_STATUS)), Some(0));
        assert_eq!(u32_of(attr(status, ATTR_OBJID)), Some(OBJ));
    }

    #[test]
    fn invoke_without_data_has_empty_args() {
        let mut c = registered();
        let mut b = Vec::new();
        put_blob_u32(&mut b, ATTR_OBJID, OBJ);
        put_blob_str(&mut b, ATTR_METHOD, "status");
        c.on_bytes(&frame(MSG_INVOKE, 3, 9, &b)).unwrap();
        let Some(Event::Invoke { args, token, .. }) = c.poll_event() else {
            panic!("no invoke")
        };
        assert_eq!(args, Value::Table(vec![]));
        c.reply(token, Status::NoData, None).unwrap();
        let out = take_out(&mut c);
        assert_eq!(out.len(), 1, "no DATA without data");
        assert_eq!(
            u32_of(attr(&out[0], ATTR_STATUS)),
            Some(Status::NoData as u32)
        );
    }

    fn only_status(c: &mut UbusConn) -> u32 {
        assert_eq!(c.poll_event(), None);
        let out = take_out(c);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].0, MSG_STATUS);
        u32_of(attr(&out[0], ATTR_STATUS)).unwrap()
    }

    #[test]
    fn unknown_method_wrong_type_wrong_object() {
        let mut c = registered();
        c.on_bytes(&invoke(1, 2, OBJ, "nope", &[])).unwrap();
        assert_eq!(only_status(&mut c), Status::MethodNotFound as u32);
        c.on_bytes(&invoke(1, 2, OBJ, "echo", &[kv("msg", Value::Int(1))]))
            .unwrap();
        assert_eq!(only_status(&mut c), Status::InvalidArgument as u32);
        c.on_bytes(&invoke(1, 2, OBJ + 1, "echo", &[])).unwrap();
        assert_eq!(only_status(&mut c), Status::NotFound as u32);
        // Broken argument blobs inside an intact frame: answered, stream continues.
        let mut b = Vec::new();
        put_blob_u32(&mut b, ATTR_OBJID, OBJ);
        put_blob_str(&mut b, ATTR_METHOD, "echo");
        put_blob(&mut b, ATTR_DATA, &[0x83, 0, 0, 99]);
        c.on_bytes(&frame(MSG_INVOKE, 4, 2, &b)).unwrap();
        assert_eq!(only_status(&mut c), Status::InvalidArgument as u32);
    }

    #[test]
    fn stray_status_and_ping_are_ignored() {
        let mut c = registered();
        let mut s = Vec::new();
        put_blob_u32(&mut s, ATTR_STATUS, 0);
        c.on_bytes(&frame(MSG_STATUS, 999, 0, &s)).unwrap();
        c.on_bytes(&frame(MSG_PING, 5, 0, &[])).unwrap();
        c.on_bytes(&frame(MSG_HELLO, 0, 0, &[])).unwrap();
        assert_eq!(c.poll_event(), None);
        assert!(c.outgoing().is_empty());
        assert_eq!(c.object_id(), Some(OBJ));
    }

    #[test]
    fn no_reply_invoke_gets_no_answer() {
        let mut c = registered();
        let mut b = Vec::new();
        put_blob_u32(&mut b, ATTR_OBJID, OBJ);
        put_blob_str(&mut b, ATTR_METHOD, "status");
        put_blob(&mut b, ATTR_NO_REPLY, &[1]);
        c.on_bytes(&frame(MSG_INVOKE, 3, 9, &b)).unwrap();
        let Some(Event::Invoke { token, .. }) = c.poll_event() else {
            panic!("no invoke")
        };
        c.reply(token, Status::Ok, Some(&[])).unwrap();
        assert!(c.outgoing().is_empty());
    }

    #[test]
    fn framing_errors() {
        let mut c = UbusConn::new(spec());
        let mut big = frame(MSG_DATA, 1, 0, &[]);
        big[8..12].copy_from_slice(&((MAX_MESSAGE + 1) as u32).to_be_bytes());
        assert!(matches!(c.on_bytes(&big), Err(UbusError::Protocol(_))));
        let mut c = UbusConn::new(spec());
        let mut v1 = frame(MSG_HELLO, 0, 0, &[]);
        v1[0] = 1;
        assert!(c.on_bytes(&v1).is_err());
        let mut c = UbusConn::new(spec());
        assert!(c.on_bytes(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3]).is_err());
        // A frame of exactly 1 MiB is fine (and waits for its bytes).
        let mut c = UbusConn::new(spec());
        let mut ok = frame(MSG_DATA, 1, 0, &[]);
        ok[8..12].copy_from_slice(&(MAX_MESSAGE as u32).to_be_bytes());
        assert!(c.on_bytes(&ok).is_ok());
    }

    #[test]
    fn tokens_die_with_the_connection() {
        let mut c = registered();
        c.on_bytes(&invoke(1, 2, OBJ, "status", &[])).unwrap();
        let Some(Event::Invoke { token, .. }) = c.poll_event() else {
            panic!("no invoke")
        };
        c.reset();
        assert_eq!(
            c.reply(token, Status::Ok, None),
            Err(UbusError::NotConnected)
        );
        assert!(c.outgoing().is_empty());
        assert_eq!(c.object_id(), None);
        // and the next HELLO registers again
        c.on_bytes(&frame(MSG_HELLO, 0, 3, &[])).unwrap();
        assert_eq!(take_out(&mut c)[0].0, MSG_ADD_OBJECT);
    }

    #[test]
    fn event_frame() {
        let mut c = UbusConn::new(spec());
        assert_eq!(c.send_event("x", &[]), Err(UbusError::NotConnected));
        let mut c = registered();
        c.send_event("solowg.peer", &[kv("up", Value::Bool(true))])
            .unwrap();
        let out = take_out(&mut c);
        assert_eq!((out[0].0, out[0].2), (MSG_INVOKE, EVENT_OBJECT));
        assert_eq!(u32_of(attr(&out[0], ATTR_OBJID)), Some(EVENT_OBJECT));
        assert_eq!(attr(&out[0], ATTR_METHOD), b"send\0");
        let d = Value::Table(blobmsg::decode_table(attr(&out[0], ATTR_DATA)).unwrap());
        assert_eq!(d.to_json(), r#"{"id":"solowg.peer","data":{"up":true}}"#);
    }

    #[test]
    fn oversized_reply_becomes_an_error_status() {
        let mut c = registered();
        c.on_bytes(&invoke(1, 2, OBJ, "status", &[])).unwrap();
        let Some(Event::Invoke { token, .. }) = c.poll_event() else {
            panic!("no invoke")
        };
        let big = [kv("blob", Value::Str("x".repeat(MAX_MESSAGE)))];
        assert_eq!(
            c.reply(token, Status::Ok, Some(&big)),
            Err(UbusError::TooLarge)
        );
        assert_eq!(only_status(&mut c), Status::UnknownError as u32);
        assert_eq!(c.send_event("e", &big), Err(UbusError::TooLarge));
        assert!(c.outgoing().is_empty());
    }

    #[test]
    fn property_random_streams_never_panic() {
        use crate::openwrt::blobmsg::tests::{mutate, Prng};
        let mut r = Prng(0x005e_ed0f_0b1e_55ed);
        for i in 0..5000 {
            let mut c = if i % 2 == 0 {
                registered()
            } else {
                UbusConn::new(spec())
            };
            let mut stream = Vec::new();
            for _ in 0..1 + r.below(4) {
                let mut f = match r.below(4) {
                    0 => frame(MSG_HELLO, 0, 1, &[]),
                    1 => invoke(
                        r.next() as u16,
                        2,
                        OBJ,
                        "echo",
                        &[kv("msg", Value::str("m")), kv("n", Value::Int(1))],
                    ),
                    2 => (0..r.below(40)).map(|_| r.next() as u8).collect(),
                    _ => {
                        let mut s = Vec::new();
                        put_blob_u32(&mut s, ATTR_STATUS, r.next() as u32);
                        put_blob_u32(&mut s, ATTR_OBJID, r.next() as u32);
                        frame((r.below(12)) as u8, r.next() as u16, 0, &s)
                    }
                };
                mutate(&mut r, &mut f);
                stream.extend(f);
            }
            let mut at = 0;
            while at < stream.len() {
                let n = 1 + r.below(stream.len() - at);
                if c.on_bytes(&stream[at..at + n]).is_err() {
                    break;
                }
                at += n;
            }
            while let Some(ev) = c.poll_event() {
                if let Event::Invoke { token, .. } = ev {
                    let _ = c.reply(token, Status::Ok, Some(&[kv("a", Value::Int(1))]));
                }
            }
            let _ = parse(c.outgoing());
        }
    }
}
