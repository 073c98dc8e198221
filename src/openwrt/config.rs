//! solowg's configuration as OpenWrt keeps it in `/etc/config/network`.
//!
//! Every `config interface 'NAME'` with `option proto 'solowg'` is a tunnel. It takes the
//! options of the kernel WireGuard schema (`private_key`, `listen_port`, `addresses`, `mtu`,
//! `fwmark`, `ip6prefix`, `nohostroute`, `tunlink`); netifd's generic options (`auto`,
//! `metric`, `dns`, ...) are netifd's business and ignored here. Its peers are the sections of
//! type `solowg_NAME` and also `wireguard_NAME`, so a kernel WireGuard interface moves over by
//! changing only its `proto`.
//!
//! Errors never stop the whole load. A bad interface option drops that interface (and its
//! peers); a bad peer option drops that peer; syntax errors drop the line, as libuci does. Each
//! error names the UCI section and option, e.g.
//! `network.@solowg_wg0[2] (peer 'laptop'): public_key: not a valid base64 key`. Values of
//! secret options are never echoed, and the types holding keys redact them in `Debug`.

use std::fmt;
use std::net::{IpAddr, Ipv6Addr};

use zeroize::{Zeroize, Zeroizing};

use crate::openwrt::uci::{self, Package, Section, Value};
use crate::proto::allowedips::{parse_prefix, parse_prefix_or_host};
use crate::proto::peer::key_from_base64_into;
use crate::proto::uapi::Key;

/// The `proto` value that makes an interface ours.
pub const PROTO: &str = "solowg";
/// Default `endpoint_port`, as in OpenWrt's WireGuard handlers.
pub const DEFAULT_ENDPOINT_PORT: u16 = 51820;
/// Longest Linux interface name (IFNAMSIZ - 1); the section name is the netdev name.
pub const MAX_IFNAME_LEN: usize = 15;

/// Where the private key comes from.
pub enum KeySpec {
    Key(Key),
    /// `private_key` missing, empty or `generate`: create one (and save it).
    Generate,
}

impl fmt::Debug for KeySpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeySpec::Key(_) => f.write_str("Key(<redacted>)"),
            KeySpec::Generate => f.write_str("Generate"),
        }
    }
}

/// One `config interface` with `proto 'solowg'`.
pub struct InterfaceConfig {
    /// Section name, also the network device name.
    pub name: String,
    pub private_key: KeySpec,
    /// `None`: random port.
    pub listen_port: Option<u16>,
    /// Tunnel addresses; a bare address is /32 or /128.
    pub addresses: Vec<(IpAddr, u8)>,
    pub mtu: Option<u32>,
    /// Mark for outgoing encrypted packets; `None` when unset, `0` or `off`.
    pub fwmark: Option<u32>,
    /// IPv6 prefixes routed to the interface (for delegation).
    pub ip6prefix: Vec<(Ipv6Addr, u8)>,
    pub nohostroute: bool,
    /// Logical uplink interface for the endpoint host routes.
    pub tunlink: Option<String>,
    /// In file order; disabled peers included (see [`PeerConfig::disabled`]).
    pub peers: Vec<PeerConfig>,
}

/// One `config solowg_IFNAME` (or `wireguard_IFNAME`) section.
pub struct PeerConfig {
    /// How `uci show` names the section: `@solowg_wg0[2]` or its name.
    pub section: String,
    pub public_key: [u8; 32],
    pub preshared_key: Option<Key>,
    pub allowed_ips: Vec<(IpAddr, u8)>,
    pub route_allowed_ips: bool,
    /// Host name or address; an IPv6 address without brackets.
    pub endpoint_host: Option<String>,
    pub endpoint_port: u16,
    /// Seconds; 0 is off.
    pub persistent_keepalive: u16,
    pub description: Option<String>,
    pub disabled: bool,
}

struct Redacted;

