//! Tests of `checksum.rs`.

use super::reference;
use crate::sys::offload::checksum::{add, copy_and_sum};
use crate::sys::offload::*;

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
