//! mac1/mac2 and cookie replies (whitepaper section 5.4.4 and 5.4.7).
//!
//! Every handshake message carries mac1 = MAC(HASH("mac1----" || receiver's public key), msg
//! up to mac1); it proves the sender knows whom it is talking to and is checked before any
//! expensive work. Under load the responder also demands mac2 = MAC(cookie, msg up to mac2),
//! where the cookie is a MAC of the sender's address under a secret that rotates every two
//! minutes, handed out in an encrypted cookie reply.

use crate::crypto::{self, Rng};
use crate::proto::wire::{self, cookie as cf};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use zeroize::Zeroizing;

pub const LABEL_MAC1: &[u8] = b"mac1----";
pub const LABEL_COOKIE: &[u8] = b"cookie--";
pub const COOKIE_SECRET_MAX_AGE: Duration = Duration::from_secs(120);
pub const COOKIE_SECRET_LATENCY: Duration = Duration::from_secs(5);

/// Offsets of (mac1, mac2) for a handshake message of this length.
fn mac_offsets(len: usize) -> Option<(usize, usize)> {
    match len {
        wire::INITIATION_LEN => Some((wire::init::MAC1, wire::init::MAC2)),
        wire::RESPONSE_LEN => Some((wire::resp::MAC1, wire::resp::MAC2)),
        _ => None,
    }
}

fn address_bytes(src: SocketAddr, out: &mut [u8; 18]) -> &[u8] {
    match src {
        SocketAddr::V4(a) => {
            out[..4].copy_from_slice(&a.ip().octets());
            out[4..6].copy_from_slice(&a.port().to_be_bytes());
            &out[..6]
        }
        SocketAddr::V6(a) => {
            out[..16].copy_from_slice(&a.ip().octets());
            out[16..18].copy_from_slice(&a.port().to_be_bytes());
            &out[..18]
        }
    }
}

/// Responder side: validates macs on messages addressed to us and creates cookie replies.
pub struct CookieChecker {
    mac1_key: crypto::MacKey,
    cookie_key: Zeroizing<[u8; 32]>,
    secret: Zeroizing<[u8; 32]>,
    secret_birth: Option<Instant>,
}

impl CookieChecker {
    pub fn new(our_public: Option<&[u8; 32]>) -> Self {
        let mut c = CookieChecker {
            mac1_key: crypto::MacKey::new(&[0; 32]),
            cookie_key: Zeroizing::new([0; 32]),
            secret: Zeroizing::new([0; 32]),
            secret_birth: None,
        };
        c.set_public(our_public);
        c
    }

    pub fn set_public(&mut self, our_public: Option<&[u8; 32]>) {
        match our_public {
            Some(p) => {
                self.mac1_key = crypto::MacKey::new(&crypto::hash(&[LABEL_MAC1, p]));
                *self.cookie_key = crypto::hash(&[LABEL_COOKIE, p]);
            }
            None => {
                self.mac1_key = crypto::MacKey::new(&[0; 32]);
                *self.cookie_key = [0; 32];
            }
        }
    }

    pub fn check_mac1(&self, msg: &[u8]) -> bool {
        let Some((m1, _)) = mac_offsets(msg.len()) else {
            return false;
        };
        crypto::ct_eq(&self.mac1_key.mac(&msg[..m1]), &msg[m1..m1 + 16])
    }

    fn cookie_for(&self, src: SocketAddr) -> [u8; 16] {
        let mut b = [0u8; 18];
        crypto::mac(&self.secret[..], &[address_bytes(src, &mut b)])
    }

    fn secret_fresh(&self, now: Instant) -> bool {
        self.secret_birth
            .is_some_and(|b| now.saturating_duration_since(b) < COOKIE_SECRET_MAX_AGE)
    }

    /// Whether the message carries a mac2 at all (a sender without a cookie sends zeros).
    pub fn has_mac2(&self, msg: &[u8]) -> bool {
        mac_offsets(msg.len()).is_some_and(|(_, m2)| msg[m2..m2 + 16] != [0; 16])
    }

