//! Resolving peer endpoints given as host names (UCI `endpoint_host`, e.g. a DDNS name)
//! without blocking the packet loop: no getaddrinfo, no helper thread.
//!
//! Three layers:
//! - `Resolver`: a sans-IO stub resolver. `resolve` starts an A and an AAAA query; the owner
//!   sends what `poll_transmit` yields, feeds replies to `on_datagram`, calls `on_timer` at
//!   `next_deadline` (retransmissions after 1 s, 2 s, 4 s, rotating through the name servers)
//!   and collects outcomes from `poll_result`. It never reads a clock, a file or a socket.
//! - `EndpointResolver` (one per peer) and `Endpoints` (all of them): when to resolve. A name
//!   is resolved once at start, again after failures with backoff (1 s doubling to 5 min,
//!   with jitter), and again when handshakes stall (at most every 30 s) so that DDNS changes
//!   are followed. The outcome is a `SetEndpoint` action.
//! - `DnsSockets`: the shell, non-blocking UDP sockets registered in the `Poller`.
//!
//! Address preference: IPv4 first. When the A query yields addresses the result is those,
//! without waiting for AAAA; IPv6 addresses are returned only when the name has no IPv4
//! address. Routers often get an AAAA-capable DDNS name while their own IPv6 uplink is
//! missing, late or firewalled, and IPv4 is what a WireGuard endpoint usually means; a
//! v6-only peer still works. (wg(8) takes getaddrinfo's first answer, which depends on
//! gai.conf; the fixed rule makes the daemon's behaviour independent of it.)
//!
//! Deliberate omissions: no TCP fallback (a truncated reply is used for what it contains),
//! no search domains (OpenWrt's dnsmasq answers unqualified local names itself), no caching
//! (the policy above decides when to ask again), no EDNS.

use crate::crypto::Rng;
use crate::sys::poller::{Interest, Registry};
use std::collections::VecDeque;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV6, UdpSocket};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

/// DNS port for servers from resolv.conf.
pub const DNS_PORT: u16 = 53;
/// Name servers used at most (glibc reads three; a few more cost nothing).
pub const MAX_SERVERS: usize = 8;
/// Queries in flight at most; beyond that `resolve` fails at once with `Error::Busy`.
pub const MAX_QUERIES: usize = 1024;
/// CNAME records followed at most within one answer.
const MAX_CNAME_HOPS: usize = 16;
/// Compression pointers followed at most within one name.
const MAX_POINTER_JUMPS: usize = 32;
/// A name in wire form is at most 255 bytes (RFC 1035 3.1).
const MAX_NAME_WIRE: usize = 255;

const TYPE_A: u16 = 1;
const TYPE_CNAME: u16 = 5;
const TYPE_AAAA: u16 = 28;
const CLASS_IN: u16 = 1;

const RCODE_NOERROR: u8 = 0;
const RCODE_NXDOMAIN: u8 = 3;

/// Why a resolution failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// The name is not a valid DNS name (empty label, label over 63 bytes, too long).
    InvalidName,
    /// The name does not exist (NXDOMAIN).
    NxDomain,
    /// The name exists but has neither A nor AAAA records.
    NoAddress,
    /// The last server answered with this error code (SERVFAIL = 2, REFUSED = 5, ...).
    ServerFailure(u8),
    /// A reply had the TC bit set and held no address.
    Truncated,
    /// No usable reply after all retransmissions.
    Timeout,
    /// MAX_QUERIES resolutions are already in flight.
    Busy,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            Error::InvalidName => f.write_str("invalid host name"),
            Error::NxDomain => f.write_str("no such name"),
            Error::NoAddress => f.write_str("name has no address"),
            Error::ServerFailure(rcode) => write!(f, "server failure (rcode {rcode})"),
            Error::Truncated => f.write_str("truncated reply without address"),
            Error::Timeout => f.write_str("no reply from name servers"),
            Error::Busy => f.write_str("too many resolutions in flight"),
        }
    }
}

impl std::error::Error for Error {}

/// Names one `resolve` call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QueryId(pub u64);

/// Retransmission schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Wait after the first transmission; doubled after each retransmission.
    pub initial_timeout: Duration,
    /// Transmissions per query (first one included) before giving up.
    pub attempts: u32,
}

impl Default for Config {
    /// 1 s, 2 s, 4 s: a resolution fails after 7 s without reply.
    fn default() -> Self {
        Config {
            initial_timeout: Duration::from_secs(1),
            attempts: 3,
        }
    }
}

// ---- resolv.conf -------------------------------------------------------------------------

/// Name servers from resolv.conf text: `nameserver <IPv4|IPv6>` lines, port 53, in order,
/// duplicates dropped, at most MAX_SERVERS. IPv6 zone ids are accepted only as numbers
/// (`fe80::1%2`); interface names would need if_nametoindex. Anything else is skipped.
pub fn parse_resolv_conf(text: &str) -> Vec<SocketAddr> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.split(['#', ';']).next().unwrap_or("");
        let mut words = line.split_whitespace();
        if words.next() != Some("nameserver") {
            continue;
        }
        let Some(word) = words.next() else { continue };
        let addr = match word.split_once('%') {
            None => word
                .parse::<IpAddr>()
                .ok()
                .map(|ip| SocketAddr::new(ip, DNS_PORT)),
            Some((ip, zone)) => match (ip.parse::<Ipv6Addr>(), zone.parse::<u32>()) {
                (Ok(ip), Ok(zone)) => Some(SocketAddrV6::new(ip, DNS_PORT, 0, zone).into()),
                _ => None,
            },
        };
        if let Some(addr) = addr {
            if !out.contains(&addr) && out.len() < MAX_SERVERS {
                out.push(addr);
            }
        }
    }
    out
}

/// Where name servers come from on OpenWrt, most preferred first: /etc/resolv.conf points
/// at the local dnsmasq (which knows local names and the user's DNS settings); the netifd
/// files list the upstream servers directly, so resolution also works while dnsmasq is
/// not (yet) running.
pub const RESOLV_CONF_PATHS: [&str; 3] = [
    "/etc/resolv.conf",
    "/tmp/resolv.conf.d/resolv.conf.auto",
    "/tmp/resolv.conf.auto",
];

/// The fallback when no file names a server.
pub fn default_servers() -> Vec<SocketAddr> {
    vec![SocketAddr::new(Ipv4Addr::LOCALHOST.into(), DNS_PORT)]
}

/// Servers of all RESOLV_CONF_PATHS that exist, in order, duplicates dropped; 127.0.0.1 if
/// none. Reads small files (on OpenWrt in tmpfs); call it before starting resolutions, not
/// per packet.
pub fn system_servers() -> Vec<SocketAddr> {
    let mut out: Vec<SocketAddr> = Vec::new();
    for path in RESOLV_CONF_PATHS {
        if let Ok(text) = std::fs::read_to_string(path) {
            for s in parse_resolv_conf(&text) {
                if !out.contains(&s) && out.len() < MAX_SERVERS {
                    out.push(s);
                }
            }
        }
    }
    if out.is_empty() {
        default_servers()
    } else {
        out
    }
}

// ---- wire format -------------------------------------------------------------------------

/// `name` in wire form (length-prefixed labels, lower case, root label included). A trailing
/// dot is allowed.
fn encode_name(name: &str) -> Option<Vec<u8>> {
    let name = name.strip_suffix('.').unwrap_or(name);
    if name.is_empty() {
        return None;
    }
    let mut out = Vec::with_capacity(name.len() + 2);
    for label in name.split('.') {
        let len = label.len();
        if len == 0 || len > 63 || !label.bytes().all(|b| b.is_ascii_graphic()) {
            return None;
        }
        out.push(len as u8);
        out.extend(label.bytes().map(|b| b.to_ascii_lowercase()));
    }
    out.push(0);
    (out.len() <= MAX_NAME_WIRE).then_some(out)
}

/// A standard query with recursion desired.
fn encode_query(id: u16, name: &[u8], qtype: u16) -> Vec<u8> {
    let mut q = Vec::with_capacity(12 + name.len() + 4);
    q.extend_from_slice(&id.to_be_bytes());
    q.extend_from_slice(&[0x01, 0x00]); // RD
    q.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0, 0]); // QDCOUNT 1
    q.extend_from_slice(name);
    q.extend_from_slice(&qtype.to_be_bytes());
    q.extend_from_slice(&CLASS_IN.to_be_bytes());
    q
}

fn be16(msg: &[u8], pos: usize) -> Option<u16> {
    Some(u16::from_be_bytes(
        msg.get(pos..pos.checked_add(2)?)?.try_into().ok()?,
    ))
}

