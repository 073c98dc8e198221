//! The I/O shell: the one thread's event loop and the operating system calls it needs (TUN,
//! UDP with GSO/GRO, netlink, signals, epoll). With `crypto`'s assembly glue, the only
//! layer allowed `unsafe`, each use next to a comment saying why std has no safe call for it.
//!
//! `main.rs` beside this file is the binary's C entry point (Cargo.toml's `[[bin]]`), not a
//! module of the library.

pub mod batch;
pub mod event_loop;
pub mod iface;
pub mod lock;
pub mod netlink;
pub mod offload;
pub mod packet_tx;
pub mod poller;
pub mod privileges;
pub mod route_query;
pub mod sched;
pub mod seccomp;
pub mod signals;
pub mod stats;
pub mod tun;
pub mod udp;

/// A new socket (close-on-exec is the caller's to ask for in `ty`), owned.
#[allow(unsafe_code)] // socket(2) has no std API for these families
pub(crate) fn socket(
    domain: libc::c_int,
    ty: libc::c_int,
    protocol: libc::c_int,
) -> std::io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: plain socket(2); ownership goes to OwnedFd right away.
    let fd = unsafe { libc::socket(domain, ty, protocol) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh socket nobody else owns.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}
