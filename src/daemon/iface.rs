//! Opening an interface: the TUN device, the UDP sockets, the UAPI socket and a fresh
//! protocol state, as `wg` and wg-quick expect them (/var/run/wireguard/<if>.sock, 0600).

use crate::crypto::Rng;
use crate::proto::device::Device;
use crate::sys::tun::Tun;
use crate::sys::udp::{self, UdpPair};
use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

pub const SOCKET_DIR: &str = "/var/run/wireguard";
pub const DEFAULT_MTU: u32 = 1420;

pub fn socket_path(ifname: &str) -> PathBuf {
    PathBuf::from(SOCKET_DIR).join(format!("{ifname}.sock"))
}

/// Why the TUN could not be made, in the words a user can act on.
fn tun_error(ifname: &str, e: &io::Error) -> String {
    let exists = std::path::Path::new("/sys/class/net").join(ifname).exists();
    let why = match e.raw_os_error() {
        // The kernel's answers to TUNSETIFF on a name that is taken: by a TUN another
        // process holds, or by an interface of another kind.
        Some(libc::EBUSY) => "a TUN of that name is in use by another process (another solowg \
             or wireguard-go?)"
            .to_string(),
        Some(libc::EINVAL) if exists => format!(
            "an interface of that name exists already and is not a TUN (a kernel WireGuard \
             one? see `ip link show {ifname}`)"
        ),
        Some(libc::EPERM) | Some(libc::EACCES) => {
            "not permitted: solowg needs CAP_NET_ADMIN (run it as root)".to_string()
        }
        Some(libc::ENOENT) | Some(libc::ENODEV) | Some(libc::ENXIO) => {
            "/dev/net/tun is missing (the tun module, kmod-tun on OpenWrt)".to_string()
        }
        _ => e.to_string(),
    };
    format!("cannot create TUN {ifname}: {why}")
}

/// `<dir>/<ifname>.sock`: where a daemon that cannot write to [`SOCKET_DIR`] (`--uci --user`)
/// binds, in a directory of its own; root's `solowg export` links the shared name to it.
pub fn socket_path_in(dir: &Path, ifname: &str) -> PathBuf {
    dir.join(format!("{ifname}.sock"))
}

/// Binds the UAPI socket `<dir>/<ifname>.sock`, refusing if a live daemon already answers on
/// it. Only a missing [`SOCKET_DIR`] is created (0700, as wireguard-go and wg-quick make it);
/// an existing directory keeps its owner and mode: it is shared with every userspace
/// WireGuard.
pub fn open_uapi(dir: &Path, ifname: &str) -> io::Result<UnixListener> {
    if !dir.exists() {
        // Born 0700 (not created, then narrowed).
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    let path = socket_path_in(dir, ifname);
    if UnixStream::connect(&path).is_ok() {
        return Err(io::Error::new(
            io::ErrorKind::AddrInUse,
            format!("{} is served by another process", path.display()),
        ));
    }
    // A stale socket of a dead daemon. If it cannot go, say so: binding would fail with
    // "Address already in use", which names no cause.
    match std::fs::symlink_metadata(&path) {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
    }
    match std::fs::remove_file(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(io::Error::new(
                e.kind(),
                format!(
                    "{} is left by a daemon that has stopped, and cannot be removed ({e}): \
                     remove it as its owner or root",
                    path.display()
                ),
            ))
        }
    }
    // Born 0600: under a umask that masks the rest, so there is no moment in which the
    // socket exists with the default mode (the daemon has one thread: nothing else creates
    // files meanwhile).
    let listener = crate::sys::with_umask(0o177, || UnixListener::bind(&path))?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
    Ok(listener)
}

/// Creates the TUN `ifname` (left down, MTU `mtu` unless it already had one), binds UDP on
/// a random port and the UAPI socket in `sock_dir`. Errors name what failed.
pub fn open(
    ifname: &str,
    mtu: u32,
    sock_dir: &Path,
) -> Result<(Tun, UdpPair, UnixListener, Device), String> {
    let tun = Tun::create(ifname, mtu).map_err(|e| tun_error(ifname, &e))?;
    let mtu = tun.mtu().unwrap_or(mtu);
    let rng = Rng::from_os().map_err(|e| format!("no randomness: {e}"))?;
    let mut dev = Device::new(Instant::now(), SystemTime::now(), rng);
    let udp =
        udp::bind(0, 0, dev.index_tag()).map_err(|e| format!("cannot open UDP sockets: {e}"))?;
    let uapi = open_uapi(sock_dir, ifname).map_err(|e| format!("cannot open UAPI socket: {e}"))?;
    dev.listen_port = udp.port;
    dev.mtu = mtu as usize;
    Ok((tun, udp, uapi, dev))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::testing;

    /// A stale socket the daemon may not remove is refused with words saying so, not with
    /// bind's "Address already in use". Run as another user in a forked child: root may
    /// remove anything.
    #[test]
    fn a_stale_socket_that_cannot_be_removed_is_named() {
        let dir = std::env::temp_dir().join(format!("solowg-stale-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        drop(UnixListener::bind(socket_path_in(&dir, "wgs")).unwrap());
        if !testing::is_root() {
            eprintln!("skipped: needs root (to run the check as another user)");
            let _ = std::fs::remove_dir_all(&dir);
            return;
        }
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let status = testing::status_in_child_as(65534, || match open_uapi(&dir, "wgs") {
            Ok(_) => 1,
            Err(e) if e.to_string().contains("cannot be removed") => 0,
            Err(_) => 2,
        });
        let _ = std::fs::remove_dir_all(&dir);
        assert!(libc::WIFEXITED(status), "{status:#x}");
        assert_eq!(
            libc::WEXITSTATUS(status),
            0,
            "1: bound anyway; 2: another error; 3: setresuid"
        );
    }
}
