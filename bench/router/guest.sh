#!/bin/bash
# The guest half of bench/router, run by the guest's init from the job disk. Brings up the
# WAN NIC (to the host peer) and the LAN NIC (to the LAN host), loads the kernel's
# WireGuard and TUN, then serves the host's commands on the second serial port until it
# says `exit`: each request is a line `@@Q <base64 of a bash command>`, each answer the
# command's output followed by `@@R <exit status>`. Nothing runs in between, so the guest
# is idle (and executes no instructions) except for what a measurement starts.
set -u
cd "$(dirname -- "$0")" || exit 2
# shellcheck source=/dev/null
. ./job.env

by_mac() {
	local n
	for n in /sys/class/net/*; do
		[[ $(cat "$n/address" 2>/dev/null) == "$1" ]] && {
			printf '%s\n' "${n##*/}"
			return 0
		}
	done
	return 1
}
modprobe virtio_net 2>/dev/null
for ((i = 0; i < 100; i++)); do
	by_mac "$WAN_MAC" >/dev/null && by_mac "$LAN_MAC" >/dev/null && break
	sleep 0.2
done
wan=$(by_mac "$WAN_MAC") || { echo "no WAN NIC"; exit 1; }
lan=$(by_mac "$LAN_MAC") || { echo "no LAN NIC"; exit 1; }
ip link set "$wan" name wan && wan=wan
ip link set "$lan" name lan && lan=lan
ip addr add "$GUEST_WAN4/24" dev wan
ip addr add "$GUEST_LAN4/24" dev lan
ip link set wan up
ip link set lan up
sysctl -qw net.ipv4.ip_forward=1
modprobe wireguard
modprobe tun
printf '%s\n' "$GUEST_KEY" >/run/wg.key
chmod 0600 /run/wg.key
echo "# guest ready: $(uname -r), wan=$wan lan=$lan, crypto: $(lsmod | awk '$1 ~ /chacha|poly1305/ { printf "%s ", $1 }')"

ctl=/dev/ttyS1
stty -F "$ctl" raw -echo -icrnl -onlcr 2>/dev/null
exec 3<>"$ctl"
printf '@@READY\n' >&3
while IFS= read -r -u 3 line; do
	line=${line%$'\r'}
	[[ $line == '@@Q '* ]] || continue
	cmd=$(printf '%s' "${line#@@Q }" | base64 -d 2>/dev/null) || cmd=false
	[[ $cmd == exit ]] && { printf '@@R 0\n' >&3; break; }
	bash -c "$cmd" </dev/null >&3 2>&1
	printf '@@R %s\n' "$?" >&3
done
exit 0
