//! Fixed-work benchmark driver for cutting TUN super-packets into segments, the copy a
//! TCP sender through the tunnel pays per byte before encryption (`sys::offload`), meant
//! for instruction counting under qemu-mips (tools/mips-bench.sh).
//!
//! Usage: `segment-bench <mode> <N>` with mode one of
//!   segment   one 64,000-byte IPv4 TCP super-packet (52-byte headers, 1368-byte segments)
//!             cut into 47 segments, each written into its own slot, N times
//!   in-place  the same segments completed where a scattered TUN read leaves them (each
//!             payload already in its slot): headers written, payloads only summed
//!   sum       the ones' complement sum of that packet's payload, N times
//! Each mode does the same setup for every N (N = 0 does setup only) and prints a checksum,
//! so the work cannot be optimised away.

use solowg::sys::offload::{sum, TcpSegments, VnetHdr, GSO_TCPV4};
use std::process::exit;

const HDR: usize = 52;
const MSS: usize = 1368;
const PAYLOAD: usize = 64_000 - HDR;
/// A slot as the daemon lays it out: room for the WireGuard header before the packet.
const SLOT: usize = 1536;
const SLOT_HEAD: usize = 16;

fn super_packet() -> Vec<u8> {
    let mut p = vec![0u8; HDR + PAYLOAD];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&((HDR + PAYLOAD) as u16).to_be_bytes());
    p[8] = 64;
    p[9] = 6;
    p[12..16].copy_from_slice(&[10, 0, 0, 1]);
    p[16..20].copy_from_slice(&[10, 0, 0, 2]);
    p[20 + 12] = 8 << 4; // 32-byte TCP header (timestamps)
    p[20 + 13] = 0x18;
    for (i, b) in p[HDR..].iter_mut().enumerate() {
        *b = (i * 31 + 5) as u8;
    }
    std::hint::black_box(p)
}

/// The virtio-net header the TUN device gives such a packet.
fn gso_header() -> VnetHdr {
    VnetHdr {
        flags: 0,
        gso_type: GSO_TCPV4,
        hdr_len: HDR as u16,
        gso_size: std::hint::black_box(MSS as u16),
        csum_start: 20,
        csum_offset: 16,
    }
}

/// Runs `next` (one segment into a slot, its length back) over every slot, N times from a
/// fresh `TcpSegments` each; folds in each segment's TCP checksum so the header work is kept.
fn cut<'a>(
    n: u64,
    slots: &mut [u8],
    mut segments: impl FnMut() -> Option<TcpSegments<'a>>,
    next: impl Fn(&mut TcpSegments<'a>, &mut [u8]) -> Option<usize>,
) -> u64 {
    let mut acc = 0u64;
    for _ in 0..n {
        let Some(mut segs) = segments() else {
            eprintln!("not a super-packet");
            exit(1);
        };
        for slot in slots.chunks_exact_mut(SLOT) {
            let Some(len) = next(&mut segs, &mut slot[SLOT_HEAD..]) else {
                break;
            };
            acc = acc.rotate_left(5) ^ u64::from(slot[SLOT_HEAD + 36]) ^ len as u64;
        }
    }
    acc ^ sum(0, slots)
}

fn segment(n: u64) -> u64 {
    let (pkt, hdr) = (super_packet(), gso_header());
    let mut slots = vec![0u8; SLOT * PAYLOAD.div_ceil(MSS)];
    cut(
        n,
        &mut slots,
        || TcpSegments::new(&hdr, &pkt),
        TcpSegments::next_into,
    )
}

fn in_place(n: u64) -> u64 {
    let (pkt, hdr) = (super_packet(), gso_header());
    let mut slots = vec![0u8; SLOT * PAYLOAD.div_ceil(MSS)];
    // Where the read would have put each payload.
    for (k, slot) in slots.chunks_exact_mut(SLOT).enumerate() {
        let part = &pkt[HDR + k * MSS..(HDR + (k + 1) * MSS).min(pkt.len())];
        slot[SLOT_HEAD + HDR..SLOT_HEAD + HDR + part.len()].copy_from_slice(part);
    }
    let headers = || TcpSegments::headers(&hdr, &pkt[..HDR], pkt.len());
    cut(n, &mut slots, headers, TcpSegments::next_in_place)
}

fn sum_only(n: u64) -> u64 {
    let pkt = super_packet();
    let mut acc = 0u64;
    for _ in 0..n {
        acc = acc.rotate_left(1) ^ sum(0, std::hint::black_box(&pkt[HDR..]));
    }
    acc
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n = args.get(2).and_then(|s| s.parse::<u64>().ok());
    let (Some(mode), Some(n)) = (args.get(1), n) else {
        eprintln!("usage: segment-bench segment|in-place|sum <N>");
        exit(2);
    };
    let sum = match mode.as_str() {
        "segment" => segment(n),
        "in-place" => in_place(n),
        "sum" => sum_only(n),
        _ => {
            eprintln!("unknown mode {mode}");
            exit(2);
        }
    };
    println!("{mode} {n}: checksum {sum:016x}");
}
