//! Requests in a byte stream: incomplete, pipelined, oversized; the request buffer's growth.

use super::*;

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
