//! Two or three solowg devices wired through the in-memory network of `common`: handshake,
//! data, timers, cookies, replay, routing, roaming, configuration and malformed input.

mod common;

use common::*;
use solowg::crypto::Rng;
use solowg::proto::device::{DropReason, Verdict};
use solowg::proto::staging::MAX_PER_PEER as MAX_STAGED_PACKETS;
use solowg::proto::timers::{
    KEEPALIVE_TIMEOUT, MAX_TIMER_HANDSHAKES, REJECT_AFTER_TIME, REKEY_AFTER_TIME,
    REKEY_ATTEMPT_TIME, REKEY_TIMEOUT,
};
use solowg::proto::uapi::{PeerChange, SetRequest};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::{Duration, Instant};

const A: usize = 0;
const B: usize = 1;
const C: usize = 2;
/// Upper bound of the random delay added to handshake timers.
const JITTER: Duration = Duration::from_millis(333);

/// The `(secs, nanos)` that `info()` reports for a handshake at `t`.
fn wall_at(net: &Net, t: Instant) -> (u64, u32) {
    let d = (wall_base() + (t - net.t0))
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    (d.as_secs(), d.subsec_nanos())
}

fn total_drops(net: &Net, i: usize) -> u64 {
    net.nodes[i].dev.drops().map(|(_, n)| n).sum()
}

fn send_udp_len(v: Verdict) -> usize {
    match v {
        Verdict::SendUdp { len, .. } => len,
        other => panic!("expected SendUdp, got {other:?}"),
    }
}

fn v4(a: [u8; 4]) -> IpAddr {
    IpAddr::V4(Ipv4Addr::from(a))
}

fn v6(a: [u8; 16]) -> IpAddr {
    IpAddr::V6(Ipv6Addr::from(a))
}

/// A pair with a completed handshake (A initiated, B confirmed) and `p0` delivered to B.
fn established() -> Net {
    let mut net = Net::pair();
    let p0 = net.pkt4(A, B, b"first");
    net.handshake_with(A, &p0);
    assert_eq!(net.nodes[B].tun, vec![p0]);
    net
}

// ---- handshake and data ----------------------------------------------------------------

#[test]
fn first_packet_triggers_handshake_and_is_flushed_after_it() {
    let mut net = Net::pair();
    let p = net.pkt4(A, B, b"hello");
    assert_eq!(net.send(A, &p), Verdict::Done, "no session: staged");
    let w = net.take_wire();
    assert_eq!(w.len(), 1, "only the initiation goes out");
    assert!(is_initiation(&w[0].data));
    assert_eq!(w[0].to, net.nodes[B].addr);

    net.now += ms(10);
    let v = net.deliver(w[0].clone()).unwrap();
    assert_eq!(send_udp_len(v), 92, "responder answers in place");
    let w = net.take_wire();
    assert_eq!(w.len(), 1);
    assert!(is_response(&w[0].data));
    assert!(
        net.info(B, A).last_handshake.is_none(),
        "responder unconfirmed"
    );

    net.now += ms(10);
    let t_response = net.now;
    assert_eq!(net.deliver(w[0].clone()), Some(Verdict::Done));
    assert_eq!(
        net.info(A, B).last_handshake,
        Some(wall_at(&net, t_response))
    );
    // The staged packet is the first data message: it confirms the keys to B.
    let w = net.take_wire();
    assert_eq!(
        w.len(),
        1,
        "staged packet replaces the confirmation keepalive"
    );
    // 25 bytes padded to 32, plus header and tag.
    assert_eq!(w[0].data.len(), 16 + 32 + 16);
    assert!(is_data(&w[0].data));
    assert!(net.nodes[B].tun.is_empty());

    net.now += ms(10);
    let t_confirm = net.now;
    assert!(matches!(
        net.deliver(w[0].clone()),
        Some(Verdict::WriteTun { .. })
    ));
    assert_eq!(net.nodes[B].tun, vec![p]);
    assert_eq!(
        net.info(B, A).last_handshake,
        Some(wall_at(&net, t_confirm))
    );
    assert_eq!(net.info(A, B).tx_bytes, 148 + 64);
    assert_eq!(net.info(A, B).rx_bytes, 92);
    assert_eq!(net.info(B, A).tx_bytes, 92);
    assert_eq!(net.info(B, A).rx_bytes, 148 + 64);
    assert!(net.wire.is_empty());
}

#[test]
fn data_flows_both_ways_v4_and_v6_with_exact_counters() {
    let mut net = established();
    let mut expect_a = Vec::new();
    let mut expect_b = vec![net.nodes[B].tun[0].clone()];
    for (i, len) in [0usize, 1, 15, 16, 100, 1000, 1380].into_iter().enumerate() {
        let seed = i as u32;
        let to_b4 = net.pkt4(A, B, &payload(seed, len));
        let to_b6 = net.pkt6(A, B, &payload(seed + 100, len));
        let to_a4 = net.pkt4(B, A, &payload(seed + 200, len));
        let to_a6 = net.pkt6(B, A, &payload(seed + 300, len));
        for (from, p) in [(A, &to_b4), (A, &to_b6), (B, &to_a4), (B, &to_a6)] {
            let v = net.send(from, p);
            // Padded to a multiple of 16, but not past the 1420-byte MTU.
            let padded = p.len().next_multiple_of(16);
            let padded = if padded > 1420 {
                p.len().max(1420)
            } else {
                padded
            };
            assert_eq!(send_udp_len(v), 32 + padded, "{} bytes", p.len());
        }
        net.run();
        expect_b.extend([to_b4, to_b6]);
        expect_a.extend([to_a4, to_a6]);
    }
    assert_eq!(net.nodes[B].tun, expect_b);
    assert_eq!(net.nodes[A].tun, expect_a);
    // Every byte one side sent the other received, and both match the datagrams.
    let sum = |i: usize| -> u64 {
        net.sent_by(i, |_| true)
            .iter()
            .map(|s| s.data.len() as u64)
            .sum()
    };
    assert_eq!(net.info(A, B).tx_bytes, sum(A));
    assert_eq!(net.info(B, A).tx_bytes, sum(B));
    assert_eq!(net.info(A, B).tx_bytes, net.info(B, A).rx_bytes);
    assert_eq!(net.info(B, A).tx_bytes, net.info(A, B).rx_bytes);
    assert_eq!(total_drops(&net, A) + total_drops(&net, B), 0);
}

#[test]
fn responder_sends_only_after_key_confirmation() {
    let mut net = Net::pair();
    let p = net.pkt4(A, B, b"from A");
    net.send(A, &p);
    let init = net.take_wire().remove(0);
    net.deliver(init);
    let response = net.take_wire().remove(0);
    assert!(is_response(&response.data));

    let id = net.peer_id(B, A);
    let kp = &net.nodes[B].dev.peer(id).unwrap().keypairs;
    assert!(
        kp.current.is_none() && kp.next.is_some(),
        "new keys wait in `next`"
    );

    let q = net.pkt4(B, A, b"from B");
    assert_eq!(net.send(B, &q), Verdict::Done, "staged, not sent on `next`");
    // B just answered A's initiation, so it must not start a crossing handshake.
    assert!(net.wire.is_empty(), "nothing sent: {:?}", net.wire);

    net.deliver(response);
    let data = net.take_wire().remove(0);
    assert!(is_data(&data.data));
    assert!(net.deliver(data).is_some());
    let kp = &net.nodes[B].dev.peer(id).unwrap().keypairs;
    assert!(
        kp.current.is_some() && kp.next.is_none(),
        "confirmed: promoted"
    );
    // Confirmation flushed B's staged packet under the confirmed keys.
    let w = net.take_wire();
    assert_eq!(w.len(), 1);
    assert!(is_data(&w[0].data));
    net.deliver(w[0].clone());
    assert_eq!(net.nodes[A].tun, vec![q]);
    assert_eq!(net.nodes[B].tun, vec![p]);
    // From now on B sends directly.
    let r = net.pkt4(B, A, b"direct");
    assert!(matches!(net.send(B, &r), Verdict::SendUdp { .. }));
    assert_eq!(net.sent_by(B, is_initiation).len(), 0);
}

