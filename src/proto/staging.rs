//! Packets waiting for a handshake: every peer's, in one store with a device-wide bound, in
//! one ring that holds no memory while nothing waits. The bounds and why:
//! docs/architecture.md, "Staging".

use crate::proto::peer::PeerId;
use std::collections::{HashMap, VecDeque};

/// Packets kept per peer (the Linux driver's MAX_STAGED_PACKETS).
pub const MAX_PER_PEER: usize = 128;
/// Packets kept for the whole device, including slots of packets already sent whose ring
/// space is not yet reclaimed (they are behind an older packet still waiting).
pub const MAX_PACKETS: usize = 1024;
/// Bytes of the ring: about 700 full-size packets, five peers' worth of a TCP window.
pub const MAX_BYTES: usize = 1 << 20;

struct StagedPacket {
    peer: PeerId,
    start: usize,
    len: usize,
    /// False once sent, dropped or given up; the ring space returns when it reaches the front.
    live: bool,
}

#[derive(Default)]
pub struct Staging {
    /// The bytes; capacity MAX_BYTES once in use, length the furthest point ever written.
    ring: Vec<u8>,
    /// Every slot in the order staged, oldest first; `slots[k]` has number `first + k`.
    slots: VecDeque<StagedPacket>,
    first: u64,
    /// Where the next packet's bytes go.
    tail: usize,
    /// Each peer's live slot numbers, oldest first (absent: none).
    queues: HashMap<PeerId, VecDeque<u64>>,
    live: usize,
}

impl Staging {
    /// Keeps a copy of `packet` for `peer`. Returns how many staged packets were dropped to
    /// make room (the peer's oldest, or the device's), or 1 if `packet` itself cannot be kept.
    pub fn push(&mut self, peer: PeerId, packet: &[u8]) -> usize {
        let len = packet.len();
        if len >= MAX_BYTES {
            return 1;
        }
        let mut dropped = 0;
        if self
            .queues
            .get(&peer)
            .is_some_and(|q| q.len() >= MAX_PER_PEER)
        {
            dropped += usize::from(self.drop_oldest_of(peer));
        }
        let start = loop {
            if self.slots.len() < MAX_PACKETS {
                if let Some(start) = self.room_for(len) {
                    break start;
                }
            }
            dropped += usize::from(self.drop_front());
        };
        if self.ring.capacity() == 0 {
            self.ring.reserve_exact(MAX_BYTES);
        }
        let end = start + len;
        if end <= self.ring.len() {
            self.ring[start..end].copy_from_slice(packet);
        } else {
            // Written in order: a packet past the written part starts where it ends.
            self.ring.truncate(start);
            self.ring.extend_from_slice(packet);
        }
        self.tail = end;
        let number = self.first + self.slots.len() as u64;
        self.slots.push_back(StagedPacket {
            peer,
            start,
            len,
            live: true,
        });
        self.queues.entry(peer).or_default().push_back(number);
        self.live += 1;
        dropped
    }

    /// Hands `peer`'s oldest packet to `f` and forgets it.
    pub fn pop<R>(&mut self, peer: PeerId, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        let number = self.take_oldest(peer)?;
        let slot = self.slot(number)?;
        let r = f(&self.ring[slot.start..slot.start + slot.len]);
        self.reclaim();
        Some(r)
    }

    /// Forgets every packet of `peer` (removed, or its handshake gave up); returns how many.
    pub fn clear(&mut self, peer: PeerId) -> usize {
        let Some(q) = self.queues.remove(&peer) else {
            return 0;
        };
        for &number in &q {
            self.kill(number);
        }
        self.reclaim();
        q.len()
    }

    pub fn has(&self, peer: PeerId) -> bool {
        self.queues.contains_key(&peer)
    }

