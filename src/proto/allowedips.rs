//! Cryptokey routing table: maps IP prefixes to peers with longest-prefix match.
//!
//! Each address family is a path-compressed binary trie whose nodes live in a
//! `Vec` arena addressed by `u32` indices. Compared with one heap allocation
//! per node this halves the per-node footprint on 64-bit targets, keeps nodes
//! cache-friendly and makes `Clone` a couple of memcpys. A lookup visits at
//! most one node per key bit, independent of how many peers exist.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Index meaning "no node". Never a valid arena index because `alloc` refuses it.
const NIL: u32 = u32::MAX;

/// Fixed-width big-endian key (`u32` for IPv4, `u128` for IPv6), so one trie
/// implementation serves both families without storing v4 keys in 16 bytes.
trait Key: Copy + Eq + Ord {
    const BITS: u8;

    /// Keeps the top `cidr` bits and zeroes the rest.
    fn masked(self, cidr: u8) -> Self;
    /// Bit `i` counted from the most significant bit; callers keep `i < BITS`.
    fn bit(self, i: u8) -> usize;
    /// Number of leading bits shared with `other`.
    fn common_prefix(self, other: Self) -> u8;
}

macro_rules! impl_key {
    ($t:ty) => {
        impl Key for $t {
            const BITS: u8 = <$t>::BITS as u8;

            #[inline]
            fn masked(self, cidr: u8) -> Self {
                // A shift by the full width is not defined; checked_shl turns
                // the cidr == 0 case into "mask everything".
                match <$t>::MAX.checked_shl(u32::from(<Self as Key>::BITS.saturating_sub(cidr))) {
                    Some(mask) => self & mask,
                    None => 0,
                }
            }

            #[inline]
            fn bit(self, i: u8) -> usize {
                let shift = <Self as Key>::BITS.saturating_sub(1).saturating_sub(i);
                ((self >> shift) & 1) as usize
            }

            #[inline]
            fn common_prefix(self, other: Self) -> u8 {
                (self ^ other).leading_zeros() as u8
            }
        }
    };
}

impl_key!(u32);
impl_key!(u128);

#[derive(Debug, Clone)]
struct Node<K, T> {
    /// Prefix bits, already masked to `cidr`.
    key: K,
    child: [u32; 2],
    /// Kept so removal can walk upwards and splice out redundant nodes.
    parent: u32,
    cidr: u8,
    /// `None` for pure branching nodes (and for slots on the free list).
    value: Option<T>,
}

#[derive(Debug, Clone)]
struct Trie<K, T> {
    nodes: Vec<Node<K, T>>,
    /// Freed arena slots, reused before the arena grows, so churn does not
    /// accumulate garbage beyond the peak size.
    free: Vec<u32>,
    root: u32,
    /// Number of nodes holding a value.
    len: usize,
}

impl<K, T> Default for Trie<K, T> {
    fn default() -> Self {
        Trie {
            nodes: Vec::new(),
            free: Vec::new(),
            root: NIL,
            len: 0,
        }
    }
}

impl<K: Key, T: Copy + Eq> Trie<K, T> {
    fn lookup(&self, key: K) -> Option<T> {
        let mut best = None;
        let mut cur = self.root;
        while let Some(n) = self.nodes.get(cur as usize) {
            if key.masked(n.cidr) != n.key {
                break;
            }
            if n.value.is_some() {
                best = n.value;
            }
            if n.cidr >= K::BITS {
                break;
            }
            cur = n.child[key.bit(n.cidr)];
        }
        best
    }

    /// Index of the node for exactly `key/cidr` (key pre-masked), or `NIL`.
    fn find(&self, key: K, cidr: u8) -> u32 {
        let mut cur = self.root;
        while let Some(n) = self.nodes.get(cur as usize) {
            if n.cidr > cidr || key.masked(n.cidr) != n.key {
                return NIL;
            }
            if n.cidr == cidr {
                return cur;
            }
            cur = n.child[key.bit(n.cidr)];
        }
        NIL
    }

