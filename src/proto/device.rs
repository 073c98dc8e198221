//! The device: all protocol state of one WireGuard interface, owned by one thread.
//!
//! Sans-IO: every entry point takes `now` and a caller's buffer and says what to do with it
//! (`Verdict`), or fills the buffer with a queued control message (`poll_output`). The data
//! path lives in `send.rs` and `receive.rs`; this file holds identity, peers, the index table,
//! configuration changes and timer expiry.

mod apply;
mod drop_reason;
mod status;
#[cfg(test)]
mod tests;
mod timer_expiry;
mod under_load;

#[cfg(any(test, feature = "internals"))]
pub use apply::Applied;
pub use apply::ApplyProgress;
pub use drop_reason::DropReason;
#[cfg(any(test, feature = "internals"))]
pub use status::PeerState;
use under_load::{
    TimeBudget, COOKIE_LIMITER_CAPACITY, COOKIE_REPLY_BURST, HANDSHAKE_SHARE_PERCENT,
    QUIET_SHARE_PERCENT,
};
pub use under_load::{COOKIE_REPLIES_PER_SECOND, DEFAULT_UNDER_LOAD_RATE};

use crate::crypto::Rng;
use crate::proto::allowedips::AllowedIps;
use crate::proto::cookie::CookieChecker;
use crate::proto::index_hasher::BuildIndexHasher;
use crate::proto::noise::Identity;
use crate::proto::peer::{Peer, PeerId};
use crate::proto::ratelimiter::RateLimiter;
use crate::proto::staging::Staging;
use crate::proto::wire::INDEX_TAG_MASK;
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::time::{Instant, SystemTime};

/// What the caller should do with the buffer it passed in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing to send or write (any follow-up is queued for `poll_output`).
    Done,
    Drop(DropReason),
    /// Send `buf[..len]` as one UDP datagram to `to`.
    SendUdp {
        to: SocketAddr,
        len: usize,
    },
    /// Write `buf[start..start + len]` to the TUN device.
    WriteTun {
        start: usize,
        len: usize,
    },
}

/// A control message waiting to be built and sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pending {
    Initiation(PeerId),
    Keepalive(PeerId),
    /// Send the peer's staged packets (a handshake just completed).
    Flush(PeerId),
}

pub struct Device {
    pub(crate) identity: Option<Identity>,
    pub listen_port: u16,
    pub fwmark: u32,
    /// Inner MTU: padding never grows a packet past it.
    pub mtu: usize,
    pub(crate) peers: Vec<Option<Peer>>,
    /// Indices of `peers` freed by removals, for reuse; entries past the end (after
    /// `shrink_tables`) or refilled are skipped when taken. Adding a peer was a scan for a
    /// free slot, which made a large `set` quadratic.
    free: Vec<usize>,
    pub(crate) by_key: HashMap<[u8; 32], PeerId>,
    /// Receiver index → peer; the keypair or handshake is then found inside the peer.
    pub(crate) indices: HashMap<u32, PeerId, BuildIndexHasher>,
    pub(crate) routes: AllowedIps<PeerId>,
    pub(crate) checker: CookieChecker,
    pub(crate) limiter: RateLimiter,
    /// Under load, cookie replies per source (see COOKIE_REPLIES_PER_SECOND).
    pub(crate) cookie_limiter: RateLimiter,
    pub(crate) rng: Rng,
    pub(crate) pending: VecDeque<Pending>,
    /// Packets waiting for their peers' handshakes, bounded for the whole device.
    pub(crate) staging: Staging,
    /// Lower bound of every peer's earliest deadline (may be early, never late).
    pub(crate) wake_at: Option<Instant>,
    pub under_load_rate: u32,
    pub(crate) load_window: (Instant, u32),
    pub(crate) under_load_until: Option<Instant>,
    /// Handshake time budget under load; see HANDSHAKE_SHARE_PERCENT.
    handshake_budget: TimeBudget,
    /// The quiet sources' budget, and whether the message in hand was admitted by it.
    quiet_budget: TimeBudget,
    charge_quiet: bool,
    drops: [u64; DropReason::ALL.len()],
    wall_base: (Instant, SystemTime),
    /// Greatest TAI64N this device sent any peer: a peer added again (`wg setconf`) starts
    /// above it, so its stamps stay above those its earlier self sent.
    pub(crate) last_sent_timestamp: [u8; 12],
    index_tag: u16,
}

impl Device {
    /// `now` and `wall_now` are read together; the shell reads them again as time goes on
    /// (`set_wall_clock`), so the core never reads a clock itself and still follows a wall
    /// clock that jumps (a router without RTC boots in the past until NTP sets it).
    pub fn new(now: Instant, wall_now: SystemTime, mut rng: Rng) -> Self {
        let index_tag = (rng.u32() & INDEX_TAG_MASK) as u16;
        Device {
            index_tag,
            identity: None,
            listen_port: 0,
            fwmark: 0,
            mtu: 1420,
            peers: Vec::new(),
            free: Vec::new(),
            by_key: HashMap::new(),
            indices: HashMap::default(),
            routes: AllowedIps::new(),
            checker: CookieChecker::new(None),
            limiter: RateLimiter::new(),
            cookie_limiter: RateLimiter::with_params(
                COOKIE_REPLIES_PER_SECOND,
                COOKIE_REPLY_BURST,
                COOKIE_LIMITER_CAPACITY,
            ),
            rng,
            pending: VecDeque::new(),
            staging: Staging::default(),
            wake_at: None,
            under_load_rate: DEFAULT_UNDER_LOAD_RATE,
            load_window: (now, 0),
            under_load_until: None,
            handshake_budget: TimeBudget::new(now, HANDSHAKE_SHARE_PERCENT),
            quiet_budget: TimeBudget::new(now, QUIET_SHARE_PERCENT),
            charge_quiet: false,
            drops: [0; DropReason::ALL.len()],
            wall_base: (now, wall_now),
            last_sent_timestamp: [0; 12],
        }
    }

