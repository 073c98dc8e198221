//! TUN to UDP: packets read from the TUN device in batches, encrypted in place in reused
//! slots and sent with UDP GSO where the kernel has it, else through a packet socket or
//! one datagram per message.

use super::*;
use std::io::IoSliceMut;

/// Space after a TUN packet in its slot: padding to 16 plus the tag.
pub(super) const TX_TAILROOM: usize = 32;

/// Reused TX buffers: one slot per packet of a batch, so a whole batch can be encrypted in
/// place and handed to one GSO send without copying.
pub(super) struct TxBatch {
    pub(super) arena: Vec<u8>,
    pub(super) slot_len: usize,
    pub(super) out: Vec<(SocketAddr, usize, usize)>,
    /// With TUN offload: where a TCP super-packet is assembled before it is cut into slots.
    /// A read fills the current slot first and spills the rest here, after room for what
    /// the slot took, so an ordinary packet lands in its slot with no copy at all.
    pub(super) spill: Vec<u8>,
    /// (headers, segment payload) of the last read when it was a TCP super-packet whose
    /// segments all fit slots: the next read is scattered for one like it, each segment's
    /// payload straight into its own slot, so it needs no copy (a flow's super-packets share
    /// their layout).
    pub(super) layout: Option<(usize, usize)>,
    /// Segments of the last super-packet: a batch with fewer free slots is sent before
    /// the next read, so that one like it is read in place, not copied.
    pub(super) last_segments: usize,
}

/// Longest headers a super-packet read in place may have (IPv4 and TCP with all their
/// options take 120 bytes; IPv6 extension headers may take more, then it is copied).
const TEMPLATE_MAX: usize = 128;

/// Encrypts the packet in `slot` (number `i`, `len` bytes after the headroom) and queues
/// the datagram it becomes.
fn seal_into(
    out: &mut Vec<(SocketAddr, usize, usize)>,
    slot: &mut [u8],
    i: usize,
    len: usize,
    dev: &mut Device,
    now: Instant,
) {
    if let Verdict::SendUdp { to, len } = dev.encapsulate(now, slot, len) {
        out.push((endpoint::canonical(to), i, len));
    }
}

/// Largest packet a TUN read returns with TSO on (IP's 16-bit length).
const TUN_MAX_PACKET: usize = 65535;

/// Segments one `drain_tun` turn may produce with TUN offload before it lets the other
/// sources run (about what BATCH plain reads would bring).
const TX_SEGMENT_BUDGET: usize = 2 * BATCH;

impl TxBatch {
    pub(super) fn new(mtu: usize, vnet: bool) -> TxBatch {
        let slot_len = (mtu.max(1280) + HEADROOM + TX_TAILROOM).next_multiple_of(64);
        TxBatch {
            arena: vec![0; slot_len * BATCH],
            slot_len,
            out: Vec::with_capacity(BATCH),
            spill: if vnet {
                vec![0; slot_len + TUN_MAX_PACKET]
            } else {
                Vec::new()
            },
            layout: None,
            last_segments: 0,
        }
    }

    /// Packet bytes a slot holds (its read window).
    pub(super) fn slot_cap(&self) -> usize {
        self.slot_len - HEADROOM - TX_TAILROOM
    }
}

/// One TUN read into `head` and, past its end, `spill` (readv); returns the bytes read.
fn read_tun_split(tun: &Tun, head: &mut [u8], spill: &mut [u8]) -> io::Result<usize> {
    tun.read_vectored(&mut [IoSliceMut::new(head), IoSliceMut::new(spill)])
}

