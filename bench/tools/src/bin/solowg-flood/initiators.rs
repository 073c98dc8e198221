//! The handshake mode's initiators: one Noise handshake per key, at most one attempt in flight
//! each, and what a reply means for the attempt it answers.

use crate::macs::{
    add_macs, derive_private, mac1_key, open_cookie_reply, set_mac2, tai64n_next, tai64n_now,
    Cookie,
};
use crate::opts::die;
use solowg::crypto::{self, Rng};
use solowg::proto::cookie::LABEL_COOKIE;
use solowg::proto::noise::{Handshake, Identity};
use solowg::proto::wire::{self, cookie as cf, resp};
use std::time::Instant;

pub(crate) enum KeyState {
    /// Free to start a new attempt (it sits in the idle queue).
    Idle,
    Waiting {
        index: u32,
        sock: usize,
        deadline: Instant,
        mac1: [u8; 16],
        msg: [u8; wire::INITIATION_LEN],
    },
}

/// One initiator identity: the Noise handshake state of the library, plus what we need to check
/// replies addressed to it.
pub(crate) struct Initiator {
    identity: Identity,
    hs: Handshake,
    /// mac1 key of messages sent to us (the responder's response carries mac1 under it).
    own_mac1_key: [u8; 32],
    last_stamp: [u8; 12],
    pub(crate) state: KeyState,
}

/// What a reply did for its initiator.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Completed,
    /// Cookie stored for the socket; the initiation is to be resent with mac2.
    Cookie,
    Bad,
    Late,
    Other,
}

pub(crate) struct Flood {
    pub(crate) keys: Vec<Initiator>,
    responder_mac1_key: [u8; 32],
    responder_cookie_key: [u8; 32],
    /// Per source socket: the latest cookie the responder gave it.
    cookies: Vec<Option<Cookie>>,
    rng: Rng,
    attempt: u32,
    /// Consume (fully verify) every Nth response; the others get their mac1 checked only.
    pub(crate) verify_every: u64,
    responses: u64,
}

impl Flood {
    pub(crate) fn new(
        responder: &[u8; 32],
        seed: &str,
        nkeys: usize,
        nsocks: usize,
        rng: Rng,
    ) -> Flood {
        let keys = (0..nkeys)
            .map(|i| {
                let identity = Identity::new(derive_private(seed, i));
                // psk 0: the script configures no preshared keys.
                let hs = Handshake::new(Some(&identity), *responder, [0; 32]);
                Initiator {
                    own_mac1_key: mac1_key(&identity.public),
                    identity,
                    hs,
                    last_stamp: [0; 12],
                    state: KeyState::Idle,
                }
            })
            .collect();
        Flood {
            keys,
            responder_mac1_key: mac1_key(responder),
            responder_cookie_key: crypto::hash(&[LABEL_COOKIE, responder]),
            cookies: vec![None; nsocks],
            rng,
            attempt: 0,
            verify_every: 1,
            responses: 0,
        }
    }

    /// Starts a new attempt for key `k` from socket `sock`: fresh ephemeral, a timestamp newer
    /// than any this key sent before, sender index = attempt << 16 | key.
    pub(crate) fn initiation(
        &mut self,
        k: usize,
        sock: usize,
        now: Instant,
        deadline: Instant,
    ) -> &[u8] {
        self.attempt = self.attempt.wrapping_add(1);
        let index = (self.attempt << 16) | k as u32;
        let ephemeral = crypto::SecretKey::new(crypto::clamp(*self.rng.key()));
        let key = &mut self.keys[k];
        let mut stamp = tai64n_now();
        if stamp <= key.last_stamp {
            stamp = tai64n_next(key.last_stamp);
        }
        key.last_stamp = stamp;
        let mut msg = [0u8; wire::INITIATION_LEN];
        if !key
            .hs
            .create_initiation(&key.identity, ephemeral, stamp, index, &mut msg)
        {
            die("create_initiation failed (low-order responder key?)");
        }
        let mac1 = add_macs(
            &mut msg,
            &self.responder_mac1_key,
            self.cookies[sock].as_ref(),
            now,
        );
        key.state = KeyState::Waiting {
            index,
            sock,
            deadline,
            mac1,
            msg,
        };
        match &key.state {
            KeyState::Waiting { msg, .. } => msg,
            KeyState::Idle => unreachable!(),
        }
    }

