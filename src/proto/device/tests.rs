//! The device's tables, sliced configuration changes, the wall clock and the handshake budgets.

use super::under_load::HANDSHAKE_BUDGET_MAX;
use super::*;
use crate::crypto::clamp;
use crate::proto::uapi::PeerChange;
use crate::proto::uapi::SetRequest;
use std::net::Ipv4Addr;
use std::time::{Duration, UNIX_EPOCH};
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
