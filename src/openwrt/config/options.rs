//! The UCI options solowg defines, one entry each: the parser reads them from this table, and
//! `tests/surface.rs` holds netifd's handler, LuCI's forms and docs/openwrt.md to it.
//!
//! An entry's place in its section's list is the order the parser checks options in (the
//! first bad one is the one reported). `default` is written as docs/openwrt.md shows it.

use super::{InterfaceConfig, PeerConfig};
use crate::proto::uapi::Key;
use std::net::{IpAddr, Ipv6Addr};

/// The option that makes an interface ours (`option proto 'solowg'`).
pub const PROTO_OPTION: &str = "proto";
/// The peer option shown with a peer's errors and in `status`.
pub const DESCRIPTION_OPTION: &str = "description";
/// The peer option that identifies a peer (no two peers of an interface share it).
pub const PUBLIC_KEY_OPTION: &str = "public_key";

/// Which UCI section an option belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SectionKind {
    /// `config interface '<name>'` with `option proto 'solowg'`.
    Interface,
    /// `config solowg_<if>` or `config wireguard_<if>`.
    Peer,
}

/// What an option holds, and so how it is parsed and which error a bad value gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The value `solowg`; it selects the sections the rest applies to.
    Proto,
    /// A base64 key, or missing, empty or `generate` for one to be made.
    PrivateKey,
    /// An optional base64 key.
    Key,
    /// A base64 key without which the section is dropped.
    RequiredKey,
    /// A decimal number in `min..=max`.
    Int { min: u64, max: u64 },
    /// A boolean as `config_get_bool` reads it.
    Bool,
    /// A list of `IP[/len]`, items also separated by spaces.
    Prefixes,
    /// A list of IPv6 `prefix/len`.
    Ip6Prefixes,
    /// A packet mark: `0x` and hex digits, or decimal; `0` and `off` mean none.
    Mark,
    /// A logical interface name (letters, digits, `_`).
    IfName,
    /// A host name or an IP address (an IPv6 one in brackets or not).
    Host,
    /// Free text.
    Text,
}

// What the files that repeat the table are checked against (tests/surface.rs).
#[cfg(feature = "internals")]
impl Kind {
    /// How docs/openwrt.md's type column begins for this kind.
    pub fn doc_type(self) -> String {
        match self {
            Kind::Proto => "`solowg`".into(),
            Kind::PrivateKey | Kind::Key | Kind::RequiredKey => "base64 key".into(),
            Kind::Int { min, max } => format!("integer {min}–{max}"),
            Kind::Bool => "boolean".into(),
            Kind::Prefixes => "list of `IP[/len]`".into(),
            Kind::Ip6Prefixes => "list of IPv6 `prefix/len`".into(),
            Kind::Mark => "`0x` plus 1–8 hex digits, or decimal".into(),
            Kind::IfName => "logical interface name".into(),
            Kind::Host => "IPv4, IPv6 (brackets optional) or DNS name".into(),
            Kind::Text => "string".into(),
        }
    }

    /// The `proto_config_add_*` type netifd's handler declares it with.
    pub fn netifd_type(self) -> &'static str {
        match self {
            Kind::Int { .. } => "int",
            Kind::Bool => "boolean",
            Kind::Prefixes | Kind::Ip6Prefixes => "array",
            _ => "string",
        }
    }

    /// Whether the option may hold several values (a UCI `list`).
    pub fn is_list(self) -> bool {
        matches!(self, Kind::Prefixes | Kind::Ip6Prefixes)
    }
}

/// A parsed value, of the variant its option's [`Kind`] gives.
pub(crate) enum Parsed {
    None,
    PrivateKey(super::KeySpec),
    Key(Option<Key>),
    Int(Option<u64>),
    Bool(bool),
    Prefixes(Vec<(IpAddr, u8)>),
    Ip6Prefixes(Vec<(Ipv6Addr, u8)>),
    Mark(Option<u32>),
    Text(Option<String>),
}

impl Parsed {
    fn int(&self) -> Option<u64> {
        match self {
            Parsed::Int(v) => *v,
            _ => None,
        }
    }

    fn flag(&self) -> bool {
        matches!(self, Parsed::Bool(true))
    }

    fn text(self) -> Option<String> {
        match self {
            Parsed::Text(v) => v,
            _ => None,
        }
    }

    fn prefixes(self) -> Vec<(IpAddr, u8)> {
        match self {
            Parsed::Prefixes(v) => v,
            _ => Vec::new(),
        }
    }

    fn key(self) -> Option<Key> {
        match self {
            Parsed::Key(k) => k,
            _ => None,
        }
    }
}

/// Where a parsed value goes.
pub(crate) enum Store {
    Interface(fn(&mut InterfaceConfig, Parsed)),
    Peer(fn(&mut PeerConfig, Parsed)),
    /// Not read by the daemon (the interface's `proto` selects it; LuCI keeps the peer's
    /// `private_key` for its own use).
    Unread,
}

/// One UCI option.
pub struct UciOption {
    pub name: &'static str,
    pub section: SectionKind,
    pub kind: Kind,
    // `default` and `help` are what docs/openwrt.md is checked against; the daemon reads
    // neither.
    #[cfg_attr(not(feature = "internals"), allow(dead_code))]
    /// As docs/openwrt.md writes it: a value, `none`, `random`, `generate` or `required`.
    pub default: &'static str,
    #[cfg_attr(not(feature = "internals"), allow(dead_code))]
    /// One line on what it does.
    pub help: &'static str,
    /// A key: wiped after parsing, never echoed, and never declared to netifd (which passes
    /// declared options on handler command lines that every user can read).
    pub secret: bool,
    pub(crate) store: Store,
}

