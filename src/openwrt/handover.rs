//! `solowg export`: what root hands the daemon, which runs as its own user on OpenWrt.
//! netifd's handler and the init script run it before each `up` and `reload`: it generates
//! missing private keys (saved with `uci batch`) and writes the `proto solowg` interfaces and
//! their peers to `<dir>/network`. Why and how: docs/architecture.md, "Hand-over".

use crate::crypto::Rng;
use crate::openwrt::config::{self, ErrorScope, KeySpec};
use crate::openwrt::uci::{self, Section};
use crate::proto::peer::base64;
use crate::proto::uapi::Key;
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use zeroize::{Zeroize, Zeroizing};

pub struct Options {
    /// Where /etc/config/network is.
    pub config_dir: PathBuf,
    /// The `uci` program that saves generated keys.
    pub uci: String,
    /// The daemon's configuration directory (its `--config-dir`).
    pub to_dir: PathBuf,
    /// The shared UAPI socket directory (/var/run/wireguard) in which `<if>.sock` is linked
    /// to the daemon's socket in `to_dir`, when the daemon runs as its own user; None: no
    /// links.
    pub links_in: Option<PathBuf>,
}

/// What was done, for the caller to print.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Interfaces given a key that is now saved.
    pub keys_saved: Vec<String>,
    /// Keys that could not be saved, with why: those interfaces are handed over without
    /// one, and the daemon keeps a key in memory for them.
    pub keys_not_saved: Vec<String>,
    /// Sections written.
    pub sections: usize,
    /// Names in the shared socket directory left alone, with why.
    pub links_not_made: Vec<String>,
}

/// The `uci batch` input that sets `network.<ifname>.private_key` and commits it; None for
/// a name that is not a UCI name (it goes into the batch's syntax; the reader allows no
/// other). Wiped when dropped.
pub fn key_commands(ifname: &str, key: &Key) -> Option<Zeroizing<String>> {
    if ifname.is_empty()
        || !ifname
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_')
    {
        return None;
    }
    let b64 = Zeroizing::new(base64(&key[..]));
    let parts = [
        "set network.",
        ifname,
        ".private_key='",
        b64.as_str(),
        "'\ncommit network\n",
    ];
    // Sized up front: a reallocation would leave a copy of the key behind, unwiped.
    let mut cmds = Zeroizing::new(String::with_capacity(parts.iter().map(|p| p.len()).sum()));
    for p in parts {
        cmds.push_str(p);
    }
    Some(cmds)
}

/// Reads the network file as the daemon would; the text is wiped when dropped.
fn read_network(dir: &Path) -> Result<Zeroizing<String>, String> {
    let path = dir.join("network");
    let mut bytes = fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let text = Zeroizing::new(String::from_utf8_lossy(&bytes).into_owned());
    bytes.zeroize();
    Ok(text)
}

pub fn run(opts: &Options) -> Result<Outcome, String> {
    // netifd sets interfaces up in parallel, each handler running an export: one at a time,
    // or two would each make a key for the same keyless interface and the daemon could get
    // the one that was not saved last. The lock is on the directory (root's; a lock file
    // would mean writing to flash, or a name in /tmp that anyone could hold).
    let dir = fs::File::open(&opts.config_dir)
        .map_err(|e| format!("{}: {e}", opts.config_dir.display()))?;
    crate::sys::lock::exclusive(&dir)
        .map_err(|e| format!("{}: lock: {e}", opts.config_dir.display()))?;
    let out = run_locked(opts);
    drop(dir);
    out
}

