//! The event loop: one thread waits (one `epoll_wait`) for TUN, UDP, the UAPI socket, link
//! events, signals and the next protocol deadline, then drains each ready source in bounded
//! batches and does every step of every packet itself. There is no other thread, so there
//! are no queues, locks or wake-ups between threads.

use crate::log;
use crate::proto::device::{Device, DropReason, Verdict};
use crate::proto::endpoint;
use crate::proto::uapi::{self, Request};
use crate::proto::wire::{self, HEADROOM};
use crate::sys::batch;
use crate::sys::netlink::{LinkEvent, LinkMonitor};
use crate::sys::offload;
use crate::sys::poller::{Interest, Poller, Registry};
use crate::sys::signals::SignalFd;
use crate::sys::tun::Tun;
use crate::sys::udp::{self, UdpPair};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::time::{Duration, Instant};
use zeroize::Zeroize;

/// Packets taken from one source before looking at the others (fairness bound).
const BATCH: usize = 64;
/// One buffer holds any datagram or TUN packet plus headroom and tag space.
const BUF_LEN: usize = 65536 + 64;
const MAX_CLIENTS: usize = 16;
/// A UAPI client that sends nothing for this long is disconnected.
const CLIENT_IDLE: Duration = Duration::from_secs(10);
/// Requests answered per client per loop turn, so packets keep flowing during a burst.
const MAX_REQUESTS_PER_TURN: usize = 16;
/// UAPI connections accepted per loop turn: a connection flood gets a bounded share of the
/// thread, packets the rest (the backlog waits for the next turn).
const MAX_ACCEPTS_PER_TURN: usize = 4;
/// Stop answering a client whose unread replies reach this size until it reads them.
const OUTBUF_HIGH: usize = 1 << 20;

/// `dev.decapsulate`; with `charge` (see `Slot::turn`), the time a handshake message took is
/// charged to the device's handshake budget.
fn decapsulate_timed(
    dev: &mut Device,
    now: Instant,
    from: SocketAddr,
    buf: &mut [u8],
    len: usize,
    charge: bool,
) -> Verdict {
    let handshake = |m: &[u8]| {
        matches!(
            wire::classify(m),
            Some(wire::Kind::Initiation | wire::Kind::Response)
        )
    };
    let t0 = (charge && buf.get(..len).is_some_and(handshake)).then(Instant::now);
    let verdict = dev.decapsulate(now, from, buf, len);
    if let Some(t0) = t0 {
        dev.charge_handshake(t0.elapsed());
    }
    verdict
}

/// `v.extend_from_slice(data)`, but a reallocation wipes the old allocation first: a growing
/// UAPI request may hold a private key, and `Vec` growth frees the old copy as it is.
fn extend_wiping(v: &mut Vec<u8>, data: &[u8]) {
    uapi::reserve_wiping(v, data.len());
    v.extend_from_slice(data);
}

impl Client {
    /// Read more only while there is room and the client keeps up with its replies.
    fn wants_read(&self) -> bool {
        !self.closing
            && self.inbuf.len() <= uapi::MAX_REQUEST_BYTES
            && self.outbuf.len() < OUTBUF_HIGH
    }
}

struct Client {
    stream: UnixStream,
    inbuf: Vec<u8>,
    outbuf: Vec<u8>,
    /// How much of `outbuf` is already written.
    out_pos: usize,
    last_active: Instant,
    /// Close once `outbuf` is written (EOF seen or a framing error).
    closing: bool,
    /// We stopped reading with input possibly pending: edge-triggered readiness will not
    /// report it again, so the loop must come back by itself.
    read_blocked: bool,
    /// Where the next parse of `inbuf` may resume (see `uapi::parse_request_resume`).
    scan_hint: usize,
}

/// One interface's sources and UAPI clients. Its tokens are `base + *_TOKEN`.
pub struct Io {
    reg: Registry,
    base: u64,
    tun: Tun,
    udp4: UdpSocket,
    udp6: Option<UdpSocket>,
    /// Handshake sockets (see `udp::UdpPair`): served a bounded batch per turn.
    hs4: Option<UdpSocket>,
    hs6: Option<UdpSocket>,
    uapi: UnixListener,
    clients: Vec<Client>,
    next_client_token: u64,
    link: LinkMonitor,
    ifname: String,
    /// UDP GSO still believed to work (switched off after the first refusal).
    gso: bool,
    /// Largest segment GSO accepted (lowered when the path MTU is smaller than a datagram).
    gso_max_seg: usize,
    /// What epoll reported for this interface in the current turn.
    ready: Ready,
}

/// Space after a TUN packet in its slot: padding to 16 plus the tag.
const TX_TAILROOM: usize = 32;

/// Reused TX buffers: one slot per packet of a batch, so a whole batch can be encrypted in
/// place and handed to one GSO send without copying.
struct TxBatch {
    arena: Vec<u8>,
    slot_len: usize,
    out: Vec<(SocketAddr, usize, usize)>,
    /// With TUN offload: where a TCP super-packet is assembled before it is cut into slots.
    /// A read fills the current slot first and spills the rest here, after room for what
    /// the slot took, so an ordinary packet lands in its slot with no copy at all.
    spill: Vec<u8>,
}

