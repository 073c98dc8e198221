//! The WireGuard protocol core, sans-IO: messages, handshake, sessions, timers, routing and
//! the configuration API's text format. Callers pass bytes and the time; the core returns
//! what to send or write and never touches a socket, a file or the clock itself.
#![forbid(unsafe_code)]

pub mod allowedips;
pub mod cookie;
pub mod device;
pub mod endpoint;
pub mod index_hasher;
pub mod keypair;
pub mod noise;
pub mod peer;
pub mod ratelimiter;
pub mod receive;
pub mod replay;
pub mod send;
pub mod staging;
pub mod timers;
pub mod uapi;
pub mod wire;
