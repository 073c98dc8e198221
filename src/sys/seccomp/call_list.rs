//! The calls the filter lets through, by number, for each ABI a list is made for.

/// The AUDIT_ARCH of the calls this build makes (linux/audit.h: the ELF machine, with
/// 0x8000_0000 for a 64-bit and 0x4000_0000 for a little-endian ABI); None where no list is
/// made. mips is o32 only: n32 and n64 have AUDIT_ARCHs (and numbers) of their own.
#[cfg(all(target_arch = "x86_64", target_pointer_width = "64"))]
pub const AUDIT_ARCH: Option<u32> = Some(0xC000_003E); // EM_X86_64
#[cfg(all(target_arch = "aarch64", target_pointer_width = "64"))]
pub const AUDIT_ARCH: Option<u32> = Some(0xC000_00B7); // EM_AARCH64
#[cfg(all(target_arch = "arm", target_endian = "little"))]
pub const AUDIT_ARCH: Option<u32> = Some(0x4000_0028); // EM_ARM
#[cfg(all(target_arch = "arm", target_endian = "big"))]
pub const AUDIT_ARCH: Option<u32> = Some(0x0000_0028);
#[cfg(all(target_arch = "mips", target_endian = "big"))]
pub const AUDIT_ARCH: Option<u32> = Some(0x0000_0008); // EM_MIPS
#[cfg(all(target_arch = "mips", target_endian = "little"))]
pub const AUDIT_ARCH: Option<u32> = Some(0x4000_0008);
#[cfg(not(any(
    all(target_arch = "x86_64", target_pointer_width = "64"),
    all(target_arch = "aarch64", target_pointer_width = "64"),
    target_arch = "arm",
    target_arch = "mips"
)))]
pub const AUDIT_ARCH: Option<u32> = None;

/// The 32-bit ABIs' calls with 64-bit times (Linux 5.1), which musl 1.2 makes first: their
/// numbers are shared by every 32-bit ABI after its base, and the libc crate lacks them.
#[cfg(target_arch = "mips")]
pub(super) const BASE: libc::c_long = 4000;
#[cfg(target_arch = "arm")]
pub(super) const BASE: libc::c_long = 0;
#[cfg(any(target_arch = "arm", target_arch = "mips"))]
const SYS_CLOCK_GETTIME64: libc::c_long = BASE + 403;
#[cfg(any(target_arch = "arm", target_arch = "mips"))]
const SYS_RECVMMSG_TIME64: libc::c_long = BASE + 417;

/// The calls allowed, most frequent first. Found by tracing what the daemon calls after
/// this point in the system tests (foreground and `--uci`, packet path, faults): on x86_64
/// with glibc and with musl, and the MIPS build under qemu-user; the MIPS kernel test runs
/// it enforced. musl's fallbacks for kernels without a newer call are listed with it.
#[cfg(any(
    all(target_arch = "x86_64", target_pointer_width = "64"),
    all(target_arch = "aarch64", target_pointer_width = "64"),
    target_arch = "arm",
    target_arch = "mips"
))]
pub fn allowed() -> Vec<libc::c_long> {
    let mut v = Vec::with_capacity(64);
    // The data path: UDP batches, TUN reads and writes (one packet: write), the loop's
    // wait (epoll_pwait from musl, epoll_wait from glibc).
    #[cfg(any(target_arch = "arm", target_arch = "mips"))]
    v.push(SYS_RECVMMSG_TIME64);
    v.extend_from_slice(&[
        libc::SYS_recvmmsg,
        libc::SYS_sendmsg,
        libc::SYS_readv,
        libc::SYS_writev,
        libc::SYS_write,
        libc::SYS_sendmmsg,
        libc::SYS_epoll_pwait,
    ]);
    #[cfg(not(target_arch = "aarch64"))]
    v.push(libc::SYS_epoll_wait);
    // The clock, read every turn: the vDSO answers it, except on some MIPS kernels and x86
    // clock sources (and under qemu-user).
    #[cfg(any(target_arch = "arm", target_arch = "mips"))]
    v.push(SYS_CLOCK_GETTIME64);
    v.push(libc::SYS_clock_gettime);
    // Control: UAPI and ubus streams, netlink, signalfd, DNS. Sockets are read and written
    // with recvfrom and sendto on every ABI (`sys::recv`, `sys::send`): glibc's recv() and
    // send() are system calls of their own on 32-bit ARM and MIPS o32.
    v.extend_from_slice(&[
        libc::SYS_recvfrom,
        libc::SYS_sendto,
        libc::SYS_read,
        libc::SYS_epoll_ctl,
        libc::SYS_accept4,
        libc::SYS_close,
        libc::SYS_ioctl, // TUN set-up, FIONBIO, interface index and MTU
    ]);
    rarer_calls(&mut v);
    v
}

