//! solowg-flood: handshake load generator for bench/handshake. Not part of the daemon.
//!
//! Usage: `solowg-flood MODE [options]`, modes:
//!   keys               print the base64 public keys of the --keys initiator keys derived from
//!                      --seed, one a line (feed them to `wg setconf`)
//!   handshake          complete handshakes with those keys against --peer-public at --target:
//!                      initiation (mac1, and mac2 once a cookie is known for the source),
//!                      response checked (mac1, then the Noise response consumed), cookie
//!                      replies decrypted and the initiation resent with mac2
//!   init-random        initiations of the right type and length with a valid mac1 and random
//!                      content (with --use-cookies, also a valid mac2 once the source has one)
//!   garbage            random bytes of random length (1..=--max-len)
//!   transport-unknown  type-4 data messages with a random receiver index
//!
//! Options: --target IP:PORT, --sources SPEC (comma-separated: A.B.C.D, A.B.C.D+COUNT for COUNT
//! consecutive addresses, or A.B.C.D/N for the hosts of a prefix; one UDP socket each, default
//! 0.0.0.0), --duration SECS (default 5), --rate PKT/S (0 = as fast as possible, the default),
//! --peer-public BASE64, --keys N (default 1000), --seed TEXT, --max-outstanding N (default
//! 256), --timeout-ms MS (default 1000), --verify-every N (default 1), --use-cookies,
//! --max-len N (default 1500), --quiet.
//!
//! handshake: each key has one attempt in flight at a time (the library's Handshake holds one
//! ephemeral); at most --max-outstanding attempts are in flight in all, so the responder's
//! queue stays short and the figure is its processing rate, not a queue collapse. An attempt
//! without an answer within --timeout-ms (rate-limited initiations are dropped silently) frees
//! its slot. --verify-every N consumes every Nth response in full (Noise: two X25519) and only
//! checks mac1 of the rest: an initiator costs about what the responder does, so a full
//! verification of every response can make the flooder, not the daemon, the bottleneck.
//!
//! Everything runs on one thread: non-blocking sockets, one epoll, and a hard deadline, so a run
//! never outlives --duration by more than --timeout-ms plus the set-up. The summary goes to
//! stdout as `key=value` lines for scripts; a progress line per second goes to stderr.

use solowg::crypto::{self, Rng};
use solowg::proto::cookie::{
    COOKIE_SECRET_LATENCY, COOKIE_SECRET_MAX_AGE, LABEL_COOKIE, LABEL_MAC1,
};
use solowg::proto::noise::{Handshake, Identity};
use solowg::proto::peer::{base64, key_from_base64};
use solowg::proto::wire::{self, cookie as cf, init, resp};
use solowg::sys::poller::{Interest, Poller};
use std::collections::VecDeque;
use std::io;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::os::fd::AsFd;
use std::process::exit;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Most packets sent per loop turn: between bursts we look at replies and timeouts.
const SEND_BURST: usize = 64;
/// Most datagrams read from one socket per loop turn, so one busy socket cannot starve the rest.
const RECV_BURST: usize = 256;
/// The responder consumes at most one initiation per peer every 20 ms (noise.rs,
/// INITIATIONS_PER_SECOND = 50); a key waits this long after its last attempt so that its next
/// initiation is not dropped for coming too fast.
const KEY_COOLDOWN: Duration = Duration::from_millis(21);

// ---- options --------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Keys,
    Handshake,
    InitRandom,
    Garbage,
    TransportUnknown,
}

struct Opts {
    mode: Mode,
    target: Option<SocketAddr>,
    sources: Vec<Ipv4Addr>,
    duration: Duration,
    rate: u64,
    peer_public: Option<[u8; 32]>,
    keys: usize,
    seed: String,
    max_outstanding: usize,
    timeout: Duration,
    use_cookies: bool,
    verify_every: u64,
    max_len: usize,
    quiet: bool,
}

fn die(msg: &str) -> ! {
    eprintln!("solowg-flood: {msg}");
    exit(2)
}

