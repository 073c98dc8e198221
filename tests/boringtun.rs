//! Interop with an independent WireGuard implementation: boringtun's sans-IO `Tunn`.
//!
//! solowg runs on the manual clock; boringtun reads the real one, so nothing here waits for
//! boringtun's timers. Handshakes, cookies and data need no waiting on its side.
// boringtun is not a dev-dependency on MIPS (see Cargo.toml).
#![cfg(not(target_arch = "mips"))]

mod common;

use boringtun::noise::rate_limiter::RateLimiter;
use boringtun::noise::{Tunn, TunnResult};
use boringtun::x25519::{PublicKey, StaticSecret};
use common::*;
use solowg::crypto::Rng;
use solowg::proto::device::{Device, DropReason, Verdict};
use solowg::proto::timers::{REKEY_AFTER_TIME, REKEY_TIMEOUT};
use solowg::proto::uapi::SetRequest;
use solowg::proto::wire::HEADROOM;
use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use zeroize::Zeroizing;

/// solowg is node 0 of `common`'s numbering, boringtun node 1.
const SW: usize = 0;
const BT: usize = 1;

struct Pair {
    now: Instant,
    sw: Device,
    bt: Tunn,
    bt_pub: [u8; 32],
    /// Datagrams in flight towards each side.
    to_bt: VecDeque<Vec<u8>>,
    to_sw: VecDeque<Vec<u8>>,
    /// Packets each side wrote to its TUN device, with boringtun's reported source.
    sw_tun: Vec<Vec<u8>>,
    bt_tun: Vec<(Vec<u8>, IpAddr)>,
    bt_errors: Vec<String>,
    sw_verdicts: Vec<Verdict>,
    /// Bytes of all datagrams solowg sent and was handed.
    sw_out_bytes: u64,
    sw_in_bytes: u64,
    buf: Vec<u8>,
}

/// solowg's device with boringtun as its one peer, its wall clock read as `wall`.
fn new_sw(now: Instant, wall: SystemTime, seed: [u8; 32], psk: Option<[u8; 32]>) -> Device {
    let bt_pub = solowg::crypto::public_key(&node_private(BT));
    let mut sw = Device::new(now, wall, Rng::from_seed(seed));
    let mut pc = peer_change(bt_pub);
    pc.endpoint = Some(bt_addr());
    pc.preshared_key = psk.map(|k| Some(Zeroizing::new(k)));
    pc.allowed_ips = vec![
        allow(IpAddr::V4(Ipv4Addr::from(node_v4(BT))), 32),
        allow(IpAddr::V6(Ipv6Addr::from(node_v6(BT))), 128),
    ];
    let mut req = key_request(node_private(SW));
    req.peers = vec![pc];
    sw.apply(&req, now);
    sw
}

fn sw_addr() -> SocketAddr {
    node_addr(SW)
}

fn bt_addr() -> SocketAddr {
    node_addr(BT)
}

impl Pair {
    fn new(sw_psk: Option<[u8; 32]>, bt_psk: Option<[u8; 32]>) -> Pair {
        Pair::with_limiter(sw_psk, bt_psk, None)
    }

    fn with_limiter(
        sw_psk: Option<[u8; 32]>,
        bt_psk: Option<[u8; 32]>,
        limiter: Option<Arc<RateLimiter>>,
    ) -> Pair {
        solowg::log::set_level(solowg::log::SILENT);
        let now = Instant::now();
        let bt_secret = StaticSecret::from(node_private(BT));
        let bt_pub = PublicKey::from(&bt_secret).to_bytes();
        assert_eq!(bt_pub, solowg::crypto::public_key(&node_private(BT)));
        let sw_pub = solowg::crypto::public_key(&node_private(SW));

        let sw = new_sw(now, SystemTime::now(), [0x99; 32], sw_psk);

        let bt = Tunn::new(bt_secret, PublicKey::from(sw_pub), bt_psk, None, 7, limiter);
        Pair {
            now,
            sw,
            bt,
            bt_pub,
            to_bt: VecDeque::new(),
            to_sw: VecDeque::new(),
            sw_tun: Vec::new(),
            bt_tun: Vec::new(),
            bt_errors: Vec::new(),
            sw_verdicts: Vec::new(),
            sw_out_bytes: 0,
            sw_in_bytes: 0,
            buf: vec![0; BUF_LEN],
        }
    }

