use super::*;
use crate::proto::peer::base64;

fn key(n: u8) -> String {
    base64(&[n; 32])
}

fn errors(cfg: &NetworkConfig) -> Vec<String> {
    cfg.errors.iter().map(|e| e.to_string()).collect()
}

#[test]
fn full_interface_and_peers() {
    let text = format!(
        concat!(
            "config interface 'lan'\n\toption proto 'static'\n\n",
            "config interface 'wg0'\n",
            "\toption proto 'solowg'\n",
            "\toption private_key '{k1}'\n",
            "\toption listen_port '51820'\n",
            "\tlist addresses '10.9.0.1/24'\n",
            "\tlist addresses 'fd00:9::1'\n",
            "\toption mtu '1420'\n",
            "\toption fwmark '0x51'\n",
            "\tlist ip6prefix 'fd00:10::/48'\n",
            "\toption nohostroute 'yes'\n",
            "\toption tunlink 'wan'\n\n",
            "config solowg_wg0\n",
            "\toption description 'laptop'\n",
            "\toption public_key '{k2}'\n",
            "\toption preshared_key '{k3}'\n",
            "\tlist allowed_ips '10.9.0.2/32'\n",
            "\tlist allowed_ips 'fd00:9::2'\n",
            "\toption route_allowed_ips 'on'\n",
            "\toption endpoint_host 'vpn.example.org'\n",
            "\toption endpoint_port '4500'\n",
            "\toption persistent_keepalive '25'\n\n",
            "config wireguard_wg0 'phone'\n",
            "\toption public_key '{k4}'\n",
            "\toption allowed_ips '10.9.0.3 10.9.0.4/32'\n",
            "\toption endpoint_host '[2001:db8::1]'\n",
            "\toption disabled 'enabled'\n",
            "config wireguard_wg1\n\toption public_key 'ignored: not ours'\n",
        ),
        k1 = key(1),
        k2 = key(2),
        k3 = key(3),
        k4 = key(4)
    );
    let cfg = parse_network(&text);
    assert!(cfg.errors.is_empty(), "{:?}", errors(&cfg));
    assert_eq!(cfg.interfaces.len(), 1);
    let i = cfg.interface("wg0").unwrap();
    assert!(matches!(&i.private_key, KeySpec::Key(k) if **k == [1; 32]));
    assert_eq!(i.listen_port, Some(51820));
    assert_eq!(
        i.addresses,
        [
            ("10.9.0.1".parse().unwrap(), 24),
            ("fd00:9::1".parse().unwrap(), 128)
        ]
    );
    assert_eq!(i.mtu, Some(1420));
    assert_eq!(i.fwmark, Some(0x51));
    assert_eq!(i.ip6prefix, [("fd00:10::".parse().unwrap(), 48)]);
    assert!(i.nohostroute);
    assert_eq!(i.tunlink.as_deref(), Some("wan"));
    assert_eq!(i.peers.len(), 2);
    let p = &i.peers[0];
    assert_eq!(p.section, "@solowg_wg0[0]");
    assert_eq!(p.public_key, [2; 32]);
    assert_eq!(p.preshared_key.as_deref(), Some(&[3; 32]));
    assert_eq!(p.allowed_ips.len(), 2);
    assert_eq!(p.allowed_ips[1], ("fd00:9::2".parse().unwrap(), 128));
    assert!(p.route_allowed_ips);
    assert_eq!(p.endpoint_host.as_deref(), Some("vpn.example.org"));
    assert_eq!(p.endpoint_port, 4500);
    assert_eq!(p.persistent_keepalive, 25);
    assert_eq!(p.description.as_deref(), Some("laptop"));
    assert!(!p.disabled);
    let q = &i.peers[1];
    assert_eq!(q.section, "phone");
    assert_eq!(
        q.allowed_ips,
        [
            ("10.9.0.3".parse().unwrap(), 32),
            ("10.9.0.4".parse().unwrap(), 32)
        ]
    );
    assert_eq!(q.endpoint_host.as_deref(), Some("2001:db8::1"));
    assert_eq!(q.endpoint_port, DEFAULT_ENDPOINT_PORT);
    assert!(q.disabled);
    assert!(q.preshared_key.is_none());
}

#[test]
fn defaults_and_generate() {
    for pk in [
        "",
        "\toption private_key 'generate'\n",
        "\toption private_key ''\n",
    ] {
        let cfg = parse_network(&format!(
            "config interface 'wg0'\n\toption proto 'solowg'\n{pk}"
        ));
        assert!(cfg.errors.is_empty());
        let i = &cfg.interfaces[0];
        assert!(matches!(i.private_key, KeySpec::Generate));
        assert_eq!(i.listen_port, None);
        assert!(i.addresses.is_empty() && i.peers.is_empty() && !i.nohostroute);
        assert_eq!((i.mtu, i.fwmark, i.tunlink.as_deref()), (None, None, None));
    }
}

