//! IPv4 data datagrams sent through a packet socket, with Ethernet, IP and UDP headers made
//! here. Where UDP GSO is refused (a NIC without checksum offload, the design's target)
//! every datagram is its own send, and a UDP socket's send costs the kernel about a quarter
//! more than handing the finished frame to the device's queue (bench/router --tx-paths).
//! The queue discipline still applies; netfilter's output hooks and IPsec policies do not
//! (see `event_loop::packet_paths` for what is done about connection tracking).
#![allow(unsafe_code)] // socket(2) and sendmmsg(2) for AF_PACKET

use super::batch::MAX_SEGMENTS;
use super::offload;
use std::io;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::{AsRawFd, OwnedFd};

/// Ethernet, IPv4 (no options) and UDP headers.
pub const HEADERS: usize = 14 + 20 + 8;
const ETH_P_IP: u16 = 0x0800;

/// Whether the packet path is asked for (SOLOWG_PACKET_TX=1; off by default, see
/// `event_loop/packet_paths.rs` for what it bypasses).
pub fn wanted() -> bool {
    std::env::var("SOLOWG_PACKET_TX").is_ok_and(|v| v == "1")
}

/// Where datagrams to one endpoint leave: what a route and neighbour lookup found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketPath {
    pub ifindex: i32,
    pub src_mac: [u8; 6],
    pub dst_mac: [u8; 6],
    pub src: Ipv4Addr,
    /// Largest IP packet the path takes (device MTU, or the route's or a learned path MTU).
    pub mtu: u32,
    /// Don't Fragment, unless the route's MTU is locked (as the kernel does).
    pub df: bool,
    pub ttl: u8,
}

impl PacketPath {
    /// True if a datagram of `len` bytes fits without fragmentation.
    pub fn fits(&self, len: usize) -> bool {
        len + 28 <= (self.mtu as usize).min(usize::from(u16::MAX))
    }
}

/// Writes the headers for a `payload`-long datagram from `path` (source port `sport`) to
/// `to`, IP identification `id`: DF as the path says, ECN and DSCP zero (as from our UDP sockets), the
/// UDP checksum computed over `data` (the datagram itself).
pub fn write_headers(
    h: &mut [u8; HEADERS],
    path: &PacketPath,
    sport: u16,
    to: SocketAddrV4,
    id: u16,
    data: &[u8],
) {
    let udp_len = (8 + data.len()) as u16;
    h[0..6].copy_from_slice(&path.dst_mac);
    h[6..12].copy_from_slice(&path.src_mac);
    h[12..14].copy_from_slice(&ETH_P_IP.to_be_bytes());
    let ip = &mut h[14..34];
    ip[0] = 0x45;
    ip[1] = 0;
    ip[2..4].copy_from_slice(&(20 + udp_len).to_be_bytes());
    ip[4..6].copy_from_slice(&id.to_be_bytes());
    ip[6..8].copy_from_slice(&if path.df { 0x4000u16 } else { 0 }.to_be_bytes());
    ip[8] = path.ttl;
    ip[9] = libc::IPPROTO_UDP as u8;
    ip[10..12].fill(0);
    ip[12..16].copy_from_slice(&path.src.octets());
    ip[16..20].copy_from_slice(&to.ip().octets());
    let ip_csum = !offload::fold(offload::sum(0, ip));
    ip[10..12].copy_from_slice(&ip_csum.to_be_bytes());
    let udp = &mut h[34..42];
    udp[0..2].copy_from_slice(&sport.to_be_bytes());
    udp[2..4].copy_from_slice(&to.port().to_be_bytes());
    udp[4..6].copy_from_slice(&udp_len.to_be_bytes());
    udp[6..8].fill(0);
    // Pseudo header: the addresses, then zero, protocol and length as one 32-bit word.
    let mut pseudo = [0u8; 4];
    pseudo[1] = libc::IPPROTO_UDP as u8;
    pseudo[2..4].copy_from_slice(&udp_len.to_be_bytes());
    let acc = offload::sum(offload::sum(0, &h[26..34]), &pseudo);
    let acc = offload::sum(offload::sum(acc, &h[34..42]), data);
    h[40..42].copy_from_slice(&offload::finish(acc).to_be_bytes());
}

/// One unbound packet socket (protocol 0: it receives nothing); each send names its device.
pub struct PacketTx {
    fd: OwnedFd,
    /// The fwmark its frames carry (as the UDP sockets' datagrams do, for tc filters).
    mark: u32,
    id: u16,
    hdrs: Box<[[u8; HEADERS]; MAX_SEGMENTS]>,
    iovs: Box<[[libc::iovec; 2]; MAX_SEGMENTS]>,
    msgs: Box<[libc::mmsghdr; MAX_SEGMENTS]>,
}

