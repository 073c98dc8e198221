//! RX path: a UDP datagram becomes a handshake step, a cookie, or a decrypted packet for
//! the TUN device. The order of checks follows the Linux driver: size and type, mac1, load
//! (cookie and rate limit), crypto, replay window, endpoint, key confirmation, inner IP
//! sanity, allowed-IPs source check. Every failure is a counted drop.

use crate::crypto;
use crate::log;
use crate::proto::device::{Device, DropReason, Pending, Verdict};
use crate::proto::noise;
use crate::proto::peer::{short_key, PeerId};
use crate::proto::wire::{self, Kind};
use std::net::SocketAddr;
use std::time::Instant;

impl Device {
    /// Handles the datagram `buf[..len]` from `src`. Replies are written over the datagram in
    /// `buf` (so `buf` must be at least 148 bytes); decrypted packets are left in place.
    pub fn decapsulate(
        &mut self,
        now: Instant,
        src: SocketAddr,
        buf: &mut [u8],
        len: usize,
    ) -> Verdict {
        let Some(msg) = buf.get(..len) else {
            return self.count_drop(DropReason::TooBig);
        };
        match wire::classify(msg) {
            Some(Kind::Data) => self.receive_data(now, src, buf, len),
            Some(Kind::Initiation) => self.receive_initiation(now, src, buf),
            Some(Kind::Response) => self.receive_response(now, src, buf),
            Some(Kind::CookieReply) => self.receive_cookie_reply(now, buf),
            None => self.count_drop(DropReason::Malformed),
        }
    }

    /// mac1 and, under load, mac2 and the per-source rate limit. `Some(verdict)` ends the
    /// handling (a drop or a cookie reply written into `buf`).
    fn check_handshake_macs(
        &mut self,
        now: Instant,
        src: SocketAddr,
        buf: &mut [u8],
        len: usize,
        sender: u32,
    ) -> Option<Verdict> {
        if !self.checker.check_mac1(&buf[..len]) {
            return Some(self.count_drop(DropReason::BadMac1));
        }
        if !self.under_load(now) {
            return None;
        }
        // Under a flood most messages come from sources that have used up their handshakes,
        // or find the handshake budget spent. Such a message with a mac2 is dropped whether
        // the mac2 is valid or not, so its six BLAKE2s compressions are not worth doing; one
        // without a mac2 may still earn a cookie reply below.
        let quiet = self.limiter.is_quiet(now, src.ip());
        let doomed = !self.limiter.would_allow(now, src.ip()) || !self.budget_admits(now, quiet);
        if doomed && self.checker.has_mac2(&buf[..len]) {
            return Some(self.count_drop(DropReason::RateLimited));
        }
        if !self.checker.check_mac2(&buf[..len], src, now) {
            if !self.cookie_limiter.allow(now, src.ip()) {
                return Some(self.count_drop(DropReason::CookieRequired));
            }
            let mut reply = [0u8; wire::COOKIE_REPLY_LEN];
            if !self
                .checker
                .create_reply(&buf[..len], sender, src, now, &mut self.rng, &mut reply)
            {
                return Some(self.count_drop(DropReason::Malformed));
            }
            self.count_drop(DropReason::CookieRequired);
            buf[..reply.len()].copy_from_slice(&reply);
            return Some(Verdict::SendUdp {
                to: src,
                len: reply.len(),
            });
        }
        if !self.limiter.allow(now, src.ip()) || !self.budget_admits(now, quiet) {
            return Some(self.count_drop(DropReason::RateLimited));
        }
        None
    }

