//! The Noise_IKpsk2_25519_ChaChaPoly_BLAKE2s handshake (whitepaper section 5.4).
//!
//! Pattern IK with a preshared key mixed in at the end:
//!   -> e, es, s, ss, {t}        (initiation, 148 bytes)
//!   <- e, ee, se, psk, {}       (response, 92 bytes)
//! Each step below is marked with its token. The functions fill every field except mac1/mac2
//! (the cookie module adds those) and never do I/O; time comes in as a TAI64N stamp.

use crate::crypto::{self, SecretKey};
use crate::proto::wire::{self, init, resp};
use std::time::Instant;
use zeroize::{Zeroize, Zeroizing};

pub const CONSTRUCTION: &[u8] = b"Noise_IKpsk2_25519_ChaChaPoly_BLAKE2s";
pub const IDENTIFIER: &[u8] = b"WireGuard v1 zx2c4 Jason@zx2c4.com";
/// Whitepaper: at most one initiation per peer is consumed per 1/INITIATIONS_PER_SECOND.
pub const INITIATIONS_PER_SECOND: u32 = 50;

/// Ci = HASH(CONSTRUCTION); Hi = HASH(Ci || IDENTIFIER). Derived here, never stored as bytes.
pub fn initial_chain() -> ([u8; 32], [u8; 32]) {
    let ck = crypto::hash(&[CONSTRUCTION]);
    let h = crypto::hash(&[&ck, IDENTIFIER]);
    (ck, h)
}

/// Our static key pair plus values derived from it.
pub struct Identity {
    pub private: SecretKey,
    pub public: [u8; 32],
}

impl Identity {
    pub fn new(private: [u8; 32]) -> Self {
        Identity {
            public: crypto::public_key(&private),
            private: Zeroizing::new(private),
        }
    }
}

/// TAI64N label for a wall-clock time given as (unix seconds, nanoseconds). Nanoseconds are
/// rounded down to 1/INITIATIONS_PER_SECOND so the stamp does not leak a fine-grained clock.
pub fn tai64n(unix_secs: u64, nanos: u32) -> [u8; 12] {
    let step = 1_000_000_000 / INITIATIONS_PER_SECOND;
    let mut out = [0u8; 12];
    out[..8].copy_from_slice(&(0x4000_0000_0000_000a_u64 + unix_secs).to_be_bytes());
    out[8..].copy_from_slice(&(nanos - nanos % step).to_be_bytes());
    out
}

/// The TAI64N label one step (1/INITIATIONS_PER_SECOND) after `t`.
pub fn tai64n_after(t: &[u8; 12]) -> [u8; 12] {
    let step = 1_000_000_000 / INITIATIONS_PER_SECOND;
    let mut secs = [0u8; 8];
    let mut nanos = [0u8; 4];
    secs.copy_from_slice(&t[..8]);
    nanos.copy_from_slice(&t[8..]);
    let (mut secs, mut nanos) = (u64::from_be_bytes(secs), u32::from_be_bytes(nanos));
    nanos = nanos - nanos % step + step;
    if nanos >= 1_000_000_000 {
        nanos -= 1_000_000_000;
        secs = secs.saturating_add(1);
    }
    let mut out = [0u8; 12];
    out[..8].copy_from_slice(&secs.to_be_bytes());
    out[8..].copy_from_slice(&nanos.to_be_bytes());
    out
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Zeroed,
    InitiationCreated,
    InitiationConsumed,
    ResponseCreated,
    ResponseConsumed,
}

/// Keys that came out of a completed handshake.
pub struct SessionKeys {
    pub send: SecretKey,
    pub recv: SecretKey,
    pub local_index: u32,
    pub remote_index: u32,
    pub initiator: bool,
}

