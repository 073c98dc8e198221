//! Configuration changes (`set=1`), applied whole or in slices between packet batches.

use super::Device;
use super::Pending;
use crate::log;
use crate::proto::allowedips::AllowedIps;
use crate::proto::noise::Identity;
use crate::proto::peer::short_key;
use crate::proto::peer::Peer;
use crate::proto::peer::PeerId;
use crate::proto::uapi::SetRequest;
#[cfg(any(test, feature = "internals"))]
use std::time::Instant;

/// Where an `apply` spread over loop turns stands (see `Device::apply_begin`).
#[derive(Clone, Copy, Debug)]
pub struct ApplyProgress {
    /// The next peer change of the request.
    next: usize,
    /// The interface's public key as the request set it: a peer of that key is skipped.
    own: Option<[u8; 32]>,
    pub applied: Applied,
}

impl ApplyProgress {
    /// Peer changes applied so far.
    pub fn done(&self) -> usize {
        self.next
    }
}

/// What `apply` changed that the I/O shell must act on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Applied {
    pub listen_port_changed: bool,
    pub fwmark_changed: bool,
}

impl Device {
    /// Applies a validated `set=1` request as a whole. The shell has already bound a new
    /// listen port if one was requested, so nothing here can fail half-way. (The daemon
    /// itself goes through `apply_begin` and `apply_peers`.)
    #[cfg(any(test, feature = "internals"))]
    pub fn apply(&mut self, req: &SetRequest, now: Instant) -> Applied {
        let mut p = self.apply_begin(req);
        while !self.apply_peers(req, &mut p, usize::MAX) {}
        let _ = now;
        p.applied
    }

    /// The first part of `apply`: the interface's own settings and, for `replace_peers`,
    /// the removal of every peer. The peers' changes follow through `apply_peers`, which
    /// the shell calls in slices between packet batches for a long request: the result is
    /// the same as `apply`'s, only spread over loop turns.
    pub fn apply_begin(&mut self, req: &SetRequest) -> ApplyProgress {
        let mut applied = Applied::default();
        if let Some(key) = &req.private_key {
            self.set_private_key(key.as_ref().map(|k| **k));
        }
        if let Some(port) = req.listen_port {
            applied.listen_port_changed = port != self.listen_port;
            self.listen_port = port;
        }
        if let Some(mark) = req.fwmark {
            applied.fwmark_changed = mark != self.fwmark;
            self.fwmark = mark;
        }
        if req.replace_peers {
            // The whole table at once: removing each peer's prefixes walks the trie, so
            // peer by peer that was quadratic in the number of peers.
            self.routes = AllowedIps::new();
            let ids: Vec<PeerId> = self.peer_ids().collect();
            for id in ids {
                self.remove_peer(id);
            }
        }
        ApplyProgress {
            next: 0,
            own: self.public_key(),
            applied,
        }
    }

    /// Applies up to `max` more of the request's peer changes; true once all are applied.
    pub fn apply_peers(&mut self, req: &SetRequest, p: &mut ApplyProgress, max: usize) -> bool {
        let end = p.next.saturating_add(max).min(req.peers.len());
        for change in &req.peers[p.next..end] {
            if Some(change.public_key) == p.own {
                continue;
            }
            let existing = self.peer_id(&change.public_key);
            if change.remove {
                if let Some(id) = existing {
                    self.remove_peer(id);
                }
                continue;
            }
            let id = match existing {
                Some(id) => id,
                None if change.update_only => continue,
                None => self.add_peer(change.public_key),
            };
            // A new peer has no prefixes (`remove_peer` takes them with it), and finding a
            // peer's prefixes walks the whole trie: wg sends replace_allowed_ips for every
            // peer, which made a large addconf or setconf quadratic.
            if change.replace_allowed_ips && existing.is_some() {
                self.routes.remove_value(id);
            }
            for a in &change.allowed_ips {
                if a.remove {
                    self.routes.remove(a.addr, a.cidr, id);
                } else {
                    self.routes.insert(a.addr, a.cidr, id);
                }
            }
            let Some(peer) = self.peer_mut(id) else {
                continue;
            };
            if let Some(psk) = &change.preshared_key {
                *peer.handshake.psk = psk.as_ref().map_or([0; 32], |k| **k);
            }
            if let Some(ep) = change.endpoint {
                peer.endpoint = Some(crate::proto::endpoint::canonical(ep));
            }
            if let Some(interval) = change.persistent_keepalive {
                let was_off = peer.timers.keepalive_interval == 0;
                peer.timers.keepalive_interval = interval;
                if interval == 0 {
                    peer.timers.persistent_keepalive = None;
                } else if was_off && self.identity.is_some() {
                    // Turning it on sends one at once, as the kernel does.
                    self.pending.push_back(Pending::Keepalive(id));
                }
            }
        }
        p.next = end;
        end == req.peers.len()
    }

