//! `solowg show`: what `wg show` prints, read over the UAPI sockets, for routers whose `wg` is
//! built without userspace support. The same forms as `wg show`: every interface or one, its
//! summary, one field (`public-key`, `peers`, `transfer`, ...) or `dump`, and `interfaces`.
//! As with `wg`, the summary hides private and preshared keys; `private-key`,
//! `preshared-keys` and `dump` print them, to whoever may read the root-only sockets.

use crate::crypto;
use crate::daemon::iface;
use crate::proto::peer::{base64, key_from_base64_into};
use std::fmt::Write as _;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use zeroize::Zeroizing;

/// Longest reply read from a daemon (a few thousand peers).
const MAX_REPLY: u64 = 16 << 20;

/// Interfaces with a UAPI socket, sorted. As `wg` does, a name is listed only if it leads to
/// a socket: a link to the socket of a daemon running as its own user (see `solowg export`)
/// dangles while its interface is down.
pub fn interfaces() -> Vec<String> {
    use std::os::unix::fs::FileTypeExt;
    let mut v: Vec<String> = std::fs::read_dir(iface::SOCKET_DIR)
        .map(|d| {
            d.flatten()
                .filter(|e| std::fs::metadata(e.path()).is_ok_and(|m| m.file_type().is_socket()))
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
    let s = UnixStream::connect(iface::socket_path(ifname))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    // Whole: the request is far below a socket buffer.
    if crate::sys::send(s.as_fd(), b"get=1\n\n", 0)? != 7 {
        return Err(io::Error::other("short write"));
    }
    // The daemon keeps the connection open for more requests: the reply ends with its
    // errno line and an empty line.
    let mut raw = Zeroizing::new(Vec::new());
    let mut chunk = Zeroizing::new([0u8; 4096]);
    loop {
        let n = crate::sys::recv(s.as_fd(), &mut chunk[..], 0)?;
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

/// One interface as its `get=1` reply describes it.
#[derive(Default)]
pub struct Info {
    private_key: Option<Zeroizing<[u8; 32]>>,
    listen_port: u16,
    fwmark: u32,
    peers: Vec<PeerInfo>,
}

#[derive(Default)]
struct PeerInfo {
    /// None: the reply's key was not 64 hex digits.
    public_key: Option<[u8; 32]>,
    /// None: no preshared key (all zeros in the reply).
    preshared_key: Option<Zeroizing<[u8; 32]>>,
    endpoint: Option<String>,
    allowed_ips: Vec<String>,
    handshake_sec: u64,
    rx: u64,
    tx: u64,
    keepalive: u16,
}

fn hex32(v: &str) -> Option<Zeroizing<[u8; 32]>> {
    let mut k = Zeroizing::new([0u8; 32]);
    if v.len() != 64 {
        return None;
    }
    for (i, b) in k.iter_mut().enumerate() {
        *b = u8::from_str_radix(v.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(k)
}

/// Reads a `get=1` reply; an error for a daemon's errno or a reply cut short.
pub fn parse(ifname: &str, reply: &str) -> Result<Info, String> {
    let mut info = Info::default();
    let mut errno = None;
    for line in reply.lines() {
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        let peer = info.peers.last_mut();
        match (k, peer) {
            ("private_key", _) => info.private_key = hex32(v),
            ("listen_port", _) => info.listen_port = v.parse().unwrap_or(0),
            ("fwmark", _) => info.fwmark = v.parse().unwrap_or(0),
            ("public_key", _) => info.peers.push(PeerInfo {
                public_key: hex32(v).map(|k| *k),
                ..PeerInfo::default()
            }),
            ("preshared_key", Some(p)) => {
                p.preshared_key = hex32(v).filter(|k| k.iter().any(|&b| b != 0));
            }
            ("endpoint", Some(p)) => p.endpoint = Some(v.to_string()),
            ("allowed_ip", Some(p)) => p.allowed_ips.push(v.to_string()),
            ("last_handshake_time_sec", Some(p)) => p.handshake_sec = v.parse().unwrap_or(0),
            ("rx_bytes", Some(p)) => p.rx = v.parse().unwrap_or(0),
            ("tx_bytes", Some(p)) => p.tx = v.parse().unwrap_or(0),
            ("persistent_keepalive_interval", Some(p)) => p.keepalive = v.parse().unwrap_or(0),
            ("errno", _) => errno = v.parse::<i32>().ok(),
            _ => {}
        }
    }
    match errno {
        Some(0) => Ok(info),
        Some(e) => Err(format!("{ifname}: {}", io::Error::from_raw_os_error(e))),
        None => Err(format!("{ifname}: incomplete reply")),
    }
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

fn key_text(k: Option<&[u8; 32]>) -> String {
    k.map_or_else(|| "(invalid)".into(), |k| base64(k))
}

fn public_of(info: &Info) -> Option<String> {
    info.private_key
        .as_ref()
        .map(|k| base64(&crypto::public_key(k)))
}

/// The summary, as `wg show` prints it (keys hidden).
pub fn pretty(ifname: &str, info: &Info, now_unix: u64) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "interface: {ifname}");
    if let Some(public) = public_of(info) {
        let _ = writeln!(out, "  public key: {public}");
        let _ = writeln!(out, "  private key: (hidden)");
    }
    if info.listen_port != 0 {
        let _ = writeln!(out, "  listening port: {}", info.listen_port);
    }
    if info.fwmark != 0 {
        let _ = writeln!(out, "  fwmark: 0x{:x}", info.fwmark);
    }
    for p in &info.peers {
        let _ = writeln!(out, "\npeer: {}", key_text(p.public_key.as_ref()));
        if p.preshared_key.is_some() {
            let _ = writeln!(out, "  preshared key: (hidden)");
        }
        if let Some(e) = &p.endpoint {
            let _ = writeln!(out, "  endpoint: {e}");
        }
        let ips = if p.allowed_ips.is_empty() {
            "(none)".to_string()
        } else {
            p.allowed_ips.join(", ")
        };
        let _ = writeln!(out, "  allowed ips: {ips}");
        if p.handshake_sec != 0 {
            let _ = writeln!(
                out,
                "  latest handshake: {}",
                ago(now_unix.saturating_sub(p.handshake_sec))
            );
        }
        if p.rx != 0 || p.tx != 0 {
            let _ = writeln!(
                out,
                "  transfer: {} received, {} sent",
                bytes(p.rx),
                bytes(p.tx)
            );
        }
        if p.keepalive != 0 {
            let _ = writeln!(out, "  persistent keepalive: every {} seconds", p.keepalive);
        }
    }
    out
}

/// What `wg show <interface> <field>` can ask for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Field {
    PublicKey,
    PrivateKey,
    ListenPort,
    Fwmark,
    Peers,
    PresharedKeys,
    Endpoints,
    AllowedIps,
    LatestHandshakes,
    PersistentKeepalive,
    Transfer,
    Dump,
}

impl Field {
    pub fn parse(s: &str) -> Option<Field> {
        Some(match s {
            "public-key" => Field::PublicKey,
            "private-key" => Field::PrivateKey,
            "listen-port" => Field::ListenPort,
            "fwmark" => Field::Fwmark,
            "peers" => Field::Peers,
            "preshared-keys" => Field::PresharedKeys,
            "endpoints" => Field::Endpoints,
            "allowed-ips" => Field::AllowedIps,
            "latest-handshakes" => Field::LatestHandshakes,
            "persistent-keepalive" => Field::PersistentKeepalive,
            "transfer" => Field::Transfer,
            "dump" => Field::Dump,
            _ => return None,
        })
    }
}

/// One field (or `dump`) in `wg show`'s tab-separated form; each line starts with the
/// interface's name when `prefix` (`wg show all ...`).
pub fn field(ifname: &str, info: &Info, what: Field, prefix: bool) -> Zeroizing<String> {
    let mut out = Zeroizing::new(String::new());
    let lead = if prefix {
        format!("{ifname}\t")
    } else {
        String::new()
    };
    interface_field(&mut out, &lead, info, what);
    for p in &info.peers {
        peer_field(&mut out, &lead, p, what);
    }
    out
}

/// What `wg show` prints for a key or list that is not there.
fn none() -> String {
    "(none)".to_string()
}

/// The interface's own line of [`field`], for the fields that have one.
fn interface_field(out: &mut String, lead: &str, info: &Info, what: Field) {
    let private = || {
        info.private_key
            .as_ref()
            .map_or_else(none, |k| base64(&k[..]))
    };
    let fwmark = if info.fwmark == 0 {
        "off".to_string()
    } else {
        format!("0x{:x}", info.fwmark)
    };
    match what {
        Field::PublicKey => {
            let _ = writeln!(out, "{lead}{}", public_of(info).unwrap_or_else(none));
        }
        Field::PrivateKey => {
            let _ = writeln!(out, "{lead}{}", Zeroizing::new(private()).as_str());
        }
        Field::ListenPort => {
            let _ = writeln!(out, "{lead}{}", info.listen_port);
        }
        Field::Fwmark => {
            let _ = writeln!(out, "{lead}{fwmark}");
        }
        Field::Dump => {
            let _ = writeln!(
                out,
                "{lead}{}\t{}\t{}\t{fwmark}",
                Zeroizing::new(private()).as_str(),
                public_of(info).unwrap_or_else(none),
                info.listen_port
            );
        }
        _ => {}
    }
}

/// One peer's line of [`field`], for the fields that have one.
fn peer_field(out: &mut String, lead: &str, p: &PeerInfo, what: Field) {
    let keepalive = |k: u16| {
        if k == 0 {
            "off".to_string()
        } else {
            k.to_string()
        }
    };
    let key = key_text(p.public_key.as_ref());
    let psk = Zeroizing::new(
        p.preshared_key
            .as_ref()
            .map_or_else(none, |k| base64(&k[..])),
    );
    let endpoint = p.endpoint.clone().unwrap_or_else(none);
    let ips = |sep: &str| {
        if p.allowed_ips.is_empty() {
            none()
        } else {
            p.allowed_ips.join(sep)
        }
    };
    let _ = match what {
        Field::Peers => writeln!(out, "{lead}{key}"),
        Field::PresharedKeys => writeln!(out, "{lead}{key}\t{}", psk.as_str()),
        Field::Endpoints => writeln!(out, "{lead}{key}\t{endpoint}"),
        Field::AllowedIps => writeln!(out, "{lead}{key}\t{}", ips(" ")),
        Field::LatestHandshakes => writeln!(out, "{lead}{key}\t{}", p.handshake_sec),
        Field::PersistentKeepalive => {
            writeln!(out, "{lead}{key}\t{}", keepalive(p.keepalive))
        }
        Field::Transfer => writeln!(out, "{lead}{key}\t{}\t{}", p.rx, p.tx),
        Field::Dump => writeln!(
            out,
            "{lead}{key}\t{}\t{endpoint}\t{}\t{}\t{}\t{}\t{}",
            psk.as_str(),
            ips(","),
            p.handshake_sec,
            p.rx,
            p.tx,
            keepalive(p.keepalive)
        ),
        _ => Ok(()),
    };
}

/// Validates a base64 key argument (used by the ubus `pubkey` method too).
pub fn parse_key(s: &str) -> Option<Zeroizing<[u8; 32]>> {
    let mut k = Zeroizing::new([0u8; 32]);
    key_from_base64_into(s, &mut k).then_some(k)
}

/// A `show` that failed: the message and `wg`'s exit status for it.
pub struct Failure {
    pub message: String,
    pub usage: bool,
}

fn fetch(ifname: &str) -> Result<Info, Failure> {
    let reply = get(ifname).map_err(|e| Failure {
        message: match e.kind() {
            io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused => format!(
                "Unable to access interface {ifname}: no solowg serves it \
                 ({} is missing or dead)",
                iface::socket_path(ifname).display()
            ),
            io::ErrorKind::PermissionDenied => format!(
                "Unable to access interface {ifname}: permission denied (the socket is root's)"
            ),
            _ => format!("Unable to access interface {ifname}: {e}"),
        },
        usage: false,
    })?;
    parse(ifname, &reply).map_err(|message| Failure {
        message,
        usage: false,
    })
}

/// What `show` printed, and the interfaces it could not read (with `all`, as `wg`, it goes on
/// past them; the exit status is then 1).
pub struct Shown {
    pub text: Zeroizing<String>,
    pub errors: Vec<String>,
}

/// The `show` command with the words after it, as `wg show` takes them:
/// `[all | interfaces | <interface>] [<field> | dump]`. Err for words it does not take, or
/// an interface named alone that cannot be read.
#[inline(never)] // not part of the daemon's stack (see `super::run_foreground`)
pub fn run(args: &[String]) -> Result<Shown, Failure> {
    let bad = |m: String| Failure {
        message: m,
        usage: true,
    };
    if args.len() > 2 {
        return Err(bad(format!("unexpected argument '{}'", args[2])));
    }
    let what = match args.get(1) {
        Some(f) => Some(Field::parse(f).ok_or_else(|| bad(format!("invalid parameter '{f}'")))?),
        None => None,
    };
    let target = args.first().map(String::as_str).unwrap_or("all");
    if target == "interfaces" {
        if what.is_some() {
            return Err(bad("'interfaces' takes no field".into()));
        }
        let mut text = Zeroizing::new(interfaces().join(" "));
        if !text.is_empty() {
            text.push('\n');
        }
        return Ok(Shown {
            text,
            errors: Vec::new(),
        });
    }
    let (names, prefix) = if target == "all" {
        (interfaces(), true)
    } else {
        (vec![target.to_string()], false)
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut out = Zeroizing::new(String::new());
    let mut errors = Vec::new();
    for n in &names {
        let info = match fetch(n) {
            Ok(i) => i,
            Err(f) if prefix => {
                errors.push(f.message);
                continue;
            }
            Err(f) => return Err(f),
        };
        match what {
            None => {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(&pretty(n, &info, now));
            }
            Some(f) => out.push_str(&field(n, &info, f, prefix)),
        }
    }
    Ok(Shown { text: out, errors })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PRIVATE: &str = "e84b5a6d2717c1003a13b431570353dbaca9146cf150c5f8575680feba52027a";
    const PEER: &str = "b85996fecc9c7f1fc6d2572a76eda11d59bcd20be8e543b15ce4bd85a8e75a33";
    const PSK: &str = "188515093e952f5f22e865cef3012e72f8b5f0b598ac0309d5dacce3b70fcf52";

    fn reply() -> String {
        format!(
            "private_key={PRIVATE}\nlisten_port=51820\nfwmark=0\n\
             public_key={PEER}\npreshared_key={PSK}\n\
             endpoint=192.0.2.1:51820\nlast_handshake_time_sec=1000\nlast_handshake_time_nsec=0\n\
             rx_bytes=2048\ntx_bytes=100\npersistent_keepalive_interval=25\n\
             allowed_ip=10.0.0.2/32\nallowed_ip=fd00::2/128\nprotocol_version=1\n\
             public_key={}\npreshared_key={}\nprotocol_version=1\nerrno=0\n\n",
            "11".repeat(32),
            "0".repeat(64)
        )
    }

    fn b64(hex: &str) -> String {
        base64(&hex32(hex).unwrap()[..])
    }

    #[test]
    fn renders_like_wg_show_and_hides_keys() {
        let info = parse("wg0", &reply()).unwrap();
        let text = pretty("wg0", &info, 1034);
        assert!(text.contains("interface: wg0"));
        assert!(text.contains("private key: (hidden)"));
        assert!(text.contains("preshared key: (hidden)"));
        assert!(!text.contains(PRIVATE) && !text.contains(&b64(PRIVATE)[..40]));
        assert!(!text.contains("188515093e") && !text.contains(&b64(PSK)));
        assert!(text.contains("latest handshake: 34 seconds ago"), "{text}");
        assert!(
            text.contains("transfer: 2.00 KiB received, 100 B sent"),
            "{text}"
        );
        assert!(text.contains("persistent keepalive: every 25 seconds"));
        // As wg: one line, comma-separated; a peer without any says so.
        assert!(
            text.contains("allowed ips: 10.0.0.2/32, fd00::2/128\n"),
            "{text}"
        );
        assert!(text.contains("allowed ips: (none)\n"), "{text}");
    }

    #[test]
    fn fields_and_dump_follow_wg() {
        let info = parse("wg0", &reply()).unwrap();
        let public = base64(&crypto::public_key(&hex32(PRIVATE).unwrap()));
        let (peer, peer2, psk) = (b64(PEER), b64(&"11".repeat(32)), b64(PSK));
        let f = |w| field("wg0", &info, w, false).to_string();
        assert_eq!(f(Field::PublicKey), format!("{public}\n"));
        assert_eq!(f(Field::PrivateKey), format!("{}\n", b64(PRIVATE)));
        assert_eq!(f(Field::ListenPort), "51820\n");
        assert_eq!(f(Field::Fwmark), "off\n");
        assert_eq!(f(Field::Peers), format!("{peer}\n{peer2}\n"));
        assert_eq!(
            f(Field::PresharedKeys),
            format!("{peer}\t{psk}\n{peer2}\t(none)\n")
        );
        assert_eq!(
            f(Field::AllowedIps),
            format!("{peer}\t10.0.0.2/32 fd00::2/128\n{peer2}\t(none)\n")
        );
        assert_eq!(
            f(Field::Endpoints),
            format!("{peer}\t192.0.2.1:51820\n{peer2}\t(none)\n")
        );
        assert_eq!(
            f(Field::LatestHandshakes),
            format!("{peer}\t1000\n{peer2}\t0\n")
        );
        assert_eq!(
            f(Field::Transfer),
            format!("{peer}\t2048\t100\n{peer2}\t0\t0\n")
        );
        assert_eq!(
            f(Field::PersistentKeepalive),
            format!("{peer}\t25\n{peer2}\toff\n")
        );
        assert_eq!(
            f(Field::Dump),
            format!(
                "{}\t{public}\t51820\toff\n\
                 {peer}\t{psk}\t192.0.2.1:51820\t10.0.0.2/32,fd00::2/128\t1000\t2048\t100\t25\n\
                 {peer2}\t(none)\t(none)\t(none)\t0\t0\t0\toff\n",
                b64(PRIVATE)
            )
        );
        let all = field("wg0", &info, Field::ListenPort, true).to_string();
        assert_eq!(all, "wg0\t51820\n");
        assert_eq!(Field::parse("dump"), Some(Field::Dump));
        assert_eq!(Field::parse("bogus"), None);
    }

    #[test]
    fn bad_words_are_usage_errors() {
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let e = run(&words(&["wg0", "bogus"])).err().unwrap();
        assert!(e.usage && e.message.contains("bogus"));
        let e = run(&words(&["wg0", "dump", "more"])).err().unwrap();
        assert!(e.usage && e.message.contains("more"));
        let e = run(&words(&["interfaces", "dump"])).err().unwrap();
        assert!(e.usage);
        // A name no daemon serves: said so, not a usage error.
        let e = run(&words(&["swg-no-such-if"])).err().unwrap();
        assert!(
            !e.usage && e.message.contains("swg-no-such-if"),
            "{}",
            e.message
        );
    }

    #[test]
    fn errno_and_garbage_are_errors_not_panics() {
        assert!(parse("wg0", "errno=19\n\n").is_err());
        assert!(parse("wg0", "garbage\n=\n==\npublic_key=zz\n").is_err());
        let info = parse("wg0", "public_key=zz\nallowed_ip=x\nerrno=0\n").unwrap();
        assert!(pretty("wg0", &info, 0).contains("peer: (invalid)"));
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
