#!/usr/bin/env bash
# Runs every cargo-fuzz target for SECONDS (default 60) each, starting from the committed
# seeds (fuzz/seeds/<target>, copied to a scratch corpus so the repository stays clean).
# Prints per target: executions, coverage (cov: N), duration, and "clean" or the crash
# artifact path (under fuzz/artifacts/<target>/, git-ignored). Exits 1 if any target
# crashed, timed out or ran out of memory, 2 if the build failed.
#   fuzz/run.sh [SECONDS]        FUZZ_TARGETS="uapi uci" fuzz/run.sh 30   (a subset)
# Needs cargo-fuzz (cargo install cargo-fuzz --locked), a C++ compiler (libFuzzer), and the
# nightly toolchain or any other compiler with RUSTC_BOOTSTRAP (set here). Targets are built
# with AddressSanitizer when the toolchain has its runtime (rustup's nightly does), else with
# no sanitizer (Debian's rustc ships none): libFuzzer still catches panics, aborts, timeouts
# and memory blow-ups. FUZZ_SANITIZER=address|none|... forces a choice.
set -uo pipefail

secs=${1:-60}
if ! [[ $secs =~ ^[1-9][0-9]*$ ]]; then
	echo "usage: $0 [SECONDS]" >&2
	exit 2
fi
root=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root" || exit 2
export PATH="$PATH:${CARGO_HOME:-$HOME/.cargo}/bin"
read -r -a targets <<<"${FUZZ_TARGETS:-datagram uapi uci ubus allowedips dns}"

work=$(mktemp -d "${TMPDIR:-/tmp}/solowg-fuzz.XXXXXX")
trap 'rm -rf -- "$work"' EXIT

echo "=== building fuzz targets"
# cargo-fuzz needs nightly features: the nightly toolchain when rustup has one, else the
# installed compiler with RUSTC_BOOTSTRAP=1 (Debian's rustc-web on a fresh machine).
if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
	fuzz=(cargo +nightly fuzz)
	rustc=(rustc +nightly)
else
	fuzz=(env RUSTC_BOOTSTRAP=1 cargo fuzz)
	rustc=(env RUSTC_BOOTSTRAP=1 "${RUSTC:-rustc}")
fi
# The probe: link and run an empty program with ASan, as cargo fuzz would build the targets.
sanitizer=${FUZZ_SANITIZER:-}
why="FUZZ_SANITIZER"
if [[ -z $sanitizer ]]; then
	printf 'fn main() {}\n' >"$work/probe.rs"
	if "${rustc[@]}" -Zsanitizer=address -o "$work/probe" "$work/probe.rs" >"$work/probe.log" 2>&1 &&
		"$work/probe" >>"$work/probe.log" 2>&1; then
		sanitizer=address why="the toolchain links and runs an ASan probe"
	else
		sanitizer=none
		# The linker names the missing runtime (librustc-*_rt.asan.a); else the first error.
		reason=$(grep -m 1 -iE '(cannot|could not) find.*asan' "$work/probe.log" ||
			grep -m 1 'error' "$work/probe.log" || head -n 1 "$work/probe.log")
		reason=$(sed -E 's/^[[:space:]=]*(note:)?[[:space:]]*//' <<<"$reason")
		why="no AddressSanitizer runtime in this toolchain: $reason"
	fi
fi
echo "sanitizer: $sanitizer ($why)"
fuzz_opts=(-s "$sanitizer")
if ! "${fuzz[@]}" build "${fuzz_opts[@]}"; then
	echo "fuzz build failed" >&2
	exit 2
fi

failed=0
summary=()
for t in "${targets[@]}"; do
	corpus=$work/corpus/$t
	log=$work/$t.log
	mkdir -p "$corpus" "fuzz/artifacts/$t"
	cp -- fuzz/seeds/"$t"/* "$corpus"/
	echo "=== $t: ${secs}s"
	start=$(date +%s.%N)
	# max_total_time bounds the fuzzing; timeout bounds everything else (a hang in one
	# input is caught by -timeout, well below).
	timeout -k 10 $((secs + 120)) "${fuzz[@]}" run "${fuzz_opts[@]}" "$t" "$corpus" -- \
		-max_total_time="$secs" -rss_limit_mb=1024 -timeout=30 -print_final_stats=1 \
		>"$log" 2>&1
	rc=$?
	end=$(date +%s.%N)
	dur=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | awk '{ print $2 }')
	# A slow unit (one input over 10 s) is reported but is not a failure.
	slow=$(sed -n 's/.*Test unit written to \(.*slow-unit-.*\)$/\1/p' "$log" | tail -n 1)
	artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | grep -v slow-unit- | tail -n 1)
	if [[ $rc -eq 0 && -z $artifact ]]; then
		verdict=clean${slow:+ (slow unit: $slow)}
	else
		failed=1
		verdict="CRASH (exit $rc) ${artifact:-no artifact; see the log below}"
		grep -m 20 -A 1 -E 'panicked|ERROR|SUMMARY|Test unit' "$log" || tail -n 30 "$log"
	fi
	line=$(printf '%-11s executions=%-10s cov: %-6s duration=%ss %s' \
		"$t" "${execs:-?}" "${cov:-?}" "$dur" "$verdict")
	echo "$line"
	summary+=("$line")
done

echo "=== fuzz summary (${secs}s per target, sanitizer: $sanitizer)"
printf '%s\n' "${summary[@]}"
exit "$failed"
