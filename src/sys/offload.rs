//! TUN offload (IFF_VNET_HDR): the virtio-net header that prefixes every TUN read and write,
//! TCP segmentation of the super-packets the kernel hands us with TSO enabled, and the
//! Internet checksum to complete what the kernel left partial.
//!
//! Everything here is pure (bytes in, bytes out) and allocates nothing. The header's 16-bit
//! fields are little-endian: `Tun` asks for that with TUNSETVNETLE (as virtio 1.0 does), so
//! they mean the same on a big-endian router and wherever the kernel's byte order is not
//! ours (a big-endian binary under qemu-user on a little-endian host). Without it the kernel
//! would use its own order (legacy virtio).

/// Size of `struct virtio_net_hdr` (the TUN default; we never change it).
pub const VNET_HDR_LEN: usize = 10;
/// `flags`: checksum from `csum_start` to the end, stored at `csum_start + csum_offset`.
pub const F_NEEDS_CSUM: u8 = 1;
pub const GSO_NONE: u8 = 0;
pub const GSO_TCPV4: u8 = 1;
pub const GSO_TCPV6: u8 = 4;
/// `gso_type` bit: the flow uses ECN (CWR goes on the first segment only).
pub const GSO_ECN: u8 = 0x80;

const TCP_FIN: u8 = 0x01;
const TCP_PSH: u8 = 0x08;
const TCP_CWR: u8 = 0x80;
const PROTO_TCP: u8 = 6;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VnetHdr {
    pub flags: u8,
    pub gso_type: u8,
    pub hdr_len: u16,
    pub gso_size: u16,
    pub csum_start: u16,
    pub csum_offset: u16,
}

impl VnetHdr {
    pub fn parse(b: &[u8]) -> Option<VnetHdr> {
        let b = b.get(..VNET_HDR_LEN)?;
        let u = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        Some(VnetHdr {
            flags: b[0],
            gso_type: b[1],
            hdr_len: u(2),
            gso_size: u(4),
            csum_start: u(6),
            csum_offset: u(8),
        })
    }

    pub fn write(&self, b: &mut [u8]) {
        b[0] = self.flags;
        b[1] = self.gso_type;
        b[2..4].copy_from_slice(&self.hdr_len.to_le_bytes());
        b[4..6].copy_from_slice(&self.gso_size.to_le_bytes());
        b[6..8].copy_from_slice(&self.csum_start.to_le_bytes());
        b[8..10].copy_from_slice(&self.csum_offset.to_le_bytes());
    }

    pub fn is_gso(&self) -> bool {
        self.gso_type != GSO_NONE
    }
}

/// Adds `data` to a ones' complement sum kept in native byte order (RFC 1071: the sum of
/// byte-swapped words is the byte-swapped sum, so `fold` converts once at the end). `data`
/// must start at an even offset of the checksummed range unless it is the last piece.
#[allow(unsafe_code)] // align_to: no safe std API reinterprets bytes as words
pub fn sum(acc: u64, data: &[u8]) -> u64 {
    if data.len() < 64 {
        return sum_bytes(acc, data); // headers: not worth aligning
    }
    // SAFETY: every bit pattern is a valid u32; align_to only reinterprets the aligned middle.
    let (head, words, tail) = unsafe { data.align_to::<u32>() };
    if head.len() % 2 != 0 {
        return sum_bytes(acc, data);
    }
    // Every part starts at an even offset, so its 16-bit units pair as in one pass.
    let mut w = Words::default();
    w.add_all(words);
    sum_bytes(add(sum_bytes(acc, head), w.total()), tail)
}