    fn sw_poll(&mut self) {
        while let Some((to, len)) = self.sw.poll_output(self.now, &mut self.buf) {
            assert_eq!(to, bt_addr());
            self.sw_out_bytes += len as u64;
            self.to_bt.push_back(self.buf[..len].to_vec());
        }
    }

    /// solowg reads `packet` from its TUN device.
    fn sw_send(&mut self, packet: &[u8]) -> Verdict {
        let mut buf = vec![0u8; HEADROOM + packet.len() + 32];
        buf[HEADROOM..HEADROOM + packet.len()].copy_from_slice(packet);
        let v = self.sw.encapsulate(self.now, &mut buf, packet.len());
        if let Verdict::SendUdp { to, len } = v {
            assert_eq!(to, bt_addr());
            self.sw_out_bytes += len as u64;
            self.to_bt.push_back(buf[..len].to_vec());
        }
        self.sw_poll();
        v
    }

    /// boringtun reads `packet` from its TUN device.
    fn bt_send(&mut self, packet: &[u8]) {
        match self.bt.encapsulate(packet, &mut self.buf) {
            TunnResult::WriteToNetwork(d) => self.to_sw.push_back(d.to_vec()),
            TunnResult::Done => {}
            TunnResult::Err(e) => panic!("boringtun encapsulate: {e:?}"),
            _ => panic!("unexpected result from encapsulate"),
        }
    }

    /// One datagram into boringtun, draining its queue as its docs require.
    fn bt_recv(&mut self, d: &[u8]) {
        let mut datagram: &[u8] = d;
        for _ in 0..10_000 {
            let res = self
                .bt
                .decapsulate(Some(sw_addr().ip()), datagram, &mut self.buf);
            match res {
                TunnResult::Done => return,
                TunnResult::Err(e) => {
                    self.bt_errors.push(format!("{e:?}"));
                    return;
                }
                TunnResult::WriteToNetwork(out) => self.to_sw.push_back(out.to_vec()),
                TunnResult::WriteToTunnelV4(p, src) => {
                    self.bt_tun.push((p.to_vec(), IpAddr::V4(src)));
                    return;
                }
                TunnResult::WriteToTunnelV6(p, src) => {
                    self.bt_tun.push((p.to_vec(), IpAddr::V6(src)));
                    return;
                }
            }
            datagram = &[];
        }
        panic!("boringtun never stops producing output");
    }

    /// One datagram into solowg (from boringtun's address).
    fn sw_recv(&mut self, d: &[u8]) -> Verdict {
        let mut buf = vec![0u8; BUF_LEN];
        buf[..d.len()].copy_from_slice(d);
        self.sw_in_bytes += d.len() as u64;
        let v = self.sw.decapsulate(self.now, bt_addr(), &mut buf, d.len());
        match v {
            Verdict::WriteTun { start, len } => self.sw_tun.push(buf[start..start + len].to_vec()),
            Verdict::SendUdp { to, len } => {
                assert_eq!(to, bt_addr());
                self.sw_out_bytes += len as u64;
                self.to_bt.push_back(buf[..len].to_vec());
            }
            Verdict::Done | Verdict::Drop(_) => {}
        }
        self.sw_verdicts.push(v);
        self.sw_poll();
        v
    }

    /// Delivers everything in flight, both ways, until quiet.
    fn pump(&mut self) {
        for _ in 0..1_000_000 {
            if let Some(d) = self.to_bt.pop_front() {
                self.bt_recv(&d);
            } else if let Some(d) = self.to_sw.pop_front() {
                self.sw_recv(&d);
            } else {
                return;
            }
        }
        panic!("datagram storm");
    }

    fn sw_timers(&mut self, d: Duration) {
        self.now += d;
        self.sw.update_timers(self.now);
        self.sw_poll();
    }

    fn sw_drops(&self) -> u64 {
        self.sw.drops().map(|(_, n)| n).sum()
    }

    fn sw_peer(&self) -> solowg::proto::uapi::PeerInfo {
        self.sw.info().peers.remove(0)
    }

