//! Text form of WireGuard's cross-platform userspace configuration API, the
//! protocol `wg` speaks over `/var/run/wireguard/<if>.sock`.
//!
//! This module only frames, parses and formats; applying a [`SetRequest`] to
//! the device and gathering a [`DeviceInfo`] is the caller's job. Parsing is
//! strict (any doubt is `EINVAL`) so that a typo never half-applies, and error
//! messages never echo input values, so key material cannot leak into logs.

use std::collections::HashSet;
use std::fmt;
use std::io::Write as _;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV6};

use zeroize::Zeroizing;

pub type Key = Zeroizing<[u8; 32]>;

pub const EINVAL: i32 = 22;
/// A bigger pending request is EINVAL-and-close.
pub const MAX_REQUEST_BYTES: usize = 4 << 20;

#[derive(Debug)]
pub enum Request {
    Get,
    Set(SetRequest),
}

/// One validated `set=1` request. Fields hold the *last* value given for a
/// key, matching wireguard-go, except that repeated lines accumulate where the
/// protocol says so (`allowed_ip`, peers).
#[derive(Default)]
pub struct SetRequest {
    /// `Some(None)`: remove (all zeros on the wire).
    pub private_key: Option<Option<Key>>,
    pub listen_port: Option<u16>,
    pub fwmark: Option<u32>,
    pub replace_peers: bool,
    pub peers: Vec<PeerChange>,
}

/// Changes to one peer. If `remove` is set the rest should be ignored, as
/// both wireguard-go and the kernel do.
pub struct PeerChange {
    pub public_key: [u8; 32],
    pub remove: bool,
    pub update_only: bool,
    /// `Some(None)`: unset.
    pub preshared_key: Option<Option<Key>>,
    pub endpoint: Option<SocketAddr>,
    pub persistent_keepalive: Option<u16>,
    /// Drop all existing allowed IPs before applying `allowed_ips`.
    pub replace_allowed_ips: bool,
    /// In request order. Entries given before a `replace_allowed_ips=true`
    /// line are already dropped, since the replace would wipe them anyway.
    pub allowed_ips: Vec<AllowedIpChange>,
}

impl PeerChange {
    /// A change that names the peer and changes nothing yet.
    pub fn new(public_key: [u8; 32]) -> Self {
        PeerChange {
            public_key,
            remove: false,
            update_only: false,
            preshared_key: None,
            endpoint: None,
            persistent_keepalive: None,
            replace_allowed_ips: false,
            allowed_ips: Vec::new(),
        }
    }
}

/// `addr` is as given; masking to the prefix is the routing table's job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllowedIpChange {
    pub addr: IpAddr,
    pub cidr: u8,
    pub remove: bool,
}

/// `message` is human-readable ("line 3: invalid endpoint") and never
/// contains any value taken from the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UapiError {
    pub errno: i32,
    pub message: String,
}

impl UapiError {
    fn einval(message: String) -> Self {
        UapiError {
            errno: EINVAL,
            message,
        }
    }

    fn at_line(line: usize, what: &str) -> Self {
        Self::einval(format!("line {line}: {what}"))
    }
}

impl fmt::Display for UapiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (errno {})", self.message, self.errno)
    }
}

impl std::error::Error for UapiError {}

/// What `get=1` reports.
#[derive(Default)]
pub struct DeviceInfo {
    pub private_key: Option<Key>,
    pub listen_port: u16,
    pub fwmark: u32,
    pub peers: Vec<PeerInfo>,
}

pub struct PeerInfo {
    pub public_key: [u8; 32],
    pub preshared_key: Option<Key>,
    pub endpoint: Option<SocketAddr>,
    /// Unix seconds, nanoseconds.
    pub last_handshake: Option<(u64, u32)>,
    pub tx_bytes: u64,
    pub rx_bytes: u64,
    pub persistent_keepalive: u16,
    pub allowed_ips: Vec<(IpAddr, u8)>,
}

// Debug is written by hand so that `{:?}` in a log line can never print a
// private or preshared key (Zeroizing's own Debug shows the bytes).

struct Redacted;

impl fmt::Debug for Redacted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

fn redact_opt(k: &Option<Key>) -> Option<Redacted> {
    k.as_ref().map(|_| Redacted)
}

struct PublicHex<'a>(&'a [u8; 32]);

impl fmt::Debug for PublicHex<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&key_to_hex(self.0))
    }
}