/// One TUN read scattered for a super-packet of `hdr`-byte headers and `mss`-byte
/// segments: the virtio-net header, the headers and the first segment's payload into slot
/// `first` (where a plain packet lands too), each later segment's payload into the next
/// slot after room for its headers, and what does not fit into `spill` from `at` on.
/// Returns the bytes read.
fn read_tun_scatter(
    tun: &Tun,
    tx: &mut TxBatch,
    first: usize,
    (hdr, mss): (usize, usize),
    at: usize,
) -> io::Result<usize> {
    let vh = offload::VNET_HDR_LEN;
    let mut iov: [IoSliceMut<'_>; BATCH + 1] = std::array::from_fn(|_| IoSliceMut::new(&mut []));
    let slots = tx.arena.chunks_exact_mut(tx.slot_len).skip(first);
    let mut n = 0;
    // Indexing a slot panics if a segment would not fit it, as the arena's bounds demand.
    for (k, slot) in slots.take(scatter_slots(first, (hdr, mss))).enumerate() {
        iov[n] = IoSliceMut::new(if k == 0 {
            &mut slot[HEADROOM - vh..HEADROOM + hdr + mss]
        } else {
            &mut slot[HEADROOM + hdr..HEADROOM + hdr + mss]
        });
        n += 1;
    }
    iov[n] = IoSliceMut::new(&mut tx.spill[at..]);
    tun.read_vectored(&mut iov[..=n])
}

/// Segments the largest super-packet of a layout has.
fn most_segments((hdr, mss): (usize, usize)) -> usize {
    (TUN_MAX_PACKET - hdr).div_ceil(mss)
}

/// Slots a scattered read from slot `first` uses: enough for the largest super-packet
/// where the batch has room.
fn scatter_slots(first: usize, layout: (usize, usize)) -> usize {
    (BATCH - first).min(most_segments(layout))
}

/// Bytes of a packet that a scattered read from slot `first` puts into slots; the rest
/// goes to `spill` at this offset.
fn scatter_room(first: usize, layout: (usize, usize)) -> usize {
    layout.0 + layout.1 * scatter_slots(first, layout)
}

/// Copies the first `len` bytes of a packet read by `read_tun_scatter` from the slots to
/// the start of `spill`, so that (with what went to `spill` itself) it is contiguous.
fn gather(tx: &mut TxBatch, first: usize, (hdr, mss): (usize, usize), len: usize) {
    let slot_len = tx.slot_len;
    let head = len.min(hdr + mss);
    let at = first * slot_len + HEADROOM;
    tx.spill[..head].copy_from_slice(&tx.arena[at..at + head]);
    let mut done = head;
    let mut s = first + 1;
    while done < len && s < BATCH {
        let take = (len - done).min(mss);
        let at = s * slot_len + HEADROOM + hdr;
        tx.spill[done..done + take].copy_from_slice(&tx.arena[at..at + take]);
        done += take;
        s += 1;
    }
}

/// Errors that mean the kernel or the device cannot do UDP segmentation offload.
fn gso_unsupported(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EIO) | Some(libc::EINVAL) | Some(libc::EOPNOTSUPP) | Some(libc::ENOPROTOOPT)
    )
}

/// One TUN read with offload: its virtio-net header, the packet's length, the bytes of it
/// its slot holds, and where in `spill` the bytes past the slots went.
struct TunRead {
    hdr: offload::VnetHdr,
    len: usize,
    in_slot: usize,
    spilled_at: usize,
}

/// Where a drain with TUN offload stands: the next free slot, and the packets and
/// segments encrypted so far (bounded by TX_SEGMENT_BUDGET).
#[derive(Default)]
struct TxCursor {
    slot: usize,
    sealed: usize,
}

