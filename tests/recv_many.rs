//! `batch::recv_many` on real loopback sockets: several datagrams per call, each in its own
//! region with its length and source; a GRO train (from a GSO send) as one message with its
//! segment size; a short count when the queue runs empty, then WouldBlock.

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
fn several_datagrams_per_call_each_in_its_region() {
    let (rx, tx, to) = pair();
    let sizes = [1400usize, 32, 900, 1, 1200, 77];
    for (i, &n) in sizes.iter().enumerate() {
        tx.send_to(&vec![i as u8 + 1; n], to).unwrap();
    }
    std::thread::sleep(Duration::from_millis(50)); // all queued before the first call
    let mut buf = vec![0u8; batch::RECV_REGION * batch::RECV_MANY];
    let mut rm = RecvMany::default();
    let mut seen = Vec::new();
    // All six were queued: a full call, then a short one (the queue ran empty).
    for want in [batch::RECV_MANY, sizes.len() - batch::RECV_MANY] {
        let got = recv_some(&rx, &mut rm, &mut buf, batch::RECV_MANY);
        assert_eq!(got, want);
        for m in 0..got {
            let r = rm.get(m).unwrap();
            assert_eq!(r.from, tx.local_addr().unwrap());
            assert_eq!(r.seg, r.len, "no GRO here: one datagram per message");
            assert!(!r.truncated);
            let at = m * batch::RECV_REGION;
            let k = seen.len();
            assert_eq!(r.len, sizes[k], "datagram {k}");
            assert!(buf[at..at + r.len].iter().all(|&b| b == k as u8 + 1));
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
    let mut buf = vec![0u8; batch::RECV_REGION * 2];
    let mut rm = RecvMany::default();
    let (mut total, mut trains) = (0, 0);
    while total < 5300 {
        let got = recv_some(&rx, &mut rm, &mut buf, 2);
        for m in 0..got {
            let r = rm.get(m).unwrap();
            if r.len > r.seg {
                assert_eq!(r.seg, 1000, "the train's segment size");
                trains += 1;
            }
            let at = m * batch::RECV_REGION;
            for (j, chunk) in buf[at..at + r.len].chunks(1000).enumerate() {
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
fn a_small_buffer_takes_one_region() {
    let (rx, tx, to) = pair();
    tx.send_to(&[7u8; 100], to).unwrap();
    tx.send_to(&[8u8; 100], to).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    // Room for one region only: one message per call, whatever was asked.
    let mut buf = vec![0u8; batch::RECV_REGION];
    let mut rm = RecvMany::default();
    assert_eq!(recv_some(&rx, &mut rm, &mut buf, batch::RECV_MANY), 1);
    assert_eq!(rm.get(0).unwrap().len, 100);
    assert_eq!(buf[0], 7);
    assert_eq!(recv_some(&rx, &mut rm, &mut buf, batch::RECV_MANY), 1);
    assert_eq!(buf[0], 8);
}
