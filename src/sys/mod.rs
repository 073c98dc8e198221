//! The I/O shell: the one thread's event loop and the operating system calls it needs (TUN,
//! UDP with GSO/GRO, netlink, signals, epoll). With `crypto`'s assembly glue, the only
//! layer allowed `unsafe`, each use next to a comment saying why std has no safe call for it.
//!
//! `main.rs` beside this file is the binary's C entry point (Cargo.toml's `[[bin]]`), not a
//! module of the library.

pub mod batch;
pub mod child;
pub mod event_loop;
pub mod iface;
pub mod netlink;
pub mod offload;
pub mod packet_tx;
pub mod poller;
pub mod route_query;
pub mod sched;
pub mod signals;
pub mod stats;
pub mod tun;
pub mod udp;
