//! The ubus methods of the `solowg` object: their table ([`METHODS`]: name, arguments, who
//! may call, handler), from which the object is published and calls are dispatched, and the
//! shape of their replies.

use super::managed::{table, unix_now, Managed};
use super::object::OBJECT;
use crate::crypto;
use crate::daemon::event_loop::Daemon;
use crate::daemon::iface;
use crate::log;
use crate::openwrt::blobmsg::Value;
use crate::openwrt::config::{self, InterfaceConfig, KeySpec};
use crate::openwrt::ubus::{ArgType, Method, ObjectSpec, Status, Token};
use crate::proto::peer::base64;
use crate::proto::uapi::Key;
use std::net::IpAddr;
use zeroize::Zeroizing;

/// Who may call a method: what an rpcd ACL (LuCI's) grants it under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Granted by a `read` ACL: shows state, changes nothing.
    Read,
    /// Granted by a `write` ACL.
    Write,
    /// Granted by no ACL: root's callers only (netifd's handler, the init script), which
    /// ubusd lets call anything.
    Root,
}

/// A method's answer: the status and the reply's table.
type Reply = (Status, Option<Vec<(String, Value)>>);

/// One method of the ubus object `solowg`.
pub struct UbusMethod {
    pub name: &'static str,
    /// Its arguments as published (ubusd passes only these, of these types).
    pub args: &'static [(&'static str, ArgType)],
    // What the ACL files are checked against; ubusd and rpcd, not the daemon, enforce it.
    #[cfg_attr(not(feature = "internals"), allow(dead_code))]
    pub access: Access,
    /// The reply holds a secret: its strings are wiped once sent.
    pub secret_reply: bool,
    handler: fn(&mut Managed, &mut Daemon, &Value) -> Reply,
}

/// The object's methods: what the daemon publishes and what it dispatches calls to.
pub static METHODS: &[UbusMethod] = &[
    UbusMethod {
        name: "status",
        args: &[],
        access: Access::Read,
        secret_reply: false,
        handler: |m, d, _| (Status::Ok, Some(m.status(d))),
    },
    UbusMethod {
        name: "reload",
        args: &[],
        access: Access::Root,
        secret_reply: false,
        handler: |m, d, _| (Status::Ok, Some(m.reload(d).unwrap_or_else(error_reply))),
    },
    UbusMethod {
        name: "up",
        args: &[("interface", ArgType::String)],
        access: Access::Root,
        secret_reply: false,
        handler: Managed::call_up,
    },
    UbusMethod {
        name: "down",
        args: &[("interface", ArgType::String)],
        access: Access::Root,
        secret_reply: false,
        handler: Managed::call_down,
    },
    UbusMethod {
        name: "genkey",
        args: &[],
        access: Access::Write,
        secret_reply: true,
        handler: Managed::call_genkey,
    },
    UbusMethod {
        name: "pubkey",
        args: &[("private_key", ArgType::String)],
        access: Access::Write,
        secret_reply: false,
        handler: |_, _, args| call_pubkey(args),
    },
    UbusMethod {
        name: "genpsk",
        args: &[],
        access: Access::Write,
        secret_reply: true,
        handler: Managed::call_genpsk,
    },
];

/// The ubus object `solowg`: its methods and their arguments (also what the fuzzer drives).
pub fn object_spec() -> ObjectSpec {
    ObjectSpec {
        path: OBJECT.to_string(),
        methods: METHODS
            .iter()
            .map(|m| Method::new(m.name, m.args))
            .collect(),
    }
}

fn error_reply(e: String) -> Vec<(String, Value)> {
    table(vec![("error", Value::Str(e))])
}

fn arg(args: &Value, k: &str) -> Option<String> {
    args.get(k).and_then(Value::as_str).map(str::to_string)
}

/// `pubkey`: the public key of a private one. The argument's String copy is wiped too.
fn call_pubkey(args: &Value) -> Reply {
    let key = arg(args, "private_key").map(Zeroizing::new).and_then(|s| {
        let mut k = Zeroizing::new([0u8; 32]);
        crate::proto::peer::key_from_base64_into(&s, &mut k).then_some(k)
    });
    match key {
        Some(k) => (
            Status::Ok,
            Some(table(vec![(
                "public_key",
                Value::str(base64(&crypto::public_key(&k))),
            )])),
        ),
        None => (Status::InvalidArgument, None),
    }
}