    pub fn public_key(&self) -> Option<[u8; 32]> {
        self.identity.as_ref().map(|i| i.public)
    }

    pub fn peer_id(&self, public_key: &[u8; 32]) -> Option<PeerId> {
        self.by_key.get(public_key).copied()
    }

    pub fn peer(&self, id: PeerId) -> Option<&Peer> {
        self.peers.get(id.0).and_then(Option::as_ref)
    }

    pub(crate) fn peer_mut(&mut self, id: PeerId) -> Option<&mut Peer> {
        self.peers.get_mut(id.0).and_then(Option::as_mut)
    }

    pub fn peer_ids(&self) -> impl Iterator<Item = PeerId> + '_ {
        self.peers
            .iter()
            .enumerate()
            .filter(|(_, p)| p.is_some())
            .map(|(i, _)| PeerId(i))
    }

    /// Packets waiting for handshakes, for the whole device.
    pub fn staging(&self) -> &Staging {
        &self.staging
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn peer_count(&self) -> usize {
        self.by_key.len()
    }

    pub fn drops(&self) -> impl Iterator<Item = (DropReason, u64)> + '_ {
        DropReason::ALL.iter().map(|&r| (r, self.drops[r as usize]))
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn drop_count(&self, r: DropReason) -> u64 {
        self.drops[r as usize]
    }

    /// Tests only: the peer's current keypair goes on sending from `counter`, as if that
    /// many messages had gone out under it (REKEY_AFTER_MESSAGES, 2^60, cannot be reached by
    /// sending). False if the peer has no current keypair.
    #[cfg(any(test, feature = "internals"))]
    pub fn set_send_counter(&mut self, id: PeerId, counter: u64) -> bool {
        match self.peer_mut(id).and_then(|p| p.keypairs.current.as_mut()) {
            Some(kp) => {
                kp.send_counter = counter;
                true
            }
            None => false,
        }
    }

    pub(crate) fn count_drop(&mut self, r: DropReason) -> Verdict {
        self.drops[r as usize] += 1;
        Verdict::Drop(r)
    }

    /// The wall clock as the shell just read it at monotonic `now`. Handshake timestamps
    /// and handshake ages follow it from then on: after a jump of the wall clock forward, the
    /// next initiation carries the new time (after a jump back, a time just above the last
    /// one sent, until the clock passes it), and a handshake made 2 minutes ago stays 2
    /// minutes old.
    pub fn set_wall_clock(&mut self, now: Instant, wall_now: SystemTime) {
        self.wall_base = (now, wall_now);
    }

    /// Wall-clock time corresponding to a monotonic instant, from the latest reading.
    pub fn wall(&self, t: Instant) -> SystemTime {
        match t.checked_duration_since(self.wall_base.0) {
            Some(d) => self.wall_base.1 + d,
            None => self.wall_base.1 - self.wall_base.0.duration_since(t),
        }
    }

    /// The low 12 bits (INDEX_TAG_MASK) of every receiver index this device hands out,
    /// random per device. The I/O shell's kernel filter steers data messages carrying it to
    /// the data socket and all else to the handshake socket: of a flood of made-up data
    /// messages, 1 in 4096 reaches the tunnel's queue. A sender learns the tag only from a
    /// session with us or by watching our traffic. 20 random bits remain per index.
    pub fn index_tag(&self) -> u16 {
        self.index_tag
    }

    pub(crate) fn new_index(&mut self, peer: PeerId) -> u32 {
        loop {
            let i = (self.rng.u32() & !INDEX_TAG_MASK) | u32::from(self.index_tag);
            if i != 0 && !self.indices.contains_key(&i) {
                self.indices.insert(i, peer);
                return i;
            }
        }
    }

    pub(crate) fn forget_indices(&mut self, dropped: &[Option<u32>]) {
        for i in dropped.iter().flatten() {
            self.indices.remove(i);
        }
    }

    /// Lowers the wake-up time if a peer now has an earlier deadline.
    pub(crate) fn note_deadline(&mut self, id: PeerId) {
        if let Some(t) = self.peer(id).and_then(|p| p.timers.earliest()) {
            self.wake_at = Some(self.wake_at.map_or(t, |w| w.min(t)));
        }
    }

    /// When the event loop must call `update_timers` next; `None` means never (idle).
    pub fn next_deadline(&self) -> Option<Instant> {
        self.wake_at
    }

    /// The peer whose allowed IPs contain this address (raw 4 or 16 bytes).
    #[cfg(any(test, feature = "internals"))]
    pub fn route(&self, addr: &[u8]) -> Option<PeerId> {
        self.routes.lookup_bytes(addr)
    }
}