/// Per-peer handshake state.
pub struct Handshake {
    stage: Stage,
    pub remote_static: [u8; 32],
    /// DH(our static, their static): fixed per identity, so computed once.
    precomputed_ss: Option<SecretKey>,
    pub psk: SecretKey,
    hash: Zeroizing<[u8; 32]>,
    chaining_key: Zeroizing<[u8; 32]>,
    ephemeral: SecretKey,
    remote_ephemeral: [u8; 32],
    pub local_index: u32,
    remote_index: u32,
    /// Greatest TAI64N seen from this peer (replay protection for initiations).
    latest_timestamp: [u8; 12],
    /// Greatest TAI64N we sent this peer. The peer refuses an initiation whose stamp is not
    /// above the last it accepted, so ours never go back with the wall clock.
    pub(crate) last_sent_timestamp: [u8; 12],
    last_initiation_consumed: Option<Instant>,
}

/// The part of an incoming initiation that can be read before we know which peer sent it.
pub struct InitiationStart {
    pub remote_static: [u8; 32],
    hash: Zeroizing<[u8; 32]>,
    chaining_key: Zeroizing<[u8; 32]>,
    remote_ephemeral: [u8; 32],
    sender: u32,
}

impl Handshake {
    pub fn new(identity: Option<&Identity>, remote_static: [u8; 32], psk: [u8; 32]) -> Self {
        let mut hs = Handshake {
            stage: Stage::Zeroed,
            remote_static,
            precomputed_ss: None,
            psk: Zeroizing::new(psk),
            hash: Zeroizing::new([0; 32]),
            chaining_key: Zeroizing::new([0; 32]),
            ephemeral: Zeroizing::new([0; 32]),
            remote_ephemeral: [0; 32],
            local_index: 0,
            remote_index: 0,
            latest_timestamp: [0; 12],
            last_sent_timestamp: [0; 12],
            last_initiation_consumed: None,
        };
        hs.set_identity(identity);
        hs
    }

    /// Called when our private key changes: the precomputed DH and any half-done handshake
    /// belong to the old key.
    pub fn set_identity(&mut self, identity: Option<&Identity>) {
        self.precomputed_ss = identity.and_then(|id| crypto::dh(&id.private, &self.remote_static));
        self.clear();
    }

    /// Forget the in-progress handshake (not the timestamps, either way).
    pub fn clear(&mut self) {
        self.stage = Stage::Zeroed;
        self.hash.zeroize();
        self.chaining_key.zeroize();
        self.ephemeral.zeroize();
        self.remote_ephemeral = [0; 32];
        self.local_index = 0;
        self.remote_index = 0;
    }

    /// Builds an initiation into `out` (148 bytes; macs left zero). `timestamp` is the wall
    /// clock's; after the clock stepped back, the stamp sent is one step above the last one
    /// instead. Returns false if we have no usable identity for this peer.
    pub fn create_initiation(
        &mut self,
        identity: &Identity,
        ephemeral: SecretKey,
        timestamp: [u8; 12],
        local_index: u32,
        out: &mut [u8],
    ) -> bool {
        let Some(ss) = self.precomputed_ss.as_ref() else {
            return false;
        };
        let (ck0, h0) = initial_chain();
        let mut ck = Zeroizing::new(ck0);
        // Hi = HASH(Hi || Sr_pub)
        let mut h = Zeroizing::new(crypto::hash(&[&h0, &self.remote_static]));
        wire::put_type(out, wire::MSG_INITIATION);
        wire::put_u32(out, init::SENDER, local_index);
        // e
        let e_pub = crypto::public_key(&ephemeral);
        out[init::EPHEMERAL..init::EPHEMERAL + 32].copy_from_slice(&e_pub);
        let [c] = crypto::kdf::<1>(&ck, &e_pub);
        *ck = c;
        *h = crypto::hash(&[&*h, &e_pub]);
        // es
        let Some(es) = crypto::dh(&ephemeral, &self.remote_static) else {
            return false;
        };
        let [c, k] = crypto::kdf::<2>(&ck, &*es);
        let k = Zeroizing::new(k);
        *ck = c;
        // s
        crypto::seal_to(
            &k,
            &*h,
            &identity.public,
            &mut out[init::STATIC..init::STATIC + 48],
        );
        *h = crypto::hash(&[&*h, &out[init::STATIC..init::STATIC + 48]]);
        // ss
        let [c, k] = crypto::kdf::<2>(&ck, &ss[..]);
        let k = Zeroizing::new(k);
        *ck = c;
        // {t}, above the last stamp sent: after the wall clock stepped back, the peer would
        // refuse every initiation until the clock caught up again (hours, or years).
        let timestamp = timestamp.max(tai64n_after(&self.last_sent_timestamp));
        crypto::seal_to(
            &k,
            &*h,
            &timestamp,
            &mut out[init::TIMESTAMP..init::TIMESTAMP + 28],
        );
        *h = crypto::hash(&[&*h, &out[init::TIMESTAMP..init::TIMESTAMP + 28]]);
        out[init::MAC1..init::MAC2 + 16].fill(0);

        self.hash = h;
        self.chaining_key = ck;
        self.ephemeral = ephemeral;
        self.local_index = local_index;
        self.last_sent_timestamp = timestamp;
        self.stage = Stage::InitiationCreated;
        true
    }

