//! Protocol timers, one deadline per rule, named after the Linux driver's timers (the rules:
//! docs/architecture.md, "Protocol timers"). The data path calls the event hooks below;
//! `Device::update_timers` fires what expired. Deadlines are plain `Option<Instant>`s: nothing
//! here reads a clock or sleeps.

use std::time::{Duration, Instant};

pub const REKEY_AFTER_MESSAGES: u64 = 1 << 60;
pub const REKEY_AFTER_TIME: Duration = Duration::from_secs(120);
pub const REJECT_AFTER_TIME: Duration = Duration::from_secs(180);
pub const REKEY_ATTEMPT_TIME: Duration = Duration::from_secs(90);
pub const REKEY_TIMEOUT: Duration = Duration::from_secs(5);
pub const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(10);
/// Upper bound of the random delay added to handshake timers (a third of a second).
pub const REKEY_TIMEOUT_JITTER_MAX_MS: u32 = 333;
/// Retransmissions before giving up: REKEY_ATTEMPT_TIME / REKEY_TIMEOUT.
pub const MAX_TIMER_HANDSHAKES: u32 =
    (REKEY_ATTEMPT_TIME.as_secs() / REKEY_TIMEOUT.as_secs()) as u32;

/// Which timers expired for a peer, in the order they should be handled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Expired {
    pub retransmit_handshake: bool,
    pub send_keepalive: bool,
    pub new_handshake: bool,
    pub zero_key_material: bool,
    pub persistent_keepalive: bool,
}

#[derive(Clone, Debug, Default)]
pub struct Timers {
    pub retransmit_handshake: Option<Instant>,
    pub send_keepalive: Option<Instant>,
    pub new_handshake: Option<Instant>,
    pub zero_key_material: Option<Instant>,
    pub persistent_keepalive: Option<Instant>,
    /// Set when data arrives while a passive keepalive is already scheduled.
    pub need_another_keepalive: bool,
    pub handshake_attempts: u32,
    /// Persistent keepalive interval in seconds, 0 = off.
    pub keepalive_interval: u16,
}

fn jittered(base: Duration, jitter_ms: u32) -> Duration {
    base + Duration::from_millis(u64::from(jitter_ms % (REKEY_TIMEOUT_JITTER_MAX_MS + 1)))
}

impl Timers {
    /// Whether `data_sent` would arm the new-handshake timer (and so use its jitter).
    pub fn data_sent_arms(&self) -> bool {
        self.new_handshake.is_none()
    }

    /// After a data packet (not a keepalive) was sent. True if a timer was armed.
    pub fn data_sent(&mut self, now: Instant, jitter_ms: u32) -> bool {
        let arm = self.data_sent_arms();
        if arm {
            self.new_handshake = Some(now + jittered(KEEPALIVE_TIMEOUT + REKEY_TIMEOUT, jitter_ms));
        }
        arm
    }

    /// After a data packet (not a keepalive) was received. True if a timer was armed.
    pub fn data_received(&mut self, now: Instant) -> bool {
        let arm = self.send_keepalive.is_none();
        if arm {
            self.send_keepalive = Some(now + KEEPALIVE_TIMEOUT);
        } else {
            self.need_another_keepalive = true;
        }
        arm
    }

    /// After any authenticated packet was sent: it serves as the keepalive.
    pub fn any_authenticated_packet_sent(&mut self) {
        self.send_keepalive = None;
    }

    /// After any authenticated packet was received: the session is alive.
    pub fn any_authenticated_packet_received(&mut self) {
        self.new_handshake = None;
    }

    /// After any authenticated packet in either direction. True if the timer was armed
    /// from stopped or moved earlier (a shorter interval): otherwise it only moved later,
    /// which a caller tracking the earliest deadline may ignore (it wakes early once and
    /// looks again).
    pub fn any_authenticated_packet_traversal(&mut self, now: Instant) -> bool {
        if self.keepalive_interval == 0 {
            return false;
        }
        let at = now + Duration::from_secs(u64::from(self.keepalive_interval));
        let earlier = self.persistent_keepalive.is_none_or(|t| at < t);
        self.persistent_keepalive = Some(at);
        earlier
    }

