//! solowg: a WireGuard implementation in which one thread does all the work.
//!
//! The layers, each a folder, each using only those listed before it:
//! - [`crypto`]: BLAKE2s, X25519, the CSPRNG and the project's own ChaCha20-Poly1305.
//! - [`proto`]: the sans-IO protocol core. It takes bytes and `now` and says what to send
//!   or write; no sockets, no clock reads, no `unsafe`.
//! - [`sys`]: the I/O shell. One thread, one edge-triggered epoll loop around the TUN
//!   device, the UDP sockets, the UAPI socket and signals; with `crypto`'s assembly glue,
//!   the only place where `unsafe` is allowed.
//! - [`openwrt`]: UCI, ubus, the netifd-facing control object and the DNS resolver.
//! - [`cli`]: the command line (`solowg`, `solowg show`, `solowg --uci`).
//!
//! [`log`] is used by every layer and belongs to none.

/// A layer's module: public with the `internals` feature (integration tests, fuzz targets,
/// benchmark tools), crate-private otherwise so that the compiler reports dead code.
macro_rules! layer {
    ($($name:ident),*) => {$(
        #[cfg(feature = "internals")]
        pub mod $name;
        #[cfg(not(feature = "internals"))]
        pub(crate) mod $name;
    )*};
}

pub mod cli;
layer!(crypto, log, openwrt, proto, sys);
