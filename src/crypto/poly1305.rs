//! Poly1305 one-time authenticator (RFC 8439 §2.5), tuned for 32-bit MIPS: radix 2^32 (the
//! arithmetic: docs/architecture.md, "Poly1305 in radix 2^32"). Block functions:
//! `portable::blocks` everywhere, and on MIPS32r2 (both endiannesses) `mips::blocks` in
//! `src/crypto/asm/poly1305-mips.S`; one finalisation serves both. Constant time: no branch or
//! index depends on the key, the accumulator or the message contents.

use zeroize::Zeroize;

/// Accumulator and clamped key. The layout is shared with the assembly (`#[repr(C)]`:
/// `h` at byte offset 0, `r` at 20).
///
/// Invariant between block calls: `h[0..4]` are full 32-bit words and `h[4] < 2^32`; `h[4]`
/// may exceed 2 bits because the bits above 2^130 of the last product are only folded back
/// (×5) at the start of the next block or in `finish`, where they cost no extra carry chain.
#[repr(C)]
#[derive(Zeroize)]
struct State {
    h: [u32; 5],
    r: [u32; 4],
}

impl State {
    /// `r` from the key's first four little-endian words, clamped.
    fn new(r: [u32; 4]) -> Self {
        const CLAMP: [u32; 4] = [0x0fff_ffff, 0x0fff_fffc, 0x0fff_fffc, 0x0fff_fffc];
        let mut r = r;
        for (w, m) in r.iter_mut().zip(CLAMP) {
            *w &= m;
        }
        State { h: [0; 5], r }
    }
}

#[inline(always)]
fn le_words(b: &[u8]) -> [u32; 4] {
    let w = |i: usize| u32::from_le_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]]);
    [w(0), w(1), w(2), w(3)]
}

#[cfg(target_arch = "mips")]
use mips::blocks;
#[cfg(not(target_arch = "mips"))]
use portable::blocks;

/// Poly1305 for the ChaCha20-Poly1305 AEAD: every block, full or zero-padded, gets 2^128.
pub struct Poly1305 {
    st: State,
    s: [u32; 4],
}

/// The zero-padded last block of `update_padded`.
#[repr(C, align(4))]
struct Padded([u8; 16]);

impl Poly1305 {
    pub fn new(key: &[u8; 32]) -> Self {
        Poly1305 {
            st: State::new(le_words(&key[..16])),
            s: le_words(&key[16..]),
        }
    }

    /// Keyed with the first eight of `key`, little-endian words (`ChaCha20::block_words`).
    pub fn from_words(key: &[u32; 16]) -> Self {
        Poly1305 {
            st: State::new([key[0], key[1], key[2], key[3]]),
            s: [key[4], key[5], key[6], key[7]],
        }
    }

    /// Absorbs data; a trailing partial block is zero-padded to 16 bytes (the RFC 8439 AEAD
    /// padding rule), i.e. every absorbed block, full or padded, gets the 2^128 bit.
    pub fn update_padded(&mut self, data: &[u8]) {
        let full = data.len() & !15;
        blocks(&mut self.st, &data[..full], 1);
        if full < data.len() {
            // Word-aligned, so the block function takes its word-load path.
            let mut last = Padded([0; 16]);
            copy_short(&mut last.0, &data[full..]);
            blocks(&mut self.st, &last.0, 1);
        }
    }

    pub fn finalize(self) -> [u8; 16] {
        finish(&self.st.h, &self.s)
    }
}

/// `out[..src.len()] = src` for the 1-15 bytes of a last block, in straight-line code: a
/// loop or a variable-length `copy_from_slice` becomes a call to `memcpy` (on musl ~50
/// instructions for 12 bytes, once per MTU-sized packet).
#[inline(always)]
fn copy_short(out: &mut [u8; 16], src: &[u8]) {
    let n = src.len().min(15);
    for at in [0, 4, 8] {
        if n >= at + 4 {
            out[at..at + 4].copy_from_slice(&src[at..at + 4]);
        }
    }
    let t = n & !3;
    for k in 0..3 {
        if t + k < n {
            out[t + k] = src[t + k];
        }
    }
}

impl Drop for Poly1305 {
    fn drop(&mut self) {
        self.st.zeroize();
        self.s.zeroize();
    }
}

/// Plain one-shot Poly1305 (RFC 8439 §2.5: the final partial block gets a 0x01 byte and no
/// 2^128 bit).
pub fn mac(key: &[u8; 32], msg: &[u8]) -> [u8; 16] {
    let mut m = Stream::new(key);
    m.update(msg);
    m.finalize()
}