fn parse_opts(args: &[String]) -> Opts {
    let mode = match args.first().map(String::as_str) {
        Some("keys") => Mode::Keys,
        Some("handshake") => Mode::Handshake,
        Some("init-random") => Mode::InitRandom,
        Some("garbage") => Mode::Garbage,
        Some("transport-unknown") => Mode::TransportUnknown,
        _ => die("usage: solowg-flood keys|handshake|init-random|garbage|transport-unknown [options] (see the source header)"),
    };
    let mut o = Opts {
        mode,
        target: None,
        sources: Vec::new(),
        duration: Duration::from_secs(5),
        rate: 0,
        peer_public: None,
        keys: 1000,
        seed: "solowg-flood".into(),
        max_outstanding: 256,
        timeout: Duration::from_millis(1000),
        use_cookies: false,
        verify_every: 1,
        max_len: 1500,
        quiet: false,
    };
    let mut it = args[1..].iter();
    while let Some(k) = it.next() {
        let flag = matches!(k.as_str(), "--use-cookies" | "--quiet");
        let v = if flag {
            ""
        } else {
            it.next()
                .map(String::as_str)
                .unwrap_or_else(|| die(&format!("{k} needs a value")))
        };
        let num = |max: u64| -> u64 {
            match v.parse::<u64>() {
                Ok(n) if n <= max => n,
                _ => die(&format!("{k}: expected an integer 0..={max}")),
            }
        };
        match k.as_str() {
            "--target" => o.target = Some(v.parse().unwrap_or_else(|_| die("--target: IP:PORT"))),
            "--sources" => o.sources = parse_sources(v).unwrap_or_else(|e| die(&e)),
            "--duration" => match v.parse::<f64>() {
                Ok(s) if s > 0.0 && s <= 3600.0 => o.duration = Duration::from_secs_f64(s),
                _ => die("--duration: seconds, 0 < s <= 3600"),
            },
            "--rate" => o.rate = num(100_000_000),
            "--peer-public" => {
                o.peer_public =
                    Some(key_from_base64(v).unwrap_or_else(|| die("--peer-public: base64 key")))
            }
            "--keys" => o.keys = num(65536) as usize,
            "--seed" => o.seed = v.to_string(),
            "--max-outstanding" => o.max_outstanding = num(1 << 20) as usize,
            "--timeout-ms" => o.timeout = Duration::from_millis(num(60_000).max(1)),
            "--verify-every" => o.verify_every = num(1 << 20).max(1),
            "--max-len" => o.max_len = num(wire::MAX_DATAGRAM as u64).max(1) as usize,
            "--use-cookies" => o.use_cookies = true,
            "--quiet" => o.quiet = true,
            _ => die(&format!("unknown option {k}")),
        }
    }
    if o.mode != Mode::Keys && o.target.is_none() {
        die("--target IP:PORT is required");
    }
    if matches!(o.mode, Mode::Handshake | Mode::InitRandom) && o.peer_public.is_none() {
        die("--peer-public is required for this mode");
    }
    if o.mode == Mode::Handshake && (o.keys == 0 || o.max_outstanding == 0) {
        die("--keys and --max-outstanding must be at least 1");
    }
    if o.sources.is_empty() {
        o.sources.push(Ipv4Addr::UNSPECIFIED);
    }
    o
}

/// `A.B.C.D`, `A.B.C.D+COUNT` or `A.B.C.D/N` (hosts of the prefix: without the network and
/// broadcast addresses below /31), comma-separated.
fn parse_sources(spec: &str) -> Result<Vec<Ipv4Addr>, String> {
    let bad = || format!("--sources: cannot parse '{spec}'");
    let mut out = Vec::new();
    for part in spec.split(',').filter(|p| !p.is_empty()) {
        if let Some((a, n)) = part.split_once('+') {
            let a: Ipv4Addr = a.parse().map_err(|_| bad())?;
            let n: u32 = n.parse().map_err(|_| bad())?;
            let base = u32::from(a);
            if n == 0 || n > 65536 || base.checked_add(n - 1).is_none() {
                return Err(bad());
            }
            out.extend((0..n).map(|i| Ipv4Addr::from(base + i)));
        } else if let Some((a, len)) = part.split_once('/') {
            let a: Ipv4Addr = a.parse().map_err(|_| bad())?;
            let len: u32 = len.parse().map_err(|_| bad())?;
            if !(16..=32).contains(&len) {
                return Err(format!("--sources: prefix length 16..32 only ('{part}')"));
            }
            let size = 1u32 << (32 - len);
            let net = u32::from(a) & !(size - 1);
            let (first, last) = if size <= 2 {
                (net, net + size - 1)
            } else {
                (net + 1, net + size - 2)
            };
            out.extend((first..=last).map(Ipv4Addr::from));
        } else {
            out.push(part.parse().map_err(|_| bad())?);
        }
    }
    if out.is_empty() {
        return Err(bad());
    }
    Ok(out)
}

// ---- keys, macs, cookies --------------------------------------------------------------------

/// Initiator key i = clamp(HASH("solowg-flood key" || seed || i)): reproducible, so the script
/// can configure the daemon with `keys` and the flooder derives the same private halves.
fn derive_private(seed: &str, i: usize) -> [u8; 32] {
    crypto::clamp(crypto::hash(&[
        b"solowg-flood key",
        seed.as_bytes(),
        &(i as u32).to_le_bytes(),
    ]))
}

/// mac1 key for messages sent TO the holder of `public` (whitepaper 5.4.4).
fn mac1_key(public: &[u8; 32]) -> [u8; 32] {
    crypto::hash(&[LABEL_MAC1, public])
}

/// A cookie received for one source socket (cookies are bound to source address and port).
#[derive(Clone, Copy)]
struct Cookie {
    value: [u8; 16],
    birth: Instant,
}

impl Cookie {
    /// Stop using a cookie a little before the responder rotates its secret, as cookie.rs does.
    fn fresh(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.birth) < COOKIE_SECRET_MAX_AGE - COOKIE_SECRET_LATENCY
    }
}

