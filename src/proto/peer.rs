//! A peer: its static key, handshake, keypairs, timers, endpoint and counters (its
//! staged packets are the device's, in `staging`).

use crate::proto::cookie::CookieState;
use crate::proto::keypair::{Keypair, Keypairs};
use crate::proto::noise::{Handshake, Identity, SessionKeys};
use crate::proto::timers::Timers;
use std::net::SocketAddr;
use std::time::Instant;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PeerId(pub usize);

pub struct Peer {
    pub public_key: [u8; 32],
    pub handshake: Handshake,
    pub cookie: CookieState,
    pub keypairs: Keypairs,
    pub timers: Timers,
    pub endpoint: Option<SocketAddr>,
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    /// When the latest handshake completed (monotonic).
    pub last_handshake: Option<Instant>,
    /// When we last sent an initiation or a response, to send at most one initiation per
    /// REKEY_TIMEOUT.
    pub last_initiation_sent: Option<Instant>,
    /// Set once we started a handshake because the current session is about to expire.
    pub sent_lastminute_handshake: bool,
}

impl Peer {
    pub fn new(identity: Option<&Identity>, public_key: [u8; 32]) -> Self {
        Peer {
            public_key,
            handshake: Handshake::new(identity, public_key, [0; 32]),
            cookie: CookieState::new(&public_key),
            keypairs: Keypairs::default(),
            timers: Timers::default(),
            endpoint: None,
            rx_bytes: 0,
            tx_bytes: 0,
            last_handshake: None,
            last_initiation_sent: None,
            sent_lastminute_handshake: false,
        }
    }

    /// Installs the keys of a completed handshake and accounts for the authenticated message
    /// from `from` that completed it. Returns the local indices of keypairs it displaced.
    pub fn begin_session(
        &mut self,
        keys: SessionKeys,
        now: Instant,
        from: SocketAddr,
        rx_len: usize,
    ) -> [Option<u32>; 2] {
        let dropped = self.keypairs.insert(Keypair::new(keys, now));
        self.endpoint = Some(from);
        self.rx_bytes += rx_len as u64;
        self.timers.any_authenticated_packet_received();
        self.timers.any_authenticated_packet_traversal(now);
        self.timers.session_derived(now);
        dropped
    }

    pub fn has_psk(&self) -> bool {
        self.handshake.psk.iter().any(|&b| b != 0)
    }
}

/// `peer(AbCd…wxYz)`: enough of the public key to tell peers apart in logs.
pub fn short_key(key: &[u8; 32]) -> String {
    let b64 = base64(key);
    format!("peer({}…{})", &b64[..4], &b64[39..43])
}

/// Standard base64 with padding (the form `wg` prints keys in).
pub fn base64(data: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(T[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes standard padded base64 of exactly 32 bytes (a WireGuard key).
#[cfg(any(test, feature = "internals"))]
pub fn key_from_base64(s: &str) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    key_from_base64_into(s, &mut out).then_some(out)
}

/// [`key_from_base64`] into caller-provided storage (e.g. a `Zeroizing` buffer, so that a secret
/// key leaves no copy behind). On failure `out` may be partly written.
pub fn key_from_base64_into(s: &str, out: &mut [u8; 32]) -> bool {
    let s = s.trim();
    if s.len() != 44 || !s.ends_with('=') || s[..43].contains('=') {
        return false;
    }
    let mut bits: u32 = 0;
    let mut nbits = 0;
    let mut o = 0;
    for c in s[..43].bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return false,
        };
        bits = (bits << 6) | u32::from(v);
        nbits += 6;
        if nbits >= 8 {
            nbits -= 8;
            if o == 32 {
                return false;
            }
            out[o] = (bits >> nbits) as u8;
            o += 1;
        }
    }
    // 43 chars carry 258 bits: the last 2 must be zero in a canonical encoding.
    o == 32 && bits & ((1 << nbits) - 1) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trip() {
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"f"), "Zg==");
        for seed in 0..50u8 {
            let k: [u8; 32] =
                core::array::from_fn(|i| (i as u8).wrapping_mul(seed).wrapping_add(seed));
            let s = base64(&k);
            assert_eq!(s.len(), 44);
            assert_eq!(key_from_base64(&s), Some(k));
        }
        assert_eq!(key_from_base64("short"), None);
        assert_eq!(key_from_base64(&"A".repeat(44)), None);
        let mut bad = base64(&[0xff; 32]);
        bad.replace_range(42..43, "9"); // non-zero trailing bits
        assert_eq!(key_from_base64(&bad), None);
    }

    #[test]
    fn short_key_hides_most_of_the_key() {
        let s = short_key(&[0u8; 32]);
        assert_eq!(s, "peer(AAAA…AAAA)");
    }
}
