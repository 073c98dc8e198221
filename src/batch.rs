//! Batched UDP I/O: UDP GSO to send a run of equal-sized datagrams to one endpoint with one
//! `sendmsg`, and UDP GRO to receive a run of datagrams with one `recvmsg`. Both only cut
//! syscalls and per-packet kernel work; the callers fall back to one datagram per syscall
//! where the kernel or the NIC refuses (ath79's ag71xx has no checksum offload, so GSO there
//! fails with EIO and is switched off for good).
#![allow(unsafe_code)] // sendmsg/recvmsg with control messages have no safe std API

use socket2::SockAddr;
use std::io;
use std::mem::{size_of, zeroed, MaybeUninit};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

const UDP_SEGMENT: libc::c_int = 103;
const UDP_GRO: libc::c_int = 104;
/// The kernel's UDP_MAX_SEGMENTS.
pub const MAX_SEGMENTS: usize = 64;
/// A GSO send is one UDP datagram before segmentation: its payload must fit in 16 bits.
pub const MAX_GSO_BYTES: usize = 65507;

/// Room for one cmsg carrying an int (also fits a u16).
const CMSG_BUF: usize = 32;

#[repr(C, align(8))]
struct CmsgBuf([u8; CMSG_BUF]);

pub fn enable_gro(sock: &UdpSocket) -> bool {
    let one: libc::c_int = 1;
    // SAFETY: valid fd, option value points to a live c_int of the given size.
    unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_UDP,
            UDP_GRO,
            &one as *const libc::c_int as *const libc::c_void,
            size_of::<libc::c_int>() as libc::socklen_t,
        ) == 0
    }
}

/// Sends `segs` (each `seg_size` bytes except possibly the last, which may be shorter) to
/// `to`. More than one segment goes out as one GSO datagram train.
pub fn send_segments(
    sock: &UdpSocket,
    to: SocketAddr,
    segs: &[&[u8]],
    seg_size: usize,
) -> io::Result<()> {
    let n = segs.len().min(MAX_SEGMENTS);
    // SAFETY: iovec is plain data; zeroed is valid.
    let mut iov: [libc::iovec; MAX_SEGMENTS] = unsafe { zeroed() };
    for (v, s) in iov.iter_mut().zip(&segs[..n]) {
        v.iov_base = s.as_ptr() as *mut libc::c_void;
        v.iov_len = s.len();
    }
    let addr = SockAddr::from(to);
    let mut cbuf = CmsgBuf([0; CMSG_BUF]);
    // SAFETY: msghdr is plain data; zeroed is valid before filling it.
    let mut msg: libc::msghdr = unsafe { zeroed() };
    msg.msg_name = addr.as_ptr() as *mut libc::c_void;
    msg.msg_namelen = addr.len();
    msg.msg_iov = iov.as_mut_ptr();
    msg.msg_iovlen = n as _;
    if n > 1 {
        msg.msg_control = cbuf.0.as_mut_ptr() as *mut libc::c_void;
        // SAFETY: CMSG_SPACE is a pure size computation.
        msg.msg_controllen = unsafe { libc::CMSG_SPACE(size_of::<u16>() as u32) } as _;
        // SAFETY: msg_control points to an aligned buffer at least CMSG_SPACE(2) long, so the
        // first header and its data lie inside it.
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&msg);
            (*c).cmsg_level = libc::SOL_UDP;
            (*c).cmsg_type = UDP_SEGMENT;
            (*c).cmsg_len = libc::CMSG_LEN(size_of::<u16>() as u32) as _;
            std::ptr::write_unaligned(libc::CMSG_DATA(c) as *mut u16, seg_size as u16);
        }
    }
    loop {
        // SAFETY: every pointer in msg refers to memory that outlives the call.
        let r = unsafe { libc::sendmsg(sock.as_raw_fd(), &msg, libc::MSG_DONTWAIT) };
        if r >= 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Receives into `buf`; returns (bytes, source, segment size). With GRO the bytes may hold
/// several datagrams of `segment size` each (the last may be shorter).
pub fn recv_gro(sock: &UdpSocket, buf: &mut [u8]) -> io::Result<(usize, SocketAddr, usize)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr() as *mut libc::c_void,
        iov_len: buf.len(),
    };
    let mut name = MaybeUninit::<libc::sockaddr_storage>::zeroed();
    let mut cbuf = CmsgBuf([0; CMSG_BUF]);
    // SAFETY: msghdr is plain data; zeroed is valid before filling it.
    let mut msg: libc::msghdr = unsafe { zeroed() };
    msg.msg_name = name.as_mut_ptr() as *mut libc::c_void;
    msg.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.0.as_mut_ptr() as *mut libc::c_void;
    msg.msg_controllen = CMSG_BUF as _;
    let n = loop {
        // SAFETY: all pointers in msg refer to live buffers of the stated sizes.
        let r = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT) };
        if r >= 0 {
            break r as usize;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    };
    let mut seg = n;
    // SAFETY: the kernel filled msg_control/msg_controllen; the CMSG_* walkers stay within it.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_UDP && (*c).cmsg_type == UDP_GRO {
                let v = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::c_int);
                if v > 0 {
                    seg = v as usize;
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    // SAFETY: the kernel wrote msg_namelen bytes of a valid socket address into `name`.
    let from = unsafe { SockAddr::new(name.assume_init(), msg.msg_namelen) }
        .as_socket()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "not an IP source"))?;
    Ok((n, from, seg.max(1)))
}