/// Writes mac1 (and mac2 when a fresh cookie is known, else zeros) into a 148-byte initiation;
/// returns mac1, which a cookie reply to this message uses as its associated data. Done here
/// rather than with cookie::CookieState because that keeps one cookie and one last mac1 per
/// peer, while we have many messages in flight per source.
fn add_macs(
    msg: &mut [u8],
    mac1_key: &[u8; 32],
    cookie: Option<&Cookie>,
    now: Instant,
) -> [u8; 16] {
    let mac1 = crypto::mac(mac1_key, &[&msg[..init::MAC1]]);
    msg[init::MAC1..init::MAC2].copy_from_slice(&mac1);
    set_mac2(msg, cookie, now);
    mac1
}

fn set_mac2(msg: &mut [u8], cookie: Option<&Cookie>, now: Instant) {
    let mac2 = match cookie {
        Some(c) if c.fresh(now) => crypto::mac(&c.value, &[&msg[..init::MAC2]]),
        _ => [0; 16],
    };
    msg[init::MAC2..init::MAC2 + 16].copy_from_slice(&mac2);
}

/// Decrypts a 64-byte cookie reply to a message whose mac1 was `mac1`.
fn open_cookie_reply(cookie_key: &[u8; 32], mac1: &[u8; 16], reply: &[u8]) -> Option<[u8; 16]> {
    let mut nonce = [0u8; 24];
    nonce.copy_from_slice(&reply[cf::NONCE..cf::NONCE + 24]);
    let mut cookie = [0u8; 16];
    crypto::xopen_to(
        cookie_key,
        &nonce,
        mac1,
        &reply[cf::COOKIE..cf::COOKIE + 32],
        &mut cookie,
    )
    .then_some(cookie)
}

/// TAI64N of the wall clock at full nanosecond resolution (the responder only compares stamps).
fn tai64n_now() -> [u8; 12] {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    let mut t = [0u8; 12];
    t[..8].copy_from_slice(&(0x4000_0000_0000_000a_u64 + d.as_secs()).to_be_bytes());
    t[8..].copy_from_slice(&d.subsec_nanos().to_be_bytes());
    t
}

/// The next TAI64N after `t` (nanoseconds + 1, carrying into seconds).
fn tai64n_next(t: [u8; 12]) -> [u8; 12] {
    let mut s = u64::from_be_bytes(t[..8].try_into().unwrap_or([0; 8]));
    let mut n = u32::from_be_bytes(t[8..].try_into().unwrap_or([0; 4])) + 1;
    if n >= 1_000_000_000 {
        s += 1;
        n = 0;
    }
    let mut out = [0u8; 12];
    out[..8].copy_from_slice(&s.to_be_bytes());
    out[8..].copy_from_slice(&n.to_be_bytes());
    out
}

// ---- counters -------------------------------------------------------------------------------

#[derive(Default, Clone, Copy)]
struct Stats {
    sent: u64,
    send_errors: u64,
    /// Initiations sent again with mac2 right after a cookie reply (handshake mode).
    resent_with_cookie: u64,
    received: u64,
    responses: u64,
    responses_valid: u64,
    responses_bad: u64,
    /// Responses or cookie replies for an attempt we had already given up on (or never sent).
    late: u64,
    cookie_replies: u64,
    cookie_replies_bad: u64,
    timeouts: u64,
    other: u64,
    completed: u64,
}

impl Stats {
    fn print(&self, elapsed: f64, o: &Opts) {
        let per_s = |n: u64| n as f64 / elapsed.max(1e-9);
        println!("mode={:?}", o.mode);
        println!("sources={}", o.sources.len());
        println!("elapsed_s={elapsed:.3}");
        println!("sent={}", self.sent);
        println!("sent_per_s={:.1}", per_s(self.sent));
        println!("send_errors={}", self.send_errors);
        println!("received={}", self.received);
        println!("responses={}", self.responses);
        println!("responses_valid={}", self.responses_valid);
        println!("responses_bad={}", self.responses_bad);
        println!("late={}", self.late);
        println!("cookie_replies={}", self.cookie_replies);
        println!("cookie_replies_bad={}", self.cookie_replies_bad);
        println!("cookie_replies_per_s={:.1}", per_s(self.cookie_replies));
        println!("resent_with_cookie={}", self.resent_with_cookie);
        println!("timeouts={}", self.timeouts);
        println!("other={}", self.other);
        println!("completed={}", self.completed);
        println!("handshakes_per_s={:.1}", per_s(self.completed));
        let (user, sys) = own_cpu();
        println!("flooder_cpu_s={:.3}", user + sys);
    }
}

/// Our own user and system CPU seconds (to show the flooder had CPU to spare).
#[allow(unsafe_code)] // getrusage
fn own_cpu() -> (f64, f64) {
    // SAFETY: getrusage fills the zeroed struct we pass; nothing else is touched.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return (0.0, 0.0);
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (tv(ru.ru_utime), tv(ru.ru_stime))
}

