//! TX path: a packet from the TUN device becomes a data message, encrypted in place.
//!
//! Buffer contract: the caller reads the TUN packet into `buf[HEADROOM..HEADROOM + len]`,
//! and `buf` has room for 15 bytes of padding and the 16-byte tag after it. On success the
//! datagram is `buf[..n]`: header in the headroom, ciphertext where the packet was, tag last.

use crate::crypto;
use crate::log;
use crate::proto::device::{Device, DropReason, Pending, Verdict};
use crate::proto::noise;
use crate::proto::peer::{short_key, PeerId};
use crate::proto::wire::{self, HEADROOM};
use std::net::SocketAddr;
use std::time::{Instant, UNIX_EPOCH};

impl Device {
    /// Routes and encrypts one outbound packet (`len` bytes at `buf[HEADROOM..]`).
    pub fn encapsulate(&mut self, now: Instant, buf: &mut [u8], len: usize) -> Verdict {
        let Some(packet) = buf.get(HEADROOM..HEADROOM + len) else {
            return self.count_drop(DropReason::TooBig);
        };
        let Some(ip) = wire::inner_ip(packet) else {
            return self.count_drop(DropReason::NotIp);
        };
        let Some(id) = self.routes.lookup_bytes(ip.dst) else {
            return self.count_drop(DropReason::NoRoute);
        };
        let ready = self.peer(id).is_some_and(|p| {
            p.keypairs.current.as_ref().is_some_and(|k| k.can_send(now)) && p.endpoint.is_some()
        });
        if ready {
            return self.seal_data(id, now, buf, len, true);
        }
        if self.peer(id).is_some_and(|p| p.endpoint.is_none()) {
            return self.count_drop(DropReason::NoEndpoint);
        }
        self.stage(id, &buf[HEADROOM..HEADROOM + len]);
        self.request_handshake(id, now, false);
        Verdict::Done
    }

    /// Keeps a copy of a packet until the peer has a session; the oldest goes when full.
    fn stage(&mut self, id: PeerId, packet: &[u8]) {
        for _ in 0..self.staging.push(id, packet) {
            self.count_drop(DropReason::StagedOverflow);
        }
    }

    /// Encrypts `buf[HEADROOM..HEADROOM + len]` under the peer's current keypair. `len == 0`
    /// is a keepalive. The caller checked that a usable keypair and endpoint exist.
    fn seal_data(
        &mut self,
        id: PeerId,
        now: Instant,
        buf: &mut [u8],
        len: usize,
        is_data: bool,
    ) -> Verdict {
        let mtu = self.mtu;
        // The peer through its field, not `peer_mut`, so that `self.rng` stays usable below.
        let Some(peer) = self.peers.get_mut(id.0).and_then(Option::as_mut) else {
            return Verdict::Done;
        };
        let (Some(kp), Some(to)) = (peer.keypairs.current.as_mut(), peer.endpoint) else {
            return Verdict::Done;
        };
        let padded = wire::padded_len(len, mtu);
        let total = HEADROOM + padded + crypto::TAG_LEN;
        if buf.len() < total {
            return self.count_drop(DropReason::TooBig);
        }
        let counter = kp.send_counter;
        kp.send_counter += 1;
        if padded > len {
            // Not a call to memset for nothing: full-size packets need no padding.
            buf[HEADROOM + len..HEADROOM + padded].fill(0);
        }
        wire::put_type(buf, wire::MSG_DATA);
        wire::put_u32(buf, wire::data::RECEIVER, kp.remote_index);
        wire::put_u64(buf, wire::data::COUNTER, counter);
        let (body, tail) = buf[HEADROOM..total].split_at_mut(padded);
        let tag = crypto::seal(&kp.send_key, counter, &[], body);
        tail.copy_from_slice(&tag);
        let rekey = kp.wants_rekey_on_send(now);

        peer.tx_bytes += total as u64;
        // Only a newly armed timer can move the earliest deadline forward. The jitter is drawn
        // only for a timer being armed: the CSPRNG costs per packet.
        let mut armed =
            is_data && peer.timers.data_sent_arms() && peer.timers.data_sent(now, self.rng.u32());
        peer.timers.any_authenticated_packet_sent();
        armed |= peer.timers.any_authenticated_packet_traversal(now);
        if armed {
            self.note_deadline(id);
        }
        if rekey {
            self.request_handshake(id, now, false);
        }
        Verdict::SendUdp { to, len: total }
    }

