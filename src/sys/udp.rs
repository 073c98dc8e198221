//! UDP sockets on one port: per family (IPv4, and IPv6-only: dual stack without v4-mapped
//! addresses, so endpoints compare cleanly) a data socket and, where the kernel can steer,
//! a handshake socket beside it (see `UdpPair`); with fwmark and large buffers.

use socket2::{Domain, Protocol, Socket, Type};
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};

/// The sockets of one listen port. Per family, a data socket and, where the kernel can
/// steer by message type (SO_REUSEPORT + a classic BPF program, Linux >= 4.5), a second
/// socket that gets every datagram that is not transport data for one of our sessions:
/// handshakes, cookie replies, garbage, and data messages whose receiver index does not
/// carry the device's tag (see `Device::index_tag`). A flood of those then fills only its
/// own queue, which the loop serves a bounded batch at a time, and never crowds the tunnel's
/// packets out of theirs (with one queue the kernel dropped both alike once the daemon fell
/// behind). Datagrams go out from a connected socket per endpoint (`connect`), else from the
/// data socket. A connected socket also receives everything its endpoint sends, handshakes
/// included: a flood forged with a peer's address shares that peer's queue.
pub struct UdpPair {
    pub v4: UdpSocket,
    pub v6: Option<UdpSocket>,
    pub hs4: Option<UdpSocket>,
    pub hs6: Option<UdpSocket>,
    pub port: u16,
}

/// Socket buffers big enough to absorb a burst while the single thread is busy elsewhere.
const SOCKET_BUFFER: usize = 2 << 20;
/// The handshake socket's receive buffer: a few hundred handshakes; past that a flood is
/// dropped by the kernel (real peers retry in 5 s).
const HANDSHAKE_SOCKET_BUFFER: usize = 256 << 10;

#[derive(Clone, Copy, PartialEq)]
enum Role {
    /// The only socket of its family (no steering).
    Plain,
    Data,
    Handshake,
}

fn open(addr: SocketAddr, fwmark: u32, role: Role) -> io::Result<UdpSocket> {
    let domain = if addr.is_ipv4() {
        Domain::IPV4
    } else {
        Domain::IPV6
    };
    let s = Socket::new(
        domain,
        Type::DGRAM.nonblocking().cloexec(),
        Some(Protocol::UDP),
    )?;
    if addr.is_ipv6() {
        s.set_only_v6(true)?;
    }
    if role != Role::Plain {
        s.set_reuse_port(true)?;
    }
    // Past net.core.rmem_max/wmem_max where we may (root, CAP_NET_ADMIN): Debian's and
    // OpenWrt's 208 KiB caps held a burst of ~150 datagrams, and a one-core router lost
    // packets to full buffers while the loop worked on the other direction. Else best
    // effort: the capped sizes still work.
    if role == Role::Handshake {
        set_buffer(&s, libc::SO_RCVBUFFORCE, HANDSHAKE_SOCKET_BUFFER);
    } else {
        set_buffer(&s, libc::SO_RCVBUFFORCE, SOCKET_BUFFER);
        set_buffer(&s, libc::SO_SNDBUFFORCE, SOCKET_BUFFER);
    }
    if fwmark != 0 {
        s.set_mark(fwmark)?;
    }
    s.bind(&addr.into())?;
    let sock: UdpSocket = s.into();
    // Receive trains of datagrams in one call where the kernel supports it (Linux >= 5.0).
    // On the handshake socket too: GRO looks the socket up without running the steering
    // program, picking a member of the group by a hash of the addresses, and merges a flow
    // only if that member has UDP_GRO; half the flows (the peer's port decides) then got one
    // datagram per receive call and a TUN write each: 22 instead of 128 Mbit/s on a 24K
    // (bench/router). A train that lands on the handshake socket is dropped as too big,
    // which only happens to runs of same-sized non-session datagrams of one flow (a flood).
    crate::sys::batch::enable_gro(&sock);
    Ok(sock)
}

