//! UDP sockets: one IPv4 and one IPv6-only socket on the same port (dual stack without
//! v4-mapped addresses, so endpoints compare cleanly), with fwmark and large buffers.

use socket2::{Domain, Protocol, Socket, Type};
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};

/// The sockets of one listen port. Per family, a data socket and, where the kernel can
/// steer by message type (SO_REUSEPORT + a classic BPF program, Linux >= 4.5), a second
/// socket that gets every datagram that is not transport data for one of our sessions:
/// handshakes, cookie replies, garbage, and data messages whose receiver index does not
/// carry the device's tag (see `Device::index_tag`). A flood of those then fills only its own queue, which the loop serves a
/// bounded batch at a time, and never crowds the tunnel's packets out of theirs (with one
/// queue the kernel dropped both alike once the daemon fell behind). Everything is sent
/// from the data socket.
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
    // Best effort: a router may cap buffer sizes; the defaults still work.
    if role == Role::Handshake {
        let _ = s.set_recv_buffer_size(HANDSHAKE_SOCKET_BUFFER);
    } else {
        let _ = s.set_recv_buffer_size(SOCKET_BUFFER);
        let _ = s.set_send_buffer_size(SOCKET_BUFFER);
    }
    if fwmark != 0 {
        s.set_mark(fwmark)?;
    }
    s.bind(&addr.into())?;
    let sock: UdpSocket = s.into();
    if role != Role::Handshake {
        // Receive trains of datagrams in one call where the kernel supports it (Linux >= 5.0).
        crate::sys::batch::enable_gro(&sock);
    }
    Ok(sock)
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

pub fn set_mark(sock: &UdpSocket, fwmark: u32) -> io::Result<()> {
    socket2::SockRef::from(sock).set_mark(fwmark)
}
