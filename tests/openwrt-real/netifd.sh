#!/usr/bin/env bash
# The package on OpenWrt's own daemons: a router (lib.sh: procd, netifd, the C ubusd with
# the package's ACL, logd, uci) boots with two 'proto solowg' interfaces, one without a key,
# through the package's handler (files/solowg.sh), init script (files/solowg.init) and the
# release solowg, which runs as the user solowg. A peer namespace runs wireguard-go. Checked:
# boot to both tunnels, the missing key generated and saved once although netifd sets both
# interfaces up in parallel, the daemon's privileges, `/etc/init.d/solowg restart`, kill -9
# and procd's respawn, `ubus call network reload`, Save & Apply (`uci commit` and
# `reload_config`) adding a peer without a lost ping, `ifdown`/`ifup`, and an interface of
# kernel WireGuard's schema switched to `proto solowg` and back.
#   usage: tests/openwrt-real/netifd.sh
#   env:   SOLOWG_BIN (default target/release/solowg), HANDLER, INIT, ACL (other files to
#          install instead of the package's), OW_KEEP=1 keeps the scratch directory
set -euo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/openwrt-real/lib.sh
. "$here/lib.sh"

ow_setup
start_s=$SECONDS
ow_wan_pair
# wg1's peer by name (the router's /etc/hosts), at an address beyond the WAN gateway: the
# daemon resolves it and asks netifd itself for the endpoint's host route (notify_proto,
# which the ACL grants; netifd makes none for an address on a connected subnet).
ip -n "$NP" addr add 10.99.0.12/32 dev pwan
ip -n "$NP" link set pwan up

# The peer side: wireguard-go interfaces (names unique to this run: their UAPI sockets are in
# the host's /var/run/wireguard). a: wg0's peer; b: wg1's; c: a peer added to wg0 later;
# d: the peer of the kernel-WireGuard interface.
declare -A KEY PUB WGP PORT IN4
keygen() { KEY[$1]=$(wg genkey) && PUB[$1]=$(wg pubkey <<<"${KEY[$1]}"); }
for k in wg0 a b c d; do keygen "$k"; done
for p in a b c d; do WGP[$p]=wgp$OW_ID$p; done
PORT=([a]=51821 [b]=51823 [c]=51824 [d]=51825)
IN4=([a]=10.232.0.2 [b]=10.233.0.2 [c]=10.232.0.3 [d]=10.234.0.2)
declare -A TABLE=([a]=101 [b]=102 [c]=103 [d]=104)
wgp_up() { # PEER ROUTER_PUBKEY ROUTER_PORT ROUTER_TUNNEL_ADDR
	local p=$1 dev=${WGP[$1]}
	ip netns exec "$NP" timeout "$OW_MAX_S" wireguard-go -f "$dev" >>"$OW_TMP/wireguard-go-$p.log" 2>&1 &
	OW_BG+=("$!")
	ow_wait 5 test -S "/var/run/wireguard/$dev.sock" || ow_die "wireguard-go $dev did not start"
	ip netns exec "$NP" wg set "$dev" private-key <(echo "${KEY[$p]}") listen-port "${PORT[$p]}" \
		peer "$2" endpoint "10.231.0.1:$3" allowed-ips "$4/32"
	# c shares a's subnet and router address: each peer answers from its own table.
	ip -n "$NP" addr add "${IN4[$p]}/32" dev "$dev"
	ip -n "$NP" link set "$dev" up
	ip -n "$NP" route add "$4/32" dev "$dev" table "${TABLE[$p]}"
	ip -n "$NP" rule add from "${IN4[$p]}" table "${TABLE[$p]}"
}

# The router's /etc/config/network: wan on the veth, wg0 with a key, wg1 without one.
ow_root r
cat >"$OW_TMP/r/root/etc/config/network" <<CFG
$(ow_network_head)

config interface 'wg0'
	option proto 'solowg'
	option private_key '${KEY[wg0]}'
	option listen_port '51820'
	list addresses '10.232.0.1/24'

config solowg_wg0
	option description 'peer a'
	option public_key '${PUB[a]}'
	list allowed_ips '${IN4[a]}/32'
	option endpoint_host '10.231.0.2'
	option endpoint_port '${PORT[a]}'

config interface 'wg1'
	option proto 'solowg'
	option listen_port '51822'
	list addresses '10.233.0.1/24'