/// Reads the possibly compressed name at `pos` into `out` (wire form, lower case). Returns
/// the position after the name where it starts, or None if it is malformed. Terminates on
/// any input: labels move forward, each pointer must point before the start of the labels
/// that led to it (so pointers cannot loop), at most MAX_POINTER_JUMPS pointers and
/// MAX_NAME_WIRE bytes.
fn read_name(msg: &[u8], start: usize, out: &mut Vec<u8>) -> Option<usize> {
    out.clear();
    let mut pos = start;
    let mut segment_start = start;
    let mut end = None;
    let mut jumps = 0;
    loop {
        let len = *msg.get(pos)? as usize;
        match len & 0xc0 {
            0x00 if len == 0 => {
                out.push(0);
                if out.len() > MAX_NAME_WIRE {
                    return None;
                }
                return Some(end.unwrap_or(pos + 1));
            }
            0x00 => {
                let label = msg.get(pos + 1..pos + 1 + len)?;
                if out.len() + 1 + len + 1 > MAX_NAME_WIRE {
                    return None;
                }
                out.push(len as u8);
                out.extend(label.iter().map(u8::to_ascii_lowercase));
                pos += 1 + len;
            }
            0xc0 => {
                let target = ((len & 0x3f) << 8) | usize::from(*msg.get(pos + 1)?);
                jumps += 1;
                if target >= segment_start || jumps > MAX_POINTER_JUMPS {
                    return None;
                }
                end.get_or_insert(pos + 2);
                segment_start = target;
                pos = target;
            }
            _ => return None, // 0x40 and 0x80 label types are obsolete or unassigned
        }
    }
}

/// What one reply says about the question it answers.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Reply {
    id: u16,
    rcode: u8,
    truncated: bool,
    qname: Vec<u8>,
    qtype: u16,
    /// Addresses of type `qtype` owned by `qname` or by the end of its CNAME chain.
    addrs: Vec<IpAddr>,
}

struct Record<'a> {
    owner: Vec<u8>,
    rtype: u16,
    data: &'a [u8],
    /// For CNAME, the target (decompressed against the whole message).
    cname: Option<Vec<u8>>,
}

/// Parses a reply. None for anything that is not a well-formed reply to a single question
/// (a truncated reply may end early: the records read so far count).
fn parse_reply(msg: &[u8]) -> Option<Reply> {
    let id = be16(msg, 0)?;
    let flags = be16(msg, 2)?;
    let qdcount = be16(msg, 4)?;
    let ancount = be16(msg, 6)?;
    let is_response = flags & 0x8000 != 0;
    let opcode = (flags >> 11) & 0xf;
    if !is_response || opcode != 0 || qdcount != 1 {
        return None;
    }
    let truncated = flags & 0x0200 != 0;
    let rcode = (flags & 0xf) as u8;
    let mut qname = Vec::new();
    let mut pos = read_name(msg, 12, &mut qname)?;
    let qtype = be16(msg, pos)?;
    if be16(msg, pos + 2)? != CLASS_IN {
        return None;
    }
    pos += 4;

    // Each record takes at least 11 bytes, so a bogus count ends at the message's end.
    let mut records = Vec::new();
    for _ in 0..ancount {
        match read_record(msg, pos) {
            Some((rec, next)) => {
                records.push(rec);
                pos = next;
            }
            None if truncated => break,
            None => return None,
        }
    }

    let mut target = qname.clone();
    for _ in 0..MAX_CNAME_HOPS {
        let next = records
            .iter()
            .find(|r| r.rtype == TYPE_CNAME && r.owner == target)
            .and_then(|r| r.cname.clone());
        match next {
            Some(n) if n != target => target = n,
            _ => break,
        }
    }
    let addrs = records
        .iter()
        .filter(|r| r.rtype == qtype && r.owner == target)
        .filter_map(|r| match (r.rtype, r.data.len()) {
            (TYPE_A, 4) => Some(IpAddr::from(<[u8; 4]>::try_from(r.data).ok()?)),
            (TYPE_AAAA, 16) => Some(IpAddr::from(<[u8; 16]>::try_from(r.data).ok()?)),
            _ => None,
        })
        .collect();
    Some(Reply {
        id,
        rcode,
        truncated,
        qname,
        qtype,
        addrs,
    })
}

/// One resource record at `pos`; records of other classes come back with type 0.
fn read_record(msg: &[u8], pos: usize) -> Option<(Record<'_>, usize)> {
    let mut owner = Vec::new();
    let pos = read_name(msg, pos, &mut owner)?;
    let rtype = be16(msg, pos)?;
    let class = be16(msg, pos + 2)?;
    let rdlen = usize::from(be16(msg, pos + 8)?);
    let start = pos + 10;
    let data = msg.get(start..start + rdlen)?;
    let rtype = if class == CLASS_IN { rtype } else { 0 };
    let cname = if rtype == TYPE_CNAME {
        let mut n = Vec::new();
        let end = read_name(msg, start, &mut n)?;
        if end != start + rdlen {
            return None;
        }
        Some(n)
    } else {
        None
    };
    let rec = Record {
        owner,
        rtype,
        data,
        cname,
    };
    Some((rec, start + rdlen))
}

// ---- the resolver ------------------------------------------------------------------------

/// How one of the two lookups of a resolution ended.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Outcome {
    Addrs(Vec<IpAddr>),
    Failed(Error),
}

/// The A or the AAAA half of a resolution.
struct Lookup {
    qtype: u16,
    id: u16,
    /// Transmissions so far.
    sent: u32,
    /// Index into `servers` of the latest transmission.
    server: usize,
    /// Servers this lookup was sent to: replies are accepted from those only.
    asked: u32,
    deadline: Instant,
    /// What to report if the retransmissions run out (a SERVFAIL beats "no reply").
    last_error: Error,
    outcome: Option<Outcome>,
}

struct Query {
    id: QueryId,
    name: Vec<u8>,
    port: u16,
    lookups: [Lookup; 2],
}

/// Sans-IO stub resolver. See the module documentation.
pub struct Resolver {
    servers: Vec<SocketAddr>,
    config: Config,
    rng: Rng,
    queries: Vec<Query>,
    next_query: u64,
    transmits: VecDeque<(SocketAddr, Vec<u8>)>,
    results: VecDeque<(QueryId, Result<Vec<SocketAddr>, Error>)>,
    /// Static names (/etc/hosts), looked up before DNS as the C library does.
    hosts: Vec<(IpAddr, String)>,
}

/// `/etc/hosts` text: (address, lower-case name) for every name on every line.
pub fn parse_hosts(text: &str) -> Vec<(IpAddr, String)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("");
        let mut words = line.split_whitespace();
        let Some(ip) = words.next().and_then(|w| w.parse::<IpAddr>().ok()) else {
            continue;
        };
        for name in words {
            out.push((ip, name.to_ascii_lowercase()));
        }
    }
    out
}

impl Resolver {
    /// `servers` as from `parse_resolv_conf` (empty: 127.0.0.1); `rng` supplies the query ids
    /// (seeded by the shell from the OS).
    pub fn new(servers: Vec<SocketAddr>, rng: Rng) -> Self {
        Self::with_config(servers, rng, Config::default())
    }

    pub fn with_config(servers: Vec<SocketAddr>, rng: Rng, config: Config) -> Self {
        let mut r = Resolver {
            servers: Vec::new(),
            config: Config {
                attempts: config.attempts.max(1),
                ..config
            },
            rng,
            queries: Vec::new(),
            next_query: 0,
            transmits: VecDeque::new(),
            results: VecDeque::new(),
            hosts: Vec::new(),
        };
        r.set_servers(servers);
        r
    }