    fn receive_initiation(&mut self, now: Instant, src: SocketAddr, buf: &mut [u8]) -> Verdict {
        let len = wire::INITIATION_LEN;
        let sender = wire::u32_at(buf, wire::init::SENDER);
        if let Some(v) = self.check_handshake_macs(now, src, buf, len, sender) {
            return v;
        }
        let Some(identity) = self.identity.as_ref() else {
            return self.count_drop(DropReason::NoIdentity);
        };
        let Some(start) = noise::begin_consume_initiation(identity, &buf[..len]) else {
            return self.count_drop(DropReason::HandshakeFailed);
        };
        let Some(id) = self.peer_id(&start.remote_static) else {
            return self.count_drop(DropReason::UnknownPeer);
        };
        let ephemeral = self.rng.private_key();
        let Some(peer) = self.peer_mut(id) else {
            return self.count_drop(DropReason::UnknownPeer);
        };
        if !peer.handshake.consume_initiation(start, &buf[..len], now) {
            return self.count_drop(DropReason::HandshakeFailed);
        }
        let old = peer.handshake.local_index;
        if old != 0 {
            self.indices.remove(&old);
        }
        let index = self.new_index(id);
        let Some(peer) = self.peer_mut(id) else {
            return Verdict::Done;
        };
        let mut resp = [0u8; wire::RESPONSE_LEN];
        if !peer.handshake.create_response(ephemeral, index, &mut resp) {
            self.indices.remove(&index);
            return self.count_drop(DropReason::HandshakeFailed);
        }
        peer.cookie.add_macs(&mut resp, now);
        let Some(keys) = peer.handshake.derive_keys() else {
            return Verdict::Done;
        };
        let dropped = peer.begin_session(keys, now, src, len);
        // A response counts as a sent handshake (as in the kernel): until the initiator
        // confirms the keys, our own packets wait instead of starting a crossing handshake.
        peer.last_initiation_sent = Some(now);
        peer.tx_bytes += resp.len() as u64;
        peer.timers.any_authenticated_packet_sent();
        log::verbose(format_args!(
            "{}: handshake initiation received, sending response",
            short_key(&peer.public_key)
        ));
        self.forget_indices(&dropped);
        self.note_deadline(id);
        buf[..resp.len()].copy_from_slice(&resp);
        Verdict::SendUdp {
            to: src,
            len: resp.len(),
        }
    }

    fn receive_response(&mut self, now: Instant, src: SocketAddr, buf: &mut [u8]) -> Verdict {
        let len = wire::RESPONSE_LEN;
        let sender = wire::u32_at(buf, wire::resp::SENDER);
        if let Some(v) = self.check_handshake_macs(now, src, buf, len, sender) {
            return v;
        }
        let receiver = wire::u32_at(buf, wire::resp::RECEIVER);
        let Some(&id) = self.indices.get(&receiver) else {
            return self.count_drop(DropReason::UnknownIndex);
        };
        let Some(identity) = self.identity.as_ref() else {
            return self.count_drop(DropReason::NoIdentity);
        };
        let Some(peer) = self.peers.get_mut(id.0).and_then(Option::as_mut) else {
            return self.count_drop(DropReason::UnknownIndex);
        };
        if peer.handshake.local_index != receiver
            || !peer.handshake.consume_response(identity, &buf[..len])
        {
            return self.count_drop(DropReason::HandshakeFailed);
        }
        let Some(keys) = peer.handshake.derive_keys() else {
            return Verdict::Done;
        };
        let dropped = peer.begin_session(keys, now, src, len);
        peer.last_handshake = Some(now);
        peer.sent_lastminute_handshake = false;
        peer.timers.handshake_complete();
        log::info(format_args!(
            "{}: handshake complete (initiator), endpoint {}",
            short_key(&peer.public_key),
            src
        ));
        self.forget_indices(&dropped);
        self.note_deadline(id);
        // Confirm the session to the responder: staged data, or else a keepalive.
        self.pending.push_back(Pending::Keepalive(id));
        Verdict::Done
    }

    fn receive_cookie_reply(&mut self, now: Instant, buf: &mut [u8]) -> Verdict {
        let receiver = wire::u32_at(buf, wire::cookie::RECEIVER);
        let Some(&id) = self.indices.get(&receiver) else {
            return self.count_drop(DropReason::UnknownIndex);
        };
        let Some(peer) = self.peer_mut(id) else {
            return self.count_drop(DropReason::UnknownIndex);
        };
        if !peer
            .cookie
            .consume_reply(&buf[..wire::COOKIE_REPLY_LEN], now)
        {
            return self.count_drop(DropReason::HandshakeFailed);
        }
        log::verbose(format_args!(
            "{}: cookie reply received (peer under load)",
            short_key(&peer.public_key)
        ));
        Verdict::Done
    }

