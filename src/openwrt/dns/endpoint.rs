//! The per-peer endpoint policy: when to resolve a peer's host name (at start, after
//! failures with backoff, when handshakes stall) and which address to set. Pure: every
//! input carries `now`.

use super::resolver::{Error, QueryId, Resolver};
use crate::crypto::Rng;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

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
        // Integer arithmetic: float code is kept out of the binary.
        let cut = base.saturating_mul(jitter % 1024) / 4096;
        base.saturating_sub(cut).max(Duration::from_millis(1))
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
