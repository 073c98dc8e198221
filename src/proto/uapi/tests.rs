//! Unit tests of `uapi`.

use super::*;

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

#[test]
fn resumed_parse_matches_full_rescan() {
    let reqs: [&[u8]; 4] = [
        b"get=1\n\n",
        b"set=1\nlisten_port=5\n\nget=1\n\n",
        b"set=1\nfwmark=x\n\n",
        b"GET / HTTP/1.1\r\n\r\n",
    ];
    for req in reqs {
        for step in 1..=req.len() {
            let mut hint = 0;
            let mut fed = 0;
            while fed < req.len() {
                fed = (fed + step).min(req.len());
                let full = parse_request(&req[..fed]);
                let resumed = parse_request_resume(&req[..fed], &mut hint);
                assert_eq!(
                    format!("{full:?}"),
                    format!("{resumed:?}"),
                    "{req:?} step {step}"
                );
                if !matches!(resumed, Ok(None)) {
                    break;
                }
            }
        }
    }
}

#[test]
fn key_hex_round_trip() {
    let mut k = [0u8; 32];
    for (i, b) in k.iter_mut().enumerate() {
        *b = i as u8 * 8 + 7;
    }
    let h = key_to_hex(&k);
    assert_eq!(
        h,
        "070f171f272f373f474f575f676f777f878f979fa7afb7bfc7cfd7dfe7eff7ff"
    );
    assert_eq!(key_from_hex(&h), Some(k));
    assert_eq!(key_from_hex(&h.to_uppercase()), Some(k));
    assert_eq!(key_to_hex(&[0xab; 32]), "ab".repeat(32));
}

#[test]
fn key_from_hex_rejects() {
    let good = "0a".repeat(32);
    for bad in [
        String::new(),
        good[..63].to_string(),
        format!("{good}0"),
        good[..62].to_string(),
        format!("{}g", &good[..63]),
        format!(" {}", &good[..63]),
        format!("{}\n", &good[..63]),
        format!("+{}", &good[..63]),
        // 64 bytes but a multi-byte character in it.
        format!("{}é", &good[..62]),
    ] {
        assert_eq!(key_from_hex(&bad), None, "{bad:?}");
    }
}

#[test]
fn get_request() {
    assert!(matches!(parse_all(b"get=1\n\n"), Ok(Request::Get)));
}

#[test]
fn empty_set_request() {
    let r = set_ok("set=1\n\n");
    assert!(r.private_key.is_none() && r.listen_port.is_none() && r.fwmark.is_none());
    assert!(!r.replace_peers && r.peers.is_empty());
}

#[test]
fn full_setconf_message() {
    let msg = format!(
        "set=1\n\
         replace_peers=true\n\
         private_key={}\n\
         listen_port=51820\n\
         fwmark=4294967295\n\
         public_key={}\n\
         preshared_key={}\n\
         protocol_version=1\n\
         endpoint=192.0.2.1:51820\n\
         persistent_keepalive_interval=25\n\
         replace_allowed_ips=true\n\
         allowed_ip=10.0.0.2/32\n\
         allowed_ip=fd00::2/128\n\
         public_key={}\n\
         protocol_version=1\n\
         endpoint=[2001:db8::1]:443\n\
         persistent_keepalive_interval=0\n\
         replace_allowed_ips=true\n\
         allowed_ip=10.1.0.0/16\n\
         allowed_ip=0.0.0.0/0\n\
         allowed_ip=::/0\n\
         \n",
        hex(0x11),
        hex(0x22).to_uppercase(),
        hex(0x33),
        hex(0x44),
    );
    let r = set_ok(&msg);
    assert!(r.replace_peers);
    assert_eq!(
        r.private_key.as_ref().and_then(|k| k.as_deref()),
        Some(&[0x11; 32])
    );
    assert_eq!(r.listen_port, Some(51820));
    assert_eq!(r.fwmark, Some(u32::MAX));
    assert_eq!(r.peers.len(), 2);

    let p = &r.peers[0];
    assert_eq!(p.public_key, [0x22; 32]);
    assert!(!p.remove && !p.update_only && p.replace_allowed_ips);
    assert_eq!(
        p.preshared_key.as_ref().and_then(|k| k.as_deref()),
        Some(&[0x33; 32])
    );
    assert_eq!(p.endpoint, Some("192.0.2.1:51820".parse().unwrap()));
    assert_eq!(p.persistent_keepalive, Some(25));
    let ips = |v: &[(&str, u8)]| -> Vec<AllowedIpChange> {
        v.iter()
            .map(|&(a, cidr)| AllowedIpChange {
                addr: a.parse().unwrap(),
                cidr,
                remove: false,
            })
            .collect()
    };
    assert_eq!(p.allowed_ips, ips(&[("10.0.0.2", 32), ("fd00::2", 128)]));

    let p = &r.peers[1];
    assert_eq!(p.public_key, [0x44; 32]);
    assert!(p.preshared_key.is_none());
    assert_eq!(p.endpoint, Some("[2001:db8::1]:443".parse().unwrap()));
    assert_eq!(p.persistent_keepalive, Some(0));
    assert!(p.replace_allowed_ips);
    assert_eq!(
        p.allowed_ips,
        ips(&[("10.1.0.0", 16), ("0.0.0.0", 0), ("::", 0)])
    );
}