fn run_locked(opts: &Options) -> Result<Outcome, String> {
    let mut out = Outcome::default();
    let mut text = read_network(&opts.config_dir)?;
    let cfg = config::parse_network(&text);
    if let Some(e) = cfg.errors.iter().find(|e| e.scope == ErrorScope::Line) {
        return Err(format!(
            "{}: {e}; nothing handed over, the daemon keeps its configuration",
            opts.config_dir.join("network").display()
        ));
    }
    let keyless: Vec<String> = cfg
        .interfaces
        .iter()
        .filter(|i| matches!(i.private_key, KeySpec::Generate))
        .map(|i| i.name.clone())
        .collect();
    drop(cfg);
    if !keyless.is_empty() {
        let mut rng = Rng::from_os().map_err(|e| format!("no randomness for a key: {e}"))?;
        let mut ran = Vec::new();
        for name in keyless {
            match save_key(opts, &name, &rng.private_key()) {
                Ok(()) => ran.push(name),
                Err(e) => out.keys_not_saved.push(format!("{name}: {e}")),
            }
        }
        // The sections as saved: a key `uci` did not write is not handed over.
        text = read_network(&opts.config_dir)?;
        let saved = config::parse_network(&text);
        for name in ran {
            // `uci batch` exits 0 even when a command in it failed: the file tells.
            match saved.interface(&name).map(|i| &i.private_key) {
                Some(KeySpec::Key(_)) => out.keys_saved.push(name),
                _ => out.keys_not_saved.push(format!(
                    "{name}: the file does not hold the key after uci ran"
                )),
            }
        }
    }
    let (mut pkg, syntax) = uci::parse(&text);
    if let Some(e) = syntax.first() {
        config::wipe_secrets(&mut pkg);
        return Err(format!("network changed while it was read: {e}"));
    }
    let picked = pick(&pkg);
    out.sections = picked.len();
    let names: Vec<String> = picked
        .iter()
        .filter(|s| s.section_type == "interface")
        .filter_map(|s| s.name.clone())
        .collect();
    let written = write(&opts.to_dir, &picked);
    config::wipe_secrets(&mut pkg);
    written.map_err(|e| format!("{}: {e}", opts.to_dir.join("network").display()))?;
    if let Some(shared) = &opts.links_in {
        out.links_not_made = link_sockets(shared, &opts.to_dir, &names);
    }
    Ok(out)
}

/// `wg` finds a userspace interface only as `/var/run/wireguard/<if>.sock`. A daemon running
/// as its own user may not write there (the directory is root's and shared with wg-quick,
/// wireguard-go and others, so it is not given away): it binds in its own directory, and
/// root links the shared name to that socket. `wg` follows the link; a dangling one (the
/// interface down) it skips. Links of ours for interfaces no longer configured go; anything
/// else in the directory is left alone. Where the daemon runs as root (its directory is
/// root's) it binds in the shared directory itself, and links of ours are removed. Returns
/// the names left alone, with why.
pub fn link_sockets(shared: &Path, to_dir: &Path, names: &[String]) -> Vec<String> {
    let mut notes = Vec::new();
    let ours = |p: &Path| fs::read_link(p).is_ok_and(|t| t.starts_with(to_dir));
    let daemon_is_root = fs::metadata(to_dir).map_or(true, |m| m.uid() == 0);
    let wanted: &[String] = if daemon_is_root { &[] } else { names };
    // Ours that are no longer wanted.
    if let Ok(entries) = fs::read_dir(shared) {
        for e in entries.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            let Some(ifname) = n.strip_suffix(".sock") else {
                continue;
            };
            if !wanted.iter().any(|w| w == ifname) && ours(&e.path()) {
                let _ = fs::remove_file(e.path());
            }
        }
    }
    if wanted.is_empty() {
        return notes;
    }
    if !shared.exists() {
        // As wireguard-go and wg-quick make it.
        if let Err(e) = fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(shared)
        {
            notes.push(format!("{}: {e}", shared.display()));
            return notes;
        }
    }
    for ifname in wanted {
        let link = shared.join(format!("{ifname}.sock"));
        let target = to_dir.join(format!("{ifname}.sock"));
        match fs::symlink_metadata(&link) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                notes.push(format!("{}: {e}", link.display()));
                continue;
            }
            Ok(m) if m.file_type().is_symlink() => {
                if fs::read_link(&link).is_ok_and(|t| t == target) {
                    continue;
                }
                if !ours(&link) {
                    notes.push(format!(
                        "{}: a link of another program, left as it is",
                        link.display()
                    ));
                    continue;
                }
            }
            Ok(m) if std::os::unix::fs::FileTypeExt::is_socket(&m.file_type()) => {
                if std::os::unix::net::UnixStream::connect(&link).is_ok() {
                    notes.push(format!(
                        "{}: served by another process, left as it is",
                        link.display()
                    ));
                    continue;
                }
                // A stale socket: its daemon is gone.
            }
            Ok(_) => {
                notes.push(format!("{}: not a socket, left as it is", link.display()));
                continue;
            }
        }
        // Made under another name and renamed over the old one: never missing meanwhile.
        let tmp = shared.join(format!(".{ifname}.sock.{}", std::process::id()));
        let _ = fs::remove_file(&tmp);
        let made = std::os::unix::fs::symlink(&target, &tmp).and_then(|()| fs::rename(&tmp, &link));
        if let Err(e) = made {
            let _ = fs::remove_file(&tmp);
            notes.push(format!("{}: {e}", link.display()));
        }
    }
    notes
}

