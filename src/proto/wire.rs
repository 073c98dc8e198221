//! WireGuard message layouts: the single source of truth for sizes and field offsets.
//!
//! Every message starts with a little-endian u32 whose low byte is the type and whose
//! other bytes are zero. Sizes are exact for handshake messages; a data message is a
//! 16-byte header, the ciphertext (a multiple of 16 bytes) and a 16-byte tag.
//! Accessors read fixed offsets from slices whose length `classify` already checked,
//! so nothing here can panic on network input.

pub const MSG_INITIATION: u8 = 1;
pub const MSG_RESPONSE: u8 = 2;
pub const MSG_COOKIE_REPLY: u8 = 3;
pub const MSG_DATA: u8 = 4;

pub const INITIATION_LEN: usize = 148;
pub const RESPONSE_LEN: usize = 92;
pub const COOKIE_REPLY_LEN: usize = 64;
pub const DATA_HEADER_LEN: usize = 16;
pub const DATA_MIN_LEN: usize = DATA_HEADER_LEN + 16;
/// Headroom the shell reserves before a TUN packet so it can be encrypted in place.
pub const HEADROOM: usize = DATA_HEADER_LEN;
/// Bits of every receiver index a device hands out that carry its random tag, so the shell's
/// socket filter can tell data for our sessions from everything else (`Device::index_tag`).
pub const INDEX_TAG_MASK: u32 = 0xfff;
/// Largest datagram we ever build or accept (UDP payload limit).
pub const MAX_DATAGRAM: usize = 65535;

/// Initiation: type(4) sender(4) ephemeral(32) static(32+16) timestamp(12+16) mac1(16) mac2(16).
pub mod init {
    pub const SENDER: usize = 4;
    pub const EPHEMERAL: usize = 8;
    pub const STATIC: usize = 40;
    pub const TIMESTAMP: usize = 88;
    pub const MAC1: usize = 116;
    pub const MAC2: usize = 132;
}

/// Response: type(4) sender(4) receiver(4) ephemeral(32) empty(0+16) mac1(16) mac2(16).
pub mod resp {
    pub const SENDER: usize = 4;
    pub const RECEIVER: usize = 8;
    pub const EPHEMERAL: usize = 12;
    pub const EMPTY: usize = 44;
    pub const MAC1: usize = 60;
    pub const MAC2: usize = 76;
}

/// Cookie reply: type(4) receiver(4) nonce(24) cookie(16+16).
pub mod cookie {
    pub const RECEIVER: usize = 4;
    pub const NONCE: usize = 8;
    pub const COOKIE: usize = 32;
}

/// Data: type(4) receiver(4) counter(8) payload.
pub mod data {
    pub const RECEIVER: usize = 4;
    pub const COUNTER: usize = 8;
}

/// What a datagram claims to be, after the size and reserved-byte checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Initiation,
    Response,
    CookieReply,
    Data,
}

/// Classify a datagram by its header; `None` for anything malformed.
pub fn classify(msg: &[u8]) -> Option<Kind> {
    if msg.len() < 4 || msg[1..4] != [0, 0, 0] {
        return None;
    }
    match (msg[0], msg.len()) {
        (MSG_INITIATION, INITIATION_LEN) => Some(Kind::Initiation),
        (MSG_RESPONSE, RESPONSE_LEN) => Some(Kind::Response),
        (MSG_COOKIE_REPLY, COOKIE_REPLY_LEN) => Some(Kind::CookieReply),
        (MSG_DATA, n) if (DATA_MIN_LEN..=MAX_DATAGRAM).contains(&n) => Some(Kind::Data),
        _ => None,
    }
}

pub fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut x = [0u8; 4];
    x.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(x)
}

pub fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(x)
}

pub fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

pub fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

pub fn array32(b: &[u8], at: usize) -> [u8; 32] {
    let mut x = [0u8; 32];
    x.copy_from_slice(&b[at..at + 32]);
    x
}

/// Writes the 4-byte type header.
pub fn put_type(b: &mut [u8], t: u8) {
    b[..4].copy_from_slice(&[t, 0, 0, 0]);
}

/// Source/destination addresses and real length of an inner IP packet, read from its header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InnerIp<'a> {
    pub src: &'a [u8],
    pub dst: &'a [u8],
    /// Length from the IP header (padding after it is trimmed).
    pub len: usize,
}

