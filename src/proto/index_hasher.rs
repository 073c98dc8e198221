//! The hasher of the receiver-index map: one rotate and one multiply instead of SipHash.
//!
//! SipHash guards a table against keys an attacker picks. This table's keys are receiver
//! indices this device drew from its CSPRNG (`Device::new_index`), so they are already
//! uniform; a packet can only look one up, never insert one. The low bits of an index are the
//! device's fixed tag (`INDEX_TAG_MASK`), hence the rotation: the table's bucket comes from
//! the low bits of the hash, which must come from the random part.

use crate::proto::wire::INDEX_TAG_MASK;
use std::hash::{BuildHasherDefault, Hasher};

const TAG_BITS: u32 = INDEX_TAG_MASK.count_ones();

/// Hashes the one `u32` it is given (any other input is folded in the same way).
#[derive(Default)]
pub struct IndexHasher(u32);

impl Hasher for IndexHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u32::from(b);
        }
    }

    fn write_u32(&mut self, v: u32) {
        self.0 ^= v;
    }

    fn finish(&self) -> u64 {
        // An odd constant spreads the random bits over the whole word, so the control bits
        // (the top ones) vary as much as the bucket bits.
        let h = self.0.rotate_right(TAG_BITS).wrapping_mul(0x9e37_79b9);
        u64::from(h) << 32 | u64::from(h)
    }
}

pub type BuildIndexHasher = BuildHasherDefault<IndexHasher>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{HashMap, HashSet};
    use std::hash::BuildHasher;

    #[test]
    fn indices_sharing_a_tag_spread_over_buckets() {
        let build = BuildIndexHasher::default();
        let tag = 0x5a5;
        let low: HashSet<u64> = (0..4096u32)
            .map(|i| build.hash_one((i.wrapping_mul(0x0010_0001) << 12) | tag) & 0xfff)
            .collect();
        // 4096 draws into 4096 buckets: a uniform hash fills about 63% of them.
        assert!(low.len() > 2000, "only {} distinct buckets", low.len());
    }

    #[test]
    fn a_map_with_it_finds_what_it_holds() {
        let mut m: HashMap<u32, u32, BuildIndexHasher> = HashMap::default();
        for i in 0..1000u32 {
            m.insert((i << 12) | 7, i);
        }
        assert!((0..1000u32).all(|i| m.get(&((i << 12) | 7)) == Some(&i)));
        assert_eq!(m.get(&8), None);
    }
}
