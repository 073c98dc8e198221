//! The UAPI socket's clients: accepting them, reading requests, answering `get` and
//! applying `set`, with bounds so a client cannot take the thread from the packets.

use super::*;
use crate::proto::device::ApplyProgress;

const MAX_CLIENTS: usize = 16;

/// A UAPI client that sends nothing for this long is disconnected.
pub(super) const CLIENT_IDLE: Duration = Duration::from_secs(10);

/// Requests answered per client per loop turn, so packets keep flowing during a burst.
const MAX_REQUESTS_PER_TURN: usize = 16;

/// UAPI connections accepted per loop turn: a connection flood gets a bounded share of the
/// thread, packets the rest (the backlog waits for the next turn).
const MAX_ACCEPTS_PER_TURN: usize = 4;

/// Stop answering a client whose unread replies reach this size until it reads them.
const OUTBUF_HIGH: usize = 1 << 20;

/// Time a long `set` may take per loop turn: its peers are applied in slices between packet
/// batches (each new peer costs an X25519, milliseconds on a router), so the tunnels of the
/// peers already there keep flowing. One 30k-peer request took 7 s in one turn.
const SET_SLICE: Duration = Duration::from_millis(2);

/// Peer changes applied between two looks at the clock.
const PEERS_PER_CHECK: usize = 8;

/// A `set` applied over several loop turns. It was validated whole and its port bound
/// before the first slice, so it cannot fail half-way; its client gets the reply once the
/// last peer is applied, and no other request is answered meanwhile (as the kernel holds
/// its lock for a whole `set`): to a client it is still all at once.
pub(super) struct PendingSet {
    /// The client that sent it (its token), to answer.
    client: u64,
    req: uapi::SetRequest,
    progress: ApplyProgress,
    started: Instant,
}

/// The most a client's pending input may hold: one byte past the largest request, enough for
/// the parser to see that a request without its end is too long.
const INBUF_MAX: usize = uapi::MAX_REQUEST_BYTES + 1;

/// `v.extend_from_slice(data)`, but a reallocation wipes the old allocation first: a growing
/// UAPI request may hold a private key, and `Vec` growth frees the old copy as it is. The
/// capacity stays within [`INBUF_MAX`] (doubling would take it to twice that).
fn extend_wiping(v: &mut Vec<u8>, data: &[u8]) {
    uapi::reserve_wiping_within(v, data.len(), INBUF_MAX);
    v.extend_from_slice(data);
}

