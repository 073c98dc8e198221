#!/usr/bin/env bash
# A peer known by name, keys saved by a slow or failing `uci`, and the secrets, on OpenWrt's
# own daemons (lib.sh: procd, netifd, the C ubusd with the package's ACL, logd, uci). The
# router's wg0 reaches peer b (wireguard-go in a peer namespace) as peer-b.test, beyond the
# WAN gateway. Checked:
# - DNS (a real dnsmasq in the peer namespace, the router's resolv.conf pointing at it) is
#   down at boot: wg0 comes up all the same; once dnsmasq runs, the name is resolved, the
#   tunnel carries pings, and the daemon's notify_proto has netifd add the endpoint's host
#   route; later b moves to a new address (its name follows, b cannot reach the router first,
#   as behind NAT): the daemon resolves the name again once its handshakes stall (180 s),
#   reaches b there, netifd gets the new host route, and a solowg.stale event was sent.
# - a keyless interface added while `uci batch` (how `solowg export` saves a generated key)
#   takes 3 s: no ping over wg0 lost or slower than 500 ms, uci run by root's export and not
#   by the daemon, the key on neither uci's command line nor its environment, the key saved
#   and served; with `uci batch` failing (a full overlay) the interface comes up on a key
#   kept in memory, logged, and kept across netifd's renew.
# - no private key in the log, ubus replies and events, `solowg show`, or any command line
#   of the router's processes (sampled while interfaces are set up); the search itself
#   finds the key in `uci show network`, where it belongs.
#   usage: tests/openwrt-real/ddns.sh
#   env:   SOLOWG_BIN, HANDLER, INIT, ACL (as netifd.sh), OW_KEEP=1,
#          OW_SKIP_MOVE=1 leaves out the move (it waits out the 180 s stall; says so)
# shellcheck disable=SC2016 # checks given to eval run in this shell, which expands them
set -euo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/openwrt-real/lib.sh
. "$here/lib.sh"

ow_setup
for t in dnsmasq nft; do command -v "$t" >/dev/null || ow_die "missing tool: $t"; done
start_s=$SECONDS
ow_wan_pair
# b's address beyond the gateway: netifd makes a host route only for such an address.
OLD_B=10.99.0.12 NEW_B=10.99.0.22
ip -n "$NP" addr add "$OLD_B/32" dev pwan
ip -n "$NP" link set pwan up

KEY0=$(wg genkey)
PUB0=$(wg pubkey <<<"$KEY0")
KEYB=$(wg genkey)
PUBB=$(wg pubkey <<<"$KEYB")
WGB=wgp${OW_ID}b

ow_root r
d=$OW_TMP/r/root
cat >"$d/etc/config/network" <<CFG
$(ow_network_head)

config interface 'wg0'
	option proto 'solowg'
	option private_key '$KEY0'
	option listen_port '51820'
	list addresses '10.232.0.1/24'

config solowg_wg0 'peerb'
	option description "b's side"
	option public_key '$PUBB'
	list allowed_ips '10.232.0.2/32'
	option endpoint_host 'peer-b.test'
	option endpoint_port '51821'
CFG
echo "nameserver 10.231.0.2" >"$d/etc/resolv.conf"
# The shared socket directory as a router has it before solowg (other WireGuard programs
# use it too): the daemon must leave it as it is.
mkdir -p "$d/var/run/wireguard"
chmod 755 "$d/var/run/wireguard"
shared_before="$(stat -c '%u:%g %a' "$d/var/run/wireguard") $(stat -c '%u:%g %a' /dev/net/tun)"
# `uci batch` (how `solowg export` saves a generated key) slowed by 3 s while /tmp/uci-slow
# exists, failing while /tmp/uci-fail exists (a full overlay); each such run's PID recorded.
# Every other uci command (netifd's scripts, reload_config, this test) is the real one at once.
rm -f "$OW_TMP/r/usr-up/bin/uci"
# shellcheck disable=SC2016 # the router's shell expands them
printf '#!/bin/sh\ncase " $* " in *" batch "*)\n\tif [ -e /tmp/uci-fail ] || [ -e /tmp/uci-slow ]; then\n\t\techo "$$" >>/tmp/uci-batch.pids\n\t\t[ -e /tmp/uci-fail ] && exit 1\n\t\tsleep 3\n\tfi ;;\nesac\nexec %s "$@"\n' \
	"$OW_PREFIX/bin/uci" >"$OW_TMP/r/usr-up/bin/uci"