// ---- sockets and pacing -----------------------------------------------------------------------

struct Net {
    socks: Vec<UdpSocket>,
    /// Sockets epoll said are readable and that we have not drained to WouldBlock yet.
    readable: Vec<bool>,
    poller: Poller,
    target: SocketAddr,
    next_sock: usize,
}

impl Net {
    fn open(o: &Opts) -> io::Result<Net> {
        let poller = Poller::new()?;
        let mut socks = Vec::with_capacity(o.sources.len());
        for (i, a) in o.sources.iter().enumerate() {
            let s = UdpSocket::bind((*a, 0))
                .map_err(|e| io::Error::new(e.kind(), format!("bind {a}: {e}")))?;
            s.set_nonblocking(true)?;
            poller.add(s.as_fd(), i as u64, Interest::Read)?;
            socks.push(s);
        }
        Ok(Net {
            readable: vec![true; socks.len()],
            socks,
            poller,
            target: o.target.unwrap_or_else(|| die("no target")),
            next_sock: 0,
        })
    }

    /// Round-robin over the sources.
    fn pick(&mut self) -> usize {
        let s = self.next_sock;
        self.next_sock = (s + 1) % self.socks.len();
        s
    }

    fn send(&self, sock: usize, msg: &[u8], st: &mut Stats) {
        match self.socks[sock].send_to(msg, self.target) {
            Ok(_) => st.sent += 1,
            // A full socket buffer drops the packet, as a busy link would.
            Err(_) => st.send_errors += 1,
        }
    }

    /// Waits for readability (at most `wait`), then calls `f(sock, datagram)` for what arrived,
    /// up to RECV_BURST per socket.
    fn receive(&mut self, wait: Duration, buf: &mut [u8], mut f: impl FnMut(usize, &[u8])) {
        let readable = &mut self.readable;
        let wait = if readable.iter().any(|&r| r) {
            Duration::ZERO
        } else {
            wait
        };
        if let Err(e) = self
            .poller
            .wait(Some(wait), |t| readable[t as usize] = true)
        {
            die(&format!("epoll_wait: {e}"));
        }
        for (i, s) in self.socks.iter().enumerate() {
            if !self.readable[i] {
                continue;
            }
            let mut drained = false;
            for _ in 0..RECV_BURST {
                match s.recv_from(buf) {
                    Ok((n, _)) => f(i, &buf[..n]),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        drained = true;
                        break;
                    }
                    // e.g. ECONNREFUSED from an ICMP error: nothing to read, carry on.
                    Err(_) => {}
                }
            }
            if drained {
                self.readable[i] = false;
            }
        }
    }
}

/// Packets allowed so far at a fixed rate (0 = unlimited): a credit computed from the elapsed
/// time, so the long-run rate is exact and a late turn catches up in one burst.
struct Pacer {
    rate: u64,
    start: Instant,
}

impl Pacer {
    fn allowed(&self, now: Instant, sent: u64) -> usize {
        if self.rate == 0 {
            return SEND_BURST;
        }
        let due =
            (now.saturating_duration_since(self.start).as_secs_f64() * self.rate as f64) as u64;
        (due.saturating_sub(sent) as usize).min(SEND_BURST)
    }

    /// When the packet after `sent` is due (now, when unlimited).
    fn next_due(&self, now: Instant, sent: u64) -> Instant {
        if self.rate == 0 {
            now
        } else {
            self.start + Duration::from_secs_f64((sent + 1) as f64 / self.rate as f64)
        }
    }
}

/// One stderr line per second with the interval's figures.
struct Progress {
    quiet: bool,
    start: Instant,
    next: Instant,
    last: Stats,
}

impl Progress {
    fn new(quiet: bool, start: Instant) -> Self {
        Progress {
            quiet,
            start,
            next: start + Duration::from_secs(1),
            last: Stats::default(),
        }
    }

    fn tick(&mut self, now: Instant, st: &Stats) {
        if now < self.next {
            return;
        }
        if !self.quiet {
            eprintln!(
                "t={:.1}s sent={} completed={} cookie_replies={} timeouts={} received={}",
                now.saturating_duration_since(self.start).as_secs_f64(),
                st.sent - self.last.sent,
                st.completed - self.last.completed,
                st.cookie_replies - self.last.cookie_replies,
                st.timeouts - self.last.timeouts,
                st.received - self.last.received,
            );
        }
        self.last = *st;
        self.next += Duration::from_secs(1);
    }
}

// ---- handshake mode ---------------------------------------------------------------------------

enum KeyState {
    /// Free to start a new attempt (it sits in the idle queue).
    Idle,
    Waiting {
        index: u32,
        sock: usize,
        deadline: Instant,
        mac1: [u8; 16],
        msg: [u8; wire::INITIATION_LEN],
    },
}

/// One initiator identity: the Noise handshake state of the library, plus what we need to check
/// replies addressed to it.
struct Initiator {
    identity: Identity,
    hs: Handshake,
    /// mac1 key of messages sent to us (the responder's response carries mac1 under it).
    own_mac1_key: [u8; 32],
    last_stamp: [u8; 12],
    state: KeyState,
}