impl fmt::Debug for SetRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SetRequest")
            .field("private_key", &self.private_key.as_ref().map(redact_opt))
            .field("listen_port", &self.listen_port)
            .field("fwmark", &self.fwmark)
            .field("replace_peers", &self.replace_peers)
            .field("peers", &self.peers)
            .finish()
    }
}

impl fmt::Debug for PeerChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PeerChange")
            .field("public_key", &PublicHex(&self.public_key))
            .field("remove", &self.remove)
            .field("update_only", &self.update_only)
            .field(
                "preshared_key",
                &self.preshared_key.as_ref().map(redact_opt),
            )
            .field("endpoint", &self.endpoint)
            .field("persistent_keepalive", &self.persistent_keepalive)
            .field("replace_allowed_ips", &self.replace_allowed_ips)
            .field("allowed_ips", &self.allowed_ips)
            .finish()
    }
}

impl fmt::Debug for DeviceInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceInfo")
            .field("private_key", &redact_opt(&self.private_key))
            .field("listen_port", &self.listen_port)
            .field("fwmark", &self.fwmark)
            .field("peers", &self.peers)
            .finish()
    }
}

impl fmt::Debug for PeerInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PeerInfo")
            .field("public_key", &PublicHex(&self.public_key))
            .field("preshared_key", &redact_opt(&self.preshared_key))
            .field("endpoint", &self.endpoint)
            .field("last_handshake", &self.last_handshake)
            .field("tx_bytes", &self.tx_bytes)
            .field("rx_bytes", &self.rx_bytes)
            .field("persistent_keepalive", &self.persistent_keepalive)
            .field("allowed_ips", &self.allowed_ips)
            .finish()
    }
}

/// Incremental framing over the bytes received so far on a connection.
///
/// * `Ok(None)`: no complete request yet.
/// * `Ok(Some((req, consumed)))`: the first request, validated as a whole.
/// * `Err((e, consumed))`: reply `e.errno` and drop `consumed` bytes. Closing
///   the connection afterwards (as wireguard-go does) is the safest choice:
///   a bad first line is rejected as soon as it is complete, before the rest
///   of its request has necessarily arrived.
///
/// The whole buffer is rescanned on each call; callers feeding a large
/// request in tiny reads pay quadratic time, bounded by
/// [`MAX_REQUEST_BYTES`].
#[cfg(any(test, feature = "internals"))]
pub fn parse_request(buf: &[u8]) -> Result<Option<(Request, usize)>, (UapiError, usize)> {
    parse_request_resume(buf, &mut 0)
}

/// [`parse_request`] that does not rescan what an earlier call on the same (grown) buffer
/// already scanned: `hint` starts at 0 for a new buffer, and is kept between calls while
/// they return `Ok(None)` and nothing is consumed. A request fed in small reads then costs
/// linear time, not quadratic: a slow or oversized client cannot eat the packet loop's time.
pub fn parse_request_resume(
    buf: &[u8],
    hint: &mut usize,
) -> Result<Option<(Request, usize)>, (UapiError, usize)> {
    // Only look for the terminator where a request may legally end, so an
    // oversized request is refused even if its end is already buffered.
    let window = &buf[..buf.len().min(MAX_REQUEST_BYTES)];
    // A hint above 0 is a line start: the first line was complete (and checked) before.
    let first_line_checked = *hint > 0;
    let end = match find_request_end(window, (*hint).min(window.len())) {
        Ok(end) => end,
        Err(next) => {
            *hint = next;
            if buf.len() > MAX_REQUEST_BYTES {
                let msg = format!("request exceeds {MAX_REQUEST_BYTES} bytes");
                return Err((UapiError::einval(msg), buf.len()));
            }
            // Refuse a non-UAPI client (say, an HTTP probe that never sends a
            // blank "\n\n" line) right away instead of buffering up to the limit.
            if !first_line_checked && next > 0 {
                if let Some(nl) = buf.iter().position(|&b| b == b'\n') {
                    if let Err(e) = parse_op(&buf[..nl]) {
                        return Err((e, buf.len()));
                    }
                }
            }
            return Ok(None);
        }
    };
    *hint = 0;
    match parse_framed(&buf[..end]) {
        Ok(req) => Ok(Some((req, end))),
        Err(e) => Err((e, end)),
    }
}