    fn insert(&mut self, key: K, cidr: u8, value: T) -> bool {
        if cidr > K::BITS {
            return false;
        }
        let key = key.masked(cidr);
        let mut parent = NIL;
        let mut dir = 0;
        let mut cur = self.root;
        let mut split = None;
        // Descend while the current node's prefix covers the new prefix.
        while let Some(n) = self.nodes.get_mut(cur as usize) {
            let common = key.common_prefix(n.key).min(cidr).min(n.cidr);
            if common < n.cidr {
                split = Some((common, n.key));
                break;
            }
            if n.cidr == cidr {
                if n.value.is_none() {
                    self.len += 1;
                }
                n.value = Some(value);
                return true;
            }
            parent = cur;
            dir = key.bit(n.cidr);
            cur = n.child[dir];
        }

        match split {
            // Fell off the trie: the new prefix becomes a leaf.
            None => {
                let Some(new) = self.alloc(key, cidr, Some(value), parent) else {
                    return false;
                };
                self.set_child(parent, dir, new);
            }
            // The new prefix sits above `cur`: insert it between parent and cur.
            Some((common, cur_key)) if common == cidr => {
                let Some(new) = self.alloc(key, cidr, Some(value), parent) else {
                    return false;
                };
                self.set_child(new, cur_key.bit(cidr), cur);
                self.set_parent(cur, new);
                self.set_child(parent, dir, new);
            }
            // Diverges from `cur` below the new cidr: add a valueless branch node.
            Some((common, cur_key)) => {
                if !self.can_alloc(2) {
                    return false;
                }
                let Some(mid) = self.alloc(key.masked(common), common, None, parent) else {
                    return false;
                };
                let Some(new) = self.alloc(key, cidr, Some(value), mid) else {
                    return false;
                };
                self.set_child(mid, key.bit(common), new);
                self.set_child(mid, cur_key.bit(common), cur);
                self.set_parent(cur, mid);
                self.set_child(parent, dir, mid);
            }
        }
        self.len += 1;
        true
    }

    fn remove(&mut self, key: K, cidr: u8, value: T) -> bool {
        if cidr > K::BITS {
            return false;
        }
        let idx = self.find(key.masked(cidr), cidr);
        self.remove_at(idx, value)
    }

    fn remove_value(&mut self, value: T) {
        #[cfg(test)]
        work::NODES_SCANNED.with(|c| c.set(c.get() + self.nodes.len() as u64));
        let hits: Vec<u32> = (0..self.nodes.len())
            .filter(|&i| self.nodes.get(i).and_then(|n| n.value) == Some(value))
            .filter_map(|i| u32::try_from(i).ok())
            .collect();
        // Removing only ever frees valueless nodes (or the removed node
        // itself), so the remaining collected indices stay valid.
        for idx in hits {
            self.remove_at(idx, value);
        }
    }

    /// Clears the value at `idx` if it equals `value`, then splices out nodes
    /// that no longer carry a value or branch, keeping the trie minimal.
    fn remove_at(&mut self, idx: u32, value: T) -> bool {
        match self.nodes.get_mut(idx as usize) {
            Some(n) if n.value == Some(value) => n.value = None,
            _ => return false,
        }
        self.len -= 1;
        if self.len == 0 {
            // Release all memory rather than keeping a tree of empty nodes.
            *self = Self::default();
            return true;
        }
        let mut cur = idx;
        while let Some(n) = self.nodes.get(cur as usize) {
            let (child, parent) = match n.child {
                _ if n.value.is_some() => break,
                [NIL, c] | [c, NIL] => (c, n.parent),
                _ => break, // two children: still needed as a branch point
            };
            let dir = match self.nodes.get(parent as usize) {
                Some(p) if p.child[1] == cur => 1,
                _ => 0,
            };
            self.set_child(parent, dir, child);
            self.set_parent(child, parent);
            self.release(cur);
            cur = parent;
        }
        true
    }

    fn alloc(&mut self, key: K, cidr: u8, value: Option<T>, parent: u32) -> Option<u32> {
        let node = Node {
            key,
            child: [NIL; 2],
            parent,
            cidr,
            value,
        };
        if let Some(i) = self.free.pop() {
            if let Some(slot) = self.nodes.get_mut(i as usize) {
                *slot = node;
                return Some(i);
            }
        }
        let i = u32::try_from(self.nodes.len()).ok().filter(|&i| i != NIL)?;
        self.nodes.push(node);
        Some(i)
    }

    fn can_alloc(&self, n: usize) -> bool {
        let fresh = (NIL as usize).saturating_sub(self.nodes.len());
        self.free.len().saturating_add(fresh) >= n
    }

    fn release(&mut self, idx: u32) {
        if let Some(n) = self.nodes.get_mut(idx as usize) {
            n.value = None;
            n.child = [NIL; 2];
            n.parent = NIL;
            self.free.push(idx);
        }
    }

    /// Points `parent`'s child slot at `child`; `parent == NIL` means the root.
    fn set_child(&mut self, parent: u32, dir: usize, child: u32) {
        if parent == NIL {
            self.root = child;
        } else if let Some(slot) = self
            .nodes
            .get_mut(parent as usize)
            .and_then(|p| p.child.get_mut(dir))
        {
            *slot = child;
        }
    }

    fn set_parent(&mut self, child: u32, parent: u32) {
        if let Some(n) = self.nodes.get_mut(child as usize) {
            n.parent = parent;
        }
    }

    fn prefixes_of(&self, value: T) -> Vec<(K, u8)> {
        let mut out: Vec<(K, u8)> = self
            .nodes
            .iter()
            .filter(|n| n.value == Some(value))
            .map(|n| (n.key, n.cidr))
            .collect();
        out.sort_unstable();
        out
    }
}

/// Work counted for tests that check how a cost grows, without timing it.
#[cfg(test)]
pub(crate) mod work {
    thread_local! {
        /// Trie nodes looked at by `remove_value` (it scans every node).
        pub static NODES_SCANNED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }

