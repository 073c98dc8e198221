//! The bench's network: two namespaces of its own joined by a veth pair, and a WireGuard
//! tunnel between them, by solowg (this binary, `solowg -f IF` in each namespace,
//! configured over its UAPI socket) or by the kernel module (its link made over rtnetlink,
//! configured by `wg setconf` in the namespace). The router's own interfaces, routes and
//! firewall are never touched: everything here lives in the two namespaces, which the
//! kernel frees with this process and its children.

use super::report::Impl;
use crate::crypto::{self, Rng};
use crate::daemon::iface;
use crate::proto::peer::base64;
use crate::sys::netns::{self, NetNs};
use crate::sys::rtnl::Rtnl;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use zeroize::Zeroizing;

/// The veth pair's addresses (a /30) and the tunnel's (a /24); private to the namespaces.
pub const OUTER: [Ipv4Addr; 2] = [Ipv4Addr::new(10, 213, 0, 1), Ipv4Addr::new(10, 213, 0, 2)];
pub const INNER: [Ipv4Addr; 2] = [Ipv4Addr::new(10, 213, 1, 1), Ipv4Addr::new(10, 213, 1, 2)];
const PORT: u16 = 51820;
/// Within the namespaces only; the names of solowg's interfaces are unique per run
/// instead, because their UAPI sockets share /var/run/wireguard with a running daemon.
const VETH: [&str; 2] = ["bench0", "bench1"];
const STOP_WITHIN: Duration = Duration::from_secs(3);

pub struct Lab {
    pub ns: [NetNs; 2],
}

/// Words for a failed link request that a router owner can act on.
fn link_error(what: &str, e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EOPNOTSUPP) if what == "veth" => {
            "the kernel has no veth driver: install kmod-veth".to_string()
        }
        Some(libc::EOPNOTSUPP) => {
            "the kernel has no WireGuard module: install kmod-wireguard".to_string()
        }
        _ => format!("cannot create the {what} link: {e}"),
    }
}

impl Lab {
    pub fn new() -> Result<Lab, String> {
        let make = || {
            NetNs::create().map_err(|e| match e.raw_os_error() {
                Some(libc::EPERM) => "not permitted: solowg bench must run as root".to_string(),
                Some(libc::EINVAL) => {
                    "this kernel has no network namespaces (CONFIG_NET_NS)".to_string()
                }
                _ => format!("cannot create a network namespace: {e}"),
            })
        };
        let ns = [make()?, make()?];
        ns[0]
            .run(|| {
                let mut r = Rtnl::open().map_err(|e| format!("rtnetlink: {e}"))?;
                r.add_veth(VETH[0], VETH[1], ns[1].as_fd())
                    .map_err(|e| link_error("veth", &e))
            })
            .map_err(|e| format!("cannot enter the namespace: {e}"))??;
        let lab = Lab { ns };
        for side in 0..2 {
            lab.address(side, VETH[side], OUTER[side], 30)?;
        }
        Ok(lab)
    }

    /// Gives link `name` of `side` its address and sets it up.
    fn address(&self, side: usize, name: &str, addr: Ipv4Addr, prefix: u8) -> Result<(), String> {
        self.ns[side]
            .run(|| -> std::io::Result<()> {
                let mut r = Rtnl::open()?;
                let i = r.index(name)?;
                r.add_ipv4(i, addr, prefix)?;
                r.set_up(i)
            })
            .and_then(|r| r)
            .map_err(|e| format!("cannot set up {name}: {e}"))
    }

    /// A tunnel of `imp` between the two namespaces, up and addressed. `tag` makes the
    /// interface names unique to this run.
    pub fn tunnel(&self, imp: Impl, tag: &str) -> Result<Tunnel, String> {
        let names = [format!("{tag}a"), format!("{tag}b")];
        let mut rng = Rng::from_os().map_err(|e| format!("no randomness: {e}"))?;
        let keys = [rng.private_key(), rng.private_key()];
        let mut t = Tunnel {
            imp,
            names: names.clone(),
            daemons: Vec::new(),
        };
        for side in 0..2 {
            let peer_public = crypto::public_key(&keys[1 - side]);
            let peer = SocketAddrV4::new(OUTER[1 - side], PORT);
            match imp {
                Impl::Solowg => {
                    let child = self.start_daemon(side, &names[side])?;
                    t.daemons.push(child);
                    uapi_set(
                        &names[side],
                        &keys[side],
                        &peer_public,
                        peer,
                        INNER[1 - side],
                    )?;
                }
                Impl::Kernel => {
                    self.ns[side]
                        .run(|| Rtnl::open()?.add_link(&names[side], "wireguard"))
                        .and_then(|r| r)
                        .map_err(|e| link_error("wireguard", &e))?;
                    let conf = wg_conf(&keys[side], &peer_public, peer, INNER[1 - side]);
                    self.wg_setconf(side, &names[side], &conf)?;
                }
            }
            self.address(side, &names[side], INNER[side], 24)?;
        }
        Ok(t)
    }

