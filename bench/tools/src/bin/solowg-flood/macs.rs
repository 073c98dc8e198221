//! Initiator keys, mac1 and mac2, cookies, and TAI64N stamps.

use solowg::crypto;
use solowg::proto::cookie::{COOKIE_SECRET_LATENCY, COOKIE_SECRET_MAX_AGE, LABEL_MAC1};
use solowg::proto::wire::{cookie as cf, init};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Initiator key i = clamp(HASH("solowg-flood key" || seed || i)): reproducible, so the script
/// can configure the daemon with `keys` and the flooder derives the same private halves.
pub(crate) fn derive_private(seed: &str, i: usize) -> [u8; 32] {
    crypto::clamp(crypto::hash(&[
        b"solowg-flood key",
        seed.as_bytes(),
        &(i as u32).to_le_bytes(),
    ]))
}

/// mac1 key for messages sent TO the holder of `public` (whitepaper 5.4.4).
pub(crate) fn mac1_key(public: &[u8; 32]) -> [u8; 32] {
    crypto::hash(&[LABEL_MAC1, public])
}

/// A cookie received for one source socket (cookies are bound to source address and port).
#[derive(Clone, Copy)]
pub(crate) struct Cookie {
    pub(crate) value: [u8; 16],
    pub(crate) birth: Instant,
}

impl Cookie {
    /// Stop using a cookie a little before the responder rotates its secret, as cookie.rs does.
    fn fresh(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.birth) < COOKIE_SECRET_MAX_AGE - COOKIE_SECRET_LATENCY
    }
}

/// Writes mac1 (and mac2 when a fresh cookie is known, else zeros) into a 148-byte initiation;
/// returns mac1, which a cookie reply to this message uses as its associated data. Done here
/// rather than with cookie::CookieState because that keeps one cookie and one last mac1 per
/// peer, while we have many messages in flight per source.
pub(crate) fn add_macs(
    msg: &mut [u8],
    mac1_key: &[u8; 32],
    cookie: Option<&Cookie>,
    now: Instant,
) -> [u8; 16] {
    let mac1 = crypto::mac(mac1_key, &[&msg[..init::MAC1]]);
    msg[init::MAC1..init::MAC2].copy_from_slice(&mac1);
    set_mac2(msg, cookie, now);
    mac1
}

pub(crate) fn set_mac2(msg: &mut [u8], cookie: Option<&Cookie>, now: Instant) {
    let mac2 = match cookie {
        Some(c) if c.fresh(now) => crypto::mac(&c.value, &[&msg[..init::MAC2]]),
        _ => [0; 16],
    };
    msg[init::MAC2..init::MAC2 + 16].copy_from_slice(&mac2);
}

/// Decrypts a 64-byte cookie reply to a message whose mac1 was `mac1`.
pub(crate) fn open_cookie_reply(
    cookie_key: &[u8; 32],
    mac1: &[u8; 16],
    reply: &[u8],
) -> Option<[u8; 16]> {
    let mut nonce = [0u8; 24];
    nonce.copy_from_slice(&reply[cf::NONCE..cf::NONCE + 24]);
    let mut cookie = [0u8; 16];
    crypto::xopen_to(
        cookie_key,
        &nonce,
        mac1,
        &reply[cf::COOKIE..cf::COOKIE + 32],
        &mut cookie,
    )
    .then_some(cookie)
}

/// TAI64N of the wall clock at full nanosecond resolution (the responder only compares stamps).
pub(crate) fn tai64n_now() -> [u8; 12] {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    let mut t = [0u8; 12];
    t[..8].copy_from_slice(&(0x4000_0000_0000_000a_u64 + d.as_secs()).to_be_bytes());
    t[8..].copy_from_slice(&d.subsec_nanos().to_be_bytes());
    t
}

/// The next TAI64N after `t` (nanoseconds + 1, carrying into seconds).
pub(crate) fn tai64n_next(t: [u8; 12]) -> [u8; 12] {
    let mut s = u64::from_be_bytes(t[..8].try_into().unwrap_or([0; 8]));
    let mut n = u32::from_be_bytes(t[8..].try_into().unwrap_or([0; 4])) + 1;
    if n >= 1_000_000_000 {
        s += 1;
        n = 0;
    }
    let mut out = [0u8; 12];
    out[..8].copy_from_slice(&s.to_be_bytes());
    out[8..].copy_from_slice(&n.to_be_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps() {
        let t = tai64n_now();
        assert!(tai64n_next(t) > t);
        let mut edge = [0u8; 12];
        edge[8..].copy_from_slice(&999_999_999u32.to_be_bytes());
        assert_eq!(tai64n_next(edge)[7], 1);
    }
}
