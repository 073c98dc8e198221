//! The command line: the mode, its options and their checks.

use solowg::proto::peer::key_from_base64;
use solowg::proto::wire;
use std::net::{Ipv4Addr, SocketAddr};
use std::process::exit;
use std::time::Duration;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Mode {
    Keys,
    Handshake,
    InitRandom,
    Garbage,
    TransportUnknown,
}

pub(crate) struct Opts {
    pub(crate) mode: Mode,
    pub(crate) target: Option<SocketAddr>,
    pub(crate) sources: Vec<Ipv4Addr>,
    pub(crate) duration: Duration,
    pub(crate) rate: u64,
    pub(crate) peer_public: Option<[u8; 32]>,
    pub(crate) keys: usize,
    pub(crate) seed: String,
    pub(crate) max_outstanding: usize,
    pub(crate) timeout: Duration,
    pub(crate) use_cookies: bool,
    pub(crate) verify_every: u64,
    pub(crate) max_len: usize,
    pub(crate) quiet: bool,
}

/// Says what is wrong and exits with status 2.
pub(crate) fn die(msg: &str) -> ! {
    eprintln!("solowg-flood: {msg}");
    exit(2)
}

pub(crate) fn parse_opts(args: &[String]) -> Opts {
    let mode = match args.first().map(String::as_str) {
        Some("keys") => Mode::Keys,
        Some("handshake") => Mode::Handshake,
        Some("init-random") => Mode::InitRandom,
        Some("garbage") => Mode::Garbage,
        Some("transport-unknown") => Mode::TransportUnknown,
        _ => die("usage: solowg-flood keys|handshake|init-random|garbage|transport-unknown [options] (see the source header)"),
    };
    let mut o = Opts {
        mode,
        target: None,
        sources: Vec::new(),
        duration: Duration::from_secs(5),
        rate: 0,
        peer_public: None,
        keys: 1000,
        seed: "solowg-flood".into(),
        max_outstanding: 256,
        timeout: Duration::from_millis(1000),
        use_cookies: false,
        verify_every: 1,
        max_len: 1500,
        quiet: false,
    };
    let mut it = args[1..].iter();
    while let Some(k) = it.next() {
        let flag = matches!(k.as_str(), "--use-cookies" | "--quiet");
        let v = if flag {
            ""
        } else {
            it.next()
                .map(String::as_str)
                .unwrap_or_else(|| die(&format!("{k} needs a value")))
        };
        let num = |max: u64| -> u64 {
            match v.parse::<u64>() {
                Ok(n) if n <= max => n,
                _ => die(&format!("{k}: expected an integer 0..={max}")),
            }
        };
        match k.as_str() {
            "--target" => o.target = Some(v.parse().unwrap_or_else(|_| die("--target: IP:PORT"))),
            "--sources" => o.sources = parse_sources(v).unwrap_or_else(|e| die(&e)),
            "--duration" => match v.parse::<f64>() {
                Ok(s) if s > 0.0 && s <= 3600.0 => o.duration = Duration::from_secs_f64(s),
                _ => die("--duration: seconds, 0 < s <= 3600"),
            },
            "--rate" => o.rate = num(100_000_000),
            "--peer-public" => {
                o.peer_public =
                    Some(key_from_base64(v).unwrap_or_else(|| die("--peer-public: base64 key")))
            }
            "--keys" => o.keys = num(65536) as usize,
            "--seed" => o.seed = v.to_string(),
            "--max-outstanding" => o.max_outstanding = num(1 << 20) as usize,
            "--timeout-ms" => o.timeout = Duration::from_millis(num(60_000).max(1)),
            "--verify-every" => o.verify_every = num(1 << 20).max(1),
            "--max-len" => o.max_len = num(wire::MAX_DATAGRAM as u64).max(1) as usize,
            "--use-cookies" => o.use_cookies = true,
            "--quiet" => o.quiet = true,
            _ => die(&format!("unknown option {k}")),
        }
    }
    if o.mode != Mode::Keys && o.target.is_none() {
        die("--target IP:PORT is required");
    }
    if matches!(o.mode, Mode::Handshake | Mode::InitRandom) && o.peer_public.is_none() {
        die("--peer-public is required for this mode");
    }
    if o.mode == Mode::Handshake && (o.keys == 0 || o.max_outstanding == 0) {
        die("--keys and --max-outstanding must be at least 1");
    }
    if o.sources.is_empty() {
        o.sources.push(Ipv4Addr::UNSPECIFIED);
    }
    o
}

/// `A.B.C.D`, `A.B.C.D+COUNT` or `A.B.C.D/N` (hosts of the prefix: without the network and
/// broadcast addresses below /31), comma-separated.
fn parse_sources(spec: &str) -> Result<Vec<Ipv4Addr>, String> {
    let bad = || format!("--sources: cannot parse '{spec}'");
    let mut out = Vec::new();
    for part in spec.split(',').filter(|p| !p.is_empty()) {
        if let Some((a, n)) = part.split_once('+') {
            let a: Ipv4Addr = a.parse().map_err(|_| bad())?;
            let n: u32 = n.parse().map_err(|_| bad())?;
            let base = u32::from(a);
            if n == 0 || n > 65536 || base.checked_add(n - 1).is_none() {
                return Err(bad());
            }
            out.extend((0..n).map(|i| Ipv4Addr::from(base + i)));
        } else if let Some((a, len)) = part.split_once('/') {
            let a: Ipv4Addr = a.parse().map_err(|_| bad())?;
            let len: u32 = len.parse().map_err(|_| bad())?;
            if !(16..=32).contains(&len) {
                return Err(format!("--sources: prefix length 16..32 only ('{part}')"));
            }
            let size = 1u32 << (32 - len);
            let net = u32::from(a) & !(size - 1);
            let (first, last) = if size <= 2 {
                (net, net + size - 1)
            } else {
                (net + 1, net + size - 2)
            };
            out.extend((first..=last).map(Ipv4Addr::from));
        } else {
            out.push(part.parse().map_err(|_| bad())?);
        }
    }
    if out.is_empty() {
        return Err(bad());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources() {
        assert_eq!(parse_sources("10.0.0.1+3").unwrap().len(), 3);
        let v = parse_sources("10.0.0.0/30,10.1.0.1").unwrap();
        assert_eq!(
            v,
            vec![
                Ipv4Addr::new(10, 0, 0, 1),
                Ipv4Addr::new(10, 0, 0, 2),
                Ipv4Addr::new(10, 1, 0, 1)
            ]
        );
        assert!(parse_sources("10.0.0.0/8").is_err());
        assert!(parse_sources("x").is_err());
    }
}
