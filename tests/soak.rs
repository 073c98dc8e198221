//! Six months of a busy tunnel in simulated time (the sans-IO core takes `now`): bursts of
//! traffic both ways every six hours (sessions made, rekeyed, expired and made again), the
//! peer roaming to a new address every day, a third peer added, used and removed every day,
//! cookie secrets rotating on their timers. Two bursts a day are opened by one side alone
//! (A, then B), whose packet must arrive at once: the peer accepted that side's initiation.
//!
//! Wall clocks (`JUMPS`): now and then one side's wall clock steps, forward by months or
//! years, back by hours or to 1970 and 2000, as NTP or a reset RTC steps a router's, while
//! the monotonic clock runs on. Sessions up at the step must keep working, and the side whose
//! clock went back must still be able to start handshakes: the peer accepts an initiation
//! only if its TAI64N stamp is above the last one it accepted from that side.
//!
//! Counters (`LIMITS`): a session's send counter is moved to just below REKEY_AFTER_MESSAGES
//! or REJECT_AFTER_MESSAGES (2^60 and 2^64 - 2^13 messages cannot be sent here) and a burst
//! of packets runs it past the limit: a new handshake must follow, no message may carry a
//! counter at or past the reject limit, and every packet must arrive.
//!
//! At the end of each month the state is printed and the heap this thread holds is measured
//! with the harness's own buffers emptied: it must not grow from month to month. A's and B's
//! only drops are `unknown_index`, about one a day each: when both sides start a handshake at once,
//! each answers the other's initiation, which replaces its own, so the response to its own
//! finds no handshake.

mod common;

use common::*;
use solowg::proto::device::{DropReason, Verdict};
use solowg::proto::replay::REJECT_AFTER_MESSAGES;
use solowg::proto::timers::REKEY_AFTER_MESSAGES;
use solowg::proto::uapi::{PeerChange, SetRequest};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

mod counting;
use counting::{count, Counting, LIVE};

#[global_allocator]
static GLOBAL: Counting = Counting;

const A: usize = 0;
const B: usize = 1;
const C: usize = 2;
const NAMES: [&str; 3] = ["A", "B", "C"];
const DAYS: u32 = 180;
const WINDOWS_PER_DAY: u32 = 4;
/// A window of traffic: a packet each way every 10 s for 5 minutes (past REKEY_AFTER_TIME).
const WINDOW: Duration = Duration::from_secs(300);
const STEP: Duration = Duration::from_secs(10);

const HOUR: i64 = 3600;
const DAY: i64 = 24 * HOUR;
const YEAR: i64 = 365 * DAY;

/// A step of one side's wall clock.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// Forward (positive) or back by this many seconds.
    By(i64),
    /// To this Unix time.
    To(u64),
    /// To the true time, as NTP sets it.
    Ntp,
}

/// Wall-clock steps: (day, window, side, step), made in the middle of the window, while
/// the tunnel carries traffic.
const JUMPS: &[(u32, u32, usize, Step)] = &[
    (3, 1, A, Step::To(0)),          // RTC lost: back to 1970
    (5, 2, A, Step::Ntp),            // NTP: 53 years forward
    (20, 0, B, Step::By(2 * YEAR)),  // a wrong time server: two years ahead
    (23, 3, B, Step::Ntp),           // corrected: two years back
    (40, 1, A, Step::By(-3 * HOUR)), // an RTC kept in local time
    (41, 2, A, Step::Ntp),
    (60, 0, A, Step::By(180 * DAY)),   // six months ahead,
    (61, 1, A, Step::To(946_684_800)), // then back to 2000, a firmware's build date
    (63, 2, A, Step::Ntp),
    (90, 2, B, Step::To(0)),
    (92, 1, B, Step::Ntp),
    (120, 0, A, Step::By(YEAR)), // a year ahead and back the same day
    (120, 2, A, Step::Ntp),
    (150, 1, B, Step::By(-HOUR)), // an hour back, for good
];

/// Counter limits run past: (day, side whose send counter is moved, limit), in the middle
/// of the day's third window.
const LIMITS: &[(u32, usize, u64)] = &[
    (45, A, REKEY_AFTER_MESSAGES),
    (75, B, REJECT_AFTER_MESSAGES),
    (135, B, REKEY_AFTER_MESSAGES),
    (165, A, REJECT_AFTER_MESSAGES),
];

fn initiations(net: &Net) -> usize {
    net.sent.iter().filter(|s| is_initiation(&s.data)).count()
}

