//! Managed mode (`solowg --uci`): one daemon serves every `proto 'solowg'` interface of
//! OpenWrt's /etc/config/network. netifd's protocol handler asks it over ubus to bring an
//! interface up (`up`) or down (`down`); `reload` re-reads the file and applies what changed
//! without touching what did not (unchanged peers keep their sessions); `status` shows every
//! interface and peer; `genkey`/`pubkey`/`genpsk` spare LuCI the wireguard-tools. Peers whose
//! endpoint is a host name are resolved on the loop thread, retried with backoff, and re-resolved
//! when their handshakes stall. All of it runs on the event loop's one thread.

use crate::crypto::{self, Rng};
use crate::log;
use crate::openwrt::blobmsg::Value;
use crate::openwrt::config::{self, InterfaceConfig, KeySpec, NetworkConfig, PeerConfig};
use crate::openwrt::dns::{self, DnsSockets, EndpointResolver, Endpoints, Resolver};
use crate::openwrt::ubus::{ArgType, Event, Method, ObjectSpec, Status, Token, UbusClient};
use crate::proto::peer::base64;
use crate::proto::timers::REJECT_AFTER_TIME;
use crate::proto::uapi::{AllowedIpChange, Key, PeerChange, SetRequest};
use crate::sys::event_loop::{Control, Daemon, CONTROL_TOKEN};
use crate::sys::iface;
use crate::sys::poller::Interest;
use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use zeroize::Zeroizing;

const UBUS_TOKEN: u64 = CONTROL_TOKEN;
const DNS4_TOKEN: u64 = CONTROL_TOKEN + 1;
const DNS6_TOKEN: u64 = CONTROL_TOKEN + 2;
/// How often handshake events, stale peers and endpoint names are looked at.
const CHECK_EVERY: Duration = Duration::from_secs(1);
/// ubus reads per readiness report (each up to 16 KiB); the rest waits for the next turn.
const UBUS_READS_PER_TURN: usize = 8;
pub const OBJECT: &str = "solowg";

/// Where the configuration lives and how to write a generated key back.
pub struct Options {
    /// Directory of UCI files (`/etc/config`); the network file is `<dir>/network`.
    pub config_dir: PathBuf,
    /// The `uci` program, used only to save a generated private key.
    pub uci: String,
    pub ubus_socket: PathBuf,
    /// The ubus CLI, used to tell netifd about endpoint addresses learnt from DNS.
    pub ubus_cli: String,
    /// Names of the interfaces that are up, kept on tmpfs: a daemon that finds it at start
    /// was restarted (crash, procd respawn) and asks netifd to set them up again with `ifup`.
    pub state_file: PathBuf,
    /// The program that asks netifd to set an interface up.
    pub ifup: String,
}

/// A peer whose endpoint is a host name, by interface and public key.
#[derive(Clone)]
struct NamedEndpoint {
    ifname: String,
    public_key: [u8; 32],
}

pub struct Managed {
    opts: Options,
    ubus: UbusClient,
    /// The configuration each running interface was last set up from.
    running: HashMap<String, InterfaceConfig>,
    rng: Rng,
    dns: Resolver,
    dns_sockets: DnsSockets,
    endpoints: Endpoints<u64>,
    named: HashMap<u64, NamedEndpoint>,
    next_endpoint_id: u64,
    next_check: Instant,
    /// Last handshake (unix seconds) reported per (interface, peer), and whether the peer
    /// was reported stale since.
    seen: HashMap<(String, [u8; 32]), (u64, bool)>,
    /// `ubus call network.interface notify_proto` and `ifup` processes not yet reaped.
    children: Vec<std::process::Child>,
    /// Interfaces a previous instance had up, to hand back to netifd once registered.
    restore: Vec<String>,
}

/// The ubus object `solowg`: its methods and their arguments (also what the fuzzer drives).
pub fn object_spec() -> ObjectSpec {
    ObjectSpec {
        path: OBJECT.to_string(),
        methods: vec![
            Method::new("status", &[]),
            Method::new("reload", &[]),
            Method::new("up", &[("interface", ArgType::String)]),
            Method::new("down", &[("interface", ArgType::String)]),
            Method::new("genkey", &[]),
            Method::new("pubkey", &[("private_key", ArgType::String)]),
            Method::new("genpsk", &[]),
        ],
    }
}

