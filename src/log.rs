//! Two log levels to stderr (managed mode: info and verbose lines to stdout, which procd logs
//! at info level, errors to stderr, which it logs as errors). Callers pass peers through
//! `short_key` and never pass keys.
#![forbid(unsafe_code)]

use std::fmt::Arguments;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

pub const SILENT: u8 = 0;
pub const ERROR: u8 = 1;
pub const INFO: u8 = 2;
pub const VERBOSE: u8 = 3;

// A process-wide setting read on every log call; 8-bit atomics exist on every target.
static LEVEL: AtomicU8 = AtomicU8::new(INFO);
static SPLIT: AtomicBool = AtomicBool::new(false);

/// From now on lines below error level go to stdout.
pub fn split_streams() {
    SPLIT.store(true, Ordering::Relaxed);
}

pub fn set_level(level: u8) {
    LEVEL.store(level, Ordering::Relaxed);
}

pub fn level() -> u8 {
    LEVEL.load(Ordering::Relaxed)
}

fn write(tag: &str, args: Arguments, error: bool) {
    // One write per line so lines from a daemon and its supervisor don't interleave.
    let line = format!("solowg: {tag}{args}\n");
    let _ = if error || !SPLIT.load(Ordering::Relaxed) {
        std::io::stderr().lock().write_all(line.as_bytes())
    } else {
        std::io::stdout().lock().write_all(line.as_bytes())
    };
}

pub fn error(args: Arguments) {
    if level() >= ERROR {
        write("error: ", args, true);
    }
}

pub fn info(args: Arguments) {
    if level() >= INFO {
        write("", args, false);
    }
}

pub fn verbose(args: Arguments) {
    if level() >= VERBOSE {
        write("", args, false);
    }
}