/// SO_RCVBUFFORCE or SO_SNDBUFFORCE, falling back to the capped SO_RCVBUF / SO_SNDBUF.
fn set_buffer(s: &Socket, force: libc::c_int, size: usize) {
    use std::os::fd::AsRawFd;
    let v = size as libc::c_int;
    #[allow(unsafe_code)]
    // SAFETY: valid fd; the option value points to a live c_int of the given size.
    let forced = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            force,
            &v as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        ) == 0
    };
    if !forced {
        let _ = if force == libc::SO_RCVBUFFORCE {
            s.set_recv_buffer_size(size)
        } else {
            s.set_send_buffer_size(size)
        };
    }
}

/// One family's sockets on `addr` (port 0 = any free port): (data, handshake).
fn open_family(
    addr: SocketAddr,
    fwmark: u32,
    tag: u16,
) -> io::Result<(UdpSocket, Option<UdpSocket>)> {
    // A plain bind first: it fails if anyone holds the port, also a socket that would let
    // us join its SO_REUSEPORT group (another daemon configured with the same port).
    let probe = open(addr, fwmark, Role::Plain)?;
    let mut addr = addr;
    addr.set_port(probe.local_addr()?.port());
    drop(probe);
    let steered = (|| {
        // Order matters: the program names sockets by their place in the group.
        let hs = open(addr, fwmark, Role::Handshake)?;
        let data = open(addr, fwmark, Role::Data)?;
        crate::sys::batch::attach_steering(&data, tag)?;
        Ok::<_, io::Error>((data, Some(hs)))
    })();
    match steered {
        Ok(pair) => Ok(pair),
        Err(e) => {
            // Old kernel, or SO_REUSEPORT refused: one socket, as before. If the port was
            // taken in the instant between the probe and these binds, that is an error.
            if e.kind() == io::ErrorKind::AddrInUse {
                return Err(e);
            }
            crate::log::verbose(format_args!(
                "no steering of handshakes to their own socket ({e}); one socket per family"
            ));
            Ok((open(addr, fwmark, Role::Plain)?, None))
        }
    }
}

/// Binds `port` (0 = any free port) on both families. IPv6 being unavailable is not an error;
/// the IPv6 port being taken when IPv4 got a random port makes us retry with another.
/// `tag`: the device's receiver-index tag (`Device::index_tag`), which the steering
/// program uses to tell our sessions' data from made-up data messages.
pub fn bind(port: u16, fwmark: u32, tag: u16) -> io::Result<UdpPair> {
    for _ in 0..16 {
        let (v4, hs4) = open_family((Ipv4Addr::UNSPECIFIED, port).into(), fwmark, tag)?;
        let actual = v4.local_addr()?.port();
        match open_family((Ipv6Addr::UNSPECIFIED, actual).into(), fwmark, tag) {
            Ok((v6, hs6)) => {
                return Ok(UdpPair {
                    v4,
                    v6: Some(v6),
                    hs4,
                    hs6,
                    port: actual,
                })
            }
            Err(e) if e.kind() == io::ErrorKind::AddrInUse && port == 0 => continue,
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => return Err(e),
            Err(_) => {
                return Ok(UdpPair {
                    v4,
                    v6: None,
                    hs4,
                    hs6: None,
                    port: actual,
                })
            }
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AddrInUse,
        "no port free on both IPv4 and IPv6",
    ))
}

/// A socket on our listen `port` connected to `to`, so the kernel routes its sends once
/// instead of per datagram. It joins the port's SO_REUSEPORT group to bind, and leaves it
/// when connecting pins its local address; from then on the kernel hands it the datagrams
/// from `to` (the best match), so it must be read like the data socket. Fails where the
/// listening sockets are not in such a group (no steering: `EADDRINUSE`).
pub fn connect(to: SocketAddr, port: u16, fwmark: u32) -> io::Result<UdpSocket> {
    let local: SocketAddr = match to {
        SocketAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, port).into(),
        SocketAddr::V6(_) => (Ipv6Addr::UNSPECIFIED, port).into(),
    };
    let sock = open(local, fwmark, Role::Data)?;
    sock.connect(to)?;
    Ok(sock)
}

