//! Random and mutated requests: no panic, and progress on every call.

use super::*;

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
