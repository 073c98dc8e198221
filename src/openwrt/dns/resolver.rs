//! The sans-IO stub resolver: queries, retransmissions, replies, and its inputs (name
//! servers from resolv.conf text, static names from hosts text). It reads no clock, file
//! or socket: the caller passes `now` and carries the datagrams.

use super::codec::{
    encode_name, encode_query, parse_reply, RCODE_NOERROR, RCODE_NXDOMAIN, TYPE_A, TYPE_AAAA,
};
use crate::crypto::Rng;
use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV6};
use std::time::{Duration, Instant};

/// DNS port for servers from resolv.conf.
pub const DNS_PORT: u16 = 53;
/// Name servers used at most (glibc reads three; a few more cost nothing).
pub const MAX_SERVERS: usize = 8;
/// Queries in flight at most; beyond that `resolve` fails at once with `Error::Busy`.
pub const MAX_QUERIES: usize = 1024;

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

/// The fallback when no file names a server.
pub fn default_servers() -> Vec<SocketAddr> {
    vec![SocketAddr::new(Ipv4Addr::LOCALHOST.into(), DNS_PORT)]
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

/// Sans-IO stub resolver. See the documentation of the `dns` module.
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
