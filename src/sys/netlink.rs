//! Link events from rtnetlink: we exit when our interface is deleted (what `wg-quick down`
//! and `ip link del` rely on) and follow MTU changes so padding never exceeds the MTU. Any
//! other link, address or route change is reported too: connected sockets pinned a route.
#![allow(unsafe_code)] // socket(2)/bind(2) for AF_NETLINK, if_nametoindex(3)

use std::ffi::CString;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

const RTM_NEWLINK: u16 = 16;
const RTM_DELLINK: u16 = 17;
const RTM_NEWADDR: u16 = 20;
const RTM_DELADDR: u16 = 21;
const RTM_NEWROUTE: u16 = 24;
const RTM_DELROUTE: u16 = 25;
const RTM_NEWNEIGH: u16 = 28;
const RTM_DELNEIGH: u16 = 29;
const RTM_NEWRULE: u16 = 32;
const RTM_DELRULE: u16 = 33;
/// rtnetlink's neighbour and IPv4 policy-rule multicast groups (RTNLGRP_NEIGH, _IPV4_RULE).
const RTNLGRP_NEIGH: libc::c_int = 3;
const RTNLGRP_IPV4_RULE: libc::c_int = 8;
const IFLA_MTU: u16 = 4;
const NLMSG_HDR: usize = 16;
const IFINFO_LEN: usize = 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkEvent {
    Deleted,
    Mtu(u32),
    /// Another link, an address or a route changed (one event per batch of messages).
    Routing,
    /// A neighbour entry on this device (ifindex) changed (once `watch_packet_path` ran).
    Neighbour(i32),
    /// An IPv4 policy routing rule was added or removed (once `watch_packet_path` ran).
    Rules,
}

pub struct LinkMonitor {
    file: File,
    ifindex: i32,
}

pub fn ifindex(name: &str) -> Option<i32> {
    let c = CString::new(name).ok()?;
    // SAFETY: c is a valid NUL-terminated string for the duration of the call.
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    (i != 0).then_some(i as i32)
}

/// A non-blocking rtnetlink socket.
pub fn route_socket() -> io::Result<OwnedFd> {
    super::socket(
        libc::AF_NETLINK,
        libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
        libc::NETLINK_ROUTE,
    )
}

