//! Handing a child process its input without waiting for it: the loop's thread must not
//! block on a pipe, and a secret given to a program goes through its standard input, never
//! its arguments (/proc/<pid>/cmdline is readable by every user).
#![allow(unsafe_code)] // fcntl(2): std has no way to make a ChildStdin non-blocking

use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::process::ChildStdin;

/// Writes all of `data` to a child's standard input without blocking, then closes it (the
/// child reads end of file after `data`). Meant for input well under the pipe's buffer
/// (a page at least): what does not fit at once is an error, never a wait. The caller
/// wipes `data` if it holds a secret; the copy in the pipe goes when the child reads it.
pub fn feed(mut stdin: ChildStdin, data: &[u8]) -> io::Result<()> {
    let fd = stdin.as_raw_fd();
    // SAFETY: fd is the pipe end `stdin` owns and keeps open; F_GETFL/F_SETFL only read and
    // change its status flags.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    match stdin.write(data)? {
        n if n == data.len() => Ok(()),
        n => Err(io::Error::new(
            io::ErrorKind::WriteZero,
            format!("the pipe took {n} of {} bytes", data.len()),
        )),
    }
}
