//! Tests of the message codec: parsing replies, names, compression, malformed input.

use super::*;
use crate::openwrt::dns::codec::{parse_reply, read_name, TYPE_AAAA, TYPE_CNAME};
use std::net::Ipv6Addr;

#[test]
fn parses_a_and_aaaa() {
    let r = parse_reply(&a_reply(0x1234, "peer.example.com", [192, 0, 2, 1])).unwrap();
    assert_eq!(r.id, 0x1234);
    assert_eq!(r.qname, wire("peer.example.com"));
    assert_eq!(r.addrs, vec![ip("192.0.2.1")]);

    let mut m = reply(9, OK, 2, &wire("peer.example.com"), TYPE_AAAA);
    let v6: Ipv6Addr = "2001:db8::1".parse().unwrap();
    rr(&mut m, &wire("peer.example.com"), TYPE_AAAA, &v6.octets());
    rr(
        &mut m,
        &QPTR,
        TYPE_AAAA,
        &"2001:db8::2".parse::<Ipv6Addr>().unwrap().octets(),
    );
    let r = parse_reply(&m).unwrap();
    assert_eq!(r.addrs, vec![ip("2001:db8::1"), ip("2001:db8::2")]);
}

#[test]
fn skips_records_of_wrong_length_type_or_owner() {
    let mut m = reply(1, OK, 4, &wire("a.example"), TYPE_A);
    rr(&mut m, &QPTR, TYPE_A, &[1, 2, 3]); // short A
    rr(&mut m, &wire("other.example"), TYPE_A, &[10, 0, 0, 1]); // not ours
    rr(&mut m, &QPTR, TYPE_AAAA, &[0; 16]); // not the type asked
    rr(&mut m, &QPTR, TYPE_A, &[10, 0, 0, 2]);
    assert_eq!(parse_reply(&m).unwrap().addrs, vec![ip("10.0.0.2")]);
}

#[test]
fn follows_cname_chain_in_any_order_with_compression() {
    // www.example.com -> alias.example.com (compressed: "alias" + pointer to
    // "example.com" inside the question) -> final.example.org -> 192.0.2.9.
    let q = wire("www.example.com");
    let mut m = reply(5, OK, 4, &q, TYPE_A);
    let example_com = 12 + 4; // after the "www" label
    let mut alias = vec![5];
    alias.extend_from_slice(b"alias");
    alias.extend_from_slice(&[0xc0, example_com as u8]);
    // The final name's A record comes first and uses a plain name.
    rr(&mut m, &wire("final.example.org"), TYPE_A, &[192, 0, 2, 9]);
    rr(&mut m, &QPTR, TYPE_CNAME, &alias);
    let alias_owner_at = m.len();
    rr(&mut m, &alias, TYPE_CNAME, &wire("final.example.org"));
    // A decoy A record for the middle of the chain: only the end counts.
    let owner = [0xc0 | (alias_owner_at >> 8) as u8, alias_owner_at as u8];
    rr(&mut m, &owner, TYPE_A, &[198, 51, 100, 1]);
    let r = parse_reply(&m).unwrap();
    assert_eq!(r.addrs, vec![ip("192.0.2.9")]);

    // A CNAME loop ends the walk without addresses and without hanging.
    let mut m = reply(5, OK, 2, &wire("a.example"), TYPE_A);
    rr(&mut m, &QPTR, TYPE_CNAME, &wire("b.example"));
    rr(&mut m, &wire("b.example"), TYPE_CNAME, &wire("a.example"));
    assert!(parse_reply(&m).unwrap().addrs.is_empty());
}

#[test]
fn names_compare_case_insensitively() {
    let m = a_reply(3, "PeEr.ExAmPlE.CoM", [192, 0, 2, 3]);
    let r = parse_reply(&m).unwrap();
    assert_eq!(r.qname, wire("peer.example.com"));
    assert_eq!(r.addrs, vec![ip("192.0.2.3")]);
}

