//! Unit tests of the reload diff: which peers a new configuration adds, removes, changes or
//! leaves alone, what the interface's own settings become, and which resolvers it outdates.

use super::{named_peers, plan, resolver_outdated};
use crate::openwrt::config::{InterfaceConfig, KeySpec, PeerConfig};
use crate::proto::uapi::{AllowedIpChange, PeerChange, SetRequest};
use std::net::{IpAddr, SocketAddr};
use zeroize::Zeroizing;

fn key(b: u8) -> [u8; 32] {
    [b; 32]
}

/// Peer `b`: key `[b; 32]`, one allowed IP, a literal endpoint, nothing else set.
fn peer(b: u8) -> PeerConfig {
    PeerConfig {
        section: format!("@solowg_wg0[{b}]"),
        public_key: key(b),
        preshared_key: None,
        allowed_ips: vec![(IpAddr::from([10, 0, 0, b]), 32)],
        route_allowed_ips: false,
        endpoint_host: Some(format!("192.0.2.{b}")),
        endpoint_port: 51820,
        persistent_keepalive: 0,
        description: None,
        disabled: false,
    }
}

fn iface(peers: Vec<PeerConfig>) -> InterfaceConfig {
    InterfaceConfig {
        name: "wg0".to_string(),
        private_key: KeySpec::Key(Zeroizing::new(key(0xaa))),
        listen_port: Some(51820),
        addresses: vec![(IpAddr::from([10, 0, 0, 254]), 24)],
        mtu: None,
        fwmark: None,
        ip6prefix: Vec::new(),
        nohostroute: false,
        tunlink: None,
        peers,
    }
}

fn peers(ids: &[u8]) -> Vec<PeerConfig> {
    ids.iter().map(|&b| peer(b)).collect()
}

/// What a device set up from `cfg` holds: its enabled peers.
fn running_of(cfg: &InterfaceConfig) -> Vec<[u8; 32]> {
    cfg.peers
        .iter()
        .filter(|p| !p.disabled)
        .map(|p| p.public_key)
        .collect()
}

/// The request for a reload from `prev` to `new` of a device set up from `prev`.
fn reload(prev: &InterfaceConfig, new: &InterfaceConfig) -> SetRequest {
    plan(new, Some(prev), &running_of(prev))
}

/// The peers the request names, in order, as (key byte, removed).
fn touched(req: &SetRequest) -> Vec<(u8, bool)> {
    req.peers
        .iter()
        .map(|c| (c.public_key[0], c.remove))
        .collect()
}

fn only_change(req: &SetRequest, b: u8) -> &PeerChange {
    assert_eq!(touched(req), [(b, false)]);
    &req.peers[0]
}

fn psk(c: &PeerChange) -> Option<Option<[u8; 32]>> {
    c.preshared_key.as_ref().map(|k| k.as_ref().map(|k| **k))
}

fn ep(s: &str) -> Option<SocketAddr> {
    Some(s.parse().unwrap())
}

fn allowed(list: &[(IpAddr, u8)]) -> Vec<AllowedIpChange> {
    list.iter()
        .map(|&(addr, cidr)| AllowedIpChange {
            addr,
            cidr,
            remove: false,
        })
        .collect()
}

/// A peer sent in full: every setting of `p`, allowed IPs replaced, `endpoint` as given.
fn assert_full(c: &PeerChange, p: &PeerConfig, endpoint: Option<SocketAddr>) {
    assert_eq!(c.public_key, p.public_key);
    assert!(!c.remove && !c.update_only);
    assert_eq!(psk(c), Some(p.preshared_key.as_ref().map(|k| **k)));
    assert_eq!(c.persistent_keepalive, Some(p.persistent_keepalive));
    assert!(c.replace_allowed_ips);
    assert_eq!(c.allowed_ips, allowed(&p.allowed_ips));
    assert_eq!(c.endpoint, endpoint);
}

#[test]
fn unchanged_peers_are_untouched() {
    let prev = iface(peers(&[1, 2]));
    let req = reload(&prev, &iface(peers(&[1, 2])));
    assert!(req.peers.is_empty());
    assert!(!req.replace_peers);
}

