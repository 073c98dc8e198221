//! In-memory network for driving solowg `Device`s without sockets, TUN devices or sleeping.
//!
//! Each node is a `Device` with fixed keys and RNG seed, a UDP "address" and one inner IPv4
//! and IPv6 address. `Net` carries datagrams between nodes through a FIFO `wire`, records
//! every datagram sent (`sent`) and every TUN write (`Node::tun`), and owns a manual clock:
//! `advance` wakes the devices at each timer deadline exactly as an event loop would.

// Each test crate uses a different subset of these helpers.
#![allow(dead_code)]

use solowg::crypto::{clamp, public_key, Rng};
use solowg::proto::device::{Device, Verdict};
use solowg::proto::peer::PeerId;
use solowg::proto::uapi::{AllowedIpChange, PeerChange, PeerInfo, SetRequest};
use solowg::proto::wire::HEADROOM;
use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use zeroize::Zeroizing;

/// Room for any datagram plus the in-place encryption overhead.
pub const BUF_LEN: usize = 65535 + 64;

/// Wall-clock time the devices believe `t0` is (fixed so that handshake times are exact).
pub fn wall_base() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_700_000_000)
}

pub fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

pub fn ms(m: u64) -> Duration {
    Duration::from_millis(m)
}

/// Deterministic private key for node `i` (clamped like `wg genkey`).
pub fn node_private(i: usize) -> [u8; 32] {
    let mut k = [0u8; 32];
    Rng::from_seed([0x40 + i as u8; 32]).fill(&mut k);
    clamp(k)
}

pub fn node_v4(i: usize) -> [u8; 4] {
    [10, 0, 0, i as u8 + 1]
}

pub fn node_v6(i: usize) -> [u8; 16] {
    let mut a = [0u8; 16];
    a[0] = 0xfd;
    a[15] = i as u8 + 1;
    a
}

pub fn node_addr(i: usize) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(192, 0, 2, i as u8 + 1)), 51820)
}

// ---- inner packets ---------------------------------------------------------------------

/// Deterministic, position- and seed-dependent payload bytes.
pub fn payload(seed: u32, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (seed.wrapping_mul(31).wrapping_add(i as u32 * 7) % 251) as u8)
        .collect()
}

