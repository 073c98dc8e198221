//! Tests of `uapi`, one file per topic, and the helpers they share.

use super::*;

mod framing;
mod parse;
mod random_input;
mod rejected;
mod reply;

fn hex(b: u8) -> String {
    key_to_hex(&[b; 32])
}

/// Parses exactly one request that must fill the whole buffer.
fn parse_all(s: &[u8]) -> Result<Request, UapiError> {
    match parse_request(s) {
        Ok(Some((r, n))) => {
            assert_eq!(n, s.len(), "consumed");
            Ok(r)
        }
        Ok(None) => panic!("incomplete: {:?}", String::from_utf8_lossy(s)),
        Err((e, n)) => {
            assert_eq!(n, s.len(), "consumed on error");
            Err(e)
        }
    }
}

fn set_ok(s: &str) -> SetRequest {
    match parse_all(s.as_bytes()) {
        Ok(Request::Set(r)) => r,
        other => panic!("expected set, got {other:?} for {s:?}"),
    }
}

fn no_hex_run(msg: &str) -> bool {
    let mut run = 0;
    for c in msg.chars() {
        run = if c.is_ascii_hexdigit() { run + 1 } else { 0 };
        if run >= 8 {
            return false;
        }
    }
    true
}

/// Errno 22, names the expected line, and echoes no value from the input.
fn assert_invalid(input: &[u8], line: usize) {
    let e = match parse_all(input) {
        Err(e) => e,
        Ok(r) => panic!("accepted {:?}: {r:?}", String::from_utf8_lossy(input)),
    };
    let shown = String::from_utf8_lossy(input);
    assert_eq!(e.errno, EINVAL, "{shown:?}");
    assert!(
        e.message.starts_with(&format!("line {line}: ")),
        "{shown:?} gave {:?}",
        e.message
    );
    assert!(no_hex_run(&e.message), "{:?}", e.message);
    for l in shown.split('\n') {
        if let Some((_, v)) = l.split_once('=') {
            if v.len() >= 8 {
                assert!(!e.message.contains(v), "{:?} echoes {v:?}", e.message);
            }
        }
    }
    assert!(!e.to_string().is_empty());
}