impl fmt::Debug for Redacted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl fmt::Debug for InterfaceConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InterfaceConfig")
            .field("name", &self.name)
            .field("private_key", &self.private_key)
            .field("listen_port", &self.listen_port)
            .field("addresses", &self.addresses)
            .field("mtu", &self.mtu)
            .field("fwmark", &self.fwmark)
            .field("ip6prefix", &self.ip6prefix)
            .field("nohostroute", &self.nohostroute)
            .field("tunlink", &self.tunlink)
            .field("peers", &self.peers)
            .finish()
    }
}

impl fmt::Debug for PeerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PeerConfig")
            .field("section", &self.section)
            .field("public_key", &crate::proto::peer::base64(&self.public_key))
            .field(
                "preshared_key",
                &self.preshared_key.as_ref().map(|_| Redacted),
            )
            .field("allowed_ips", &self.allowed_ips)
            .field("route_allowed_ips", &self.route_allowed_ips)
            .field("endpoint_host", &self.endpoint_host)
            .field("endpoint_port", &self.endpoint_port)
            .field("persistent_keepalive", &self.persistent_keepalive)
            .field("description", &self.description)
            .field("disabled", &self.disabled)
            .finish()
    }
}

/// What an error made the loader drop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorScope {
    /// A line of the file (libuci syntax error); the rest of the file was read.
    Line,
    /// The interface and its peers.
    Interface,
    /// One peer.
    Peer,
}

/// A problem in the configuration, named the way `uci` names things.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub scope: ErrorScope,
    /// `network.wg0`, `network.@solowg_wg0[2]`; the package name alone for a syntax error.
    pub location: String,
    /// The interface the error belongs to, if known.
    pub interface: Option<String>,
    /// For a peer, its `description`, shown as `(peer 'laptop')`.
    pub peer_description: Option<String>,
    pub option: Option<String>,
    pub message: String,
    /// 1-based line in the file: the bad line, or the `config` line of the section.
    pub line: usize,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.location)?;
        if let Some(d) = &self.peer_description {
            write!(f, " (peer '{d}')")?;
        }
        f.write_str(": ")?;
        if let Some(o) = &self.option {
            write!(f, "{o}: ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConfigError {}

/// Everything read from one file.
#[derive(Debug, Default)]
pub struct NetworkConfig {
    /// Interfaces that loaded, in file order.
    pub interfaces: Vec<InterfaceConfig>,
    /// Names of `proto 'solowg'` interfaces dropped because of an error.
    pub failed_interfaces: Vec<String>,
    pub errors: Vec<ConfigError>,
}

impl NetworkConfig {
    pub fn interface(&self, name: &str) -> Option<&InterfaceConfig> {
        self.interfaces.iter().find(|i| i.name == name)
    }
}

/// Reads the text of `/etc/config/network`. Secret option values are wiped from the
/// intermediate parse before it is dropped.
pub fn parse_network(text: &str) -> NetworkConfig {
    let (mut pkg, syntax) = uci::parse(text);
    let mut cfg = from_package(&pkg, "network");
    let mut errors: Vec<ConfigError> = syntax
        .into_iter()
        .map(|e| ConfigError {
            scope: ErrorScope::Line,
            location: "network".into(),
            interface: None,
            peer_description: None,
            option: None,
            message: e.to_string(),
            line: e.line,
        })
        .collect();
    errors.append(&mut cfg.errors);
    cfg.errors = errors;
    wipe_secrets(&mut pkg);
    cfg
}

/// Overwrites the values of `private_key` and `preshared_key` options.
pub fn wipe_secrets(pkg: &mut Package) {
    for s in &mut pkg.sections {
        for (name, value) in &mut s.options {
            if name == "private_key" || name == "preshared_key" {
                match value {
                    Value::Single(v) => v.zeroize(),
                    Value::List(l) => l.iter_mut().for_each(|v| v.zeroize()),
                }
            }
        }
    }
}

/// The solowg interfaces of a parsed package (`package` is its name, for error messages).
/// The returned errors are about options; syntax errors come from [`uci::parse`].
pub fn from_package(pkg: &Package, package: &str) -> NetworkConfig {
    let mut out = NetworkConfig::default();
    for s in &pkg.sections {
        if s.section_type != "interface"
            || !matches!(s.get("proto"), Some(Value::Single(p)) if p == PROTO)
        {
            continue;
        }
        let ctx = Ctx::interface(package, s);
        match interface(&ctx, s) {
            Ok(mut iface) => {
                iface.peers = peers(pkg, package, &iface.name, &mut out.errors);
                out.interfaces.push(iface);
            }
            Err(e) => {
                out.failed_interfaces.push(s.display_name.clone());
                out.errors.push(*e);
            }
        }
    }
    out
}

/// Names the section in errors.
struct Ctx {
    scope: ErrorScope,
    location: String,
    interface: Option<String>,
    peer_description: Option<String>,
    line: usize,
}

impl Ctx {
    fn interface(package: &str, s: &Section) -> Self {
        Ctx {
            scope: ErrorScope::Interface,
            location: format!("{package}.{}", s.display_name),
            interface: s.name.clone(),
            peer_description: None,
            line: s.line,
        }
    }

    fn err(&self, option: Option<&str>, message: impl Into<String>) -> Box<ConfigError> {
        Box::new(ConfigError {
            scope: self.scope,
            location: self.location.clone(),
            interface: self.interface.clone(),
            peer_description: self.peer_description.clone(),
            option: option.map(str::to_owned),
            message: message.into(),
            line: self.line,
        })
    }

    fn opt_err(&self, option: &str, message: impl Into<String>) -> Box<ConfigError> {
        self.err(Some(option), message)
    }
}

/// Boxed: the error is large and the happy path should not pay for it.
type Result<T> = std::result::Result<T, Box<ConfigError>>;

/// A single-valued option; a list there is an error.
fn single<'a>(ctx: &Ctx, s: &'a Section, name: &str) -> Result<Option<&'a str>> {
    match s.get(name) {
        None => Ok(None),
        Some(Value::Single(v)) => Ok(Some(v)),
        Some(Value::List(_)) => Err(ctx.opt_err(name, "is a list; expected a single option")),
    }
}

