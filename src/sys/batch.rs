//! Batched UDP I/O: UDP GSO to send a run of equal-sized datagrams to one endpoint with one
//! `sendmsg`, and `recvmmsg` with UDP GRO to receive several datagrams or runs of them with
//! one call. Both only cut
//! syscalls and per-packet kernel work; the callers fall back to one datagram per syscall
//! where the kernel or the NIC refuses (ath79's ag71xx has no checksum offload, so GSO there
//! fails with EIO and is switched off for good).
#![allow(unsafe_code)] // sendmsg/recvmsg with control messages have no safe std API

use crate::proto::wire::INDEX_TAG_MASK;
use socket2::SockAddr;
use std::io;
use std::mem::{size_of, zeroed};
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
/// `to`, or to where `sock` is connected (`None`). More than one segment goes out as one GSO
/// datagram train.
pub fn send_segments(
    sock: &UdpSocket,
    to: Option<SocketAddr>,
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
    let addr = to.map(SockAddr::from);
    let mut cbuf = CmsgBuf([0; CMSG_BUF]);
    // SAFETY: msghdr is plain data; zeroed is valid before filling it.
    let mut msg: libc::msghdr = unsafe { zeroed() };
    if let Some(addr) = &addr {
        msg.msg_name = addr.as_ptr() as *mut libc::c_void;
        msg.msg_namelen = addr.len();
    }
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
    // SAFETY: every pointer in msg refers to memory that outlives the call.
    retry_interrupted(|| unsafe { libc::sendmsg(sock.as_raw_fd(), &msg, libc::MSG_DONTWAIT) })
        .map(|_| ())
}

