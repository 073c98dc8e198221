//! Where the kernel would send a datagram: the route (with our fwmark and ports, as policy
//! rules see a UDP socket's sends) over rtnetlink, the output device's type, address and MTU
//! by ioctl, and the next hop's link-layer address from /proc/net/arp. The packet-socket
//! transmit path (`packet_tx`) needs all three; anything it cannot use is an `Unresolved`
//! reason, and the datagrams then go through the UDP socket. None of these takes the
//! kernel's RTNL lock (rtnetlink's link and neighbour requests do, on the kernels OpenWrt
//! ships, and whatever holds it, such as a Wi-Fi restart, would stall the loop).
#![allow(unsafe_code)] // socket(2), send(2), recv(2) for AF_NETLINK; ioctl(2) for devices

use super::netlink::{attrs, messages, ne_u32, Message};
use super::packet_tx::PacketPath;
use std::io;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::ops::Range;
use std::os::fd::{AsRawFd, OwnedFd};

const NLMSG_HDR: usize = 16;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLM_F_DUMP: u16 = 0x300;
const RTM_NEWRULE: u16 = 32;
const RTM_GETRULE: u16 = 34;
const FRA_FWMARK: u16 = 10;
const FRA_FWMASK: u16 = 16;
/// fib_rule_hdr: family, dst_len, src_len, tos, table, two reserved bytes, action, flags.
const FIB_RULE_HDR: usize = 12;
const RTM_NEWROUTE: u16 = 24;
const RTM_GETROUTE: u16 = 26;
const RTA_DST: u16 = 1;
const RTA_OIF: u16 = 4;
const RTA_GATEWAY: u16 = 5;
const RTA_PREFSRC: u16 = 7;
const RTA_METRICS: u16 = 8;
const RTA_MARK: u16 = 16;
const RTA_IP_PROTO: u16 = 27;
const RTA_SPORT: u16 = 28;
const RTA_DPORT: u16 = 29;
const RTAX_LOCK: u16 = 1;
const RTAX_MTU: u16 = 2;
const RTAX_HOPLIMIT: u16 = 10;
const RTN_UNICAST: u8 = 1;
const ARPHRD_ETHER: u16 = 1;
/// /proc/net/arp's flag for a complete entry (a valid neighbour state).
const ATF_COM: u32 = 0x02;

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
    /// The MTU is locked (`mtu lock`): the kernel then sends without DF.
    pub mtu_locked: bool,
    pub hoplimit: Option<u8>,
}

/// The route lookup socket (replies are read right after each request: rtnetlink answers
/// within the request's own system call, so nothing waits).
pub struct RouteQuery {
    fd: OwnedFd,
    seq: u32,
    buf: Vec<u8>,
}

fn ipv4(p: &[u8]) -> Option<Ipv4Addr> {
    Some(Ipv4Addr::from(<[u8; 4]>::try_from(p).ok()?))
}

/// Where in `msgs` the body of the reply to request `seq` of type `kind` lies, or the reason
/// it is no such reply; None if `msgs` holds no answer to `seq`.
fn reply(msgs: &[u8], seq: u32, kind: u16) -> Option<Result<Range<usize>, Unresolved>> {
    for m in messages(msgs) {
        let m = m.ok()?;
        if m.seq == seq {
            return Some(if m.kind == kind {
                let at = m.at + NLMSG_HDR;
                Ok(at..at + m.body.len())
            } else {
                Err(if m.kind == NLMSG_ERROR {
                    Unresolved::Route // ENETUNREACH and the like
                } else {
                    Unresolved::Query
                })
            });
        }
    }
    None
}

/// Whether an RTM_NEWRULE body selects by firewall mark, other than exactly `own` (a
/// nonzero fwmark of ours, which every route query passes: wg-quick's `not fwmark` rule).
pub fn rule_uses_marks(body: &[u8], own: u32) -> bool {
    let Some(attrs_at) = body.get(FIB_RULE_HDR..) else {
        return false;
    };
    let (mut mark, mut mask) = (0, None);
    for (kind, p) in attrs(attrs_at) {
        match kind {
            FRA_FWMARK => mark = ne_u32(p, 0).unwrap_or(0),
            FRA_FWMASK => mask = ne_u32(p, 0),
            _ => {}
        }
    }
    // The kernel reports the mask only where a rule has a mark or a mask; a mark alone
    // means all of its bits.
    let mask = mask.unwrap_or(if mark != 0 { u32::MAX } else { 0 });
    if mark == 0 && mask == 0 {
        return false;
    }
    !(own != 0 && mark == own && mask == u32::MAX)
}

