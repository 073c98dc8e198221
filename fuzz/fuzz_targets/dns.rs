//! The stub resolver's reply path on arbitrary bytes: a query for one name is sent, and the
//! input arrives from its server as the answer.
//!
//! The input's first two bytes are replaced by the query's id, and when bit 0 of its third
//! byte is set its question is spliced in after the header, so the fuzzer spends its time
//! past the id and question checks. No panic; a result is for the query that was sent;
//! every address found carries the port asked for; nothing further is sent for a query
//! that has its result.
#![no_main]

use libfuzzer_sys::fuzz_target;
use solowg::crypto::Rng;
use solowg::openwrt::dns::Resolver;
use std::net::SocketAddr;
use std::time::Instant;

const PORT: u16 = 51820;

fuzz_target!(|data: &[u8]| {
    let server: SocketAddr = "192.0.2.53:53".parse().unwrap();
    let mut dns = Resolver::new(vec![server], Rng::from_seed([7; 32]));
    let now = Instant::now();
    let id = dns.resolve("peer.example.test", PORT, now);
    let Some((to, query)) = dns.poll_transmit() else {
        panic!("no query sent");
    };
    assert_eq!(to, server);
    let mut msg = data.to_vec();
    if msg.len() >= 2 {
        msg[..2].copy_from_slice(&query[..2]);
    }
    if msg.len() >= 12 && msg[2] & 1 == 1 {
        // The question of the query: after its 12-byte header, up to the end.
        msg.splice(12..12, query[12..].iter().copied());
    }
    dns.on_datagram(server, &msg, now);
    while let Some((q, result)) = dns.poll_result() {
        assert_eq!(q, id);
        if let Ok(addrs) = result {
            assert!(!addrs.is_empty());
            assert!(addrs.iter().all(|a| a.port() == PORT), "{addrs:?}");
        }
    }
});
