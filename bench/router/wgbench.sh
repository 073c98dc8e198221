#!/bin/bash
# In the guest: a WireGuard tunnel between two network namespaces joined by a veth pair, both
# ends on this one CPU, and iperf3 through it (as the OpenWrt community's two-namespace
# benchmark does it on a router): the kernel-only anchor "wg-bench" of anchors.tsv.
#   wgbench.sh setup | run SECONDS | teardown
set -u
case ${1:-} in
setup)
	ip netns add wba && ip netns add wbb || exit 1
	ip link add wbva netns wba type veth peer name wbvb netns wbb || exit 1
	ip -n wba addr add 10.97.0.1/24 dev wbva && ip -n wbb addr add 10.97.0.2/24 dev wbvb
	ip -n wba link set wbva up && ip -n wbb link set wbvb up
	ip -n wba link set lo up && ip -n wbb link set lo up
	ka=$(wg genkey) && kb=$(wg genkey) || exit 1
	for s in a b; do ip -n wb$s link add wg$s type wireguard || exit 1; done
	printf '%s\n' "$ka" >/run/wba.key && printf '%s\n' "$kb" >/run/wbb.key
	ip netns exec wba wg set wga private-key /run/wba.key listen-port 51820 \
		peer "$(wg pubkey <<<"$kb")" allowed-ips 10.98.0.2/32 endpoint 10.97.0.2:51820 || exit 1
	ip netns exec wbb wg set wgb private-key /run/wbb.key listen-port 51820 \
		peer "$(wg pubkey <<<"$ka")" allowed-ips 10.98.0.1/32 endpoint 10.97.0.1:51820 || exit 1
	ip -n wba addr add 10.98.0.1/24 dev wga && ip -n wbb addr add 10.98.0.2/24 dev wgb
	ip -n wba link set wga mtu 1420 up && ip -n wbb link set wgb mtu 1420 up
	ip netns exec wbb iperf3 -s -D -B 10.98.0.2 -p 5298 || exit 1
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		ip netns exec wba ping -c1 -W1 -q 10.98.0.2 >/dev/null && exit 0
	done
	exit 1
	;;
run) ip netns exec wba timeout $(($2 + 30)) iperf3 -c 10.98.0.2 -p 5298 -t "$2" -J ;;
teardown)
	ip netns pids wbb 2>/dev/null | xargs -r kill
	ip netns del wba 2>/dev/null
	ip netns del wbb 2>/dev/null
	rm -f /run/wba.key /run/wbb.key
	;;
*) exit 2 ;;
esac