    /// The key a reply's receiver index names, if that attempt is still waiting.
    fn waiting_key(&self, receiver: u32) -> Option<usize> {
        let k = (receiver & 0xffff) as usize;
        match self.keys.get(k)?.state {
            KeyState::Waiting { index, .. } if index == receiver => Some(k),
            _ => None,
        }
    }

    /// Handles a datagram that arrived on socket `sock`.
    /// Returns what happened, the key concerned, and for a completed handshake whether the
    /// Noise response was consumed (else only its mac1 was checked, see --verify-every).
    pub(crate) fn on_reply(
        &mut self,
        sock: usize,
        msg: &[u8],
        now: Instant,
    ) -> (Outcome, Option<usize>, bool) {
        let (o, k) = match wire::classify(msg) {
            Some(wire::Kind::Response) => {
                let Some(k) = self.waiting_key(wire::u32_at(msg, resp::RECEIVER)) else {
                    return (Outcome::Late, None, false);
                };
                self.responses += 1;
                let full = self.responses % self.verify_every == 0;
                let key = &mut self.keys[k];
                let mac1 = crypto::mac(&key.own_mac1_key, &[&msg[..resp::MAC1]]);
                let ok = crypto::ct_eq(&mac1, &msg[resp::MAC1..resp::MAC2])
                    && (!full
                        || (key.hs.consume_response(&key.identity, msg)
                    // Derives the session keys (and wipes the handshake): the last step an
                    // initiator takes before it could send data.
                    && key.hs.derive_keys().is_some()));
                key.state = KeyState::Idle;
                return (
                    if ok { Outcome::Completed } else { Outcome::Bad },
                    Some(k),
                    full,
                );
            }
            Some(wire::Kind::CookieReply) => {
                let Some(k) = self.waiting_key(wire::u32_at(msg, cf::RECEIVER)) else {
                    return (Outcome::Late, None, false);
                };
                let KeyState::Waiting { mac1, .. } = &self.keys[k].state else {
                    return (Outcome::Late, None, false);
                };
                match open_cookie_reply(&self.responder_cookie_key, mac1, msg) {
                    Some(value) => {
                        self.cookies[sock] = Some(Cookie { value, birth: now });
                        (Outcome::Cookie, Some(k))
                    }
                    None => (Outcome::Bad, Some(k)),
                }
            }
            _ => (Outcome::Other, None),
        };
        (o, k, false)
    }

    /// After a cookie reply: the same initiation (not consumed by the responder, so its
    /// timestamp is still good) with mac2 under the new cookie, from the socket the cookie is
    /// bound to. Returns (socket, message).
    pub(crate) fn with_cookie(
        &mut self,
        k: usize,
        now: Instant,
        deadline: Instant,
    ) -> Option<(usize, &[u8])> {
        let cookies = &self.cookies;
        match &mut self.keys[k].state {
            KeyState::Waiting {
                sock,
                msg,
                deadline: d,
                ..
            } => {
                set_mac2(msg, cookies[*sock].as_ref(), now);
                *d = deadline;
                Some((*sock, &msg[..]))
            }
            KeyState::Idle => None,
        }
    }
}

#[cfg(test)]
mod tests {
    //! In-process checks against the library's responder.

    use super::*;
    use solowg::proto::device::{Device, DropReason, Verdict};
    use solowg::proto::uapi::{AllowedIpChange, PeerChange, SetRequest};
    use std::net::{IpAddr, Ipv4Addr, SocketAddr};
    use std::time::{Duration, SystemTime};
    use zeroize::Zeroizing;

    const SEED: &str = "test";

