//! The protocol timers: keepalives, new handshakes, retransmission, key erasure.

use super::*;

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
