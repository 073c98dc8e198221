//! The packet-socket transmit path, off unless SOLOWG_PACKET_TX=1 (OpenWrt: `option packet_tx
//! '1'`): where UDP GSO is refused, data datagrams to IPv4 endpoints leave through a packet
//! socket along the path the kernel would have taken, looked up per endpoint. What goes through
//! the UDP socket instead, and why: docs/architecture.md, "Packet path".

use super::*;
use crate::sys::packet_tx::{PacketPath, PacketTx};
use crate::sys::route_query::{RouteQuery, Unresolved};
use std::net::SocketAddrV4;

/// Longest an endpoint's datagrams go without one through the UDP socket, and its path
/// without a lookup. Well below the shortest UDP conntrack timeout in use (30 s unreplied).
const REFRESH: Duration = Duration::from_secs(1);
/// Endpoints remembered. Past this a new endpoint takes the slot of one sent nothing for
/// IDLE, else it goes through the UDP socket (so many busy endpoints do not take turns
/// evicting each other, each with a lookup).
const MAX_ENTRIES: usize = 32;
const IDLE: Duration = Duration::from_secs(30);

struct EndpointPath {
    to: SocketAddrV4,
    /// The path, or why there is none.
    path: Result<PacketPath, Unresolved>,
    /// When it was looked up (and one datagram went through the UDP socket); None after a
    /// change: looked up again on the next send.
    checked: Option<Instant>,
    /// When datagrams to it were last sent.
    used: Instant,
}

/// How the next datagrams to an endpoint leave.
pub(super) enum Via {
    Packet(PacketPath),
    /// The UDP socket, for one datagram (then `Packet` again for the rest).
    UdpOnce,
    Udp,
}

#[derive(Default)]
pub(super) struct PacketPaths {
    /// Socket and query socket, opened on first use; None if unavailable or off.
    socks: Option<(PacketTx, RouteQuery)>,
    tried: bool,
    entries: Vec<EndpointPath>,
    /// Whether policy rules route by firewall marks (then the UDP socket for everything),
    /// for which fwmark of ours; None: to be looked up (at first, after a rule change).
    mark_rules: Option<(bool, u32)>,
}

impl PacketPaths {
    /// Opens the sockets the first time; false if the packet path is off.
    fn ready(&mut self, link: &LinkMonitor, ifname: &str) -> bool {
        if !self.tried {
            self.tried = true;
            if !crate::sys::packet_tx::wanted() {
                return false;
            }
            let opened = PacketTx::open().and_then(|p| Ok((p, RouteQuery::open()?)));
            match opened.and_then(|s| link.watch_packet_path().map(|()| s)) {
                Ok(s) => {
                    log::info(format_args!(
                        "{ifname}: without UDP GSO, data to IPv4 endpoints on Ethernet \
                         devices goes through a packet socket"
                    ));
                    self.socks = Some(s);
                }
                Err(e) => log::info(format_args!(
                    "{ifname}: no packet socket ({e}): every datagram through the UDP socket"
                )),
            }
        }
        self.socks.is_some()
    }

