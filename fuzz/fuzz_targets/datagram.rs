//! Every datagram the UDP socket can receive, reaching past mac1.
//!
//! Three devices with fixed keys live in memory: A (the target) has peers B and C (C with a
//! preshared key and no endpoint until it roams in); B and C each have A as their only peer.
//! B and C are real solowg devices, so the initiations, responses, cookie replies and
//! transport packets they produce are valid: the fuzzer's input is a program that chooses
//! which inner packets the nodes send, which captured datagram goes where (in any order, any
//! number of times, from the real or a roamed source address), how it is mutated on the way
//! (bit flips, truncation, overwrites, extensions, a fresh mac1 over the mutated bytes so the
//! Noise code sees them), raw datagrams, configuration changes on A, load (cookie mode) and
//! the clock (now = start + fuzz-chosen steps, timers fired at every deadline on the way).
//!
//! Checked after every step, on every node: no panic; verdict lengths inside the buffer;
//! every datagram a device emits classifies as a WireGuard message of the right size; TUN
//! writes are well-formed IP packets from a source the table routes to a peer; a drop
//! verdict is counted; drop counters, per-peer byte counters and handshake times never go
//! backwards (handshake times never in the future); `info()` agrees with the peer list; after
//! `update_timers(now)` the next deadline is in the future; `poll_output` ends.
//!
//! `SOLOWG_FUZZ_TRACE=1` prints every step and verdict to stderr (to check that seeds reach
//! the transport path).
#![no_main]

use libfuzzer_sys::fuzz_target;
use solowg::crypto::{self, clamp, public_key, Rng};
use solowg::proto::cookie::LABEL_MAC1;
use solowg::proto::device::{Device, DropReason, Verdict};
use solowg::proto::uapi::{AllowedIpChange, PeerChange, SetRequest};
use solowg::proto::wire::{self, HEADROOM};
use solowg_fuzz::Input;
use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use zeroize::Zeroizing;

const BUF_LEN: usize = wire::MAX_DATAGRAM + 64;
/// Captured datagrams kept for delivery (oldest forgotten first).
const POOL: usize = 48;
const STEPS: usize = 256;
const A: usize = 0;
const B: usize = 1;
const C: usize = 2;
const PSK_C: [u8; 32] = [7; 32];

fn trace() -> bool {
    static T: OnceLock<bool> = OnceLock::new();
    *T.get_or_init(|| std::env::var_os("SOLOWG_FUZZ_TRACE").is_some())
}

macro_rules! tr {
    ($($a:tt)*) => { if trace() { eprintln!($($a)*); } };
}

fn private(i: usize) -> [u8; 32] {
    let mut k = [0u8; 32];
    Rng::from_seed([0x40 + i as u8; 32]).fill(&mut k);
    clamp(k)
}

fn v4(i: usize) -> [u8; 4] {
    [10, 0, 0, i as u8 + 1]
}

fn v6(i: usize) -> [u8; 16] {
    let mut a = [0u8; 16];
    a[0] = 0xfd;
    a[15] = i as u8 + 1;
    a
}

/// Node `i`'s source addresses: its home address, a roamed IPv4 one, an IPv6 one.
fn addr(i: usize, which: usize) -> SocketAddr {
    match which % 3 {
        0 => SocketAddr::new(Ipv4Addr::new(192, 0, 2, i as u8 + 1).into(), 51820),
        1 => SocketAddr::new(
            Ipv4Addr::new(198, 51, 100, i as u8 + 1).into(),
            40000 + i as u16,
        ),
        _ => SocketAddr::new(
            Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, i as u16 + 1).into(),
            51820,
        ),
    }
}

fn node_at(a: SocketAddr) -> Option<usize> {
    (0..3).find(|&i| (0..3).any(|w| addr(i, w) == a))
}

fn ip4(src: [u8; 4], dst: [u8; 4], payload: usize) -> Vec<u8> {
    let total = 20 + payload;
    let mut p = vec![0u8; total];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    p[8] = 64;
    p[9] = 253;
    p[12..16].copy_from_slice(&src);
    p[16..20].copy_from_slice(&dst);
    for (i, b) in p[20..].iter_mut().enumerate() {
        *b = i as u8;
    }
    p
}

fn ip6(src: [u8; 16], dst: [u8; 16], payload: usize) -> Vec<u8> {
    let mut p = vec![0u8; 40 + payload];
    p[0] = 0x60;
    p[4..6].copy_from_slice(&(payload as u16).to_be_bytes());
    p[6] = 59;
    p[7] = 64;
    p[8..24].copy_from_slice(&src);
    p[24..40].copy_from_slice(&dst);
    p
}

