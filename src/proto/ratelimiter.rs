//! Per-source token bucket limiting how many handshake messages each source
//! may make us process while under load.
//!
//! Tokens are counted in nanoseconds of accumulated credit: one packet costs
//! `1 s / packets_per_second` and the bucket holds `burst` packets' worth.
//! Integer arithmetic keeps it exact and cheap without floats.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

const NANOS_PER_SEC: u64 = 1_000_000_000;
/// After this long without traffic a bucket is full again, so its entry
/// carries no information and can be dropped.
const IDLE_TIMEOUT: Duration = Duration::from_secs(1);
/// Minimum spacing between full sweeps, so calling `gc` per packet (or from
/// `allow` while the table is full during a flood) costs one comparison.
const GC_INTERVAL: Duration = Duration::from_millis(100);

const DEFAULT_PPS: u32 = 20;
const DEFAULT_BURST: u32 = 5;
const DEFAULT_CAPACITY: usize = 8192;

/// Bucket key. IPv6 sources are grouped by /64 because one host usually
/// controls a whole /64 and could otherwise rotate addresses to escape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Source {
    V4(u32),
    V6Net(u64),
}

impl Source {
    fn from_ip(ip: IpAddr) -> Self {
        match ip {
            IpAddr::V4(a) => Source::V4(u32::from(a)),
            // On dual-stack sockets IPv4 peers show up as ::ffff:a.b.c.d;
            // grouping those by /64 would put every IPv4 peer in one bucket.
            IpAddr::V6(a) => match a.to_ipv4_mapped() {
                Some(v4) => Source::V4(u32::from(v4)),
                None => Source::V6Net((u128::from(a) >> 64) as u64),
            },
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Bucket {
    last: Instant,
    /// Accumulated credit in nanoseconds, at most `token_max`.
    tokens: u64,
}

#[derive(Clone, Debug)]
pub struct RateLimiter {
    // The std SipHash hasher is randomly keyed, so attackers cannot pick
    // source addresses that collide and degrade the table.
    table: HashMap<Source, Bucket>,
    packet_cost: u64,
    token_max: u64,
    capacity: usize,
    last_gc: Option<Instant>,
}

impl Default for RateLimiter {
    fn default() -> Self {
        Self::new()
    }
}

impl RateLimiter {
    /// 20 packets per second per source, burst of 5, at most 8192 sources.
    pub fn new() -> Self {
        Self::with_params(DEFAULT_PPS, DEFAULT_BURST, DEFAULT_CAPACITY)
    }

    /// `packets_per_second` and `burst` are raised to at least 1 (a zero
    /// rate would divide by zero, a zero burst would refuse everything).
    /// A `capacity` of 0 refuses every source.
    pub fn with_params(packets_per_second: u32, burst: u32, capacity: usize) -> Self {
        let packet_cost = NANOS_PER_SEC / u64::from(packets_per_second.max(1));
        RateLimiter {
            table: HashMap::new(),
            packet_cost,
            token_max: packet_cost.saturating_mul(u64::from(burst.max(1))),
            capacity,
            last_gc: None,
        }
    }

    /// Whether a handshake message from `ip` may be processed now.
    pub fn allow(&mut self, now: Instant, ip: IpAddr) -> bool {
        let key = Source::from_ip(ip);
        if let Some(b) = self.table.get_mut(&key) {
            // A clock that steps backwards yields zero credit, and `last` is
            // not moved back so the same interval is never credited twice.
            let elapsed = now.saturating_duration_since(b.last);
            if now > b.last {
                b.last = now;
            }
            let credit = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
            b.tokens = b.tokens.saturating_add(credit).min(self.token_max);
            return match b.tokens.checked_sub(self.packet_cost) {
                Some(rest) => {
                    b.tokens = rest;
                    true
                }
                None => false,
            };
        }
        if self.table.len() >= self.capacity {
            self.gc(now);
            if self.table.len() >= self.capacity {
                // Refuse rather than grow: memory stays bounded under floods.
                return false;
            }
        }
        // A new source starts with a full bucket and spends one packet.
        self.table.insert(
            key,
            Bucket {
                last: now,
                tokens: self.token_max.saturating_sub(self.packet_cost),
            },
        );
        true
    }

    /// Whether `allow` would say yes now, without spending anything.
    pub fn would_allow(&self, now: Instant, ip: IpAddr) -> bool {
        match self.table.get(&Source::from_ip(ip)) {
            Some(b) => {
                let elapsed = now.saturating_duration_since(b.last);
                let credit = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
                b.tokens.saturating_add(credit).min(self.token_max) >= self.packet_cost
            }
            // A new source is refused only when the table is full even after a sweep,
            // which `allow` decides.
            None => true,
        }
    }

    /// Whether `ip` sent nothing that was counted here for a second (or never).
    pub fn is_quiet(&self, now: Instant, ip: IpAddr) -> bool {
        self.table
            .get(&Source::from_ip(ip))
            .is_none_or(|b| now.saturating_duration_since(b.last) >= IDLE_TIMEOUT)
    }

    /// Drops entries idle for more than 1 s. Full sweeps happen at most once
    /// per 100 ms; calls in between return immediately.
    pub fn gc(&mut self, now: Instant) {
        if let Some(last) = self.last_gc {
            if now.saturating_duration_since(last) < GC_INTERVAL {
                return;
            }
        }
        self.last_gc = Some(now);
        self.table
            .retain(|_, b| now.saturating_duration_since(b.last) <= IDLE_TIMEOUT);
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn len(&self) -> usize {
        self.table.len()
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};
    use std::str::FromStr;

    fn ip(s: &str) -> IpAddr {
        IpAddr::from_str(s).unwrap()
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn burst_then_refusal() {
        let mut rl = RateLimiter::new();
        let t = Instant::now();
        let a = ip("192.0.2.1");
        for i in 0..5 {
            assert!(rl.allow(t, a), "burst packet {i}");
        }
        assert!(!rl.allow(t, a));
        assert!(!rl.allow(t + ms(49), a));
        assert!(rl.allow(t + ms(50), a), "one packet cost refilled");
        assert!(!rl.allow(t + ms(50), a));
    }

    #[test]
    fn refill_rate_over_one_second() {
        let mut rl = RateLimiter::new();
        let base = Instant::now();
        let a = ip("192.0.2.1");
        // Drain the burst, then hammer every millisecond for one second.
        let mut allowed = 0;
        for i in 0..=1000u64 {
            if rl.allow(base + ms(i), a) {
                allowed += 1;
            }
        }
        // 5 burst + 20 refilled over 1 s.
        assert_eq!(allowed, 25);

        // An idle second refills only up to the burst size.
        let later = base + ms(5000);
        let n = (0..100).filter(|_| rl.allow(later, a)).count();
        assert_eq!(n, 5);
    }

    #[test]
    fn would_allow_agrees_with_allow_and_spends_nothing() {
        let mut rl = RateLimiter::new();
        let t = Instant::now();
        let a = ip("192.0.2.1");
        for step in 0..200u64 {
            let now = t + ms(step * 7);
            for _ in 0..(step % 4) {
                let peek = rl.would_allow(now, a);
                assert_eq!(rl.would_allow(now, a), peek, "a peek spends nothing");
                assert_eq!(rl.allow(now, a), peek, "step {step}");
            }
        }
    }

    #[test]
    fn a_source_is_quiet_after_a_second_without_messages() {
        let mut rl = RateLimiter::new();
        let t = Instant::now();
        let (a, b) = (ip("192.0.2.1"), ip("192.0.2.2"));
        assert!(rl.is_quiet(t, a), "never seen");
        rl.allow(t, a);
        assert!(!rl.is_quiet(t + ms(999), a));
        assert!(rl.is_quiet(t + ms(999), b));
        assert!(rl.is_quiet(t + ms(1000), a));
        assert!(
            !rl.would_allow(t, b) || rl.is_quiet(t, b),
            "peeks change nothing"
        );
    }

    #[test]
    fn separate_buckets_per_ip() {
        let mut rl = RateLimiter::new();
        let t = Instant::now();
        let (a, b) = (ip("192.0.2.1"), ip("192.0.2.2"));
        for _ in 0..5 {
            assert!(rl.allow(t, a));
        }
        assert!(!rl.allow(t, a));
        for _ in 0..5 {
            assert!(rl.allow(t, b));
        }
        assert!(!rl.allow(t, b));
        assert_eq!(rl.len(), 2);
    }

    #[test]
    fn ipv6_grouped_by_64() {
        let mut rl = RateLimiter::new();
        let t = Instant::now();
        for i in 0..5u128 {
            let a = Ipv6Addr::from((0x2001_0db8_0000_0001u128 << 64) | (i * 0x1234_5678));
            assert!(rl.allow(t, IpAddr::V6(a)));
        }
        assert!(!rl.allow(t, ip("2001:db8:0:1:ffff::9")));
        assert!(rl.allow(t, ip("2001:db8:0:2::1")), "another /64");
        assert_eq!(rl.len(), 2);
    }

    #[test]
    fn v4_mapped_uses_v4_bucket() {
        let mut rl = RateLimiter::new();
        let t = Instant::now();
        for _ in 0..5 {
            assert!(rl.allow(t, ip("::ffff:192.0.2.1")));
        }
        assert!(!rl.allow(t, ip("192.0.2.1")));
        assert!(rl.allow(t, ip("::ffff:192.0.2.2")), "distinct v4 peers");
    }

    #[test]
    fn gc_removes_idle_entries() {
        let mut rl = RateLimiter::new();
        let t = Instant::now();
        assert!(rl.is_empty());
        rl.allow(t, ip("192.0.2.1"));
        rl.allow(t + ms(800), ip("192.0.2.2"));
        rl.allow(t, ip("2001:db8::1"));
        assert_eq!(rl.len(), 3);
        rl.gc(t + ms(1000));
        assert_eq!(rl.len(), 3, "exactly 1 s idle is kept");
        rl.gc(t + ms(1500));
        assert_eq!(rl.len(), 1);
        rl.gc(t + ms(1750)); // sweeps; 2.2 idle only 0.95 s
        assert_eq!(rl.len(), 1);
        rl.gc(t + ms(1820)); // 2.2 idle 1.02 s, but within the gc interval
        assert_eq!(rl.len(), 1);
        rl.gc(t + ms(1900));
        assert!(rl.is_empty());
        // A removed source comes back with a full bucket.
        for _ in 0..5 {
            assert!(rl.allow(t + ms(2000), ip("192.0.2.1")));
        }
    }

    #[test]
    fn clock_going_backwards() {
        let mut rl = RateLimiter::new();
        let base = Instant::now() + Duration::from_secs(10);
        let a = ip("192.0.2.1");
        for _ in 0..5 {
            assert!(rl.allow(base, a));
        }
        // Going back earns nothing and does not rewind the bucket's clock.
        assert!(!rl.allow(base - ms(500), a));
        assert!(!rl.allow(base - ms(10), a));
        assert!(!rl.allow(base + ms(49), a));
        assert!(rl.allow(base + ms(50), a));
        rl.gc(base - Duration::from_secs(5));
        assert_eq!(rl.len(), 1);
    }

    #[test]
    fn capacity_bound_under_flood() {
        let cap = 8192;
        let mut rl = RateLimiter::new();
        let t = Instant::now();
        let mut allowed = 0usize;
        for i in 0..100_000u32 {
            let a = IpAddr::V4(Ipv4Addr::from(0x0a00_0000u32.wrapping_add(i)));
            // The flood lasts 0.5 s, so no entry becomes idle.
            let now = t + Duration::from_micros(u64::from(i) * 5);
            if rl.allow(now, a) {
                allowed += 1;
            }
            assert!(rl.len() <= cap);
        }
        assert_eq!(allowed, cap);
        assert_eq!(rl.len(), cap);
        // Known sources keep working while the table is full.
        assert!(rl.allow(t + ms(600), ip("10.0.0.0")));
        // Once entries are idle, the table frees space for newcomers.
        assert!(rl.allow(t + ms(2000), ip("198.51.100.1")));
        assert_eq!(rl.len(), 1);

        let mut rl = RateLimiter::with_params(20, 5, 16);
        for i in 0..100_000u128 {
            let a = IpAddr::V6(Ipv6Addr::from(i << 64));
            rl.allow(t, a);
            assert!(rl.len() <= 16);
        }
    }

    #[test]
    fn odd_params_do_not_panic() {
        let t = Instant::now();
        let mut rl = RateLimiter::with_params(0, 0, 0);
        assert!(!rl.allow(t, ip("192.0.2.1")));
        assert!(rl.is_empty());
        let mut rl = RateLimiter::with_params(u32::MAX, u32::MAX, 1);
        assert!(rl.allow(t, ip("192.0.2.1")));
        assert!(rl.allow(t + Duration::from_secs(1000), ip("192.0.2.1")));
        let mut rl = RateLimiter::with_params(1, 1, 4);
        assert!(rl.allow(t, ip("192.0.2.1")));
        assert!(!rl.allow(t + ms(999), ip("192.0.2.1")));
        assert!(rl.allow(t + ms(1000), ip("192.0.2.1")));
    }
}
