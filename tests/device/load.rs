//! Cookies and load: cookie replies, mac2, per-source rate limits, the handshake time budget.

use super::*;

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
