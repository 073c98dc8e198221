//! Connected UDP sockets, one per endpoint the tunnel sends data to: the kernel routes a
//! connected socket once, not on every send. When they are closed or retired:
//! docs/architecture.md, "Connected sockets".

use super::*;
use std::cell::Cell;

/// Connected sockets per interface; past this, endpoints are sent to unconnected.
pub(super) const MAX_CONNS: usize = 32;
/// Token of slot i: `base + CONN_TOKEN + i` (above every UAPI client's token).
pub(super) const CONN_TOKEN: u64 = 1 << 31;
/// How often idle connected sockets are closed and failed endpoints may be tried again.
const SWEEP: Duration = Duration::from_secs(30);

pub(super) struct ConnectedSocket {
    pub(super) to: SocketAddr,
    pub(super) sock: UdpSocket,
    /// Sent or received on since the last sweep.
    used: Cell<bool>,
}

impl ConnectedSocket {
    /// Notes a receive: a socket the peer sends to is not idle.
    pub(super) fn note_received(&self) {
        self.used.set(true);
    }
}

#[derive(Default)]
pub(super) struct ConnectedSockets {
    slots: Vec<Option<ConnectedSocket>>,
    /// Endpoints a connect failed for (no route yet, ...): not tried again until the next sweep.
    failed: Vec<SocketAddr>,
    /// Off for good once the listening sockets turned out not to be in a SO_REUSEPORT group.
    off: bool,
    swept: Option<Instant>,
    /// Retired slots (bit i: slot i): open and read, never sent from, closed by the turn.
    retired: u32,
}

impl ConnectedSockets {
    /// The slot holding a live (not retired) connected socket for `to`.
    fn find(&self, to: SocketAddr) -> Option<usize> {
        (0..self.slots.len()).find(|&i| {
            self.retired & (1 << i) == 0 && self.slots[i].as_ref().is_some_and(|c| c.to == to)
        })
    }

    /// The connected socket for `to`, marked as used.
    pub(super) fn get(&self, to: SocketAddr) -> Option<&UdpSocket> {
        let c = self.slots[self.find(to)?].as_ref()?;
        c.used.set(true);
        Some(&c.sock)
    }

    /// The slot of `to`'s connected socket, opened now if there is none (and one may be);
    /// marked as used.
    pub(super) fn get_or_open(
        &mut self,
        to: SocketAddr,
        port: u16,
        fwmark: u32,
        reg: &Registry,
        base: u64,
    ) -> Option<usize> {
        if let Some(i) = self.find(to) {
            if let Some(c) = &self.slots[i] {
                c.used.set(true);
            }
            return Some(i);
        }
        if self.off || self.failed.contains(&to) {
            return None;
        }
        let i = match self.slots.iter().position(Option::is_none) {
            Some(i) => i,
            None if self.slots.len() < MAX_CONNS => {
                self.slots.push(None);
                self.slots.len() - 1
            }
            None => return None,
        };
        let opened = udp::connect(to, port, fwmark).and_then(|sock| {
            reg.add(sock.as_fd(), base + CONN_TOKEN + i as u64, Interest::Read)?;
            Ok(sock)
        });
        match opened {
            Ok(sock) => {
                self.slots[i] = Some(ConnectedSocket {
                    to,
                    sock,
                    used: Cell::new(true),
                });
                Some(i)
            }
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => {
                log::verbose(format_args!(
                    "no connected sockets ({e}): every datagram is routed on its own"
                ));
                self.off = true;
                None
            }
            Err(e) => {
                log::verbose(format_args!("no connected socket to {to} yet: {e}"));
                if self.failed.len() < MAX_CONNS {
                    self.failed.push(to);
                }
                None
            }
        }
    }

    pub(super) fn slot(&self, i: usize) -> Option<&ConnectedSocket> {
        self.slots.get(i)?.as_ref()
    }

    /// Closes slot `i`; what its receive queue holds is lost (`InterfaceIo::close_conns` takes
    /// it in first).
    pub(super) fn close(&mut self, i: usize, reg: &Registry) {
        if i < MAX_CONNS {
            self.retired &= !(1 << i);
        }
        if let Some(c) = self.slots.get_mut(i).and_then(Option::take) {
            reg.delete(c.sock.as_fd());
        }
    }

    /// Retires slot `i`: no longer sent from; the turn drains and closes it.
    pub(super) fn retire(&mut self, i: usize) {
        if self.slot(i).is_some() {
            self.retired |= 1 << i;
        }
    }

    /// Retires slot `i` after a failed send (its pinned route or address may be gone). Its
    /// endpoint is sent to unconnected until the next sweep or routing change: a new socket
    /// would likely fail the same way, once per batch.
    pub(super) fn retire_failed(&mut self, i: usize) {
        let Some(to) = self.slot(i).map(|c| c.to) else {
            return;
        };
        self.retire(i);
        if self.failed.len() < MAX_CONNS && !self.failed.contains(&to) {
            self.failed.push(to);
        }
    }