/// The `proto solowg` interface sections and the peer sections of those interfaces.
fn pick(pkg: &uci::Package) -> Vec<&Section> {
    let solowg = |s: &Section| {
        s.section_type == "interface"
            && matches!(s.get("proto"), Some(uci::Value::Single(p)) if p == config::PROTO)
    };
    let names: Vec<&str> = pkg
        .sections
        .iter()
        .filter(|s| solowg(s))
        .filter_map(|s| s.name.as_deref())
        .collect();
    pkg.sections
        .iter()
        .filter(|s| {
            solowg(s)
                || ["solowg_", "wireguard_"].iter().any(|p| {
                    s.section_type
                        .strip_prefix(p)
                        .is_some_and(|i| names.contains(&i))
                })
        })
        .collect()
}

/// Runs `uci batch` with the key on its standard input and waits for it: this is root's
/// short-lived command, not the daemon's loop.
fn save_key(opts: &Options, ifname: &str, key: &Key) -> Result<(), String> {
    let cmds = key_commands(ifname, key).ok_or("not a UCI section name")?;
    let dir = opts.config_dir.display().to_string();
    // A delta directory of our own, new and root's: `commit` must not carry changes that
    // others left pending in the shared one, or that anyone could plant there.
    let save = std::env::temp_dir().join(format!("solowg-export-{}", std::process::id()));
    fs::DirBuilder::new()
        .mode(0o700)
        .create(&save)
        .map_err(|e| format!("{}: {e}", save.display()))?;
    let r = run_uci(opts, &dir, &save, &cmds);
    let _ = fs::remove_dir_all(&save);
    r
}

fn run_uci(opts: &Options, dir: &str, save: &Path, cmds: &str) -> Result<(), String> {
    let mut child = Command::new(&opts.uci)
        .args(["-q", "-c", dir, "-t"])
        .arg(save)
        .arg("batch")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run '{}': {e}", opts.uci))?;
    let fed = match child.stdin.take() {
        Some(mut stdin) => stdin.write_all(cmds.as_bytes()),
        None => Err(io::Error::other("no pipe to its standard input")),
    };
    if let Err(e) = fed {
        // Without its input it must not commit whatever else is pending.
        let _ = child.kill();
        let _ = child.wait();
        return Err(format!("its input could not be written: {e}"));
    }
    match child.wait() {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!("'{}' exited with {s}", opts.uci)),
        Err(e) => Err(format!("'{}': {e}", opts.uci)),
    }
}

