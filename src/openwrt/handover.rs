//! `solowg export`: what root hands the daemon, which runs as its own user on OpenWrt.
//!
//! The daemon cannot read /etc/config/network there: libuci writes a committed file anew,
//! mode 0600, owned by root. Nor should it: the file also holds what the daemon has no use
//! for (PPPoE passwords, other tunnels' keys). netifd's handler and the init script, both
//! root, run this before each `up` and `reload`. It
//! 1. makes a private key for each `proto solowg` interface without one and saves it with
//!    `uci batch` (the key on its standard input, never in its arguments), as the kernel
//!    WireGuard handler keeps a generated key, so the tunnel keeps its identity;
//! 2. writes those interfaces and their peer sections, nothing else, to `<dir>/network`,
//!    mode 0600, owned by the owner of `<dir>` (the daemon makes the directory its own when
//!    it starts), replacing the previous copy in one rename.
//!
//! A network file with syntax errors is not handed over: the daemon keeps what it has, as
//! its `reload` does with such a file.

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
    let written = write(&opts.to_dir, &picked);
    config::wipe_secrets(&mut pkg);
    written.map_err(|e| format!("{}: {e}", opts.to_dir.join("network").display()))?;
    Ok(out)
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
