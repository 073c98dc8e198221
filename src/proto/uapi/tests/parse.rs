//! Requests that parse: keys, `set=1` lines and their values, resumed parsing.

use super::*;

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