#[test]
fn zero_keys_mean_remove() {
    let z = hex(0);
    let r = set_ok(&format!(
        "set=1\nprivate_key={z}\npublic_key={}\npreshared_key={z}\n\n",
        hex(1)
    ));
    assert!(matches!(r.private_key, Some(None)));
    assert!(matches!(r.peers[0].preshared_key, Some(None)));
}

#[test]
fn last_value_wins_for_scalars() {
    let r = set_ok(&format!(
        "set=1\nlisten_port=1\nlisten_port=2\nprivate_key={}\nprivate_key={}\n\n",
        hex(5),
        hex(0)
    ));
    assert_eq!(r.listen_port, Some(2));
    assert!(matches!(r.private_key, Some(None)));
}

#[test]
fn allowed_ip_removal_form() {
    let r = set_ok(&format!(
        "set=1\npublic_key={}\nallowed_ip=-10.0.0.0/24\nallowed_ip=10.9.0.1/32\nallowed_ip=-fd00::/8\n\n",
        hex(1)
    ));
    let got: Vec<_> = r.peers[0]
        .allowed_ips
        .iter()
        .map(|a| (a.addr.to_string(), a.cidr, a.remove))
        .collect();
    assert_eq!(
        got,
        [
            ("10.0.0.0".to_string(), 24, true),
            ("10.9.0.1".to_string(), 32, false),
            ("fd00::".to_string(), 8, true),
        ]
    );
    assert!(!r.peers[0].replace_allowed_ips);
}

#[test]
fn replace_allowed_ips_drops_earlier_entries() {
    let r = set_ok(&format!(
        "set=1\npublic_key={}\nallowed_ip=10.0.0.1/32\nreplace_allowed_ips=true\nallowed_ip=10.0.0.2/32\n\n",
        hex(1)
    ));
    let p = &r.peers[0];
    assert!(p.replace_allowed_ips);
    assert_eq!(p.allowed_ips.len(), 1);
    assert_eq!(p.allowed_ips[0].addr, IpAddr::from([10, 0, 0, 2]));
}

#[test]
fn update_only_and_remove() {
    let r = set_ok(&format!(
        "set=1\npublic_key={}\nupdate_only=true\npublic_key={}\nremove=true\n\n",
        hex(1),
        hex(2)
    ));
    assert!(r.peers[0].update_only && !r.peers[0].remove);
    assert!(r.peers[1].remove && !r.peers[1].update_only);
}

