//! A running daemon: its state, socket and TUN device, the capabilities it keeps, its UAPI
//! socket with transactional and sliced `set`, clients that stall or flood, and how it stops.

use super::*;
#[test]
fn fresh_daemon_state_socket_and_tun() {
    if skip() {
        return;
    }
    let d = daemon();
    let reply = get(&d);
    let port: u16 = value(&reply, "listen_port")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no listen_port in {reply:?}"));
    assert_ne!(port, 0);
    // Nothing else: no key, no fwmark, no peers.
    assert_eq!(reply, format!("listen_port={port}\nerrno=0\n\n"));

    let meta = std::fs::metadata(d.sock()).expect("socket file");
    assert!(meta.file_type().is_socket());
    assert_eq!(meta.permissions().mode() & 0o7777, 0o600);

    let link = d.ns.link(&d.ifname).expect("TUN link in the namespace");
    assert!(link.contains(" mtu 1420 "), "{link}");
    assert!(link.contains("tun type tun"), "not a TUN: {link}");
}

/// Once up, the daemon holds CAP_NET_ADMIN and CAP_NET_BIND_SERVICE only (and CAP_NET_RAW
/// with the packet path on), in its bounding set too, with no_new_privs; and still works: a
/// fwmark (CAP_NET_ADMIN) and a new port are applied.
#[test]
fn capabilities_are_dropped_after_setup() {
    if skip() {
        return;
    }
    let field = |status: &str, name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_string())
            .unwrap_or_default()
    };
    let d = daemon();
    let status = std::fs::read_to_string(format!("/proc/{}/status", d.pid())).unwrap();
    let kept = format!("{:016x}", (1u64 << 12) | (1 << 10));
    for name in ["CapEff:", "CapPrm:", "CapBnd:"] {
        assert_eq!(field(&status, name), kept, "{name} in {status}");
    }
    assert_eq!(field(&status, "CapInh:"), "0000000000000000");
    assert_eq!(field(&status, "NoNewPrivs:"), "1");
    assert_eq!(set(&d, &format!("fwmark=51\n{}", full_config())), 0);
    assert_eq!(value(&get(&d), "fwmark"), Some("51"));
    assert!(
        d.log_text().contains("capabilities kept"),
        "{}",
        d.log_text()
    );
}

#[test]
fn set_is_all_or_nothing() {
    if skip() {
        return;
    }
    let d = daemon();
    let before = get(&d);
    let bad = format!("{}allowed_ip=10.0.0.0/33\n", full_config());
    assert_eq!(set(&d, &bad), -22);
    assert_eq!(get(&d), before, "a refused set changed the device");

    assert_eq!(set(&d, &full_config()), 0);
    let after = get(&d);
    assert_eq!(value(&after, "private_key"), Some(PRIVATE));
    assert_eq!(value(&after, "listen_port"), Some("21820"));
    assert_eq!(value(&after, "public_key"), Some(PEER));
    assert_eq!(value(&after, "allowed_ip"), Some("10.9.0.0/24"));
    assert_eq!(value(&after, "endpoint"), Some("192.0.2.7:51820"));
}

#[test]
fn port_in_use_is_refused_unapplied() {
    if skip() {
        return;
    }
    let ns = Netns::new();
    let d = Daemon::start(&ns);
    // A second daemon in the same namespace holds a port we know to be taken there.
    let holder = Daemon::start(&ns);
    let taken = value(&get(&holder), "listen_port").unwrap().to_owned();
    let before = get(&d);
    assert_ne!(value(&before, "listen_port"), Some(taken.as_str()));

    let req = format!("private_key={PRIVATE}\nlisten_port={taken}\n");
    assert_eq!(
        set(&d, &req),
        -98,
        "expected EADDRINUSE, negated as wireguard-go sends it"
    );
    assert_eq!(get(&d), before, "a refused set changed the device");
    assert_eq!(value(&get(&holder), "listen_port"), Some(taken.as_str()));

    // What an operator sees: wg negates the value back and prints strerror's words.
    if let Some(wg) = wg_tool() {
        let out = run(Command::new("ip").args([
            "netns",
            "exec",
            &ns.name,
            &wg,
            "set",
            &d.ifname,
            "listen-port",
            &taken,
        ]));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{out:?}");
        assert!(stderr.contains("Address already in use"), "{stderr}");
        assert_eq!(get(&d), before, "a refused set changed the device");
    }
}