impl Client {
    /// Reads what the client sent into its input, while it may take more. `None` on a
    /// receive error (the client is closed).
    fn read_requests(&mut self, buf: &mut [u8], now: Instant) -> Option<()> {
        self.read_blocked = false;
        loop {
            if !self.wants_read() {
                self.read_blocked = !self.closing;
                return Some(());
            }
            let room = self.read_room().min(65536);
            match crate::sys::recv(self.stream.as_fd(), &mut buf[..room], 0) {
                Ok(0) => {
                    self.closing = true;
                    return Some(());
                }
                Ok(n) => {
                    extend_wiping(&mut self.inbuf, &buf[..n]);
                    buf[..n].zeroize();
                    self.last_active = now;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Some(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return None,
            }
        }
    }

    /// Writes what the socket takes of the replies; a fully written reply buffer is wiped.
    /// `None` when the client is gone.
    fn write_replies(&mut self, now: Instant) -> Option<()> {
        while self.out_pos < self.outbuf.len() {
            match crate::sys::send(self.stream.as_fd(), &self.outbuf[self.out_pos..], 0) {
                Ok(0) => return None,
                Ok(n) => {
                    self.out_pos += n;
                    self.last_active = now;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return None,
            }
        }
        if self.out_pos == self.outbuf.len() {
            self.outbuf.zeroize(); // replies may hold the private key
            self.out_pos = 0;
        }
        Some(())
    }

    /// Read more only while there is room and the client keeps up with its replies.
    fn wants_read(&self) -> bool {
        !self.closing && self.inbuf.len() < INBUF_MAX && self.outbuf.len() < OUTBUF_HIGH
    }

    /// How much the next read may take: no more than fills the input to [`INBUF_MAX`].
    fn read_room(&self) -> usize {
        INBUF_MAX.saturating_sub(self.inbuf.len())
    }
}

pub(super) struct Client {
    /// Its epoll token: an id that survives the reordering of `clients`.
    token: u64,
    stream: UnixStream,
    inbuf: Vec<u8>,
    outbuf: Vec<u8>,
    /// How much of `outbuf` is already written.
    out_pos: usize,
    pub(super) last_active: Instant,
    /// Close once `outbuf` is written (EOF seen or a framing error).
    closing: bool,
    /// We stopped reading with input possibly pending: edge-triggered readiness will not
    /// report it again, so the loop must come back by itself.
    read_blocked: bool,
    /// Where the next parse of `inbuf` may resume (see `uapi::parse_request_resume`).
    scan_hint: usize,
}

impl InterfaceIo {
    /// Accepts at most [`MAX_ACCEPTS_PER_TURN`] connections; true if more may be waiting.
    pub(super) fn accept_clients(&mut self) -> bool {
        for _ in 0..MAX_ACCEPTS_PER_TURN {
            match self.uapi.accept() {
                Ok((stream, _)) => {
                    let token = self.base + self.next_client_token;
                    if stream.set_nonblocking(true).is_err()
                        || self
                            .reg
                            .add(stream.as_fd(), token, Interest::ReadWrite)
                            .is_err()
                    {
                        continue;
                    }
                    self.next_client_token += 1;
                    if self.clients.len() >= MAX_CLIENTS {
                        // Evict the longest-idle client so a connection flood cannot lock
                        // out `wg`.
                        if let Some(i) =
                            (0..self.clients.len()).min_by_key(|&i| self.clients[i].last_active)
                        {
                            let mut c = self.clients.swap_remove(i);
                            c.outbuf.zeroize();
                        }
                    }
                    self.clients.push(Client {
                        token,
                        stream,
                        read_blocked: false,
                        scan_hint: 0,
                        inbuf: Vec::new(),
                        outbuf: Vec::new(),
                        out_pos: 0,
                        last_active: Instant::now(),
                        closing: false,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return false,
            }
        }
        true
    }

    /// Serves every client; true if one still has requests waiting (turn limit reached), or
    /// a long `set` is still being applied.
    pub(super) fn service_clients(&mut self, dev: &mut Device, buf: &mut [u8]) -> bool {
        if let Some(mut p) = self.applying.take() {
            if !self.continue_set(&mut p, dev, buf) {
                self.applying = Some(p);
                return true; // come back next turn, after the packets
            }
            self.answer_set(&p);
        }
        let now = Instant::now();
        let mut more = false;
        let mut i = 0;
        while i < self.clients.len() {
            match self.service_client(i, dev, buf, now) {
                Some(m) => {
                    more |= m;
                    i += 1;
                }
                None => {
                    let mut c = self.clients.swap_remove(i);
                    c.outbuf.zeroize();
                    c.inbuf.zeroize();
                }
            }
        }
        more
    }

    /// Reads, answers and writes for one client. `None` when it should be closed, else
    /// whether it has more requests to answer on the next turn.
    pub(super) fn service_client(
        &mut self,
        i: usize,
        dev: &mut Device,
        buf: &mut [u8],
        now: Instant,
    ) -> Option<bool> {
        self.clients[i].read_requests(buf, now)?;
        let more = self.answer_requests(i, dev, buf);
        let c = &mut self.clients[i];
        c.write_replies(now)?;
        if c.outbuf.is_empty() && c.closing {
            return None;
        }
        let more = more || (c.read_blocked && c.wants_read());
        (now.saturating_duration_since(c.last_active) < CLIENT_IDLE).then_some(more)
    }

    /// Answers a bounded number of client `i`'s requests per turn, and none while the
    /// client is not reading its replies, so one client cannot hold the thread or grow
    /// memory; drops what was answered from its input. True if more are waiting.
    fn answer_requests(&mut self, i: usize, dev: &mut Device, buf: &mut [u8]) -> bool {
        let mut off = 0;
        let mut handled = 0;
        let mut more = false;
        loop {
            let c = &self.clients[i];
            if self.applying.is_some() {
                more = true; // the rest waits until the long `set` is applied
                break;
            }
            if handled == MAX_REQUESTS_PER_TURN || c.outbuf.len() >= OUTBUF_HIGH {
                more = handled == MAX_REQUESTS_PER_TURN;
                break;
            }
            let mut hint = if off == 0 { c.scan_hint } else { 0 };
            let parsed = uapi::parse_request_resume(&c.inbuf[off..], &mut hint);
            // Relative to inbuf[off..], which is where inbuf starts after the drain below.
            self.clients[i].scan_hint = hint;
            let (consumed, errno, fatal) = match parsed {
                Ok(None) => break,
                Ok(Some((req, consumed))) => {
                    (consumed, self.handle_request(req, i, dev, buf), false)
                }
                Err((e, consumed)) => {
                    log::verbose(format_args!("UAPI request refused: {e}"));
                    (consumed, Some(e.errno), true)
                }
            };
            handled += 1;
            off += consumed;
            let c = &mut self.clients[i];
            if let Some(errno) = errno {
                uapi::write_errno(&mut c.outbuf, errno);
            }
            if fatal {
                c.closing = true;
                c.scan_hint = 0;
                off = c.inbuf.len();
                break;
            }
        }
        let c = &mut self.clients[i];
        // The shift leaves stale copies of the unconsumed tail (maybe a `set` with a key)
        // past the new end: zero them.
        let rest = c.inbuf.len() - off;
        c.inbuf.copy_within(off.., 0);
        c.inbuf[rest..].zeroize();
        c.inbuf.truncate(rest);
        more
    }

    /// Answers one request. Returns the errno to send for `set` (get writes its own reply).
    pub(super) fn handle_request(
        &mut self,
        req: Request,
        i: usize,
        dev: &mut Device,
        buf: &mut [u8],
    ) -> Option<i32> {
        match req {
            Request::Get => {
                let info = dev.info();
                uapi::write_get_reply(&mut self.clients[i].outbuf, &info);
                None
            }
            Request::Set(req) => {
                let client = self.clients[i].token;
                let mut p = match self.begin_set(req, dev, client) {
                    Ok(p) => p,
                    Err(errno) => return Some(errno),
                };
                if self.continue_set(&mut p, dev, buf) {
                    return Some(0);
                }
                // The reply comes when the last slice is applied (`answer_set`).
                self.applying = Some(Box::new(p));
                None
            }
        }
    }

    /// Applies the next slice of a long `set`; true when it is all applied (the caller
    /// answers it).
    fn continue_set(&mut self, p: &mut PendingSet, dev: &mut Device, buf: &mut [u8]) -> bool {
        let until = Instant::now() + SET_SLICE;
        loop {
            if dev.apply_peers(&p.req, &mut p.progress, PEERS_PER_CHECK) {
                break;
            }
            if Instant::now() >= until {
                return false;
            }
        }
        self.flush_outputs(dev, buf);
        let now = Instant::now();
        let took = now.saturating_duration_since(p.started);
        if took >= SET_SLICE {
            log::verbose(format_args!(
                "UAPI set of {} peer changes applied over {} ms",
                p.progress.done(),
                took.as_millis()
            ));
        }
        // Waiting for us is not idleness.
        for c in &mut self.clients {
            c.last_active = now;
        }
        true
    }

    /// errno=0 for a long `set` now applied, to its client if it is still connected.
    fn answer_set(&mut self, p: &PendingSet) {
        if let Some(c) = self.clients.iter_mut().find(|c| c.token == p.client) {
            uapi::write_errno(&mut c.outbuf, 0);
        }
    }

    /// Applies a validated set request whole, at once (managed mode's configurations): a
    /// new listen port is bound first, so a port in use fails the whole request with nothing
    /// applied. Returns the errno (0: done).
    pub(super) fn apply_set(
        &mut self,
        req: uapi::SetRequest,
        dev: &mut Device,
        buf: &mut [u8],
    ) -> i32 {
        // A UAPI `set` still being applied comes first, whole: requests take effect in the
        // order they came.
        if let Some(mut p) = self.applying.take() {
            while !self.continue_set(&mut p, dev, buf) {}
            self.answer_set(&p); // written out when its client is next served
        }
        match self.begin_set(req, dev, 0) {
            Ok(mut p) => {
                while !dev.apply_peers(&p.req, &mut p.progress, usize::MAX) {}
                self.flush_outputs(dev, buf);
                0
            }
            Err(errno) => errno,
        }
    }

    /// The part of a set request that cannot be sliced: the new port bound (a port in use
    /// fails it with nothing applied), the interface's settings and the sockets' mark. The
    /// peers follow through `Device::apply_peers`.
    fn begin_set(
        &mut self,
        mut req: uapi::SetRequest,
        dev: &mut Device,
        client: u64,
    ) -> Result<PendingSet, i32> {
        let started = Instant::now();
        let mark = req.fwmark.unwrap_or(dev.fwmark);
        let mut rebound = false;
        if let Some(port) = req.listen_port.filter(|&p| p != dev.listen_port) {
            match udp::bind(port, mark, dev.index_tag()) {
                Ok(pair) => {
                    req.listen_port = Some(pair.port);
                    if let Err(e) = self.set_udp(pair) {
                        log::error(format_args!("cannot use new UDP sockets: {e}"));
                        return Err(e.raw_os_error().unwrap_or(libc::EIO));
                    }
                    rebound = true;
                }
                Err(e) => {
                    log::error(format_args!("cannot listen on port {port}: {e}"));
                    return Err(e.raw_os_error().unwrap_or(libc::EADDRINUSE));
                }
            }
        }
        let progress = dev.apply_begin(&req);
        let applied = progress.applied;
        if self.fwmark != dev.fwmark {
            self.fwmark = dev.fwmark;
            self.conns.retire_all(); // routed with the old mark
            self.packet.forget(None);
        }
        if applied.fwmark_changed && !rebound {
            let socks = [&self.udp6, &self.hs4, &self.hs6];
            for s in std::iter::once(&self.udp4).chain(socks.into_iter().flatten()) {
                if let Err(e) = udp::set_mark(s, dev.fwmark) {
                    log::error(format_args!("cannot set fwmark: {e}"));
                }
            }
        }
        if rebound {
            log::info(format_args!("listening on port {}", dev.listen_port));
        }
        Ok(PendingSet {
            client,
            req,
            progress,
            started,
        })
    }
}
