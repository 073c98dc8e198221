//! The Internet checksum (RFC 1071) over packet bytes: word sums in native byte order, a
//! copy that sums as it goes, folding, and the TCP/UDP pseudo-header.

use super::PROTO_TCP;

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
pub(super) fn add(a: u64, b: u64) -> u64 {
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

    /// On MIPS: the assembly in `sys/asm/csum-mips.S` (a load and a multiply-accumulate a word,
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
pub(super) fn pseudo_sum(ip: &[u8], v6: bool, l4_len: usize) -> u64 {
    let addrs = if v6 { &ip[8..40] } else { &ip[12..20] };
    // Length and protocol as big-endian words, in the same native view `sum` uses.
    let mut extra = [0u8; 8];
    extra[0..4].copy_from_slice(&(l4_len as u32).to_be_bytes());
    extra[7] = PROTO_TCP;
    sum(sum(0, addrs), &extra)
}
