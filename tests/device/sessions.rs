//! Rekeying and expiry: rekeying without loss, the previous keypair, REJECT_AFTER_TIME.

use super::*;

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
