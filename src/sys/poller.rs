//! Readiness from epoll, edge-triggered: every source is registered once, and one
//! `epoll_wait` per loop turn is the whole cost of waiting. (A general-purpose async reactor
//! re-arms each source and its own timer and wake-up fds on every turn: five to seven extra
//! syscalls per wake-up, plus a helper thread; on a router that wakes for every few packets
//! that overhead is as large as the packet work.)
#![allow(unsafe_code)] // epoll_create1/epoll_ctl/epoll_wait

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::rc::Rc;
use std::time::Duration;

pub struct Poller {
    reg: Registry,
    events: Vec<libc::epoll_event>,
}

/// Adds and removes sources of a Poller; one per interface, all sharing the one epoll set
/// (single thread, so a plain Rc).
#[derive(Clone)]
pub struct Registry {
    epfd: Rc<OwnedFd>,
}

/// What a registration reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interest {
    Read,
    ReadWrite,
}

impl Poller {
    pub fn new() -> io::Result<Poller> {
        // SAFETY: plain epoll_create1; ownership goes to OwnedFd.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Poller {
            reg: Registry {
                // SAFETY: fd is fresh and owned by nobody else.
                epfd: Rc::new(unsafe { OwnedFd::from_raw_fd(fd) }),
            },
            events: Vec::with_capacity(64),
        })
    }

    pub fn registry(&self) -> Registry {
        self.reg.clone()
    }

    pub fn add(&self, fd: BorrowedFd, token: u64, interest: Interest) -> io::Result<()> {
        self.reg.add(fd, token, interest)
    }

    /// Waits up to `timeout` (None: forever) and calls `f(token)` for each ready source.
    pub fn wait(&mut self, timeout: Option<Duration>, mut f: impl FnMut(u64)) -> io::Result<()> {
        // Round up: waking a little late for a protocol timer is fine, spinning early is not.
        let ms = match timeout {
            None => -1,
            Some(t) => t.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as libc::c_int,
        };
        self.events.clear();
        // SAFETY: the buffer has capacity for `capacity()` events; the kernel writes at most
        // that many and we set the length to what it reports.
        let n = unsafe {
            libc::epoll_wait(
                self.reg.epfd.as_raw_fd(),
                self.events.as_mut_ptr(),
                self.events.capacity() as libc::c_int,
                ms,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted {
                Ok(())
            } else {
                Err(e)
            };
        }
        // SAFETY: the kernel initialised the first n entries.
        unsafe { self.events.set_len(n as usize) };
        for ev in &self.events {
            f(ev.u64);
        }
        Ok(())
    }
}

impl Registry {
    fn ctl(
        &self,
        op: libc::c_int,
        fd: BorrowedFd,
        token: u64,
        interest: Interest,
    ) -> io::Result<()> {
        let mut flags = libc::EPOLLIN | libc::EPOLLET | libc::EPOLLRDHUP;
        if interest == Interest::ReadWrite {
            flags |= libc::EPOLLOUT;
        }
        let mut ev = libc::epoll_event {
            events: flags as u32,
            u64: token,
        };
        // SAFETY: both fds are valid for the call; ev is a live epoll_event.
        if unsafe { libc::epoll_ctl(self.epfd.as_raw_fd(), op, fd.as_raw_fd(), &mut ev) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Registers `fd` edge-triggered: the owner must drain it until WouldBlock, or remember
    /// that it stopped early.
    pub fn add(&self, fd: BorrowedFd, token: u64, interest: Interest) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd, token, interest)
    }

    pub fn delete(&self, fd: BorrowedFd) {
        // SAFETY: valid fds; a null event is allowed for EPOLL_CTL_DEL.
        unsafe {
            libc::epoll_ctl(
                self.epfd.as_raw_fd(),
                libc::EPOLL_CTL_DEL,
                fd.as_raw_fd(),
                std::ptr::null_mut(),
            )
        };
    }
}
