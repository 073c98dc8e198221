//! Progress while the bench runs: one line on stderr (rewritten in place on a terminal,
//! a line per step otherwise) and the state file, replaced whole (a temporary file renamed
//! over it) so a reader never sees half of one.

use super::report::Report;
use crate::sys::signals::SignalFd;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How often the state file is rewritten while a run counts its seconds.
const STATE_EVERY: Duration = Duration::from_millis(500);

/// Writes `text` to `path` through a temporary file in the same directory, renamed over it.
pub fn write_atomic(path: &Path, text: &str) -> std::io::Result<()> {
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::other("not a file name"))?;
    let tmp = path.with_file_name(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let r = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, path));
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r
}

pub struct Sink {
    pub report: Report,
    state_file: Option<PathBuf>,
    signals: Option<SignalFd>,
    tty: bool,
    shown: bool,
    interrupted: bool,
    last_state: Option<Instant>,
    state_error_told: bool,
}

impl Sink {
    pub fn new(report: Report, state_file: Option<PathBuf>, signals: Option<SignalFd>) -> Sink {
        Sink {
            report,
            state_file,
            signals,
            tty: std::io::stderr().is_terminal(),
            shown: false,
            interrupted: false,
            last_state: None,
            state_error_told: false,
        }
    }

    /// Whether SIGINT or SIGTERM came (it stays so).
    pub fn interrupted(&mut self) -> bool {
        if let Some(s) = &self.signals {
            while let Some(sig) = s.take() {
                if sig == libc::SIGINT || sig == libc::SIGTERM {
                    self.interrupted = true;
                }
            }
        }
        self.interrupted
    }

    fn show(&mut self, text: &str) {
        let mut err = std::io::stderr().lock();
        let _ = if self.tty {
            write!(err, "\r\x1b[K{text}")
        } else {
            writeln!(err, "solowg bench: {text}")
        };
        let _ = err.flush();
        self.shown = true;
    }

    /// A new step: shown, and written to the state file.
    pub fn phase(&mut self, text: &str) {
        self.report.progress = text.to_string();
        self.show(text);
        self.write_state();
    }

    /// A run's seconds: on a terminal and in the state file (not more often than twice a
    /// second); not on a pipe, where each would be a line.
    pub fn tick(&mut self, label: &str, gone: f64, of: u32) {
        let secs = (gone as u32).min(of);
        let text = format!("{label} {secs}/{of} s");
        if text == self.report.progress {
            return;
        }
        self.report.progress = text.clone();
        if self.tty {
            self.show(&text);
        }
        if self.last_state.is_none_or(|t| t.elapsed() >= STATE_EVERY) {
            self.write_state();
        }
    }

    /// Ends the terminal's progress line so what follows starts on a clean one.
    pub fn finish_line(&mut self) {
        if self.tty && self.shown {
            let _ = write!(std::io::stderr(), "\r\x1b[K");
            self.shown = false;
        }
    }

    pub fn write_state(&mut self) {
        let Some(path) = &self.state_file else {
            return;
        };
        self.last_state = Some(Instant::now());
        if let Err(e) = write_atomic(path, &self.report.to_json().to_text()) {
            if !self.state_error_told {
                self.state_error_told = true;
                let _ = writeln!(
                    std::io::stderr(),
                    "\nsolowg bench: cannot write {}: {e}",
                    path.display()
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_is_replaced_whole_and_no_temporary_stays() {
        let dir = std::env::temp_dir().join(format!("solowg-bench-state-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("state.json");
        write_atomic(&p, "{\"state\":\"running\"}").unwrap();
        write_atomic(&p, "{\"state\":\"done\"}").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "{\"state\":\"done\"}");
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
        assert_eq!(names.len(), 1);
        assert!(write_atomic(&dir.join("missing/x.json"), "{}").is_err());
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
