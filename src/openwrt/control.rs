//! Managed mode (`solowg --uci`): one daemon serves every `proto 'solowg'` interface of
//! OpenWrt's /etc/config/network. netifd's protocol handler asks it over ubus to bring an
//! interface up (`up`) or down (`down`); `reload` re-reads the file and applies what changed
//! without touching what did not (unchanged peers keep their sessions); `status` shows every
//! interface and peer; `genkey`/`pubkey`/`genpsk` spare LuCI the wireguard-tools. Peers whose
//! endpoint is a host name are resolved on the loop thread, retried with backoff, and re-resolved
//! when their handshakes stall. All of it runs on the event loop's one thread.
//!
//! One file per part: `object` (the names the object is known by on the bus), `methods` (the
//! ubus methods and their replies), `network_file` (reading
//! the configuration for them), `diff` (what a new configuration changes on a running
//! interface; pure, no I/O), `managed` (the event loop's control hook and the periodic checks),
//! `endpoints` (host name endpoints), `keys` (an interface without a saved key) and `state`
//! (the state file of the interfaces up).

mod diff;
mod endpoints;
mod keys;
mod managed;
mod methods;
mod network_file;
mod object;
mod state;

pub use managed::{Managed, Options};
pub use methods::object_spec;
pub use object::OBJECT;
// The surface as tables, for the check of the files that repeat it (tests/surface.rs).
#[cfg(feature = "internals")]
pub use methods::{Access, UbusMethod, METHODS};
#[cfg(feature = "internals")]
pub use object::{CALLS, EVENTS};
