//! TUN offload (IFF_VNET_HDR): the virtio-net header that prefixes every TUN read and write,
//! TCP segmentation of the super-packets the kernel hands us with TSO enabled, and the
//! Internet checksum to complete what the kernel left partial. Pure (bytes in, bytes out),
//! no allocation; the header's byte order: docs/architecture.md, "TUN offload header".
//!
//! One file per part, their public items re-exported here: `checksum` (the Internet
//! checksum, with MIPS assembly for its inner loop), `segment` (cutting super-packets read
//! from the TUN device) and `coalesce` (joining received segments for one TUN write).

mod checksum;
mod coalesce;
mod segment;
#[cfg(test)]
mod tests;

pub use checksum::{complete_csum, finish, fold, sum};
pub use coalesce::{Refused, TcpCoalescer, MAX_COALESCE};
pub use segment::TcpSegments;

/// Size of `struct virtio_net_hdr` (the TUN default; we never change it).
pub const VNET_HDR_LEN: usize = 10;
/// `flags`: checksum from `csum_start` to the end, stored at `csum_start + csum_offset`.
pub const F_NEEDS_CSUM: u8 = 1;
pub const GSO_NONE: u8 = 0;
pub const GSO_TCPV4: u8 = 1;
pub const GSO_TCPV6: u8 = 4;
/// `gso_type` bit: the flow uses ECN (CWR goes on the first segment only).
pub const GSO_ECN: u8 = 0x80;

const TCP_FIN: u8 = 0x01;
const TCP_PSH: u8 = 0x08;
const TCP_CWR: u8 = 0x80;
const TCP_ACK: u8 = 0x10;
const PROTO_TCP: u8 = 6;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VnetHdr {
    pub flags: u8,
    pub gso_type: u8,
    pub hdr_len: u16,
    pub gso_size: u16,
    pub csum_start: u16,
    pub csum_offset: u16,
}

impl VnetHdr {
    pub fn parse(b: &[u8]) -> Option<VnetHdr> {
        let b = b.get(..VNET_HDR_LEN)?;
        let u = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        Some(VnetHdr {
            flags: b[0],
            gso_type: b[1],
            hdr_len: u(2),
            gso_size: u(4),
            csum_start: u(6),
            csum_offset: u(8),
        })
    }

    pub fn write(&self, b: &mut [u8]) {
        b[0] = self.flags;
        b[1] = self.gso_type;
        b[2..4].copy_from_slice(&self.hdr_len.to_le_bytes());
        b[4..6].copy_from_slice(&self.gso_size.to_le_bytes());
        b[6..8].copy_from_slice(&self.csum_start.to_le_bytes());
        b[8..10].copy_from_slice(&self.csum_offset.to_le_bytes());
    }

    pub fn is_gso(&self) -> bool {
        self.gso_type != GSO_NONE
    }
}