#[test]
fn accepted_value_edge_cases() {
    let pk = hex(9);
    type Check<'a> = &'a dyn Fn(&PeerChange) -> bool;
    let cases: &[(&str, Check)] = &[
        ("endpoint=0.0.0.0:0", &|p| {
            p.endpoint == Some("0.0.0.0:0".parse().unwrap())
        }),
        ("endpoint=255.255.255.255:65535", &|p| {
            p.endpoint == Some("255.255.255.255:65535".parse().unwrap())
        }),
        ("endpoint=[::ffff:1.2.3.4]:7", &|p| {
            p.endpoint == Some("[::ffff:1.2.3.4]:7".parse().unwrap())
        }),
        ("endpoint=[fe80::1%3]:51820", &|p| match p.endpoint {
            Some(SocketAddr::V6(a)) => a.scope_id() == 3 && a.port() == 51820,
            _ => false,
        }),
        ("endpoint=[::1]:0051820", &|p| {
            p.endpoint.map(|e| e.port()) == Some(51820)
        }),
        ("persistent_keepalive_interval=65535", &|p| {
            p.persistent_keepalive == Some(65535)
        }),
        ("allowed_ip=10.0.0.0/0", &|p| p.allowed_ips[0].cidr == 0),
        ("allowed_ip=1.2.3.4/32", &|p| p.allowed_ips[0].cidr == 32),
        ("allowed_ip=::1/128", &|p| p.allowed_ips[0].cidr == 128),
        ("allowed_ip=::ffff:10.0.0.1/128", &|p| {
            p.allowed_ips[0].addr.is_ipv6()
        }),
        ("allowed_ip=10.0.0.5/24", &|p| {
            // Kept as given; masking belongs to the table.
            p.allowed_ips[0].addr == IpAddr::from([10, 0, 0, 5])
        }),
        ("protocol_version=1", &|_| true),
    ];
    for (line, check) in cases {
        let r = set_ok(&format!("set=1\npublic_key={pk}\n{line}\n\n"));
        assert!(check(&r.peers[0]), "{line}");
    }
    assert_eq!(set_ok("set=1\nlisten_port=0\n\n").listen_port, Some(0));
    assert_eq!(
        set_ok("set=1\nlisten_port=65535\n\n").listen_port,
        Some(65535)
    );
    assert_eq!(set_ok("set=1\nfwmark=0\n\n").fwmark, Some(0));
}

