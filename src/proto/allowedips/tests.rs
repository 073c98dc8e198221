//! The table against a naive model, its trie's invariants, and the cost of churn and removal.

use super::trie::{Key, NIL};
use super::*;
use crate::testing::TestRng;
use std::str::FromStr;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Peer(usize);

fn ip(s: &str) -> IpAddr {
    IpAddr::from_str(s).unwrap()
}

fn look(t: &AllowedIps<Peer>, s: &str) -> Option<usize> {
    t.lookup(ip(s)).map(|p| p.0)
}

/// Checks structural invariants: parent links, no redundant nodes,
/// children extend their parent's prefix, value count matches `len`.
fn check_trie<K: Key + std::fmt::Debug, T: Copy + Eq>(t: &Trie<K, T>) {
    let mut seen = 0usize;
    let mut values = 0usize;
    let mut stack = vec![(t.root, NIL)];
    while let Some((i, parent)) = stack.pop() {
        if i == NIL {
            continue;
        }
        let n = &t.nodes[i as usize];
        seen += 1;
        assert_eq!(n.parent, parent, "parent link");
        assert_eq!(n.key, n.key.masked(n.cidr), "key masked");
        let kids = n.child.iter().filter(|&&c| c != NIL).count();
        if n.value.is_some() {
            values += 1;
        } else {
            assert_eq!(kids, 2, "valueless node must branch");
        }
        for (dir, &c) in n.child.iter().enumerate() {
            if c == NIL {
                continue;
            }
            let cn = &t.nodes[c as usize];
            assert!(cn.cidr > n.cidr);
            assert_eq!(cn.key.masked(n.cidr), n.key);
            assert_eq!(cn.key.bit(n.cidr), dir);
            stack.push((c, i));
        }
    }
    assert_eq!(values, t.len);
    assert_eq!(seen + t.free.len(), t.nodes.len(), "no leaked slots");
}

fn check(t: &AllowedIps<Peer>) {
    check_trie(&t.v4);
    check_trie(&t.v6);
}

#[test]
fn empty_table() {
    let t: AllowedIps<Peer> = AllowedIps::new();
    assert!(t.is_empty());
    assert_eq!(t.len(), 0);
    assert_eq!(look(&t, "1.2.3.4"), None);
    assert_eq!(look(&t, "::1"), None);
    assert_eq!(t.prefixes_of(Peer(1)), vec![]);
}

#[test]
fn default_routes() {
    let mut t = AllowedIps::new();
    assert!(t.insert(ip("0.0.0.0"), 0, Peer(1)));
    assert_eq!(look(&t, "1.2.3.4"), Some(1));
    assert_eq!(look(&t, "255.255.255.255"), Some(1));
    assert_eq!(look(&t, "::"), None);
    assert!(t.insert(ip("::"), 0, Peer(2)));
    assert_eq!(look(&t, "2001:db8::1"), Some(2));
    assert_eq!(look(&t, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), Some(2));
    assert_eq!(look(&t, "0.0.0.0"), Some(1));
    assert_eq!(t.len(), 2);
    check(&t);
}

#[test]
fn host_routes() {
    let mut t = AllowedIps::new();
    assert!(t.insert(ip("10.0.0.1"), 32, Peer(1)));
    assert!(t.insert(ip("10.0.0.2"), 32, Peer(2)));
    assert!(t.insert(ip("2001:db8::1"), 128, Peer(3)));
    assert_eq!(look(&t, "10.0.0.1"), Some(1));
    assert_eq!(look(&t, "10.0.0.2"), Some(2));
    assert_eq!(look(&t, "10.0.0.3"), None);
    assert_eq!(look(&t, "2001:db8::1"), Some(3));
    assert_eq!(look(&t, "2001:db8::2"), None);
    check(&t);
}

