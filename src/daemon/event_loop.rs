//! The event loop: one thread waits (one `epoll_wait`) for TUN, UDP, the UAPI socket, link
//! events, signals and the next protocol deadline, then drains each ready source in bounded
//! batches and does every step of every packet itself. There is no other thread, so there
//! are no queues, locks or wake-ups between threads.

use crate::daemon::stats::{self, Stats};
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
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::time::{Duration, Instant, SystemTime};
use zeroize::Zeroize;

mod conns;
mod packet_paths;
mod rx;
mod tx;
mod uapi_clients;

use conns::{ConnectedSockets, CONN_TOKEN, MAX_CONNS};
use packet_paths::{PacketPaths, Via};
use tx::{TxBatch, TX_TAILROOM};
use uapi_clients::{Client, PendingSet, CLIENT_IDLE};

/// Packets taken from one source before looking at the others (fairness bound).
const BATCH: usize = 64;
/// One buffer holds any datagram or TUN packet plus headroom and tag space, and a full
/// receive call's messages.
const BUF_LEN: usize = batch::RECV_BUF;
/// Messages (datagrams or GRO trains) taken from one data socket before looking at the
/// others (fairness bound; BATCH receive calls at most, too).
const RX_MESSAGES: usize = 256;
/// Data receive calls in a row without a message longer than its head slot (a GRO train of
/// full datagrams) after which calls ask for RECV_MANY messages.
const RX_CALM: u8 = 8;

/// One interface's sources and UAPI clients. Its tokens are `base + *_TOKEN`.
pub struct InterfaceIo {
    reg: Registry,
    base: u64,
    tun: Tun,
    udp4: UdpSocket,
    udp6: Option<UdpSocket>,
    /// Handshake sockets (see `udp::UdpPair`): served a bounded batch per turn.
    hs4: Option<UdpSocket>,
    hs6: Option<UdpSocket>,
    /// Connected sockets per endpoint (see `conns`), on `port` with `fwmark`.
    conns: ConnectedSockets,
    port: u16,
    fwmark: u32,
    uapi: UnixListener,
    clients: Vec<Client>,
    next_client_token: u64,
    /// A long UAPI `set` being applied in slices, one per loop turn after the packets.
    applying: Option<Box<PendingSet>>,
    link: LinkMonitor,
    ifname: String,
    /// UDP GSO still believed to work (switched off after the first refusal).
    gso: bool,
    /// Largest segment GSO accepted (lowered when the path MTU is smaller than a datagram).
    gso_max_seg: usize,
    /// Without GSO: the packet-socket transmit path (see `packet_paths`).
    packet: PacketPaths,
    /// What epoll reported for this interface in the current turn.
    ready: ReadySources,
    stats: Stats,
    /// `sendmmsg` arrays for batches sent without GSO (borrowed only inside one send).
    sendmany: std::cell::RefCell<batch::SendMany>,
    /// `recvmmsg` arrays for the data sockets (borrowed only inside one receive).
    recvmany: std::cell::RefCell<batch::RecvMany>,
    /// Data receive calls in a row that brought no message longer than its head slot
    /// (saturating at RX_CALM). Right after one the next call asks for one message (a GRO
    /// train of full datagrams fills a region: fewer regions, fewer pages touched), after a
    /// quiet call for four, and after RX_CALM for RECV_MANY, whose regions a train then
    /// rarely reaches. Trains of small datagrams (acknowledgements) fit their head slots.
    rx_calm: std::cell::Cell<u8>,
}

#[derive(Clone, Copy, Default)]
struct ReadySources {
    tun: bool,
    udp4: bool,
    udp6: bool,
    hs4: bool,
    hs6: bool,
    /// Connected sockets, by slot (bit i: slot i).
    conns: u32,
    uapi: bool,
    clients: bool,
    link: bool,
}

