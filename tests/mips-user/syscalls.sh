#!/usr/bin/env bash
# The system-call filter's list (src/sys/seccomp/call_list.rs) against the calls a build for another
# ABI really makes. qemu-user cannot enforce a filter (it refuses PR_SET_SECCOMP, and the
# daemon then logs that it runs without one), but `-strace` names every call the guest makes.
# The daemon runs in log mode, which logs the list's numbers, in a namespace of its own:
# start, a UAPI `set` (key, fwmark, a peer with an endpoint), `get`, SIGHUP and SIGUSR2
# (ignored), SIGUSR1 (counters), SIGTERM. Every call traced after its PR_SET_SECCOMP attempt
# must be on the list, or the filter would kill that build there.
#
#   syscalls.sh ABI BINARY QEMU [QEMU_ARGS...]
#     ABI: mips (o32, either byte order), arm (EABI), aarch64 or x86_64; the numbers come
#     from the libc crate's tables for that ABI (on 32-bit ABIs the 403-423 time64 calls
#     from Linux's shared numbering).
#   e.g. (glibc mipsel, built as .ci/mips builds, with --bin solowg):
#     tests/mips-user/syscalls.sh mips target/mipsel/mipsel-unknown-linux-gnu/debug/solowg \
#       qemu-mipsel-static -cpu 24Kf -L /usr/mipsel-linux-gnu
#
# Prints the calls made after the filter point with their counts, any call off the list as
# "FAIL: off the list", and ends with PASS or FAIL (exit status 0 or 1; 2: cannot run).
set -euo pipefail

