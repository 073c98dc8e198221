//! Anti-replay sliding window for transport data counters (RFC 6479 bitmap).
//!
//! The bitmap is a ring of 64-bit words; bit `c % 64` of word
//! `(c / 64) % RING_WORDS` records counter `c`. When a newer counter arrives
//! only the words the window slides over are zeroed, so advancing costs at
//! most one store per word instead of shifting the whole bitmap. One word
//! is kept as slack so the current word never aliases the oldest one.

/// Counters at or above this are never accepted; the sender must rekey first.
pub const REJECT_AFTER_MESSAGES: u64 = u64::MAX - (1u64 << 13);

const WORD_BITS: u64 = u64::BITS as u64;
/// Same ring size as the Linux implementation: 8192 bits, 1 KiB per keypair.
const RING_WORDS: usize = 128;

/// How far behind the greatest accepted counter a counter may be and still
/// be accepted: `counter` is acceptable iff `greatest - counter <= WINDOW_SIZE`
/// (and it has not been seen). Equals 8128.
pub const WINDOW_SIZE: u64 = (RING_WORDS as u64 - 1) * WORD_BITS;
const _: () = assert!(WINDOW_SIZE >= 2048, "window must tolerate heavy reordering");

#[derive(Clone, Debug)]
pub struct ReplayWindow {
    /// Greatest accepted counter plus one; 0 means nothing accepted yet, which
    /// lets the all-zero value be a valid fresh window.
    next: u64,
    ring: [u64; RING_WORDS],
}

impl Default for ReplayWindow {
    fn default() -> Self {
        ReplayWindow {
            next: 0,
            ring: [0; RING_WORDS],
        }
    }
}

/// Ring slot and bit mask for a counter.
fn slot(counter: u64) -> (usize, u64) {
    let word = (counter / WORD_BITS) as usize % RING_WORDS;
    (word, 1u64 << (counter % WORD_BITS))
}

impl ReplayWindow {
    /// Whether `accept(counter)` would succeed, without changing state. Used
    /// to drop replays before spending CPU on decryption.
    pub fn would_accept(&self, counter: u64) -> bool {
        if counter >= REJECT_AFTER_MESSAGES {
            return false;
        }
        if counter >= self.next {
            // Newer than anything seen (its stale word would be cleared).
            return true;
        }
        // counter < next here, so next >= 1 and greatest = next - 1 >= counter.
        // No overflow: counter < REJECT_AFTER_MESSAGES leaves ample headroom.
        if counter + WINDOW_SIZE < self.next - 1 {
            return false;
        }
        let (word, mask) = slot(counter);
        self.ring.get(word).is_some_and(|w| w & mask == 0)
    }