/// Reads a part of a rule dump for request `seq`: sets `found` if a rule selects by marks;
/// Some(Ok(())) once the dump is complete, Some(Err) if the kernel refused it, None if
/// more is to come.
fn scan_rules(msgs: &[u8], seq: u32, own: u32, found: &mut bool) -> Option<Result<(), ()>> {
    for m in messages(msgs) {
        let Ok(Message {
            kind, seq: s, body, ..
        }) = m
        else {
            return Some(Err(()));
        };
        if s == seq {
            match kind {
                NLMSG_DONE => return Some(Ok(())),
                NLMSG_ERROR => return Some(Err(())),
                RTM_NEWRULE => *found |= rule_uses_marks(body, own),
                _ => {}
            }
        }
    }
    None
}

/// Parses an RTM_NEWROUTE body (rtmsg, then attributes).
pub fn parse_route(body: &[u8]) -> Result<Route, Unresolved> {
    if body.len() < 12 || body[0] != libc::AF_INET as u8 || body[7] != RTN_UNICAST {
        return Err(Unresolved::Route);
    }
    let (mut oif, mut gateway, mut src, mut mtu, mut hoplimit) = (None, None, None, None, None);
    let mut locked = 0;
    for (kind, p) in attrs(&body[12..]) {
        match kind {
            RTA_OIF => oif = ne_u32(p, 0).map(|i| i as i32),
            RTA_GATEWAY => gateway = ipv4(p),
            RTA_PREFSRC => src = ipv4(p),
            RTA_METRICS => {
                for (m, v) in attrs(p) {
                    match m {
                        RTAX_LOCK => locked = ne_u32(v, 0).unwrap_or(0),
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
        mtu_locked: locked & (1 << RTAX_MTU) != 0,
        hoplimit: hoplimit.filter(|&h| h != 0),
    })
}

/// The link-layer address of `addr` on device `dev` in /proc/net/arp's text, if its entry
/// is complete and Ethernet.
pub fn parse_arp(table: &[u8], addr: Ipv4Addr, dev: &[u8]) -> Result<[u8; 6], Unresolved> {
    let text = std::str::from_utf8(table).map_err(|_| Unresolved::Neighbour)?;
    for line in text.lines().skip(1) {
        // IP address, HW type, Flags, HW address, Mask, Device
        let mut f = line.split_ascii_whitespace();
        let (Some(ip), Some(hw), Some(flags), Some(mac), Some(_), Some(name), None) = (
            f.next(),
            f.next(),
            f.next(),
            f.next(),
            f.next(),
            f.next(),
            f.next(),
        ) else {
            continue;
        };
        if ip.parse() != Ok(addr) || name.as_bytes() != dev {
            continue;
        }
        let complete = flags
            .strip_prefix("0x")
            .and_then(|x| u32::from_str_radix(x, 16).ok())
            .is_some_and(|fl| fl & ATF_COM != 0);
        if hw != "0x1" || !complete || mac.len() != 17 {
            return Err(Unresolved::Neighbour);
        }
        let mut out = [0u8; 6];
        for (o, part) in out.iter_mut().zip(mac.split(':')) {
            *o = u8::from_str_radix(part, 16).map_err(|_| Unresolved::Neighbour)?;
        }
        return if mac.split(':').count() == 6 {
            Ok(out)
        } else {
            Err(Unresolved::Neighbour)
        };
    }
    Err(Unresolved::Neighbour)
}

/// The name, address and MTU of device `ifindex`, if it is an Ethernet device that is up.
fn ethernet_device(ifindex: i32) -> Result<(libc::ifreq, [u8; 6], u32), Unresolved> {
    let fd = super::tun::ctl_socket().map_err(|_| Unresolved::Query)?;
    // SAFETY: ifreq is plain data; all-zero is valid before we fill it.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    ifr.ifr_ifru.ifru_ifindex = ifindex;
    let ask = |ifr: &mut libc::ifreq, req| {
        // SAFETY: each of these requests reads or fills one ifreq, which lives for the call.
        let rc = unsafe { libc::ioctl(fd.as_raw_fd(), req as _, ifr as *mut libc::ifreq) };
        if rc < 0 {
            Err(Unresolved::Device) // gone meanwhile
        } else {
            Ok(())
        }
    };
    ask(&mut ifr, libc::SIOCGIFNAME)?;
    let mut q = ifr;
    ask(&mut q, libc::SIOCGIFFLAGS)?;
    // SAFETY: SIOCGIFFLAGS filled the flags member of the union.
    let up = i32::from(unsafe { q.ifr_ifru.ifru_flags }) & libc::IFF_UP != 0;
    ask(&mut q, libc::SIOCGIFHWADDR)?;
    // SAFETY: SIOCGIFHWADDR filled the address member of the union.
    let hw = unsafe { q.ifr_ifru.ifru_hwaddr };
    if !up || hw.sa_family != ARPHRD_ETHER {
        return Err(Unresolved::Device);
    }
    let mut mac = [0u8; 6];
    for (m, &b) in mac.iter_mut().zip(&hw.sa_data) {
        *m = b as u8;
    }
    ask(&mut q, libc::SIOCGIFMTU)?;
    // SAFETY: SIOCGIFMTU filled the MTU member of the union.
    let mtu = unsafe { q.ifr_ifru.ifru_mtu };
    Ok((ifr, mac, mtu.max(0) as u32))
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
        Ok(RouteQuery {
            fd: super::netlink::route_socket()?,
            seq: 0,
            buf: vec![0; 16 << 10],
        })
    }

    /// Sends request `kind` (with `flags` besides NLM_F_REQUEST) carrying `body`.
    fn request(&mut self, kind: u16, flags: u16, body: &[u8]) -> Result<(), Unresolved> {
        self.seq = self.seq.wrapping_add(1);
        let m = super::netlink::request(kind, flags, self.seq, body);
        // SAFETY: m is a live buffer of the length passed; the kernel is the destination of
        // an unbound netlink socket's send.
        // sendto, not send: the same system call on every ABI (see `sys::send`).
        let r = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                m.as_ptr() as *const libc::c_void,
                m.len(),
                0,
                std::ptr::null(),
                0,
            )
        };
        if r < 0 {
            return Err(Unresolved::Query);
        }
        Ok(())
    }

    /// Reads one queued message batch into `buf`; its length, or None if nothing is queued
    /// or it was truncated.
    fn receive(&mut self) -> Option<usize> {
        // SAFETY: buf is a live buffer of the length passed. recvfrom, not recv: the same
        // system call on every ABI (see `sys::recv`).
        let n = unsafe {
            libc::recvfrom(
                self.fd.as_raw_fd(),
                self.buf.as_mut_ptr() as *mut libc::c_void,
                self.buf.len(),
                libc::MSG_DONTWAIT | libc::MSG_TRUNC,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
        usize::try_from(n).ok().filter(|&n| n <= self.buf.len())
    }

    /// Sends request `kind` with `body` and returns the reply's body (of type `answer`).
    fn ask(&mut self, kind: u16, answer: u16, body: &[u8]) -> Result<&[u8], Unresolved> {
        self.request(kind, 0, body)?;
        // The reply is queued by now; older ones (a lookup that failed halfway) are skipped.
        let mut found = None;
        for _ in 0..8 {
            let n = self.receive().ok_or(Unresolved::Query)?; // nothing (yet) or truncated
            if let Some(r) = reply(&self.buf[..n], self.seq, answer) {
                found = Some(r);
                break;
            }
        }
        Ok(&self.buf[found.ok_or(Unresolved::Query)??])
    }

    /// Whether any IPv4 policy routing rule selects by firewall mark (other than exactly
    /// `own`, see `rule_uses_marks`). Such a rule can route a datagram by a mark that an
    /// output rule of the firewall sets (mwan3, pbr), which the packet path never sees. A
    /// rule dump takes the kernel's RTNL lock, so this is asked only when rules change.
    pub fn mark_rules(&mut self, own: u32) -> Result<bool, Unresolved> {
        self.request(
            RTM_GETRULE,
            NLM_F_DUMP,
            &[libc::AF_INET as u8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        )?;
        let mut found = false;
        // The kernel fills the next part of a dump as each one is read: a few per thousand
        // rules; any more and the answer is "yes", which keeps to the UDP socket.
        for _ in 0..64 {
            let n = self.receive().ok_or(Unresolved::Query)?;
            match scan_rules(&self.buf[..n], self.seq, own, &mut found) {
                Some(Ok(())) => return Ok(found),
                Some(Err(())) => return Err(Unresolved::Query),
                None => {}
            }
        }
        Err(Unresolved::Query)
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

    /// Route, device and next hop for datagrams to `to`; `ttl` unless the route sets one.
    pub fn resolve(
        &mut self,
        to: SocketAddrV4,
        sport: u16,
        fwmark: u32,
        ttl: u8,
    ) -> Result<PacketPath, Unresolved> {
        let route = self.route(to, sport, fwmark)?;
        let (ifr, src_mac, dev_mtu) = ethernet_device(route.oif)?;
        let name: Vec<u8> = ifr
            .ifr_name
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        let arp = std::fs::read("/proc/net/arp").map_err(|_| Unresolved::Query)?;
        let dst_mac = parse_arp(&arp, route.gateway.unwrap_or(*to.ip()), &name)?;
        Ok(PacketPath {
            ifindex: route.oif,
            src_mac,
            dst_mac,
            src: route.src,
            mtu: route.mtu.map_or(dev_mtu, |m| m.min(dev_mtu)),
            df: !route.mtu_locked,
            ttl: route.hoplimit.unwrap_or(ttl),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::sys::netlink::test_message as msg;

    fn route_body(kind: u8, attrs: &[(u16, &[u8])]) -> Vec<u8> {
        let mut b = vec![libc::AF_INET as u8, 32, 0, 0, 254, 0, 0, kind, 0, 0, 0, 0];
        for &(k, p) in attrs {
            put_attr(&mut b, k, p);
        }
        b
    }

    fn rule_body(attrs: &[(u16, &[u8])]) -> Vec<u8> {
        let mut b = vec![libc::AF_INET as u8, 0, 0, 0, 100, 0, 0, 1, 0, 0, 0, 0];
        for &(k, p) in attrs {
            put_attr(&mut b, k, p);
        }
        b
    }

    #[test]
    fn rules_by_mark_are_found_except_our_own_exact_mark() {
        let mark = |m: u32| m.to_ne_bytes();
        // mwan3/pbr: fwmark 0x100/0xff00 lookup 100.
        let policy = rule_body(&[(FRA_FWMARK, &mark(0x100)), (FRA_FWMASK, &mark(0xff00))]);
        assert!(rule_uses_marks(&policy, 0));
        assert!(
            rule_uses_marks(&policy, 0x100),
            "a mask is not our exact mark"
        );
        // A mark without a mask attribute means all bits.
        let exact = rule_body(&[(FRA_FWMARK, &mark(51820))]);
        assert!(rule_uses_marks(&exact, 0));
        assert!(
            !rule_uses_marks(&exact, 51820),
            "wg-quick's rule for our own mark"
        );
        // `fwmark 0/0xff`: unmarked traffic only, still selection by mark.
        assert!(rule_uses_marks(&rule_body(&[(FRA_FWMASK, &mark(0xff))]), 0));
        // The usual three rules, and malformed bodies.
        assert!(!rule_uses_marks(&rule_body(&[(6, &mark(254))]), 0));
        assert!(!rule_uses_marks(&policy[..8], 0));
    }

    #[test]
    fn rule_dump_is_read_to_its_end() {
        let plain = rule_body(&[(6, &254u32.to_ne_bytes())]);
        let marked = rule_body(&[(FRA_FWMARK, &1u32.to_ne_bytes())]);
        let mut part = msg(RTM_NEWRULE, 5, &plain);
        part.extend(msg(RTM_NEWRULE, 4, &marked)); // an older request's: not ours
        let mut found = false;
        assert_eq!(scan_rules(&part, 5, 0, &mut found), None, "more to come");
        assert!(!found);
        let mut end = msg(RTM_NEWRULE, 5, &marked);
        end.extend(msg(NLMSG_DONE, 5, &[0; 4]));
        assert_eq!(scan_rules(&end, 5, 0, &mut found), Some(Ok(())));
        assert!(found);
        let mut found = false;
        assert_eq!(
            scan_rules(&msg(NLMSG_ERROR, 5, &[0; 20]), 5, 0, &mut found),
            Some(Err(()))
        );
        // Truncated input never reads past its end.
        for n in 0..end.len() {
            let _ = scan_rules(&end[..n], 5, 0, &mut found);
        }
    }

    /// The kernel's own answer, in this namespace: no mark rules by default.
    #[test]
    fn rule_dump_from_this_kernel() {
        let Ok(mut q) = RouteQuery::open() else {
            eprintln!("SKIPPED: no rtnetlink socket here");
            return;
        };
        match q.mark_rules(0) {
            Ok(found) => eprintln!("mark rules here: {found}"),
            Err(e) => panic!("rule dump failed: {e:?}"),
        }
    }

    #[test]
    fn parse_route_gives_device_gateway_source_and_metrics() {
        let mut metrics = Vec::new();
        put_attr(&mut metrics, RTAX_LOCK, &(1u32 << RTAX_MTU).to_ne_bytes());
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
                mtu_locked: true,
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
        let r = parse_route(&on_link).unwrap();
        assert_eq!((r.gateway, r.mtu_locked), (None, false));
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

    const ARP: &[u8] =
        b"IP address       HW type     Flags       HW address            Mask     Device
192.168.1.1      0x1         0x2         aa:bb:cc:0d:ee:ff     *        wan
192.168.1.7      0x1         0x0         00:00:00:00:00:00     *        wan
10.0.0.1         0x1         0x6         02:00:00:00:00:01     *        br-lan
10.0.0.1         0x1         0x2         02:00:00:00:00:09     *        lan2
10.0.0.9         0x200       0x2         02:00:00:00:00:02     *        br-lan
";

    #[test]
    fn parse_arp_takes_complete_ethernet_entries_of_the_device() {
        let ip = |s: &str| s.parse::<Ipv4Addr>().unwrap();
        assert_eq!(
            parse_arp(ARP, ip("192.168.1.1"), b"wan"),
            Ok([0xaa, 0xbb, 0xcc, 0x0d, 0xee, 0xff])
        );
        // Permanent and complete; the same address on another device is another entry.
        assert_eq!(
            parse_arp(ARP, ip("10.0.0.1"), b"br-lan"),
            Ok([2, 0, 0, 0, 0, 1])
        );
        assert_eq!(
            parse_arp(ARP, ip("10.0.0.1"), b"lan2"),
            Ok([2, 0, 0, 0, 0, 9])
        );
        // Incomplete, not Ethernet, absent, on another device.
        for (a, dev) in [
            ("192.168.1.7", "wan"),
            ("10.0.0.9", "br-lan"),
            ("192.168.1.2", "wan"),
            ("192.168.1.1", "lan"),
        ] {
            assert_eq!(
                parse_arp(ARP, ip(a), dev.as_bytes()),
                Err(Unresolved::Neighbour),
                "{a} {dev}"
            );
        }
        // A prefix of an address is not the address.
        assert_eq!(
            parse_arp(ARP, ip("192.168.1.10"), b"wan"),
            Err(Unresolved::Neighbour)
        );
    }

    #[test]
    fn parse_arp_refuses_malformed_lines_without_panicking() {
        let ip = "192.168.1.1".parse().unwrap();
        for n in 0..ARP.len() {
            let _ = parse_arp(&ARP[..n], ip, b"wan");
        }
        for bad in [
            &b"h\n192.168.1.1 0x1 0x2 aa:bb:cc:0d:ee * wan\n"[..],
            b"h\n192.168.1.1 0x1 0x2 aa:bb:cc:0d:ee:ff:11 * wan\n",
            b"h\n192.168.1.1 0x1 0x2 aa:bb:cc:0d:ee:zz * wan\n",
            b"h\n192.168.1.1 1 2 aa:bb:cc:0d:ee:ff * wan\n",
            b"h\n192.168.1.1 0x1 0x2 aa:bb:cc:0d:ee:ff * wan extra\n",
            b"\xff\xfe\n\xff 0x1\n",
        ] {
            assert_eq!(parse_arp(bad, ip, b"wan"), Err(Unresolved::Neighbour));
        }
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
        let other = msg(RTM_GETROUTE, 6, &[]);
        assert_eq!(reply(&other, 6, RTM_NEWROUTE), Some(Err(Unresolved::Query)));
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
        for n in 0..route.len() {
            let _ = parse_route(&route[..n]);
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
        assert_eq!(ethernet_device(1).map(|d| d.1), Err(Unresolved::Device));
    }
}