/// One reply per request: a `set` and a `get` sent together get `errno=0` and then the
/// `get`'s reply.
#[test]
fn a_set_gets_one_reply() {
    if skip() {
        return;
    }
    let d = daemon();
    let mut s = connect(&d);
    s.write_all(b"set=1\nfwmark=3\n\nget=1\n\n").unwrap();
    let replies = read_replies(&mut s, 2, STEP);
    let (first, second) = replies.split_once("\n\n").unwrap();
    assert_eq!(first, "errno=0");
    // Not a second errno=0 for the set: the get's own reply.
    assert!(second.starts_with("listen_port="), "{replies:?}");
    assert!(second.contains("fwmark=3\n"), "{replies:?}");
}

#[test]
fn repeating_a_set_changes_nothing() {
    if skip() {
        return;
    }
    let d = daemon();
    assert_eq!(set(&d, &full_config()), 0);
    let before = without_counters(&get(&d));
    let same_key_and_port = format!("private_key={PRIVATE}\nlisten_port={FIXED_PORT}\n");
    assert_eq!(set(&d, &same_key_and_port), 0);
    assert_eq!(without_counters(&get(&d)), before);
    assert_eq!(set(&d, &full_config()), 0);
    assert_eq!(without_counters(&get(&d)), before);
}

#[test]
fn pipelined_requests_and_empty_connections() {
    if skip() {
        return;
    }
    let mut d = daemon();
    let single = get(&d);
    let mut s = connect(&d);
    s.write_all(b"get=1\n\nget=1\n\n").unwrap();
    let both = read_replies(&mut s, 2, STEP);
    assert_eq!(both, format!("{single}{single}"));
    // The connection stays usable after pipelined requests.
    s.write_all(b"get=1\n\n").unwrap();
    assert_eq!(read_replies(&mut s, 1, STEP), single);
    drop(s);

    for _ in 0..20 {
        drop(connect(&d));
    }
    // A client that half-closes without a request just gets EOF back.
    let mut s = connect(&d);
    s.shutdown(std::net::Shutdown::Write).unwrap();
    let mut rest = Vec::new();
    s.read_to_end(&mut rest).expect("EOF, not a timeout");
    assert!(rest.is_empty(), "unexpected reply {rest:?}");
    d.assert_running();
    assert_eq!(get(&d), single);
}

#[test]
fn stalled_client_does_not_block_others() {
    if skip() {
        return;
    }
    let d = daemon();
    let mut slow = connect(&d);
    slow.write_all(format!("set=1\nprivate_key={}", &PRIVATE[..20]).as_bytes())
        .unwrap();
    sleep(Duration::from_millis(50)); // let the daemon read the partial request first
    let took = timed_get(&d);
    assert!(took < FAST, "get took {took:?} behind a stalled client");
    // The stalled request was kept intact and completes normally.
    slow.write_all(format!("{}\n\n", &PRIVATE[20..]).as_bytes())
        .unwrap();
    assert_eq!(errno(&read_replies(&mut slow, 1, STEP)), 0);
    assert_eq!(value(&get(&d), "private_key"), Some(PRIVATE));
}

#[test]
fn oversized_request_is_refused() {
    if skip() {
        return;
    }
    let mut d = daemon();
    let mut s = connect(&d);
    let mut data = b"set=1\n".to_vec();
    data.resize(MAX_REQUEST_BYTES + 1024, b'a'); // no blank line anywhere
    let mut sent = 0;
    while sent < data.len() {
        let end = (sent + 65536).min(data.len());
        match s.write(&data[sent..end]) {
            Ok(n) => sent += n,
            Err(_) => break, // the daemon may give up and close before we are done
        }
    }
    assert!(
        sent > MAX_REQUEST_BYTES,
        "daemon stopped reading after {sent} bytes"
    );
    // Either errno=-22 then close, or just close; never silence (a read timeout).
    let got = read_until_closed(&mut s);
    assert!(got.is_empty() || got == b"errno=-22\n\n", "{got:?}");
    d.assert_running();
    get(&d);
}

#[test]
fn many_idle_connections_do_not_lock_out_clients() {
    if skip() {
        return;
    }
    let mut d = daemon();
    let idle: Vec<UnixStream> = (0..64).map(|_| connect(&d)).collect();
    sleep(Duration::from_millis(100)); // let the daemon accept them all
    let took = timed_get(&d);
    assert!(took < FAST, "get took {took:?} with 64 idle connections");
    d.assert_running();
    drop(idle);
    get(&d);
}

#[test]
fn garbage_first_line_is_refused() {
    if skip() {
        return;
    }
    let mut d = daemon();
    let reply = request(&d, "GET / HTTP/1.1\r\n\r\n");
    assert_eq!(reply, "errno=-22\n\n");
    d.assert_running();
    get(&d);
}

