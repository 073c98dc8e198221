//! The device: all protocol state of one WireGuard interface, owned by one thread.
//!
//! Sans-IO: every entry point takes `now` and a caller's buffer and says what to do with it
//! (`Verdict`), or fills the buffer with a queued control message (`poll_output`). The data
//! path lives in `send.rs` and `receive.rs`; this file holds identity, peers, the index table,
//! configuration changes and timer expiry.

use crate::crypto::Rng;
use crate::log;
use crate::proto::allowedips::AllowedIps;
use crate::proto::cookie::CookieChecker;
use crate::proto::index_hasher::BuildIndexHasher;
use crate::proto::noise::Identity;
use crate::proto::peer::{short_key, Peer, PeerId};
use crate::proto::ratelimiter::RateLimiter;
use crate::proto::staging::Staging;
use crate::proto::uapi::{DeviceInfo, PeerInfo, SetRequest};
use crate::proto::wire::INDEX_TAG_MASK;
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Why a packet was dropped. Counted per reason; never an error to propagate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum DropReason {
    /// Wrong size or type for a WireGuard message.
    Malformed,
    /// mac1 did not verify: not for us, or garbage.
    BadMac1,
    /// Under load without a valid mac2: answered with a cookie reply instead.
    CookieRequired,
    /// Per-source handshake rate exceeded while under load.
    RateLimited,
    /// No private key configured.
    NoIdentity,
    /// An initiation from a static key we don't know.
    UnknownPeer,
    /// Handshake did not decrypt, was replayed, or came too fast.
    HandshakeFailed,
    /// Receiver index matches no session or handshake.
    UnknownIndex,
    /// Session older than REJECT_AFTER_TIME or out of nonces.
    ExpiredKeypair,
    /// Counter already seen or too old.
    Replay,
    /// Authentication tag wrong.
    DecryptFailed,
    /// Decrypted payload is not a well-formed IP packet.
    InvalidInner,
    /// Inner source address not in the sending peer's allowed IPs.
    DisallowedSource,
    /// Outbound packet to an address no peer is allowed to have.
    NoRoute,
    /// Outbound packet for a peer whose endpoint is unknown.
    NoEndpoint,
    /// Outbound packet that is not IPv4/IPv6 or is truncated.
    NotIp,
    /// Staged packets over the peer's or the device's bound while waiting for a handshake
    /// (oldest dropped).
    StagedOverflow,
    /// Packet does not fit the caller's buffer.
    TooBig,
}

impl DropReason {
    pub const ALL: [DropReason; 18] = [
        DropReason::Malformed,
        DropReason::BadMac1,
        DropReason::CookieRequired,
        DropReason::RateLimited,
        DropReason::NoIdentity,
        DropReason::UnknownPeer,
        DropReason::HandshakeFailed,
        DropReason::UnknownIndex,
        DropReason::ExpiredKeypair,
        DropReason::Replay,
        DropReason::DecryptFailed,
        DropReason::InvalidInner,
        DropReason::DisallowedSource,
        DropReason::NoRoute,
        DropReason::NoEndpoint,
        DropReason::NotIp,
        DropReason::StagedOverflow,
        DropReason::TooBig,
    ];

    pub fn name(self) -> &'static str {
        match self {
            DropReason::Malformed => "malformed",
            DropReason::BadMac1 => "bad_mac1",
            DropReason::CookieRequired => "cookie_required",
            DropReason::RateLimited => "rate_limited",
            DropReason::NoIdentity => "no_identity",
            DropReason::UnknownPeer => "unknown_peer",
            DropReason::HandshakeFailed => "handshake_failed",
            DropReason::UnknownIndex => "unknown_index",
            DropReason::ExpiredKeypair => "expired_keypair",
            DropReason::Replay => "replay",
            DropReason::DecryptFailed => "decrypt_failed",
            DropReason::InvalidInner => "invalid_inner",
            DropReason::DisallowedSource => "disallowed_source",
            DropReason::NoRoute => "no_route",
            DropReason::NoEndpoint => "no_endpoint",
            DropReason::NotIp => "not_ip",
            DropReason::StagedOverflow => "staged_overflow",
            DropReason::TooBig => "too_big",
        }
    }
}

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

