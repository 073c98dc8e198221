//! The state file (the interfaces that are up, on tmpfs) and what a restarted daemon does
//! with it: asks netifd to set those interfaces up again.

use super::managed::Managed;
use crate::log;
use crate::openwrt::config;

impl Managed {
    /// Reads what a previous instance left (see `Options::state_file`).
    pub(super) fn load_restore(&mut self) {
        if let Ok(t) = std::fs::read_to_string(&self.opts.state_file) {
            self.restore = t
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && l.len() <= config::MAX_IFNAME_LEN)
                .map(str::to_string)
                .collect();
        }
    }

    pub(super) fn save_state(&self) {
        let mut names: Vec<&str> = self.running.keys().map(String::as_str).collect();
        names.sort_unstable();
        let text: String = names.iter().map(|n| format!("{n}\n")).collect();
        if let Some(dir) = self.opts.state_file.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        if let Err(e) = std::fs::write(&self.opts.state_file, text) {
            log::verbose(format_args!(
                "cannot write {}: {e}",
                self.opts.state_file.display()
            ));
        }
    }

    /// After a restart: netifd still believes these interfaces are up, but their TUNs went
    /// with the old process. `ifup` makes it run the handler again, which calls `up`.
    pub(super) fn restore_interfaces(&mut self) {
        for name in std::mem::take(&mut self.restore) {
            log::info(format_args!(
                "{name}: was up before this daemon started; asking netifd to set it up"
            ));
            match std::process::Command::new(&self.opts.ifup)
                .arg(&name)
                .stdin(std::process::Stdio::null())
                .spawn()
            {
                Ok(c) => self.children.push(c),
                Err(e) => log::error(format_args!("{name}: cannot run '{}': {e}", self.opts.ifup)),
            }
        }
    }
}