/// Each side's wall clock as last set: (monotonic instant, wall time then).
struct Clocks([(Instant, SystemTime); 2]);

impl Clocks {
    fn now(&self, side: usize, t: Instant) -> SystemTime {
        let (at, wall) = self.0[side];
        wall + (t - at)
    }

    /// Steps `side`'s wall clock and tells its device, as the shell does after reading it.
    fn step(&mut self, net: &mut Net, side: usize, step: Step) -> (SystemTime, SystemTime) {
        let was = self.now(side, net.now);
        let secs = |s: i64| Duration::from_secs(s.unsigned_abs());
        let new = match step {
            Step::By(s) if s >= 0 => was + secs(s),
            Step::By(s) => was - secs(s),
            Step::To(t) => UNIX_EPOCH + Duration::from_secs(t),
            Step::Ntp => wall_base() + (net.now - net.t0),
        };
        self.0[side] = (net.now, new);
        net.nodes[side].dev.set_wall_clock(net.now, new);
        (was, new)
    }
}

/// `YYYY-MM-DD HH:MM` of a wall-clock time (days to civil date, proleptic Gregorian).
fn date(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let days = (secs / 86_400) as i64;
    let (hh, mm) = (secs % 86_400 / 3600, secs % 3600 / 60);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02} {hh:02}:{mm:02}")
}

/// Local index and send counter of `on`'s current keypair with `of`.
fn current(net: &Net, on: usize, of: usize) -> Option<(u32, u64)> {
    let id = net.peer_id(on, of);
    let kp = net.nodes[on].dev.peer(id)?.keypairs.current.as_ref()?;
    Some((kp.local_index, kp.send_counter))
}

/// Drops that would mean a data message was sent with a counter the receiver must refuse.
fn counter_drops(net: &Net, on: usize) -> u64 {
    let dev = &net.nodes[on].dev;
    [
        DropReason::Replay,
        DropReason::ExpiredKeypair,
        DropReason::DecryptFailed,
    ]
    .iter()
    .map(|&r| dev.drop_count(r))
    .sum()
}

/// The session `side` sends on is moved to 2 messages below `limit`, then 4 packets are
/// sent at once and the network runs. Returns how many went out under the old keys.
fn run_past_limit(net: &mut Net, side: usize, limit: u64, seq: &mut u32) -> usize {
    let peer = 1 - side;
    let id = net.peer_id(side, peer);
    let (old, _) = current(net, side, peer).expect("a session is up mid-window");
    assert!(net.nodes[side].dev.set_send_counter(id, limit - 2));
    let inits = net.sent_by(side, is_initiation).len();
    let arrived = net.nodes[peer].tun.len();
    let drops = counter_drops(net, peer);
    let mut sealed = 0;
    for _ in 0..4 {
        *seq += 1;
        let p = net.pkt4(side, peer, &payload(*seq, 300));
        if matches!(net.send(side, &p), Verdict::SendUdp { .. }) {
            sealed += 1;
        }
    }
    net.run();
    let name = NAMES[side];
    assert_eq!(
        net.nodes[peer].tun.len() - arrived,
        4,
        "{name}: all 4 arrive"
    );
    assert_eq!(
        net.sent_by(side, is_initiation).len() - inits,
        1,
        "{name}: one new handshake"
    );
    let (new, counter) = current(net, side, peer).expect("a new session");
    assert!(
        new != old && counter < 16,
        "{name} sends on the new session"
    );
    assert_eq!(counter_drops(net, peer), drops, "nothing refused");
    if limit == REJECT_AFTER_MESSAGES {
        // The old keypair stopped at the limit: the last two packets waited for the new one.
        assert_eq!(sealed, 2);
        let p = net.nodes[side].dev.peer(id).expect("peer");
        let prev = p.keypairs.previous.as_ref().expect("old session kept");
        assert_eq!(
            (prev.local_index, prev.send_counter),
            (old, REJECT_AFTER_MESSAGES)
        );
    } else {
        assert_eq!(sealed, 4, "rekeying does not hold packets back");
    }
    sealed
}

