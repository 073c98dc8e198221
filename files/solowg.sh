#!/bin/sh
# netifd protocol handler for 'proto solowg'. The tunnels are served by one daemon
# (/etc/init.d/solowg), which runs as its own user and cannot read /etc/config/network:
# setup first hands it the tunnels' sections (`solowg export`, which also saves a key for an
# interface without one), then asks it over ubus to create and configure the interface, then
# announces the addresses, routes and endpoint host dependencies it returns; renew does the
# same on the running interface (peers added since); teardown asks it to remove the
# interface. Configuration errors are shown in
# `ubus call network.interface.<name> status` and stop netifd from retrying in a loop.

# Without the program the protocol is not offered, except to a setup: during a package
# upgrade the program is briefly missing, and a setup that ended here would tell netifd
# nothing, which it never retries. It fails below instead, and netifd tries again.
[ -n "$INCLUDE_ONLY" ] || [ -x /usr/sbin/solowg ] || [ "$2" = setup ] || exit 0

[ -n "$INCLUDE_ONLY" ] || {
	. /lib/functions.sh
	. ../netifd-proto.sh
	init_proto "$@"
}

# Seconds setup waits for the daemon's ubus object: at boot it may still be starting (START
# orders the start, it does not wait), after a crash procd starts it again after 5 s.
SOLOWG_WAIT=10
# Pause after a failed setup: netifd retries at once, so without it a missing daemon means
# a busy loop (kernel WireGuard's handler pauses 5 s too).
SOLOWG_RETRY_DELAY=5

proto_solowg_init_config() {
	available=1
	no_device=1
	no_proto_task=1
	renew_handler=1
	# The TUN goes with the daemon (restart, crash, upgrade): netifd then tears the
	# interface down and sets it up again, which waits for the new daemon.
	teardown_on_l3_link_down=1
	# netifds that watch '<proto>_<interface>' sections renew the interface when its peers
	# change (ignored by those that do not).
	peer_detect=1
	# No private_key: netifd passes the declared options to every handler run as a command
	# line argument, which any user can read in /proc; the daemon reads the key from what
	# `solowg export` hands it. Undeclared, a saved key is also no change netifd reacts to.
	proto_config_add_int "listen_port"
	proto_config_add_int "mtu"
	proto_config_add_string "fwmark"
	proto_config_add_array "addresses"
	proto_config_add_array "ip6prefix"
	proto_config_add_boolean "nohostroute"
	proto_config_add_string "tunlink"
}

# solowg_split CIDR: sets addr and mask (empty for a bare address).
solowg_split() {
	addr=${1%/*}
	mask=${1#*/}
	[ "$mask" = "$1" ] && mask=
}

# solowg_up INTERFACE: the daemon's `up` reply (JSON) once its object is there; fails when
# the daemon is not reachable within SOLOWG_WAIT seconds. A configuration that could not be
# handed over is an `up` error as well.
solowg_up() {
	local msg
	ubus -t "$SOLOWG_WAIT" wait_for solowg >/dev/null 2>&1 || return 1
	# After the wait: the daemon made its directory its own when it started.
	msg=$(solowg export 2>&1)
	case $? in
	# The program missing or not yet executable (being upgraded): as if the daemon were
	# not there, so netifd tries again.
	126 | 127) return 1 ;;
	# Handed over (with a key generated and saved, if it says so); or handed over but a
	# generated key could not be saved: the interface comes up with one the daemon keeps in
	# memory, and the log says why.
	0 | 3) [ -z "$msg" ] || printf '%s\n' "$msg" | logger -t solowg ;;
	*)
		json_init
		json_add_string error "${msg#solowg export: }"
		json_dump
		return 0
		;;
	esac
	ubus -t 15 call solowg up "{\"interface\":\"$1\"}" 2>/dev/null
}

