//! Reading /etc/config/network for `up` and `reload`, and picking out the errors that
//! concern one interface.

use super::managed::Managed;
use crate::openwrt::config::{self, NetworkConfig};
use std::path::PathBuf;
use zeroize::Zeroizing;

impl Managed {
    fn network_path(&self) -> PathBuf {
        self.opts.config_dir.join("network")
    }

    pub(super) fn read_config(&self) -> Result<NetworkConfig, String> {
        self.read_config_checked(false)
    }

    /// With `strict`, a file with syntax errors is refused as a whole (as libuci's default,
    /// strict, mode does): a file truncated or overwritten while it was being written must not
    /// turn into a configuration with the rest of its sections, or their options, missing.
    pub(super) fn read_config_checked(&self, strict: bool) -> Result<NetworkConfig, String> {
        let path = self.network_path();
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let text = Zeroizing::new(String::from_utf8_lossy(&bytes).into_owned());
        let mut bytes = bytes;
        zeroize::Zeroize::zeroize(&mut bytes);
        let cfg = config::parse_network(&text);
        if strict {
            let mut syntax = cfg
                .errors
                .iter()
                .filter(|e| e.scope == config::ErrorScope::Line);
            if let Some(first) = syntax.next() {
                let more = syntax.count();
                return Err(format!(
                    "{}: line {}{}: {}{}; nothing applied, the running configuration is kept",
                    path.display(),
                    first.line,
                    section_at(&text, first.line)
                        .map(|s| format!(" (in section '{s}')"))
                        .unwrap_or_default(),
                    first.message,
                    if more > 0 {
                        format!(" (and {more} more syntax error(s))")
                    } else {
                        String::new()
                    }
                ));
            }
        }
        Ok(cfg)
    }

    /// Errors of the file that concern `ifname` (or the file as a whole), as text.
    pub(super) fn errors_for(cfg: &NetworkConfig, ifname: Option<&str>) -> Vec<String> {
        cfg.errors
            .iter()
            .filter(|e| match (ifname, &e.interface) {
                (Some(want), Some(i)) => i == want,
                _ => true,
            })
            .map(|e| e.to_string())
            .collect()
    }
}

/// The name (or, if anonymous, the type) of the section whose `config` line is the last one
/// at or before 1-based `line`, for syntax error messages. Never an option's value.
fn section_at(text: &str, line: usize) -> Option<String> {
    text.lines()
        .take(line)
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            (w.next() == Some("config")).then(|| {
                let ty = w.next().unwrap_or("");
                let name = w.next().unwrap_or(ty);
                name.trim_matches(|c| c == '\'' || c == '"').to_string()
            })
        })
        .last()
        .filter(|s| !s.is_empty() && s.len() <= 64)
}
