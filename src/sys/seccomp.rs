//! The daemon's system-call filter (seccomp-BPF), installed at the end of
//! `privileges::restrict`, once the devices and sockets of the start exist. From then on the
//! process may make only the calls the daemon's own work needs: the data path, sockets made
//! later (TUN devices of interfaces brought up over ubus, UDP, netlink, packet, UAPI, ubus
//! and DNS sockets), the few files it reads and writes, epoll and signalfd reads, memory,
//! clocks, getrandom, stderr and exit. Any other call kills the process (procd restarts it):
//! there is no fork, exec, ptrace, mount, module, bpf or kexec call on the list, so a bug in
//! the data path that took over the thread finds nothing beyond what the daemon already does.
//!
//! The daemon installs it itself because procd's `seccomp` instance parameter does not reach
//! it: procd applies that file through ujail and seccomp-trace, with LD_PRELOAD of
//! libpreload-seccomp.so, which a static binary never loads.
//!
//! The list is numbers only, no arguments, so kernels with the seccomp action cache (x86_64,
//! arm, arm64) answer allowed calls without running the program. MIPS has no such cache and
//! runs it on every call, so the data path's calls come first in the list.
//!
//! `SOLOWG_SECCOMP=log` lets calls off the list through and has the kernel log them, through
//! audit (a kernel without audit support logs nothing), to find a call the list lacks;
//! `SOLOWG_SECCOMP=off` skips the filter.

use crate::log;
use std::io;

/// The environment variable that chooses the mode.
const ENV: &str = "SOLOWG_SECCOMP";

/// What becomes of a call that is not on the list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The process is killed (SIGSYS): the default.
    Kill,
    /// The kernel logs the call and lets it through.
    Log,
    /// No filter.
    Off,
}

/// The mode `SOLOWG_SECCOMP` asks for (unset: Kill); for another value, the error to log.
pub fn mode(value: Option<&str>) -> Result<Mode, String> {
    match value {
        None => Ok(Mode::Kill),
        Some("log") => Ok(Mode::Log),
        Some("off") => Ok(Mode::Off),
        Some(v) => Err(format!(
            "{ENV}={v:?} is neither 'log' nor 'off'; calls off the list kill the process"
        )),
    }
}

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
const BASE: libc::c_long = 4000;
#[cfg(target_arch = "arm")]
const BASE: libc::c_long = 0;
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
    v
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

/// What `abort()` needs to end the process by SIGABRT, as a panic (panic=abort) and a failed
/// allocation do: glibc blocks signals (rt_sigprocmask), asks gettid and getpid, and sends
/// SIGABRT with tgkill(pid, tid, SIGABRT); musl uses rt_sigprocmask and tkill(tid, SIGABRT).
/// Without them a panic ended in SIGSYS, which names the wrong cause in the exit status
/// (159, not 134) and the audit log. The signalling calls are allowed only with this
/// process's own ids and SIGABRT, so the filter still lets the daemon signal no other
/// process. The ids are fixed: the daemon never forks or starts a thread after the filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SelfAbort {
    pub pid: u32,
    pub tid: u32,
}

impl SelfAbort {
    /// This process's ids.
    #[allow(unsafe_code)] // gettid has no std API
    pub fn current() -> SelfAbort {
        // SAFETY: getpid and gettid take no arguments and cannot fail.
        let (pid, tid) = unsafe { (libc::getpid(), libc::syscall(libc::SYS_gettid)) };
        SelfAbort {
            pid: pid as u32,
            tid: tid as u32,
        }
    }

    /// Calls allowed whatever their arguments: they touch only this thread.
    fn plain() -> [libc::c_long; 2] {
        [libc::SYS_rt_sigprocmask, libc::SYS_gettid]
    }

    /// (call, [(argument, value)]): allowed when every argument has its value.
    fn checked(&self) -> [Checked; 2] {
        let abrt = libc::SIGABRT as u32;
        [
            (libc::SYS_tgkill, vec![(0, self.pid), (2, abrt)]),
            (libc::SYS_tkill, vec![(0, self.tid), (1, abrt)]),
        ]
    }
}

/// A call allowed only when each listed argument (by index) has its value.
type Checked = (libc::c_long, Vec<(usize, u32)>);