/// `mac` through the portable block function whatever the target: lets the assembly be
/// cross-checked and both be measured in one build.
#[doc(hidden)]
pub fn mac_portable(key: &[u8; 32], msg: &[u8]) -> [u8; 16] {
    let mut p = Poly1305::new(key);
    let full = msg.len() & !15;
    portable::blocks(&mut p.st, &msg[..full], 1);
    if full < msg.len() {
        let mut last = [0u8; 16];
        last[..msg.len() - full].copy_from_slice(&msg[full..]);
        last[msg.len() - full] = 1;
        portable::blocks(&mut p.st, &last, 0);
    }
    p.finalize()
}

/// Unpadded Poly1305 over a byte stream fed in arbitrary pieces.
struct Stream {
    core: Poly1305,
    buf: [u8; 16],
    len: usize,
}

impl Stream {
    fn new(key: &[u8; 32]) -> Self {
        Stream {
            core: Poly1305::new(key),
            buf: [0; 16],
            len: 0,
        }
    }

    fn update(&mut self, mut data: &[u8]) {
        if self.len > 0 {
            let take = (16 - self.len).min(data.len());
            self.buf[self.len..self.len + take].copy_from_slice(&data[..take]);
            self.len += take;
            data = &data[take..];
            if self.len < 16 {
                return;
            }
            blocks(&mut self.core.st, &self.buf, 1);
            self.len = 0;
        }
        let full = data.len() & !15;
        blocks(&mut self.core.st, &data[..full], 1);
        let rest = &data[full..];
        self.buf[..rest.len()].copy_from_slice(rest);
        self.len = rest.len();
    }

    fn finalize(mut self) -> [u8; 16] {
        if self.len > 0 {
            // The 0x01 byte stands in for the 2^(8·len) bit, so no 2^128 bit here.
            self.buf[self.len] = 1;
            self.buf[self.len + 1..].fill(0);
            blocks(&mut self.core.st, &self.buf, 0);
        }
        self.buf.zeroize();
        finish(&self.core.st.h, &self.core.s)
    }
}

/// Full reduction mod p = 2^130 - 5 and tag = (h + s) mod 2^128, without branches.
fn finish(h: &[u32; 5], s: &[u32; 4]) -> [u8; 16] {
    let [mut h0, mut h1, mut h2, mut h3, mut h4] = *h;

    // Fold the bits above 2^130 back in: afterwards h < 2^130 + 2^32 < 2p.
    let c = (h4 >> 2) + (h4 & !3);
    h4 &= 3;
    let t = u64::from(h0) + u64::from(c);
    h0 = t as u32;
    let t = u64::from(h1) + (t >> 32);
    h1 = t as u32;
    let t = u64::from(h2) + (t >> 32);
    h2 = t as u32;
    let t = u64::from(h3) + (t >> 32);
    h3 = t as u32;
    h4 += (t >> 32) as u32;

    // g = h + 5 reaches 2^130 exactly when h >= p; then h - p = g - 2^130, whose low 128 bits
    // are g0..g3.
    let t = u64::from(h0) + 5;
    let g0 = t as u32;
    let t = u64::from(h1) + (t >> 32);
    let g1 = t as u32;
    let t = u64::from(h2) + (t >> 32);
    let g2 = t as u32;
    let t = u64::from(h3) + (t >> 32);
    let g3 = t as u32;
    let g4 = h4 + (t >> 32) as u32;
    let take_g = 0u32.wrapping_sub(g4 >> 2); // h4 <= 4, g4 <= 5: g4 >> 2 is 0 or 1
    let sel = |h: u32, g: u32| (h & !take_g) | (g & take_g);
    let h = [sel(h0, g0), sel(h1, g1), sel(h2, g2), sel(h3, g3)];

    let mut tag = [0u8; 16];
    let mut carry = 0u64;
    for i in 0..4 {
        let t = u64::from(h[i]) + u64::from(s[i]) + carry;
        tag[4 * i..4 * i + 4].copy_from_slice(&(t as u32).to_le_bytes());
        carry = t >> 32;
    }
    tag
}

mod portable {
    use super::{le_words, State};

    #[inline(always)]
    fn mul(a: u32, b: u32) -> u64 {
        u64::from(a) * u64::from(b)
    }

