//! Robustness: random, truncated, extended and mutated datagrams; staging's bounds.

use super::*;

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
