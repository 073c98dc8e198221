//! The classic BPF program the kernel runs on every call.

use super::call_list::{checked_calls, Checked};
use super::SelfAbort;

/// The offset of the low 32 bits of system-call argument `i` in `seccomp_data` (the kernel
/// reads these arguments as `int`, so the low word is what it acts on).
pub(super) fn arg_low(i: usize) -> u32 {
    let at = std::mem::offset_of!(libc::seccomp_data, args) + 8 * i;
    (if cfg!(target_endian = "big") {
        at + 4
    } else {
        at
    }) as u32
}

/// The classic BPF program: a call of another ABI is killed, a listed call allowed, with
/// `abort` the calls of an abort of this process (see [`SelfAbort`]), any other given
/// `default`. Linear: one compare per listed call.
pub fn program(
    arch: u32,
    allowed: &[libc::c_long],
    abort: Option<SelfAbort>,
    default: u32,
) -> Vec<libc::sock_filter> {
    // Plain calls first; each jumps to ALLOW at the end. `None` stands for ALLOW,
    // `Some(DENY)` for the default's RET, fixed up below.
    let mut plain: Vec<libc::c_long> = allowed.to_vec();
    let mut checked = checked_calls();
    if let Some(a) = abort {
        plain.extend(SelfAbort::plain());
        checked.extend(a.checked());
    }
    assert!(
        plain.len() + 8 * checked.len() < usize::from(u8::MAX),
        "a jump over the list must fit in 8 bits"
    );
    let mut out = resolve(with_targets(arch, &plain, checked));
    out.push(ret(default));
    out.push(ret(libc::SECCOMP_RET_ALLOW));
    out
}

/// Jump targets before the program's length is known: the RET that allows, the RET of the
/// default, or else an instruction's index.
const ALLOW: usize = usize::MAX;
const DENY: usize = usize::MAX - 1;
const JEQ: u32 = libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K;

/// An instruction with its true and false targets (ALLOW, DENY or an index).
type WithTargets = (libc::sock_filter, usize, usize);

fn op(code: u32, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    }
}

fn load(offset: u32) -> libc::sock_filter {
    op(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0, 0, offset)
}

fn ret(k: u32) -> libc::sock_filter {
    op(libc::BPF_RET | libc::BPF_K, 0, 0, k)
}

/// The program up to its two RETs: the ABI check, one compare per plain call, a block per
/// checked call.
fn with_targets(arch: u32, plain: &[libc::c_long], checked: Vec<Checked>) -> Vec<WithTargets> {
    let nr_at = std::mem::offset_of!(libc::seccomp_data, nr) as u32;
    let mut p: Vec<WithTargets> = Vec::new();
    let mut push = |i: libc::sock_filter, t: usize, f: usize| p.push((i, t, f));
    push(
        load(std::mem::offset_of!(libc::seccomp_data, arch) as u32),
        0,
        0,
    );
    push(op(JEQ, 1, 0, arch), 0, 0);
    push(ret(libc::SECCOMP_RET_KILL_PROCESS), 0, 0);
    push(load(nr_at), 0, 0);
    let mut at = 4;
    for &nr in plain {
        push(op(JEQ, 0, 0, nr as u32), ALLOW, at + 1);
        at += 1;
    }
    for (nr, conds) in checked {
        // The accumulator may hold an argument after a block: load the number again.
        let block = 2 + 2 * conds.len();
        push(load(nr_at), 0, 0);
        push(op(JEQ, 0, 0, nr as u32), at + 2, at + block);
        at += 2;
        for (k, &(arg, value)) in conds.iter().enumerate() {
            let last = k + 1 == conds.len();
            push(load(arg_low(arg)), 0, 0);
            push(
                op(JEQ, 0, 0, value),
                if last { ALLOW } else { at + 2 },
                DENY,
            );
            at += 2;
        }
    }
    p
}

/// The jumps' targets as the kernel wants them: forward offsets, with DENY and ALLOW the
/// two RETs that follow `p`.
fn resolve(p: Vec<WithTargets>) -> Vec<libc::sock_filter> {
    let deny = p.len();
    let allow = deny + 1;
    p.into_iter()
        .enumerate()
        .map(|(pc, (mut i, t, f))| {
            if u32::from(i.code) == JEQ && pc > 1 {
                let rel = |target: usize| {
                    let target = match target {
                        ALLOW => allow,
                        DENY => deny,
                        n => n,
                    };
                    u8::try_from(target - pc - 1).expect("a short forward jump")
                };
                i.jt = rel(t);
                i.jf = rel(f);
            }
            i
        })
        .collect()
}
