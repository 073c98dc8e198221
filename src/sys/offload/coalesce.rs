//! TCP coalescing on receive: consecutive segments of one flow joined into one GSO write to
//! the TUN device.

use super::checksum::{fold, pseudo_sum, sum};
use super::VNET_HDR_LEN;
use super::{VnetHdr, F_NEEDS_CSUM, GSO_TCPV4, GSO_TCPV6, PROTO_TCP, TCP_ACK, TCP_PSH};

/// Most packets one coalesced TUN write carries (each is one iovec of the `writev`).
pub const MAX_COALESCE: usize = 64;

/// Groups consecutive TCP segments of one flow, decrypted in place in one receive buffer,
/// into one GSO write to the TUN device (what GRO does for a NIC): the first packet's
/// headers describe the whole group and the later packets contribute only their payload,
/// gathered by `writev` straight from where they were decrypted. The rules are strict:
/// same IP and TCP headers except lengths, IPv4 id and checksums; only ACK (PSH on the
/// last); consecutive sequence numbers; equal payload sizes, of which only the last may
/// be shorter. Anything else is written on its own.
pub struct TcpCoalescer {
    /// (start, len) of each packet of the group in the caller's buffer.
    pkts: [(usize, usize); MAX_COALESCE],
    n: usize,
    v6: bool,
    l4: usize,
    hdr_len: usize,
    gso_size: usize,
    /// IP length of the group so far (headers once, every payload).
    total: usize,
    next_seq: u32,
    /// A short or PSH segment ends the group.
    closed: bool,
}

/// Where a parsed candidate's fields are.
struct Candidate {
    v6: bool,
    l4: usize,
    hdr_len: usize,
    seq: u32,
    payload: usize,
    psh: bool,
}

/// Why `TcpCoalescer::add` left a packet out.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// Not a TCP segment with payload (a pure ACK, a SYN, a fragment, not TCP): it joins no
    /// group; write it on its own, after the group.
    Never,
    /// It does not continue the group: flush the group, then it starts the next one.
    NotNext,
}

/// Whether two packets' headers (`first` and `p`, of one length, TCP at `l4`) are equal
/// but for what differs between segments of one super-packet: the IP length, the IPv4 id
/// and header checksum, the TCP sequence number, flags and checksum. Compared a word at a
/// time, masked: the eight slice comparisons this replaces each called `memcmp`, some 180
/// instructions a packet on MIPS.
pub(super) fn same_headers(first: &[u8], p: &[u8], l4: usize, v6: bool) -> bool {
    let word = |b: &[u8], at: usize| -> u32 {
        b.get(at..at + 4)
            .and_then(|w| w.try_into().ok())
            .map_or(0, u32::from_ne_bytes)
    };
    let x = |at: usize| word(first, at) ^ word(p, at);
    // Which bytes of a word must be equal.
    let keep = u32::from_ne_bytes;
    let (lo, hi) = (keep([0xff, 0xff, 0, 0]), keep([0, 0, 0xff, 0xff]));
    let mut diff = if v6 {
        x(0) | (x(4) & hi)
    } else {
        (x(0) & lo) | (x(4) & hi) | (x(8) & lo)
    };
    diff |= x(l4) | x(l4 + 8) | (x(l4 + 12) & keep([0xff, 0, 0xff, 0xff])) | (x(l4 + 16) & hi);
    // The rest whole: addresses (and IPv4 options or IPv6 extension headers), TCP options.
    for r in [if v6 { 8 } else { 12 }..l4, l4 + 20..first.len()] {
        let (Some(a), Some(b)) = (first.get(r.clone()), p.get(r)) else {
            return false;
        };
        let (mut a, mut b) = (a.chunks_exact(4), b.chunks_exact(4));
        for (a, b) in (&mut a).zip(&mut b) {
            diff |= word(a, 0) ^ word(b, 0);
        }
        for (a, b) in a.remainder().iter().zip(b.remainder()) {
            diff |= u32::from(a ^ b);
        }
    }
    diff == 0
}

fn candidate(p: &[u8]) -> Option<Candidate> {
    let (v6, l4) = match p.first()? >> 4 {
        4 if p.len() >= 20 => {
            // Not a fragment (MF clear, offset zero), TCP.
            if p[9] != PROTO_TCP || u16::from_be_bytes([p[6], p[7]]) & 0x3fff != 0 {
                return None;
            }
            (false, (p[0] & 0xf) as usize * 4)
        }
        6 if p.len() >= 40 && p[6] == PROTO_TCP => (true, 40),
        _ => return None,
    };
    if l4 < 20 || l4 + 20 > p.len() {
        return None;
    }
    let hdr_len = l4 + (p[l4 + 12] >> 4) as usize * 4;
    if hdr_len < l4 + 20 || hdr_len >= p.len() || p[l4 + 13] & !TCP_PSH != TCP_ACK {
        return None;
    }
    Some(Candidate {
        v6,
        l4,
        hdr_len,
        seq: u32::from_be_bytes([p[l4 + 4], p[l4 + 5], p[l4 + 6], p[l4 + 7]]),
        payload: p.len() - hdr_len,
        psh: p[l4 + 13] & TCP_PSH != 0,
    })
}

