//! What the device reports: `get=1`'s whole picture and the peers' states for frequent checks.

use super::Device;
use crate::proto::peer::Peer;
use crate::proto::uapi::DeviceInfo;
use crate::proto::uapi::PeerInfo;
use std::net::SocketAddr;
use std::time::Duration;
use std::time::Instant;
use std::time::UNIX_EPOCH;

/// What `Device::peer_states` gives of one peer: no secret, nothing that needs a copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerState<'a> {
    pub public_key: &'a [u8; 32],
    /// Unix (seconds, nanoseconds), as `PeerInfo::last_handshake`.
    pub last_handshake: Option<(u64, u32)>,
    pub endpoint: Option<SocketAddr>,
}

impl Device {
    /// Unix (seconds, nanoseconds) of a monotonic instant, as `get=1` reports handshakes.
    fn unix_time(&self, t: Instant) -> (u64, u32) {
        let d = self
            .wall(t)
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO);
        (d.as_secs(), d.subsec_nanos())
    }

    fn state_of<'a>(&self, p: &'a Peer) -> PeerState<'a> {
        PeerState {
            public_key: &p.public_key,
            last_handshake: p.last_handshake.map(|t| self.unix_time(t)),
            endpoint: p.endpoint,
        }
    }

    /// Every peer's key, last handshake and endpoint, in `info()`'s order. For checks that
    /// run often over many peers: `info()` walks the whole allowed-IPs trie once per peer and
    /// copies every key; this reads each peer's own fields and allocates nothing.
    pub fn peer_states(&self) -> impl Iterator<Item = PeerState<'_>> + '_ {
        self.peers.iter().flatten().map(|p| self.state_of(p))
    }

    /// One peer's `peer_states` entry, by public key.
    pub fn peer_state(&self, public_key: &[u8; 32]) -> Option<PeerState<'_>> {
        let id = self.peer_id(public_key)?;
        self.peer(id).map(|p| self.state_of(p))
    }

    /// Everything `get=1` reports.
    pub fn info(&self) -> DeviceInfo {
        let peers = self
            .peer_ids()
            .filter_map(|id| self.peer(id).map(|p| (id, p)))
            .map(|(id, p)| PeerInfo {
                public_key: p.public_key,
                preshared_key: p.has_psk().then(|| p.handshake.psk.clone()),
                endpoint: p.endpoint,
                last_handshake: p.last_handshake.map(|t| self.unix_time(t)),
                tx_bytes: p.tx_bytes,
                rx_bytes: p.rx_bytes,
                persistent_keepalive: p.timers.keepalive_interval,
                allowed_ips: self.routes.prefixes_of(id),
            })
            .collect();
        DeviceInfo {
            private_key: self.identity.as_ref().map(|i| i.private.clone()),
            listen_port: self.listen_port,
            fwmark: self.fwmark,
            peers,
        }
    }
}