chmod 755 "$OW_TMP/r/usr-up/bin/uci"

r() { ow_in r "$@"; }
up() { r ubus call "network.interface.$1" status 2>/dev/null | jq -e '.up == true' >/dev/null; }
ping1() { r ping -n -q -c 1 -W 1 "$@" >/dev/null 2>&1; }
ping_b() { ping1 -I wg0 10.232.0.2; }
not() { ! "$@"; }
status() { r ubus -t 10 call solowg status 2>/dev/null; }
endpoint_b() { status | jq -r ".interfaces[] | select(.name==\"wg0\") | .peers[] | select(.public_key==\"$PUBB\") | .endpoint // \"\""; }
daemon_pid() { r ubus call service list '{"name":"solowg"}' 2>/dev/null | jq -er '.solowg.instances.instance1.pid // empty'; }
daemon_pub() { r solowg show "$1" public-key 2>/dev/null; }
log_tail() { r logread | tail -n 25 | sed 's/^/    | /'; }
check() {
	local n=$1 why=$2
	shift 2
	if "$@"; then ow_pass "$n"; else ow_fail "$n" "$why" && log_tail; fi
}

# b: wireguard-go without an endpoint (it waits to be contacted).
ip netns exec "$NP" timeout "$OW_MAX_S" wireguard-go -f "$WGB" >>"$OW_TMP/wireguard-go-b.log" 2>&1 &
OW_BG+=("$!")
ow_wait 5 test -S "/var/run/wireguard/$WGB.sock" || ow_die "wireguard-go $WGB did not start"
ip netns exec "$NP" wg set "$WGB" private-key <(echo "$KEYB") listen-port 51821 peer "$PUB0" allowed-ips 10.232.0.1/32
ip -n "$NP" addr add 10.232.0.2/24 dev "$WGB"
ip -n "$NP" link set "$WGB" up

t0=$SECONDS
ow_boot r "$NR"
# Everything the router's processes run with, sampled every 50 ms until the test ends.
# shellcheck disable=SC2016 # the router's shell expands them
r sh -c 'i=0; while [ $i -lt 20000 ]; do for f in /proc/[0-9]*/cmdline; do tr "\0" " " <"$f"; echo; done 2>/dev/null; i=$((i + 1)); sleep 0.05; done' \
	>"$OW_TMP/cmdlines.txt" 2>/dev/null &
OW_BG+=("$!")
r ubus listen >"$OW_TMP/events.txt" 2>&1 &
OW_BG+=("$!")

# --- DNS down at boot
check dns.down-interface-up "wg0 not up within 20 s of boot without DNS" ow_wait 20 up wg0
echo "# boot to wg0 up (name unresolved): $((SECONDS - t0)) s"
check dns.down-no-endpoint "b's endpoint is '$(endpoint_b)' with no DNS, or b answered" \
	eval '[[ -z $(endpoint_b) ]] && not ping_b'
