//! CPU use over a run: the busy fraction of all CPUs, from /proc/stat's `cpu` line read
//! before and after. Busy is everything but idle and iowait: the tunnel's work is in
//! system and softirq time, the traffic programs' in user time.

/// Jiffies since boot, summed over all CPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuTimes {
    pub busy: u64,
    pub total: u64,
}

/// The `cpu` line of /proc/stat's text: user nice system idle iowait irq softirq steal
/// (guest time is already in user and nice, so later fields are left out).
pub fn parse_stat(text: &str) -> Option<CpuTimes> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    // Kernels since 2.6.11 have at least these eight; older ones' missing ones count 0.
    if fields.len() < 4 {
        return None;
    }
    let total = fields.iter().try_fold(0u64, |a, &f| a.checked_add(f))?;
    let idle = fields[3].checked_add(fields.get(4).copied().unwrap_or(0))?;
    Some(CpuTimes {
        busy: total.checked_sub(idle)?,
        total,
    })
}

pub fn read() -> Option<CpuTimes> {
    parse_stat(&std::fs::read_to_string("/proc/stat").ok()?)
}

/// The busy fraction (0..1) between two readings; 0 when no time passed or a reading is
/// missing.
pub fn busy_fraction(before: Option<CpuTimes>, after: Option<CpuTimes>) -> f64 {
    let (Some(b), Some(a)) = (before, after) else {
        return 0.0;
    };
    let total = a.total.saturating_sub(b.total);
    if total == 0 {
        return 0.0;
    }
    let busy = a.busy.saturating_sub(b.busy);
    (busy as f64 / total as f64).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_is_all_but_idle_and_iowait() {
        let t =
            parse_stat("cpu  100 5 50 800 20 3 7 0 0 0\ncpu0 50 2 25 400 10 1 3 0 0 0\nintr 1 2\n")
                .unwrap();
        assert_eq!(
            t,
            CpuTimes {
                busy: 165,
                total: 985
            }
        );
        // Old kernels: four fields.
        assert_eq!(
            parse_stat("cpu 1 2 3 4\n"),
            Some(CpuTimes { busy: 6, total: 10 })
        );
    }

    #[test]
    fn fraction_over_a_run() {
        let a = Some(CpuTimes {
            busy: 100,
            total: 1000,
        });
        let b = Some(CpuTimes {
            busy: 400,
            total: 1400,
        });
        assert!((busy_fraction(a, b) - 0.75).abs() < 1e-9);
        assert_eq!(busy_fraction(a, a), 0.0);
        assert_eq!(busy_fraction(None, b), 0.0);
        // Counters that went backwards (a reading swapped) do not give nonsense.
        assert_eq!(busy_fraction(b, a), 0.0);
    }

    #[test]
    fn malformed_stat_is_refused() {
        for bad in [
            "",
            "cpu0 1 2 3 4\n",
            "cpu 1 2 x 4\n",
            "cpu 1 2\n",
            "cpu 18446744073709551615 1 0 0\n",
        ] {
            assert_eq!(parse_stat(bad), None, "{bad:?}");
        }
    }
}