    /// Checks and records `counter`; call only once the packet has
    /// authenticated, or a forger could advance the window. Returns false for
    /// a counter already seen, one more than `WINDOW_SIZE` behind the greatest
    /// accepted counter, or one `>= REJECT_AFTER_MESSAGES`.
    pub fn accept(&mut self, counter: u64) -> bool {
        if !self.would_accept(counter) {
            return false;
        }
        if counter >= self.next {
            if self.next > 0 {
                // Zero the words between the old greatest and the new one;
                // beyond a full ring everything is stale anyway.
                let cur = (self.next - 1) / WORD_BITS;
                let new = counter / WORD_BITS;
                let steps = (new - cur).min(RING_WORDS as u64);
                for i in 1..=steps {
                    let idx = (cur.wrapping_add(i) % RING_WORDS as u64) as usize;
                    if let Some(w) = self.ring.get_mut(idx) {
                        *w = 0;
                    }
                }
            }
            self.next = counter + 1;
        }
        let (word, mask) = slot(counter);
        if let Some(w) = self.ring.get_mut(word) {
            *w |= mask;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestRng;
    use std::collections::BTreeSet;

    const W: u64 = WINDOW_SIZE;
    const RING_BITS: u64 = RING_WORDS as u64 * WORD_BITS;

    #[test]
    fn window_is_large_enough() {
        assert_eq!(WINDOW_SIZE, 8128);
        assert_eq!(REJECT_AFTER_MESSAGES, u64::MAX - 8192);
    }

    /// Numbered cases in the spirit of the Linux WireGuard counter selftest.
    /// `None` as the counter starts a fresh window.
    #[test]
    fn table() {
        let cases: &[(Option<u64>, bool)] = &[
            (Some(0), true),
            (Some(1), true),
            (Some(1), false),
            (Some(0), false),
            (Some(9), true),
            (Some(8), true),
            (Some(7), true),
            (Some(7), false),
            (Some(W + 9), true), // window now covers [9, W + 9]
            (Some(10), true),    // inside, unseen
            (Some(9), false),    // at the edge but already seen
            (Some(8), false),    // one past the edge
            (Some(W + 9), false),
            (Some(W + 8), true),
            // Exact edge on a fresh window.
            (None, false),
            (Some(W), true),
            (Some(0), true), // greatest - 0 == W: accepted
            (Some(0), false),
            (None, false),
            (Some(W + 1), true),
            (Some(0), false), // one past the edge
            (Some(1), true),
            // Jump forward within one ring: seen bits that are still inside
            // the window survive, the words slid over are cleared.
            (None, false),
            (Some(RING_BITS - 1), true), // last bit of the last word
            (Some(RING_BITS), true),     // wraps onto word 0
            (Some(RING_BITS - 1), false),
            (Some(64), true),
            (Some(63), false), // too old: RING_BITS - 63 > W
            // Jump by more than the whole ring clears everything.
            (Some(RING_BITS * 5 + 3), true),
            (Some(RING_BITS * 5 + 3 - W), true),
            (Some(RING_BITS * 5 + 3 - W - 1), false),
            (Some(RING_BITS * 5 + 2), true),
            (Some(RING_BITS * 5 + 2), false),
            (Some(RING_BITS * 5 + 1), true),
            (Some(RING_BITS * 5), true), // same slot and bit as 8192 above
            // Near the rekey limit.
            (None, false),
            (Some(REJECT_AFTER_MESSAGES - 1), true),
            (Some(REJECT_AFTER_MESSAGES), false),
            (Some(REJECT_AFTER_MESSAGES - 1), false),
            (Some(REJECT_AFTER_MESSAGES - 2), true),
            (Some(REJECT_AFTER_MESSAGES - 1 - W), true),
            (Some(REJECT_AFTER_MESSAGES - 2 - W), false),
            (Some(u64::MAX), false),
            (Some(0), false),
            (None, false),
            (Some(REJECT_AFTER_MESSAGES), false),
            (Some(u64::MAX), false),
            (Some(0), true), // rejected counters did not move the window
        ];
        let mut w = ReplayWindow::default();
        for (i, &(counter, want)) in cases.iter().enumerate() {
            match counter {
                None => w = ReplayWindow::default(),
                Some(c) => {
                    assert_eq!(w.would_accept(c), want, "case {} ({c}) peek", i + 1);
                    assert_eq!(w.accept(c), want, "case {} ({c})", i + 1);
                }
            }
        }
    }

    #[test]
    fn stale_words_are_cleared() {
        let mut w = ReplayWindow::default();
        for c in 0..200 {
            assert!(w.accept(c));
        }
        // Word 129 shares a ring slot with word 1; words 4..=129 are cleared.
        let top = RING_BITS + 64;
        assert!(w.accept(top));
        for c in 128..200 {
            assert!(!w.would_accept(c), "{c} was seen");
        }
        for c in 200..256 {
            assert!(w.accept(c), "{c} is new");
        }
        assert!(!w.accept(127), "older than the window");
        for c in 256..top {
            assert!(w.accept(c), "{c} is new");
        }
    }

    #[test]
    fn would_accept_does_not_mutate() {
        let mut w = ReplayWindow::default();
        assert!(w.would_accept(5));
        assert!(w.would_accept(5));
        assert!(w.accept(5));
        assert!(!w.would_accept(5));
        assert!(w.would_accept(1_000_000));
        assert!(w.would_accept(4));
        assert!(w.accept(4));
    }

    #[test]
    fn in_order_long_run() {
        let mut w = ReplayWindow::default();
        for c in 0..3 * RING_BITS {
            assert!(w.accept(c));
            assert!(!w.accept(c));
        }
    }

    /// Reference: the set of accepted counters plus the greatest one.
    #[derive(Default)]
    struct Model {
        seen: BTreeSet<u64>,
        greatest: Option<u64>,
    }

    impl Model {
        fn accept(&mut self, c: u64) -> bool {
            if c >= REJECT_AFTER_MESSAGES || self.seen.contains(&c) {
                return false;
            }
            if matches!(self.greatest, Some(g) if g > c && g - c > W) {
                return false;
            }
            self.seen.insert(c);
            self.greatest = Some(self.greatest.map_or(c, |g| g.max(c)));
            true
        }
    }

    #[test]
    fn differential_against_naive_model() {
        for seed in 1..=20u64 {
            let mut rng = TestRng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let mut w = ReplayWindow::default();
            let mut m = Model::default();
            let mut base = match seed % 3 {
                0 => 0,
                1 => rng.below(1 << 40),
                _ => REJECT_AFTER_MESSAGES - 6 * RING_BITS,
            };
            for _ in 0..40 {
                // A batch of counters around `base`, shuffled, with repeats,
                // spanning up to three rings so some fall out of the window.
                let span = [64, 2048, W, RING_BITS, 3 * RING_BITS][rng.below(5) as usize];
                let mut batch: Vec<u64> = (0..300)
                    .map(|_| base.saturating_add(rng.below(span)))
                    .collect();
                for i in (1..batch.len()).rev() {
                    let j = rng.below(i as u64 + 1) as usize;
                    batch.swap(i, j);
                }
                for &c in &batch {
                    let want = m.accept(c);
                    assert_eq!(w.would_accept(c), want, "seed {seed} peek {c}");
                    assert_eq!(w.accept(c), want, "seed {seed} counter {c}");
                }
                base = match rng.below(10) {
                    0 => base.saturating_add(rng.below(1 << 20)),
                    1 => base.saturating_sub(rng.below(RING_BITS)),
                    _ => base.saturating_add(rng.below(span)),
                };
            }
        }
    }
}