#[test]
fn rejects_pointer_loops_and_forward_pointers() {
    let mut out = Vec::new();
    // A pointer to itself.
    let m = [0u8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xc0, 12];
    assert_eq!(read_name(&m, 12, &mut out), None);
    // Two names pointing at each other.
    let m = [1, b'a', 0xc0, 4, 1, b'b', 0xc0, 0];
    assert_eq!(read_name(&m, 0, &mut out), None);
    assert_eq!(read_name(&m, 4, &mut out), None);
    // A forward pointer.
    let m = [0xc0, 2, 0];
    assert_eq!(read_name(&m, 0, &mut out), None);
    // A pointer past the end, a cut pointer, a cut label, reserved label types.
    assert_eq!(read_name(&[1, b'a', 0xc0, 0xff], 2, &mut out), None);
    assert_eq!(read_name(&[0xc0], 0, &mut out), None);
    assert_eq!(read_name(&[5, b'a', b'b'], 0, &mut out), None);
    assert_eq!(read_name(&[0x40, 0], 0, &mut out), None);
    assert_eq!(read_name(&[0x80, 0], 0, &mut out), None);
    // A backward pointer works and the name ends after the pointer.
    let m = [1, b'x', 0, 1, b'y', 0xc0, 0, 0xff];
    assert_eq!(read_name(&m, 3, &mut out), Some(7));
    assert_eq!(out, wire("y.x"));
}

#[test]
fn rejects_over_long_names() {
    // A chain of backward pointers, each adding a 63-byte label: over 255 bytes.
    let mut m = vec![0u8];
    let mut prev = 0usize;
    for _ in 0..5 {
        let here = m.len();
        m.push(63);
        m.extend_from_slice(&[b'a'; 63]);
        m.extend_from_slice(&[0xc0 | (prev >> 8) as u8, prev as u8]);
        prev = here;
    }
    let mut out = Vec::new();
    assert_eq!(read_name(&m, prev, &mut out), None);
    assert!(encode_name(&vec!["a".repeat(63); 4].join(".")).is_none());
    assert!(encode_name(&["a".repeat(63), "b".repeat(63)].join(".")).is_some());
    assert!(encode_name(&"a".repeat(64)).is_none());
    assert!(encode_name("a..b").is_none());
    assert!(encode_name("").is_none());
    assert!(encode_name(".").is_none());
    assert!(encode_name("has space.example").is_none());
    assert_eq!(encode_name("Example.COM."), encode_name("example.com"));
}

#[test]
fn truncated_replies() {
    // TC with one whole record and a cut one: the whole one counts.
    let mut m = reply(8, OK | 0x0200, 2, &wire("t.example"), TYPE_A);
    rr(&mut m, &QPTR, TYPE_A, &[192, 0, 2, 8]);
    rr(&mut m, &QPTR, TYPE_A, &[192, 0, 2, 9]);
    m.truncate(m.len() - 3);
    let r = parse_reply(&m).unwrap();
    assert!(r.truncated);
    assert_eq!(r.addrs, vec![ip("192.0.2.8")]);
    // The same cut without TC is malformed.
    m[2] &= !0x02;
    assert_eq!(parse_reply(&m), None);
    // Cut inside the header or question.
    let full = a_reply(1, "t.example", [1, 2, 3, 4]);
    for n in 0..12 + wire("t.example").len() + 4 {
        assert_eq!(parse_reply(&full[..n]), None, "{n}");
    }
}

#[test]
fn rejects_queries_and_odd_messages() {
    let mut m = a_reply(1, "q.example", [1, 2, 3, 4]);
    m[2] &= 0x7f; // QR clear: a query
    assert_eq!(parse_reply(&m), None);
    let mut m = a_reply(1, "q.example", [1, 2, 3, 4]);
    m[2] |= 0x08; // opcode 1
    assert_eq!(parse_reply(&m), None);
    let mut m = a_reply(1, "q.example", [1, 2, 3, 4]);
    m[5] = 2; // two questions
    assert_eq!(parse_reply(&m), None);
}