/// Handshake messages per second above which we consider ourselves under load and demand
/// cookies. The Linux driver uses a queue depth; with no queue we count a rate.
pub const DEFAULT_UNDER_LOAD_RATE: u32 = 200;
const UNDER_LOAD_STICKY: Duration = Duration::from_secs(1);
/// Under load, at most this many cookie replies per second per source address (burst
/// COOKIE_REPLY_BURST); the rest are dropped without a reply. A cookie stays valid for two
/// minutes and an initiator retries every 5 s, so a real peer needs one reply in a long while;
/// without this limit a flood of mac1-valid initiations made the daemon send one reply per
/// packet, and those sends (a `sendto` each) took half its CPU while the socket overflowed
/// with the tunnel's own packets in it (bench/flood, `init` phase).
pub const COOKIE_REPLIES_PER_SECOND: u32 = 5;
const COOKIE_REPLY_BURST: u32 = 10;
const COOKIE_LIMITER_CAPACITY: usize = 8192;
/// Under load, handshake messages (their Noise work: X25519) may take this share of the
/// time, in percent; past it they are dropped as rate-limited until the budget refills.
/// The per-source limit alone admits 20 a second from every address: 256 addresses sending
/// mac2-valid initiations asked for ~5,000 X25519 a second, more than the CPU had, and the
/// tunnel's packets waited behind them (bench/flood, `cookies` phase). The time is what the
/// I/O shell measures around each message (`charge_handshake`): wall time, so a thread that
/// gets only part of the CPU is charged for the part it waited too, and the share holds of
/// the CPU it gets. The shell charges only while a tunnel carries data: with none to
/// protect, handshakes may use all the time there is. 10%: in the `cookies` flood 25%
/// kept 42% of the unloaded throughput on one CPU, 10% kept 52%; legitimate handshakes
/// still get ~2,000 X25519 a second.
const HANDSHAKE_SHARE_PERCENT: u32 = 10;
/// A second, smaller share for sources that sent no handshake message in the last second
/// (a real peer retries every 5 s; a flooding source never goes quiet): with the main budget
/// spent by a flood from 256 sources holding cookies, a new peer's initiation found it empty
/// and its handshake waited until the flood or the tunnel's traffic stopped (bench/flood,
/// `cookies` phase, check peer). An attacker needs an address per initiation a second to
/// take this share from real peers.
const QUIET_SHARE_PERCENT: u32 = 5;
/// Most unspent budget kept: a burst of this much handshake work right after a quiet spell.
/// The same bound applies to debt, so one handshake that took very long (the thread was
/// preempted in the middle of it) does not lock handshakes out for long.
const HANDSHAKE_BUDGET_MAX: Duration = Duration::from_millis(20);
const HANDSHAKE_BUDGET_MAX_NS: i64 = HANDSHAKE_BUDGET_MAX.as_nanos() as i64;

/// A share of the time, earned as time passes and spent by what the I/O shell reports.
/// Signed: work that costs more than was left leaves a debt to earn back first (with the
/// balance clamped at zero, every message arriving a microsecond after the last found a
/// microsecond of budget, and X25519 took half the CPU under a mac2-valid flood). Credit
/// and debt are both bounded by HANDSHAKE_BUDGET_MAX.
struct TimeBudget {
    last: Instant,
    balance_ns: i64,
    percent: u32,
}

impl TimeBudget {
    fn new(now: Instant, percent: u32) -> Self {
        TimeBudget {
            last: now,
            balance_ns: HANDSHAKE_BUDGET_MAX_NS,
            percent,
        }
    }