fn allow(a: IpAddr, cidr: u8) -> AllowedIpChange {
    AllowedIpChange {
        addr: a,
        cidr,
        remove: false,
    }
}

struct Dgram {
    from: usize,
    src: SocketAddr,
    to: SocketAddr,
    data: Vec<u8>,
}

/// What the invariants remember of a peer between steps.
#[derive(Clone, Copy)]
struct Seen {
    tx: u64,
    rx: u64,
    handshake: Option<(u64, u32)>,
}

struct World {
    now: Instant,
    devs: Vec<Device>,
    publics: Vec<[u8; 32]>,
    pool: VecDeque<Dgram>,
    buf: Vec<u8>,
    drops: Vec<Vec<u64>>,
    seen: HashMap<(usize, [u8; 32]), Seen>,
    tun_writes: usize,
}

fn wall_base() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_700_000_000)
}

impl World {
    fn new() -> World {
        solowg::log::set_level(solowg::log::SILENT);
        let t0 = Instant::now();
        let mut devs = Vec::new();
        let mut publics = Vec::new();
        for i in 0..3 {
            let mut d = Device::new(t0, wall_base(), Rng::from_seed([0x80 + i as u8; 32]));
            d.apply(
                &SetRequest {
                    private_key: Some(Some(Zeroizing::new(private(i)))),
                    ..SetRequest::default()
                },
                t0,
            );
            publics.push(d.public_key().expect("key set"));
            devs.push(d);
        }
        assert_eq!(publics[0], public_key(&private(0)));
        let mut w = World {
            now: t0,
            devs,
            publics,
            pool: VecDeque::new(),
            buf: vec![0; BUF_LEN],
            drops: vec![vec![0; DropReason::ALL.len()]; 3],
            seen: HashMap::new(),
            tun_writes: 0,
        };
        let req = SetRequest {
            peers: vec![w.peer_b_on_a(), w.peer_c_on_a()],
            ..SetRequest::default()
        };
        w.set(A, req);
        for (i, psk) in [(B, None), (C, Some(PSK_C))] {
            let mut pc = PeerChange::new(w.publics[A]);
            pc.endpoint = Some(addr(A, 0));
            pc.preshared_key = psk.map(|k| Some(Zeroizing::new(k)));
            pc.allowed_ips = vec![
                allow(Ipv4Addr::UNSPECIFIED.into(), 0),
                allow(Ipv6Addr::UNSPECIFIED.into(), 0),
            ];
            w.set(
                i,
                SetRequest {
                    peers: vec![pc],
                    ..SetRequest::default()
                },
            );
        }
        w
    }

    fn peer_b_on_a(&self) -> PeerChange {
        let mut pc = PeerChange::new(self.publics[B]);
        pc.endpoint = Some(addr(B, 0));
        pc.allowed_ips = vec![
            allow(IpAddr::from(v4(B)), 32),
            allow(IpAddr::from(v6(B)), 128),
        ];
        pc
    }

    /// C: preshared key, a /24 besides its /32, and no endpoint (it must roam in).
    fn peer_c_on_a(&self) -> PeerChange {
        let mut pc = PeerChange::new(self.publics[C]);
        pc.preshared_key = Some(Some(Zeroizing::new(PSK_C)));
        pc.allowed_ips = vec![
            allow(IpAddr::from(v4(C)), 32),
            allow(Ipv4Addr::new(10, 0, 3, 0).into(), 24),
            allow(IpAddr::from(v6(C)), 128),
        ];
        pc
    }

    fn set(&mut self, i: usize, req: SetRequest) {
        let now = self.now;
        // A removed peer may come back (even within the same request) with fresh counters.
        let removed: Vec<[u8; 32]> = req
            .peers
            .iter()
            .filter(|p| p.remove)
            .map(|p| p.public_key)
            .collect();
        let all = req.replace_peers;
        self.seen
            .retain(|(n, k), _| *n != i || !(all || removed.contains(k)));
        self.devs[i].apply(&req, now);
        let live: Vec<[u8; 32]> = self.devs[i]
            .info()
            .peers
            .iter()
            .map(|p| p.public_key)
            .collect();
        self.seen.retain(|(n, k), _| *n != i || live.contains(k));
        self.poll(i);
    }

    fn push(&mut self, from: usize, to: SocketAddr, data: Vec<u8>) {
        let kind = wire::classify(&data);
        assert!(
            kind.is_some(),
            "node {from} emitted a malformed datagram ({} bytes)",
            data.len()
        );
        tr!(
            "  node {from} -> {to}: {:?} {} bytes",
            kind.unwrap(),
            data.len()
        );
        if self.pool.len() == POOL {
            self.pool.pop_front();
        }
        self.pool.push_back(Dgram {
            from,
            src: addr(from, 0),
            to,
            data,
        });
    }