// ---- rekey and expiry ------------------------------------------------------------------

#[test]
fn rekey_after_time_without_losing_traffic() {
    let mut net = established();
    let t_hs = net.now;
    let mut expect_a = Vec::new();
    let mut expect_b = net.nodes[B].tun.clone();
    let mut second_init_at = None;
    for s in 1..=200u32 {
        net.advance_to(t_hs + secs(u64::from(s)));
        let pa = net.pkt4(A, B, &payload(s, 200));
        let pb = net.pkt6(B, A, &payload(s + 1000, 300));
        // The packet that triggers the rekey still goes out on the old session.
        assert!(matches!(net.send(A, &pa), Verdict::SendUdp { .. }), "s={s}");
        assert!(matches!(net.send(B, &pb), Verdict::SendUdp { .. }), "s={s}");
        net.run();
        expect_b.push(pa);
        expect_a.push(pb);
        let inits = net.sent_by(A, is_initiation);
        if second_init_at.is_none() && inits.len() == 2 {
            second_init_at = Some(inits[1].at);
        }
        assert!(inits.len() <= 2, "one rekey in 200 s, at s={s}");
    }
    assert_eq!(second_init_at, Some(t_hs + REKEY_AFTER_TIME));
    assert_eq!(
        net.sent_by(B, is_initiation).len(),
        0,
        "only the initiator rekeys on age"
    );
    assert_eq!(net.nodes[B].tun, expect_b, "no loss A->B");
    assert_eq!(net.nodes[A].tun, expect_a, "no loss B->A");
    let t_rekey = wall_at(&net, t_hs + REKEY_AFTER_TIME);
    assert_eq!(net.info(A, B).last_handshake, Some(t_rekey));
    assert_eq!(net.info(B, A).last_handshake, Some(t_rekey));
    assert_eq!(total_drops(&net, A) + total_drops(&net, B), 0);
}

#[test]
fn previous_keypair_decrypts_packets_in_flight_across_rekey() {
    let mut net = established();
    let t_hs = net.now;
    net.advance_to(t_hs + REKEY_AFTER_TIME + secs(1));
    let old_ab = net.pkt4(A, B, b"old session, A to B");
    let old_ba = net.pkt4(B, A, b"old session, B to A");
    net.send(A, &old_ab);
    net.send(B, &old_ba);
    let w = net.take_wire();
    assert_eq!(w.len(), 3, "{w:?}");
    assert!(is_data(&w[0].data) && is_initiation(&w[1].data) && is_data(&w[2].data));
    let (held_ab, init, held_ba) = (w[0].clone(), w[1].clone(), w[2].clone());

    let old_index = |net: &Net, i: usize, j: usize| {
        let id = net.peer_id(i, j);
        let kp = &net.nodes[i].dev.peer(id).unwrap().keypairs;
        kp.current.as_ref().unwrap().local_index
    };
    let (a_old, b_old) = (old_index(&net, A, B), old_index(&net, B, A));

    // New handshake completes (response, then A's keepalive confirms) before the old
    // packets arrive.
    net.deliver(init);
    net.run();
    for (i, j, old) in [(A, B, a_old), (B, A, b_old)] {
        let id = net.peer_id(i, j);
        let kp = &net.nodes[i].dev.peer(id).unwrap().keypairs;
        assert_eq!(kp.previous.as_ref().map(|k| k.local_index), Some(old));
        assert_ne!(kp.current.as_ref().map(|k| k.local_index), Some(old));
    }
    assert!(matches!(
        net.deliver(held_ab),
        Some(Verdict::WriteTun { .. })
    ));
    assert!(matches!(
        net.deliver(held_ba),
        Some(Verdict::WriteTun { .. })
    ));
    assert_eq!(net.nodes[B].tun.last(), Some(&old_ab));
    assert_eq!(net.nodes[A].tun, vec![old_ba]);
}

#[test]
fn keypair_older_than_reject_after_time_is_refused_both_ways() {
    let mut net = established();
    let t_hs = net.now;
    net.advance_to(t_hs + secs(1));
    // d1 is delivered (B answers with a passive keepalive, so A sees a live session); d2
    // and d3 stay in flight.
    let mut held = Vec::new();
    for n in 1..=3u32 {
        let p = net.pkt4(A, B, &payload(n, 40));
        net.send(A, &p);
        held.push((net.take_wire().remove(0), p));
    }
    let (d1, p1) = held.remove(0);
    net.deliver(d1);
    assert_eq!(net.nodes[B].tun.last(), Some(&p1));

    net.advance_to(t_hs + REJECT_AFTER_TIME - ms(1));
    let (d2, p2) = held.remove(0);
    assert!(
        matches!(net.deliver(d2), Some(Verdict::WriteTun { .. })),
        "still valid"
    );
    assert_eq!(net.nodes[B].tun.last(), Some(&p2));

    net.advance_to(t_hs + REJECT_AFTER_TIME);
    let (d3, _) = held.remove(0);
    assert_eq!(
        net.deliver(d3),
        Some(Verdict::Drop(DropReason::ExpiredKeypair))
    );

    // Sending on either side now stages the packet and starts a new handshake.
    let inits_a = net.sent_by(A, is_initiation).len();
    let inits_b = net.sent_by(B, is_initiation).len();
    let pa = net.pkt4(A, B, b"after reject, A");
    let pb = net.pkt4(B, A, b"after reject, B");
    assert_eq!(net.send(A, &pa), Verdict::Done);
    assert_eq!(net.send(B, &pb), Verdict::Done);
    assert_eq!(net.sent_by(A, is_initiation).len(), inits_a + 1);
    assert_eq!(net.sent_by(B, is_initiation).len(), inits_b + 1);
    // The two initiations cross; the retransmission sorts it out within REKEY_TIMEOUT.
    net.advance(REKEY_TIMEOUT + JITTER + secs(1));
    assert_eq!(net.nodes[B].tun.last(), Some(&pa));
    assert_eq!(net.nodes[A].tun.last(), Some(&pb));
}

// ---- timers ----------------------------------------------------------------------------

