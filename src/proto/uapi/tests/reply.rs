//! The `get=1` reply's text and the errno line.

use super::*;

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