#[test]
fn overlapping_prefixes() {
    let mut t = AllowedIps::new();
    t.insert(ip("10.0.0.0"), 8, Peer(1));
    t.insert(ip("10.1.0.0"), 16, Peer(2));
    t.insert(ip("10.1.2.0"), 24, Peer(3));
    t.insert(ip("10.1.2.3"), 32, Peer(4));
    t.insert(ip("0.0.0.0"), 0, Peer(5));
    assert_eq!(look(&t, "10.9.9.9"), Some(1));
    assert_eq!(look(&t, "10.1.9.9"), Some(2));
    assert_eq!(look(&t, "10.1.2.9"), Some(3));
    assert_eq!(look(&t, "10.1.2.3"), Some(4));
    assert_eq!(look(&t, "11.0.0.0"), Some(5));
    // Same address, different lengths.
    t.insert(ip("192.168.0.0"), 16, Peer(6));
    t.insert(ip("192.168.0.0"), 24, Peer(7));
    assert_eq!(look(&t, "192.168.0.7"), Some(7));
    assert_eq!(look(&t, "192.168.1.7"), Some(6));
    assert_eq!(t.len(), 7);
    // Removing the middle layer falls back to the shorter prefix.
    assert!(t.remove(ip("10.1.0.0"), 16, Peer(2)));
    assert_eq!(look(&t, "10.1.9.9"), Some(1));
    assert_eq!(look(&t, "10.1.2.9"), Some(3));
    check(&t);

    let mut t = AllowedIps::new();
    t.insert(ip("2001:db8::"), 32, Peer(1));
    t.insert(ip("2001:db8:1::"), 48, Peer(2));
    t.insert(ip("2001:db8:1::"), 64, Peer(3));
    assert_eq!(look(&t, "2001:db8:2::1"), Some(1));
    assert_eq!(look(&t, "2001:db8:1:1::1"), Some(2));
    assert_eq!(look(&t, "2001:db8:1::1"), Some(3));
    assert_eq!(look(&t, "2001:db9::"), None);
    check(&t);
}

#[test]
fn replacing_owner() {
    let mut t = AllowedIps::new();
    assert!(t.insert(ip("10.0.0.0"), 24, Peer(1)));
    assert!(t.insert(ip("10.0.0.0"), 24, Peer(2)));
    assert_eq!(t.len(), 1);
    assert_eq!(look(&t, "10.0.0.5"), Some(2));
    assert_eq!(t.prefixes_of(Peer(1)), vec![]);
    assert_eq!(t.prefixes_of(Peer(2)), vec![(ip("10.0.0.0"), 24)]);
    check(&t);
}

#[test]
fn remove_only_if_owner_matches() {
    let mut t = AllowedIps::new();
    t.insert(ip("10.0.0.0"), 24, Peer(1));
    t.insert(ip("fd00::"), 8, Peer(1));
    assert!(!t.remove(ip("10.0.0.0"), 24, Peer(2)));
    assert!(!t.remove(ip("10.0.0.0"), 25, Peer(1)));
    assert!(!t.remove(ip("10.0.0.0"), 23, Peer(1)));
    assert!(!t.remove(ip("fd00::"), 8, Peer(2)));
    // Prefixes that do not exist, but share the path of one that does.
    assert!(!t.remove(ip("10.0.1.0"), 24, Peer(1)));
    assert!(!t.remove(ip("11.0.0.0"), 24, Peer(1)));
    assert!(!t.remove(ip("fe00::"), 8, Peer(1)));
    assert_eq!(t.len(), 2);
    // Host bits are masked for removal too.
    assert!(t.remove(ip("10.0.0.77"), 24, Peer(1)));
    assert!(!t.remove(ip("10.0.0.0"), 24, Peer(1)));
    assert_eq!(look(&t, "10.0.0.1"), None);
    assert!(t.remove(ip("fd00::"), 8, Peer(1)));
    assert!(t.is_empty());
    check(&t);
}

#[test]
fn remove_value_removes_all() {
    let mut t = AllowedIps::new();
    t.insert(ip("10.0.0.0"), 8, Peer(1));
    t.insert(ip("10.1.0.0"), 16, Peer(2));
    t.insert(ip("10.1.1.0"), 24, Peer(1));
    t.insert(ip("10.2.0.0"), 16, Peer(1));
    t.insert(ip("fd00::"), 8, Peer(1));
    t.insert(ip("fd00::1"), 128, Peer(2));
    t.remove_value(Peer(1));
    assert_eq!(t.len(), 2);
    assert_eq!(look(&t, "10.1.1.1"), Some(2));
    assert_eq!(look(&t, "10.2.0.1"), None);
    assert_eq!(look(&t, "fd00::1"), Some(2));
    assert_eq!(look(&t, "fd00::2"), None);
    assert_eq!(t.prefixes_of(Peer(1)), vec![]);
    check(&t);
    t.remove_value(Peer(2));
    assert!(t.is_empty());
    assert!(t.v4.nodes.is_empty() && t.v6.nodes.is_empty());
}