/// What a reply did for its initiator.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Completed,
    /// Cookie stored for the socket; the initiation is to be resent with mac2.
    Cookie,
    Bad,
    Late,
    Other,
}

struct Flood {
    keys: Vec<Initiator>,
    responder_mac1_key: [u8; 32],
    responder_cookie_key: [u8; 32],
    /// Per source socket: the latest cookie the responder gave it.
    cookies: Vec<Option<Cookie>>,
    rng: Rng,
    attempt: u32,
    /// Consume (fully verify) every Nth response; the others get their mac1 checked only.
    verify_every: u64,
    responses: u64,
}

impl Flood {
    fn new(responder: &[u8; 32], seed: &str, nkeys: usize, nsocks: usize, rng: Rng) -> Flood {
        let keys = (0..nkeys)
            .map(|i| {
                let identity = Identity::new(derive_private(seed, i));
                // psk 0: the script configures no preshared keys.
                let hs = Handshake::new(Some(&identity), *responder, [0; 32]);
                Initiator {
                    own_mac1_key: mac1_key(&identity.public),
                    identity,
                    hs,
                    last_stamp: [0; 12],
                    state: KeyState::Idle,
                }
            })
            .collect();
        Flood {
            keys,
            responder_mac1_key: mac1_key(responder),
            responder_cookie_key: crypto::hash(&[LABEL_COOKIE, responder]),
            cookies: vec![None; nsocks],
            rng,
            attempt: 0,
            verify_every: 1,
            responses: 0,
        }
    }

    /// Starts a new attempt for key `k` from socket `sock`: fresh ephemeral, a timestamp newer
    /// than any this key sent before, sender index = attempt << 16 | key.
    fn initiation(&mut self, k: usize, sock: usize, now: Instant, deadline: Instant) -> &[u8] {
        self.attempt = self.attempt.wrapping_add(1);
        let index = (self.attempt << 16) | k as u32;
        let ephemeral = crypto::SecretKey::new(crypto::clamp(*self.rng.key()));
        let key = &mut self.keys[k];
        let mut stamp = tai64n_now();
        if stamp <= key.last_stamp {
            stamp = tai64n_next(key.last_stamp);
        }
        key.last_stamp = stamp;
        let mut msg = [0u8; wire::INITIATION_LEN];
        if !key
            .hs
            .create_initiation(&key.identity, ephemeral, stamp, index, &mut msg)
        {
            die("create_initiation failed (low-order responder key?)");
        }
        let mac1 = add_macs(
            &mut msg,
            &self.responder_mac1_key,
            self.cookies[sock].as_ref(),
            now,
        );
        key.state = KeyState::Waiting {
            index,
            sock,
            deadline,
            mac1,
            msg,
        };
        match &key.state {
            KeyState::Waiting { msg, .. } => msg,
            KeyState::Idle => unreachable!(),
        }
    }

    /// The key a reply's receiver index names, if that attempt is still waiting.
    fn waiting_key(&self, receiver: u32) -> Option<usize> {
        let k = (receiver & 0xffff) as usize;
        match self.keys.get(k)?.state {
            KeyState::Waiting { index, .. } if index == receiver => Some(k),
            _ => None,
        }
    }

    /// Handles a datagram that arrived on socket `sock`.
    /// Returns what happened, the key concerned, and for a completed handshake whether the
    /// Noise response was consumed (else only its mac1 was checked, see --verify-every).
    fn on_reply(
        &mut self,
        sock: usize,
        msg: &[u8],
        now: Instant,
    ) -> (Outcome, Option<usize>, bool) {
        let (o, k) = match wire::classify(msg) {
            Some(wire::Kind::Response) => {
                let Some(k) = self.waiting_key(wire::u32_at(msg, resp::RECEIVER)) else {
                    return (Outcome::Late, None, false);
                };
                self.responses += 1;
                let full = self.responses % self.verify_every == 0;
                let key = &mut self.keys[k];
                let mac1 = crypto::mac(&key.own_mac1_key, &[&msg[..resp::MAC1]]);
                let ok = crypto::ct_eq(&mac1, &msg[resp::MAC1..resp::MAC2])
                    && (!full
                        || (key.hs.consume_response(&key.identity, msg)
                    // Derives the session keys (and wipes the handshake): the last step an
                    // initiator takes before it could send data.
                    && key.hs.derive_keys().is_some()));
                key.state = KeyState::Idle;
                return (
                    if ok { Outcome::Completed } else { Outcome::Bad },
                    Some(k),
                    full,
                );
            }
            Some(wire::Kind::CookieReply) => {
                let Some(k) = self.waiting_key(wire::u32_at(msg, cf::RECEIVER)) else {
                    return (Outcome::Late, None, false);
                };
                let KeyState::Waiting { mac1, .. } = &self.keys[k].state else {
                    return (Outcome::Late, None, false);
                };
                match open_cookie_reply(&self.responder_cookie_key, mac1, msg) {
                    Some(value) => {
                        self.cookies[sock] = Some(Cookie { value, birth: now });
                        (Outcome::Cookie, Some(k))
                    }
                    None => (Outcome::Bad, Some(k)),
                }
            }
            _ => (Outcome::Other, None),
        };
        (o, k, false)
    }

