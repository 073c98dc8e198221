//! solowg-flood: handshake load generator for bench/handshake. Not part of the daemon.
//!
//! Usage: `solowg-flood MODE [options]`, modes:
//!   keys               print the base64 public keys of the --keys initiator keys derived from
//!                      --seed, one a line (feed them to `wg setconf`)
//!   handshake          complete handshakes with those keys against --peer-public at --target:
//!                      initiation (mac1, and mac2 once a cookie is known for the source),
//!                      response checked (mac1, then the Noise response consumed), cookie
//!                      replies decrypted and the initiation resent with mac2
//!   init-random        initiations of the right type and length with a valid mac1 and random
//!                      content (with --use-cookies, also a valid mac2 once the source has one)
//!   garbage            random bytes of random length (1..=--max-len)
//!   transport-unknown  type-4 data messages with a random receiver index
//!
//! Options: --target IP:PORT, --sources SPEC (comma-separated: A.B.C.D, A.B.C.D+COUNT for COUNT
//! consecutive addresses, or A.B.C.D/N for the hosts of a prefix; one UDP socket each, default
//! 0.0.0.0), --duration SECS (default 5), --rate PKT/S (0 = as fast as possible, the default),
//! --peer-public BASE64, --keys N (default 1000), --seed TEXT, --max-outstanding N (default
//! 256), --timeout-ms MS (default 1000), --verify-every N (default 1), --use-cookies,
//! --max-len N (default 1500), --quiet.
//!
//! handshake: each key has one attempt in flight at a time (the library's Handshake holds one
//! ephemeral); at most --max-outstanding attempts are in flight in all, so the responder's
//! queue stays short and the figure is its processing rate, not a queue collapse. An attempt
//! without an answer within --timeout-ms (rate-limited initiations are dropped silently) frees
//! its slot. --verify-every N consumes every Nth response in full (Noise: two X25519) and only
//! checks mac1 of the rest: an initiator costs about what the responder does, so a full
//! verification of every response can make the flooder, not the daemon, the bottleneck.
//!
//! Everything runs on one thread: non-blocking sockets, one epoll, and a hard deadline, so a run
//! never outlives --duration by more than --timeout-ms plus the set-up. The summary goes to
//! stdout as `key=value` lines for scripts; a progress line per second goes to stderr.
//!
//! The files: `opts` (the command line), `macs` (initiator keys, mac1/mac2, cookies, TAI64N
//! stamps), `stats` (counters, the summary and the progress line), `net` (the sockets, epoll
//! and the pacer), `initiators` (the handshake initiators and what their replies mean),
//! `handshake` (the handshake mode's loop), `blast` (the stateless floods).

mod blast;
mod handshake;
mod initiators;
mod macs;
mod net;
mod opts;
mod stats;

use net::Net;
use opts::{die, parse_opts, Mode};
use solowg::crypto;
use solowg::proto::peer::base64;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let o = parse_opts(&args);
    if o.mode == Mode::Keys {
        for i in 0..o.keys {
            println!(
                "{}",
                base64(&crypto::public_key(&macs::derive_private(&o.seed, i)))
            );
        }
        return;
    }
    let mut net = Net::open(&o).unwrap_or_else(|e| die(&format!("sockets: {e}")));
    let start = Instant::now();
    let st = match o.mode {
        Mode::Handshake => handshake::run_handshake(&o, &mut net),
        _ => blast::run_blast(&o, &mut net),
    };
    st.print(start.elapsed().as_secs_f64(), &o);
}
