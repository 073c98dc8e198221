//! Handshake floods: when the device counts itself under load, how many cookie replies it
//! sends, and the time budgets that bound the Noise work it does for handshake messages.

use super::Device;
use std::time::Duration;
use std::time::Instant;

/// Handshake messages per second above which we consider ourselves under load and demand
/// cookies. The Linux driver uses a queue depth; with no queue we count a rate.
pub const DEFAULT_UNDER_LOAD_RATE: u32 = 200;
const UNDER_LOAD_STICKY: Duration = Duration::from_secs(1);
/// Under load, at most this many cookie replies per second per source address (burst
/// COOKIE_REPLY_BURST); the rest are dropped without a reply. A cookie stays valid for two
/// minutes and an initiator retries every 5 s, so a real peer needs one reply in a long while;
/// without this limit a flood of mac1-valid initiations made the daemon send one reply per
/// packet, and those sends (a `sendto` each) took half its CPU while the socket overflowed
/// with the tunnel's own packets in it (bench/flood, `init` phase).
pub const COOKIE_REPLIES_PER_SECOND: u32 = 5;
pub(super) const COOKIE_REPLY_BURST: u32 = 10;
pub(super) const COOKIE_LIMITER_CAPACITY: usize = 8192;
/// Under load, handshake messages (their Noise work: X25519) may take this share of the
/// time, in percent; past it they are dropped as rate-limited until the budget refills.
/// The per-source limit alone admits 20 a second from every address: 256 addresses sending
/// mac2-valid initiations asked for ~5,000 X25519 a second, more than the CPU had, and the
/// tunnel's packets waited behind them (bench/flood, `cookies` phase). The time is what the
/// I/O shell measures around each message (`charge_handshake`): wall time, so a thread that
/// gets only part of the CPU is charged for the part it waited too, and the share holds of
/// the CPU it gets. The shell charges only while a tunnel carries data: with none to
/// protect, handshakes may use all the time there is. 10%: in the `cookies` flood 25%
/// kept 42% of the unloaded throughput on one CPU, 10% kept 52%; legitimate handshakes
/// still get ~2,000 X25519 a second.
pub(super) const HANDSHAKE_SHARE_PERCENT: u32 = 10;
/// A second, smaller share for sources that sent no handshake message in the last second
/// (a real peer retries every 5 s; a flooding source never goes quiet): with the main budget
/// spent by a flood from 256 sources holding cookies, a new peer's initiation found it empty
/// and its handshake waited until the flood or the tunnel's traffic stopped (bench/flood,
/// `cookies` phase, check peer). An attacker needs an address per initiation a second to
/// take this share from real peers.
pub(super) const QUIET_SHARE_PERCENT: u32 = 5;
/// Most unspent budget kept: a burst of this much handshake work right after a quiet spell.
/// The same bound applies to debt, so one handshake that took very long (the thread was
/// preempted in the middle of it) does not lock handshakes out for long.
pub(super) const HANDSHAKE_BUDGET_MAX: Duration = Duration::from_millis(20);
const HANDSHAKE_BUDGET_MAX_NS: i64 = HANDSHAKE_BUDGET_MAX.as_nanos() as i64;

/// A share of the time, earned as time passes and spent by what the I/O shell reports.
/// Signed: work that costs more than was left leaves a debt to earn back first (with the
/// balance clamped at zero, every message arriving a microsecond after the last found a
/// microsecond of budget, and X25519 took half the CPU under a mac2-valid flood). Credit
/// and debt are both bounded by HANDSHAKE_BUDGET_MAX.
pub(super) struct TimeBudget {
    last: Instant,
    balance_ns: i64,
    percent: u32,
}

impl TimeBudget {
    pub(super) fn new(now: Instant, percent: u32) -> Self {
        TimeBudget {
            last: now,
            balance_ns: HANDSHAKE_BUDGET_MAX_NS,
            percent,
        }
    }

    /// Refills for the time since the last call; whether anything is left.
    fn left(&mut self, now: Instant) -> bool {
        let earned =
            now.saturating_duration_since(self.last).as_nanos() * u128::from(self.percent) / 100;
        let earned = earned.min(2 * HANDSHAKE_BUDGET_MAX_NS as u128) as i64;
        self.balance_ns = (self.balance_ns + earned).min(HANDSHAKE_BUDGET_MAX_NS);
        self.last = now.max(self.last);
        self.balance_ns > 0
    }

    fn charge(&mut self, spent: Duration) {
        let spent = spent.as_nanos().min(2 * HANDSHAKE_BUDGET_MAX_NS as u128) as i64;
        self.balance_ns = (self.balance_ns - spent).max(-HANDSHAKE_BUDGET_MAX_NS);
    }
}

impl Device {
    /// Whether handshakes are arriving faster than we want to spend CPU on; sticky for 1 s.
    pub(crate) fn under_load(&mut self, now: Instant) -> bool {
        let (start, count) = self.load_window;
        if now.saturating_duration_since(start) >= Duration::from_secs(1) {
            self.load_window = (now, 1);
        } else {
            self.load_window.1 = count + 1;
            if self.load_window.1 > self.under_load_rate {
                self.under_load_until = Some(now + UNDER_LOAD_STICKY);
            }
        }
        self.under_load_until.is_some_and(|u| now < u)
    }

    /// Under load: whether a handshake message may have its Noise work done, by the main
    /// budget or, for a source that sent no handshake message for a second (`quiet`, see
    /// QUIET_SHARE_PERCENT), by the quiet sources' budget, which is then charged for it.
    pub(crate) fn budget_admits(&mut self, now: Instant, quiet: bool) -> bool {
        self.charge_quiet = false;
        if self.handshake_budget.left(now) {
            return true;
        }
        self.charge_quiet = quiet && self.quiet_budget.left(now);
        self.charge_quiet
    }

    /// The I/O shell reports the time a handshake message (initiation or response) took to
    /// handle; under load it is spent from the budget that admitted it (the core reads no
    /// clock itself).
    pub fn charge_handshake(&mut self, spent: Duration) {
        if std::mem::take(&mut self.charge_quiet) {
            self.quiet_budget.charge(spent);
        } else {
            self.handshake_budget.charge(spent);
        }
    }
}