    /// A Device (the daemon's core) with the flood keys 0..n as peers.
    fn responder(n: usize) -> (Device, [u8; 32], Instant) {
        let now = Instant::now();
        let mut dev = Device::new(now, SystemTime::now(), Rng::from_seed([9; 32]));
        let private = crypto::clamp([7; 32]);
        let mut req = SetRequest {
            private_key: Some(Some(Zeroizing::new(private))),
            ..SetRequest::default()
        };
        for i in 0..n {
            let mut p = PeerChange::new(crypto::public_key(&derive_private(SEED, i)));
            p.allowed_ips.push(AllowedIpChange {
                addr: IpAddr::V4(Ipv4Addr::new(10, 210, 0, i as u8)),
                cidr: 32,
                remove: false,
            });
            req.peers.push(p);
        }
        dev.apply(&req, now);
        (dev, crypto::public_key(&private), now)
    }

    fn deliver(dev: &mut Device, now: Instant, src: SocketAddr, msg: &[u8]) -> Option<Vec<u8>> {
        let mut buf = vec![0u8; 256];
        buf[..msg.len()].copy_from_slice(msg);
        match dev.decapsulate(now, src, &mut buf, msg.len()) {
            Verdict::SendUdp { to, len } => {
                assert_eq!(to, src);
                Some(buf[..len].to_vec())
            }
            _ => None,
        }
    }

    #[test]
    fn handshake_completes_against_the_library_responder() {
        let (mut dev, public, now) = responder(3);
        let mut fl = Flood::new(&public, SEED, 3, 1, Rng::from_seed([1; 32]));
        let src: SocketAddr = "192.0.2.1:1000".parse().unwrap();
        for k in 0..3 {
            let msg = fl.initiation(k, 0, now, now).to_vec();
            let reply = deliver(&mut dev, now, src, &msg).expect("a response");
            assert_eq!(
                fl.on_reply(0, &reply, now),
                (Outcome::Completed, Some(k), true)
            );
        }
        // A second reply to the same attempt is late, not a second handshake.
        let msg = fl.initiation(0, 0, now, now).to_vec();
        let later = now + Duration::from_millis(25);
        let reply = deliver(&mut dev, later, src, &msg).expect("a response");
        assert_eq!(fl.on_reply(0, &reply, later).0, Outcome::Completed);
        assert_eq!(fl.on_reply(0, &reply, later).0, Outcome::Late);
    }

    #[test]
    fn under_load_cookie_then_mac2_completes() {
        let (mut dev, public, now) = responder(1);
        dev.under_load_rate = 0; // every handshake message counts as load
        let mut fl = Flood::new(&public, SEED, 1, 1, Rng::from_seed([2; 32]));
        let src: SocketAddr = "192.0.2.7:4000".parse().unwrap();
        let msg = fl.initiation(0, 0, now, now).to_vec();
        let reply = deliver(&mut dev, now, src, &msg).expect("a cookie reply");
        assert_eq!(reply.len(), wire::COOKIE_REPLY_LEN);
        assert_eq!(dev.drop_count(DropReason::CookieRequired), 1);
        assert_eq!(
            fl.on_reply(0, &reply, now),
            (Outcome::Cookie, Some(0), false)
        );
        let later = now + Duration::from_millis(25); // per-peer initiation spacing
        let (sock, msg) = fl.with_cookie(0, later, later).unwrap();
        assert_eq!(sock, 0);
        let msg = msg.to_vec();
        let reply = deliver(&mut dev, later, src, &msg).expect("a response");
        assert_eq!(fl.on_reply(0, &reply, later).0, Outcome::Completed);
        // The cookie is bound to the source: from elsewhere it is refused again.
        let other: SocketAddr = "192.0.2.8:4000".parse().unwrap();
        let later = later + Duration::from_millis(25);
        let msg = fl.initiation(0, 0, later, later).to_vec();
        let reply = deliver(&mut dev, later, other, &msg).expect("a cookie reply");
        assert_eq!(reply.len(), wire::COOKIE_REPLY_LEN);
    }
}