# solowg_announce INTERFACE: tells netifd what the loaded `up` reply holds. A complete
# update each time (renew too): netifd keeps what is unchanged and adds or drops the rest.
solowg_announce() {
	local config="$1"
	local ifname tunlink addresses routes prefixes hosts warnings a addr mask
	# Everything is read out first: each proto_* helper below starts a new JSON message.
	json_get_var ifname ifname
	json_get_var tunlink tunlink
	json_get_values addresses addresses
	json_get_values routes routes
	json_get_values prefixes ip6prefix
	json_get_values hosts host_dependencies
	warnings=$(solowg_lines errors)

	proto_init_update "$ifname" 1
	for a in $addresses; do
		solowg_split "$a"
		case "$addr" in
		*:*) proto_add_ipv6_address "$addr" "${mask:-128}" ;;
		*) proto_add_ipv4_address "$addr" "${mask:-32}" ;;
		esac
	done
	for a in $routes; do
		solowg_split "$a"
		case "$addr" in
		*:*) proto_add_ipv6_route "$addr" "${mask:-128}" ;;
		*) proto_add_ipv4_route "$addr" "${mask:-32}" ;;
		esac
	done
	for a in $prefixes; do
		proto_add_ipv6_prefix "$a"
	done
	proto_send_update "$config"

	for a in $hosts; do
		proto_add_host_dependency "$config" "$a" "$tunlink"
	done
	# Skipped peers: the interface is up, the problem is reported.
	[ -z "$warnings" ] || printf '%s\n' "$warnings" | while read -r a; do
		logger -t solowg "$config: $a"
		proto_notify_error "$config" "PEER_SKIPPED" "$a"
	done
}

proto_solowg_setup() {
	local config="$1"
	local reply err

	reply=$(solowg_up "$config") || {
		logger -t solowg "$config: daemon not reachable over ubus; retrying in ${SOLOWG_RETRY_DELAY}s"
		proto_notify_error "$config" "DAEMON_UNAVAILABLE"
		sleep "$SOLOWG_RETRY_DELAY"
		proto_setup_failed "$config"
		return 1
	}
	json_load "$reply"
	json_get_var err error
	if [ -n "$err" ]; then
		logger -t solowg "$config: $err"
		proto_notify_error "$config" "CONFIG_ERROR" "$err"
		# Retrying cannot fix a bad key or an unknown interface: no restart loop.
		proto_block_restart "$config"
		proto_setup_failed "$config"
		return 1
	fi
	solowg_announce "$config"
}

# solowg_lines ARRAY: the strings of a JSON array of the loaded message, one per line.
solowg_lines() {
	local keys k v
	json_select "$1" 2>/dev/null || return 0
	json_get_keys keys
	for k in $keys; do
		json_get_var v "$k"
		printf '%s\n' "$v"
	done
	json_select ..
}

# solowg_unlink INTERFACE: the link `solowg export` made from wg's name for the interface
# (/var/run/wireguard/<if>.sock) to the socket in the daemon's own directory goes with it.
# Only a link of ours: the directory is shared with other WireGuard implementations.
solowg_unlink() {
	local l="/var/run/wireguard/$1.sock"
	[ -L "$l" ] || return 0
	case $(readlink "$l") in
	/var/run/solowg/*) rm -f "$l" ;;
	esac
	return 0
}

proto_solowg_teardown() {
	local config="$1"
	# Short: netifd stops waiting for a teardown after 5 s.
	ubus -t 3 call solowg down "{\"interface\":\"$config\"}" >/dev/null 2>&1
	solowg_unlink "$config"
	return 0
}

# Renew (`ubus call network.interface.<name> renew`, the daemon's reload, peer changes seen
# by netifd): the daemon applies the interface's current peers (unchanged ones keep their
# sessions) and the routes and host dependencies of new peers are announced. A failure
# leaves the running interface as it is.
proto_solowg_renew() {
	local config="$1"
	local reply err

	reply=$(solowg_up "$config") || {
		logger -t solowg "$config: renew: daemon not reachable over ubus"
		return 0
	}
	json_load "$reply"
	json_get_var err error
	if [ -n "$err" ]; then
		logger -t solowg "$config: renew: $err"
		proto_notify_error "$config" "CONFIG_ERROR" "$err"
		return 0
	fi
	solowg_announce "$config"
}

[ -n "$INCLUDE_ONLY" ] || {
	add_protocol solowg
}