#[test]
fn passive_keepalive_after_keepalive_timeout_and_not_before() {
    let mut net = established();
    net.advance(secs(20)); // let the handshake's own timers settle
    let t = net.now;
    let p = net.pkt4(A, B, b"needs an ack");
    net.send(A, &p);
    net.run();
    let from_b_since = |net: &Net, since: Instant| -> Vec<(Instant, usize)> {
        net.sent_by(B, |_| true)
            .iter()
            .filter(|s| s.at >= since)
            .map(|s| (s.at, s.data.len()))
            .collect()
    };
    net.advance_to(t + KEEPALIVE_TIMEOUT - ms(1));
    assert!(from_b_since(&net, t).is_empty(), "too early");
    let rx_before = net.info(A, B).rx_bytes;
    net.advance_to(t + KEEPALIVE_TIMEOUT);
    assert_eq!(from_b_since(&net, t), vec![(t + KEEPALIVE_TIMEOUT, 32)]);
    assert!(is_keepalive(&net.sent.last().unwrap().data));
    assert_eq!(net.info(A, B).rx_bytes, rx_before + 32);
    assert!(
        net.nodes[A].tun.is_empty(),
        "keepalives are not written to TUN"
    );
    // The keepalive told A its data arrived: no "peer is dead" handshake follows.
    let inits = net.sent_by(A, is_initiation).len();
    net.advance(secs(30));
    assert_eq!(net.sent_by(A, is_initiation).len(), inits);

    // A reply with data before the timeout replaces the keepalive.
    let t = net.now;
    net.send(A, &p);
    net.run();
    net.advance(secs(5));
    let q = net.pkt4(B, A, b"reply");
    net.send(B, &q);
    net.run();
    net.advance(secs(20));
    let from_b = from_b_since(&net, t);
    assert_eq!(from_b.len(), 1, "{from_b:?}");
    assert_eq!(from_b[0].0, t + secs(5));
    assert!(from_b[0].1 > 32);
}

#[test]
fn new_handshake_when_sent_data_gets_no_reply() {
    let mut net = established();
    net.advance(secs(20));
    net.nodes[B].down = true;
    let t = net.now;
    let inits = net.sent_by(A, is_initiation).len();
    let p = net.pkt4(A, B, b"into the void");
    assert!(matches!(net.send(A, &p), Verdict::SendUdp { .. }));
    net.advance_to(t + KEEPALIVE_TIMEOUT + REKEY_TIMEOUT - ms(1));
    assert_eq!(net.sent_by(A, is_initiation).len(), inits, "too early");
    net.advance_to(t + KEEPALIVE_TIMEOUT + REKEY_TIMEOUT + JITTER);
    let new: Vec<Instant> = net.sent_by(A, is_initiation)[inits..]
        .iter()
        .map(|s| s.at)
        .collect();
    assert_eq!(new.len(), 1, "one new handshake");
    assert!(new[0] >= t + KEEPALIVE_TIMEOUT + REKEY_TIMEOUT);
}

#[test]
fn handshake_retransmits_then_gives_up_and_drops_staged_packets() {
    let mut net = Net::pair();
    net.nodes[B].down = true;
    let lost = net.pkt4(A, B, b"staged then dropped");
    assert_eq!(net.send(A, &lost), Verdict::Done);
    net.advance(secs(200));
    let inits: Vec<Instant> = net.sent_by(A, is_initiation).iter().map(|s| s.at).collect();
    // Like the kernel and wireguard-go: retries continue while the attempt counter is at most
    // MAX_TIMER_HANDSHAKES, so 1 + 19 initiations ("giving up after MAX + 2 attempts").
    assert_eq!(inits.len(), MAX_TIMER_HANDSHAKES as usize + 2);
    assert_eq!(inits[0], net.t0);
    for w in inits.windows(2) {
        let gap = w[1] - w[0];
        assert!(
            gap >= REKEY_TIMEOUT && gap <= REKEY_TIMEOUT + JITTER,
            "gap {gap:?}"
        );
    }
    // Retrying stops once REKEY_ATTEMPT_TIME has passed.
    let last = *inits.last().unwrap() - net.t0;
    assert!(last >= REKEY_ATTEMPT_TIME && last <= REKEY_ATTEMPT_TIME + REKEY_TIMEOUT + JITTER * 20);
    let id = net.peer_id(A, B);
    assert!(!net.nodes[A].dev.staging().has(id));

    // Back online: a new packet gets a new handshake; the given-up packet is gone.
    net.nodes[B].down = false;
    let fresh = net.pkt4(A, B, b"fresh");
    assert_eq!(net.send(A, &fresh), Verdict::Done);
    net.run();
    assert_eq!(net.nodes[B].tun, vec![fresh]);
    assert_eq!(net.sent_by(A, is_initiation).len(), inits.len() + 1);
}

#[test]
fn persistent_keepalive_at_interval_and_at_once_when_enabled() {
    let mut net = established();
    net.advance(secs(20));
    let t = net.now;
    let mut pc = peer_change(net.nodes[B].public);
    pc.persistent_keepalive = Some(7);
    net.set(
        A,
        SetRequest {
            peers: vec![pc],
            ..SetRequest::default()
        },
    );
    assert_eq!(net.info(A, B).persistent_keepalive, 7);
    let keepalives = |net: &Net| -> Vec<Duration> {
        net.sent_by(A, is_keepalive)
            .iter()
            .filter(|s| s.at >= t)
            .map(|s| s.at - t)
            .collect()
    };
    assert_eq!(keepalives(&net), vec![secs(0)], "one at once");
    net.advance_to(t + secs(29));
    assert_eq!(keepalives(&net), [0, 7, 14, 21, 28].map(secs).to_vec());

    // Traffic from B restarts the interval (29 + 7 = 36 instead of 35).
    net.send(B, &net.pkt4(B, A, b"traffic"));
    net.advance_to(t + secs(45));
    assert_eq!(
        keepalives(&net),
        [0, 7, 14, 21, 28, 36, 43].map(secs).to_vec()
    );

    // Off again: no more keepalives (and B does not expect any).
    let mut pc = peer_change(net.nodes[B].public);
    pc.persistent_keepalive = Some(0);
    net.set(
        A,
        SetRequest {
            peers: vec![pc],
            ..SetRequest::default()
        },
    );
    let n = keepalives(&net).len();
    net.advance_to(t + secs(95));
    assert_eq!(keepalives(&net).len(), n);
}

#[test]
fn a_shorter_persistent_keepalive_counts_from_the_next_packet() {
    // The device tracks its earliest deadline incrementally; a timer that a packet moves
    // earlier (here: a shorter interval) must still wake it on time.
    let mut net = established();
    let set_interval = |net: &mut Net, secs: u16| {
        let mut pc = peer_change(net.nodes[B].public);
        pc.persistent_keepalive = Some(secs);
        net.set(
            A,
            SetRequest {
                peers: vec![pc],
                ..SetRequest::default()
            },
        );
    };
    set_interval(&mut net, 25);
    net.advance(secs(2));
    // The first packet arms A's passive keepalive (10 s), so the second one arms nothing
    // new: only the persistent keepalive moves, from 25 s after the first to 5 s after it.
    net.send(B, &net.pkt4(B, A, b"first"));
    net.advance(secs(4));
    set_interval(&mut net, 5);
    let t = net.now;
    net.send(B, &net.pkt4(B, A, b"second"));
    net.run();
    let id = net.peer_id(A, B);
    let earliest = net.nodes[A]
        .dev
        .peer(id)
        .unwrap()
        .timers
        .earliest()
        .unwrap();
    assert_eq!(earliest, t + secs(5));
    assert!(
        net.nodes[A]
            .dev
            .next_deadline()
            .is_some_and(|w| w <= earliest),
        "the device wakes no later than its earliest timer"
    );
    net.advance_to(t + secs(12));
    let keepalives: Vec<Duration> = net
        .sent_by(A, is_keepalive)
        .iter()
        .filter(|s| s.at > t)
        .map(|s| s.at - t)
        .collect();
    assert_eq!(keepalives, [5, 10].map(secs).to_vec());
}