fn cidr(addr: IpAddr, len: u8) -> String {
    format!("{addr}/{len}")
}

impl Managed {
    /// `up`: creates the interface from the file and configures it. The reply carries what
    /// the netifd handler announces: addresses, routes for `route_allowed_ips` peers, the
    /// endpoint addresses that need a host route, and the non-fatal errors (skipped peers).
    fn up(&mut self, d: &mut Daemon, ifname: &str) -> Result<Vec<(String, Value)>, String> {
        let mut cfg = self.read_config()?;
        let mut errors = Self::errors_for(&cfg, Some(ifname));
        let Some(pos) = cfg.interfaces.iter().position(|i| i.name == ifname) else {
            return Err(if cfg.failed_interfaces.iter().any(|f| f == ifname) {
                errors.join("; ")
            } else {
                format!(
                    "network.{ifname}: no interface with proto '{}'",
                    config::PROTO
                )
            });
        };
        let mut icfg = cfg.interfaces.swap_remove(pos);
        let created = d.get(ifname).is_none();
        if created {
            let mtu = icfg.mtu.unwrap_or(iface::DEFAULT_MTU);
            let (tun, udp, uapi, dev) = iface::open(ifname, mtu, &self.opts.socket_dir)?;
            d.add(tun, udp, uapi, dev)
                .map_err(|e| format!("{ifname}: cannot serve: {e}"))?;
            log::info(format_args!("{ifname} up (managed)"));
        } else if let Err(e) = Self::apply_mtu(d, &icfg) {
            // Set up again (ifup after an edit): the MTU is the section's, as for a new TUN.
            errors.push(e);
        }
        self.ensure_key(&mut icfg);
        // Set up again (renew): only what changed since is applied, as by `reload`, so a
        // peer's endpoint learnt by roaming is not reset to the configured one.
        let prev = if created {
            None
        } else {
            self.running.remove(ifname)
        };
        if let Err(e) = self.apply(d, &icfg, prev.as_ref()) {
            // A refused configuration changes nothing (applied whole or not at all): an
            // interface that was running (renew) goes on as it was.
            if created {
                d.remove(ifname);
                let _ = std::fs::remove_file(iface::socket_path_in(&self.opts.socket_dir, ifname));
            } else if let Some(p) = prev {
                self.running.insert(ifname.to_string(), p);
            }
            return Err(e);
        }
        let reply = Self::netifd_data(d, &icfg, errors);
        self.running.insert(ifname.to_string(), icfg);
        self.save_state();
        Ok(reply)
    }

    pub(super) fn down(&mut self, d: &mut Daemon, ifname: &str) -> bool {
        self.forget_endpoints(ifname);
        if self.running.remove(ifname).is_some() {
            self.save_state();
        }
        self.seen.remove(ifname);
        let found = d.remove(ifname).is_some();
        if found {
            let _ = std::fs::remove_file(iface::socket_path_in(&self.opts.socket_dir, ifname));
            log::info(format_args!("{ifname} down"));
        }
        found
    }

    pub(super) fn new_private_key(&mut self) -> Key {
        self.rng.private_key()
    }

    /// `reload`: re-reads the file and applies it to every running interface. An interface
    /// whose section is now broken keeps its previous configuration (and is reported).
    fn reload(&mut self, d: &mut Daemon) -> Result<Vec<(String, Value)>, String> {
        let cfg = self.read_config_checked(true)?;
        let mut errors = Self::errors_for(&cfg, None);
        let mut applied = Vec::new();
        let names: Vec<String> = self.running.keys().cloned().collect();
        let mut cfg = cfg;
        for name in names {
            let Some(pos) = cfg.interfaces.iter().position(|i| i.name == name) else {
                if cfg.failed_interfaces.contains(&name) {
                    errors.push(format!("{name}: kept its previous configuration"));
                } else {
                    errors.push(format!(
                        "{name}: no longer a '{}' interface; left running until ifdown",
                        config::PROTO
                    ));
                }
                continue;
            };
            let mut icfg = cfg.interfaces.swap_remove(pos);
            let prev = self.running.remove(&name);
            if matches!(icfg.private_key, KeySpec::Generate) {
                // Keep the key in use rather than making a new one on every reload.
                match prev.as_ref().map(|p| &p.private_key) {
                    Some(KeySpec::Key(k)) => icfg.private_key = KeySpec::Key(k.clone()),
                    _ => self.ensure_key(&mut icfg),
                }
            }
            match self.apply(d, &icfg, prev.as_ref()) {
                Ok(()) => {
                    // Only when the option changed: an MTU set by hand (`ip link`) is kept by
                    // reloads that leave `mtu` alone.
                    if prev.as_ref().is_some_and(|p| p.mtu != icfg.mtu) {
                        if let Err(e) = Self::apply_mtu(d, &icfg) {
                            errors.push(e);
                        }
                    }
                    applied.push(Value::str(name.clone()));
                    self.running.insert(name, icfg);
                }
                Err(e) => {
                    errors.push(e);
                    if let Some(p) = prev {
                        self.running.insert(name, p);
                    }
                }
            }
        }
        for e in &errors {
            log::error(format_args!("reload: {e}"));
        }
        log::info(format_args!("reloaded {} interface(s)", applied.len()));
        Ok(table(vec![
            ("interfaces", Value::Array(applied)),
            (
                "errors",
                Value::Array(errors.into_iter().map(Value::Str).collect()),
            ),
        ]))
    }