/// The rest of [`allowed`]'s list, after the calls of every loop turn: sockets and devices,
/// files, memory, randomness and the end of the process.
#[cfg(any(
    all(target_arch = "x86_64", target_pointer_width = "64"),
    all(target_arch = "aarch64", target_pointer_width = "64"),
    target_arch = "arm",
    target_arch = "mips"
))]
fn rarer_calls(v: &mut Vec<libc::c_long>) {
    // Sockets and devices opened after the start: interfaces brought up later, UAPI and DNS
    // sockets, route queries, the packet socket.
    v.extend_from_slice(&[
        libc::SYS_socket,
        libc::SYS_bind,
        libc::SYS_connect,
        libc::SYS_listen,
        libc::SYS_getsockname,
        libc::SYS_getsockopt,
        libc::SYS_setsockopt,
    ]);
    #[cfg(any(target_arch = "arm", target_arch = "mips"))]
    v.push(libc::SYS_fcntl64);
    #[cfg(not(any(target_arch = "arm", target_arch = "mips")))]
    v.push(libc::SYS_fcntl);
    // Files: the configuration, /etc/hosts, resolv.conf, /proc/net/arp, /dev/net/tun, the
    // state file, the UAPI socket's directory, file and mode.
    v.extend_from_slice(&[libc::SYS_openat, libc::SYS_statx, libc::SYS_umask]);
    #[cfg(not(target_arch = "aarch64"))]
    v.extend_from_slice(&[
        libc::SYS_open,
        libc::SYS_mkdir,
        libc::SYS_unlink,
        libc::SYS_chmod,
    ]);
    #[cfg(target_arch = "aarch64")]
    v.extend_from_slice(&[libc::SYS_mkdirat, libc::SYS_unlinkat, libc::SYS_fchmodat]);
    // stat and fstat: statx on 32-bit musl (stat64 and fstat64 before Linux 4.11), the old
    // calls on 64-bit musl.
    #[cfg(any(target_arch = "arm", target_arch = "mips"))]
    v.extend_from_slice(&[libc::SYS_stat64, libc::SYS_fstat64]);
    #[cfg(target_arch = "x86_64")]
    v.extend_from_slice(&[libc::SYS_stat, libc::SYS_fstat]);
    #[cfg(target_arch = "aarch64")]
    v.extend_from_slice(&[libc::SYS_newfstatat, libc::SYS_fstat]);
    // Memory.
    v.extend_from_slice(&[
        libc::SYS_brk,
        libc::SYS_munmap,
        libc::SYS_mremap,
        libc::SYS_madvise,
    ]);
    #[cfg(any(target_arch = "arm", target_arch = "mips"))]
    v.push(libc::SYS_mmap2);
    #[cfg(not(any(target_arch = "arm", target_arch = "mips")))]
    v.push(libc::SYS_mmap);
    // Keys and randomness of new interfaces; the packet socket's IP ID; the scheduling
    // policy set right after this point (glibc asks the kernel, musl does not).
    v.extend_from_slice(&[
        libc::SYS_getrandom,
        libc::SYS_getpid,
        libc::SYS_sched_getscheduler,
        libc::SYS_sched_setscheduler,
    ]);
    // The end: exit_group, and exit, which musl's _Exit falls back to.
    v.extend_from_slice(&[libc::SYS_exit_group, libc::SYS_exit]);
}

/// No list where no filter is made (AUDIT_ARCH is None): the names differ by architecture.
#[cfg(not(any(
    all(target_arch = "x86_64", target_pointer_width = "64"),
    all(target_arch = "aarch64", target_pointer_width = "64"),
    target_arch = "arm",
    target_arch = "mips"
)))]
pub fn allowed() -> Vec<libc::c_long> {
    Vec::new()
}

/// A call allowed only when each listed argument (by index) has its value.
pub(super) type Checked = (libc::c_long, Vec<(usize, u32)>);

/// Calls allowed with these arguments only, on every ABI.
///
/// musl's allocator (mallocng) takes its metadata pages from brk and, where brk fails (a
/// full or randomised break, a tight address-space limit), maps them PROT_NONE and opens
/// them one at a time with mprotect(PROT_READ|PROT_WRITE): without that call a failed brk
/// would kill the daemon where it should go on from mmap. Never with PROT_EXEC, so no
/// memory becomes executable.
pub(super) fn checked_calls() -> Vec<Checked> {
    let rw = (libc::PROT_READ | libc::PROT_WRITE) as u32;
    vec![(libc::SYS_mprotect, vec![(2, rw)])]
}