#[test]
fn enabling_persistent_keepalive_without_session_starts_a_handshake() {
    let mut net = Net::pair();
    let mut pc = peer_change(net.nodes[B].public);
    pc.persistent_keepalive = Some(25);
    net.set(
        A,
        SetRequest {
            peers: vec![pc],
            ..SetRequest::default()
        },
    );
    assert_eq!(net.sent_by(A, is_initiation).len(), 1);
    net.run();
    // The confirming keepalive completed the handshake on B.
    assert!(net.info(B, A).last_handshake.is_some());
    assert_eq!(net.sent_by(A, is_keepalive).len(), 1);
}

#[test]
fn key_material_is_erased_after_three_reject_after_times() {
    let mut net = established();
    let t_hs = net.now;
    net.advance(secs(1));
    let p = net.pkt4(A, B, b"held");
    net.send(A, &p);
    let held = net.take_wire().remove(0);
    let d = net.pkt4(A, B, b"delivered");
    net.send(A, &d);
    net.run();

    net.advance_to(t_hs + REJECT_AFTER_TIME * 3 - ms(1));
    for (i, j) in [(A, B), (B, A)] {
        let id = net.peer_id(i, j);
        assert!(net.nodes[i]
            .dev
            .peer(id)
            .unwrap()
            .keypairs
            .current
            .is_some());
    }
    let index = u32::from_le_bytes(held.data[4..8].try_into().unwrap());
    assert!(net.nodes[B].dev.peer_of_index(index).is_some());
    assert_eq!(
        net.inject(B, held.from, &held.data),
        Verdict::Drop(DropReason::ExpiredKeypair)
    );

    net.advance_to(t_hs + REJECT_AFTER_TIME * 3);
    for (i, j) in [(A, B), (B, A)] {
        let id = net.peer_id(i, j);
        let kp = &net.nodes[i].dev.peer(id).unwrap().keypairs;
        assert!(kp.previous.is_none() && kp.current.is_none() && kp.next.is_none());
    }
    assert!(
        net.nodes[B].dev.peer_of_index(index).is_none(),
        "index forgotten"
    );
    assert_eq!(
        net.inject(B, held.from, &held.data),
        Verdict::Drop(DropReason::UnknownIndex)
    );

    let inits = net.sent_by(A, is_initiation).len();
    let again = net.pkt4(A, B, b"again");
    assert_eq!(net.send(A, &again), Verdict::Done);
    assert_eq!(net.sent_by(A, is_initiation).len(), inits + 1);
    net.run();
    assert_eq!(net.nodes[B].tun.last(), Some(&again));
}

// ---- cookies and load ------------------------------------------------------------------

/// A, B and an attacker C that knows B's public key but is not B's peer. B counts as under
/// load above 3 handshake messages a second. Returns C's initiation (no mac2).
fn loaded_responder() -> (Net, common::Dgram) {
    let mut net = Net::new(3);
    net.connect(A, B);
    net.connect(B, A);
    net.connect(C, B);
    net.nodes[B].dev.under_load_rate = 3;
    let p = net.pkt4(C, B, b"attacker");
    net.send(C, &p);
    let init_c = net.take_wire().remove(0);
    assert!(is_initiation(&init_c.data));
    net.nodes[C].down = true; // its retransmissions go nowhere
    (net, init_c)
}

/// Sends `init_c` to B until B demands a cookie; returns how many copies that took.
fn flood(net: &mut Net, init_c: &common::Dgram) -> usize {
    for n in 1..=10 {
        let v = net.inject(B, init_c.from, &init_c.data);
        if let Verdict::SendUdp { to, len } = v {
            assert_eq!((to, len), (init_c.from, 64));
            let reply = net.take_wire().pop().unwrap();
            assert!(is_cookie_reply(&reply.data));
            return n;
        }
        assert!(matches!(
            v,
            Verdict::Drop(DropReason::UnknownPeer | DropReason::HandshakeFailed)
        ));
    }
    panic!("never under load");
}

#[test]
fn cookie_reply_under_load_then_mac2_initiation_is_accepted() {
    let (mut net, init_c) = loaded_responder();
    assert_eq!(flood(&mut net, &init_c), 4, "over 3 per second");
    assert_eq!(net.nodes[B].dev.drop_count(DropReason::UnknownPeer), 3);

    let p = net.pkt4(A, B, b"through the cookie");
    assert_eq!(net.send(A, &p), Verdict::Done);
    let init1 = net.take_wire().remove(0);
    assert_eq!(&init1.data[132..148], &[0; 16], "no cookie yet: mac2 zero");
    let v = net.deliver(init1).unwrap();
    assert_eq!(send_udp_len(v), 64, "cookie reply instead of a response");
    let reply = net.take_wire().remove(0);
    assert!(is_cookie_reply(&reply.data));
    assert_eq!(reply.to, net.nodes[A].addr);
    assert_eq!(
        net.deliver(reply),
        Some(Verdict::Done),
        "A takes the cookie"
    );
    assert_eq!(total_drops(&net, A), 0);
    assert!(net.nodes[B].tun.is_empty());

    // Keep B loaded until just before A retransmits.
    let retry_at = net.nodes[A].dev.next_deadline().unwrap();
    net.advance_to(retry_at - ms(1));
    assert_eq!(flood(&mut net, &init_c), 4);
    let cookies_before = net.nodes[B].dev.drop_count(DropReason::CookieRequired);
    net.advance_to(retry_at);
    let inits = net.sent_by(A, is_initiation);
    assert_eq!(inits.len(), 2);
    assert_ne!(&inits[1].data[132..148], &[0; 16], "mac2 from the cookie");
    assert_eq!(
        net.nodes[B].dev.drop_count(DropReason::CookieRequired),
        cookies_before,
        "mac2 accepted under load"
    );
    assert_eq!(net.nodes[B].tun, vec![p]);
    assert!(net.info(B, A).last_handshake.is_some());
}

#[test]
fn handshakes_are_rate_limited_per_source_under_load() {
    let (mut net, init_c) = loaded_responder();
    flood(&mut net, &init_c);
    // C gets its cookie reply this time; A gets one for its first initiation.
    let cookie_c = net.sent.last().unwrap().data.clone();
    assert!(is_cookie_reply(&cookie_c));
    assert_eq!(
        net.inject(C, net.nodes[B].addr, &cookie_c),
        Verdict::Done,
        "C takes its cookie"
    );
    net.send(A, &net.pkt4(A, B, b"x"));
    net.run();
    assert_eq!(net.nodes[A].dev.drop_count(DropReason::HandshakeFailed), 0);

    // Both retransmit with mac2 while B is unreachable; keep copies of those initiations.
    net.nodes[B].down = true;
    net.advance(REKEY_TIMEOUT + JITTER);
    net.nodes[B].down = false;
    let last_init = |net: &Net, i: usize| {
        let s = net.sent_by(i, is_initiation);
        assert_eq!(s.len(), 2);
        assert_ne!(&s[1].data[132..148], &[0; 16]);
        s[1].data.clone()
    };
    let (init_a2, init_c2) = (last_init(&net, A), last_init(&net, C));
    let (addr_a, addr_c) = (net.nodes[A].addr, net.nodes[C].addr);

    flood(&mut net, &init_c);
    let limited = |net: &Net| net.nodes[B].dev.drop_count(DropReason::RateLimited);
    // A burst of 5 per source passes the limiter (and then fails for other reasons).
    for _ in 0..5 {
        let v = net.inject(B, addr_c, &init_c2);
        assert!(
            matches!(
                v,
                Verdict::Drop(DropReason::UnknownPeer | DropReason::HandshakeFailed)
            ),
            "{v:?}"
        );
    }
    assert_eq!(
        net.inject(B, addr_c, &init_c2),
        Verdict::Drop(DropReason::RateLimited)
    );
    assert_eq!(limited(&net), 1);
    // Out of handshakes, C gets no work done for a message with a mac2, valid or forged: it
    // is dropped before mac2 is computed. Without a mac2 it may still earn a cookie reply.
    let mut forged = init_c2.clone();
    forged[140] ^= 1;
    assert_eq!(
        net.inject(B, addr_c, &forged),
        Verdict::Drop(DropReason::RateLimited)
    );
    let mut bare = init_c2.clone();
    bare[132..148].fill(0);
    assert_eq!(send_udp_len(net.inject(B, addr_c, &bare)), 64);
    assert_eq!(limited(&net), 2);
    // Another source is unaffected: A's initiation is answered at the same instant.
    assert_eq!(send_udp_len(net.inject(B, addr_a, &init_a2)), 92);
    // C's copies from A's address lack a valid mac2 there: cookie, not a handshake.
    assert_eq!(send_udp_len(net.inject(B, addr_a, &init_c2)), 64);
    net.take_wire();
    // 20 per second: one more from C after 50 ms, not two.
    net.now += ms(50);
    assert_eq!(
        net.inject(B, addr_c, &init_c2),
        Verdict::Drop(DropReason::UnknownPeer)
    );
    assert_eq!(
        net.inject(B, addr_c, &init_c2),
        Verdict::Drop(DropReason::RateLimited)
    );
    assert_eq!(limited(&net), 3);
    net.take_wire();
}

