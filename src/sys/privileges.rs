//! Giving up what the daemon does not use, once its devices and sockets exist: every
//! capability but CAP_NET_ADMIN (TUN devices, fwmark, netlink, forced socket buffers),
//! CAP_NET_BIND_SERVICE (a listen port below 1024 set later) and, only with the packet path
//! on, CAP_NET_RAW; the same from the bounding set, so the children it starts (`uci`, `ubus`)
//! cannot regain the rest through execve; no_new_privs; and not dumpable, so no core file or
//! non-root debugger sees its keys. The router faces the internet: a bug in the data path
//! should find as little as possible to use.

use crate::log;
use std::io;

/// Capability numbers (linux/capability.h).
const CAP_NET_BIND_SERVICE: u32 = 10;
const CAP_NET_ADMIN: u32 = 12;
const CAP_NET_RAW: u32 = 13;
/// _LINUX_CAPABILITY_VERSION_3: two 32-bit words per set.
const CAP_VERSION_3: u32 = 0x2008_0522;

/// The capabilities kept: bit n for capability n.
pub fn kept(packet_tx: bool) -> u64 {
    let mut m = (1u64 << CAP_NET_ADMIN) | (1 << CAP_NET_BIND_SERVICE);
    if packet_tx {
        m |= 1 << CAP_NET_RAW;
    }
    m
}

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// The highest capability number this kernel knows (63 if it does not say).
fn last_cap() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(63)
}

/// Restricts the process as the module says. What the kernel refuses is logged and the rest
/// still done: a daemon started without CAP_SETPCAP (say, with CAP_NET_ADMIN alone) cannot
/// shrink its bounding set, but it can still drop what it holds.
#[allow(unsafe_code)] // prctl(2) and capset(2) have no std API
pub fn restrict(packet_tx: bool) {
    let keep = kept(packet_tx);
    // SAFETY: prctl with integer arguments only, on this process.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            log::error(format_args!(
                "no_new_privs refused: {}",
                io::Error::last_os_error()
            ));
        }
        if libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) != 0 {
            log::error(format_args!(
                "cannot make the process non-dumpable: {}",
                io::Error::last_os_error()
            ));
        }
    }
    let mut bounding_refused = None;
    for cap in 0..=last_cap().min(63) {
        if keep & (1 << cap) != 0 {
            continue;
        }
        // SAFETY: prctl with integer arguments only; EINVAL for a capability the kernel
        // lacks, EPERM without CAP_SETPCAP.
        let r = unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) };
        if r != 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINVAL) {
                bounding_refused = Some(e);
            }
        }
    }
    if let Some(e) = bounding_refused {
        log::verbose(format_args!("capability bounding set left as it is: {e}"));
    }
    let mut hdr = CapHeader {
        version: CAP_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: capget fills the header and two data structs of the version-3 layout.
    if unsafe {
        libc::syscall(
            libc::SYS_capget,
            &mut hdr as *mut CapHeader,
            data.as_mut_ptr(),
        )
    } != 0
    {
        log::error(format_args!(
            "cannot read capabilities: {}",
            io::Error::last_os_error()
        ));
        return;
    }
    for (i, d) in data.iter_mut().enumerate() {
        let k = (keep >> (32 * i)) as u32;
        d.permitted &= k;
        d.effective &= k;
        d.inheritable = 0;
    }
    // SAFETY: capset reads the header and two data structs of the version-3 layout.
    if unsafe { libc::syscall(libc::SYS_capset, &mut hdr as *mut CapHeader, data.as_ptr()) } != 0 {
        log::error(format_args!(
            "cannot drop capabilities: {}",
            io::Error::last_os_error()
        ));
        return;
    }
    log::verbose(format_args!(
        "capabilities kept: {:#x} (NET_ADMIN, NET_BIND_SERVICE{})",
        keep,
        if packet_tx { ", NET_RAW" } else { "" }
    ));
}
