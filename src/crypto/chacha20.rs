//! ChaCha20 (RFC 8439 §2.3-2.4: 32-bit block counter, 96-bit nonce), written for 32-bit
//! single-issue cores such as the MIPS 24Kc. The design choices and their instruction counts:
//! docs/architecture.md, "ChaCha20 on 32-bit cores".

use zeroize::Zeroize;

/// "expand 32-byte k" as four little-endian words.
const SIGMA: [u32; 4] = [0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574];

pub const KEY_LEN: usize = 32;
pub const NONCE_LEN: usize = 12;
pub const BLOCK_LEN: usize = 64;

/// Key and nonce as little-endian words, parsed once per message. Wiped on drop.
pub struct ChaCha20 {
    key: [u32; 8],
    nonce: [u32; 3],
    /// Words 1-3, 5-7, 9-11, 13-15 after the first column round (counter-independent).
    first_round: [u32; 12],
}

impl Drop for ChaCha20 {
    fn drop(&mut self) {
        self.key.zeroize();
        self.nonce.zeroize();
        self.first_round.zeroize();
    }
}

#[inline(always)]
fn le_word(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]])
}

/// One quarter round on four locals (RFC 8439 §2.1).
macro_rules! qr {
    ($a:ident, $b:ident, $c:ident, $d:ident) => {
        $a = $a.wrapping_add($b);
        $d = ($d ^ $a).rotate_left(16);
        $c = $c.wrapping_add($d);
        $b = ($b ^ $c).rotate_left(12);
        $a = $a.wrapping_add($b);
        $d = ($d ^ $a).rotate_left(8);
        $c = $c.wrapping_add($d);
        $b = ($b ^ $c).rotate_left(7);
    };
}

/// Column round then diagonal round (RFC 8439 §2.3).
macro_rules! double_round {
    ($x0:ident, $x1:ident, $x2:ident, $x3:ident, $x4:ident, $x5:ident, $x6:ident, $x7:ident,
     $x8:ident, $x9:ident, $x10:ident, $x11:ident, $x12:ident, $x13:ident, $x14:ident,
     $x15:ident) => {
        qr!($x0, $x4, $x8, $x12);
        qr!($x1, $x5, $x9, $x13);
        qr!($x2, $x6, $x10, $x14);
        qr!($x3, $x7, $x11, $x15);
        qr!($x0, $x5, $x10, $x15);
        qr!($x1, $x6, $x11, $x12);
        qr!($x2, $x7, $x8, $x13);
        qr!($x3, $x4, $x9, $x14);
    };
}

impl ChaCha20 {
    pub fn new(key: &[u8; KEY_LEN], nonce: &[u8; NONCE_LEN]) -> Self {
        let key: [u32; 8] = core::array::from_fn(|i| le_word(key, i));
        let nonce: [u32; 3] = core::array::from_fn(|i| le_word(nonce, i));
        // Columns 1-3 of the first column round never see the block counter: do them once
        // per message instead of once per block (36 of ~1050 instructions per block).
        let (mut x1, mut x5, mut x9, mut x13) = (SIGMA[1], key[1], key[5], nonce[0]);
        let (mut x2, mut x6, mut x10, mut x14) = (SIGMA[2], key[2], key[6], nonce[1]);
        let (mut x3, mut x7, mut x11, mut x15) = (SIGMA[3], key[3], key[7], nonce[2]);
        qr!(x1, x5, x9, x13);
        qr!(x2, x6, x10, x14);
        qr!(x3, x7, x11, x15);
        ChaCha20 {
            key,
            nonce,
            first_round: [x1, x5, x9, x13, x2, x6, x10, x14, x3, x7, x11, x15],
        }
    }

