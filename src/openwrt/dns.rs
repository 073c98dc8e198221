//! Resolving peer endpoints given as host names (UCI `endpoint_host`, e.g. a DDNS name)
//! without blocking the packet loop: no getaddrinfo, no helper thread. IPv4 addresses first.
//! The layers, the address preference and what is left out: docs/architecture.md, "DNS resolver".
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
