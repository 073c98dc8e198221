//! The names the `solowg` object is known by on the bus: its own, the other objects' methods
//! it calls and the events it sends (what its user's ubusd ACL must allow).

pub const OBJECT: &str = "solowg";

/// netifd's method the daemon calls (host routes of resolved endpoints).
pub const NOTIFY_PROTO: (&str, &str) = ("network.interface", "notify_proto");
/// The other objects' methods the daemon calls: what its user's ubusd ACL must grant.
#[cfg(feature = "internals")]
pub const CALLS: &[(&str, &str)] = &[NOTIFY_PROTO];
/// A peer's handshake completed.
pub const EVENT_HANDSHAKE: &str = "solowg.handshake";
/// A peer's handshakes stalled.
pub const EVENT_STALE: &str = "solowg.stale";
/// The events the daemon sends: what its user's ubusd ACL must let it send.
#[cfg(feature = "internals")]
pub const EVENTS: &[&str] = &[EVENT_HANDSHAKE, EVENT_STALE];
