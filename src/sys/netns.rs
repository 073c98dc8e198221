//! Network namespaces without names, for `solowg bench`: each is held only by an fd of this
//! process and by the processes started in it, and every such process gets a parent-death
//! signal, so the kernel frees the namespace, with its links and sockets, however the
//! process that made it ends (a normal exit, Ctrl-C, SIGKILL). Nothing is mounted under
//! /var/run/netns and the `ip` tool is not needed (OpenWrt images do not ship it).
#![allow(unsafe_code)] // unshare(2), setns(2), prctl(2), getppid(2), geteuid(2), kill(2)

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};

/// The calling thread's network namespace (the thread's, not the process's: `setns` and
/// `unshare` move one thread).
fn current() -> io::Result<OwnedFd> {
    // std opens with O_CLOEXEC: children never inherit a namespace they were not put in.
    Ok(OwnedFd::from(File::open("/proc/thread-self/ns/net")?))
}

fn set(fd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: setns on an fd we hold open, with the type it must have; it moves only the
    // calling thread.
    if unsafe { libc::setns(fd.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Puts the calling thread back in `home`. If that fails the thread would go on working in
/// the wrong namespace, so the process stops.
fn go_home(home: &OwnedFd) {
    if let Err(e) = set(home.as_fd()) {
        crate::log::error(format_args!(
            "cannot return to the original network namespace: {e}"
        ));
        std::process::exit(1);
    }
}

/// A network namespace held by an fd; dropped, it lives on only while something else holds
/// it (the processes started in it).
pub struct NetNs {
    fd: OwnedFd,
}

impl NetNs {
    /// A new, empty network namespace (only a loopback, down). The calling thread is moved
    /// into it and straight back.
    pub fn create() -> io::Result<NetNs> {
        let home = current()?;
        // SAFETY: unshare with one flag; it moves only the calling thread into a new
        // network namespace (allowed in a threaded process for CLONE_NEWNET).
        if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let made = current();
        go_home(&home);
        Ok(NetNs { fd: made? })
    }

    /// Runs `f` with the calling thread in this namespace: sockets `f` creates stay in it.
    pub fn run<T>(&self, f: impl FnOnce() -> T) -> io::Result<T> {
        let home = current()?;
        set(self.fd.as_fd())?;
        let r = f();
        go_home(&home);
        Ok(r)
    }

    /// Starts `cmd` in this namespace, as [`spawn_tied`] does.
    pub fn spawn(&self, cmd: &mut Command, death_signal: i32) -> io::Result<Child> {
        tie(cmd, Some(self.fd.as_raw_fd()), death_signal);
        cmd.spawn()
    }
}

/// Has `cmd`'s child enter the network namespace `ns` (if given) and get `death_signal`
/// when the thread that started it ends, before it runs the program.
fn tie(cmd: &mut Command, ns: Option<RawFd>, death_signal: i32) {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs in the forked child before exec and makes only
    // async-signal-safe system calls on integers (setns on an fd the parent keeps open
    // until spawn returns, prctl, getppid); it allocates nothing and takes no lock.
    unsafe {
        cmd.pre_exec(move || {
            if let Some(ns) = ns {
                if libc::setns(ns, libc::CLONE_NEWNET) != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                death_signal as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            // The parent died between fork and prctl: no signal would ever come.
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        })
    };
}

/// Starts `cmd`; the child gets `death_signal` when the thread that started it ends, and
/// ends at once if that already happened. Call it from a thread that lives as long as the
/// child should (the kernel ties the signal to the thread, not the process).
pub fn spawn_tied(cmd: &mut Command, death_signal: i32) -> io::Result<Child> {
    tie(cmd, None, death_signal);
    cmd.spawn()
}

impl AsFd for NetNs {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// Whether this process runs with root's effective user id.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Sends SIGTERM to the child `child` (std's `Child::kill` sends SIGKILL, which leaves
/// no time to clean up). Errors when it has already been reaped.
pub fn terminate(child: &Child) -> io::Result<()> {
    let pid = libc::pid_t::try_from(child.id()).map_err(|_| io::Error::other("bad pid"))?;
    // SAFETY: kill on the pid of our own child, not yet reaped (`Child` holds it), so the
    // pid cannot belong to another process.
    if unsafe { libc::kill(pid, libc::SIGTERM) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inode(fd: BorrowedFd<'_>) -> u64 {
        use std::os::unix::fs::MetadataExt;
        File::from(fd.try_clone_to_owned().unwrap())
            .metadata()
            .unwrap()
            .ino()
    }

    #[test]
    fn a_new_namespace_is_not_ours_and_we_come_back() {
        if !is_root() {
            eprintln!("skipped: needs root (CLONE_NEWNET)");
            return;
        }
        let before = inode(current().unwrap().as_fd());
        let ns = NetNs::create().unwrap();
        assert_ne!(inode(ns.as_fd()), before);
        assert_eq!(inode(current().unwrap().as_fd()), before);
        let inside = ns.run(|| inode(current().unwrap().as_fd())).unwrap();
        assert_eq!(inside, inode(ns.as_fd()));
        assert_eq!(inode(current().unwrap().as_fd()), before);
    }
}
