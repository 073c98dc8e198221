# shellcheck shell=sh disable=SC3043 # busybox ash, as on OpenWrt, has `local`
# STAND-IN for netifd, written for the tests: netifd itself is not available here.
#
# 1. Its handler library (/lib/netifd/netifd-proto.sh): every helper a protocol handler
#    calls is recorded as one line "helper arg..." in $NETIFD_LOG instead of being sent to
#    netifd, so a test can check what the handler announced. The JSON tool the handler
#    uses (jshn) is the real one, built from libubox's sources.
# 2. netifd_standin IFACE: one interface's life as the real netifd (Linux build, run by hand
#    with the real handler, ubusd and procd) was seen to lead it:
#    - setup runs; an announcement (proto_send_update) is applied: link up, addresses,
#      routes (routes no longer announced are removed); the interface is then "up";
#    - a failed setup (no update, proto_setup_failed) is followed by the teardown script and
#      by setup again AT ONCE: netifd has no delay of its own, any pause is the handler's;
#      proto_block_restart stops that (the interface stays down);
#    - when the device vanishes: with teardown_on_l3_link_down the teardown script runs and
#      setup follows at once; without it the interface stays "up" with no device;
#    - renew (`ubus call network.interface.<if> renew`, here: a file "renew" in the state
#      directory) runs the handler's renew; an update is applied as above, nothing else.
#    State in $NETIFD_DIR: state (setup|up|down|blocked), setups, teardowns, renews, the
#    log of each action's last run (setup.log, ...) and of all of them (actions.log). Stops when $NETIFD_DIR/stop appears or after
#    NETIFD_STANDIN_MAX_S seconds. Run under busybox sh with the handler sourced, in the
#    interface's network namespace.

netifd_record() {
	printf '%s\n' "$*" >>"$NETIFD_LOG"
}

proto_config_add_string() { netifd_record config string "$1"; }
proto_config_add_int() { netifd_record config int "$1"; }
proto_config_add_boolean() { netifd_record config boolean "$1"; }
proto_config_add_array() { netifd_record config array "$1"; }
proto_init_update() { netifd_record proto_init_update "$@"; }
proto_add_ipv4_address() { netifd_record proto_add_ipv4_address "$@"; }
proto_add_ipv6_address() { netifd_record proto_add_ipv6_address "$@"; }
proto_add_ipv4_route() { netifd_record proto_add_ipv4_route "$@"; }
proto_add_ipv6_route() { netifd_record proto_add_ipv6_route "$@"; }
proto_add_ipv6_prefix() { netifd_record proto_add_ipv6_prefix "$@"; }
proto_send_update() { netifd_record proto_send_update "$@"; }
proto_add_host_dependency() { netifd_record proto_add_host_dependency "$@"; }
proto_notify_error() { netifd_record proto_notify_error "$@"; }
proto_block_restart() { netifd_record proto_block_restart "$@"; }
proto_setup_failed() { netifd_record proto_setup_failed "$@"; }
logger() { netifd_record logger "$@"; }

# netifd_count NAME: adds one to the counter file NAME.
netifd_count() {
	local n
	n=$(cat "$NETIFD_DIR/$1" 2>/dev/null || echo 0)
	echo $((n + 1)) >"$NETIFD_DIR/$1"
}

# netifd_action ACTION IFACE: the handler's action in its own process, as netifd runs it.
netifd_action() {
	NETIFD_LOG=$NETIFD_DIR/$1.log
	: >"$NETIFD_LOG"
	netifd_count "${1}s"
	(proto_solowg_"$1" "$2") || true
	cat "$NETIFD_LOG" >>"$NETIFD_DIR/actions.log"
}

# netifd_apply LOG: applies the announcement recorded in LOG, as netifd does with an update.
netifd_apply() {
	local dev what a b r
	dev=$(sed -n 's/^proto_init_update \([^ ]*\) 1$/\1/p' "$1" | tail -n 1)
	[ -n "$dev" ] || return 1
	ip link set dev "$dev" up || return 1
	: >"$NETIFD_DIR/routes.new"
	while read -r what a b _; do
		case $what in
		proto_add_ipv4_address) ip addr replace "$a/$b" dev "$dev" ;;
		proto_add_ipv6_address) ip addr replace "$a/$b" dev "$dev" nodad ;;
		proto_add_ipv4_route | proto_add_ipv6_route) echo "$a/$b" >>"$NETIFD_DIR/routes.new" ;;
		esac
	done <"$1"
	while read -r r; do
		ip route replace "$r" dev "$dev"
	done <"$NETIFD_DIR/routes.new"
	[ -f "$NETIFD_DIR/routes" ] && while read -r r; do
		grep -qxF "$r" "$NETIFD_DIR/routes.new" || ip route del "$r" dev "$dev" 2>/dev/null
	done <"$NETIFD_DIR/routes"
	mv "$NETIFD_DIR/routes.new" "$NETIFD_DIR/routes"
	echo "$dev" >"$NETIFD_DIR/device"
}

netifd_standin() {
	local ifc="$1" state=down flag end dev
	teardown_on_l3_link_down=0
	NETIFD_LOG=$NETIFD_DIR/init.log
	: >"$NETIFD_LOG"
	proto_solowg_init_config
	flag=$teardown_on_l3_link_down
	end=$(($(date +%s) + ${NETIFD_STANDIN_MAX_S:-300}))
	while [ "$(date +%s)" -lt "$end" ] && [ ! -e "$NETIFD_DIR/stop" ]; do
		case $state in
		down)
			echo setup >"$NETIFD_DIR/state"
			netifd_action setup "$ifc"
			if grep -q '^proto_send_update' "$NETIFD_DIR/setup.log" &&
				netifd_apply "$NETIFD_DIR/setup.log"; then
				state=up
			elif grep -q '^proto_block_restart' "$NETIFD_DIR/setup.log"; then
				netifd_action teardown "$ifc"
				state=blocked
			else
				netifd_action teardown "$ifc"
			fi
			;;
		up)
			dev=$(cat "$NETIFD_DIR/device")
			if ! ip link show dev "$dev" >/dev/null 2>&1; then
				if [ "$flag" = 1 ]; then
					rm -f "$NETIFD_DIR/routes"
					netifd_action teardown "$ifc"
					state=down
					continue
				fi
				# Without the flag netifd does not notice: still "up".
				echo 1 >"$NETIFD_DIR/device-gone-while-up"
			fi
			if [ -e "$NETIFD_DIR/renew" ]; then
				rm -f "$NETIFD_DIR/renew"
				netifd_action renew "$ifc"
				! grep -q '^proto_send_update' "$NETIFD_DIR/renew.log" ||
					netifd_apply "$NETIFD_DIR/renew.log"
			fi
			sleep 0.1
			;;
		*) sleep 0.1 ;;
		esac
		echo "$state" >"$NETIFD_DIR/state"
	done
}