    /// The block function: 20 rounds plus feed-forward, as 16 keystream words.
    /// Always inlined so that the result stays in registers at the call site.
    #[inline(always)]
    fn keystream(&self, counter: u32) -> [u32; 16] {
        let k = &self.key;
        let n = &self.nonce;
        let p = &self.first_round;
        // First double round: finish the column round (column 0 holds the counter) ...
        let (mut x0, mut x4, mut x8, mut x12) = (SIGMA[0], k[0], k[4], counter);
        qr!(x0, x4, x8, x12);
        let (mut x1, mut x5, mut x9, mut x13) = (p[0], p[1], p[2], p[3]);
        let (mut x2, mut x6, mut x10, mut x14) = (p[4], p[5], p[6], p[7]);
        let (mut x3, mut x7, mut x11, mut x15) = (p[8], p[9], p[10], p[11]);
        // ... then its diagonal round.
        qr!(x0, x5, x10, x15);
        qr!(x1, x6, x11, x12);
        qr!(x2, x7, x8, x13);
        qr!(x3, x4, x9, x14);
        double_round!(x0, x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11, x12, x13, x14, x15);
        double_round!(x0, x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11, x12, x13, x14, x15);
        double_round!(x0, x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11, x12, x13, x14, x15);
        double_round!(x0, x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11, x12, x13, x14, x15);
        double_round!(x0, x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11, x12, x13, x14, x15);
        double_round!(x0, x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11, x12, x13, x14, x15);
        double_round!(x0, x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11, x12, x13, x14, x15);
        double_round!(x0, x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11, x12, x13, x14, x15);
        double_round!(x0, x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11, x12, x13, x14, x15);
        [
            x0.wrapping_add(SIGMA[0]),
            x1.wrapping_add(SIGMA[1]),
            x2.wrapping_add(SIGMA[2]),
            x3.wrapping_add(SIGMA[3]),
            x4.wrapping_add(k[0]),
            x5.wrapping_add(k[1]),
            x6.wrapping_add(k[2]),
            x7.wrapping_add(k[3]),
            x8.wrapping_add(k[4]),
            x9.wrapping_add(k[5]),
            x10.wrapping_add(k[6]),
            x11.wrapping_add(k[7]),
            x12.wrapping_add(counter),
            x13.wrapping_add(n[0]),
            x14.wrapping_add(n[1]),
            x15.wrapping_add(n[2]),
        ]
    }

    /// One keystream block as the 16 little-endian words it is made of (e.g. block 0 for
    /// the Poly1305 one-time key, which wants words: no trip through bytes).
    #[inline(always)]
    pub fn block_words(&self, counter: u32) -> [u32; 16] {
        let mut out = zeros();
        self.xor_words(counter, &mut out);
        for w in out.iter_mut() {
            *w = u32::from_le(*w);
        }
        out
    }

    /// One 64-byte keystream block.
    pub fn block(&self, counter: u32) -> [u8; BLOCK_LEN] {
        let mut words = self.block_words(counter);
        let mut out = [0u8; BLOCK_LEN];
        for (o, w) in out.chunks_exact_mut(4).zip(words.iter()) {
            o.copy_from_slice(&w.to_le_bytes());
        }
        words.zeroize();
        out
    }

