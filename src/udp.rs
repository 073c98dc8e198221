//! UDP sockets: one IPv4 and one IPv6-only socket on the same port (dual stack without
//! v4-mapped addresses, so endpoints compare cleanly), with fwmark and large buffers.

use socket2::{Domain, Protocol, Socket, Type};
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};

pub struct UdpPair {
    pub v4: UdpSocket,
    pub v6: Option<UdpSocket>,
    pub port: u16,
}

/// Socket buffers big enough to absorb a burst while the single thread is busy elsewhere.
const SOCKET_BUFFER: usize = 2 << 20;

fn open(addr: SocketAddr, fwmark: u32) -> io::Result<UdpSocket> {
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
    // Best effort: a router may cap buffer sizes; the defaults still work.
    let _ = s.set_recv_buffer_size(SOCKET_BUFFER);
    let _ = s.set_send_buffer_size(SOCKET_BUFFER);
    if fwmark != 0 {
        s.set_mark(fwmark)?;
    }
    s.bind(&addr.into())?;
    let sock: UdpSocket = s.into();
    // Receive trains of datagrams in one call where the kernel supports it (Linux >= 5.0).
    crate::batch::enable_gro(&sock);
    Ok(sock)
}

/// Binds `port` (0 = any free port) on both families. IPv6 being unavailable is not an error;
/// the IPv6 port being taken when IPv4 got a random port makes us retry with another.
pub fn bind(port: u16, fwmark: u32) -> io::Result<UdpPair> {
    for _ in 0..16 {
        let v4 = open((Ipv4Addr::UNSPECIFIED, port).into(), fwmark)?;
        let actual = v4.local_addr()?.port();
        match open((Ipv6Addr::UNSPECIFIED, actual).into(), fwmark) {
            Ok(v6) => {
                return Ok(UdpPair {
                    v4,
                    v6: Some(v6),
                    port: actual,
                })
            }
            Err(e) if e.kind() == io::ErrorKind::AddrInUse && port == 0 => continue,
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => return Err(e),
            Err(_) => {
                return Ok(UdpPair {
                    v4,
                    v6: None,
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

pub fn set_mark(sock: &UdpSocket, fwmark: u32) -> io::Result<()> {
    socket2::SockRef::from(sock).set_mark(fwmark)
}

/// A v4-mapped IPv6 endpoint (`[::ffff:a.b.c.d]:p`) must go out of the IPv4 socket.
pub fn canonical(addr: SocketAddr) -> SocketAddr {
    match addr {
        SocketAddr::V6(a) => match a.ip().to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(v4.into(), a.port()),
            None => addr,
        },
        v4 => v4,
    }
}
