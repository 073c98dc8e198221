//! Transport keypairs and their previous/current/next rotation (whitepaper section 5.4.6,
//! and the Linux driver's slot rules).
//!
//! The initiator may use a new keypair at once, so it becomes `current`. The responder must
//! wait for key confirmation (the first data packet under the new keys), so its new keypair
//! waits in `next` and is promoted when that packet arrives.

use crate::crypto::SecretKey;
use crate::proto::noise::SessionKeys;
use crate::proto::replay::ReplayWindow;
use crate::proto::replay::REJECT_AFTER_MESSAGES;
use crate::proto::timers::{
    KEEPALIVE_TIMEOUT, REJECT_AFTER_TIME, REKEY_AFTER_MESSAGES, REKEY_AFTER_TIME, REKEY_TIMEOUT,
};
use std::time::Instant;

pub struct Keypair {
    pub send_key: SecretKey,
    pub recv_key: SecretKey,
    /// Next counter to use when sending.
    pub send_counter: u64,
    pub replay: ReplayWindow,
    /// Creation + REKEY_AFTER_TIME, + REJECT_AFTER_TIME and the receiving side's
    /// last-minute point (`None`: beyond the clock's range): the per-packet checks compare
    /// instants instead of subtracting them.
    rekey_at: Option<Instant>,
    reject_at: Option<Instant>,
    last_minute_at: Option<Instant>,
    pub initiator: bool,
    pub local_index: u32,
    pub remote_index: u32,
}

impl Keypair {
    pub fn new(keys: SessionKeys, now: Instant) -> Box<Self> {
        Box::new(Keypair {
            send_key: keys.send,
            recv_key: keys.recv,
            send_counter: 0,
            replay: ReplayWindow::default(),
            rekey_at: now.checked_add(REKEY_AFTER_TIME),
            reject_at: now.checked_add(REJECT_AFTER_TIME),
            last_minute_at: now.checked_add(REJECT_AFTER_TIME - KEEPALIVE_TIMEOUT - REKEY_TIMEOUT),
            initiator: keys.initiator,
            local_index: keys.local_index,
            remote_index: keys.remote_index,
        })
    }

    /// Too old to send or receive with (REJECT_AFTER_TIME).
    pub fn expired(&self, now: Instant) -> bool {
        self.reject_at.is_some_and(|t| now >= t)
    }

    /// Receiving side of keep_key_fresh: old enough that the initiator renews the session
    /// before it expires (REJECT_AFTER_TIME - KEEPALIVE_TIMEOUT - REKEY_TIMEOUT).
    pub fn in_last_minute(&self, now: Instant) -> bool {
        self.last_minute_at.is_some_and(|t| now >= t)
    }

    /// Usable for sending: not too old and nonces left.
    pub fn can_send(&self, now: Instant) -> bool {
        !self.expired(now) && self.send_counter < REJECT_AFTER_MESSAGES
    }

    /// Sending side of keep_key_fresh: time to start a new handshake.
    pub fn wants_rekey_on_send(&self, now: Instant) -> bool {
        self.send_counter > REKEY_AFTER_MESSAGES
            || (self.initiator && self.rekey_at.is_some_and(|t| now >= t))
    }
}

#[derive(Default)]
pub struct Keypairs {
    pub previous: Option<Box<Keypair>>,
    pub current: Option<Box<Keypair>>,
    pub next: Option<Box<Keypair>>,
}

impl Keypairs {
    /// Installs a fresh keypair; returns the local indices of keypairs that were dropped.
    pub fn insert(&mut self, kp: Box<Keypair>) -> [Option<u32>; 2] {
        let idx = |k: Option<Box<Keypair>>| k.map(|k| k.local_index);
        if kp.initiator {
            if self.next.is_some() {
                // A confirmed-never keypair from an earlier responder role: keep it as
                // previous (packets may still arrive under it), drop current.
                let dropped_prev = idx(self.previous.take());
                self.previous = self.next.take();
                let dropped_cur = idx(self.current.take());
                self.current = Some(kp);
                [dropped_prev, dropped_cur]
            } else {
                let dropped = idx(self.previous.take());
                self.previous = self.current.take();
                self.current = Some(kp);
                [dropped, None]
            }
        } else {
            let dropped_next = idx(self.next.take());
            let dropped_prev = idx(self.previous.take());
            self.next = Some(kp);
            [dropped_next, dropped_prev]
        }
    }