pub fn set_mark(sock: &UdpSocket, fwmark: u32) -> io::Result<()> {
    socket2::SockRef::from(sock).set_mark(fwmark)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[allow(unsafe_code)]
    fn gro_on(s: &UdpSocket) -> bool {
        let mut v: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: valid fd; v and len are live and sized for the option.
        let r = unsafe {
            libc::getsockopt(
                s.as_raw_fd(),
                libc::SOL_UDP,
                104, // UDP_GRO
                &mut v as *mut libc::c_int as *mut libc::c_void,
                &mut len,
            )
        };
        r == 0 && v != 0
    }

    #[test]
    fn every_socket_takes_gro_trains_and_big_buffers() {
        let p = bind(0, 0, 0x1234).expect("bind");
        let all: Vec<&UdpSocket> = [Some(&p.v4), p.v6.as_ref(), p.hs4.as_ref(), p.hs6.as_ref()]
            .into_iter()
            .flatten()
            .collect();
        assert!(
            p.hs4.is_some(),
            "steering unavailable: the handshake socket is what this checks"
        );
        for s in &all {
            assert!(gro_on(s), "UDP_GRO off on {:?}", s.local_addr());
        }
        // Past rmem_max only with CAP_NET_ADMIN (CI runs as root).
        #[allow(unsafe_code)]
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        if root {
            let got = socket2::SockRef::from(&p.v4).recv_buffer_size().unwrap();
            assert!(got >= SOCKET_BUFFER, "receive buffer {got}");
        } else {
            eprintln!("SKIPPED buffer size check: not root (SO_RCVBUFFORCE needs CAP_NET_ADMIN)");
        }
    }

    #[test]
    fn a_connected_socket_takes_its_peers_datagrams_and_leaves_the_rest_to_the_group() {
        let p = bind(0, 0, 0x1234).expect("bind");
        assert!(p.hs4.is_some(), "steering unavailable");
        let to = |port| SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let (peer, other) = (
            UdpSocket::bind("127.0.0.1:0").unwrap(),
            UdpSocket::bind("127.0.0.1:0").unwrap(),
        );
        let c = connect(peer.local_addr().unwrap(), p.port, 0).expect("connect");
        let wait = Some(std::time::Duration::from_secs(2));
        for s in [&c, &p.v4, p.hs4.as_ref().unwrap()] {
            s.set_nonblocking(false).unwrap();
            s.set_read_timeout(wait).unwrap();
        }
        let mut buf = [0u8; 64];
        let mut got = |s: &UdpSocket| s.recv(&mut buf).map(|n| buf[..n].to_vec()).ok();
        // Transport data with our tag from the peer: the connected socket, not the data one.
        let data = [4u8, 0, 0, 0, 0x34, 0x12, 0, 0, 1];
        peer.send_to(&data, to(p.port)).unwrap();
        peer.send_to(b"hello", to(p.port)).unwrap();
        other.send_to(b"other", to(p.port)).unwrap();
        other.send_to(&data, to(p.port)).unwrap();
        assert_eq!(got(&c).as_deref(), Some(&data[..]));
        assert_eq!(got(&c).as_deref(), Some(&b"hello"[..]));
        assert_eq!(got(p.hs4.as_ref().unwrap()).as_deref(), Some(&b"other"[..]));
        assert_eq!(got(&p.v4).as_deref(), Some(&data[..]));
        // It sends from the listen port.
        c.send(b"back").unwrap();
        peer.set_read_timeout(wait).unwrap();
        let (n, from) = peer.recv_from(&mut [0u8; 16]).unwrap();
        assert_eq!((n, from.port()), (4, p.port));
        // Closed, the group gets the peer's datagrams again.
        drop(c);
        peer.send_to(b"again", to(p.port)).unwrap();
        assert_eq!(got(p.hs4.as_ref().unwrap()).as_deref(), Some(&b"again"[..]));
    }
}
