//! A generated private key saved with `uci`, off the loop: `uci batch` is started and not
//! waited for (the once-a-second check reaps it and says whether the key was saved), and
//! the key reaches it on its standard input, never in its arguments (/proc/<pid>/cmdline
//! is readable by every user). Waiting for `uci` stalled every tunnel for as long as it ran.

use super::managed::Managed;
use crate::log;
use crate::openwrt::config::{InterfaceConfig, KeySpec};
use crate::proto::peer::base64;
use crate::proto::uapi::Key;
use crate::sys::child;
use std::io;
use std::process::{Child, Command, ExitStatus, Stdio};
use zeroize::Zeroizing;

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

/// A `uci batch` run that saves an interface's generated key, not reaped yet.
pub(super) struct KeyWrite {
    ifname: String,
    /// The key being saved: reused if the interface is set up again meanwhile, and what
    /// the file must hold once `uci` is done.
    key: Key,
    child: Child,
    /// Why the commands could not be handed to `uci` (it was killed then).
    not_fed: Option<io::Error>,
}

impl Managed {
    /// A missing or `generate` key: make one and save it, as the kernel WireGuard handler
    /// does, so the interface keeps its identity across restarts.
    pub(super) fn ensure_key(&mut self, icfg: &mut InterfaceConfig) {
        if !matches!(icfg.private_key, KeySpec::Generate) {
            return;
        }
        // Set up again before the file has the key: the key being saved is the one to use.
        if let Some(w) = self.key_writes.iter().find(|w| w.ifname == icfg.name) {
            icfg.private_key = KeySpec::Key(w.key.clone());
            return;
        }
        // Set up again (netifd's renew) after the key could not be saved: the running
        // interface keeps its identity, and saving is tried once more.
        if let Some(KeySpec::Key(k)) = self.running.get(&icfg.name).map(|r| &r.private_key) {
            let key = k.clone();
            self.save_key(&icfg.name, &key);
            icfg.private_key = KeySpec::Key(key);
            return;
        }
        let key = self.new_private_key();
        self.save_key(&icfg.name, &key);
        icfg.private_key = KeySpec::Key(key);
    }

    /// Starts `uci batch` with the commands that set and commit the key; does not wait.
    fn save_key(&mut self, ifname: &str, key: &Key) {
        let Some(cmds) = key_commands(ifname, key) else {
            log::error(format_args!(
                "{ifname}: generated a private key but cannot save it under this name; it lasts until restart"
            ));
            return;
        };
        let dir = self.opts.config_dir.display().to_string();
        // Our own delta directory, so nothing of ours lingers in the shared /tmp/.uci.
        let save = self.opts.state_file.with_file_name("uci");
        let _ = std::fs::create_dir_all(&save);
        let save = save.display().to_string();
        let spawned = Command::new(&self.opts.uci)
            .args(["-q", "-c", &dir, "-t", &save, "batch"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn();
        let mut child = match spawned {
            Ok(c) => c,
            Err(e) => {
                log::error(format_args!(
                    "{ifname}: generated a private key but could not save it: cannot run '{}': {e}; it lasts until restart",
                    self.opts.uci
                ));
                return;
            }
        };
        let fed = match child.stdin.take() {
            Some(stdin) => child::feed(stdin, cmds.as_bytes()),
            None => Err(io::Error::other("no pipe to its standard input")),
        };
        let not_fed = fed.err();
        if not_fed.is_some() {
            // Without its input it must not commit whatever else is pending.
            let _ = child.kill();
        }
        log::verbose(format_args!(
            "{ifname}: generated a private key; saving it with '{}' (pid {})",
            self.opts.uci,
            child.id()
        ));
        self.key_writes.push(KeyWrite {
            ifname: ifname.to_string(),
            key: key.clone(),
            child,
            not_fed,
        });
    }

    /// From the once-a-second check: the `uci` runs that ended, each with its outcome.
    pub(super) fn reap_key_writes(&mut self) {
        let mut i = 0;
        while i < self.key_writes.len() {
            let status = match self.key_writes[i].child.try_wait() {
                Ok(None) => {
                    i += 1;
                    continue;
                }
                Ok(Some(s)) => Ok(s),
                Err(e) => Err(e),
            };
            let w = self.key_writes.swap_remove(i);
            self.report_key_write(w, status);
        }
    }

    fn report_key_write(&self, w: KeyWrite, status: io::Result<ExitStatus>) {
        let why = match (&w.not_fed, status) {
            (Some(e), _) => format!("its input could not be written: {e}"),
            (None, Err(e)) => format!("its exit status is unknown: {e}"),
            (None, Ok(s)) if !s.success() => format!("it exited with {s}"),
            // `uci batch` exits 0 even when a command in it failed: the file tells.
            (None, Ok(_)) if !self.file_has_key(&w.ifname, &w.key) => {
                "the file does not hold the key after it ran".to_string()
            }
            (None, Ok(_)) => {
                log::info(format_args!(
                    "{}: generated a private key and saved it",
                    w.ifname
                ));
                return;
            }
        };
        log::error(format_args!(
            "{}: generated a private key but could not save it with '{}' ({why}); it lasts until restart",
            w.ifname, self.opts.uci
        ));
    }

    fn file_has_key(&self, ifname: &str, key: &Key) -> bool {
        self.read_config().is_ok_and(|cfg| {
            cfg.interface(ifname)
                .is_some_and(|i| matches!(&i.private_key, KeySpec::Key(k) if k[..] == key[..]))
        })
    }
}