config solowg_wg1
	option public_key '${PUB[b]}'
	list allowed_ips '${IN4[b]}/32'
	option endpoint_host 'peer-b.test'
	option endpoint_port '${PORT[b]}'
CFG
echo "10.99.0.12 peer-b.test" >>"$OW_TMP/r/root/etc/hosts"

r() { ow_in r "$@"; }
up() { r ubus call "network.interface.$1" status 2>/dev/null | jq -e '.up == true' >/dev/null; }
down() { r ubus call "network.interface.$1" status 2>/dev/null | jq -e '.up == false' >/dev/null; }
link_gone() { ! ip -n "$NR" link show dev "$1" >/dev/null 2>&1; }
# ping over the tunnel from the router (which then starts a handshake itself, as a client
# would) to a peer's tunnel address.
ping1() { r ping -n -q -c 1 -W 1 "$@" >/dev/null 2>&1; }
ping_a() { ping1 -I wg0 "${IN4[a]}"; }
ping_b() { ping1 -I wg1 "${IN4[b]}"; }
ping_c() { ping1 -I wg0 "${IN4[c]}"; }
ping_d() { ping1 -I wg2 "${IN4[d]}"; }
not() { ! "$@"; }
daemon_pid() { r ubus call service list '{"name":"solowg"}' 2>/dev/null | jq -er '.solowg.instances.instance1.pid // empty'; }
# The public key the daemon serves an interface with.
daemon_pub() { r solowg show "$1" public-key 2>/dev/null; }
generated() { r logread | grep -c "solowg export: $1: generated a private key" || true; }
log_tail() { r logread | tail -n 25 | sed 's/^/    | /'; }
fail_ctx() { ow_fail "$@"; log_tail; }
# check NAME WHY CMD...: as ow_check, with the end of the router's log on failure.
check() {
	local n=$1 why=$2
	shift 2
	if "$@"; then ow_pass "$n"; else fail_ctx "$n" "$why"; fi
}

t0=$SECONDS
ow_boot r "$NR"
check boot.both-up "wg0 and wg1 not both up within 20 s of boot" ow_wait 20 eval 'up wg0 && up wg1'
echo "# boot to both tunnels: $((SECONDS - t0)) s"
[[ $OW_FAIL == 0 ]] || ow_die "the router did not come up; later checks would only repeat it"

# What netifd learnt from the handler's init_config: the options it declares (what LuCI and
# netifd's change detection see; no private_key: netifd puts the declared options on every
# handler run's command line, readable by any user) and its flags.
handler=$(r ubus call network get_proto_handlers | jq -S -c '.solowg')
want='{"force_link_default":false,"immediate":false,"init_available":true,"last_error":false,"no_device":true,"no_task":true,"renew_available":true,"teardown_on_l3_link_down":true,"validate":{"addresses":"list(string)","fwmark":"string","ip6prefix":"list(string)","listen_port":"uinteger","mtu":"uinteger","nohostroute":"bool","tunlink":"string"}}'
check handler.declared "netifd sees the handler as $handler, not $want" test "$handler" = "$want"

# The key netifd's parallel setups (wg0 and wg1 together at boot) generated for wg1.
K1=$(r uci -q get network.wg1.private_key || true)
check key.saved "no private_key saved for the keyless wg1" test -n "$K1"
check key.generated-once "wg1's key was generated $(generated wg1) times (parallel setups must make one)" \
	test "$(generated wg1)" = 1
P1=$(wg pubkey <<<"$K1" 2>/dev/null || true)
check key.daemon-uses-saved "the daemon serves wg1 with $(daemon_pub wg1), the saved key's public key is $P1" \
	test "$(daemon_pub wg1)" = "$P1"
check key.configured-kept "wg0's configured key not served as configured" test "$(daemon_pub wg0)" = "$(wg pubkey <<<"${KEY[wg0]}")"

wgp_up a "$(wg pubkey <<<"${KEY[wg0]}")" 51820 10.232.0.1
wgp_up b "$P1" 51822 10.233.0.1
check ping.wg0 "no ping over wg0 within 10 s" ow_wait 10 ping_a
check ping.wg1 "no ping over wg1 (generated key) within 10 s" ow_wait 10 ping_b
host_route_b() { r ip route show 10.99.0.12 | grep -q "via 10.231.0.2 dev rwan"; }
check dns.host-route "no host route to wg1's endpoint learnt from DNS (the daemon's notify_proto): $(r logread | grep -m1 -e 'host route' -e 'notify_proto')" \
	ow_wait 5 host_route_b