    fn assert_clean(&self) {
        assert!(self.bt_errors.is_empty(), "boringtun: {:?}", self.bt_errors);
        assert_eq!(self.sw_drops(), 0, "solowg dropped: {:?}", self.sw_verdicts);
    }

    /// Checks a solowg -> boringtun packet arrived intact, with its source reported.
    fn expect_at_bt(&self, p: &[u8], src: IpAddr) {
        let (got, from) = self.bt_tun.last().expect("boringtun received something");
        assert_eq!(got.as_slice(), p);
        assert_eq!(*from, src);
    }
}

fn sw_v4() -> IpAddr {
    IpAddr::V4(Ipv4Addr::from(node_v4(SW)))
}

fn sw_v6() -> IpAddr {
    IpAddr::V6(Ipv6Addr::from(node_v6(SW)))
}

fn pkt(v6: bool, from: usize, to: usize, body: &[u8]) -> Vec<u8> {
    if v6 {
        ipv6(node_v6(from), node_v6(to), body)
    } else {
        ipv4(node_v4(from), node_v4(to), body)
    }
}

/// solowg starts: its first packet is staged, the handshake runs, the packet arrives.
fn sw_handshake(pair: &mut Pair) {
    let p = pkt(false, SW, BT, b"hello boringtun");
    assert_eq!(pair.sw_send(&p), Verdict::Done);
    assert_eq!(pair.to_bt.len(), 1);
    assert!(is_initiation(&pair.to_bt[0]));
    pair.pump();
    pair.expect_at_bt(&p, sw_v4());
    assert_eq!(pair.bt_tun.len(), 1);
    assert!(pair.sw_peer().last_handshake.is_some());
    assert!(pair.bt.stats().0.is_some(), "boringtun has a session");
    pair.assert_clean();
}

/// boringtun starts: its first packet is queued, the handshake runs, the packet arrives.
fn bt_handshake(pair: &mut Pair) {
    let p = pkt(true, BT, SW, b"hello solowg");
    pair.bt_send(&p);
    assert_eq!(pair.to_sw.len(), 1);
    assert!(is_initiation(&pair.to_sw[0]));
    pair.pump();
    assert_eq!(pair.sw_tun, vec![p]);
    let info = pair.sw_peer();
    assert!(
        info.last_handshake.is_some(),
        "confirmed by boringtun's keepalive"
    );
    assert_eq!(info.endpoint, Some(bt_addr()));
    assert!(
        pair.sw_verdicts.contains(&Verdict::Done),
        "keepalive consumed"
    );
    pair.assert_clean();
}

/// Both directions, both IP versions, payloads from empty to past the MTU.
fn exchange_sizes(pair: &mut Pair) {
    let sizes = [
        0usize, 1, 15, 16, 17, 100, 576, 1000, 1280, 1360, 1380, 1400, 1480,
    ];
    for (i, &n) in sizes.iter().enumerate() {
        for v6 in [false, true] {
            let seed = (i * 2 + v6 as usize) as u32;
            let out = pkt(v6, SW, BT, &payload(seed, n));
            assert!(matches!(pair.sw_send(&out), Verdict::SendUdp { .. }));
            pair.pump();
            pair.expect_at_bt(&out, if v6 { sw_v6() } else { sw_v4() });

            let back = pkt(v6, BT, SW, &payload(seed + 1000, n));
            pair.bt_send(&back);
            pair.pump();
            assert_eq!(pair.sw_tun.last(), Some(&back), "{n} bytes v6={v6}");
        }
    }
    pair.assert_clean();
}

#[test]
fn solowg_initiates_without_psk() {
    let mut pair = Pair::new(None, None);
    sw_handshake(&mut pair);
    exchange_sizes(&mut pair);
}

#[test]
fn solowg_initiates_with_psk() {
    let psk = [0x5a; 32];
    let mut pair = Pair::new(Some(psk), Some(psk));
    sw_handshake(&mut pair);
    exchange_sizes(&mut pair);
}

#[test]
fn boringtun_initiates_without_psk() {
    let mut pair = Pair::new(None, None);
    bt_handshake(&mut pair);
    exchange_sizes(&mut pair);
}