#[test]
fn invalid_requests() {
    let pk = hex(0x5a);
    let pk2 = hex(0x6b);
    let secret = "c3".repeat(32);
    let s = &secret;
    // (request, line the error must name)
    let cases: Vec<(String, usize)> = vec![
        ("set=1\nfoo=bar\n\n".into(), 2),
        ("set=1\n=\n\n".into(), 2),
        ("set=1\n=1\n\n".into(), 2),
        (format!("set=1\nprivate_key={}\n\n", "g".repeat(64)), 2),
        (format!("set=1\nprivate_key={}\n\n", &s[..63]), 2),
        (format!("set=1\nprivate_key={s}0\n\n"), 2),
        (format!("set=1\nprivate_key= {}\n\n", &s[..63]), 2),
        (format!("set=1\nprivate_key={s} \n\n"), 2),
        (format!("set=1\nprivate_key={s}\tx\n\n"), 2),
        (format!("set=1\npublic_key={}\n\n", &pk[..63]), 2),
        (format!("set=1\npublic_key={pk}f\n\n"), 2),
        (
            format!("set=1\npublic_key={pk}\npreshared_key={}\n\n", &s[..62]),
            3,
        ),
        (format!("set=1\npublic_key={pk}\npreshared_key={s}x\n\n"), 3),
        ("set=1\nlisten_port=65536\n\n".into(), 2),
        ("set=1\nlisten_port=-1\n\n".into(), 2),
        ("set=1\nlisten_port=+1\n\n".into(), 2),
        ("set=1\nlisten_port=\n\n".into(), 2),
        ("set=1\nlisten_port= 1\n\n".into(), 2),
        ("set=1\nlisten_port=0x10\n\n".into(), 2),
        ("set=1\nlisten_port=99999999999999999999999\n\n".into(), 2),
        ("set=1\nfwmark=4294967296\n\n".into(), 2),
        ("set=1\nreplace_peers=false\n\n".into(), 2),
        ("set=1\nreplace_peers=true \n\n".into(), 2),
        ("set=1\nreplace_peers=TRUE\n\n".into(), 2),
        ("set=1\nreplace_peers=1\n\n".into(), 2),
        ("set=1\nreplace_peers\n\n".into(), 2),
        ("set=1\nlisten_port 51820\n\n".into(), 2),
        (format!("set=1\n{s}\n\n"), 2),
        ("set=1\nfwmark=\u{ff}\n\n".into(), 2),
        (
            b"set=1\nfwmark=\xff\n\n"
                .iter()
                .map(|&b| b as char)
                .collect(),
            2,
        ),
        ("set=1\r\n\n".into(), 1),
        ("set=1\nlisten_port=1\r\n\n".into(), 2),
        ("get=1\r\n\n".into(), 1),
        ("get=1 \n\n".into(), 1),
        ("get=1\nlisten_port=1\n\n".into(), 2),
        ("get=1\nget=1\n\n".into(), 2),
        ("put=1\n\n".into(), 1),
        ("Set=1\n\n".into(), 1),
        ("set=2\n\n".into(), 1),
        ("\n".into(), 1),
        (
            format!("set=1\npublic_key={pk}\nallowed_ip=10.0.0.0/33\n\n"),
            3,
        ),
        (format!("set=1\npublic_key={pk}\nallowed_ip=::/129\n\n"), 3),
        (
            format!("set=1\npublic_key={pk}\nallowed_ip=10.0.0.0\n\n"),
            3,
        ),
        (
            format!("set=1\npublic_key={pk}\nallowed_ip=10.0.0.0/\n\n"),
            3,
        ),
        (
            format!("set=1\npublic_key={pk}\nallowed_ip=10.0.0.0/024\n\n"),
            3,
        ),
        (
            format!("set=1\npublic_key={pk}\nallowed_ip=10.0.0.0/-1\n\n"),
            3,
        ),
        (
            format!("set=1\npublic_key={pk}\nallowed_ip=--10.0.0.0/8\n\n"),
            3,
        ),
        (format!("set=1\npublic_key={pk}\nallowed_ip=[::]/0\n\n"), 3),
        (
            format!("set=1\npublic_key={pk}\nallowed_ip=fe80::1%1/64\n\n"),
            3,
        ),
        (
            format!("set=1\npublic_key={pk}\nallowed_ip=10.0.0/8\n\n"),
            3,
        ),
        (
            format!("set=1\npublic_key={pk}\nallowed_ip=010.0.0.0/8\n\n"),
            3,
        ),
        (
            format!("set=1\npublic_key={pk}\nallowed_ip=10.0.0.0/8 \n\n"),
            3,
        ),
        (
            format!("set=1\npublic_key={pk}\nendpoint=example.com:51820\n\n"),
            3,
        ),
        (
            format!("set=1\npublic_key={pk}\nendpoint=localhost:1\n\n"),
            3,
        ),
        (
            format!("set=1\npublic_key={pk}\nendpoint=1.2.3.4:65536\n\n"),
            3,
        ),
        (
            format!("set=1\npublic_key={pk}\nendpoint=[::1]:65536\n\n"),
            3,
        ),
        (format!("set=1\npublic_key={pk}\nendpoint=::1:51820\n\n"), 3),
        (format!("set=1\npublic_key={pk}\nendpoint=1.2.3.4\n\n"), 3),
        (format!("set=1\npublic_key={pk}\nendpoint=1.2.3.4:\n\n"), 3),
        (format!("set=1\npublic_key={pk}\nendpoint=[::1]\n\n"), 3),
        (
            format!("set=1\npublic_key={pk}\nendpoint=[1.2.3.4]:5\n\n"),
            3,
        ),
        (
            format!("set=1\npublic_key={pk}\nendpoint=[fe80::1%eth0]:5\n\n"),
            3,
        ),
        (
            format!("set=1\npublic_key={pk}\nendpoint=1.2.3.4:5:6\n\n"),
            3,
        ),
        (
            format!("set=1\npublic_key={pk}\nendpoint= 1.2.3.4:5\n\n"),
            3,
        ),
        (
            format!("set=1\npublic_key={pk}\npersistent_keepalive_interval=65536\n\n"),
            3,
        ),
        (
            format!("set=1\npublic_key={pk}\nreplace_allowed_ips=true \n\n"),
            3,
        ),
        (
            format!("set=1\npublic_key={pk}\nreplace_allowed_ips=false\n\n"),
            3,
        ),
        (format!("set=1\npublic_key={pk}\nupdate_only=1\n\n"), 3),
        (format!("set=1\npublic_key={pk}\nremove=yes\n\n"), 3),
        (format!("set=1\npublic_key={pk}\nremove=\n\n"), 3),
        (format!("set=1\npublic_key={pk}\nprotocol_version=2\n\n"), 3),
        (
            format!("set=1\npublic_key={pk}\nprotocol_version=01\n\n"),
            3,
        ),
        (format!("set=1\npublic_key={pk}\nprotocol_version=0\n\n"), 3),
        (format!("set=1\npublic_key={pk}\nlisten_port=1\n\n"), 3),
        (format!("set=1\npublic_key={pk}\nprivate_key={s}\n\n"), 3),
        (format!("set=1\npublic_key={pk}\nfwmark=1\n\n"), 3),
        (format!("set=1\npublic_key={pk}\nreplace_peers=true\n\n"), 3),
        ("set=1\nendpoint=1.2.3.4:5\n\n".into(), 2),
        (format!("set=1\npreshared_key={s}\n\n"), 2),
        ("set=1\nallowed_ip=10.0.0.0/8\n\n".into(), 2),
        ("set=1\npersistent_keepalive_interval=1\n\n".into(), 2),
        ("set=1\nreplace_allowed_ips=true\n\n".into(), 2),
        ("set=1\nupdate_only=true\n\n".into(), 2),
        ("set=1\nremove=true\n\n".into(), 2),
        ("set=1\nprotocol_version=1\n\n".into(), 2),
        (
            format!("set=1\npublic_key={pk}\npublic_key={pk2}\npublic_key={pk}\n\n"),
            4,
        ),
        (
            format!(
                "set=1\npublic_key={pk}\npublic_key={}\n\n",
                pk.to_uppercase()
            ),
            3,
        ),
        (format!("set=1\npublic_key={pk}\nbogus_key=1\n\n"), 3),
    ];
    for (req, line) in &cases {
        assert_invalid(req.as_bytes(), *line);
    }
    // Raw non-UTF-8 and NUL bytes, not expressible as &str above.
    assert_invalid(b"set=1\nfwmark=\xff\n\n", 2);
    assert_invalid(b"set=1\nlisten_port=1\x00\n\n", 2);
    assert_invalid(b"\xc3\xa9t=1\n\n", 1);
    let mut raw = format!("set=1\npublic_key={pk}\nendpoint=1.2.3.4:1").into_bytes();
    raw.extend_from_slice(b"\x80\n\n");
    assert_invalid(&raw, 3);
}