    pub fn check_mac2(&self, msg: &[u8], src: SocketAddr, now: Instant) -> bool {
        let Some((_, m2)) = mac_offsets(msg.len()) else {
            return false;
        };
        // A sender without a cookie sends zeros (a real mac2 is zero with odds of 2^-128):
        // no need to compute what it cannot match, two thirds of a flooded message's MACs.
        if !self.secret_fresh(now) || msg[m2..m2 + 16] == [0; 16] {
            return false;
        }
        let cookie = self.cookie_for(src);
        crypto::ct_eq(&crypto::mac(&cookie, &[&msg[..m2]]), &msg[m2..m2 + 16])
    }

    /// Writes a 64-byte cookie reply to `msg` (whose sender index we echo) into `out`.
    pub fn create_reply(
        &mut self,
        msg: &[u8],
        sender_index: u32,
        src: SocketAddr,
        now: Instant,
        rng: &mut Rng,
        out: &mut [u8],
    ) -> bool {
        let Some((m1, _)) = mac_offsets(msg.len()) else {
            return false;
        };
        if out.len() < wire::COOKIE_REPLY_LEN {
            return false;
        }
        if !self.secret_fresh(now) {
            rng.fill(&mut self.secret[..]);
            self.secret_birth = Some(now);
        }
        let cookie = self.cookie_for(src);
        let mut nonce = [0u8; 24];
        rng.fill(&mut nonce);
        let mut mac1 = [0u8; 16];
        mac1.copy_from_slice(&msg[m1..m1 + 16]);
        wire::put_type(out, wire::MSG_COOKIE_REPLY);
        wire::put_u32(out, cf::RECEIVER, sender_index);
        out[cf::NONCE..cf::NONCE + 24].copy_from_slice(&nonce);
        crypto::xseal_to(
            &self.cookie_key,
            &nonce,
            &mac1,
            &cookie,
            &mut out[cf::COOKIE..cf::COOKIE + 32],
        );
        true
    }
}

/// Initiator side, one per peer: adds macs to our messages and keeps the latest cookie.
pub struct CookieState {
    mac1_key: crypto::MacKey,
    cookie_key: [u8; 32],
    cookie: Zeroizing<[u8; 16]>,
    cookie_birth: Option<Instant>,
    last_mac1: [u8; 16],
    have_sent_mac1: bool,
}

impl CookieState {
    pub fn new(peer_public: &[u8; 32]) -> Self {
        CookieState {
            mac1_key: crypto::MacKey::new(&crypto::hash(&[LABEL_MAC1, peer_public])),
            cookie_key: crypto::hash(&[LABEL_COOKIE, peer_public]),
            cookie: Zeroizing::new([0; 16]),
            cookie_birth: None,
            last_mac1: [0; 16],
            have_sent_mac1: false,
        }
    }

    /// Fills mac1 and (with a fresh cookie) mac2 of a handshake message we are about to send.
    pub fn add_macs(&mut self, msg: &mut [u8], now: Instant) {
        let Some((m1, m2)) = mac_offsets(msg.len()) else {
            return;
        };
        let mac1 = self.mac1_key.mac(&msg[..m1]);
        msg[m1..m1 + 16].copy_from_slice(&mac1);
        self.last_mac1 = mac1;
        self.have_sent_mac1 = true;
        let fresh = self.cookie_birth.is_some_and(|b| {
            now.saturating_duration_since(b) < COOKIE_SECRET_MAX_AGE - COOKIE_SECRET_LATENCY
        });
        let mac2 = if fresh {
            crypto::mac(&self.cookie[..], &[&msg[..m2]])
        } else {
            [0; 16]
        };
        msg[m2..m2 + 16].copy_from_slice(&mac2);
    }