    /// Brings a running interface's MTU to its section's (the default when it has none).
    fn apply_mtu(d: &mut Daemon, icfg: &InterfaceConfig) -> Result<(), String> {
        let name = icfg.name.as_str();
        let mtu = icfg.mtu.unwrap_or(iface::DEFAULT_MTU);
        if d.get(name).is_none_or(|s| s.dev.mtu == mtu as usize) {
            return Ok(());
        }
        d.set_mtu(name, mtu)
            .map_err(|e| format!("{name}: cannot set MTU {mtu}: {e}"))?;
        log::info(format_args!("{name}: MTU now {mtu}"));
        Ok(())
    }

    fn netifd_data(
        d: &Daemon,
        icfg: &InterfaceConfig,
        errors: Vec<String>,
    ) -> Vec<(String, Value)> {
        let mut addresses = Vec::new();
        for &(a, l) in &icfg.addresses {
            addresses.push(Value::str(cidr(a, l)));
        }
        let mut routes = Vec::new();
        for p in icfg
            .peers
            .iter()
            .filter(|p| !p.disabled && p.route_allowed_ips)
        {
            for &(a, l) in &p.allowed_ips {
                routes.push(Value::str(cidr(a, l)));
            }
        }
        let mut hosts = Vec::new();
        if !icfg.nohostroute {
            for p in icfg.peers.iter().filter(|p| !p.disabled) {
                if let Some(ip) = p
                    .endpoint_host
                    .as_deref()
                    .and_then(|h| h.parse::<IpAddr>().ok())
                {
                    hosts.push(Value::str(ip.to_string()));
                }
            }
        }
        let mtu = d.get(&icfg.name).map_or(0, |s| s.dev.mtu);
        table(vec![
            ("ifname", Value::str(icfg.name.clone())),
            ("mtu", Value::Int(mtu as i64)),
            ("addresses", Value::Array(addresses)),
            ("routes", Value::Array(routes)),
            (
                "ip6prefix",
                Value::Array(
                    icfg.ip6prefix
                        .iter()
                        .map(|&(a, l)| Value::str(format!("{a}/{l}")))
                        .collect(),
                ),
            ),
            ("host_dependencies", Value::Array(hosts)),
            (
                "tunlink",
                Value::str(icfg.tunlink.clone().unwrap_or_default()),
            ),
            (
                "errors",
                Value::Array(errors.into_iter().map(Value::Str).collect()),
            ),
        ])
    }