/// Items of an option or list, each split on whitespace (as the shell handlers' `for x in $v`).
fn words<'a>(s: &'a Section, name: &str) -> Vec<&'a str> {
    s.get(name)
        .map(|v| {
            v.items()
                .iter()
                .flat_map(|i| i.split_ascii_whitespace())
                .collect()
        })
        .unwrap_or_default()
}

/// UCI booleans as `config_get_bool` reads them.
pub fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "yes" | "on" | "true" | "enabled" => Some(true),
        "0" | "no" | "off" | "false" | "disabled" => Some(false),
        _ => None,
    }
}

fn bool_opt(ctx: &Ctx, s: &Section, name: &str) -> Result<bool> {
    match single(ctx, s, name)? {
        None => Ok(false),
        Some(v) => parse_bool(v).ok_or_else(|| {
            ctx.opt_err(
                name,
                format!(
                    "'{v}' is not a boolean (1/0, yes/no, on/off, true/false, enabled/disabled)"
                ),
            )
        }),
    }
}

/// Plain decimal, at most `max`.
fn parse_dec(s: &str, max: u64) -> Option<u64> {
    if s.is_empty() || s.len() > 20 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<u64>().ok().filter(|&v| v <= max)
}

fn number_opt(ctx: &Ctx, s: &Section, name: &str, min: u64, max: u64) -> Result<Option<u64>> {
    let Some(v) = single(ctx, s, name)? else {
        return Ok(None);
    };
    match parse_dec(v, max) {
        Some(n) if n >= min => Ok(Some(n)),
        _ => Err(ctx.opt_err(name, format!("'{v}' is not a number from {min} to {max}"))),
    }
}

/// `fwmark`: `0x` and hex digits, or decimal; `off` and 0 mean none.
pub fn parse_fwmark(s: &str) -> Option<Option<u32>> {
    if s == "off" {
        return Some(None);
    }
    let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => {
            if hex.is_empty() || hex.len() > 8 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            u32::from_str_radix(hex, 16).ok()?
        }
        None => u32::try_from(parse_dec(s, u32::MAX.into())?).ok()?,
    };
    Some((v != 0).then_some(v))
}