/// `sum` without alignment: eight bytes at a time, each an unaligned load.
fn sum_bytes(mut acc: u64, data: &[u8]) -> u64 {
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_ne_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        let (s, carry) = acc.overflowing_add(w);
        acc = s + carry as u64;
    }
    // The last 0-7 bytes as a 4-, a 2- and a 1-byte piece, each in the low bytes of a
    // native word (every 16-bit lane of the accumulator folds to the same sum), so no copy
    // of a variable length (a library call) is needed.
    let mut rest = chunks.remainder();
    let mut piece = 0u64;
    if let Some((w, r)) = rest.split_first_chunk::<4>() {
        piece = u64::from(u32::from_ne_bytes(*w));
        rest = r;
    }
    if let Some((w, r)) = rest.split_first_chunk::<2>() {
        piece += u64::from(u16::from_ne_bytes(*w));
        rest = r;
    }
    if let Some(&b) = rest.first() {
        piece += u64::from(u16::from_ne_bytes([b, 0]));
    }
    add(acc, piece)
}

/// `a + b` for two `sum` accumulators (end-around carry).
fn add(a: u64, b: u64) -> u64 {
    let (s, carry) = a.overflowing_add(b);
    s + carry as u64
}

/// The exact sum of up to 2^32 32-bit words. Where registers are 32 bits wide it is a low
/// word and a count of its carries: three instructions a word on a MIPS32 (add, set on
/// carry, add), where a 64-bit add costs five.
#[derive(Default)]
struct Words {
    #[cfg(target_pointer_width = "64")]
    total: u64,
    #[cfg(not(target_pointer_width = "64"))]
    lo: u32,
    #[cfg(not(target_pointer_width = "64"))]
    carries: u32,
}

impl Words {
    #[inline(always)]
    fn add(&mut self, w: u32) {
        #[cfg(target_pointer_width = "64")]
        {
            self.total += u64::from(w);
        }
        #[cfg(not(target_pointer_width = "64"))]
        {
            let (s, c) = self.lo.overflowing_add(w);
            self.lo = s;
            self.carries += u32::from(c);
        }
    }

    /// On MIPS: the assembly in `asm/csum-mips.S` (a load and a multiply-accumulate a word,
    /// half the instructions of `add`).
    #[cfg(target_arch = "mips")]
    #[inline(always)]
    fn add_all(&mut self, words: &[u32]) {
        let t = mips::sum_words(words);
        let (lo, c) = self.lo.overflowing_add(t as u32);
        self.lo = lo;
        self.carries += (t >> 32) as u32 + u32::from(c);
    }

    /// Four words an iteration, so the loop's own cost is spread.
    #[cfg(not(target_arch = "mips"))]
    #[inline(always)]
    fn add_all(&mut self, words: &[u32]) {
        let mut quads = words.chunks_exact(4);
        for q in &mut quads {
            self.add(q[0]);
            self.add(q[1]);
            self.add(q[2]);
            self.add(q[3]);
        }
        for &w in quads.remainder() {
            self.add(w);
        }
    }

    fn total(&self) -> u64 {
        #[cfg(target_pointer_width = "64")]
        {
            self.total
        }
        #[cfg(not(target_pointer_width = "64"))]
        {
            u64::from(self.lo) | u64::from(self.carries) << 32
        }
    }
}

#[cfg(target_arch = "mips")]
mod mips {
    #![allow(unsafe_code)]

    extern "C" {
        /// asm/csum-mips.S: the exact 64-bit sum of `n` words at `words`.
        fn solowg_sum_words_mips(words: *const u32, n: u32) -> u64;
    }

    pub(super) fn sum_words(words: &[u32]) -> u64 {
        // SAFETY: the routine reads exactly `words.len()` aligned words from the pointer, which
        // the borrow covers, writes no memory and follows the o32 ABI (it uses only
        // caller-saved registers and HI/LO). `as u32` cannot truncate on a 32-bit target.
        unsafe { solowg_sum_words_mips(words.as_ptr(), words.len() as u32) }
    }
}

