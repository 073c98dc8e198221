//! A ubus object provider: `UbusConn` is the sans-IO protocol (bytes in, bytes and events
//! out), `UbusClient` the non-blocking unix-socket shell for our epoll loop.
//!
//! Wire format (OpenWrt `ubusmsg.h`): every message is an 8-byte header (version 0, type,
//! big-endian u16 sequence number, big-endian u32 peer id) followed by one blob attribute
//! (id 0) whose payload is a list of blob attributes (`ATTR_*`). The broker greets a new
//! client with HELLO; we then ADD_OBJECT with a signature (one blobmsg table per method,
//! argument name -> blobmsg type as INT32) and get DATA (object id) and STATUS back. A
//! method call arrives as INVOKE; the answer is DATA (optional) and STATUS with the same
//! sequence number, addressed to the caller's peer id. Events are INVOKEs of method `send`
//! on the broker's event object (id 1). Our own calls of other objects (netifd's
//! `notify_proto`) are a LOOKUP of the path (DATA with its id, then STATUS) followed by an
//! INVOKE addressed to that id, answered by STATUS.
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