/// Length up to and including the first empty line, scanning from `from`, a line start
/// (0 or just after a newline). None found: `Err` with the start of the last, incomplete
/// line, where the next scan may resume.
fn find_request_end(buf: &[u8], from: usize) -> Result<usize, usize> {
    let mut line_start = from;
    for (i, &b) in buf.iter().enumerate().skip(from) {
        if b == b'\n' {
            if i == line_start {
                return Ok(i + 1);
            }
            line_start = i + 1;
        }
    }
    Err(line_start)
}

enum Op {
    Get,
    Set,
}

fn parse_op(line: &[u8]) -> Result<Op, UapiError> {
    match line {
        b"get=1" => Ok(Op::Get),
        b"set=1" => Ok(Op::Set),
        _ => {
            // Distinguish only to make the message more useful.
            line_str(1, line)?;
            Err(UapiError::at_line(1, "expected get=1 or set=1"))
        }
    }
}

/// Parses one framed request: its lines followed by the blank line.
fn parse_framed(req: &[u8]) -> Result<Request, UapiError> {
    // Drop the blank line's '\n', then the last key line's own '\n'.
    let body = req.split_last().map_or(req, |(_, rest)| rest);
    let body = body.strip_suffix(b"\n").unwrap_or(body);
    let mut lines = body
        .split(|&b| b == b'\n')
        .enumerate()
        .map(|(i, l)| (i + 1, l));
    let Some((_, first)) = lines.next() else {
        return Err(UapiError::at_line(1, "expected get=1 or set=1"));
    };
    match parse_op(first)? {
        Op::Get => match lines.next() {
            Some((n, _)) => Err(UapiError::at_line(n, "get request takes no keys")),
            None => Ok(Request::Get),
        },
        Op::Set => {
            let mut p = SetParser::default();
            for (n, raw) in lines {
                let line = line_str(n, raw)?;
                let Some((key, value)) = line.split_once('=') else {
                    return Err(UapiError::at_line(n, "missing '='"));
                };
                p.line(n, key, value)?;
            }
            Ok(Request::Set(p.req))
        }
    }
}

/// Every legal line is printable ASCII, so anything else (including `\r`,
/// tabs and non-UTF-8) is rejected up front.
fn line_str(n: usize, raw: &[u8]) -> Result<&str, UapiError> {
    let bad = || UapiError::at_line(n, "invalid character");
    if !raw.iter().all(|b| (0x20..=0x7e).contains(b)) {
        return Err(bad());
    }
    std::str::from_utf8(raw).map_err(|_| bad())
}

#[derive(Default)]
struct SetParser {
    req: SetRequest,
    seen: HashSet<[u8; 32]>,
}

impl SetParser {
    fn line(&mut self, n: usize, key: &str, value: &str) -> Result<(), UapiError> {
        // Messages name only the (known) key, never the value.
        let invalid = |name: &str| UapiError::at_line(n, &format!("invalid {name}"));
        match key {
            "public_key" => {
                let pk = key_from_hex(value).ok_or_else(|| invalid(key))?;
                if !self.seen.insert(pk) {
                    return Err(UapiError::at_line(n, "duplicate public_key"));
                }
                self.req.peers.push(PeerChange::new(pk));
            }
            "private_key" | "listen_port" | "fwmark" | "replace_peers" => {
                if !self.req.peers.is_empty() {
                    let what = format!("{key} is a device key and must precede any public_key");
                    return Err(UapiError::at_line(n, &what));
                }
                let d = &mut self.req;
                match key {
                    "private_key" => {
                        d.private_key = Some(parse_secret(value).ok_or_else(|| invalid(key))?)
                    }
                    "listen_port" => {
                        d.listen_port = Some(parse_u16(value).ok_or_else(|| invalid(key))?)
                    }
                    "fwmark" => d.fwmark = Some(parse_u32(value).ok_or_else(|| invalid(key))?),
                    _ => d.replace_peers = parse_true(value).ok_or_else(|| invalid(key))?,
                }
            }
            "preshared_key"
            | "endpoint"
            | "persistent_keepalive_interval"
            | "replace_allowed_ips"
            | "allowed_ip"
            | "update_only"
            | "remove"
            | "protocol_version" => {
                let Some(p) = self.req.peers.last_mut() else {
                    let what = format!("{key} is a peer key and must follow a public_key");
                    return Err(UapiError::at_line(n, &what));
                };
                match key {
                    "preshared_key" => {
                        p.preshared_key = Some(parse_secret(value).ok_or_else(|| invalid(key))?)
                    }
                    "endpoint" => {
                        p.endpoint = Some(parse_endpoint(value).ok_or_else(|| invalid(key))?)
                    }
                    "persistent_keepalive_interval" => {
                        p.persistent_keepalive = Some(parse_u16(value).ok_or_else(|| invalid(key))?)
                    }
                    "replace_allowed_ips" => {
                        p.replace_allowed_ips = parse_true(value).ok_or_else(|| invalid(key))?;
                        // Earlier entries would be wiped by the replace.
                        p.allowed_ips.clear();
                    }
                    "allowed_ip" => p
                        .allowed_ips
                        .push(parse_allowed_ip(value).ok_or_else(|| invalid(key))?),
                    "update_only" => {
                        p.update_only = parse_true(value).ok_or_else(|| invalid(key))?
                    }
                    "remove" => p.remove = parse_true(value).ok_or_else(|| invalid(key))?,
                    _ => {
                        if value != "1" {
                            return Err(UapiError::at_line(n, "unsupported protocol_version"));
                        }
                    }
                }
            }
            _ => return Err(UapiError::at_line(n, "unknown key")),
        }
        Ok(())
    }
}