    /// `status`: every interface and peer, shaped for LuCI (arrays of tables). Never a
    /// private or preshared key: only whether a PSK is set.
    fn status(&self, d: &Daemon) -> Vec<(String, Value)> {
        let mut ifaces = Vec::new();
        for s in d.slots() {
            let name = s.io.ifname();
            let info = s.dev.info();
            let cfg = self.running.get(name);
            let mut peers = Vec::new();
            for p in &info.peers {
                let pc = cfg.and_then(|c| c.peers.iter().find(|q| q.public_key == p.public_key));
                let desc = pc.and_then(|q| q.description.clone()).unwrap_or_default();
                peers.push(Value::Table(table(vec![
                    ("public_key", Value::str(base64(&p.public_key))),
                    ("description", Value::str(desc)),
                    (
                        "endpoint",
                        Value::str(p.endpoint.map(|e| e.to_string()).unwrap_or_default()),
                    ),
                    (
                        "endpoint_host",
                        Value::str(pc.and_then(|q| q.endpoint_host.clone()).unwrap_or_default()),
                    ),
                    (
                        "latest_handshake",
                        Value::Int(p.last_handshake.map_or(0, |(s, _)| s as i64)),
                    ),
                    ("rx_bytes", Value::Int(p.rx_bytes as i64)),
                    ("tx_bytes", Value::Int(p.tx_bytes as i64)),
                    (
                        "allowed_ips",
                        Value::Array(
                            p.allowed_ips
                                .iter()
                                .map(|&(a, l)| Value::str(cidr(a, l)))
                                .collect(),
                        ),
                    ),
                    (
                        "persistent_keepalive",
                        Value::Int(p.persistent_keepalive.into()),
                    ),
                    ("preshared_key", Value::Bool(p.preshared_key.is_some())),
                ])));
            }
            let drops = s
                .dev
                .drops()
                .map(|(r, n)| (r.name().to_string(), Value::Int(n as i64)))
                .collect();
            ifaces.push(Value::Table(table(vec![
                ("name", Value::str(name)),
                (
                    "public_key",
                    Value::str(s.dev.public_key().map(|k| base64(&k)).unwrap_or_default()),
                ),
                ("listen_port", Value::Int(info.listen_port.into())),
                ("fwmark", Value::Int(info.fwmark.into())),
                ("mtu", Value::Int(s.dev.mtu as i64)),
                ("peers", Value::Array(peers)),
                // Packets waiting for handshakes (bounded for the device: proto::staging).
                ("staged_packets", Value::Int(s.dev.staging().len() as i64)),
                ("drops", Value::Table(drops)),
            ])));
        }
        table(vec![
            ("interfaces", Value::Array(ifaces)),
            ("time", Value::Int(unix_now() as i64)),
            // Where UDP GSO is refused, data may leave through a packet socket, past the
            // firewall's output rules: LuCI says so.
            ("packet_tx", Value::Bool(crate::sys::packet_tx::wanted())),
        ])
    }

    fn call_up(&mut self, d: &mut Daemon, args: &Value) -> Reply {
        let Some(i) = arg(args, "interface") else {
            return (Status::InvalidArgument, None);
        };
        match self.up(d, &i) {
            Ok(t) => (Status::Ok, Some(t)),
            Err(e) => {
                log::error(format_args!("up {i}: {e}"));
                (Status::Ok, Some(error_reply(e)))
            }
        }
    }

    fn call_down(&mut self, d: &mut Daemon, args: &Value) -> Reply {
        match arg(args, "interface") {
            None => (Status::InvalidArgument, None),
            Some(i) if self.down(d, &i) => (Status::Ok, None),
            Some(_) => (Status::NotFound, None),
        }
    }

    fn call_genkey(&mut self, _: &mut Daemon, _: &Value) -> Reply {
        let k = self.new_private_key();
        let public = crypto::public_key(&k);
        let data = table(vec![
            ("private_key", Value::Str(base64(&k[..]))),
            ("public_key", Value::str(base64(&public))),
        ]);
        (Status::Ok, Some(data))
    }

    fn call_genpsk(&mut self, _: &mut Daemon, _: &Value) -> Reply {
        let mut k = Zeroizing::new([0u8; 32]);
        self.rng.fill(&mut k[..]);
        (
            Status::Ok,
            Some(table(vec![("preshared_key", Value::Str(base64(&k[..])))])),
        )
    }

    pub(super) fn answer(&mut self, d: &mut Daemon, method: &str, args: &Value, token: Token) {
        let found = METHODS.iter().find(|m| m.name == method);
        let (status, data) = match found {
            Some(m) => (m.handler)(self, d, args),
            None => (Status::MethodNotFound, None),
        };
        if let Err(e) = self.ubus.reply(token, status, data.as_deref()) {
            log::verbose(format_args!("ubus reply to {method} failed: {e}"));
        }
        // genkey/genpsk replies carry a secret in base64: wipe the reply's strings.
        if let Some(mut t) = data.filter(|_| found.is_some_and(|m| m.secret_reply)) {
            for (_, v) in &mut t {
                if let Value::Str(s) = v {
                    zeroize::Zeroize::zeroize(s);
                }
            }
        }
    }
}