#[test]
fn interface_settings_are_always_sent() {
    let prev = iface(peers(&[1]));
    let req = reload(&prev, &iface(peers(&[1])));
    assert_eq!(req.private_key.unwrap().map(|k| *k), Some(key(0xaa)));
    assert_eq!(req.listen_port, Some(51820));
    // An unset fwmark clears one set before.
    assert_eq!(req.fwmark, Some(0));
}

#[test]
fn added_peer_is_sent_in_full() {
    let prev = iface(peers(&[1]));
    let new = iface(peers(&[1, 2]));
    let req = reload(&prev, &new);
    let c = only_change(&req, 2);
    assert_full(c, &new.peers[1], ep("192.0.2.2:51820"));
}

#[test]
fn removed_peer_is_removed_and_nothing_else() {
    let prev = iface(peers(&[1, 2]));
    let req = reload(&prev, &iface(peers(&[1])));
    assert_eq!(touched(&req), [(2, true)]);
    let c = &req.peers[0];
    assert!(c.preshared_key.is_none() && c.persistent_keepalive.is_none());
    assert!(c.endpoint.is_none() && c.allowed_ips.is_empty() && !c.replace_allowed_ips);
}

#[test]
fn removals_come_before_other_changes() {
    let prev = iface(peers(&[1, 2]));
    let req = reload(&prev, &iface(peers(&[3, 1])));
    assert_eq!(touched(&req), [(2, true), (3, false)]);
}

#[test]
fn changed_endpoint_is_set_with_the_rest() {
    let prev = iface(peers(&[1, 2]));
    let mut new = iface(peers(&[1, 2]));
    new.peers[0].endpoint_host = Some("198.51.100.7".to_string());
    let req = reload(&prev, &new);
    assert_full(
        only_change(&req, 1),
        &new.peers[0],
        ep("198.51.100.7:51820"),
    );

    let mut new = iface(peers(&[1, 2]));
    new.peers[1].endpoint_port = 4500;
    let req = reload(&prev, &new);
    assert_full(only_change(&req, 2), &new.peers[1], ep("192.0.2.2:4500"));
}

#[test]
fn ipv6_endpoint_literal_is_set() {
    let prev = iface(peers(&[1]));
    let mut new = iface(peers(&[1]));
    new.peers[0].endpoint_host = Some("2001:db8::1".to_string());
    let req = reload(&prev, &new);
    assert_eq!(only_change(&req, 1).endpoint, ep("[2001:db8::1]:51820"));
}

#[test]
fn changed_allowed_ips_are_replaced_and_the_endpoint_kept() {
    let prev = iface(peers(&[1, 2]));
    let mut new = iface(peers(&[1, 2]));
    new.peers[0].allowed_ips = vec![
        (IpAddr::from([10, 1, 0, 0]), 16),
        ("fd00::1".parse().unwrap(), 128),
    ];
    let req = reload(&prev, &new);
    // No endpoint: one the peer roamed to stays.
    assert_full(only_change(&req, 1), &new.peers[0], None);
}

#[test]
fn changed_keepalive_is_sent_and_the_endpoint_kept() {
    let prev = iface(peers(&[1]));
    let mut new = iface(peers(&[1]));
    new.peers[0].persistent_keepalive = 25;
    let req = reload(&prev, &new);
    let c = only_change(&req, 1);
    assert_eq!(c.persistent_keepalive, Some(25));
    assert_full(c, &new.peers[0], None);
}

#[test]
fn preshared_key_set_changed_or_cleared_is_sent() {
    let with = |k: Option<u8>| {
        let mut c = iface(peers(&[1]));
        c.peers[0].preshared_key = k.map(|b| Zeroizing::new(key(b)));
        c
    };
    for (before, after) in [(None, Some(7)), (Some(7), Some(8)), (Some(7), None)] {
        let new = with(after);
        let req = reload(&with(before), &new);
        let c = only_change(&req, 1);
        assert_eq!(psk(c), Some(after.map(key)));
        assert_full(c, &new.peers[0], None);
    }
    let req = reload(&with(Some(7)), &with(Some(7)));
    assert!(req.peers.is_empty());
}

