#!/usr/bin/env bash
# Runs the netns system-test matrix and prints one aggregated closing line
# "N passed, M failed".
#   usage: run-all.sh [IMPL...]        (default: $IMPLS_UNDER_TEST or solowg)
# For each implementation U under test: U<->U, U<->wireguard-go,
# wireguard-go<->U, U<->boringtun, boringtun<->U (reference peers that are
# not installed are reported as failures), then wg-quick with U. Duplicate
# pairs are run once, so `run-all.sh wireguard-go` validates the harness
# with the reference implementations alone while solowg is not built.
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)

if [[ $# -gt 0 ]]; then
	impls=("$@")
else
	read -r -a impls <<<"${IMPLS_UNDER_TEST:-solowg}"
fi
[[ ${#impls[@]} -gt 0 ]] || {
	echo "no implementation under test" >&2
	exit 2
}
REFERENCES=(wireguard-go boringtun)
# Wall-clock bound for one matrix entry (each is itself bounded; this is the
# backstop). The entry's own trap cleans up on the TERM sent at expiry.
ENTRY_TIMEOUT_S=${ENTRY_TIMEOUT_S:-300}

# Ordered, de-duplicated list of entries: "interop A B" or "wg-quick U".
entries=()
declare -A seen=()
add_entry() {
	if [[ -z ${seen["$*"]:-} ]]; then
		seen["$*"]=1
		entries+=("$*")
	fi
}
for u in "${impls[@]}"; do
	add_entry interop "$u" "$u"
	for r in "${REFERENCES[@]}"; do
		add_entry interop "$u" "$r"
		add_entry interop "$r" "$u"
	done
done
for u in "${impls[@]}"; do
	add_entry wg-quick "$u"
done
# Fault injection that needs solowg's own behaviour (the references do not batch).
for u in "${impls[@]}"; do
	[[ $u == solowg ]] && add_entry gso-fallback "$u"
	[[ $u == solowg ]] && add_entry packet-tx "$u"
	[[ $u == solowg ]] && add_entry multi-wan "$u"
	[[ $u == solowg ]] && add_entry offline-peers "$u"
	[[ $u == solowg ]] && add_entry shaped-link "$u"
done
# OpenWrt mode (UCI, ubus, the netifd handler, faults under traffic) runs on OpenWrt's own
# daemons: tests/openwrt-real/.

out_dir=$(mktemp -d "${TMPDIR:-/tmp}/solowg-run-all.XXXXXX")
trap 'rm -rf "$out_dir"' EXIT

total_pass=0
total_fail=0
results=()
start=$SECONDS
i=0
for entry in "${entries[@]}"; do
	i=$((i + 1))
	read -r -a words <<<"$entry"
	kind=${words[0]}
	args=("${words[@]:1}")
	label="$kind ${args[*]}"
	[[ $kind == interop ]] && label="${args[0]} <-> ${args[1]}"
	out="$out_dir/$i.out"
	echo "=== [$i/${#entries[@]}] $label"
	t0=$SECONDS
	# Sub-output is indented so only our own closing line is flush left.
	set +e
	timeout -k 30 "$ENTRY_TIMEOUT_S" "$here/$kind.sh" "${args[@]}" </dev/null 2>&1 |
		tee "$out" | sed -u 's/^/    /'
	rc=${PIPESTATUS[0]}
	set -e
	summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$out" | tail -n 1 || true)
	if [[ -n $summary ]]; then
		read -r p _ f _ <<<"$summary"
	else
		p=0
		f=0
	fi
	# A crash, a timeout or a missing summary counts as one failure.
	if [[ $rc -ne 0 && $f -eq 0 ]]; then
		f=1
	fi
	total_pass=$((total_pass + p))
	total_fail=$((total_fail + f))
	rate=$(grep -oE 'iperf3-[0-9]+[KMG]?\.A-to-B \([0-9.]+ Mbit/s' "$out" | grep -oE '[0-9.]+ Mbit/s' | head -1 || true)
	results+=("$(printf '%-28s %3d passed %3d failed  rc=%-3d %4ds  %s' "$label" "$p" "$f" "$rc" $((SECONDS - t0)) "${rate:+iperf3 $rate}")")
done

echo
echo "=== matrix summary ($((SECONDS - start)) s)"
printf '  %s\n' "${results[@]}"
printf '%d passed, %d failed\n' "$total_pass" "$total_fail"
[[ $total_fail -eq 0 ]]