/// Writes the sections to `<dir>/network` through a new file renamed over the old one, so
/// the daemon never reads half a file. The directory's owner gets the file.
fn write(dir: &Path, sections: &[&Section]) -> io::Result<()> {
    if !dir.exists() {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    let owner = fs::metadata(dir)?;
    let mut text = Zeroizing::new(String::with_capacity(uci::rendered_len(sections)));
    uci::render(sections, &mut text);
    let tmp = dir.join(format!(".network.{}", std::process::id()));
    let _ = fs::remove_file(&tmp);
    let result = (|| {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        std::os::unix::fs::fchown(&f, Some(owner.uid()), Some(owner.gid()))?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        fs::rename(&tmp, dir.join("network"))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    use std::os::unix::net::{UnixListener, UnixStream};

    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("solowg-links-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    /// A scratch root with the daemon's own directory made (its user's, 65534, when root runs
    /// the test) and the shared one's path: (root, shared, own, whether root runs this).
    fn scratch_dirs(tag: &str) -> (PathBuf, PathBuf, PathBuf, bool) {
        let root = scratch(tag);
        let shared = root.join("wireguard");
        let own = root.join("solowg");
        fs::create_dir_all(&own).unwrap();
        let as_root = fs::metadata(&own).unwrap().uid() == 0;
        if as_root {
            std::os::unix::fs::chown(&own, Some(65534), Some(65534)).unwrap();
        }
        (root, shared, own, as_root)
    }

    /// The shared directory's entries: a name and what it is, for the assertions.
    fn kind(p: &Path) -> String {
        match fs::symlink_metadata(p) {
            Err(_) => "none".into(),
            Ok(m) if m.file_type().is_symlink() => {
                format!("link {}", fs::read_link(p).unwrap().display())
            }
            Ok(m) if m.file_type().is_socket() => "socket".into(),
            Ok(_) => "other".into(),
        }
    }

    #[test]
    fn shared_names_link_to_the_daemons_sockets_and_nothing_else_changes() {
        let (root, shared, own, root_runs_this) = scratch_dirs("a");
        fs::create_dir_all(&shared).unwrap();
        fs::set_permissions(&shared, fs::Permissions::from_mode(0o700)).unwrap();
        let before = fs::metadata(&shared).unwrap();
        // wg0's daemon socket; another program's live socket on `busy`; a stale one on
        // `stale`; a link of another program on `theirs`; a link of ours to `gone`, an
        // interface no longer configured; a file on `file`.
        let _wg0 = UnixListener::bind(own.join("wg0.sock")).unwrap();
        let _busy = UnixListener::bind(shared.join("busy.sock")).unwrap();
        drop(UnixListener::bind(shared.join("stale.sock")).unwrap());
        std::os::unix::fs::symlink("/elsewhere/theirs.sock", shared.join("theirs.sock")).unwrap();
        std::os::unix::fs::symlink(own.join("gone.sock"), shared.join("gone.sock")).unwrap();
        fs::write(shared.join("file.sock"), b"").unwrap();
        let names: Vec<String> = ["wg0", "busy", "stale", "theirs", "file"]
            .map(String::from)
            .to_vec();
        let notes = link_sockets(&shared, &own, &names);
        let at = |n: &str| kind(&shared.join(format!("{n}.sock")));
        let to = |n: &str| format!("link {}", own.join(format!("{n}.sock")).display());
        assert_eq!(at("wg0"), to("wg0"));
        assert_eq!(at("stale"), to("stale"));
        assert_eq!(at("busy"), "socket");
        assert_eq!(at("theirs"), "link /elsewhere/theirs.sock");
        assert_eq!(at("file"), "other");
        assert_eq!(at("gone"), "none");
        assert_eq!(notes.len(), 3, "{notes:?}");
        // What wg does: stat through the link finds a socket, and connects.
        assert!(fs::metadata(shared.join("wg0.sock"))
            .unwrap()
            .file_type()
            .is_socket());
        UnixStream::connect(shared.join("wg0.sock")).unwrap();
        // The directory's owner and mode are as they were; again, nothing changes.
        let after = fs::metadata(&shared).unwrap();
        assert_eq!(
            (after.uid(), after.gid(), after.mode()),
            (before.uid(), before.gid(), before.mode())
        );
        assert_eq!(link_sockets(&shared, &own, &names).len(), 3);
        assert_eq!(at("wg0"), to("wg0"));

        // A daemon running as root binds in the shared directory itself: links of ours go.
        if root_runs_this {
            std::os::unix::fs::chown(&own, Some(0), Some(0)).unwrap();
            assert!(link_sockets(&shared, &own, &names).is_empty());
            assert_eq!(at("wg0"), "none");
            assert_eq!(at("stale"), "none");
            assert_eq!(at("theirs"), "link /elsewhere/theirs.sock");
            assert_eq!(at("busy"), "socket");
        }
        let _ = fs::remove_dir_all(&root);
    }

    #[test]
    fn a_missing_shared_directory_is_made_as_wireguard_go_makes_it() {
        let (root, shared, own, _) = scratch_dirs("b");
        assert!(link_sockets(&shared, &own, &["wg0".to_string()]).is_empty());
        assert_eq!(fs::metadata(&shared).unwrap().mode() & 0o7777, 0o700);
        assert!(fs::symlink_metadata(shared.join("wg0.sock"))
            .unwrap()
            .file_type()
            .is_symlink());
        let _ = fs::remove_dir_all(&root);
    }
}