#[test]
fn private_key_change_leaves_peers_alone() {
    let prev = iface(peers(&[1, 2]));
    let mut new = iface(peers(&[1, 2]));
    new.private_key = KeySpec::Key(Zeroizing::new(key(0xbb)));
    let req = reload(&prev, &new);
    assert_eq!(req.private_key.unwrap().map(|k| *k), Some(key(0xbb)));
    assert!(req.peers.is_empty());
}

#[test]
fn key_still_to_generate_is_not_sent() {
    let prev = iface(peers(&[1]));
    let mut new = iface(peers(&[1]));
    new.private_key = KeySpec::Generate;
    assert!(reload(&prev, &new).private_key.is_none());
}

#[test]
fn listen_port_and_fwmark_changes_leave_peers_alone() {
    let prev = iface(peers(&[1, 2]));
    let mut new = iface(peers(&[1, 2]));
    new.listen_port = Some(51821);
    new.fwmark = Some(0x42);
    let req = reload(&prev, &new);
    assert_eq!(req.listen_port, Some(51821));
    assert_eq!(req.fwmark, Some(0x42));
    assert!(req.peers.is_empty());

    // No port in the file: none asked for, the device keeps the one it has.
    new.listen_port = None;
    assert_eq!(reload(&prev, &new).listen_port, None);
}

#[test]
fn peer_order_alone_changes_nothing() {
    let prev = iface(peers(&[1, 2, 3]));
    let req = reload(&prev, &iface(peers(&[3, 1, 2])));
    assert!(req.peers.is_empty());
}

#[test]
fn description_route_flag_and_section_do_not_matter() {
    let prev = iface(peers(&[1]));
    let mut new = iface(peers(&[1]));
    let p = &mut new.peers[0];
    p.description = Some("laptop".to_string());
    p.route_allowed_ips = true;
    p.section = "laptop".to_string();
    assert!(reload(&prev, &new).peers.is_empty());
}

#[test]
fn disabled_peer_is_removed_and_enabled_again_is_added() {
    let prev = iface(peers(&[1, 2]));
    let mut off = iface(peers(&[1, 2]));
    off.peers[1].disabled = true;
    assert_eq!(touched(&reload(&prev, &off)), [(2, true)]);

    let new = iface(peers(&[1, 2]));
    let req = reload(&off, &new);
    assert_full(only_change(&req, 2), &new.peers[1], ep("192.0.2.2:51820"));
}

#[test]
fn peer_disabled_before_counts_as_new_even_if_the_device_has_it() {
    let mut prev = iface(peers(&[1, 2]));
    prev.peers[1].disabled = true;
    let new = iface(peers(&[1, 2]));
    let req = plan(&new, Some(&prev), &[key(1), key(2)]);
    assert_full(only_change(&req, 2), &new.peers[1], ep("192.0.2.2:51820"));
}

#[test]
fn peer_removed_behind_our_back_is_added_again_with_its_endpoint() {
    let cfg = iface(peers(&[1, 2]));
    let req = plan(&iface(peers(&[1, 2])), Some(&cfg), &[key(1)]);
    assert_full(only_change(&req, 2), &cfg.peers[1], ep("192.0.2.2:51820"));
}

#[test]
fn peer_added_behind_our_back_is_removed() {
    let cfg = iface(peers(&[1]));
    let req = plan(&iface(peers(&[1])), Some(&cfg), &[key(1), key(9)]);
    assert_eq!(touched(&req), [(9, true)]);
}

