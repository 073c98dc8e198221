//! The daemon glue of managed mode: the `Managed` control hook of the event loop (ubus and
//! DNS sockets, the once-a-second checks), applying a configuration to a running interface,
//! and the clean stop.

use super::diff;
use super::object::{EVENT_HANDSHAKE, EVENT_STALE};
// Through the parent's re-exports, which nothing else uses without the `internals` feature.
use super::{object_spec, OBJECT};
use crate::crypto::Rng;
use crate::daemon::event_loop::{Control, Daemon, CONTROL_TOKEN};
use crate::daemon::iface;
use crate::log;
use crate::openwrt::blobmsg::Value;
use crate::openwrt::config::InterfaceConfig;
use crate::openwrt::dns::{self, DnsSockets, Endpoints, Resolver};
use crate::openwrt::ubus::{self, Event, UbusClient};
use crate::proto::peer::base64;
use crate::proto::timers::REJECT_AFTER_TIME;
use crate::sys::poller::Interest;
use std::collections::HashMap;
use std::io;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const UBUS_TOKEN: u64 = CONTROL_TOKEN;
const DNS4_TOKEN: u64 = CONTROL_TOKEN + 1;
const DNS6_TOKEN: u64 = CONTROL_TOKEN + 2;
/// How often handshake events, stale peers and endpoint names are looked at.
const CHECK_EVERY: Duration = Duration::from_secs(1);
/// ubus reads per readiness report (each up to 16 KiB); the rest waits for the next turn.
const UBUS_READS_PER_TURN: usize = 8;

/// Where the configuration lives.
pub struct Options {
    /// Directory of the network file (`<dir>/network`): /etc/config, or where root hands
    /// over its `proto solowg` sections when the daemon runs as its own user (`handover`).
    pub config_dir: PathBuf,
    pub ubus_socket: PathBuf,
    /// Names of the interfaces that are up, kept on tmpfs (see `state.rs`).
    pub state_file: PathBuf,
    /// Where the UAPI sockets are bound: /var/run/wireguard, or with `--user` the config
    /// directory (root's `solowg export` links the shared names to them).
    pub socket_dir: PathBuf,
}

/// A peer whose endpoint is a host name, by interface and public key.
#[derive(Clone)]
pub(super) struct NamedEndpoint {
    pub(super) ifname: String,
    pub(super) public_key: [u8; 32],
}

pub struct Managed {
    pub(super) opts: Options,
    pub(super) ubus: UbusClient,
    /// The configuration each running interface was last set up from.
    pub(super) running: HashMap<String, InterfaceConfig>,
    pub(super) rng: Rng,
    pub(super) dns: Resolver,
    pub(super) dns_sockets: DnsSockets,
    pub(super) endpoints: Endpoints<u64>,
    pub(super) named: HashMap<u64, NamedEndpoint>,
    pub(super) next_endpoint_id: u64,
    next_check: Instant,
    /// Per interface, per peer: last handshake (unix seconds) reported, and whether the peer
    /// was reported stale since. Keyed by interface first so the once-a-second check finds
    /// a peer's entry without building a key per peer.
    pub(super) seen: HashMap<String, HashMap<[u8; 32], (u64, bool)>>,
}

impl Managed {
    pub fn new(opts: Options) -> io::Result<Managed> {
        let ubus = UbusClient::new(opts.ubus_socket.clone(), object_spec());
        let mut rng = Rng::from_os()?;
        // The other generators' seeds come from this one and are wiped after use.
        let mut seed = zeroize::Zeroizing::new([0u8; 32]);
        rng.fill(&mut seed[..]);
        let dns_rng = Rng::from_seed(*seed);
        rng.fill(&mut seed[..]);
        let ep_rng = Rng::from_seed(*seed);
        Ok(Managed {
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
        })
    }