    /// Sends everything node `i` queued.
    fn poll(&mut self, i: usize) {
        for n in 0.. {
            assert!(n < 10_000, "poll_output never ends");
            let now = self.now;
            let Some((to, len)) = self.devs[i].poll_output(now, &mut self.buf) else {
                break;
            };
            assert!(len <= self.buf.len());
            let data = self.buf[..len].to_vec();
            self.push(i, to, data);
        }
    }

    /// Node `i` reads an inner packet from its TUN device.
    fn encapsulate(&mut self, i: usize, packet: &[u8]) {
        let n = packet.len();
        let end = HEADROOM + n + 32;
        self.buf[HEADROOM..HEADROOM + n].copy_from_slice(packet);
        let now = self.now;
        let v = self.devs[i].encapsulate(now, &mut self.buf[..end], n);
        tr!("node {i} sends {n}-byte inner packet: {v:?}");
        self.check_verdict(i, v, end);
        match v {
            Verdict::SendUdp { to, len } => {
                let data = self.buf[..len].to_vec();
                self.push(i, to, data);
            }
            Verdict::WriteTun { .. } => panic!("encapsulate wrote to the TUN device"),
            Verdict::Done | Verdict::Drop(_) => {}
        }
        self.poll(i);
    }

    /// Node `j` receives `data` from `src`.
    fn deliver(&mut self, j: usize, src: SocketAddr, data: &[u8]) {
        self.buf[..data.len()].copy_from_slice(data);
        let now = self.now;
        let v = self.devs[j].decapsulate(now, src, &mut self.buf, data.len());
        tr!("node {j} <- {src}: {} bytes: {v:?}", data.len());
        self.check_verdict(j, v, self.buf.len());
        match v {
            Verdict::SendUdp { to, len } => {
                let data = self.buf[..len].to_vec();
                self.push(j, to, data);
            }
            Verdict::WriteTun { start, len } => {
                let p = &self.buf[start..start + len];
                let ip = wire::inner_ip(p).expect("TUN write is an IP packet");
                assert_eq!(ip.len, len, "TUN write trimmed to the IP length");
                assert!(
                    self.devs[j].route(ip.src).is_some(),
                    "TUN write from a source no peer may use"
                );
                self.tun_writes += 1;
            }
            Verdict::Done | Verdict::Drop(_) => {}
        }
        self.poll(j);
    }

    fn check_verdict(&self, i: usize, v: Verdict, buf_len: usize) {
        match v {
            Verdict::SendUdp { len, .. } => assert!(len <= buf_len),
            Verdict::WriteTun { start, len } => {
                assert!(start.checked_add(len).is_some_and(|e| e <= buf_len))
            }
            Verdict::Drop(r) => assert!(
                self.devs[i].drop_count(r) > self.drops[i][r as usize],
                "drop {r:?} not counted"
            ),
            Verdict::Done => {}
        }
    }

    fn tick(&mut self) {
        for i in 0..3 {
            let now = self.now;
            self.devs[i].update_timers(now);
            if let Some(t) = self.devs[i].next_deadline() {
                assert!(
                    t > now,
                    "node {i}: deadline not in the future after update_timers"
                );
            }
            self.poll(i);
        }
    }

    /// Moves the clock, waking the devices at every deadline on the way as the event loop does.
    fn advance(&mut self, d: Duration) {
        let target = self.now + d;
        tr!("advance {d:?}");
        for _ in 0..10_000 {
            match self.devs.iter().filter_map(Device::next_deadline).min() {
                Some(t) if t <= target => {
                    self.now = self.now.max(t);
                    self.tick();
                }
                _ => break,
            }
        }
        self.now = target;
        self.tick();
    }

