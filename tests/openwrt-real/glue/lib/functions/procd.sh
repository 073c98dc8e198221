#!/bin/sh
# shellcheck disable=SC1091,SC3043 # busybox ash has local; the sourced files are the router's
# Stand-in for procd's /lib/functions/procd.sh (see tests/openwrt-real/glue/README.md): the
# procd_* helpers build the message procd's `service set` reads, in jshn's 'procd'
# namespace so that an init script's own JSON is left alone.
. /usr/share/libubox/jshn.sh

_procd_ns() {
	local old
	json_set_namespace procd old
	"$@"
	json_set_namespace "$old"
}

procd_open_service() { _procd_ns _procd_open_service "$@"; }
_procd_open_service() {
	_PROCD_SEQ=0
	json_init
	json_add_string name "$1"
	[ -z "$2" ] || json_add_string script "$2"
	json_add_object instances
}

procd_open_instance() { _procd_ns _procd_open_instance "$@"; }
_procd_open_instance() {
	_PROCD_SEQ=$((_PROCD_SEQ + 1))
	json_add_object "${1:-instance$_PROCD_SEQ}"
}

procd_set_param() { _procd_ns _procd_set_param "$@"; }
_procd_set_param() {
	local type="$1" kv
	shift
	case "$type" in
	env | data | limits)
		json_add_object "$type"
		for kv in "$@"; do
			json_add_string "${kv%%=*}" "${kv#*=}"
		done
		json_close_object
		;;
	command | netdev | file | respawn | watch)
		json_add_array "$type"
		for kv in "$@"; do
			json_add_string "" "$kv"
		done
		json_close_array
		;;
	nice | term_timeout) json_add_int "$type" "$1" ;;
	stdout | stderr | no_new_privs) json_add_boolean "$type" "$1" ;;
	*) json_add_string "$type" "$1" ;;
	esac
}

# An empty respawn gets procd's defaults: 3600 s threshold, 5 s pause, 5 retries.
procd_close_instance() { _procd_ns _procd_close_instance "$@"; }
_procd_close_instance() {
	local v
	if json_select respawn 2>/dev/null; then
		json_get_values v
		[ -n "$v" ] || {
			json_add_string "" 3600
			json_add_string "" 5
			json_add_string "" 5
		}
		json_select ..
	fi
	json_close_object
}

# procd_add_reload_trigger CONFIG...: `/etc/init.d/<service> reload` after a config.change
# event for one of them, delayed 1000 ms (procd merges events within the delay).
procd_add_reload_trigger() { _procd_ns _procd_add_reload_trigger "$@"; }
_procd_add_reload_trigger() {
	local c
	for c in "$@"; do
		json_add_array ""
		json_add_string "" config.change
		json_add_array ""
		json_add_string "" if
		json_add_array ""
		json_add_string "" eq
		json_add_string "" package
		json_add_string "" "$c"
		json_close_array
		json_add_array ""
		json_add_string "" run_script
		# shellcheck disable=SC2154 # rc.common's
		json_add_string "" "/etc/init.d/$service"
		json_add_string "" reload
		json_close_array
		json_close_array
		json_add_int "" 1000
		json_close_array
	done
}

procd_close_service() { _procd_ns _procd_close_service "$@"; }
_procd_close_service() {
	json_close_object
	json_add_array triggers
	_procd_ns service_triggers
	json_close_array
	ubus call service "${1:-set}" "$(json_dump)"
	json_cleanup
}

procd_kill() { _procd_ns _procd_kill "$@"; }
_procd_kill() {
	json_init
	json_add_string name "$1"
	[ -z "$2" ] || json_add_string instance "$2"
	ubus call service delete "$(json_dump)"
	json_cleanup
}
