//! The first handshake, data both ways, and the responder waiting for key confirmation.

use super::*;

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