#[test]
fn without_previous_configuration_every_enabled_peer_is_sent_in_full() {
    let mut new = iface(peers(&[1, 2, 3]));
    new.peers[1].disabled = true;
    // A fresh device, then one that already has peer 1 and a peer 9 unknown to the file.
    let fresh = plan(&new, None, &[]);
    let known = plan(&new, None, &[key(1), key(9)]);
    assert_eq!(touched(&fresh), [(1, false), (3, false)]);
    assert_eq!(touched(&known), [(9, true), (1, false), (3, false)]);
    for sent in [&fresh.peers[..], &known.peers[1..]] {
        assert_full(&sent[0], &new.peers[0], ep("192.0.2.1:51820"));
        assert_full(&sent[1], &new.peers[2], ep("192.0.2.3:51820"));
    }
}

#[test]
fn host_name_endpoint_is_left_to_the_resolver() {
    let prev = iface(peers(&[1]));
    let mut named = iface(peers(&[1, 2]));
    named.peers[0].endpoint_host = Some("vpn.example.org".to_string());
    named.peers[1].endpoint_host = Some("other.example.org".to_string());
    let req = reload(&prev, &named);
    // Peer 1 changed from an address to a name, peer 2 is new: neither gets an endpoint.
    assert_eq!(touched(&req), [(1, false), (2, false)]);
    assert_full(&req.peers[0], &named.peers[0], None);
    assert_full(&req.peers[1], &named.peers[1], None);
}

#[test]
fn endpoint_option_removed_sets_no_endpoint() {
    let prev = iface(peers(&[1]));
    let mut new = iface(peers(&[1]));
    new.peers[0].endpoint_host = None;
    let req = reload(&prev, &new);
    // The peer is sent again, but the device keeps the endpoint it has.
    assert_full(only_change(&req, 1), &new.peers[0], None);
}

/// Interface with peer 1 at `host`:`port` (plus peer 2 at an address).
fn named_iface(host: &str, port: u16) -> InterfaceConfig {
    let mut c = iface(peers(&[1, 2]));
    c.peers[0].endpoint_host = Some(host.to_string());
    c.peers[0].endpoint_port = port;
    c
}

#[test]
fn named_peers_are_the_enabled_ones_with_a_host_name() {
    let mut c = iface(peers(&[1, 2, 3, 4, 5]));
    c.peers[0].endpoint_host = Some("a.example.org".to_string());
    c.peers[1].endpoint_host = Some("2001:db8::2".to_string());
    c.peers[2].endpoint_host = None;
    c.peers[3].endpoint_host = Some("d.example.org".to_string());
    c.peers[3].disabled = true;
    let named: Vec<u8> = named_peers(&c).iter().map(|p| p.public_key[0]).collect();
    assert_eq!(named, [1]);
}

#[test]
fn resolver_kept_while_name_and_port_stay() {
    let prev = named_iface("a.example.org", 51820);
    let new = named_iface("a.example.org", 51820);
    assert!(!resolver_outdated(&key(1), &named_peers(&new), Some(&prev)));
}

#[test]
fn resolver_outdated_by_a_new_name_or_port() {
    let prev = named_iface("a.example.org", 51820);
    for new in [
        named_iface("b.example.org", 51820),
        named_iface("a.example.org", 4500),
    ] {
        assert!(resolver_outdated(&key(1), &named_peers(&new), Some(&prev)));
    }
}

#[test]
fn resolver_outdated_when_the_peer_no_longer_has_a_name() {
    let prev = named_iface("a.example.org", 51820);
    let mut gone = iface(peers(&[2]));
    gone.peers[0].endpoint_host = Some("b.example.org".to_string());
    let mut disabled = named_iface("a.example.org", 51820);
    disabled.peers[0].disabled = true;
    let address = named_iface("192.0.2.1", 51820);
    for new in [gone, disabled, address] {
        assert!(resolver_outdated(&key(1), &named_peers(&new), Some(&prev)));
        assert!(resolver_outdated(&key(1), &named_peers(&new), None));
    }
}

#[test]
fn resolver_kept_when_there_is_nothing_to_compare_with() {
    let new = named_iface("b.example.org", 51820);
    assert!(!resolver_outdated(&key(1), &named_peers(&new), None));
    let prev = iface(peers(&[2]));
    assert!(!resolver_outdated(&key(1), &named_peers(&new), Some(&prev)));
}