root=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
[[ $# -ge 3 ]] || { sed -n '2,20p' "$0"; exit 2; }
abi=$1 bin=$2
shift 2
[[ $(id -u) -eq 0 ]] || { echo "ERROR: must run as root (namespace, TUN)" >&2; exit 2; }
[[ -x $bin ]] || { echo "ERROR: no binary at $bin" >&2; exit 2; }
command -v "$1" >/dev/null || { echo "ERROR: no $1 (qemu-user)" >&2; exit 2; }

libc_ver=$(awk '/^name = "libc"/ { getline; gsub(/"/, "", $3); print $3; exit }' "$root/Cargo.lock")
libc_dir=$(find "${CARGO_HOME:-$HOME/.cargo}/registry/src" -maxdepth 2 -type d -name "libc-$libc_ver" 2>/dev/null | head -1)
[[ -d $libc_dir ]] || { echo "ERROR: the libc crate's source is not in the cargo registry (cargo fetch)" >&2; exit 2; }

tmp=$(mktemp -d)
ns=solowg-sc$$
ifname=swgsc$$
sock=/var/run/wireguard/$ifname.sock
pid=
cleanup() {
	# Only the qemu process this script started.
	if [[ -n $pid ]]; then kill -KILL "$pid" 2>/dev/null || true; fi
	ip netns del "$ns" 2>/dev/null || true
	rm -f "$sock"
	rm -rf "$tmp"
}
trap cleanup EXIT
ip netns add "$ns"
ip netns exec "$ns" env SOLOWG_SECCOMP=log LOG_LEVEL=verbose "$@" -strace "$bin" -f "$ifname" \
	>"$tmp/trace" 2>&1 </dev/null &
pid=$!
for _ in $(seq 100); do [[ -S $sock ]] && break; sleep 0.1; done
[[ -S $sock ]] || { echo "ERROR: no UAPI socket; trace:" >&2; tail -20 "$tmp/trace" >&2; exit 2; }
python3 - "$sock" <<'EOF'
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.settimeout(20)
s.connect(sys.argv[1])
def ask(req):
    s.sendall(req)
    got = b""
    while not got.endswith(b"\n\n"):
        got += s.recv(65536)
    return got
print("set:", ask(b"set=1\nprivate_key=" + b"08" + b"11" * 30 + b"41\nfwmark=7\n"
                b"public_key=" + b"5e" * 32 + b"\nallowed_ip=10.9.0.0/24\n"
                b"endpoint=192.0.2.7:51820\npersistent_keepalive_interval=1\n\n").decode().strip())
time.sleep(1.5)  # a keepalive and its handshake attempt
print("get:", len(ask(b"get=1\n\n")), "bytes")
EOF
for sig in HUP USR2 USR1; do kill -"$sig" "$pid"; sleep 0.3; done
kill -TERM "$pid"
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
wait "$pid" || { echo "FAIL: the daemon did not exit cleanly" >&2; tail -20 "$tmp/trace" >&2; exit 1; }
pid=

python3 - "$abi" "$libc_dir" "$tmp/trace" <<'EOF'
import glob, re, sys
abi, libc_dir, trace = sys.argv[1:4]
base, bits = {"mips": (4000, 32), "arm": (0, 32), "aarch64": (0, 64), "x86_64": (0, 64)}[abi]
files = []
for libc in ("gnu", "musl"):
    files += glob.glob(f"{libc_dir}/src/unix/linux_like/linux/{libc}/b{bits}/{abi}/*.rs")
files = [f for f in files if not f.endswith("x32.rs")]
numbers = {}
for f in files:
    for m in re.finditer(r"pub const SYS_(\w+): (?:crate::|::)?c_long = (?:(\d+) \+ )?(\d+);", open(f).read()):
        numbers.setdefault(m.group(1), int(m.group(2) or 0) + int(m.group(3)))
# Linux numbers these alike on every 32-bit ABI, after its base; the libc crate lacks some.
for n, name in enumerate(["clock_gettime64", "clock_settime64", "clock_adjtime64",
        "clock_getres_time64", "clock_nanosleep_time64", "timer_gettime64", "timer_settime64",
        "timerfd_gettime64", "timerfd_settime64", "utimensat_time64", "pselect6_time64",
        "ppoll_time64", None, "io_pgetevents_time64", "recvmmsg_time64",
        "mq_timedsend_time64", "mq_timedreceive_time64", "semtimedop_time64",
        "rt_sigtimedwait_time64", "futex_time64", "sched_rr_get_interval_time64"]):
    if name and bits == 32:
        numbers.setdefault(name, base + 403 + n)
if not numbers:
    sys.exit(f"ERROR: no system-call table for {abi} under {libc_dir}")
text = open(trace, errors="replace").read()
listed = re.search(r"system-call filter list: ([\d ]+)", text)
if not listed:
    sys.exit("ERROR: the daemon logged no list (an older build?)")
allowed = {int(x) for x in listed.group(1).split()}
at = text.find("prctl(22,")
if at < 0:
    sys.exit("ERROR: no PR_SET_SECCOMP attempt in the trace")
made, unknown = {}, set()
# PR_GET_SECCOMP follows only a failed install, to tell why: no filter is on then.
for line in text[at:].splitlines()[1:]:
    if "prctl(21," in line:
        continue
    m = re.match(r"\d+ (?:Unknown syscall (\d+)|(\w+)\()", line)
    if not m:
        continue
    if m.group(1):
        nr, name = int(m.group(1)), f"#{m.group(1)}"
    else:
        name = m.group(2)
        nr = numbers.get(name)
        if nr is None:
            unknown.add(name)
            continue
    made[(name, nr)] = made.get((name, nr), 0) + 1
bad = 0
for (name, nr), count in sorted(made.items(), key=lambda x: -x[1]):
    ok = nr in allowed
    bad += not ok
    print(f"{'   ' if ok else 'FAIL: off the list:'} {name} ({nr}) x{count}")
for name in sorted(unknown):
    bad += 1
    print(f"FAIL: {name}: no number known for it")
print("PASS" if bad == 0 and made else "FAIL")
sys.exit(0 if bad == 0 and made else 1)
EOF