    /// XORs the keystream starting at block `counter` into `data`, in place.
    ///
    /// Panics if the message would need the 32-bit block counter to wrap (more than
    /// 2^32 - `counter` blocks), since that would reuse keystream.
    pub fn apply_keystream(&self, counter: u32, data: &mut [u8]) {
        let needed = (data.len() as u64).div_ceil(BLOCK_LEN as u64);
        assert!(
            needed <= (1u64 << 32) - u64::from(counter),
            "ChaCha20 block counter would wrap"
        );
        let full = data.len() - data.len() % BLOCK_LEN;
        let (blocks, rest) = data.split_at_mut(full);
        let ctr = match as_aligned_words(blocks) {
            Some(words) => self.xor_words(counter, words),
            None => self.xor_bytes(counter, blocks),
        };
        if !rest.is_empty() {
            // Final partial block: its keystream comes from the same code as above (one copy
            // of the rounds in the I-cache), XORed into zeros; byte loops of at most 63 steps
            // instead of staging copies. Wiped afterwards.
            let mut ks = zeros();
            self.xor_words(ctr, &mut ks);
            // Whole words of an aligned tail a word at a time (a packet's usually is), the
            // rest by bytes.
            let whole = rest.len() & !3;
            let (head, bytes) = rest.split_at_mut(whole);
            let done = match as_aligned_words(head) {
                Some(words) => {
                    for (w, k) in words.iter_mut().zip(ks.iter()) {
                        *w ^= k;
                    }
                    whole
                }
                None => 0,
            };
            let tail = if done == whole { bytes } else { rest };
            for (i, b) in tail.iter_mut().enumerate() {
                let j = done + i;
                *b ^= ks[j / 4].to_ne_bytes()[j % 4];
            }
            ks.zeroize();
        }
    }

    /// XORs keystream blocks `ctr`, `ctr + 1`, ... into 16-word blocks of `words`; returns
    /// the next block number. With an aligned buffer (the usual case: packet bodies sit at
    /// offset 16) this is the only expansion of the block function that runs: plain word
    /// loads and stores, 32 fewer instructions per block than lwl/lwr + swl/swr.
    #[inline(never)]
    fn xor_words(&self, mut ctr: u32, words: &mut [u32]) -> u32 {
        for block in words.chunks_exact_mut(16) {
            let ks = self.keystream(ctr);
            for (w, k) in block.iter_mut().zip(ks) {
                *w ^= k.to_le();
            }
            // The caller's assert rules out overflow; wrapping avoids a redundant check.
            ctr = ctr.wrapping_add(1);
        }
        ctr
    }

    /// As `xor_words` for byte buffers of any alignment (whole 64-byte blocks only).
    #[inline(never)]
    fn xor_bytes(&self, mut ctr: u32, bytes: &mut [u8]) -> u32 {
        for block in bytes.chunks_exact_mut(BLOCK_LEN) {
            let ks = self.keystream(ctr);
            for (d, k) in block.chunks_exact_mut(4).zip(ks) {
                let w = u32::from_le_bytes([d[0], d[1], d[2], d[3]]) ^ k;
                d.copy_from_slice(&w.to_le_bytes());
            }
            ctr = ctr.wrapping_add(1);
        }
        ctr
    }
}

/// Sixteen zero words, stored one by one: a zero LLVM cannot see (`black_box`) keeps it from
/// calling `memset` for the 64 bytes, which on musl costs about 60 instructions instead of 16
/// (twice per packet: the Poly1305 key block and the last partial block).
#[inline(always)]
fn zeros() -> [u32; 16] {
    [core::hint::black_box(0); 16]
}

/// Views `bytes` as native-endian words when it is 4-byte aligned and a whole number of words.
///
/// The cipher's only unsafe code, allowed for this function alone because it measurably speeds
/// up the cipher on MIPS (aligned `lw`/`sw` instead of `lwl`+`lwr`/`swl`+`swr` pairs).
#[allow(unsafe_code)]
fn as_aligned_words(bytes: &mut [u8]) -> Option<&mut [u32]> {
    // SAFETY: `align_to_mut` only puts correctly aligned, in-bounds memory in the middle part,
    // u32 has no invalid bit patterns, and the returned borrow keeps `bytes` exclusively
    // borrowed for its lifetime, so no aliasing is possible.
    let (head, words, tail) = unsafe { bytes.align_to_mut::<u32>() };
    (head.is_empty() && tail.is_empty()).then_some(words)
}

/// One keystream block for (key, counter, nonce); the AEAD uses counter 0 for the Poly1305 key.
pub fn block(key: &[u8; KEY_LEN], counter: u32, nonce: &[u8; NONCE_LEN]) -> [u8; BLOCK_LEN] {
    ChaCha20::new(key, nonce).block(counter)
}