dns_start() { # ADDRESS: dnsmasq answering peer-b.test with ADDRESS
	ip netns exec "$NP" timeout "$OW_MAX_S" dnsmasq -k -u root --no-resolv --no-hosts --bind-interfaces \
		--listen-address=10.231.0.2 --address="/peer-b.test/$1" --pid-file= \
		>>"$OW_TMP/dnsmasq.log" 2>&1 &
	DNS_PID=$!
	OW_BG+=("$DNS_PID")
}
t0=$SECONDS
dns_start "$OLD_B"
check dns.resolved-later "no ping over wg0 within 30 s of DNS coming up" ow_wait 30 ping_b
echo "# DNS up to b answering: $((SECONDS - t0)) s"
host_route() { r ip route show "$1" | grep -q "via 10.231.0.2 dev rwan"; }
check dns.host-route "netifd has no host route to $OLD_B (the daemon's notify_proto): $(r ip route | tr '\n' ';')" \
	ow_wait 5 host_route "$OLD_B"
check dns.endpoint "b's endpoint is '$(endpoint_b)', not $OLD_B:51821" test "$(endpoint_b)" = "$OLD_B:51821"

# What the daemon tells root (ubus, `solowg show`) and ubus listeners about the peer.
status_ok() {
	status | jq -e ".interfaces[0].name == \"wg0\" and .interfaces[0].public_key == \"$PUB0\"
		and .interfaces[0].listen_port == 51820
		and (.interfaces[0].peers[0] | .description == \"b's side\" and .latest_handshake > 0
			and .endpoint == \"$OLD_B:51821\" and .endpoint_host == \"peer-b.test\"
			and .rx_bytes > 0 and .preshared_key == false and .allowed_ips == [\"10.232.0.2/32\"])
		and (.interfaces[0].drops | type == \"object\")" >/dev/null
}
check status.peer "solowg status: $(status | jq -c '.interfaces[0].peers[0]')" status_ok
show_ok() {
	r solowg show wg0 >"$OW_TMP/show-wg0.txt" 2>&1 && grep -q "^peer: $PUBB" "$OW_TMP/show-wg0.txt" &&
		grep -q "latest handshake: " "$OW_TMP/show-wg0.txt" && grep -q "private key: (hidden)" "$OW_TMP/show-wg0.txt"
}
check status.solowg-show "solowg show wg0: $(cat "$OW_TMP/show-wg0.txt" 2>/dev/null)" show_ok
check status.handshake-event "no solowg.handshake event" ow_wait 5 grep -q '"solowg.handshake"' "$OW_TMP/events.txt"
# Keys for LuCI without wireguard-tools; unknown arguments (uhttpd's session) are ignored.
keys_ok() {
	local g p
	g=$(r ubus call solowg genkey '{"ubus_rpc_session":"x"}') || return 1
	p=$(r ubus call solowg pubkey "{\"private_key\":\"$(jq -r .private_key <<<"$g")\",\"ubus_rpc_session\":\"x\"}") || return 1
	[[ $(jq -r .public_key <<<"$p") == "$(jq -r .private_key <<<"$g" | wg pubkey)" ]] &&
		[[ $(jq -r .public_key <<<"$g") == "$(jq -r .public_key <<<"$p")" ]] &&
		[[ $(r ubus call solowg genpsk | jq -r .preshared_key | base64 -d | wc -c) -eq 32 ]]
}
check ubus.genkey-pubkey-genpsk "genkey, pubkey or genpsk wrong" keys_ok

# A peer section with a bad key (Save & Apply): netifd shows it skipped, by section and
# option; the rest runs on.
apply() { r sh -c "$1 && uci commit network && reload_config"; }
apply "uci set network.peerx=solowg_wg0 && uci set network.peerx.public_key=not-a-key"
skipped() {
	r ubus call network.interface.wg0 status | jq -e '[.errors[]? | select(.code == "PEER_SKIPPED") | .data[]? | select(test("peerx.*public_key"))] | length > 0' >/dev/null
}
check bad-peer.skipped-shown "netifd shows no PEER_SKIPPED naming peerx's public_key: $(r ubus call network.interface.wg0 status | jq -c .errors)" \
	ow_wait 10 skipped
check bad-peer.rest-runs "wg0 down or b not answering with the bad section" eval 'up wg0 && ping_b'
apply "uci delete network.peerx"

# MTU (Save & Apply): shrunk, grown past the default (b's link too), removed; packets of
# each size pass whole with don't-fragment set.
mtu_of() { r cat /sys/class/net/wg0/mtu 2>/dev/null; }
df_ping() { r ping -n -q -c 1 -W 2 -M 'do' -s "$1" -I wg0 10.232.0.2 >/dev/null 2>&1; }
mtu_is() { [[ $(mtu_of) == "$1" ]] && ow_wait 10 df_ping $(($1 - 28)) && not df_ping $(($1 - 27)); }
apply "uci set network.wg0.mtu=1380"
check mtu.shrunk "wg0's MTU $(mtu_of), not 1380 with 1352-byte pings passing whole" ow_wait 20 mtu_is 1380
ip -n "$NP" link set "$WGB" mtu 1440
apply "uci set network.wg0.mtu=1440"
mtu_grown() { [[ $(mtu_of) == 1440 ]] && ow_wait 10 df_ping 1412; }
check mtu.grown "wg0's MTU $(mtu_of), not 1440 with 1412-byte pings passing whole" ow_wait 20 mtu_grown
apply "uci delete network.wg0.mtu"
check mtu.default-back "wg0's MTU $(mtu_of), not the default 1420" ow_wait 20 mtu_is 1420
ip -n "$NP" link set "$WGB" mtu 1420

# --- the daemon's privileges, and what it leaves as it found it
pid=$(daemon_pid || true)
st=$(r cat "/proc/$pid/status" 2>/dev/null || true)
has() { grep -qx "$1" <<<"$st"; }
check daemon.own-user "not uid/gid/groups 820: $(grep -E '^(Uid|Gid|Groups)' <<<"$st" | tr '\n\t' '  ')" \
	eval 'grep -qE "^Uid:\s+820\s+820\s+820\s+820$" <<<"$st" && grep -qE "^Gid:\s+820\s+820\s+820\s+820$" <<<"$st" && grep -qE "^Groups:\s*(820)?\s*$" <<<"$st"'
check daemon.caps-0x1400 "capabilities: $(grep -E '^Cap' <<<"$st" | tr '\n\t' '  ')" \
	eval 'has "CapEff:.0000000000001400" && has "CapPrm:.0000000000001400" && has "CapBnd:.0000000000001400" && has "CapInh:.0000000000000000" && has "CapAmb:.0000000000000000"'
check daemon.nnp-seccomp "NoNewPrivs/Seccomp not 1/2" eval 'has "NoNewPrivs:.1" && has "Seccomp:.2"'
check daemon.not-dumpable "the daemon's /proc files are not root's" test "$(r stat -c %u "/proc/$pid/environ")" = 0
shared_now() { echo "$(stat -c '%u:%g %a' "$d/var/run/wireguard") $(stat -c '%u:%g %a' /dev/net/tun)"; }
check daemon.shared-dir-and-tun-kept "socket directory and /dev/net/tun were '$shared_before', now '$(shared_now)'" \
	test "$(shared_now)" = "$shared_before"
echo "# daemon: $(grep -E '^(Uid|CapEff|CapBnd|NoNewPrivs|Seccomp):' <<<"$st" | tr -s '\n\t' '  ')"

# --- a keyless interface while `uci batch` takes 3 s; pings over wg0 every 0.1 s meanwhile
r touch /tmp/uci-slow
r sh -c ': >/tmp/uci-batch.pids'
r ping -n -i 0.1 -c 60 -W 1 -I wg0 10.232.0.2 >"$OW_TMP/ping-uci.txt" 2>&1 &
ping_pid=$!
OW_BG+=("$ping_pid")
sleep 1
apply "uci set network.wg3=interface && uci set network.wg3.proto=solowg &&
	uci set network.wg3.listen_port=51823 && uci add_list network.wg3.addresses=10.235.0.1/24"
uci_pid=
uci_started() { uci_pid=$(r head -n 1 /tmp/uci-batch.pids 2>/dev/null) && [[ -n $uci_pid ]]; }
# While it sleeps: who runs it, with what.
uci_seen() {
	ow_wait 10 uci_started || return 1
	UCI_CMD=$(r cat "/proc/$uci_pid/cmdline" | tr '\0' ' ')
	UCI_ENV=$(r cat "/proc/$uci_pid/environ" | tr '\0' '\n')
	UCI_ANCESTORS=
	local p=$uci_pid i
	UCI_PARENT=$(r cat "/proc/$(r cat "/proc/$uci_pid/stat" | awk '{print $4}')/cmdline" | tr '\0' ' ')
	for ((i = 0; i < 20; i++)); do
		p=$(r cat "/proc/$p/stat" 2>/dev/null | awk '{print $4}') || break
		[[ -n $p && $p != 0 ]] || break
		UCI_ANCESTORS+="$p:$(r cat "/proc/$p/comm" 2>/dev/null) "
	done
	[[ $UCI_CMD == *batch* ]]
}
check uci.slow-batch-run "no slow uci batch seen within 10 s of adding wg3" uci_seen
dpid=$(daemon_pid || true)
check uci.run-by-export-not-daemon "uci's parent: '$UCI_PARENT', its ancestors: $UCI_ANCESTORS (daemon $dpid)" \
	eval '[[ $UCI_PARENT == *"solowg export"* && " $UCI_ANCESTORS" != *" $dpid:"* ]]'
echo "# slow uci's ancestors: $UCI_ANCESTORS"
check uci.wg3-up "wg3 not up within 20 s" ow_wait 20 up wg3
wait "$ping_pid" || true
r rm -f /tmp/uci-slow
K3=$(r uci -q get network.wg3.private_key || true)
check uci.key-saved "no key saved for wg3" test "${#K3}" = 44
check uci.key-served "wg3 served with $(daemon_pub wg3), the saved key's is $(wg pubkey <<<"$K3" 2>/dev/null)" \
	test "$(daemon_pub wg3)" = "$(wg pubkey <<<"$K3" 2>/dev/null)"
hex() { base64 -d <<<"$1" | od -An -tx1 | tr -d ' \n'; }
uci_hides_key() { [[ -n $UCI_CMD && ${#K3} == 44 ]] && ! grep -qiF -e "$K3" -e "$(hex "$K3")" <<<"$UCI_CMD$UCI_ENV"; }
check uci.key-not-in-argv-or-env "wg3's key on uci's command line or in its environment" uci_hides_key
sent=$(awk '/packets transmitted/ { print $1 }' "$OW_TMP/ping-uci.txt")
recv=$(awk '/packets transmitted/ { print $4 }' "$OW_TMP/ping-uci.txt")
max=$(awk -F'/' '/^rtt/ { print $6 }' "$OW_TMP/ping-uci.txt")
echo "# pings over wg0 during the slow uci: $recv of $sent answered, max ${max:-?} ms"
check uci.tunnel-not-stalled "pings during the slow uci: $recv of $sent, max ${max:-?} ms" \
	eval '[[ $sent == 60 && $recv == 60 && -n $max ]] && awk -v m="$max" "BEGIN { exit !(m < 500) }"'

# --- `uci batch` failing: the interface comes up on a key kept in memory, kept across renew
r touch /tmp/uci-fail
apply "uci set network.wg4=interface && uci set network.wg4.proto=solowg &&
	uci set network.wg4.listen_port=51824 && uci add_list network.wg4.addresses=10.236.0.1/24"
check uci-fail.up "wg4 not up within 20 s with uci batch failing" ow_wait 20 up wg4
unsaved_logged() { r logread | grep -q "wg4: no private key saved; using a new one"; }
check uci-fail.logged "the unsaved key is not in the log" ow_wait 5 unsaved_logged
P4=$(daemon_pub wg4 || true)
# Each export (the renew's too) logs the failed save again: uci's exit status, or the pipe
# it closed before reading the key.
failed_saves() { r logread | grep -c "solowg export: wg4: .*keeps a key in memory" || true; }
saves0=$(failed_saves)
r ubus call network.interface.wg4 renew
renewed() { (($(failed_saves) > saves0)); }
check uci-fail.renew-ran "no export logged within 10 s of netifd's renew of wg4" ow_wait 10 renewed
check uci-fail.key-kept-across-renew "wg4's public key was '$P4', after renew '$(daemon_pub wg4)'" \
	eval '[[ ${#P4} == 44 && $(daemon_pub wg4) == "$P4" ]] && up wg4'
check uci-fail.nothing-saved "a key was saved for wg4 although uci failed" not r uci -q get network.wg4.private_key
r rm -f /tmp/uci-fail

# --- secrets: no private key where any user or log reader looks
r logread >"$OW_TMP/logread.txt"
status >"$OW_TMP/status.json"
r ubus call network.interface dump >"$OW_TMP/netifd-dump.json"
r solowg show >"$OW_TMP/show.txt" 2>&1 || true
leaks() { # FILE...: the files holding a known private key (base64 or hex)
	local k
	for k in "$KEY0" "$K3"; do
		grep -lF -e "$k" "$@" || true
		grep -liF -e "$(hex "$k")" "$@" || true
	done
}
surfaces=("$OW_TMP/logread.txt" "$OW_TMP/status.json" "$OW_TMP/netifd-dump.json" "$OW_TMP/show.txt"
	"$OW_TMP/events.txt" "$OW_TMP/cmdlines.txt" "$OW_TMP/r/procd.log" "$OW_TMP/r/boot.log")
found=$(leaks "${surfaces[@]}" | sort -u | tr '\n' ' ')
ncmd=$(grep -c . "$OW_TMP/cmdlines.txt" || true)
check secrets.nowhere "a private key in: $found" test -z "$found"
echo "# secrets: searched ${#surfaces[@]} surfaces, $ncmd sampled command lines"
r uci show network >"$OW_TMP/control.txt"
check secrets.search-finds-uci "the search does not find the keys in uci show network" \
	eval '[[ $(leaks "$OW_TMP/control.txt" | wc -l) -ge 2 ]]'

# --- b moves: its name follows; the router resolves it again once its handshakes stall
if [[ -n ${OW_SKIP_MOVE:-} ]]; then
	echo "# SKIP the move (OW_SKIP_MOVE): its checks did not run"
else
	# b cannot start a flow to the router (as behind NAT): only the router's resolving
	# again can reach it, not b's roaming.
	ip netns exec "$NP" nft -f - <<NFT
table inet solowg_test_nat {
	chain out {
		type filter hook output priority 0; policy accept;
		ip daddr 10.231.0.1 udp dport 51820 ct state new drop
	}
}
NFT
	ip -n "$NP" addr add "$NEW_B/32" dev pwan
	ip -n "$NP" addr del "$OLD_B/32" dev pwan
	kill "$DNS_PID" 2>/dev/null || true
	wait "$DNS_PID" 2>/dev/null || true
	dns_start "$NEW_B"
	echo "# b moved to $NEW_B; waiting up to 260 s for the router's handshakes to stall"
	t0=$SECONDS
	followed() { ping_b && [[ $(endpoint_b) == "$NEW_B:51821" ]]; }
	check move.followed "b not reached at $NEW_B within 260 s (endpoint '$(endpoint_b)')" ow_wait 260 followed
	echo "# moved to answering at the new address: $((SECONDS - t0)) s"
	check move.host-route "no host route to $NEW_B: $(r ip route | tr '\n' ';')" ow_wait 5 host_route "$NEW_B"
	check move.stale-event "no solowg.stale event during the stall" grep -q '"solowg.stale"' "$OW_TMP/events.txt"
fi

echo "# scenarios: $((SECONDS - start_s)) s"
ow_summary
