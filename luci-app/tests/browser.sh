#!/usr/bin/env bash
# Headless-Chromium test of luci-app-solowg's pages, run against a STAND-IN
# of LuCI's client runtime (tests/luci-standin/, canned ubus and UCI data),
# not against LuCI itself. The pages on real LuCI, rpcd, uhttpd and the daemon
# are tests/openwrt-real/luci.sh; this one keeps the scenarios that need states
# the real stack does not reach on demand: canned drop reasons the daemon has
# not got yet, a description with markup, a DDNS service and luci-app-ddns's
# group, an acl.d without the wan or file grant, an init script's reload that
# prints problems or fails, and the settings and advanced options saved. For each scenario it dumps the DOM after the page
# settled (--virtual-time-budget lets poll() run several times) and checks it
# with tests/check-dom.js; it also writes screenshots. The stand-in checks
# every call against the session that acl-model.js builds from the app's
# acl.d file: `status*` and `proto*` run as root (read and write on every
# group), `status-readonly` as a user granted luci-app-solowg for read only.
#
#   luci-app/tests/browser.sh [OUTDIR]     (default: a fresh temp directory)
#
# Needs chromium (Debian package `chromium`), node and npm: the page's QR code
# comes from serve.js's stand-in of LuCI's uqr, built from the pinned npm uqr,
# and check-dom.js reads it back with jsqr (npm-deps.sh installs both).
# SOLOWG_PURE_DIR may point at another directory holding solowg/conf.js; by
# default the app's own.
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
out=${1:-$(mktemp -d /tmp/solowg-luci-browser.XXXXXX)}
mkdir -p "$out"
chromium_bin=$(command -v chromium || command -v chromium-browser || true)
if [[ -z $chromium_bin ]]; then
	echo "browser.sh: chromium is not installed (apt-get install chromium)" >&2
	exit 1
fi

sh "$here/npm-deps.sh"

rm -f "$out/port"   # a reused OUTDIR must not hand over an old server's port
node "$here/serve.js" "$out/port" 2>"$out/serve.log" &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 50); do [[ -s $out/port ]] && break; sleep 0.1; done
port=$(cat "$out/port")
base="http://127.0.0.1:$port/"

chrome() {
	# Own profile directory per run; bounded by timeout.
	local profile
	profile=$(mktemp -d "$out/profile.XXXXXX")
	timeout 120 "$chromium_bin" --headless --no-sandbox --disable-gpu --disable-background-networking \
		--user-data-dir="$profile" --window-size=1400,1100 --hide-scrollbars "$@" 2>>"$out/chromium.log"
	rm -rf "$profile"
}

declare -A budget=([status]=150000 [status-client]=30000 [status-client-wan]=30000 [status-client-host]=30000
	[status-settings]=8000 [status-readonly]=40000 [status-reload]=15000 [status-reload-problems]=15000
	[status-reload-fail]=15000 [status-reload-denied]=15000
	[proto]=3000 [proto-import]=6000 [proto-genkey]=4000 [proto-advanced]=4000 [proto-legacy]=8000)
declare -A query=([status]='page=status' [status-client]='page=status&action=client'
	[status-client-wan]='page=status&action=client&ddns=absent'
	[status-client-host]='page=status&action=client&ddns=absent&wan=denied'
	[status-settings]='page=status&action=settings'
	[status-readonly]='page=status&action=probe&user=readonly&packet_tx=absent'
	[status-reload]='page=status&action=reload' [status-reload-problems]='page=status&action=reload&reload=problems'
	[status-reload-fail]='page=status&action=reload&reload=fail' [status-reload-denied]='page=status&action=reload&exec=denied'
	[proto]='page=proto' [proto-import]='page=proto&action=import' [proto-genkey]='page=proto&action=genkey'
	[proto-advanced]='page=proto&action=advanced' [proto-legacy]='page=proto&iface=wg1&action=legacy')
# status-readonly, status-client-wan, status-reload, proto, proto-import and proto-legacy
# run on the real stack (tests/openwrt-real/luci.sh); SOLOWG_STANDIN_ALL=1 runs them here too.
scenarios=(status status-client status-client-host status-settings
	status-reload-problems status-reload-fail status-reload-denied proto-genkey proto-advanced)
[[ -z ${SOLOWG_STANDIN_ALL:-} ]] || scenarios+=(status-readonly status-client-wan status-reload proto proto-import proto-legacy)

fail=0
for scenario in "${scenarios[@]}"; do
	chrome --virtual-time-budget="${budget[$scenario]}" --dump-dom "$base?${query[$scenario]}" >"$out/$scenario.html"
	if node "$here/check-dom.js" "$scenario" "$out/$scenario.html"; then
		echo "ok   $scenario"
	else
		echo "FAIL $scenario (DOM in $out/$scenario.html)"
		fail=1
	fi
done

for scenario in status status-client status-reload-problems proto-advanced; do
	chrome --virtual-time-budget="${budget[$scenario]}" --screenshot="$out/$scenario.png" "$base?${query[$scenario]}" >/dev/null
	[[ -s $out/$scenario.png ]] && echo "screenshot $out/$scenario.png"
done

echo "served modules: $(sed -n 's/.*; //p' "$out/serve.log")"
if [[ $fail -ne 0 ]]; then
	echo "browser.sh: FAILED"
	exit 1
fi
echo "browser.sh: ${#scenarios[@]} scenarios passed (against the LuCI stand-in, not LuCI)"
