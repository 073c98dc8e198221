//! An interface without a private key in the file the daemon reads. On OpenWrt root's
//! `solowg export` (`handover`) makes and saves one before the daemon is asked to set the
//! interface up, so this is for when that save failed, or for a daemon that reads
//! /etc/config itself: a key made here lives in memory only, and is kept while the
//! interface runs so that a renew does not change its identity.

use super::managed::Managed;
use crate::log;
use crate::openwrt::config::{InterfaceConfig, KeySpec};

impl Managed {
    /// A missing or `generate` key: the running interface's, else a new one in memory.
    pub(super) fn ensure_key(&mut self, icfg: &mut InterfaceConfig) {
        if !matches!(icfg.private_key, KeySpec::Generate) {
            return;
        }
        if let Some(KeySpec::Key(k)) = self.running.get(&icfg.name).map(|r| &r.private_key) {
            icfg.private_key = KeySpec::Key(k.clone());
            return;
        }
        log::error(format_args!(
            "{}: no private key saved; using a new one that lasts until the daemon restarts",
            icfg.name
        ));
        icfg.private_key = KeySpec::Key(self.new_private_key());
    }
}
