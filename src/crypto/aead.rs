//! ChaCha20-Poly1305 AEAD (RFC 8439 §2.8) working in place, for WireGuard transport data.
//!
//! Poly1305 key = first 32 bytes of ChaCha20 block 0; the payload uses blocks 1, 2, ...;
//! the MAC covers pad16(aad) || pad16(ciphertext) || le64(aad len) || le64(ciphertext len).
//! Only the public API of `crate::crypto::poly1305` is used, so its implementation can be swapped.

use crate::crypto::chacha20::ChaCha20;
use crate::crypto::poly1305::Poly1305;
use zeroize::Zeroize;

pub const KEY_LEN: usize = 32;
pub const NONCE_LEN: usize = 12;
pub const TAG_LEN: usize = 16;

/// Sets up the cipher and the MAC keyed with block 0, wiping the one-time key copy.
/// Inlined, as is `compute_tag`: returned and passed by value, the two states were copied
/// with `memcpy` for every packet.
#[inline(always)]
fn init(key: &[u8; KEY_LEN], nonce: &[u8; NONCE_LEN]) -> (ChaCha20, Poly1305) {
    let cipher = ChaCha20::new(key, nonce);
    let mut block0 = cipher.block_words(0);
    let mac = Poly1305::from_words(&block0);
    block0.zeroize();
    (cipher, mac)
}

/// The MAC over `aad` and the ciphertext `ct`, including the lengths block.
#[inline(always)]
fn compute_tag(mut mac: Poly1305, aad: &[u8], ct: &[u8]) -> [u8; TAG_LEN] {
    mac.update_padded(aad);
    mac.update_padded(ct);
    let mut lens = [0u8; 16];
    lens[..8].copy_from_slice(&(aad.len() as u64).to_le_bytes());
    lens[8..].copy_from_slice(&(ct.len() as u64).to_le_bytes());
    mac.update_padded(&lens);
    mac.finalize()
}

/// Encrypts `data` in place and returns the tag.
///
/// Panics only if `data` exceeds ChaCha20's limit of (2^32 - 1) * 64 bytes.
pub fn seal_in_place(
    key: &[u8; KEY_LEN],
    nonce: &[u8; NONCE_LEN],
    aad: &[u8],
    data: &mut [u8],
) -> [u8; TAG_LEN] {
    let (cipher, mac) = init(key, nonce);
    cipher.apply_keystream(1, data);
    compute_tag(mac, aad, data)
}