    /// Replaces the server list; queries in flight keep their ids and move on with the new
    /// list at their next retransmission (if the list changed, replies count only from
    /// servers asked after the change).
    pub fn set_servers(&mut self, mut servers: Vec<SocketAddr>) {
        servers.truncate(MAX_SERVERS);
        if servers.is_empty() {
            servers = default_servers();
        }
        if servers != self.servers {
            for q in &mut self.queries {
                for l in &mut q.lookups {
                    l.asked = 0;
                    l.server = l.server.min(servers.len() - 1);
                }
            }
        }
        self.servers = servers;
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn servers(&self) -> &[SocketAddr] {
        &self.servers
    }

    /// Replaces the static names (from `parse_hosts`), consulted before any query.
    pub fn set_hosts(&mut self, hosts: Vec<(IpAddr, String)>) {
        self.hosts = hosts;
    }

    /// True when nothing is in flight and nothing waits to be sent or collected.
    pub fn is_idle(&self) -> bool {
        self.queries.is_empty() && self.transmits.is_empty() && self.results.is_empty()
    }

    /// Starts resolving `name` (a host name, or a literal IPv4/IPv6 address, optionally in
    /// brackets, which is answered at once). The outcome appears in `poll_result` as addresses
    /// with `port`, preferred first.
    pub fn resolve(&mut self, name: &str, port: u16, now: Instant) -> QueryId {
        let id = QueryId(self.next_query);
        self.next_query += 1;
        let literal = name
            .strip_prefix('[')
            .and_then(|n| n.strip_suffix(']'))
            .unwrap_or(name);
        if let Ok(ip) = literal.parse::<IpAddr>() {
            self.results
                .push_back((id, Ok(vec![SocketAddr::new(ip, port)])));
            return id;
        }
        let lower = name.trim_end_matches('.').to_ascii_lowercase();
        let mut found: Vec<SocketAddr> = self
            .hosts
            .iter()
            .filter(|(_, n)| *n == lower)
            .map(|&(ip, _)| SocketAddr::new(ip, port))
            .collect();
        if !found.is_empty() {
            found.sort_by_key(|a| a.is_ipv6()); // IPv4 first, as for DNS answers
            self.results.push_back((id, Ok(found)));
            return id;
        }
        let Some(wire) = encode_name(name) else {
            self.results.push_back((id, Err(Error::InvalidName)));
            return id;
        };
        if self.queries.len() >= MAX_QUERIES {
            self.results.push_back((id, Err(Error::Busy)));
            return id;
        }
        let lookups = [TYPE_A, TYPE_AAAA].map(|qtype| Lookup {
            qtype,
            id: 0,
            sent: 0,
            server: 0,
            asked: 0,
            deadline: now,
            last_error: Error::Timeout,
            outcome: None,
        });
        let mut q = Query {
            id,
            name: wire,
            port,
            lookups,
        };
        for i in 0..q.lookups.len() {
            q.lookups[i].id = self.fresh_id(&q);
            let Query { name, lookups, .. } = &mut q;
            self.transmit(name, &mut lookups[i], now);
        }
        self.queries.push(q);
        id
    }

    /// A 16-bit id not used by any lookup in flight (`also` is not in `queries` yet).
    fn fresh_id(&mut self, also: &Query) -> u16 {
        // MAX_QUERIES * 2 ids are in use at most, so a free one turns up quickly; the bound
        // only makes the loop finite by construction.
        let mut id = 0;
        for _ in 0..64 {
            id = self.rng.u32() as u16;
            let taken = self
                .queries
                .iter()
                .chain(std::iter::once(also))
                .any(|q| q.lookups.iter().any(|l| l.outcome.is_none() && l.id == id));
            if !taken {
                break;
            }
        }
        id
    }

    /// Queues a transmission of `l` to its current server and arms its timer.
    fn transmit(&mut self, name: &[u8], l: &mut Lookup, now: Instant) {
        let server = self.servers[l.server];
        self.transmits
            .push_back((server, encode_query(l.id, name, l.qtype)));
        l.asked |= 1 << l.server;
        let factor = 1u32 << l.sent.min(16);
        l.deadline = now + self.config.initial_timeout.saturating_mul(factor);
        l.sent += 1;
    }

    /// Moves `l` to the next server and retransmits, or ends it with its last error.
    fn retry(&mut self, name: &[u8], l: &mut Lookup, now: Instant) {
        if l.sent >= self.config.attempts {
            l.outcome = Some(Outcome::Failed(l.last_error.clone()));
        } else {
            l.server = (l.server + 1) % self.servers.len();
            self.transmit(name, l, now);
        }
    }

    /// Abandons a resolution; its result will not appear.
    pub fn cancel(&mut self, id: QueryId) {
        self.queries.retain(|q| q.id != id);
        self.results.retain(|(r, _)| *r != id);
    }

    /// The next datagram to send: (server, DNS message).
    pub fn poll_transmit(&mut self) -> Option<(SocketAddr, Vec<u8>)> {
        self.transmits.pop_front()
    }

    /// A finished resolution: addresses (never empty, preferred first) or why not.
    pub fn poll_result(&mut self) -> Option<(QueryId, Result<Vec<SocketAddr>, Error>)> {
        self.results.pop_front()
    }

    /// When `on_timer` must run next.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.queries
            .iter()
            .flat_map(|q| &q.lookups)
            .filter(|l| l.outcome.is_none())
            .map(|l| l.deadline)
            .min()
    }

    /// Handles a datagram from `from` received on a DNS socket. Returns whether it answered
    /// a lookup in flight; anything else (wrong source, id, question, malformed) is ignored.
    pub fn on_datagram(&mut self, from: SocketAddr, msg: &[u8], now: Instant) -> bool {
        let from = crate::proto::endpoint::canonical(from);
        let Some(server) = self.servers.iter().position(|s| *s == from) else {
            return false;
        };
        let Some(reply) = parse_reply(msg) else {
            return false;
        };
        let found = self.queries.iter().enumerate().find_map(|(qi, q)| {
            let li = q.lookups.iter().position(|l| {
                l.outcome.is_none()
                    && l.id == reply.id
                    && l.qtype == reply.qtype
                    && l.asked & (1 << server) != 0
            })?;
            (q.name == reply.qname).then_some((qi, li))
        });
        let Some((qi, li)) = found else {
            return false;
        };
        let mut q = self.queries.swap_remove(qi);
        let l = &mut q.lookups[li];
        match reply.rcode {
            RCODE_NOERROR if !reply.addrs.is_empty() => {
                l.outcome = Some(Outcome::Addrs(reply.addrs))
            }
            RCODE_NOERROR if reply.truncated => l.outcome = Some(Outcome::Failed(Error::Truncated)),
            RCODE_NOERROR => l.outcome = Some(Outcome::Failed(Error::NoAddress)),
            RCODE_NXDOMAIN => l.outcome = Some(Outcome::Failed(Error::NxDomain)),
            rcode => {
                // SERVFAIL, REFUSED, ...: another server may do better. With a single server,
                // wait for the timer instead of asking the same server again at once.
                l.last_error = Error::ServerFailure(rcode);
                if self.servers.len() > 1 {
                    self.retry(&q.name, l, now);
                }
            }
        }
        self.finish_or_keep(q);
        true
    }

    /// Retransmits lookups whose deadline passed, fails those out of attempts.
    pub fn on_timer(&mut self, now: Instant) {
        let mut i = 0;
        while i < self.queries.len() {
            if self.queries[i]
                .lookups
                .iter()
                .any(|l| l.outcome.is_none() && l.deadline <= now)
            {
                let mut q = self.queries.swap_remove(i);
                let Query { name, lookups, .. } = &mut q;
                for l in lookups.iter_mut() {
                    if l.outcome.is_none() && l.deadline <= now {
                        self.retry(name, l, now);
                    }
                }
                // finish_or_keep pushes q back at the end; the element now at i is unseen.
                self.finish_or_keep(q);
            } else {
                i += 1;
            }
        }
    }

    /// Reports `q` if it is decided, otherwise puts it back.
    fn finish_or_keep(&mut self, q: Query) {
        let [a, aaaa] = &q.lookups;
        let result = match (&a.outcome, &aaaa.outcome) {
            (Some(Outcome::Addrs(v4)), _) => Ok(v4.clone()),
            // The name does not exist: the other lookup cannot find anything either.
            (Some(Outcome::Failed(Error::NxDomain)), _)
            | (_, Some(Outcome::Failed(Error::NxDomain))) => Err(Error::NxDomain),
            (_, None) | (None, _) => {
                self.queries.push(q);
                return;
            }
            (_, Some(Outcome::Addrs(v6))) => Ok(v6.clone()),
            (Some(Outcome::Failed(e4)), Some(Outcome::Failed(e6))) => Err(combine(e4, e6)),
        };
        let port = q.port;
        let result = result.map(|ips| {
            ips.into_iter()
                .map(|ip| SocketAddr::new(ip, port))
                .collect()
        });
        self.results.push_back((q.id, result));
    }
}

/// The error of a resolution whose two lookups failed: a definite "no such name" first, then
/// the error worth retrying, then "no address".
fn combine(a: &Error, b: &Error) -> Error {
    fn rank(e: &Error) -> u8 {
        match e {
            Error::NxDomain => 0,
            Error::NoAddress => 2,
            _ => 1,
        }
    }
    if rank(b) < rank(a) {
        b.clone()
    } else {
        a.clone()
    }
}

// ---- per-peer policy ---------------------------------------------------------------------

/// When to resolve again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    /// Wait after the first failure; doubled after each further one.
    pub initial: Duration,
    /// Longest wait between attempts.
    pub max: Duration,
    /// Shortest interval between stall-triggered resolutions (from start to start).
    pub min_reresolve: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            initial: Duration::from_secs(1),
            max: Duration::from_secs(300),
            min_reresolve: Duration::from_secs(30),
        }
    }
}


#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EndpointState {
    /// Not resolved yet; the first resolution starts at the next `poll`.
    Unresolved,
    Resolving {
        query: QueryId,
        started: Instant,
    },
    /// `addr` was the answer at `at`; `refresh` is when a stall-triggered re-resolution is
    /// due (held back by `min_reresolve`).
    Resolved {
        addr: SocketAddr,
        at: Instant,
        refresh: Option<Instant>,
    },
    /// The last attempt failed; the next starts at `until`.
    Failed {
        until: Instant,
        error: Error,
    },
}

/// Resolution policy for one peer's host name. Pure: every input carries `now`.
pub struct EndpointResolver {
    host: String,
    port: u16,
    backoff: Backoff,
    state: EndpointState,
    /// Consecutive failures.
    failures: u32,
    /// Latest good address, kept across failed re-resolutions.
    last_good: Option<(SocketAddr, Instant)>,
    last_start: Option<Instant>,
}

