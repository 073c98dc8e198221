//! The data path allocates nothing: after a handshake, encrypting and decrypting packets in
//! both directions (and keepalives, and timer checks) must not touch the heap. Counted with a
//! global allocator that only counts on the thread that asked for it.

use solowg::crypto::{clamp, public_key, Rng};
use solowg::proto::device::{Device, Verdict};
use solowg::proto::uapi::{AllowedIpChange, PeerChange, SetRequest};
use solowg::proto::wire::HEADROOM;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime};
use zeroize::Zeroizing;

mod counting;
use counting::{count, Counting, ALLOCS};

#[global_allocator]
static GLOBAL: Counting = Counting;

fn config(private: [u8; 32], peer: [u8; 32], allowed: &str, endpoint: SocketAddr) -> SetRequest {
    let (addr, cidr) = allowed.split_once('/').unwrap();
    SetRequest {
        private_key: Some(Some(Zeroizing::new(private))),
        peers: vec![PeerChange {
            endpoint: Some(endpoint),
            allowed_ips: vec![AllowedIpChange {
                addr: addr.parse::<IpAddr>().unwrap(),
                cidr: cidr.parse().unwrap(),
                remove: false,
            }],
            ..PeerChange::new(peer)
        }],
        ..SetRequest::default()
    }
}

fn ipv4(buf: &mut [u8], src: [u8; 4], dst: [u8; 4], len: usize) {
    let p = &mut buf[HEADROOM..HEADROOM + len];
    p.fill(0x5a);
    p[0] = 0x45;
    p[2..4].copy_from_slice(&(len as u16).to_be_bytes());
    p[9] = 17;
    p[12..16].copy_from_slice(&src);
    p[16..20].copy_from_slice(&dst);
}

#[test]
fn data_path_does_not_allocate() {
    solowg::log::set_level(solowg::log::SILENT);
    let t0 = Instant::now();
    let wall = SystemTime::now();
    let (ka, kb) = (clamp([1; 32]), clamp([2; 32]));
    let (aa, ab): (SocketAddr, SocketAddr) = (
        "192.0.2.1:1".parse().unwrap(),
        "192.0.2.2:2".parse().unwrap(),
    );
    let mut a = Device::new(t0, wall, Rng::from_seed([3; 32]));
    let mut b = Device::new(t0, wall, Rng::from_seed([4; 32]));
    a.apply(&config(ka, public_key(&kb), "10.0.0.2/32", ab), t0);
    b.apply(&config(kb, public_key(&ka), "10.0.0.1/32", aa), t0);

    let mut buf = vec![0u8; 2048];
    let mut out = vec![0u8; 2048];
    // One round trip with the handshake (allowed to allocate: keypairs, indices, staging).
    ipv4(&mut buf, [10, 0, 0, 1], [10, 0, 0, 2], 100);
    assert_eq!(a.encapsulate(t0, &mut buf, 100), Verdict::Done);
    let (to, n) = a.poll_output(t0, &mut out).unwrap();
    assert_eq!(to, ab);
    let Verdict::SendUdp { len, .. } = b.decapsulate(t0, aa, &mut out, n) else {
        panic!("no response");
    };
    assert_eq!(a.decapsulate(t0, ab, &mut out, len), Verdict::Done);
    while let Some((_, n)) = a.poll_output(t0, &mut out) {
        b.decapsulate(t0, aa, &mut out, n);
    }
    while b.poll_output(t0, &mut out).is_some() {}

    let mut now = t0;
    let mut delivered = 0;
    count(true);
    for i in 0..20_000usize {
        now += Duration::from_micros(50);
        let len = 20 + (i * 37) % 1400;
        let (tx, rx, src, dst, from) = if i % 3 == 0 {
            (&mut b, &mut a, [10, 0, 0, 2], [10, 0, 0, 1], ab)
        } else {
            (&mut a, &mut b, [10, 0, 0, 1], [10, 0, 0, 2], aa)
        };
        ipv4(&mut buf, src, dst, len);
        let Verdict::SendUdp { len: n, .. } = tx.encapsulate(now, &mut buf, len) else {
            panic!("packet {i} not sent");
        };
        if let Verdict::WriteTun { len: got, .. } = rx.decapsulate(now, from, &mut buf, n) {
            assert_eq!(got, len);
            delivered += 1;
        }
        a.update_timers(now);
        b.update_timers(now);
        while a.poll_output(now, &mut out).is_some() {}
        while b.poll_output(now, &mut out).is_some() {}
    }
    count(false);
    assert_eq!(delivered, 20_000);
    assert_eq!(
        ALLOCS.load(Ordering::Relaxed),
        0,
        "heap allocations on the data path"
    );
}