/// A valid IPv4 packet: 20-byte header (checksum included) and `payload`.
pub fn ipv4(src: [u8; 4], dst: [u8; 4], payload: &[u8]) -> Vec<u8> {
    let total = 20 + payload.len();
    assert!(total <= 65535);
    let mut p = vec![0u8; total];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    p[8] = 64; // TTL
    p[9] = 253; // protocol reserved for experimentation
    p[12..16].copy_from_slice(&src);
    p[16..20].copy_from_slice(&dst);
    let mut sum: u32 = p[..20]
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    p[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    p[20..].copy_from_slice(payload);
    p
}

/// A valid IPv6 packet: 40-byte header ("no next header") and `payload`.
pub fn ipv6(src: [u8; 16], dst: [u8; 16], payload: &[u8]) -> Vec<u8> {
    assert!(payload.len() <= 65535);
    let mut p = vec![0u8; 40 + payload.len()];
    p[0] = 0x60;
    p[4..6].copy_from_slice(&(payload.len() as u16).to_be_bytes());
    p[6] = 59;
    p[7] = 64; // hop limit
    p[8..24].copy_from_slice(&src);
    p[24..40].copy_from_slice(&dst);
    p[40..].copy_from_slice(payload);
    p
}

// ---- configuration helpers -------------------------------------------------------------

/// A peer change that touches nothing but names the peer.
pub fn peer_change(public_key: [u8; 32]) -> PeerChange {
    PeerChange::new(public_key)
}

pub fn allow(addr: IpAddr, cidr: u8) -> AllowedIpChange {
    AllowedIpChange {
        addr,
        cidr,
        remove: false,
    }
}

pub fn disallow(addr: IpAddr, cidr: u8) -> AllowedIpChange {
    AllowedIpChange {
        addr,
        cidr,
        remove: true,
    }
}

pub fn key_request(private: [u8; 32]) -> SetRequest {
    SetRequest {
        private_key: Some(Some(Zeroizing::new(private))),
        ..SetRequest::default()
    }
}

// ---- message classification ------------------------------------------------------------

pub fn is_initiation(d: &[u8]) -> bool {
    d.len() == 148 && d[..4] == [1, 0, 0, 0]
}

pub fn is_response(d: &[u8]) -> bool {
    d.len() == 92 && d[..4] == [2, 0, 0, 0]
}

pub fn is_cookie_reply(d: &[u8]) -> bool {
    d.len() == 64 && d[..4] == [3, 0, 0, 0]
}

pub fn is_data(d: &[u8]) -> bool {
    d.len() >= 32 && d[..4] == [4, 0, 0, 0]
}

pub fn is_keepalive(d: &[u8]) -> bool {
    is_data(d) && d.len() == 32
}

// ---- the network -----------------------------------------------------------------------

pub struct Node {
    pub dev: Device,
    pub addr: SocketAddr,
    pub private: [u8; 32],
    pub public: [u8; 32],
    pub v4: [u8; 4],
    pub v6: [u8; 16],
    /// Packets the device wrote to its TUN interface, in order.
    pub tun: Vec<Vec<u8>>,
    /// Unplugged: datagrams to or from this node are lost (the device itself keeps running).
    pub down: bool,
}

#[derive(Clone, Debug)]
pub struct Dgram {
    pub from: SocketAddr,
    pub to: SocketAddr,
    pub data: Vec<u8>,
}

/// One datagram some node handed to the network (delivered or not).
#[derive(Clone, Debug)]
pub struct Sent {
    pub at: Instant,
    pub node: usize,
    pub to: SocketAddr,
    pub data: Vec<u8>,
}

pub struct Net {
    pub t0: Instant,
    pub now: Instant,
    pub nodes: Vec<Node>,
    pub wire: VecDeque<Dgram>,
    pub sent: Vec<Sent>,
    /// Datagrams sent to an unknown address or to/from a node that is down.
    pub lost: usize,
    buf: Vec<u8>,
}

impl Net {
    /// `n` nodes with keys, addresses and no peers.
    pub fn new(n: usize) -> Net {
        // The devices log to stderr directly, which the test harness does not capture.
        solowg::log::set_level(solowg::log::SILENT);
        let t0 = Instant::now();
        let mut net = Net {
            t0,
            now: t0,
            nodes: Vec::new(),
            wire: VecDeque::new(),
            sent: Vec::new(),
            lost: 0,
            buf: vec![0; BUF_LEN],
        };
        for i in 0..n {
            let private = node_private(i);
            let mut dev = Device::new(t0, wall_base(), Rng::from_seed([0x80 + i as u8; 32]));
            dev.apply(&key_request(private), t0);
            net.nodes.push(Node {
                dev,
                addr: node_addr(i),
                private,
                public: public_key(&private),
                v4: node_v4(i),
                v6: node_v6(i),
                tun: Vec::new(),
                down: false,
            });
        }
        net
    }

    /// Nodes 0 and 1 configured as each other's peer, endpoints known on both sides.
    pub fn pair() -> Net {
        let mut net = Net::new(2);
        net.connect(0, 1);
        net.connect(1, 0);
        net
    }

    /// Makes `to` a peer of `on`: its inner /32 and /128, and its endpoint.
    pub fn connect(&mut self, on: usize, to: usize) {
        let mut pc = peer_change(self.nodes[to].public);
        pc.endpoint = Some(self.nodes[to].addr);
        pc.allowed_ips = vec![
            allow(IpAddr::V4(Ipv4Addr::from(self.nodes[to].v4)), 32),
            allow(IpAddr::V6(Ipv6Addr::from(self.nodes[to].v6)), 128),
        ];
        self.set(
            on,
            SetRequest {
                peers: vec![pc],
                ..SetRequest::default()
            },
        );
    }

    /// Applies a configuration change to node `i` and sends whatever it queued.
    pub fn set(&mut self, i: usize, req: SetRequest) {
        self.nodes[i].dev.apply(&req, self.now);
        self.poll(i);
    }

    pub fn peer_id(&self, on: usize, of: usize) -> PeerId {
        self.nodes[on]
            .dev
            .peer_id(&self.nodes[of].public)
            .expect("peer configured")
    }

    /// `info()` of node `of` as seen by node `on`.
    pub fn info(&self, on: usize, of: usize) -> PeerInfo {
        let key = self.nodes[of].public;
        self.nodes[on]
            .dev
            .info()
            .peers
            .into_iter()
            .find(|p| p.public_key == key)
            .expect("peer in info")
    }

    /// An IPv4 packet from node `from` to node `to` (inner addresses).
    pub fn pkt4(&self, from: usize, to: usize, payload: &[u8]) -> Vec<u8> {
        ipv4(self.nodes[from].v4, self.nodes[to].v4, payload)
    }

    pub fn pkt6(&self, from: usize, to: usize, payload: &[u8]) -> Vec<u8> {
        ipv6(self.nodes[from].v6, self.nodes[to].v6, payload)
    }

    /// Node `i` reads `packet` from its TUN device. Uses a buffer with exactly the documented
    /// 32 spare bytes, so a write past the contract would panic here.
    pub fn send(&mut self, i: usize, packet: &[u8]) -> Verdict {
        let mut buf = vec![0u8; HEADROOM + packet.len() + 32];
        buf[HEADROOM..HEADROOM + packet.len()].copy_from_slice(packet);
        let v = self.nodes[i]
            .dev
            .encapsulate(self.now, &mut buf, packet.len());
        if let Verdict::SendUdp { to, len } = v {
            self.emit(i, to, buf[..len].to_vec());
        }
        self.poll(i);
        v
    }

    fn emit(&mut self, i: usize, to: SocketAddr, data: Vec<u8>) {
        self.sent.push(Sent {
            at: self.now,
            node: i,
            to,
            data: data.clone(),
        });
        if self.nodes[i].down {
            self.lost += 1;
        } else {
            let from = self.nodes[i].addr;
            self.wire.push_back(Dgram { from, to, data });
        }
    }

    /// Sends everything node `i` has queued (initiations, keepalives, staged packets).
    pub fn poll(&mut self, i: usize) {
        let mut out = Vec::new();
        while let Some((to, len)) = self.nodes[i].dev.poll_output(self.now, &mut self.buf) {
            out.push((to, self.buf[..len].to_vec()));
            assert!(out.len() < 100_000, "poll_output never ends");
        }
        for (to, data) in out {
            self.emit(i, to, data);
        }
    }

    pub fn node_at(&self, addr: SocketAddr) -> Option<usize> {
        self.nodes.iter().position(|n| n.addr == addr)
    }

    /// Delivers one datagram, honouring `down`; `None` if it was lost.
    pub fn deliver(&mut self, d: Dgram) -> Option<Verdict> {
        let j = match self.node_at(d.to) {
            Some(j) if !self.nodes[j].down => j,
            _ => {
                self.lost += 1;
                return None;
            }
        };
        Some(self.inject(j, d.from, &d.data))
    }

    /// Hands `data` to node `j` as if it came from `from` (ignores `down`), then acts on the
    /// verdict: TUN writes are recorded, replies and queued output are sent.
    pub fn inject(&mut self, j: usize, from: SocketAddr, data: &[u8]) -> Verdict {
        let mut buf = vec![0u8; BUF_LEN];
        buf[..data.len()].copy_from_slice(data);
        let v = self.nodes[j]
            .dev
            .decapsulate(self.now, from, &mut buf, data.len());
        match v {
            Verdict::WriteTun { start, len } => {
                self.nodes[j].tun.push(buf[start..start + len].to_vec());
            }
            Verdict::SendUdp { to, len } => self.emit(j, to, buf[..len].to_vec()),
            Verdict::Done | Verdict::Drop(_) => {}
        }
        self.poll(j);
        v
    }

    /// Delivers datagrams until none is in flight (replies included).
    pub fn run(&mut self) {
        let mut n = 0;
        while let Some(d) = self.wire.pop_front() {
            self.deliver(d);
            n += 1;
            assert!(n < 1_000_000, "datagram storm");
        }
    }

    /// Takes the datagrams in flight without delivering them.
    pub fn take_wire(&mut self) -> Vec<Dgram> {
        self.wire.drain(..).collect()
    }

    /// Runs every node's timers at the current time and sends their output.
    pub fn tick(&mut self) {
        for i in 0..self.nodes.len() {
            let now = self.now;
            self.nodes[i].dev.update_timers(now);
            self.poll(i);
        }
    }

    /// Moves the clock to `target`, waking the devices at every deadline on the way (as an
    /// event loop sleeping until `next_deadline` would) and delivering all traffic.
    pub fn advance_to(&mut self, target: Instant) {
        assert!(target >= self.now, "time goes forward");
        let mut steps = 0;
        loop {
            self.run();
            let next = self
                .nodes
                .iter()
                .filter_map(|n| n.dev.next_deadline())
                .min();
            match next {
                Some(t) if t <= target => {
                    self.now = self.now.max(t);
                    self.tick();
                }
                _ => break,
            }
            steps += 1;
            assert!(steps < 100_000, "timers never settle");
        }
        self.now = target;
        self.tick();
        self.run();
    }

    pub fn advance(&mut self, d: Duration) {
        self.advance_to(self.now + d);
    }

    /// Seconds since `t0`, for messages.
    pub fn elapsed(&self) -> f64 {
        (self.now - self.t0).as_secs_f64()
    }

    /// Datagrams node `i` sent that match `f`, with their send times.
    pub fn sent_by(&self, i: usize, f: impl Fn(&[u8]) -> bool) -> Vec<&Sent> {
        self.sent
            .iter()
            .filter(|s| s.node == i && f(&s.data))
            .collect()
    }

    /// Full handshake started by node `a` sending `packet`; returns after all traffic settled.
    pub fn handshake_with(&mut self, a: usize, packet: &[u8]) {
        assert_eq!(
            self.send(a, packet),
            Verdict::Done,
            "staged until a session exists"
        );
        self.run();
    }
}