impl EndpointResolver {
    pub fn new(host: impl Into<String>, port: u16, backoff: Backoff) -> Self {
        EndpointResolver {
            host: host.into(),
            port,
            backoff,
            state: EndpointState::Unresolved,
            failures: 0,
            last_good: None,
            last_start: None,
        }
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn host(&self) -> &str {
        &self.host
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn port(&self) -> u16 {
        self.port
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn state(&self) -> &EndpointState {
        &self.state
    }

    #[cfg(any(test, feature = "internals"))]
    /// The latest address resolved, even if a later attempt failed.
    pub fn address(&self) -> Option<SocketAddr> {
        self.last_good.map(|(a, _)| a)
    }

    /// When a resolution should start (`poll` then starts it); None while one runs or none
    /// is wanted. `Unresolved` is due immediately: any `now` is past `Instant`s from before.
    pub fn due(&self) -> Option<Due> {
        match &self.state {
            EndpointState::Unresolved => Some(Due::Now),
            EndpointState::Resolving { .. } => None,
            EndpointState::Resolved { refresh, .. } => refresh.map(Due::At),
            EndpointState::Failed { until, .. } => Some(Due::At(*until)),
        }
    }

    /// Starts a resolution through `dns` if one is due. Returns its id if it started one.
    pub fn poll(&mut self, now: Instant, dns: &mut Resolver) -> Option<QueryId> {
        match self.due()? {
            Due::At(t) if t > now => return None,
            _ => {}
        }
        let query = dns.resolve(&self.host, self.port, now);
        self.last_start = Some(now);
        self.state = EndpointState::Resolving {
            query,
            started: now,
        };
        Some(query)
    }

    /// Takes the result of a resolution. Returns the address to set as the peer's endpoint,
    /// on every success (also an unchanged one: setting it again undoes roaming to an
    /// address that stopped working). `jitter` is random bits for the backoff.
    pub fn on_result(
        &mut self,
        query: QueryId,
        result: &Result<Vec<SocketAddr>, Error>,
        now: Instant,
        jitter: u32,
    ) -> Option<SocketAddr> {
        match self.state {
            EndpointState::Resolving { query: q, .. } if q == query => {}
            _ => return None,
        }
        match result.as_ref().map(|a| a.first()) {
            Ok(Some(&addr)) => {
                self.failures = 0;
                self.last_good = Some((addr, now));
                self.state = EndpointState::Resolved {
                    addr,
                    at: now,
                    refresh: None,
                };
                Some(addr)
            }
            Ok(None) | Err(_) => {
                let error = result.clone().err().unwrap_or(Error::NoAddress);
                self.failures = self.failures.saturating_add(1);
                let until = now + self.backoff_delay(jitter);
                self.state = EndpointState::Failed { until, error };
                None
            }
        }
    }

    /// Wait after `failures` consecutive failures: initial * 2^(failures-1), at most `max`,
    /// minus up to a quarter at random so that peers (and routers) spread out.
    fn backoff_delay(&self, jitter: u32) -> Duration {
        let shift = self.failures.saturating_sub(1).min(31);
        let base = self
            .backoff
            .initial
            .saturating_mul(1 << shift)
            .min(self.backoff.max);
        let cut = base.mul_f64(f64::from(jitter % 1024) / 4096.0);
        (base - cut).max(Duration::from_millis(1))
    }

    /// No handshake for longer than REJECT_AFTER_TIME (by then any session with the old address
    /// is gone): the address may be stale (DDNS moved).
    /// Schedules a re-resolution, at most one per `min_reresolve`. Ignored while resolving
    /// or while failures are being retried (their backoff decides).
    pub fn note_handshake_stalled(&mut self, now: Instant) {
        if let EndpointState::Resolved { refresh, .. } = &mut self.state {
            let earliest = self
                .last_start
                .map_or(now, |t| t + self.backoff.min_reresolve);
            let at = earliest.max(now);
            *refresh = Some(refresh.map_or(at, |r| r.min(at)));
        }
    }

    /// A handshake completed: the endpoint works. Stops retrying a failed re-resolution
    /// when an address is known, and drops a pending refresh.
    pub fn note_handshake_completed(&mut self, _now: Instant) {
        match &mut self.state {
            EndpointState::Resolved { refresh, .. } => *refresh = None,
            EndpointState::Failed { .. } => {
                if let Some((addr, at)) = self.last_good {
                    self.failures = 0;
                    self.state = EndpointState::Resolved {
                        addr,
                        at,
                        refresh: None,
                    };
                }
            }
            _ => {}
        }
    }
}

/// When an `EndpointResolver` wants `poll`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Due {
    Now,
    At(Instant),
}

/// "Set the endpoint of `peer` to `addr`."
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetEndpoint<K> {
    pub peer: K,
    pub addr: SocketAddr,
}

/// The `EndpointResolver`s of all peers with a host name, keyed by `K` (e.g. `PeerId`).
pub struct Endpoints<K> {
    entries: Vec<(K, EndpointResolver)>,
    rng: Rng,
    actions: VecDeque<SetEndpoint<K>>,
}

impl<K: Copy + Eq> Endpoints<K> {
    /// `rng` supplies backoff jitter.
    pub fn new(rng: Rng) -> Self {
        Endpoints {
            entries: Vec::new(),
            rng,
            actions: VecDeque::new(),
        }
    }

    /// Adds or replaces `peer`'s host name (a replaced one's query is cancelled).
    pub fn insert(&mut self, peer: K, resolver: EndpointResolver, dns: &mut Resolver) {
        self.remove(peer, dns);
        self.entries.push((peer, resolver));
    }

    pub fn remove(&mut self, peer: K, dns: &mut Resolver) {
        if let Some(i) = self.entries.iter().position(|(k, _)| *k == peer) {
            let (_, old) = self.entries.swap_remove(i);
            if let EndpointState::Resolving { query, .. } = old.state {
                dns.cancel(query);
            }
        }
        self.actions.retain(|a| a.peer != peer);
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn get(&self, peer: K) -> Option<&EndpointResolver> {
        self.entries
            .iter()
            .find(|(k, _)| *k == peer)
            .map(|(_, r)| r)
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Starts the resolutions that are due.
    pub fn poll(&mut self, now: Instant, dns: &mut Resolver) {
        for (_, r) in &mut self.entries {
            r.poll(now, dns);
        }
    }

    /// Routes a result from `Resolver::poll_result`. Returns whether it belonged to a peer.
    pub fn on_result(
        &mut self,
        query: QueryId,
        result: &Result<Vec<SocketAddr>, Error>,
        now: Instant,
    ) -> bool {
        let jitter = self.rng.u32();
        for (peer, r) in &mut self.entries {
            if matches!(r.state, EndpointState::Resolving { query: q, .. } if q == query) {
                if let Some(addr) = r.on_result(query, result, now, jitter) {
                    self.actions.push_back(SetEndpoint { peer: *peer, addr });
                }
                return true;
            }
        }
        false
    }

    pub fn note_handshake_stalled(&mut self, peer: K, now: Instant) {
        if let Some((_, r)) = self.entries.iter_mut().find(|(k, _)| *k == peer) {
            r.note_handshake_stalled(now);
        }
    }

    pub fn note_handshake_completed(&mut self, peer: K, now: Instant) {
        if let Some((_, r)) = self.entries.iter_mut().find(|(k, _)| *k == peer) {
            r.note_handshake_completed(now);
        }
    }

    /// When `poll` must run next (`now` for entries due at once).
    pub fn next_deadline(&self, now: Instant) -> Option<Instant> {
        self.entries
            .iter()
            .filter_map(|(_, r)| match r.due()? {
                Due::Now => Some(now),
                Due::At(t) => Some(t),
            })
            .min()
    }

    pub fn poll_action(&mut self) -> Option<SetEndpoint<K>> {
        self.actions.pop_front()
    }
}

// ---- shell ---------------------------------------------------------------------------------

/// Non-blocking UDP sockets for DNS, one per address family, opened on first use and
/// registered edge-triggered in a `Poller` under the caller's tokens. `close_if_idle` closes
/// them between resolutions, so each burst of queries leaves from a fresh kernel-chosen
/// (random) source port, and an idle daemon holds no DNS socket.
pub struct DnsSockets {
    v4: Option<UdpSocket>,
    v6: Option<UdpSocket>,
    token_v4: u64,
    token_v6: u64,
    fwmark: u32,
}

/// Datagrams read per `drain` call at most (a flood must not starve the packet loop).
pub const DRAIN_LIMIT: usize = 256;

impl DnsSockets {
    /// `fwmark`: the device's mark, so that queries to remote servers bypass the tunnel
    /// like the tunnel's own packets do (0: none).
    pub fn new(token_v4: u64, token_v6: u64, fwmark: u32) -> Self {
        DnsSockets {
            v4: None,
            v6: None,
            token_v4,
            token_v6,
            fwmark,
        }
    }

    fn open(&mut self, v6: bool, poller: &Registry) -> io::Result<&UdpSocket> {
        let (slot, token) = if v6 {
            (&mut self.v6, self.token_v6)
        } else {
            (&mut self.v4, self.token_v4)
        };
        if slot.is_none() {
            use socket2::{Domain, Protocol, Socket, Type};
            let domain = if v6 { Domain::IPV6 } else { Domain::IPV4 };
            let s = Socket::new(
                domain,
                Type::DGRAM.nonblocking().cloexec(),
                Some(Protocol::UDP),
            )?;
            if v6 {
                s.set_only_v6(true)?;
            }
            if self.fwmark != 0 {
                s.set_mark(self.fwmark)?;
            }
            let any: SocketAddr = if v6 {
                (Ipv6Addr::UNSPECIFIED, 0).into()
            } else {
                (Ipv4Addr::UNSPECIFIED, 0).into()
            };
            s.bind(&any.into())?;
            let sock: UdpSocket = s.into();
            poller.add(sock.as_fd(), token, Interest::Read)?;
            *slot = Some(sock);
        }
        Ok(slot.as_ref().expect("opened above"))
    }

    /// Sends everything `dns` has queued. Failures (no route at boot, no IPv6) are dropped:
    /// the retransmission timer tries again, with the next server.
    pub fn flush(&mut self, dns: &mut Resolver, poller: &Registry) {
        while let Some((to, msg)) = dns.poll_transmit() {
            let sent = self
                .open(to.is_ipv6(), poller)
                .and_then(|s| s.send_to(&msg, to));
            if let Err(e) = sent {
                crate::log::verbose(format_args!("dns: sending to {to}: {e}"));
            }
        }
    }

    /// Reads the socket behind `token` until WouldBlock (or DRAIN_LIMIT datagrams) and feeds
    /// `dns`. Returns true if it stopped at the limit: the caller must call again, as the
    /// edge-triggered poller will not report the socket again.
    pub fn drain(&mut self, token: u64, dns: &mut Resolver, now: Instant) -> bool {
        let sock = match token {
            t if t == self.token_v4 => self.v4.as_ref(),
            t if t == self.token_v6 => self.v6.as_ref(),
            _ => None,
        };
        let Some(sock) = sock else { return false };
        // Replies without EDNS are at most 512 bytes; longer ones are cut and then ignored.
        let mut buf = [0u8; 1500];
        for _ in 0..DRAIN_LIMIT {
            match sock.recv_from(&mut buf) {
                Ok((n, from)) => {
                    dns.on_datagram(from, &buf[..n], now);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // ICMP errors (port unreachable) surface here; the timer handles them.
                Err(_) => {}
            }
        }
        true
    }

    /// Closes the sockets when `dns` has nothing in flight.
    pub fn close_if_idle(&mut self, dns: &Resolver, poller: &Registry) {
        if dns.is_idle() {
            for s in [self.v4.take(), self.v6.take()].into_iter().flatten() {
                poller.delete(s.as_fd());
            }
        }
    }

    #[cfg(any(test, feature = "internals"))]
    /// Whether a socket is open (for tests and diagnostics).
    pub fn is_open(&self) -> bool {
        self.v4.is_some() || self.v6.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S1: &str = "192.0.2.53:53";
    const S2: &str = "[2001:db8::53]:53";

    fn sa(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn wire(name: &str) -> Vec<u8> {
        encode_name(name).unwrap()
    }

    /// A reply header plus the question `qname`/`qtype`; records are appended by `rr`.
    fn reply(id: u16, flags: u16, ancount: u16, qname: &[u8], qtype: u16) -> Vec<u8> {
        let mut m = Vec::new();
        m.extend_from_slice(&id.to_be_bytes());
        m.extend_from_slice(&flags.to_be_bytes());
        m.extend_from_slice(&[0, 1]);
        m.extend_from_slice(&ancount.to_be_bytes());
        m.extend_from_slice(&[0, 0, 0, 0]);
        m.extend_from_slice(qname);
        m.extend_from_slice(&qtype.to_be_bytes());
        m.extend_from_slice(&CLASS_IN.to_be_bytes());
        m
    }

    const OK: u16 = 0x8180; // QR RD RA, NOERROR

    fn rr(m: &mut Vec<u8>, owner: &[u8], rtype: u16, data: &[u8]) {
        m.extend_from_slice(owner);
        m.extend_from_slice(&rtype.to_be_bytes());
        m.extend_from_slice(&CLASS_IN.to_be_bytes());
        m.extend_from_slice(&300u32.to_be_bytes());
        m.extend_from_slice(&(data.len() as u16).to_be_bytes());
        m.extend_from_slice(data);
    }

    /// Pointer to the question name.
    const QPTR: [u8; 2] = [0xc0, 12];

    fn resolver(servers: &[&str]) -> Resolver {
        Resolver::new(
            servers.iter().map(|s| sa(s)).collect(),
            Rng::from_seed([7; 32]),
        )
    }

    /// The (server, id, qtype) of every queued transmission.
    fn sent(r: &mut Resolver) -> Vec<(SocketAddr, u16, u16)> {
        let mut out = Vec::new();
        while let Some((to, m)) = r.poll_transmit() {
            let qtype = be16(&m, m.len() - 4).unwrap();
            out.push((to, be16(&m, 0).unwrap(), qtype));
        }
        out
    }

    fn id_for(tx: &[(SocketAddr, u16, u16)], qtype: u16) -> u16 {
        tx.iter().rev().find(|t| t.2 == qtype).unwrap().1
    }

    fn a_reply(id: u16, name: &str, addr: [u8; 4]) -> Vec<u8> {
        let mut m = reply(id, OK, 1, &wire(name), TYPE_A);
        rr(&mut m, &QPTR, TYPE_A, &addr);
        m
    }

    // ---- parser ----

    #[test]
    fn parses_a_and_aaaa() {
        let r = parse_reply(&a_reply(0x1234, "peer.example.com", [192, 0, 2, 1])).unwrap();
        assert_eq!(r.id, 0x1234);
        assert_eq!(r.qname, wire("peer.example.com"));
        assert_eq!(r.addrs, vec![ip("192.0.2.1")]);

        let mut m = reply(9, OK, 2, &wire("peer.example.com"), TYPE_AAAA);
        let v6: Ipv6Addr = "2001:db8::1".parse().unwrap();
        rr(&mut m, &wire("peer.example.com"), TYPE_AAAA, &v6.octets());
        rr(
            &mut m,
            &QPTR,
            TYPE_AAAA,
            &"2001:db8::2".parse::<Ipv6Addr>().unwrap().octets(),
        );
        let r = parse_reply(&m).unwrap();
        assert_eq!(r.addrs, vec![ip("2001:db8::1"), ip("2001:db8::2")]);
    }

    #[test]
    fn skips_records_of_wrong_length_type_or_owner() {
        let mut m = reply(1, OK, 4, &wire("a.example"), TYPE_A);
        rr(&mut m, &QPTR, TYPE_A, &[1, 2, 3]); // short A
        rr(&mut m, &wire("other.example"), TYPE_A, &[10, 0, 0, 1]); // not ours
        rr(&mut m, &QPTR, TYPE_AAAA, &[0; 16]); // not the type asked
        rr(&mut m, &QPTR, TYPE_A, &[10, 0, 0, 2]);
        assert_eq!(parse_reply(&m).unwrap().addrs, vec![ip("10.0.0.2")]);
    }

    #[test]
    fn follows_cname_chain_in_any_order_with_compression() {
        // www.example.com -> alias.example.com (compressed: "alias" + pointer to
        // "example.com" inside the question) -> final.example.org -> 192.0.2.9.
        let q = wire("www.example.com");
        let mut m = reply(5, OK, 4, &q, TYPE_A);
        let example_com = 12 + 4; // after the "www" label
        let mut alias = vec![5];
        alias.extend_from_slice(b"alias");
        alias.extend_from_slice(&[0xc0, example_com as u8]);
        // The final name's A record comes first and uses a plain name.
        rr(&mut m, &wire("final.example.org"), TYPE_A, &[192, 0, 2, 9]);
        rr(&mut m, &QPTR, TYPE_CNAME, &alias);
        let alias_owner_at = m.len();
        rr(&mut m, &alias, TYPE_CNAME, &wire("final.example.org"));
        // A decoy A record for the middle of the chain: only the end counts.
        let owner = [0xc0 | (alias_owner_at >> 8) as u8, alias_owner_at as u8];
        rr(&mut m, &owner, TYPE_A, &[198, 51, 100, 1]);
        let r = parse_reply(&m).unwrap();
        assert_eq!(r.addrs, vec![ip("192.0.2.9")]);

        // A CNAME loop ends the walk without addresses and without hanging.
        let mut m = reply(5, OK, 2, &wire("a.example"), TYPE_A);
        rr(&mut m, &QPTR, TYPE_CNAME, &wire("b.example"));
        rr(&mut m, &wire("b.example"), TYPE_CNAME, &wire("a.example"));
        assert!(parse_reply(&m).unwrap().addrs.is_empty());
    }

    #[test]
    fn names_compare_case_insensitively() {
        let m = a_reply(3, "PeEr.ExAmPlE.CoM", [192, 0, 2, 3]);
        let r = parse_reply(&m).unwrap();
        assert_eq!(r.qname, wire("peer.example.com"));
        assert_eq!(r.addrs, vec![ip("192.0.2.3")]);
    }

    #[test]
    fn rejects_pointer_loops_and_forward_pointers() {
        let mut out = Vec::new();
        // A pointer to itself.
        let m = [0u8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xc0, 12];
        assert_eq!(read_name(&m, 12, &mut out), None);
        // Two names pointing at each other.
        let m = [1, b'a', 0xc0, 4, 1, b'b', 0xc0, 0];
        assert_eq!(read_name(&m, 0, &mut out), None);
        assert_eq!(read_name(&m, 4, &mut out), None);
        // A forward pointer.
        let m = [0xc0, 2, 0];
        assert_eq!(read_name(&m, 0, &mut out), None);
        // A pointer past the end, a cut pointer, a cut label, reserved label types.
        assert_eq!(read_name(&[1, b'a', 0xc0, 0xff], 2, &mut out), None);
        assert_eq!(read_name(&[0xc0], 0, &mut out), None);
        assert_eq!(read_name(&[5, b'a', b'b'], 0, &mut out), None);
        assert_eq!(read_name(&[0x40, 0], 0, &mut out), None);
        assert_eq!(read_name(&[0x80, 0], 0, &mut out), None);
        // A backward pointer works and the name ends after the pointer.
        let m = [1, b'x', 0, 1, b'y', 0xc0, 0, 0xff];
        assert_eq!(read_name(&m, 3, &mut out), Some(7));
        assert_eq!(out, wire("y.x"));
    }

    #[test]
    fn rejects_over_long_names() {
        // A chain of backward pointers, each adding a 63-byte label: over 255 bytes.
        let mut m = vec![0u8];
        let mut prev = 0usize;
        for _ in 0..5 {
            let here = m.len();
            m.push(63);
            m.extend_from_slice(&[b'a'; 63]);
            m.extend_from_slice(&[0xc0 | (prev >> 8) as u8, prev as u8]);
            prev = here;
        }
        let mut out = Vec::new();
        assert_eq!(read_name(&m, prev, &mut out), None);
        assert!(encode_name(&vec!["a".repeat(63); 4].join(".")).is_none());
        assert!(encode_name(&["a".repeat(63), "b".repeat(63)].join(".")).is_some());
        assert!(encode_name(&"a".repeat(64)).is_none());
        assert!(encode_name("a..b").is_none());
        assert!(encode_name("").is_none());
        assert!(encode_name(".").is_none());
        assert!(encode_name("has space.example").is_none());
        assert_eq!(encode_name("Example.COM."), encode_name("example.com"));
    }

    #[test]
    fn truncated_replies() {
        // TC with one whole record and a cut one: the whole one counts.
        let mut m = reply(8, OK | 0x0200, 2, &wire("t.example"), TYPE_A);
        rr(&mut m, &QPTR, TYPE_A, &[192, 0, 2, 8]);
        rr(&mut m, &QPTR, TYPE_A, &[192, 0, 2, 9]);
        m.truncate(m.len() - 3);
        let r = parse_reply(&m).unwrap();
        assert!(r.truncated);
        assert_eq!(r.addrs, vec![ip("192.0.2.8")]);
        // The same cut without TC is malformed.
        m[2] &= !0x02;
        assert_eq!(parse_reply(&m), None);
        // Cut inside the header or question.
        let full = a_reply(1, "t.example", [1, 2, 3, 4]);
        for n in 0..12 + wire("t.example").len() + 4 {
            assert_eq!(parse_reply(&full[..n]), None, "{n}");
        }
    }

    #[test]
    fn rejects_queries_and_odd_messages() {
        let mut m = a_reply(1, "q.example", [1, 2, 3, 4]);
        m[2] &= 0x7f; // QR clear: a query
        assert_eq!(parse_reply(&m), None);
        let mut m = a_reply(1, "q.example", [1, 2, 3, 4]);
        m[2] |= 0x08; // opcode 1
        assert_eq!(parse_reply(&m), None);
        let mut m = a_reply(1, "q.example", [1, 2, 3, 4]);
        m[5] = 2; // two questions
        assert_eq!(parse_reply(&m), None);
    }

    // ---- resolver ----

    #[test]
    fn resolves_a_and_prefers_ipv4() {
        let now = Instant::now();
        let mut r = resolver(&[S1]);
        let q = r.resolve("peer.example.com", 51820, now);
        let tx = sent(&mut r);
        assert_eq!(tx.len(), 2);
        assert!(tx.iter().all(|t| t.0 == sa(S1)));
        assert_ne!(id_for(&tx, TYPE_A), id_for(&tx, TYPE_AAAA));
        // AAAA first: still waits for A.
        let mut m = reply(
            id_for(&tx, TYPE_AAAA),
            OK,
            1,
            &wire("peer.example.com"),
            TYPE_AAAA,
        );
        rr(
            &mut m,
            &QPTR,
            TYPE_AAAA,
            &[0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
        );
        assert!(r.on_datagram(sa(S1), &m, now));
        assert!(r.poll_result().is_none());
        let m = a_reply(id_for(&tx, TYPE_A), "peer.example.com", [192, 0, 2, 1]);
        assert!(r.on_datagram(sa(S1), &m, now));
        assert_eq!(r.poll_result(), Some((q, Ok(vec![sa("192.0.2.1:51820")]))));
        assert!(r.is_idle());
        // A duplicate is ignored.
        assert!(!r.on_datagram(sa(S1), &m, now));
    }

    #[test]
    fn a_answer_does_not_wait_for_aaaa() {
        let now = Instant::now();
        let mut r = resolver(&[S1]);
        let q = r.resolve("peer.example.com", 1, now);
        let tx = sent(&mut r);
        let m = a_reply(id_for(&tx, TYPE_A), "peer.example.com", [192, 0, 2, 1]);
        r.on_datagram(sa(S1), &m, now);
        assert_eq!(r.poll_result(), Some((q, Ok(vec![sa("192.0.2.1:1")]))));
        assert_eq!(r.next_deadline(), None);
        assert!(r.is_idle());
    }

    #[test]
    fn ipv6_only_name() {
        let now = Instant::now();
        let mut r = resolver(&[S1]);
        let q = r.resolve("v6.example", 7, now);
        let tx = sent(&mut r);
        let m = reply(id_for(&tx, TYPE_A), OK, 0, &wire("v6.example"), TYPE_A);
        r.on_datagram(sa(S1), &m, now);
        assert!(r.poll_result().is_none());
        let mut m = reply(
            id_for(&tx, TYPE_AAAA),
            OK,
            1,
            &wire("v6.example"),
            TYPE_AAAA,
        );
        rr(
            &mut m,
            &QPTR,
            TYPE_AAAA,
            &"2001:db8::7".parse::<Ipv6Addr>().unwrap().octets(),
        );
        r.on_datagram(sa(S1), &m, now);
        assert_eq!(r.poll_result(), Some((q, Ok(vec![sa("[2001:db8::7]:7")]))));
    }

    #[test]
    fn nxdomain_nodata_and_truncated_errors() {
        let now = Instant::now();
        let mut r = resolver(&[S1]);
        let q = r.resolve("gone.example", 1, now);
        let tx = sent(&mut r);
        let m = reply(
            id_for(&tx, TYPE_A),
            0x8183,
            0,
            &wire("gone.example"),
            TYPE_A,
        );
        r.on_datagram(sa(S1), &m, now);
        assert_eq!(r.poll_result(), Some((q, Err(Error::NxDomain))));
        assert!(r.is_idle());

        let q = r.resolve("empty.example", 1, now);
        let tx = sent(&mut r);
        for t in [TYPE_A, TYPE_AAAA] {
            let m = reply(id_for(&tx, t), OK, 0, &wire("empty.example"), t);
            r.on_datagram(sa(S1), &m, now);
        }
        assert_eq!(r.poll_result(), Some((q, Err(Error::NoAddress))));

        let q = r.resolve("big.example", 1, now);
        let tx = sent(&mut r);
        for t in [TYPE_A, TYPE_AAAA] {
            let m = reply(id_for(&tx, t), OK | 0x0200, 0, &wire("big.example"), t);
            r.on_datagram(sa(S1), &m, now);
        }
        assert_eq!(r.poll_result(), Some((q, Err(Error::Truncated))));
    }

    #[test]
    fn ignores_wrong_source_id_question_and_type() {
        let now = Instant::now();
        let mut r = resolver(&[S1]);
        let q = r.resolve("peer.example", 1, now);
        let tx = sent(&mut r);
        let id = id_for(&tx, TYPE_A);
        let good = a_reply(id, "peer.example", [192, 0, 2, 1]);
        assert!(!r.on_datagram(sa("192.0.2.54:53"), &good, now));
        assert!(!r.on_datagram(sa("192.0.2.53:5353"), &good, now));
        assert!(!r.on_datagram(sa(S1), &a_reply(id ^ 1, "peer.example", [6, 6, 6, 6]), now));
        assert!(!r.on_datagram(sa(S1), &a_reply(id, "evil.example", [6, 6, 6, 6]), now));
        let mut m = reply(id, OK, 1, &wire("peer.example"), TYPE_AAAA);
        rr(&mut m, &QPTR, TYPE_AAAA, &[6; 16]);
        assert!(!r.on_datagram(sa(S1), &m, now));
        assert!(r.poll_result().is_none());
        // A v4-mapped source is the same server.
        assert!(r.on_datagram(sa("[::ffff:192.0.2.53]:53"), &good, now));
        assert_eq!(r.poll_result(), Some((q, Ok(vec![sa("192.0.2.1:1")]))));
    }

    #[test]
    fn retransmits_with_doubling_timeouts_rotating_servers_then_fails() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let mut r = resolver(&[S1, S2]);
        let q = r.resolve("slow.example", 1, t0);
        let tx = sent(&mut r);
        assert!(tx.iter().all(|t| t.0 == sa(S1)));
        assert_eq!(r.next_deadline(), Some(t0 + s(1)));
        r.on_timer(t0 + Duration::from_millis(999));
        assert!(sent(&mut r).is_empty());
        r.on_timer(t0 + s(1));
        let tx2 = sent(&mut r);
        assert_eq!(tx2.len(), 2);
        assert!(tx2.iter().all(|t| t.0 == sa(S2)));
        // Same ids on retransmission: a late reply from the first server still counts.
        assert_eq!(id_for(&tx2, TYPE_A), id_for(&tx, TYPE_A));
        assert_eq!(r.next_deadline(), Some(t0 + s(3)));
        r.on_timer(t0 + s(3));
        let tx3 = sent(&mut r);
        assert!(tx3.iter().all(|t| t.0 == sa(S1)));
        assert_eq!(r.next_deadline(), Some(t0 + s(7)));
        r.on_timer(t0 + s(7));
        assert!(sent(&mut r).is_empty());
        assert_eq!(r.poll_result(), Some((q, Err(Error::Timeout))));
        assert_eq!(r.next_deadline(), None);
        assert!(r.is_idle());
    }

    #[test]
    fn late_reply_from_earlier_server_counts() {
        let t0 = Instant::now();
        let mut r = resolver(&[S1, S2]);
        let q = r.resolve("late.example", 1, t0);
        let tx = sent(&mut r);
        r.on_timer(t0 + Duration::from_secs(1));
        sent(&mut r);
        let m = a_reply(id_for(&tx, TYPE_A), "late.example", [192, 0, 2, 5]);
        assert!(r.on_datagram(sa(S1), &m, t0 + Duration::from_secs(2)));
        assert_eq!(r.poll_result(), Some((q, Ok(vec![sa("192.0.2.5:1")]))));
    }

    #[test]
    fn servfail_moves_to_next_server_and_is_reported_last() {
        let t0 = Instant::now();
        let mut r = resolver(&[S1, S2]);
        let q = r.resolve("sf.example", 1, t0);
        let tx = sent(&mut r);
        for t in [TYPE_A, TYPE_AAAA] {
            let m = reply(id_for(&tx, t), 0x8182, 0, &wire("sf.example"), t);
            assert!(r.on_datagram(sa(S1), &m, t0));
        }
        let tx2 = sent(&mut r);
        assert_eq!(tx2.len(), 2);
        assert!(tx2.iter().all(|t| t.0 == sa(S2)));
        // The second server is silent; the third attempt (S1 again) too.
        r.on_timer(t0 + Duration::from_secs(2));
        assert_eq!(sent(&mut r).len(), 2);
        r.on_timer(t0 + Duration::from_secs(6));
        assert_eq!(r.poll_result(), Some((q, Err(Error::ServerFailure(2)))));

        // A single server that SERVFAILs is asked again only when the timer fires.
        let mut r = resolver(&[S1]);
        r.resolve("sf.example", 1, t0);
        let tx = sent(&mut r);
        let m = reply(id_for(&tx, TYPE_A), 0x8185, 0, &wire("sf.example"), TYPE_A);
        assert!(r.on_datagram(sa(S1), &m, t0));
        assert!(sent(&mut r).is_empty());
        assert_eq!(r.next_deadline(), Some(t0 + Duration::from_secs(1)));
    }

    #[test]
    fn literal_addresses_and_invalid_names_answer_at_once() {
        let now = Instant::now();
        let mut r = resolver(&[]);
        assert_eq!(r.servers(), &[sa("127.0.0.1:53")]);
        let q = r.resolve("192.0.2.1", 5, now);
        assert_eq!(r.poll_result(), Some((q, Ok(vec![sa("192.0.2.1:5")]))));
        let q = r.resolve("[2001:db8::1]", 5, now);
        assert_eq!(r.poll_result(), Some((q, Ok(vec![sa("[2001:db8::1]:5")]))));
        let q = r.resolve("2001:db8::2", 5, now);
        assert_eq!(r.poll_result(), Some((q, Ok(vec![sa("[2001:db8::2]:5")]))));
        let q = r.resolve("bad..name", 5, now);
        assert_eq!(r.poll_result(), Some((q, Err(Error::InvalidName))));
        assert!(r.poll_transmit().is_none());
        assert!(r.is_idle());
    }

    #[test]
    fn cancel_drops_query_and_result() {
        let now = Instant::now();
        let mut r = resolver(&[S1]);
        let q = r.resolve("c.example", 1, now);
        let tx = sent(&mut r);
        r.cancel(q);
        assert!(r.is_idle());
        let m = a_reply(id_for(&tx, TYPE_A), "c.example", [1, 2, 3, 4]);
        assert!(!r.on_datagram(sa(S1), &m, now));
        let q = r.resolve("10.0.0.1", 1, now);
        r.cancel(q);
        assert!(r.poll_result().is_none());
    }

    #[test]
    fn ids_differ_between_lookups_in_flight() {
        let now = Instant::now();
        let mut r = resolver(&[S1]);
        for i in 0..200 {
            r.resolve(&format!("h{i}.example"), 1, now);
        }
        let mut ids: Vec<u16> = sent(&mut r).iter().map(|t| t.1).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 400);
    }

    #[test]
    fn resolv_conf() {
        let text = "# generated\nsearch lan\nnameserver 127.0.0.1\n  nameserver\t192.0.2.1 # c\n\
                    nameserver 2001:db8::1\nnameserver fe80::1%2\nnameserver fe80::1%eth0\n\
                    nameserver bogus\nnameserver\nnameserver 127.0.0.1\n;nameserver 10.0.0.1\n\
                    options ndots:1\n";
        let expect: Vec<SocketAddr> = vec![
            sa("127.0.0.1:53"),
            sa("192.0.2.1:53"),
            sa("[2001:db8::1]:53"),
            SocketAddrV6::new("fe80::1".parse().unwrap(), 53, 0, 2).into(),
        ];
        assert_eq!(parse_resolv_conf(text), expect);
        assert!(parse_resolv_conf("").is_empty());
        let many: String = (1..20)
            .map(|i| format!("nameserver 10.0.0.{i}\n"))
            .collect();
        assert_eq!(parse_resolv_conf(&many).len(), MAX_SERVERS);
    }

    /// Random and mutated messages, with the id and source of a lookup in flight so that the
    /// parser and the matching code see them: nothing panics, nothing hangs, and whatever is
    /// accepted came from the server.
    #[test]
    fn fuzz_random_and_mutated_replies() {
        let mut rng = Rng::from_seed([42; 32]);
        let t0 = Instant::now();
        let mut seeds: Vec<Vec<u8>> = Vec::new();
        {
            let mut m = reply(0, OK, 3, &wire("www.example.com"), TYPE_A);
            rr(&mut m, &QPTR, TYPE_CNAME, &[1, b'x', 0xc0, 16]);
            rr(&mut m, &[1, b'x', 0xc0, 16], TYPE_A, &[192, 0, 2, 1]);
            rr(&mut m, &[0xc0, 0x21], TYPE_A, &[192, 0, 2, 2]);
            seeds.push(m);
            seeds.push(a_reply(0, "www.example.com", [1, 2, 3, 4]));
            let mut m = reply(0, OK, 1, &wire("www.example.com"), TYPE_AAAA);
            rr(&mut m, &QPTR, TYPE_AAAA, &[1; 16]);
            seeds.push(m);
        }
        let mut accepted = 0;
        // Fewer rounds under qemu (.ci/mips); SOLOWG_DNS_FUZZ_ROUNDS for a longer run.
        let default_rounds = if cfg!(target_arch = "mips") {
            2_000
        } else {
            20_000
        };
        let rounds = std::env::var("SOLOWG_DNS_FUZZ_ROUNDS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default_rounds);
        for round in 0..rounds {
            let mut r = resolver(&[S1]);
            r.resolve("www.example.com", 1, t0);
            let tx = sent(&mut r);
            let mut m = if round % 4 == 0 {
                let mut b = vec![0u8; (rng.u32() % 600) as usize];
                rng.fill(&mut b);
                b
            } else {
                seeds[(rng.u32() as usize) % seeds.len()].clone()
            };
            let mutations = 1 + rng.u32() % 6;
            for _ in 0..mutations {
                if m.is_empty() {
                    break;
                }
                let pos = rng.u32() as usize % m.len();
                match rng.u32() % 6 {
                    0 => m[pos] ^= 1 << (rng.u32() % 8),
                    1 => m[pos] = rng.u32() as u8,
                    2 => m.truncate(pos),
                    3 => m.insert(pos, rng.u32() as u8),
                    4 => m[pos] = 0xc0, // a pointer where a label was
                    _ => {
                        if pos + 1 < m.len() {
                            m[pos + 1] = (rng.u32() % (pos as u32 + 8)) as u8;
                        }
                    }
                }
            }
            if m.len() >= 4 && round % 2 == 1 {
                // Make it match a lookup in flight, and look like a reply.
                let qtype = if rng.u32() % 2 == 0 {
                    TYPE_A
                } else {
                    TYPE_AAAA
                };
                m[0..2].copy_from_slice(&id_for(&tx, qtype).to_be_bytes());
                m[2] |= 0x80;
            }
            let _ = parse_reply(&m);
            if r.on_datagram(sa(S1), &m, t0) {
                accepted += 1;
            }
            r.on_timer(t0 + Duration::from_secs(60));
            r.on_timer(t0 + Duration::from_secs(600));
            if let Some((_, Ok(addrs))) = r.poll_result() {
                assert!(!addrs.is_empty());
            }
        }
        // The mutations leave many replies intact enough to match (about 1 in 60 rounds;
        // the bound scales with the rounds, fewer under qemu).
        assert!(accepted > rounds / 200, "{accepted} of {rounds}");
    }

    // ---- endpoint policy ----

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    /// Runs `e.poll` and answers its query with `result`.
    fn attempt(
        e: &mut EndpointResolver,
        dns: &mut Resolver,
        now: Instant,
        result: Result<Vec<SocketAddr>, Error>,
        jitter: u32,
    ) -> Option<SocketAddr> {
        let q = e.poll(now, dns).expect("a resolution was due");
        dns.cancel(q);
        e.on_result(q, &result, now, jitter)
    }

    fn failed_until(e: &EndpointResolver) -> Instant {
        match e.state() {
            EndpointState::Failed { until, .. } => *until,
            s => panic!("{s:?}"),
        }
    }

    #[test]
    fn endpoint_first_resolution_sets_address() {
        let t0 = Instant::now();
        let mut dns = resolver(&[S1]);
        let mut e = EndpointResolver::new("peer.example", 51820, Backoff::default());
        assert_eq!(e.state(), &EndpointState::Unresolved);
        assert_eq!(e.due(), Some(Due::Now));
        let q = e.poll(t0, &mut dns).unwrap();
        assert_eq!(e.due(), None);
        assert_eq!(e.poll(t0, &mut dns), None);
        // A stale query id changes nothing.
        assert_eq!(
            e.on_result(QueryId(q.0 + 99), &Ok(vec![sa("1.1.1.1:1")]), t0, 0),
            None
        );
        let addr = sa("192.0.2.1:51820");
        assert_eq!(e.on_result(q, &Ok(vec![addr]), t0, 0), Some(addr));
        assert_eq!(
            e.state(),
            &EndpointState::Resolved {
                addr,
                at: t0,
                refresh: None
            }
        );
        assert_eq!(e.due(), None);
        assert_eq!(e.address(), Some(addr));
    }

    #[test]
    fn endpoint_backoff_doubles_to_five_minutes_with_jitter() {
        let mut now = Instant::now();
        let mut dns = resolver(&[S1]);
        let mut e = EndpointResolver::new("peer.example", 1, Backoff::default());
        let mut waits = Vec::new();
        for _ in 0..12 {
            assert_eq!(attempt(&mut e, &mut dns, now, Err(Error::Timeout), 0), None);
            let until = failed_until(&e);
            assert_eq!(e.poll(until - Duration::from_millis(1), &mut dns), None);
            waits.push((until - now).as_secs());
            now = until;
        }
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300]);
        // Jitter takes off up to a quarter, never adds.
        for jitter in [1, 511, 1023, u32::MAX] {
            let mut e2 = EndpointResolver::new("peer.example", 1, Backoff::default());
            for _ in 0..20 {
                attempt(&mut e2, &mut dns, now, Err(Error::Timeout), jitter);
                let wait = failed_until(&e2) - now;
                now = failed_until(&e2);
                assert!(
                    wait <= secs(300) && wait >= Duration::from_millis(750),
                    "{wait:?}"
                );
            }
            assert!(failed_until(&e2) - now <= secs(300));
        }
        // Success resets the backoff.
        let addr = sa("192.0.2.1:1");
        assert_eq!(
            attempt(&mut e, &mut dns, now, Ok(vec![addr]), 0),
            Some(addr)
        );
        e.note_handshake_stalled(now);
        let refresh_at = match e.due() {
            Some(Due::At(t)) => t,
            d => panic!("{d:?}"),
        };
        attempt(&mut e, &mut dns, refresh_at, Err(Error::Timeout), 0);
        assert_eq!(failed_until(&e) - refresh_at, secs(1));
    }

    #[test]
    fn stall_triggers_reresolution_at_most_every_30_s() {
        let t0 = Instant::now();
        let mut dns = resolver(&[S1]);
        let mut e = EndpointResolver::new("ddns.example", 1, Backoff::default());
        let old = sa("192.0.2.1:1");
        let new = sa("192.0.2.2:1");
        assert_eq!(attempt(&mut e, &mut dns, t0, Ok(vec![old]), 0), Some(old));
        // Stalled 10 s after the first resolution started: held back until t0 + 30 s.
        e.note_handshake_stalled(t0 + secs(10));
        assert_eq!(e.due(), Some(Due::At(t0 + secs(30))));
        assert_eq!(e.poll(t0 + secs(29), &mut dns), None);
        // Repeated stall notes do not push it further out.
        e.note_handshake_stalled(t0 + secs(20));
        assert_eq!(e.due(), Some(Due::At(t0 + secs(30))));
        assert_eq!(
            attempt(&mut e, &mut dns, t0 + secs(30), Ok(vec![new]), 0),
            Some(new)
        );
        // Long after the last start: due at once.
        e.note_handshake_stalled(t0 + secs(500));
        assert_eq!(e.due(), Some(Due::At(t0 + secs(500))));
        // While resolving, stalls are ignored.
        let q = e.poll(t0 + secs(500), &mut dns).unwrap();
        e.note_handshake_stalled(t0 + secs(501));
        assert!(matches!(e.state(), EndpointState::Resolving { query, .. } if *query == q));
        // A failed re-resolution keeps the address and retries with backoff; a completed
        // handshake ends the retries.
        assert_eq!(
            e.on_result(q, &Err(Error::Timeout), t0 + secs(501), 0),
            None
        );
        assert_eq!(e.address(), Some(new));
        assert_eq!(failed_until(&e), t0 + secs(502));
        e.note_handshake_stalled(t0 + secs(501)); // backoff decides while failing
        assert_eq!(failed_until(&e), t0 + secs(502));
        e.note_handshake_completed(t0 + secs(501));
        assert!(
            matches!(e.state(), EndpointState::Resolved { addr, refresh: None, .. } if *addr == new)
        );
        assert_eq!(e.due(), None);
    }

    #[test]
    fn handshake_completion_cancels_pending_refresh() {
        let t0 = Instant::now();
        let mut dns = resolver(&[S1]);
        let mut e = EndpointResolver::new("ddns.example", 1, Backoff::default());
        attempt(&mut e, &mut dns, t0, Ok(vec![sa("192.0.2.1:1")]), 0);
        e.note_handshake_stalled(t0 + secs(5));
        e.note_handshake_completed(t0 + secs(6));
        assert_eq!(e.due(), None);
        // Without a known address a failure keeps retrying even after a handshake (which
        // then came from a roaming peer).
        let mut e = EndpointResolver::new("ddns.example", 1, Backoff::default());
        attempt(&mut e, &mut dns, t0, Err(Error::NxDomain), 0);
        e.note_handshake_completed(t0);
        assert_eq!(e.due(), Some(Due::At(t0 + secs(1))));
    }

    #[test]
    fn endpoints_route_results_to_peers() {
        let t0 = Instant::now();
        let mut dns = resolver(&[S1]);
        let mut eps: Endpoints<u32> = Endpoints::new(Rng::from_seed([1; 32]));
        eps.insert(
            1,
            EndpointResolver::new("one.example", 11, Backoff::default()),
            &mut dns,
        );
        eps.insert(
            2,
            EndpointResolver::new("192.0.2.2", 22, Backoff::default()),
            &mut dns,
        );
        eps.insert(
            3,
            EndpointResolver::new("three.example", 33, Backoff::default()),
            &mut dns,
        );
        assert_eq!(eps.next_deadline(t0), Some(t0));
        eps.poll(t0, &mut dns);
        assert_eq!(eps.next_deadline(t0), None);
        let tx = sent(&mut dns);
        assert_eq!(tx.len(), 4);
        // Peer 3 goes away: its query is cancelled.
        eps.remove(3, &mut dns);
        let m = a_reply(id_for(&tx[..2], TYPE_A), "one.example", [192, 0, 2, 1]);
        assert!(dns.on_datagram(sa(S1), &m, t0));
        while let Some((q, res)) = dns.poll_result() {
            assert!(eps.on_result(q, &res, t0));
        }
        let mut actions = Vec::new();
        while let Some(a) = eps.poll_action() {
            actions.push(a);
        }
        actions.sort_by_key(|a| a.peer);
        assert_eq!(
            actions,
            [
                SetEndpoint {
                    peer: 1,
                    addr: sa("192.0.2.1:11")
                },
                SetEndpoint {
                    peer: 2,
                    addr: sa("192.0.2.2:22")
                }
            ]
        );
        assert!(dns.is_idle());
        assert!(eps.get(3).is_none());
        eps.note_handshake_stalled(1, t0 + secs(100));
        assert_eq!(eps.next_deadline(t0 + secs(100)), Some(t0 + secs(100)));
    }

    #[test]
    fn hosts_file_names_answer_before_dns() {
        let hosts = parse_hosts(
            "# c\n127.0.0.1 localhost\n10.1.2.3  Peer.Example  alias # x\n::1 v6only\nbad line\n",
        );
        let mut r = Resolver::new(
            vec!["192.0.2.53:53".parse().unwrap()],
            Rng::from_seed([7; 32]),
        );
        r.set_hosts(hosts);
        let now = Instant::now();
        let q = r.resolve("peer.example.", 51820, now);
        assert_eq!(
            r.poll_result(),
            Some((q, Ok(vec!["10.1.2.3:51820".parse().unwrap()])))
        );
        let q = r.resolve("v6only", 1, now);
        assert_eq!(
            r.poll_result(),
            Some((q, Ok(vec!["[::1]:1".parse().unwrap()])))
        );
        assert!(
            r.poll_transmit().is_none(),
            "no DNS query for a static name"
        );
        r.resolve("other.example", 1, now);
        assert!(r.poll_transmit().is_some(), "other names still go to DNS");
    }
}