# As the package runs it: procd's child, user solowg (820), CAP_NET_ADMIN and
# CAP_NET_BIND_SERVICE only, no_new_privs, its system-call filter.
pid=$(daemon_pid || true)
st=$(r cat "/proc/$pid/status" 2>/dev/null || true)
check daemon.user "daemon not uid/gid 820: $(grep -E '^(Uid|Gid)' <<<"$st" | tr '\n\t' '  ')" \
	grep -qE '^Uid:\s+820\s+820\s+820\s+820$' <<<"$st"
has() { grep -qx "$1" <<<"$st"; }
check daemon.caps "CapEff/CapBnd not 0x1400: $(grep -E '^Cap(Eff|Bnd)' <<<"$st" | tr '\n\t' '  ')" \
	eval 'has "CapEff:.0000000000001400" && has "CapBnd:.0000000000001400"'
check daemon.nnp-seccomp "NoNewPrivs/Seccomp not 1/2" eval 'has "NoNewPrivs:.1" && has "Seccomp:.2"'
check daemon.procd-child "the daemon's parent is not procd" \
	test "$(r cat "/proc/$(r cat "/proc/$pid/stat" | awk '{print $4}')/comm")" = procd

# /etc/init.d/solowg restart: a new daemon, both tunnels back, the generated key kept.
t0=$SECONDS
r /etc/init.d/solowg restart >"$OW_TMP/restart.log" 2>&1 || fail_ctx restart.exit "init script restart failed: $(cat "$OW_TMP/restart.log")"
new_daemon() { local p; p=$(daemon_pid) && [[ -n $p && $p != "$1" ]]; }
check restart.new-daemon "no new daemon after restart" ow_wait 10 new_daemon "$pid"
check restart.both-up "tunnels not back within 20 s of restart" ow_wait 20 eval 'up wg0 && up wg1 && ping_a && ping_b'
echo "# restart to both tunnels answering: $((SECONDS - t0)) s"
check restart.key-kept "wg1's key changed across restart" test "$(r uci -q get network.wg1.private_key)" = "$K1"
check restart.no-new-key "a key was generated again on restart" test "$(generated wg1)" = 1

# kill -9: procd starts the daemon again after its respawn pause (5 s), netifd sets the
# interfaces up again through the handler.
pid=$(daemon_pid || true)
t0=$SECONDS
r kill -9 "$pid"
check kill9.respawn "procd did not start the daemon again within 15 s" ow_wait 15 new_daemon "$pid"
echo "# kill -9 to a new daemon: $((SECONDS - t0)) s"
check kill9.both-up "tunnels not back within 30 s of kill -9" ow_wait 30 eval 'up wg0 && up wg1 && ping_a && ping_b'
echo "# kill -9 to both tunnels answering: $((SECONDS - t0)) s"

# ubus call network reload: nothing changed, nothing goes down.
pid=$(daemon_pid || true)
r ubus call network reload
sleep 2
check netreload.up "a tunnel went down on network reload" eval 'up wg0 && up wg1 && ping_a && ping_b'
check netreload.same-daemon "the daemon changed on network reload" test "$(daemon_pid)" = "$pid"

# Save & Apply: a peer added to wg0 (uci, commit, reload_config) while wg0 carries pings
# every 0.1 s: none may be lost, and the new peer must get through.
r ping -n -i 0.1 -c 60 -W 1 -I wg0 "${IN4[a]}" >"$OW_TMP/ping-apply.txt" 2>&1 &
ping_pid=$!
OW_BG+=("$ping_pid")
sleep 1
r sh -c "s=\$(uci add network solowg_wg0) && uci set network.\$s.public_key='${PUB[c]}' &&
	uci add_list network.\$s.allowed_ips='${IN4[c]}/32' && uci add_list network.\$s.allowed_ips=10.240.0.0/24 &&
	uci set network.\$s.route_allowed_ips=1 && uci set network.\$s.endpoint_host=10.231.0.2 &&
	uci set network.\$s.endpoint_port=${PORT[c]} && uci commit network && reload_config"