#[test]
fn errors_never_echo_secrets() {
    // A secret in a bad position or with a typo must not appear at all.
    let secret = "deadbeef".repeat(8);
    for req in [
        format!("set=1\nprivate_key={secret}x\n\n"),
        format!("set=1\nprivate_ky={secret}\n\n"),
        format!("set=1\n{secret}\n\n"),
        format!("set=1\npreshared_key={secret}\n\n"),
        format!("{secret}\n\n"),
        format!("{secret}\n"),
    ] {
        let Err((e, _)) = parse_request(req.as_bytes()) else {
            panic!("accepted {req:?}");
        };
        assert!(!e.message.contains("deadbeef"), "{:?}", e.message);
        assert!(!e.to_string().contains("deadbeef"));
    }
}

#[test]
fn debug_output_redacts_secrets() {
    let r = set_ok(&format!(
        "set=1\nprivate_key={}\npublic_key={}\npreshared_key={}\n\n",
        hex(0x11),
        hex(0x22),
        hex(0x33)
    ));
    let d = format!("{:?}", Request::Set(r));
    assert!(d.contains("<redacted>"), "{d}");
    assert!(!d.contains("17, 17") && !d.contains("51, 51"), "{d}");
    assert!(!d.contains(&hex(0x11)) && !d.contains(&hex(0x33)), "{d}");
    // Public keys stay visible for debugging.
    assert!(d.contains(&hex(0x22)), "{d}");

    let info = DeviceInfo {
        private_key: Some(Zeroizing::new([0x11; 32])),
        ..Default::default()
    };
    let d = format!("{info:?}");
    assert!(d.contains("<redacted>") && !d.contains("17, 17"), "{d}");
}

#[test]
fn incomplete_input_waits() {
    let pk = hex(3);
    for s in [
        String::new(),
        "g".into(),
        "get=1".into(),
        "get=1\n".into(),
        "set=1\n".into(),
        "set=1\nlisten_port=1".into(),
        "set=1\nlisten_port=1\n".into(),
        format!("set=1\npublic_key={pk}\nallowed_ip=10.0.0.0/8\n"),
        // Bad content is only judged once the request is complete.
        "set=1\nfoo=bar\n".into(),
        "set=1\r".into(),
    ] {
        assert!(matches!(parse_request(s.as_bytes()), Ok(None)), "{s:?}");
    }
}