    /// Invariants checked after every step.
    fn check(&mut self) {
        for i in 0..3 {
            let dev = &self.devs[i];
            for (r, n) in dev.drops() {
                assert!(
                    n >= self.drops[i][r as usize],
                    "drop counter {r:?} went back"
                );
                self.drops[i][r as usize] = n;
            }
            let info = dev.info();
            assert_eq!(info.peers.len(), dev.peer_count());
            assert_eq!(info.private_key.is_some(), dev.public_key().is_some());
            let wall_now = dev
                .wall(self.now)
                .duration_since(UNIX_EPOCH)
                .expect("after the epoch");
            let wall_now = (wall_now.as_secs(), wall_now.subsec_nanos());
            for (k, p) in info.peers.iter().enumerate() {
                assert!(
                    info.peers[..k].iter().all(|q| q.public_key != p.public_key),
                    "peer listed twice"
                );
                assert!(dev.peer_id(&p.public_key).is_some());
                for (a, c) in &p.allowed_ips {
                    assert!(*c <= if a.is_ipv4() { 32 } else { 128 });
                }
                if let Some(h) = p.last_handshake {
                    assert!(h <= wall_now, "handshake in the future");
                }
                let now = Seen {
                    tx: p.tx_bytes,
                    rx: p.rx_bytes,
                    handshake: p.last_handshake,
                };
                if let Some(old) = self.seen.insert((i, p.public_key), now) {
                    assert!(now.tx >= old.tx, "tx_bytes went back");
                    assert!(now.rx >= old.rx, "rx_bytes went back");
                    assert!(now.handshake >= old.handshake, "last handshake went back");
                }
            }
        }
    }

    /// A configuration change on A chosen by the input.
    fn reconfigure(&mut self, inp: &mut Input) {
        let what = inp.below(9);
        tr!("reconfigure A: {what}");
        let mut req = SetRequest::default();
        match what {
            0 => {
                let mut pc = PeerChange::new(self.publics[B]);
                pc.persistent_keepalive = Some(u16::from(inp.u8() % 30));
                req.peers.push(pc);
            }
            1 => {
                let mut pc = PeerChange::new(self.publics[C]);
                pc.remove = true;
                req.peers.push(pc);
            }
            2 => req.peers.push(self.peer_c_on_a()),
            3 => {
                let mut pc = PeerChange::new(self.publics[C]);
                pc.preshared_key = Some(inp.bool().then(|| Zeroizing::new([inp.u8(); 32])));
                req.peers.push(pc);
            }
            4 => {
                let mut pc = PeerChange::new(self.publics[B]);
                pc.endpoint = Some(addr(B, inp.below(3)));
                req.peers.push(pc);
            }
            5 => {
                // Cookie mode: 0 puts A under load at once.
                self.devs[A].under_load_rate = [0, 1, 3, 200][inp.below(4)];
                return;
            }
            6 => {
                req.replace_peers = true;
                req.peers = vec![self.peer_b_on_a(), self.peer_c_on_a()];
            }
            7 => {
                // Same key: every session must survive.
                req.private_key = Some(Some(Zeroizing::new(private(A))));
            }
            _ => {
                // C's prefix moves to B and back.
                let mut pc = PeerChange::new(self.publics[if inp.bool() { B } else { C }]);
                pc.allowed_ips = vec![allow(IpAddr::from(v4(C)), 32)];
                req.peers.push(pc);
            }
        }
        self.set(A, req);
    }

    fn step(&mut self, inp: &mut Input) {
        match inp.u8() % 12 {
            // B or C sends an inner packet (usually to A's addresses, sometimes spoofed).
            op @ (0..=2) => self.send_to_a(op, inp),
            // A sends an inner packet to B, C, C's /24 or nowhere.
            3 => self.send_from_a(inp),
            // Deliver a captured datagram as it is (it stays: replay is allowed), from its
            // sender's home address or a roamed one.
            4 | 5 => self.replay(inp),
            // Deliver a mutated copy.
            6 => self.replay_mutated(inp),
            // Raw bytes to A, sometimes dressed as a WireGuard header.
            7 => self.raw_to_a(inp),
            // The clock.
            8 => self.advance_by(inp),
            // Timers at the current time.
            9 => self.tick(),
            10 => self.reconfigure(inp),
            // Forget or reorder captured datagrams.
            _ => self.shuffle_pool(inp),
        }
    }

    fn send_to_a(&mut self, op: u8, inp: &mut Input) {
        let from = [B, C, B][usize::from(op)];
        let size = usize::from(inp.u8()) * 6;
        let flags = inp.u8();
        let src4 = if flags & 2 != 0 {
            [10, 0, 3, 9]
        } else {
            v4(from)
        };
        let p = if flags & 1 == 0 {
            ip4(src4, v4(A), size)
        } else {
            ip6(v6(from), v6(A), size)
        };
        self.encapsulate(from, &p);
    }

    fn send_from_a(&mut self, inp: &mut Input) {
        let size = usize::from(inp.u8()) * 6;
        let dst = inp.below(4);
        let p = match dst {
            0 => ip4(v4(A), v4(B), size),
            1 => ip6(v6(A), v6(C), size),
            2 => ip4(v4(A), [10, 0, 3, inp.u8()], size),
            _ => ip4(v4(A), [10, 9, 9, 9], size),
        };
        self.encapsulate(A, &p);
    }