/// Only the literal `true`: anything else most likely means the sender
/// expected a different meaning, so refusing is safer than guessing.
fn parse_true(s: &str) -> Option<bool> {
    (s == "true").then_some(true)
}

/// Plain decimal: digits only, no sign or spaces. Leading zeros are fine, as
/// with Go's `strconv.ParseUint` used by wireguard-go.
fn parse_dec(s: &str, max: u64) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    let mut v: u64 = 0;
    for b in s.bytes() {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
        if v > max {
            return None;
        }
    }
    Some(v)
}

fn parse_u16(s: &str) -> Option<u16> {
    parse_dec(s, u16::MAX.into()).and_then(|v| u16::try_from(v).ok())
}

fn parse_u32(s: &str) -> Option<u32> {
    parse_dec(s, u32::MAX.into()).and_then(|v| u32::try_from(v).ok())
}

/// Private or preshared key; all zeros means "remove".
fn parse_secret(s: &str) -> Option<Option<Key>> {
    // Decode straight into zeroizing storage so no stray copy stays behind.
    let mut k: Key = Zeroizing::new([0u8; 32]);
    if !hex_into(s, &mut k) {
        return None;
    }
    Some(if k.iter().all(|&b| b == 0) {
        None
    } else {
        Some(k)
    })
}

/// `a.b.c.d:port` or `[v6]:port`. A numeric IPv6 scope (`[fe80::1%2]:p`) is
/// accepted; interface-name scopes and hostnames are not, since resolving
/// them is the client's job.
fn parse_endpoint(s: &str) -> Option<SocketAddr> {
    if let Some(rest) = s.strip_prefix('[') {
        let (host, port) = rest.split_once("]:")?;
        let (addr, scope) = match host.split_once('%') {
            Some((a, z)) => (a, parse_u32(z)?),
            None => (host, 0),
        };
        let ip: Ipv6Addr = addr.parse().ok()?;
        Some(SocketAddr::V6(SocketAddrV6::new(
            ip,
            parse_u16(port)?,
            0,
            scope,
        )))
    } else {
        let (host, port) = s.split_once(':')?;
        let ip: Ipv4Addr = host.parse().ok()?;
        Some(SocketAddr::new(IpAddr::V4(ip), parse_u16(port)?))
    }
}

/// `[-]addr/cidr`; the prefix length is mandatory.
fn parse_allowed_ip(s: &str) -> Option<AllowedIpChange> {
    let (remove, s) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let (addr, cidr) = crate::proto::allowedips::parse_prefix(s)?;
    Some(AllowedIpChange { addr, cidr, remove })
}

