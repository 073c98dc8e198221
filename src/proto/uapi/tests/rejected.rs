//! Requests that are refused, and what the errors and debug output leave out.

use super::*;

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
