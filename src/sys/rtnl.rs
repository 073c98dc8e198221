//! rtnetlink requests that change links and addresses, as `ip link add`, `ip link set up`
//! and `ip addr add` make them, for `solowg bench`'s own namespaces (the daemon changes
//! none: it only listens, `netlink.rs`). A socket works in the network namespace of the
//! thread that opened it (`netns::NetNs::run`).

#[cfg(test)]
use super::netlink::attrs;
use super::netlink::{messages, ne_u32, Message};
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::time::Duration;

const RTM_NEWLINK: u16 = 16;
const RTM_DELLINK: u16 = 17;
const RTM_GETLINK: u16 = 18;
const RTM_NEWADDR: u16 = 20;
const NLMSG_ERROR: u16 = 2;
const NLM_F_ACK: u16 = 4;
const NLM_F_EXCL: u16 = 0x200;
const NLM_F_CREATE: u16 = 0x400;
const IFLA_IFNAME: u16 = 3;
const IFLA_LINKINFO: u16 = 18;
const IFLA_NET_NS_FD: u16 = 28;
const IFLA_INFO_KIND: u16 = 1;
const IFLA_INFO_DATA: u16 = 2;
const VETH_INFO_PEER: u16 = 1;
const IFA_ADDRESS: u16 = 1;
const IFA_LOCAL: u16 = 2;
const IFINFO_LEN: usize = 16;
/// How long the kernel may take to answer one request (creating a link loads its module).
const ANSWER_WITHIN: Duration = Duration::from_secs(5);

/// Appends an attribute (padded to 4 bytes).
fn put_attr(m: &mut Vec<u8>, kind: u16, payload: &[u8]) {
    m.extend_from_slice(&((4 + payload.len()) as u16).to_ne_bytes());
    m.extend_from_slice(&kind.to_ne_bytes());
    m.extend_from_slice(payload);
    m.resize(m.len().next_multiple_of(4), 0);
}

/// An interface name as the kernel takes it: NUL-terminated, below IFNAMSIZ.
fn ifname(name: &str) -> io::Result<Vec<u8>> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ || name.bytes().any(|b| b == 0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("bad interface name '{name}'"),
        ));
    }
    let mut v = name.as_bytes().to_vec();
    v.push(0);
    Ok(v)
}

/// An ifinfomsg: family unspecified, `index`, `flags` among `change`.
fn ifinfo(index: i32, flags: u32, change: u32) -> Vec<u8> {
    let mut b = vec![0u8; IFINFO_LEN];
    b[4..8].copy_from_slice(&index.to_ne_bytes());
    b[8..12].copy_from_slice(&flags.to_ne_bytes());
    b[12..16].copy_from_slice(&change.to_ne_bytes());
    b
}

/// The body of RTM_NEWLINK creating link `name` of `kind`, with `data` as its
/// IFLA_INFO_DATA (when not empty).
fn new_link_body(name: &[u8], kind: &str, data: &[u8]) -> Vec<u8> {
    let mut info = Vec::new();
    put_attr(&mut info, IFLA_INFO_KIND, kind.as_bytes());
    if !data.is_empty() {
        put_attr(&mut info, IFLA_INFO_DATA, data);
    }
    let mut body = ifinfo(0, 0, 0);
    put_attr(&mut body, IFLA_IFNAME, name);
    put_attr(&mut body, IFLA_LINKINFO, &info);
    body
}

/// What an answer to request `seq` says: Some(Ok) acknowledged (or, for a query, the
/// ifinfomsg's index), Some(Err) refused, None not in `buf`.
fn answer(buf: &[u8], seq: u32) -> Option<io::Result<i32>> {
    for m in messages(buf) {
        let Ok(Message {
            kind, seq: s, body, ..
        }) = m
        else {
            return Some(Err(io::Error::other("malformed netlink answer")));
        };
        if s != seq {
            continue;
        }
        if kind == NLMSG_ERROR {
            let errno = -(ne_u32(body, 0)? as i32);
            return Some(match errno {
                0 => Ok(0),
                e => Err(io::Error::from_raw_os_error(e)),
            });
        }
        if kind == RTM_NEWLINK {
            return ne_u32(body, 4).map(|i| Ok(i as i32));
        }
    }
    None
}