    /// Retires every connected socket (a new listen port or fwmark) and lets failed
    /// endpoints be tried again.
    pub(super) fn retire_all(&mut self) {
        self.retired = self.open_mask();
        self.failed.clear();
    }

    /// The retired slots, for the turn to drain and close.
    pub(super) fn take_retired(&mut self) -> u32 {
        std::mem::take(&mut self.retired)
    }

    /// Every SWEEP: the sockets nothing was sent or received on since the last sweep, as a
    /// bit mask, for the caller to close (`InterfaceIo::close_conns`); lets failed endpoints be
    /// tried again.
    pub(super) fn sweep(&mut self, now: Instant) -> u32 {
        let Some(last) = self.swept else {
            self.swept = Some(now);
            return 0;
        };
        if now.saturating_duration_since(last) < SWEEP {
            return 0;
        }
        self.swept = Some(now);
        self.failed.clear();
        let mut idle = 0;
        for (i, c) in self.slots.iter().enumerate() {
            if c.as_ref().is_some_and(|c| !c.used.replace(false)) {
                idle |= 1 << i;
            }
        }
        idle
    }

    /// Slots that are open, as a bit mask (bit i: slot i).
    pub(super) fn open_mask(&self) -> u32 {
        let mut m = 0;
        for (i, c) in self.slots.iter().enumerate() {
            if c.is_some() {
                m |= 1 << i;
            }
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::poller::Poller;

    #[test]
    fn a_socket_in_use_survives_sweeps_and_an_idle_one_is_closed() {
        let poller = Poller::new().unwrap();
        let reg = poller.registry();
        let pair = udp::bind(0, 0, 0x123).expect("bind");
        let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = peer.local_addr().unwrap();
        let mut conns = ConnectedSockets::default();
        let t0 = Instant::now();
        assert_eq!(conns.sweep(t0), 0);
        let i = conns
            .get_or_open(to, pair.port, 0, &reg, 0)
            .expect("opened");
        for k in 1..=3u32 {
            // Reached only through get_or_open (the batch path), as a busy tunnel does.
            assert_eq!(conns.get_or_open(to, pair.port, 0, &reg, 0), Some(i));
            assert_eq!(
                conns.sweep(t0 + SWEEP * k),
                0,
                "idle while in use (sweep {k})"
            );
        }
        // Receiving counts as use too (`InterfaceIo::drain_conns` marks it).
        conns.slot(i).expect("open").note_received();
        assert_eq!(conns.sweep(t0 + SWEEP * 4), 0);
        assert_eq!(conns.sweep(t0 + SWEEP * 5), 1 << i); // nothing since sweep 4
        conns.close(i, &reg);
        assert_eq!(conns.open_mask(), 0);
    }

    #[test]
    fn a_retired_socket_is_not_sent_from_but_keeps_its_queue_until_closed() {
        let poller = Poller::new().unwrap();
        let reg = poller.registry();
        let pair = udp::bind(0, 0, 0x124).expect("bind");
        let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = peer.local_addr().unwrap();
        let mut conns = ConnectedSockets::default();
        let t0 = Instant::now();
        conns.sweep(t0);
        let i = conns
            .get_or_open(to, pair.port, 0, &reg, 0)
            .expect("opened");
        // The peer's datagram waits in the connected socket's queue.
        peer.send_to(b"queued", ("127.0.0.1", pair.port)).unwrap();

        // A failed send retires it: no longer handed out, no new one until the next sweep.
        conns.retire_failed(i);
        assert!(conns.get(to).is_none());
        assert_eq!(conns.get_or_open(to, pair.port, 0, &reg, 0), None);
        assert_eq!(conns.open_mask(), 1 << i, "still open, still read");
        let mut got = [0u8; 16];
        let sock = &conns.slot(i).expect("open").sock;
        sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let n = sock.recv(&mut got).expect("the queue survives retirement");
        assert_eq!(&got[..n], b"queued");
        assert_eq!(conns.take_retired(), 1 << i);
        assert_eq!(conns.take_retired(), 0);
        conns.close(i, &reg);
        assert_eq!(conns.sweep(t0 + SWEEP), 0);
        let j = conns
            .get_or_open(to, pair.port, 0, &reg, 0)
            .expect("tried again after the sweep");

        // A new port or fwmark retires them all and lets failed endpoints be tried at once;
        // the endpoint gets a fresh socket beside the retired one.
        conns.retire_all();
        assert_eq!(
            conns.get_or_open(to, pair.port, 0, &reg, 0).map(|k| k != j),
            Some(true)
        );
        assert_eq!(conns.take_retired(), 1 << j);
        conns.close(j, &reg);
        assert_eq!(conns.open_mask().count_ones(), 1);
    }
}