#[test]
fn handshake_work_under_load_is_bounded_by_a_time_budget() {
    let (mut net, init_c) = loaded_responder();
    flood(&mut net, &init_c);
    let cookie_c = net.sent.last().unwrap().data.clone();
    assert_eq!(net.inject(C, net.nodes[B].addr, &cookie_c), Verdict::Done);
    // C retransmits with mac2 while B is unreachable; keep that initiation.
    net.nodes[B].down = true;
    net.advance(REKEY_TIMEOUT + JITTER);
    net.nodes[B].down = false;
    let init_c2 = net.sent_by(C, is_initiation)[1].data.clone();
    assert_ne!(&init_c2[132..148], &[0; 16]);
    let addr_c = net.nodes[C].addr;
    flood(&mut net, &init_c);
    let past_limits = |v: Verdict| {
        matches!(
            v,
            Verdict::Drop(DropReason::UnknownPeer | DropReason::HandshakeFailed)
        )
    };
    assert!(past_limits(net.inject(B, addr_c, &init_c2)));
    // The I/O shell reports that handshakes took a whole second: the budget is spent.
    net.nodes[B].dev.charge_handshake(Duration::from_secs(1));
    assert_eq!(
        net.inject(B, addr_c, &init_c2),
        Verdict::Drop(DropReason::RateLimited)
    );
    // The budget comes back at its share of the time (10%; the debt is capped at 20 ms).
    net.advance(ms(250));
    flood(&mut net, &init_c);
    assert!(past_limits(net.inject(B, addr_c, &init_c2)));
    // A source quiet for a second has its own, smaller share: with the main budget spent
    // again, C's next initiation is still worked on; the one right after it is not.
    net.advance(Duration::from_secs(1));
    flood(&mut net, &init_c);
    net.nodes[B].dev.charge_handshake(Duration::from_secs(1));
    assert!(past_limits(net.inject(B, addr_c, &init_c2)));
    assert_eq!(
        net.inject(B, addr_c, &init_c2),
        Verdict::Drop(DropReason::RateLimited)
    );
    net.take_wire();
}

#[test]
fn cookie_replies_are_rate_limited_per_source_under_load() {
    let (mut net, init_c) = loaded_responder();
    flood(&mut net, &init_c); // under load now; that copy got a reply
    let replies = |net: &mut Net, from: SocketAddr, n: usize| {
        (0..n)
            .filter(|_| matches!(net.inject(B, from, &init_c.data), Verdict::SendUdp { .. }))
            .count()
    };
    // The burst (10, one spent above), then nothing: dropped as cookie-required, no reply.
    let from = init_c.from;
    assert_eq!(replies(&mut net, from, 20), 9);
    let before = net.nodes[B].dev.drop_count(DropReason::CookieRequired);
    assert_eq!(replies(&mut net, from, 5), 0);
    assert_eq!(
        net.nodes[B].dev.drop_count(DropReason::CookieRequired),
        before + 5
    );
    // Another source has its own budget; the first one earns 5 a second back.
    let other: SocketAddr = "192.0.2.77:4000".parse().unwrap();
    assert_eq!(replies(&mut net, other, 1), 1);
    net.advance(ms(400));
    flood(&mut net, &init_c); // still under load (sticky), and 2 replies were earned back
    assert_eq!(replies(&mut net, from, 5), 1);
    net.take_wire();
}

// ---- replay ----------------------------------------------------------------------------

#[test]
fn replayed_data_is_dropped_and_reordering_is_not() {
    let mut net = established();
    let mut w = Vec::new();
    for n in 0..3u32 {
        net.send(A, &net.pkt4(A, B, &payload(n, 10)));
        w.extend(net.take_wire());
    }
    // Out of order within the window is fine.
    for i in [2, 0, 1] {
        assert!(matches!(
            net.deliver(w[i].clone()),
            Some(Verdict::WriteTun { .. })
        ));
    }
    for d in &w {
        assert_eq!(
            net.deliver(d.clone()),
            Some(Verdict::Drop(DropReason::Replay))
        );
    }
    assert_eq!(net.nodes[B].dev.drop_count(DropReason::Replay), 3);
    assert_eq!(net.nodes[B].tun.len(), 1 + 3);
}

#[test]
fn replayed_initiation_is_refused() {
    let mut net = Net::pair();
    let p = net.pkt4(A, B, b"x");
    net.send(A, &p);
    let init = net.take_wire().remove(0);
    net.deliver(init.clone());
    let response = net.take_wire().remove(0);
    // Later, an attacker replays the initiation (from anywhere).
    net.now += secs(2);
    for from in [init.from, "198.51.100.9:999".parse().unwrap()] {
        assert_eq!(
            net.inject(B, from, &init.data),
            Verdict::Drop(DropReason::HandshakeFailed)
        );
    }
    assert!(net.wire.is_empty(), "no response to a replay");
    assert_eq!(
        net.info(B, A).endpoint,
        Some(init.from),
        "endpoint not moved"
    );
    // The genuine handshake is undisturbed.
    net.deliver(response);
    net.run();
    assert_eq!(net.nodes[B].tun, vec![p]);
}

// ---- cryptokey routing and roaming -----------------------------------------------------