    /// a + b + c_in, and the carry out (0..=2). In u32 on purpose: when the h limbs were
    /// truncated u64 sums, LLVM's MIPS backend stopped fusing the products into `maddu`
    /// (196 instead of 139 instructions per block).
    #[inline(always)]
    fn adc(a: u32, b: u32, c_in: u32) -> (u32, u32) {
        let (x, c0) = a.overflowing_add(b);
        let (x, c1) = x.overflowing_add(c_in);
        (x, u32::from(c0) + u32::from(c1))
    }

    /// Absorbs whole 16-byte blocks, each with `hibit` (0 or 1) at 2^128.
    pub(super) fn blocks(st: &mut State, data: &[u8], hibit: u32) {
        debug_assert!(data.len() % 16 == 0 && hibit <= 1);
        let [r0, r1, r2, r3] = st.r;
        // r1..r3 are multiples of 4: s_j = r_j * 5/4 is exact and < 2^28 + 2^26.
        let (s1, s2, s3) = (r1 + (r1 >> 2), r2 + (r2 >> 2), r3 + (r3 >> 2));
        let [mut h0, mut h1, mut h2, mut h3, mut h4] = st.h;

        for block in data.chunks_exact(16) {
            let [m0, m1, m2, m3] = le_words(block);
            // h += m + hibit·2^128, with the bits of h4 above 2^130 folded back as ×5
            // (c < 2^32 by the bound on h4 below).
            let c = (h4 >> 2) + (h4 & !3);
            let (x, k) = adc(h0, m0, c);
            h0 = x;
            let (x, k) = adc(h1, m1, k);
            h1 = x;
            let (x, k) = adc(h2, m2, k);
            h2 = x;
            let (x, k) = adc(h3, m3, k);
            h3 = x;
            h4 = (h4 & 3) + k + hibit; // <= 3 + 2 + 1

            // h *= r. Column sums stay below 5·2^60 + 2^32; h4·s_j and h4·r0 fit 32 bits.
            let d0 = mul(h0, r0) + mul(h1, s3) + mul(h2, s2) + mul(h3, s1);
            let d1 = mul(h0, r1)
                + mul(h1, r0)
                + mul(h2, s3)
                + mul(h3, s2)
                + u64::from(h4 * s1)
                + (d0 >> 32);
            let d2 = mul(h0, r2)
                + mul(h1, r1)
                + mul(h2, r0)
                + mul(h3, s3)
                + u64::from(h4 * s2)
                + (d1 >> 32);
            let d3 = mul(h0, r3)
                + mul(h1, r2)
                + mul(h2, r1)
                + mul(h3, r0)
                + u64::from(h4 * s3)
                + (d2 >> 32);
            // d3 >> 32 < 2^30 + 1, h4·r0 < 6·2^28: h4 < 2^31.3, so c above stays < 2^32.
            h4 = h4 * r0 + (d3 >> 32) as u32;
            h0 = d0 as u32;
            h1 = d1 as u32;
            h2 = d2 as u32;
            h3 = d3 as u32;
        }
        st.h = [h0, h1, h2, h3, h4];
    }
}

#[cfg(target_arch = "mips")]
mod mips {
    #![allow(unsafe_code)]
    use super::State;

    extern "C" {
        /// src/crypto/asm/poly1305-mips.S; `len` must be a multiple of 16, `hibit` 0 or 1.
        fn solowg_poly1305_blocks_mips(st: *mut State, data: *const u8, len: usize, hibit: u32);
    }