#[test]
fn bad_first_line_rejected_before_terminator() {
    for s in [
        "GET / HTTP/1.1\r\nHost: x\r\n",
        "hello\n",
        "get=1\r\n",
        "\r\n",
    ] {
        match parse_request(s.as_bytes()) {
            Err((e, n)) => {
                assert_eq!(e.errno, EINVAL);
                assert_eq!(n, s.len());
                assert!(e.message.starts_with("line 1: "), "{:?}", e.message);
            }
            other => panic!("{s:?}: {other:?}"),
        }
    }
    // With the terminator present, only that request is dropped.
    let s = b"nope=1\nx=y\n\nget=1\n\n";
    assert!(matches!(parse_request(s), Err((_, 12))));
    assert!(matches!(
        parse_request(&s[12..]),
        Ok(Some((Request::Get, 7)))
    ));
}

#[test]
fn pipelined_requests() {
    let mut buf = format!(
        "get=1\n\nset=1\nlisten_port=7\n\nset=1\nbogus=1\n\nset=1\npublic_key={}\nremove=true\n\nget=1\n",
        hex(4)
    )
    .into_bytes();
    let mut seen = Vec::new();
    loop {
        match parse_request(&buf) {
            Ok(None) => break,
            Ok(Some((r, n))) => {
                seen.push(match r {
                    Request::Get => "get".to_string(),
                    Request::Set(s) => format!("set {:?} {}", s.listen_port, s.peers.len()),
                });
                buf.drain(..n);
            }
            Err((e, n)) => {
                seen.push(format!("err {} {}", e.errno, e.message));
                buf.drain(..n);
            }
        }
    }
    assert_eq!(
        seen,
        [
            "get",
            "set Some(7) 0",
            "err 22 line 2: unknown key",
            "set None 1",
        ]
    );
    assert_eq!(buf, b"get=1\n");
    buf.push(b'\n');
    assert!(matches!(parse_request(&buf), Ok(Some((Request::Get, 7)))));
}

#[test]
fn oversized_input() {
    // Longest legal request: padding via leading zeros in a number.
    let head = "set=1\nlisten_port=";
    let tail = "1\n\n";
    let zeros = MAX_REQUEST_BYTES - head.len() - tail.len();
    let exact = format!("{head}{}{tail}", "0".repeat(zeros));
    assert_eq!(exact.len(), MAX_REQUEST_BYTES);
    match parse_request(exact.as_bytes()) {
        Ok(Some((Request::Set(r), n))) => {
            assert_eq!(n, MAX_REQUEST_BYTES);
            assert_eq!(r.listen_port, Some(1));
        }
        other => panic!("{other:?}"),
    }

    // One byte more is refused even though its terminator is buffered.
    let over = format!("{head}{}{tail}", "0".repeat(zeros + 1));
    match parse_request(over.as_bytes()) {
        Err((e, n)) => {
            assert_eq!(e.errno, EINVAL);
            assert_eq!(n, over.len());
        }
        other => panic!("{other:?}"),
    }

    // Unterminated: wait up to the limit, refuse beyond it.
    let mut buf = b"set=1\n".to_vec();
    buf.resize(MAX_REQUEST_BYTES, b'x');
    assert!(matches!(parse_request(&buf), Ok(None)));
    buf.push(b'x');
    match parse_request(&buf) {
        Err((e, n)) => {
            assert_eq!(e.errno, EINVAL);
            assert_eq!(n, buf.len());
            assert!(e.message.contains("exceeds"));
        }
        other => panic!("{other:?}"),
    }

    // A small request followed by a flood is still served first.
    let mut buf = b"get=1\n\n".to_vec();
    buf.resize(MAX_REQUEST_BYTES + 100, b'y');
    assert!(matches!(parse_request(&buf), Ok(Some((Request::Get, 7)))));
}

fn sample_device() -> DeviceInfo {
    DeviceInfo {
        private_key: Some(Zeroizing::new([0x01; 32])),
        listen_port: 51820,
        fwmark: 0,
        peers: vec![
            PeerInfo {
                public_key: [0xaa; 32],
                preshared_key: Some(Zeroizing::new([0x0f; 32])),
                endpoint: Some("[2001:db8::1]:51820".parse().unwrap()),
                last_handshake: Some((1_700_000_000, 123_456_789)),
                tx_bytes: 1024,
                rx_bytes: 2048,
                persistent_keepalive: 25,
                allowed_ips: vec![
                    ("10.0.0.2".parse().unwrap(), 32),
                    ("fd00::".parse().unwrap(), 64),
                ],
            },
            PeerInfo {
                public_key: [0xbb; 32],
                preshared_key: None,
                endpoint: None,
                last_handshake: None,
                tx_bytes: 0,
                rx_bytes: 0,
                persistent_keepalive: 0,
                allowed_ips: vec![("10.0.0.3".parse().unwrap(), 32)],
            },
        ],
    }
}