/// Copies `src` to `dst` (equal lengths) and returns `sum(acc, src)`, in one pass of
/// aligned 32-bit words where both start at the same even offset from a word boundary (a
/// segment's payload, always): on a 32-bit MIPS a separate copy (the C library's word loop
/// with unaligned stores) and sum cost 3.8 instructions a byte, this 1.5
/// (`segment-bench`). Else copy, then sum. Like `sum`, `src` must start at an even offset
/// of what is summed.
#[allow(unsafe_code)] // align_to, as in `sum`
pub fn copy_and_sum(dst: &mut [u8], src: &[u8], acc: u64) -> u64 {
    let skew = src.as_ptr().align_offset(4);
    if dst.len() != src.len() || dst.as_ptr().align_offset(4) != skew || skew % 2 != 0 {
        dst.copy_from_slice(src);
        return sum(acc, src);
    }
    // SAFETY: every bit pattern is a valid u32; align_to only reinterprets the aligned middle.
    let (sp, sm, ss) = unsafe { src.align_to::<u32>() };
    // SAFETY: as above.
    let (dp, dm, ds) = unsafe { dst.align_to_mut::<u32>() };
    copy_small(dp, sp);
    let mut words = Words::default();
    let mut dq = dm.chunks_exact_mut(4);
    let mut sq = sm.chunks_exact(4);
    for (d, s) in (&mut dq).zip(&mut sq) {
        let q = [s[0], s[1], s[2], s[3]];
        d.copy_from_slice(&q);
        words.add(q[0]);
        words.add(q[1]);
        words.add(q[2]);
        words.add(q[3]);
    }
    for (d, &w) in dq.into_remainder().iter_mut().zip(sq.remainder()) {
        *d = w;
        words.add(w);
    }
    copy_small(ds, ss);
    // Every part starts at an even offset, so its 16-bit units pair as in one pass.
    sum_bytes(add(sum_bytes(acc, sp), words.total()), ss)
}

/// Copies the 0-3 bytes around a run of words without a library call (a loop or
/// `copy_from_slice` becomes one).
fn copy_small(dst: &mut [u8], src: &[u8]) {
    let n = dst.len().min(src.len());
    if n >= 1 {
        dst[0] = src[0];
    }
    if n >= 2 {
        dst[1] = src[1];
    }
    if n >= 3 {
        dst[2] = src[2];
    }
}

/// Folds a `sum` accumulator to the 16-bit ones' complement sum, as a network-order value.
pub fn fold(acc: u64) -> u16 {
    let mut s = (acc >> 32) + (acc & 0xffff_ffff);
    s = (s >> 32) + (s & 0xffff_ffff);
    s = (s >> 16) + (s & 0xffff);
    s = (s >> 16) + (s & 0xffff);
    u16::from_be(s as u16)
}

/// The value to store in a checksum field (network order): the complement of the sum, with
/// a result of zero sent as 0xffff (equivalent for TCP, required for UDP).
pub fn finish(acc: u64) -> u16 {
    match !fold(acc) {
        0 => 0xffff,
        c => c,
    }
}

/// Completes a checksum the kernel left partial (VIRTIO_NET_HDR_F_NEEDS_CSUM): the field
/// already holds the pseudo-header sum, so summing from `start` to the end and storing the
/// complement gives the full checksum. False if the offsets do not fit the packet.
pub fn complete_csum(pkt: &mut [u8], start: usize, offset: usize) -> bool {
    let field = start + offset;
    if field + 2 > pkt.len() {
        return false;
    }
    let c = finish(sum(0, &pkt[start..]));
    pkt[field..field + 2].copy_from_slice(&c.to_be_bytes());
    true
}

/// Sum of the TCP/UDP pseudo-header for IPv4 (`ip` is the IPv4 header) or IPv6.
fn pseudo_sum(ip: &[u8], v6: bool, l4_len: usize) -> u64 {
    let addrs = if v6 { &ip[8..40] } else { &ip[12..20] };
    // Length and protocol as big-endian words, in the same native view `sum` uses.
    let mut extra = [0u8; 8];
    extra[0..4].copy_from_slice(&(l4_len as u32).to_be_bytes());
    extra[7] = PROTO_TCP;
    sum(sum(0, addrs), &extra)
}

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

