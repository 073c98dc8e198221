//! Peer endpoints in one canonical form, so the same peer is never two addresses.

use std::net::SocketAddr;

/// A v4-mapped IPv6 endpoint (`[::ffff:a.b.c.d]:p`) is the IPv4 address: it must go out of
/// the IPv4 socket and compare equal to the address that socket reports.
pub fn canonical(addr: SocketAddr) -> SocketAddr {
    match addr {
        SocketAddr::V6(a) => match a.ip().to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(v4.into(), a.port()),
            None => addr,
        },
        v4 => v4,
    }
}
