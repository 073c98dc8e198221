//! Tests of `segment.rs`.

use super::{reference, super_packet, tcp_pseudo};
use crate::sys::offload::*;

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
