//! SIGTERM/SIGINT (stop), SIGUSR1 (log the counters) and SIGHUP/SIGUSR2 (ignored, logged)
//! as a readable fd (signalfd), so the event loop learns of them through the
//! same readiness wait as everything else and pays no syscall per iteration for them.
#![allow(unsafe_code)] // sigprocmask(2) and signalfd(2)

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd, FromRawFd, OwnedFd};

pub struct SignalFd {
    file: File,
}

/// Blocks SIGTERM, SIGINT, SIGUSR1, SIGHUP and SIGUSR2 for this thread and every thread started after it (call this
/// before anything spawns a thread), and returns an fd that becomes readable when one is
/// pending.
pub fn block_and_open() -> io::Result<SignalFd> {
    // SAFETY: sigset_t is plain data, initialised by sigemptyset before use.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: set is a valid sigset_t; the calls only read/write it and the thread's mask.
    let fd = unsafe {
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGUSR1);
        libc::sigaddset(&mut set, libc::SIGHUP);
        libc::sigaddset(&mut set, libc::SIGUSR2);
        if libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
            return Err(io::Error::last_os_error());
        }
        libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC)
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor that nothing else owns.
    let file = File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    Ok(SignalFd { file })
}

impl SignalFd {
    /// The pending signal's number, if one was pending (and consumes it).
    pub fn take(&self) -> Option<i32> {
        let mut info = [0u8; 128]; // sizeof(struct signalfd_siginfo)
        match (&self.file).read(&mut info) {
            // ssi_signo, the struct's first field (u32, native byte order).
            Ok(n) if n >= 4 => {
                Some(u32::from_ne_bytes([info[0], info[1], info[2], info[3]]) as i32)
            }
            _ => None,
        }
    }
}

impl AsFd for SignalFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }
}