fn hex_val(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Decodes exactly 64 hex digits into `out`; false (with `out` partly
/// written) otherwise.
fn hex_into(s: &str, out: &mut [u8; 32]) -> bool {
    let s = s.as_bytes();
    if s.len() != 64 {
        return false;
    }
    for (o, pair) in out.iter_mut().zip(s.chunks_exact(2)) {
        match (hex_val(pair[0]), hex_val(pair[1])) {
            (Some(hi), Some(lo)) => *o = (hi << 4) | lo,
            _ => return false,
        }
    }
    true
}

/// `out.reserve(additional)`, but a reallocation wipes the old allocation (earlier replies
/// in it may hold the private key) instead of freeing it as it is.
pub fn reserve_wiping(out: &mut Vec<u8>, additional: usize) {
    reserve_wiping_within(out, additional, usize::MAX);
}

/// [`reserve_wiping`] that doubles the capacity no further than `limit` (but always to what
/// is needed): a buffer bounded by `limit` never holds twice that.
pub fn reserve_wiping_within(out: &mut Vec<u8>, additional: usize, limit: usize) {
    if out.capacity() - out.len() < additional {
        let need = out.len() + additional;
        let mut grown = Vec::with_capacity(need.max(out.capacity().saturating_mul(2).min(limit)));
        grown.extend_from_slice(out);
        zeroize::Zeroize::zeroize(out); // the whole old capacity
        *out = grown;
    }
}

/// Lowercase hex of 32 bytes.
pub fn key_to_hex(k: &[u8; 32]) -> String {
    let mut v = Vec::with_capacity(64);
    push_hex(&mut v, k);
    // push_hex only emits ASCII.
    String::from_utf8(v).unwrap_or_default()
}

/// Parses exactly 64 hex digits, either case.
pub fn key_from_hex(s: &str) -> Option<[u8; 32]> {
    let mut k = [0u8; 32];
    hex_into(s, &mut k).then_some(k)
}

fn push_hex(out: &mut Vec<u8>, k: &[u8; 32]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for &b in k {
        out.push(DIGITS[usize::from(b >> 4)]);
        out.push(DIGITS[usize::from(b & 0xf)]);
    }
}

/// Hex is written straight into `out` (no temporary String), so a private
/// key's only copy in the reply is the one the caller already owns.
fn push_key_line(out: &mut Vec<u8>, name: &str, k: &[u8; 32]) {
    out.extend_from_slice(name.as_bytes());
    out.push(b'=');
    push_hex(out, k);
    out.push(b'\n');
}

fn push_line(out: &mut Vec<u8>, name: &str, value: impl fmt::Display) {
    // Writing to a Vec cannot fail.
    let _ = writeln!(out, "{name}={value}");
}

/// Appends the full `get=1` reply, ending with `errno=0\n\n`, in the order
/// wireguard-go emits it.
pub fn write_get_reply(out: &mut Vec<u8>, info: &DeviceInfo) {
    // Room for the whole reply before the private key goes in, so `out` is not reallocated
    // (which would free a copy of the key unwiped): a peer's lines stay under 512 bytes,
    // an allowed IP's under 64.
    let need = 256
        + info
            .peers
            .iter()
            .map(|p| 512 + 64 * p.allowed_ips.len())
            .sum::<usize>();
    reserve_wiping(out, need);
    if let Some(k) = &info.private_key {
        push_key_line(out, "private_key", k);
    }
    if info.listen_port != 0 {
        push_line(out, "listen_port", info.listen_port);
    }
    if info.fwmark != 0 {
        push_line(out, "fwmark", info.fwmark);
    }
    for p in &info.peers {
        push_key_line(out, "public_key", &p.public_key);
        push_key_line(
            out,
            "preshared_key",
            p.preshared_key.as_deref().unwrap_or(&[0u8; 32]),
        );
        push_line(out, "protocol_version", 1);
        if let Some(ep) = p.endpoint {
            // SocketAddr's Display brackets IPv6 (and shows a scope id).
            push_line(out, "endpoint", ep);
        }
        let (sec, nsec) = p.last_handshake.unwrap_or((0, 0));
        push_line(out, "last_handshake_time_sec", sec);
        push_line(out, "last_handshake_time_nsec", nsec);
        push_line(out, "tx_bytes", p.tx_bytes);
        push_line(out, "rx_bytes", p.rx_bytes);
        push_line(out, "persistent_keepalive_interval", p.persistent_keepalive);
        for (addr, cidr) in &p.allowed_ips {
            push_line(out, "allowed_ip", format_args!("{addr}/{cidr}"));
        }
    }
    write_errno(out, 0);
}

/// Appends the status line of a reply to a request that failed with `errno` (positive, as
/// in errno.h; 0 for success): `errno=-N\n\n`. wireguard-go sends the negated value and `wg`
/// negates it back before strerror, so a positive one printed "Unknown error -98" where
/// "Address already in use" was meant.
pub fn write_errno(out: &mut Vec<u8>, errno: i32) {
    push_line(out, "errno", errno.checked_neg().unwrap_or(errno));
    out.push(b'\n');
}

#[cfg(test)]
mod tests;