#[test]
fn no_route_and_disallowed_source() {
    let mut net = established();
    let stray = ipv4(net.nodes[A].v4, [10, 9, 9, 9], b"nobody");
    assert_eq!(net.send(A, &stray), Verdict::Drop(DropReason::NoRoute));
    let stray6 = ipv6(net.nodes[A].v6, [0x20; 16], b"nobody");
    assert_eq!(net.send(A, &stray6), Verdict::Drop(DropReason::NoRoute));
    assert_eq!(net.nodes[A].dev.drop_count(DropReason::NoRoute), 2);
    assert!(net.wire.is_empty());
    assert_eq!(
        net.send(A, b"not an ip packet"),
        Verdict::Drop(DropReason::NotIp)
    );

    // B routes by destination only, so it sends spoofed sources; A checks them.
    let spoofed = ipv4([10, 0, 0, 99], net.nodes[A].v4, b"spoofed");
    assert!(matches!(net.send(B, &spoofed), Verdict::SendUdp { .. }));
    let spoofed6 = ipv6(net.nodes[B].v6.map(|b| b ^ 1), net.nodes[A].v6, b"spoofed");
    assert!(matches!(net.send(B, &spoofed6), Verdict::SendUdp { .. }));
    let w = net.take_wire();
    for d in w {
        assert_eq!(
            net.deliver(d),
            Some(Verdict::Drop(DropReason::DisallowedSource))
        );
    }
    assert!(net.nodes[A].tun.is_empty());
    assert_eq!(net.nodes[A].dev.drop_count(DropReason::DisallowedSource), 2);
    // An allowed source still gets through.
    net.send(B, &net.pkt4(B, A, b"fine"));
    net.run();
    assert_eq!(net.nodes[A].tun.len(), 1);
}

#[test]
fn source_owned_by_another_peer_is_disallowed() {
    let mut net = Net::new(3);
    for (i, j) in [(A, B), (B, A), (A, C), (C, A)] {
        net.connect(i, j);
    }
    net.handshake_with(A, &net.pkt4(A, B, b"hi B"));
    // B claims C's inner address: decrypts fine under B's keys, but the source is C's.
    let forged = ipv4(net.nodes[C].v4, net.nodes[A].v4, b"I am C");
    net.send(B, &forged);
    net.run();
    assert!(net.nodes[A].tun.is_empty());
    assert_eq!(net.nodes[A].dev.drop_count(DropReason::DisallowedSource), 1);
}

#[test]
fn responder_endpoint_follows_latest_authenticated_source() {
    let mut net = Net::new(2);
    net.connect(A, B);
    // B knows A's key and addresses but not where A is.
    let mut pc = peer_change(net.nodes[A].public);
    pc.allowed_ips = vec![allow(v4(net.nodes[A].v4), 32)];
    net.set(
        B,
        SetRequest {
            peers: vec![pc],
            ..SetRequest::default()
        },
    );
    assert_eq!(
        net.send(B, &net.pkt4(B, A, b"where are you")),
        Verdict::Drop(DropReason::NoEndpoint)
    );
    net.handshake_with(A, &net.pkt4(A, B, b"here"));
    assert_eq!(net.info(B, A).endpoint, Some(net.nodes[A].addr));

    // A moves (new NAT mapping): the next authenticated packet updates B.
    let roamed: SocketAddr = "203.0.113.7:40000".parse().unwrap();
    net.nodes[A].addr = roamed;
    net.send(A, &net.pkt4(A, B, b"from the new address"));
    let d = net.take_wire().remove(0);
    assert_eq!(d.from, roamed);
    net.deliver(d.clone());
    assert_eq!(net.info(B, A).endpoint, Some(roamed));
    let reply = net.pkt4(B, A, b"reply follows");
    net.send(B, &reply);
    net.run();
    assert_eq!(net.nodes[A].tun, vec![reply]);

    // Unauthenticated input from elsewhere does not move it.
    let elsewhere: SocketAddr = "198.51.100.9:1".parse().unwrap();
    assert_eq!(
        net.inject(B, elsewhere, &d.data),
        Verdict::Drop(DropReason::Replay)
    );
    let mut forged = d.data.clone();
    forged[8] ^= 0x40; // a fresh counter, but the tag no longer matches
    assert_eq!(
        net.inject(B, elsewhere, &forged),
        Verdict::Drop(DropReason::DecryptFailed)
    );
    assert_eq!(net.info(B, A).endpoint, Some(roamed));
}

// ---- configuration (UAPI set semantics) ------------------------------------------------

#[test]
fn same_private_key_keeps_sessions_new_key_clears_them() {
    let mut net = established();
    let key = net.nodes[A].private;
    net.set(A, key_request(key));
    let p = net.pkt4(A, B, b"same key");
    assert!(
        matches!(net.send(A, &p), Verdict::SendUdp { .. }),
        "session kept"
    );
    net.run();
    assert_eq!(net.nodes[B].tun.last(), Some(&p));
    assert_eq!(net.sent_by(A, is_initiation).len(), 1);

    // A session B still holds is unknown to A after the key change.
    net.send(B, &net.pkt4(B, A, b"old session"));
    let old = net.take_wire().remove(0);

    let new_key = solowg::crypto::clamp([0x77; 32]);
    net.set(A, key_request(new_key));
    assert_eq!(
        net.nodes[A].dev.public_key(),
        Some(solowg::crypto::public_key(&new_key))
    );
    let id = net.peer_id(A, B);
    assert!(net.nodes[A]
        .dev
        .peer(id)
        .unwrap()
        .keypairs
        .current
        .is_none());
    assert_eq!(
        net.deliver(old),
        Some(Verdict::Drop(DropReason::UnknownIndex))
    );
    // One initiation per REKEY_TIMEOUT still applies across the key change.
    net.advance(REKEY_TIMEOUT);
    let q = net.pkt4(A, B, b"new key");
    assert_eq!(net.send(A, &q), Verdict::Done, "needs a new handshake");
    assert_eq!(net.sent_by(A, is_initiation).len(), 2);
    net.run();
    // B does not know the new identity.
    assert_eq!(net.nodes[B].dev.drop_count(DropReason::UnknownPeer), 1);

    // Once B learns it, the staged packet goes through.
    let mut remove_old = peer_change(net.nodes[A].public);
    remove_old.remove = true;
    net.nodes[A].private = new_key;
    net.nodes[A].public = solowg::crypto::public_key(&new_key);
    net.set(
        B,
        SetRequest {
            peers: vec![remove_old],
            ..SetRequest::default()
        },
    );
    net.connect(B, A);
    net.advance(REKEY_TIMEOUT + JITTER);
    assert_eq!(net.nodes[B].tun.last(), Some(&q));
}

#[test]
fn removing_the_private_key_stops_everything() {
    let mut net = established();
    net.set(
        A,
        SetRequest {
            private_key: Some(None),
            ..SetRequest::default()
        },
    );
    assert!(net.nodes[A].dev.info().private_key.is_none());
    assert!(net.nodes[A].dev.public_key().is_none());
    net.send(B, &net.pkt4(B, A, b"to nobody"));
    net.run();
    assert_eq!(net.nodes[A].dev.drop_count(DropReason::UnknownIndex), 1);

    // Past the REKEY_TIMEOUT rate limit A would start a handshake, but cannot build one.
    net.now += secs(10);
    assert_eq!(net.send(A, &net.pkt4(A, B, b"x")), Verdict::Done);
    assert!(net.wire.is_empty());
    assert_eq!(net.sent_by(A, is_initiation).len(), 1);

    // A fresh initiation from B (its key changed, so it has no session) fails mac1 at A:
    // without a key A has nothing to check it against.
    net.set(B, key_request(solowg::crypto::clamp([0x55; 32])));
    net.send(B, &net.pkt4(B, A, b"hello?"));
    assert_eq!(net.sent_by(B, is_initiation).len(), 1);
    net.run();
    assert_eq!(net.nodes[A].dev.drop_count(DropReason::BadMac1), 1);
    assert!(net.nodes[A].tun.is_empty());
}

