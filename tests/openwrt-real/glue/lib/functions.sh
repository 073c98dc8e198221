#!/bin/sh
# shellcheck disable=SC1091,SC3043 # busybox ash has local; the sourced files are the router's
# Stand-in for base-files' /lib/functions.sh (see tests/openwrt-real/glue/README.md): the
# UCI helpers OpenWrt's scripts use, on the real uci CLI.

append() { # VAR VALUE [SEPARATOR]
	eval "$1=\"\${$1:+\${$1}\${3:- }}\$2\""
}
list_contains() { # VAR WORD
	eval "case \" \${$1} \" in *\" $2 \"*) return 0 ;; esac"
	return 1
}

# config_load PACKAGE: `uci export` is shell syntax (config/option/list lines) once these
# three are defined; unnamed sections get cfgNNN names.
config_load() {
	local data
	CONFIG_SECTIONS=
	CONFIG_NUM_SECTIONS=0
	data=$(uci -q export "$1") || return 1
	eval "$data"
}
package() { :; }
config() {
	CONFIG_NUM_SECTIONS=$((CONFIG_NUM_SECTIONS + 1))
	CONFIG_SECTION=${2:-cfg$CONFIG_NUM_SECTIONS}
	append CONFIG_SECTIONS "$CONFIG_SECTION"
	eval "CONFIG_${CONFIG_SECTION}_TYPE=\$1"
}
option() { eval "CONFIG_${CONFIG_SECTION}_$1=\$2"; }
list() { eval "append CONFIG_${CONFIG_SECTION}_$1 \"\$2\""; }

config_get() { # VAR SECTION OPTION [DEFAULT]
	eval "$1=\${CONFIG_$2_$3:-\$4}"
}
config_get_bool() { # VAR SECTION OPTION [DEFAULT]
	local _v
	eval "_v=\${CONFIG_$2_$3:-\$4}"
	case "$_v" in
	1 | on | true | yes | enabled) _v=1 ;;
	0 | off | false | no | disabled) _v=0 ;;
	*) _v= ;;
	esac
	eval "$1=\$_v"
}
config_foreach() { # FUNCTION [TYPE] [ARGS...]
	local f="$1" t="$2" s st
	shift
	[ $# -gt 0 ] && shift
	for s in $CONFIG_SECTIONS; do
		eval "st=\$CONFIG_${s}_TYPE"
		[ -z "$t" ] || [ "$st" = "$t" ] || continue
		"$f" "$s" "$@"
	done
}