impl Default for TcpCoalescer {
    fn default() -> Self {
        TcpCoalescer {
            pkts: [(0, 0); MAX_COALESCE],
            n: 0,
            v6: false,
            l4: 0,
            hdr_len: 0,
            gso_size: 0,
            total: 0,
            next_seq: 0,
            closed: false,
        }
    }
}

impl TcpCoalescer {
    /// Packets in the current group.
    #[cfg(any(test, feature = "internals"))]
    pub fn len(&self) -> usize {
        self.n
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Adds the packet `buf[start..start + len]` to the group, or starts a group with it if
    /// there is none; if not, says why.
    pub fn add(&mut self, buf: &[u8], start: usize, len: usize) -> Result<(), Refused> {
        let p = &buf[start..start + len];
        let Some(c) = candidate(p) else {
            return Err(Refused::Never);
        };
        if self.n == 0 {
            *self = TcpCoalescer {
                pkts: self.pkts,
                n: 1,
                v6: c.v6,
                l4: c.l4,
                hdr_len: c.hdr_len,
                gso_size: c.payload,
                total: len,
                next_seq: c.seq.wrapping_add(c.payload as u32),
                closed: c.psh,
            };
            self.pkts[0] = (start, len);
            return Ok(());
        }
        if self.closed
            || self.n == MAX_COALESCE
            || c.v6 != self.v6
            || c.hdr_len != self.hdr_len
            || c.seq != self.next_seq
            || c.payload > self.gso_size
            || self.total + c.payload > 65535
        {
            return Err(Refused::NotNext);
        }
        let (fs, _) = self.pkts[0];
        let h = self.hdr_len;
        if !same_headers(&buf[fs..fs + h], &p[..h], self.l4, self.v6) {
            return Err(Refused::NotNext);
        }
        self.pkts[self.n] = (start, len);
        self.n += 1;
        self.total += c.payload;
        self.next_seq = c.seq.wrapping_add(c.payload as u32);
        self.closed = c.psh || c.payload < self.gso_size;
        Ok(())
    }

    /// Ends the group: for two packets or more, rewrites the first packet's headers to
    /// describe the whole group (lengths, PSH of the last, IPv4 header checksum, and the
    /// pseudo-header sum in the TCP checksum field for the kernel to complete) and writes
    /// a GSO virtio-net header into the `VNET_HDR_LEN` bytes before it; for one packet a
    /// plain header. Then calls `write` with the pieces to gather, in order: the header
    /// and first packet, then every other packet's payload. The group is empty afterwards.
    pub fn flush<R>(&mut self, buf: &mut [u8], write: impl FnOnce(&[&[u8]]) -> R) -> Option<R> {
        if self.n == 0 {
            return None;
        }
        let n = std::mem::take(&mut self.n);
        let (fs, flen) = self.pkts[0];
        let hdr_start = fs.checked_sub(VNET_HDR_LEN)?;
        let mut hdr = VnetHdr::default();
        if n > 1 {
            let (l4, h, total) = (self.l4, self.hdr_len, self.total);
            let (ls, _) = self.pkts[n - 1];
            let last_flags = buf[ls + l4 + 13];
            let p = &mut buf[fs..fs + flen];
            if self.v6 {
                p[4..6].copy_from_slice(&((total - 40) as u16).to_be_bytes());
            } else {
                p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
                p[10..12].fill(0);
                let c = !fold(sum(0, &p[..l4]));
                p[10..12].copy_from_slice(&c.to_be_bytes());
            }
            p[l4 + 13] |= last_flags & TCP_PSH;
            let partial = fold(pseudo_sum(p, self.v6, total - l4));
            p[l4 + 16..l4 + 18].copy_from_slice(&partial.to_be_bytes());
            hdr = VnetHdr {
                flags: F_NEEDS_CSUM,
                gso_type: if self.v6 { GSO_TCPV6 } else { GSO_TCPV4 },
                hdr_len: h as u16,
                gso_size: self.gso_size as u16,
                csum_start: l4 as u16,
                csum_offset: 16,
            };
        }
        hdr.write(&mut buf[hdr_start..fs]);
        let mut parts: [&[u8]; MAX_COALESCE] = [&[]; MAX_COALESCE];
        parts[0] = &buf[hdr_start..fs + flen];
        for (d, &(s, len)) in parts[1..n].iter_mut().zip(&self.pkts[1..n]) {
            *d = &buf[s + self.hdr_len..s + len];
        }
        Some(write(&parts[..n]))
    }
}
