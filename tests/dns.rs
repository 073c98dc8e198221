//! The DNS shell (`DnsSockets` + `Resolver` + `Endpoints`) over real UDP sockets on loopback,
//! against a tiny DNS server written here, and optionally against a real dnsmasq.
//!
//! Everything runs on the test's one thread, in one edge-triggered `Poller` loop like the
//! daemon's: the test server's socket is just another source in it. Timeouts are scaled down
//! (100 ms first retransmission, 100 ms first backoff) so the tests take well under a second
//! each; every loop is bounded by a deadline.

use solowg::crypto::Rng;
use solowg::openwrt::dns::{
    Backoff, Config, DnsSockets, EndpointResolver, EndpointState, Endpoints, Error, Resolver,
    SetEndpoint,
};
use solowg::sys::poller::{Interest, Poller};
use std::io::ErrorKind;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::os::fd::AsFd;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const DNS4: u64 = 1;
const DNS6: u64 = 2;
const SERVER: u64 = 3;
/// Longest any scenario may take before the test fails.
const LIMIT: Duration = Duration::from_secs(10);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn fast_config() -> Config {
    Config {
        initial_timeout: ms(100),
        attempts: 3,
    }
}

fn fast_backoff() -> Backoff {
    Backoff {
        initial: ms(100),
        max: ms(800),
        min_reresolve: ms(200),
    }
}

// ---- the test server -----------------------------------------------------------------------

/// Answers A queries for one name with `answer`, AAAA with NOERROR and no data, anything
/// else with NXDOMAIN; drops everything while `silent`. Handles uncompressed single-question
/// queries, which is what the resolver sends.
struct TestServer {
    sock: UdpSocket,
    name: String,
    answer: Ipv4Addr,
    silent: bool,
    /// Queries seen (also while silent).
    queries: usize,
}

impl TestServer {
    fn new(name: &str, answer: Ipv4Addr) -> TestServer {
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        sock.set_nonblocking(true).unwrap();
        TestServer {
            sock,
            name: name.to_string(),
            answer,
            silent: false,
            queries: 0,
        }
    }

    fn addr(&self) -> SocketAddr {
        self.sock.local_addr().unwrap()
    }

    /// (id, name in dotted form, offset after the question) of a query.
    fn parse(q: &[u8]) -> Option<(u16, String, usize, u16)> {
        if q.len() < 12 || q[2] & 0x80 != 0 || q[4..6] != [0, 1] {
            return None;
        }
        let mut pos = 12;
        let mut labels = Vec::new();
        loop {
            let len = *q.get(pos)? as usize;
            if len == 0 {
                pos += 1;
                break;
            }
            if len > 63 {
                return None;
            }
            labels.push(String::from_utf8_lossy(q.get(pos + 1..pos + 1 + len)?).into_owned());
            pos += 1 + len;
        }
        let qtype = u16::from_be_bytes([*q.get(pos)?, *q.get(pos + 1)?]);
        q.get(pos + 3)?;
        Some((
            u16::from_be_bytes([q[0], q[1]]),
            labels.join("."),
            pos + 4,
            qtype,
        ))
    }

    fn answer(&self, q: &[u8]) -> Option<Vec<u8>> {
        let (_, name, end, qtype) = Self::parse(q)?;
        let mut r = q[..end].to_vec();
        r[2] = 0x81; // QR, RD
        r[3] = 0x80; // RA, NOERROR
        if !name.eq_ignore_ascii_case(&self.name) {
            r[3] |= 3; // NXDOMAIN
        } else if qtype == 1 {
            r[7] = 1; // ANCOUNT
            r.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4]);
            r.extend_from_slice(&self.answer.octets());
        }
        Some(r)
    }

    fn drain(&mut self) {
        let mut buf = [0u8; 600];
        for _ in 0..1000 {
            match self.sock.recv_from(&mut buf) {
                Ok((n, from)) => {
                    self.queries += 1;
                    if self.silent {
                        continue;
                    }
                    if let Some(r) = self.answer(&buf[..n]) {
                        let _ = self.sock.send_to(&r, from);
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) => panic!("test server: {e}"),
            }
        }
        panic!("test server: endless queries");
    }
}

