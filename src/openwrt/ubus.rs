//! A ubus object provider: `UbusConn` is the sans-IO protocol (bytes in, bytes and events
//! out), `UbusClient` the non-blocking unix-socket shell for our epoll loop. The messages
//! exchanged: docs/architecture.md, "ubus".
//!
//! One file per role, their public items re-exported here: `wire` (the message format),
//! `conn` (the sans-IO protocol) and `client` (the socket shell, the only one doing I/O).

mod client;
mod conn;
#[cfg(test)]
mod tests;
mod wire;

pub use client::{socket_path, UbusClient};
pub use conn::{Event, Method, ObjectSpec, Token};
pub use wire::{status_text, ArgType, Status};
// The protocol without its shell, and the framing: for the fuzz target and the tests.
#[cfg(feature = "internals")]
pub use conn::{UbusConn, UbusError};
#[cfg(feature = "internals")]
pub use wire::put_frame;
