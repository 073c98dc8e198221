//! An exclusive advisory lock on an open file or directory, held until the file is closed
//! (flock(2); std's `File::lock` is newer than the crate's minimum Rust).
#![allow(unsafe_code)]

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// Waits until no other open file description holds a lock on the same file.
pub fn exclusive(f: &File) -> io::Result<()> {
    loop {
        // SAFETY: flock on a descriptor `f` owns and keeps open; integer arguments only.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}
