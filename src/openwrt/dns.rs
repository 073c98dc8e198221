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
//!
//! One submodule per concept: `codec` (the message format), `resolver` (the stub resolver
//! and its resolv.conf and hosts inputs), `endpoint` (the per-peer policy) and `sockets`
//! (the OS side, the only one doing I/O). Their public items are re-exported here.

mod codec;
mod endpoint;
mod resolver;
mod sockets;
#[cfg(test)]
mod tests;

// What the daemon uses (control.rs).
pub use endpoint::{Backoff, EndpointResolver, Endpoints};
pub use resolver::{parse_hosts, Resolver};
pub use sockets::{system_servers, DnsSockets};

// The rest of the public items, for the tests and tools that open the layers (`internals`);
// without them these re-exports would be unused.
#[cfg(any(test, feature = "internals"))]
pub use endpoint::{Due, EndpointState, SetEndpoint};
#[cfg(any(test, feature = "internals"))]
pub use resolver::{
    default_servers, parse_resolv_conf, Config, Error, QueryId, DNS_PORT, MAX_QUERIES, MAX_SERVERS,
};
#[cfg(any(test, feature = "internals"))]
pub use sockets::{DRAIN_LIMIT, RESOLV_CONF_PATHS};
