//! Two or three solowg devices wired through the in-memory network of `common`: handshake,
//! data, timers, cookies, replay, routing, roaming, configuration and malformed input.

mod common;

// The tests by topic, each file below `device/` (a test crate's root looks for its modules
// beside it, where cargo would take them for test crates of their own).
#[path = "device/configuration.rs"]
mod configuration;
#[path = "device/handshake_and_data.rs"]
mod handshake_and_data;
#[path = "device/load.rs"]
mod load;
#[path = "device/replay.rs"]
mod replay;
#[path = "device/robustness.rs"]
mod robustness;
#[path = "device/routing_and_roaming.rs"]
mod routing_and_roaming;
#[path = "device/sessions.rs"]
mod sessions;
#[path = "device/timers.rs"]
mod timers;

use common::*;
use solowg::crypto::Rng;
use solowg::proto::device::{DropReason, Verdict};
use solowg::proto::staging::MAX_PER_PEER as MAX_STAGED_PACKETS;
use solowg::proto::timers::{
    KEEPALIVE_TIMEOUT, MAX_TIMER_HANDSHAKES, REJECT_AFTER_TIME, REKEY_AFTER_TIME,
    REKEY_ATTEMPT_TIME, REKEY_TIMEOUT,
};
use solowg::proto::uapi::{PeerChange, SetRequest};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::{Duration, Instant};

const A: usize = 0;
const B: usize = 1;
const C: usize = 2;
/// Upper bound of the random delay added to handshake timers.
const JITTER: Duration = Duration::from_millis(333);

/// The `(secs, nanos)` that `info()` reports for a handshake at `t`.
fn wall_at(net: &Net, t: Instant) -> (u64, u32) {
    let d = (wall_base() + (t - net.t0))
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    (d.as_secs(), d.subsec_nanos())
}

fn total_drops(net: &Net, i: usize) -> u64 {
    net.nodes[i].dev.drops().map(|(_, n)| n).sum()
}

fn send_udp_len(v: Verdict) -> usize {
    match v {
        Verdict::SendUdp { len, .. } => len,
        other => panic!("expected SendUdp, got {other:?}"),
    }
}

fn v4(a: [u8; 4]) -> IpAddr {
    IpAddr::V4(Ipv4Addr::from(a))
}

fn v6(a: [u8; 16]) -> IpAddr {
    IpAddr::V6(Ipv6Addr::from(a))
}

/// A pair with a completed handshake (A initiated, B confirmed) and `p0` delivered to B.
fn established() -> Net {
    let mut net = Net::pair();
    let p0 = net.pkt4(A, B, b"first");
    net.handshake_with(A, &p0);
    assert_eq!(net.nodes[B].tun, vec![p0]);
    net
}