    /// After an initiation was sent.
    pub fn handshake_initiated(&mut self, now: Instant, jitter_ms: u32) {
        self.retransmit_handshake = Some(now + jittered(REKEY_TIMEOUT, jitter_ms));
    }

    /// After a handshake completed (initiator: response consumed; responder: key confirmed).
    pub fn handshake_complete(&mut self) {
        self.retransmit_handshake = None;
        self.handshake_attempts = 0;
    }

    /// After new transport keys were derived.
    pub fn session_derived(&mut self, now: Instant) {
        self.zero_key_material = Some(now + REJECT_AFTER_TIME * 3);
    }

    /// Takes the timers that are due at `now` (each fires once; the caller re-arms).
    pub fn expire(&mut self, now: Instant) -> Expired {
        let due = |t: &mut Option<Instant>| {
            if t.is_some_and(|d| d <= now) {
                *t = None;
                true
            } else {
                false
            }
        };
        Expired {
            retransmit_handshake: due(&mut self.retransmit_handshake),
            send_keepalive: due(&mut self.send_keepalive),
            new_handshake: due(&mut self.new_handshake),
            zero_key_material: due(&mut self.zero_key_material),
            persistent_keepalive: due(&mut self.persistent_keepalive),
        }
    }

    pub fn earliest(&self) -> Option<Instant> {
        [
            self.retransmit_handshake,
            self.send_keepalive,
            self.new_handshake,
            self.zero_key_material,
            self.persistent_keepalive,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Stops every timer (peer removed or its keys wiped).
    pub fn stop_all(&mut self) {
        let interval = self.keepalive_interval;
        *self = Timers {
            keepalive_interval: interval,
            ..Timers::default()
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hooks_arm_and_disarm() {
        let t0 = Instant::now();
        let mut t = Timers::default();
        assert!(t.data_sent_arms());
        assert!(t.data_sent(t0, 0));
        assert_eq!(t.new_handshake, Some(t0 + Duration::from_secs(15)));
        assert!(!t.data_sent_arms());
        assert!(!t.data_sent(t0 + Duration::from_secs(3), 0));
        assert_eq!(
            t.new_handshake,
            Some(t0 + Duration::from_secs(15)),
            "not pushed back"
        );
        t.any_authenticated_packet_received();
        assert_eq!(t.new_handshake, None);
        assert!(t.data_received(t0));
        assert!(!t.data_received(t0));
        assert!(t.need_another_keepalive);
        assert_eq!(t.send_keepalive, Some(t0 + KEEPALIVE_TIMEOUT));
        t.any_authenticated_packet_sent();
        assert_eq!(t.send_keepalive, None);
        t.any_authenticated_packet_traversal(t0);
        assert_eq!(t.persistent_keepalive, None, "off by default");
        t.keepalive_interval = 25;
        assert!(t.any_authenticated_packet_traversal(t0), "armed");
        assert_eq!(t.persistent_keepalive, Some(t0 + Duration::from_secs(25)));
        assert!(
            !t.any_authenticated_packet_traversal(t0 + Duration::from_secs(1)),
            "only later"
        );
        t.keepalive_interval = 5;
        assert!(
            t.any_authenticated_packet_traversal(t0 + Duration::from_secs(2)),
            "a shorter interval moves it earlier"
        );
        t.keepalive_interval = 25;
        t.any_authenticated_packet_traversal(t0);
        t.handshake_initiated(t0, 1000);
        assert_eq!(
            t.retransmit_handshake,
            Some(t0 + REKEY_TIMEOUT + Duration::from_millis(1000 % 334))
        );
        assert_eq!(t.earliest(), t.retransmit_handshake);
        let e = t.expire(t0 + Duration::from_secs(6));
        assert!(e.retransmit_handshake && !e.persistent_keepalive);
        assert_eq!(t.retransmit_handshake, None);
        t.stop_all();
        assert_eq!(t.earliest(), None);
        assert_eq!(t.keepalive_interval, 25);
    }

    #[test]
    fn constants_match_the_whitepaper() {
        assert_eq!(MAX_TIMER_HANDSHAKES, 18);
        assert_eq!(REKEY_AFTER_MESSAGES, 1u64 << 60);
    }
}