/// Calls allowed with these arguments only, on every ABI.
///
/// musl's allocator (mallocng) takes its metadata pages from brk and, where brk fails (a
/// full or randomised break, a tight address-space limit), maps them PROT_NONE and opens
/// them one at a time with mprotect(PROT_READ|PROT_WRITE): without that call a failed brk
/// would kill the daemon where it should go on from mmap. Never with PROT_EXEC, so no
/// memory becomes executable.
fn checked_calls() -> Vec<Checked> {
    let rw = (libc::PROT_READ | libc::PROT_WRITE) as u32;
    vec![(libc::SYS_mprotect, vec![(2, rw)])]
}

/// The offset of the low 32 bits of system-call argument `i` in `seccomp_data` (the kernel
/// reads these arguments as `int`, so the low word is what it acts on).
fn arg_low(i: usize) -> u32 {
    let at = std::mem::offset_of!(libc::seccomp_data, args) + 8 * i;
    (if cfg!(target_endian = "big") {
        at + 4
    } else {
        at
    }) as u32
}

/// The classic BPF program: a call of another ABI is killed, a listed call allowed, with
/// `abort` the calls of an abort of this process (see [`SelfAbort`]), any other given
/// `default`. Linear: one compare per listed call.
pub fn program(
    arch: u32,
    allowed: &[libc::c_long],
    abort: Option<SelfAbort>,
    default: u32,
) -> Vec<libc::sock_filter> {
    let op = |code: u32, jt: u8, jf: u8, k: u32| libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    };
    let load = |offset: u32| op(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0, 0, offset);
    let ret = |k: u32| op(libc::BPF_RET | libc::BPF_K, 0, 0, k);
    let jeq = libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K;
    let nr_at = std::mem::offset_of!(libc::seccomp_data, nr) as u32;
    // Plain calls first; each jumps to ALLOW at the end. `None` stands for ALLOW,
    // `Some(DENY)` for the default's RET, fixed up below.
    let mut plain: Vec<libc::c_long> = allowed.to_vec();
    let mut checked = checked_calls();
    if let Some(a) = abort {
        plain.extend(SelfAbort::plain());
        checked.extend(a.checked());
    }
    assert!(
        plain.len() + 8 * checked.len() < usize::from(u8::MAX),
        "a jump over the list must fit in 8 bits"
    );
    const ALLOW: usize = usize::MAX;
    const DENY: usize = usize::MAX - 1;
    // (instruction, true target, false target); targets are ALLOW, DENY or an index.
    let mut p: Vec<(libc::sock_filter, usize, usize)> = Vec::new();
    let mut push = |i: libc::sock_filter, t: usize, f: usize| p.push((i, t, f));
    push(
        load(std::mem::offset_of!(libc::seccomp_data, arch) as u32),
        0,
        0,
    );
    push(op(jeq, 1, 0, arch), 0, 0);
    push(ret(libc::SECCOMP_RET_KILL_PROCESS), 0, 0);
    push(load(nr_at), 0, 0);
    let mut at = 4;
    for &nr in &plain {
        push(op(jeq, 0, 0, nr as u32), ALLOW, at + 1);
        at += 1;
    }
    for (nr, conds) in checked {
        // The accumulator may hold an argument after a block: load the number again.
        let block = 2 + 2 * conds.len();
        push(load(nr_at), 0, 0);
        push(op(jeq, 0, 0, nr as u32), at + 2, at + block);
        at += 2;
        for (k, &(arg, value)) in conds.iter().enumerate() {
            let last = k + 1 == conds.len();
            push(load(arg_low(arg)), 0, 0);
            push(
                op(jeq, 0, 0, value),
                if last { ALLOW } else { at + 2 },
                DENY,
            );
            at += 2;
        }
    }
    let deny = p.len();
    let allow = deny + 1;
    let mut out: Vec<libc::sock_filter> = p
        .into_iter()
        .enumerate()
        .map(|(pc, (mut i, t, f))| {
            if u32::from(i.code) == jeq && pc > 1 {
                let rel = |target: usize| {
                    let target = match target {
                        ALLOW => allow,
                        DENY => deny,
                        n => n,
                    };
                    u8::try_from(target - pc - 1).expect("a short forward jump")
                };
                i.jt = rel(t);
                i.jf = rel(f);
            }
            i
        })
        .collect();
    out.push(ret(default));
    out.push(ret(libc::SECCOMP_RET_ALLOW));
    out
}

