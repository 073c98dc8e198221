//! Why a packet was dropped: the reasons counted per device.

/// Why a packet was dropped. Counted per reason; never an error to propagate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum DropReason {
    /// Wrong size or type for a WireGuard message.
    Malformed,
    /// mac1 did not verify: not for us, or garbage.
    BadMac1,
    /// Under load without a valid mac2: answered with a cookie reply instead.
    CookieRequired,
    /// Per-source handshake rate exceeded while under load.
    RateLimited,
    /// No private key configured.
    NoIdentity,
    /// An initiation from a static key we don't know.
    UnknownPeer,
    /// Handshake did not decrypt, was replayed, or came too fast.
    HandshakeFailed,
    /// Receiver index matches no session or handshake.
    UnknownIndex,
    /// Session older than REJECT_AFTER_TIME or out of nonces.
    ExpiredKeypair,
    /// Counter already seen or too old.
    Replay,
    /// Authentication tag wrong.
    DecryptFailed,
    /// Decrypted payload is not a well-formed IP packet.
    InvalidInner,
    /// Inner source address not in the sending peer's allowed IPs.
    DisallowedSource,
    /// Outbound packet to an address no peer is allowed to have.
    NoRoute,
    /// Outbound packet for a peer whose endpoint is unknown.
    NoEndpoint,
    /// Outbound packet that is not IPv4/IPv6 or is truncated.
    NotIp,
    /// Staged packets over the peer's or the device's bound while waiting for a handshake
    /// (oldest dropped).
    StagedOverflow,
    /// Packet does not fit the caller's buffer.
    TooBig,
}

impl DropReason {
    pub const ALL: [DropReason; 18] = [
        DropReason::Malformed,
        DropReason::BadMac1,
        DropReason::CookieRequired,
        DropReason::RateLimited,
        DropReason::NoIdentity,
        DropReason::UnknownPeer,
        DropReason::HandshakeFailed,
        DropReason::UnknownIndex,
        DropReason::ExpiredKeypair,
        DropReason::Replay,
        DropReason::DecryptFailed,
        DropReason::InvalidInner,
        DropReason::DisallowedSource,
        DropReason::NoRoute,
        DropReason::NoEndpoint,
        DropReason::NotIp,
        DropReason::StagedOverflow,
        DropReason::TooBig,
    ];

    pub fn name(self) -> &'static str {
        match self {
            DropReason::Malformed => "malformed",
            DropReason::BadMac1 => "bad_mac1",
            DropReason::CookieRequired => "cookie_required",
            DropReason::RateLimited => "rate_limited",
            DropReason::NoIdentity => "no_identity",
            DropReason::UnknownPeer => "unknown_peer",
            DropReason::HandshakeFailed => "handshake_failed",
            DropReason::UnknownIndex => "unknown_index",
            DropReason::ExpiredKeypair => "expired_keypair",
            DropReason::Replay => "replay",
            DropReason::DecryptFailed => "decrypt_failed",
            DropReason::InvalidInner => "invalid_inner",
            DropReason::DisallowedSource => "disallowed_source",
            DropReason::NoRoute => "no_route",
            DropReason::NoEndpoint => "no_endpoint",
            DropReason::NotIp => "not_ip",
            DropReason::StagedOverflow => "staged_overflow",
            DropReason::TooBig => "too_big",
        }
    }
}