    fn set_private_key(&mut self, key: Option<[u8; 32]>) {
        let new_public = key.map(|k| crate::crypto::public_key(&k));
        if self.identity.as_ref().map(|i| i.public) == new_public && key.is_some() {
            return; // unchanged: keep every session (wg syncconf relies on this)
        }
        self.identity = key.map(Identity::new);
        self.checker.set_public(new_public.as_ref());
        // A peer with our own public key cannot exist.
        if let Some(id) = new_public.and_then(|p| self.peer_id(&p)) {
            self.remove_peer(id);
        }
        let ids: Vec<PeerId> = self.peer_ids().collect();
        for id in ids {
            let Some(peer) = self.peers[id.0].as_mut() else {
                continue;
            };
            let old_hs = peer.handshake.local_index;
            peer.handshake.set_identity(self.identity.as_ref());
            let dropped = peer.keypairs.clear();
            peer.timers.stop_all();
            self.forget_indices(&dropped);
            self.forget_indices(&[Some(old_hs).filter(|&i| i != 0)]);
        }
        log::info(format_args!(
            "interface key {}",
            if key.is_some() { "set" } else { "removed" }
        ));
    }

    pub fn add_peer(&mut self, public_key: [u8; 32]) -> PeerId {
        if let Some(id) = self.peer_id(&public_key) {
            return id;
        }
        let mut peer = Peer::new(self.identity.as_ref(), public_key);
        peer.handshake.last_sent_timestamp = self.last_sent_timestamp;
        let slot = loop {
            match self.free.pop() {
                Some(i) if self.peers.get(i).is_some_and(Option::is_none) => break Some(i),
                Some(_) => continue, // shrunk away or taken since
                None => break None,
            }
        };
        let id = match slot {
            Some(i) => {
                self.peers[i] = Some(peer);
                PeerId(i)
            }
            None => {
                self.peers.push(Some(peer));
                PeerId(self.peers.len() - 1)
            }
        };
        self.by_key.insert(public_key, id);
        log::verbose(format_args!("{} created", short_key(&public_key)));
        id
    }

    pub fn remove_peer(&mut self, id: PeerId) {
        let Some(mut peer) = self.peers.get_mut(id.0).and_then(Option::take) else {
            return;
        };
        self.free.push(id.0);
        self.by_key.remove(&peer.public_key);
        self.routes.remove_value(id);
        let dropped = peer.keypairs.clear();
        self.forget_indices(&dropped);
        if peer.handshake.local_index != 0 {
            self.indices.remove(&peer.handshake.local_index);
        }
        self.pending.retain(|p| match p {
            Pending::Initiation(i) | Pending::Keepalive(i) | Pending::Flush(i) => *i != id,
        });
        self.staging.clear(id);
        self.shrink_tables();
        log::verbose(format_args!("{} removed", short_key(&peer.public_key)));
    }

    /// After removals: gives back the memory of tables sized for many more peers than are
    /// left (halving at most, so removing peers one by one costs O(1) each, amortised).
    fn shrink_tables(&mut self) {
        while matches!(self.peers.last(), Some(None)) {
            self.peers.pop();
        }
        let n = self.peers.len();
        if self.peers.capacity() >= 4 * n.max(8) {
            self.peers.shrink_to(2 * n);
        }
        // Stale entries are skipped when taken; keep the list from outgrowing the table.
        if self.free.len() > 2 * n.max(8) {
            self.free.retain(|&i| i < n);
            self.free.shrink_to(2 * n);
        }
        let n = self.by_key.len();
        if self.by_key.capacity() >= 4 * n.max(8) {
            self.by_key.shrink_to(2 * n);
        }
        let n = self.indices.len();
        if self.indices.capacity() >= 4 * n.max(8) {
            self.indices.shrink_to(2 * n);
        }
    }
}
