//! Opening an interface: the TUN device, the UDP sockets, the UAPI socket and a fresh
//! protocol state, as `wg` and wg-quick expect them (/var/run/wireguard/<if>.sock, 0600).

use crate::crypto::Rng;
use crate::device::Device;
use crate::tun::Tun;
use crate::udp::{self, UdpPair};
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::time::{Instant, SystemTime};

pub const SOCKET_DIR: &str = "/var/run/wireguard";
pub const DEFAULT_MTU: u32 = 1420;

pub fn socket_path(ifname: &str) -> PathBuf {
    PathBuf::from(SOCKET_DIR).join(format!("{ifname}.sock"))
}

/// Binds the UAPI socket, refusing if a live daemon already answers on it.
pub fn open_uapi(ifname: &str) -> io::Result<UnixListener> {
    let dir = PathBuf::from(SOCKET_DIR);
    if !dir.exists() {
        std::fs::create_dir_all(&dir)?;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
    }
    let path = socket_path(ifname);
    if UnixStream::connect(&path).is_ok() {
        return Err(io::Error::new(
            io::ErrorKind::AddrInUse,
            format!("{} is served by another process", path.display()),
        ));
    }
    let _ = std::fs::remove_file(&path); // stale socket of a dead daemon
    let listener = UnixListener::bind(&path)?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
    Ok(listener)
}

/// Creates the TUN `ifname` (left down, MTU `mtu` unless it already had one), binds UDP on
/// a random port and the UAPI socket. Errors name what failed.
pub fn open(ifname: &str, mtu: u32) -> Result<(Tun, UdpPair, UnixListener, Device), String> {
    let tun = Tun::create(ifname, mtu).map_err(|e| format!("cannot create TUN {ifname}: {e}"))?;
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