#[test]
fn v4_mapped_is_not_v4() {
    let mut t = AllowedIps::new();
    t.insert(ip("1.2.3.0"), 24, Peer(1));
    assert_eq!(look(&t, "::ffff:1.2.3.4"), None);
    let mapped = Ipv4Addr::new(1, 2, 3, 4).to_ipv6_mapped().octets();
    assert_eq!(t.lookup_bytes(&mapped), None);
    t.insert(ip("::ffff:0.0.0.0"), 96, Peer(2));
    assert_eq!(look(&t, "::ffff:1.2.3.4"), Some(2));
    assert_eq!(look(&t, "1.2.3.4"), Some(1));
    assert_eq!(look(&t, "9.9.9.9"), None);
}

#[test]
fn host_bits_masked() {
    let mut t = AllowedIps::new();
    assert!(t.insert(ip("192.168.77.200"), 16, Peer(1)));
    assert!(t.insert(ip("2001:db8:ffff:ffff::1"), 32, Peer(1)));
    assert!(t.insert(ip("255.255.255.255"), 0, Peer(2)));
    assert_eq!(
        t.prefixes_of(Peer(1)),
        vec![(ip("192.168.0.0"), 16), (ip("2001:db8::"), 32)]
    );
    assert_eq!(t.prefixes_of(Peer(2)), vec![(ip("0.0.0.0"), 0)]);
    assert_eq!(look(&t, "192.168.0.1"), Some(1));
    // Same prefix written differently is the same entry.
    assert!(t.insert(ip("192.168.1.1"), 16, Peer(3)));
    assert_eq!(t.len(), 3);
    assert_eq!(look(&t, "192.168.200.1"), Some(3));
}

#[test]
fn invalid_cidr_rejected() {
    let mut t = AllowedIps::new();
    assert!(!t.insert(ip("1.2.3.4"), 33, Peer(1)));
    assert!(!t.insert(ip("1.2.3.4"), 255, Peer(1)));
    assert!(!t.insert(ip("::1"), 129, Peer(1)));
    assert!(!t.insert(ip("::1"), 255, Peer(1)));
    assert!(t.is_empty());
    assert!(!t.remove(ip("1.2.3.4"), 33, Peer(1)));
    assert!(!t.remove(ip("::1"), 129, Peer(1)));
    assert_eq!(look(&t, "1.2.3.4"), None);
    assert!(t.insert(ip("1.2.3.4"), 32, Peer(1)));
    assert!(t.insert(ip("::1"), 128, Peer(1)));
    assert_eq!(t.len(), 2);
}

#[test]
fn lookup_bytes_lengths() {
    let mut t = AllowedIps::new();
    t.insert(ip("0.0.0.0"), 0, Peer(1));
    t.insert(ip("::"), 0, Peer(2));
    assert_eq!(t.lookup_bytes(&[10, 0, 0, 1]), Some(Peer(1)));
    assert_eq!(t.lookup_bytes(&[0u8; 16]), Some(Peer(2)));
    for len in [0usize, 1, 3, 5, 8, 15, 17, 20, 32] {
        assert_eq!(t.lookup_bytes(&vec![0u8; len]), None, "len {len}");
    }
}

#[test]
fn clear_empties() {
    let mut t = AllowedIps::new();
    t.insert(ip("10.0.0.0"), 8, Peer(1));
    t.insert(ip("::"), 0, Peer(1));
    t.clear();
    assert!(t.is_empty());
    assert_eq!(look(&t, "10.0.0.1"), None);
    assert_eq!(look(&t, "::1"), None);
    assert!(t.insert(ip("10.0.0.0"), 8, Peer(2)));
    assert_eq!(look(&t, "10.0.0.1"), Some(2));
}

#[test]
fn churn_reuses_slots() {
    let mut t = AllowedIps::new();
    t.insert(ip("0.0.0.0"), 0, Peer(0)); // keep the arena from resetting
    for round in 0..50u32 {
        for i in 0..100u32 {
            let a = Ipv4Addr::from(i.wrapping_mul(0x9e37_79b9) ^ round);
            t.insert(IpAddr::V4(a), 32, Peer(1));
        }
        t.remove_value(Peer(1));
    }
    check(&t);
    assert_eq!(t.len(), 1);
    assert!(t.v4.nodes.len() <= 2 * 100 + 1, "{}", t.v4.nodes.len());
}