    /// Brings a running interface to `icfg`: `prev` is what it was set up from (None: fresh).
    /// Peers that did not change are not touched, so their sessions survive.
    pub(super) fn apply(
        &mut self,
        d: &mut Daemon,
        icfg: &InterfaceConfig,
        prev: Option<&InterfaceConfig>,
    ) -> Result<(), String> {
        let name = icfg.name.as_str();
        let running: Vec<[u8; 32]> = d
            .get(name)
            .map(|s| s.dev.peer_states().map(|p| *p.public_key).collect())
            .unwrap_or_default();
        let req = diff::plan(icfg, prev, &running);
        d.apply(name, req).map_err(|errno| {
            format!(
                "{name}: configuration refused: {}",
                io::Error::from_raw_os_error(errno)
            )
        })?;
        self.sync_endpoints(icfg, prev);
        Ok(())
    }

    fn serve_ubus(&mut self, d: &mut Daemon) {
        while let Some(ev) = self.ubus.poll_event() {
            match ev {
                Event::Registered { .. } => {
                    log::info(format_args!("ubus object '{OBJECT}' registered"));
                }
                Event::Invoke {
                    method,
                    args,
                    token,
                } => self.answer(d, &method, &args, token),
                Event::CallDone {
                    path,
                    method,
                    status,
                } => {
                    if status != 0 {
                        log::error(format_args!(
                            "ubus: {path} {method} refused: {} ({status})",
                            ubus::status_text(status)
                        ));
                    }
                }
            }
        }
    }

    /// Once a second: handshake and stale events, stalled peers re-resolved. Reads only
    /// each peer's handshake time (`peer_states`), and allocates only for events to send.
    fn check_peers(&mut self, d: &mut Daemon, now: Instant) {
        let unix = unix_now();
        let stale_after = REJECT_AFTER_TIME.as_secs();
        let stalled = |hs: u64| hs == 0 || unix.saturating_sub(hs) > stale_after;
        let mut events = Vec::new();
        for s in d.slots() {
            let name = s.io.ifname();
            if !self.seen.contains_key(name) {
                self.seen.insert(name.to_string(), HashMap::new());
            }
            let Some(seen) = self.seen.get_mut(name) else {
                continue;
            };
            for p in s.dev.peer_states() {
                let Some((hs, _)) = p.last_handshake else {
                    continue;
                };
                let entry = seen.entry(*p.public_key).or_insert((0, false));
                if hs != 0 && hs != entry.0 {
                    *entry = (hs, false);
                    events.push((EVENT_HANDSHAKE, name.to_string(), *p.public_key));
                } else if hs != 0 && !entry.1 && stalled(hs) {
                    entry.1 = true;
                    events.push((EVENT_STALE, name.to_string(), *p.public_key));
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
            let hs = d
                .get(&n.ifname)
                .and_then(|s| s.dev.peer_state(&n.public_key))
                .map(|p| p.last_handshake.map_or(0, |(t, _)| t));
            // A peer the device does not have (yet) is not stalled.
            if hs.is_some_and(stalled) {
                self.endpoints.note_handshake_stalled(*id, now);
            } else {
                self.endpoints.note_handshake_completed(*id, now);
            }
        }
    }

    /// On SIGTERM: every interface's UAPI socket goes (the TUNs go with the process).
    pub fn shutdown(&mut self, d: &mut Daemon) {
        // The object first: netifd reacts to the TUNs going by calling `down` and `up`, which
        // must find no object (fail at once, wait for the next daemon) rather than this one,
        // which no longer answers.
        self.ubus.close();
        let names: Vec<String> = d.slots().map(|s| s.io.ifname().to_string()).collect();
        for n in names {
            self.down(d, &n);
        }
        // Nothing is up any more.
        let _ = std::fs::remove_file(&self.opts.state_file);
    }
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
        self.seen.remove(ifname);
        let _ = std::fs::remove_file(iface::socket_path_in(&self.opts.socket_dir, ifname));
    }
}

/// A reply's or event's table from borrowed keys.
pub(super) fn table(entries: Vec<(&str, Value)>) -> Vec<(String, Value)> {
    entries
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
}

/// Seconds since 1970 by the wall clock (0 if it is set before).
pub(super) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
