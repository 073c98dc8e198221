//! The source sockets (non-blocking, one epoll) and the send pacing.

use crate::opts::{die, Opts};
use crate::stats::Stats;
use solowg::sys::poller::{Interest, Poller};
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

/// Most packets sent per loop turn: between bursts we look at replies and timeouts.
const SEND_BURST: usize = 64;
/// Most datagrams read from one socket per loop turn, so one busy socket cannot starve the rest.
const RECV_BURST: usize = 256;

pub(crate) struct Net {
    pub(crate) socks: Vec<UdpSocket>,
    /// Sockets epoll said are readable and that we have not drained to WouldBlock yet.
    readable: Vec<bool>,
    poller: Poller,
    target: SocketAddr,
    next_sock: usize,
}

impl Net {
    pub(crate) fn open(o: &Opts) -> io::Result<Net> {
        let poller = Poller::new()?;
        let mut socks = Vec::with_capacity(o.sources.len());
        for (i, a) in o.sources.iter().enumerate() {
            let s = UdpSocket::bind((*a, 0))
                .map_err(|e| io::Error::new(e.kind(), format!("bind {a}: {e}")))?;
            s.set_nonblocking(true)?;
            poller.add(s.as_fd(), i as u64, Interest::Read)?;
            socks.push(s);
        }
        Ok(Net {
            readable: vec![true; socks.len()],
            socks,
            poller,
            target: o.target.unwrap_or_else(|| die("no target")),
            next_sock: 0,
        })
    }

    /// Round-robin over the sources.
    pub(crate) fn pick(&mut self) -> usize {
        let s = self.next_sock;
        self.next_sock = (s + 1) % self.socks.len();
        s
    }

    pub(crate) fn send(&self, sock: usize, msg: &[u8], st: &mut Stats) {
        match self.socks[sock].send_to(msg, self.target) {
            Ok(_) => st.sent += 1,
            // A full socket buffer drops the packet, as a busy link would.
            Err(_) => st.send_errors += 1,
        }
    }

    /// Waits for readability (at most `wait`), then calls `f(sock, datagram)` for what arrived,
    /// up to RECV_BURST per socket.
    pub(crate) fn receive(
        &mut self,
        wait: Duration,
        buf: &mut [u8],
        mut f: impl FnMut(usize, &[u8]),
    ) {
        let readable = &mut self.readable;
        let wait = if readable.iter().any(|&r| r) {
            Duration::ZERO
        } else {
            wait
        };
        if let Err(e) = self
            .poller
            .wait(Some(wait), |t| readable[t as usize] = true)
        {
            die(&format!("epoll_wait: {e}"));
        }
        for (i, s) in self.socks.iter().enumerate() {
            if !self.readable[i] {
                continue;
            }
            let mut drained = false;
            for _ in 0..RECV_BURST {
                match s.recv_from(buf) {
                    Ok((n, _)) => f(i, &buf[..n]),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        drained = true;
                        break;
                    }
                    // e.g. ECONNREFUSED from an ICMP error: nothing to read, carry on.
                    Err(_) => {}
                }
            }
            if drained {
                self.readable[i] = false;
            }
        }
    }
}

/// Packets allowed so far at a fixed rate (0 = unlimited): a credit computed from the elapsed
/// time, so the long-run rate is exact and a late turn catches up in one burst.
pub(crate) struct Pacer {
    rate: u64,
    pub(crate) start: Instant,
}

impl Pacer {
    pub(crate) fn new(rate: u64, start: Instant) -> Self {
        Pacer { rate, start }
    }

    pub(crate) fn allowed(&self, now: Instant, sent: u64) -> usize {
        if self.rate == 0 {
            return SEND_BURST;
        }
        let due =
            (now.saturating_duration_since(self.start).as_secs_f64() * self.rate as f64) as u64;
        (due.saturating_sub(sent) as usize).min(SEND_BURST)
    }

    /// When the packet after `sent` is due (now, when unlimited).
    pub(crate) fn next_due(&self, now: Instant, sent: u64) -> Instant {
        if self.rate == 0 {
            now
        } else {
            self.start + Duration::from_secs_f64((sent + 1) as f64 / self.rate as f64)
        }
    }
}
