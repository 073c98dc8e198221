//! `batch::recv_many` on real loopback sockets: several datagrams per call, each contiguous
//! where `get` says (in its head slot, or copied in front of the rest in its region) with
//! its length and source; a GRO train (from a GSO send) as one message with its segment
//! size; a short count when the queue runs empty, then WouldBlock; smaller buffers.

use solowg::sys::batch::{self, RecvMany};
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

fn pair() -> (UdpSocket, UdpSocket, SocketAddr) {
    let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
    rx.set_nonblocking(true).unwrap();
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let to = rx.local_addr().unwrap();
    (rx, tx, to)
}

/// recv_many until it returns something, for at most 2 s.
fn recv_some(rx: &UdpSocket, rm: &mut RecvMany, buf: &mut [u8], max: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        match batch::recv_many(rx, rm, buf, max) {
            Ok(n) => return n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5))
            }
            Err(e) => panic!("receive failed: {e}"),
        }
    }
}

#[test]
fn several_datagrams_per_call_each_contiguous_where_get_says() {
    let (rx, tx, to) = pair();
    // More than one call's worth; sizes around the head slot (one byte more spills into
    // the message's region, its head copied in front) and far past it.
    let h = batch::RECV_HEAD;
    let mut sizes = vec![1400usize, 32, h, h + 1, 1, 9000, 77, h - 1];
    sizes.extend((0..batch::RECV_MANY).map(|i| 100 + 97 * i));
    for (i, &n) in sizes.iter().enumerate() {
        let d: Vec<u8> = (0..n).map(|j| (i * 7 + j) as u8).collect();
        tx.send_to(&d, to).unwrap();
    }
    std::thread::sleep(Duration::from_millis(50)); // all queued before the first call
    let mut buf = vec![0u8; batch::RECV_BUF];
    let mut rm = RecvMany::default();
    let mut seen = Vec::new();
    // All were queued: a full call, then a short one (the queue ran empty).
    for want in [batch::RECV_MANY, sizes.len() - batch::RECV_MANY] {
        let got = recv_some(&rx, &mut rm, &mut buf, batch::RECV_MANY);
        assert_eq!(got, want);
        for m in 0..got {
            let r = rm.get(m).unwrap();
            assert_eq!(r.from, tx.local_addr().unwrap());
            assert_eq!(r.seg, r.len, "no GRO here: one datagram per message");
            assert!(!r.truncated);
            let k = seen.len();
            assert_eq!(r.len, sizes[k], "datagram {k}");
            let d = &buf[r.at..r.at + r.len];
            assert!(
                d.iter().enumerate().all(|(j, &b)| b == (k * 7 + j) as u8),
                "datagram {k} ({} bytes) intact",
                r.len
            );
            seen.push(r.len);
        }
    }
    assert_eq!(seen, sizes);
    let e = batch::recv_many(&rx, &mut rm, &mut buf, batch::RECV_MANY).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock);
}

#[test]
fn a_gro_train_is_one_message_with_its_segment_size() {
    let (rx, tx, to) = pair();
    if !batch::enable_gro(&rx) {
        println!("SKIPPED: this kernel has no UDP GRO");
        return;
    }
    let segs: Vec<Vec<u8>> = (0..5u8).map(|i| vec![i; 1000]).collect();
    let last = vec![9u8; 300];
    let mut parts: Vec<&[u8]> = segs.iter().map(|s| s.as_slice()).collect();
    parts.push(&last);
    if let Err(e) = batch::send_segments(&tx, Some(to), &parts, 1000) {
        println!("SKIPPED: UDP GSO refused on loopback ({e})");
        return;
    }
    let mut buf = vec![0u8; batch::RECV_BUF];
    let mut rm = RecvMany::default();
    let (mut total, mut trains) = (0, 0);
    while total < 5300 {
        // Several messages: a train spills from its head slot into its region.
        let got = recv_some(&rx, &mut rm, &mut buf, 2);
        for m in 0..got {
            let r = rm.get(m).unwrap();
            if r.len > r.seg {
                assert_eq!(r.seg, 1000, "the train's segment size");
                trains += 1;
            }
            for (j, chunk) in buf[r.at..r.at + r.len].chunks(1000).enumerate() {
                let want = if chunk.len() == 300 {
                    9
                } else {
                    (total / 1000 + j) as u8
                };
                assert!(chunk.iter().all(|&b| b == want));
            }
            total += r.len;
        }
    }
    assert_eq!(total, 5300);
    assert!(
        trains >= 1,
        "a GSO send over loopback reaches a UDP_GRO socket as a train"
    );
}

#[test]
fn a_small_buffer_takes_fewer_messages() {
    let (rx, tx, to) = pair();
    for i in 0..4u8 {
        tx.send_to(&[i + 1; 100], to).unwrap();
    }
    std::thread::sleep(Duration::from_millis(50));
    let mut rm = RecvMany::default();
    // Shorter than one message's slots: one message per call, into the whole buffer.
    let mut buf = vec![0u8; batch::RECV_REGION];
    assert_eq!(recv_some(&rx, &mut rm, &mut buf, batch::RECV_MANY), 1);
    let r = rm.get(0).unwrap();
    assert_eq!((r.at, r.len), (0, 100));
    assert_eq!(buf[0], 1);
    // Room for two messages' slots and regions: two per call, whatever was asked.
    let mut buf = vec![0u8; batch::RECV_MANY * batch::RECV_HEAD + 2 * batch::RECV_REGION];
    assert_eq!(recv_some(&rx, &mut rm, &mut buf, batch::RECV_MANY), 2);
    for (m, want) in [(0, 2u8), (1, 3)] {
        let r = rm.get(m).unwrap();
        assert_eq!(r.len, 100);
        assert!(buf[r.at..r.at + 100].iter().all(|&b| b == want));
    }
    // One asked: one message.
    assert_eq!(recv_some(&rx, &mut rm, &mut buf, 1), 1);
    let r = rm.get(0).unwrap();
    assert!(buf[r.at..r.at + 100].iter().all(|&b| b == 4));
}