/// Encrypts a plain packet (no GSO) just read into slot `at.slot`, where it was read, its
/// checksum completed first if the kernel left it partial. One longer than the first
/// segment a scattered read expected is gathered back into its slot first.
#[inline(always)] // one caller; its code stays in drain_tun_offload's (hot-text.ld)
fn seal_plain(
    dev: &mut Device,
    tx: &mut TxBatch,
    now: Instant,
    at: &mut TxCursor,
    layout: Option<(usize, usize)>,
    read: &TunRead,
) {
    let (slot_len, cap, len) = (tx.slot_len, tx.slot_cap(), read.len);
    let base = at.slot * slot_len;
    tx.layout = None;
    if len > cap {
        return; // larger than the MTU without GSO: nothing sane to send
    }
    if let Some(l) = layout.filter(|_| len > read.in_slot) {
        gather(tx, at.slot, l, len);
        tx.arena[base + HEADROOM..base + HEADROOM + len].copy_from_slice(&tx.spill[..len]);
    }
    let slot = &mut tx.arena[base..base + slot_len];
    if read.hdr.flags & offload::F_NEEDS_CSUM != 0
        && !offload::complete_csum(
            &mut slot[HEADROOM..HEADROOM + len],
            read.hdr.csum_start as usize,
            read.hdr.csum_offset as usize,
        )
    {
        return;
    }
    seal_into(&mut tx.out, slot, at.slot, len, dev, now);
    at.slot += 1;
    at.sealed += 1;
}

impl InterfaceIo {
    /// Reads up to BATCH packets from the TUN device, each into its own slot where it is
    /// encrypted in place, then sends them all; true if more may be waiting.
    pub(super) fn drain_tun(
        &mut self,
        dev: &mut Device,
        tx: &mut TxBatch,
    ) -> Result<bool, io::Error> {
        if self.tun.vnet_hdr_len() != 0 {
            return self.drain_tun_offload(dev, tx);
        }
        let now = Instant::now();
        tx.out.clear();
        let slot_len = tx.slot_len;
        let mut more = true;
        for i in 0..BATCH {
            let slot = &mut tx.arena[i * slot_len..(i + 1) * slot_len];
            stats::add(&self.stats.tun_reads, 1);
            let n = match self.tun.read(&mut slot[HEADROOM..slot_len - TX_TAILROOM]) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    more = false;
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            stats::add(&self.stats.tun_rx_packets, 1);
            seal_into(&mut tx.out, slot, i, n, dev, now);
        }
        self.send_batch(tx, now);
        Ok(more)
    }

