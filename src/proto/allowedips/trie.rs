//! The path-compressed binary trie of one address family, its nodes in an arena.

#[cfg(test)]
use super::work;

/// Index meaning "no node". Never a valid arena index because `alloc` refuses it.
pub(super) const NIL: u32 = u32::MAX;

/// Fixed-width big-endian key (`u32` for IPv4, `u128` for IPv6), so one trie
/// implementation serves both families without storing v4 keys in 16 bytes.
pub(super) trait Key: Copy + Eq + Ord {
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
pub(super) struct Node<K, T> {
    /// Prefix bits, already masked to `cidr`.
    pub(super) key: K,
    pub(super) child: [u32; 2],
    /// Kept so removal can walk upwards and splice out redundant nodes.
    pub(super) parent: u32,
    pub(super) cidr: u8,
    /// `None` for pure branching nodes (and for slots on the free list).
    pub(super) value: Option<T>,
}

#[derive(Debug, Clone)]
pub(super) struct Trie<K, T> {
    pub(super) nodes: Vec<Node<K, T>>,
    /// Freed arena slots, reused before the arena grows, so churn does not
    /// accumulate garbage beyond the peak size.
    pub(super) free: Vec<u32>,
    pub(super) root: u32,
    /// Number of nodes holding a value.
    pub(super) len: usize,
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
    pub(super) fn lookup(&self, key: K) -> Option<T> {
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
    pub(super) fn find(&self, key: K, cidr: u8) -> u32 {
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

    pub(super) fn insert(&mut self, key: K, cidr: u8, value: T) -> bool {
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

    pub(super) fn remove(&mut self, key: K, cidr: u8, value: T) -> bool {
        if cidr > K::BITS {
            return false;
        }
        let idx = self.find(key.masked(cidr), cidr);
        self.remove_at(idx, value)
    }

    pub(super) fn remove_value(&mut self, value: T) {
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

    pub(super) fn prefixes_of(&self, value: T) -> Vec<(K, u8)> {
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