    fn replay(&mut self, inp: &mut Input) {
        if self.pool.is_empty() {
            return;
        }
        let k = inp.below(self.pool.len());
        let roam = inp.u8();
        let d = &self.pool[k];
        let src = if roam < 200 {
            d.src
        } else {
            addr(d.from, usize::from(roam))
        };
        let to = node_at(d.to).unwrap_or(A);
        let data = d.data.clone();
        self.deliver(to, src, &data);
    }

    fn replay_mutated(&mut self, inp: &mut Input) {
        if self.pool.is_empty() {
            return;
        }
        let k = inp.below(self.pool.len());
        let d = &self.pool[k];
        let (src, to) = (d.src, node_at(d.to).unwrap_or(A));
        let mut data = d.data.clone();
        let n = 1 + inp.below(3);
        for _ in 0..n {
            mutate(&mut data, inp);
        }
        if inp.bool() {
            fix_mac1(&mut data, &self.publics[to]);
        }
        self.deliver(to, src, &data);
    }

    fn raw_to_a(&mut self, inp: &mut Input) {
        let from = addr(inp.below(3), usize::from(inp.u8()));
        let head = inp.u8();
        let mut data = inp.chunk().to_vec();
        if head & 0x80 != 0 && data.len() >= 4 {
            data[..4].copy_from_slice(&[head & 7, 0, 0, 0]);
        }
        if head & 0x40 != 0 {
            fix_mac1(&mut data, &self.publics[A]);
        }
        self.deliver(A, from, &data);
    }

    fn advance_by(&mut self, inp: &mut Input) {
        let kind = inp.u8();
        let n = u64::from(inp.u16());
        let d = match kind % 4 {
            0 => Duration::from_micros(n * 10),
            1 => Duration::from_millis(n),
            2 => Duration::from_secs(n % 600),
            // Up to 30 min: past REJECT_AFTER_TIME * 3, without hours of keepalives.
            _ => Duration::from_secs(n % 1800),
        };
        self.advance(d);
    }

    fn shuffle_pool(&mut self, inp: &mut Input) {
        if self.pool.len() >= 2 {
            let a = inp.below(self.pool.len());
            let b = inp.below(self.pool.len());
            if inp.bool() {
                self.pool.swap(a, b);
            } else {
                self.pool.remove(a);
            }
        }
    }
}

fn mutate(data: &mut Vec<u8>, inp: &mut Input) {
    match inp.below(6) {
        0 if !data.is_empty() => {
            let at = usize::from(inp.u16()) % data.len();
            data[at] ^= 1 << (inp.u8() % 8);
        }
        1 => data.truncate(usize::from(inp.u16()) % (data.len() + 1)),
        2 if !data.is_empty() => {
            let at = usize::from(inp.u16()) % data.len();
            let with = inp.chunk();
            for (d, s) in data[at..].iter_mut().zip(with) {
                *d = *s;
            }
        }
        3 => data.extend_from_slice(inp.chunk()),
        // An index or counter field overwritten with a small or fuzz-chosen value.
        4 if data.len() >= 16 => {
            let at = [4, 8, 12][inp.below(3)];
            let v = inp.u32();
            data[at..at + 4].copy_from_slice(&v.to_le_bytes());
        }
        _ if data.len() >= 16 => {
            let v = u64::from(inp.u32()) << inp.below(40);
            data[8..16].copy_from_slice(&v.to_le_bytes());
        }
        _ => {}
    }
}

/// Recomputes mac1 of a handshake-sized message for the receiver's key (and clears mac2), so
/// the mutated bytes reach the Noise code instead of failing the mac1 check.
fn fix_mac1(data: &mut [u8], receiver: &[u8; 32]) {
    let (mac1, mac2) = match data.len() {
        wire::INITIATION_LEN => (wire::init::MAC1, wire::init::MAC2),
        wire::RESPONSE_LEN => (wire::resp::MAC1, wire::resp::MAC2),
        _ => return,
    };
    let key = crypto::hash(&[LABEL_MAC1, receiver]);
    let m = crypto::mac(&key, &[&data[..mac1]]);
    data[mac1..mac2].copy_from_slice(&m);
    data[mac2..mac2 + 16].fill(0);
}

fuzz_target!(|data: &[u8]| {
    let mut inp = Input::new(data);
    let mut w = World::new();
    w.check();
    for _ in 0..STEPS {
        if inp.is_empty() {
            break;
        }
        w.step(&mut inp);
        w.check();
    }
    tr!("end: {} TUN writes", w.tun_writes);
});