    fn receive_data(
        &mut self,
        now: Instant,
        src: SocketAddr,
        buf: &mut [u8],
        len: usize,
    ) -> Verdict {
        let receiver = wire::u32_at(buf, wire::data::RECEIVER);
        let counter = wire::u64_at(buf, wire::data::COUNTER);
        let Some(&id) = self.indices.get(&receiver) else {
            return self.count_drop(DropReason::UnknownIndex);
        };
        let Some(peer) = self.peer_mut(id) else {
            return self.count_drop(DropReason::UnknownIndex);
        };
        let Some(kp) = peer.keypairs.find_mut(receiver) else {
            return self.count_drop(DropReason::UnknownIndex);
        };
        if kp.expired(now) {
            return self.count_drop(DropReason::ExpiredKeypair);
        }
        if !kp.replay.would_accept(counter) {
            return self.count_drop(DropReason::Replay);
        }
        let (body, tag) = buf[wire::DATA_HEADER_LEN..len].split_at_mut(len - wire::DATA_MIN_LEN);
        if !crypto::open(&kp.recv_key, counter, &[], body, tag) {
            return self.count_drop(DropReason::DecryptFailed);
        }
        if !kp.replay.accept(counter) {
            return self.count_drop(DropReason::Replay);
        }
        let last_minute = kp.initiator && kp.in_last_minute(now);
        let (dropped, confirmed) = peer.keypairs.confirm(receiver);
        peer.endpoint = Some(src);
        peer.rx_bytes += len as u64;
        peer.timers.any_authenticated_packet_received();
        // Only a newly armed timer can move the earliest deadline forward.
        let mut armed = peer.timers.any_authenticated_packet_traversal(now);
        if confirmed {
            peer.last_handshake = Some(now);
            peer.sent_lastminute_handshake = false;
            peer.timers.handshake_complete();
            log::info(format_args!(
                "{}: handshake complete (responder), endpoint {}",
                short_key(&peer.public_key),
                src
            ));
        }
        // Receiving side of keep_key_fresh: the initiator renews a session that is about to
        // expire, once, if the peer is still talking to us.
        let lastminute = last_minute && !peer.sent_lastminute_handshake;
        if lastminute {
            peer.sent_lastminute_handshake = true;
        }
        let plain_len = len - wire::DATA_MIN_LEN;
        let verdict = if plain_len == 0 {
            Verdict::Done // keepalive
        } else {
            armed |= peer.timers.data_received(now);
            self.inner_packet(id, buf, plain_len)
        };
        self.forget_indices(&[dropped]);
        if confirmed {
            self.pending.push_back(Pending::Flush(id));
        }
        if lastminute {
            self.request_handshake(id, now, false);
        }
        if armed || confirmed || lastminute {
            self.note_deadline(id);
        }
        verdict
    }

    /// What becomes of a data message's decrypted packet, `plain_len` bytes after the header
    /// in `buf`: written to the TUN device if its source address is one of peer `id`'s.
    /// Always inlined into `receive_data`, the hot path, as when the check was written inside
    /// it (the same instructions; only register allocation differs).
    #[inline(always)]
    fn inner_packet(&mut self, id: PeerId, buf: &[u8], plain_len: usize) -> Verdict {
        let packet = &buf[wire::DATA_HEADER_LEN..wire::DATA_HEADER_LEN + plain_len];
        match wire::inner_ip(packet) {
            None => self.count_drop(DropReason::InvalidInner),
            Some(ip) if self.routes.lookup_bytes(ip.src) != Some(id) => {
                self.count_drop(DropReason::DisallowedSource)
            }
            Some(ip) => Verdict::WriteTun {
                start: wire::DATA_HEADER_LEN,
                len: ip.len,
            },
        }
    }

    /// Test and diagnostics helper: the peer a receiver index belongs to.
    #[cfg(any(test, feature = "internals"))]
    pub fn peer_of_index(&self, index: u32) -> Option<crate::proto::peer::PeerId> {
        self.indices.get(&index).copied()
    }
}
