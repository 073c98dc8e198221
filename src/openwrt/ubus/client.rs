//! `UbusClient`: the non-blocking unix-socket shell around a `UbusConn` for the epoll loop,
//! reconnecting with backoff.

use super::conn::{Event, ObjectSpec, Token, UbusConn, UbusError};
use super::wire::Status;
use crate::log;
use crate::openwrt::blobmsg::Value;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub const DEFAULT_SOCKET: &str = "/var/run/ubus/ubus.sock";
/// Environment variable that overrides [`DEFAULT_SOCKET`].
pub const SOCKET_ENV: &str = "UBUS_SOCKET";

/// Unsent bytes allowed to pile up before the connection is dropped as stuck.
pub const MAX_QUEUE: usize = 1 << 20;

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