/// Verifies the tag over the ciphertext FIRST (constant-time compare), then decrypts in place.
/// On failure returns false and leaves `data` unmodified.
pub fn open_in_place(
    key: &[u8; KEY_LEN],
    nonce: &[u8; NONCE_LEN],
    aad: &[u8],
    data: &mut [u8],
    tag: &[u8; TAG_LEN],
) -> bool {
    let (cipher, mac) = init(key, nonce);
    // The expected tag of a forgery would let an attacker finish it: wipe it after use.
    let mut expected = compute_tag(mac, aad, data);
    let ok = super::ct_eq(&expected, tag);
    expected.zeroize();
    if ok {
        cipher.apply_keystream(1, data);
    }
    ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::chacha20::tests::{hex, XorShift};
    use chacha20poly1305::aead::{AeadInPlace, KeyInit};

    fn arr<const N: usize>(v: &[u8]) -> [u8; N] {
        v.try_into().unwrap()
    }

    /// The behaviour of `crate::crypto::poly1305` this module relies on (so a replacement
    /// implementation is checked too): RFC 8439 §2.5.2 for `mac`, and `update_padded` being
    /// `mac` over the zero-padded input, also when fed in 16-byte-multiple pieces.
    #[test]
    fn poly1305_api_contract() {
        use crate::crypto::poly1305::{mac, Poly1305};
        let key: [u8; 32] = arr(&hex("
            85 d6 be 78 57 55 6d 33 7f 44 52 fe 42 d5 06 a8
            01 03 80 8a fb 0d b2 fd 4a bf f6 af 41 49 f5 1b
        "));
        let msg = b"Cryptographic Forum Research Group";
        let tag = hex("a8 06 1d c1 30 51 36 c6 c2 2b 8b af 0c 01 27 a9");
        assert_eq!(mac(&key, msg)[..], tag[..]);

        let mut rng = XorShift(45);
        for len in 0..=80 {
            let mut data = vec![0u8; len];
            rng.fill(&mut data);
            let mut padded = data.clone();
            padded.resize(len.div_ceil(16) * 16, 0);
            let mut p = Poly1305::new(&key);
            p.update_padded(&data);
            assert_eq!(p.finalize(), mac(&key, &padded), "len {len}");
            let split = len / 32 * 16;
            let mut p = Poly1305::new(&key);
            p.update_padded(&data[..split]);
            p.update_padded(&data[split..]);
            assert_eq!(p.finalize(), mac(&key, &padded), "split len {len}");
        }
    }

    /// RFC 8439 §2.8.2.
    #[test]
    fn rfc8439_2_8_2_seal_and_open() {
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
        let aad = hex("
            50 51 52 53 c0 c1 c2 c3 c4 c5 c6 c7
        ");
        let key = hex("
            80 81 82 83 84 85 86 87 88 89 8a 8b 8c 8d 8e 8f
            90 91 92 93 94 95 96 97 98 99 9a 9b 9c 9d 9e 9f
        ");
        let nonce_fixed = hex("
            07 00 00 00
        ");
        let iv = hex("
            40 41 42 43 44 45 46 47
        ");
        let ciphertext = hex("
            d3 1a 8d 34 64 8e 60 db 7b 86 af bc 53 ef 7e c2
            a4 ad ed 51 29 6e 08 fe a9 e2 b5 a7 36 ee 62 d6
            3d be a4 5e 8c a9 67 12 82 fa fb 69 da 92 72 8b
            1a 71 de 0a 9e 06 0b 29 05 d6 a5 b6 7e cd 3b 36
            92 dd bd 7f 2d 77 8b 8c 98 03 ae e3 28 09 1b 58
            fa b3 24 e4 fa d6 75 94 55 85 80 8b 48 31 d7 bc
            3f f4 de f0 8e 4b 7a 9d e5 76 d2 65 86 ce c6 4b
            61 16
        ");
        let tag = hex("
            1a e1 0b 59 4f 09 e2 6a 7e 90 2e cb d0 60 06 91
        ");
        // Nonce = 32-bit fixed-common part || 64-bit IV.
        let nonce: [u8; 12] = arr(&[nonce_fixed, iv].concat());
        let key = arr(&key);
        let mut buf = plaintext.clone();
        let t = seal_in_place(&key, &nonce, &aad, &mut buf);
        assert_eq!(buf, ciphertext);
        assert_eq!(t[..], tag[..]);
        assert!(open_in_place(&key, &nonce, &aad, &mut buf, &t));
        assert_eq!(buf, plaintext);
    }

    /// RFC 8439 Appendix A.5: decryption of a received message (and sealing it back).
    #[test]
    fn rfc8439_a5_open() {
        let key = hex("
            1c 92 40 a5 eb 55 d3 8a f3 33 88 86 04 f6 b5 f0
            47 39 17 c1 40 2b 80 09 9d ca 5c bc 20 70 75 c0
        ");
        let ciphertext = hex("
            64 a0 86 15 75 86 1a f4 60 f0 62 c7 9b e6 43 bd
            5e 80 5c fd 34 5c f3 89 f1 08 67 0a c7 6c 8c b2
            4c 6c fc 18 75 5d 43 ee a0 9e e9 4e 38 2d 26 b0
            bd b7 b7 3c 32 1b 01 00 d4 f0 3b 7f 35 58 94 cf
            33 2f 83 0e 71 0b 97 ce 98 c8 a8 4a bd 0b 94 81
            14 ad 17 6e 00 8d 33 bd 60 f9 82 b1 ff 37 c8 55
            97 97 a0 6e f4 f0 ef 61 c1 86 32 4e 2b 35 06 38
            36 06 90 7b 6a 7c 02 b0 f9 f6 15 7b 53 c8 67 e4
            b9 16 6c 76 7b 80 4d 46 a5 9b 52 16 cd e7 a4 e9
            90 40 c5 a4 04 33 22 5e e2 82 a1 b0 a0 6c 52 3e
            af 45 34 d7 f8 3f a1 15 5b 00 47 71 8c bc 54 6a
            0d 07 2b 04 b3 56 4e ea 1b 42 22 73 f5 48 27 1a
            0b b2 31 60 53 fa 76 99 19 55 eb d6 31 59 43 4e
            ce bb 4e 46 6d ae 5a 10 73 a6 72 76 27 09 7a 10
            49 e6 17 d9 1d 36 10 94 fa 68 f0 ff 77 98 71 30
            30 5b ea ba 2e da 04 df 99 7b 71 4d 6c 6f 2c 29
            a6 ad 5c b4 02 2b 02 70 9b
        ");
        let nonce = hex("
            00 00 00 00 01 02 03 04 05 06 07 08
        ");
        let aad = hex("
            f3 33 88 86 00 00 00 00 00 00 4e 91
        ");
        let tag = hex("
            ee ad 9d 67 89 0c bb 22 39 23 36 fe a1 85 1f 38
        ");
        let plaintext = hex("
            49 6e 74 65 72 6e 65 74 2d 44 72 61 66 74 73 20
            61 72 65 20 64 72 61 66 74 20 64 6f 63 75 6d 65
            6e 74 73 20 76 61 6c 69 64 20 66 6f 72 20 61 20
            6d 61 78 69 6d 75 6d 20 6f 66 20 73 69 78 20 6d
            6f 6e 74 68 73 20 61 6e 64 20 6d 61 79 20 62 65
            20 75 70 64 61 74 65 64 2c 20 72 65 70 6c 61 63
            65 64 2c 20 6f 72 20 6f 62 73 6f 6c 65 74 65 64
            20 62 79 20 6f 74 68 65 72 20 64 6f 63 75 6d 65
            6e 74 73 20 61 74 20 61 6e 79 20 74 69 6d 65 2e
            20 49 74 20 69 73 20 69 6e 61 70 70 72 6f 70 72
            69 61 74 65 20 74 6f 20 75 73 65 20 49 6e 74 65
            72 6e 65 74 2d 44 72 61 66 74 73 20 61 73 20 72
            65 66 65 72 65 6e 63 65 20 6d 61 74 65 72 69 61
            6c 20 6f 72 20 74 6f 20 63 69 74 65 20 74 68 65
            6d 20 6f 74 68 65 72 20 74 68 61 6e 20 61 73 20
            2f e2 80 9c 77 6f 72 6b 20 69 6e 20 70 72 6f 67
            72 65 73 73 2e 2f e2 80 9d
        ");
        let (key, nonce, tag) = (arr(&key), arr(&nonce), arr(&tag));
        let mut buf = ciphertext.clone();
        assert!(open_in_place(&key, &nonce, &aad, &mut buf, &tag));
        assert_eq!(buf, plaintext);
        assert!(buf.starts_with(b"Internet-Drafts are draft documents"));
        assert_eq!(seal_in_place(&key, &nonce, &aad, &mut buf), tag);
        assert_eq!(buf, ciphertext);
    }

    /// Against RustCrypto `chacha20poly1305`: every message length 0..=2048 (every length mod
    /// 64 and mod 16), AAD lengths 0..=66 (every length mod 16), random keys and nonces, data
    /// at offsets 0..=7; seal and open both ways.
    #[test]
    fn matches_rustcrypto_chacha20poly1305() {
        let mut rng = XorShift(0x5eed_cafe_f00d_1234);
        let mut storage = vec![0u8; 2048 + 8];
        for len in 0..=2048 {
            let key: [u8; 32] = rng.array();
            let nonce: [u8; 12] = rng.array();
            let mut aad = vec![0u8; (len * 5 + rng.below(3)) % 67];
            rng.fill(&mut aad);
            let offset = rng.below(8);
            let buf = &mut storage[offset..offset + len];
            rng.fill(buf);
            let plaintext = buf.to_vec();
            let reference = chacha20poly1305::ChaCha20Poly1305::new(&key.into());

            let mut expected = plaintext.clone();
            let expected_tag = reference
                .encrypt_in_place_detached(&nonce.into(), &aad, &mut expected)
                .unwrap();
            let tag = seal_in_place(&key, &nonce, &aad, buf);
            assert_eq!(buf, &expected[..], "seal len {len} aad {}", aad.len());
            assert_eq!(tag[..], expected_tag[..], "tag len {len} aad {}", aad.len());

            assert!(open_in_place(&key, &nonce, &aad, buf, &tag));
            assert_eq!(buf, &plaintext[..]);

            // And our ciphertext opens with the reference.
            let mut ours = expected.clone();
            reference
                .decrypt_in_place_detached(&nonce.into(), &aad, &mut ours, &tag.into())
                .unwrap();
            assert_eq!(ours, plaintext);
        }
    }

    fn sealed_message(rng: &mut XorShift, len: usize, aad_len: usize) -> Message {
        let key: [u8; 32] = rng.array();
        let nonce: [u8; 12] = rng.array();
        let mut aad = vec![0u8; aad_len];
        rng.fill(&mut aad);
        let mut ct = vec![0u8; len];
        rng.fill(&mut ct);
        let tag = seal_in_place(&key, &nonce, &aad, &mut ct);
        Message {
            key,
            nonce,
            aad,
            ct,
            tag,
        }
    }

    struct Message {
        key: [u8; 32],
        nonce: [u8; 12],
        aad: Vec<u8>,
        ct: Vec<u8>,
        tag: [u8; 16],
    }

    impl Message {
        /// Opens a copy with the given parts; on failure checks the copy was not touched.
        fn opens(&self, aad: &[u8], ct: &[u8], tag: &[u8; 16]) -> bool {
            let mut buf = ct.to_vec();
            let ok = open_in_place(&self.key, &self.nonce, aad, &mut buf, tag);
            if !ok {
                assert_eq!(buf, ct, "failed open modified the data");
            }
            ok
        }
    }

    #[test]
    fn every_single_bit_flip_is_rejected() {
        let mut rng = XorShift(42);
        for (len, aad_len) in [(0, 0), (0, 13), (1, 0), (63, 16), (100, 20), (130, 12)] {
            let m = sealed_message(&mut rng, len, aad_len);
            assert!(m.opens(&m.aad, &m.ct, &m.tag));
            for bit in 0..128 {
                let mut tag = m.tag;
                tag[bit / 8] ^= 1 << (bit % 8);
                assert!(!m.opens(&m.aad, &m.ct, &tag), "tag bit {bit}");
            }
            for bit in 0..len * 8 {
                let mut ct = m.ct.clone();
                ct[bit / 8] ^= 1 << (bit % 8);
                assert!(!m.opens(&m.aad, &ct, &m.tag), "ciphertext bit {bit}");
            }
            for bit in 0..aad_len * 8 {
                let mut aad = m.aad.clone();
                aad[bit / 8] ^= 1 << (bit % 8);
                assert!(!m.opens(&aad, &m.ct, &m.tag), "aad bit {bit}");
            }
        }
    }

    #[test]
    fn truncation_extension_and_wrong_parameters_are_rejected() {
        let mut rng = XorShift(43);
        let m = sealed_message(&mut rng, 100, 20);
        for cut in 1..=m.ct.len() {
            assert!(
                !m.opens(&m.aad, &m.ct[..m.ct.len() - cut], &m.tag),
                "cut {cut}"
            );
        }
        for cut in 1..=m.aad.len() {
            assert!(!m.opens(&m.aad[..m.aad.len() - cut], &m.ct, &m.tag));
        }
        // A zero byte appended to the ciphertext or AAD changes the padded lengths block.
        let longer = [&m.ct[..], &[0]].concat();
        assert!(!m.opens(&m.aad, &longer, &m.tag));
        let longer = [&m.aad[..], &[0]].concat();
        assert!(!m.opens(&longer, &m.ct, &m.tag));
        // Moving bytes between AAD and ciphertext is caught by the lengths block.
        let (aad2, ct2) = ([&m.aad[..], &m.ct[..4]].concat(), &m.ct[4..]);
        assert!(!m.opens(&aad2, ct2, &m.tag));
        // Wrong nonce or key.
        let mut buf = m.ct.clone();
        let mut nonce = m.nonce;
        nonce[11] ^= 0x80;
        assert!(!open_in_place(&m.key, &nonce, &m.aad, &mut buf, &m.tag));
        let mut key = m.key;
        key[0] ^= 1;
        assert!(!open_in_place(&key, &m.nonce, &m.aad, &mut buf, &m.tag));
        assert_eq!(buf, m.ct);
    }

    /// Data starting at offsets 1..=7 inside a larger buffer: same result, neighbours untouched.
    #[test]
    fn unaligned_buffers() {
        let mut rng = XorShift(44);
        let key: [u8; 32] = rng.array();
        let nonce: [u8; 12] = rng.array();
        let aad = [7u8; 12];
        for len in [0, 1, 15, 16, 17, 64, 100, 1420] {
            let mut plaintext = vec![0u8; len];
            rng.fill(&mut plaintext);
            let mut expected = plaintext.clone();
            let expected_tag = seal_in_place(&key, &nonce, &aad, &mut expected);
            for offset in 1..=7 {
                let mut storage = vec![0x5au8; len + 16];
                let r = offset..offset + len;
                storage[r.clone()].copy_from_slice(&plaintext);
                let tag = seal_in_place(&key, &nonce, &aad, &mut storage[r.clone()]);
                assert_eq!((&storage[r.clone()], tag), (&expected[..], expected_tag));
                assert!(open_in_place(
                    &key,
                    &nonce,
                    &aad,
                    &mut storage[r.clone()],
                    &tag
                ));
                assert_eq!(&storage[r.clone()], &plaintext[..]);
                assert!(storage[..offset].iter().all(|&b| b == 0x5a));
                assert!(storage[offset + len..].iter().all(|&b| b == 0x5a));
            }
        }
    }
}
