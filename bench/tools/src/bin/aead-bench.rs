//! Fixed-work benchmark driver for the transport AEAD, meant for instruction counting under
//! qemu-mips (tools/mips-bench.sh) and for wall-clock runs on the host.
//!
//! Usage: `aead-bench <mode> <N>` with mode one of
//!   seal             seal_in_place of a 1420-byte packet with a 12-byte AAD
//!   open             open_in_place of a 1420-byte packet with a 12-byte AAD
//!   seal-rustcrypto  the same seal with RustCrypto chacha20poly1305 (what crypto::seal does)
//!   chacha           ChaCha20 alone: keystream XOR over 1420 bytes from block 1
//!   handshake        one full Noise IKpsk2 initiation + response between two peers
//! Each mode does the same setup for every N (N = 0 does setup only) and prints a checksum so
//! the work cannot be optimised away. Only std and this crate are used: it runs under qemu
//! with an empty environment.
//!
//! `open` needs a valid ciphertext every iteration without paying for a copy. Decrypting in
//! place turns C into P, and P is itself the ciphertext of C under the same key and nonce
//! (the keystream XOR is an involution), with its own tag. Setup seals twice to get both tags;
//! iteration i then opens the buffer with the tag for whichever of C/P it currently holds.
//! So each iteration is exactly one successful 1420-byte open.
//!
//! The packet buffer is a fresh Vec, hence 4-byte aligned like a packet body at offset 16 of
//! a receive buffer: the cipher's aligned-word path is what gets measured.

use solowg::{crypto::aead, crypto::chacha20, proto::noise};
use std::process::exit;
use std::time::{Duration, Instant};

const PACKET: usize = 1420;

/// FNV-1a over a buffer: used once per run on the final buffer contents.
fn fold(acc: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(acc ^ 0xcbf2_9ce4_8422_2325, |a, &b| {
        (a ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Cheap per-iteration mix of a tag (a few instructions per word on 32-bit MIPS). Position
/// dependent, so the two alternating tags of a repeated seal do not cancel out.
fn mix(acc: u32, tag: &[u8; 16]) -> u32 {
    tag.chunks_exact(4).fold(acc, |a, w| {
        a.rotate_left(7)
            .wrapping_add(u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
    })
}

fn inputs() -> ([u8; 32], [u8; 12], [u8; 12], Vec<u8>) {
    let key: [u8; 32] = core::array::from_fn(|i| (i as u8).wrapping_mul(7).wrapping_add(1));
    let nonce: [u8; 12] = core::array::from_fn(|i| if i < 4 { 0 } else { i as u8 });
    let aad: [u8; 12] = core::array::from_fn(|i| 0xa0 + i as u8);
    let data: Vec<u8> = (0..PACKET).map(|i| (i * 31 + 5) as u8).collect();
    // Hide the constant length from LLVM: otherwise LTO specialises the cipher for 1420 bytes
    // (every caller in this binary passes it), which real packet sizes would not get.
    (key, nonce, aad, std::hint::black_box(data))
}

fn seal(n: u64) -> u64 {
    let (key, nonce, aad, mut buf) = inputs();
    let mut acc = 0;
    for _ in 0..n {
        acc = mix(acc, &aead::seal_in_place(&key, &nonce, &aad, &mut buf));
    }
    fold(acc.into(), &buf)
}

fn open(n: u64) -> u64 {
    let (key, nonce, aad, mut buf) = inputs();
    // buf = P0 -> C (tag_c covers C) -> P0 (tag_p covers P0, as the ciphertext of C).
    let tag_c = aead::seal_in_place(&key, &nonce, &aad, &mut buf);
    let tag_p = aead::seal_in_place(&key, &nonce, &aad, &mut buf);
    let tags = [tag_p, tag_c];
    for i in 0..n {
        if !aead::open_in_place(&key, &nonce, &aad, &mut buf, &tags[(i & 1) as usize]) {
            eprintln!("open failed at iteration {i}");
            exit(1);
        }
    }
    fold(n, &buf)
}

fn seal_rustcrypto(n: u64) -> u64 {
    use chacha20poly1305::aead::{AeadInPlace, KeyInit};
    let (key, nonce, aad, mut buf) = inputs();
    let mut acc = 0;
    for _ in 0..n {
        // Key setup per packet, as crypto::seal does it.
        let c = chacha20poly1305::ChaCha20Poly1305::new(&key.into());
        let tag = c
            .encrypt_in_place_detached(&nonce.into(), &aad, &mut buf)
            .expect("short message");
        acc = mix(acc, &tag.into());
    }
    fold(acc.into(), &buf)
}

fn chacha(n: u64) -> u64 {
    let (key, nonce, _, mut buf) = inputs();
    for _ in 0..n {
        chacha20::xor_in_place(&key, 1, &nonce, &mut buf);
    }
    fold(0, &buf)
}

fn handshake(n: u64) -> u64 {
    use solowg::crypto::{clamp, SecretKey};
    let a = noise::Identity::new(clamp([1; 32]));
    let b = noise::Identity::new(clamp([2; 32]));
    let mut ha = noise::Handshake::new(Some(&a), b.public, [5; 32]);
    let mut hb = noise::Handshake::new(Some(&b), a.public, [5; 32]);
    let start = Instant::now();
    let mut acc = 0;
    for i in 0..n {
        // Fresh stamp and a later `now` each time, so replay and flood checks pass.
        let mut m1 = [0u8; 148];
        let ok = ha.create_initiation(
            &a,
            SecretKey::new(clamp([3; 32])),
            noise::tai64n(i + 1, 0),
            11,
            &mut m1,
        );
        let Some(s) = noise::begin_consume_initiation(&b, &m1).filter(|_| ok) else {
            eprintln!("initiation failed at iteration {i}");
            exit(1);
        };
        let now = start + Duration::from_secs(i + 1);
        let mut m2 = [0u8; 92];
        if !hb.consume_initiation(s, &m1, now)
            || !hb.create_response(SecretKey::new(clamp([4; 32])), 22, &mut m2)
            || !ha.consume_response(&a, &m2)
        {
            eprintln!("response failed at iteration {i}");
            exit(1);
        }
        let (Some(ka), Some(kb)) = (ha.derive_keys(), hb.derive_keys()) else {
            eprintln!("derive_keys failed at iteration {i}");
            exit(1);
        };
        if *ka.send != *kb.recv {
            eprintln!("key mismatch at iteration {i}");
            exit(1);
        }
        acc = mix(acc, ka.send[..16].try_into().expect("32-byte key"));
    }
    acc.into()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n = args.get(2).and_then(|s| s.parse::<u64>().ok());
    let (Some(mode), Some(n)) = (args.get(1), n) else {
        eprintln!("usage: aead-bench seal|open|seal-rustcrypto|chacha|handshake <N>");
        exit(2);
    };
    let sum = match mode.as_str() {
        "seal" => seal(n),
        "open" => open(n),
        "seal-rustcrypto" => seal_rustcrypto(n),
        "chacha" => chacha(n),
        "handshake" => handshake(n),
        _ => {
            eprintln!("unknown mode {mode}");
            exit(2);
        }
    };
    println!("{mode} {n}: checksum {sum:016x}");
}