    /// Finishes consuming an initiation whose static key named this peer: ss, {t}, replay and
    /// flood checks. On success the handshake is ready for `create_response`.
    pub fn consume_initiation(&mut self, start: InitiationStart, msg: &[u8], now: Instant) -> bool {
        let Some(ss) = self.precomputed_ss.as_ref() else {
            return false;
        };
        let mut ck = start.chaining_key;
        let mut h = start.hash;
        // ss
        let [c, k] = crypto::kdf::<2>(&ck, &ss[..]);
        let k = Zeroizing::new(k);
        *ck = c;
        // {t}
        let mut t = [0u8; 12];
        if !crypto::open_to(&k, &*h, &msg[init::TIMESTAMP..init::TIMESTAMP + 28], &mut t) {
            return false;
        }
        *h = crypto::hash(&[&*h, &msg[init::TIMESTAMP..init::TIMESTAMP + 28]]);
        // Replay: TAI64N is big-endian, so byte order is time order.
        if t <= self.latest_timestamp {
            return false;
        }
        // Flood: a valid initiation (e.g. replayed with a newer stamp by the peer itself)
        // is consumed at most INITIATIONS_PER_SECOND times a second.
        if let Some(last) = self.last_initiation_consumed {
            let min_gap = std::time::Duration::from_secs(1) / INITIATIONS_PER_SECOND;
            if now.saturating_duration_since(last) < min_gap {
                return false;
            }
        }
        self.latest_timestamp = t;
        self.last_initiation_consumed = Some(now);
        self.hash = h;
        self.chaining_key = ck;
        self.remote_ephemeral = start.remote_ephemeral;
        self.remote_index = start.sender;
        self.stage = Stage::InitiationConsumed;
        true
    }

    /// Builds the response (92 bytes, macs zero) after a consumed initiation.
    pub fn create_response(
        &mut self,
        ephemeral: SecretKey,
        local_index: u32,
        out: &mut [u8],
    ) -> bool {
        if self.stage != Stage::InitiationConsumed {
            return false;
        }
        let mut ck = self.chaining_key.clone();
        let mut h = self.hash.clone();
        wire::put_type(out, wire::MSG_RESPONSE);
        wire::put_u32(out, resp::SENDER, local_index);
        wire::put_u32(out, resp::RECEIVER, self.remote_index);
        // e
        let e_pub = crypto::public_key(&ephemeral);
        out[resp::EPHEMERAL..resp::EPHEMERAL + 32].copy_from_slice(&e_pub);
        let [c] = crypto::kdf::<1>(&ck, &e_pub);
        *ck = c;
        *h = crypto::hash(&[&*h, &e_pub]);
        // ee
        let Some(ee) = crypto::dh(&ephemeral, &self.remote_ephemeral) else {
            return false;
        };
        let [c] = crypto::kdf::<1>(&ck, &*ee);
        *ck = c;
        // se
        let Some(se) = crypto::dh(&ephemeral, &self.remote_static) else {
            return false;
        };
        let [c] = crypto::kdf::<1>(&ck, &*se);
        *ck = c;
        // psk
        let [c, tau, k] = crypto::kdf::<3>(&ck, &self.psk[..]);
        let k = Zeroizing::new(k);
        *ck = c;
        *h = crypto::hash(&[&*h, &tau]);
        // {}
        crypto::seal_to(&k, &*h, &[], &mut out[resp::EMPTY..resp::EMPTY + 16]);
        *h = crypto::hash(&[&*h, &out[resp::EMPTY..resp::EMPTY + 16]]);
        out[resp::MAC1..resp::MAC2 + 16].fill(0);

        self.hash = h;
        self.chaining_key = ck;
        self.ephemeral = ephemeral;
        self.local_index = local_index;
        self.stage = Stage::ResponseCreated;
        true
    }