impl ReadySources {
    fn any(&self) -> bool {
        self.tun
            || self.udp4
            || self.udp6
            || self.hs4
            || self.hs6
            || self.conns != 0
            || self.uapi
            || self.clients
            || self.link
    }

    /// A new interface's first turn looks at every source.
    fn everything() -> ReadySources {
        ReadySources {
            tun: true,
            udp4: true,
            udp6: true,
            hs4: true,
            hs6: true,
            conns: u32::MAX,
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

impl InterfaceIo {
    pub fn new(
        tun: Tun,
        udp: UdpPair,
        fwmark: u32,
        uapi: UnixListener,
        reg: Registry,
        base: u64,
    ) -> io::Result<InterfaceIo> {
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
        Ok(InterfaceIo {
            reg,
            base,
            link,
            ifname,
            gso: true,
            gso_max_seg: usize::MAX,
            packet: PacketPaths::default(),
            tun,
            udp4: udp.v4,
            udp6: udp.v6,
            hs4: udp.hs4,
            hs6: udp.hs6,
            conns: ConnectedSockets::default(),
            port: udp.port,
            fwmark,
            uapi,
            clients: Vec::new(),
            next_client_token: CLIENT_TOKEN,
            applying: None,
            ready: ReadySources::default(),
            stats: Stats::default(),
            sendmany: Default::default(),
            recvmany: Default::default(),
            rx_calm: Default::default(),
        })
    }

    pub fn ifname(&self) -> &str {
        &self.ifname
    }

    /// Swaps in newly bound sockets (the old ones close and leave the epoll set by themselves).
    fn set_udp(&mut self, udp: UdpPair) -> io::Result<()> {
        self.conns.retire_all(); // bound to the old port
        self.packet.forget(None); // policy rules may match the port
        self.port = udp.port;
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
        let mut sent = self
            .conns
            .get(to)
            .map(|c| crate::sys::send(c.as_fd(), data, 0));
        if let Some(Err(e)) = &sent {
            if e.kind() != io::ErrorKind::WouldBlock {
                sent = None; // try unconnected; a batch send closes a broken one
            }
        }
        let sent = match (sent, to, &self.udp6) {
            (Some(r), _, _) => r,
            (None, SocketAddr::V4(_), _) => self.udp4.send_to(data, to),
            (None, SocketAddr::V6(_), Some(s)) => s.send_to(data, to),
            (None, SocketAddr::V6(_), None) => return,
        };
        stats::add(&self.stats.udp_send_calls, 1);
        stats::add(&self.stats.udp_tx_datagrams, 1);
        if let Err(e) = sent {
            // A full socket buffer or an unreachable network drops the packet, like a link would.
            stats::add(&self.stats.udp_tx_dropped, 1);
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
        // A fixed length, so no call to `memset` for ten bytes (once per packet written).
        match buf.get_mut(from..start) {
            Some(h) if h.len() == offload::VNET_HDR_LEN => {
                h.copy_from_slice(&[0; offload::VNET_HDR_LEN])
            }
            Some(h) => h.fill(0),
            None => return,
        }
        stats::add(&self.stats.tun_writes, 1);
        stats::add(&self.stats.tun_tx_packets, 1);
        if let Err(e) = self.tun.write(&buf[from..start + len]) {
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

    /// Closes every connected socket (their pinned routes may be stale; sends open new
    /// ones), after taking in what they hold; those still holding more stay retired.
    fn reopen_conns(
        &mut self,
        dev: &mut Device,
        buf: &mut [u8],
        coalescer: &mut offload::TcpCoalescer,
        charge: bool,
    ) {
        self.conns.retire_all(); // and lets failed endpoints be tried again
        let all = self.conns.take_retired();
        self.close_conns(all, dev, buf, coalescer, charge);
    }

    /// Follows our link's notifications; true if an address or route may have moved (the
    /// connected sockets are then reopened, `reopen_conns`); an error means the interface
    /// is gone.
    fn check_link(&mut self, dev: &mut Device, buf: &mut [u8]) -> Result<bool, io::Error> {
        let mut events = Vec::new();
        let mut moved = false;
        if let Err(e) = self.link.drain(buf, &mut events) {
            // Missed notifications (ENOBUFS): what we missed may have moved a route, and we
            // ask directly whether the link still exists.
            moved = true;
            self.packet.rules_changed();
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
                LinkEvent::Routing => {
                    moved = true;
                    self.packet.forget(None);
                }
                LinkEvent::Neighbour(ifindex) => self.packet.forget(Some(ifindex)),
                LinkEvent::Rules => self.packet.rules_changed(),
            }
        }
        Ok(moved)
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
pub struct Interface {
    pub io: InterfaceIo,
    pub dev: Device,
    /// Sources that still had input when their batch ran out (edge-triggered epoll would
    /// not report those again), or everything right after the interface was added.
    again: ReadySources,
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
    /// Boxed: a slot taken out (an interface gone) moves a pointer, not a kilobyte, so the
    /// loop's stack frame stays small (see `cli::run_foreground`).
    slots: Vec<Option<Box<Interface>>>,
    bufs: PacketBuffers,
    /// When a tunnel last had data to move (see `Interface::turn`).
    data_seen: Option<Instant>,
    /// When the wall clock was last read for the devices (see `WALL_CLOCK_EVERY`).
    wall_read: Option<Instant>,
    /// Readiness waits (`epoll_wait` calls), for the counters.
    waits: u64,
}

/// The daemon's shared packet buffers, lent to one interface's turn at a time.
struct PacketBuffers {
    /// Datagrams received from the UDP sockets, decrypted in place.
    rx: Vec<u8>,
    /// Packets read from the TUN device, encrypted in place and sent.
    tx: TxBatch,
    /// TCP segments gathered for one offloaded TUN write.
    coalescer: offload::TcpCoalescer,
    /// Handshake messages from the handshake sockets.
    handshakes: batch::SmallBatch,
}

/// How long after tunnel data handshakes stay charged to their budget.
const DATA_RECENT: Duration = Duration::from_millis(100);
/// How often the wall clock is read for the devices: a jump (NTP setting the clock of a
/// router without RTC) reaches handshake timestamps within this, at one clock read per
/// interval rather than per turn.
const WALL_CLOCK_EVERY: Duration = Duration::from_millis(100);

impl Daemon {
    pub fn new(signals: SignalFd) -> io::Result<Daemon> {
        let poller = Poller::new()?;
        poller.add(signals.as_fd(), SIGNAL_TOKEN, Interest::Read)?;
        Ok(Daemon {
            poller,
            signals,
            slots: Vec::new(),
            bufs: PacketBuffers {
                rx: vec![0u8; BUF_LEN],
                tx: TxBatch::new(1280, false),
                coalescer: offload::TcpCoalescer::default(),
                handshakes: batch::SmallBatch::default(),
            },
            data_seen: None,
            wall_read: None,
            waits: 0,
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
        let io = InterfaceIo::new(
            tun,
            udp,
            dev.fwmark,
            uapi,
            self.poller.registry(),
            (i as u64 + 1) << SLOT_SHIFT,
        )?;
        self.slots[i] = Some(Box::new(Interface {
            io,
            dev,
            again: ReadySources::everything(),
        }));
        Ok(())
    }

    /// Stops serving an interface; dropping the slot closes its TUN (the link goes) and
    /// sockets (they leave the epoll set by themselves).
    pub fn remove(&mut self, ifname: &str) -> Option<Box<Interface>> {
        let i = self
            .slots
            .iter()
            .position(|s| s.as_ref().is_some_and(|s| s.io.ifname == ifname))?;
        self.slots[i].take()
    }

    pub fn get(&self, ifname: &str) -> Option<&Interface> {
        self.slots().find(|s| s.io.ifname == ifname)
    }

    pub fn slots(&self) -> impl Iterator<Item = &Interface> {
        self.slots.iter().flatten().map(|s| &**s)
    }

    /// Sets an interface's MTU: its TUN's, and the device's at once (padding follows it, and
    /// the TX buffers grow on the next TUN read if it grew, see `Interface::turn`).
    pub fn set_mtu(&mut self, ifname: &str, mtu: u32) -> io::Result<()> {
        let s = self
            .slots
            .iter_mut()
            .flatten()
            .find(|s| s.io.ifname == ifname)
            .ok_or_else(|| io::Error::from_raw_os_error(libc::ENODEV))?;
        s.io.tun.set_mtu(mtu)?;
        s.dev.mtu = mtu as usize;
        Ok(())
    }

    /// Applies a configuration change to one interface with the UAPI's semantics (see
    /// `InterfaceIo::apply_set`); the errno when it was refused, ENODEV for an unknown interface.
    pub fn apply(&mut self, ifname: &str, req: uapi::SetRequest) -> Result<(), i32> {
        let buf = &mut self.bufs.rx;
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

    /// Logs the counters (on SIGUSR1): one line for the loop, one per interface with the
    /// data path's counters and the protocol's drops that happened (`drop_<reason>=n`).
    #[cold]
    #[inline(never)] // its formatting would enlarge the loop's stack frame
    fn log_stats(&self) {
        log::info(format_args!("stats: waits={}", self.waits));
        for s in self.slots() {
            let mut drops = String::new();
            for (r, n) in s.dev.drops().filter(|&(_, n)| n > 0) {
                drops.push_str(&format!(" drop_{}={n}", r.name()));
            }
            log::info(format_args!("stats {}: {}{drops}", s.io.ifname, s.io.stats));
        }
    }

    /// Runs until a signal. Without a control (the wireguard-go style single interface)
    /// it also ends when an interface disappears; with one, the control is told instead.
    pub fn run(&mut self, mut control: Option<&mut dyn Control>) -> Exit {
        let mut control_ready: Vec<u64> = Vec::with_capacity(8);
        loop {
            let timeout = self.timeout(control.as_deref(), Instant::now());
            let signal = match self.wait(timeout, &mut control_ready) {
                Ok(signal) => signal,
                Err(e) => {
                    log::error(format_args!("epoll_wait failed: {e}"));
                    return Exit::InterfaceGone(e);
                }
            };
            self.waits += 1;
            if signal && self.take_signals() {
                return Exit::Signal;
            }
            self.read_wall_clock(Instant::now());
            for i in 0..self.slots.len() {
                let Some(s) = self.slots[i].as_mut() else {
                    continue;
                };
                if let Err(e) = s.turn(&mut self.bufs, &mut self.data_seen) {
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

    /// How long this turn's wait may last: not at all if a source still had input, else
    /// until the earliest deadline of any interface or of the control.
    #[inline(always)] // once per turn; its code stays in run's (hot-text.ld)
    fn timeout(&self, control: Option<&dyn Control>, now: Instant) -> Option<Duration> {
        if self.slots().any(|s| s.again.any()) {
            return Some(Duration::ZERO);
        }
        let mut t = self.slots().filter_map(|s| s.io.timeout(&s.dev, now)).min();
        if let Some(c) = control.and_then(|c| c.next_deadline()) {
            let c = c.saturating_duration_since(now);
            t = Some(t.map_or(c, |t| t.min(c)));
        }
        t
    }

    /// One `epoll_wait`: marks what is ready in each interface's `ready` (after what its
    /// last turn left over) and collects the control's tokens; true if a signal came.
    #[inline(always)] // once per turn; its code stays in run's (hot-text.ld)
    fn wait(
        &mut self,
        timeout: Option<Duration>,
        control_ready: &mut Vec<u64>,
    ) -> io::Result<bool> {
        for s in self.slots.iter_mut().flatten() {
            s.io.ready = std::mem::take(&mut s.again);
        }
        let mut signal = false;
        control_ready.clear();
        let slots = &mut self.slots;
        self.poller.wait(timeout, |token| {
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
                t if (CONN_TOKEN..CONN_TOKEN + MAX_CONNS as u64).contains(&t) => {
                    r.conns |= 1 << (t - CONN_TOKEN)
                }
                _ => r.clients = true,
            }
        })?;
        Ok(signal)
    }

    /// Handles every pending signal (the fd is edge-triggered); true for one that stops
    /// the daemon.
    fn take_signals(&mut self) -> bool {
        while let Some(sig) = self.signals.take() {
            match sig {
                libc::SIGUSR1 => self.log_stats(),
                // Blocked so they cannot end the daemon behind its back (their default
                // action), leaving its sockets behind: a closed terminal or a stray
                // signal is not a request to stop. Reloads come over ubus or UAPI.
                libc::SIGHUP | libc::SIGUSR2 => log::info(format_args!(
                    "signal {sig} ignored (SIGTERM or SIGINT stops the daemon)"
                )),
                _ => return true,
            }
        }
        false
    }

    /// Gives the devices the wall clock, read at most every WALL_CLOCK_EVERY.
    #[inline(always)] // once per turn; its code stays in run's (hot-text.ld)
    fn read_wall_clock(&mut self, now: Instant) {
        if self
            .wall_read
            .is_none_or(|t| now.saturating_duration_since(t) >= WALL_CLOCK_EVERY)
        {
            self.wall_read = Some(now);
            let wall = SystemTime::now();
            for s in self.slots.iter_mut().flatten() {
                s.dev.set_wall_clock(now, wall);
            }
        }
    }
}

impl Interface {
    /// One loop turn for this interface: drains what is ready, serves UAPI clients, runs
    /// the protocol timers. An error means the interface is gone.
    #[inline(never)] // its own symbol, for openwrt/hot-text.ld
    fn turn(
        &mut self,
        bufs: &mut PacketBuffers,
        data_seen: &mut Option<Instant>,
    ) -> Result<(), io::Error> {
        let PacketBuffers {
            rx: buf,
            tx,
            coalescer,
            handshakes,
        } = bufs;
        let ready = std::mem::take(&mut self.io.ready);
        // Handshake work is charged to its budget only while some tunnel carries data (the
        // data sockets only get our sessions' messages): with nothing to protect, a storm
        // of real handshakes may take the whole CPU.
        let start = Instant::now();
        if ready.tun || ready.udp4 || ready.udp6 || ready.conns != 0 {
            *data_seen = Some(start);
        }
        let charge = data_seen.is_some_and(|t| start.saturating_duration_since(t) < DATA_RECENT);
        let (io, dev) = (&mut self.io, &mut self.dev);
        let again = &mut self.again;
        if ready.link && io.check_link(dev, buf)? {
            io.reopen_conns(dev, buf, coalescer, charge);
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
            again.udp4 = io.drain_udp(false, dev, buf, coalescer, charge);
        }
        if ready.udp6 {
            again.udp6 = io.drain_udp(true, dev, buf, coalescer, charge);
        }
        if ready.hs4 {
            again.hs4 = io.drain_hs(false, dev, handshakes, charge);
        }
        if ready.hs6 {
            again.hs6 = io.drain_hs(true, dev, handshakes, charge);
        }
        let conns = ready.conns & io.conns.open_mask();
        if conns != 0 {
            again.conns = io.drain_conns(conns, dev, buf, coalescer, charge);
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
        // Idle, and retired (a failed send, a new port, fwmark or route); one still holding
        // datagrams is read on the next turn, with no wait, and closed then.
        let done = io.conns.sweep(now) | io.conns.take_retired();
        if done != 0 {
            again.conns |= io.close_conns(done, dev, buf, coalescer, charge);
            io.flush_outputs(dev, buf);
        }
        Ok(())
    }
}
