//! Endpoints given as host names: a resolver per peer, the resolved address applied to the
//! device, name sources re-read, and the host route netifd keeps for an endpoint.

use super::diff;
use super::managed::{Managed, NamedEndpoint};
use super::object::NOTIFY_PROTO;
use crate::daemon::event_loop::Daemon;
use crate::log;
use crate::openwrt::blobmsg::Value;
use crate::openwrt::config::InterfaceConfig;
use crate::openwrt::dns::{self, EndpointResolver};
use crate::proto::uapi::{PeerChange, SetRequest};
use std::net::IpAddr;
use std::time::Instant;

impl Managed {
    /// Starts name resolution for peers whose endpoint is a host name (new or changed).
    pub(super) fn sync_endpoints(
        &mut self,
        icfg: &InterfaceConfig,
        prev: Option<&InterfaceConfig>,
    ) {
        let name = &icfg.name;
        let wanted = diff::named_peers(icfg);
        // Drop resolvers of peers that went or whose name changed.
        let stale: Vec<u64> = self
            .named
            .iter()
            .filter(|(_, n)| &n.ifname == name)
            .filter(|(_, n)| diff::resolver_outdated(&n.public_key, &wanted, prev))
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

    pub(super) fn forget_endpoints(&mut self, ifname: &str) {
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

    /// Static names and name servers can change at any time (at boot, DHCP on the WAN):
    /// read them again while some endpoint is a name. Small files, once a second.
    pub(super) fn refresh_name_sources(&mut self) {
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

    pub(super) fn run_dns(&mut self, d: &mut Daemon, now: Instant) {
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

    /// An endpoint address learnt from DNS needs the host route netifd keeps for endpoints
    /// (action 6 of notify_proto, as the handler announces literal ones), or a tunnel that
    /// routes 0.0.0.0/0 would carry its own encrypted packets. Sent over the daemon's own
    /// ubus connection: no child process, and ubusd's ACL for the daemon's user grants
    /// exactly this call.
    fn host_dependency(&mut self, ifname: &str, ip: IpAddr) {
        let Some(cfg) = self.running.get(ifname) else {
            return;
        };
        if cfg.nohostroute {
            return;
        }
        let mut msg = vec![
            ("action".to_string(), Value::Int(6)),
            ("interface".to_string(), Value::str(ifname)),
            ("host".to_string(), Value::str(ip.to_string())),
        ];
        if let Some(t) = &cfg.tunlink {
            msg.push(("ifname".to_string(), Value::str(t)));
        }
        if let Err(e) = self.ubus.call(NOTIFY_PROTO.0, NOTIFY_PROTO.1, &msg) {
            log::error(format_args!(
                "{ifname}: cannot ask netifd for the host route to {ip}: {e}"
            ));
        }
    }
}
