//! Opening an interface: the TUN device, the UDP sockets, the UAPI socket and a fresh
//! protocol state, as `wg` and wg-quick expect them (/var/run/wireguard/<if>.sock, 0600).

use crate::crypto::Rng;
use crate::proto::device::Device;
use crate::sys::tun::Tun;
use crate::sys::udp::{self, UdpPair};
use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
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

/// Binds the UAPI socket, refusing if a live daemon already answers on it.
pub fn open_uapi(ifname: &str) -> io::Result<UnixListener> {
    let dir = PathBuf::from(SOCKET_DIR);
    if !dir.exists() {
        // Born 0700 (not created, then narrowed).
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)?;
    }
    let path = socket_path(ifname);
    if UnixStream::connect(&path).is_ok() {
        return Err(io::Error::new(
            io::ErrorKind::AddrInUse,
            format!("{} is served by another process", path.display()),
        ));
    }
    // A stale socket of a dead daemon.
    let _ = std::fs::remove_file(&path);
    // Born 0600: under a umask that masks the rest, so there is no moment in which the
    // socket exists with the default mode (the daemon has one thread: nothing else creates
    // files meanwhile).
    let old = set_umask(0o177);
    let bound = UnixListener::bind(&path);
    set_umask(old);
    let listener = bound?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
    Ok(listener)
}

#[allow(unsafe_code)] // umask(2) has no std wrapper
fn set_umask(mask: libc::mode_t) -> libc::mode_t {
    // SAFETY: umask only swaps the process's file-creation mask; it cannot fail.
    unsafe { libc::umask(mask) }
}

/// Creates the TUN `ifname` (left down, MTU `mtu` unless it already had one), binds UDP on
/// a random port and the UAPI socket. Errors name what failed.
pub fn open(ifname: &str, mtu: u32) -> Result<(Tun, UdpPair, UnixListener, Device), String> {
    let tun = Tun::create(ifname, mtu).map_err(|e| tun_error(ifname, &e))?;
    let mtu = tun.mtu().unwrap_or(mtu);
    let rng = Rng::from_os().map_err(|e| format!("no randomness: {e}"))?;
    let mut dev = Device::new(Instant::now(), SystemTime::now(), rng);
    let udp =
        udp::bind(0, 0, dev.index_tag()).map_err(|e| format!("cannot open UDP sockets: {e}"))?;
    let uapi = open_uapi(ifname).map_err(|e| format!("cannot open UAPI socket: {e}"))?;
    dev.listen_port = udp.port;
    dev.mtu = mtu as usize;
    Ok((tun, udp, uapi, dev))
}
