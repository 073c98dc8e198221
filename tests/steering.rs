//! The kernel steering of `udp::bind` on real sockets (loopback): data messages for our
//! sessions reach the data socket, everything else the handshake socket, on both families;
//! the port cannot be shared with another binder.

use solowg::proto::wire::INDEX_TAG_MASK;
use solowg::sys::batch::{self, SmallBatch};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

const TAG: u16 = 0x5a3;

fn data_msg(index: u32, len: usize) -> Vec<u8> {
    let mut m = vec![0u8; len];
    m[0] = 4;
    m[4..8].copy_from_slice(&index.to_le_bytes());
    m
}

/// Waits (bounded) for one datagram on `sock`; its bytes, or None after 2 s.
fn recv_on(sock: &UdpSocket) -> Option<Vec<u8>> {
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut buf = vec![0u8; batch::RECV_REGION];
    let mut rm = batch::RecvMany::default();
    while Instant::now() < deadline {
        match batch::recv_many(sock, &mut rm, &mut buf, 1) {
            Ok(_) => {
                let r = rm.get(0).expect("an IP source");
                return Some(buf[r.at..r.at + r.len].to_vec());
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(5))
            }
            Err(e) => panic!("receive failed: {e}"),
        }
    }
    None
}

fn nothing_on(sock: &UdpSocket) -> bool {
    std::thread::sleep(Duration::from_millis(50));
    let mut buf = [0u8; 2048];
    matches!(sock.recv_from(&mut buf), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
}

fn check_family(data: &UdpSocket, hs: &UdpSocket, to: SocketAddr, from: &UdpSocket) {
    let ours = (0xabcd_e000 & !INDEX_TAG_MASK) | u32::from(TAG);
    let foreign = ours ^ 0x1; // one tag bit off
    let cases: Vec<(&str, Vec<u8>, bool)> = vec![
        ("data for our session", data_msg(ours, 1400), true),
        ("short data for our session", data_msg(ours, 32), true),
        ("data with a foreign index", data_msg(foreign, 1400), false),
        (
            "data, index tag in the high bits",
            data_msg(u32::from(TAG) << 20, 200),
            false,
        ),
        (
            "initiation",
            {
                let mut m = vec![0u8; 148];
                m[0] = 1;
                m
            },
            false,
        ),
        (
            "cookie reply",
            {
                let mut m = vec![0u8; 64];
                m[0] = 3;
                m
            },
            false,
        ),
        (
            "type 4 with junk in the reserved bytes",
            {
                let mut m = data_msg(ours, 100);
                m[2] = 9;
                m
            },
            false,
        ),
        ("two bytes", vec![4, 0], false),
        ("empty", vec![], false),
    ];
    for (what, msg, to_data) in cases {
        from.send_to(&msg, to).unwrap();
        let (want, other) = if to_data { (data, hs) } else { (hs, data) };
        let got = recv_on(want).unwrap_or_else(|| panic!("{what}: not on the expected socket"));
        assert_eq!(got, msg, "{what}");
        assert!(nothing_on(other), "{what}: also on the other socket");
    }
}

#[test]
fn data_for_our_sessions_and_the_rest_go_to_their_own_sockets() {
    let pair = solowg::sys::udp::bind(0, 0, TAG).expect("bind");
    let hs4 = pair
        .hs4
        .as_ref()
        .expect("this kernel steers (SO_ATTACH_REUSEPORT_CBPF)");
    let from4 = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    check_family(
        &pair.v4,
        hs4,
        (Ipv4Addr::LOCALHOST, pair.port).into(),
        &from4,
    );
    if let (Some(v6), Some(hs6)) = (&pair.v6, &pair.hs6) {
        if let Ok(from6) = UdpSocket::bind((Ipv6Addr::LOCALHOST, 0)) {
            check_family(v6, hs6, (Ipv6Addr::LOCALHOST, pair.port).into(), &from6);
        }
    }
}

#[test]
fn handshake_socket_takes_a_batch_in_one_call_and_flags_oversized() {
    let pair = solowg::sys::udp::bind(0, 0, TAG).expect("bind");
    let hs = pair.hs4.as_ref().expect("steering");
    let from = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let to: SocketAddr = (Ipv4Addr::LOCALHOST, pair.port).into();
    let mut sizes: Vec<usize> = (0..40).map(|i| 1 + i * 3).collect();
    sizes[5] = batch::SMALL_SLOT + 1; // garbage longer than any handshake message
    for (i, &n) in sizes.iter().enumerate() {
        let mut m = vec![i as u8 + 10; n];
        m[0] = 1 + (i % 3) as u8;
        from.send_to(&m, to).unwrap();
    }
    std::thread::sleep(Duration::from_millis(50));
    let mut b = SmallBatch::default();
    let n = batch::recv_small(hs, &mut b).unwrap();
    assert_eq!(n, batch::SMALL_BATCH);
    for (i, &want) in sizes.iter().enumerate().take(n) {
        let (slot, len, from_addr, truncated) = b.get(i).unwrap();
        assert_eq!(from_addr, from.local_addr().unwrap());
        assert_eq!(truncated, want > batch::SMALL_SLOT, "datagram {i}");
        assert_eq!(len, want.min(batch::SMALL_SLOT), "datagram {i}");
        assert!(slot[1..len].iter().all(|&x| x == i as u8 + 10));
    }
    assert_eq!(batch::recv_small(hs, &mut b).unwrap(), sizes.len() - n);
}

#[test]
fn a_port_we_hold_cannot_be_joined_and_a_held_port_is_refused() {
    let pair = solowg::sys::udp::bind(0, 0, TAG).expect("bind");
    // Another daemon configured with the same port, which would also ask for SO_REUSEPORT.
    let again = solowg::sys::udp::bind(pair.port, 0, TAG);
    assert_eq!(
        again.err().map(|e| e.kind()),
        Some(std::io::ErrorKind::AddrInUse)
    );
    // A port someone else holds without SO_REUSEPORT.
    let other = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).unwrap();
    let port = other.local_addr().unwrap().port();
    let refused = solowg::sys::udp::bind(port, 0, TAG);
    assert_eq!(
        refused.err().map(|e| e.kind()),
        Some(std::io::ErrorKind::AddrInUse)
    );
}
