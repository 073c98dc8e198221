//! The counters: the summary on stdout and a progress line a second on stderr.

use crate::opts::Opts;
use std::time::{Duration, Instant};

#[derive(Default, Clone, Copy)]
pub(crate) struct Stats {
    pub(crate) sent: u64,
    pub(crate) send_errors: u64,
    /// Initiations sent again with mac2 right after a cookie reply (handshake mode).
    pub(crate) resent_with_cookie: u64,
    pub(crate) received: u64,
    pub(crate) responses: u64,
    pub(crate) responses_valid: u64,
    pub(crate) responses_bad: u64,
    /// Responses or cookie replies for an attempt we had already given up on (or never sent).
    pub(crate) late: u64,
    pub(crate) cookie_replies: u64,
    pub(crate) cookie_replies_bad: u64,
    pub(crate) timeouts: u64,
    pub(crate) other: u64,
    pub(crate) completed: u64,
}

impl Stats {
    pub(crate) fn print(&self, elapsed: f64, o: &Opts) {
        let per_s = |n: u64| n as f64 / elapsed.max(1e-9);
        println!("mode={:?}", o.mode);
        println!("sources={}", o.sources.len());
        println!("elapsed_s={elapsed:.3}");
        println!("sent={}", self.sent);
        println!("sent_per_s={:.1}", per_s(self.sent));
        println!("send_errors={}", self.send_errors);
        println!("received={}", self.received);
        println!("responses={}", self.responses);
        println!("responses_valid={}", self.responses_valid);
        println!("responses_bad={}", self.responses_bad);
        println!("late={}", self.late);
        println!("cookie_replies={}", self.cookie_replies);
        println!("cookie_replies_bad={}", self.cookie_replies_bad);
        println!("cookie_replies_per_s={:.1}", per_s(self.cookie_replies));
        println!("resent_with_cookie={}", self.resent_with_cookie);
        println!("timeouts={}", self.timeouts);
        println!("other={}", self.other);
        println!("completed={}", self.completed);
        println!("handshakes_per_s={:.1}", per_s(self.completed));
        let (user, sys) = own_cpu();
        println!("flooder_cpu_s={:.3}", user + sys);
    }
}

/// Our own user and system CPU seconds (to show the flooder had CPU to spare).
#[allow(unsafe_code)] // getrusage
fn own_cpu() -> (f64, f64) {
    // SAFETY: getrusage fills the zeroed struct we pass; nothing else is touched.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return (0.0, 0.0);
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (tv(ru.ru_utime), tv(ru.ru_stime))
}

/// One stderr line per second with the interval's figures.
pub(crate) struct Progress {
    quiet: bool,
    start: Instant,
    next: Instant,
    last: Stats,
}

impl Progress {
    pub(crate) fn new(quiet: bool, start: Instant) -> Self {
        Progress {
            quiet,
            start,
            next: start + Duration::from_secs(1),
            last: Stats::default(),
        }
    }

    pub(crate) fn tick(&mut self, now: Instant, st: &Stats) {
        if now < self.next {
            return;
        }
        if !self.quiet {
            eprintln!(
                "t={:.1}s sent={} completed={} cookie_replies={} timeouts={} received={}",
                now.saturating_duration_since(self.start).as_secs_f64(),
                st.sent - self.last.sent,
                st.completed - self.last.completed,
                st.cookie_replies - self.last.cookie_replies,
                st.timeouts - self.last.timeouts,
                st.received - self.last.received,
            );
        }
        self.last = *st;
        self.next += Duration::from_secs(1);
    }
}
