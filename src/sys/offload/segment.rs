//! TCP segmentation: a super-packet the TUN device hands over with TSO cut into segments
//! of the MTU, every header and checksum filled in.

use super::checksum::{add, copy_and_sum, finish, fold, sum};
use super::{VnetHdr, F_NEEDS_CSUM, GSO_ECN, GSO_TCPV4, GSO_TCPV6, PROTO_TCP};
use super::{TCP_CWR, TCP_FIN, TCP_PSH};

/// Cuts a TCP super-packet (TSO, `gso_type` TCPV4 or TCPV6) into segments of `gso_size`
/// payload bytes each, with every header and checksum complete: either copied one at a
/// time into caller buffers (`next_into`), or completed where the caller already placed
/// each segment's payload (`next_in_place`, for a super-packet read scattered straight
/// into its segments' buffers). Holds nothing but offsets into the super-packet.
pub struct TcpSegments<'a> {
    /// The whole super-packet, or (`headers`) only its headers.
    pkt: &'a [u8],
    /// Length of the whole super-packet.
    total: usize,
    v6: bool,
    /// Offset of the TCP header.
    l4: usize,
    /// IP + TCP headers.
    hdr_len: usize,
    mss: usize,
    /// Next segment number.
    index: usize,
    count: usize,
    /// The checksums' parts that every segment shares, summed once: the IPv4 header but
    /// its length, id and checksum; the pseudo-header's addresses and protocol and the TCP
    /// header but its sequence number, offset and flags, and checksum.
    ip_sum: u64,
    tcp_sum: u64,
}

/// A big-endian 16- or 32-bit field's part of a `sum` (any 16-bit lane folds alike).
fn field16(v: u16) -> u64 {
    u64::from(u16::from_ne_bytes(v.to_be_bytes()))
}

fn field32(v: u32) -> u64 {
    u64::from(u32::from_ne_bytes(v.to_be_bytes()))
}

/// Copies headers of equal length, word by word (IP and TCP headers are whole words long):
/// for the fifty-odd bytes of a segment's headers, a call to `memcpy` cost the MIPS build
/// about 170 instructions, this loop about 100.
fn copy_headers(out: &mut [u8], from: &[u8]) {
    let mut d = out.chunks_exact_mut(4);
    let mut s = from.chunks_exact(4);
    for (d, s) in (&mut d).zip(&mut s) {
        d.copy_from_slice(s);
    }
    // Empty for headers of whole words; a `copy_from_slice` here still called `memcpy`.
    for (d, s) in d.into_remainder().iter_mut().zip(s.remainder()) {
        *d = *s;
    }
}