fn table(entries: Vec<(&str, Value)>) -> Vec<(String, Value)> {
    entries
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
}

fn cidr(addr: IpAddr, len: u8) -> String {
    format!("{addr}/{len}")
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Managed {
    pub fn new(opts: Options) -> io::Result<Managed> {
        let ubus = UbusClient::new(opts.ubus_socket.clone(), object_spec());
        let mut rng = Rng::from_os()?;
        let mut seed = [0u8; 32];
        rng.fill(&mut seed);
        let dns_rng = Rng::from_seed(seed);
        rng.fill(&mut seed);
        let ep_rng = Rng::from_seed(seed);
        let mut m = Managed {
            opts,
            ubus,
            running: HashMap::new(),
            rng,
            dns: Resolver::new(dns::system_servers(), dns_rng),
            dns_sockets: DnsSockets::new(DNS4_TOKEN, DNS6_TOKEN, 0),
            endpoints: Endpoints::new(ep_rng),
            named: HashMap::new(),
            next_endpoint_id: 1,
            next_check: Instant::now(),
            seen: HashMap::new(),
            children: Vec::new(),
            restore: Vec::new(),
        };
        m.load_restore();
        Ok(m)
    }

    /// Reads what a previous instance left (see `Options::state_file`).
    fn load_restore(&mut self) {
        if let Ok(t) = std::fs::read_to_string(&self.opts.state_file) {
            self.restore = t
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && l.len() <= config::MAX_IFNAME_LEN)
                .map(str::to_string)
                .collect();
        }
    }

    fn save_state(&self) {
        let mut names: Vec<&str> = self.running.keys().map(String::as_str).collect();
        names.sort_unstable();
        let text: String = names.iter().map(|n| format!("{n}\n")).collect();
        if let Some(dir) = self.opts.state_file.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        if let Err(e) = std::fs::write(&self.opts.state_file, text) {
            log::verbose(format_args!(
                "cannot write {}: {e}",
                self.opts.state_file.display()
            ));
        }
    }

    fn network_path(&self) -> PathBuf {
        self.opts.config_dir.join("network")
    }

    fn read_config(&self) -> Result<NetworkConfig, String> {
        self.read_config_checked(false)
    }

    /// With `strict`, a file with syntax errors is refused as a whole (as libuci's default,
    /// strict, mode does): a file truncated or overwritten while it was being written must not
    /// turn into a configuration with the rest of its sections, or their options, missing.
    fn read_config_checked(&self, strict: bool) -> Result<NetworkConfig, String> {
        let path = self.network_path();
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let text = Zeroizing::new(String::from_utf8_lossy(&bytes).into_owned());
        let mut bytes = bytes;
        zeroize::Zeroize::zeroize(&mut bytes);
        let cfg = config::parse_network(&text);
        if strict {
            let mut syntax = cfg
                .errors
                .iter()
                .filter(|e| e.scope == config::ErrorScope::Line);
            if let Some(first) = syntax.next() {
                let more = syntax.count();
                return Err(format!(
                    "{}: line {}{}: {}{}; nothing applied, the running configuration is kept",
                    path.display(),
                    first.line,
                    section_at(&text, first.line)
                        .map(|s| format!(" (in section '{s}')"))
                        .unwrap_or_default(),
                    first.message,
                    if more > 0 {
                        format!(" (and {more} more syntax error(s))")
                    } else {
                        String::new()
                    }
                ));
            }
        }
        Ok(cfg)
    }

    /// Errors of the file that concern `ifname` (or the file as a whole), as text.
    fn errors_for(cfg: &NetworkConfig, ifname: Option<&str>) -> Vec<String> {
        cfg.errors
            .iter()
            .filter(|e| match (ifname, &e.interface) {
                (Some(want), Some(i)) => i == want,
                _ => true,
            })
            .map(|e| e.to_string())
            .collect()
    }

    /// `up`: creates the interface from the file and configures it. The reply carries what
    /// the netifd handler announces: addresses, routes for `route_allowed_ips` peers, the
    /// endpoint addresses that need a host route, and the non-fatal errors (skipped peers).
    fn up(&mut self, d: &mut Daemon, ifname: &str) -> Result<Vec<(String, Value)>, String> {
        let mut cfg = self.read_config()?;
        let errors = Self::errors_for(&cfg, Some(ifname));
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
        if d.get(ifname).is_none() {
            let mtu = icfg.mtu.unwrap_or(iface::DEFAULT_MTU);
            let (tun, udp, uapi, dev) = iface::open(ifname, mtu)?;
            d.add(tun, udp, uapi, dev)
                .map_err(|e| format!("{ifname}: cannot serve: {e}"))?;
            log::info(format_args!("{ifname} up (managed)"));
        }
        self.ensure_key(&mut icfg);
        if let Err(e) = self.apply(d, &icfg, None) {
            d.remove(ifname);
            let _ = std::fs::remove_file(iface::socket_path(ifname));
            return Err(e);
        }
        let reply = Self::netifd_data(d, &icfg, errors);
        self.running.insert(ifname.to_string(), icfg);
        self.save_state();
        Ok(reply)
    }

    fn down(&mut self, d: &mut Daemon, ifname: &str) -> bool {
        self.forget_endpoints(ifname);
        if self.running.remove(ifname).is_some() {
            self.save_state();
        }
        self.seen.retain(|(i, _), _| i != ifname);
        let found = d.remove(ifname).is_some();
        if found {
            let _ = std::fs::remove_file(iface::socket_path(ifname));
            log::info(format_args!("{ifname} down"));
        }
        found
    }

    /// A missing or `generate` key: make one and save it with `uci`, as the kernel WireGuard
    /// handler does, so the interface keeps its identity across restarts.
    fn ensure_key(&mut self, icfg: &mut InterfaceConfig) {
        if !matches!(icfg.private_key, KeySpec::Generate) {
            return;
        }
        let key = self.new_private_key();
        let b64 = Zeroizing::new(base64(&key[..]));
        let dir = self.opts.config_dir.display().to_string();
        // Our own delta directory, so nothing of ours lingers in the shared /tmp/.uci.
        let save = self.opts.state_file.with_file_name("uci");
        let _ = std::fs::create_dir_all(&save);
        let save = save.display().to_string();
        // The uci argument holds the key in base64: wiped when it goes.
        let set = Zeroizing::new(format!(
            "network.{}.private_key={}",
            icfg.name,
            b64.as_str()
        ));
        let uci = |args: &[&str]| {
            std::process::Command::new(&self.opts.uci)
                .args(["-q", "-c", &dir, "-t", &save])
                .args(args)
                .status()
                .is_ok_and(|s| s.success())
        };
        let ok = uci(&["set", set.as_str()]) && uci(&["commit", "network"]);
        if ok {
            log::info(format_args!(
                "{}: generated a private key and saved it",
                icfg.name
            ));
        } else {
            log::error(format_args!(
                "{}: generated a private key but could not save it with '{}'; it lasts until restart",
                icfg.name, self.opts.uci
            ));
        }
        icfg.private_key = KeySpec::Key(key);
    }

    fn new_private_key(&mut self) -> Key {
        let mut k = self.rng.key();
        *k = crypto::clamp(*k);
        k
    }

    /// Brings a running interface to `icfg`: `prev` is what it was set up from (None: fresh).
    /// Peers that did not change are not touched, so their sessions survive.
    fn apply(
        &mut self,
        d: &mut Daemon,
        icfg: &InterfaceConfig,
        prev: Option<&InterfaceConfig>,
    ) -> Result<(), String> {
        let name = icfg.name.as_str();
        let mut req = SetRequest {
            private_key: match &icfg.private_key {
                KeySpec::Key(k) => Some(Some(k.clone())),
                KeySpec::Generate => None,
            },
            listen_port: icfg.listen_port,
            fwmark: Some(icfg.fwmark.unwrap_or(0)),
            replace_peers: false,
            peers: Vec::new(),
        };
        let enabled: Vec<&PeerConfig> = icfg.peers.iter().filter(|p| !p.disabled).collect();
        let running: Vec<[u8; 32]> = d
            .get(name)
            .map(|s| s.dev.info().peers.iter().map(|p| p.public_key).collect())
            .unwrap_or_default();
        for key in &running {
            if !enabled.iter().any(|p| &p.public_key == key) {
                let mut c = PeerChange::new(*key);
                c.remove = true;
                req.peers.push(c);
            }
        }
        for p in &enabled {
            // A peer removed behind our back (`wg set ... remove`) is re-added as new, endpoint
            // included: the previous configuration says nothing about the running device.
            let before = prev
                .filter(|_| running.contains(&p.public_key))
                .and_then(|pc| {
                    pc.peers
                        .iter()
                        .find(|q| !q.disabled && q.public_key == p.public_key)
                });
            if before.is_some_and(|b| same_peer(b, p)) && running.contains(&p.public_key) {
                continue;
            }
            let mut c = PeerChange::new(p.public_key);
            c.preshared_key = Some(p.preshared_key.clone());
            c.persistent_keepalive = Some(p.persistent_keepalive);
            c.replace_allowed_ips = true;
            c.allowed_ips = p
                .allowed_ips
                .iter()
                .map(|&(addr, cidr)| AllowedIpChange {
                    addr,
                    cidr,
                    remove: false,
                })
                .collect();
            // Only a changed endpoint option resets the endpoint: one learnt by roaming stays.
            let endpoint_changed = before.is_none_or(|b| {
                b.endpoint_host != p.endpoint_host || b.endpoint_port != p.endpoint_port
            });
            if endpoint_changed {
                if let Some(host) = &p.endpoint_host {
                    if let Ok(ip) = host.parse::<IpAddr>() {
                        c.endpoint = Some(SocketAddr::new(ip, p.endpoint_port));
                    }
                }
            }
            req.peers.push(c);
        }
        d.apply(name, req).map_err(|errno| {
            format!(
                "{name}: configuration refused: {}",
                io::Error::from_raw_os_error(errno)
            )
        })?;
        self.sync_endpoints(icfg, prev);
        Ok(())
    }

    /// Starts name resolution for peers whose endpoint is a host name (new or changed).
    fn sync_endpoints(&mut self, icfg: &InterfaceConfig, prev: Option<&InterfaceConfig>) {
        let name = &icfg.name;
        let wanted: Vec<&PeerConfig> = icfg
            .peers
            .iter()
            .filter(|p| {
                !p.disabled
                    && p.endpoint_host
                        .as_deref()
                        .is_some_and(|h| h.parse::<IpAddr>().is_err())
            })
            .collect();
        // Drop resolvers of peers that went or whose name changed.
        let stale: Vec<u64> = self
            .named
            .iter()
            .filter(|(_, n)| &n.ifname == name)
            .filter(|(_, n)| {
                let now_cfg = wanted.iter().find(|p| p.public_key == n.public_key);
                let before =
                    prev.and_then(|pc| pc.peers.iter().find(|q| q.public_key == n.public_key));
                match (now_cfg, before) {
                    (None, _) => true,
                    (Some(p), Some(b)) => {
                        p.endpoint_host != b.endpoint_host || p.endpoint_port != b.endpoint_port
                    }
                    (Some(_), None) => false,
                }
            })
            .map(|(&id, _)| id)
            .collect();
        for id in stale {
            self.named.remove(&id);
            self.endpoints.remove(id, &mut self.dns);
        }
        if !wanted.is_empty() {
            self.load_name_sources();
        }
        for p in wanted {
            let known = self
                .named
                .values()
                .any(|n| &n.ifname == name && n.public_key == p.public_key);
            if known {
                continue;
            }
            let id = self.next_endpoint_id;
            self.next_endpoint_id += 1;
            let host = p.endpoint_host.clone().unwrap_or_default();
            self.named.insert(
                id,
                NamedEndpoint {
                    ifname: name.clone(),
                    public_key: p.public_key,
                },
            );
            self.endpoints.insert(
                id,
                EndpointResolver::new(host, p.endpoint_port, dns::Backoff::default()),
                &mut self.dns,
            );
        }
    }

    fn forget_endpoints(&mut self, ifname: &str) {
        let ids: Vec<u64> = self
            .named
            .iter()
            .filter(|(_, n)| n.ifname == ifname)
            .map(|(&id, _)| id)
            .collect();
        for id in ids {
            self.named.remove(&id);
            self.endpoints.remove(id, &mut self.dns);
        }
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
                ("drops", Value::Table(drops)),
            ])));
        }
        table(vec![
            ("interfaces", Value::Array(ifaces)),
            ("time", Value::Int(unix_now() as i64)),
        ])
    }

    fn answer(&mut self, d: &mut Daemon, method: &str, args: &Value, token: Token) {
        let arg = |k: &str| args.get(k).and_then(Value::as_str).map(str::to_string);
        let (status, data) = match method {
            "status" => (Status::Ok, Some(self.status(d))),
            "reload" => match self.reload(d) {
                Ok(t) => (Status::Ok, Some(t)),
                Err(e) => (Status::Ok, Some(table(vec![("error", Value::Str(e))]))),
            },
            "up" => match arg("interface") {
                None => (Status::InvalidArgument, None),
                Some(i) => match self.up(d, &i) {
                    Ok(t) => (Status::Ok, Some(t)),
                    Err(e) => {
                        log::error(format_args!("up {i}: {e}"));
                        (Status::Ok, Some(table(vec![("error", Value::Str(e))])))
                    }
                },
            },
            "down" => match arg("interface") {
                None => (Status::InvalidArgument, None),
                Some(i) => {
                    let found = self.down(d, &i);
                    (if found { Status::Ok } else { Status::NotFound }, None)
                }
            },
            "genkey" => {
                let k = self.new_private_key();
                let public = crypto::public_key(&k);
                let data = table(vec![
                    ("private_key", Value::Str(base64(&k[..]))),
                    ("public_key", Value::str(base64(&public))),
                ]);
                (Status::Ok, Some(data))
            }
            // The argument is a private key: its String copy is wiped too.
            "pubkey" => match arg("private_key").map(Zeroizing::new).and_then(|s| {
                let mut k = Zeroizing::new([0u8; 32]);
                crate::proto::peer::key_from_base64_into(&s, &mut k).then_some(k)
            }) {
                Some(k) => (
                    Status::Ok,
                    Some(table(vec![(
                        "public_key",
                        Value::str(base64(&crypto::public_key(&k))),
                    )])),
                ),
                None => (Status::InvalidArgument, None),
            },
            "genpsk" => {
                let mut k = Zeroizing::new([0u8; 32]);
                self.rng.fill(&mut k[..]);
                (
                    Status::Ok,
                    Some(table(vec![("preshared_key", Value::Str(base64(&k[..])))])),
                )
            }
            _ => (Status::MethodNotFound, None),
        };
        if let Err(e) = self.ubus.reply(token, status, data.as_deref()) {
            log::verbose(format_args!("ubus reply to {method} failed: {e}"));
        }
        // genkey/genpsk replies carry a secret in base64: wipe the reply's strings.
        if let Some(mut t) = data {
            if matches!(method, "genkey" | "genpsk") {
                for (_, v) in &mut t {
                    if let Value::Str(s) = v {
                        zeroize::Zeroize::zeroize(s);
                    }
                }
            }
        }
    }

    fn serve_ubus(&mut self, d: &mut Daemon) {
        while let Some(ev) = self.ubus.poll_event() {
            match ev {
                Event::Registered { .. } => {
                    log::info(format_args!("ubus object '{OBJECT}' registered"));
                    self.restore_interfaces();
                }
                Event::Invoke {
                    method,
                    args,
                    token,
                } => self.answer(d, &method, &args, token),
            }
        }
    }

    /// Once a second: handshake and stale events, stalled peers re-resolved.
    fn check_peers(&mut self, d: &mut Daemon, now: Instant) {
        self.reap();
        let unix = unix_now();
        let stale_after = REJECT_AFTER_TIME.as_secs();
        let mut events = Vec::new();
        let mut stalled = Vec::new();
        for s in d.slots() {
            let name = s.io.ifname().to_string();
            for p in s.dev.info().peers {
                let hs = p.last_handshake.map_or(0, |(t, _)| t);
                let key = (name.clone(), p.public_key);
                let entry = self.seen.entry(key).or_insert((0, false));
                if hs != 0 && hs != entry.0 {
                    *entry = (hs, false);
                    events.push(("solowg.handshake", name.clone(), p.public_key));
                } else if hs != 0 && !entry.1 && unix.saturating_sub(hs) > stale_after {
                    entry.1 = true;
                    events.push(("solowg.stale", name.clone(), p.public_key));
                }
                if hs == 0 || unix.saturating_sub(hs) > stale_after {
                    stalled.push((name.clone(), p.public_key));
                }
            }
        }
        for (ev, ifname, key) in events {
            let data = table(vec![
                ("interface", Value::str(ifname)),
                ("public_key", Value::str(base64(&key))),
            ]);
            if self.ubus.is_connected() {
                let _ = self.ubus.send_event(ev, &data);
            }
        }
        for (id, n) in &self.named {
            if stalled.contains(&(n.ifname.clone(), n.public_key)) {
                self.endpoints.note_handshake_stalled(*id, now);
            } else {
                self.endpoints.note_handshake_completed(*id, now);
            }
        }
    }

    /// Static names and name servers can change at any time (at boot, DHCP on the WAN):
    /// read them again while some endpoint is a name. Small files, once a second.
    fn refresh_name_sources(&mut self) {
        if !self.named.is_empty() {
            self.load_name_sources();
        }
    }

    fn load_name_sources(&mut self) {
        if let Ok(t) = std::fs::read_to_string("/etc/hosts") {
            self.dns.set_hosts(dns::parse_hosts(&t));
        }
        self.dns.set_servers(dns::system_servers());
    }

    fn run_dns(&mut self, d: &mut Daemon, now: Instant) {
        self.dns.on_timer(now);
        while let Some((q, r)) = self.dns.poll_result() {
            self.endpoints.on_result(q, &r, now);
        }
        self.endpoints.poll(now, &mut self.dns);
        while let Some(act) = self.endpoints.poll_action() {
            let Some(n) = self.named.get(&act.peer).cloned() else {
                continue;
            };
            let mut c = PeerChange::new(n.public_key);
            c.update_only = true;
            c.endpoint = Some(act.addr);
            let req = SetRequest {
                private_key: None,
                listen_port: None,
                fwmark: None,
                replace_peers: false,
                peers: vec![c],
            };
            if d.apply(&n.ifname, req).is_ok() {
                log::info(format_args!(
                    "{}: endpoint resolved to {}",
                    n.ifname, act.addr
                ));
                self.host_dependency(&n.ifname, act.addr.ip());
            }
        }
        let reg = d.registry();
        self.dns_sockets.flush(&mut self.dns, &reg);
        self.dns_sockets.close_if_idle(&self.dns, &reg);
    }
}