    /// `solowg -f IF` in namespace `side`, once it says its interface is ready.
    fn start_daemon(&self, side: usize, name: &str) -> Result<Child, String> {
        let exe = std::env::current_exe().map_err(|e| format!("cannot find solowg: {e}"))?;
        let mut cmd = Command::new(exe);
        cmd.arg("-f")
            .arg(name)
            .env("SOLOWG_NOTIFY_PARENT", "1")
            .env("LOG_LEVEL", "error")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        // SIGTERM: the daemon removes its UAPI socket on the way out.
        let mut child = self.ns[side]
            .spawn(&mut cmd, libc::SIGTERM)
            .map_err(|e| format!("cannot start solowg: {e}"))?;
        let line = child.stdout.take().map_or(Ok(String::new()), |out| {
            first_line(out, Duration::from_secs(10))
        });
        match line.as_deref().map(str::trim_end) {
            Ok("ready") => Ok(child),
            other => {
                stop(&mut child);
                Err(match other {
                    Ok(l) if l.starts_with("error ") => format!("solowg: {}", &l[6..]),
                    _ => "solowg did not start".to_string(),
                })
            }
        }
    }

    /// `wg setconf IF /proc/self/fd/0` in namespace `side`: the key goes through a pipe,
    /// never through the arguments (/dev/stdin is a link that not every /dev has).
    fn wg_setconf(&self, side: usize, name: &str, conf: &str) -> Result<(), String> {
        let mut cmd = Command::new("wg");
        cmd.args(["setconf", name, "/proc/self/fd/0"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = self.ns[side]
            .spawn(&mut cmd, libc::SIGKILL)
            .map_err(|e| format!("cannot run wg (wireguard-tools): {e}"))?;
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(conf.as_bytes());
        }
        let err = child
            .stderr
            .take()
            .map_or(Ok(String::new()), |e| first_line(e, Duration::from_secs(5)));
        match wait_within(&mut child, Duration::from_secs(5)) {
            Some(s) if s.success() => Ok(()),
            _ => {
                stop(&mut child);
                Err(format!(
                    "wg setconf failed: {}",
                    err.unwrap_or_default().trim()
                ))
            }
        }
    }
}

/// The first line of `r`, read on a thread so that a silent child cannot hold us longer
/// than `within`.
fn first_line(r: impl Read + Send + 'static, within: Duration) -> Result<String, String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(r.take(4096)).read_line(&mut line);
        let _ = tx.send(line);
    });
    rx.recv_timeout(within).map_err(|_| "no answer".to_string())
}

/// Waits for `child` at most `within`; its status, or None if it still runs.
pub fn wait_within(child: &mut Child, within: Duration) -> Option<std::process::ExitStatus> {
    let until = Instant::now() + within;
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return Some(s),
            Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(20)),
            _ => return None,
        }
    }
}

/// SIGTERM, a few seconds' grace, then SIGKILL; reaped either way.
pub fn stop(child: &mut Child) {
    if matches!(child.try_wait(), Ok(Some(_))) {
        return;
    }
    let _ = netns::terminate(child);
    if wait_within(child, STOP_WITHIN).is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
}

fn hex(b: &[u8]) -> Zeroizing<String> {
    let mut s = Zeroizing::new(String::with_capacity(b.len() * 2));
    for x in b {
        s.push_str(&format!("{x:02x}"));
    }
    s
}

