//! The UAPI request parser and applier (what `wg` sends over the control socket).
//!
//! The input is the byte stream of one connection, read as the server does: parse a request,
//! drop the bytes it consumed, repeat (past errors too, to reach the later requests). Every
//! `set` request is applied to one Device, and after each the `get` reply is written and
//! checked:
//! - `parse_request` consumes at least one and at most all bytes, and a request that parses
//!   from the whole buffer parses identically (same length) from any longer buffer and is
//!   `Ok(None)` or an error from a buffer cut before its end;
//! - errors are EINVAL, their messages short and any `line N` within the request;
//! - the get reply is UTF-8, ends in `errno=0\n\n`, renders with `wg show`'s renderer;
//! - round trip: the reply's settable lines, sent as `set=1` with `replace_peers=true` to a
//!   fresh Device, reproduce the same configuration (keys, port, fwmark, peers, PSKs,
//!   endpoints, keepalives, allowed IPs).
#![no_main]

use libfuzzer_sys::fuzz_target;
use solowg::crypto::Rng;
use solowg::proto::device::Device;
use solowg::proto::uapi::{parse_request, write_get_reply, DeviceInfo, Request, EINVAL};
use std::time::{Instant, SystemTime};

fn device(now: Instant) -> Device {
    Device::new(now, SystemTime::UNIX_EPOCH, Rng::from_seed([1; 32]))
}

/// The part of `info()` that a set request controls.
fn config(info: &DeviceInfo) -> impl PartialEq + std::fmt::Debug {
    (
        info.private_key.as_ref().map(|k| **k),
        info.listen_port,
        info.fwmark,
        info.peers
            .iter()
            .map(|p| {
                (
                    p.public_key,
                    p.preshared_key.as_ref().map(|k| **k),
                    p.endpoint,
                    p.persistent_keepalive,
                    p.allowed_ips.clone(),
                )
            })
            .collect::<Vec<_>>(),
    )
}

fn check_error_line(msg: &str, request: &[u8]) {
    assert!(msg.len() < 200, "long error message: {msg}");
    if let Some(rest) = msg.strip_prefix("line ") {
        let n: usize = rest
            .split(':')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("unparsable line number in {msg:?}"));
        let lines = solowg_fuzz::line_count(request).max(1);
        assert!(
            n >= 1 && n <= lines,
            "{msg:?} but the request has {lines} lines"
        );
    }
}

fn round_trip(info: &DeviceInfo, now: Instant) {
    let mut reply = Vec::new();
    write_get_reply(&mut reply, info);
    let text = std::str::from_utf8(&reply).expect("get reply is UTF-8");
    assert!(text.ends_with("errno=0\n\n"));
    let shown = solowg::cli::show::parse("wg0", text).expect("wg show reads the reply");
    let _ = solowg::cli::show::pretty("wg0", &shown, 1_700_000_000);
    let dump = solowg::cli::show::field("wg0", &shown, solowg::cli::show::Field::Dump, false);
    // One line for the interface, one per peer.
    assert_eq!(dump.lines().count(), 1 + info.peers.len());

    let mut set = String::from("set=1\nreplace_peers=true\n");
    for line in text.lines() {
        let key = line.split('=').next().unwrap_or("");
        if matches!(
            key,
            "private_key"
                | "listen_port"
                | "fwmark"
                | "public_key"
                | "preshared_key"
                | "protocol_version"
                | "endpoint"
                | "persistent_keepalive_interval"
                | "allowed_ip"
        ) {
            set.push_str(line);
            set.push('\n');
        }
    }
    set.push('\n');
    let req = match parse_request(set.as_bytes()) {
        Ok(Some((Request::Set(req), n))) => {
            assert_eq!(n, set.len());
            req
        }
        Ok(Some((Request::Get, _))) => panic!("set parsed as get"),
        Ok(None) => panic!("reply-derived set request incomplete"),
        Err((e, _)) => panic!("reply-derived set request refused: {e}\n{set}"),
    };
    let mut fresh = device(now);
    fresh.apply(&req, now);
    assert_eq!(
        config(&fresh.info()),
        config(info),
        "round trip changed the configuration"
    );
}

fuzz_target!(|data: &[u8]| {
    solowg::log::set_level(solowg::log::SILENT);
    let now = Instant::now();
    let mut dev = device(now);
    let mut at = 0;
    // A split point for the incremental-parsing check.
    let cut = data.first().map_or(0, |&b| usize::from(b));
    let mut requests = 0;
    while at < data.len() && requests < 64 {
        requests += 1;
        let buf = &data[at..];
        match parse_request(buf) {
            Ok(None) => break,
            Ok(Some((req, n))) => {
                assert!(n >= 1 && n <= buf.len());
                // The same request from exactly its own bytes, and nothing from fewer.
                match parse_request(&buf[..n]) {
                    Ok(Some((_, m))) => assert_eq!(m, n),
                    _ => panic!("request parses from a longer buffer only"),
                }
                if cut > 0 && cut < n {
                    assert!(
                        !matches!(parse_request(&buf[..cut]), Ok(Some(_))),
                        "a prefix parsed as a complete request"
                    );
                }
                if let Request::Set(req) = req {
                    dev.apply(&req, now);
                    let info = dev.info();
                    assert_eq!(info.peers.len(), dev.peer_count());
                    round_trip(&info, now);
                }
                at += n;
            }
            Err((e, n)) => {
                assert!(n >= 1 && n <= buf.len(), "consumed {n} of {}", buf.len());
                assert_eq!(e.errno, EINVAL);
                check_error_line(&e.message, &buf[..n]);
                at += n;
            }
        }
    }
});