#[test]
fn get_reply_exact_text() {
    let mut out = b"prefix|".to_vec();
    write_get_reply(&mut out, &sample_device());
    let expected = concat!(
        "prefix|",
        "private_key=0101010101010101010101010101010101010101010101010101010101010101\n",
        "listen_port=51820\n",
        "public_key=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
        "preshared_key=0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f\n",
        "protocol_version=1\n",
        "endpoint=[2001:db8::1]:51820\n",
        "last_handshake_time_sec=1700000000\n",
        "last_handshake_time_nsec=123456789\n",
        "tx_bytes=1024\n",
        "rx_bytes=2048\n",
        "persistent_keepalive_interval=25\n",
        "allowed_ip=10.0.0.2/32\n",
        "allowed_ip=fd00::/64\n",
        "public_key=bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\n",
        "preshared_key=0000000000000000000000000000000000000000000000000000000000000000\n",
        "protocol_version=1\n",
        "last_handshake_time_sec=0\n",
        "last_handshake_time_nsec=0\n",
        "tx_bytes=0\n",
        "rx_bytes=0\n",
        "persistent_keepalive_interval=0\n",
        "allowed_ip=10.0.0.3/32\n",
        "errno=0\n",
        "\n",
    );
    assert_eq!(String::from_utf8(out).unwrap(), expected);
}

#[test]
fn get_reply_device_fields() {
    let mut out = Vec::new();
    write_get_reply(&mut out, &DeviceInfo::default());
    assert_eq!(out, b"errno=0\n\n");

    let info = DeviceInfo {
        fwmark: 51820,
        peers: vec![PeerInfo {
            public_key: [0; 32],
            preshared_key: None,
            endpoint: Some("192.0.2.7:9".parse().unwrap()),
            last_handshake: Some((u64::MAX, 999_999_999)),
            tx_bytes: u64::MAX,
            rx_bytes: 1,
            persistent_keepalive: 65535,
            allowed_ips: vec![],
        }],
        ..Default::default()
    };
    let mut out = Vec::new();
    write_get_reply(&mut out, &info);
    let text = String::from_utf8(out).unwrap();
    assert!(text.starts_with("fwmark=51820\npublic_key="), "{text}");
    assert!(!text.contains("private_key") && !text.contains("listen_port"));
    assert!(text.contains("\nendpoint=192.0.2.7:9\n"));
    assert!(text.contains("\nlast_handshake_time_sec=18446744073709551615\n"));
    assert!(text.contains("\ntx_bytes=18446744073709551615\n"));
    assert!(text.ends_with("persistent_keepalive_interval=65535\nerrno=0\n\n"));
}

#[test]
fn get_reply_settable_lines_parse_back() {
    // Lines of our own reply that are also settable keys must be
    // accepted by our parser (ignoring read-only statistics).
    let mut out = Vec::new();
    write_get_reply(&mut out, &sample_device());
    let text = String::from_utf8(out).unwrap();
    let mut req = String::from("set=1\n");
    for l in text.lines() {
        let key = l.split_once('=').map_or("", |(k, _)| k);
        if !key.starts_with("last_handshake")
            && !matches!(key, "tx_bytes" | "rx_bytes" | "errno" | "")
        {
            req.push_str(l);
            req.push('\n');
        }
    }
    req.push('\n');
    let r = set_ok(&req);
    assert_eq!(r.listen_port, Some(51820));
    assert_eq!(r.peers.len(), 2);
    assert!(matches!(r.peers[1].preshared_key, Some(None)));
    assert_eq!(r.peers[0].endpoint, sample_device().peers[0].endpoint);
    assert_eq!(r.peers[0].allowed_ips.len(), 2);
}

