//! The calls an abort of this process makes, allowed with this process's ids only.

use super::call_list::Checked;

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
    pub(super) fn plain() -> [libc::c_long; 2] {
        [libc::SYS_rt_sigprocmask, libc::SYS_gettid]
    }

    /// (call, [(argument, value)]): allowed when every argument has its value.
    pub(super) fn checked(&self) -> [Checked; 2] {
        let abrt = libc::SIGABRT as u32;
        [
            (libc::SYS_tgkill, vec![(0, self.pid), (2, abrt)]),
            (libc::SYS_tkill, vec![(0, self.tid), (1, abrt)]),
        ]
    }
}
