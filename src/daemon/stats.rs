//! The data path's own counters: system calls by kind and the packets they moved, so a
//! benchmark can read syscalls per packet and batch sizes without tracing the hot loop.
//! Plain increments (no atomics: one thread); `SIGUSR1` logs them (see `Daemon::run`).

use std::cell::Cell;
use std::fmt;

/// Per interface. `Cell`s because the I/O paths borrow their interface shared.
#[derive(Default)]
pub struct Stats {
    /// `recvmsg` calls on the data sockets, those that found nothing (EAGAIN) included.
    pub udp_recv_calls: Cell<u64>,
    /// Datagrams they returned (a GRO train counts each datagram).
    pub udp_rx_datagrams: Cell<u64>,
    /// Send calls on the data sockets (one GSO train or one datagram each).
    pub udp_send_calls: Cell<u64>,
    /// Datagrams handed to those calls, and those of them the kernel did not take (a full
    /// socket buffer, an unreachable network): dropped, as a congested link would.
    pub udp_tx_datagrams: Cell<u64>,
    pub udp_tx_dropped: Cell<u64>,
    /// Of `udp_tx_datagrams`, those handed to the packet socket (see `packet_tx`).
    pub packet_tx_datagrams: Cell<u64>,
    /// TUN reads, those that found nothing included, and the packets they returned (a
    /// TSO super-packet counts once).
    pub tun_reads: Cell<u64>,
    pub tun_rx_packets: Cell<u64>,
    /// Segments cut from TSO super-packets, and those of them read in place (not copied).
    pub tun_segments: Cell<u64>,
    pub tun_segments_in_place: Cell<u64>,
    /// TUN writes and the packets they carried (a coalesced write counts each segment).
    pub tun_writes: Cell<u64>,
    pub tun_tx_packets: Cell<u64>,
}

/// Adds `n` to a counter.
#[inline]
pub fn add(c: &Cell<u64>, n: u64) {
    c.set(c.get().wrapping_add(n));
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "udp_recv_calls={} udp_rx_datagrams={} udp_send_calls={} udp_tx_datagrams={} \
             udp_tx_dropped={} packet_tx_datagrams={} tun_reads={} tun_rx_packets={} tun_segments={} tun_segments_in_place={} \
             tun_writes={} tun_tx_packets={}",
            self.udp_recv_calls.get(),
            self.udp_rx_datagrams.get(),
            self.udp_send_calls.get(),
            self.udp_tx_datagrams.get(),
            self.udp_tx_dropped.get(),
            self.packet_tx_datagrams.get(),
            self.tun_reads.get(),
            self.tun_rx_packets.get(),
            self.tun_segments.get(),
            self.tun_segments_in_place.get(),
            self.tun_writes.get(),
            self.tun_tx_packets.get(),
        )
    }
}
