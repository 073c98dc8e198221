//! Instruction-count harness for Poly1305 under qemu (/work/shared/tools/mips-bench.sh):
//! `poly-bench <mode> <N>` authenticates a fixed 1420-byte buffer N times and prints a
//! checksum; N = 0 does all the set-up and none of the work, so
//! (count(N) - count(0)) / N / 1420 is instructions per byte.
//!
//! Modes: `poly` (`mac` with the build's block function: the assembly on MIPS), `aead` (the
//! AEAD's call pattern: `update_padded` over the data and the lengths block, `finalize`),
//! `portable` (`mac` with the portable Rust block function, whatever the target).

use solowg::crypto::poly1305 as sw;

fn aead(key: &[u8; 32], msg: &[u8]) -> [u8; 16] {
    let mut p = sw::Poly1305::new(key);
    p.update_padded(msg);
    let mut lens = [0u8; 16];
    lens[8..].copy_from_slice(&(msg.len() as u64).to_le_bytes());
    p.update_padded(&lens);
    p.finalize()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(mode), Some(n)) = (args.get(1), args.get(2).and_then(|n| n.parse::<u32>().ok()))
    else {
        eprintln!("usage: poly-bench poly|aead|portable <iterations>");
        std::process::exit(2);
    };
    let f: fn(&[u8; 32], &[u8]) -> [u8; 16] = match mode.as_str() {
        "poly" => sw::mac,
        "aead" => aead,
        "portable" => sw::mac_portable,
        _ => {
            eprintln!("unknown mode {mode}");
            std::process::exit(2);
        }
    };
    let mut buf = [0u8; 1420];
    for (i, b) in buf.iter_mut().enumerate() {
        *b = (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3];
    }
    let mut key = [0x5au8; 32];
    let mut sum = 0u64;
    for _ in 0..n {
        let tag = f(&key, &buf);
        // Chain each tag into the next key so that no iteration can be skipped or hoisted.
        key[..16].copy_from_slice(&tag);
        sum = sum.rotate_left(5) ^ u64::from_le_bytes(tag[..8].try_into().unwrap());
    }
    println!("{mode} x{n}: checksum {sum:016x}");
}