// ---- the shell under test, driven like the daemon's event loop -----------------------------

struct Shell {
    poller: Poller,
    sockets: DnsSockets,
    dns: Resolver,
    endpoints: Endpoints<u32>,
    server: Option<TestServer>,
    actions: Vec<SetEndpoint<u32>>,
    results: Vec<Result<Vec<SocketAddr>, Error>>,
}

impl Shell {
    fn new(servers: Vec<SocketAddr>, server: Option<TestServer>) -> Shell {
        let poller = Poller::new().unwrap();
        if let Some(s) = &server {
            poller.add(s.sock.as_fd(), SERVER, Interest::Read).unwrap();
        }
        Shell {
            poller,
            sockets: DnsSockets::new(DNS4, DNS6, 0),
            dns: Resolver::with_config(servers, Rng::from_os().unwrap(), fast_config()),
            endpoints: Endpoints::new(Rng::from_os().unwrap()),
            server,
            actions: Vec::new(),
            results: Vec::new(),
        }
    }

    fn server(&mut self) -> &mut TestServer {
        self.server.as_mut().unwrap()
    }

    /// One loop turn: wait for readiness or the next deadline, then do all due work.
    fn turn(&mut self) {
        let now = Instant::now();
        let deadline = [self.dns.next_deadline(), self.endpoints.next_deadline(now)]
            .into_iter()
            .flatten()
            .min();
        // Capped so that a test's own condition is checked regularly.
        let timeout = deadline.map_or(ms(50), |d| d.saturating_duration_since(now).min(ms(50)));
        let mut ready = Vec::new();
        self.poller.wait(Some(timeout), |t| ready.push(t)).unwrap();
        let now = Instant::now();
        for token in ready {
            match token {
                SERVER => self.server().drain(),
                t => while self.sockets.drain(t, &mut self.dns, now) {},
            }
        }
        self.dns.on_timer(now);
        self.endpoints.poll(now, &mut self.dns);
        while let Some((q, result)) = self.dns.poll_result() {
            if !self.endpoints.on_result(q, &result, now) {
                self.results.push(result);
            }
        }
        while let Some(a) = self.endpoints.poll_action() {
            self.actions.push(a);
        }
        self.sockets.flush(&mut self.dns, &self.poller.registry());
        self.sockets
            .close_if_idle(&self.dns, &self.poller.registry());
    }

    /// Turns the loop until `done`, failing after LIMIT.
    fn run_until(&mut self, what: &str, mut done: impl FnMut(&mut Shell) -> bool) {
        let start = Instant::now();
        while !done(self) {
            assert!(start.elapsed() < LIMIT, "timed out waiting for {what}");
            self.turn();
        }
    }

    /// Resolves `name` directly through the Resolver.
    fn resolve(&mut self, name: &str, port: u16) -> Result<Vec<SocketAddr>, Error> {
        self.results.clear();
        self.dns.resolve(name, port, Instant::now());
        self.sockets.flush(&mut self.dns, &self.poller.registry());
        self.run_until(name, |s| !s.results.is_empty());
        self.results.pop().unwrap()
    }

    fn state(&self, peer: u32) -> EndpointState {
        self.endpoints.get(peer).unwrap().state().clone()
    }
}

fn v4(a: [u8; 4], port: u16) -> SocketAddr {
    SocketAddr::new(IpAddr::from(a), port)
}