#[test]
fn thousand_peers() {
    let mut t = AllowedIps::new();
    for p in 0..1000u32 {
        let v4 = Ipv4Addr::from(0x0a00_0000 | (p << 8));
        t.insert(IpAddr::V4(v4), 24, Peer(p as usize));
        t.insert(
            IpAddr::V4(Ipv4Addr::from(0x6440_0000 | p)),
            32,
            Peer(p as usize),
        );
        let v6 = Ipv6Addr::from((0xfd00u128 << 112) | (u128::from(p) << 64));
        t.insert(IpAddr::V6(v6), 64, Peer(p as usize));
    }
    assert_eq!(t.len(), 3000);
    check(&t);
    // Path compression: fewer than two nodes per prefix.
    assert!(t.v4.nodes.len() < 4000);
    assert!(t.v6.nodes.len() < 2000);
    for p in (0..1000u32).step_by(37) {
        let v4 = Ipv4Addr::from(0x0a00_0000 | (p << 8) | 9);
        assert_eq!(t.lookup(IpAddr::V4(v4)), Some(Peer(p as usize)));
        let v6 = Ipv6Addr::from((0xfd00u128 << 112) | (u128::from(p) << 64) | 5);
        assert_eq!(t.lookup(IpAddr::V6(v6)), Some(Peer(p as usize)));
    }
}

/// Naive reference: a list of (network, cidr, value) searched linearly.
/// Keys are u128 with v4 in the low 32 bits; `bits` is the family width.
struct Model {
    bits: u8,
    entries: Vec<(u128, u8, usize)>,
}

impl Model {
    fn mask(&self, key: u128, cidr: u8) -> u128 {
        if cidr == 0 {
            0
        } else {
            let full = if self.bits == 128 {
                u128::MAX
            } else {
                u128::from(u32::MAX)
            };
            key & (full << (self.bits - cidr)) & full
        }
    }
    fn insert(&mut self, key: u128, cidr: u8, v: usize) -> bool {
        if cidr > self.bits {
            return false;
        }
        let key = self.mask(key, cidr);
        match self.entries.iter_mut().find(|e| e.0 == key && e.1 == cidr) {
            Some(e) => e.2 = v,
            None => self.entries.push((key, cidr, v)),
        }
        true
    }
    fn remove(&mut self, key: u128, cidr: u8, v: usize) -> bool {
        if cidr > self.bits {
            return false;
        }
        let key = self.mask(key, cidr);
        let before = self.entries.len();
        self.entries
            .retain(|e| !(e.0 == key && e.1 == cidr && e.2 == v));
        before != self.entries.len()
    }
    fn lookup(&self, key: u128) -> Option<usize> {
        self.entries
            .iter()
            .filter(|e| self.mask(key, e.1) == e.0)
            .max_by_key(|e| e.1)
            .map(|e| e.2)
    }
    fn prefixes_of(&self, v: usize) -> Vec<(u128, u8)> {
        let mut out: Vec<_> = self
            .entries
            .iter()
            .filter(|e| e.2 == v)
            .map(|e| (e.0, e.1))
            .collect();
        out.sort_unstable();
        out
    }
}

fn to_ip(bits: u8, key: u128) -> IpAddr {
    if bits == 32 {
        IpAddr::V4(Ipv4Addr::from(key as u32))
    } else {
        IpAddr::V6(Ipv6Addr::from(key))
    }
}