/// A `wg setconf` file for one side.
fn wg_conf(
    key: &[u8; 32],
    peer: &[u8; 32],
    endpoint: SocketAddrV4,
    allowed: Ipv4Addr,
) -> Zeroizing<String> {
    let key = Zeroizing::new(base64(key));
    Zeroizing::new(format!(
        "[Interface]\nPrivateKey = {}\nListenPort = {PORT}\n\n[Peer]\nPublicKey = {}\n\
         Endpoint = {endpoint}\nAllowedIPs = {allowed}/32\n",
        key.as_str(),
        base64(peer)
    ))
}

/// Configures solowg's interface `name` over its UAPI socket.
fn uapi_set(
    name: &str,
    key: &[u8; 32],
    peer: &[u8; 32],
    endpoint: SocketAddrV4,
    allowed: Ipv4Addr,
) -> Result<(), String> {
    let path = iface::socket_path(name);
    let fail = |e: std::io::Error| format!("cannot configure {name} over {}: {e}", path.display());
    let s = UnixStream::connect(&path).map_err(fail)?;
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(fail)?;
    let req = Zeroizing::new(format!(
        "set=1\nprivate_key={}\nlisten_port={PORT}\nreplace_peers=true\npublic_key={}\n\
         endpoint={endpoint}\nallowed_ip={allowed}/32\n\n",
        hex(key).as_str(),
        hex(peer).as_str()
    ));
    // sys::send and sys::recv, not std's Write and Read: see `traffic::measure`.
    let mut sent = 0;
    while sent < req.len() {
        sent += crate::sys::send(s.as_fd(), &req.as_bytes()[sent..], 0).map_err(fail)?;
    }
    let mut reply = Vec::new();
    let mut chunk = [0u8; 512];
    while !reply.ends_with(b"\n\n") && reply.len() < 4096 {
        match crate::sys::recv(s.as_fd(), &mut chunk, 0).map_err(fail)? {
            0 => break,
            n => reply.extend_from_slice(&chunk[..n]),
        }
    }
    let reply = String::from_utf8_lossy(&reply);
    if reply.lines().next() != Some("errno=0") {
        return Err(format!(
            "{name} refused its configuration ({})",
            reply.trim()
        ));
    }
    Ok(())
}

/// A running tunnel; dropping it stops solowg's daemons (the kernel's links go with the
/// namespaces, or with the next tunnel's `delete`).
pub struct Tunnel {
    pub imp: Impl,
    names: [String; 2],
    daemons: Vec<Child>,
}

impl Tunnel {
    /// Takes the tunnel down: solowg's daemons stopped (they remove their UAPI sockets),
    /// the kernel's links deleted.
    pub fn close(mut self, lab: &Lab) {
        self.stop_daemons();
        if self.imp == Impl::Kernel {
            for side in 0..2 {
                let _ = lab.ns[side].run(|| -> std::io::Result<()> {
                    let mut r = Rtnl::open()?;
                    let i = r.index(&self.names[side])?;
                    r.delete(i)
                });
            }
        }
    }

    fn stop_daemons(&mut self) {
        for (c, name) in self.daemons.iter_mut().zip(&self.names) {
            stop(c);
            // A daemon that needed SIGKILL left its socket; the name is this run's own.
            let _ = std::fs::remove_file(iface::socket_path(name));
        }
        self.daemons.clear();
    }
}

impl Drop for Tunnel {
    fn drop(&mut self) {
        self.stop_daemons();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configurations_carry_keys_peer_and_addresses() {
        let key = [1u8; 32];
        let peer = [2u8; 32];
        let ep = SocketAddrV4::new(OUTER[1], PORT);
        let conf = wg_conf(&key, &peer, ep, INNER[1]);
        assert!(conf.contains(&format!("PrivateKey = {}\n", base64(&key).as_str())));
        assert!(conf.contains("Endpoint = 10.213.0.2:51820\nAllowedIPs = 10.213.1.2/32\n"));
        assert_eq!(hex(&[0, 0xab, 0x10]).as_str(), "00ab10");
    }

    #[test]
    fn link_errors_name_the_package() {
        let e = std::io::Error::from_raw_os_error(libc::EOPNOTSUPP);
        assert!(link_error("veth", &e).contains("kmod-veth"));
        assert!(link_error("wireguard", &e).contains("kmod-wireguard"));
        let other = std::io::Error::from_raw_os_error(libc::EEXIST);
        assert!(link_error("veth", &other).starts_with("cannot create the veth link"));
    }
}