#[test]
fn boringtun_initiates_with_psk() {
    let psk = [0xa5; 32];
    let mut pair = Pair::new(Some(psk), Some(psk));
    bt_handshake(&mut pair);
    exchange_sizes(&mut pair);
}

#[test]
fn psk_mismatch_gives_no_session_either_way() {
    for (sw_psk, bt_psk) in [
        (Some([1; 32]), Some([2; 32])),
        (Some([1; 32]), None),
        (None, Some([2; 32])),
    ] {
        // solowg initiates: boringtun answers (the psk enters only at the response), and
        // solowg cannot open the response.
        let mut pair = Pair::new(sw_psk, bt_psk);
        pair.sw_send(&pkt(false, SW, BT, b"x"));
        pair.pump();
        assert!(pair.bt_tun.is_empty());
        assert_eq!(pair.sw.drop_count(DropReason::HandshakeFailed), 1);
        assert!(pair.sw_peer().last_handshake.is_none());

        // boringtun initiates: it rejects solowg's response, so solowg is never confirmed.
        let mut pair = Pair::new(sw_psk, bt_psk);
        pair.bt_send(&pkt(false, BT, SW, b"y"));
        pair.pump();
        assert_eq!(pair.bt_errors.len(), 1, "{:?}", pair.bt_errors);
        assert!(pair.sw_tun.is_empty());
        assert!(pair.sw_peer().last_handshake.is_none());
    }
}

#[test]
fn ten_thousand_packets_each_way_with_content_checks() {
    let mut pair = Pair::new(None, None);
    sw_handshake(&mut pair);
    let (mut to_bt, mut to_sw) = (Vec::new(), Vec::new());
    for i in 0..10_000u32 {
        let v6 = i % 3 == 0;
        let n = (i as usize * 97) % 1381;
        let a = pkt(v6, SW, BT, &payload(i, n));
        assert!(matches!(pair.sw_send(&a), Verdict::SendUdp { .. }));
        let b = pkt(!v6, BT, SW, &payload(i + 50_000, (n * 7) % 1381));
        pair.bt_send(&b);
        to_bt.push(a);
        to_sw.push(b);
        // Deliver in bursts so several packets are in flight at once.
        if i % 64 == 63 {
            pair.pump();
        }
    }
    pair.pump();
    pair.assert_clean();
    let got_bt: Vec<Vec<u8>> = pair.bt_tun.drain(1..).map(|(p, _)| p).collect();
    assert_eq!(got_bt.len(), to_bt.len());
    assert!(got_bt == to_bt, "boringtun received different content");
    assert_eq!(pair.sw_tun.len(), to_sw.len());
    assert!(pair.sw_tun == to_sw, "solowg received different content");
    // solowg's counters match the datagrams exchanged (no cookies or drops here).
    assert_eq!(pair.sw_peer().tx_bytes, pair.sw_out_bytes);
    assert_eq!(pair.sw_peer().rx_bytes, pair.sw_in_bytes);
}

#[test]
fn rekey_against_boringtun_keeps_old_session_for_packets_in_flight() {
    let mut pair = Pair::new(None, None);
    sw_handshake(&mut pair);
    pair.now += REKEY_AFTER_TIME + Duration::from_secs(1);

    // The old session carries this packet while solowg asks for a new one.
    let a = pkt(false, SW, BT, b"last on the old session");
    assert!(matches!(pair.sw_send(&a), Verdict::SendUdp { .. }));
    assert_eq!(pair.to_bt.len(), 2);
    assert!(is_initiation(&pair.to_bt[1]));
    // boringtun sends on the old session too, before it sees the new handshake.
    let b = pkt(true, BT, SW, b"old session, other way");
    pair.bt_send(&b);
    let old_from_bt = pair.to_sw.pop_front().unwrap();

    while let Some(d) = pair.to_bt.pop_front() {
        pair.bt_recv(&d);
    }
    pair.expect_at_bt(&a, sw_v4());
    let response = pair.to_sw.pop_front().unwrap();
    assert!(is_response(&response));
    assert_eq!(pair.sw_recv(&response), Verdict::Done);
    // The new session is current on solowg now; the old packet decrypts via `previous`.
    assert!(matches!(
        pair.sw_recv(&old_from_bt),
        Verdict::WriteTun { .. }
    ));
    assert_eq!(pair.sw_tun, vec![b]);
    pair.pump();
    exchange_sizes(&mut pair);
    assert_eq!(
        pair.sw_peer().last_handshake,
        Some({
            let d = pair
                .sw
                .wall(pair.now)
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap();
            (d.as_secs(), d.subsec_nanos())
        }),
        "rekeyed at the current time"
    );
}