#[test]
fn replace_peers_update_only_and_remove() {
    let mut net = Net::new(3);
    net.connect(A, B);
    net.connect(B, A);
    net.handshake_with(A, &net.pkt4(A, B, b"x"));

    // update_only never creates a peer, but does change an existing one.
    let mut ghost = peer_change(net.nodes[C].public);
    ghost.update_only = true;
    let mut move_b = peer_change(net.nodes[B].public);
    move_b.update_only = true;
    let new_b: SocketAddr = "192.0.2.200:1".parse().unwrap();
    move_b.endpoint = Some(new_b);
    net.set(
        A,
        SetRequest {
            peers: vec![ghost, move_b],
            ..SetRequest::default()
        },
    );
    assert_eq!(net.nodes[A].dev.peer_count(), 1);
    assert_eq!(net.info(A, B).endpoint, Some(new_b));
    assert!(net.nodes[A].dev.peer_id(&net.nodes[C].public).is_none());

    // A peer with our own public key is ignored.
    net.set(
        A,
        SetRequest {
            peers: vec![peer_change(net.nodes[A].public)],
            ..SetRequest::default()
        },
    );
    assert_eq!(net.nodes[A].dev.peer_count(), 1);

    // replace_peers: B gone (routes and sessions with it), C in.
    let mut c = peer_change(net.nodes[C].public);
    c.allowed_ips = vec![allow(v4([10, 0, 0, 0]), 24)];
    net.set(
        A,
        SetRequest {
            replace_peers: true,
            peers: vec![c],
            ..SetRequest::default()
        },
    );
    let info = net.nodes[A].dev.info();
    assert_eq!(info.peers.len(), 1);
    assert_eq!(info.peers[0].public_key, net.nodes[C].public);
    assert_eq!(info.peers[0].allowed_ips, vec![(v4([10, 0, 0, 0]), 24)]);
    net.send(B, &net.pkt4(B, A, b"stale session"));
    net.run();
    assert_eq!(net.nodes[A].dev.drop_count(DropReason::UnknownIndex), 1);
    // 10.0.0.2 now routes to C, who has no endpoint.
    assert_eq!(
        net.send(A, &net.pkt4(A, B, b"x")),
        Verdict::Drop(DropReason::NoEndpoint)
    );

    let mut rm = peer_change(net.nodes[C].public);
    rm.remove = true;
    rm.allowed_ips = vec![allow(v4([10, 0, 0, 0]), 8)]; // ignored: remove wins
    net.set(
        A,
        SetRequest {
            peers: vec![rm],
            ..SetRequest::default()
        },
    );
    assert_eq!(net.nodes[A].dev.peer_count(), 0);
    assert!(net.nodes[A].dev.info().peers.is_empty());
    assert_eq!(
        net.send(A, &net.pkt4(A, B, b"x")),
        Verdict::Drop(DropReason::NoRoute)
    );
}

#[test]
fn allowed_ip_removal_and_replacement() {
    let mut net = established();
    let (b4, b6) = (net.nodes[B].v4, net.nodes[B].v6);
    let mut pc = peer_change(net.nodes[B].public);
    pc.allowed_ips = vec![disallow(v4(b4), 32)];
    net.set(
        A,
        SetRequest {
            peers: vec![pc],
            ..SetRequest::default()
        },
    );
    assert_eq!(net.info(A, B).allowed_ips, vec![(v6(b6), 128)]);
    assert_eq!(
        net.send(A, &net.pkt4(A, B, b"x")),
        Verdict::Drop(DropReason::NoRoute)
    );
    assert!(matches!(
        net.send(A, &net.pkt6(A, B, b"x")),
        Verdict::SendUdp { .. }
    ));
    net.run();
    // B's v4 source is no longer B's on A.
    net.send(B, &net.pkt4(B, A, b"v4"));
    net.run();
    assert_eq!(net.nodes[A].dev.drop_count(DropReason::DisallowedSource), 1);

    let mut pc = peer_change(net.nodes[B].public);
    pc.replace_allowed_ips = true;
    pc.allowed_ips = vec![allow(v4([10, 0, 0, 0]), 24)];
    net.set(
        A,
        SetRequest {
            peers: vec![pc],
            ..SetRequest::default()
        },
    );
    assert_eq!(net.info(A, B).allowed_ips, vec![(v4([10, 0, 0, 0]), 24)]);
    assert_eq!(
        net.send(A, &net.pkt6(A, B, b"x")),
        Verdict::Drop(DropReason::NoRoute)
    );
    let to_other = ipv4(net.nodes[A].v4, [10, 0, 0, 77], b"anywhere in the /24");
    assert!(matches!(net.send(A, &to_other), Verdict::SendUdp { .. }));
    net.run();
    assert_eq!(net.nodes[B].tun.last(), Some(&to_other));
}

// ---- robustness ------------------------------------------------------------------------

#[test]
fn random_datagrams_never_panic_and_are_counted_as_drops() {
    let mut net = established();
    let mut rng = Rng::from_seed([9; 32]);
    let from: SocketAddr = "198.51.100.1:53".parse().unwrap();
    let before = total_drops(&net, B);
    let mut n = 0;
    for len in 0..=2000usize {
        let mut d = vec![0u8; len];
        rng.fill(&mut d);
        // Also try each size with a plausible header, so parsing gets past the type check.
        for t in [None, Some(1u8), Some(2), Some(3), Some(4)] {
            if let Some(t) = t {
                if len < 4 {
                    continue;
                }
                d[..4].copy_from_slice(&[t, 0, 0, 0]);
            }
            let v = net.inject(B, from, &d);
            assert!(matches!(v, Verdict::Drop(_)), "len {len} type {t:?}: {v:?}");
            n += 1;
        }
    }
    assert_eq!(total_drops(&net, B) - before, n);
    assert!(net.wire.is_empty());
    assert_eq!(net.info(B, A).endpoint, Some(net.nodes[A].addr));
    // Random "TUN packets" too.
    for len in 0..=2000usize {
        let mut p = vec![0u8; len];
        rng.fill(&mut p);
        net.send(A, &p);
    }
    net.take_wire();
    // The session survived all of it.
    let p = net.pkt4(A, B, b"still here");
    net.send(A, &p);
    net.send(B, &net.pkt4(B, A, b"me too"));
    net.run();
    assert_eq!(net.nodes[B].tun.last(), Some(&p));
    assert_eq!(net.nodes[A].tun.len(), 1);
}

#[test]
fn truncated_extended_and_mutated_messages_are_dropped() {
    let mut net = Net::pair();
    let p = net.pkt4(A, B, &payload(1, 100));
    net.send(A, &p);
    let init = net.take_wire().remove(0);
    net.deliver(init.clone());
    let response = net.take_wire().remove(0);
    net.deliver(response.clone());
    net.run();
    let data = {
        net.send(A, &net.pkt4(A, B, &payload(2, 100)));
        net.take_wire().remove(0)
    };
    // A cookie reply addressed to A's latest handshake index.
    net.nodes[B].dev.under_load_rate = 0;
    for _ in 0..2 {
        net.inject(B, init.from, &init.data);
    }
    let cookie = net
        .take_wire()
        .into_iter()
        .find(|d| is_cookie_reply(&d.data))
        .expect("cookie reply");
    net.nodes[B].dev.under_load_rate = 1_000_000;
    net.now += secs(2); // leave B's sticky under-load period

    let tun_b = net.nodes[B].tun.len();
    let mut cases: Vec<(usize, Vec<u8>)> = Vec::new();
    for (to, msg) in [
        (B, &init.data),
        (A, &response.data),
        (A, &cookie.data),
        (B, &data.data),
    ] {
        for cut in 0..msg.len() {
            cases.push((to, msg[..cut].to_vec()));
        }
        let mut longer = msg.clone();
        longer.push(0);
        cases.push((to, longer));
        for byte in 0..msg.len() {
            for bit in [0, 3, 7] {
                let mut m = msg.clone();
                m[byte] ^= 1 << bit;
                cases.push((to, m));
            }
        }
    }
    for (to, m) in cases {
        let from = if to == B { init.from } else { response.from };
        let before = total_drops(&net, to);
        let v = net.inject(to, from, &m);
        assert!(
            matches!(v, Verdict::Drop(_)),
            "{} bytes to {to}: {v:?}",
            m.len()
        );
        assert_eq!(total_drops(&net, to), before + 1);
    }
    assert!(net.wire.is_empty());
    assert_eq!(net.nodes[B].tun.len(), tun_b);
    // The untouched data message is still good, and the session works.
    assert!(matches!(net.deliver(data), Some(Verdict::WriteTun { .. })));
    net.send(B, &net.pkt4(B, A, b"ok"));
    net.run();
    assert_eq!(net.nodes[A].tun.len(), 1);
}