#[test]
fn sigterm_stops_and_cleans_up() {
    if skip() {
        return;
    }
    let mut d = daemon();
    let t = Instant::now();
    let out = run(Command::new("kill").args(["-TERM", &d.pid()]));
    assert!(out.status.success(), "{out:?}");
    let status = wait_within(&mut d.child, FAST)
        .unwrap_or_else(|| panic!("still running {:?} after SIGTERM", t.elapsed()));
    assert!(status.success(), "{status}");
    assert!(!d.sock().exists(), "socket file left behind");
    assert_eq!(d.ns.link(&d.ifname), None, "TUN link left behind");
}

#[test]
fn deleting_the_link_stops_the_daemon() {
    if skip() {
        return;
    }
    let mut d = daemon();
    let t = Instant::now();
    let out = ip(&["-n", &d.ns.name, "link", "del", &d.ifname]);
    assert!(out.status.success(), "{out:?}");
    let status = wait_within(&mut d.child, FAST)
        .unwrap_or_else(|| panic!("still running {:?} after link deletion", t.elapsed()));
    assert!(status.success(), "{status}");
    assert!(!d.sock().exists(), "socket file left behind");
}

#[test]
fn pipelined_burst_does_not_stall_other_clients() {
    if skip() {
        return;
    }
    let d = daemon();
    // ~150k tiny requests; the flooding client never reads its replies.
    let mut flood = connect(&d);
    let writer = std::thread::spawn(move || {
        let _ = flood.write_all(&b"get=1\n\n".repeat((1 << 20) / 7));
        flood // keep it open until joined
    });
    sleep(Duration::from_millis(200));
    let took = timed_get(&d);
    assert!(took < FAST, "get took {took:?} behind a pipelined burst");
    drop(writer.join());
}

/// A `set` of many peers is applied over many loop turns (after each turn's packets), and
/// is still all at once to clients: a `get` sent meanwhile is answered after it, with every
/// peer; the `set` itself gets one errno=0.
#[test]
fn a_long_set_is_applied_in_slices_and_seen_whole() {
    if skip() {
        return;
    }
    let _turn = busy_or_show_all();
    let mut d = daemon();
    assert_eq!(set(&d, &format!("private_key={PRIVATE}\n")), 0);
    let n = 3000;
    let mut body = String::from("set=1\n");
    for i in 0..n {
        body.push_str(&format!(
            "public_key={:064x}\nallowed_ip=10.{}.{}.{}/32\nendpoint=192.0.2.{}:{}\n",
            0x5e00_0000_u64 + i,
            (i >> 16) & 255,
            (i >> 8) & 255,
            i & 255,
            i % 250 + 1,
            20000 + i
        ));
    }
    body.push('\n');
    // The replies are large: read them by the tail only (read_replies rescans). The get
    // waits for the set's 3,000 key agreements in a debug build, minutes on a loaded host.
    let whole_reply = |s: &mut UnixStream| {
        let deadline = Instant::now() + Duration::from_secs(300);
        let mut buf = Vec::new();
        let mut chunk = vec![0u8; 1 << 16];
        while !(buf.ends_with(b"\n\n") && buf.len() > 1) {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "no complete reply in 300 s ({} bytes)",
                buf.len()
            );
            s.set_read_timeout(Some(left)).unwrap();
            match s.read(&mut chunk) {
                Ok(0) => panic!("reply cut short after {} bytes", buf.len()),
                // A signal to the test process, not the daemon's doing: read on.
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => panic!("reply not read after {} bytes: {e}", buf.len()),
                Ok(k) => buf.extend_from_slice(&chunk[..k]),
            }
        }
        String::from_utf8(buf).expect("UTF-8")
    };
    let peers_in = |reply: &str| {
        reply
            .lines()
            .filter(|l| l.starts_with("public_key="))
            .count()
    };
    let mut long = connect(&d);
    long.write_all(body.as_bytes()).unwrap();
    sleep(Duration::from_millis(20));
    let t = Instant::now();
    let mut other = connect(&d);
    other.write_all(b"get=1\n\n").unwrap();
    let reply = whole_reply(&mut other);
    let waited = t.elapsed();
    assert!(reply.ends_with("errno=0\n\n"), "get failed");
    let peers = peers_in(&reply);
    assert!(
        peers == n as usize || peers == 0,
        "a get saw {peers} of {n} peers"
    );
    assert_eq!(whole_reply(&mut long), "errno=0\n\n");
    other.write_all(b"get=1\n\n").unwrap();
    assert_eq!(peers_in(&whole_reply(&mut other)), n as usize);
    d.assert_running();
    let log = d.log_text();
    assert!(
        log.contains(&format!("UAPI set of {n} peer changes applied over")),
        "not sliced ({waited:?} for the get): {log}"
    );
}
