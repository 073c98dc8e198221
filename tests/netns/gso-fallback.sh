#!/usr/bin/env bash
# UDP GSO refused with EIO, as on routers whose NIC has no checksum offload (ath79's
# ag71xx): the kernel here never refuses, so A runs under strace, which makes every
# sendmsg(2) (only GSO batches use it; single datagrams go out with sendto) fail with
# EIO. A must notice once, log it, and carry the traffic one datagram per call.
#   usage: gso-fallback.sh solowg
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

U=${1:-solowg}
nt_setup
nt_require_tools iperf3 jq strace
nt_require_impl "$U"
nt_make_netns || nt_die "could not build the namespaces"

# Only sendmsg is stopped on (seccomp filter), so the daemon runs at near full speed.
NT_WRAP=(strace -f -qq --seccomp-bpf -o /dev/null -e trace=sendmsg -e inject=sendmsg:error=EIO)
nt_check start.A-under-eio-injection nt_start_daemon "$U" "$NT_NS_A" "$NT_IF_A" || {
	nt_summary || true
	exit 1
}
NT_WRAP=()
nt_check start.B nt_start_daemon "$U" "$NT_NS_B" "$NT_IF_B" || {
	nt_summary || true
	exit 1
}
nt_check configure nt_config_pair ga gb v4 || true
nt_check ping4 nt_wait_ping "$NT_NS_A" "$NT_IN4_B" 10 || true

name=iperf3-20M.A-to-B-with-GSO-failing
if nt_iperf "$NT_NS_A" "$NT_NS_B" "$NT_IN4_B" -n 20M && ((NT_IPERF_SENT >= 20971520)); then
	nt_pass "$name" "$NT_IPERF_MBPS Mbit/s"
else
	nt_fail "$name" "iperf3: sent=$NT_IPERF_SENT received=$NT_IPERF_RECV"
fi
log="$NT_TMP/daemon-$NT_IF_A-$U.log"
# Once, not per batch: the fallback is sticky.
logged_once() { [[ $(grep -c 'UDP GSO unavailable' "$log") -eq 1 ]]; }
nt_check fallback-logged-once logged_once || true
# Without GSO a batch still leaves in one sendmmsg (not one call per datagram), as on a
# router whose NIC has no checksum offload: datagrams per send call from A's counters.
batched() {
	local line
	kill -USR1 "$(nt_daemon_os_pid "$NT_IF_A")" || return 1
	nt_wait_until 3 grep -q "stats $NT_IF_A: " "$log" || return 1
	line=$(grep "stats $NT_IF_A: " "$log" | tail -n 1)
	nt_info "A's counters: $line"
	awk '{ for (i = 1; i <= NF; i++) if (split($i, kv, "=") == 2) v[kv[1]] = kv[2] }
		END { r = v["udp_send_calls"] ? v["udp_tx_datagrams"] / v["udp_send_calls"] : 0
			printf "# datagrams per send call: %.1f\n", r; exit !(v["udp_tx_datagrams"] > 10000 && r >= 4) }' <<<"$line"
}
nt_check fallback-sends-batches batched || true
nt_summary