#[cfg(feature = "internals")]
impl UciOption {
    /// Whether netifd's handler declares it (`proto_config_add_*`): every interface option
    /// but the selector and the secrets, so that netifd sees their changes.
    pub fn netifd_declared(&self) -> bool {
        self.section == SectionKind::Interface && self.kind != Kind::Proto && !self.secret
    }

    /// Whether LuCI's solowg form edits it: everything but the selector, which LuCI's
    /// protocol choice sets.
    pub fn luci_form(&self) -> bool {
        self.kind != Kind::Proto
    }
}

const fn opt(
    name: &'static str,
    section: SectionKind,
    kind: Kind,
    default: &'static str,
    help: &'static str,
    store: Store,
) -> UciOption {
    UciOption {
        name,
        section,
        kind,
        default,
        help,
        secret: false,
        store,
    }
}

const fn secret(mut o: UciOption) -> UciOption {
    o.secret = true;
    o
}

use Kind::*;
use SectionKind::{Interface as I, Peer as P};
use Store::{Interface as SetI, Peer as SetP};

/// Every option, the interface's first.
#[rustfmt::skip]
pub static OPTIONS: &[UciOption] = &[
    opt(PROTO_OPTION, I, Proto, "–", "makes the interface a solowg tunnel", Store::Unread),
    secret(opt("private_key", I, PrivateKey, "generate", "the interface's key; made and saved when missing",
        SetI(|c, v| if let Parsed::PrivateKey(k) = v { c.private_key = k }))),
    opt("listen_port", I, Int { min: 0, max: 65535 }, "random", "UDP port; 0 or unset: random",
        SetI(|c, v| c.listen_port = v.int().map(|n| n as u16))),
    opt("addresses", I, Prefixes, "none", "tunnel addresses, announced to netifd",
        SetI(|c, v| c.addresses = v.prefixes())),
    opt("mtu", I, Int { min: 68, max: 65535 }, "1420", "MTU of the TUN device",
        SetI(|c, v| c.mtu = v.int().map(|n| n as u32))),
    opt("fwmark", I, Mark, "none", "mark on the tunnel's outgoing UDP datagrams",
        SetI(|c, v| if let Parsed::Mark(m) = v { c.fwmark = m })),
    opt("ip6prefix", I, Ip6Prefixes, "none", "IPv6 prefixes routed to the interface, for delegation",
        SetI(|c, v| if let Parsed::Ip6Prefixes(p) = v { c.ip6prefix = p })),
    opt("nohostroute", I, Bool, "0", "no host routes to the endpoints through the uplink",
        SetI(|c, v| c.nohostroute = v.flag())),
    opt("tunlink", I, IfName, "none", "uplink interface for the endpoints' host routes",
        SetI(|c, v| c.tunlink = v.text())),
    opt(PUBLIC_KEY_OPTION, P, RequiredKey, "required", "the peer's key",
        SetP(|c, v| if let Some(k) = v.key() { c.public_key = *k })),
    secret(opt("preshared_key", P, Key, "none", "optional preshared key",
        SetP(|c, v| c.preshared_key = v.key()))),
    opt("allowed_ips", P, Prefixes, "none", "the addresses the peer may use",
        SetP(|c, v| c.allowed_ips = v.prefixes())),
    opt("route_allowed_ips", P, Bool, "0", "routes through the interface for the allowed IPs",
        SetP(|c, v| c.route_allowed_ips = v.flag())),
    opt("endpoint_host", P, Host, "none", "the peer's address or host name",
        SetP(|c, v| c.endpoint_host = v.text())),
    opt("endpoint_port", P, Int { min: 1, max: 65535 }, "51820", "the peer's UDP port",
        SetP(|c, v| c.endpoint_port = v.int().map_or(super::DEFAULT_ENDPOINT_PORT, |n| n as u16))),
    opt("persistent_keepalive", P, Int { min: 0, max: 65535 }, "0 (off)", "keepalive interval in seconds",
        SetP(|c, v| c.persistent_keepalive = v.int().map_or(0, |n| n as u16))),
    opt(DESCRIPTION_OPTION, P, Text, "none", "a name for the peer, shown in status and errors",
        SetP(|c, v| c.description = v.text())),
    opt("disabled", P, Bool, "0", "keeps the peer in the file but unused",
        SetP(|c, v| c.disabled = v.flag())),
    secret(opt("private_key", P, Key, "none", "the peer's own key, kept by LuCI for its client configuration",
        Store::Unread)),
];

/// The options of one section kind, in table order.
pub fn of(section: SectionKind) -> impl Iterator<Item = &'static UciOption> {
    OPTIONS.iter().filter(move |o| o.section == section)
}

/// Whether an option of this name holds a secret in some section.
pub fn is_secret(name: &str) -> bool {
    OPTIONS.iter().any(|o| o.secret && o.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_consistent() {
        for o in OPTIONS {
            let section = match o.store {
                Store::Interface(_) => Some(SectionKind::Interface),
                Store::Peer(_) => Some(SectionKind::Peer),
                Store::Unread => None,
            };
            assert!(section.is_none_or(|s| s == o.section), "{}", o.name);
            let same = of(o.section).filter(|p| p.name == o.name).count();
            assert_eq!(same, 1, "{} is in its section once", o.name);
            assert!(!o.help.is_empty() && !o.help.contains('\n'), "{}", o.name);
        }
        let default = |n: &str| {
            of(SectionKind::Interface)
                .find(|o| o.name == n)
                .unwrap()
                .default
        };
        assert_eq!(
            default("mtu"),
            crate::daemon::iface::DEFAULT_MTU.to_string()
        );
        let port = of(SectionKind::Peer).find(|o| o.name == "endpoint_port");
        assert_eq!(
            port.unwrap().default,
            super::super::DEFAULT_ENDPOINT_PORT.to_string()
        );
    }
}
