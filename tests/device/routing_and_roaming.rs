//! Cryptokey routing on both paths, and the endpoint following the peer.

use super::*;

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
