//! `solowg show [INTERFACE]`: what `wg show` prints, read over the UAPI socket, for routers
//! whose `wg` is built without userspace support. Private keys are never printed.

use crate::crypto;
use crate::proto::peer::{base64, key_from_base64_into};
use crate::sys::iface;
use std::fmt::Write as _;
use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use zeroize::Zeroizing;

/// Longest reply read from a daemon (a few thousand peers).
const MAX_REPLY: u64 = 16 << 20;

/// Interfaces with a UAPI socket, sorted.
pub fn interfaces() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(iface::SOCKET_DIR)
        .map(|d| {
            d.flatten()
                .filter_map(|e| {
                    let n = e.file_name().to_string_lossy().into_owned();
                    n.strip_suffix(".sock").map(str::to_string)
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The raw `get=1` reply of one interface.
pub fn get(ifname: &str) -> io::Result<Zeroizing<String>> {
    let mut s = UnixStream::connect(iface::socket_path(ifname))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    s.write_all(b"get=1\n\n")?;
    // The daemon keeps the connection open for more requests: the reply ends with its
    // errno line and an empty line.
    let mut raw = Zeroizing::new(Vec::new());
    let mut chunk = Zeroizing::new([0u8; 4096]);
    loop {
        let n = s.read(&mut chunk[..])?;
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&chunk[..n]);
        let ended = raw.ends_with(b"\n\n")
            && raw[..raw.len() - 1]
                .rsplit(|&b| b == b'\n')
                .nth(1)
                .is_some_and(|l| l.starts_with(b"errno="));
        if ended || raw.len() as u64 > MAX_REPLY {
            break;
        }
    }
    Ok(Zeroizing::new(String::from_utf8_lossy(&raw).into_owned()))
}

fn ago(secs: u64) -> String {
    let units = [
        ("day", 86400),
        ("hour", 3600),
        ("minute", 60),
        ("second", 1),
    ];
    let mut left = secs;
    let mut parts = Vec::new();
    for (name, n) in units {
        if left >= n {
            let k = left / n;
            left %= n;
            parts.push(format!("{k} {name}{}", if k == 1 { "" } else { "s" }));
        }
    }
    if parts.is_empty() {
        "Now".into()
    } else {
        format!("{} ago", parts.join(", "))
    }
}

/// `wg show`'s `%.2f KiB` (MiB, GiB, TiB) in integer arithmetic, rounded half to even as
/// printf and `{:.2}` round: the same text without float formatting, about 27 KB of the MIPS
/// binary.
fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut i = 0;
    while i + 1 < UNITS.len() && n >> (10 * (i + 1)) != 0 {
        i += 1;
    }
    if i == 0 {
        return format!("{n} B");
    }
    let shift = 10 * i;
    let frac = (n & ((1 << shift) - 1)) * 100; // below 100 << 40
    let (mut hundredths, rest) = (
        (n >> shift) * 100 + (frac >> shift),
        frac & ((1 << shift) - 1),
    );
    let half = 1 << (shift - 1);
    if rest > half || (rest == half && hundredths % 2 == 1) {
        hundredths += 1;
    }
    format!("{}.{:02} {}", hundredths / 100, hundredths % 100, UNITS[i])
}

/// Renders a `get=1` reply like `wg show`.
pub fn render(ifname: &str, reply: &str, now_unix: u64) -> Result<String, String> {
    let mut out = String::new();
    let mut errno = None;
    let mut peer_open = false;
    let mut hs = 0u64;
    let mut rx = 0u64;
    let mut tx = 0u64;
    let flush = |out: &mut String, open: bool, hs: u64, rx: u64, tx: u64| {
        if !open {
            return;
        }
        if hs != 0 {
            let _ = writeln!(
                out,
                "  latest handshake: {}",
                ago(now_unix.saturating_sub(hs))
            );
        }
        if rx != 0 || tx != 0 {
            let _ = writeln!(
                out,
                "  transfer: {} received, {} sent",
                bytes(rx),
                bytes(tx)
            );
        }
    };
    let _ = writeln!(out, "interface: {ifname}");
    for line in reply.lines() {
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        match k {
            "private_key" => {
                let mut key = Zeroizing::new([0u8; 32]);
                let mut hex_ok = v.len() == 64;
                for (i, b) in key.iter_mut().enumerate() {
                    match v.get(2 * i..2 * i + 2).map(|h| u8::from_str_radix(h, 16)) {
                        Some(Ok(x)) => *b = x,
                        _ => hex_ok = false,
                    }
                }
                if hex_ok {
                    let _ = writeln!(out, "  public key: {}", base64(&crypto::public_key(&key)));
                    let _ = writeln!(out, "  private key: (hidden)");
                }
            }
            "listen_port" => {
                let _ = writeln!(out, "  listening port: {v}");
            }
            "fwmark" if v != "0" => {
                let _ = writeln!(out, "  fwmark: 0x{:x}", v.parse::<u32>().unwrap_or(0));
            }
            "public_key" => {
                flush(&mut out, peer_open, hs, rx, tx);
                (hs, rx, tx) = (0, 0, 0);
                peer_open = true;
                let mut key = [0u8; 32];
                let ok = v.len() == 64
                    && (0..32).all(|i| match u8::from_str_radix(&v[2 * i..2 * i + 2], 16) {
                        Ok(x) => {
                            key[i] = x;
                            true
                        }
                        Err(_) => false,
                    });
                let shown = if ok { base64(&key) } else { "(invalid)".into() };
                let _ = writeln!(out, "\npeer: {shown}");
            }
            "preshared_key" if peer_open && v.bytes().any(|b| b != b'0') => {
                let _ = writeln!(out, "  preshared key: (hidden)");
            }
            "endpoint" if peer_open => {
                let _ = writeln!(out, "  endpoint: {v}");
            }
            "allowed_ip" if peer_open => {
                let _ = writeln!(out, "  allowed ips: {v}");
            }
            "last_handshake_time_sec" => hs = v.parse().unwrap_or(0),
            "rx_bytes" => rx = v.parse().unwrap_or(0),
            "tx_bytes" => tx = v.parse().unwrap_or(0),
            "persistent_keepalive_interval" if v != "0" => {
                let _ = writeln!(out, "  persistent keepalive: every {v} seconds");
            }
            "errno" => errno = v.parse::<i32>().ok(),
            _ => {}
        }
    }
    flush(&mut out, peer_open, hs, rx, tx);
    match errno {
        Some(0) => Ok(out),
        Some(e) => Err(format!("{ifname}: {}", io::Error::from_raw_os_error(e))),
        None => Err(format!("{ifname}: incomplete reply")),
    }
}

/// Validates a base64 key argument (used by the ubus `pubkey` method too).
pub fn parse_key(s: &str) -> Option<Zeroizing<[u8; 32]>> {
    let mut k = Zeroizing::new([0u8; 32]);
    key_from_base64_into(s, &mut k).then_some(k)
}

/// The `show` command: every interface, or the one named.
#[inline(never)] // not part of the daemon's stack (see `super::run_foreground`)
pub fn run(which: Option<&str>) -> Result<String, String> {
    let names = match which {
        Some(n) => vec![n.to_string()],
        None => interfaces(),
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut all = Vec::new();
    for n in names {
        let reply = get(&n).map_err(|e| format!("{n}: {e}"))?;
        all.push(render(&n, &reply, now)?);
    }
    Ok(all.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_like_wg_show_and_hides_keys() {
        let private = "e84b5a6d2717c1003a13b431570353dbaca9146cf150c5f8575680feba52027a";
        let reply = format!(
            "private_key={private}\nlisten_port=51820\nfwmark=0\n\
             public_key=b85996fecc9c7f1fc6d2572a76eda11d59bcd20be8e543b15ce4bd85a8e75a33\n\
             preshared_key=188515093e952f5f22e865cef3012e72f8b5f0b598ac0309d5dacce3b70fcf52\n\
             endpoint=192.0.2.1:51820\nlast_handshake_time_sec=1000\nlast_handshake_time_nsec=0\n\
             rx_bytes=2048\ntx_bytes=100\npersistent_keepalive_interval=25\n\
             allowed_ip=10.0.0.2/32\nprotocol_version=1\nerrno=0\n\n"
        );
        let text = render("wg0", &reply, 1034).unwrap();
        assert!(text.contains("interface: wg0"));
        assert!(text.contains("private key: (hidden)"));
        assert!(text.contains("preshared key: (hidden)"));
        assert!(!text.contains(private));
        assert!(!text.contains("188515093e"));
        assert!(text.contains("latest handshake: 34 seconds ago"), "{text}");
        assert!(
            text.contains("transfer: 2.00 KiB received, 100 B sent"),
            "{text}"
        );
        assert!(text.contains("persistent keepalive: every 25 seconds"));
        assert!(text.contains("allowed ips: 10.0.0.2/32"));
    }

    #[test]
    fn errno_and_garbage_are_errors_not_panics() {
        assert!(render("wg0", "errno=19\n\n", 0).is_err());
        assert!(render("wg0", "garbage\n=\n==\npublic_key=zz\n", 0).is_err());
        assert_eq!(ago(3661), "1 hour, 1 minute, 1 second ago");
    }

    /// The integer `bytes` prints what float formatting (as the code was, and as `wg show`
    /// prints with printf) prints, ties included.
    #[test]
    fn bytes_match_float_formatting() {
        fn float(n: u64) -> String {
            let units = ["B", "KiB", "MiB", "GiB", "TiB"];
            let (mut v, mut i) = (n as f64, 0);
            while v >= 1024.0 && i + 1 < units.len() {
                v /= 1024.0;
                i += 1;
            }
            if i == 0 {
                format!("{n} B")
            } else {
                format!("{v:.2} {}", units[i])
            }
        }
        assert_eq!(bytes(1152), "1.12 KiB"); // 1.125: tie, to even
        assert_eq!(bytes(1408), "1.38 KiB"); // 1.375
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(1024 * 1024 - 1), "1024.00 KiB");
        assert_eq!(bytes(u64::MAX), float(u64::MAX));
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut samples = vec![0, 1, 1024, 1 << 20, 1 << 30, 1 << 40, 1 << 50, 1 << 53];
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            samples.push(x >> (11 + x % 53)); // below 2^53: exact as f64
        }
        for shift in [10, 20, 30, 40] {
            for k in 0..4096u64 {
                samples.push((k << (shift - 7)) + (1 << shift)); // ties and their neighbours
                samples.push((k << (shift - 7)) + (1 << shift) + 1);
            }
        }
        for n in samples {
            assert_eq!(bytes(n), float(n), "{n}");
        }
    }
}