impl Managed {
    /// An endpoint address learnt from DNS needs the host route netifd keeps for endpoints
    /// (action 6 of notify_proto, as the handler announces literal ones), or a tunnel that
    /// routes 0.0.0.0/0 would carry its own encrypted packets. Rare (one per resolution),
    /// so the ubus CLI is run rather than a second ubus client kept in the loop.
    fn host_dependency(&mut self, ifname: &str, ip: IpAddr) {
        let Some(cfg) = self.running.get(ifname) else {
            return;
        };
        if cfg.nohostroute {
            return;
        }
        let mut msg = format!(r#"{{"action":6,"interface":"{ifname}","host":"{ip}""#);
        if let Some(t) = &cfg.tunlink {
            msg.push_str(&format!(r#","ifname":"{t}""#));
        }
        msg.push('}');
        let sock = self.opts.ubus_socket.display().to_string();
        match std::process::Command::new(&self.opts.ubus_cli)
            .args([
                "-s",
                &sock,
                "-t",
                "5",
                "call",
                "network.interface",
                "notify_proto",
                &msg,
            ])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .spawn()
        {
            Ok(c) => self.children.push(c),
            Err(e) => log::error(format_args!(
                "{ifname}: cannot run '{}' for the endpoint host route: {e}",
                self.opts.ubus_cli
            )),
        }
    }

    /// After a restart: netifd still believes these interfaces are up, but their TUNs went
    /// with the old process. `ifup` makes it run the handler again, which calls `up`.
    fn restore_interfaces(&mut self) {
        for name in std::mem::take(&mut self.restore) {
            log::info(format_args!(
                "{name}: was up before this daemon started; asking netifd to set it up"
            ));
            match std::process::Command::new(&self.opts.ifup)
                .arg(&name)
                .stdin(std::process::Stdio::null())
                .spawn()
            {
                Ok(c) => self.children.push(c),
                Err(e) => log::error(format_args!("{name}: cannot run '{}': {e}", self.opts.ifup)),
            }
        }
    }

    fn reap(&mut self) {
        self.children
            .retain_mut(|c| matches!(c.try_wait(), Ok(None)));
    }
}

/// The name (or, if anonymous, the type) of the section whose `config` line is the last one
/// at or before 1-based `line`, for syntax error messages. Never an option's value.
fn section_at(text: &str, line: usize) -> Option<String> {
    text.lines()
        .take(line)
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            (w.next() == Some("config")).then(|| {
                let ty = w.next().unwrap_or("");
                let name = w.next().unwrap_or(ty);
                name.trim_matches(|c| c == '\'' || c == '"').to_string()
            })
        })
        .last()
        .filter(|s| !s.is_empty() && s.len() <= 64)
}

/// Same settings for the device (description and route flag do not matter to it).
fn same_peer(a: &PeerConfig, b: &PeerConfig) -> bool {
    a.public_key == b.public_key
        && a.preshared_key.as_deref() == b.preshared_key.as_deref()
        && a.allowed_ips == b.allowed_ips
        && a.endpoint_host == b.endpoint_host
        && a.endpoint_port == b.endpoint_port
        && a.persistent_keepalive == b.persistent_keepalive
}

impl Control for Managed {
    fn on_ready(&mut self, token: u64, d: &mut Daemon) {
        let now = Instant::now();
        match token {
            UBUS_TOKEN => {
                for _ in 0..UBUS_READS_PER_TURN {
                    if !self.ubus.on_readable() {
                        break;
                    }
                }
                self.ubus.on_writable();
                self.serve_ubus(d);
            }
            DNS4_TOKEN | DNS6_TOKEN => {
                let _ = self.dns_sockets.drain(token, &mut self.dns, now);
                self.run_dns(d, now);
            }
            _ => {}
        }
    }

