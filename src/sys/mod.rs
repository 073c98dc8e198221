//! The I/O shell: the one thread's event loop and the operating system calls it needs (TUN,
//! UDP with GSO/GRO, netlink, signals, epoll). With `crypto`'s assembly glue, the only
//! layer allowed `unsafe`, each use next to a comment saying why std has no safe call for it.

pub mod batch;
pub mod lock;
pub mod netlink;
pub mod netns;
pub mod offload;
pub mod packet_tx;
pub mod poller;
pub mod privileges;
pub mod route_query;
pub mod rtnl;
pub mod sched;
pub mod seccomp;
pub mod signals;
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

/// Runs `f` with the process's file-creation mask set to `mask`, then puts the old one back.
/// The daemon has one thread, so nothing else creates files meanwhile.
#[allow(unsafe_code)] // umask(2) has no std wrapper
pub fn with_umask<T>(mask: libc::mode_t, f: impl FnOnce() -> T) -> T {
    // SAFETY: umask only swaps the process's file-creation mask; it cannot fail.
    let old = unsafe { libc::umask(mask) };
    let r = f();
    // SAFETY: as above.
    unsafe { libc::umask(old) };
    r
}

/// Process helpers for the unit tests of layers that may not use `unsafe` themselves.
#[cfg(test)]
pub(crate) mod testing {
    /// Whether the test runs as root (effective uid 0).
    #[allow(unsafe_code)] // geteuid(2)
    pub fn is_root() -> bool {
        // SAFETY: reads this process's effective uid.
        unsafe { libc::geteuid() == 0 }
    }

    /// Runs `f` in a forked child under uid and gid `id` and returns the child's wait status;
    /// the child exits with what `f` returned, or 3 if it could not change its ids.
    #[allow(unsafe_code)] // fork(2), setresuid(2), _exit(2) and waitpid(2)
    pub fn status_in_child_as(id: libc::uid_t, f: impl FnOnce() -> i32) -> i32 {
        // SAFETY: the child runs `f` and leaves through _exit; the parent waits.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            // SAFETY: integer arguments only.
            let code = unsafe {
                if libc::setresgid(id, id, id) != 0 || libc::setresuid(id, id, id) != 0 {
                    libc::_exit(3);
                }
                f()
            };
            // SAFETY: ends the child at once.
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        // SAFETY: waits for our own child into a local.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        status
    }
}