    /// After a cookie reply: the same initiation (not consumed by the responder, so its
    /// timestamp is still good) with mac2 under the new cookie, from the socket the cookie is
    /// bound to. Returns (socket, message).
    fn with_cookie(&mut self, k: usize, now: Instant, deadline: Instant) -> Option<(usize, &[u8])> {
        let cookies = &self.cookies;
        match &mut self.keys[k].state {
            KeyState::Waiting {
                sock,
                msg,
                deadline: d,
                ..
            } => {
                set_mac2(msg, cookies[*sock].as_ref(), now);
                *d = deadline;
                Some((*sock, &msg[..]))
            }
            KeyState::Idle => None,
        }
    }
}

fn run_handshake(o: &Opts, net: &mut Net) -> Stats {
    let responder = o.peer_public.unwrap_or_else(|| die("no --peer-public"));
    let rng = Rng::from_os().unwrap_or_else(|e| die(&format!("getrandom: {e}")));
    let mut fl = Flood::new(&responder, &o.seed, o.keys, net.socks.len(), rng);
    fl.verify_every = o.verify_every;
    let mut st = Stats::default();
    let mut buf = vec![0u8; wire::MAX_DATAGRAM];
    // Keys ready for a new attempt, in the order they became ready (all wait the same
    // cooldown, so the front is always the first one due).
    let mut idle: VecDeque<(Instant, usize)> = (0..o.keys).map(|k| (Instant::now(), k)).collect();
    // Attempt deadlines in the order they were set; a key whose deadline moved (cookie resend)
    // has a later entry, and its stale one is skipped.
    let mut deadlines: VecDeque<(Instant, usize, u32)> = VecDeque::new();
    let mut outstanding = 0usize;
    let start = Instant::now();
    let end = start + o.duration;
    let pacer = Pacer {
        rate: o.rate,
        start,
    };
    let mut progress = Progress::new(o.quiet, start);
    loop {
        let now = Instant::now();
        let sending = now < end;
        if !sending && (outstanding == 0 || now >= end + o.timeout) {
            break;
        }
        // Sleep until the next thing we could do: a key's cooldown ends (if a slot is free), a
        // packet is due at --rate, an attempt times out, the run ends; replies wake us anyway.
        let mut next = deadlines.front().map_or(now + o.timeout, |d| d.0);
        if sending {
            next = next.min(end);
            if outstanding < o.max_outstanding {
                if let Some(&(ready, _)) = idle.front() {
                    next = next.min(ready.max(pacer.next_due(now, st.sent)));
                }
            }
        }
        let wait = next.saturating_duration_since(now);
        // Replies.
        let mut resend: Vec<usize> = Vec::new();
        let mut freed: Vec<usize> = Vec::new();
        net.receive(wait, &mut buf, |sock, msg| {
            st.received += 1;
            let (outcome, k, verified) = fl.on_reply(sock, msg, now);
            match outcome {
                Outcome::Completed if !verified => {
                    st.responses += 1;
                    st.completed += 1;
                }
                Outcome::Completed => {
                    st.responses += 1;
                    st.responses_valid += 1;
                    st.completed += 1;
                }
                Outcome::Cookie => {
                    st.cookie_replies += 1;
                    resend.extend(k);
                }
                Outcome::Bad if msg.len() == wire::COOKIE_REPLY_LEN => st.cookie_replies_bad += 1,
                Outcome::Bad => {
                    st.responses += 1;
                    st.responses_bad += 1;
                }
                Outcome::Late => st.late += 1,
                Outcome::Other => st.other += 1,
            }
            if matches!(outcome, Outcome::Completed | Outcome::Bad)
                && msg.len() == wire::RESPONSE_LEN
            {
                freed.extend(k);
            }
        });
        let now = Instant::now();
        for k in freed {
            outstanding -= 1;
            idle.push_back((now + KEY_COOLDOWN, k));
        }
        for k in resend {
            let deadline = now + o.timeout;
            if let Some((sock, msg)) = fl.with_cookie(k, now, deadline) {
                net.send(sock, msg, &mut st);
                st.resent_with_cookie += 1;
                let KeyState::Waiting { index, .. } = fl.keys[k].state else {
                    continue;
                };
                deadlines.push_back((deadline, k, index));
            }
        }
        // Attempts that got no answer in time (rate-limited drops are silent).
        while let Some(&(d, k, index)) = deadlines.front() {
            if d > now {
                break;
            }
            deadlines.pop_front();
            if let KeyState::Waiting {
                index: i, deadline, ..
            } = fl.keys[k].state
            {
                if i == index && deadline <= now {
                    fl.keys[k].state = KeyState::Idle;
                    st.timeouts += 1;
                    outstanding -= 1;
                    idle.push_back((now + KEY_COOLDOWN, k));
                }
            }
        }
        // New attempts.
        if sending {
            let budget = pacer.allowed(now, st.sent);
            for _ in 0..budget {
                if outstanding >= o.max_outstanding {
                    break;
                }
                let Some(&(ready, k)) = idle.front() else {
                    break;
                };
                if ready > now {
                    break;
                }
                idle.pop_front();
                let sock = net.pick();
                let deadline = now + o.timeout;
                let msg = fl.initiation(k, sock, now, deadline);
                net.send(sock, msg, &mut st);
                let KeyState::Waiting { index, .. } = fl.keys[k].state else {
                    continue;
                };
                deadlines.push_back((deadline, k, index));
                outstanding += 1;
            }
        }
        progress.tick(now, &st);
    }
    st
}

