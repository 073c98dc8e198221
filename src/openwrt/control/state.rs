//! The state file: the names of the interfaces that are up, one a line, on tmpfs
//! (/var/run/solowg/interfaces), for scripts and for a look after a crash.
//!
//! Nothing is restored from it. The TUNs go with the process (stop, restart, crash), and the
//! handler sets `teardown_on_l3_link_down`: netifd sees each device go, tears its interface
//! down and sets it up again at once; the handler's setup waits for the daemon's ubus object
//! and calls `up`. Running `ifup` from here, as was done, made netifd reload its whole
//! configuration (applying any committed but unapplied change to other interfaces) and
//! bounced an interface netifd was already setting up again.

use super::managed::Managed;
use crate::log;

impl Managed {
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
}