impl PacketTx {
    /// Fails without CAP_NET_RAW.
    pub fn open() -> io::Result<PacketTx> {
        let fd = super::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )?;
        // As deep as the UDP sockets' buffers: a batch must not overrun it.
        let size: libc::c_int = 4 << 20;
        // SAFETY: an int option of its size. Without the privilege it is only smaller.
        unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_SNDBUFFORCE,
                &size as *const libc::c_int as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        // SAFETY: iovec and mmsghdr are plain data; all-zero is valid before they are filled.
        let (iovs, msgs) = unsafe { (Box::new(std::mem::zeroed()), Box::new(std::mem::zeroed())) };
        Ok(PacketTx {
            fd,
            mark: 0,
            id: std::process::id() as u16,
            hdrs: Box::new([[0; HEADERS]; MAX_SEGMENTS]),
            iovs,
            msgs,
        })
    }

    /// Marks the frames sent from now on with `mark` (SO_MARK).
    pub fn set_mark(&mut self, mark: u32) -> io::Result<()> {
        if mark == self.mark {
            return Ok(());
        }
        // SAFETY: a u32 option of its size on our own socket.
        let rc = unsafe {
            libc::setsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_MARK,
                &mark as *const u32 as *const libc::c_void,
                std::mem::size_of::<u32>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        self.mark = mark;
        Ok(())
    }

    /// Sends up to MAX_SEGMENTS `datagrams` to `to` along `path`, in one `sendmmsg` unless
    /// the qdisc refuses some; returns how many the device's queue took (a full socket
    /// buffer stops it early; a refused frame is skipped).
    pub fn send<'a>(
        &mut self,
        path: &PacketPath,
        sport: u16,
        to: SocketAddrV4,
        datagrams: impl IntoIterator<Item = &'a [u8]>,
    ) -> io::Result<usize> {
        // SAFETY: sockaddr_ll is plain data; all-zero is valid before we fill it.
        let mut dev: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        dev.sll_family = libc::AF_PACKET as libc::sa_family_t;
        dev.sll_protocol = ETH_P_IP.to_be();
        dev.sll_ifindex = path.ifindex;
        let mut n = 0;
        for data in datagrams.into_iter().take(MAX_SEGMENTS) {
            let h = &mut self.hdrs[n];
            write_headers(h, path, sport, to, self.id, data);
            self.id = self.id.wrapping_add(1);
            self.iovs[n] = [
                libc::iovec {
                    iov_base: h.as_mut_ptr() as *mut libc::c_void,
                    iov_len: HEADERS,
                },
                libc::iovec {
                    iov_base: data.as_ptr() as *mut libc::c_void,
                    iov_len: data.len(),
                },
            ];
            let m = &mut self.msgs[n].msg_hdr;
            m.msg_name = &mut dev as *mut libc::sockaddr_ll as *mut libc::c_void;
            m.msg_namelen = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
            m.msg_iov = self.iovs[n].as_mut_ptr();
            m.msg_iovlen = 2;
            n += 1;
        }
        // A frame the qdisc refuses (ENOBUFS: its queue is full, or SQM dropped it) ends the
        // sendmmsg there: a short count, or the error if it was the first. The frames after
        // it are offered again (not it: the qdisc would count it twice), as a UDP socket
        // offers each datagram, so the qdisc sees and counts every frame once. A full socket
        // buffer (EAGAIN) ends the batch.
        let (mut at, mut sent) = (0, 0);
        while at < n {
            let rest = &mut self.msgs[at..n];
            // SAFETY: the headers from `at` to n point to `dev`, to their iovecs and headers
            // in `self` and to datagrams borrowed for 'a, all alive for the call.
            let r = super::batch::retry_interrupted(|| unsafe {
                libc::sendmmsg(
                    self.fd.as_raw_fd(),
                    rest.as_mut_ptr(),
                    rest.len() as libc::c_uint,
                    libc::MSG_DONTWAIT as _,
                ) as isize
            });
            match r {
                Ok(0) => break,
                Ok(k) => {
                    sent += k;
                    // Short: the frame after the last one taken was refused.
                    at = (at + k + 1).min(n);
                }
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => at += 1,
                Err(e) if at == 0 => return Err(e),
                Err(_) => break,
            }
        }
        Ok(sent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sums 16-bit big-endian words the plain way (the reference for offload::sum).
    fn reference_sum(b: &[u8]) -> u16 {
        let mut s: u32 = b
            .chunks(2)
            .map(|c| (u32::from(c[0]) << 8) | u32::from(*c.get(1).unwrap_or(&0)))
            .sum();
        while s >> 16 != 0 {
            s = (s & 0xffff) + (s >> 16);
        }
        s as u16
    }

    fn path() -> PacketPath {
        PacketPath {
            ifindex: 3,
            src_mac: [2, 0, 0, 0, 0, 1],
            dst_mac: [2, 0, 0, 0, 0, 2],
            src: Ipv4Addr::new(10, 203, 0, 2),
            mtu: 1500,
            df: true,
            ttl: 64,
        }
    }

    #[test]
    fn headers_carry_valid_checksums_for_odd_and_even_lengths() {
        for len in [0usize, 1, 32, 33, 148, 1453, 1452] {
            let data: Vec<u8> = (0..len as u32).map(|i| (i * 7 + 3) as u8).collect();
            let to = SocketAddrV4::new(Ipv4Addr::new(10, 203, 0, 1), 51900);
            let mut h = [0u8; HEADERS];
            write_headers(&mut h, &path(), 51910, to, 0x1234, &data);
            assert_eq!(&h[12..14], &[8, 0]);
            // An IP header with its checksum sums to all ones.
            assert_eq!(reference_sum(&h[14..34]), 0xffff, "len {len}");
            assert_eq!(u16::from_be_bytes([h[16], h[17]]) as usize, 28 + len);
            assert_eq!(h[20] & 0x40, 0x40, "DF");
            // So do the pseudo header, the UDP header and the data.
            let mut all = h[26..34].to_vec();
            all.extend_from_slice(&[0, 17]);
            all.extend_from_slice(&((8 + len) as u16).to_be_bytes());
            all.extend_from_slice(&h[34..42]);
            all.extend_from_slice(&data);
            assert_eq!(reference_sum(&all), 0xffff, "len {len}");
            assert_ne!(&h[40..42], &[0, 0], "zero means no checksum");
        }
    }

    #[test]
    fn fits_counts_the_ip_and_udp_headers() {
        let p = path();
        assert!(p.fits(1472));
        assert!(!p.fits(1473));
    }
}