// ---- the stateless floods -------------------------------------------------------------------

fn run_blast(o: &Opts, net: &mut Net) -> Stats {
    let mut rng = Rng::from_os().unwrap_or_else(|e| die(&format!("getrandom: {e}")));
    let (mac1k, cookiek) = match o.peer_public {
        Some(p) => (mac1_key(&p), crypto::hash(&[LABEL_COOKIE, &p])),
        None => ([0; 32], [0; 32]),
    };
    let mut cookies: Vec<Option<Cookie>> = vec![None; net.socks.len()];
    // init-random --use-cookies: mac1 of recent initiations by sender index, to open the
    // cookie replies to them (sender index = counter; a slot is checked before use).
    const RING: usize = 1 << 14;
    let mut ring: Vec<(u32, [u8; 16])> = vec![(0, [0; 16]); RING];
    let mut counter: u32 = 0;
    let mut st = Stats::default();
    let mut buf = vec![0u8; wire::MAX_DATAGRAM];
    let mut pkt = vec![0u8; wire::MAX_DATAGRAM];
    let start = Instant::now();
    let end = start + o.duration;
    let pacer = Pacer {
        rate: o.rate,
        start,
    };
    let mut progress = Progress::new(o.quiet, start);
    loop {
        let now = Instant::now();
        if now >= end {
            break;
        }
        let wait = pacer.next_due(now, st.sent).saturating_duration_since(now);
        net.receive(wait, &mut buf, |sock, msg| {
            st.received += 1;
            match wire::classify(msg) {
                Some(wire::Kind::CookieReply) => {
                    st.cookie_replies += 1;
                    let r = wire::u32_at(msg, cf::RECEIVER);
                    let (idx, mac1) = ring[r as usize % RING];
                    if o.use_cookies && idx == r {
                        match open_cookie_reply(&cookiek, &mac1, msg) {
                            Some(value) => cookies[sock] = Some(Cookie { value, birth: now }),
                            None => st.cookie_replies_bad += 1,
                        }
                    }
                }
                Some(wire::Kind::Response) => st.responses += 1,
                _ => st.other += 1,
            }
        });
        let now = Instant::now();
        for _ in 0..pacer.allowed(now, st.sent) {
            let sock = net.pick();
            let len = match o.mode {
                Mode::InitRandom => {
                    let m = &mut pkt[..wire::INITIATION_LEN];
                    rng.fill(m);
                    wire::put_type(m, wire::MSG_INITIATION);
                    counter = counter.wrapping_add(1);
                    wire::put_u32(m, init::SENDER, counter);
                    let mac1 = add_macs(m, &mac1k, cookies[sock].as_ref(), now);
                    ring[counter as usize % RING] = (counter, mac1);
                    wire::INITIATION_LEN
                }
                Mode::Garbage => {
                    let len = 1 + rng.u32() as usize % o.max_len;
                    rng.fill(&mut pkt[..len]);
                    len
                }
                _ => {
                    // transport-unknown: a data header with a random receiver and counter and
                    // 0..=8 blocks of random "ciphertext" plus the tag.
                    let len = wire::DATA_MIN_LEN + 16 * (rng.u32() as usize % 9);
                    rng.fill(&mut pkt[..len]);
                    wire::put_type(&mut pkt, wire::MSG_DATA);
                    len
                }
            };
            net.send(sock, &pkt[..len], &mut st);
        }
        progress.tick(now, &st);
    }
    st
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let o = parse_opts(&args);
    if o.mode == Mode::Keys {
        for i in 0..o.keys {
            println!(
                "{}",
                base64(&crypto::public_key(&derive_private(&o.seed, i)))
            );
        }
        return;
    }
    let mut net = Net::open(&o).unwrap_or_else(|e| die(&format!("sockets: {e}")));
    let start = Instant::now();
    let st = match o.mode {
        Mode::Handshake => run_handshake(&o, &mut net),
        _ => run_blast(&o, &mut net),
    };
    st.print(start.elapsed().as_secs_f64(), &o);
}