/// A base64 key option decoded straight into zeroizing storage. The value is never echoed.
fn key_opt(ctx: &Ctx, s: &Section, name: &str) -> Result<Option<Key>> {
    let Some(v) = single(ctx, s, name)? else {
        return Ok(None);
    };
    let mut k: Key = Zeroizing::new([0; 32]);
    if key_from_base64_into(v, &mut k) {
        Ok(Some(k))
    } else {
        Err(ctx.opt_err(
            name,
            "not a valid base64 key (44 characters ending in '=', as `wg genkey` prints)",
        ))
    }
}

fn prefixes(
    ctx: &Ctx,
    s: &Section,
    name: &str,
    parse: fn(&str) -> Option<(IpAddr, u8)>,
) -> Result<Vec<(IpAddr, u8)>> {
    words(s, name)
        .into_iter()
        .map(|w| {
            parse(w).ok_or_else(|| {
                ctx.opt_err(
                    name,
                    format!("'{w}' is not an IPv4 or IPv6 address with an optional /prefix length"),
                )
            })
        })
        .collect()
}

fn interface(ctx: &Ctx, s: &Section) -> Result<InterfaceConfig> {
    let Some(name) = s.name.clone() else {
        return Err(ctx.err(
            None,
            "an anonymous interface section cannot be a tunnel: give it a name (the device name)",
        ));
    };
    if name.len() > MAX_IFNAME_LEN {
        return Err(ctx.err(
            None,
            format!(
                "interface name is longer than {MAX_IFNAME_LEN} characters (it is the device name)"
            ),
        ));
    }
    let private_key = match single(ctx, s, "private_key")? {
        None | Some("") | Some("generate") => KeySpec::Generate,
        Some(_) => match key_opt(ctx, s, "private_key")? {
            Some(k) => KeySpec::Key(k),
            None => KeySpec::Generate,
        },
    };
    let listen_port = number_opt(ctx, s, "listen_port", 0, 65535)?.map(|v| v as u16);
    let addresses = prefixes(ctx, s, "addresses", parse_prefix_or_host)?;
    let mtu = number_opt(ctx, s, "mtu", 68, 65535)?.map(|v| v as u32);
    let fwmark = match single(ctx, s, "fwmark")? {
        None => None,
        Some(v) => parse_fwmark(v).ok_or_else(|| {
            ctx.opt_err(
                "fwmark",
                format!("'{v}' is not a mark (0x and up to 8 hex digits, or decimal)"),
            )
        })?,
    };
    let ip6prefix = words(s, "ip6prefix")
        .into_iter()
        .map(|w| match parse_prefix(w) {
            Some((IpAddr::V6(a), len)) => Ok((a, len)),
            _ => Err(ctx.opt_err(
                "ip6prefix",
                format!("'{w}' is not an IPv6 prefix (address/length)"),
            )),
        })
        .collect::<Result<Vec<_>>>()?;
    let nohostroute = bool_opt(ctx, s, "nohostroute")?;
    let tunlink = match single(ctx, s, "tunlink")? {
        None => None,
        Some(v) if uci_name(v) => Some(v.to_owned()),
        Some(v) => {
            return Err(ctx.opt_err(
                "tunlink",
                format!("'{v}' is not an interface name (letters, digits, _)"),
            ))
        }
    };
    Ok(InterfaceConfig {
        name,
        private_key,
        listen_port,
        addresses,
        mtu,
        fwmark,
        ip6prefix,
        nohostroute,
        tunlink,
        peers: Vec::new(),
    })
}