/// Largest packet a TUN read returns with TSO on (IP's 16-bit length).
const TUN_MAX_PACKET: usize = 65535;
/// Segments one `drain_tun` turn may produce with TUN offload before it lets the other
/// sources run (about what BATCH plain reads would bring).
const TX_SEGMENT_BUDGET: usize = 2 * BATCH;

impl TxBatch {
    fn new(mtu: usize, vnet: bool) -> TxBatch {
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
        }
    }

    /// Packet bytes a slot holds (its read window).
    fn slot_cap(&self) -> usize {
        self.slot_len - HEADROOM - TX_TAILROOM
    }
}

/// One TUN read into `head` and, past its end, `spill` (readv); returns the bytes read.
#[allow(unsafe_code)] // readv has no safe std API for a raw fd
fn read_tun_split(tun: &Tun, head: &mut [u8], spill: &mut [u8]) -> io::Result<usize> {
    use std::os::fd::AsRawFd;
    let iov = [
        libc::iovec {
            iov_base: head.as_mut_ptr() as *mut libc::c_void,
            iov_len: head.len(),
        },
        libc::iovec {
            iov_base: spill.as_mut_ptr() as *mut libc::c_void,
            iov_len: spill.len(),
        },
    ];
    // SAFETY: both iovecs point into live, exclusively borrowed buffers of the stated sizes.
    let r = unsafe { libc::readv(tun.file().as_raw_fd(), iov.as_ptr(), 2) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

/// One TUN write gathering `parts` (writev).
#[allow(unsafe_code)] // writev has no safe std API for a raw fd
fn write_tun_parts(tun: &Tun, parts: &[&[u8]]) -> io::Result<usize> {
    use std::os::fd::AsRawFd;
    // SAFETY: iovec is plain data; zeroed is valid.
    let mut iov: [libc::iovec; offload::MAX_COALESCE] = unsafe { std::mem::zeroed() };
    let n = parts.len().min(offload::MAX_COALESCE);
    for (v, p) in iov.iter_mut().zip(&parts[..n]) {
        v.iov_base = p.as_ptr() as *mut libc::c_void;
        v.iov_len = p.len();
    }
    // SAFETY: the iovecs point into live buffers of the stated sizes; writev only reads them.
    let r = unsafe { libc::writev(tun.file().as_raw_fd(), iov.as_ptr(), n as libc::c_int) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

/// Errors that mean the kernel or the device cannot do UDP segmentation offload.
fn gso_unsupported(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EIO) | Some(libc::EINVAL) | Some(libc::EOPNOTSUPP) | Some(libc::ENOPROTOOPT)
    )
}

#[derive(Clone, Copy, Default)]
struct Ready {
    tun: bool,
    udp4: bool,
    udp6: bool,
    hs4: bool,
    hs6: bool,
    uapi: bool,
    clients: bool,
    link: bool,
}

impl Ready {
    fn any(&self) -> bool {
        self.tun
            || self.udp4
            || self.udp6
            || self.hs4
            || self.hs6
            || self.uapi
            || self.clients
            || self.link
    }

    /// A new interface's first turn looks at every source.
    fn everything() -> Ready {
        Ready {
            tun: true,
            udp4: true,
            udp6: true,
            hs4: true,
            hs6: true,
            uapi: true,
            clients: true,
            link: true,
        }
    }
}

// Poller tokens. Interface i owns `(i + 1) << 32` plus these (clients count up from
// CLIENT_TOKEN); tokens below 1 << 32 are the daemon's: the signal fd and the control's.
const TUN_TOKEN: u64 = 0;
const UDP4_TOKEN: u64 = 1;
const UDP6_TOKEN: u64 = 2;
const UAPI_TOKEN: u64 = 3;
const LINK_TOKEN: u64 = 4;
const HS4_TOKEN: u64 = 5;
const HS6_TOKEN: u64 = 6;
const CLIENT_TOKEN: u64 = 16;
const SLOT_SHIFT: u32 = 32;
const SIGNAL_TOKEN: u64 = 0;
/// First token a `Control` may use for its own sources.
pub const CONTROL_TOKEN: u64 = 16;

/// Why the loop ended.
pub enum Exit {
    Signal,
    InterfaceGone(io::Error),
}

impl Io {
    pub fn new(
        tun: Tun,
        udp: UdpPair,
        uapi: UnixListener,
        reg: Registry,
        base: u64,
    ) -> io::Result<Io> {
        let ifname = tun.name().to_string();
        let link = LinkMonitor::new(&ifname)?;
        uapi.set_nonblocking(true)?;
        reg.add(tun.as_fd(), base + TUN_TOKEN, Interest::Read)?;
        reg.add(uapi.as_fd(), base + UAPI_TOKEN, Interest::Read)?;
        reg.add(link.as_fd(), base + LINK_TOKEN, Interest::Read)?;
        reg.add(udp.v4.as_fd(), base + UDP4_TOKEN, Interest::Read)?;
        if let Some(s) = &udp.v6 {
            reg.add(s.as_fd(), base + UDP6_TOKEN, Interest::Read)?;
        }
        if let Some(s) = &udp.hs4 {
            reg.add(s.as_fd(), base + HS4_TOKEN, Interest::Read)?;
        }
        if let Some(s) = &udp.hs6 {
            reg.add(s.as_fd(), base + HS6_TOKEN, Interest::Read)?;
        }
        Ok(Io {
            reg,
            base,
            link,
            ifname,
            gso: true,
            gso_max_seg: usize::MAX,
            tun,
            udp4: udp.v4,
            udp6: udp.v6,
            hs4: udp.hs4,
            hs6: udp.hs6,
            uapi,
            clients: Vec::new(),
            next_client_token: CLIENT_TOKEN,
            ready: Ready::default(),
        })
    }

    pub fn ifname(&self) -> &str {
        &self.ifname
    }

    /// Swaps in newly bound sockets (the old ones close and leave the epoll set by themselves).
    fn set_udp(&mut self, udp: UdpPair) -> io::Result<()> {
        self.reg
            .add(udp.v4.as_fd(), self.base + UDP4_TOKEN, Interest::Read)?;
        if let Some(s) = &udp.v6 {
            self.reg
                .add(s.as_fd(), self.base + UDP6_TOKEN, Interest::Read)?;
        }
        for (s, token) in [(&udp.hs4, HS4_TOKEN), (&udp.hs6, HS6_TOKEN)] {
            if let Some(s) = s {
                self.reg.add(s.as_fd(), self.base + token, Interest::Read)?;
            }
        }
        let old4 = std::mem::replace(&mut self.udp4, udp.v4);
        self.reg.delete(old4.as_fd());
        let old = [
            std::mem::replace(&mut self.udp6, udp.v6),
            std::mem::replace(&mut self.hs4, udp.hs4),
            std::mem::replace(&mut self.hs6, udp.hs6),
        ];
        for s in old.iter().flatten() {
            self.reg.delete(s.as_fd());
        }
        Ok(())
    }

    fn send_udp(&self, to: SocketAddr, data: &[u8]) {
        let to = endpoint::canonical(to);
        let sock = match (to, &self.udp6) {
            (SocketAddr::V4(_), _) => &self.udp4,
            (SocketAddr::V6(_), Some(s)) => s,
            (SocketAddr::V6(_), None) => return,
        };
        if let Err(e) = sock.send_to(data, to) {
            // A full socket buffer or an unreachable network drops the packet, like a link would.
            if e.kind() != io::ErrorKind::WouldBlock {
                log::verbose(format_args!("send to {to} failed: {e}"));
            }
        }
    }

    /// Writes the packet `buf[start..start + len]`; with TUN offload, the virtio-net header
    /// (no GSO, no checksum to do) goes into the `VNET_HDR_LEN` bytes before it, which
    /// hold the already consumed data-message header.
    fn write_tun(&self, buf: &mut [u8], start: usize, len: usize) {
        let vh = self.tun.vnet_hdr_len();
        let Some(from) = start.checked_sub(vh) else {
            return;
        };
        buf[from..start].fill(0);
        if let Err(e) = self.tun.file().write(&buf[from..start + len]) {
            if e.kind() != io::ErrorKind::WouldBlock {
                log::verbose(format_args!("TUN write failed: {e}"));
            }
        }
    }

    fn flush_outputs(&self, dev: &mut Device, buf: &mut [u8]) {
        let now = Instant::now();
        while let Some((to, len)) = dev.poll_output(now, buf) {
            self.send_udp(to, &buf[..len]);
        }
    }

    /// Reads up to BATCH packets from the TUN device, each into its own slot where it is
    /// encrypted in place, then sends them all; true if more may be waiting.
    fn drain_tun(&mut self, dev: &mut Device, tx: &mut TxBatch) -> Result<bool, io::Error> {
        if self.tun.vnet_hdr_len() != 0 {
            return self.drain_tun_offload(dev, tx);
        }
        let now = Instant::now();
        tx.out.clear();
        let slot_len = tx.slot_len;
        let mut more = true;
        for i in 0..BATCH {
            let slot = &mut tx.arena[i * slot_len..(i + 1) * slot_len];
            let n = match self
                .tun
                .file()
                .read(&mut slot[HEADROOM..slot_len - TX_TAILROOM])
            {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    more = false;
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if let Verdict::SendUdp { to, len } = dev.encapsulate(now, slot, n) {
                tx.out.push((endpoint::canonical(to), i, len));
            }
        }
        self.send_batch(tx);
        Ok(more)
    }

    /// `drain_tun` with TUN offload: every read is a virtio-net header and a packet. A plain
    /// packet is encrypted where it was read (its checksum completed first if the kernel
    /// left it partial); a TCP super-packet is cut into MTU-sized segments, each written
    /// into the next slot (the one copy it costs) and encrypted there. A batch whose slots
    /// run out is sent and the slots reused. True if more may be waiting.
    fn drain_tun_offload(&mut self, dev: &mut Device, tx: &mut TxBatch) -> Result<bool, io::Error> {
        let now = Instant::now();
        tx.out.clear();
        let (slot_len, cap) = (tx.slot_len, tx.slot_cap());
        let vh = offload::VNET_HDR_LEN;
        let mut i = 0; // next free slot
        let mut produced = 0;
        let mut more = true;
        for _ in 0..BATCH {
            if produced >= TX_SEGMENT_BUDGET {
                break;
            }
            if i == BATCH {
                self.send_batch(tx);
                tx.out.clear();
                i = 0;
            }
            let base = i * slot_len;
            let (head, spill) = (
                &mut tx.arena[base + HEADROOM - vh..base + HEADROOM + cap],
                &mut tx.spill[cap..],
            );
            let n = match read_tun_split(&self.tun, head, spill) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    more = false;
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            let Some(hdr) = offload::VnetHdr::parse(&tx.arena[base + HEADROOM - vh..]) else {
                continue;
            };
            let len = n.saturating_sub(vh);
            if !hdr.is_gso() {
                if len > cap {
                    continue; // larger than the MTU without GSO: nothing sane to send
                }
                let slot = &mut tx.arena[base..base + slot_len];
                if hdr.flags & offload::F_NEEDS_CSUM != 0
                    && !offload::complete_csum(
                        &mut slot[HEADROOM..HEADROOM + len],
                        hdr.csum_start as usize,
                        hdr.csum_offset as usize,
                    )
                {
                    continue;
                }
                if let Verdict::SendUdp { to, len } = dev.encapsulate(now, slot, len) {
                    tx.out.push((endpoint::canonical(to), i, len));
                }
                i += 1;
                produced += 1;
                continue;
            }
            // A super-packet: make it contiguous in `spill` (the slot held its start).
            let head_len = len.min(cap);
            tx.spill[..head_len]
                .copy_from_slice(&tx.arena[base + HEADROOM..base + HEADROOM + head_len]);
            let Some(mut segs) = offload::TcpSegments::new(&hdr, &tx.spill[..len]) else {
                log::verbose(format_args!(
                    "TUN: dropped a GSO packet we cannot cut (type {})",
                    hdr.gso_type
                ));
                continue;
            };
            if segs.max_segment_len() > cap {
                log::verbose(format_args!(
                    "TUN: dropped a GSO packet with {}-byte segments",
                    segs.max_segment_len()
                ));
                continue;
            }
            // Keep one super-packet in one UDP GSO send where it fits.
            if i + segs.remaining() > BATCH && i > 0 {
                self.send_batch(tx);
                tx.out.clear();
                i = 0;
            }
            loop {
                if i == BATCH {
                    self.send_batch(tx);
                    tx.out.clear();
                    i = 0;
                }
                let slot = &mut tx.arena[i * slot_len..(i + 1) * slot_len];
                let Some(seg_len) = segs.next_into(&mut slot[HEADROOM..HEADROOM + cap]) else {
                    break;
                };
                if let Verdict::SendUdp { to, len } = dev.encapsulate(now, slot, seg_len) {
                    tx.out.push((endpoint::canonical(to), i, len));
                }
                i += 1;
                produced += 1;
            }
        }
        self.send_batch(tx);
        Ok(more)
    }

    /// Sends the batch: runs of equal-sized datagrams to one endpoint go out as one GSO
    /// send where the kernel allows it, everything else one datagram at a time.
    fn send_batch(&mut self, tx: &TxBatch) {
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
                let sent = self
                    .socket_for(to)
                    .map(|s| batch::send_segments(s, to, &segs[..k - j], seg));
                if let Some(Err(e)) = sent {
                    let one_by_one = if gso_unsupported(&e) {
                        log::info(format_args!(
                            "UDP GSO unavailable ({e}), sending one datagram per call"
                        ));
                        self.gso = false;
                        true
                    } else if e.raw_os_error() == Some(libc::EMSGSIZE) {
                        // The path MTU is below our datagram size: GSO refuses to build
                        // fragments, single sends let the kernel fragment as usual.
                        log::verbose(format_args!(
                            "UDP GSO refused {seg}-byte segments to {to} ({e})"
                        ));
                        self.gso_max_seg = seg - 1;
                        true
                    } else {
                        false // full socket buffer: dropped, as a congested link would
                    };
                    if one_by_one {
                        for &(_, i, len) in &tx.out[j..k] {
                            self.send_udp(to, slot(i, len));
                        }
                    }
                }
            } else {
                let (_, i, len) = tx.out[j];
                self.send_udp(to, slot(i, len));
            }
            j = k;
        }
    }

    fn socket_for(&self, to: SocketAddr) -> Option<&UdpSocket> {
        match to {
            SocketAddr::V4(_) => Some(&self.udp4),
            SocketAddr::V6(_) => self.udp6.as_ref(),
        }
    }

    /// Writes a coalesced group (with TUN offload), or nothing if it is empty.
    fn flush_group(&self, co: &mut offload::TcpCoalescer, buf: &mut [u8]) {
        if let Some(Err(e)) = co.flush(buf, |parts| write_tun_parts(&self.tun, parts)) {
            if e.kind() != io::ErrorKind::WouldBlock {
                log::verbose(format_args!("TUN write failed: {e}"));
            }
        }
    }

    /// Reads up to BATCH receive calls (each may carry a GRO train of datagrams); true if
    /// more may be waiting. With TUN offload, consecutive TCP segments of one flow within a
    /// train go to the TUN as one GSO write (see `offload::TcpCoalescer`).
    fn drain_udp(
        &self,
        v6: bool,
        dev: &mut Device,
        buf: &mut [u8],
        co: &mut offload::TcpCoalescer,
        charge: bool,
    ) -> bool {
        let vnet = self.tun.vnet_hdr_len() != 0;
        let sock = if v6 {
            match &self.udp6 {
                Some(s) => s,
                None => return false,
            }
        } else {
            &self.udp4
        };
        for _ in 0..BATCH {
            let (n, from, seg) = match batch::recv_gro(sock, buf) {
                Ok(r) => r,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
                Err(e) => {
                    log::verbose(format_args!("UDP receive failed: {e}"));
                    return false;
                }
            };
            let from = endpoint::canonical(from);
            // Per receive, not per batch: a batch of handshakes can take tens of milliseconds,
            // and the rate limiter and handshake spacing must see the real time (vDSO, ~20 ns).
            let now = Instant::now();
            let mut off = 0;
            while off < n {
                let end = (off + seg).min(n);
                let chunk = &mut buf[off..end];
                let len = chunk.len();
                let verdict = decapsulate_timed(dev, now, from, chunk, len, charge);
                match verdict {
                    Verdict::WriteTun { start, len } if vnet => {
                        let start = off + start;
                        if !co.add(buf, start, len) {
                            self.flush_group(co, buf);
                            if !co.add(buf, start, len) {
                                self.write_tun(buf, start, len);
                            }
                        }
                    }
                    Verdict::WriteTun { start, len } => self.write_tun(chunk, start, len),
                    Verdict::SendUdp { to, len } => self.send_udp(to, &chunk[..len]),
                    Verdict::Done | Verdict::Drop(_) => {}
                }
                off = end;
            }
            // The next receive reuses the buffer the group points into.
            self.flush_group(co, buf);
        }
        true
    }

    /// One `recvmmsg` from a handshake socket (at most SMALL_BATCH datagrams, whatever is
    /// queued: under a flood the rest waits for the next turn, after the tunnel's packets, or
    /// is dropped by the kernel when the queue is full); true if more may be waiting.
    fn drain_hs(
        &self,
        v6: bool,
        dev: &mut Device,
        small: &mut batch::SmallBatch,
        charge: bool,
    ) -> bool {
        let Some(sock) = (if v6 { &self.hs6 } else { &self.hs4 }) else {
            return false;
        };
        let n = match batch::recv_small(sock, small) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
            Err(e) => {
                log::verbose(format_args!("UDP receive failed: {e}"));
                return false;
            }
        };
        let now = Instant::now();
        for i in 0..n {
            let Some((slot, len, from, truncated)) = small.get(i) else {
                continue;
            };
            if truncated {
                dev.count_drop(DropReason::TooBig);
                continue;
            }
            let from = endpoint::canonical(from);
            let verdict = decapsulate_timed(dev, now, from, slot, len, charge);
            match verdict {
                Verdict::SendUdp { to, len } => self.send_udp(to, &slot[..len]),
                // Data is steered to the other socket; should one come here anyway, it is
                // still delivered.
                Verdict::WriteTun { start, len } => self.write_tun(slot, start, len),
                Verdict::Done | Verdict::Drop(_) => {}
            }
        }
        n == batch::SMALL_BATCH
    }

    /// Accepts at most [`MAX_ACCEPTS_PER_TURN`] connections; true if more may be waiting.
    fn accept_clients(&mut self) -> bool {
        for _ in 0..MAX_ACCEPTS_PER_TURN {
            match self.uapi.accept() {
                Ok((stream, _)) => {
                    let token = self.base + self.next_client_token;
                    if stream.set_nonblocking(true).is_err()
                        || self
                            .reg
                            .add(stream.as_fd(), token, Interest::ReadWrite)
                            .is_err()
                    {
                        continue;
                    }
                    self.next_client_token += 1;
                    if self.clients.len() >= MAX_CLIENTS {
                        // Evict the longest-idle client so a connection flood cannot lock
                        // out `wg`.
                        if let Some(i) =
                            (0..self.clients.len()).min_by_key(|&i| self.clients[i].last_active)
                        {
                            let mut c = self.clients.swap_remove(i);
                            c.outbuf.zeroize();
                        }
                    }
                    self.clients.push(Client {
                        stream,
                        read_blocked: false,
                        scan_hint: 0,
                        inbuf: Vec::new(),
                        outbuf: Vec::new(),
                        out_pos: 0,
                        last_active: Instant::now(),
                        closing: false,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return false,
            }
        }
        true
    }

    /// Serves every client; true if one still has requests waiting (turn limit reached).
    fn service_clients(&mut self, dev: &mut Device, buf: &mut [u8]) -> bool {
        let now = Instant::now();
        let mut more = false;
        let mut i = 0;
        while i < self.clients.len() {
            match self.service_client(i, dev, buf, now) {
                Some(m) => {
                    more |= m;
                    i += 1;
                }
                None => {
                    let mut c = self.clients.swap_remove(i);
                    c.outbuf.zeroize();
                    c.inbuf.zeroize();
                }
            }
        }
        more
    }

    /// Reads, answers and writes for one client. `None` when it should be closed, else
    /// whether it has more requests to answer on the next turn.
    fn service_client(
        &mut self,
        i: usize,
        dev: &mut Device,
        buf: &mut [u8],
        now: Instant,
    ) -> Option<bool> {
        let c = &mut self.clients[i];
        c.read_blocked = false;
        loop {
            if !c.wants_read() {
                c.read_blocked = !c.closing;
                break;
            }
            match (&c.stream).read(&mut buf[..65536]) {
                Ok(0) => {
                    c.closing = true;
                    break;
                }
                Ok(n) => {
                    extend_wiping(&mut c.inbuf, &buf[..n]);
                    buf[..n].zeroize();
                    c.last_active = now;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return None,
            }
        }
        // Answer a bounded number of requests per turn, and none while the client is not
        // reading its replies, so one client cannot hold the thread or grow memory.
        let mut off = 0;
        let mut handled = 0;
        let mut more = false;
        loop {
            let c = &self.clients[i];
            if handled == MAX_REQUESTS_PER_TURN || c.outbuf.len() >= OUTBUF_HIGH {
                more = handled == MAX_REQUESTS_PER_TURN;
                break;
            }
            let mut hint = if off == 0 { c.scan_hint } else { 0 };
            let parsed = uapi::parse_request_resume(&c.inbuf[off..], &mut hint);
            // Relative to inbuf[off..], which is where inbuf starts after the drain below.
            self.clients[i].scan_hint = hint;
            let (consumed, errno, fatal) = match parsed {
                Ok(None) => break,
                Ok(Some((req, consumed))) => {
                    (consumed, self.handle_request(req, i, dev, buf), false)
                }
                Err((e, consumed)) => {
                    log::verbose(format_args!("UAPI request refused: {e}"));
                    (consumed, Some(e.errno), true)
                }
            };
            handled += 1;
            off += consumed;
            let c = &mut self.clients[i];
            if let Some(errno) = errno {
                uapi::write_errno(&mut c.outbuf, errno);
            }
            if fatal {
                c.closing = true;
                c.scan_hint = 0;
                off = c.inbuf.len();
                break;
            }
        }
        let c = &mut self.clients[i];
        // The shift leaves stale copies of the unconsumed tail (maybe a `set` with a key)
        // past the new end: zero them.
        let rest = c.inbuf.len() - off;
        c.inbuf.copy_within(off.., 0);
        c.inbuf[rest..].zeroize();
        c.inbuf.truncate(rest);
        while c.out_pos < c.outbuf.len() {
            match (&c.stream).write(&c.outbuf[c.out_pos..]) {
                Ok(0) => return None,
                Ok(n) => {
                    c.out_pos += n;
                    c.last_active = now;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return None,
            }
        }
        if c.out_pos == c.outbuf.len() {
            c.outbuf.zeroize(); // replies may hold the private key
            c.out_pos = 0;
        }
        if c.outbuf.is_empty() && c.closing {
            return None;
        }
        let more = more || (c.read_blocked && c.wants_read());
        (now.saturating_duration_since(c.last_active) < CLIENT_IDLE).then_some(more)
    }

    /// Answers one request. Returns the errno to send for `set` (get writes its own reply).
    fn handle_request(
        &mut self,
        req: Request,
        i: usize,
        dev: &mut Device,
        buf: &mut [u8],
    ) -> Option<i32> {
        match req {
            Request::Get => {
                let info = dev.info();
                uapi::write_get_reply(&mut self.clients[i].outbuf, &info);
                None
            }
            Request::Set(req) => Some(self.apply_set(req, dev, buf)),
        }
    }

    /// Applies a validated set request: a new listen port is bound first, so a port in use
    /// fails the whole request with nothing applied. Returns the errno (0: done).
    fn apply_set(&mut self, mut req: uapi::SetRequest, dev: &mut Device, buf: &mut [u8]) -> i32 {
        let now = Instant::now();
        let mark = req.fwmark.unwrap_or(dev.fwmark);
        let mut rebound = false;
        if let Some(port) = req.listen_port.filter(|&p| p != dev.listen_port) {
            match udp::bind(port, mark, dev.index_tag()) {
                Ok(pair) => {
                    req.listen_port = Some(pair.port);
                    if let Err(e) = self.set_udp(pair) {
                        log::error(format_args!("cannot use new UDP sockets: {e}"));
                        return e.raw_os_error().unwrap_or(libc::EIO);
                    }
                    rebound = true;
                }
                Err(e) => {
                    log::error(format_args!("cannot listen on port {port}: {e}"));
                    return e.raw_os_error().unwrap_or(libc::EADDRINUSE);
                }
            }
        }
        let applied = dev.apply(&req, now);
        if applied.fwmark_changed && !rebound {
            let socks = [&self.udp6, &self.hs4, &self.hs6];
            for s in std::iter::once(&self.udp4).chain(socks.into_iter().flatten()) {
                if let Err(e) = udp::set_mark(s, dev.fwmark) {
                    log::error(format_args!("cannot set fwmark: {e}"));
                }
            }
        }
        if rebound {
            log::info(format_args!("listening on port {}", dev.listen_port));
        }
        self.flush_outputs(dev, buf);
        0
    }

    /// Follows our link's notifications; an error means the interface is gone.
    fn check_link(&self, dev: &mut Device, buf: &mut [u8]) -> Result<(), io::Error> {
        let mut events = Vec::new();
        if let Err(e) = self.link.drain(buf, &mut events) {
            // Missed notifications (ENOBUFS): ask directly whether the link still exists.
            if crate::sys::netlink::ifindex(&self.ifname) != Some(self.link.ifindex()) {
                return Err(e);
            }
        }
        for ev in events {
            match ev {
                LinkEvent::Deleted => {
                    return Err(io::Error::new(io::ErrorKind::NotFound, "link deleted"))
                }
                LinkEvent::Mtu(mtu) if mtu as usize != dev.mtu => {
                    log::verbose(format_args!("{}: MTU now {mtu}", self.ifname));
                    dev.mtu = mtu as usize;
                }
                LinkEvent::Mtu(_) => {}
            }
        }
        Ok(())
    }

    /// How long the loop may sleep: until the next protocol deadline or client idle limit.
    fn timeout(&self, dev: &Device, now: Instant) -> Option<Duration> {
        let client_deadline = self
            .clients
            .iter()
            .map(|c| c.last_active + CLIENT_IDLE)
            .min();
        let next = match (dev.next_deadline(), client_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        next.map(|t| t.saturating_duration_since(now))
    }
}

/// An interface served by the loop: its sources and its protocol state.
pub struct Slot {
    pub io: Io,
    pub dev: Device,
    /// Sources that still had input when their batch ran out (edge-triggered epoll would
    /// not report those again), or everything right after the interface was added.
    again: Ready,
}

/// What the daemon adds around its interfaces in managed mode (ubus, configuration, name
/// resolution): its own sources on tokens from CONTROL_TOKEN up, and its own deadline.
pub trait Control {
    fn on_ready(&mut self, token: u64, d: &mut Daemon);
    /// Called every turn after the interfaces were served.
    fn on_turn(&mut self, d: &mut Daemon, now: Instant);
    fn next_deadline(&self) -> Option<Instant>;
    /// An interface's link was deleted under us; it has been removed from the loop.
    fn on_gone(&mut self, d: &mut Daemon, ifname: &str, e: &io::Error);
}

/// The one event loop: every interface, the signal fd and the control share one epoll set
/// and one thread; packet buffers are shared too (only one packet is in hand at a time).
pub struct Daemon {
    poller: Poller,
    signals: SignalFd,
    slots: Vec<Option<Slot>>,
    buf: Vec<u8>,
    tx: TxBatch,
    co: offload::TcpCoalescer,
    small: batch::SmallBatch,
    /// When a tunnel last had data to move (see `Slot::turn`).
    data_seen: Option<Instant>,
}

/// The daemon's shared packet buffers, lent to one interface's turn.
type Buffers<'a> = (
    &'a mut Vec<u8>,
    &'a mut TxBatch,
    &'a mut offload::TcpCoalescer,
    &'a mut batch::SmallBatch,
);

/// How long after tunnel data handshakes stay charged to their budget.
const DATA_RECENT: Duration = Duration::from_millis(100);

impl Daemon {
    pub fn new(signals: SignalFd) -> io::Result<Daemon> {
        let poller = Poller::new()?;
        poller.add(signals.as_fd(), SIGNAL_TOKEN, Interest::Read)?;
        Ok(Daemon {
            poller,
            signals,
            slots: Vec::new(),
            buf: vec![0u8; BUF_LEN],
            tx: TxBatch::new(1280, false),
            co: offload::TcpCoalescer::default(),
            small: batch::SmallBatch::default(),
            data_seen: None,
        })
    }

    pub fn registry(&self) -> Registry {
        self.poller.registry()
    }

    /// Serves a new interface from the next turn on.
    pub fn add(
        &mut self,
        tun: Tun,
        udp: UdpPair,
        uapi: UnixListener,
        dev: Device,
    ) -> io::Result<()> {
        let i = match self.slots.iter().position(|s| s.is_none()) {
            Some(i) => i,
            None => {
                self.slots.push(None);
                self.slots.len() - 1
            }
        };
        let io = Io::new(
            tun,
            udp,
            uapi,
            self.poller.registry(),
            (i as u64 + 1) << SLOT_SHIFT,
        )?;
        self.slots[i] = Some(Slot {
            io,
            dev,
            again: Ready::everything(),
        });
        Ok(())
    }

    /// Stops serving an interface; dropping the slot closes its TUN (the link goes) and
    /// sockets (they leave the epoll set by themselves).
    pub fn remove(&mut self, ifname: &str) -> Option<Slot> {
        let i = self
            .slots
            .iter()
            .position(|s| s.as_ref().is_some_and(|s| s.io.ifname == ifname))?;
        self.slots[i].take()
    }

    pub fn get(&self, ifname: &str) -> Option<&Slot> {
        self.slots.iter().flatten().find(|s| s.io.ifname == ifname)
    }

    pub fn slots(&self) -> impl Iterator<Item = &Slot> {
        self.slots.iter().flatten()
    }

    /// Applies a configuration change to one interface with the UAPI's semantics (see
    /// `Io::apply_set`); the errno when it was refused, ENODEV for an unknown interface.
    pub fn apply(&mut self, ifname: &str, req: uapi::SetRequest) -> Result<(), i32> {
        let buf = &mut self.buf;
        let s = self
            .slots
            .iter_mut()
            .flatten()
            .find(|s| s.io.ifname == ifname)
            .ok_or(libc::ENODEV)?;
        match s.io.apply_set(req, &mut s.dev, buf) {
            0 => Ok(()),
            e => Err(e),
        }
    }

    /// Runs until a signal. Without a control (the wireguard-go style single interface)
    /// it also ends when an interface disappears; with one, the control is told instead.
    pub fn run(&mut self, mut control: Option<&mut dyn Control>) -> Exit {
        let mut control_ready: Vec<u64> = Vec::with_capacity(8);
        loop {
            let now = Instant::now();
            let busy = self.slots().any(|s| s.again.any());
            let timeout = if busy {
                Some(Duration::ZERO)
            } else {
                let mut t = self.slots().filter_map(|s| s.io.timeout(&s.dev, now)).min();
                if let Some(c) = control.as_ref().and_then(|c| c.next_deadline()) {
                    let c = c.saturating_duration_since(now);
                    t = Some(t.map_or(c, |t| t.min(c)));
                }
                t
            };
            for s in self.slots.iter_mut().flatten() {
                s.io.ready = std::mem::take(&mut s.again);
            }
            let mut signal = false;
            control_ready.clear();
            let slots = &mut self.slots;
            let waited = self.poller.wait(timeout, |token| {
                let slot = (token >> SLOT_SHIFT) as usize;
                if slot == 0 {
                    if token == SIGNAL_TOKEN {
                        signal = true;
                    } else if control_ready.len() < control_ready.capacity() {
                        control_ready.push(token);
                    }
                    return;
                }
                let Some(Some(s)) = slots.get_mut(slot - 1) else {
                    return; // an interface removed earlier in this turn
                };
                let r = &mut s.io.ready;
                match token & ((1 << SLOT_SHIFT) - 1) {
                    TUN_TOKEN => r.tun = true,
                    UDP4_TOKEN => r.udp4 = true,
                    UDP6_TOKEN => r.udp6 = true,
                    HS4_TOKEN => r.hs4 = true,
                    HS6_TOKEN => r.hs6 = true,
                    UAPI_TOKEN => r.uapi = true,
                    LINK_TOKEN => r.link = true,
                    _ => r.clients = true,
                }
            });
            if let Err(e) = waited {
                log::error(format_args!("epoll_wait failed: {e}"));
                return Exit::InterfaceGone(e);
            }
            if signal && self.signals.take() {
                return Exit::Signal;
            }
            for i in 0..self.slots.len() {
                let Some(s) = self.slots[i].as_mut() else {
                    continue;
                };
                let bufs = (&mut self.buf, &mut self.tx, &mut self.co, &mut self.small);
                if let Err(e) = s.turn(bufs, &mut self.data_seen) {
                    let Some(s) = self.slots[i].take() else {
                        continue;
                    };
                    match control.as_deref_mut() {
                        None => return Exit::InterfaceGone(e),
                        Some(c) => {
                            let name = s.io.ifname.clone();
                            drop(s);
                            c.on_gone(self, &name, &e);
                        }
                    }
                }
            }
            if let Some(c) = control.as_deref_mut() {
                for &t in &control_ready {
                    c.on_ready(t, self);
                }
                c.on_turn(self, Instant::now());
            }
        }
    }
}

impl Slot {
    /// One loop turn for this interface: drains what is ready, serves UAPI clients, runs
    /// the protocol timers. An error means the interface is gone.
    fn turn(
        &mut self,
        (buf, tx, co, small): Buffers,
        data_seen: &mut Option<Instant>,
    ) -> Result<(), io::Error> {
        let ready = std::mem::take(&mut self.io.ready);
        // Handshake work is charged to its budget only while some tunnel carries data (the
        // data sockets only get our sessions' messages): with nothing to protect, a storm
        // of real handshakes may take the whole CPU.
        let start = Instant::now();
        if ready.tun || ready.udp4 || ready.udp6 {
            *data_seen = Some(start);
        }
        let charge = data_seen.is_some_and(|t| start.saturating_duration_since(t) < DATA_RECENT);
        let (io, dev) = (&mut self.io, &mut self.dev);
        let again = &mut self.again;
        if ready.link {
            io.check_link(dev, buf)?;
        }
        if ready.tun {
            let vnet = io.tun.vnet_hdr_len() != 0;
            if tx.slot_len < dev.mtu + HEADROOM + TX_TAILROOM || (vnet && tx.spill.is_empty()) {
                let mtu = dev.mtu.max(tx.slot_cap());
                *tx = TxBatch::new(mtu, vnet || !tx.spill.is_empty()); // MTU grew, or offload
            }
            again.tun = io.drain_tun(dev, tx)?;
        }
        if ready.udp4 {
            again.udp4 = io.drain_udp(false, dev, buf, co, charge);
        }
        if ready.udp6 {
            again.udp6 = io.drain_udp(true, dev, buf, co, charge);
        }
        if ready.hs4 {
            again.hs4 = io.drain_hs(false, dev, small, charge);
        }
        if ready.hs6 {
            again.hs6 = io.drain_hs(true, dev, small, charge);
        }
        io.flush_outputs(dev, buf);
        if ready.uapi {
            again.uapi = io.accept_clients();
        }
        let now = Instant::now();
        let clients_due = io
            .clients
            .iter()
            .any(|c| now.saturating_duration_since(c.last_active) >= CLIENT_IDLE);
        if ready.clients || ready.uapi || clients_due {
            again.clients = io.service_clients(dev, buf);
        }
        dev.update_timers(Instant::now());
        io.flush_outputs(dev, buf);
        Ok(())
    }
}