// ---- in-process checks against the library's responder ----------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use solowg::proto::device::{Device, DropReason, Verdict};
    use solowg::proto::uapi::{AllowedIpChange, PeerChange, SetRequest};
    use std::net::IpAddr;
    use zeroize::Zeroizing;

    const SEED: &str = "test";

    /// A Device (the daemon's core) with the flood keys 0..n as peers.
    fn responder(n: usize) -> (Device, [u8; 32], Instant) {
        let now = Instant::now();
        let mut dev = Device::new(now, SystemTime::now(), Rng::from_seed([9; 32]));
        let private = crypto::clamp([7; 32]);
        let mut req = SetRequest {
            private_key: Some(Some(Zeroizing::new(private))),
            ..SetRequest::default()
        };
        for i in 0..n {
            let mut p = PeerChange::new(crypto::public_key(&derive_private(SEED, i)));
            p.allowed_ips.push(AllowedIpChange {
                addr: IpAddr::V4(Ipv4Addr::new(10, 210, 0, i as u8)),
                cidr: 32,
                remove: false,
            });
            req.peers.push(p);
        }
        dev.apply(&req, now);
        (dev, crypto::public_key(&private), now)
    }

    fn deliver(dev: &mut Device, now: Instant, src: SocketAddr, msg: &[u8]) -> Option<Vec<u8>> {
        let mut buf = vec![0u8; 256];
        buf[..msg.len()].copy_from_slice(msg);
        match dev.decapsulate(now, src, &mut buf, msg.len()) {
            Verdict::SendUdp { to, len } => {
                assert_eq!(to, src);
                Some(buf[..len].to_vec())
            }
            _ => None,
        }
    }

    #[test]
    fn handshake_completes_against_the_library_responder() {
        let (mut dev, public, now) = responder(3);
        let mut fl = Flood::new(&public, SEED, 3, 1, Rng::from_seed([1; 32]));
        let src: SocketAddr = "192.0.2.1:1000".parse().unwrap();
        for k in 0..3 {
            let msg = fl.initiation(k, 0, now, now).to_vec();
            let reply = deliver(&mut dev, now, src, &msg).expect("a response");
            assert_eq!(
                fl.on_reply(0, &reply, now),
                (Outcome::Completed, Some(k), true)
            );
        }
        // A second reply to the same attempt is late, not a second handshake.
        let msg = fl.initiation(0, 0, now, now).to_vec();
        let later = now + Duration::from_millis(25);
        let reply = deliver(&mut dev, later, src, &msg).expect("a response");
        assert_eq!(fl.on_reply(0, &reply, later).0, Outcome::Completed);
        assert_eq!(fl.on_reply(0, &reply, later).0, Outcome::Late);
    }

    #[test]
    fn under_load_cookie_then_mac2_completes() {
        let (mut dev, public, now) = responder(1);
        dev.under_load_rate = 0; // every handshake message counts as load
        let mut fl = Flood::new(&public, SEED, 1, 1, Rng::from_seed([2; 32]));
        let src: SocketAddr = "192.0.2.7:4000".parse().unwrap();
        let msg = fl.initiation(0, 0, now, now).to_vec();
        let reply = deliver(&mut dev, now, src, &msg).expect("a cookie reply");
        assert_eq!(reply.len(), wire::COOKIE_REPLY_LEN);
        assert_eq!(dev.drop_count(DropReason::CookieRequired), 1);
        assert_eq!(
            fl.on_reply(0, &reply, now),
            (Outcome::Cookie, Some(0), false)
        );
        let later = now + Duration::from_millis(25); // per-peer initiation spacing
        let (sock, msg) = fl.with_cookie(0, later, later).unwrap();
        assert_eq!(sock, 0);
        let msg = msg.to_vec();
        let reply = deliver(&mut dev, later, src, &msg).expect("a response");
        assert_eq!(fl.on_reply(0, &reply, later).0, Outcome::Completed);
        // The cookie is bound to the source: from elsewhere it is refused again.
        let other: SocketAddr = "192.0.2.8:4000".parse().unwrap();
        let later = later + Duration::from_millis(25);
        let msg = fl.initiation(0, 0, later, later).to_vec();
        let reply = deliver(&mut dev, later, other, &msg).expect("a cookie reply");
        assert_eq!(reply.len(), wire::COOKIE_REPLY_LEN);
    }

    #[test]
    fn sources_and_stamps() {
        assert_eq!(parse_sources("10.0.0.1+3").unwrap().len(), 3);
        let v = parse_sources("10.0.0.0/30,10.1.0.1").unwrap();
        assert_eq!(
            v,
            vec![
                Ipv4Addr::new(10, 0, 0, 1),
                Ipv4Addr::new(10, 0, 0, 2),
                Ipv4Addr::new(10, 1, 0, 1)
            ]
        );
        assert!(parse_sources("10.0.0.0/8").is_err());
        assert!(parse_sources("x").is_err());
        let t = tai64n_now();
        assert!(tai64n_next(t) > t);
        let mut edge = [0u8; 12];
        edge[8..].copy_from_slice(&999_999_999u32.to_be_bytes());
        assert_eq!(tai64n_next(edge)[7], 1);
    }
}
