//! The handshake mode's loop: new attempts as keys, slots and --rate allow; replies counted;
//! cookie replies answered with mac2; attempts without an answer timed out.

use crate::initiators::{Flood, KeyState, Outcome};
use crate::net::{Net, Pacer};
use crate::opts::{die, Opts};
use crate::stats::{Progress, Stats};
use solowg::crypto::Rng;
use solowg::proto::wire;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// The responder consumes at most one initiation per peer every 20 ms (noise.rs,
/// INITIATIONS_PER_SECOND = 50); a key waits this long after its last attempt so that its next
/// initiation is not dropped for coming too fast.
const KEY_COOLDOWN: Duration = Duration::from_millis(21);

pub(crate) fn run_handshake(o: &Opts, net: &mut Net) -> Stats {
    let mut run = Run::new(o, net.socks.len());
    let mut buf = vec![0u8; wire::MAX_DATAGRAM];
    let start = run.pacer.start;
    let end = start + o.duration;
    let mut progress = Progress::new(o.quiet, start);
    loop {
        let now = Instant::now();
        let sending = now < end;
        if !sending && (run.outstanding == 0 || now >= end + o.timeout) {
            break;
        }
        let wait = run
            .next_wake(now, sending, end)
            .saturating_duration_since(now);
        let (freed, resend) = run.receive(net, wait, &mut buf, now);
        let now = Instant::now();
        for k in freed {
            run.outstanding -= 1;
            run.idle.push_back((now + KEY_COOLDOWN, k));
        }
        run.resend_with_cookie(net, resend, now);
        run.expire(now);
        if sending {
            run.start_attempts(net, now);
        }
        progress.tick(now, &run.st);
    }
    run.st
}

/// The state of one handshake run between loop turns.
struct Run<'a> {
    o: &'a Opts,
    fl: Flood,
    st: Stats,
    // Keys ready for a new attempt, in the order they became ready (all wait the same
    // cooldown, so the front is always the first one due).
    idle: VecDeque<(Instant, usize)>,
    // Attempt deadlines in the order they were set; a key whose deadline moved (cookie resend)
    // has a later entry, and its stale one is skipped.
    deadlines: VecDeque<(Instant, usize, u32)>,
    outstanding: usize,
    pacer: Pacer,
}

impl<'a> Run<'a> {
    fn new(o: &'a Opts, nsocks: usize) -> Self {
        let responder = o.peer_public.unwrap_or_else(|| die("no --peer-public"));
        let rng = Rng::from_os().unwrap_or_else(|e| die(&format!("getrandom: {e}")));
        let mut fl = Flood::new(&responder, &o.seed, o.keys, nsocks, rng);
        fl.verify_every = o.verify_every;
        let idle = (0..o.keys).map(|k| (Instant::now(), k)).collect();
        Run {
            o,
            fl,
            st: Stats::default(),
            idle,
            deadlines: VecDeque::new(),
            outstanding: 0,
            pacer: Pacer::new(o.rate, Instant::now()),
        }
    }

    /// The next thing we could do: a key's cooldown ends (if a slot is free), a packet is due
    /// at --rate, an attempt times out, the run ends; replies wake us anyway.
    fn next_wake(&self, now: Instant, sending: bool, end: Instant) -> Instant {
        let mut next = self.deadlines.front().map_or(now + self.o.timeout, |d| d.0);
        if sending {
            next = next.min(end);
            if self.outstanding < self.o.max_outstanding {
                if let Some(&(ready, _)) = self.idle.front() {
                    next = next.min(ready.max(self.pacer.next_due(now, self.st.sent)));
                }
            }
        }
        next
    }

    /// Waits at most `wait` for replies and counts them. Returns the keys whose attempt ended
    /// with a response and the keys to resend with a cookie.
    fn receive(
        &mut self,
        net: &mut Net,
        wait: Duration,
        buf: &mut [u8],
        now: Instant,
    ) -> (Vec<usize>, Vec<usize>) {
        let mut resend: Vec<usize> = Vec::new();
        let mut freed: Vec<usize> = Vec::new();
        net.receive(wait, buf, |sock, msg| {
            self.st.received += 1;
            let (outcome, k, verified) = self.fl.on_reply(sock, msg, now);
            let st = &mut self.st;
            match outcome {
                Outcome::Completed if !verified => {
                    st.responses += 1;
                    st.completed += 1;
                }
                Outcome::Completed => {
                    st.responses += 1;
                    st.responses_valid += 1;
                    st.completed += 1;
                }
                Outcome::Cookie => {
                    st.cookie_replies += 1;
                    resend.extend(k);
                }
                Outcome::Bad if msg.len() == wire::COOKIE_REPLY_LEN => st.cookie_replies_bad += 1,
                Outcome::Bad => {
                    st.responses += 1;
                    st.responses_bad += 1;
                }
                Outcome::Late => st.late += 1,
                Outcome::Other => st.other += 1,
            }
            if matches!(outcome, Outcome::Completed | Outcome::Bad)
                && msg.len() == wire::RESPONSE_LEN
            {
                freed.extend(k);
            }
        });
        (freed, resend)
    }

    /// The initiations answered by a cookie reply, sent again with mac2.
    fn resend_with_cookie(&mut self, net: &Net, resend: Vec<usize>, now: Instant) {
        for k in resend {
            let deadline = now + self.o.timeout;
            if let Some((sock, msg)) = self.fl.with_cookie(k, now, deadline) {
                net.send(sock, msg, &mut self.st);
                self.st.resent_with_cookie += 1;
                let KeyState::Waiting { index, .. } = self.fl.keys[k].state else {
                    continue;
                };
                self.deadlines.push_back((deadline, k, index));
            }
        }
    }

    /// Attempts that got no answer in time (rate-limited drops are silent).
    fn expire(&mut self, now: Instant) {
        while let Some(&(d, k, index)) = self.deadlines.front() {
            if d > now {
                break;
            }
            self.deadlines.pop_front();
            if let KeyState::Waiting {
                index: i, deadline, ..
            } = self.fl.keys[k].state
            {
                if i == index && deadline <= now {
                    self.fl.keys[k].state = KeyState::Idle;
                    self.st.timeouts += 1;
                    self.outstanding -= 1;
                    self.idle.push_back((now + KEY_COOLDOWN, k));
                }
            }
        }
    }

    /// New attempts, as many as --rate, the free slots and the keys past their cooldown allow.
    fn start_attempts(&mut self, net: &mut Net, now: Instant) {
        let budget = self.pacer.allowed(now, self.st.sent);
        for _ in 0..budget {
            if self.outstanding >= self.o.max_outstanding {
                break;
            }
            let Some(&(ready, k)) = self.idle.front() else {
                break;
            };
            if ready > now {
                break;
            }
            self.idle.pop_front();
            let sock = net.pick();
            let deadline = now + self.o.timeout;
            let msg = self.fl.initiation(k, sock, now, deadline);
            net.send(sock, msg, &mut self.st);
            let KeyState::Waiting { index, .. } = self.fl.keys[k].state else {
                continue;
            };
            self.deadlines.push_back((deadline, k, index));
            self.outstanding += 1;
        }
    }
}
