# shellcheck shell=bash
# Sourced by the OpenWrt package tests: `check NAME EXPECTED ACTUAL` prints PASS or FAIL
# (with both values, newlines shown as " | "), `checks_done` the tally and the exit status.
pass=0 fail=0
check() {
	if [[ $2 == "$3" ]]; then
		pass=$((pass + 1))
		echo "PASS $1"
	else
		fail=$((fail + 1))
		printf 'FAIL %s\n  expected: %s\n  actual:   %s\n' "$1" "${2//$'\n'/ | }" "${3//$'\n'/ | }"
	fi
}
checks_done() {
	echo "$pass passed, $fail failed"
	[[ $fail -eq 0 ]]
}