    /// Consumes a response to our pending initiation (receiver index already matched).
    pub fn consume_response(&mut self, identity: &Identity, msg: &[u8]) -> bool {
        if self.stage != Stage::InitiationCreated {
            return false;
        }
        let mut ck = self.chaining_key.clone();
        let mut h = self.hash.clone();
        let e_pub = wire::array32(msg, resp::EPHEMERAL);
        // e
        let [c] = crypto::kdf::<1>(&ck, &e_pub);
        *ck = c;
        *h = crypto::hash(&[&*h, &e_pub]);
        // ee
        let Some(ee) = crypto::dh(&self.ephemeral, &e_pub) else {
            return false;
        };
        let [c] = crypto::kdf::<1>(&ck, &*ee);
        *ck = c;
        // se
        let Some(se) = crypto::dh(&identity.private, &e_pub) else {
            return false;
        };
        let [c] = crypto::kdf::<1>(&ck, &*se);
        *ck = c;
        // psk
        let [c, tau, k] = crypto::kdf::<3>(&ck, &self.psk[..]);
        let k = Zeroizing::new(k);
        *ck = c;
        *h = crypto::hash(&[&*h, &tau]);
        // {}
        if !crypto::open_to(&k, &*h, &msg[resp::EMPTY..resp::EMPTY + 16], &mut []) {
            return false;
        }
        *h = crypto::hash(&[&*h, &msg[resp::EMPTY..resp::EMPTY + 16]]);

        self.hash = h;
        self.chaining_key = ck;
        self.remote_index = wire::u32_at(msg, resp::SENDER);
        self.stage = Stage::ResponseConsumed;
        true
    }

    /// Derives transport keys once a handshake reached ResponseCreated (responder) or
    /// ResponseConsumed (initiator), then wipes the handshake state.
    pub fn derive_keys(&mut self) -> Option<SessionKeys> {
        let initiator = match self.stage {
            Stage::ResponseConsumed => true,
            Stage::ResponseCreated => false,
            _ => return None,
        };
        let [t1, t2] = crypto::kdf::<2>(&self.chaining_key, &[]);
        let (send, recv) = if initiator { (t1, t2) } else { (t2, t1) };
        let keys = SessionKeys {
            send: Zeroizing::new(send),
            recv: Zeroizing::new(recv),
            local_index: self.local_index,
            remote_index: self.remote_index,
            initiator,
        };
        self.clear();
        Some(keys)
    }
}