#[test]
fn write_errno_format() {
    let mut out = Vec::new();
    write_errno(&mut out, 0);
    write_errno(&mut out, EINVAL);
    write_errno(&mut out, 98);
    // wireguard-go's sign: `wg` negates the value before strerror.
    assert_eq!(out, b"errno=0\n\nerrno=-22\n\nerrno=-98\n\n");
}

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Drives the parser like a connection loop would; checks progress.
fn drain_all(mut buf: &[u8]) {
    loop {
        let n = match parse_request(buf) {
            Ok(None) => return,
            Ok(Some((_, n))) => n,
            Err((e, n)) => {
                assert_eq!(e.errno, EINVAL);
                assert!(e.message.starts_with("line ") || e.message.contains("exceeds"));
                n
            }
        };
        assert!(n >= 1 && n <= buf.len(), "consumed {n} of {}", buf.len());
        buf = &buf[n..];
    }
}

#[test]
fn random_input_never_panics() {
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    const TOKENS: &[&[u8]] = &[
        b"set=1\n",
        b"get=1\n",
        b"\n",
        b"\n\n",
        b"=",
        b"true",
        b"-",
        b"/",
        b":",
        b"[",
        b"]",
        b"%",
        b"public_key=",
        b"private_key=",
        b"preshared_key=",
        b"allowed_ip=",
        b"endpoint=",
        b"listen_port=",
        b"remove=",
        b"protocol_version=",
        b"0",
        b"1",
        b"65535",
        b"32",
        b"128",
        b"::",
        b"10.0.0.1",
        b"ff",
        b"\r",
        b"\xff",
        b" ",
    ];
    for i in 0..40_000 {
        let len = rng.below(300);
        let mut buf = Vec::with_capacity(len + 64);
        while buf.len() < len {
            if i % 2 == 0 {
                buf.push(rng.next() as u8);
            } else if rng.below(4) == 0 {
                buf.extend_from_slice(&hex(rng.next() as u8).as_bytes()[..rng.below(65)]);
            } else {
                buf.extend_from_slice(TOKENS[rng.below(TOKENS.len())]);
            }
        }
        drain_all(&buf);
    }
}

#[test]
fn mutated_valid_request_never_panics() {
    let valid = format!(
        "set=1\nreplace_peers=true\nprivate_key={}\nlisten_port=51820\nfwmark=3\n\
         public_key={}\npreshared_key={}\nendpoint=[2001:db8::1]:51820\n\
         persistent_keepalive_interval=25\nreplace_allowed_ips=true\n\
         allowed_ip=10.0.0.0/24\nallowed_ip=-fd00::/8\nprotocol_version=1\n\
         public_key={}\nendpoint=192.0.2.1:1\nupdate_only=true\nremove=true\n\n",
        hex(1),
        hex(2),
        hex(3),
        hex(4)
    )
    .into_bytes();
    assert!(matches!(
        parse_request(&valid),
        Ok(Some((Request::Set(_), _)))
    ));
    let mut rng = XorShift(42);
    let mut accepted = 0;
    for _ in 0..40_000 {
        let mut buf = valid.clone();
        for _ in 0..1 + rng.below(4) {
            let pos = rng.below(buf.len() + 1);
            match rng.below(5) {
                0 if pos < buf.len() => buf[pos] = rng.next() as u8,
                1 if pos < buf.len() => buf[pos] ^= 1 << rng.below(8),
                2 => buf.insert(pos, b"\n=-:/[]0\r"[rng.below(9)]),
                3 if pos < buf.len() => {
                    buf.remove(pos);
                }
                _ => buf.truncate(pos),
            }
        }
        if matches!(parse_request(&buf), Ok(Some(_))) {
            accepted += 1;
        }
        drain_all(&buf);
        // Doubling exercises pipelining of whatever the mutation made.
        let twice = [buf.as_slice(), buf.as_slice()].concat();
        drain_all(&twice);
    }
    // Sanity: the mutator does not destroy everything.
    assert!(accepted > 0);
}

#[test]
fn reserve_wiping_within_stops_doubling_at_the_limit() {
    let limit = MAX_REQUEST_BYTES + 1;
    let mut v = Vec::new();
    let chunk = vec![b'a'; 65536];
    while v.len() < limit {
        let n = (limit - v.len()).min(chunk.len());
        reserve_wiping_within(&mut v, n, limit);
        v.extend_from_slice(&chunk[..n]);
        assert!(
            v.capacity() <= limit,
            "capacity {} at {}",
            v.capacity(),
            v.len()
        );
    }
    assert_eq!(v.len(), limit);
    // What is needed is always given, past the limit too.
    reserve_wiping_within(&mut v, 10, limit);
    assert!(v.capacity() >= limit + 10);
}