    /// The nodes scanned while `f` ran.
    pub fn nodes_scanned(f: impl FnOnce()) -> u64 {
        let before = NODES_SCANNED.with(|c| c.get());
        f();
        NODES_SCANNED.with(|c| c.get()) - before
    }
}

/// Longest-prefix-match table from IP prefixes to peer ids of type `T`.
#[derive(Debug, Clone)]
pub struct AllowedIps<T> {
    v4: Trie<u32, T>,
    v6: Trie<u128, T>,
}

impl<T> Default for AllowedIps<T> {
    fn default() -> Self {
        AllowedIps {
            v4: Trie::default(),
            v6: Trie::default(),
        }
    }
}

impl<T: Copy + Eq> AllowedIps<T> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Inserts `addr/cidr` (host bits are masked off first). If the exact
    /// prefix already exists its value is replaced: in WireGuard a prefix
    /// moves to whichever peer claimed it last. Returns false, changing
    /// nothing, if `cidr` exceeds 32 (IPv4) or 128 (IPv6).
    pub fn insert(&mut self, addr: IpAddr, cidr: u8, value: T) -> bool {
        match addr {
            IpAddr::V4(a) => self.v4.insert(u32::from(a), cidr, value),
            IpAddr::V6(a) => self.v6.insert(u128::from(a), cidr, value),
        }
    }

    /// Removes the exact prefix only if it currently maps to `value`, so a
    /// stale removal for a peer cannot take away a prefix another peer owns.
    pub fn remove(&mut self, addr: IpAddr, cidr: u8, value: T) -> bool {
        match addr {
            IpAddr::V4(a) => self.v4.remove(u32::from(a), cidr, value),
            IpAddr::V6(a) => self.v6.remove(u128::from(a), cidr, value),
        }
    }

    /// Removes every prefix that maps to `value`.
    pub fn remove_value(&mut self, value: T) {
        self.v4.remove_value(value);
        self.v6.remove_value(value);
    }

    /// Longest-prefix lookup. IPv4-mapped IPv6 addresses are looked up as
    /// IPv6, matching what the inner packet header actually says.
    #[cfg(any(test, feature = "internals"))]
    pub fn lookup(&self, addr: IpAddr) -> Option<T> {
        match addr {
            IpAddr::V4(a) => self.v4.lookup(u32::from(a)),
            IpAddr::V6(a) => self.v6.lookup(u128::from(a)),
        }
    }

    /// Lookup straight from packet header bytes: 4 bytes are IPv4, 16 bytes
    /// IPv6; any other length yields `None`.
    pub fn lookup_bytes(&self, addr: &[u8]) -> Option<T> {
        if let Ok(b) = <[u8; 4]>::try_from(addr) {
            self.v4.lookup(u32::from_be_bytes(b))
        } else if let Ok(b) = <[u8; 16]>::try_from(addr) {
            self.v6.lookup(u128::from_be_bytes(b))
        } else {
            None
        }
    }

    /// All prefixes of `value`: IPv4 first, then IPv6, each sorted by
    /// (address, cidr) ascending, addresses masked.
    pub fn prefixes_of(&self, value: T) -> Vec<(IpAddr, u8)> {
        let v4 = self.v4.prefixes_of(value).into_iter();
        let v6 = self.v6.prefixes_of(value).into_iter();
        v4.map(|(k, c)| (IpAddr::V4(Ipv4Addr::from(k)), c))
            .chain(v6.map(|(k, c)| (IpAddr::V6(Ipv6Addr::from(k)), c)))
            .collect()
    }

    /// Number of prefixes stored.
    #[cfg(any(test, feature = "internals"))]
    pub fn len(&self) -> usize {
        self.v4.len + self.v6.len
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn clear(&mut self) {
        *self = Self::default();
    }
}

/// `addr/len` with a mandatory prefix length, which is plain decimal without leading zeros (as
/// Go's `netip.ParsePrefix` wants) and at most 32 or 128. Host bits may be set.
pub fn parse_prefix(s: &str) -> Option<(IpAddr, u8)> {
    let (addr, len) = s.split_once('/')?;
    let addr: IpAddr = addr.parse().ok()?;
    let max: u8 = if addr.is_ipv4() { 32 } else { 128 };
    if len.is_empty() || len.len() > 3 || (len.len() > 1 && len.starts_with('0')) {
        return None;
    }
    if !len.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let len: u8 = len.parse().ok()?;
    (len <= max).then_some((addr, len))
}

/// [`parse_prefix`], except that a bare address is a host prefix (/32 or /128), as OpenWrt's
/// WireGuard handlers read `addresses` and `allowed_ips`.
pub fn parse_prefix_or_host(s: &str) -> Option<(IpAddr, u8)> {
    if s.contains('/') {
        return parse_prefix(s);
    }
    let addr: IpAddr = s.parse().ok()?;
    Some((addr, if addr.is_ipv4() { 32 } else { 128 }))
}

#[cfg(test)]
mod tests {
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
}
