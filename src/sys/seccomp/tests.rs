//! The program run as the kernel would, the list's contents, and the filter on forked children.

#[cfg(any(target_arch = "arm", target_arch = "mips"))]
use super::call_list::BASE;
use super::program::arg_low;
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
                    k if k as usize == std::mem::offset_of!(libc::seccomp_data, nr) => nr as u32,
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