    /// Packets waiting, for the whole device.
    pub fn len(&self) -> usize {
        self.live
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Bytes of memory held for staging (the ring's written part and the bookkeeping).
    #[cfg(any(test, feature = "internals"))]
    pub fn held_bytes(&self) -> usize {
        self.ring.len()
            + self.slots.capacity() * std::mem::size_of::<StagedPacket>()
            + self.queues.values().map(VecDeque::capacity).sum::<usize>() * 8
    }

    fn slot(&self, number: u64) -> Option<&StagedPacket> {
        let k = usize::try_from(number.checked_sub(self.first)?).ok()?;
        self.slots.get(k)
    }

    fn kill(&mut self, number: u64) {
        let Some(k) = number
            .checked_sub(self.first)
            .and_then(|k| usize::try_from(k).ok())
        else {
            return;
        };
        if let Some(s) = self.slots.get_mut(k) {
            if s.live {
                s.live = false;
                self.live -= 1;
            }
        }
    }

    /// Removes `peer`'s oldest slot number from its queue and marks the slot dead (its bytes
    /// stay readable until `reclaim`).
    fn take_oldest(&mut self, peer: PeerId) -> Option<u64> {
        let q = self.queues.get_mut(&peer)?;
        let number = q.pop_front()?;
        if q.is_empty() {
            self.queues.remove(&peer);
        }
        self.kill(number);
        Some(number)
    }

    fn drop_oldest_of(&mut self, peer: PeerId) -> bool {
        let dropped = self.take_oldest(peer).is_some();
        self.reclaim();
        dropped
    }

    /// Frees the front slot (dropping its packet if still waiting); true if it was waiting.
    fn drop_front(&mut self) -> bool {
        let Some(front) = self.slots.front() else {
            return false;
        };
        let dropped = front.live;
        if dropped {
            // The device's oldest waiting packet is its peer's oldest too.
            let peer = front.peer;
            self.take_oldest(peer);
        } else {
            self.slots.pop_front();
            self.first += 1;
        }
        self.reclaim();
        dropped
    }

    /// Pops dead slots off the front; with nothing left, frees the ring and the bookkeeping.
    fn reclaim(&mut self) {
        while self.slots.front().is_some_and(|s| !s.live) {
            self.slots.pop_front();
            self.first += 1;
        }
        if self.slots.is_empty() {
            self.ring = Vec::new();
            self.slots = VecDeque::new();
            self.queues = HashMap::new();
            self.tail = 0;
        }
    }

    /// Where `len` bytes fit without touching a live or unreclaimed slot, if anywhere.
    fn room_for(&self, len: usize) -> Option<usize> {
        let Some(front) = self.slots.front() else {
            return Some(0);
        };
        let head = front.start;
        if self.tail > head {
            // Used: head..tail. Free: tail..MAX_BYTES, then 0..head.
            if MAX_BYTES - self.tail >= len {
                return Some(self.tail);
            }
            // Strictly below head, so that a full ring never looks empty (tail == head).
            return (len < head).then_some(0);
        }
        // Wrapped: used head..written end and 0..tail; free tail..head.
        (self.tail + len < head).then_some(self.tail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(tag: u32, len: usize) -> Vec<u8> {
        let mut p = vec![0u8; len];
        for (i, b) in p.iter_mut().enumerate() {
            *b = (tag as usize * 31 + i) as u8;
        }
        p
    }

    fn pop_vec(s: &mut Staging, peer: usize) -> Option<Vec<u8>> {
        s.pop(PeerId(peer), <[u8]>::to_vec)
    }

    #[test]
    fn per_peer_order_and_bound() {
        let mut s = Staging::default();
        let mut dropped = 0;
        for i in 0..200u32 {
            dropped += s.push(PeerId(1), &packet(i, 100));
        }
        assert_eq!(dropped, 200 - MAX_PER_PEER);
        assert_eq!(s.len(), MAX_PER_PEER);
        for i in (200 - MAX_PER_PEER as u32)..200 {
            assert_eq!(pop_vec(&mut s, 1), Some(packet(i, 100)));
        }
        assert_eq!(pop_vec(&mut s, 1), None);
        assert!(s.is_empty());
        assert_eq!(s.held_bytes(), 0, "nothing held once drained");
    }

    #[test]
    fn device_bound_drops_the_oldest_packet_of_any_peer() {
        let mut s = Staging::default();
        let peers = 1000;
        let mut dropped = 0;
        for round in 0..4u32 {
            for p in 0..peers {
                dropped += s.push(PeerId(p), &packet(round * 10_000 + p as u32, 1420));
            }
        }
        let kept = s.len();
        assert!(kept <= MAX_PACKETS && kept * 1420 < MAX_BYTES, "{kept}");
        assert_eq!(dropped + kept, 4 * peers);
        assert!(
            s.held_bytes() <= MAX_BYTES + 64 * 1024,
            "{}",
            s.held_bytes()
        );
        // What is left is the newest: the last round's latest peers.
        let newest = peers - 1;
        assert_eq!(
            pop_vec(&mut s, newest),
            Some(packet(30_000 + newest as u32, 1420))
        );
        assert_eq!(pop_vec(&mut s, 0), None, "peer 0's packets were the oldest");
    }

    #[test]
    fn count_bound_with_small_packets() {
        let mut s = Staging::default();
        let mut dropped = 0;
        for i in 0..5000u32 {
            dropped += s.push(PeerId(i as usize % 100), &packet(i, 20));
        }
        assert_eq!(s.len(), MAX_PACKETS);
        assert_eq!(dropped, 5000 - MAX_PACKETS);
    }

    #[test]
    fn wraps_around_and_keeps_every_byte() {
        let mut s = Staging::default();
        // Two peers take turns; one drains as it goes, so the ring wraps many times while
        // the other's packets stay behind.
        let mut expect_b = VecDeque::new();
        for i in 0..20_000u32 {
            let len = 40 + (i as usize * 7919) % 1400;
            // Room may come from dropping peer 1's oldest, never peer 0's one packet.
            s.push(PeerId(0), &packet(i, len));
            assert_eq!(pop_vec(&mut s, 0), Some(packet(i, len)));
            if i % 500 == 0 {
                let p = packet(i + 1_000_000, len);
                s.push(PeerId(1), &p);
                expect_b.push_back(p);
            }
        }
        // Peer 1's oldest packets pin the ring; peer 0's sent ones are reclaimed behind them,
        // so some of peer 1's were dropped as the device's oldest, never corrupted.
        while let Some(p) = pop_vec(&mut s, 1) {
            while expect_b.front().is_some_and(|e| *e != p) {
                expect_b.pop_front();
            }
            assert_eq!(expect_b.pop_front(), Some(p));
        }
        assert!(s.is_empty());
    }

    #[test]
    fn clear_forgets_a_peer_and_frees_memory() {
        let mut s = Staging::default();
        for i in 0..50u32 {
            s.push(PeerId(3), &packet(i, 1000));
            s.push(PeerId(4), &packet(i, 1000));
        }
        assert_eq!(s.clear(PeerId(3)), 50);
        assert!(!s.has(PeerId(3)));
        assert_eq!(s.len(), 50);
        assert_eq!(pop_vec(&mut s, 4), Some(packet(0, 1000)));
        assert_eq!(s.clear(PeerId(4)), 49);
        assert_eq!(s.held_bytes(), 0);
        // A reused peer id starts empty.
        assert_eq!(pop_vec(&mut s, 3), None);
    }

    #[test]
    fn oversized_packet_is_refused() {
        let mut s = Staging::default();
        assert_eq!(s.push(PeerId(0), &vec![0; MAX_BYTES]), 1);
        assert!(s.is_empty());
        assert_eq!(s.push(PeerId(0), &vec![1; 65535]), 0);
        assert_eq!(pop_vec(&mut s, 0).map(|p| p.len()), Some(65535));
    }
}