#[test]
fn values() {
    assert_eq!(parse_fwmark("0x51"), Some(Some(0x51)));
    assert_eq!(parse_fwmark("0XfFfFfFfF"), Some(Some(u32::MAX)));
    assert_eq!(parse_fwmark("81"), Some(Some(81)));
    assert_eq!(parse_fwmark("0"), Some(None));
    assert_eq!(parse_fwmark("off"), Some(None));
    for bad in ["", "0x", "0x123456789", "-1", "4294967296", "0x1g", " 1"] {
        assert_eq!(parse_fwmark(bad), None, "{bad}");
    }
    for t in ["1", "yes", "on", "true", "enabled"] {
        assert_eq!(parse_bool(t), Some(true));
    }
    for f in ["0", "no", "off", "false", "disabled"] {
        assert_eq!(parse_bool(f), Some(false));
    }
    assert_eq!(parse_bool("2"), None);
    assert_eq!(parse_bool("Yes"), None);
    assert_eq!(
        endpoint_host("a.b-c_d.example.").as_deref(),
        Some("a.b-c_d.example.")
    );
    assert_eq!(endpoint_host("10.0.0.1").as_deref(), Some("10.0.0.1"));
    for bad in ["", "a..b", "a b", "[10.0.0.1]", "[::1", "host:51820", "x/y"] {
        assert_eq!(endpoint_host(bad), None, "{bad}");
    }
}

#[test]
fn bad_peer_is_skipped_and_named() {
    let text = format!(
        concat!(
            "config interface 'wg0'\n\toption proto 'solowg'\n",
            "config solowg_wg0\n\toption public_key '{k2}'\n",
            "config solowg_wg0\n\toption public_key 'nope'\n\toption description 'laptop'\n",
            "config solowg_wg0\n\toption public_key '{k3}'\n\tlist allowed_ips '10.0.0.0/33'\n",
            "config solowg_wg0\n\toption description 'no key'\n",
            "config wireguard_wg0 'dup'\n\toption public_key '{k2}'\n",
            "config solowg_wg0\n\toption public_key '{k4}'\n\toption endpoint_port '0'\n",
            "config solowg_wg0\n\toption public_key '{k4}'\n\toption persistent_keepalive '65536'\n",
            "config solowg_wg0\n\toption public_key '{k4}'\n\tlist description 'a'\n",
            "config solowg_wg0\n\toption public_key '{k4}'\n\toption route_allowed_ips 'maybe'\n",
            "config solowg_wg0\n\toption public_key '{k4}'\n\toption preshared_key 'secretvalue'\n",
            "config solowg_wg0\n\toption public_key '{k5}'\n",
        ),
        k2 = key(2),
        k3 = key(3),
        k4 = key(4),
        k5 = key(5),
    );
    let cfg = parse_network(&text);
    let peers: Vec<_> = cfg.interfaces[0]
        .peers
        .iter()
        .map(|p| p.section.as_str())
        .collect();
    assert_eq!(peers, ["@solowg_wg0[0]", "@solowg_wg0[9]"]);
    assert_eq!(
        errors(&cfg),
        [
            "network.@solowg_wg0[1] (peer 'laptop'): public_key: not a valid base64 key (44 characters ending in '=', as `wg genkey` prints)",
            "network.@solowg_wg0[2]: allowed_ips: '10.0.0.0/33' is not an IPv4 or IPv6 address with an optional /prefix length",
            "network.@solowg_wg0[3] (peer 'no key'): public_key: missing",
            "network.dup: public_key: the same key as network.@solowg_wg0[0]",
            "network.@solowg_wg0[4]: endpoint_port: '0' is not a number from 1 to 65535",
            "network.@solowg_wg0[5]: persistent_keepalive: '65536' is not a number from 0 to 65535",
            "network.@solowg_wg0[6]: description: is a list; expected a single option",
            "network.@solowg_wg0[7]: route_allowed_ips: 'maybe' is not a boolean (1/0, yes/no, on/off, true/false, enabled/disabled)",
            "network.@solowg_wg0[8]: preshared_key: not a valid base64 key (44 characters ending in '=', as `wg genkey` prints)",
        ]
    );
    assert!(cfg.errors.iter().all(|e| e.scope == ErrorScope::Peer));
    assert_eq!(cfg.errors[0].line, 5);
    assert_eq!(cfg.errors[0].interface.as_deref(), Some("wg0"));
    assert!(!errors(&cfg).iter().any(|e| e.contains("secretvalue")));
}