/// A blocking rtnetlink socket in the namespace of the thread that opened it.
pub struct Rtnl {
    fd: OwnedFd,
    seq: u32,
    buf: Vec<u8>,
}

impl Rtnl {
    pub fn open() -> io::Result<Rtnl> {
        let fd = super::socket(
            libc::AF_NETLINK,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            libc::NETLINK_ROUTE,
        )?;
        socket2::SockRef::from(&fd).set_read_timeout(Some(ANSWER_WITHIN))?;
        Ok(Rtnl {
            fd,
            seq: 0,
            buf: vec![0; 32 << 10],
        })
    }

    /// Sends request `kind` with `flags` and `body`, and waits for its answer.
    fn ask(&mut self, kind: u16, flags: u16, body: &[u8]) -> io::Result<i32> {
        self.seq = self.seq.wrapping_add(1);
        let m = super::netlink::request(kind, flags, self.seq, body);
        super::send(self.fd.as_fd(), &m, 0)?;
        // Bounded: each read waits at most ANSWER_WITHIN; older answers are skipped.
        for _ in 0..16 {
            let n = super::recv(self.fd.as_fd(), &mut self.buf, 0)?;
            if let Some(r) = answer(&self.buf[..n], self.seq) {
                return r;
            }
        }
        Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "no answer from rtnetlink",
        ))
    }

    /// Creates a veth pair: `name` here, its peer `peer` placed straight into the network
    /// namespace `peer_ns` (it never appears in this one).
    pub fn add_veth(&mut self, name: &str, peer: &str, peer_ns: BorrowedFd<'_>) -> io::Result<()> {
        let mut peer_info = ifinfo(0, 0, 0);
        put_attr(&mut peer_info, IFLA_IFNAME, &ifname(peer)?);
        put_attr(
            &mut peer_info,
            IFLA_NET_NS_FD,
            &(peer_ns.as_raw_fd() as u32).to_ne_bytes(),
        );
        let mut data = Vec::new();
        put_attr(&mut data, VETH_INFO_PEER, &peer_info);
        let body = new_link_body(&ifname(name)?, "veth", &data);
        self.ask(RTM_NEWLINK, NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, &body)
            .map(drop)
    }

    /// Creates link `name` of `kind` (`wireguard`: the kernel module's interface).
    pub fn add_link(&mut self, name: &str, kind: &str) -> io::Result<()> {
        let body = new_link_body(&ifname(name)?, kind, &[]);
        self.ask(RTM_NEWLINK, NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, &body)
            .map(drop)
    }

    /// The index of link `name`.
    pub fn index(&mut self, name: &str) -> io::Result<i32> {
        let mut body = ifinfo(0, 0, 0);
        put_attr(&mut body, IFLA_IFNAME, &ifname(name)?);
        match self.ask(RTM_GETLINK, 0, &body)? {
            0 => Err(io::Error::other(format!("no index for link {name}"))),
            i => Ok(i),
        }
    }

    /// Sets link `index` up.
    pub fn set_up(&mut self, index: i32) -> io::Result<()> {
        let up = libc::IFF_UP as u32;
        self.ask(RTM_NEWLINK, NLM_F_ACK, &ifinfo(index, up, up))
            .map(drop)
    }

    /// Deletes link `index` (a veth takes its peer along).
    pub fn delete(&mut self, index: i32) -> io::Result<()> {
        self.ask(RTM_DELLINK, NLM_F_ACK, &ifinfo(index, 0, 0))
            .map(drop)
    }

    /// Adds `addr/prefix` to link `index`.
    pub fn add_ipv4(&mut self, index: i32, addr: Ipv4Addr, prefix: u8) -> io::Result<()> {
        // ifaddrmsg: family, prefix length, flags, scope (universe), index.
        let mut body = vec![libc::AF_INET as u8, prefix, 0, 0];
        body.extend_from_slice(&index.to_ne_bytes());
        put_attr(&mut body, IFA_LOCAL, &addr.octets());
        put_attr(&mut body, IFA_ADDRESS, &addr.octets());
        self.ask(RTM_NEWADDR, NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, &body)
            .map(drop)
    }
}

