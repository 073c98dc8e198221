//! Cryptokey routing table: maps IP prefixes to peers with longest-prefix match.
//!
//! Each address family is a path-compressed binary trie whose nodes live in a
//! `Vec` arena addressed by `u32` indices. Compared with one heap allocation
//! per node this halves the per-node footprint on 64-bit targets, keeps nodes
//! cache-friendly and makes `Clone` a couple of memcpys. A lookup visits at
//! most one node per key bit, independent of how many peers exist.

mod parse;
#[cfg(test)]
mod tests;
mod trie;

pub use parse::{parse_prefix, parse_prefix_or_host};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use trie::Trie;

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