fn differential(seed: u64, ops: usize) {
    let mut rng = TestRng(seed);
    let mut t = AllowedIps::new();
    let mut models = [
        Model {
            bits: 32,
            entries: Vec::new(),
        },
        Model {
            bits: 128,
            entries: Vec::new(),
        },
    ];
    // A few base addresses so that random prefixes nest and collide.
    let bases: Vec<u128> = (0..6).map(|_| rng.u128()).collect();
    const PEERS: u64 = 12;

    for step in 0..ops {
        let m = &mut models[rng.below(2) as usize];
        let bits = m.bits;
        let full = if bits == 32 {
            u128::from(u32::MAX)
        } else {
            u128::MAX
        };
        let r = rng.below(100);
        if r < 40 {
            let base = bases[rng.below(bases.len() as u64) as usize];
            let noise_bits = rng.below(u64::from(bits) + 1) as u32;
            let noise = rng.u128().checked_shr(128 - noise_bits).unwrap_or(0);
            let key = (base ^ noise) & full;
            // Bias cidr towards interesting (non-extreme) lengths but
            // include 0 and the full width, and a few invalid ones.
            let cidr = match rng.below(20) {
                0 => 0,
                1 => bits,
                2 => bits + 1 + rng.below(3) as u8,
                _ => rng.below(u64::from(bits) + 1) as u8,
            };
            let v = rng.below(PEERS) as usize;
            let got = t.insert(to_ip(bits, key), cidr, Peer(v));
            assert_eq!(got, m.insert(key, cidr, v), "insert step {step}");
        } else if r < 60 {
            // Remove an existing prefix, sometimes with the wrong owner.
            if m.entries.is_empty() {
                continue;
            }
            let e = m.entries[rng.below(m.entries.len() as u64) as usize];
            let v = if rng.below(4) == 0 {
                rng.below(PEERS) as usize
            } else {
                e.2
            };
            // Re-add host bits to exercise masking on removal.
            let host = if e.1 < bits {
                rng.u128() & full & !m.mask(full, e.1)
            } else {
                0
            };
            let got = t.remove(to_ip(bits, e.0 | host), e.1, Peer(v));
            assert_eq!(got, m.remove(e.0, e.1, v), "remove step {step}");
        } else if r < 65 {
            // Remove a probably-absent prefix close to an existing one.
            if m.entries.is_empty() {
                continue;
            }
            let e = m.entries[rng.below(m.entries.len() as u64) as usize];
            let flip = rng.u128().checked_shr(128 - u32::from(e.1)).unwrap_or(0);
            let key = (e.0 ^ flip) & full;
            let got = t.remove(to_ip(bits, key), e.1, Peer(e.2));
            assert_eq!(got, m.remove(key, e.1, e.2), "remove near step {step}");
        } else if r < 67 {
            let v = rng.below(PEERS) as usize;
            t.remove_value(Peer(v));
            for m in models.iter_mut() {
                m.entries.retain(|e| e.2 != v);
            }
        } else {
            // Lookups near stored prefixes, so they usually hit something.
            let key = if !m.entries.is_empty() && rng.below(5) != 0 {
                let e = m.entries[rng.below(m.entries.len() as u64) as usize];
                let flip_bits = rng.below(u64::from(bits) + 1) as u32;
                let flip = rng.u128().checked_shr(128 - flip_bits).unwrap_or(0);
                (e.0 ^ flip) & full
            } else {
                rng.u128() & full
            };
            let want = m.lookup(key);
            assert_eq!(t.lookup(to_ip(bits, key)).map(|p| p.0), want, "step {step}");
            let bytes = match to_ip(bits, key) {
                IpAddr::V4(a) => a.octets().to_vec(),
                IpAddr::V6(a) => a.octets().to_vec(),
            };
            assert_eq!(t.lookup_bytes(&bytes).map(|p| p.0), want);
        }
        assert_eq!(t.len(), models[0].entries.len() + models[1].entries.len());
        if step % 97 == 0 {
            check(&t);
        }
    }
    check(&t);
    for v in 0..PEERS as usize {
        let want: Vec<(IpAddr, u8)> = models
            .iter()
            .flat_map(|m| {
                m.prefixes_of(v)
                    .into_iter()
                    .map(move |(k, c)| (to_ip(m.bits, k), c))
            })
            .collect();
        assert_eq!(t.prefixes_of(Peer(v)), want, "prefixes_of {v}");
    }
}

#[test]
fn differential_against_naive_model() {
    for seed in 1..=8u64 {
        differential(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15), 4000);
    }
}

#[test]
fn prefixes_of_sorted_mixed() {
    let mut t = AllowedIps::new();
    for (a, c) in [
        ("fd00::", 8u8),
        ("10.0.0.0", 16),
        ("10.0.0.0", 8),
        ("9.0.0.0", 8),
        ("::", 0),
        ("10.0.0.1", 32),
    ] {
        t.insert(ip(a), c, Peer(1));
    }
    assert_eq!(
        t.prefixes_of(Peer(1)),
        vec![
            (ip("9.0.0.0"), 8),
            (ip("10.0.0.0"), 8),
            (ip("10.0.0.0"), 16),
            (ip("10.0.0.1"), 32),
            (ip("::"), 0),
            (ip("fd00::"), 8),
        ]
    );
}