wgp_up c "$(wg pubkey <<<"${KEY[wg0]}")" 51820 10.232.0.1
# c also serves 10.240.0.0/24, outside wg0's subnet: reachable only through the route the
# handler announces when netifd renews wg0 (the init script's reload asks for it).
ip -n "$NP" addr add 10.240.0.3/32 dev "${WGP[c]}"
ip -n "$NP" rule add from 10.240.0.3 table "${TABLE[c]}"
check apply.new-peer "the added peer gets no answer within 10 s of reload_config" ow_wait 10 ping_c
route_c() { r ip route show 10.240.0.0/24 | grep -q "dev wg0"; }
check apply.route-announced "no route to the added peer's 10.240.0.0/24 via wg0 within 10 s (renew): $(r ip route)" \
	ow_wait 10 route_c
check apply.route-used "10.240.0.3 not reached through the announced route" ping1 10.240.0.3
wait "$ping_pid" || true
loss=$(sed -n 's/.* \([0-9.]*\)% packet loss.*/\1/p' "$OW_TMP/ping-apply.txt")
check apply.no-ping-lost "pings over wg0 lost during Save & Apply: $(grep -E 'packet loss' "$OW_TMP/ping-apply.txt")" test "$loss" = 0
check apply.same-daemon "the daemon restarted on Save & Apply" test "$(daemon_pid)" = "$pid"

# ifdown/ifup wg0: the TUN goes and comes back, wg1 is not touched.
r ifdown wg0 >/dev/null
check ifdown.down "wg0 still up or its device still there 10 s after ifdown" ow_wait 10 eval 'down wg0 && link_gone wg0'
check ifdown.no-ping "wg0 still answers after ifdown" not ping_a
check ifdown.wg1-kept "wg1 stopped answering after ifdown wg0" ping_b
r ifup wg0 >/dev/null
check ifup.up "wg0 not back within 15 s of ifup" ow_wait 15 eval 'up wg0 && ping_a'

# An interface of kernel WireGuard's schema ('proto wireguard', 'wireguard_<if>' peers)
# switched to 'proto solowg' by its proto alone, and back. This host has no WireGuard
# module and ../shared/openwrt-src has no wireguard-tools (netifd's wireguard.sh): under
# 'proto wireguard' the interface cannot come up here; what is checked is that solowg
# takes it over and gives it back, and leaves its sections as they were.
r sh -c "uci set network.wg2=interface && uci set network.wg2.proto=wireguard &&
	uci set network.wg2.private_key='${KEY[wg0]}' && uci set network.wg2.listen_port=51830 &&
	uci add_list network.wg2.addresses=10.234.0.1/24 && s=\$(uci add network wireguard_wg2) &&
	uci set network.\$s.public_key='${PUB[d]}' && uci add_list network.\$s.allowed_ips='${IN4[d]}/32' &&
	uci set network.\$s.endpoint_host=10.231.0.2 && uci set network.\$s.endpoint_port=${PORT[d]} &&
	uci set network.\$s.route_allowed_ips=1 && uci commit network && reload_config"
sleep 2
before=$(r uci show network)
check kwg.not-up "wg2 under proto wireguard came up without a handler or module" not up wg2
wgp_up d "$(wg pubkey <<<"${KEY[wg0]}")" 51830 10.234.0.1
r sh -c 'uci set network.wg2.proto=solowg && uci commit network && reload_config'
check kwg.to-solowg "wg2 not up and answering within 15 s of proto solowg" ow_wait 15 eval 'up wg2 && ping_d'
as_wireguard=$(r uci show network | sed "s/^network.wg2.proto='solowg'$/network.wg2.proto='wireguard'/")
check kwg.sections-kept "the network config differs from before by more than proto: $(diff <(echo "$before") <(echo "$as_wireguard"))" \
	test "$as_wireguard" = "$before"
r sh -c 'uci set network.wg2.proto=wireguard && uci commit network && reload_config'
check kwg.back "solowg's wg2 device still there 15 s after proto wireguard" ow_wait 15 link_gone wg2
check kwg.others-kept "wg0/wg1 not answering after wg2 went back" eval 'ping_a && ping_b'
after=$(r uci show network)
check kwg.config-back "the network config differs from before: $(diff <(echo "$before") <(echo "$after"))" test "$after" = "$before"

echo "# scenarios: $((SECONDS - start_s)) s"
ow_summary