#[test]
fn resolves_through_sockets_and_closes_them_when_idle() {
    let server = TestServer::new("peer.example.test", Ipv4Addr::new(192, 0, 2, 1));
    let mut sh = Shell::new(vec![server.addr()], Some(server));
    assert_eq!(
        sh.resolve("peer.example.test", 51820),
        Ok(vec![v4([192, 0, 2, 1], 51820)])
    );
    assert!(!sh.sockets.is_open(), "sockets stay open while idle");
    assert_eq!(
        sh.resolve("PEER.example.test.", 1),
        Ok(vec![v4([192, 0, 2, 1], 1)])
    );
    assert_eq!(sh.resolve("other.example.test", 1), Err(Error::NxDomain));
    // Each resolution sent one A and one AAAA query, none retransmitted.
    assert_eq!(sh.server().queries, 6);
}

#[test]
fn endpoint_resolves_and_sets_peer_address() {
    let server = TestServer::new("peer.example.test", Ipv4Addr::new(192, 0, 2, 1));
    let mut sh = Shell::new(vec![server.addr()], Some(server));
    sh.endpoints.insert(
        7,
        EndpointResolver::new("peer.example.test", 51820, fast_backoff()),
        &mut sh.dns,
    );
    sh.run_until("endpoint", |s| !s.actions.is_empty());
    assert_eq!(
        sh.actions,
        [SetEndpoint {
            peer: 7,
            addr: v4([192, 0, 2, 1], 51820)
        }]
    );
}

#[test]
fn server_down_at_start_then_up() {
    let mut server = TestServer::new("boot.example.test", Ipv4Addr::new(192, 0, 2, 9));
    server.silent = true;
    let mut sh = Shell::new(vec![server.addr()], Some(server));
    sh.endpoints.insert(
        1,
        EndpointResolver::new("boot.example.test", 51820, fast_backoff()),
        &mut sh.dns,
    );
    // All retransmissions go unanswered: the resolution fails and backs off.
    sh.run_until("first failure", |s| {
        matches!(s.state(1), EndpointState::Failed { .. })
    });
    assert!(
        matches!(
            sh.state(1),
            EndpointState::Failed {
                error: Error::Timeout,
                ..
            }
        ),
        "{:?}",
        sh.state(1)
    );
    // 3 transmissions of A and of AAAA.
    assert_eq!(sh.server().queries, 6);
    // ... and it retries after the backoff (the second resolution's first queries).
    sh.run_until("retry", |s| s.server.as_ref().unwrap().queries > 6);
    assert!(sh.actions.is_empty());
    sh.server().silent = false;
    sh.run_until("endpoint after server came up", |s| !s.actions.is_empty());
    assert_eq!(sh.actions[0].addr, v4([192, 0, 2, 9], 51820));
    assert!(matches!(sh.state(1), EndpointState::Resolved { .. }));
}

#[test]
fn stalled_handshake_follows_changed_address() {
    let server = TestServer::new("ddns.example.test", Ipv4Addr::new(198, 51, 100, 1));
    let mut sh = Shell::new(vec![server.addr()], Some(server));
    sh.endpoints.insert(
        1,
        EndpointResolver::new("ddns.example.test", 51820, fast_backoff()),
        &mut sh.dns,
    );
    sh.run_until("first address", |s| !s.actions.is_empty());
    assert_eq!(sh.actions[0].addr, v4([198, 51, 100, 1], 51820));

    // The DDNS name moves; nothing happens until handshakes stall.
    sh.server().answer = Ipv4Addr::new(198, 51, 100, 2);
    let queries = sh.server().queries;
    let start = Instant::now();
    while start.elapsed() < ms(300) {
        sh.turn();
    }
    assert_eq!(sh.server().queries, queries);
    assert_eq!(sh.actions.len(), 1);

    sh.endpoints.note_handshake_stalled(1, Instant::now());
    sh.run_until("new address", |s| s.actions.len() > 1);
    assert_eq!(
        sh.actions[1],
        SetEndpoint {
            peer: 1,
            addr: v4([198, 51, 100, 2], 51820)
        }
    );
}