/// Parses the IPv4/IPv6 header of a packet from or to the TUN device. Rejects packets whose
/// header is truncated or whose stated length exceeds the buffer.
pub fn inner_ip(p: &[u8]) -> Option<InnerIp<'_>> {
    match p.first()? >> 4 {
        4 if p.len() >= 20 => {
            let len = u16::from_be_bytes([p[2], p[3]]) as usize;
            if len < 20 || len > p.len() {
                return None;
            }
            Some(InnerIp {
                src: &p[12..16],
                dst: &p[16..20],
                len,
            })
        }
        6 if p.len() >= 40 => {
            let len = 40 + u16::from_be_bytes([p[4], p[5]]) as usize;
            if len > p.len() {
                return None;
            }
            Some(InnerIp {
                src: &p[8..24],
                dst: &p[24..40],
                len,
            })
        }
        _ => None,
    }
}

/// Padded plaintext length for a data message: a multiple of 16, but never beyond the MTU
/// (the whitepaper pads to 16 and lets the MTU cap it).
pub fn padded_len(len: usize, mtu: usize) -> usize {
    let padded = (len + 15) & !15;
    if padded > mtu && len <= mtu {
        mtu
    } else {
        padded.max(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classify_checks_exact_sizes_and_reserved_bytes() {
        let mut m = vec![0u8; INITIATION_LEN];
        put_type(&mut m, MSG_INITIATION);
        assert_eq!(classify(&m), Some(Kind::Initiation));
        assert_eq!(classify(&m[..147]), None);
        m[2] = 1;
        assert_eq!(classify(&m), None);
        let mut r = vec![0u8; RESPONSE_LEN];
        put_type(&mut r, MSG_RESPONSE);
        assert_eq!(classify(&r), Some(Kind::Response));
        let mut c = vec![0u8; COOKIE_REPLY_LEN];
        put_type(&mut c, MSG_COOKIE_REPLY);
        assert_eq!(classify(&c), Some(Kind::CookieReply));
        let mut d = vec![0u8; DATA_MIN_LEN];
        put_type(&mut d, MSG_DATA);
        assert_eq!(classify(&d), Some(Kind::Data));
        assert_eq!(classify(&d[..DATA_MIN_LEN - 1]), None);
        assert_eq!(classify(&[]), None);
        assert_eq!(classify(&[4, 0, 0]), None);
        let mut x = vec![0u8; 148];
        put_type(&mut x, 9);
        assert_eq!(classify(&x), None);
    }

    #[test]
    fn integers_are_little_endian() {
        let mut b = [0u8; 16];
        put_u32(&mut b, 4, 0x0102_0304);
        put_u64(&mut b, 8, 0x1122_3344_5566_7788);
        assert_eq!(&b[4..8], &[4, 3, 2, 1]);
        assert_eq!(b[8], 0x88);
        assert_eq!(u32_at(&b, 4), 0x0102_0304);
        assert_eq!(u64_at(&b, 8), 0x1122_3344_5566_7788);
    }

    #[test]
    fn inner_ip_headers() {
        let mut v4 = [0u8; 28];
        v4[0] = 0x45;
        v4[3] = 24;
        v4[12..16].copy_from_slice(&[10, 0, 0, 1]);
        v4[16..20].copy_from_slice(&[10, 0, 0, 2]);
        let ip = inner_ip(&v4).unwrap();
        assert_eq!(
            (ip.src, ip.dst, ip.len),
            (&[10, 0, 0, 1][..], &[10, 0, 0, 2][..], 24)
        );
        v4[3] = 29;
        assert_eq!(inner_ip(&v4), None);
        let mut v6 = [0u8; 48];
        v6[0] = 0x60;
        v6[5] = 8;
        v6[23] = 1;
        v6[39] = 2;
        let ip = inner_ip(&v6).unwrap();
        assert_eq!(ip.len, 48);
        assert_eq!(ip.src[15], 1);
        assert_eq!(ip.dst[15], 2);
        assert_eq!(inner_ip(&v6[..39]), None);
        assert_eq!(inner_ip(&[0x50; 60]), None);
        assert_eq!(inner_ip(&[]), None);
    }

    #[test]
    fn padding_rules() {
        assert_eq!(padded_len(0, 1420), 0);
        assert_eq!(padded_len(1, 1420), 16);
        assert_eq!(padded_len(16, 1420), 16);
        assert_eq!(padded_len(1419, 1420), 1420);
        assert_eq!(padded_len(1415, 1420), 1420);
        assert_eq!(padded_len(1500, 1420), 1504);
    }
}
