//! The TUN device: created through the `tun-tap` crate (IFF_TUN | IFF_NO_PI), then used as a
//! plain non-blocking file, so reads and writes are one syscall each and need no wrapper.
#![allow(unsafe_code)] // ioctl for the MTU and taking ownership of the fd

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, FromRawFd, IntoRawFd};

pub struct Tun {
    file: File,
    name: String,
}

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
        let iface = tun_tap::Iface::without_packet_info(name, tun_tap::Mode::Tun)?;
        iface.set_non_blocking()?;
        let name = iface.name().to_string();
        // SAFETY: into_raw_fd hands over the only owner of a valid open fd.
        let file = unsafe { File::from_raw_fd(iface.into_raw_fd()) };
        let tun = Tun { file, name };
        tun.set_mtu(mtu)?;
        Ok(tun)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn file(&self) -> &File {
        &self.file
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
        // SAFETY: plain socket(2) call; the fd is closed by OwnedFd below.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a fresh, valid socket that nothing else owns.
        let owned = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
        use std::os::fd::AsRawFd;
        f(owned.as_raw_fd())
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
