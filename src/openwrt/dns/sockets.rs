//! The OS side of DNS: the system's name servers (resolv.conf files) and the non-blocking
//! UDP sockets that carry the resolver's datagrams, registered in the `Poller`.

use super::resolver::{default_servers, parse_resolv_conf, Resolver, MAX_SERVERS};
use crate::sys::poller::{Interest, Registry};
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::AsFd;
use std::time::Instant;

/// Where name servers come from on OpenWrt, most preferred first: /etc/resolv.conf points
/// at the local dnsmasq (which knows local names and the user's DNS settings); the netifd
/// files list the upstream servers directly, so resolution also works while dnsmasq is
/// not (yet) running.
pub const RESOLV_CONF_PATHS: [&str; 3] = [
    "/etc/resolv.conf",
    "/tmp/resolv.conf.d/resolv.conf.auto",
    "/tmp/resolv.conf.auto",
];

/// Servers of all RESOLV_CONF_PATHS that exist, in order, duplicates dropped; 127.0.0.1 if
/// none. Reads small files (on OpenWrt in tmpfs); call it before starting resolutions, not
/// per packet.
pub fn system_servers() -> Vec<SocketAddr> {
    let mut out: Vec<SocketAddr> = Vec::new();
    for path in RESOLV_CONF_PATHS {
        if let Ok(text) = std::fs::read_to_string(path) {
            for s in parse_resolv_conf(&text) {
                if !out.contains(&s) && out.len() < MAX_SERVERS {
                    out.push(s);
                }
            }
        }
    }
    if out.is_empty() {
        default_servers()
    } else {
        out
    }
}

/// Non-blocking UDP sockets for DNS, one per address family, opened on first use and
/// registered edge-triggered in a `Poller` under the caller's tokens. `close_if_idle` closes
/// them between resolutions, so each burst of queries leaves from a fresh kernel-chosen
/// (random) source port, and an idle daemon holds no DNS socket.
pub struct DnsSockets {
    v4: Option<UdpSocket>,
    v6: Option<UdpSocket>,
    token_v4: u64,
    token_v6: u64,
    fwmark: u32,
}

/// Datagrams read per `drain` call at most (a flood must not starve the packet loop).
pub const DRAIN_LIMIT: usize = 256;

impl DnsSockets {
    /// `fwmark`: the device's mark, so that queries to remote servers bypass the tunnel
    /// like the tunnel's own packets do (0: none).
    pub fn new(token_v4: u64, token_v6: u64, fwmark: u32) -> Self {
        DnsSockets {
            v4: None,
            v6: None,
            token_v4,
            token_v6,
            fwmark,
        }
    }

    fn open(&mut self, v6: bool, poller: &Registry) -> io::Result<&UdpSocket> {
        let (slot, token) = if v6 {
            (&mut self.v6, self.token_v6)
        } else {
            (&mut self.v4, self.token_v4)
        };
        if slot.is_none() {
            use socket2::{Domain, Protocol, Socket, Type};
            let domain = if v6 { Domain::IPV6 } else { Domain::IPV4 };
            let s = Socket::new(
                domain,
                Type::DGRAM.nonblocking().cloexec(),
                Some(Protocol::UDP),
            )?;
            if v6 {
                s.set_only_v6(true)?;
            }
            if self.fwmark != 0 {
                s.set_mark(self.fwmark)?;
            }
            let any: SocketAddr = if v6 {
                (Ipv6Addr::UNSPECIFIED, 0).into()
            } else {
                (Ipv4Addr::UNSPECIFIED, 0).into()
            };
            s.bind(&any.into())?;
            let sock: UdpSocket = s.into();
            poller.add(sock.as_fd(), token, Interest::Read)?;
            *slot = Some(sock);
        }
        Ok(slot.as_ref().expect("opened above"))
    }

    /// Sends everything `dns` has queued. Failures (no route at boot, no IPv6) are dropped:
    /// the retransmission timer tries again, with the next server.
    pub fn flush(&mut self, dns: &mut Resolver, poller: &Registry) {
        while let Some((to, msg)) = dns.poll_transmit() {
            let sent = self
                .open(to.is_ipv6(), poller)
                .and_then(|s| s.send_to(&msg, to));
            if let Err(e) = sent {
                crate::log::verbose(format_args!("dns: sending to {to}: {e}"));
            }
        }
    }

    /// Reads the socket behind `token` until WouldBlock (or DRAIN_LIMIT datagrams) and feeds
    /// `dns`. Returns true if it stopped at the limit: the caller must call again, as the
    /// edge-triggered poller will not report the socket again.
    pub fn drain(&mut self, token: u64, dns: &mut Resolver, now: Instant) -> bool {
        let sock = match token {
            t if t == self.token_v4 => self.v4.as_ref(),
            t if t == self.token_v6 => self.v6.as_ref(),
            _ => None,
        };
        let Some(sock) = sock else { return false };
        // Replies without EDNS are at most 512 bytes; longer ones are cut and then ignored.
        let mut buf = [0u8; 1500];
        for _ in 0..DRAIN_LIMIT {
            match sock.recv_from(&mut buf) {
                Ok((n, from)) => {
                    dns.on_datagram(from, &buf[..n], now);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // ICMP errors (port unreachable) surface here; the timer handles them.
                Err(_) => {}
            }
        }
        true
    }

    /// Closes the sockets when `dns` has nothing in flight.
    pub fn close_if_idle(&mut self, dns: &Resolver, poller: &Registry) {
        if dns.is_idle() {
            for s in [self.v4.take(), self.v6.take()].into_iter().flatten() {
                poller.delete(s.as_fd());
            }
        }
    }

    #[cfg(any(test, feature = "internals"))]
    /// Whether a socket is open (for tests and diagnostics).
    pub fn is_open(&self) -> bool {
        self.v4.is_some() || self.v6.is_some()
    }
}
