//! Replayed data and initiations.

use super::*;

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
