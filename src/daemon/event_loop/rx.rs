//! UDP to TUN: datagrams read in batches (GRO trains split), decrypted in place and written
//! to the TUN device, TCP segments coalesced for one offloaded write; handshake sockets.

use super::*;
use std::io::IoSlice;

/// `dev.decapsulate`; with `charge` (see `Interface::turn`), the time a handshake message took
/// is charged to the device's handshake budget.
fn decapsulate_timed(
    dev: &mut Device,
    now: Instant,
    from: SocketAddr,
    buf: &mut [u8],
    len: usize,
    charge: bool,
) -> Verdict {
    let handshake = |m: &[u8]| {
        matches!(
            wire::classify(m),
            Some(wire::Kind::Initiation | wire::Kind::Response)
        )
    };
    let t0 = (charge && buf.get(..len).is_some_and(handshake)).then(Instant::now);
    let verdict = dev.decapsulate(now, from, buf, len);
    if let Some(t0) = t0 {
        dev.charge_handshake(t0.elapsed());
    }
    verdict
}

/// One TUN write gathering `parts` (writev), at most MAX_COALESCE of them.
fn write_tun_parts(tun: &Tun, parts: &[&[u8]]) -> io::Result<usize> {
    let mut iov = [IoSlice::new(&[]); offload::MAX_COALESCE];
    let n = parts.len().min(offload::MAX_COALESCE);
    for (v, p) in iov.iter_mut().zip(&parts[..n]) {
        *v = IoSlice::new(p);
    }
    tun.write_vectored(&iov[..n])
}

impl InterfaceIo {
    /// Writes a coalesced group (with TUN offload), or nothing if it is empty.
    pub(super) fn flush_group(&self, coalescer: &mut offload::TcpCoalescer, buf: &mut [u8]) {
        let written = coalescer.flush(buf, |parts| {
            stats::add(&self.stats.tun_writes, 1);
            stats::add(&self.stats.tun_tx_packets, parts.len() as u64);
            write_tun_parts(&self.tun, parts)
        });
        if let Some(Err(e)) = written {
            if e.kind() != io::ErrorKind::WouldBlock {
                log::verbose(format_args!("TUN write failed: {e}"));
            }
        }
    }

    /// Makes up to BATCH receive calls (each up to RECV_MANY messages, each a datagram or a
    /// GRO train of them; RX_MESSAGES messages in all); true if more may be waiting. With TUN offload, consecutive TCP
    /// segments of one flow within a call go to the TUN as one GSO write (see
    /// `offload::TcpCoalescer`).
    pub(super) fn drain_udp(
        &self,
        v6: bool,
        dev: &mut Device,
        buf: &mut [u8],
        coalescer: &mut offload::TcpCoalescer,
        charge: bool,
    ) -> bool {
        let sock = if v6 {
            match &self.udp6 {
                Some(s) => s,
                None => return false,
            }
        } else {
            &self.udp4
        };
        self.drain_sock(sock, dev, buf, coalescer, charge)
    }

    /// `drain_udp` for the connected sockets whose bits are set in `ready`; returns the
    /// bits of those that may have more.
    pub(super) fn drain_conns(
        &self,
        ready: u32,
        dev: &mut Device,
        buf: &mut [u8],
        coalescer: &mut offload::TcpCoalescer,
        charge: bool,
    ) -> u32 {
        let mut more = 0;
        for i in 0..MAX_CONNS {
            if ready & (1 << i) == 0 {
                continue;
            }
            if let Some(c) = self.conns.slot(i) {
                c.note_received();
                if self.drain_sock(&c.sock, dev, buf, coalescer, charge) {
                    more |= 1 << i;
                }
            }
        }
        more
    }

    /// Closes the connected sockets whose bits are set in `mask`, each once it has taken in
    /// what it holds: closing a socket drops its receive queue, datagrams the peer sent and
    /// this host's kernel accepted. One still holding more after a few reads (a bound on
    /// this turn's time) stays open, retired, and its bit is returned: the caller reads it
    /// again on the next turn and closes it then.
    pub(super) fn close_conns(
        &mut self,
        mask: u32,
        dev: &mut Device,
        buf: &mut [u8],
        coalescer: &mut offload::TcpCoalescer,
        charge: bool,
    ) -> u32 {
        let mut kept = 0;
        for i in 0..MAX_CONNS {
            if mask & (1 << i) == 0 {
                continue;
            }
            if let Some(c) = self.conns.slot(i) {
                // Each call takes up to RX_MESSAGES; a few bound this turn's time.
                let emptied =
                    (0..4).any(|_| !self.drain_sock(&c.sock, dev, buf, coalescer, charge));
                if !emptied {
                    kept |= 1 << i;
                    self.conns.retire(i);
                    continue;
                }
            }
            self.conns.close(i, &self.reg);
        }
        kept
    }

