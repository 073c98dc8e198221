//! Six months of a busy tunnel in simulated time (the sans-IO core takes `now`): bursts of
//! traffic both ways every six hours (sessions made, rekeyed, expired and made again), the
//! peer roaming to a new address every day, a third peer added, used and removed every day,
//! cookie secrets rotating on their timers. At the end of each month the state is printed
//! and the heap this thread holds is measured with the harness's own buffers emptied: it
//! must not grow from month to month. A's only drops are `unknown_index`: C's last packets,
//! sent after A removed it. Not simulated here: wall-clock jumps and the message counter
//! reaching REJECT_AFTER_MESSAGES (2^64 - 2^13 packets cannot be sent here; the unit tests of
//! proto::keypair and proto::replay set the counter there).

mod common;

use common::*;
use solowg::proto::uapi::{PeerChange, SetRequest};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::Ordering;
use std::time::Duration;

mod counting;
use counting::{count, Counting, LIVE};

#[global_allocator]
static GLOBAL: Counting = Counting;

const A: usize = 0;
const B: usize = 1;
const C: usize = 2;
const DAYS: u32 = 180;
const WINDOWS_PER_DAY: u32 = 4;
/// A window of traffic: a packet each way every 10 s for 5 minutes (past REKEY_AFTER_TIME).
const WINDOW: Duration = Duration::from_secs(300);
const STEP: Duration = Duration::from_secs(10);

fn initiations(net: &Net) -> usize {
    net.sent.iter().filter(|s| is_initiation(&s.data)).count()
}

#[test]
fn six_months_of_a_busy_tunnel_leave_the_device_as_it_was() {
    count(true);
    let mut net = Net::new(3);
    net.connect(A, B);
    net.connect(B, A);
    net.connect(C, A);
    let mut delivered = 0usize;
    let mut sent_pkts = 0usize;
    let mut handshakes = 0usize;
    let mut month_live = Vec::new();
    let mut seq = 0u32;
    for day in 1..=DAYS {
        // B roams: a new address every day; A learns it from B's packets.
        net.nodes[B].addr = SocketAddr::new(
            IpAddr::V4(Ipv4Addr::new(192, 0, 2, (day % 200) as u8 + 20)),
            40000 + (day % 1000) as u16,
        );
        // C is added to A, talks, and is removed again (its table entries must go with it).
        net.connect(A, C);
        for w in 0..WINDOWS_PER_DAY {
            let start = net.now;
            while net.now < start + WINDOW {
                seq += 1;
                let to_b = net.pkt4(A, B, &payload(seq, 200 + (seq % 1000) as usize));
                let to_a = net.pkt4(B, A, &payload(seq ^ 0x5555, 120));
                net.send(B, &to_a);
                net.send(A, &to_b);
                sent_pkts += 2;
                if w == 0 && net.now < start + Duration::from_secs(60) {
                    let c = net.pkt4(C, A, &payload(seq, 64));
                    net.send(C, &c);
                    sent_pkts += 1;
                }
                net.advance(STEP);
            }
            // Idle until the next window: sessions expire, timers run.
            net.advance(Duration::from_secs(86_400 / u64::from(WINDOWS_PER_DAY)) - WINDOW);
        }
        let mut rm = PeerChange::new(net.nodes[C].public);
        rm.remove = true;
        net.set(
            A,
            SetRequest {
                peers: vec![rm],
                ..SetRequest::default()
            },
        );
        handshakes += initiations(&net);
        delivered += net.nodes.iter().map(|n| n.tun.len()).sum::<usize>();
        // The harness's records, not the device's state.
        net.sent.clear();
        net.sent.shrink_to_fit();
        for n in &mut net.nodes {
            n.tun.clear();
            n.tun.shrink_to_fit();
        }
        if day % 30 == 0 {
            let live = LIVE.load(Ordering::Relaxed);
            let drops: Vec<String> = net.nodes[A]
                .dev
                .drops()
                .filter(|(_, n)| *n > 0)
                .map(|(r, n)| format!("{} {n}", r.name()))
                .collect();
            println!(
                "month {}: {} handshake initiations, {} of {} packets delivered so far, A: {} peers, drops [{}]; live heap {} bytes",
                day / 30,
                handshakes,
                delivered,
                sent_pkts,
                net.nodes[A].dev.peer_count(),
                drops.join(", "),
                live
            );
            month_live.push(live);
            assert_eq!(net.nodes[A].dev.peer_count(), 1, "C removed every day");
        }
    }
    count(false);
    // Nearly every packet arrives: the ones sent while a handshake was under way wait in
    // staging and are flushed after it.
    assert!(
        delivered as f64 >= 0.99 * sent_pkts as f64,
        "{delivered} of {sent_pkts} delivered"
    );
    // Sessions were made again after every idle stretch, and rekeyed within windows.
    assert!(handshakes as u32 >= DAYS * WINDOWS_PER_DAY, "{handshakes}");
    // Flat: from the second month on, what the thread holds stays within 64 KiB of the first.
    let first = month_live[0];
    for (m, live) in month_live.iter().enumerate().skip(1) {
        assert!(
            (live - first).abs() <= 64 * 1024,
            "month {}: {live} bytes live, month 1: {first}",
            m + 1
        );
    }
}
