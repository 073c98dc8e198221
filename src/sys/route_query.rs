//! Where the kernel would send a datagram: the route (with our fwmark and ports, as policy
//! rules see a UDP socket's sends), the output device's type, address and MTU, and the next
//! hop's link-layer address, asked over rtnetlink. The packet-socket transmit path
//! (`packet_tx`) needs all three; anything it cannot use is an `Unresolved` reason, and the
//! datagrams then go through the UDP socket.
#![allow(unsafe_code)] // socket(2), send(2), recv(2) for AF_NETLINK

use super::netlink::{ne_u16, ne_u32};
use super::packet_tx::Path;
use std::io;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::ops::Range;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const NLMSG_HDR: usize = 16;
const NLMSG_ERROR: u16 = 2;
const NLM_F_REQUEST: u16 = 1;
const RTM_NEWLINK: u16 = 16;
const RTM_GETLINK: u16 = 18;
const RTM_NEWROUTE: u16 = 24;
const RTM_GETROUTE: u16 = 26;
const RTM_NEWNEIGH: u16 = 28;
const RTM_GETNEIGH: u16 = 30;
const RTA_DST: u16 = 1;
const RTA_OIF: u16 = 4;
const RTA_GATEWAY: u16 = 5;
const RTA_PREFSRC: u16 = 7;
const RTA_METRICS: u16 = 8;
const RTA_MARK: u16 = 16;
const RTA_IP_PROTO: u16 = 27;
const RTA_SPORT: u16 = 28;
const RTA_DPORT: u16 = 29;
const RTAX_MTU: u16 = 2;
const RTAX_HOPLIMIT: u16 = 10;
const RTN_UNICAST: u8 = 1;
const IFLA_ADDRESS: u16 = 1;
const IFLA_MTU: u16 = 4;
const ARPHRD_ETHER: u16 = 1;
const NDA_DST: u16 = 1;
const NDA_LLADDR: u16 = 2;
/// NUD_REACHABLE, STALE, DELAY, PROBE, NOARP, PERMANENT: an address the kernel would use.
const NUD_VALID: u16 = 0x02 | 0x04 | 0x08 | 0x10 | 0x40 | 0x80;

/// Why datagrams to an endpoint cannot take the packet path (for the log).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unresolved {
    /// No route, or one that is not plain unicast (local, blackhole, ...).
    Route,
    /// The output device is not Ethernet (PPPoE, a tunnel, loopback) or is down.
    Device,
    /// The next hop has no valid link-layer address (not resolved yet, or failed).
    Neighbour,
    /// The kernel did not answer as expected (an old kernel, a full socket).
    Query,
    /// The packet socket could not take the fwmark.
    Mark,
}

/// What a route lookup found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    pub oif: i32,
    /// The gateway, or None for an on-link destination.
    pub gateway: Option<Ipv4Addr>,
    pub src: Ipv4Addr,
    pub mtu: Option<u32>,
    pub hoplimit: Option<u8>,
}

/// The route lookup socket (replies are read right after each request: rtnetlink answers
/// within the request's own system call, so nothing waits).
pub struct RouteQuery {
    fd: OwnedFd,
    seq: u32,
    buf: Vec<u8>,
}

/// Attributes (type without flag bits, payload) from `b` on.
fn attrs(mut b: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        let len = ne_u16(b, 0)? as usize;
        let kind = ne_u16(b, 2)? & 0x3fff;
        if len < 4 || len > b.len() {
            return None;
        }
        let payload = &b[4..len];
        b = b.get((len + 3) & !3..).unwrap_or(&[]);
        Some((kind, payload))
    })
}

fn ipv4(p: &[u8]) -> Option<Ipv4Addr> {
    Some(Ipv4Addr::from(<[u8; 4]>::try_from(p).ok()?))
}

