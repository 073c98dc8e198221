//! Tests of the offload module, one file per submodule, and the packet builders and
//! reference checksum they share.

use super::checksum::pseudo_sum;
use super::*;

mod checksum;
mod coalesce;
mod segment;

/// Plain RFC 1071 over big-endian words, for checking the fast version.
fn reference(data: &[u8]) -> u16 {
    let mut s: u32 = 0;
    for c in data.chunks(2) {
        s += u32::from(c[0]) << 8 | u32::from(*c.get(1).unwrap_or(&0));
    }
    while s > 0xffff {
        s = (s >> 16) + (s & 0xffff);
    }
    s as u16
}

fn tcp_pseudo(seg: &[u8], v6: bool, l4: usize) -> Vec<u8> {
    let mut p = Vec::new();
    if v6 {
        p.extend_from_slice(&seg[8..40]);
        p.extend_from_slice(&((seg.len() - l4) as u32).to_be_bytes());
        p.extend_from_slice(&[0, 0, 0, 6]);
    } else {
        p.extend_from_slice(&seg[12..20]);
        p.extend_from_slice(&[0, 6]);
        p.extend_from_slice(&((seg.len() - l4) as u16).to_be_bytes());
    }
    p.extend_from_slice(&seg[l4..]);
    p
}

#[test]
fn header_round_trip() {
    let h = VnetHdr {
        flags: F_NEEDS_CSUM,
        gso_type: GSO_TCPV6 | GSO_ECN,
        hdr_len: 72,
        gso_size: 1348,
        csum_start: 40,
        csum_offset: 16,
    };
    let mut b = [0u8; VNET_HDR_LEN];
    h.write(&mut b);
    assert_eq!(VnetHdr::parse(&b), Some(h));
    assert!(h.is_gso());
    assert_eq!(VnetHdr::parse(&b[..9]), None);
}

/// The layout TUNSETVNETLE asks the kernel for, whatever the byte order of the CPU
/// (the MIPS unit tests run this big-endian).
#[test]
fn header_fields_are_little_endian() {
    // flags, gso_type, then hdr_len 0x36, gso_size 1348, csum_start 0x22, csum_offset 0x10.
    let b = [1u8, 1, 0x36, 0, 0x44, 0x05, 0x22, 0, 0x10, 0];
    let h = VnetHdr {
        flags: F_NEEDS_CSUM,
        gso_type: GSO_TCPV4,
        hdr_len: 0x36,
        gso_size: 1348,
        csum_start: 0x22,
        csum_offset: 0x10,
    };
    assert_eq!(VnetHdr::parse(&b), Some(h));
    let mut out = [0u8; VNET_HDR_LEN];
    h.write(&mut out);
    assert_eq!(out, b);
}

/// A super-packet as the kernel hands it over: IP + TCP (with 12 bytes of options),
/// `payload` bytes, TCP checksum field holding only the pseudo-header sum.
fn super_packet(v6: bool, payload: usize, flags: u8) -> (VnetHdr, Vec<u8>) {
    let ip = if v6 { 40 } else { 20 };
    let tcp = 32;
    let mut p = vec![0u8; ip + tcp + payload];
    if v6 {
        p[0] = 0x60;
        p[4..6].copy_from_slice(&((tcp + payload) as u16).to_be_bytes());
        p[6] = 6;
        p[7] = 64;
        p[8..24].copy_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        p[24..40].copy_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
    } else {
        p[0] = 0x45;
        p[2..4].copy_from_slice(&((ip + tcp + payload).min(65535) as u16).to_be_bytes());
        p[4..6].copy_from_slice(&0xfffeu16.to_be_bytes()); // id wraps
        p[6] = 0x40;
        p[8] = 64;
        p[9] = 6;
        p[12..16].copy_from_slice(&[10, 0, 0, 1]);
        p[16..20].copy_from_slice(&[10, 0, 0, 2]);
    }
    p[ip..ip + 2].copy_from_slice(&5201u16.to_be_bytes());
    p[ip + 2..ip + 4].copy_from_slice(&40000u16.to_be_bytes());
    p[ip + 4..ip + 8].copy_from_slice(&0xffff_f000u32.to_be_bytes()); // seq wraps
    p[ip + 8..ip + 12].copy_from_slice(&7u32.to_be_bytes());
    p[ip + 12] = (tcp as u8 / 4) << 4;
    p[ip + 13] = flags;
    p[ip + 14..ip + 16].copy_from_slice(&500u16.to_be_bytes());
    p[ip + 20] = 1; // NOP NOP timestamp
    p[ip + 21] = 1;
    p[ip + 22] = 8;
    p[ip + 23] = 10;
    for (i, b) in p[ip + tcp..].iter_mut().enumerate() {
        *b = (i * 31 + i / 253) as u8;
    }
    let partial = fold(pseudo_sum(&p, v6, tcp + payload));
    p[ip + 16..ip + 18].copy_from_slice(&partial.to_be_bytes());
    let h = VnetHdr {
        flags: F_NEEDS_CSUM,
        gso_type: if v6 { GSO_TCPV6 } else { GSO_TCPV4 } | GSO_ECN,
        hdr_len: (ip + tcp) as u16,
        gso_size: 1000,
        csum_start: ip as u16,
        csum_offset: 16,
    };
    (h, p)
}
