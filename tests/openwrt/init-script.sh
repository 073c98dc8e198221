#!/usr/bin/env bash
# files/solowg.init under busybox sh, with /etc/config/solowg's options and a stand-in for
# the procd helpers (procd_open_instance, procd_set_param, procd_close_instance) that records
# what the script asks procd for. Real procd (service/instance.c) reads `respawn THRESHOLD
# TIMEOUT RETRY` and gives up after RETRY quick crashes unless RETRY is 0; the script must
# ask for 0, so a crash loop never leaves the VPN down. Also checked: the packet path is off
# unless packet_tx is '1', log_level reaches the daemon, enabled '0' starts nothing, and the
# daemon is told to become the user 'solowg' when /etc/passwd has it.
#   usage: tests/openwrt/init-script.sh      (INIT=FILE checks another init script)
set -euo pipefail

root=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
command -v busybox >/dev/null || {
	echo "SKIPPED: busybox is not installed"
	echo "0 passed, 0 failed, 1 skipped"
	exit 0
}
# shellcheck source=tests/openwrt/check.sh
. "$root/tests/openwrt/check.sh"

# Runs start_service with the given main options (NAME=VALUE ...); prints the recorded calls.
run_init() {
	# shellcheck disable=SC2016 # the inner script's variables are its own
	busybox sh -c '
		init=$1
		shift
		for kv in "$@"; do eval "opt_${kv%%=*}=\"\${kv#*=}\""; done
		config_load() { :; }
		# config_get[_bool] VAR SECTION OPTION DEFAULT, as /lib/functions.sh has them.
		config_get() { eval "v=\${opt_$3-}"; [ -n "$v" ] || v=$4; eval "$1=\$v"; }
		config_get_bool() {
			eval "v=\${opt_$3-}"
			[ -n "$v" ] || v=$4
			case $v in 1 | on | true | yes | enabled) v=1 ;; *) v=0 ;; esac
			eval "$1=\$v"
		}
		procd_open_instance() { echo "open"; }
		procd_set_param() { echo "$*"; }
		procd_close_instance() { echo "close"; }
		. "$init"
		PASSWD=$passwd
		start_service
	' sh "${INIT:-$root/files/solowg.init}" "$@"
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The package creates the user; a router where that failed has none.
printf 'root:x:0:0:root:/root:/bin/ash\nsolowg:x:421:421:solowg:/var/run/solowg:/bin/false\n' >"$work/passwd"
printf 'root:x:0:0:root:/root:/bin/ash\n' >"$work/passwd-nouser"
export passwd=$work/passwd

out=$(run_init)
check default.respawn-forever "respawn 3600 5 0" "$(grep '^respawn ' <<<"$out")"
check default.env "env LOG_LEVEL=info" "$(grep '^env ' <<<"$out")"
check default.command-own-user "command /usr/sbin/solowg --uci --user solowg --config-dir /var/run/solowg" \
	"$(grep '^command ' <<<"$out")"
out=$(passwd=$work/passwd-nouser run_init)
check no-user.command-as-root "command /usr/sbin/solowg --uci" "$(grep '^command ' <<<"$out")"
check default.one-instance "1 1" "$(grep -c '^open$' <<<"$out") $(grep -c '^close$' <<<"$out")"

out=$(run_init packet_tx=1 log_level=verbose)
check packet_tx.on "env LOG_LEVEL=verbose SOLOWG_PACKET_TX=1" "$(grep '^env ' <<<"$out")"
out=$(run_init packet_tx=0)
check packet_tx.off "env LOG_LEVEL=info" "$(grep '^env ' <<<"$out")"

out=$(run_init enabled=0)
check disabled.no-instance "" "$out"

# The shipped default configuration says the same.
check config.packet_tx-default-off "option packet_tx '0'" \
	"$(grep -o "option packet_tx '[01]'" "$root/files/solowg.config")"

# reload_service (what procd's config trigger and LuCI's Reload run): root's export first; a
# failed export stops there (the tunnels run on) with its message on stdout; otherwise the
# daemon's reload, whose errors are printed one per line, and a renew of each interface it
# names. `ubus`, `logger` and the solowg program are recording stand-ins; jshn is the real one
# (built next to the real uci: SOLOWG_UCI_BIN).
jshn_dir=$(dirname "${SOLOWG_UCI_BIN:-/nonexistent/uci}")
if [[ -x $jshn_dir/jshn && -f $jshn_dir/jshn.sh ]]; then
	cat >"$work/solowg" <<'STUB'
#!/bin/sh
echo "solowg $*" >>"$LOG"
[ "$EXPORT_RC" = 0 ] || echo "solowg export: network: Parse error (invalid command) at line 3, byte 1"
exit "$EXPORT_RC"
STUB
	chmod +x "$work/solowg"
	run_reload() { # EXPORT_RC: prints the output, then the recorded calls
		: >"$work/log"
		# shellcheck disable=SC2016 # the inner script's variables are its own
		LOG=$work/log EXPORT_RC=$1 PATH="$jshn_dir:$PATH" busybox sh -c '
			. "$2/jshn.sh"
			ubus() {
				echo "ubus $*" >>"$LOG"
				case "$*" in
				*"call solowg reload"*) echo "{\"interfaces\":[\"wg0\",\"wg1\"],\"errors\":[\"network.peer2: public_key: not a key\",\"wg1: kept its previous configuration\"]}" ;;
				esac
			}
			logger() { cat >/dev/null; }
			restart() { echo restart >>"$LOG"; }
			. "$1"
			PROG=$3
			reload_service
		' sh "${INIT:-$root/files/solowg.init}" "$jshn_dir" "$work/solowg"
		echo "--"
		cat "$work/log"
	}
	out=$(run_reload 0)
	check reload.errors-printed "network.peer2: public_key: not a key|wg1: kept its previous configuration" \
		"$(sed -n '1,/^--$/p' <<<"$out" | grep -v '^--$' | paste -sd'|')"
	check reload.export-then-reload-then-renews \
		"solowg export|ubus -t 10 call solowg reload|ubus -t 10 call network.interface.wg0 renew|ubus -t 10 call network.interface.wg1 renew" \
		"$(sed '1,/^--$/d' <<<"$out" | paste -sd'|')"
	out=$(run_reload 1)
	check reload.failed-export-stops-there "solowg export: network: Parse error (invalid command) at line 3, byte 1|--|solowg export" \
		"$(paste -sd'|' <<<"$out")"
else
	echo "SKIPPED reload.*: jshn not found next to SOLOWG_UCI_BIN (tests/uci/build-uci.sh builds it)"
fi

checks_done