#[test]
fn six_months_of_a_busy_tunnel_leave_the_device_as_it_was() {
    count(true);
    let mut net = Net::new(3);
    net.connect(A, B);
    net.connect(B, A);
    net.connect(C, A);
    let mut clocks = Clocks([(net.t0, wall_base()); 2]);
    let mut delivered = 0usize;
    let mut sent_pkts = 0usize;
    let mut handshakes = 0usize;
    let mut month_live = Vec::new();
    let mut seq = 0u32;
    let (mut opened, mut late) = (0u32, 0u32);
    let mut first_late = None;
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
            // Windows 1 and 3 are opened by A and B alone. The opener has no session (the
            // last one expired hours ago): its packet arrives at once only if the peer
            // accepts its initiation. In windows 0 and 2 both sides start at once and their
            // handshakes cross.
            if let Some(opener) = [None, Some(A), None, Some(B)][w as usize] {
                let other = 1 - opener;
                seq += 1;
                let p = net.pkt4(opener, other, &payload(seq, 100));
                let arrived = net.nodes[other].tun.len();
                net.send(opener, &p);
                net.run();
                sent_pkts += 1;
                opened += 1;
                if net.nodes[other].tun.len() == arrived {
                    late += 1;
                    first_late.get_or_insert((day, w, NAMES[opener]));
                }
            }
            while net.now < start + WINDOW {
                if net.now - start == WINDOW / 2 {
                    for &(_, _, side, step) in JUMPS.iter().filter(|j| (j.0, j.1) == (day, w)) {
                        let (was, new) = clocks.step(&mut net, side, step);
                        println!(
                            "day {day}: {}'s wall clock steps from {} to {}",
                            NAMES[side],
                            date(was),
                            date(new)
                        );
                        // The last handshake keeps its age (`wg show`: "2 minutes ago").
                        let dev = &net.nodes[side].dev;
                        let id = net.peer_id(side, 1 - side);
                        let at = dev
                            .peer(id)
                            .and_then(|p| p.last_handshake)
                            .expect("session");
                        let then = new - (net.now - at);
                        let unix = then.duration_since(UNIX_EPOCH).unwrap_or_default();
                        let shown = dev.peer_state(&net.nodes[1 - side].public);
                        assert_eq!(
                            shown.and_then(|s| s.last_handshake),
                            Some((unix.as_secs(), unix.subsec_nanos()))
                        );
                        // The sessions up are used at once, both ways, without a handshake.
                        for (from, to) in [(A, B), (B, A)] {
                            seq += 1;
                            let p = net.pkt4(from, to, &payload(seq, 80));
                            let arrived = net.nodes[to].tun.len();
                            let v = net.send(from, &p);
                            net.run();
                            sent_pkts += 1;
                            assert!(matches!(v, Verdict::SendUdp { .. }), "day {day}: {v:?}");
                            assert_eq!(net.nodes[to].tun.len(), arrived + 1, "day {day}");
                        }
                    }
                    for &(_, side, limit) in LIMITS.iter().filter(|l| l.0 == day && w == 2) {
                        let sealed = run_past_limit(&mut net, side, limit, &mut seq);
                        sent_pkts += 4;
                        let what = if limit == REJECT_AFTER_MESSAGES {
                            "REJECT_AFTER_MESSAGES"
                        } else {
                            "REKEY_AFTER_MESSAGES"
                        };
                        println!(
                            "day {day}: {}'s session 2 messages below {what}: a new handshake, \
                             {sealed} of 4 packets sent on the old session, {} on the new one, \
                             4 of 4 delivered",
                            NAMES[side],
                            4 - sealed
                        );
                    }
                }
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
            let drops = |i: usize| {
                net.nodes[i]
                    .dev
                    .drops()
                    .filter(|(_, n)| *n > 0)
                    .map(|(r, n)| format!("{} {n}", r.name()))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            println!(
                "month {}: {} handshake initiations, {} of {} packets delivered so far, \
                 {} of {} bursts opened at once, A: {} peers, drops [{}], B: drops [{}]; \
                 wall clocks A {} B {}; live heap {} bytes",
                day / 30,
                handshakes,
                delivered,
                sent_pkts,
                opened - late,
                opened,
                net.nodes[A].dev.peer_count(),
                drops(A),
                drops(B),
                date(clocks.now(A, net.now)),
                date(clocks.now(B, net.now)),
                live
            );
            month_live.push(live);
            assert_eq!(net.nodes[A].dev.peer_count(), 1, "C removed every day");
        }
    }
    count(false);
    // Neither side's initiations were refused (`handshake_failed`), whatever its wall clock
    // did, and no data message was refused after the counters' limits.
    assert_eq!(
        late, 0,
        "bursts whose opener got no session at once, first {first_late:?}"
    );
    for side in [A, B] {
        for (r, n) in net.nodes[side].dev.drops() {
            assert!(
                n == 0 || r == DropReason::UnknownIndex,
                "{}: {} {n}",
                NAMES[side],
                r.name()
            );
        }
    }
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
