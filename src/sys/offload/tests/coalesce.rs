//! Tests of `coalesce.rs`.

use super::{reference, super_packet};
use crate::sys::offload::coalesce::same_headers;
use crate::sys::offload::*;

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
