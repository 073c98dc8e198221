//! Configuration (UAPI set semantics): private key, peers replaced, updated and removed,
//! allowed IPs; the peers' states against `info()`.

use super::*;

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