/// Where in `msgs` the body of the reply to request `seq` of type `kind` lies, or the reason
/// it is no such reply; None if `msgs` holds no answer to `seq`.
fn reply(msgs: &[u8], seq: u32, kind: u16) -> Option<Result<Range<usize>, Unresolved>> {
    let mut b = msgs;
    while b.len() >= NLMSG_HDR {
        let len = ne_u32(b, 0)? as usize;
        if len < NLMSG_HDR || len > b.len() {
            return None;
        }
        if ne_u32(b, 8)? == seq {
            let t = ne_u16(b, 4)?;
            return Some(if t == kind {
                let at = msgs.len() - b.len();
                Ok(at + NLMSG_HDR..at + len)
            } else {
                Err(if t == NLMSG_ERROR && kind == RTM_NEWROUTE {
                    Unresolved::Route // ENETUNREACH and the like
                } else if t == NLMSG_ERROR && kind == RTM_NEWNEIGH {
                    Unresolved::Neighbour // ENOENT: no entry yet
                } else {
                    Unresolved::Query
                })
            });
        }
        b = b.get((len + 3) & !3..).unwrap_or(&[]);
    }
    None
}

/// Parses an RTM_NEWROUTE body (rtmsg, then attributes).
pub fn parse_route(body: &[u8]) -> Result<Route, Unresolved> {
    if body.len() < 12 || body[0] != libc::AF_INET as u8 || body[7] != RTN_UNICAST {
        return Err(Unresolved::Route);
    }
    let (mut oif, mut gateway, mut src, mut mtu, mut hoplimit) = (None, None, None, None, None);
    for (kind, p) in attrs(&body[12..]) {
        match kind {
            RTA_OIF => oif = ne_u32(p, 0).map(|i| i as i32),
            RTA_GATEWAY => gateway = ipv4(p),
            RTA_PREFSRC => src = ipv4(p),
            RTA_METRICS => {
                for (m, v) in attrs(p) {
                    match m {
                        RTAX_MTU => mtu = ne_u32(v, 0).filter(|&m| m != 0),
                        RTAX_HOPLIMIT => hoplimit = ne_u32(v, 0).map(|h| h.min(255) as u8),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    Ok(Route {
        oif: oif.ok_or(Unresolved::Route)?,
        gateway,
        src: src.ok_or(Unresolved::Route)?,
        mtu,
        hoplimit: hoplimit.filter(|&h| h != 0),
    })
}

/// Parses an RTM_NEWLINK body: the device's address and MTU, if it is an Ethernet device
/// that is up.
pub fn parse_link(body: &[u8]) -> Result<([u8; 6], u32), Unresolved> {
    let kind = ne_u16(body, 2).ok_or(Unresolved::Query)?;
    let flags = ne_u32(body, 8).ok_or(Unresolved::Query)?;
    if kind != ARPHRD_ETHER || flags & libc::IFF_UP as u32 == 0 {
        return Err(Unresolved::Device);
    }
    let (mut mac, mut mtu) = (None, None);
    for (kind, p) in attrs(body.get(16..).unwrap_or(&[])) {
        match kind {
            IFLA_ADDRESS => mac = <[u8; 6]>::try_from(p).ok(),
            IFLA_MTU => mtu = ne_u32(p, 0),
            _ => {}
        }
    }
    Ok((
        mac.ok_or(Unresolved::Device)?,
        mtu.ok_or(Unresolved::Device)?,
    ))
}

/// Parses an RTM_NEWNEIGH body: the link-layer address, if the entry is usable.
pub fn parse_neighbour(body: &[u8]) -> Result<[u8; 6], Unresolved> {
    let state = ne_u16(body, 8).ok_or(Unresolved::Query)?;
    if state & NUD_VALID == 0 {
        return Err(Unresolved::Neighbour);
    }
    attrs(body.get(12..).unwrap_or(&[]))
        .find(|&(kind, _)| kind == NDA_LLADDR)
        .and_then(|(_, p)| <[u8; 6]>::try_from(p).ok())
        .ok_or(Unresolved::Neighbour)
}

/// Appends an attribute (padded to 4 bytes).
fn put_attr(m: &mut Vec<u8>, kind: u16, payload: &[u8]) {
    m.extend_from_slice(&((4 + payload.len()) as u16).to_ne_bytes());
    m.extend_from_slice(&kind.to_ne_bytes());
    m.extend_from_slice(payload);
    m.resize(m.len().next_multiple_of(4), 0);
}

impl RouteQuery {
    pub fn open() -> io::Result<RouteQuery> {
        // SAFETY: plain socket(2); ownership goes to OwnedFd right away.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                libc::NETLINK_ROUTE,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(RouteQuery {
            // SAFETY: fd is a fresh socket nobody else owns.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            seq: 0,
            buf: vec![0; 16 << 10],
        })
    }

    /// Sends request `kind` with `body` and returns the reply's body (of type `answer`).
    fn ask(&mut self, kind: u16, answer: u16, body: &[u8]) -> Result<&[u8], Unresolved> {
        self.seq = self.seq.wrapping_add(1);
        let mut m = Vec::with_capacity(NLMSG_HDR + body.len());
        m.extend_from_slice(&((NLMSG_HDR + body.len()) as u32).to_ne_bytes());
        m.extend_from_slice(&kind.to_ne_bytes());
        m.extend_from_slice(&NLM_F_REQUEST.to_ne_bytes());
        m.extend_from_slice(&self.seq.to_ne_bytes());
        m.extend_from_slice(&0u32.to_ne_bytes());
        m.extend_from_slice(body);
        let fd = self.fd.as_raw_fd();
        // SAFETY: m is a live buffer of the length passed; the kernel is the destination of
        // an unbound netlink socket's send.
        let r = unsafe { libc::send(fd, m.as_ptr() as *const libc::c_void, m.len(), 0) };
        if r < 0 {
            return Err(Unresolved::Query);
        }
        // The reply is queued by now; older ones (a lookup that failed halfway) are skipped.
        let mut found = None;
        for _ in 0..8 {
            // SAFETY: buf is a live buffer of the length passed.
            let n = unsafe {
                libc::recv(
                    fd,
                    self.buf.as_mut_ptr() as *mut libc::c_void,
                    self.buf.len(),
                    libc::MSG_DONTWAIT | libc::MSG_TRUNC,
                )
            };
            if n < 0 || n as usize > self.buf.len() {
                return Err(Unresolved::Query); // nothing (yet) or truncated
            }
            if let Some(r) = reply(&self.buf[..n as usize], self.seq, answer) {
                found = Some(r);
                break;
            }
        }
        Ok(&self.buf[found.ok_or(Unresolved::Query)??])
    }

    /// The route a datagram from port `sport` with `fwmark` to `to` takes.
    pub fn route(
        &mut self,
        to: SocketAddrV4,
        sport: u16,
        fwmark: u32,
    ) -> Result<Route, Unresolved> {
        // rtmsg: family, dst_len, src_len, tos, table, protocol, scope, type, flags.
        let mut body = vec![libc::AF_INET as u8, 32, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        put_attr(&mut body, RTA_DST, &to.ip().octets());
        if fwmark != 0 {
            put_attr(&mut body, RTA_MARK, &fwmark.to_ne_bytes());
        }
        put_attr(&mut body, RTA_IP_PROTO, &[libc::IPPROTO_UDP as u8]);
        put_attr(&mut body, RTA_SPORT, &sport.to_be_bytes());
        put_attr(&mut body, RTA_DPORT, &to.port().to_be_bytes());
        parse_route(self.ask(RTM_GETROUTE, RTM_NEWROUTE, &body)?)
    }

    /// The address and MTU of Ethernet device `ifindex`.
    pub fn link(&mut self, ifindex: i32) -> Result<([u8; 6], u32), Unresolved> {
        // ifinfomsg: family, pad, type, index, flags, change.
        let mut body = vec![0u8; 16];
        body[4..8].copy_from_slice(&ifindex.to_ne_bytes());
        parse_link(self.ask(RTM_GETLINK, RTM_NEWLINK, &body)?)
    }

    /// The link-layer address of neighbour `addr` on `ifindex`.
    pub fn neighbour(&mut self, ifindex: i32, addr: Ipv4Addr) -> Result<[u8; 6], Unresolved> {
        // ndmsg: family, pads, ifindex, state, flags, type.
        let mut body = vec![0u8; 12];
        body[0] = libc::AF_INET as u8;
        body[4..8].copy_from_slice(&ifindex.to_ne_bytes());
        put_attr(&mut body, NDA_DST, &addr.octets());
        parse_neighbour(self.ask(RTM_GETNEIGH, RTM_NEWNEIGH, &body)?)
    }

    /// Route, device and next hop for datagrams to `to`; `ttl` unless the route sets one.
    pub fn resolve(
        &mut self,
        to: SocketAddrV4,
        sport: u16,
        fwmark: u32,
        ttl: u8,
    ) -> Result<Path, Unresolved> {
        let route = self.route(to, sport, fwmark)?;
        let (src_mac, dev_mtu) = self.link(route.oif)?;
        let dst_mac = self.neighbour(route.oif, route.gateway.unwrap_or(*to.ip()))?;
        Ok(Path {
            ifindex: route.oif,
            src_mac,
            dst_mac,
            src: route.src,
            mtu: route.mtu.map_or(dev_mtu, |m| m.min(dev_mtu)),
            ttl: route.hoplimit.unwrap_or(ttl),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(kind: u16, seq: u32, body: &[u8]) -> Vec<u8> {
        let mut m = Vec::new();
        m.extend_from_slice(&((NLMSG_HDR + body.len()) as u32).to_ne_bytes());
        m.extend_from_slice(&kind.to_ne_bytes());
        m.extend_from_slice(&0u16.to_ne_bytes());
        m.extend_from_slice(&seq.to_ne_bytes());
        m.extend_from_slice(&0u32.to_ne_bytes());
        m.extend_from_slice(body);
        m.resize(m.len().next_multiple_of(4), 0);
        m
    }

    fn route_body(kind: u8, attrs: &[(u16, &[u8])]) -> Vec<u8> {
        let mut b = vec![libc::AF_INET as u8, 32, 0, 0, 254, 0, 0, kind, 0, 0, 0, 0];
        for &(k, p) in attrs {
            put_attr(&mut b, k, p);
        }
        b
    }

    #[test]
    fn parse_route_gives_device_gateway_source_and_metrics() {
        let mut metrics = Vec::new();
        put_attr(&mut metrics, RTAX_MTU, &1400u32.to_ne_bytes());
        put_attr(&mut metrics, RTAX_HOPLIMIT, &33u32.to_ne_bytes());
        let body = route_body(
            RTN_UNICAST,
            &[
                (RTA_DST, &[10, 0, 0, 9]),
                (RTA_OIF, &7u32.to_ne_bytes()),
                (RTA_GATEWAY, &[192, 168, 1, 1]),
                (RTA_PREFSRC, &[192, 168, 1, 20]),
                (RTA_METRICS | 0x8000, &metrics), // NLA_F_NESTED
            ],
        );
        let r = parse_route(&body).unwrap();
        assert_eq!(
            r,
            Route {
                oif: 7,
                gateway: Some(Ipv4Addr::new(192, 168, 1, 1)),
                src: Ipv4Addr::new(192, 168, 1, 20),
                mtu: Some(1400),
                hoplimit: Some(33),
            }
        );
        let on_link = route_body(
            RTN_UNICAST,
            &[
                (RTA_OIF, &2u32.to_ne_bytes()),
                (RTA_PREFSRC, &[10, 0, 0, 1]),
            ],
        );
        assert_eq!(parse_route(&on_link).unwrap().gateway, None);
    }

    #[test]
    fn parse_route_refuses_local_routes_and_missing_fields() {
        let local = route_body(
            2,
            &[
                (RTA_OIF, &1u32.to_ne_bytes()),
                (RTA_PREFSRC, &[127, 0, 0, 1]),
            ],
        );
        assert_eq!(parse_route(&local), Err(Unresolved::Route));
        let no_src = route_body(RTN_UNICAST, &[(RTA_OIF, &1u32.to_ne_bytes())]);
        assert_eq!(parse_route(&no_src), Err(Unresolved::Route));
        assert_eq!(parse_route(&[]), Err(Unresolved::Route));
    }

    #[test]
    fn parse_link_takes_only_ethernet_devices_that_are_up() {
        let link = |kind: u16, flags: u32| {
            let mut b = vec![0u8; 16];
            b[2..4].copy_from_slice(&kind.to_ne_bytes());
            b[8..12].copy_from_slice(&flags.to_ne_bytes());
            put_attr(&mut b, IFLA_MTU, &1500u32.to_ne_bytes());
            put_attr(&mut b, IFLA_ADDRESS, &[2, 1, 2, 3, 4, 5]);
            b
        };
        let up = libc::IFF_UP as u32;
        assert_eq!(
            parse_link(&link(ARPHRD_ETHER, up)),
            Ok(([2, 1, 2, 3, 4, 5], 1500))
        );
        assert_eq!(parse_link(&link(ARPHRD_ETHER, 0)), Err(Unresolved::Device));
        assert_eq!(parse_link(&link(512, up)), Err(Unresolved::Device)); // ARPHRD_PPP
        assert_eq!(parse_link(&[1, 2]), Err(Unresolved::Query));
    }

    #[test]
    fn parse_neighbour_takes_only_valid_entries() {
        let neigh = |state: u16| {
            let mut b = vec![0u8; 12];
            b[8..10].copy_from_slice(&state.to_ne_bytes());
            put_attr(&mut b, NDA_DST, &[10, 0, 0, 1]);
            put_attr(&mut b, NDA_LLADDR, &[2, 9, 8, 7, 6, 5]);
            b
        };
        assert_eq!(parse_neighbour(&neigh(0x04)), Ok([2, 9, 8, 7, 6, 5])); // STALE
        assert_eq!(parse_neighbour(&neigh(0x01)), Err(Unresolved::Neighbour)); // INCOMPLETE
        assert_eq!(parse_neighbour(&neigh(0x20)), Err(Unresolved::Neighbour)); // FAILED
    }

    #[test]
    fn parse_reply_matches_by_sequence_number() {
        let mut b = msg(RTM_NEWROUTE, 4, &[1, 2, 3, 4]);
        b.extend(msg(RTM_NEWROUTE, 5, &[5, 6, 7, 8]));
        let r = reply(&b, 5, RTM_NEWROUTE).unwrap().unwrap();
        assert_eq!(&b[r], &[5u8, 6, 7, 8][..]);
        assert_eq!(reply(&b, 6, RTM_NEWROUTE), None);
        let err = msg(NLMSG_ERROR, 6, &(-libc::ENETUNREACH).to_ne_bytes());
        assert_eq!(reply(&err, 6, RTM_NEWROUTE), Some(Err(Unresolved::Route)));
        assert_eq!(
            reply(&err, 6, RTM_NEWNEIGH),
            Some(Err(Unresolved::Neighbour))
        );
        // Truncated input is no reply, not a panic.
        assert_eq!(reply(&b[..20], 5, RTM_NEWROUTE), None);
    }

    #[test]
    fn parse_truncated_bodies_without_panicking() {
        let mut metrics = Vec::new();
        put_attr(&mut metrics, RTAX_MTU, &1400u32.to_ne_bytes());
        let route = route_body(
            RTN_UNICAST,
            &[
                (RTA_OIF, &7u32.to_ne_bytes()),
                (RTA_PREFSRC, &[192, 168, 1, 20]),
                (RTA_METRICS, &metrics),
            ],
        );
        let mut neigh = vec![0u8; 12];
        neigh[8] = 0x02;
        put_attr(&mut neigh, NDA_LLADDR, &[2, 9, 8, 7, 6, 5]);
        for n in 0..route.len() {
            let _ = parse_route(&route[..n]);
            let _ = parse_link(&route[..n]);
        }
        for n in 0..neigh.len() {
            let _ = parse_neighbour(&neigh[..n]);
        }
        assert!(parse_route(&route).is_ok());
    }

    /// Asks this machine's kernel about the loopback address: a local route, refused.
    #[test]
    fn kernel_answers_a_route_query() {
        let mut q = RouteQuery::open().unwrap();
        let lo = SocketAddrV4::new(Ipv4Addr::LOCALHOST, 9);
        assert_eq!(q.route(lo, 51820, 0), Err(Unresolved::Route));
        // Loopback (index 1) is no Ethernet device.
        assert_eq!(q.link(1), Err(Unresolved::Device));
    }
}