    /// How datagrams to `to` leave now (sent from `port` with `fwmark`; `ttl` gives the
    /// system's default for a route that sets none).
    pub(super) fn via(
        &mut self,
        to: SocketAddr,
        now: Instant,
        (port, fwmark): (u16, u32),
        ttl: impl FnOnce() -> u8,
        link: &LinkMonitor,
        ifname: &str,
    ) -> Via {
        let SocketAddr::V4(to) = to else {
            return Via::Udp;
        };
        if !self.ready(link, ifname) || self.marks_in_use(fwmark, ifname) {
            return Via::Udp;
        }
        let i = match self.entries.iter().position(|e| e.to == to) {
            Some(i) => i,
            None => {
                if self.entries.len() == MAX_ENTRIES {
                    let idle = |e: &EndpointPath| now.saturating_duration_since(e.used) >= IDLE;
                    let Some(i) = self.entries.iter().position(idle) else {
                        return Via::Udp;
                    };
                    self.entries.swap_remove(i);
                }
                self.entries.push(EndpointPath {
                    to,
                    path: Err(Unresolved::Query),
                    checked: None,
                    used: now,
                });
                self.entries.len() - 1
            }
        };
        let e = &mut self.entries[i];
        e.used = now;
        if e.checked
            .is_some_and(|t| now.saturating_duration_since(t) < REFRESH)
        {
            return e.path.map_or(Via::Udp, Via::Packet);
        }
        let Some((tx, query)) = self.socks.as_mut() else {
            return Via::Udp;
        };
        let path = match tx.set_mark(fwmark) {
            Ok(()) => query.resolve(to, port, fwmark, ttl()),
            Err(_) => Err(Unresolved::Mark),
        };
        if path != e.path {
            match &path {
                Ok(p) => log::verbose(format_args!(
                    "{ifname}: {to} through a packet socket on device {} from {}, MTU {}",
                    p.ifindex, p.src, p.mtu
                )),
                Err(why) => log::verbose(format_args!(
                    "{ifname}: {to} through the UDP socket ({why:?} not usable)"
                )),
            }
        }
        e.path = path;
        e.checked = Some(now);
        Via::UdpOnce
    }

    /// Sends `datagrams` (all to `to`, all fitting `path`); None if the path failed (the
    /// caller sends them through the UDP socket), else what the device's queue took.
    pub(super) fn send<'a>(
        &mut self,
        path: &PacketPath,
        port: u16,
        to: SocketAddr,
        datagrams: impl IntoIterator<Item = &'a [u8]>,
    ) -> Option<io::Result<usize>> {
        let (SocketAddr::V4(to), Some((tx, _))) = (to, self.socks.as_mut()) else {
            return None;
        };
        match tx.send(path, port, to, datagrams) {
            // A full queue or socket buffer: dropped, as a congested link would.
            Err(e)
                if e.kind() == io::ErrorKind::WouldBlock
                    || e.raw_os_error() == Some(libc::ENOBUFS) =>
            {
                Some(Err(e))
            }
            Err(e) => {
                // The device went away or down: look again.
                log::verbose(format_args!("{to}: packet socket send failed ({e})"));
                self.forget(None);
                None
            }
            ok => Some(ok),
        }
    }

    /// Whether policy rules route by marks (looked up after a change; a failed lookup
    /// counts as yes, and is tried again on the next rule change).
    fn marks_in_use(&mut self, fwmark: u32, ifname: &str) -> bool {
        if let Some((found, mark)) = self.mark_rules {
            if mark == fwmark {
                return found;
            }
        }
        let Some((_, query)) = self.socks.as_mut() else {
            return true;
        };
        let found = query.mark_rules(fwmark).unwrap_or(true);
        let before = self.mark_rules.map(|(f, _)| f);
        if before != Some(found) {
            if found {
                log::info(format_args!(
                    "{ifname}: policy routing by firewall marks (ip rule ... fwmark): \
                     every datagram through the UDP socket, so that marks set by output \
                     rules apply"
                ));
            } else if before.is_some() {
                log::info(format_args!(
                    "{ifname}: no policy routing by firewall marks any more: data to IPv4 \
                     endpoints through the packet socket again"
                ));
            }
        }
        self.mark_rules = Some((found, fwmark));
        found
    }

    /// After an IPv4 policy rule changed: look at the rules again, and at every path.
    pub(super) fn rules_changed(&mut self) {
        self.mark_rules = None;
        self.forget(None);
    }

    /// After a change: paths (all, or with `ifindex` after a neighbour change those on that
    /// device and those waiting for a next hop) are looked up again on their next send.
    pub(super) fn forget(&mut self, ifindex: Option<i32>) {
        for e in &mut self.entries {
            let touched = match &e.path {
                Ok(p) => Some(p.ifindex) == ifindex,
                Err(why) => *why == Unresolved::Neighbour,
            };
            if ifindex.is_none() || touched {
                e.checked = None;
            }
        }
    }
}