#[test]
fn bad_interface_option_drops_the_interface_only() {
    let cases = [
        ("option private_key 'x'", "private_key: not a valid base64 key (44 characters ending in '=', as `wg genkey` prints)"),
        ("option listen_port '65536'", "listen_port: '65536' is not a number from 0 to 65535"),
        ("list addresses '10.0.0.1/24 10.0.0'", "addresses: '10.0.0' is not an IPv4 or IPv6 address with an optional /prefix length"),
        ("option mtu 'big'", "mtu: 'big' is not a number from 68 to 65535"),
        ("option fwmark '0xZ'", "fwmark: '0xZ' is not a mark (0x and up to 8 hex digits, or decimal)"),
        ("option ip6prefix '10.0.0.0/8'", "ip6prefix: '10.0.0.0/8' is not an IPv6 prefix (address/length)"),
        ("option nohostroute '2'", "nohostroute: '2' is not a boolean (1/0, yes/no, on/off, true/false, enabled/disabled)"),
        ("option tunlink 'wan-x'", "tunlink: 'wan-x' is not an interface name (letters, digits, _)"),
        ("list private_key 'generate'", "private_key: is a list; expected a single option"),
    ];
    for (line, msg) in cases {
        let text = format!(
            "config interface 'wg0'\n\toption proto 'solowg'\n\t{line}\nconfig solowg_wg0\n\toption public_key '{}'\nconfig interface 'wg1'\n\toption proto 'solowg'\n",
            key(2)
        );
        let cfg = parse_network(&text);
        assert_eq!(errors(&cfg), [format!("network.wg0: {msg}")], "{line}");
        assert_eq!(cfg.errors[0].scope, ErrorScope::Interface);
        assert_eq!(cfg.failed_interfaces, ["wg0"]);
        assert_eq!(cfg.interfaces.len(), 1);
        assert_eq!(cfg.interfaces[0].name, "wg1");
    }
    let cfg = parse_network("config interface\n\toption proto solowg\nconfig interface 'abcdefghijklmnop'\n\toption proto solowg\n");
    assert_eq!(
        errors(&cfg),
        [
            "network.@interface[0]: an anonymous interface section cannot be a tunnel: give it a name (the device name)",
            "network.abcdefghijklmnop: interface name is longer than 15 characters (it is the device name)",
        ]
    );
}

#[test]
fn syntax_errors_are_reported_and_the_rest_loads() {
    let text = format!(
        "config interface 'wg0'\n\toption proto 'solowg'\n\toptions mtu 1\nconfig solowg_wg0\n\toption public_key '{}'\n",
        key(2)
    );
    let cfg = parse_network(&text);
    assert_eq!(
        errors(&cfg),
        ["network: Parse error (invalid command) at line 3, byte 1"]
    );
    assert_eq!(cfg.errors[0].scope, ErrorScope::Line);
    assert_eq!(cfg.interfaces[0].peers.len(), 1);
}

#[test]
fn debug_never_shows_secrets() {
    let text = format!(
        "config interface 'wg0'\n\toption proto 'solowg'\n\toption private_key '{}'\nconfig solowg_wg0\n\toption public_key '{}'\n\toption preshared_key '{}'\n",
        key(0x11),
        key(0x22),
        key(0x33)
    );
    let cfg = parse_network(&text);
    let dbg = format!("{cfg:?}");
    assert!(
        dbg.contains("Key(<redacted>)") && dbg.contains("<redacted>"),
        "{dbg}"
    );
    assert!(!dbg.contains(&key(0x11)) && !dbg.contains(&key(0x33)));
    assert!(!dbg.contains("17, 17") && !dbg.contains("51, 51"));
    assert!(dbg.contains(&key(0x22)), "public keys are shown");
}

#[test]
fn wipe_secrets_clears_key_options() {
    let (mut pkg, _) = uci::parse("config solowg_wg0\n\toption private_key 'k'\n\tlist preshared_key 'p'\n\toption public_key 'x'\n");
    wipe_secrets(&mut pkg);
    let s = &pkg.sections[0];
    assert_eq!(s.get("private_key"), Some(&Value::Single(String::new())));
    assert_eq!(
        s.get("preshared_key"),
        Some(&Value::List(vec![String::new()]))
    );
    assert_eq!(s.get("public_key"), Some(&Value::Single("x".into())));
}
