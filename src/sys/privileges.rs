//! Giving up what the daemon does not use, once its devices and sockets exist: root itself
//! (`--user`), every capability but those it needs, the same from the bounding set;
//! no_new_privs; not dumpable. What is kept and why the daemon does it itself:
//! docs/architecture.md, "Privileges".

use crate::log;
use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;

/// The account the daemon runs as after setup.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Account {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
}

/// `NAME` (looked up in `passwd`, the text of /etc/passwd) or `UID:GID`. Root is refused:
/// asking for it is asking for nothing.
pub fn account(spec: &str, passwd: &str) -> Result<Account, String> {
    let found = if let Some((u, g)) = spec.split_once(':') {
        match (u.parse(), g.parse()) {
            (Ok(uid), Ok(gid)) => Account {
                name: spec.to_string(),
                uid,
                gid,
            },
            _ => return Err(format!("user '{spec}': not NAME or UID:GID")),
        }
    } else {
        passwd
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split(':').collect();
                (f.len() >= 4 && f[0] == spec)
                    .then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?)))
            })
            .next()
            .flatten()
            .map(|(uid, gid)| Account {
                name: spec.to_string(),
                uid,
                gid,
            })
            .ok_or_else(|| format!("user '{spec}': no such user in /etc/passwd"))?
    };
    if found.uid == 0 || found.gid == 0 {
        return Err(format!("user '{spec}': root, not an account of its own"));
    }
    Ok(found)
}

/// While still root: the directories the daemon writes to later (its configuration and
/// state, the UAPI sockets) made the account's, created 0700 if missing.
pub fn give_dirs(account: &Account, dirs: &[&Path]) -> Result<(), String> {
    for d in dirs {
        if !d.exists() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(d)
                .map_err(|e| format!("{}: {e}", d.display()))?;
        }
        std::os::unix::fs::chown(d, Some(account.uid), Some(account.gid))
            .and_then(|()| std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o700)))
            .map_err(|e| format!("{}: {e}", d.display()))?;
    }
    Ok(())
}

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

/// The TUN clone device, which every new interface opens.
const TUN_DEVICE: &str = "/dev/net/tun";

/// Whether a file of this owner, group and mode lets `account` (no other groups) read and
/// write it.
pub fn opens_rw(account: &Account, uid: u32, gid: u32, mode: u32) -> bool {
    let bits = if account.uid == uid {
        mode >> 6
    } else if account.gid == gid {
        mode >> 3
    } else {
        mode
    };
    bits & 0o6 == 0o6
}

/// While still root: lets the account's group open the TUN clone device, only where its mode
/// keeps the account out. OpenWrt's procd makes it 0644 root's, and CAP_NET_ADMIN does not
/// get past file modes; creating a TUN still needs that capability, so the group gives
/// nothing the daemon did not have. Elsewhere (most distributions make it 0666) the device
/// is left as it is. Returns whether it was changed.
pub fn give_tun_device(account: &Account) -> Result<bool, String> {
    use std::os::unix::fs::MetadataExt;
    let fail = |e: io::Error| format!("{TUN_DEVICE}: {e}");
    let meta = std::fs::metadata(TUN_DEVICE).map_err(fail)?;
    let mode = meta.mode() & 0o7777;
    if opens_rw(account, meta.uid(), meta.gid(), mode) {
        return Ok(false);
    }
    std::os::unix::fs::chown(TUN_DEVICE, None, Some(account.gid)).map_err(fail)?;
    std::fs::set_permissions(TUN_DEVICE, std::fs::Permissions::from_mode(mode | 0o060))
        .map_err(fail)?;
    log::info(format_args!(
        "{TUN_DEVICE} was mode {mode:04o}, closed to '{}': now its group's, with group \
         read and write",
        account.name
    ));
    Ok(true)
}

/// Restricts the process as the module says. Switching to `account` must succeed (the
/// daemon would otherwise run with more than the user asked for); for the rest, what the
/// kernel refuses is logged and the rest still done: a daemon started without CAP_SETPCAP
/// (say, with CAP_NET_ADMIN alone) cannot shrink its bounding set, but it can still drop
/// what it holds.
#[allow(unsafe_code)] // prctl(2) has no std API
pub fn restrict(packet_tx: bool, account: Option<&Account>) -> Result<(), String> {
    let keep = kept(packet_tx);
    // SAFETY: prctl with integer arguments only, on this process.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        log::error(format_args!(
            "no_new_privs refused: {}",
            io::Error::last_os_error()
        ));
    }
    // While CAP_SETPCAP is still there.
    shrink_bounding_set(keep);
    if let Some(a) = account {
        switch_user(a)?;
    }
    keep_only(keep, packet_tx, account)?;
    // Last: a change of user makes the process dumpable again.
    // SAFETY: prctl with integer arguments only, on this process.
    if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) } != 0 {
        log::error(format_args!(
            "cannot make the process non-dumpable: {}",
            io::Error::last_os_error()
        ));
    }
    crate::sys::seccomp::install();
    Ok(())
}

