//! The reload diff: what a new configuration of one interface changes on the running device
//! and which endpoint resolvers it outdates, worked out from configurations alone (no daemon,
//! no I/O), so that peers that did not change are not touched and keep their sessions.

use crate::openwrt::config::{InterfaceConfig, KeySpec, PeerConfig};
use crate::proto::uapi::{AllowedIpChange, PeerChange, SetRequest};
use std::net::{IpAddr, SocketAddr};

#[cfg(test)]
mod tests;

/// The request that brings a running interface to `icfg`. `prev` is what it was set up from
/// (None: fresh, every enabled peer is sent in full). `running` holds the public keys of the
/// peers the device has now, which the configurations alone cannot tell: peers it has that
/// `icfg` does not enable are removed (removals first), and a peer it lacks is sent in full.
pub(super) fn plan(
    icfg: &InterfaceConfig,
    prev: Option<&InterfaceConfig>,
    running: &[[u8; 32]],
) -> SetRequest {
    // The interface's own settings are always sent; the device ignores those it already has.
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
    for key in running {
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
    req
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

/// The enabled peers whose endpoint is a host name rather than an address: each needs a
/// resolver.
pub(super) fn named_peers(icfg: &InterfaceConfig) -> Vec<&PeerConfig> {
    icfg.peers
        .iter()
        .filter(|p| {
            !p.disabled
                && p.endpoint_host
                    .as_deref()
                    .is_some_and(|h| h.parse::<IpAddr>().is_err())
        })
        .collect()
}

/// Whether the resolver kept for peer `key` has to go: the peer is no longer among `wanted`
/// (see [`named_peers`]), or its endpoint name or port differs from `prev`'s. Without an
/// entry in `prev` to compare with, a peer still wanted keeps its resolver.
pub(super) fn resolver_outdated(
    key: &[u8; 32],
    wanted: &[&PeerConfig],
    prev: Option<&InterfaceConfig>,
) -> bool {
    let now_cfg = wanted.iter().find(|p| &p.public_key == key);
    let before = prev.and_then(|pc| pc.peers.iter().find(|q| &q.public_key == key));
    match (now_cfg, before) {
        (None, _) => true,
        (Some(p), Some(b)) => {
            p.endpoint_host != b.endpoint_host || p.endpoint_port != b.endpoint_port
        }
        (Some(_), None) => false,
    }
}
