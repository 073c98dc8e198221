//! Allowed IPs: insert/remove/remove_value/lookup sequences against a naive model.
//!
//! The model is a list of (family, masked address, cidr, peer); a lookup is the longest
//! prefix that contains the address. Every lookup must agree exactly, as must the return
//! values of insert (false only for a too-long cidr) and remove (true only if that exact
//! prefix belonged to that peer), `len()` and `prefixes_of` for every peer.
#![no_main]

use libfuzzer_sys::fuzz_target;
use solowg::proto::allowedips::AllowedIps;
use solowg_fuzz::Input;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

const PEERS: u8 = 5;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Entry {
    v6: bool,
    key: u128,
    cidr: u8,
    peer: u8,
}

fn bits(v6: bool) -> u8 {
    if v6 {
        128
    } else {
        32
    }
}

fn mask(key: u128, cidr: u8, v6: bool) -> u128 {
    let width = u32::from(bits(v6));
    if cidr == 0 {
        return 0;
    }
    let ones = if width == 128 {
        u128::MAX
    } else {
        (1u128 << width) - 1
    };
    if u32::from(cidr) >= width {
        return key & ones;
    }
    key & (ones << (width - u32::from(cidr))) & ones
}

fn to_ip(key: u128, v6: bool) -> IpAddr {
    if v6 {
        IpAddr::V6(Ipv6Addr::from(key))
    } else {
        IpAddr::V4(Ipv4Addr::from(key as u32))
    }
}

/// An address: IPv4 from 4 bytes; IPv6 either from 16 bytes or, more often, from 4 bytes
/// spread over the first and last two bytes (so that prefixes nest and share long paths).
fn addr(inp: &mut Input, v6: bool) -> u128 {
    if !v6 {
        return u128::from(inp.u32());
    }
    if inp.u8() & 3 == 0 {
        let mut b = [0u8; 16];
        for x in &mut b {
            *x = inp.u8();
        }
        u128::from_be_bytes(b)
    } else {
        let mut b = [0u8; 16];
        b[0] = 0x20;
        b[1] = inp.u8();
        b[2] = inp.u8();
        b[14] = inp.u8();
        b[15] = inp.u8();
        u128::from_be_bytes(b)
    }
}

fn cidr(inp: &mut Input, v6: bool) -> u8 {
    let c = inp.u8();
    if c >= 0xf8 {
        c // out of range: refused
    } else {
        c % (bits(v6) + 1)
    }
}

fn model_lookup(model: &[Entry], v6: bool, key: u128) -> Option<u8> {
    model
        .iter()
        .filter(|e| e.v6 == v6 && mask(key, e.cidr, v6) == e.key)
        .max_by_key(|e| e.cidr)
        .map(|e| e.peer)
}

fuzz_target!(|data: &[u8]| {
    let mut inp = Input::new(data);
    let mut t: AllowedIps<u8> = AllowedIps::new();
    let mut model: Vec<Entry> = Vec::new();
    let mut ops = 0;
    while !inp.is_empty() && ops < 4096 {
        ops += 1;
        let op = inp.u8();
        let v6 = op & 0x80 != 0;
        match op & 0x7f {
            // insert (the most common operation, so tries grow)
            0..=39 => {
                let key = addr(&mut inp, v6);
                let c = cidr(&mut inp, v6);
                let peer = inp.u8() % PEERS;
                let ok = t.insert(to_ip(key, v6), c, peer);
                assert_eq!(ok, c <= bits(v6), "insert {}/{c}", to_ip(key, v6));
                if ok {
                    let key = mask(key, c, v6);
                    match model
                        .iter_mut()
                        .find(|e| e.v6 == v6 && e.key == key && e.cidr == c)
                    {
                        Some(e) => e.peer = peer,
                        None => model.push(Entry {
                            v6,
                            key,
                            cidr: c,
                            peer,
                        }),
                    }
                }
            }
            // remove an exact prefix (host bits set or not) for a peer
            40..=59 => {
                let (key, c) = if !model.is_empty() && inp.bool() {
                    // An existing prefix, perhaps with host bits set.
                    let e = model[inp.below(model.len())];
                    let host = if e.cidr < bits(e.v6) {
                        u128::from(inp.u8())
                    } else {
                        0
                    };
                    if e.v6 != v6 {
                        continue;
                    }
                    (
                        e.key
                            | (host & !mask(u128::MAX, e.cidr, v6) & mask(u128::MAX, bits(v6), v6)),
                        e.cidr,
                    )
                } else {
                    (addr(&mut inp, v6), cidr(&mut inp, v6))
                };
                let peer = inp.u8() % PEERS;
                let removed = t.remove(to_ip(key, v6), c, peer);
                let mk = mask(key, c, v6);
                let pos = model
                    .iter()
                    .position(|e| e.v6 == v6 && e.key == mk && e.cidr == c && e.peer == peer);
                assert_eq!(
                    removed,
                    pos.is_some(),
                    "remove {}/{c} peer {peer}",
                    to_ip(key, v6)
                );
                if let Some(p) = pos {
                    model.remove(p);
                }
            }
            60..=64 => {
                let peer = inp.u8() % PEERS;
                t.remove_value(peer);
                model.retain(|e| e.peer != peer);
            }
            65..=70 => {
                let peer = inp.u8() % PEERS;
                let mut want: Vec<(IpAddr, u8)> = model
                    .iter()
                    .filter(|e| e.peer == peer)
                    .map(|e| (e.v6, e.key, e.cidr))
                    .collect::<Vec<_>>()
                    .into_iter()
                    .map(|(v6, k, c)| (v6, k, c))
                    .collect::<std::collections::BTreeSet<_>>()
                    .into_iter()
                    .map(|(v6, k, c)| (to_ip(k, v6), c))
                    .collect();
                // IPv4 first, then IPv6, each by (address, cidr).
                want.sort_by_key(|(a, c)| (a.is_ipv6(), *a, *c));
                assert_eq!(t.prefixes_of(peer), want);
            }
            71 if inp.bool() => {
                t.clear();
                model.clear();
            }
            // lookup: a random address, or one inside/next to an existing prefix
            _ => {
                let key = if !model.is_empty() && inp.bool() {
                    let e = model[inp.below(model.len())];
                    if e.v6 != v6 {
                        continue;
                    }
                    let noise = addr(&mut inp, v6) >> inp.below(128).min(127);
                    e.key ^ (noise & mask(u128::MAX, bits(v6), v6))
                } else {
                    addr(&mut inp, v6)
                };
                let want = model_lookup(&model, v6, key);
                assert_eq!(t.lookup(to_ip(key, v6)), want, "lookup {}", to_ip(key, v6));
                let bytes: Vec<u8> = if v6 {
                    key.to_be_bytes().to_vec()
                } else {
                    (key as u32).to_be_bytes().to_vec()
                };
                assert_eq!(t.lookup_bytes(&bytes), want);
            }
        }
        assert_eq!(t.len(), model.len(), "len");
        assert_eq!(t.is_empty(), model.is_empty());
    }
    // Finally every stored prefix, and just outside it, looks up as the model says.
    for e in model.clone() {
        for key in [e.key, e.key ^ 1, e.key.wrapping_sub(1)] {
            let key = key & mask(u128::MAX, bits(e.v6), e.v6);
            assert_eq!(t.lookup(to_ip(key, e.v6)), model_lookup(&model, e.v6, key));
        }
    }
});