/// A router without RTC: it boots in the past, NTP moves its wall clock 3 years forward
/// during a session, then it restarts with the clock behind again. Handshake timestamps
/// follow the clock as the shell reads it: the rekey after the jump carries the new time,
/// the restarted device's initiations are refused as replays while its clock is behind
/// (boringtun saw later ones, as the kernel would refuse them too), and once NTP sets the
/// clock again the next retry completes.
#[test]
fn wall_clock_jumps_forward_and_restart_with_clock_behind() {
    let year = Duration::from_secs(365 * 86_400);
    let boot = std::time::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let mut pair = Pair::new(None, None);
    pair.sw.set_wall_clock(pair.now, boot);
    sw_handshake(&mut pair);
    assert_eq!(
        pair.sw_peer().last_handshake.map(|t| t.0),
        Some(1_700_000_000)
    );

    // NTP, 10 s into the session: the handshake's age stays 10 s.
    pair.now += Duration::from_secs(10);
    pair.sw
        .set_wall_clock(pair.now, boot + 3 * year + Duration::from_secs(10));
    let age = |pair: &Pair| {
        let (s, _) = pair.sw_peer().last_handshake.unwrap();
        let wall = pair
            .sw
            .wall(pair.now)
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap();
        wall.as_secs() - s
    };
    assert_eq!(age(&pair), 10, "a handshake's age survives the jump");

    // The rekey after the jump is accepted: its timestamp is 3 years later.
    pair.now += REKEY_AFTER_TIME;
    let a = pkt(false, SW, BT, b"after the jump");
    assert!(matches!(pair.sw_send(&a), Verdict::SendUdp { .. }));
    assert!(pair.to_bt.iter().any(|d| is_initiation(d)), "rekey started");
    pair.pump();
    pair.assert_clean();
    assert_eq!(age(&pair), 0, "rekeyed just now");
    let after_jump = pair.sw_peer().last_handshake.unwrap().0;
    assert!(after_jump >= 1_700_000_000 + 3 * 365 * 86_400);

    // Restart, the clock behind again (no RTC): boringtun refuses the initiation.
    pair.now += Duration::from_secs(1);
    let behind = boot + Duration::from_secs(30);
    pair.sw = new_sw(pair.now, behind, [0x77; 32], None);
    let b = pkt(false, SW, BT, b"after the restart");
    assert_eq!(pair.sw_send(&b), Verdict::Done);
    pair.pump();
    assert!(
        pair.bt_errors.iter().any(|e| e.contains("Tai64")),
        "boringtun refused an old timestamp: {:?}",
        pair.bt_errors
    );
    assert!(pair.sw_peer().last_handshake.is_none());
    pair.bt_errors.clear();

    // NTP sets the clock; the next retry (REKEY_TIMEOUT later) completes.
    pair.sw
        .set_wall_clock(pair.now, boot + 3 * year + Duration::from_secs(200));
    let before = pair.bt_tun.len();
    pair.sw_timers(REKEY_TIMEOUT + Duration::from_millis(500));
    assert!(pair.to_bt.iter().any(|d| is_initiation(d)), "retried");
    pair.pump();
    pair.assert_clean();
    assert!(
        pair.sw_peer().last_handshake.is_some(),
        "handshake completed"
    );
    assert_eq!(pair.bt_tun.len(), before + 1, "the staged packet arrived");
    pair.expect_at_bt(&b, sw_v4());
}

