//! The daemon's system-call filter (seccomp-BPF), installed at the end of
//! `privileges::restrict`: from then on the process may make only the calls its own work
//! needs, and any other kills it. `SOLOWG_SECCOMP=log` has the kernel log calls off the list
//! instead, `SOLOWG_SECCOMP=off` skips the filter. What is on the list and why the daemon
//! installs it itself: docs/architecture.md, "System-call filter".

mod call_list;
mod program;
mod self_abort;
#[cfg(test)]
mod tests;

use call_list::checked_calls;
pub use call_list::{allowed, AUDIT_ARCH};
pub use program::program;
pub use self_abort::SelfAbort;

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