    /// Builds the next queued control message (initiation, keepalive or a staged packet) into
    /// `buf` (at least 148 bytes plus room for a full packet when peers stage packets).
    /// Call until it returns `None` after every batch of input and after `update_timers`.
    pub fn poll_output(&mut self, now: Instant, buf: &mut [u8]) -> Option<(SocketAddr, usize)> {
        while let Some(p) = self.pending.pop_front() {
            let out = match p {
                Pending::Initiation(id) => self.build_initiation(id, now, buf),
                Pending::Keepalive(id) => self.build_keepalive(id, now, buf),
                Pending::Flush(id) => self.build_flush(id, now, buf),
            };
            if out.is_some() {
                return out;
            }
        }
        None
    }

    fn build_initiation(
        &mut self,
        id: PeerId,
        now: Instant,
        buf: &mut [u8],
    ) -> Option<(SocketAddr, usize)> {
        if buf.len() < wire::INITIATION_LEN {
            return None;
        }
        let to = self.peer(id)?.endpoint?;
        self.identity.as_ref()?;
        let old = self.peer(id)?.handshake.local_index;
        if old != 0 {
            self.indices.remove(&old);
        }
        let index = self.new_index(id);
        let ephemeral = self.rng.private_key();
        let wall = self
            .wall(now)
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let stamp = noise::tai64n(wall.as_secs(), wall.subsec_nanos());
        let jitter = self.rng.u32();
        let identity = self.identity.as_ref()?;
        let peer = self.peers.get_mut(id.0)?.as_mut()?;
        let msg = &mut buf[..wire::INITIATION_LEN];
        if !peer
            .handshake
            .create_initiation(identity, ephemeral, stamp, index, msg)
        {
            self.indices.remove(&index);
            return None;
        }
        self.last_sent_timestamp = self
            .last_sent_timestamp
            .max(peer.handshake.last_sent_timestamp);
        peer.cookie.add_macs(msg, now);
        peer.tx_bytes += wire::INITIATION_LEN as u64;
        peer.timers.any_authenticated_packet_traversal(now);
        peer.timers.any_authenticated_packet_sent();
        peer.timers.handshake_initiated(now, jitter);
        log::verbose(format_args!(
            "{}: sending handshake initiation",
            short_key(&peer.public_key)
        ));
        self.note_deadline(id);
        Some((to, wire::INITIATION_LEN))
    }

    fn build_keepalive(
        &mut self,
        id: PeerId,
        now: Instant,
        buf: &mut [u8],
    ) -> Option<(SocketAddr, usize)> {
        let peer = self.peer(id)?;
        if self.staging.has(id) {
            return self.build_flush(id, now, buf);
        }
        let ready = peer
            .keypairs
            .current
            .as_ref()
            .is_some_and(|k| k.can_send(now));
        if !ready {
            // Like the kernel: a keepalive with no session means "get a session".
            self.request_handshake(id, now, false);
            return None;
        }
        match self.seal_data(id, now, buf, 0, false) {
            Verdict::SendUdp { to, len } => Some((to, len)),
            _ => None,
        }
    }

    fn build_flush(
        &mut self,
        id: PeerId,
        now: Instant,
        buf: &mut [u8],
    ) -> Option<(SocketAddr, usize)> {
        let peer = self.peer(id)?;
        let ready = peer
            .keypairs
            .current
            .as_ref()
            .is_some_and(|k| k.can_send(now));
        if !ready {
            if self.staging.has(id) {
                self.request_handshake(id, now, false);
            }
            return None;
        }
        let copied = self.staging.pop(id, |packet| {
            let dst = buf.get_mut(HEADROOM..HEADROOM + packet.len())?;
            dst.copy_from_slice(packet);
            Some(packet.len())
        })?;
        let more = self.staging.has(id);
        let out = match copied {
            Some(len) => self.seal_data(id, now, buf, len, true),
            None => self.count_drop(DropReason::TooBig),
        };
        if more {
            self.pending.push_front(Pending::Flush(id));
        }
        match out {
            Verdict::SendUdp { to, len } => Some((to, len)),
            _ if more => self.poll_output(now, buf),
            _ => None,
        }
    }
}
