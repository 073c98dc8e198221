#!/usr/bin/env bash
# `solowg bench` as a router owner runs it: two races of solowg (this machine may have no
# WireGuard module), its output (Mbit/s and CPU above 0, the line to share, the JSON's
# keys, the state file), --detach, and that it leaves nothing behind - no namespace, link,
# process or UAPI socket - after a normal run, after SIGINT mid-run and after SIGKILL
# mid-run. Then its refusals: the kernel asked for without the module, not root, bad
# --seconds, --detach without a state file.
# The bench makes its namespaces without names, so what it made is learnt while it runs:
# the network namespaces of its children and of its own fds. Afterwards no process may be
# in one, no fd may hold one, and no process, link or socket may carry the run's names
# (its interfaces are swb<pid>a and swb<pid>b).
#   usage: bench.sh          (SOLOWG_BIN=path to test another build)
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

nt_require_root
nt_require_tools jq timeout setpriv env readlink
nt_require_impl solowg
BIN=$(nt_impl_bin solowg)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/solowg-bench.XXXXXX")
BENCH_PID=
cleanup() {
	local rc=$?
	set +e
	# A bench of ours still running (a failed check): stop it by its PID.
	[[ -n $BENCH_PID ]] && nt_stop_pid "$BENCH_PID"
	rm -rf "$TMP"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
start=$SECONDS

# The network namespaces (net:[inode]) of PID's children and of PID's fds.
namespaces_of() {
	local pid=$1 c
	for c in /proc/[0-9]*; do
		[[ $(awk '$1 == "PPid:" { print $2 }' "$c/status" 2>/dev/null) == "$pid" ]] &&
			readlink "$c/ns/net" 2>/dev/null
	done
	find "/proc/$pid/fd" -mindepth 1 -maxdepth 1 -printf '%l\n' 2>/dev/null | grep '^net:' || true
}

in_a_run() { jq -e '.progress | test("^run ")' "$1" >/dev/null 2>&1; }
# Waits until PID's state file shows a run in progress, then records its namespaces in NS_SEEN.
NS_SEEN=()
record_namespaces() {
	local pid=$1 state=$2 own
	nt_wait_until 30 in_a_run "$state" || return 1
	own=$(readlink /proc/self/ns/net)
	mapfile -t NS_SEEN < <(namespaces_of "$pid" | grep -vxF "$own" | sort -u)
	nt_info "bench $pid holds ${#NS_SEEN[@]} namespaces: ${NS_SEEN[*]}"
	[[ ${#NS_SEEN[@]} -ge 2 ]]
}

# What a bench of PID left behind, one line each; nothing when clean.
leftovers() {
	local pid=$1 ns p
	for ns in "${NS_SEEN[@]}"; do
		for p in /proc/[0-9]*; do
			[[ $(readlink "$p/ns/net" 2>/dev/null) == "$ns" ]] && echo "process ${p#/proc/} in $ns"
		done
		find /proc/[0-9]*/fd -mindepth 1 -maxdepth 1 -lname "$ns" -printf 'fd %p holds %l\n' 2>/dev/null
	done
	for p in /proc/[0-9]*; do
		tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -q "swb${pid}[ab]" && echo "process ${p#/proc/}: $(tr '\0' ' ' <"$p/cmdline")"
		[[ $(awk '$1 == "PPid:" { print $2 }' "$p/status" 2>/dev/null) == "$pid" ]] && echo "child ${p#/proc/} of $pid"
	done
	for p in /sys/class/net/swb"$pid"[ab] /sys/class/net/bench[01] /var/run/wireguard/swb"$pid"* "$TMP"/.*.tmp; do
		[[ -e $p ]] && echo "left: $p"
	done
	true
}
is_clean() { [[ -z $(leftovers "$1") ]]; }
clean_after() {
	local pid=$1 left
	# Children end on their parent-death signal, namespaces when the last holder goes.
	nt_wait_until 10 is_clean "$pid" && return 0
	left=$(leftovers "$pid")
	printf '# left behind: %s\n' "$left"
	return 1
}

# --- a normal run: two races of solowg, JSON and the state file
out=$TMP/run.json state=$TMP/state.json
"$BIN" bench --impls solowg,solowg --seconds 2 --json --state-file "$state" >"$out" 2>"$TMP/run.err" &
BENCH_PID=$!
pid=$BENCH_PID
nt_check run.namespaces-seen record_namespaces "$pid" "$state" || true
rc=0
wait "$pid" || rc=$?
BENCH_PID=
nt_check "run.exit-0(rc=$rc)" test "$rc" -eq 0 || cat "$TMP/run.err"
nt_info "$(jq -r .line "$out" 2>/dev/null)"
json_ok() {
	jq -e '
		([ "state","progress","error","seconds","tool","system","runs","ratio","line" ] - keys | length) == 0
		and .state == "done" and .error == null and .seconds == 2
		and (.tool == "iperf3" or .tool == "builtin")
		and (.system | has("board") and has("cpu") and has("kernel") and has("release")
			and has("solowg") and has("wireguard")) and (.system.kernel | length) > 0
		and (.runs | length) == 4
		and all(.runs[]; (.impl == "solowg") and (.dir == "up" or .dir == "down")
			and .mbps > 0 and .cpu > 0 and .cpu <= 1)
		and ([.runs[].dir] == ["up","down","up","down"])
		and .ratio.up == null and .ratio.down == null
		and (.line | test("^solowg bench: .* \\| up: solowg [0-9.]+ Mbit/s cpu [0-9]+% \\| down: solowg [0-9.]+ Mbit/s cpu [0-9]+%$"))' "$1" >/dev/null
}
nt_check run.json-keys-and-figures json_ok "$out" || cat "$out"
nt_check run.state-file-is-the-result cmp -s <(jq -S . "$out") <(jq -S . "$state") || true
nt_check run.nothing-left clean_after "$pid" || true

# --- the table on a pipe, the built-in stream, the implementations by default
"$BIN" bench --seconds 2 --tool builtin >"$TMP/text.out" 2>"$TMP/text.err" || true
table_ok() {
	grep -Eq '^solowg +up +[0-9.]+ +[0-9.]+%$' "$TMP/text.out" &&
		grep -Eq '^solowg +down +[0-9.]+ +[0-9.]+%$' "$TMP/text.out" &&
		! grep -Eq '^solowg +(up|down) +0\.0 ' "$TMP/text.out" &&
		grep -Eq '^solowg bench: .*builtin 2 s \| up: ' "$TMP/text.out"
}
nt_check text.table-and-line table_ok || {
	cat "$TMP/text.out" "$TMP/text.err"
}
if [[ -e /sys/module/wireguard ]]; then
	nt_info "the module is loaded here: the default runs it too (not checked: it needs wg)"
else
	nt_check text.module-missing-said grep -q 'install kmod-wireguard to race the module' "$TMP/text.err" || true
fi

# --- interrupted: SIGINT, and SIGKILL, in the middle of a run
for sig in INT KILL; do
	state=$TMP/state-$sig.json
	# As from a terminal: a script's background job would otherwise ignore SIGINT.
	env --default-signal=INT "$BIN" bench --impls solowg,solowg --seconds 4 --json \
		--state-file "$state" >/dev/null 2>"$TMP/$sig.err" &
	BENCH_PID=$!
	pid=$BENCH_PID
	nt_check "sig$sig.namespaces-seen" record_namespaces "$pid" "$state" || true
	sleep 1
	kill -s "$sig" "$pid"
	rc=0
	timeout 20 tail --pid="$pid" -f /dev/null || true
	wait "$pid" || rc=$?
	BENCH_PID=
	if [[ $sig == INT ]]; then
		nt_check "sigINT.exit-130(rc=$rc)" test "$rc" -eq 130 || cat "$TMP/$sig.err"
		nt_check sigINT.state-says-interrupted \
			jq -e '.state == "failed" and .error == "interrupted"' "$state" >/dev/null || true
	else
		nt_check "sigKILL.killed(rc=$rc)" test "$rc" -eq 137 || true
	fi
	nt_check "sig$sig.nothing-left" clean_after "$pid" || true
done

# --- --detach: returns at once, the state file follows the run to its end
state=$TMP/detached.json
t0=$(nt_now_ms)
"$BIN" bench --detach --state-file "$state" --json --impls solowg --seconds 2 --tool builtin >"$TMP/detach.out"
took=$(($(nt_now_ms) - t0))
nt_check "detach.returns-at-once(${took} ms)" test "$took" -lt 3000 || true
pid=$(jq -r .pid "$TMP/detach.out")
nt_check "detach.says-running(pid $pid)" jq -e '.state == "running"' "$TMP/detach.out" >/dev/null || true
nt_check detach.namespaces-seen record_namespaces "$pid" "$state" || true
done_ok() { jq -e '.state == "done" and (.runs | length) == 2 and .runs[0].mbps > 0' "$state" >/dev/null 2>&1; }
nt_check detach.state-file-done nt_wait_until 40 done_ok || cat "$state"
nt_check detach.nothing-left clean_after "$pid" || true

# --- refusals
refused() { # refused WORDS ARGS...: exit 1 and WORDS on stderr
	local words=$1 rc=0
	shift
	"$@" >/dev/null 2>"$TMP/refusal.err" || rc=$?
	if [[ $rc -ne 1 ]] || ! grep -qF -- "$words" "$TMP/refusal.err"; then
		printf '# rc=%s: %s\n' "$rc" "$(cat "$TMP/refusal.err")"
		return 1
	fi
}
if [[ -e /sys/module/wireguard ]]; then
	echo "SKIP refusal.kernel-without-module: the module is loaded on this machine"
else
	nt_check refusal.kernel-without-module refused 'install kmod-wireguard' "$BIN" bench --impls kernel,solowg
fi
cp "$BIN" "$TMP/solowg"
chmod 755 "$TMP" "$TMP/solowg"
nt_check refusal.not-root refused 'must run as root' setpriv --reuid=65534 --regid=65534 --clear-groups "$TMP/solowg" bench
nt_check refusal.seconds-0 refused '--seconds takes a whole number' "$BIN" bench --seconds 0
nt_check refusal.seconds-word refused '--seconds takes a whole number' "$BIN" bench --seconds five
nt_check refusal.detach-needs-state refused '--detach needs --state-file' "$BIN" bench --detach
nt_check refusal.impls-unknown refused "unknown implementation 'wireguard-go'" "$BIN" bench --impls wireguard-go

nt_info "bench.sh took $((SECONDS - start)) s"
nt_summary