/// Drops from the bounding set every capability `keep` leaves out. Refused without
/// CAP_SETPCAP: logged, and the rest of `restrict` still done.
#[allow(unsafe_code)] // prctl(2) has no std API
fn shrink_bounding_set(keep: u64) {
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
}

/// Leaves the permitted and effective sets at `keep` and empties the inheritable set. A
/// failure is an error only after a switch to `account`, which needs CAP_NET_ADMIN kept.
#[allow(unsafe_code)] // capget(2) and capset(2) have no std API
fn keep_only(keep: u64, packet_tx: bool, account: Option<&Account>) -> Result<(), String> {
    let mut hdr = CapHeader {
        version: CAP_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: capget fills the header and two data structs of the version-3 layout.
    let got = unsafe {
        libc::syscall(
            libc::SYS_capget,
            &mut hdr as *mut CapHeader,
            data.as_mut_ptr(),
        )
    };
    if got != 0 {
        log::error(format_args!(
            "cannot read capabilities: {}",
            io::Error::last_os_error()
        ));
    } else {
        for (i, d) in data.iter_mut().enumerate() {
            let k = (keep >> (32 * i)) as u32;
            d.permitted &= k;
            // After a user switch the effective set is empty: raised again from what the
            // permitted set kept.
            d.effective = d.permitted;
            d.inheritable = 0;
        }
        // SAFETY: capset reads the header and two data structs of the version-3 layout.
        let set =
            unsafe { libc::syscall(libc::SYS_capset, &mut hdr as *mut CapHeader, data.as_ptr()) };
        if set != 0 {
            let e = io::Error::last_os_error();
            if account.is_some() {
                return Err(format!(
                    "cannot keep CAP_NET_ADMIN as '{}': {e}",
                    account.map_or("", |a| a.name.as_str())
                ));
            }
            log::error(format_args!("cannot drop capabilities: {e}"));
        } else {
            log::verbose(format_args!(
                "capabilities kept: {:#x} (NET_ADMIN, NET_BIND_SERVICE{})",
                keep,
                if packet_tx { ", NET_RAW" } else { "" }
            ));
        }
    }
    Ok(())
}

/// Becomes `a` (groups, then group, then user) keeping the permitted capabilities, which a
/// change of user from root otherwise clears.
#[allow(unsafe_code)]
fn switch_user(a: &Account) -> Result<(), String> {
    let gid = a.gid as libc::gid_t;
    let fail = |what: &str| {
        Err(format!(
            "cannot become user '{}' ({what}): {}",
            a.name,
            io::Error::last_os_error()
        ))
    };
    // SAFETY: prctl with integer arguments; setgroups reads one gid from a live local;
    // setresgid/setresuid take integers. Only this process (single-threaded here) changes.
    unsafe {
        if libc::prctl(libc::PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0 {
            return fail("keepcaps");
        }
        if libc::setgroups(1, &gid) != 0 {
            return fail("setgroups");
        }
        if libc::setresgid(gid, gid, gid) != 0 {
            return fail("setresgid");
        }
        let uid = a.uid as libc::uid_t;
        if libc::setresuid(uid, uid, uid) != 0 {
            return fail("setresuid");
        }
        libc::prctl(libc::PR_SET_KEEPCAPS, 0, 0, 0, 0);
    }
    log::verbose(format_args!(
        "running as user '{}' (uid {}, gid {})",
        a.name, a.uid, a.gid
    ));
    Ok(())
}

#[cfg(test)]
mod account_tests {
    use super::*;

    #[test]
    fn account_by_name_or_numbers() {
        let passwd = "root:x:0:0:root:/root:/bin/ash\nbad line\nsolowg:x:421:421:solowg:/var/run/solowg:/bin/false\n";
        let want = |name: &str, uid, gid| Account {
            name: name.into(),
            uid,
            gid,
        };
        assert_eq!(account("solowg", passwd), Ok(want("solowg", 421, 421)));
        assert_eq!(
            account("65534:65534", ""),
            Ok(want("65534:65534", 65534, 65534))
        );
        assert!(account("nobody", passwd)
            .unwrap_err()
            .contains("no such user"));
        assert!(account("root", passwd).unwrap_err().contains("root"));
        assert!(account("0:5", "").is_err());
        assert!(account("a:b", "").is_err());
        assert!(account("sol", passwd).is_err());
    }

    #[test]
    fn the_tun_device_is_changed_only_where_the_account_is_kept_out() {
        let a = Account {
            name: "solowg".into(),
            uid: 421,
            gid: 421,
        };
        // OpenWrt's: root's, 0644.
        assert!(!opens_rw(&a, 0, 0, 0o644));
        // Debian's and most others': 0666.
        assert!(opens_rw(&a, 0, 0, 0o666));
        // Already given to the account's group (a restart).
        assert!(opens_rw(&a, 0, 421, 0o664));
        assert!(!opens_rw(&a, 0, 421, 0o644));
        assert!(opens_rw(&a, 421, 0, 0o600));
        // The owner's bits count for the owner even where others' would allow more.
        assert!(!opens_rw(&a, 421, 0, 0o066));
    }
}