    /// `drain_tun` with TUN offload: every read is a virtio-net header and a packet
    /// (`read_offloaded`). A plain packet is encrypted where it was read (`seal_plain`). A
    /// TCP super-packet is cut into MTU-sized segments, each in its own slot where it is
    /// encrypted (`cut_super_packet`). A batch whose slots run out is sent and the slots
    /// reused. True if more may be waiting.
    #[inline(never)] // its own symbol, for openwrt/hot-text.ld
    pub(super) fn drain_tun_offload(
        &mut self,
        dev: &mut Device,
        tx: &mut TxBatch,
    ) -> Result<bool, io::Error> {
        let now = Instant::now();
        tx.out.clear();
        let mut at = TxCursor::default();
        let mut more = true;
        for _ in 0..BATCH {
            if at.sealed >= TX_SEGMENT_BUDGET {
                break;
            }
            let layout = tx.layout;
            let full = at.slot == BATCH
                || layout
                    .is_some_and(|l| at.slot > 0 && scatter_slots(at.slot, l) < tx.last_segments);
            if full {
                self.send_batch(tx, now);
                tx.out.clear();
                at.slot = 0;
            }
            let read = match self.read_offloaded(tx, at.slot, layout) {
                Ok(Some(read)) => read,
                Ok(None) => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    more = false;
                    break;
                }
                Err(e) => return Err(e),
            };
            if read.hdr.is_gso() {
                self.cut_super_packet(dev, tx, now, &mut at, layout, &read);
            } else {
                seal_plain(dev, tx, now, &mut at, layout, &read);
            }
        }
        self.send_batch(tx, now);
        Ok(more)
    }

    /// One TUN read with offload into slot `slot`: scattered for `layout`, the last
    /// super-packet's (`read_tun_scatter`), else into the slot and on into `spill`. None
    /// when the read was interrupted or brought no virtio-net header.
    #[inline(always)] // one caller; its code stays in drain_tun_offload's (hot-text.ld)
    fn read_offloaded(
        &self,
        tx: &mut TxBatch,
        slot: usize,
        layout: Option<(usize, usize)>,
    ) -> io::Result<Option<TunRead>> {
        let (base, cap, vh) = (slot * tx.slot_len, tx.slot_cap(), offload::VNET_HDR_LEN);
        stats::add(&self.stats.tun_reads, 1);
        // Where the bytes past the slots went (`spill` from this offset on).
        let (read, spilled_at) = match layout {
            Some(l) => {
                let at = scatter_room(slot, l);
                (read_tun_scatter(&self.tun, tx, slot, l, at), at)
            }
            None => {
                let (head, spill) = (
                    &mut tx.arena[base + HEADROOM - vh..base + HEADROOM + cap],
                    &mut tx.spill[cap..],
                );
                (read_tun_split(&self.tun, head, spill), cap)
            }
        };
        let n = match read {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(None),
            Err(e) => return Err(e),
        };
        stats::add(&self.stats.tun_rx_packets, 1);
        let Some(hdr) = offload::VnetHdr::parse(&tx.arena[base + HEADROOM - vh..]) else {
            return Ok(None);
        };
        let len = n.saturating_sub(vh);
        let in_slot = match layout {
            Some((h, m)) => len.min(h + m),
            None => len.min(cap),
        };
        Ok(Some(TunRead {
            hdr,
            len,
            in_slot,
            spilled_at,
        }))
    }

    /// Cuts the TCP super-packet just read into slot `at.slot` into segments, one per slot,
    /// each encrypted there: in place when it was read scattered for its own layout (its
    /// headers are then written into every slot and the payloads only summed), else copied
    /// out of `spill`. Its layout is kept for the next read.
    #[inline(always)] // one caller; its code stays in drain_tun_offload's (hot-text.ld)
    fn cut_super_packet(
        &mut self,
        dev: &mut Device,
        tx: &mut TxBatch,
        now: Instant,
        at: &mut TxCursor,
        layout: Option<(usize, usize)>,
        read: &TunRead,
    ) {
        let (base, cap) = (at.slot * tx.slot_len, tx.slot_cap());
        // The headers, parsed once: every segment read in place starts from them. Longer
        // ones (IPv6 extension headers) do not parse here and are cut from `spill`.
        let mut template = [0u8; TEMPLATE_MAX];
        let t = read.in_slot.min(TEMPLATE_MAX);
        template[..t].copy_from_slice(&tx.arena[base + HEADROOM..base + HEADROOM + t]);
        let segs = offload::TcpSegments::headers(&read.hdr, &template[..t], read.len)
            .filter(|s| s.max_segment_len() <= cap);
        let parsed = segs.as_ref().map(|s| (s.header_len(), s.mss()));
        tx.layout = parsed.filter(|&l| l.0 + l.1 <= cap && most_segments(l) <= BATCH);
        tx.last_segments = segs.as_ref().map_or(0, |s| s.remaining());
        // In place only if the read gave every segment a slot (`len <= spilled_at`).
        match segs.filter(|_| layout.is_some() && parsed == layout && read.len <= read.spilled_at) {
            Some(segs) => self.seal_in_place(dev, tx, now, at, segs),
            None => self.cut_from_spill(dev, tx, now, at, layout, read),
        }
    }

    /// Completes and encrypts the segments of a super-packet read in place: every
    /// segment's payload is in its slot already.
    #[inline(always)] // one caller; its code stays in drain_tun_offload's (hot-text.ld)
    fn seal_in_place(
        &self,
        dev: &mut Device,
        tx: &mut TxBatch,
        now: Instant,
        at: &mut TxCursor,
        mut segs: offload::TcpSegments<'_>,
    ) {
        let slot_len = tx.slot_len;
        while let Some(slot) = tx
            .arena
            .get_mut(at.slot * slot_len..(at.slot + 1) * slot_len)
        {
            let Some(seg_len) = segs.next_in_place(&mut slot[HEADROOM..]) else {
                break;
            };
            seal_into(&mut tx.out, slot, at.slot, seg_len, dev, now);
            at.slot += 1;
            at.sealed += 1;
            stats::add(&self.stats.tun_segments, 1);
            stats::add(&self.stats.tun_segments_in_place, 1);
        }
    }

    /// Cuts a super-packet that was not read in place: made contiguous in `spill` (the
    /// slots held its start), then copied segment by segment into slots and encrypted
    /// there, the batch sent whenever its slots run out.
    #[inline(always)] // one caller; its code stays in drain_tun_offload's (hot-text.ld)
    fn cut_from_spill(
        &mut self,
        dev: &mut Device,
        tx: &mut TxBatch,
        now: Instant,
        at: &mut TxCursor,
        layout: Option<(usize, usize)>,
        read: &TunRead,
    ) {
        let (slot_len, cap, len) = (tx.slot_len, tx.slot_cap(), read.len);
        let base = at.slot * slot_len;
        match layout {
            Some(l) => gather(tx, at.slot, l, len.min(read.spilled_at)),
            None => tx.spill[..read.in_slot]
                .copy_from_slice(&tx.arena[base + HEADROOM..base + HEADROOM + read.in_slot]),
        }
        let Some(mut segs) = offload::TcpSegments::new(&read.hdr, &tx.spill[..len]) else {
            log::verbose(format_args!(
                "TUN: dropped a GSO packet we cannot cut (type {})",
                read.hdr.gso_type
            ));
            return;
        };
        if segs.max_segment_len() > cap {
            log::verbose(format_args!(
                "TUN: dropped a GSO packet with {}-byte segments",
                segs.max_segment_len()
            ));
            return;
        }
        // Keep one super-packet in one UDP GSO send where it fits.
        if at.slot + segs.remaining() > BATCH && at.slot > 0 {
            self.send_batch(tx, now);
            tx.out.clear();
            at.slot = 0;
        }
        loop {
            if at.slot == BATCH {
                self.send_batch(tx, now);
                tx.out.clear();
                at.slot = 0;
            }
            let i = at.slot;
            let slot = &mut tx.arena[i * slot_len..(i + 1) * slot_len];
            let Some(seg_len) = segs.next_into(&mut slot[HEADROOM..HEADROOM + cap]) else {
                break;
            };
            seal_into(&mut tx.out, slot, i, seg_len, dev, now);
            at.slot += 1;
            at.sealed += 1;
            stats::add(&self.stats.tun_segments, 1);
        }
    }

    /// Sends the batch: runs of equal-sized datagrams to one endpoint go out as one GSO
    /// send where the kernel allows it, everything else one datagram at a time.
    pub(super) fn send_batch(&mut self, tx: &TxBatch, now: Instant) {
        if !self.gso {
            self.send_each(tx, 0, tx.out.len(), now);
            return;
        }
        let mut j = 0;
        while j < tx.out.len() {
            let (to, _, seg) = tx.out[j];
            let mut k = j + 1;
            let mut bytes = seg;
            if self.gso && seg <= self.gso_max_seg {
                while k < tx.out.len()
                    && k - j < batch::MAX_SEGMENTS
                    && tx.out[k].0 == to
                    && tx.out[k].2 <= seg
                    && bytes + tx.out[k].2 <= batch::MAX_GSO_BYTES
                {
                    bytes += tx.out[k].2;
                    k += 1;
                    if tx.out[k - 1].2 < seg {
                        break; // only the last segment may be shorter
                    }
                }
            }
            let slot = |i: usize, len: usize| &tx.arena[i * tx.slot_len..i * tx.slot_len + len];
            if k - j > 1 {
                let mut segs: [&[u8]; batch::MAX_SEGMENTS] = [&[]; batch::MAX_SEGMENTS];
                for (d, &(_, i, len)) in segs.iter_mut().zip(&tx.out[j..k]) {
                    *d = slot(i, len);
                }
                stats::add(&self.stats.udp_send_calls, 1);
                stats::add(&self.stats.udp_tx_datagrams, (k - j) as u64);
                let segs = &segs[..k - j];
                let mut sent = None;
                if let Some(i) = self.conn_for(to) {
                    let r = self
                        .conns
                        .slot(i)
                        .map(|c| batch::send_segments(&c.sock, None, segs, seg));
                    sent = self.conn_result(i, r);
                }
                // Only the unconnected socket's errors say whether GSO works: a connected
                // one also fails when its pinned address has gone.
                if sent.is_none() {
                    sent = self
                        .socket_for(to)
                        .map(|s| batch::send_segments(s, Some(to), segs, seg));
                }
                if let Some(Err(e)) = sent {
                    if self.gso_refused(&e, seg, to, k - j) {
                        self.send_each(tx, j, k, now);
                    }
                }
            } else {
                let (_, i, len) = tx.out[j];
                self.conn_for(to); // so that send_udp finds one
                self.send_udp(to, slot(i, len));
            }
            j = k;
        }
    }

    /// What a refused GSO send of `n` `seg`-byte datagrams to `to` means: true if they are
    /// to go out one by one (GSO does not work here, or the path MTU is below `seg`), false
    /// if they are dropped (a full socket buffer, as a congested link would drop them).
    #[cold]
    fn gso_refused(&mut self, e: &io::Error, seg: usize, to: SocketAddr, n: usize) -> bool {
        if gso_unsupported(e) {
            log::info(format_args!(
                "UDP GSO unavailable ({e}), sending datagrams one by one (up to {} per call)",
                batch::MAX_SEGMENTS
            ));
            self.gso = false;
            true
        } else if e.raw_os_error() == Some(libc::EMSGSIZE) {
            // The path MTU is below our datagram size: GSO refuses to build fragments,
            // single sends let the kernel fragment as usual.
            log::verbose(format_args!(
                "UDP GSO refused {seg}-byte segments to {to} ({e})"
            ));
            self.gso_max_seg = seg - 1;
            true
        } else {
            stats::add(&self.stats.udp_tx_dropped, n as u64);
            false
        }
    }

    /// Sends `tx.out[from..to]` as single datagrams, a `sendmmsg` per run to one endpoint
    /// through the packet socket where GSO is refused and `packet_paths` has a path, else
    /// per run to one connected endpoint, else per run of one address family (at most
    /// MAX_SEGMENTS each).
    fn send_each(&mut self, tx: &TxBatch, from: usize, to: usize, now: Instant) {
        let (arena, slot_len, out) = (&tx.arena, tx.slot_len, &tx.out);
        let slot =
            |&(_, i, len): &(SocketAddr, usize, usize)| &arena[i * slot_len..i * slot_len + len];
        let mut j = from;
        while j < to {
            let first = out[j].0;
            // Datagrams the next UDP send may take (one when the packet path refreshes).
            let mut most = batch::MAX_SEGMENTS;
            if !self.gso {
                match self.send_packet_path(tx, j, to, now) {
                    Ok(n) => {
                        j += n;
                        continue;
                    }
                    Err(m) => most = m,
                }
            }
            let conn = self.conn_for(first);
            let v4 = first.is_ipv4();
            let n = out[j..to]
                .iter()
                .take(most)
                .take_while(|o| {
                    if conn.is_some() {
                        o.0 == first
                    } else {
                        o.0.is_ipv4() == v4
                    }
                })
                .count();
            let msgs = || out[j..j + n].iter().map(|o| (o.0, slot(o)));
            let mut sent = None;
            if let Some(i) = conn {
                stats::add(&self.stats.udp_send_calls, 1);
                let r = self.conns.slot(i).map(|c| {
                    batch::send_many(&c.sock, &mut self.sendmany.borrow_mut(), true, msgs())
                });
                sent = self.conn_result(i, r);
            }
            if let (None, Some(sock)) = (&sent, self.socket_for(first)) {
                stats::add(&self.stats.udp_send_calls, 1);
                sent = Some(batch::send_many(
                    sock,
                    &mut self.sendmany.borrow_mut(),
                    false,
                    msgs(),
                ));
            }
            if let Some(sent) = sent {
                stats::add(&self.stats.udp_tx_datagrams, n as u64);
                // A full socket buffer or an unreachable network drops what the kernel did
                // not take, like a link would.
                let dropped = match sent {
                    Ok(sent) => n.saturating_sub(sent),
                    Err(e) => {
                        if e.kind() != io::ErrorKind::WouldBlock {
                            log::verbose(format_args!("send to {first} failed: {e}"));
                        }
                        n
                    }
                };
                stats::add(&self.stats.udp_tx_dropped, dropped as u64);
            }
            j += n;
        }
    }

    /// Without GSO: sends the datagrams from `tx.out[j]` on (up to `to`) that go to the same
    /// endpoint and fit its path through the packet socket, if `packet_paths` has a path
    /// for it: `Ok` with how many it took, or `Err` with how many the next UDP send may
    /// take (one when the packet path refreshes).
    #[inline(always)] // one caller, per batch
    fn send_packet_path(
        &mut self,
        tx: &TxBatch,
        j: usize,
        to: usize,
        now: Instant,
    ) -> Result<usize, usize> {
        let (arena, slot_len, out) = (&tx.arena, tx.slot_len, &tx.out);
        let slot =
            |&(_, i, len): &(SocketAddr, usize, usize)| &arena[i * slot_len..i * slot_len + len];
        let first = out[j].0;
        let udp4 = &self.udp4;
        let ttl = || udp4.ttl().map_or(64, |t| t.min(255) as u8);
        let me = (self.port, self.fwmark);
        let path = match self
            .packet
            .via(first, now, me, ttl, &self.link, &self.ifname)
        {
            Via::Packet(path) => path,
            Via::UdpOnce => return Err(1),
            Via::Udp => return Err(batch::MAX_SEGMENTS),
        };
        let n = out[j..to]
            .iter()
            .take(batch::MAX_SEGMENTS)
            .take_while(|o| o.0 == first && path.fits(o.2))
            .count();
        let datagrams = out[j..j + n].iter().map(slot);
        let sent = (n > 0)
            .then(|| self.packet.send(&path, self.port, first, datagrams))
            .flatten();
        let Some(sent) = sent else {
            return Err(batch::MAX_SEGMENTS);
        };
        stats::add(&self.stats.udp_send_calls, 1);
        stats::add(&self.stats.udp_tx_datagrams, n as u64);
        stats::add(&self.stats.packet_tx_datagrams, n as u64);
        let sent = sent.unwrap_or(0);
        stats::add(&self.stats.udp_tx_dropped, n.saturating_sub(sent) as u64);
        Ok(n)
    }

    /// The slot of the connected socket to send `to`'s data from, opened if need be.
    fn conn_for(&mut self, to: SocketAddr) -> Option<usize> {
        let (port, mark, base) = (self.port, self.fwmark, self.base);
        self.conns.get_or_open(to, port, mark, &self.reg, base)
    }

    /// What a send on connected slot `i` returned, or None to send again unconnected: after
    /// an error other than a full buffer. The socket is retired then (its pinned route or
    /// address may be gone; the turn takes in what it holds and closes it), unless the
    /// error was the endpoint's earlier ICMP unreachable, which the kernel reports once, or
    /// a path MTU below the datagram (the unconnected send finds that too and adapts).
    fn conn_result<T>(&mut self, i: usize, r: Option<io::Result<T>>) -> Option<io::Result<T>> {
        match r {
            Some(Err(e)) if e.kind() != io::ErrorKind::WouldBlock => {
                if e.kind() != io::ErrorKind::ConnectionRefused
                    && e.raw_os_error() != Some(libc::EMSGSIZE)
                {
                    log::verbose(format_args!("connected send failed ({e}); closing it"));
                    self.conns.retire_failed(i);
                }
                None
            }
            r => r,
        }
    }

    pub(super) fn socket_for(&self, to: SocketAddr) -> Option<&UdpSocket> {
        match to {
            SocketAddr::V4(_) => Some(&self.udp4),
            SocketAddr::V6(_) => self.udp6.as_ref(),
        }
    }
}
