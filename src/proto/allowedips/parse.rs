//! Prefixes as text: `addr/len`, and OpenWrt's bare host addresses.

use std::net::IpAddr;

/// `addr/len` with a mandatory prefix length, which is plain decimal without leading zeros (as
/// Go's `netip.ParsePrefix` wants) and at most 32 or 128. Host bits may be set.
pub fn parse_prefix(s: &str) -> Option<(IpAddr, u8)> {
    let (addr, len) = s.split_once('/')?;
    let addr: IpAddr = addr.parse().ok()?;
    let max: u8 = if addr.is_ipv4() { 32 } else { 128 };
    if len.is_empty() || len.len() > 3 || (len.len() > 1 && len.starts_with('0')) {
        return None;
    }
    if !len.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let len: u8 = len.parse().ok()?;
    (len <= max).then_some((addr, len))
}

/// [`parse_prefix`], except that a bare address is a host prefix (/32 or /128), as OpenWrt's
/// WireGuard handlers read `addresses` and `allowed_ips`.
pub fn parse_prefix_or_host(s: &str) -> Option<(IpAddr, u8)> {
    if s.contains('/') {
        return parse_prefix(s);
    }
    let addr: IpAddr = s.parse().ok()?;
    Some((addr, if addr.is_ipv4() { 32 } else { 128 }))
}
