//! The stateless floods: init-random, garbage and transport-unknown, sent at --rate from the
//! sources in turn; what comes back is only counted (and init-random keeps its cookies).

use crate::macs::{add_macs, mac1_key, open_cookie_reply, Cookie};
use crate::net::{Net, Pacer};
use crate::opts::{die, Mode, Opts};
use crate::stats::{Progress, Stats};
use solowg::crypto::{self, Rng};
use solowg::proto::cookie::LABEL_COOKIE;
use solowg::proto::wire::{self, cookie as cf, init};
use std::time::Instant;

/// Slots of init-random's ring of recent mac1 values.
const RING: usize = 1 << 14;

pub(crate) fn run_blast(o: &Opts, net: &mut Net) -> Stats {
    let mut rng = Rng::from_os().unwrap_or_else(|e| die(&format!("getrandom: {e}")));
    let mut inits = Initiations::new(o, net.socks.len());
    let mut st = Stats::default();
    let mut buf = vec![0u8; wire::MAX_DATAGRAM];
    let mut pkt = vec![0u8; wire::MAX_DATAGRAM];
    let start = Instant::now();
    let end = start + o.duration;
    let pacer = Pacer::new(o.rate, start);
    let mut progress = Progress::new(o.quiet, start);
    loop {
        let now = Instant::now();
        if now >= end {
            break;
        }
        let wait = pacer.next_due(now, st.sent).saturating_duration_since(now);
        net.receive(wait, &mut buf, |sock, msg| {
            st.received += 1;
            match wire::classify(msg) {
                Some(wire::Kind::CookieReply) => {
                    st.cookie_replies += 1;
                    if o.use_cookies && !inits.on_cookie_reply(sock, msg, now) {
                        st.cookie_replies_bad += 1;
                    }
                }
                Some(wire::Kind::Response) => st.responses += 1,
                _ => st.other += 1,
            }
        });
        let now = Instant::now();
        for _ in 0..pacer.allowed(now, st.sent) {
            let sock = net.pick();
            let len = match o.mode {
                Mode::InitRandom => inits.fill(&mut pkt, sock, &mut rng, now),
                Mode::Garbage => {
                    let len = 1 + rng.u32() as usize % o.max_len;
                    rng.fill(&mut pkt[..len]);
                    len
                }
                _ => {
                    // transport-unknown: a data header with a random receiver and counter and
                    // 0..=8 blocks of random "ciphertext" plus the tag.
                    let len = wire::DATA_MIN_LEN + 16 * (rng.u32() as usize % 9);
                    rng.fill(&mut pkt[..len]);
                    wire::put_type(&mut pkt, wire::MSG_DATA);
                    len
                }
            };
            net.send(sock, &pkt[..len], &mut st);
        }
        progress.tick(now, &st);
    }
    st
}

/// init-random's state: the responder's mac1 and cookie keys, the cookie per source, and for
/// --use-cookies the mac1 of recent initiations by sender index, to open the cookie replies
/// to them (sender index = counter; a slot is checked before use).
struct Initiations {
    mac1_key: [u8; 32],
    cookie_key: [u8; 32],
    cookies: Vec<Option<Cookie>>,
    ring: Vec<(u32, [u8; 16])>,
    counter: u32,
}

impl Initiations {
    fn new(o: &Opts, nsocks: usize) -> Self {
        let (mac1_key, cookie_key) = match o.peer_public {
            Some(p) => (mac1_key(&p), crypto::hash(&[LABEL_COOKIE, &p])),
            None => ([0; 32], [0; 32]),
        };
        Initiations {
            mac1_key,
            cookie_key,
            cookies: vec![None; nsocks],
            ring: vec![(0, [0; 16]); RING],
            counter: 0,
        }
    }

    /// Keeps the cookie of a reply to one of our recent initiations for the socket it came
    /// to. False if the reply names a recent initiation but does not open.
    fn on_cookie_reply(&mut self, sock: usize, msg: &[u8], now: Instant) -> bool {
        let r = wire::u32_at(msg, cf::RECEIVER);
        let (idx, mac1) = self.ring[r as usize % RING];
        if idx != r {
            return true;
        }
        match open_cookie_reply(&self.cookie_key, &mac1, msg) {
            Some(value) => {
                self.cookies[sock] = Some(Cookie { value, birth: now });
                true
            }
            None => false,
        }
    }

    /// A random initiation with a valid mac1 (and mac2 once `sock` has a cookie) at the
    /// start of `pkt`; returns its length.
    fn fill(&mut self, pkt: &mut [u8], sock: usize, rng: &mut Rng, now: Instant) -> usize {
        let m = &mut pkt[..wire::INITIATION_LEN];
        rng.fill(m);
        wire::put_type(m, wire::MSG_INITIATION);
        self.counter = self.counter.wrapping_add(1);
        wire::put_u32(m, init::SENDER, self.counter);
        let mac1 = add_macs(m, &self.mac1_key, self.cookies[sock].as_ref(), now);
        self.ring[self.counter as usize % RING] = (self.counter, mac1);
        wire::INITIATION_LEN
    }
}