    /// Takes a cookie reply for one of our messages; false if it does not decrypt.
    pub fn consume_reply(&mut self, msg: &[u8], now: Instant) -> bool {
        if !self.have_sent_mac1 || msg.len() != wire::COOKIE_REPLY_LEN {
            return false;
        }
        let mut nonce = [0u8; 24];
        nonce.copy_from_slice(&msg[cf::NONCE..cf::NONCE + 24]);
        let mut cookie = Zeroizing::new([0u8; 16]);
        if !crypto::xopen_to(
            &self.cookie_key,
            &nonce,
            &self.last_mac1,
            &msg[cf::COOKIE..cf::COOKIE + 32],
            &mut cookie[..],
        ) {
            return false;
        }
        self.cookie = cookie;
        self.cookie_birth = Some(now);
        self.have_sent_mac1 = false;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mac1_then_cookie_then_mac2() {
        let responder_pub = [5u8; 32];
        let mut checker = CookieChecker::new(Some(&responder_pub));
        let mut state = CookieState::new(&responder_pub);
        let mut rng = Rng::from_seed([0; 32]);
        let now = Instant::now();
        let src: SocketAddr = "192.0.2.1:1234".parse().unwrap();

        let mut msg = vec![0u8; wire::INITIATION_LEN];
        wire::put_type(&mut msg, wire::MSG_INITIATION);
        msg[10] = 42;
        state.add_macs(&mut msg, now);
        assert!(checker.check_mac1(&msg));
        assert!(!checker.check_mac2(&msg, src, now), "no cookie yet");

        let mut reply = [0u8; 64];
        assert!(checker.create_reply(&msg, 77, src, now, &mut rng, &mut reply));
        assert_eq!(wire::classify(&reply), Some(wire::Kind::CookieReply));
        assert_eq!(wire::u32_at(&reply, cf::RECEIVER), 77);
        assert!(state.consume_reply(&reply, now));
        assert!(!state.consume_reply(&reply, now), "one reply per mac1 sent");

        state.add_macs(&mut msg, now);
        assert!(checker.check_mac1(&msg));
        assert!(checker.check_mac2(&msg, src, now));
        let other: SocketAddr = "192.0.2.2:1234".parse().unwrap();
        assert!(
            !checker.check_mac2(&msg, other, now),
            "cookie is bound to the source"
        );
        let later = now + COOKIE_SECRET_MAX_AGE;
        assert!(!checker.check_mac2(&msg, src, later), "secret expired");
        // The initiator stops using its cookie before the responder's secret rotates.
        state.add_macs(
            &mut msg,
            now + COOKIE_SECRET_MAX_AGE - COOKIE_SECRET_LATENCY,
        );
        assert_eq!(&msg[wire::init::MAC2..], &[0u8; 16]);
    }

    #[test]
    fn wrong_receiver_key_fails_mac1() {
        let checker = CookieChecker::new(Some(&[1u8; 32]));
        let mut state = CookieState::new(&[2u8; 32]);
        let mut msg = vec![0u8; wire::RESPONSE_LEN];
        state.add_macs(&mut msg, Instant::now());
        assert!(!checker.check_mac1(&msg));
        assert!(!checker.check_mac1(&msg[..50]));
    }

    #[test]
    fn forged_cookie_reply_is_refused() {
        let responder_pub = [5u8; 32];
        let mut checker = CookieChecker::new(Some(&responder_pub));
        let mut state = CookieState::new(&responder_pub);
        let mut rng = Rng::from_seed([0; 32]);
        let now = Instant::now();
        let src: SocketAddr = "[2001:db8::1]:5".parse().unwrap();
        let mut msg = vec![0u8; wire::INITIATION_LEN];
        state.add_macs(&mut msg, now);
        let mut reply = [0u8; 64];
        checker.create_reply(&msg, 1, src, now, &mut rng, &mut reply);
        reply[40] ^= 1;
        assert!(!state.consume_reply(&reply, now));
    }
}