    pub(super) fn blocks(st: &mut State, data: &[u8], hibit: u32) {
        debug_assert!(data.len() % 16 == 0 && hibit <= 1);
        // SAFETY: `st` is an exclusive, #[repr(C)] State the routine reads and writes in place
        // (h at offset 0, r at 20); it reads exactly `data.len()` bytes from `data.as_ptr()`
        // with no alignment requirement, touches no other memory, and follows the o32 ABI
        // (saves the callee-saved registers it uses).
        unsafe { solowg_poly1305_blocks_mips(st, data.as_ptr(), data.len(), hibit) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::Rng;
    use ::poly1305::universal_hash::{KeyInit, UniversalHash};

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn key32(s: &str) -> [u8; 32] {
        hex(s).try_into().unwrap()
    }

    fn rc_mac(key: &[u8; 32], msg: &[u8]) -> [u8; 16] {
        ::poly1305::Poly1305::new(key.into())
            .compute_unpadded(msg)
            .into()
    }

    fn rc_padded(key: &[u8; 32], parts: &[&[u8]]) -> [u8; 16] {
        let mut p = ::poly1305::Poly1305::new(key.into());
        for part in parts {
            p.update_padded(part);
        }
        p.finalize().into()
    }

    fn padded(key: &[u8; 32], parts: &[&[u8]]) -> [u8; 16] {
        let mut p = Poly1305::new(key);
        for part in parts {
            p.update_padded(part);
        }
        p.finalize()
    }

    /// Every implementation this build has, all of which must agree.
    fn check_mac(key: &[u8; 32], msg: &[u8], want: &[u8; 16]) {
        assert_eq!(&mac(key, msg), want, "mac, len {}", msg.len());
        assert_eq!(&mac_portable(key, msg), want, "portable, len {}", msg.len());
    }

    #[test]
    fn rfc8439_section_2_5_2() {
        let key = key32("85d6be7857556d337f4452fe42d506a8 0103808afb0db2fd4abff6af4149f51b");
        let tag = hex("a8061dc1305136c6c22b8baf0c0127a9");
        check_mac(
            &key,
            b"Cryptographic Forum Research Group",
            &tag.try_into().unwrap(),
        );
    }

    const IETF_TEXT: &str = "Any submission to the IETF intended by the Contributor for \
        publication as all or part of an IETF Internet-Draft or RFC and any statement made \
        within the context of an IETF activity is considered an \"IETF Contribution\". Such \
        statements include oral statements in IETF sessions, as well as written and electronic \
        communications made at any time or place, which are addressed to";

    const JABBERWOCKY: &str = "'Twas brillig, and the slithy toves\nDid gyre and gimble in \
        the wabe:\nAll mimsy were the borogoves,\nAnd the mome raths outgrabe.";

    #[test]
    fn rfc8439_appendix_a3() {
        let zeros = "00000000000000000000000000000000";
        let ff = "ffffffffffffffffffffffffffffffff";
        let v: [(String, Vec<u8>, &str); 11] = [
            (format!("{zeros}{zeros}"), vec![0; 64], zeros),
            (
                format!("{zeros}36e5f6b5c5e06070f0efca96227a863e"),
                IETF_TEXT.as_bytes().to_vec(),
                "36e5f6b5c5e06070f0efca96227a863e",
            ),
            (
                format!("36e5f6b5c5e06070f0efca96227a863e{zeros}"),
                IETF_TEXT.as_bytes().to_vec(),
                "f3477e7cd95417af89a6b8794c310cf0",
            ),
            (
                "1c9240a5eb55d38af333888604f6b5f0473917c1402b80099dca5cbc207075c0".into(),
                JABBERWOCKY.as_bytes().to_vec(),
                "4541669a7eaaee61e708dc7cbcc5eb62",
            ),
            // #5: partially reduced final result not fully reduced.
            (
                format!("02{}{zeros}", &zeros[2..]),
                hex(ff),
                "03000000000000000000000000000000",
            ),
            // #6: h + s overflows 2^128.
            (
                format!("02{}{ff}", &zeros[2..]),
                hex("02000000000000000000000000000000"),
                "03000000000000000000000000000000",
            ),
            // #7: all-ones limb with a carry from below.
            (
                format!("01{}{zeros}", &zeros[2..]),
                hex(&format!(
                    "{ff}f0ffffffffffffffffffffffffffffff11000000000000000000000000000000"
                )),
                "05000000000000000000000000000000",
            ),
            // #8: h is exactly 2^130 - 5 at the end.
            (
                format!("01{}{zeros}", &zeros[2..]),
                hex(&format!(
                    "{ff}fbfefefefefefefefefefefefefefefe01010101010101010101010101010101"
                )),
                zeros,
            ),
            // #9: h is exactly 2^130 - 6.
            (
                format!("02{}{zeros}", &zeros[2..]),
                hex("fdffffffffffffffffffffffffffffff"),
                "faffffffffffffffffffffffffffffff",
            ),
            // #10: the 5*H+L reduction produces a 131-bit intermediate result.
            (
                format!("0100000000000000 0400000000000000 {zeros}"),
                hex(
                    "e33594d7505e43b9 0000000000000000 3394d7505e4379cd 0100000000000000
                     00000000000000000000000000000000 01000000000000000000000000000000",
                ),
                "14000000000000005500000000000000",
            ),
            // #11: the 5*H+L reduction produces a 131-bit final result.
            (
                format!("0100000000000000 0400000000000000 {zeros}"),
                hex(
                    "e33594d7505e43b9 0000000000000000 3394d7505e4379cd 0100000000000000
                     00000000000000000000000000000000",
                ),
                "13000000000000000000000000000000",
            ),
        ];
        for (i, (key, msg, tag)) in v.iter().enumerate() {
            let key = key32(key);
            let tag: [u8; 16] = hex(tag).try_into().unwrap();
            assert_eq!(rc_mac(&key, msg), tag, "vector #{} as typed in", i + 1);
            check_mac(&key, msg, &tag);
        }
    }

    #[test]
    fn differential_all_lengths() {
        let mut rng = Rng::from_seed([0x13; 32]);
        let mut msg = vec![0u8; 1100];
        rng.fill(&mut msg);
        for len in 0..=1100 {
            let key = *rng.key();
            let m = &msg[..len];
            check_mac(&key, m, &rc_mac(&key, m));
            assert_eq!(
                padded(&key, &[m]),
                rc_padded(&key, &[m]),
                "padded, len {len}"
            );
        }
    }

    #[test]
    fn aead_shaped_padded_input() {
        // aad, ciphertext, lengths block: three update_padded calls as the AEAD makes them.
        let mut rng = Rng::from_seed([0x24; 32]);
        for (alen, clen) in [(0, 0), (12, 1420), (1, 15), (16, 16), (17, 33), (0, 1)] {
            let key = *rng.key();
            let mut aad = vec![0u8; alen];
            let mut ct = vec![0u8; clen];
            rng.fill(&mut aad);
            rng.fill(&mut ct);
            let mut lens = [0u8; 16];
            lens[..8].copy_from_slice(&(alen as u64).to_le_bytes());
            lens[8..].copy_from_slice(&(clen as u64).to_le_bytes());
            let parts: [&[u8]; 3] = [&aad, &ct, &lens];
            assert_eq!(padded(&key, &parts), rc_padded(&key, &parts));
        }
    }

    #[test]
    fn any_input_alignment() {
        // The assembly has separate word-aligned and unaligned loops.
        let mut rng = Rng::from_seed([0x68; 32]);
        let mut buf = vec![0u8; 300];
        rng.fill(&mut buf);
        let key = *rng.key();
        for len in [0, 15, 16, 17, 64, 250] {
            let want = rc_mac(&key, &buf[..len]);
            let want_padded = rc_padded(&key, &[&buf[..len]]);
            for off in 1..8 {
                let mut shifted = vec![0u8; off + len];
                shifted[off..].copy_from_slice(&buf[..len]);
                let m = &shifted[off..];
                check_mac(&key, m, &want);
                assert_eq!(padded(&key, &[m]), want_padded, "len {len}, offset {off}");
            }
        }
    }

    #[test]
    fn incremental_equals_one_shot() {
        let mut rng = Rng::from_seed([0x35; 32]);
        let mut msg = vec![0u8; 700];
        rng.fill(&mut msg);
        for round in 0..300 {
            let key = *rng.key();
            let len = rng.u32() as usize % (msg.len() + 1);
            let m = &msg[..len];
            let want = mac(&key, m);

            // Unpadded stream split at arbitrary points (including empty pieces).
            let mut s = Stream::new(&key);
            let mut rest = m;
            while !rest.is_empty() {
                let n = match rng.u32() % 4 {
                    0 => 0,
                    1 => 1 + rng.u32() as usize % 17,
                    _ => rng.u32() as usize % (rest.len() + 1),
                };
                let n = n.min(rest.len());
                s.update(&rest[..n]);
                rest = &rest[n..];
            }
            assert_eq!(s.finalize(), want, "round {round}, len {len}");

            // Padded: splitting at multiples of 16 must not change anything.
            let mut p = Poly1305::new(&key);
            let mut rest = m;
            while !rest.is_empty() {
                let n = (16 * (rng.u32() as usize % 8)).min(rest.len());
                p.update_padded(&rest[..n]);
                rest = &rest[n..];
            }
            assert_eq!(p.finalize(), rc_padded(&key, &[m]), "padded round {round}");
        }
    }

    #[test]
    fn edge_keys() {
        let mut rng = Rng::from_seed([0x46; 32]);
        let mut msg = vec![0u8; 600];
        rng.fill(&mut msg);
        let ones = vec![0xffu8; 600];
        // r all ones before clamping (largest r), s all ones (tag addition wraps), both,
        // and r = 0 (tag = s).
        let mut keys = vec![[0xffu8; 32], [0u8; 32]];
        let mut k = *rng.key();
        k[..16].fill(0xff);
        keys.push(k);
        let mut k = *rng.key();
        k[16..].fill(0xff);
        keys.push(k);
        let mut k = *rng.key();
        k[..16].fill(0);
        keys.push(k);
        for key in &keys {
            for m in [&msg, &ones] {
                for len in (0..=64).chain([127, 128, 129, 255, 256, 257, 599, 600]) {
                    let m = &m[..len];
                    check_mac(key, m, &rc_mac(key, m));
                    assert_eq!(padded(key, &[m]), rc_padded(key, &[m]));
                }
            }
        }
    }

    /// p = 2^130 - 5 as five 32-bit little-endian limbs; value helpers for the crafted tests.
    fn add130(a: [u32; 5], b: [u32; 5]) -> [u32; 5] {
        let mut out = [0u32; 5];
        let mut c = 0u64;
        for i in 0..5 {
            let t = u64::from(a[i]) + u64::from(b[i]) + c;
            out[i] = t as u32;
            c = t >> 32;
        }
        out
    }

    fn sub130(a: [u32; 5], b: [u32; 5]) -> [u32; 5] {
        let nb = b.map(|w| !w);
        add130(add130(a, nb), [1, 0, 0, 0, 0])
    }

    fn block_bytes(v: [u32; 5]) -> [u8; 16] {
        let mut b = [0u8; 16];
        for i in 0..4 {
            b[4 * i..4 * i + 4].copy_from_slice(&v[i].to_le_bytes());
        }
        b
    }

    #[test]
    fn accumulator_near_p() {
        // With r = 1 the accumulator is the plain sum of the blocks (each + 2^128) mod p, so
        // the blocks can be chosen to make the sum land anywhere near p = 2^130 - 5, 2^130
        // and 2p, where an incomplete final reduction would show.
        const P: [u32; 5] = [0xffff_fffb, !0, !0, !0, 3];
        const TWO_128: [u32; 5] = [0, 0, 0, 0, 1];
        let mut rng = Rng::from_seed([0x57; 32]);
        let mut hits = 0;
        let targets: Vec<[u32; 5]> = (0u32..12)
            .flat_map(|d| [sub130(P, [d, 0, 0, 0, 0]), add130(P, [d, 0, 0, 0, 0])])
            .chain([[!0, !0, !0, !0, 3], [!0, !0, !0, !0, 7], add130(P, P)])
            .collect();
        for (ti, target) in targets.iter().enumerate() {
            for (si, s_byte) in [0x00u8, 0xff, 0x5a].into_iter().enumerate() {
                let mut key = [0u8; 32];
                key[0] = 1;
                key[16..].fill(s_byte);
                // Some random blocks, then two blocks that make up the difference
                // (each padded block adds m_i + 2^128).
                for n_random in 0..=4 {
                    let mut sum = [0u32; 5];
                    let mut msg = Vec::new();
                    for _ in 0..n_random {
                        let mut b = [0u8; 16];
                        rng.fill(&mut b);
                        let w = le_words(&b);
                        sum = add130(sum, add130([w[0], w[1], w[2], w[3], 0], TWO_128));
                        msg.extend_from_slice(&b);
                    }
                    let d = sub130(sub130(sub130(*target, sum), TWO_128), TWO_128);
                    let (a, b) = match d[4] {
                        0 => ([d[0], d[1], 0, 0, 0], [0, 0, d[2], d[3], 0]),
                        1 => ([!0, !0, !0, !0, 0], sub130(d, [!0, !0, !0, !0, 0])),
                        _ => continue, // negative or too large for two blocks
                    };
                    if b[4] != 0 {
                        continue;
                    }
                    msg.extend_from_slice(&block_bytes(a));
                    msg.extend_from_slice(&block_bytes(b));
                    hits += 1;
                    let ctx = format!("target {ti}, s {si}, {n_random} random blocks");
                    assert_eq!(padded(&key, &[&msg]), rc_padded(&key, &[&msg]), "{ctx}");
                    check_mac(&key, &msg, &rc_mac(&key, &msg));
                    // Unpadded with a final partial block (0x01 byte, no 2^128) too.
                    let mut m2 = msg.clone();
                    m2.extend_from_slice(&[0xff; 7]);
                    check_mac(&key, &m2, &rc_mac(&key, &m2));
                }
            }
        }
        // Each (target, s) pair should have been reached with at least one block count.
        assert!(hits >= 3 * targets.len(), "only {hits} crafted messages");
    }
}
