//! The UCI reader and the network-config loader on arbitrary bytes.
//!
//! `uci::parse_bytes` on the raw input, and `uci::parse` plus `config::parse_network` on its
//! UTF-8-lossy text. No panic; every syntax and config error points at a line that exists
//! (1..=number of lines); error messages render; loaded interfaces have names and the failed
//! ones are not also loaded.
#![no_main]

use libfuzzer_sys::fuzz_target;
use solowg::{openwrt::config, openwrt::uci};
use solowg_fuzz::line_count;

fuzz_target!(|data: &[u8]| {
    let lines = line_count(data);
    let (_, errors) = uci::parse_bytes(data);
    for e in &errors {
        assert!(
            e.line >= 1 && e.line <= lines,
            "{e} but the input has {lines} lines"
        );
        let _ = e.to_string();
    }

    let text = String::from_utf8_lossy(data);
    let lines = line_count(text.as_bytes());
    let (pkg, errors) = uci::parse(&text);
    for e in &errors {
        assert!(e.line >= 1 && e.line <= lines, "{e}: {lines} lines");
    }
    for s in pkg.sections_of_type("interface") {
        let _ = s.get("proto");
    }

    let cfg = config::parse_network(&text);
    for e in &cfg.errors {
        assert!(
            e.line >= 1 && e.line <= lines,
            "{e} (line {}) but the input has {lines} lines",
            e.line
        );
        assert!(!e.to_string().is_empty());
    }
    for i in &cfg.interfaces {
        assert!(!i.name.is_empty());
        assert!(
            !cfg.failed_interfaces.contains(&i.name),
            "{} both loaded and failed",
            i.name
        );
    }
});