#[test]
fn keepalives_interoperate() {
    let mut pair = Pair::new(None, None);
    sw_handshake(&mut pair);
    // boringtun's keepalive: authenticated, counted, nothing written to TUN. It also tells
    // solowg its data arrived, so no "peer is dead" handshake follows below.
    let rx = pair.sw_peer().rx_bytes;
    pair.bt_send(&[]);
    assert!(is_keepalive(&pair.to_sw[0]));
    pair.pump();
    assert_eq!(pair.sw_verdicts.last(), Some(&Verdict::Done));
    assert_eq!(pair.sw_peer().rx_bytes, rx + 32);
    assert!(pair.sw_tun.is_empty());

    // Turning on persistent keepalive makes solowg send one at once...
    let mut pc = peer_change(pair.bt_pub);
    pc.persistent_keepalive = Some(25);
    pair.sw.apply(
        &SetRequest {
            peers: vec![pc],
            ..SetRequest::default()
        },
        pair.now,
    );
    pair.sw_poll();
    assert_eq!(pair.to_bt.len(), 1);
    assert!(is_keepalive(&pair.to_bt[0]));
    pair.pump();
    assert_eq!(pair.bt_tun.len(), 1, "nothing written for a keepalive");
    // ...and the next after the interval, on solowg's clock; boringtun accepts both.
    pair.sw_timers(Duration::from_secs(24));
    assert!(pair.to_bt.is_empty());
    pair.sw_timers(Duration::from_secs(1));
    assert_eq!(pair.to_bt.len(), 1);
    assert!(is_keepalive(&pair.to_bt[0]));
    pair.pump();
    assert_eq!(pair.bt_tun.len(), 1);
    pair.assert_clean();
}

#[test]
fn solowg_takes_boringtuns_cookie_and_retries_with_mac2() {
    // A limit of 0 puts boringtun permanently under load: every handshake needs mac2.
    let bt_pub = PublicKey::from(&StaticSecret::from(node_private(BT)));
    let limiter = Arc::new(RateLimiter::new(&bt_pub, 0));
    let mut pair = Pair::with_limiter(None, None, Some(limiter));
    let p = pkt(false, SW, BT, b"after the cookie");
    pair.sw_send(&p);
    let init = pair.to_bt.pop_front().unwrap();
    assert_eq!(&init[132..148], &[0; 16]);
    pair.bt_recv(&init);
    let cookie = pair.to_sw.pop_front().expect("boringtun demands a cookie");
    assert!(is_cookie_reply(&cookie));
    assert_eq!(
        pair.sw_recv(&cookie),
        Verdict::Done,
        "solowg takes the cookie"
    );
    assert!(pair.to_bt.is_empty());

    // solowg's retransmission carries mac2 and is accepted.
    pair.sw_timers(REKEY_TIMEOUT + Duration::from_millis(334));
    assert_eq!(pair.to_bt.len(), 1);
    assert_ne!(&pair.to_bt[0][132..148], &[0; 16]);
    pair.pump();
    pair.expect_at_bt(&p, sw_v4());
    pair.assert_clean();
}

#[test]
fn boringtun_takes_solowgs_cookie_and_retries_with_mac2() {
    let mut pair = Pair::new(None, None);
    // Any handshake message at all puts solowg under load.
    pair.sw.under_load_rate = 0;

    // boringtun's initiation finds solowg under load and gets a cookie.
    let p = pkt(true, BT, SW, b"after the cookie");
    pair.bt_send(&p);
    let init = pair.to_sw.pop_front().unwrap();
    let v = pair.sw_recv(&init);
    assert!(matches!(v, Verdict::SendUdp { len: 64, .. }), "{v:?}");
    let cookie = pair.to_bt.pop_front().unwrap();
    assert!(is_cookie_reply(&cookie));
    pair.bt_recv(&cookie);
    assert!(pair.bt_errors.is_empty(), "boringtun took the cookie");

    // boringtun's next initiation has mac2 and passes; solowg is still under load.
    pair.now += Duration::from_millis(100); // past solowg's per-peer initiation flood limit
    match pair.bt.format_handshake_initiation(&mut pair.buf, true) {
        TunnResult::WriteToNetwork(d) => pair.to_sw.push_back(d.to_vec()),
        _ => panic!("no initiation"),
    }
    assert_ne!(&pair.to_sw[0][132..148], &[0; 16]);
    let cookies = pair.sw.drop_count(DropReason::CookieRequired);
    pair.pump();
    assert_eq!(pair.sw.drop_count(DropReason::CookieRequired), cookies);
    assert_eq!(pair.sw_tun, vec![p]);
    assert!(pair.bt_errors.is_empty(), "{:?}", pair.bt_errors);
}
