//! The daemon's scheduling policy.

use crate::log;
use std::io;

/// SCHED_BATCH: the daemon no longer preempts the task that is handing it packets (on one
/// CPU, iperf3 or the kernel's forwarding), so it wakes to a fuller queue and reads more per
/// wake-up: 1.25 -> 1.17 syscalls per packet sent at 200 Mbit/s UDP, same ping latency under
/// load (bench/README.md). A policy chosen by the operator (chrt, procd) is left alone.
#[allow(unsafe_code)]
pub fn batch_scheduling() {
    // SAFETY: plain syscalls on this process with a valid, initialised sched_param (all zero: priority 0).
    unsafe {
        if libc::sched_getscheduler(0) == libc::SCHED_OTHER {
            // Zeroed, not a struct literal: musl's sched_param has more (reserved) fields.
            let p: libc::sched_param = std::mem::zeroed();
            if libc::sched_setscheduler(0, libc::SCHED_BATCH, &p) != 0 {
                log::verbose(format_args!(
                    "SCHED_BATCH refused: {}",
                    io::Error::last_os_error()
                ));
            }
        }
    }
}