fn uci_name(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

/// The peers of interface `ifname`, in file order; bad ones go to `errors`.
fn peers(
    pkg: &Package,
    package: &str,
    ifname: &str,
    errors: &mut Vec<ConfigError>,
) -> Vec<PeerConfig> {
    let ours = format!("solowg_{ifname}");
    let kernel = format!("wireguard_{ifname}");
    let mut out: Vec<PeerConfig> = Vec::new();
    for s in &pkg.sections {
        if s.section_type != ours && s.section_type != kernel {
            continue;
        }
        let ctx = Ctx {
            scope: ErrorScope::Peer,
            location: format!("{package}.{}", s.display_name),
            interface: Some(ifname.to_owned()),
            // Only a plain description is shown; a list is itself an error below.
            peer_description: match s.get("description") {
                Some(Value::Single(d)) => Some(d.clone()),
                _ => None,
            },
            line: s.line,
        };
        match peer(&ctx, s) {
            Ok(p) => {
                if let Some(first) = out.iter().find(|o| o.public_key == p.public_key) {
                    errors.push(*ctx.opt_err(
                        "public_key",
                        format!("the same key as {package}.{}", first.section),
                    ));
                } else {
                    out.push(p);
                }
            }
            Err(e) => errors.push(*e),
        }
    }
    out
}

fn peer(ctx: &Ctx, s: &Section) -> Result<PeerConfig> {
    let public_key = match key_opt(ctx, s, "public_key")? {
        Some(k) => *k,
        None => return Err(ctx.opt_err("public_key", "missing")),
    };
    let preshared_key = key_opt(ctx, s, "preshared_key")?;
    let allowed_ips = prefixes(ctx, s, "allowed_ips", parse_prefix_or_host)?;
    let route_allowed_ips = bool_opt(ctx, s, "route_allowed_ips")?;
    let endpoint_host = match single(ctx, s, "endpoint_host")? {
        None => None,
        Some(v) => Some(endpoint_host(v).ok_or_else(|| {
            ctx.opt_err(
                "endpoint_host",
                format!("'{v}' is not a host name or IP address"),
            )
        })?),
    };
    let endpoint_port =
        number_opt(ctx, s, "endpoint_port", 1, 65535)?.map_or(DEFAULT_ENDPOINT_PORT, |v| v as u16);
    let persistent_keepalive =
        number_opt(ctx, s, "persistent_keepalive", 0, 65535)?.map_or(0, |v| v as u16);
    let description = single(ctx, s, "description")?.map(str::to_owned);
    let disabled = bool_opt(ctx, s, "disabled")?;
    Ok(PeerConfig {
        section: s.display_name.clone(),
        public_key,
        preshared_key,
        allowed_ips,
        route_allowed_ips,
        endpoint_host,
        endpoint_port,
        persistent_keepalive,
        description,
        disabled,
    })
}

/// A host name or an address; brackets around an IPv6 address are dropped.
fn endpoint_host(v: &str) -> Option<String> {
    let v = match v.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
        Some(inner) => {
            inner.parse::<Ipv6Addr>().ok()?;
            inner
        }
        None => v,
    };
    if v.parse::<IpAddr>().is_ok() {
        return Some(v.to_owned());
    }
    // A DNS name: labels of letters, digits, '-' and '_' (seen in the wild), dot-separated,
    // an optional final dot.
    let name = v.strip_suffix('.').unwrap_or(v);
    let ok = !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes()
                    .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
        });
    ok.then(|| v.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::peer::base64;

    fn key(n: u8) -> String {
        base64(&[n; 32])
    }

    fn errors(cfg: &NetworkConfig) -> Vec<String> {
        cfg.errors.iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn full_interface_and_peers() {
        let text = format!(
            concat!(
                "config interface 'lan'\n\toption proto 'static'\n\n",
                "config interface 'wg0'\n",
                "\toption proto 'solowg'\n",
                "\toption private_key '{k1}'\n",
                "\toption listen_port '51820'\n",
                "\tlist addresses '10.9.0.1/24'\n",
                "\tlist addresses 'fd00:9::1'\n",
                "\toption mtu '1420'\n",
                "\toption fwmark '0x51'\n",
                "\tlist ip6prefix 'fd00:10::/48'\n",
                "\toption nohostroute 'yes'\n",
                "\toption tunlink 'wan'\n\n",
                "config solowg_wg0\n",
                "\toption description 'laptop'\n",
                "\toption public_key '{k2}'\n",
                "\toption preshared_key '{k3}'\n",
                "\tlist allowed_ips '10.9.0.2/32'\n",
                "\tlist allowed_ips 'fd00:9::2'\n",
                "\toption route_allowed_ips 'on'\n",
                "\toption endpoint_host 'vpn.example.org'\n",
                "\toption endpoint_port '4500'\n",
                "\toption persistent_keepalive '25'\n\n",
                "config wireguard_wg0 'phone'\n",
                "\toption public_key '{k4}'\n",
                "\toption allowed_ips '10.9.0.3 10.9.0.4/32'\n",
                "\toption endpoint_host '[2001:db8::1]'\n",
                "\toption disabled 'enabled'\n",
                "config wireguard_wg1\n\toption public_key 'ignored: not ours'\n",
            ),
            k1 = key(1),
            k2 = key(2),
            k3 = key(3),
            k4 = key(4)
        );
        let cfg = parse_network(&text);
        assert!(cfg.errors.is_empty(), "{:?}", errors(&cfg));
        assert_eq!(cfg.interfaces.len(), 1);
        let i = cfg.interface("wg0").unwrap();
        assert!(matches!(&i.private_key, KeySpec::Key(k) if **k == [1; 32]));
        assert_eq!(i.listen_port, Some(51820));
        assert_eq!(
            i.addresses,
            [
                ("10.9.0.1".parse().unwrap(), 24),
                ("fd00:9::1".parse().unwrap(), 128)
            ]
        );
        assert_eq!(i.mtu, Some(1420));
        assert_eq!(i.fwmark, Some(0x51));
        assert_eq!(i.ip6prefix, [("fd00:10::".parse().unwrap(), 48)]);
        assert!(i.nohostroute);
        assert_eq!(i.tunlink.as_deref(), Some("wan"));
        assert_eq!(i.peers.len(), 2);
        let p = &i.peers[0];
        assert_eq!(p.section, "@solowg_wg0[0]");
        assert_eq!(p.public_key, [2; 32]);
        assert_eq!(p.preshared_key.as_deref(), Some(&[3; 32]));
        assert_eq!(p.allowed_ips.len(), 2);
        assert_eq!(p.allowed_ips[1], ("fd00:9::2".parse().unwrap(), 128));
        assert!(p.route_allowed_ips);
        assert_eq!(p.endpoint_host.as_deref(), Some("vpn.example.org"));
        assert_eq!(p.endpoint_port, 4500);
        assert_eq!(p.persistent_keepalive, 25);
        assert_eq!(p.description.as_deref(), Some("laptop"));
        assert!(!p.disabled);
        let q = &i.peers[1];
        assert_eq!(q.section, "phone");
        assert_eq!(
            q.allowed_ips,
            [
                ("10.9.0.3".parse().unwrap(), 32),
                ("10.9.0.4".parse().unwrap(), 32)
            ]
        );
        assert_eq!(q.endpoint_host.as_deref(), Some("2001:db8::1"));
        assert_eq!(q.endpoint_port, DEFAULT_ENDPOINT_PORT);
        assert!(q.disabled);
        assert!(q.preshared_key.is_none());
    }

    #[test]
    fn defaults_and_generate() {
        for pk in [
            "",
            "\toption private_key 'generate'\n",
            "\toption private_key ''\n",
        ] {
            let cfg = parse_network(&format!(
                "config interface 'wg0'\n\toption proto 'solowg'\n{pk}"
            ));
            assert!(cfg.errors.is_empty());
            let i = &cfg.interfaces[0];
            assert!(matches!(i.private_key, KeySpec::Generate));
            assert_eq!(i.listen_port, None);
            assert!(i.addresses.is_empty() && i.peers.is_empty() && !i.nohostroute);
            assert_eq!((i.mtu, i.fwmark, i.tunlink.as_deref()), (None, None, None));
        }
    }

    #[test]
    fn values() {
        assert_eq!(parse_fwmark("0x51"), Some(Some(0x51)));
        assert_eq!(parse_fwmark("0XfFfFfFfF"), Some(Some(u32::MAX)));
        assert_eq!(parse_fwmark("81"), Some(Some(81)));
        assert_eq!(parse_fwmark("0"), Some(None));
        assert_eq!(parse_fwmark("off"), Some(None));
        for bad in ["", "0x", "0x123456789", "-1", "4294967296", "0x1g", " 1"] {
            assert_eq!(parse_fwmark(bad), None, "{bad}");
        }
        for t in ["1", "yes", "on", "true", "enabled"] {
            assert_eq!(parse_bool(t), Some(true));
        }
        for f in ["0", "no", "off", "false", "disabled"] {
            assert_eq!(parse_bool(f), Some(false));
        }
        assert_eq!(parse_bool("2"), None);
        assert_eq!(parse_bool("Yes"), None);
        assert_eq!(
            endpoint_host("a.b-c_d.example.").as_deref(),
            Some("a.b-c_d.example.")
        );
        assert_eq!(endpoint_host("10.0.0.1").as_deref(), Some("10.0.0.1"));
        for bad in ["", "a..b", "a b", "[10.0.0.1]", "[::1", "host:51820", "x/y"] {
            assert_eq!(endpoint_host(bad), None, "{bad}");
        }
    }

    #[test]
    fn bad_peer_is_skipped_and_named() {
        let text = format!(
            concat!(
                "config interface 'wg0'\n\toption proto 'solowg'\n",
                "config solowg_wg0\n\toption public_key '{k2}'\n",
                "config solowg_wg0\n\toption public_key 'nope'\n\toption description 'laptop'\n",
                "config solowg_wg0\n\toption public_key '{k3}'\n\tlist allowed_ips '10.0.0.0/33'\n",
                "config solowg_wg0\n\toption description 'no key'\n",
                "config wireguard_wg0 'dup'\n\toption public_key '{k2}'\n",
                "config solowg_wg0\n\toption public_key '{k4}'\n\toption endpoint_port '0'\n",
                "config solowg_wg0\n\toption public_key '{k4}'\n\toption persistent_keepalive '65536'\n",
                "config solowg_wg0\n\toption public_key '{k4}'\n\tlist description 'a'\n",
                "config solowg_wg0\n\toption public_key '{k4}'\n\toption route_allowed_ips 'maybe'\n",
                "config solowg_wg0\n\toption public_key '{k4}'\n\toption preshared_key 'secretvalue'\n",
                "config solowg_wg0\n\toption public_key '{k5}'\n",
            ),
            k2 = key(2),
            k3 = key(3),
            k4 = key(4),
            k5 = key(5),
        );
        let cfg = parse_network(&text);
        let peers: Vec<_> = cfg.interfaces[0]
            .peers
            .iter()
            .map(|p| p.section.as_str())
            .collect();
        assert_eq!(peers, ["@solowg_wg0[0]", "@solowg_wg0[9]"]);
        assert_eq!(
            errors(&cfg),
            [
                "network.@solowg_wg0[1] (peer 'laptop'): public_key: not a valid base64 key (44 characters ending in '=', as `wg genkey` prints)",
                "network.@solowg_wg0[2]: allowed_ips: '10.0.0.0/33' is not an IPv4 or IPv6 address with an optional /prefix length",
                "network.@solowg_wg0[3] (peer 'no key'): public_key: missing",
                "network.dup: public_key: the same key as network.@solowg_wg0[0]",
                "network.@solowg_wg0[4]: endpoint_port: '0' is not a number from 1 to 65535",
                "network.@solowg_wg0[5]: persistent_keepalive: '65536' is not a number from 0 to 65535",
                "network.@solowg_wg0[6]: description: is a list; expected a single option",
                "network.@solowg_wg0[7]: route_allowed_ips: 'maybe' is not a boolean (1/0, yes/no, on/off, true/false, enabled/disabled)",
                "network.@solowg_wg0[8]: preshared_key: not a valid base64 key (44 characters ending in '=', as `wg genkey` prints)",
            ]
        );
        assert!(cfg.errors.iter().all(|e| e.scope == ErrorScope::Peer));
        assert_eq!(cfg.errors[0].line, 5);
        assert_eq!(cfg.errors[0].interface.as_deref(), Some("wg0"));
        assert!(!errors(&cfg).iter().any(|e| e.contains("secretvalue")));
    }

    #[test]
    fn bad_interface_option_drops_the_interface_only() {
        let cases = [
            ("option private_key 'x'", "private_key: not a valid base64 key (44 characters ending in '=', as `wg genkey` prints)"),
            ("option listen_port '65536'", "listen_port: '65536' is not a number from 0 to 65535"),
            ("list addresses '10.0.0.1/24 10.0.0'", "addresses: '10.0.0' is not an IPv4 or IPv6 address with an optional /prefix length"),
            ("option mtu 'big'", "mtu: 'big' is not a number from 68 to 65535"),
            ("option fwmark '0xZ'", "fwmark: '0xZ' is not a mark (0x and up to 8 hex digits, or decimal)"),
            ("option ip6prefix '10.0.0.0/8'", "ip6prefix: '10.0.0.0/8' is not an IPv6 prefix (address/length)"),
            ("option nohostroute '2'", "nohostroute: '2' is not a boolean (1/0, yes/no, on/off, true/false, enabled/disabled)"),
            ("option tunlink 'wan-x'", "tunlink: 'wan-x' is not an interface name (letters, digits, _)"),
            ("list private_key 'generate'", "private_key: is a list; expected a single option"),
        ];
        for (line, msg) in cases {
            let text = format!(
                "config interface 'wg0'\n\toption proto 'solowg'\n\t{line}\nconfig solowg_wg0\n\toption public_key '{}'\nconfig interface 'wg1'\n\toption proto 'solowg'\n",
                key(2)
            );
            let cfg = parse_network(&text);
            assert_eq!(errors(&cfg), [format!("network.wg0: {msg}")], "{line}");
            assert_eq!(cfg.errors[0].scope, ErrorScope::Interface);
            assert_eq!(cfg.failed_interfaces, ["wg0"]);
            assert_eq!(cfg.interfaces.len(), 1);
            assert_eq!(cfg.interfaces[0].name, "wg1");
        }
        let cfg = parse_network("config interface\n\toption proto solowg\nconfig interface 'abcdefghijklmnop'\n\toption proto solowg\n");
        assert_eq!(
            errors(&cfg),
            [
                "network.@interface[0]: an anonymous interface section cannot be a tunnel: give it a name (the device name)",
                "network.abcdefghijklmnop: interface name is longer than 15 characters (it is the device name)",
            ]
        );
    }

    #[test]
    fn syntax_errors_are_reported_and_the_rest_loads() {
        let text = format!(
            "config interface 'wg0'\n\toption proto 'solowg'\n\toptions mtu 1\nconfig solowg_wg0\n\toption public_key '{}'\n",
            key(2)
        );
        let cfg = parse_network(&text);
        assert_eq!(
            errors(&cfg),
            ["network: Parse error (invalid command) at line 3, byte 1"]
        );
        assert_eq!(cfg.errors[0].scope, ErrorScope::Line);
        assert_eq!(cfg.interfaces[0].peers.len(), 1);
    }

    #[test]
    fn debug_never_shows_secrets() {
        let text = format!(
            "config interface 'wg0'\n\toption proto 'solowg'\n\toption private_key '{}'\nconfig solowg_wg0\n\toption public_key '{}'\n\toption preshared_key '{}'\n",
            key(0x11),
            key(0x22),
            key(0x33)
        );
        let cfg = parse_network(&text);
        let dbg = format!("{cfg:?}");
        assert!(
            dbg.contains("Key(<redacted>)") && dbg.contains("<redacted>"),
            "{dbg}"
        );
        assert!(!dbg.contains(&key(0x11)) && !dbg.contains(&key(0x33)));
        assert!(!dbg.contains("17, 17") && !dbg.contains("51, 51"));
        assert!(dbg.contains(&key(0x22)), "public keys are shown");
    }

    #[test]
    fn wipe_secrets_clears_key_options() {
        let (mut pkg, _) = uci::parse("config solowg_wg0\n\toption private_key 'k'\n\tlist preshared_key 'p'\n\toption public_key 'x'\n");
        wipe_secrets(&mut pkg);
        let s = &pkg.sections[0];
        assert_eq!(s.get("private_key"), Some(&Value::Single(String::new())));
        assert_eq!(
            s.get("preshared_key"),
            Some(&Value::List(vec![String::new()]))
        );
        assert_eq!(s.get("public_key"), Some(&Value::Single("x".into())));
    }
}