/// Most packets one coalesced TUN write carries (each is one iovec of the `writev`).
pub const MAX_COALESCE: usize = 64;
const TCP_ACK: u8 = 0x10;

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
fn same_headers(first: &[u8], p: &[u8], l4: usize, v6: bool) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_and_sum_copies_and_sums_at_every_alignment() {
        let src: Vec<u8> = (0..1500u32).map(|i| (i * 151 + 7) as u8).collect();
        let mut dst = vec![0u8; 1600];
        for so in [0usize, 1, 2, 3, 4, 6] {
            for d_off in [0usize, 1, 2, 3, 4, 6] {
                for len in (0..40).chain([1367, 1368, 1369, 1400]) {
                    let s = &src[so..so + len];
                    let d = &mut dst[d_off..d_off + len];
                    d.fill(0xEE);
                    let got = copy_and_sum(d, s, 0x1234);
                    assert_eq!(d, s, "copy at {so}/{d_off}, {len} bytes");
                    assert_eq!(
                        fold(got),
                        fold(sum(0x1234, s)),
                        "sum at {so}/{d_off}, {len}"
                    );
                }
            }
        }
    }

    /// Plain RFC 1071 over big-endian words, for checking the fast version.
    fn reference(data: &[u8]) -> u16 {
        let mut s: u32 = 0;
        for c in data.chunks(2) {
            s += u32::from(c[0]) << 8 | u32::from(*c.get(1).unwrap_or(&0));
        }
        while s > 0xffff {
            s = (s >> 16) + (s & 0xffff);
        }
        s as u16
    }

    fn tcp_pseudo(seg: &[u8], v6: bool, l4: usize) -> Vec<u8> {
        let mut p = Vec::new();
        if v6 {
            p.extend_from_slice(&seg[8..40]);
            p.extend_from_slice(&((seg.len() - l4) as u32).to_be_bytes());
            p.extend_from_slice(&[0, 0, 0, 6]);
        } else {
            p.extend_from_slice(&seg[12..20]);
            p.extend_from_slice(&[0, 6]);
            p.extend_from_slice(&((seg.len() - l4) as u16).to_be_bytes());
        }
        p.extend_from_slice(&seg[l4..]);
        p
    }

    #[test]
    fn fast_sum_matches_reference() {
        let data: Vec<u8> = (0..3001u32).map(|i| (i * 7 + i / 5) as u8).collect();
        for len in [0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 1499, 3000, 3001] {
            assert_eq!(fold(sum(0, &data[..len])), reference(&data[..len]), "{len}");
        }
        let ff = [0xffu8; 1024];
        assert_eq!(fold(sum(0, &ff)), 0xffff);
    }

    /// Every start alignment and every word count modulo the unrolled loops (the MIPS
    /// assembly sums 8 words an iteration, then single words), and sums whose 32-bit
    /// carries pile up.
    #[test]
    fn sum_any_alignment_and_length() {
        let data: Vec<u8> = (0..4200u32).map(|i| (i * 131 + i / 3) as u8).collect();
        for start in 0..4 {
            for len in (60..=200).chain([1420, 4000]) {
                let d = &data[start..start + len];
                assert_eq!(fold(sum(0, d)), reference(d), "start {start} len {len}");
                assert_eq!(
                    fold(sum(0x1234_5678_9abc, d)),
                    fold(add(0x1234_5678_9abc, sum(0, d)))
                );
            }
        }
        let ff = vec![0xffu8; 4096 + 6];
        for start in 0..4 {
            let d = &ff[start..start + 4096];
            assert_eq!(fold(sum(0, d)), reference(d), "0xff start {start}");
        }
    }

    #[test]
    fn header_round_trip() {
        let h = VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: GSO_TCPV6 | GSO_ECN,
            hdr_len: 72,
            gso_size: 1348,
            csum_start: 40,
            csum_offset: 16,
        };
        let mut b = [0u8; VNET_HDR_LEN];
        h.write(&mut b);
        assert_eq!(VnetHdr::parse(&b), Some(h));
        assert!(h.is_gso());
        assert_eq!(VnetHdr::parse(&b[..9]), None);
    }

    /// The layout TUNSETVNETLE asks the kernel for, whatever the byte order of the CPU
    /// (the MIPS unit tests run this big-endian).
    #[test]
    fn header_fields_are_little_endian() {
        // flags, gso_type, then hdr_len 0x36, gso_size 1348, csum_start 0x22, csum_offset 0x10.
        let b = [1u8, 1, 0x36, 0, 0x44, 0x05, 0x22, 0, 0x10, 0];
        let h = VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: GSO_TCPV4,
            hdr_len: 0x36,
            gso_size: 1348,
            csum_start: 0x22,
            csum_offset: 0x10,
        };
        assert_eq!(VnetHdr::parse(&b), Some(h));
        let mut out = [0u8; VNET_HDR_LEN];
        h.write(&mut out);
        assert_eq!(out, b);
    }

    /// A super-packet as the kernel hands it over: IP + TCP (with 12 bytes of options),
    /// `payload` bytes, TCP checksum field holding only the pseudo-header sum.
    fn super_packet(v6: bool, payload: usize, flags: u8) -> (VnetHdr, Vec<u8>) {
        let ip = if v6 { 40 } else { 20 };
        let tcp = 32;
        let mut p = vec![0u8; ip + tcp + payload];
        if v6 {
            p[0] = 0x60;
            p[4..6].copy_from_slice(&((tcp + payload) as u16).to_be_bytes());
            p[6] = 6;
            p[7] = 64;
            p[8..24].copy_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
            p[24..40].copy_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        } else {
            p[0] = 0x45;
            p[2..4].copy_from_slice(&((ip + tcp + payload).min(65535) as u16).to_be_bytes());
            p[4..6].copy_from_slice(&0xfffeu16.to_be_bytes()); // id wraps
            p[6] = 0x40;
            p[8] = 64;
            p[9] = 6;
            p[12..16].copy_from_slice(&[10, 0, 0, 1]);
            p[16..20].copy_from_slice(&[10, 0, 0, 2]);
        }
        p[ip..ip + 2].copy_from_slice(&5201u16.to_be_bytes());
        p[ip + 2..ip + 4].copy_from_slice(&40000u16.to_be_bytes());
        p[ip + 4..ip + 8].copy_from_slice(&0xffff_f000u32.to_be_bytes()); // seq wraps
        p[ip + 8..ip + 12].copy_from_slice(&7u32.to_be_bytes());
        p[ip + 12] = (tcp as u8 / 4) << 4;
        p[ip + 13] = flags;
        p[ip + 14..ip + 16].copy_from_slice(&500u16.to_be_bytes());
        p[ip + 20] = 1; // NOP NOP timestamp
        p[ip + 21] = 1;
        p[ip + 22] = 8;
        p[ip + 23] = 10;
        for (i, b) in p[ip + tcp..].iter_mut().enumerate() {
            *b = (i * 31 + i / 253) as u8;
        }
        let partial = fold(pseudo_sum(&p, v6, tcp + payload));
        p[ip + 16..ip + 18].copy_from_slice(&partial.to_be_bytes());
        let h = VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: if v6 { GSO_TCPV6 } else { GSO_TCPV4 } | GSO_ECN,
            hdr_len: (ip + tcp) as u16,
            gso_size: 1000,
            csum_start: ip as u16,
            csum_offset: 16,
        };
        (h, p)
    }

    fn check_segments(v6: bool, payload: usize) {
        let flags = TCP_FIN | TCP_PSH | TCP_CWR | 0x10; // + ACK
        let (h, p) = super_packet(v6, payload, flags);
        let (ip, l4_hdr) = (if v6 { 40 } else { 20 }, 32);
        let hl = ip + l4_hdr;
        let mut segs = TcpSegments::new(&h, &p).unwrap();
        let n = payload.div_ceil(1000);
        assert_eq!(segs.remaining(), n);
        assert_eq!(segs.max_segment_len(), hl + 1000.min(payload));
        let mut out = vec![0u8; 2000];
        let mut rebuilt = Vec::new();
        let mut k = 0;
        while let Some(len) = segs.next_into(&mut out) {
            let s = &out[..len];
            let last = k + 1 == n;
            let want = if last { payload - k * 1000 } else { 1000 };
            assert_eq!(len, hl + want, "segment {k}");
            if v6 {
                assert_eq!(u16::from_be_bytes([s[4], s[5]]) as usize, len - 40);
            } else {
                assert_eq!(u16::from_be_bytes([s[2], s[3]]) as usize, len);
                assert_eq!(
                    u16::from_be_bytes([s[4], s[5]]),
                    0xfffeu16.wrapping_add(k as u16)
                );
                assert_eq!(reference(&s[..20]), 0xffff, "IPv4 header checksum {k}");
            }
            let seq = u32::from_be_bytes([s[ip + 4], s[ip + 5], s[ip + 6], s[ip + 7]]);
            assert_eq!(seq, 0xffff_f000u32.wrapping_add(k as u32 * 1000));
            let f = s[ip + 13];
            assert_eq!(f & TCP_CWR != 0, k == 0, "CWR on segment {k}");
            assert_eq!(f & TCP_FIN != 0, last, "FIN on segment {k}");
            assert_eq!(f & TCP_PSH != 0, last, "PSH on segment {k}");
            assert_eq!(f & 0x10, 0x10, "ACK kept");
            assert_eq!(s[ip + 20..hl], p[ip + 20..hl], "options copied");
            assert_eq!(
                reference(&tcp_pseudo(s, v6, ip)),
                0xffff,
                "TCP checksum of segment {k}"
            );
            rebuilt.extend_from_slice(&s[hl..]);
            k += 1;
        }
        assert_eq!(k, n);
        assert_eq!(segs.remaining(), 0);
        assert_eq!(rebuilt, p[hl..]);
    }

    #[test]
    fn segments_ipv4() {
        check_segments(false, 4500); // last segment short
        check_segments(false, 3000); // all full
        check_segments(false, 1); // one short segment
        check_segments(false, 64000);
    }

    #[test]
    fn segments_ipv6() {
        check_segments(true, 4500);
        check_segments(true, 2000);
        check_segments(true, 999);
        check_segments(true, 64000);
    }

    /// `next_in_place` over payloads placed where a scattered read leaves them makes the same
    /// segments as `next_into`, and `headers` needs only the headers.
    #[test]
    fn segments_in_place_match_copied_ones() {
        for (v6, payload) in [(false, 4500), (false, 64000), (false, 1), (true, 2000)] {
            let (h, p) = super_packet(v6, payload, TCP_FIN | TCP_PSH | TCP_CWR | TCP_ACK);
            let hl = (if v6 { 40 } else { 20 }) + 32;
            let mut copied = TcpSegments::new(&h, &p).unwrap();
            let head = &p[..hl];
            let mut placed = TcpSegments::headers(&h, head, p.len()).unwrap();
            assert_eq!(placed.remaining(), copied.remaining());
            assert_eq!((placed.header_len(), placed.mss()), (hl, 1000));
            assert_eq!(placed.next_into(&mut [0; 2000]), None, "no payload to copy");
            let (mut a, mut b) = (vec![0u8; 2000], vec![0u8; 2000]);
            let mut k = 0;
            while let Some(len) = copied.next_into(&mut a) {
                let end = (hl + (k + 1) * 1000).min(p.len());
                let part = &p[hl + k * 1000..end];
                b[hl..hl + part.len()].copy_from_slice(part);
                assert_eq!(placed.next_in_place(&mut b[..len - 1]), None, "too short");
                assert_eq!(placed.next_in_place(&mut b), Some(len), "segment {k}");
                assert_eq!(a[..len], b[..len], "segment {k}");
                k += 1;
            }
            assert_eq!(placed.next_in_place(&mut b), None);
        }
    }

    #[test]
    fn refuses_what_it_cannot_cut() {
        let (mut h, mut p) = super_packet(false, 3000, 0x10);
        assert!(TcpSegments::new(&h, &p[..30]).is_none());
        h.gso_size = 0;
        assert!(TcpSegments::new(&h, &p).is_none());
        h.gso_size = 1000;
        h.gso_type = 3; // UFO
        assert!(TcpSegments::new(&h, &p).is_none());
        h.gso_type = GSO_TCPV4;
        p[9] = 17;
        assert!(TcpSegments::new(&h, &p).is_none());
        p[9] = 6;
        p[20 + 12] = 0x40; // TCP header shorter than 20 bytes
        assert!(TcpSegments::new(&h, &p).is_none());
        h.gso_type = GSO_TCPV6;
        assert!(TcpSegments::new(&h, &p).is_none());
    }

    /// Cuts a super-packet, lays the segments out with gaps as a receive buffer would hold
    /// them, coalesces them again and checks the result is the original super-packet.
    fn round_trip(v6: bool, payload: usize) {
        let (h, p) = super_packet(v6, payload, TCP_ACK | TCP_PSH);
        let mut segs = TcpSegments::new(&h, &p).unwrap();
        let stride = 1200;
        let mut buf = vec![0u8; stride * (segs.remaining() + 1)];
        let mut placed = Vec::new();
        let mut k = 0;
        while let Some(len) = segs.next_into(&mut buf[k * stride + 16..]) {
            placed.push((k * stride + 16, len));
            k += 1;
        }
        let mut co = TcpCoalescer::default();
        for &(s, len) in &placed {
            assert_eq!(co.add(&buf, s, len), Ok(()));
        }
        assert_eq!(co.len(), placed.len().min(MAX_COALESCE));
        let mut out = Vec::new();
        co.flush(&mut buf, |parts| {
            for part in parts {
                out.extend_from_slice(part);
            }
        })
        .unwrap();
        assert!(co.is_empty());
        let hdr = VnetHdr::parse(&out).unwrap();
        let got = &out[VNET_HDR_LEN..];
        let ip = if v6 { 40 } else { 20 };
        if placed.len() == 1 {
            assert_eq!(hdr, VnetHdr::default());
            return;
        }
        assert_eq!(hdr.gso_type, h.gso_type & !GSO_ECN);
        assert_eq!((hdr.gso_size, hdr.hdr_len), (h.gso_size, h.hdr_len));
        assert_eq!(
            (hdr.flags, hdr.csum_start, hdr.csum_offset),
            (F_NEEDS_CSUM, ip as u16, 16)
        );
        assert_eq!(got.len(), p.len());
        if v6 {
            assert_eq!(got, &p[..]);
        } else {
            assert_eq!(reference(&got[..20]), 0xffff);
            assert_eq!(got[..10], p[..10]);
            assert_eq!(got[12..], p[12..]);
        }
    }

    #[test]
    fn coalesce_round_trip() {
        round_trip(false, 4500);
        round_trip(false, 3000);
        round_trip(false, 500);
        round_trip(true, 4500);
        round_trip(true, 64000 - 40);
    }

    #[test]
    fn coalesce_keeps_flows_and_order_apart() {
        let (h, p) = super_packet(false, 3000, TCP_ACK);
        let mut segs = TcpSegments::new(&h, &p).unwrap();
        let mut buf = vec![0u8; 3 * 1200];
        let mut at = Vec::new();
        for k in 0..3 {
            let len = segs.next_into(&mut buf[k * 1200 + 16..]).unwrap();
            at.push((k * 1200 + 16, len));
        }
        let mut co = TcpCoalescer::default();
        // Out of order: the third segment does not follow the first.
        assert_eq!(co.add(&buf, at[0].0, at[0].1), Ok(()));
        assert_eq!(co.add(&buf, at[2].0, at[2].1), Err(Refused::NotNext));
        // Another flow (source port) does not join.
        buf[at[1].0 + 20] ^= 1;
        assert_eq!(co.add(&buf, at[1].0, at[1].1), Err(Refused::NotNext));
        buf[at[1].0 + 20] ^= 1;
        // A SYN or a pure ACK starts nothing, with or without a group.
        let mut solo = TcpCoalescer::default();
        buf[at[1].0 + 33] |= 0x02;
        assert_eq!(solo.add(&buf, at[1].0, at[1].1), Err(Refused::Never));
        assert_eq!(co.add(&buf, at[1].0, at[1].1), Err(Refused::Never));
        buf[at[1].0 + 33] &= !0x02;
        assert_eq!(solo.add(&buf, at[1].0, 52), Err(Refused::Never));
        assert_eq!(co.add(&buf, at[1].0, at[1].1), Ok(()));
        assert_eq!(co.len(), 2);
    }

    /// `same_headers` against its definition, spelled out field by field: a change to any
    /// one byte of the headers keeps two packets together exactly when that byte is one of
    /// those that differ between segments of one super-packet.
    #[test]
    fn same_headers_skips_exactly_the_per_segment_fields() {
        let may_differ = |v6: bool, l4: usize, i: usize| {
            let ip = if v6 {
                (4..6).contains(&i)
            } else {
                [2, 3, 4, 5, 10, 11].contains(&i)
            };
            let tcp = i >= l4 && [4, 5, 6, 7, 13, 16, 17].contains(&(i - l4));
            ip || tcp
        };
        // (IPv6, TCP offset, headers): IPv4 plain and with options, TCP with and without
        // options; IPv6.
        for (v6, l4, h) in [
            (false, 20, 52),
            (false, 24, 44),
            (false, 20, 40),
            (true, 40, 72),
        ] {
            let mut a: Vec<u8> = (0..h as u8).map(|b| b.wrapping_mul(37) ^ 0x5a).collect();
            a.extend_from_slice(&[7; 9]); // payload, not compared
            for i in 0..h {
                let mut b = a.clone();
                b[i] ^= 0x10;
                assert_eq!(
                    same_headers(&a[..h], &b[..h], l4, v6),
                    may_differ(v6, l4, i),
                    "v6 {v6}, l4 {l4}, headers {h}: byte {i}"
                );
            }
            assert!(same_headers(&a[..h], &a.clone()[..h], l4, v6));
        }
    }

    #[test]
    fn completes_partial_checksums() {
        // A UDP datagram with its checksum field holding the pseudo-header sum.
        let mut p = vec![0u8; 20 + 8 + 333];
        p[0] = 0x45;
        p[9] = 17;
        p[12..16].copy_from_slice(&[10, 0, 0, 1]);
        p[16..20].copy_from_slice(&[10, 0, 0, 2]);
        p[24..26].copy_from_slice(&341u16.to_be_bytes());
        for (i, b) in p[28..].iter_mut().enumerate() {
            *b = i as u8 ^ 0x5a;
        }
        let mut ph = Vec::new();
        ph.extend_from_slice(&p[12..20]);
        ph.extend_from_slice(&[0, 17]);
        ph.extend_from_slice(&341u16.to_be_bytes());
        let partial = reference(&ph);
        p[26..28].copy_from_slice(&partial.to_be_bytes());
        assert!(complete_csum(&mut p, 20, 6));
        ph.extend_from_slice(&p[20..]);
        assert_eq!(reference(&ph), 0xffff);
        assert!(!complete_csum(&mut p, 20, 400));
    }
}
