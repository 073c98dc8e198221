//! Tests of the per-peer endpoint policy: backoff, stall-triggered re-resolution, routing
//! results to peers.

use super::*;
use crate::openwrt::dns::{
    Backoff, Due, EndpointResolver, EndpointState, Endpoints, Error, QueryId, SetEndpoint,
};
use std::time::{Duration, Instant};

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

/// Runs `e.poll` and answers its query with `result`.
fn attempt(
    e: &mut EndpointResolver,
    dns: &mut Resolver,
    now: Instant,
    result: Result<Vec<SocketAddr>, Error>,
    jitter: u32,
) -> Option<SocketAddr> {
    let q = e.poll(now, dns).expect("a resolution was due");
    dns.cancel(q);
    e.on_result(q, &result, now, jitter)
}

fn failed_until(e: &EndpointResolver) -> Instant {
    match e.state() {
        EndpointState::Failed { until, .. } => *until,
        s => panic!("{s:?}"),
    }
}

#[test]
fn endpoint_first_resolution_sets_address() {
    let t0 = Instant::now();
    let mut dns = resolver(&[S1]);
    let mut e = EndpointResolver::new("peer.example", 51820, Backoff::default());
    assert_eq!(e.state(), &EndpointState::Unresolved);
    assert_eq!(e.due(), Some(Due::Now));
    let q = e.poll(t0, &mut dns).unwrap();
    assert_eq!(e.due(), None);
    assert_eq!(e.poll(t0, &mut dns), None);
    // A stale query id changes nothing.
    assert_eq!(
        e.on_result(QueryId(q.0 + 99), &Ok(vec![sa("1.1.1.1:1")]), t0, 0),
        None
    );
    let addr = sa("192.0.2.1:51820");
    assert_eq!(e.on_result(q, &Ok(vec![addr]), t0, 0), Some(addr));
    assert_eq!(
        e.state(),
        &EndpointState::Resolved {
            addr,
            at: t0,
            refresh: None
        }
    );
    assert_eq!(e.due(), None);
    assert_eq!(e.address(), Some(addr));
}

#[test]
fn endpoint_backoff_doubles_to_five_minutes_with_jitter() {
    let mut now = Instant::now();
    let mut dns = resolver(&[S1]);
    let mut e = EndpointResolver::new("peer.example", 1, Backoff::default());
    let mut waits = Vec::new();
    for _ in 0..12 {
        assert_eq!(attempt(&mut e, &mut dns, now, Err(Error::Timeout), 0), None);
        let until = failed_until(&e);
        assert_eq!(e.poll(until - Duration::from_millis(1), &mut dns), None);
        waits.push((until - now).as_secs());
        now = until;
    }
    assert_eq!(waits, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300]);
    // Jitter takes off up to a quarter, never adds.
    for jitter in [1, 511, 1023, u32::MAX] {
        let mut e2 = EndpointResolver::new("peer.example", 1, Backoff::default());
        for _ in 0..20 {
            attempt(&mut e2, &mut dns, now, Err(Error::Timeout), jitter);
            let wait = failed_until(&e2) - now;
            now = failed_until(&e2);
            assert!(
                wait <= secs(300) && wait >= Duration::from_millis(750),
                "{wait:?}"
            );
        }
        assert!(failed_until(&e2) - now <= secs(300));
    }
    // Success resets the backoff.
    let addr = sa("192.0.2.1:1");
    assert_eq!(
        attempt(&mut e, &mut dns, now, Ok(vec![addr]), 0),
        Some(addr)
    );
    e.note_handshake_stalled(now);
    let refresh_at = match e.due() {
        Some(Due::At(t)) => t,
        d => panic!("{d:?}"),
    };
    attempt(&mut e, &mut dns, refresh_at, Err(Error::Timeout), 0);
    assert_eq!(failed_until(&e) - refresh_at, secs(1));
}