/// Puts the filter on this process; no_new_privs must be set (unprivileged callers need it).
#[allow(unsafe_code)] // prctl(2) has no std API
fn apply(prog: &[libc::sock_filter]) -> io::Result<()> {
    let fprog = libc::sock_fprog {
        len: prog.len() as u16,
        filter: prog.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: fprog points at `prog`, which outlives the call; the kernel copies the program.
    let r = unsafe {
        libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER as libc::c_ulong,
            &fprog as *const libc::sock_fprog,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// False where the kernel has no seccomp at all (CONFIG_SECCOMP off: EINVAL).
#[allow(unsafe_code)] // prctl(2) has no std API
fn kernel_has_seccomp() -> bool {
    // SAFETY: prctl with integer arguments only; it reads this process's mode.
    unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) >= 0 }
}

/// Installs the filter in the mode `SOLOWG_SECCOMP` asks for. What fails is logged and the
/// daemon goes on without the filter, as `restrict` does with what the kernel refuses.
pub fn install() {
    let value = std::env::var_os(ENV);
    let value = value.as_ref().map(|v| v.to_str().unwrap_or("(not UTF-8)"));
    let m = mode(value).unwrap_or_else(|e| {
        log::error(format_args!("{e}"));
        Mode::Kill
    });
    if m == Mode::Off {
        log::info(format_args!("no system-call filter ({ENV}=off)"));
        return;
    }
    let Some(arch) = AUDIT_ARCH else {
        log::info(format_args!(
            "no system-call filter: none is made for this architecture"
        ));
        return;
    };
    let list = allowed();
    let default = match m {
        Mode::Log => libc::SECCOMP_RET_LOG,
        _ => libc::SECCOMP_RET_KILL_PROCESS,
    };
    if m == Mode::Kill {
        // A backtrace reads files and the working directory, which the list does not allow:
        // with one asked for, a panic would end in SIGSYS instead of printing it.
        for var in ["RUST_BACKTRACE", "RUST_LIB_BACKTRACE"] {
            if std::env::var_os(var).is_some() {
                log::info(format_args!(
                    "{var} ignored: no backtraces under the system-call filter ({ENV}=log allows them)"
                ));
                std::env::remove_var(var);
            }
        }
    }
    if m == Mode::Log {
        // The numbers the kernel's audit records give, to compare a logged call with; also
        // what tests/mips-user/syscalls.sh compares a traced run against.
        let mut nrs: Vec<libc::c_long> = list.clone();
        nrs.extend(SelfAbort::plain());
        nrs.extend(checked_calls().iter().map(|c| c.0));
        let shown: Vec<String> = nrs.iter().map(|n| n.to_string()).collect();
        log::verbose(format_args!(
            "system-call filter list: {} (tgkill, tkill and mprotect with checked arguments)",
            shown.join(" ")
        ));
    }
    let abort = SelfAbort::current();
    if let Err(e) = apply(&program(arch, &list, Some(abort), default)) {
        if kernel_has_seccomp() {
            log::error(format_args!("cannot install the system-call filter: {e}"));
        } else {
            // OpenWrt builds small-flash images without it: nothing to fix there.
            log::info(format_args!(
                "no system-call filter: this kernel is built without seccomp"
            ));
        }
        return;
    }
    match m {
        Mode::Log => log::info(format_args!(
            "system-call filter on, log mode: {} calls allowed, the kernel logs the others",
            list.len()
        )),
        _ => log::verbose(format_args!(
            "system-call filter on: {} calls allowed, any other kills the process",
            list.len()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `prog` on one call as the kernel would (only the instructions `program` emits).
    fn run(prog: &[libc::sock_filter], arch: u32, nr: libc::c_long) -> u32 {
        run_args(prog, arch, nr, [0; 6])
    }

    /// `run` with the call's arguments (their low words).
    fn run_args(prog: &[libc::sock_filter], arch: u32, nr: libc::c_long, args: [u32; 6]) -> u32 {
        let mut pc = 0;
        let mut acc = 0u32;
        loop {
            let i = prog[pc];
            pc += 1;
            match u32::from(i.code) {
                c if c == libc::BPF_LD | libc::BPF_W | libc::BPF_ABS => {
                    acc = match i.k {
                        k if k as usize == std::mem::offset_of!(libc::seccomp_data, nr) => {
                            nr as u32
                        }
                        k if k as usize == std::mem::offset_of!(libc::seccomp_data, arch) => arch,
                        k => match (0..6).find(|&a| arg_low(a) == k) {
                            Some(a) => args[a],
                            None => panic!("load of offset {k}"),
                        },
                    }
                }
                c if c == libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K => {
                    pc += usize::from(if acc == i.k { i.jt } else { i.jf });
                }
                c if c == libc::BPF_RET | libc::BPF_K => return i.k,
                c => panic!("opcode {c:#x}"),
            }
        }
    }

    /// Ids no test process has, patched in a forked child (see `in_child`).
    const PLACEHOLDER: SelfAbort = SelfAbort {
        pid: 0x7fff_fff1,
        tid: 0x7fff_fff2,
    };

    fn ours() -> Option<(u32, Vec<libc::sock_filter>)> {
        let arch = AUDIT_ARCH?;
        Some((
            arch,
            program(
                arch,
                &allowed(),
                Some(PLACEHOLDER),
                libc::SECCOMP_RET_KILL_PROCESS,
            ),
        ))
    }

    #[test]
    fn the_environment_chooses_the_mode() {
        assert_eq!(mode(None), Ok(Mode::Kill));
        assert_eq!(mode(Some("log")), Ok(Mode::Log));
        assert_eq!(mode(Some("off")), Ok(Mode::Off));
        for bad in ["", "kill", "LOG", "0", "off "] {
            assert!(mode(Some(bad)).is_err(), "{bad:?}");
        }
    }

    /// What the kernel checks when it loads a program, and that it ends in a return.
    #[test]
    fn the_program_is_well_formed() {
        let Some((_, prog)) = ours() else { return };
        assert!(prog.len() < 4096, "BPF_MAXINSNS");
        for (pc, i) in prog.iter().enumerate() {
            let code = u32::from(i.code);
            if code & 0x07 == libc::BPF_JMP {
                assert_eq!(code, libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K, "at {pc}");
                for off in [i.jt, i.jf] {
                    assert!(pc + 1 + usize::from(off) < prog.len(), "jump out at {pc}");
                }
            }
            if code & 0x07 == libc::BPF_LD {
                assert!(i.k % 4 == 0 && (i.k as usize) < std::mem::size_of::<libc::seccomp_data>());
            }
        }
        let last = prog.last().unwrap();
        assert_eq!(u32::from(last.code), libc::BPF_RET | libc::BPF_K);
    }

    #[test]
    fn the_program_allows_the_list_and_nothing_else() {
        let Some((arch, prog)) = ours() else { return };
        let mut list = allowed();
        list.extend(SelfAbort::plain());
        for &nr in &list {
            assert_eq!(run(&prog, arch, nr), libc::SECCOMP_RET_ALLOW, "call {nr}");
            // Another ABI's call of the same number is killed.
            assert_eq!(
                run(&prog, arch ^ 0x4000_0000, nr),
                libc::SECCOMP_RET_KILL_PROCESS
            );
        }
        // Every other number around the ABI's, and one with x32's bit (x86_64 shares its
        // AUDIT_ARCH with x32).
        let (lo, hi) = (
            list.iter().min().unwrap() - 100,
            list.iter().max().unwrap() + 600,
        );
        for nr in (lo..hi).chain([-1, 0x4000_0000 | list[0]]) {
            if !list.contains(&nr) {
                assert_eq!(run(&prog, arch, nr), libc::SECCOMP_RET_KILL_PROCESS, "{nr}");
            }
        }
        let logging = program(arch, &list, None, libc::SECCOMP_RET_LOG);
        assert_eq!(
            run(&logging, arch, libc::SYS_getppid),
            libc::SECCOMP_RET_LOG
        );
        assert_eq!(run(&logging, arch, libc::SYS_read), libc::SECCOMP_RET_ALLOW);
    }

    /// An abort of this process passes; a signal to another process, or another signal, is
    /// killed as any call off the list.
    #[test]
    fn only_an_abort_of_this_process_may_signal() {
        let Some((arch, prog)) = ours() else { return };
        let SelfAbort { pid, tid } = PLACEHOLDER;
        let abrt = libc::SIGABRT as u32;
        let allow = libc::SECCOMP_RET_ALLOW;
        let kill = libc::SECCOMP_RET_KILL_PROCESS;
        let tg = |a: [u32; 3]| run_args(&prog, arch, libc::SYS_tgkill, [a[0], a[1], a[2], 0, 0, 0]);
        let t = |a: [u32; 2]| run_args(&prog, arch, libc::SYS_tkill, [a[0], a[1], 0, 0, 0, 0]);
        assert_eq!(tg([pid, tid, abrt]), allow);
        assert_eq!(tg([pid, 12345, abrt]), allow); // the thread is the kernel's to check
        assert_eq!(tg([1, tid, abrt]), kill);
        assert_eq!(tg([pid, tid, libc::SIGKILL as u32]), kill);
        assert_eq!(tg([pid, tid, libc::SIGTERM as u32]), kill);
        assert_eq!(t([tid, abrt]), allow);
        assert_eq!(t([1, abrt]), kill);
        assert_eq!(t([tid, libc::SIGUSR1 as u32]), kill);
        for nr in [libc::SYS_rt_sigprocmask, libc::SYS_gettid] {
            assert_eq!(run(&prog, arch, nr), allow);
        }
        assert_eq!(run(&prog, arch, libc::SYS_kill), kill);
        assert_eq!(run(&prog, arch, libc::SYS_rt_sigaction), kill);
        // Without `abort`, none of them.
        let bare = program(arch, &allowed(), None, kill);
        for nr in [libc::SYS_tgkill, libc::SYS_tkill, libc::SYS_rt_sigprocmask] {
            assert_eq!(run_args(&bare, arch, nr, [pid, tid, abrt, 0, 0, 0]), kill);
        }
    }

    #[cfg(any(
        all(target_arch = "x86_64", target_pointer_width = "64"),
        all(target_arch = "aarch64", target_pointer_width = "64"),
        target_arch = "arm",
        target_arch = "mips"
    ))]
    #[test]
    fn the_list_has_no_duplicates_and_none_of_the_dangerous_calls() {
        let list = allowed();
        let mut sorted = list.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), list.len(), "a call listed twice");
        let mut never = vec![
            libc::SYS_execve,
            libc::SYS_execveat,
            libc::SYS_clone,
            libc::SYS_clone3,
            libc::SYS_ptrace,
            libc::SYS_process_vm_readv,
            libc::SYS_process_vm_writev,
            libc::SYS_kexec_load,
            libc::SYS_mount,
            libc::SYS_bpf,
            libc::SYS_init_module,
            libc::SYS_finit_module,
            libc::SYS_setns,
            libc::SYS_unshare,
            libc::SYS_prctl,
            libc::SYS_seccomp,
            libc::SYS_capset,
            libc::SYS_setuid,
            libc::SYS_kill,
            libc::SYS_tgkill,
            libc::SYS_mprotect,
            libc::SYS_getppid,
        ];
        #[cfg(not(target_arch = "aarch64"))]
        never.push(libc::SYS_fork);
        #[cfg(any(target_arch = "x86_64", target_arch = "arm"))]
        never.push(libc::SYS_vfork);
        #[cfg(target_arch = "mips")]
        never.push(libc::SYS_socketcall);
        for nr in never {
            assert!(!list.contains(&nr), "call {nr} is allowed");
        }
    }

    #[cfg(any(target_arch = "arm", target_arch = "mips"))]
    #[test]
    fn the_time64_numbers_follow_the_shared_numbering() {
        // Linux numbers every call from 403 on alike on every ABI, after its base.
        assert_eq!(libc::SYS_pidfd_send_signal, BASE + 424);
        assert_eq!(libc::SYS_clone3, BASE + 435);
    }

    /// Runs `body` in a child process under `prog` and returns the child's wait status. The
    /// child makes raw system calls only: the test harness's other threads may hold locks.
    #[allow(unsafe_code)] // fork(2), prctl(2), _exit(2) and waitpid(2) for the test
    fn in_child(prog: &[libc::sock_filter], body: fn() -> i32) -> Option<libc::c_int> {
        const UNAVAILABLE: i32 = 120;
        const REFUSED: i32 = 121;
        let allow_all = [libc::sock_filter {
            code: (libc::BPF_RET | libc::BPF_K) as u16,
            jt: 0,
            jf: 0,
            k: libc::SECCOMP_RET_ALLOW,
        }];
        // The child's ids replace PLACEHOLDER's in its copy, made here: the child must not
        // allocate.
        let mut mine = prog.to_vec();
        // SAFETY: the child runs only async-signal-safe calls on memory set up before the
        // fork, and leaves through _exit.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork: {}", io::Error::last_os_error());
        if pid == 0 {
            // SAFETY: prctl on integers; `apply` hands the kernel a program that lives on.
            unsafe {
                libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
                // Where even a filter that allows everything is refused (qemu-user refuses
                // all of them), there is nothing to test.
                if apply(&allow_all).is_err() {
                    libc::_exit(UNAVAILABLE);
                }
                // The child is single-threaded: its tid is its pid.
                let me = libc::syscall(libc::SYS_getpid) as u32;
                for i in mine.iter_mut() {
                    if i.k == PLACEHOLDER.pid || i.k == PLACEHOLDER.tid {
                        i.k = me;
                    }
                }
                if apply(&mine).is_err() {
                    libc::_exit(REFUSED);
                }
                libc::_exit(body());
            }
        }
        let mut status = 0;
        // SAFETY: waits for our own child into a local.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        assert_eq!(r, pid, "waitpid: {}", io::Error::last_os_error());
        if libc::WIFEXITED(status) {
            match libc::WEXITSTATUS(status) {
                UNAVAILABLE => {
                    eprintln!("skipped: this kernel (or emulator) takes no seccomp filter");
                    return None;
                }
                REFUSED => panic!("the kernel refused the program"),
                _ => {}
            }
        }
        Some(status)
    }

    #[allow(unsafe_code)]
    fn allowed_then_exit() -> i32 {
        // SAFETY: getpid has no arguments.
        unsafe { libc::syscall(libc::SYS_getpid) };
        7
    }

    #[allow(unsafe_code)]
    fn allowed_then_forbidden() -> i32 {
        // SAFETY: getpid and getppid have no arguments.
        unsafe {
            libc::syscall(libc::SYS_getpid);
            libc::syscall(libc::SYS_getppid);
        }
        0
    }

    /// mprotect as musl's allocator makes it passes; one making memory executable is killed.
    #[test]
    fn mprotect_only_to_read_and_write() {
        let Some((arch, prog)) = ours() else { return };
        let m = |prot: i32| {
            run_args(
                &prog,
                arch,
                libc::SYS_mprotect,
                [0x1000, 4096, prot as u32, 0, 0, 0],
            )
        };
        assert_eq!(
            m(libc::PROT_READ | libc::PROT_WRITE),
            libc::SECCOMP_RET_ALLOW
        );
        for prot in [
            libc::PROT_READ | libc::PROT_WRITE | libc::PROT_EXEC,
            libc::PROT_READ | libc::PROT_EXEC,
            libc::PROT_EXEC,
        ] {
            assert_eq!(m(prot), libc::SECCOMP_RET_KILL_PROCESS, "prot {prot}");
        }
        let Some(status) = in_child(&prog, mprotect_rw) else {
            return;
        };
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "status {status:#x}"
        );
        let status = in_child(&prog, mprotect_exec).unwrap();
        assert!(
            libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGSYS,
            "status {status:#x}"
        );
    }

    #[allow(unsafe_code)]
    fn mprotect_with(prot: i32) -> i32 {
        // SAFETY: a fresh private anonymous page, only its protection changed.
        unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            if p == libc::MAP_FAILED {
                return 2;
            }
            i32::from(libc::mprotect(p, 4096, prot) != 0)
        }
    }

    fn mprotect_rw() -> i32 {
        mprotect_with(libc::PROT_READ | libc::PROT_WRITE)
    }

    fn mprotect_exec() -> i32 {
        mprotect_with(libc::PROT_READ | libc::PROT_EXEC)
    }

    fn aborts() -> i32 {
        // What panic=abort and a failed allocation end in.
        std::process::abort()
    }

    /// abort() ends the process by SIGABRT, not by the filter's SIGSYS.
    #[test]
    fn an_abort_under_the_filter_ends_in_sigabrt() {
        let Some((_, prog)) = ours() else { return };
        let Some(status) = in_child(&prog, aborts) else {
            return;
        };
        assert!(
            libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGABRT,
            "status {status:#x}: not ended by SIGABRT"
        );
    }

    #[test]
    fn listed_calls_pass_and_a_call_off_the_list_kills_the_process() {
        let Some((arch, prog)) = ours() else { return };
        let Some(status) = in_child(&prog, allowed_then_exit) else {
            return;
        };
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 7,
            "status {status:#x}"
        );
        let status = in_child(&prog, allowed_then_forbidden).unwrap();
        assert!(
            libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGSYS,
            "status {status:#x}: not killed by SIGSYS"
        );
        // Log mode lets it through.
        let logging = program(arch, &allowed(), None, libc::SECCOMP_RET_LOG);
        let status = in_child(&logging, allowed_then_forbidden).unwrap();
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "status {status:#x}"
        );
    }
}