    /// Refills for the time since the last call; whether anything is left.
    fn left(&mut self, now: Instant) -> bool {
        let earned =
            now.saturating_duration_since(self.last).as_nanos() * u128::from(self.percent) / 100;
        let earned = earned.min(2 * HANDSHAKE_BUDGET_MAX_NS as u128) as i64;
        self.balance_ns = (self.balance_ns + earned).min(HANDSHAKE_BUDGET_MAX_NS);
        self.last = now.max(self.last);
        self.balance_ns > 0
    }

    fn charge(&mut self, spent: Duration) {
        let spent = spent.as_nanos().min(2 * HANDSHAKE_BUDGET_MAX_NS as u128) as i64;
        self.balance_ns = (self.balance_ns - spent).max(-HANDSHAKE_BUDGET_MAX_NS);
    }
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

/// What `Device::peer_states` gives of one peer: no secret, nothing that needs a copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerState<'a> {
    pub public_key: &'a [u8; 32],
    /// Unix (seconds, nanoseconds), as `PeerInfo::last_handshake`.
    pub last_handshake: Option<(u64, u32)>,
    pub endpoint: Option<SocketAddr>,
}

/// Where an `apply` spread over loop turns stands (see `Device::apply_begin`).
#[derive(Clone, Copy, Debug)]
pub struct ApplyProgress {
    /// The next peer change of the request.
    next: usize,
    /// The interface's public key as the request set it: a peer of that key is skipped.
    own: Option<[u8; 32]>,
    pub applied: Applied,
}

impl ApplyProgress {
    /// Peer changes applied so far.
    pub fn done(&self) -> usize {
        self.next
    }
}