    /// Acts on what decapsulating the datagram at `buf[at]` returned: its packet to the
    /// TUN device (with TUN offload, into the coalescer's group), or a reply to send.
    fn deliver(
        &self,
        verdict: Verdict,
        buf: &mut [u8],
        at: std::ops::Range<usize>,
        vnet: bool,
        coalescer: &mut offload::TcpCoalescer,
    ) {
        match verdict {
            // Consecutive segments coalesce across datagrams and messages alike.
            Verdict::WriteTun { start, len } if vnet => {
                let start = at.start + start;
                match coalescer.add(buf, start, len) {
                    Ok(()) => {}
                    Err(offload::Refused::NotNext) => {
                        self.flush_group(coalescer, buf);
                        // Starts a group: a packet refused only for not following.
                        let _ = coalescer.add(buf, start, len);
                    }
                    Err(offload::Refused::Never) => {
                        self.flush_group(coalescer, buf);
                        self.write_tun(buf, start, len);
                    }
                }
            }
            Verdict::WriteTun { start, len } => self.write_tun(&mut buf[at], start, len),
            Verdict::SendUdp { to, len } => self.send_udp(to, &buf[at.start..at.start + len]),
            Verdict::Done | Verdict::Drop(_) => {}
        }
    }

    fn drain_sock(
        &self,
        sock: &UdpSocket,
        dev: &mut Device,
        buf: &mut [u8],
        coalescer: &mut offload::TcpCoalescer,
        charge: bool,
    ) -> bool {
        let vnet = self.tun.vnet_hdr_len() != 0;
        let mut taken = 0;
        for _ in 0..BATCH {
            let asked = match self.rx_calm.get() {
                0 => 1,
                c if c < RX_CALM => 4,
                _ => batch::RECV_MANY,
            };
            stats::add(&self.stats.udp_recv_calls, 1);
            let got = match batch::recv_many(sock, &mut self.recvmany.borrow_mut(), buf, asked) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
                // A connected socket reports the endpoint's ICMP port unreachable once.
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => continue,
                Err(e) => {
                    log::verbose(format_args!("UDP receive failed: {e}"));
                    return false;
                }
            };
            // Per receive, not per batch: a batch of handshakes can take tens of milliseconds,
            // and the rate limiter and handshake spacing must see the real time (vDSO, ~20 ns).
            let now = Instant::now();
            // A message longer than a head slot (a GRO train of full datagrams) filled pages
            // of its own region.
            let mut spilled = false;
            for m in 0..got {
                let Some(r) = self.recvmany.borrow().get(m) else {
                    continue;
                };
                if r.truncated {
                    dev.count_drop(DropReason::TooBig);
                    continue;
                }
                spilled |= r.len > batch::RECV_HEAD;
                stats::add(&self.stats.udp_rx_datagrams, r.len.div_ceil(r.seg) as u64);
                let from = endpoint::canonical(r.from);
                let mut off = r.at;
                while off < r.at + r.len {
                    let end = (off + r.seg).min(r.at + r.len);
                    let chunk = &mut buf[off..end];
                    let len = chunk.len();
                    let verdict = decapsulate_timed(dev, now, from, chunk, len, charge);
                    self.deliver(verdict, buf, off..end, vnet, coalescer);
                    off = end;
                }
            }
            // The next receive reuses the buffer the group points into.
            self.flush_group(coalescer, buf);
            let calm = self.rx_calm.get();
            self.rx_calm
                .set(if spilled { 0 } else { (calm + 1).min(RX_CALM) });
            if got < asked {
                return false; // recvmmsg stopped short: the queue ran empty
            }
            taken += got;
            if taken >= RX_MESSAGES {
                break;
            }
        }
        true
    }

    /// One `recvmmsg` from a handshake socket (at most SMALL_BATCH datagrams, whatever is
    /// queued: under a flood the rest waits for the next turn, after the tunnel's packets, or
    /// is dropped by the kernel when the queue is full); true if more may be waiting.
    pub(super) fn drain_hs(
        &self,
        v6: bool,
        dev: &mut Device,
        handshakes: &mut batch::SmallBatch,
        charge: bool,
    ) -> bool {
        let Some(sock) = (if v6 { &self.hs6 } else { &self.hs4 }) else {
            return false;
        };
        let n = match batch::recv_small(sock, handshakes) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
            Err(e) => {
                log::verbose(format_args!("UDP receive failed: {e}"));
                return false;
            }
        };
        let now = Instant::now();
        for i in 0..n {
            let Some((slot, len, from, truncated)) = handshakes.get(i) else {
                continue;
            };
            if truncated {
                dev.count_drop(DropReason::TooBig);
                continue;
            }
            let from = endpoint::canonical(from);
            let verdict = decapsulate_timed(dev, now, from, slot, len, charge);
            match verdict {
                Verdict::SendUdp { to, len } => self.send_udp(to, &slot[..len]),
                // Data is steered to the other socket; should one come here anyway, it is
                // still delivered.
                Verdict::WriteTun { start, len } => self.write_tun(slot, start, len),
                Verdict::Done | Verdict::Drop(_) => {}
            }
        }
        n == batch::SMALL_BATCH
    }
}