impl<'a> TcpSegments<'a> {
    /// `None` if the header or the packet is not a TCP super-packet we can cut.
    pub fn new(h: &VnetHdr, pkt: &'a [u8]) -> Option<TcpSegments<'a>> {
        Self::headers(h, pkt, pkt.len())
    }

    /// For a super-packet of `total` bytes whose headers `head` starts with (it may hold
    /// more); only `next_in_place` may be used. `None` as for `new`.
    pub fn headers(h: &VnetHdr, head: &'a [u8], total: usize) -> Option<TcpSegments<'a>> {
        let v6 = match h.gso_type & !GSO_ECN {
            GSO_TCPV4 => false,
            GSO_TCPV6 => true,
            _ => return None,
        };
        let mss = h.gso_size as usize;
        let ip_min = if v6 { 40 } else { 20 };
        let pkt = head.get(..total.min(head.len()))?;
        if mss == 0 || pkt.len() < ip_min {
            return None;
        }
        let l4 = if v6 {
            if pkt[0] >> 4 != 6 {
                return None;
            }
            if h.flags & F_NEEDS_CSUM != 0 {
                h.csum_start as usize // past any extension headers
            } else if pkt[6] == PROTO_TCP {
                40
            } else {
                return None;
            }
        } else {
            if pkt[0] >> 4 != 4 || pkt[9] != PROTO_TCP {
                return None;
            }
            (pkt[0] & 0xf) as usize * 4
        };
        if l4 < ip_min || l4 + 20 > pkt.len() {
            return None;
        }
        let doff = (pkt[l4 + 12] >> 4) as usize * 4;
        let hdr_len = l4 + doff;
        if doff < 20 || hdr_len > pkt.len() {
            return None;
        }
        let payload = total - hdr_len;
        let ip_sum = if v6 {
            0
        } else {
            sum(sum(sum(0, &pkt[..2]), &pkt[6..10]), &pkt[12..l4])
        };
        let addrs = if v6 { &pkt[8..40] } else { &pkt[12..20] };
        let t = &pkt[l4..hdr_len];
        let tcp_sum = [&t[..4], &t[8..12], &t[14..16], &t[18..]].iter().fold(
            add(sum(0, addrs), field16(u16::from(PROTO_TCP))),
            |a, part| sum(a, part),
        );
        Some(TcpSegments {
            pkt,
            total,
            v6,
            l4,
            hdr_len,
            mss,
            index: 0,
            count: payload.div_ceil(mss).max(1),
            ip_sum,
            tcp_sum,
        })
    }

    /// Segments left to write.
    pub fn remaining(&self) -> usize {
        self.count - self.index
    }

    /// IP + TCP headers, the same on every segment.
    pub fn header_len(&self) -> usize {
        self.hdr_len
    }

    /// Payload bytes of every segment but the last.
    pub fn mss(&self) -> usize {
        self.mss
    }

    /// Size of the largest segment (the first).
    pub fn max_segment_len(&self) -> usize {
        self.hdr_len + self.mss.min(self.total - self.hdr_len)
    }

    /// The next segment's number, payload range in the super-packet and length; `None`
    /// when all are written.
    fn peek(&self) -> Option<(usize, usize, usize, usize)> {
        if self.index == self.count {
            return None;
        }
        let k = self.index;
        let start = self.hdr_len + k * self.mss;
        let end = (start + self.mss).min(self.total);
        Some((k, start, end, self.hdr_len + (end - start)))
    }

    /// Writes the next segment to the start of `out` (at least `max_segment_len` bytes) and
    /// returns its length; `None` when all are written, or when made by `headers`.
    pub fn next_into(&mut self, out: &mut [u8]) -> Option<usize> {
        if self.pkt.len() != self.total {
            return None;
        }
        let (k, start, end, len) = self.peek()?;
        self.index += 1;
        let h = self.hdr_len;
        let out = &mut out[..len];
        out[..h].copy_from_slice(&self.pkt[..h]);
        // The payload's part of the TCP checksum, summed as it is copied (the TCP header's
        // length is a multiple of 4, so the payload starts at an even offset of the sum).
        let payload = copy_and_sum(&mut out[h..], &self.pkt[start..end], 0);
        self.finish(out, k, payload);
        Some(len)
    }

    /// Completes the next segment in `out`, whose payload the caller already placed at
    /// `out[header_len..]`: writes its headers and checksums and returns its length;
    /// `None` when all are written or `out` is too short for the segment.
    pub fn next_in_place(&mut self, out: &mut [u8]) -> Option<usize> {
        let (k, _, _, len) = self.peek()?;
        let out = out.get_mut(..len)?;
        self.index += 1;
        let h = self.hdr_len;
        copy_headers(&mut out[..h], &self.pkt[..h]);
        let payload = sum(0, &out[h..]);
        self.finish(out, k, payload);
        Some(len)
    }

    /// Fixes segment `k`'s headers (copied from the super-packet's) in `out`, its whole
    /// length, given the sum of its payload; the checksums add only what differs per
    /// segment to the shared parts.
    fn finish(&self, out: &mut [u8], k: usize, payload: u64) {
        let (l4, len) = (self.l4, out.len());
        if self.v6 {
            out[4..6].copy_from_slice(&((len - 40) as u16).to_be_bytes());
        } else {
            let id = u16::from_be_bytes([out[4], out[5]]).wrapping_add(k as u16);
            out[2..4].copy_from_slice(&(len as u16).to_be_bytes());
            out[4..6].copy_from_slice(&id.to_be_bytes());
            let c = !fold(add(self.ip_sum, field16(len as u16) + field16(id)));
            out[10..12].copy_from_slice(&c.to_be_bytes());
        }
        let seq = u32::from_be_bytes([out[l4 + 4], out[l4 + 5], out[l4 + 6], out[l4 + 7]])
            .wrapping_add((k * self.mss) as u32);
        out[l4 + 4..l4 + 8].copy_from_slice(&seq.to_be_bytes());
        if k != 0 {
            out[l4 + 13] &= !TCP_CWR;
        }
        if k + 1 != self.count {
            out[l4 + 13] &= !(TCP_FIN | TCP_PSH);
        }
        let varying = field32((len - l4) as u32)
            + field32(seq)
            + field16(u16::from_be_bytes([out[l4 + 12], out[l4 + 13]]));
        let c = finish(add(add(self.tcp_sum, varying), payload));
        out[l4 + 16..l4 + 18].copy_from_slice(&c.to_be_bytes());
    }
}