/// The names of the links in a RTM_NEWLINK dump `buf` (for tests).
#[cfg(test)]
fn link_names(buf: &[u8]) -> Vec<String> {
    let mut names = Vec::new();
    for m in messages(buf).flatten() {
        if m.kind == RTM_NEWLINK && m.body.len() >= IFINFO_LEN {
            for (t, p) in attrs(&m.body[IFINFO_LEN..]) {
                if t == IFLA_IFNAME {
                    let end = p.iter().position(|&b| b == 0).unwrap_or(p.len());
                    names.push(String::from_utf8_lossy(&p[..end]).into_owned());
                }
            }
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::sys::netlink::test_message as msg;

    #[test]
    fn answers_are_matched_by_sequence_and_errors_kept() {
        let mut b = msg(NLMSG_ERROR, 3, &(-libc::EEXIST).to_ne_bytes());
        b.extend(msg(NLMSG_ERROR, 4, &0i32.to_ne_bytes()));
        assert_eq!(
            answer(&b, 3).unwrap().unwrap_err().raw_os_error(),
            Some(libc::EEXIST)
        );
        assert_eq!(answer(&b, 4).unwrap().unwrap(), 0);
        assert!(answer(&b, 5).is_none());
        let link = msg(RTM_NEWLINK, 6, &ifinfo(42, 0, 0));
        assert_eq!(answer(&link, 6).unwrap().unwrap(), 42);
        // Truncated answers are not read past their end.
        for n in 0..link.len() {
            let _ = answer(&link[..n], 6);
        }
    }

    #[test]
    fn link_requests_carry_name_kind_and_peer() {
        let body = new_link_body(b"va\0", "veth", &[1, 2, 3, 4]);
        assert_eq!(link_names(&msg(RTM_NEWLINK, 1, &body)), vec!["va"]);
        let info: Vec<_> = attrs(&body[IFINFO_LEN..])
            .filter(|(t, _)| *t == IFLA_LINKINFO)
            .flat_map(|(_, p)| attrs(p).map(|(t, p)| (t, p.to_vec())).collect::<Vec<_>>())
            .collect();
        assert_eq!(info[0], (IFLA_INFO_KIND, b"veth".to_vec()));
        assert_eq!(info[1], (IFLA_INFO_DATA, vec![1, 2, 3, 4]));
        assert!(ifname("").is_err());
        assert!(ifname("sixteen-chars-xx").is_err());
        assert!(ifname("a\0b").is_err());
    }

    #[test]
    fn a_veth_pair_across_two_namespaces() {
        if !super::super::netns::is_root() {
            eprintln!("skipped: needs root (CLONE_NEWNET)");
            return;
        }
        use super::super::netns::NetNs;
        let (a, b) = (NetNs::create().unwrap(), NetNs::create().unwrap());
        let a_side = a
            .run(|| -> io::Result<i32> {
                let mut r = Rtnl::open()?;
                r.add_veth("ta", "tb", b.as_fd())?;
                let i = r.index("ta")?;
                r.set_up(i)?;
                r.add_ipv4(i, Ipv4Addr::new(10, 9, 9, 1), 30)?;
                assert!(r.index("tb").is_err(), "the peer is not in a");
                Ok(i)
            })
            .unwrap();
        assert!(a_side.unwrap() > 0);
        let b_side = b.run(|| Rtnl::open()?.index("tb")).unwrap();
        assert!(b_side.unwrap() > 0);
    }
}