/// Calls `f`, a syscall returning a count or -1 with errno, again while a signal interrupts it.
pub(crate) fn retry_interrupted(mut f: impl FnMut() -> isize) -> io::Result<usize> {
    loop {
        let r = f();
        if r >= 0 {
            return Ok(r as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Reused `sendmmsg` arrays for `send_many`: built once (an address array of `SockAddr`s and
/// headers made per call cost more copying than the datagrams' own checksums on a MIPS).
pub struct SendMany {
    names: Box<[libc::sockaddr_in6; MAX_SEGMENTS]>,
    iovs: Box<[libc::iovec; MAX_SEGMENTS]>,
    hdrs: Box<[libc::mmsghdr; MAX_SEGMENTS]>,
}

impl Default for SendMany {
    fn default() -> Self {
        // SAFETY: sockaddr_in6, iovec and mmsghdr are plain data; all-zero is valid.
        unsafe {
            SendMany {
                names: Box::new(zeroed()),
                iovs: Box::new(zeroed()),
                hdrs: Box::new(zeroed()),
            }
        }
    }
}

/// Writes `to` into `name` as a sockaddr_in or sockaddr_in6; returns its length.
fn put_sockaddr(name: &mut libc::sockaddr_in6, to: SocketAddr) -> libc::socklen_t {
    match to {
        SocketAddr::V4(a) => {
            // SAFETY: sockaddr_in (16 bytes) fits in and is less aligned than sockaddr_in6.
            let v4 = unsafe { &mut *(name as *mut libc::sockaddr_in6 as *mut libc::sockaddr_in) };
            v4.sin_family = libc::AF_INET as libc::sa_family_t;
            v4.sin_port = a.port().to_be();
            v4.sin_addr = libc::in_addr {
                s_addr: u32::from_ne_bytes(a.ip().octets()),
            };
            size_of::<libc::sockaddr_in>() as libc::socklen_t
        }
        SocketAddr::V6(a) => {
            name.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            name.sin6_port = a.port().to_be();
            name.sin6_flowinfo = a.flowinfo().to_be();
            name.sin6_addr = libc::in6_addr {
                s6_addr: a.ip().octets(),
            };
            name.sin6_scope_id = a.scope_id();
            size_of::<libc::sockaddr_in6>() as libc::socklen_t
        }
    }
}

/// Sends each `(to, datagram)` as its own datagram, up to MAX_SEGMENTS per `sendmmsg` (the
/// rest of `msgs` is not looked at): where UDP GSO is refused (a NIC without checksum
/// offload, like ath79's ag71xx, makes the kernel answer EIO) a batch still costs one
/// syscall, not one per packet. Returns how many went out; the rest found the socket buffer
/// full (or an error) and is dropped, as on a congested link, except that an error on the
/// first datagram is returned.
///
/// With `connected`, the addresses are not passed: `sock` is connected to all of them.
pub fn send_many<'a>(
    sock: &UdpSocket,
    bufs: &mut SendMany,
    connected: bool,
    msgs: impl IntoIterator<Item = (SocketAddr, &'a [u8])>,
) -> io::Result<usize> {
    let mut n = 0;
    for (to, data) in msgs.into_iter().take(MAX_SEGMENTS) {
        bufs.iovs[n] = libc::iovec {
            iov_base: data.as_ptr() as *mut libc::c_void,
            iov_len: data.len(),
        };
        let h = &mut bufs.hdrs[n];
        if connected {
            h.msg_hdr.msg_name = std::ptr::null_mut();
            h.msg_hdr.msg_namelen = 0;
        } else {
            h.msg_hdr.msg_namelen = put_sockaddr(&mut bufs.names[n], to);
            h.msg_hdr.msg_name = &mut bufs.names[n] as *mut libc::sockaddr_in6 as *mut libc::c_void;
        }
        h.msg_hdr.msg_iov = &mut bufs.iovs[n];
        h.msg_hdr.msg_iovlen = 1;
        n += 1;
    }
    if n == 0 {
        return Ok(0);
    }
    // SAFETY: the first n headers point to addresses and iovecs in `bufs` and to
    // datagrams borrowed for 'a, all alive for the call.
    retry_interrupted(|| unsafe {
        libc::sendmmsg(
            sock.as_raw_fd(),
            bufs.hdrs.as_mut_ptr(),
            n as libc::c_uint,
            // The flags are an int in glibc, unsigned in musl.
            libc::MSG_DONTWAIT as _,
        ) as isize
    })
}

/// A receive header for a source address into `name`, `iovlen` iovecs at `iov` and, if
/// given, control messages into `cmsg`; flags and lengths zero, as `recvmmsg` expects.
fn recv_header(
    name: &mut libc::sockaddr_storage,
    iov: *mut libc::iovec,
    iovlen: usize,
    cmsg: Option<&mut CmsgBuf>,
) -> libc::mmsghdr {
    // SAFETY: msghdr is plain data; zeroed is valid before filling it.
    let mut h: libc::msghdr = unsafe { zeroed() };
    h.msg_name = name as *mut libc::sockaddr_storage as *mut libc::c_void;
    h.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    h.msg_iov = iov;
    h.msg_iovlen = iovlen as _;
    if let Some(c) = cmsg {
        h.msg_control = c.0.as_mut_ptr() as *mut libc::c_void;
        h.msg_controllen = CMSG_BUF as _;
    }
    libc::mmsghdr {
        msg_hdr: h,
        msg_len: 0,
    }
}

/// One non-blocking `recvmmsg` into the headers `hdrs`; the count received.
///
/// # Safety
/// Every header must point at a live name, iovecs and control buffer of the sizes it
/// states, none of them aliased during the call.
unsafe fn recvmmsg_nonblocking(sock: &UdpSocket, hdrs: &mut [libc::mmsghdr]) -> io::Result<usize> {
    // SAFETY: the caller's contract; `hdrs` holds `hdrs.len()` headers.
    retry_interrupted(|| unsafe {
        libc::recvmmsg(
            sock.as_raw_fd(),
            hdrs.as_mut_ptr(),
            hdrs.len() as libc::c_uint,
            libc::MSG_DONTWAIT as _, // an unsigned int on musl
            std::ptr::null_mut(),
        ) as isize
    })
}

/// Messages one receive call takes at most: a NIC without GRO (ath79's ag71xx) delivers
/// every datagram on its own, so without this each would cost a receive call (and, since
/// TCP segments coalesce only within a call, a TUN write).
pub const RECV_MANY: usize = 16;
/// Each message's head slot: a whole datagram of a 1500-byte path (at most 1472 bytes of
/// UDP payload) fits, so datagrams off such a NIC lie side by side on a few pages.
pub const RECV_HEAD: usize = 1536;
/// Each message's region past the head slots: the head copied to its front, then the rest
/// of a GRO train (at most 64 KiB in all). Touched only when a train or an oversized
/// datagram comes.
pub const RECV_REGION: usize = RECV_HEAD + 65536;
/// A buffer with the full layout: RECV_MANY head slots, then RECV_MANY regions.
pub const RECV_BUF: usize = RECV_MANY * (RECV_HEAD + RECV_REGION);

/// Offset of message `i`'s region in a RECV_BUF layout.
const fn region(i: usize) -> usize {
    RECV_MANY * RECV_HEAD + i * RECV_REGION
}

/// `recvmmsg` arrays for the data sockets: up to RECV_MANY messages, each scattered over its
/// head slot and its region of the caller's buffer, with its source and GRO segment size.
/// Re-pointed on every call, so the struct may move.
pub struct RecvMany {
    names: [libc::sockaddr_storage; RECV_MANY],
    cmsgs: [CmsgBuf; RECV_MANY],
    iovs: [[libc::iovec; 2]; RECV_MANY],
    hdrs: [libc::mmsghdr; RECV_MANY],
    /// Where each message's bytes lie, contiguous, after the last call.
    at: [usize; RECV_MANY],
}

impl Default for RecvMany {
    fn default() -> Self {
        // SAFETY: sockaddr_storage, iovec and mmsghdr are plain data; all-zero is valid.
        unsafe {
            RecvMany {
                names: zeroed(),
                cmsgs: [const { CmsgBuf([0; CMSG_BUF]) }; RECV_MANY],
                iovs: zeroed(),
                hdrs: zeroed(),
                at: [0; RECV_MANY],
            }
        }
    }
}

/// One received message of `recv_many`.
pub struct Received {
    /// The message's bytes are `buf[at..at + len]`.
    pub at: usize,
    pub len: usize,
    pub from: SocketAddr,
    /// GRO segment size: `len` holds datagrams of this size, the last maybe shorter.
    pub seg: usize,
    /// The datagram did not fit (cannot happen below 64 KiB with a RECV_BUF buffer; dropped).
    pub truncated: bool,
}

/// One `recvmmsg` of up to `max` (at most RECV_MANY) messages into `buf`; returns how many
/// arrived (fewer than asked: the queue ran empty), each found with `RecvMany::get`.
///
/// With several messages, message `i` is scattered over head slot `i` (at `i * RECV_HEAD`)
/// and the rest of region `i`; one longer than its slot has its head copied in front of the
/// rest, so every message ends up contiguous. One message takes region 0 whole (no copy).
/// A buffer shorter than RECV_BUF takes fewer messages; one shorter than a message's
/// slots takes one message into the whole buffer.
pub fn recv_many(
    sock: &UdpSocket,
    rm: &mut RecvMany,
    buf: &mut [u8],
    max: usize,
) -> io::Result<usize> {
    let fit = (0..RECV_MANY)
        .take_while(|&i| region(i) + RECV_REGION <= buf.len())
        .count();
    let k = max.min(fit).max(1);
    // (start, length) of each message's one or two pieces.
    let single = if fit == 0 {
        (0, buf.len())
    } else {
        (region(0), RECV_REGION)
    };
    for i in 0..k {
        let pieces: &[(usize, usize)] = if k == 1 {
            &[single]
        } else {
            &[
                (i * RECV_HEAD, RECV_HEAD),
                (region(i) + RECV_HEAD, RECV_REGION - RECV_HEAD),
            ]
        };
        for (v, &(start, len)) in rm.iovs[i].iter_mut().zip(pieces) {
            // Inside `buf`: region(i) + RECV_REGION <= buf.len() for i < fit, and
            // `single` is within it.
            *v = libc::iovec {
                iov_base: buf[start..start + len].as_mut_ptr() as *mut libc::c_void,
                iov_len: len,
            };
        }
        rm.hdrs[i] = recv_header(
            &mut rm.names[i],
            rm.iovs[i].as_mut_ptr(),
            pieces.len(),
            Some(&mut rm.cmsgs[i]),
        );
        rm.at[i] = if k == 1 { single.0 } else { i * RECV_HEAD };
    }
    // SAFETY: the first k headers point at live names, control buffers and disjoint
    // pieces of `buf`, all of the stated sizes and borrowed for the call.
    let n = unsafe { recvmmsg_nonblocking(sock, &mut rm.hdrs[..k]) }?;
    if k > 1 {
        for i in 0..n.min(k) {
            if rm.hdrs[i].msg_len as usize > RECV_HEAD {
                let head = i * RECV_HEAD;
                buf.copy_within(head..head + RECV_HEAD, region(i));
                rm.at[i] = region(i);
            }
        }
    }
    Ok(n)
}

impl RecvMany {
    /// Message `i` (below the count the last `recv_many` returned); None for a source that
    /// is not an IP address.
    pub fn get(&self, i: usize) -> Option<Received> {
        let h = &self.hdrs.get(i)?.msg_hdr;
        let len = self.hdrs[i].msg_len as usize;
        let mut seg = len;
        // SAFETY: the kernel filled msg_control/msg_controllen of this header; the CMSG_*
        // walkers stay within it.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(h);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_UDP && (*c).cmsg_type == UDP_GRO {
                    let v = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::c_int);
                    if v > 0 {
                        seg = v as usize;
                    }
                }
                c = libc::CMSG_NXTHDR(h, c);
            }
        }
        // SAFETY: the kernel wrote msg_namelen bytes of a socket address into names[i].
        let from = unsafe { SockAddr::new(self.names[i], h.msg_namelen) }.as_socket()?;
        Some(Received {
            at: self.at[i],
            len,
            from,
            seg: seg.max(1),
            truncated: h.msg_flags & libc::MSG_TRUNC != 0,
        })
    }
}

/// Largest datagram the handshake socket takes whole: every message it should see is at
/// most 148 bytes (an initiation); anything longer is dropped as truncated.
pub const SMALL_SLOT: usize = 256;
/// Datagrams one `recv_small` call takes.
pub const SMALL_BATCH: usize = 32;

/// Receive slots for the handshake socket: up to SMALL_BATCH small datagrams per `recvmmsg`
/// (a flood of initiations or garbage costs one syscall per 32, not one each). Built once;
/// the kernel-facing arrays are re-pointed on every call, so the struct may move.
pub struct SmallBatch {
    bufs: Box<[[u8; SMALL_SLOT]; SMALL_BATCH]>,
    names: Box<[libc::sockaddr_storage; SMALL_BATCH]>,
    iovs: Box<[libc::iovec; SMALL_BATCH]>,
    hdrs: Box<[libc::mmsghdr; SMALL_BATCH]>,
}

impl Default for SmallBatch {
    fn default() -> Self {
        // SAFETY: sockaddr_storage, iovec and mmsghdr are plain data; all-zero is valid.
        unsafe {
            SmallBatch {
                bufs: Box::new([[0; SMALL_SLOT]; SMALL_BATCH]),
                names: Box::new(zeroed()),
                iovs: Box::new(zeroed()),
                hdrs: Box::new(zeroed()),
            }
        }
    }
}

impl SmallBatch {
    /// Datagram `i` of the last `recv_small`: its bytes (the whole slot, for replies written
    /// in place), its length, its source, and whether it was cut short.
    pub fn get(&mut self, i: usize) -> Option<(&mut [u8; SMALL_SLOT], usize, SocketAddr, bool)> {
        let h = self.hdrs.get(i)?;
        let (len, namelen) = (h.msg_len as usize, h.msg_hdr.msg_namelen);
        let truncated = h.msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
        // SAFETY: the kernel wrote `namelen` bytes of a socket address into names[i].
        let from = unsafe { SockAddr::new(self.names[i], namelen) }.as_socket()?;
        Some((&mut self.bufs[i], len.min(SMALL_SLOT), from, truncated))
    }
}

/// Receives up to SMALL_BATCH datagrams without blocking; the count (0 never: WouldBlock
/// is an error, as with `recv_many`).
pub fn recv_small(sock: &UdpSocket, b: &mut SmallBatch) -> io::Result<usize> {
    for i in 0..SMALL_BATCH {
        b.iovs[i] = libc::iovec {
            iov_base: b.bufs[i].as_mut_ptr() as *mut libc::c_void,
            iov_len: SMALL_SLOT,
        };
        b.hdrs[i] = recv_header(&mut b.names[i], &mut b.iovs[i], 1, None);
    }
    // SAFETY: hdrs holds SMALL_BATCH headers whose pointers refer to live slots of `b`.
    unsafe { recvmmsg_nonblocking(sock, &mut b.hdrs[..]) }
}

/// Steers the datagrams of a SO_REUSEPORT group of two sockets: transport data for one of
/// our sessions (type 4, the little-endian u32 at the start of the UDP payload, with a
/// receiver index whose bits under `INDEX_TAG_MASK` are `tag`) to the group's second
/// socket; everything
/// else, including datagrams too short to have a type, to the first. Classic BPF: needs no
/// privilege. A reuseport program sees the UDP payload at offset 0, loads are big-endian,
/// and a load past the end ends the program with 0.
pub fn attach_steering(sock: &UdpSocket, tag: u16) -> io::Result<()> {
    let swap16 = |v: u32| u32::from((v as u16).swap_bytes());
    const DATA_TYPE_WORD: u32 = 0x0400_0000; // bytes 04 00 00 00
    let op = |code: u32, jt: u8, jf: u8, k: u32| libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    };
    let prog = [
        op(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0, 0, 0),
        op(
            libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K,
            0,
            4,
            DATA_TYPE_WORD,
        ),
        // The index's first two bytes on the wire are its low 16 bits, little-endian; the
        // load reads them big-endian, hence the swaps.
        op(libc::BPF_LD | libc::BPF_H | libc::BPF_ABS, 0, 0, 4),
        op(
            libc::BPF_ALU | libc::BPF_AND | libc::BPF_K,
            0,
            0,
            swap16(INDEX_TAG_MASK),
        ),
        op(
            libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K,
            0,
            1,
            swap16(u32::from(tag) & INDEX_TAG_MASK),
        ),
        op(libc::BPF_RET | libc::BPF_K, 0, 0, 1),
        op(libc::BPF_RET | libc::BPF_K, 0, 0, 0),
    ];
    let fprog = libc::sock_fprog {
        len: prog.len() as u16,
        filter: prog.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: valid fd; the option value is a sock_fprog pointing at `prog`, which outlives
    // the call (the kernel copies the program).
    let r = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_ATTACH_REUSEPORT_CBPF,
            &fprog as *const libc::sock_fprog as *const libc::c_void,
            size_of::<libc::sock_fprog>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn send_many_delivers_each_datagram_to_its_own_address() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        for s in [&a, &b] {
            s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        }
        let (ta, tb) = (a.local_addr().unwrap(), b.local_addr().unwrap());
        let mut bufs = SendMany::default();
        let msgs: [(SocketAddr, &[u8]); 4] = [
            (ta, b"one"),
            (tb, b"two!"),
            (ta, b"three"),
            (tb, &[7; 1400]),
        ];
        assert_eq!(send_many(&tx, &mut bufs, false, msgs).unwrap(), 4);
        let mut buf = [0u8; 2000];
        let mut got = |s: &UdpSocket| {
            let n = s.recv(&mut buf).unwrap();
            buf[..n].to_vec()
        };
        assert_eq!(got(&a), b"one");
        assert_eq!(got(&a), b"three");
        assert_eq!(got(&b), b"two!");
        assert_eq!(got(&b), vec![7; 1400]);
        assert_eq!(send_many(&tx, &mut bufs, false, []).unwrap(), 0);
        // IPv6, where the host has it.
        if let (Ok(c), Ok(tx6)) = (UdpSocket::bind("[::1]:0"), UdpSocket::bind("[::1]:0")) {
            c.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
            let to = c.local_addr().unwrap();
            assert_eq!(
                send_many(&tx6, &mut bufs, false, [(to, &b"six"[..])]).unwrap(),
                1
            );
            assert_eq!(got(&c), b"six");
        } else {
            eprintln!("SKIPPED the IPv6 part: no ::1");
        }
    }

    #[test]
    fn connected_sends_ignore_the_addresses_left_from_earlier_batches() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        for s in [&a, &b] {
            s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        }
        let (ta, tb) = (a.local_addr().unwrap(), b.local_addr().unwrap());
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.connect(ta).unwrap();
        let mut bufs = SendMany::default();
        // An unconnected batch fills the address array with b's address...
        assert_eq!(
            send_many(&tx, &mut bufs, false, [(tb, &b"x"[..])]).unwrap(),
            1
        );
        // ...which a connected batch must not pass on (it would override the connection).
        let msgs: [(SocketAddr, &[u8]); 2] = [(tb, b"one"), (tb, b"two")];
        assert_eq!(send_many(&tx, &mut bufs, true, msgs).unwrap(), 2);
        let segs: [&[u8]; 2] = [b"gs", b"o"];
        send_segments(&tx, None, &segs[..1], 2).unwrap();
        let mut buf = [0u8; 100];
        let mut got = |s: &UdpSocket| {
            let n = s.recv(&mut buf).unwrap();
            buf[..n].to_vec()
        };
        assert_eq!(got(&b), b"x");
        assert_eq!(got(&a), b"one");
        assert_eq!(got(&a), b"two");
        assert_eq!(got(&a), b"gs");
    }
}
