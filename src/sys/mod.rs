//! The I/O shell: the one thread's event loop and the operating system calls it needs (TUN,
//! UDP with GSO/GRO, netlink, signals, epoll). With `crypto`'s assembly glue, the only
//! layer allowed `unsafe`, each use next to a comment saying why std has no safe call for it.

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

/// recv(2) made as recvfrom(2) without an address. glibc makes the `recv` system call for
/// recv() on 32-bit ARM and MIPS o32, `recvfrom` elsewhere, and musl always `recvfrom`: the
/// same call on every ABI and libc keeps the filter's list (`seccomp.rs`) one list. std's
/// `Read` for `UnixStream` and `UdpSocket::recv` call recv(), so the daemon's sockets are
/// read through this instead.
#[allow(unsafe_code)] // recvfrom(2) on a borrowed fd
pub fn recv(
    fd: std::os::fd::BorrowedFd<'_>,
    buf: &mut [u8],
    flags: libc::c_int,
) -> std::io::Result<usize> {
    use std::os::fd::AsRawFd;
    // SAFETY: buf is a live, writable buffer of the length passed; no address is asked for.
    let n = unsafe {
        libc::recvfrom(
            fd.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            flags,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    };
    usize::try_from(n).map_err(|_| std::io::Error::last_os_error())
}

/// send(2) made as sendto(2) without an address, for the reason [`recv`] gives (glibc's
/// send() is the `send` system call on 32-bit ARM and MIPS o32). MSG_NOSIGNAL as std sends.
#[allow(unsafe_code)] // sendto(2) on a borrowed fd
pub fn send(
    fd: std::os::fd::BorrowedFd<'_>,
    buf: &[u8],
    flags: libc::c_int,
) -> std::io::Result<usize> {
    use std::os::fd::AsRawFd;
    // SAFETY: buf is a live buffer of the length passed; no address is given.
    let n = unsafe {
        libc::sendto(
            fd.as_raw_fd(),
            buf.as_ptr().cast(),
            buf.len(),
            flags | libc::MSG_NOSIGNAL,
            std::ptr::null(),
            0,
        )
    };
    usize::try_from(n).map_err(|_| std::io::Error::last_os_error())
}