#[test]
fn staged_queue_keeps_only_the_newest_packets() {
    let mut net = Net::pair();
    net.nodes[B].down = true;
    let packets: Vec<Vec<u8>> = (0..200u32)
        .map(|n| net.pkt4(A, B, &n.to_be_bytes()))
        .collect();
    for p in &packets {
        assert_eq!(net.send(A, p), Verdict::Done);
    }
    assert_eq!(net.sent_by(A, is_initiation).len(), 1);
    assert_eq!(
        net.nodes[A].dev.drop_count(DropReason::StagedOverflow),
        (200 - MAX_STAGED_PACKETS) as u64
    );
    net.nodes[B].down = false;
    net.advance(REKEY_TIMEOUT + JITTER);
    assert_eq!(
        net.nodes[B].tun,
        packets[200 - MAX_STAGED_PACKETS..].to_vec()
    );
}

/// Traffic to 1,000 peers that are down: staging stays within the device's bound however
/// many peers there are, drops the oldest packets (counted), and holds no memory once the
/// handshakes give up or the peers are removed.
#[test]
fn staging_is_bounded_for_the_device_and_freed() {
    use solowg::proto::staging::{MAX_BYTES, MAX_PACKETS};
    let mut net = Net::new(1);
    let peers = 1000u32;
    let key = |i: u32| {
        let mut k = [0x11; 32];
        k[..4].copy_from_slice(&i.to_be_bytes());
        k
    };
    let tunnel_addr = |i: u32| Ipv4Addr::new(10, 9, (i >> 8) as u8, i as u8);
    let changes = (0..peers)
        .map(|i| {
            let mut pc = peer_change(key(i));
            // Endpoints nobody answers: every handshake times out.
            pc.endpoint = Some(SocketAddr::from(([192, 0, 2, 1], 20_000 + i as u16)));
            pc.allowed_ips = vec![allow(IpAddr::V4(tunnel_addr(i)), 32)];
            pc
        })
        .collect();
    net.set(
        A,
        SetRequest {
            peers: changes,
            ..SetRequest::default()
        },
    );
    let mut sent = 0u64;
    for round in 0..20u32 {
        for i in 0..peers {
            let p = ipv4(
                net.nodes[A].v4,
                tunnel_addr(i).octets(),
                &payload(round, 1392),
            );
            assert_eq!(net.send(A, &p), Verdict::Done);
            sent += 1;
            let st = net.nodes[A].dev.staging();
            assert!(st.len() <= MAX_PACKETS, "{}", st.len());
            assert!(
                st.held_bytes() <= MAX_BYTES + 128 * 1024,
                "{}",
                st.held_bytes()
            );
        }
    }
    let st = net.nodes[A].dev.staging();
    let kept = st.len() as u64;
    assert!(
        kept * 1420 > MAX_BYTES as u64 * 9 / 10,
        "the ring is used: {kept}"
    );
    assert_eq!(
        net.nodes[A].dev.drop_count(DropReason::StagedOverflow) + kept,
        sent,
        "every packet is staged or counted as dropped"
    );
    // The newest packet is still there: its peer's handshake sends it.
    let newest = net.nodes[A].dev.peer_id(&key(peers - 1)).unwrap();
    assert!(net.nodes[A].dev.staging().has(newest));

    // Half the peers removed: their packets go with them.
    let removals = (0..peers / 2)
        .map(|i| PeerChange {
            remove: true,
            ..peer_change(key(i))
        })
        .collect();
    net.set(
        A,
        SetRequest {
            peers: removals,
            ..SetRequest::default()
        },
    );
    // The rest give up after REKEY_ATTEMPT_TIME: nothing is held any more.
    net.advance(REKEY_ATTEMPT_TIME + REKEY_TIMEOUT * 2 + JITTER * 20 + secs(5));
    let st = net.nodes[A].dev.staging();
    assert_eq!(st.len(), 0);
    assert_eq!(st.held_bytes(), 0);
}

/// The managed daemon's once-a-second check reads `peer_states`, status and `get=1` read
/// `info()`: both must say the same of every peer (order, key, handshake, endpoint), with
/// and without a handshake or an endpoint, and after a peer was removed from the middle.
#[test]
fn peer_states_agree_with_info() {
    let mut net = Net::new(3);
    net.connect(A, B);
    net.connect(B, A);
    net.handshake_with(A, &net.pkt4(A, B, b"x"));
    net.advance(secs(3));
    // Extra peers on A: no endpoint, an endpoint, a removed one leaving a hole.
    let extra: Vec<[u8; 32]> = (0..4u8).map(|i| [0x40 + i; 32]).collect();
    let mut changes = Vec::new();
    for (i, k) in extra.iter().enumerate() {
        let mut c = peer_change(*k);
        c.allowed_ips = vec![allow(v4([10, 9, i as u8, 0]), 24)];
        if i % 2 == 1 {
            c.endpoint = Some(SocketAddr::from(([192, 0, 2, i as u8], 51820)));
        }
        changes.push(c);
    }
    changes.push(peer_change(net.nodes[C].public));
    net.set(
        A,
        SetRequest {
            peers: changes,
            ..SetRequest::default()
        },
    );
    let mut rm = peer_change(extra[1]);
    rm.remove = true;
    net.set(
        A,
        SetRequest {
            peers: vec![rm],
            ..SetRequest::default()
        },
    );
    for node in [A, B] {
        let dev = &net.nodes[node].dev;
        let info = dev.info();
        let states: Vec<_> = dev.peer_states().collect();
        assert_eq!(states.len(), info.peers.len());
        for (s, p) in states.iter().zip(&info.peers) {
            assert_eq!(*s.public_key, p.public_key);
            assert_eq!(s.last_handshake, p.last_handshake);
            assert_eq!(s.endpoint, p.endpoint);
            assert_eq!(dev.peer_state(&p.public_key), Some(*s));
        }
        assert!(info.peers.iter().any(|p| p.last_handshake.is_some()));
    }
    assert_eq!(net.nodes[A].dev.info().peers.len(), 5);
    assert!(net.nodes[A].dev.peer_state(&extra[1]).is_none());
    let hs = net.info(A, B).last_handshake;
    assert_eq!(
        net.nodes[A]
            .dev
            .peer_state(&net.nodes[B].public)
            .and_then(|s| s.last_handshake),
        hs
    );
}