/// First half of consuming an initiation: e, es, s. Reveals the sender's static key so the
/// caller can find the peer.
pub fn begin_consume_initiation(identity: &Identity, msg: &[u8]) -> Option<InitiationStart> {
    let (ck0, h0) = initial_chain();
    let mut ck = Zeroizing::new(ck0);
    let mut h = Zeroizing::new(crypto::hash(&[&h0, &identity.public]));
    let e_pub = wire::array32(msg, init::EPHEMERAL);
    // e
    let [c] = crypto::kdf::<1>(&ck, &e_pub);
    *ck = c;
    *h = crypto::hash(&[&*h, &e_pub]);
    // es
    let es = crypto::dh(&identity.private, &e_pub)?;
    let [c, k] = crypto::kdf::<2>(&ck, &*es);
    let k = Zeroizing::new(k);
    *ck = c;
    // s
    let mut remote_static = [0u8; 32];
    if !crypto::open_to(
        &k,
        &*h,
        &msg[init::STATIC..init::STATIC + 48],
        &mut remote_static,
    ) {
        return None;
    }
    *h = crypto::hash(&[&*h, &msg[init::STATIC..init::STATIC + 48]]);
    Some(InitiationStart {
        remote_static,
        hash: h,
        chaining_key: ck,
        remote_ephemeral: e_pub,
        sender: wire::u32_at(msg, init::SENDER),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::clamp;

    #[test]
    fn initial_chain_is_derived_from_the_protocol_name() {
        let (ck, h) = initial_chain();
        assert_eq!(
            ck,
            crypto::hash(&[b"Noise_IKpsk2_25519_ChaChaPoly_BLAKE2s"])
        );
        assert_eq!(
            h,
            crypto::hash(&[&ck, b"WireGuard v1 zx2c4 Jason@zx2c4.com"])
        );
        assert_ne!(ck, h);
    }

    #[test]
    fn tai64n_is_ordered_and_coarse() {
        let a = tai64n(100, 999_999_999);
        let b = tai64n(101, 0);
        assert!(a < b);
        assert_eq!(tai64n(100, 1), tai64n(100, 19_999_999));
        assert!(tai64n(100, 20_000_000) > tai64n(100, 0));
        assert_eq!(&tai64n(0, 0)[..8], &0x4000_0000_0000_000a_u64.to_be_bytes());
    }

    fn pair(psk: [u8; 32]) -> (Identity, Identity, Handshake, Handshake) {
        let a = Identity::new(clamp([1; 32]));
        let b = Identity::new(clamp([2; 32]));
        let ha = Handshake::new(Some(&a), b.public, psk);
        let hb = Handshake::new(Some(&b), a.public, psk);
        (a, b, ha, hb)
    }

    #[test]
    fn full_handshake_derives_matching_keys() {
        for psk in [[0u8; 32], [7u8; 32]] {
            let (a, b, mut ha, mut hb) = pair(psk);
            let now = Instant::now();
            let mut m1 = [0u8; 148];
            assert!(ha.create_initiation(
                &a,
                Zeroizing::new(clamp([3; 32])),
                tai64n(1, 0),
                11,
                &mut m1
            ));
            let start = begin_consume_initiation(&b, &m1).unwrap();
            assert_eq!(start.remote_static, a.public);
            assert!(hb.consume_initiation(start, &m1, now));
            let mut m2 = [0u8; 92];
            assert!(hb.create_response(Zeroizing::new(clamp([4; 32])), 22, &mut m2));
            assert_eq!(wire::u32_at(&m2, resp::RECEIVER), 11);
            assert!(ha.consume_response(&a, &m2));
            let ka = ha.derive_keys().unwrap();
            let kb = hb.derive_keys().unwrap();
            assert_eq!(*ka.send, *kb.recv);
            assert_eq!(*ka.recv, *kb.send);
            assert_eq!((ka.local_index, ka.remote_index), (11, 22));
            assert_eq!((kb.local_index, kb.remote_index), (22, 11));
            assert!(ka.initiator && !kb.initiator);
            assert!(ha.derive_keys().is_none(), "state is wiped after use");
        }
    }

    #[test]
    fn replayed_or_old_initiation_is_refused() {
        let (a, b, mut ha, mut hb) = pair([0; 32]);
        let now = Instant::now();
        let mut m1 = [0u8; 148];
        ha.create_initiation(&a, Zeroizing::new(clamp([3; 32])), tai64n(5, 0), 1, &mut m1);
        let s = begin_consume_initiation(&b, &m1).unwrap();
        assert!(hb.consume_initiation(s, &m1, now));
        let s = begin_consume_initiation(&b, &m1).unwrap();
        assert!(!hb.consume_initiation(s, &m1, now + std::time::Duration::from_secs(1)));
        // Newer stamp but too soon after the last one.
        ha.create_initiation(&a, Zeroizing::new(clamp([5; 32])), tai64n(6, 0), 2, &mut m1);
        let s = begin_consume_initiation(&b, &m1).unwrap();
        assert!(!hb.consume_initiation(s, &m1, now + std::time::Duration::from_millis(5)));
        let s = begin_consume_initiation(&b, &m1).unwrap();
        assert!(hb.consume_initiation(s, &m1, now + std::time::Duration::from_millis(30)));
    }

    #[test]
    fn tai64n_after_is_one_step_later() {
        assert_eq!(tai64n_after(&tai64n(7, 0)), tai64n(7, 20_000_000));
        assert_eq!(tai64n_after(&tai64n(7, 980_000_000)), tai64n(8, 0));
    }

    /// The wall clock steps back (NTP, a reset RTC): the peer refuses any stamp not above the
    /// last it accepted, so the next initiations carry stamps just above the last one sent,
    /// and the clock's own again once it is later.
    #[test]
    fn initiation_stamps_do_not_go_back_with_the_wall_clock() {
        let (a, b, mut ha, mut hb) = pair([0; 32]);
        let now = Instant::now();
        let mut m1 = [0u8; 148];
        let mut send = |ha: &mut Handshake, stamp, secs| {
            let e = Zeroizing::new(clamp([secs as u8; 32]));
            assert!(ha.create_initiation(&a, e, stamp, 1, &mut m1));
            let s = begin_consume_initiation(&b, &m1).unwrap();
            let later = now + std::time::Duration::from_secs(secs);
            let ok = hb.consume_initiation(s, &m1, later);
            (ok, hb.latest_timestamp)
        };
        assert_eq!(send(&mut ha, tai64n(1000, 0), 1), (true, tai64n(1000, 0)));
        assert_eq!(
            send(&mut ha, tai64n(0, 0), 2),
            (true, tai64n(1000, 20_000_000))
        );
        assert_eq!(
            send(&mut ha, tai64n(5, 0), 3),
            (true, tai64n(1000, 40_000_000))
        );
        assert_eq!(send(&mut ha, tai64n(1001, 0), 4), (true, tai64n(1001, 0)));
        // Clearing the handshake (session made, keys erased) keeps what was sent.
        ha.clear();
        assert_eq!(
            send(&mut ha, tai64n(9, 0), 5),
            (true, tai64n(1001, 20_000_000))
        );
    }

    #[test]
    fn psk_mismatch_fails_at_response() {
        let a = Identity::new(clamp([1; 32]));
        let b = Identity::new(clamp([2; 32]));
        let mut ha = Handshake::new(Some(&a), b.public, [1; 32]);
        let mut hb = Handshake::new(Some(&b), a.public, [2; 32]);
        let mut m1 = [0u8; 148];
        ha.create_initiation(&a, Zeroizing::new(clamp([3; 32])), tai64n(1, 0), 1, &mut m1);
        let s = begin_consume_initiation(&b, &m1).unwrap();
        assert!(hb.consume_initiation(s, &m1, Instant::now()));
        let mut m2 = [0u8; 92];
        assert!(hb.create_response(Zeroizing::new(clamp([4; 32])), 2, &mut m2));
        assert!(!ha.consume_response(&a, &m2));
    }

    #[test]
    fn tampered_initiation_is_refused() {
        let (a, b, mut ha, _) = pair([0; 32]);
        let mut m1 = [0u8; 148];
        ha.create_initiation(&a, Zeroizing::new(clamp([3; 32])), tai64n(1, 0), 1, &mut m1);
        for i in [8, 40, 87] {
            let mut m = m1;
            m[i] ^= 1;
            assert!(begin_consume_initiation(&b, &m).is_none());
        }
    }
}