#[test]
fn stall_triggers_reresolution_at_most_every_30_s() {
    let t0 = Instant::now();
    let mut dns = resolver(&[S1]);
    let mut e = EndpointResolver::new("ddns.example", 1, Backoff::default());
    let old = sa("192.0.2.1:1");
    let new = sa("192.0.2.2:1");
    assert_eq!(attempt(&mut e, &mut dns, t0, Ok(vec![old]), 0), Some(old));
    // Stalled 10 s after the first resolution started: held back until t0 + 30 s.
    e.note_handshake_stalled(t0 + secs(10));
    assert_eq!(e.due(), Some(Due::At(t0 + secs(30))));
    assert_eq!(e.poll(t0 + secs(29), &mut dns), None);
    // Repeated stall notes do not push it further out.
    e.note_handshake_stalled(t0 + secs(20));
    assert_eq!(e.due(), Some(Due::At(t0 + secs(30))));
    assert_eq!(
        attempt(&mut e, &mut dns, t0 + secs(30), Ok(vec![new]), 0),
        Some(new)
    );
    // Long after the last start: due at once.
    e.note_handshake_stalled(t0 + secs(500));
    assert_eq!(e.due(), Some(Due::At(t0 + secs(500))));
    // While resolving, stalls are ignored.
    let q = e.poll(t0 + secs(500), &mut dns).unwrap();
    e.note_handshake_stalled(t0 + secs(501));
    assert!(matches!(e.state(), EndpointState::Resolving { query, .. } if *query == q));
    // A failed re-resolution keeps the address and retries with backoff; a completed
    // handshake ends the retries.
    assert_eq!(
        e.on_result(q, &Err(Error::Timeout), t0 + secs(501), 0),
        None
    );
    assert_eq!(e.address(), Some(new));
    assert_eq!(failed_until(&e), t0 + secs(502));
    e.note_handshake_stalled(t0 + secs(501)); // backoff decides while failing
    assert_eq!(failed_until(&e), t0 + secs(502));
    e.note_handshake_completed(t0 + secs(501));
    assert!(
        matches!(e.state(), EndpointState::Resolved { addr, refresh: None, .. } if *addr == new)
    );
    assert_eq!(e.due(), None);
}

#[test]
fn handshake_completion_cancels_pending_refresh() {
    let t0 = Instant::now();
    let mut dns = resolver(&[S1]);
    let mut e = EndpointResolver::new("ddns.example", 1, Backoff::default());
    attempt(&mut e, &mut dns, t0, Ok(vec![sa("192.0.2.1:1")]), 0);
    e.note_handshake_stalled(t0 + secs(5));
    e.note_handshake_completed(t0 + secs(6));
    assert_eq!(e.due(), None);
    // Without a known address a failure keeps retrying even after a handshake (which
    // then came from a roaming peer).
    let mut e = EndpointResolver::new("ddns.example", 1, Backoff::default());
    attempt(&mut e, &mut dns, t0, Err(Error::NxDomain), 0);
    e.note_handshake_completed(t0);
    assert_eq!(e.due(), Some(Due::At(t0 + secs(1))));
}

#[test]
fn endpoints_route_results_to_peers() {
    let t0 = Instant::now();
    let mut dns = resolver(&[S1]);
    let mut eps: Endpoints<u32> = Endpoints::new(Rng::from_seed([1; 32]));
    eps.insert(
        1,
        EndpointResolver::new("one.example", 11, Backoff::default()),
        &mut dns,
    );
    eps.insert(
        2,
        EndpointResolver::new("192.0.2.2", 22, Backoff::default()),
        &mut dns,
    );
    eps.insert(
        3,
        EndpointResolver::new("three.example", 33, Backoff::default()),
        &mut dns,
    );
    assert_eq!(eps.next_deadline(t0), Some(t0));
    eps.poll(t0, &mut dns);
    assert_eq!(eps.next_deadline(t0), None);
    let tx = sent(&mut dns);
    assert_eq!(tx.len(), 4);
    // Peer 3 goes away: its query is cancelled.
    eps.remove(3, &mut dns);
    let m = a_reply(id_for(&tx[..2], TYPE_A), "one.example", [192, 0, 2, 1]);
    assert!(dns.on_datagram(sa(S1), &m, t0));
    while let Some((q, res)) = dns.poll_result() {
        assert!(eps.on_result(q, &res, t0));
    }
    let mut actions = Vec::new();
    while let Some(a) = eps.poll_action() {
        actions.push(a);
    }
    actions.sort_by_key(|a| a.peer);
    assert_eq!(
        actions,
        [
            SetEndpoint {
                peer: 1,
                addr: sa("192.0.2.1:11")
            },
            SetEndpoint {
                peer: 2,
                addr: sa("192.0.2.2:22")
            }
        ]
    );
    assert!(dns.is_idle());
    assert!(eps.get(3).is_none());
    eps.note_handshake_stalled(1, t0 + secs(100));
    assert_eq!(eps.next_deadline(t0 + secs(100)), Some(t0 + secs(100)));
}