#[test]
fn rotates_past_a_dead_server() {
    // A port with nothing behind it: the kernel answers with ICMP port unreachable, which
    // surfaces as an error on the DNS socket.
    let dead = UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let server = TestServer::new("peer.example.test", Ipv4Addr::new(192, 0, 2, 3));
    let mut sh = Shell::new(vec![dead, server.addr()], Some(server));
    let start = Instant::now();
    assert_eq!(
        sh.resolve("peer.example.test", 1),
        Ok(vec![v4([192, 0, 2, 3], 1)])
    );
    assert!(
        start.elapsed() >= ms(100),
        "answered before the retransmission"
    );
}

#[test]
fn unreachable_server_times_out() {
    let dead = UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let mut sh = Shell::new(vec![dead], None);
    let start = Instant::now();
    assert_eq!(sh.resolve("peer.example.test", 1), Err(Error::Timeout));
    // 100 + 200 + 400 ms.
    assert!(start.elapsed() >= ms(700));
}

// ---- optional: a real dnsmasq ------------------------------------------------------------

/// dnsmasq from $SOLOWG_DNSMASQ or the usual places, if any.
fn find_dnsmasq() -> Option<String> {
    if let Ok(p) = std::env::var("SOLOWG_DNSMASQ") {
        return Some(p);
    }
    ["/usr/sbin/dnsmasq", "/usr/bin/dnsmasq", "/sbin/dnsmasq"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .map(String::from)
}

/// Kills the dnsmasq this test started when the test ends, pass or fail.
struct Started(Child);

impl Drop for Started {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn against_dnsmasq() {
    let Some(bin) = find_dnsmasq() else {
        eprintln!(
            "SKIPPED against_dnsmasq: dnsmasq not installed (apt-get install dnsmasq-base, \
             or set SOLOWG_DNSMASQ=/path/to/dnsmasq)"
        );
        return;
    };
    let dir = std::env::temp_dir().join(format!("solowg-dns-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let hosts = dir.join("hosts");
    std::fs::write(
        &hosts,
        "192.0.2.7 peer.solowg.test\n2001:db8::7 peer.solowg.test\n2001:db8::8 v6.solowg.test\n",
    )
    .unwrap();
    // A free port on loopback (released again; dnsmasq takes it a moment later).
    let port = UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(&bin)
        .args([
            "--keep-in-foreground",
            "--conf-file=/dev/null",
            "--no-resolv",
            "--no-hosts",
            "--bind-interfaces",
            "--listen-address=127.0.0.1",
            "--pid-file=",
            "--local=/solowg.test/",
            "--cname=alias.solowg.test,peer.solowg.test",
            "--log-facility=/dev/null",
        ])
        .arg(format!("--port={port}"))
        .arg(format!("--addn-hosts={}", hosts.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn();
    let child = match child {
        Ok(c) => Started(c),
        Err(e) => panic!("starting {bin}: {e}"),
    };
    let server = SocketAddr::new(Ipv4Addr::LOCALHOST.into(), port);
    let mut sh = Shell::new(vec![server], None);
    // dnsmasq may need a moment to bind: the retransmissions cover that, and a failed
    // resolution is simply tried again.
    let start = Instant::now();
    let first = loop {
        match sh.resolve("peer.solowg.test", 51820) {
            Err(Error::Timeout) if start.elapsed() < LIMIT => continue,
            r => break r,
        }
    };
    assert_eq!(first, Ok(vec![v4([192, 0, 2, 7], 51820)]));
    assert_eq!(
        sh.resolve("alias.solowg.test", 1),
        Ok(vec![v4([192, 0, 2, 7], 1)])
    );
    assert_eq!(
        sh.resolve("v6.solowg.test", 1),
        Ok(vec!["[2001:db8::8]:1".parse().unwrap()])
    );
    assert_eq!(sh.resolve("missing.solowg.test", 1), Err(Error::NxDomain));
    drop(child);
    let _ = std::fs::remove_dir_all(&dir);
}