    /// A packet authenticated under `next`: promote it. Returns the dropped local index, and
    /// whether a promotion happened (which is the responder's handshake completion).
    pub fn confirm(&mut self, local_index: u32) -> (Option<u32>, bool) {
        if self.next.as_ref().map(|k| k.local_index) != Some(local_index) {
            return (None, false);
        }
        let dropped = self.previous.take().map(|k| k.local_index);
        self.previous = self.current.take();
        self.current = self.next.take();
        (dropped, true)
    }

    pub fn find_mut(&mut self, local_index: u32) -> Option<&mut Keypair> {
        [&mut self.current, &mut self.previous, &mut self.next]
            .into_iter()
            .flatten()
            .find(|k| k.local_index == local_index)
            .map(|b| &mut **b)
    }

    /// Removes every keypair, returning their local indices.
    pub fn clear(&mut self) -> [Option<u32>; 3] {
        [
            self.previous.take().map(|k| k.local_index),
            self.current.take().map(|k| k.local_index),
            self.next.take().map(|k| k.local_index),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zeroize::Zeroizing;

    fn kp(index: u32, initiator: bool, now: Instant) -> Box<Keypair> {
        Keypair::new(
            SessionKeys {
                send: Zeroizing::new([index as u8; 32]),
                recv: Zeroizing::new([0; 32]),
                local_index: index,
                remote_index: 100 + index,
                initiator,
            },
            now,
        )
    }

    fn slots(k: &Keypairs) -> [Option<u32>; 3] {
        [
            k.previous.as_ref().map(|k| k.local_index),
            k.current.as_ref().map(|k| k.local_index),
            k.next.as_ref().map(|k| k.local_index),
        ]
    }

    #[test]
    fn rotation_follows_the_roles() {
        let now = Instant::now();
        let mut k = Keypairs::default();
        assert_eq!(k.insert(kp(1, true, now)), [None, None]);
        assert_eq!(slots(&k), [None, Some(1), None]);
        assert_eq!(k.insert(kp(2, true, now)), [None, None]);
        assert_eq!(slots(&k), [Some(1), Some(2), None]);
        assert_eq!(k.insert(kp(3, false, now)), [None, Some(1)]);
        assert_eq!(slots(&k), [None, Some(2), Some(3)]);
        assert_eq!(k.confirm(2), (None, false));
        assert_eq!(k.confirm(3), (None, true));
        assert_eq!(slots(&k), [Some(2), Some(3), None]);
        assert_eq!(k.insert(kp(4, false, now)), [None, Some(2)]);
        assert_eq!(k.insert(kp(5, true, now)), [None, Some(3)]);
        assert_eq!(slots(&k), [Some(4), Some(5), None]);
        assert!(k.find_mut(4).is_some() && k.find_mut(3).is_none());
        assert_eq!(k.clear(), [Some(4), Some(5), None]);
    }

    #[test]
    fn send_limits() {
        let now = Instant::now();
        let mut k = kp(1, true, now);
        assert!(k.can_send(now) && !k.wants_rekey_on_send(now));
        assert!(k.wants_rekey_on_send(now + REKEY_AFTER_TIME));
        assert!(!k.can_send(now + REJECT_AFTER_TIME));
        k.send_counter = REKEY_AFTER_MESSAGES + 1;
        assert!(k.wants_rekey_on_send(now));
        k.send_counter = REJECT_AFTER_MESSAGES;
        assert!(!k.can_send(now));
        let r = kp(2, false, now);
        assert!(
            !r.wants_rekey_on_send(now + REKEY_AFTER_TIME),
            "only the initiator rekeys on age"
        );
    }
}