/// Encrypts or decrypts `data` in place with the keystream starting at block `counter`.
pub fn xor_in_place(key: &[u8; KEY_LEN], counter: u32, nonce: &[u8; NONCE_LEN], data: &mut [u8]) {
    ChaCha20::new(key, nonce).apply_keystream(counter, data);
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Bytes from RFC-style hex text (whitespace ignored).
    pub(crate) fn hex(s: &str) -> Vec<u8> {
        let digits: Vec<u8> = s.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
        digits
            .chunks(2)
            .map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap())
            .collect()
    }

    /// Seeded xorshift64*: reproducible test inputs without extra dependencies.
    pub(crate) struct XorShift(pub u64);

    impl XorShift {
        pub(crate) fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }

        pub(crate) fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }

        pub(crate) fn fill(&mut self, buf: &mut [u8]) {
            for b in buf {
                *b = (self.next() >> 56) as u8;
            }
        }

        pub(crate) fn array<const N: usize>(&mut self) -> [u8; N] {
            let mut a = [0u8; N];
            self.fill(&mut a);
            a
        }
    }

    fn arr<const N: usize>(v: &[u8]) -> [u8; N] {
        v.try_into().unwrap()
    }

    /// RFC 8439 §2.4.2: the "sunscreen" plaintext, counter 1, two blocks and a bit.
    #[test]
    fn rfc8439_2_4_2_encryption() {
        let key: [u8; 32] = core::array::from_fn(|i| i as u8);
        let nonce = [0, 0, 0, 0, 0, 0, 0, 0x4a, 0, 0, 0, 0];
        let plaintext = hex("
            4c 61 64 69 65 73 20 61 6e 64 20 47 65 6e 74 6c
            65 6d 65 6e 20 6f 66 20 74 68 65 20 63 6c 61 73
            73 20 6f 66 20 27 39 39 3a 20 49 66 20 49 20 63
            6f 75 6c 64 20 6f 66 66 65 72 20 79 6f 75 20 6f
            6e 6c 79 20 6f 6e 65 20 74 69 70 20 66 6f 72 20
            74 68 65 20 66 75 74 75 72 65 2c 20 73 75 6e 73
            63 72 65 65 6e 20 77 6f 75 6c 64 20 62 65 20 69
            74 2e
        ");
        let ciphertext = hex("
            6e 2e 35 9a 25 68 f9 80 41 ba 07 28 dd 0d 69 81
            e9 7e 7a ec 1d 43 60 c2 0a 27 af cc fd 9f ae 0b
            f9 1b 65 c5 52 47 33 ab 8f 59 3d ab cd 62 b3 57
            16 39 d6 24 e6 51 52 ab 8f 53 0c 35 9f 08 61 d8
            07 ca 0d bf 50 0d 6a 61 56 a3 8e 08 8a 22 b6 5e
            52 bc 51 4d 16 cc f8 06 81 8c e9 1a b7 79 37 36
            5a f9 0b bf 74 a3 5b e6 b4 0b 8e ed f2 78 5e 42
            87 4d
        ");

        assert_eq!(
            plaintext,
            b"Ladies and Gentlemen of the class of '99: If I could offer you \
only one tip for the future, sunscreen would be it."
        );
        let mut buf = plaintext.clone();
        xor_in_place(&key, 1, &nonce, &mut buf);
        assert_eq!(buf, ciphertext);
        xor_in_place(&key, 1, &nonce, &mut buf);
        assert_eq!(buf, plaintext);
    }

    /// RFC 8439 §2.6.2: Poly1305 key generation is the first half of block 0.
    #[test]
    fn rfc8439_2_6_2_poly1305_key_generation() {
        let key = hex("
            80 81 82 83 84 85 86 87 88 89 8a 8b 8c 8d 8e 8f
            90 91 92 93 94 95 96 97 98 99 9a 9b 9c 9d 9e 9f
        ");
        let nonce = hex("
            00 00 00 00 00 01 02 03 04 05 06 07
        ");
        let otk = hex("
            8a d5 a0 8b 90 5f 81 cc 81 50 40 27 4a b2 94 71
            a8 33 b6 37 e3 fd 0d a5 08 db b8 e2 fd d1 a6 46
        ");
        assert_eq!(block(&arr(&key), 0, &arr(&nonce))[..32], otk[..]);
    }

    /// RFC 8439 Appendix A.1: keystream blocks, via `block` and via XOR over zeros.
    #[test]
    fn rfc8439_a1_block_function() {
        let vectors = vec![
            // Test Vector #1
            (
                hex("
                    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
                    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
                "),
                hex("
                    00 00 00 00 00 00 00 00 00 00 00 00
                "),
                0,
                hex("
                    76 b8 e0 ad a0 f1 3d 90 40 5d 6a e5 53 86 bd 28
                    bd d2 19 b8 a0 8d ed 1a a8 36 ef cc 8b 77 0d c7
                    da 41 59 7c 51 57 48 8d 77 24 e0 3f b8 d8 4a 37
                    6a 43 b8 f4 15 18 a1 1c c3 87 b6 69 b2 ee 65 86
                "),
            ),
            // Test Vector #2
            (
                hex("
                    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
                    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
                "),
                hex("
                    00 00 00 00 00 00 00 00 00 00 00 00
                "),
                1,
                hex("
                    9f 07 e7 be 55 51 38 7a 98 ba 97 7c 73 2d 08 0d
                    cb 0f 29 a0 48 e3 65 69 12 c6 53 3e 32 ee 7a ed
                    29 b7 21 76 9c e6 4e 43 d5 71 33 b0 74 d8 39 d5
                    31 ed 1f 28 51 0a fb 45 ac e1 0a 1f 4b 79 4d 6f
                "),
            ),
            // Test Vector #3
            (
                hex("
                    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
                    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 01
                "),
                hex("
                    00 00 00 00 00 00 00 00 00 00 00 00
                "),
                1,
                hex("
                    3a eb 52 24 ec f8 49 92 9b 9d 82 8d b1 ce d4 dd
                    83 20 25 e8 01 8b 81 60 b8 22 84 f3 c9 49 aa 5a
                    8e ca 00 bb b4 a7 3b da d1 92 b5 c4 2f 73 f2 fd
                    4e 27 36 44 c8 b3 61 25 a6 4a dd eb 00 6c 13 a0
                "),
            ),
            // Test Vector #4
            (
                hex("
                    00 ff 00 00 00 00 00 00 00 00 00 00 00 00 00 00
                    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
                "),
                hex("
                    00 00 00 00 00 00 00 00 00 00 00 00
                "),
                2,
                hex("
                    72 d5 4d fb f1 2e c4 4b 36 26 92 df 94 13 7f 32
                    8f ea 8d a7 39 90 26 5e c1 bb be a1 ae 9a f0 ca
                    13 b2 5a a2 6c b4 a6 48 cb 9b 9d 1b e6 5b 2c 09
                    24 a6 6c 54 d5 45 ec 1b 73 74 f4 87 2e 99 f0 96
                "),
            ),
            // Test Vector #5
            (
                hex("
                    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
                    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
                "),
                hex("
                    00 00 00 00 00 00 00 00 00 00 00 02
                "),
                0,
                hex("
                    c2 c6 4d 37 8c d5 36 37 4a e2 04 b9 ef 93 3f cd
                    1a 8b 22 88 b3 df a4 96 72 ab 76 5b 54 ee 27 c7
                    8a 97 0e 0e 95 5c 14 f3 a8 8e 74 1b 97 c2 86 f7
                    5f 8f c2 99 e8 14 83 62 fa 19 8a 39 53 1b ed 6d
                "),
            ),
        ];
        for (key, nonce, counter, keystream) in vectors {
            let (key, nonce) = (arr(&key), arr(&nonce));
            assert_eq!(block(&key, counter, &nonce)[..], keystream[..]);
            let mut zeros = [0u8; 64];
            xor_in_place(&key, counter, &nonce, &mut zeros);
            assert_eq!(zeros[..], keystream[..]);
        }
    }

    /// RFC 8439 Appendix A.2: encryption, including a partial last block.
    #[test]
    fn rfc8439_a2_encryption() {
        let vectors = vec![
            // Test Vector #1
            (
                hex("
                    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
                    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
                "),
                hex("
                    00 00 00 00 00 00 00 00 00 00 00 00
                "),
                0,
                hex("
                    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
                    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
                    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
                    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
                "),
                hex("
                    76 b8 e0 ad a0 f1 3d 90 40 5d 6a e5 53 86 bd 28
                    bd d2 19 b8 a0 8d ed 1a a8 36 ef cc 8b 77 0d c7
                    da 41 59 7c 51 57 48 8d 77 24 e0 3f b8 d8 4a 37
                    6a 43 b8 f4 15 18 a1 1c c3 87 b6 69 b2 ee 65 86
                "),
            ),
            // Test Vector #2
            (
                hex("
                    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
                    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 01
                "),
                hex("
                    00 00 00 00 00 00 00 00 00 00 00 02
                "),
                1,
                hex("
                    41 6e 79 20 73 75 62 6d 69 73 73 69 6f 6e 20 74
                    6f 20 74 68 65 20 49 45 54 46 20 69 6e 74 65 6e
                    64 65 64 20 62 79 20 74 68 65 20 43 6f 6e 74 72
                    69 62 75 74 6f 72 20 66 6f 72 20 70 75 62 6c 69
                    63 61 74 69 6f 6e 20 61 73 20 61 6c 6c 20 6f 72
                    20 70 61 72 74 20 6f 66 20 61 6e 20 49 45 54 46
                    20 49 6e 74 65 72 6e 65 74 2d 44 72 61 66 74 20
                    6f 72 20 52 46 43 20 61 6e 64 20 61 6e 79 20 73
                    74 61 74 65 6d 65 6e 74 20 6d 61 64 65 20 77 69
                    74 68 69 6e 20 74 68 65 20 63 6f 6e 74 65 78 74
                    20 6f 66 20 61 6e 20 49 45 54 46 20 61 63 74 69
                    76 69 74 79 20 69 73 20 63 6f 6e 73 69 64 65 72
                    65 64 20 61 6e 20 22 49 45 54 46 20 43 6f 6e 74
                    72 69 62 75 74 69 6f 6e 22 2e 20 53 75 63 68 20
                    73 74 61 74 65 6d 65 6e 74 73 20 69 6e 63 6c 75
                    64 65 20 6f 72 61 6c 20 73 74 61 74 65 6d 65 6e
                    74 73 20 69 6e 20 49 45 54 46 20 73 65 73 73 69
                    6f 6e 73 2c 20 61 73 20 77 65 6c 6c 20 61 73 20
                    77 72 69 74 74 65 6e 20 61 6e 64 20 65 6c 65 63
                    74 72 6f 6e 69 63 20 63 6f 6d 6d 75 6e 69 63 61
                    74 69 6f 6e 73 20 6d 61 64 65 20 61 74 20 61 6e
                    79 20 74 69 6d 65 20 6f 72 20 70 6c 61 63 65 2c
                    20 77 68 69 63 68 20 61 72 65 20 61 64 64 72 65
                    73 73 65 64 20 74 6f
                "),
                hex("
                    a3 fb f0 7d f3 fa 2f de 4f 37 6c a2 3e 82 73 70
                    41 60 5d 9f 4f 4f 57 bd 8c ff 2c 1d 4b 79 55 ec
                    2a 97 94 8b d3 72 29 15 c8 f3 d3 37 f7 d3 70 05
                    0e 9e 96 d6 47 b7 c3 9f 56 e0 31 ca 5e b6 25 0d
                    40 42 e0 27 85 ec ec fa 4b 4b b5 e8 ea d0 44 0e
                    20 b6 e8 db 09 d8 81 a7 c6 13 2f 42 0e 52 79 50
                    42 bd fa 77 73 d8 a9 05 14 47 b3 29 1c e1 41 1c
                    68 04 65 55 2a a6 c4 05 b7 76 4d 5e 87 be a8 5a
                    d0 0f 84 49 ed 8f 72 d0 d6 62 ab 05 26 91 ca 66
                    42 4b c8 6d 2d f8 0e a4 1f 43 ab f9 37 d3 25 9d
                    c4 b2 d0 df b4 8a 6c 91 39 dd d7 f7 69 66 e9 28
                    e6 35 55 3b a7 6c 5c 87 9d 7b 35 d4 9e b2 e6 2b
                    08 71 cd ac 63 89 39 e2 5e 8a 1e 0e f9 d5 28 0f
                    a8 ca 32 8b 35 1c 3c 76 59 89 cb cf 3d aa 8b 6c
                    cc 3a af 9f 39 79 c9 2b 37 20 fc 88 dc 95 ed 84
                    a1 be 05 9c 64 99 b9 fd a2 36 e7 e8 18 b0 4b 0b
                    c3 9c 1e 87 6b 19 3b fe 55 69 75 3f 88 12 8c c0
                    8a aa 9b 63 d1 a1 6f 80 ef 25 54 d7 18 9c 41 1f
                    58 69 ca 52 c5 b8 3f a3 6f f2 16 b9 c1 d3 00 62
                    be bc fd 2d c5 bc e0 91 19 34 fd a7 9a 86 f6 e6
                    98 ce d7 59 c3 ff 9b 64 77 33 8f 3d a4 f9 cd 85
                    14 ea 99 82 cc af b3 41 b2 38 4d d9 02 f3 d1 ab
                    7a c6 1d d2 9c 6f 21 ba 5b 86 2f 37 30 e3 7c fd
                    c4 fd 80 6c 22 f2 21
                "),
            ),
            // Test Vector #3
            (
                hex("
                    1c 92 40 a5 eb 55 d3 8a f3 33 88 86 04 f6 b5 f0
                    47 39 17 c1 40 2b 80 09 9d ca 5c bc 20 70 75 c0
                "),
                hex("
                    00 00 00 00 00 00 00 00 00 00 00 02
                "),
                42,
                hex("
                    27 54 77 61 73 20 62 72 69 6c 6c 69 67 2c 20 61
                    6e 64 20 74 68 65 20 73 6c 69 74 68 79 20 74 6f
                    76 65 73 0a 44 69 64 20 67 79 72 65 20 61 6e 64
                    20 67 69 6d 62 6c 65 20 69 6e 20 74 68 65 20 77
                    61 62 65 3a 0a 41 6c 6c 20 6d 69 6d 73 79 20 77
                    65 72 65 20 74 68 65 20 62 6f 72 6f 67 6f 76 65
                    73 2c 0a 41 6e 64 20 74 68 65 20 6d 6f 6d 65 20
                    72 61 74 68 73 20 6f 75 74 67 72 61 62 65 2e
                "),
                hex("
                    62 e6 34 7f 95 ed 87 a4 5f fa e7 42 6f 27 a1 df
                    5f b6 91 10 04 4c 0d 73 11 8e ff a9 5b 01 e5 cf
                    16 6d 3d f2 d7 21 ca f9 b2 1e 5f b1 4c 61 68 71
                    fd 84 c5 4f 9d 65 b2 83 19 6c 7f e4 f6 05 53 eb
                    f3 9c 64 02 c4 22 34 e3 2a 35 6b 3e 76 43 12 a6
                    1a 55 32 05 57 16 ea d6 96 25 68 f8 7d 3f 3f 77
                    04 c6 a8 d1 bc d1 bf 4d 50 d6 15 4b 6d a7 31 b1
                    87 b5 8d fd 72 8a fa 36 75 7a 79 7a c1 88 d1
                "),
            ),
        ];
        for (key, nonce, counter, plaintext, ciphertext) in vectors {
            let mut buf = plaintext.clone();
            xor_in_place(&arr(&key), counter, &arr(&nonce), &mut buf);
            assert_eq!(buf, ciphertext);
        }
    }

    /// Against the RustCrypto `chacha20` crate: every length 0..=2048 (so every length mod
    /// 64 and mod 4), random keys, nonces and counters, aligned and misaligned buffers.
    #[test]
    fn matches_rustcrypto_chacha20() {
        use ::chacha20::cipher::{KeyIvInit, StreamCipher, StreamCipherSeek};
        let mut rng = XorShift(0x0123_4567_89ab_cdef);
        let mut storage = vec![0u8; 2048 + 8];
        for len in 0..=2048 {
            let key: [u8; 32] = rng.array();
            let nonce: [u8; 12] = rng.array();
            let counter = rng.next() as u32 % 1000;
            let offset = len % 8;
            let buf = &mut storage[offset..offset + len];
            rng.fill(buf);
            let mut expected = buf.to_vec();
            let mut reference = ::chacha20::ChaCha20::new(&key.into(), &nonce.into());
            reference.seek(u64::from(counter) * 64);
            reference.apply_keystream(&mut expected);
            xor_in_place(&key, counter, &nonce, buf);
            assert_eq!(buf, &expected[..], "len {len} offset {offset}");
        }
    }

    /// The same data gives the same result at every alignment (exercises both XOR paths).
    #[test]
    fn unaligned_buffers() {
        let mut rng = XorShift(7);
        let key: [u8; 32] = rng.array();
        let nonce: [u8; 12] = rng.array();
        for len in [1, 63, 64, 65, 127, 128, 200, 1420] {
            let mut data = vec![0u8; len];
            rng.fill(&mut data);
            let mut expected = data.clone();
            xor_in_place(&key, 1, &nonce, &mut expected);
            for offset in 1..=7 {
                let mut storage = vec![0xeeu8; len + 16];
                storage[offset..offset + len].copy_from_slice(&data);
                xor_in_place(&key, 1, &nonce, &mut storage[offset..offset + len]);
                assert_eq!(&storage[offset..offset + len], &expected[..]);
                // Bytes around the target are untouched.
                assert!(storage[..offset].iter().all(|&b| b == 0xee));
                assert!(storage[offset + len..].iter().all(|&b| b == 0xee));
            }
        }
    }

    /// Splitting a message at block boundaries and continuing the counter is equivalent.
    #[test]
    fn counter_continuation() {
        let mut rng = XorShift(99);
        let key: [u8; 32] = rng.array();
        let nonce: [u8; 12] = rng.array();
        let mut whole = vec![0u8; 64 * 5 + 17];
        rng.fill(&mut whole);
        let mut parts = whole.clone();
        xor_in_place(&key, 3, &nonce, &mut whole);
        let (a, b) = parts.split_at_mut(128);
        xor_in_place(&key, 3, &nonce, a);
        xor_in_place(&key, 5, &nonce, b);
        assert_eq!(whole, parts);
    }

    #[test]
    fn last_counter_value_is_usable() {
        let mut buf = [0u8; 64];
        xor_in_place(&[1; 32], u32::MAX, &[2; 12], &mut buf);
        assert_eq!(buf, block(&[1; 32], u32::MAX, &[2; 12]));
    }

    #[test]
    #[should_panic(expected = "would wrap")]
    fn counter_wrap_is_refused() {
        let mut buf = [0u8; 65];
        xor_in_place(&[1; 32], u32::MAX, &[2; 12], &mut buf);
    }
}