    fn on_turn(&mut self, d: &mut Daemon, now: Instant) {
        if self.ubus.on_timer(now) {
            if let Some(fd) = self.ubus.fd() {
                if let Err(e) = d.registry().add(fd, UBUS_TOKEN, Interest::ReadWrite) {
                    log::error(format_args!("cannot watch the ubus socket: {e}"));
                }
            }
            for _ in 0..UBUS_READS_PER_TURN {
                if !self.ubus.on_readable() {
                    break;
                }
            }
            self.ubus.on_writable();
        }
        self.serve_ubus(d);
        if now >= self.next_check {
            self.next_check = now + CHECK_EVERY;
            self.check_peers(d, now);
            self.refresh_name_sources();
            self.run_dns(d, now);
        }
    }

    fn next_deadline(&self) -> Option<Instant> {
        let now = Instant::now();
        [
            Some(self.next_check),
            self.ubus.next_deadline(),
            self.dns.next_deadline(),
            self.endpoints.next_deadline(now),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    fn on_gone(&mut self, _d: &mut Daemon, ifname: &str, e: &io::Error) {
        log::error(format_args!("{ifname}: interface gone ({e})"));
        self.forget_endpoints(ifname);
        self.running.remove(ifname);
        let _ = std::fs::remove_file(iface::socket_path(ifname));
    }
}

impl Managed {
    /// On SIGTERM: every interface's UAPI socket goes (the TUNs go with the process).
    pub fn shutdown(&mut self, d: &mut Daemon) {
        let names: Vec<String> = d.slots().map(|s| s.io.ifname().to_string()).collect();
        for n in names {
            self.down(d, &n);
        }
        // A clean stop is not a crash: nothing to hand back to netifd on the next start.
        let _ = std::fs::remove_file(&self.opts.state_file);
    }
}
