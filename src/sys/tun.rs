//! The TUN device, used as a plain non-blocking file: a read or write, plain or vectored, is
//! one syscall through std's safe `File` calls.
//!
//! First choice: IFF_TUN | IFF_NO_PI | IFF_VNET_HDR with checksum and TCP segmentation
//! offload (TUNSETOFFLOAD), so the kernel hands us TCP super-packets of up to 64 KiB that we
//! cut ourselves (see `offload`), and every read and write carries a virtio-net header,
//! little-endian (TUNSETVNETLE). If the kernel refuses either, that device is closed (which
//! deletes it) and created again as a plain IFF_TUN | IFF_NO_PI device, one packet per read
//! and no header.
#![allow(unsafe_code)] // ioctls for the device, its offloads and MTU; taking ownership of the fd

use std::fs::File;
use std::io::{self, IoSlice, IoSliceMut, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::fs::OpenOptionsExt;

pub struct Tun {
    file: File,
    name: String,
    /// Every read and write starts with a virtio-net header (offload is on).
    vnet: bool,
}

/// What we ask the kernel to leave to us: checksums and TCP segmentation (with ECN). UDP
/// segmentation (USO) is not asked for: it would only serve UDP GSO senders inside the tunnel.
const OFFLOADS: libc::c_uint =
    libc::TUN_F_CSUM | libc::TUN_F_TSO4 | libc::TUN_F_TSO6 | libc::TUN_F_TSO_ECN;

impl Tun {
    /// Creates TUN `name` and sets its MTU. The link is left down, as wireguard-go does;
    /// `wg-quick`, netifd or the user brings it up and adds addresses.
    pub fn create(name: &str, mtu: u32) -> io::Result<Tun> {
        if name.is_empty() || name.len() > 15 || name.contains('/') || name.contains('\0') {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "interface name must be 1-15 characters without '/'",
            ));
        }
        // "1" turns offload off, as SOLOWG_PACKET_TX=1 turns its path on; "0" or empty
        // leaves it on.
        let offload = !std::env::var("SOLOWG_NO_OFFLOAD").is_ok_and(|v| v == "1");
        let tun = match offload.then(|| Self::create_offload(name)) {
            Some(Ok(tun)) => tun,
            other => {
                if let Some(Err(e)) = other {
                    crate::log::info(format_args!(
                        "TUN offload unavailable ({e}), one packet per read"
                    ));
                }
                Self::open(name, false)?
            }
        };
        tun.set_mtu(mtu)?;
        Ok(tun)
    }

    /// Creates the device with a little-endian virtio-net header and TSO/checksum offload.
    /// On any error the fd is closed, which removes the device again.
    fn create_offload(name: &str) -> io::Result<Tun> {
        let tun = Self::open(name, true)?;
        // The header in a byte order we name, not the kernel's own: the two differ for a
        // big-endian binary under qemu-user on a little-endian host, which passes the header
        // through untouched. Kernels since 2015 have it; without it, no offload.
        let le: libc::c_int = 1;
        // SAFETY: TUNSETVNETLE reads one c_int through the pointer, which outlives the call.
        if unsafe { libc::ioctl(tun.file.as_raw_fd(), libc::TUNSETVNETLE as _, &le) } < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: TUNSETOFFLOAD takes its flags by value.
        if unsafe {
            libc::ioctl(
                tun.file.as_raw_fd(),
                libc::TUNSETOFFLOAD as _,
                OFFLOADS as libc::c_ulong,
            )
        } < 0
        {
            return Err(io::Error::last_os_error());
        }
        Ok(tun)
    }

    /// Opens /dev/net/tun non-blocking and attaches it to TUN device `name` (created if
    /// absent), with a virtio-net header on every packet when `vnet`.
    fn open(name: &str, vnet: bool) -> io::Result<Tun> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open("/dev/net/tun")?;
        let mut tun = Tun {
            file,
            name: name.to_string(),
            vnet,
        };
        let mut req = tun.ifreq();
        let vnet_flag = if vnet { libc::IFF_VNET_HDR } else { 0 };
        req.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI | vnet_flag) as _;
        let fd = tun.file.as_raw_fd();
        // SAFETY: TUNSETIFF reads and writes an ifreq we own for the duration of the call.
        if unsafe { libc::ioctl(fd, libc::TUNSETIFF as _, &mut req) } < 0 {
            return Err(io::Error::last_os_error());
        }
        // The kernel wrote back the name it chose (a pattern such as "wg%d" gets a number).
        let len = req.ifr_name.iter().position(|&c| c == 0).unwrap_or(15);
        tun.name = req.ifr_name[..len]
            .iter()
            .map(|&c| c as u8 as char)
            .collect();
        Ok(tun)
    }

    /// Length of the virtio-net header before every packet read or written (0: none).
    pub fn vnet_hdr_len(&self) -> usize {
        if self.vnet {
            super::offload::VNET_HDR_LEN
        } else {
            0
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Reads one packet (after its virtio-net header when offload is on); WouldBlock when
    /// none is waiting.
    #[inline]
    pub fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        (&self.file).read(buf)
    }

    /// Writes one packet (after its virtio-net header when offload is on).
    #[inline]
    pub fn write(&self, packet: &[u8]) -> io::Result<usize> {
        (&self.file).write(packet)
    }

    /// Reads one packet scattered over `bufs` in order (one readv), each filled before the
    /// next: a super-packet can land in several buffers without a copy.
    #[inline]
    pub fn read_vectored(&self, bufs: &mut [IoSliceMut<'_>]) -> io::Result<usize> {
        (&self.file).read_vectored(bufs)
    }

    /// Writes one packet gathered from `parts` in order (one writev).
    #[inline]
    pub fn write_vectored(&self, parts: &[IoSlice<'_>]) -> io::Result<usize> {
        (&self.file).write_vectored(parts)
    }

    fn ifreq(&self) -> libc::ifreq {
        // SAFETY: ifreq is plain old data; all-zero is a valid value.
        let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
        for (dst, src) in req.ifr_name.iter_mut().zip(self.name.bytes().take(15)) {
            *dst = src as libc::c_char;
        }
        req
    }

    fn with_ctl_socket<T>(f: impl FnOnce(libc::c_int) -> io::Result<T>) -> io::Result<T> {
        f(ctl_socket()?.as_raw_fd())
    }

    pub fn set_mtu(&self, mtu: u32) -> io::Result<()> {
        let mut req = self.ifreq();
        req.ifr_ifru.ifru_mtu = mtu as libc::c_int;
        Self::with_ctl_socket(|s| {
            // SAFETY: SIOCSIFMTU reads an ifreq we own for the duration of the call.
            if unsafe { libc::ioctl(s, libc::SIOCSIFMTU as _, &req) } < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        })
    }

    pub fn mtu(&self) -> io::Result<u32> {
        let mut req = self.ifreq();
        Self::with_ctl_socket(|s| {
            // SAFETY: SIOCGIFMTU writes into an ifreq we own.
            if unsafe { libc::ioctl(s, libc::SIOCGIFMTU as _, &mut req) } < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: the kernel filled the mtu member of the union.
            Ok(unsafe { req.ifr_ifru.ifru_mtu } as u32)
        })
    }
}

impl AsFd for Tun {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }
}

/// A socket for device ioctls (SIOCGIF*, SIOCSIFMTU).
pub fn ctl_socket() -> io::Result<std::os::fd::OwnedFd> {
    super::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0)
}
