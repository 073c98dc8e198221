//! The daemon's engine: the one thread's event loop and everything it does with a packet
//! between the TUN device and the UDP sockets (`event_loop` and its `tx`, `rx`, `conns`,
//! `packet_paths` and `uapi_clients`), the interfaces it opens (`iface`) and its counters
//! (`stats`). It joins the protocol core (`proto`) to the OS wrappers (`sys`) and makes no
//! system call of its own except through them, so it needs no `unsafe`.
#![forbid(unsafe_code)]

pub mod event_loop;
pub mod iface;
pub mod stats;
