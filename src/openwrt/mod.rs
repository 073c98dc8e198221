//! OpenWrt integration: UCI files, the ubus wire protocol, the `solowg` ubus object that
//! netifd's handler drives, what root hands the daemon (`handover`), and the resolver for
//! endpoint host names.
#![forbid(unsafe_code)]

pub mod blobmsg;
pub mod config;
pub mod control;
pub mod dns;
pub mod handover;
pub mod ubus;
pub mod uci;