impl LinkMonitor {
    pub fn new(ifname: &str) -> io::Result<LinkMonitor> {
        let ifindex = ifindex(ifname).ok_or_else(io::Error::last_os_error)?;
        let owned = route_socket()?;
        let fd = owned.as_raw_fd();
        // SAFETY: sockaddr_nl is plain data; all-zero is valid before we fill it.
        let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        addr.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        addr.nl_groups = (libc::RTMGRP_LINK
            | libc::RTMGRP_IPV4_IFADDR
            | libc::RTMGRP_IPV6_IFADDR
            | libc::RTMGRP_IPV4_ROUTE
            | libc::RTMGRP_IPV6_ROUTE) as u32;
        // SAFETY: addr is a valid sockaddr_nl of the size we pass.
        let rc = unsafe {
            libc::bind(
                fd,
                &addr as *const libc::sockaddr_nl as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(LinkMonitor {
            file: File::from(owned),
            ifindex,
        })
    }

    /// Reads every pending notification; returns the events about our interface.
    pub fn drain(&self, buf: &mut [u8], out: &mut Vec<LinkEvent>) -> io::Result<()> {
        loop {
            match (&self.file).read(buf) {
                Ok(0) => return Ok(()),
                Ok(n) => parse(&buf[..n], self.ifindex, out),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // ENOBUFS: we missed events; the caller re-checks the link by name.
                Err(e) => return Err(e),
            }
        }
    }

    pub fn ifindex(&self) -> i32 {
        self.ifindex
    }

    /// Reports neighbour and IPv4 rule changes too from now on (the packet transmit path
    /// uses the next hop's link-layer address and must know of policy routing by marks;
    /// most interfaces never need them).
    pub fn watch_packet_path(&self) -> io::Result<()> {
        for group in [RTNLGRP_NEIGH, RTNLGRP_IPV4_RULE] {
            // SAFETY: an int option of its size on our own socket.
            let rc = unsafe {
                libc::setsockopt(
                    self.file.as_raw_fd(),
                    libc::SOL_NETLINK,
                    libc::NETLINK_ADD_MEMBERSHIP,
                    &group as *const libc::c_int as *const libc::c_void,
                    std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                )
            };
            if rc < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

impl AsFd for LinkMonitor {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }
}

pub(crate) fn ne_u16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

pub(crate) fn ne_u32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// One netlink message of a buffer: its type, sequence number, where it starts in the buffer,
/// and its body (after the 16-byte header).
pub(crate) struct Message<'a> {
    pub kind: u16,
    pub seq: u32,
    pub at: usize,
    pub body: &'a [u8],
}

/// The messages of `buf` (native byte order, each 4-byte aligned), in order: `Ok` for each
/// whole one, then one `Err(())` where a header's length is impossible (the walk ends there;
/// a tail too short for a header ends it silently).
pub(crate) fn messages(buf: &[u8]) -> impl Iterator<Item = Result<Message<'_>, ()>> {
    let mut at = 0;
    std::iter::from_fn(move || {
        let b = buf.get(at..).filter(|b| b.len() >= NLMSG_HDR)?;
        let len = ne_u32(b, 0)? as usize;
        if len < NLMSG_HDR || len > b.len() {
            at = buf.len();
            return Some(Err(()));
        }
        let m = Message {
            kind: ne_u16(b, 4)?,
            seq: ne_u32(b, 8)?,
            at,
            body: &b[NLMSG_HDR..len],
        };
        at = (at + ((len + 3) & !3)).min(buf.len());
        Some(Ok(m))
    })
}

/// The route attributes from `b` on: (type without its flag bits, payload); ends at the
/// first malformed one.
pub(crate) fn attrs(mut b: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
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

/// Walks netlink messages and their link attributes.
pub fn parse(b: &[u8], ifindex: i32, out: &mut Vec<LinkEvent>) {
    let (mut routing, mut rules) = (false, false);
    for m in messages(b) {
        // A malformed message: the whole buffer is ignored.
        let Ok(Message { kind, body, .. }) = m else {
            return;
        };
        if matches!(kind, RTM_NEWNEIGH | RTM_DELNEIGH)
            && body.first() == Some(&(libc::AF_INET as u8))
        {
            // ndmsg: family, pads, then the device's index. IPv4 only: the packet path's.
            if let Some(index) = ne_u32(body, 4) {
                out.push(LinkEvent::Neighbour(index as i32));
            }
        }
        routing |= matches!(
            kind,
            RTM_NEWADDR | RTM_DELADDR | RTM_NEWROUTE | RTM_DELROUTE
        );
        rules |= matches!(kind, RTM_NEWRULE | RTM_DELRULE)
            && body.first() == Some(&(libc::AF_INET as u8));
        if (kind == RTM_NEWLINK || kind == RTM_DELLINK) && body.len() >= IFINFO_LEN {
            let index = ne_u32(body, 4).unwrap_or(0) as i32;
            routing |= index != ifindex;
            if index == ifindex {
                if kind == RTM_DELLINK {
                    out.push(LinkEvent::Deleted);
                } else {
                    for (atype, p) in attrs(&body[IFINFO_LEN..]) {
                        if atype == IFLA_MTU {
                            if let Some(mtu) = ne_u32(p, 0) {
                                out.push(LinkEvent::Mtu(mtu));
                            }
                        }
                    }
                }
            }
        }
    }
    if routing {
        out.push(LinkEvent::Routing);
    }
    if rules {
        out.push(LinkEvent::Rules);
    }
}

/// A request to the kernel: the netlink header (NLM_F_REQUEST and `flags`, sequence `seq`)
/// followed by `body`.
pub(crate) fn request(kind: u16, flags: u16, seq: u32, body: &[u8]) -> Vec<u8> {
    const NLM_F_REQUEST: u16 = 1;
    let mut m = Vec::with_capacity(NLMSG_HDR + body.len());
    m.extend_from_slice(&((NLMSG_HDR + body.len()) as u32).to_ne_bytes());
    m.extend_from_slice(&kind.to_ne_bytes());
    m.extend_from_slice(&(NLM_F_REQUEST | flags).to_ne_bytes());
    m.extend_from_slice(&seq.to_ne_bytes());
    m.extend_from_slice(&0u32.to_ne_bytes());
    m.extend_from_slice(body);
    m
}

/// A netlink message as the kernel frames it (header, body, padding to 4), for tests of the
/// readers here and in `rtnl` and `route_query`.
#[cfg(test)]
pub(crate) fn test_message(kind: u16, seq: u32, body: &[u8]) -> Vec<u8> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(kind: u16, index: i32, attrs: &[(u16, &[u8])]) -> Vec<u8> {
        let mut body = vec![0u8; IFINFO_LEN];
        body[4..8].copy_from_slice(&index.to_ne_bytes());
        for (t, v) in attrs {
            let l = 4 + v.len();
            body.extend_from_slice(&(l as u16).to_ne_bytes());
            body.extend_from_slice(&t.to_ne_bytes());
            body.extend_from_slice(v);
            while body.len() % 4 != 0 {
                body.push(0);
            }
        }
        let mut m = Vec::new();
        m.extend_from_slice(&((NLMSG_HDR + body.len()) as u32).to_ne_bytes());
        m.extend_from_slice(&kind.to_ne_bytes());
        m.extend_from_slice(&[0u8; 10]);
        m.extend_from_slice(&body);
        m
    }

    #[test]
    fn parses_our_link_events_only() {
        let mut b = msg(
            RTM_NEWLINK,
            7,
            &[(3, b"wg0\0"), (IFLA_MTU, &1380u32.to_ne_bytes())],
        );
        b.extend(msg(RTM_DELLINK, 8, &[]));
        b.extend(msg(RTM_DELLINK, 7, &[]));
        let mut out = Vec::new();
        parse(&b, 7, &mut out);
        assert_eq!(
            out,
            vec![LinkEvent::Mtu(1380), LinkEvent::Deleted, LinkEvent::Routing]
        );
        // Only our own link: no routing event.
        let mut out = Vec::new();
        parse(&msg(RTM_NEWLINK, 7, &[]), 7, &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn address_and_route_changes_are_one_routing_event() {
        let mut b = msg(RTM_NEWADDR, 3, &[]);
        b.extend(msg(RTM_DELROUTE, 0, &[]));
        b.extend(msg(RTM_NEWROUTE, 0, &[]));
        let mut out = Vec::new();
        parse(&b, 7, &mut out);
        assert_eq!(out, vec![LinkEvent::Routing]);
    }

    #[test]
    fn neighbour_changes_name_their_device() {
        // ndmsg keeps the device's index where ifinfomsg does; its first byte is the family.
        let v4 = |kind, index| {
            let mut m = msg(kind, index, &[]);
            m[NLMSG_HDR] = libc::AF_INET as u8;
            m
        };
        let mut b = v4(RTM_NEWNEIGH, 4);
        b.extend(v4(RTM_DELNEIGH, 9));
        let mut v6 = msg(RTM_NEWNEIGH, 5, &[]);
        v6[NLMSG_HDR] = libc::AF_INET6 as u8;
        b.extend(v6);
        let mut out = Vec::new();
        parse(&b, 7, &mut out);
        assert_eq!(out, vec![LinkEvent::Neighbour(4), LinkEvent::Neighbour(9)]);
    }

    #[test]
    fn ipv4_rule_changes_are_one_event() {
        // fib_rule_hdr starts with the family, as ndmsg does.
        let rule = |kind, family: libc::c_int| {
            let mut m = msg(kind, 0, &[]);
            m[NLMSG_HDR] = family as u8;
            m
        };
        let mut b = rule(RTM_NEWRULE, libc::AF_INET);
        b.extend(rule(RTM_DELRULE, libc::AF_INET));
        let mut out = Vec::new();
        parse(&b, 7, &mut out);
        assert_eq!(out, vec![LinkEvent::Rules]);
        out.clear();
        parse(&rule(RTM_NEWRULE, libc::AF_INET6), 7, &mut out);
        assert!(
            out.is_empty(),
            "IPv6 rules do not touch the IPv4 packet path"
        );
    }

    #[test]
    fn truncated_input_is_ignored() {
        let b = msg(RTM_NEWLINK, 7, &[(IFLA_MTU, &1380u32.to_ne_bytes())]);
        for n in 0..b.len() {
            let mut out = Vec::new();
            parse(&b[..n], 7, &mut out);
            assert!(out.is_empty());
        }
        let mut bad = b.clone();
        bad[NLMSG_HDR + IFINFO_LEN] = 200; // attribute longer than the message
        let mut out = Vec::new();
        parse(&bad, 7, &mut out);
        assert!(out.is_empty());
    }
}
