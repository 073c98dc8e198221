//! solowg: a WireGuard implementation in which one thread does all the work.
//!
//! The protocol core (`device`, `send`, `receive`, `noise`, `cookie`, `keypair`, `timers`,
//! `replay`, `allowedips`, `ratelimiter`, `wire`) is sans-IO: it takes bytes and `now` and
//! says what to send or write. `event_loop`, `tun`, `udp` and `uapi_server` are the I/O shell.
pub mod aead;
pub mod allowedips;
pub mod batch;
pub mod blobmsg;
pub mod chacha20;
pub mod config;
pub mod control;
pub mod cookie;
pub mod crypto;
pub mod device;
pub mod dns;
pub mod event_loop;
pub mod iface;
pub mod keypair;
pub mod log;
pub mod netlink;
pub mod noise;
pub mod offload;
pub mod peer;
pub mod poller;
pub mod poly1305;
pub mod ratelimiter;
pub mod receive;
pub mod replay;
pub mod send;
pub mod show;
pub mod signals;
pub mod timers;
pub mod tun;
pub mod uapi;
pub mod ubus;
pub mod uci;
pub mod udp;
pub mod wire;
