# shellcheck shell=sh
# STAND-IN for netifd's handler library (/lib/netifd/netifd-proto.sh), written for the
# tests: netifd itself is not available here. Every helper a protocol handler calls is
# recorded as one line "helper arg..." in $NETIFD_LOG instead of being sent to netifd, so
# a test can check what the handler announced and apply it itself. The JSON tool the
# handler uses (jshn) is the real one, built from libubox's sources.

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