/// What `apply` changed that the I/O shell must act on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Applied {
    pub listen_port_changed: bool,
    pub fwmark_changed: bool,
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

    // ---- configuration -------------------------------------------------------------------

    /// Applies a validated `set=1` request as a whole. The shell has already bound a new
    /// listen port if one was requested, so nothing here can fail half-way. (The daemon
    /// itself goes through `apply_begin` and `apply_peers`.)
    #[cfg(any(test, feature = "internals"))]
    pub fn apply(&mut self, req: &SetRequest, now: Instant) -> Applied {
        let mut p = self.apply_begin(req);
        while !self.apply_peers(req, &mut p, usize::MAX) {}
        let _ = now;
        p.applied
    }

    /// The first part of `apply`: the interface's own settings and, for `replace_peers`,
    /// the removal of every peer. The peers' changes follow through `apply_peers`, which
    /// the shell calls in slices between packet batches for a long request: the result is
    /// the same as `apply`'s, only spread over loop turns.
    pub fn apply_begin(&mut self, req: &SetRequest) -> ApplyProgress {
        let mut applied = Applied::default();
        if let Some(key) = &req.private_key {
            self.set_private_key(key.as_ref().map(|k| **k));
        }
        if let Some(port) = req.listen_port {
            applied.listen_port_changed = port != self.listen_port;
            self.listen_port = port;
        }
        if let Some(mark) = req.fwmark {
            applied.fwmark_changed = mark != self.fwmark;
            self.fwmark = mark;
        }
        if req.replace_peers {
            // The whole table at once: removing each peer's prefixes walks the trie, so
            // peer by peer that was quadratic in the number of peers.
            self.routes = AllowedIps::new();
            let ids: Vec<PeerId> = self.peer_ids().collect();
            for id in ids {
                self.remove_peer(id);
            }
        }
        ApplyProgress {
            next: 0,
            own: self.public_key(),
            applied,
        }
    }

    /// Applies up to `max` more of the request's peer changes; true once all are applied.
    pub fn apply_peers(&mut self, req: &SetRequest, p: &mut ApplyProgress, max: usize) -> bool {
        let end = p.next.saturating_add(max).min(req.peers.len());
        for change in &req.peers[p.next..end] {
            if Some(change.public_key) == p.own {
                continue;
            }
            let existing = self.peer_id(&change.public_key);
            if change.remove {
                if let Some(id) = existing {
                    self.remove_peer(id);
                }
                continue;
            }
            let id = match existing {
                Some(id) => id,
                None if change.update_only => continue,
                None => self.add_peer(change.public_key),
            };
            // A new peer has no prefixes (`remove_peer` takes them with it), and finding a
            // peer's prefixes walks the whole trie: wg sends replace_allowed_ips for every
            // peer, which made a large addconf or setconf quadratic.
            if change.replace_allowed_ips && existing.is_some() {
                self.routes.remove_value(id);
            }
            for a in &change.allowed_ips {
                if a.remove {
                    self.routes.remove(a.addr, a.cidr, id);
                } else {
                    self.routes.insert(a.addr, a.cidr, id);
                }
            }
            let Some(peer) = self.peer_mut(id) else {
                continue;
            };
            if let Some(psk) = &change.preshared_key {
                *peer.handshake.psk = psk.as_ref().map_or([0; 32], |k| **k);
            }
            if let Some(ep) = change.endpoint {
                peer.endpoint = Some(crate::proto::endpoint::canonical(ep));
            }
            if let Some(interval) = change.persistent_keepalive {
                let was_off = peer.timers.keepalive_interval == 0;
                peer.timers.keepalive_interval = interval;
                if interval == 0 {
                    peer.timers.persistent_keepalive = None;
                } else if was_off && self.identity.is_some() {
                    // Turning it on sends one at once, as the kernel does.
                    self.pending.push_back(Pending::Keepalive(id));
                }
            }
        }
        p.next = end;
        end == req.peers.len()
    }

    fn set_private_key(&mut self, key: Option<[u8; 32]>) {
        let new_public = key.map(|k| crate::crypto::public_key(&k));
        if self.identity.as_ref().map(|i| i.public) == new_public && key.is_some() {
            return; // unchanged: keep every session (wg syncconf relies on this)
        }
        self.identity = key.map(Identity::new);
        self.checker.set_public(new_public.as_ref());
        // A peer with our own public key cannot exist.
        if let Some(id) = new_public.and_then(|p| self.peer_id(&p)) {
            self.remove_peer(id);
        }
        let ids: Vec<PeerId> = self.peer_ids().collect();
        for id in ids {
            let Some(peer) = self.peers[id.0].as_mut() else {
                continue;
            };
            let old_hs = peer.handshake.local_index;
            peer.handshake.set_identity(self.identity.as_ref());
            let dropped = peer.keypairs.clear();
            peer.timers.stop_all();
            self.forget_indices(&dropped);
            self.forget_indices(&[Some(old_hs).filter(|&i| i != 0)]);
        }
        log::info(format_args!(
            "interface key {}",
            if key.is_some() { "set" } else { "removed" }
        ));
    }

    pub fn add_peer(&mut self, public_key: [u8; 32]) -> PeerId {
        if let Some(id) = self.peer_id(&public_key) {
            return id;
        }
        let mut peer = Peer::new(self.identity.as_ref(), public_key);
        peer.handshake.last_sent_timestamp = self.last_sent_timestamp;
        let slot = loop {
            match self.free.pop() {
                Some(i) if self.peers.get(i).is_some_and(Option::is_none) => break Some(i),
                Some(_) => continue, // shrunk away or taken since
                None => break None,
            }
        };
        let id = match slot {
            Some(i) => {
                self.peers[i] = Some(peer);
                PeerId(i)
            }
            None => {
                self.peers.push(Some(peer));
                PeerId(self.peers.len() - 1)
            }
        };
        self.by_key.insert(public_key, id);
        log::verbose(format_args!("{} created", short_key(&public_key)));
        id
    }

    pub fn remove_peer(&mut self, id: PeerId) {
        let Some(mut peer) = self.peers.get_mut(id.0).and_then(Option::take) else {
            return;
        };
        self.free.push(id.0);
        self.by_key.remove(&peer.public_key);
        self.routes.remove_value(id);
        let dropped = peer.keypairs.clear();
        self.forget_indices(&dropped);
        if peer.handshake.local_index != 0 {
            self.indices.remove(&peer.handshake.local_index);
        }
        self.pending.retain(|p| match p {
            Pending::Initiation(i) | Pending::Keepalive(i) | Pending::Flush(i) => *i != id,
        });
        self.staging.clear(id);
        self.shrink_tables();
        log::verbose(format_args!("{} removed", short_key(&peer.public_key)));
    }

    /// After removals: gives back the memory of tables sized for many more peers than are
    /// left (halving at most, so removing peers one by one costs O(1) each, amortised).
    fn shrink_tables(&mut self) {
        while matches!(self.peers.last(), Some(None)) {
            self.peers.pop();
        }
        let n = self.peers.len();
        if self.peers.capacity() >= 4 * n.max(8) {
            self.peers.shrink_to(2 * n);
        }
        // Stale entries are skipped when taken; keep the list from outgrowing the table.
        if self.free.len() > 2 * n.max(8) {
            self.free.retain(|&i| i < n);
            self.free.shrink_to(2 * n);
        }
        let n = self.by_key.len();
        if self.by_key.capacity() >= 4 * n.max(8) {
            self.by_key.shrink_to(2 * n);
        }
        let n = self.indices.len();
        if self.indices.capacity() >= 4 * n.max(8) {
            self.indices.shrink_to(2 * n);
        }
    }

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

    // ---- timers --------------------------------------------------------------------------

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

    /// Whether handshakes are arriving faster than we want to spend CPU on; sticky for 1 s.
    pub(crate) fn under_load(&mut self, now: Instant) -> bool {
        let (start, count) = self.load_window;
        if now.saturating_duration_since(start) >= Duration::from_secs(1) {
            self.load_window = (now, 1);
        } else {
            self.load_window.1 = count + 1;
            if self.load_window.1 > self.under_load_rate {
                self.under_load_until = Some(now + UNDER_LOAD_STICKY);
            }
        }
        self.under_load_until.is_some_and(|u| now < u)
    }

    /// Under load: whether a handshake message may have its Noise work done, by the main
    /// budget or, for a source that sent no handshake message for a second (`quiet`, see
    /// QUIET_SHARE_PERCENT), by the quiet sources' budget, which is then charged for it.
    pub(crate) fn budget_admits(&mut self, now: Instant, quiet: bool) -> bool {
        self.charge_quiet = false;
        if self.handshake_budget.left(now) {
            return true;
        }
        self.charge_quiet = quiet && self.quiet_budget.left(now);
        self.charge_quiet
    }

    /// The I/O shell reports the time a handshake message (initiation or response) took to
    /// handle; under load it is spent from the budget that admitted it (the core reads no
    /// clock itself).
    pub fn charge_handshake(&mut self, spent: Duration) {
        if std::mem::take(&mut self.charge_quiet) {
            self.quiet_budget.charge(spent);
        } else {
            self.handshake_budget.charge(spent);
        }
    }

    /// The peer whose allowed IPs contain this address (raw 4 or 16 bytes).
    #[cfg(any(test, feature = "internals"))]
    pub fn route(&self, addr: &[u8]) -> Option<PeerId> {
        self.routes.lookup_bytes(addr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::clamp;
    use crate::proto::uapi::PeerChange;
    use std::net::Ipv4Addr;
    use zeroize::Zeroizing;

    fn device(i: u8, now: Instant, wall: SystemTime) -> Device {
        let mut d = Device::new(now, wall, Rng::from_seed([i; 32]));
        let req = SetRequest {
            private_key: Some(Some(Zeroizing::new(clamp([i; 32])))),
            ..SetRequest::default()
        };
        d.apply(&req, now);
        d
    }

    fn add_peer(d: &mut Device, key: [u8; 32], now: Instant) -> PeerId {
        let mut pc = PeerChange::new(key);
        pc.endpoint = Some(SocketAddr::from((Ipv4Addr::LOCALHOST, 1)));
        let req = SetRequest {
            peers: vec![pc],
            ..SetRequest::default()
        };
        d.apply(&req, now);
        d.peer_id(&key).unwrap()
    }

    /// A request of `n` peers with distinct keys, a /32 each, and an endpoint.
    fn many_peers(n: usize, seed: u8) -> SetRequest {
        let peers = (0..n)
            .map(|i| {
                let mut key = [seed; 32];
                key[..8].copy_from_slice(&(i as u64).to_le_bytes());
                let mut pc = PeerChange::new(key);
                pc.endpoint = Some(SocketAddr::from((Ipv4Addr::LOCALHOST, 1 + i as u16)));
                // As wg sends every peer of a configuration file.
                pc.replace_allowed_ips = true;
                pc.allowed_ips.push(crate::proto::uapi::AllowedIpChange {
                    addr: std::net::IpAddr::from(Ipv4Addr::from(
                        0x0a00_0000 + (u32::from(seed) << 16) + i as u32,
                    )),
                    cidr: 32,
                    remove: false,
                });
                pc
            })
            .collect();
        SetRequest {
            peers,
            ..SetRequest::default()
        }
    }

    /// Trie nodes scanned while `n` new peers are added (`set` without replace_peers, as
    /// `wg addconf` sends it: replace_allowed_ips on every peer) to a device holding `n`
    /// others. Counted, not timed: the count is the same on any machine.
    fn scans_to_add(n: usize) -> u64 {
        let t0 = Instant::now();
        let mut d = Device::new(t0, SystemTime::now(), Rng::from_seed([3; 32]));
        d.apply(&many_peers(n, 9), t0);
        let req = many_peers(n, 10);
        let scanned = crate::proto::allowedips::work::nodes_scanned(|| {
            d.apply(&req, t0);
        });
        assert_eq!(d.peer_count(), 2 * n);
        scanned
    }

    /// Adding peers is linear: finding a new peer's prefixes to replace them scanned the
    /// whole trie once per peer, so 30k peers took seconds in one request. A new peer has
    /// none, so nothing is scanned at all.
    #[test]
    fn adding_peers_scans_no_trie() {
        assert_eq!(scans_to_add(1000), 0);
    }

    /// Trie nodes scanned by a `set` with replace_peers (wg setconf) of `n` new peers over
    /// `n` others.
    fn scans_to_replace(n: usize) -> u64 {
        let t0 = Instant::now();
        let mut d = Device::new(t0, SystemTime::now(), Rng::from_seed([3; 32]));
        d.apply(&many_peers(n, 9), t0);
        let mut req = many_peers(n, 10);
        req.replace_peers = true;
        let scanned = crate::proto::allowedips::work::nodes_scanned(|| {
            d.apply(&req, t0);
        });
        assert_eq!(d.peer_count(), n);
        scanned
    }

    /// Replacing every peer scans at most linearly many nodes: removing the old peers one by
    /// one walked the trie for each (quadratic); the table is dropped whole instead.
    #[test]
    fn replacing_peers_is_linear() {
        let (small, big) = (scans_to_replace(1000), scans_to_replace(32000));
        assert!(
            big <= 32 * small.max(1000),
            "{small} nodes scanned for 1,000 peers, {big} for 32,000"
        );
    }

    /// Slots freed by removals are reused, without growing the table.
    #[test]
    fn freed_slots_are_reused() {
        let t0 = Instant::now();
        let mut d = device(1, t0, SystemTime::now());
        d.apply(&many_peers(100, 5), t0);
        let len = d.peers.len();
        let mut gone = many_peers(100, 5);
        gone.peers.retain(|p| p.public_key[0] % 3 == 0);
        for p in &mut gone.peers {
            p.remove = true;
        }
        let removed = gone.peers.len();
        d.apply(&gone, t0);
        assert_eq!(d.peer_count(), 100 - removed);
        d.apply(&many_peers(removed, 6), t0);
        assert_eq!(d.peer_count(), 100);
        assert_eq!(d.peers.len(), len, "a freed slot was not reused");
        // Every peer reachable by key and by route.
        for p in many_peers(100, 5)
            .peers
            .iter()
            .filter(|p| p.public_key[0] % 3 != 0)
        {
            let id = d.peer_id(&p.public_key).unwrap();
            let a = p.allowed_ips[0].addr;
            let std::net::IpAddr::V4(v4) = a else {
                unreachable!()
            };
            assert_eq!(d.route(&v4.octets()), Some(id));
        }
    }

    /// A request applied in slices ends where the whole of it does.
    #[test]
    fn a_request_in_slices_ends_as_the_whole() {
        let t0 = Instant::now();
        let mut whole = device(1, t0, SystemTime::now());
        let mut sliced = device(1, t0, SystemTime::now());
        for d in [&mut whole, &mut sliced] {
            d.apply(&many_peers(50, 4), t0);
        }
        let mut req = many_peers(300, 7);
        req.replace_peers = true;
        req.fwmark = Some(9);
        // Our own key among the peers is skipped; a removal and an update-only change too.
        let own = whole.public_key().unwrap();
        req.peers.push(PeerChange::new(own));
        let mut rm = PeerChange::new(req.peers[10].public_key);
        rm.remove = true;
        req.peers.push(rm);
        let mut upd = PeerChange::new([0xee; 32]);
        upd.update_only = true;
        req.peers.push(upd);
        let a = whole.apply(&req, t0);
        let mut p = sliced.apply_begin(&req);
        let mut slices = 1;
        while !sliced.apply_peers(&req, &mut p, 7) {
            slices += 1;
        }
        assert!(slices > 40, "{slices}");
        assert_eq!(p.done(), req.peers.len());
        assert_eq!(p.applied, a);
        assert_eq!(whole.peer_count(), 299);
        let show = |d: &Device| {
            let mut v: Vec<String> = d
                .info()
                .peers
                .iter()
                .map(|p| format!("{:?} {:?} {:?}", p.public_key, p.endpoint, p.allowed_ips))
                .collect();
            v.sort();
            v
        };
        assert_eq!(show(&whole), show(&sliced));
        assert_eq!(whole.fwmark, sliced.fwmark);
    }

    /// `a` starts a handshake with its peer `id`, `b`: whether `b` answers the initiation.
    fn initiation_answered(a: &mut Device, b: &mut Device, id: PeerId, now: Instant) -> bool {
        a.request_handshake(id, now, false);
        let mut buf = [0u8; 256];
        let Some((_, len)) = a.poll_output(now, &mut buf) else {
            return false;
        };
        let from = SocketAddr::from((Ipv4Addr::LOCALHOST, 2));
        matches!(
            b.decapsulate(now, from, &mut buf, len),
            Verdict::SendUdp { .. }
        )
    }

    /// NTP steps the initiator's wall clock back, by an hour and to 1970: its peer must still
    /// answer, also after the peer was removed and added again (`wg setconf`).
    #[test]
    fn a_wall_clock_stepped_back_does_not_lock_out_the_initiator() {
        let t0 = Instant::now();
        let wall = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let (mut a, mut b) = (device(1, t0, wall), device(2, t0, wall));
        let (ka, kb) = (a.public_key().unwrap(), b.public_key().unwrap());
        let mut id = add_peer(&mut a, kb, t0);
        add_peer(&mut b, ka, t0);
        let at = |s: u64| t0 + Duration::from_secs(s);
        assert!(initiation_answered(&mut a, &mut b, id, at(10)));
        a.set_wall_clock(at(15), wall - Duration::from_secs(3600));
        assert!(initiation_answered(&mut a, &mut b, id, at(20)));
        a.set_wall_clock(at(25), UNIX_EPOCH);
        assert!(initiation_answered(&mut a, &mut b, id, at(30)));
        assert!(initiation_answered(&mut a, &mut b, id, at(40)));
        let req = SetRequest {
            replace_peers: true,
            ..SetRequest::default()
        };
        a.apply(&req, at(45));
        id = add_peer(&mut a, kb, at(45));
        assert!(initiation_answered(&mut a, &mut b, id, at(50)));
        a.set_wall_clock(at(55), wall + Duration::from_secs(55));
        assert!(initiation_answered(&mut a, &mut b, id, at(60)));
        assert_eq!(b.drop_count(DropReason::HandshakeFailed), 0);
    }

    /// Handshakes costing 50 µs arrive every 2 µs for a simulated second: the budget must
    /// admit a quarter of the time's worth of them, not one per arrival.
    #[test]
    fn handshake_budget_keeps_debt() {
        let t0 = Instant::now();
        let mut dev = Device::new(t0, SystemTime::now(), Rng::from_seed([1; 32]));
        let cost = Duration::from_micros(50);
        let (mut now, mut admitted, mut spent) = (t0, 0u32, Duration::ZERO);
        while now < t0 + Duration::from_secs(1) {
            if dev.budget_admits(now, false) {
                dev.charge_handshake(cost);
                admitted += 1;
                spent += cost;
                now += cost;
            } else {
                // A rejected message costs almost nothing.
                now += Duration::from_micros(2);
            }
        }
        // The first 20 ms are a burst; then the share of the (wall) time.
        let share = spent.as_secs_f64() / (now - t0).as_secs_f64();
        let p = f64::from(HANDSHAKE_SHARE_PERCENT) / 100.0;
        assert!(
            (p - 0.01..p + 0.04).contains(&share),
            "{admitted} admitted, share {share}"
        );
    }

    /// A flood keeps the main budget spent; messages from quiet sources still get their
    /// own, smaller share, and spending it leaves the main budget alone.
    #[test]
    fn quiet_sources_have_their_own_share() {
        let t0 = Instant::now();
        let mut dev = Device::new(t0, SystemTime::now(), Rng::from_seed([1; 32]));
        let cost = Duration::from_micros(50);
        let (mut now, mut flood, mut quiet) = (t0, Duration::ZERO, Duration::ZERO);
        let mut turn = 0u32;
        while now < t0 + Duration::from_secs(2) {
            turn += 1;
            // Every 4th message comes from a quiet source, the rest from the flood.
            let from_quiet = turn % 4 == 0;
            if dev.budget_admits(now, from_quiet) {
                let by_quiet = dev.charge_quiet;
                dev.charge_handshake(cost);
                now += cost;
                if by_quiet {
                    quiet += cost;
                } else {
                    flood += cost;
                }
            } else {
                now += Duration::from_micros(2);
            }
        }
        let secs = (now - t0).as_secs_f64();
        let (main, q) = (
            f64::from(HANDSHAKE_SHARE_PERCENT) / 100.0,
            f64::from(QUIET_SHARE_PERCENT) / 100.0,
        );
        let (f, qs) = (flood.as_secs_f64() / secs, quiet.as_secs_f64() / secs);
        assert!((main - 0.01..main + 0.03).contains(&f), "main share {f}");
        assert!((q - 0.01..q + 0.03).contains(&qs), "quiet share {qs}");
    }

    #[test]
    fn one_huge_charge_locks_out_only_briefly() {
        let t0 = Instant::now();
        let mut dev = Device::new(t0, SystemTime::now(), Rng::from_seed([1; 32]));
        assert!(dev.budget_admits(t0, false));
        dev.charge_handshake(Duration::from_secs(5));
        // The debt is at most HANDSHAKE_BUDGET_MAX: earned back at the share's rate.
        let back = HANDSHAKE_BUDGET_MAX * 100 / HANDSHAKE_SHARE_PERCENT;
        assert!(!dev.budget_admits(t0 + back * 9 / 10, false));
        assert!(dev.budget_admits(t0 + back * 11 / 10, false));
    }
}
