//! Timer expiry: what each peer's due timers make the device do, and handshake requests.

use super::Device;
use super::Pending;
use crate::log;
use crate::proto::peer::short_key;
use crate::proto::peer::PeerId;
use std::time::Instant;

impl Device {
    /// Fires every expired timer. Cheap when nothing is due.
    pub fn update_timers(&mut self, now: Instant) {
        if self.wake_at.is_none_or(|w| w > now) {
            return;
        }
        let mut next: Option<Instant> = None;
        for i in 0..self.peers.len() {
            let id = PeerId(i);
            let Some(peer) = self.peers[i].as_mut() else {
                continue;
            };
            let e = peer.timers.expire(now);
            if e.retransmit_handshake {
                if peer.timers.handshake_attempts > crate::proto::timers::MAX_TIMER_HANDSHAKES {
                    log::verbose(format_args!(
                        "{}: handshake did not complete after {} attempts, giving up",
                        short_key(&peer.public_key),
                        crate::proto::timers::MAX_TIMER_HANDSHAKES + 2
                    ));
                    peer.timers.send_keepalive = None;
                    if peer.timers.zero_key_material.is_none() {
                        peer.timers.zero_key_material =
                            Some(now + crate::proto::timers::REJECT_AFTER_TIME * 3);
                    }
                    self.staging.clear(id);
                } else {
                    peer.timers.handshake_attempts += 1;
                    log::verbose(format_args!(
                        "{}: handshake did not complete after {} seconds, retrying (try {})",
                        short_key(&peer.public_key),
                        crate::proto::timers::REKEY_TIMEOUT.as_secs(),
                        peer.timers.handshake_attempts + 1
                    ));
                    self.request_handshake(id, now, true);
                }
            }
            if e.send_keepalive {
                self.pending.push_back(Pending::Keepalive(id));
                if let Some(peer) = self.peer_mut(id) {
                    if peer.timers.need_another_keepalive {
                        peer.timers.need_another_keepalive = false;
                        peer.timers.send_keepalive =
                            Some(now + crate::proto::timers::KEEPALIVE_TIMEOUT);
                    }
                }
            }
            if e.new_handshake {
                if let Some(peer) = self.peer(id) {
                    log::verbose(format_args!(
                        "{}: no reply for {} seconds, starting a new handshake",
                        short_key(&peer.public_key),
                        (crate::proto::timers::KEEPALIVE_TIMEOUT
                            + crate::proto::timers::REKEY_TIMEOUT)
                            .as_secs()
                    ));
                }
                self.request_handshake(id, now, false);
            }
            if e.zero_key_material {
                if let Some(peer) = self.peer_mut(id) {
                    let dropped = peer.keypairs.clear();
                    let hs = peer.handshake.local_index;
                    peer.handshake.clear();
                    log::verbose(format_args!(
                        "{}: keys erased after {} seconds",
                        short_key(&peer.public_key),
                        (crate::proto::timers::REJECT_AFTER_TIME * 3).as_secs()
                    ));
                    self.forget_indices(&dropped);
                    self.forget_indices(&[Some(hs).filter(|&i| i != 0)]);
                }
            }
            if e.persistent_keepalive {
                self.pending.push_back(Pending::Keepalive(id));
            }
            if let Some(t) = self.peer(id).and_then(|p| p.timers.earliest()) {
                next = Some(next.map_or(t, |n: Instant| n.min(t)));
            }
        }
        self.wake_at = next;
    }

    /// Queues an initiation unless one went out less than REKEY_TIMEOUT ago (a retry from the
    /// retransmit timer always goes out).
    pub(crate) fn request_handshake(&mut self, id: PeerId, now: Instant, retry: bool) {
        let Some(peer) = self.peer_mut(id) else {
            return;
        };
        if !retry {
            peer.timers.handshake_attempts = 0;
            if peer.last_initiation_sent.is_some_and(|t| {
                now.saturating_duration_since(t) < crate::proto::timers::REKEY_TIMEOUT
            }) {
                return;
            }
        }
        peer.last_initiation_sent = Some(now);
        if !self.pending.contains(&Pending::Initiation(id)) {
            self.pending.push_back(Pending::Initiation(id));
        }
    }
}
