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

pub mod options;

use options::{
    Kind, Parsed, SectionKind, Store, UciOption, DESCRIPTION_OPTION, PROTO_OPTION,
    PUBLIC_KEY_OPTION,
};

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

/// Overwrites the values of the secret options (`private_key`, `preshared_key`).
pub fn wipe_secrets(pkg: &mut Package) {
    for s in &mut pkg.sections {
        for (name, value) in &mut s.options {
            if options::is_secret(name) {
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
            || !matches!(s.get(PROTO_OPTION), Some(Value::Single(p)) if p == PROTO)
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
    let mut cfg = InterfaceConfig {
        name,
        private_key: KeySpec::Generate,
        listen_port: None,
        addresses: Vec::new(),
        mtu: None,
        fwmark: None,
        ip6prefix: Vec::new(),
        nohostroute: false,
        tunlink: None,
        peers: Vec::new(),
    };
    for o in options::of(SectionKind::Interface) {
        if let Store::Interface(set) = o.store {
            set(&mut cfg, value(ctx, s, o)?);
        }
    }
    Ok(cfg)
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
            peer_description: match s.get(DESCRIPTION_OPTION) {
                Some(Value::Single(d)) => Some(d.clone()),
                _ => None,
            },
            line: s.line,
        };
        match peer(&ctx, s) {
            Ok(p) => {
                if let Some(first) = out.iter().find(|o| o.public_key == p.public_key) {
                    errors.push(*ctx.opt_err(
                        PUBLIC_KEY_OPTION,
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
    let mut cfg = PeerConfig {
        section: s.display_name.clone(),
        public_key: [0; 32],
        preshared_key: None,
        allowed_ips: Vec::new(),
        route_allowed_ips: false,
        endpoint_host: None,
        endpoint_port: DEFAULT_ENDPOINT_PORT,
        persistent_keepalive: 0,
        description: None,
        disabled: false,
    };
    for o in options::of(SectionKind::Peer) {
        if let Store::Peer(set) = o.store {
            set(&mut cfg, value(ctx, s, o)?);
        }
    }
    Ok(cfg)
}

/// Option `o` of section `s`, parsed as its kind says; a bad value is an error naming it.
fn value(ctx: &Ctx, s: &Section, o: &UciOption) -> Result<Parsed> {
    let name = o.name;
    let bad = |v: &str, what: &str| ctx.opt_err(name, format!("'{v}' is not {what}"));
    Ok(match o.kind {
        Kind::Proto => Parsed::None,
        Kind::PrivateKey => Parsed::PrivateKey(match single(ctx, s, name)? {
            None | Some("") | Some("generate") => KeySpec::Generate,
            Some(_) => key_opt(ctx, s, name)?.map_or(KeySpec::Generate, KeySpec::Key),
        }),
        Kind::Key => Parsed::Key(key_opt(ctx, s, name)?),
        Kind::RequiredKey => match key_opt(ctx, s, name)? {
            Some(k) => Parsed::Key(Some(k)),
            None => return Err(ctx.opt_err(name, "missing")),
        },
        Kind::Int { min, max } => Parsed::Int(number_opt(ctx, s, name, min, max)?),
        Kind::Bool => Parsed::Bool(bool_opt(ctx, s, name)?),
        Kind::Prefixes => Parsed::Prefixes(prefixes(ctx, s, name, parse_prefix_or_host)?),
        Kind::Ip6Prefixes => Parsed::Ip6Prefixes(
            words(s, name)
                .into_iter()
                .map(|w| match parse_prefix(w) {
                    Some((IpAddr::V6(a), len)) => Ok((a, len)),
                    _ => Err(bad(w, "an IPv6 prefix (address/length)")),
                })
                .collect::<Result<Vec<_>>>()?,
        ),
        Kind::Mark => Parsed::Mark(match single(ctx, s, name)? {
            None => None,
            Some(v) => parse_fwmark(v)
                .ok_or_else(|| bad(v, "a mark (0x and up to 8 hex digits, or decimal)"))?,
        }),
        Kind::IfName => Parsed::Text(match single(ctx, s, name)? {
            None => None,
            Some(v) if uci_name(v) => Some(v.to_owned()),
            Some(v) => return Err(bad(v, "an interface name (letters, digits, _)")),
        }),
        Kind::Host => Parsed::Text(match single(ctx, s, name)? {
            None => None,
            Some(v) => Some(endpoint_host(v).ok_or_else(|| bad(v, "a host name or IP address"))?),
        }),
        Kind::Text => Parsed::Text(single(ctx, s, name)?.map(str::to_owned)),
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
mod tests;
