#!/bin/bash
# The guest half of run.sh, run by the guest's init from the job disk (with job.env, and
# the mipsel solowg when there is one). Brings up the outer network on the NIC, then, one
# tunnel at a time, the guest side of every tunnel in job.env against its host peer:
#   T_GIMPL  kernel (Linux's wireguard.ko) | solowg (the static mipsel binary shipped here)
#            | wireguard-go (Debian's, in the image)
#   T_INIT   guest: only the guest knows the host's endpoint, so the guest initiates
#            host:  only the host knows the guest's endpoint (outer IPv6); the host's
#                   pinger makes it initiate, and the guest only answers
# Per tunnel: handshake, ping over IPv4 and IPv6, iperf3 both ways when T_IPERF is 1,
# `wg show` (for solowg over its UAPI socket) and `solowg show`. Then, in part b, OpenWrt
# mode (UCI_N1, UCI_N2: see uci_mode). Prints PASS/FAIL/SKIPPED lines for run.sh to count,
# and '# TIME ...' lines for its report.
set -u
cd "$(dirname -- "$0")" || exit 2
# shellcheck source=/dev/null
. ./job.env

PASSED=0
FAILED=0
pass() {
	PASSED=$((PASSED + 1))
	printf 'PASS %s%s\n' "$1" "${2:+ ($2)}"
}
fail() {
	FAILED=$((FAILED + 1))
	printf 'FAIL %s%s\n' "$1" "${2:+ ($2)}"
}
skip() { printf 'SKIPPED %s (%s)\n' "$1" "$2"; }
info() { printf '# %s\n' "$*"; }
indent() { sed 's/^/#     /'; }
now_ms() { date +%s%3N; }

# wait_until SECS CMD...: poll every 0.2 s, bounded by count and clock.
wait_until() {
	local secs=$1 i deadline=$((SECONDS + $1 + 1))
	shift
	for ((i = 0; i < secs * 5; i++)); do
		"$@" && return 0
		((SECONDS < deadline)) || break
		sleep 0.2
	done
	return 1
}

job_t0=$(now_ms)
info "guest: $(uname -srvm)"
info "guest cpu: $(awk -F': *' '/^cpu model/ { print $2; exit }' /proc/cpuinfo)," \
	"BogoMIPS $(awk -F': *' '/^BogoMIPS/ { print $2; exit }' /proc/cpuinfo)," \
	"$(awk '/^MemTotal/ { print int($2 / 1024) " MiB" }' /proc/meminfo)"
info "guest tools: $(wg --version 2>&1 | head -n 1); $(iperf3 --version 2>&1 | head -n 1)"

# ---- outer network ---------------------------------------------------------------------
modprobe virtio_net 2>/dev/null
nic_name() {
	local n
	for n in /sys/class/net/*; do
		n=${n##*/}
		[[ $n == lo ]] && continue
		printf '%s\n' "$n"
		return 0
	done
	return 1
}
nic=
wait_until 20 nic_name >/dev/null && nic=$(nic_name)
if [[ -z $nic ]]; then
	fail guest.nic "no network interface appeared"
	printf '# guest tally: %d passed, %d failed\n' "$PASSED" "$FAILED"
	exit 1
fi
ip addr add "$GUEST4/24" dev "$nic"
ip addr add "$GUEST6/64" dev "$nic" nodad
ip link set "$nic" up
info "guest NIC $nic ($(basename "$(readlink -f "/sys/class/net/$nic/device/driver")")): $GUEST4, $GUEST6"
ping_once() { ping -c 1 -W 1 -q "$1" >/dev/null 2>&1; }
t=$(now_ms)
if wait_until 30 ping_once "$HOST4"; then
	pass guest.outer-ping4 "host $HOST4 answered after $(($(now_ms) - t)) ms"
else
	fail guest.outer-ping4 "host $HOST4 never answered"
fi
if wait_until 10 ping_once "$HOST6"; then pass guest.outer-ping6; else fail guest.outer-ping6; fi

# ---- modules ---------------------------------------------------------------------------
if modprobe wireguard; then
	pass guest.kernel-wireguard-module "$(dmesg | grep -m1 -o 'WireGuard [0-9.]* loaded' || echo loaded)"
	# Which ChaCha20/Poly1305 the module runs on (the MIPS assembly ones when loaded).
	info "guest crypto modules: $(lsmod | awk 'NR > 1 && $1 ~ /chacha|poly1305|curve25519/ { printf "%s ", $1 }')"
	kernel_wg=1
else
	fail guest.kernel-wireguard-module "modprobe wireguard failed"
	kernel_wg=0
fi
modprobe tun 2>/dev/null
have_solowg=0
if [[ -n ${SOLOWG_SKIP:-} ]]; then
	:
elif [[ ! -x ./solowg ]]; then
	SOLOWG_SKIP="no solowg binary in the job"
elif ! ver=$(./solowg --version 2>&1); then
	fail guest.solowg-runs "$ver"
	SOLOWG_SKIP="the mipsel solowg does not run"
elif [[ ! -c /dev/net/tun ]]; then
	fail guest.tun-device "/dev/net/tun missing after modprobe tun"
	SOLOWG_SKIP="no /dev/net/tun"
else
	pass guest.solowg-runs "$ver, $(stat -c %s ./solowg) bytes"
	have_solowg=1
fi
have_wggo=0
if command -v wireguard-go >/dev/null; then
	have_wggo=1
	info "guest wireguard-go: $(wireguard-go --version 2>&1 | head -n 1)"
fi

# ---- one tunnel --------------------------------------------------------------------------
# Field N of the peer line of `wg show IF dump`: 3 endpoint, 5 latest handshake, 6 rx, 7 tx.
peer_field() { wg show "$1" dump 2>/dev/null | awk -F'\t' -v n="$2" 'NR == 2 { print $n }'; }
handshake_done() {
	local hs
	hs=$(peer_field "$1" 5)
	[[ $hs =~ ^[0-9]+$ ]] && ((hs > 0))
}
sock_up() { [[ -S /var/run/wireguard/$1.sock ]] && ip link show dev "$1" >/dev/null 2>&1; }
pid_gone() { ! kill -0 "$1" 2>/dev/null; }

# ping_check NAME ADDR: 5 pings; loss and average RTT in the PASS line.
ping_check() {
	local out rx rtt
	out=$(timeout 20 ping -c 5 -i 0.2 -W 2 -q "$2" 2>&1)
	rx=$(printf '%s\n' "$out" | awk '/packets transmitted/ { print $4 }')
	rtt=$(printf '%s\n' "$out" | awk -F'/' '/^rtt|^round-trip/ { print $5 }')
	if [[ ${rx:-0} -ge 4 ]]; then
		pass "$1" "$rx/5 replies, rtt avg $rtt ms"
	else
		fail "$1" "${rx:-0}/5 replies"
	fi
}

# The guest's UDP receive-buffer overflows so far (IPv4 and IPv6 sockets): datagrams the
# kernel dropped because the socket's owner did not read them in time.
udp_rcvbuf_errors() {
	local v4 v6
	v4=$(awk '/^Udp:/ { if (!n) { for (i = 2; i <= NF; i++) if ($i == "RcvbufErrors") c = i; n = 1 } else print $c }' /proc/net/snmp)
	v6=$(awk '$1 == "Udp6RcvbufErrors" { print $2 }' /proc/net/snmp6 2>/dev/null)
	printf '%s\n' $((${v4:-0} + ${v6:-0}))
}

# iperf_check NAME ADDR [-R]: one bounded TCP run; the receiver's Mbit/s, TCP
# retransmissions and the guest's UDP receive-buffer drops in the PASS line.
iperf_check() {
	local name=$1 addr=$2 out mbps retr drops0 drops1
	shift 2
	drops0=$(udp_rcvbuf_errors)
	out=$(timeout $((IPERF_SECS + 30)) iperf3 -c "$addr" -p "$IPERF_PORT" -t "$IPERF_SECS" -f m \
		--connect-timeout 5000 "$@" 2>&1)
	drops1=$(udp_rcvbuf_errors)
	printf '%s\n' "$out" | grep -E 'sender|receiver' | indent
	mbps=$(printf '%s\n' "$out" | awk '/receiver/ { for (i = 2; i <= NF; i++) if ($i == "Mbits/sec") print $(i - 1) }' | tail -n 1)
	retr=$(printf '%s\n' "$out" | awk '/sender/ { for (i = 2; i <= NF; i++) if ($i == "Mbits/sec") print $(i + 1) }' | tail -n 1)
	if [[ -n $mbps ]]; then
		pass "$name" "$mbps Mbit/s over ${IPERF_SECS} s, ${retr:-?} TCP retransmissions, guest UDP receive-buffer drops $((${drops1:-0} - ${drops0:-0}))"
	else
		fail "$name" "$(printf '%s\n' "$out" | tail -n 1)"
	fi
}

tunnel() {
	local n=$1 g=${T_GIMPL[$1]} init=${T_INIT[$1]}
	local ifn=swg$1 name="${T_PART[$1]}.${T_GIMPL[$1]}-vs-${T_HIMPL[$1]}.${T_INIT[$1]}-initiates"
	local in4h=10.204.$n.1 in4g=10.204.$n.2 in6h=fd00:204:$n::1 in6g=fd00:204:$n::2
	local t0 t1 spid='' hs rx tx ep want_ep
	local -a peer
	t0=$(now_ms)
	info "---- $name: guest $ifn port ${T_GPORT[$n]} <-> host port ${T_HPORT[$n]}"
	case $g in
	kernel)
		if ! ip link add "$ifn" type wireguard; then
			fail "$name.create"
			return
		fi
		;;
	solowg | wireguard-go)
		if [[ $g == solowg ]]; then
			LOG_LEVEL=verbose ./solowg -f "$ifn" >"/tmp/$ifn.log" 2>&1 &
		else
			LOG_LEVEL=verbose wireguard-go -f "$ifn" >"/tmp/$ifn.log" 2>&1 &
		fi
		spid=$!
		if ! wait_until 10 sock_up "$ifn"; then
			fail "$name.create" "no TUN or UAPI socket within 10 s"
			tail -n 20 "/tmp/$ifn.log" | indent
			kill "$spid" 2>/dev/null
			return
		fi
		;;
	esac
	(umask 077 && printf '%s\n' "${T_GKEY[$n]}" >"/tmp/$ifn.key")
	peer=(peer "${T_HPUB[$n]}" allowed-ips "$in4h/32,$in6h/128")
	if [[ $init == guest ]]; then
		peer+=(endpoint "$HOST4:${T_HPORT[$n]}")
		want_ep="$HOST4:${T_HPORT[$n]}"
	else
		want_ep="[$HOST6]:${T_HPORT[$n]}"
	fi
	if ! wg set "$ifn" private-key "/tmp/$ifn.key" listen-port "${T_GPORT[$n]}" "${peer[@]}" ||
		! ip addr add "$in4g/24" dev "$ifn" || ! ip addr add "$in6g/64" dev "$ifn" nodad ||
		! ip link set "$ifn" up; then
		fail "$name.configure"
	fi
	t1=$(now_ms)
	local up=1
	if [[ $init == guest ]]; then
		# The first ping is queued while the guest's initiation goes out.
		if wait_until 20 ping_once "$in4h" && handshake_done "$ifn"; then
			pass "$name.handshake" "guest initiated; first reply $(($(now_ms) - t1)) ms after the first ping"
		else
			fail "$name.handshake" "no reply within 20 s"
			up=0
		fi
	else
		# The host's pinger retries every second: its next initiation arrives within ~5 s.
		if wait_until 40 handshake_done "$ifn"; then
			pass "$name.handshake" "host initiated; answered $(($(now_ms) - t1)) ms after the interface came up"
		else
			fail "$name.handshake" "no initiation from the host within 40 s"
			up=0
		fi
	fi
	if [[ $up -eq 1 ]]; then
		ping_check "$name.ping4" "$in4h"
		ping_check "$name.ping6" "$in6h"
		if [[ ${T_IPERF[$n]} == 1 ]]; then
			iperf_check "$name.iperf3.guest-to-host" "$in4h"
			iperf_check "$name.iperf3.host-to-guest" "$in4h" -R
		fi
	else
		# Without a handshake these would only time out, one after the other.
		fail "$name.ping4" "no handshake"
		fail "$name.ping6" "no handshake"
		if [[ ${T_IPERF[$n]} == 1 ]]; then
			fail "$name.iperf3.guest-to-host" "no handshake"
			fail "$name.iperf3.host-to-guest" "no handshake"
		fi
	fi
	info "wg show $ifn:"
	wg show "$ifn" 2>&1 | indent
	hs=$(peer_field "$ifn" 5)
	rx=$(peer_field "$ifn" 6)
	tx=$(peer_field "$ifn" 7)
	ep=$(peer_field "$ifn" 3)
	if [[ $hs =~ ^[0-9]+$ && $rx =~ ^[0-9]+$ && $tx =~ ^[0-9]+$ ]] && ((hs > 0 && rx > 0 && tx > 0)) &&
		[[ $ep == "$want_ep" ]]; then
		pass "$name.wg-show" "endpoint $ep, handshake $(($(date +%s) - hs)) s ago, rx $rx, tx $tx"
	else
		fail "$name.wg-show" "endpoint '$ep' (want $want_ep), handshake '$hs', rx '$rx', tx '$tx'"
	fi
	if [[ $g == solowg ]]; then
		local shown
		shown=$(timeout 10 ./solowg show "$ifn" 2>&1)
		info "solowg show $ifn:"
		printf '%s\n' "$shown" | indent
		if [[ $shown == *"latest handshake"* && $shown == *"${T_HPUB[$n]}"* ]]; then
			pass "$name.solowg-show"
		else
			fail "$name.solowg-show"
		fi
	fi
	ip link del "$ifn" 2>/dev/null
	if [[ -n $spid ]]; then
		if wait_until 5 pid_gone "$spid"; then
			pass "$name.exit-on-link-del"
		else
			fail "$name.exit-on-link-del" "still running 5 s after ip link del"
			kill -KILL "$spid" 2>/dev/null
			tail -n 20 "/tmp/$ifn.log" | indent
		fi
		wait "$spid" 2>/dev/null
	fi
	rm -f "/tmp/$ifn.key"
	info "TIME tunnel $name $(($(now_ms) - t0)) ms"
}

# ---- OpenWrt mode ------------------------------------------------------------------------------
# No jq in the guest: ubus-client prints one line of compact JSON, and the peer tables of
# `status` hold no tables, so each is one {...} without braces inside.
json_tables() { grep -o '{[^{}]*}' <<<"$1"; }
json_peer() { json_tables "$1" | grep -F "\"public_key\":\"$2\""; }
# json_get JSON KEY: the first scalar value of KEY (a string without its quotes).
json_get() {
	grep -o "\"$2\":\(\"[^\"]*\"\|[^],}]*\)" <<<"$1" | head -n 1 | sed 's/^"[^"]*"://; s/^"\(.*\)"$/\1/'
}
# peer_field_of IF PUBKEY N: field N of that peer's line of `wg show IF dump`.
peer_field_of() { wg show "$1" dump 2>/dev/null | awk -F'\t' -v k="$2" -v n="$3" 'NR > 1 && $1 == k { print $n }'; }
handshake_done_of() {
	local hs
	hs=$(peer_field_of "$1" "$2" 5)
	[[ $hs =~ ^[0-9]+$ ]] && ((hs > 0))
}

# uci_tunnel_checks NAME IF N NOTE: the guest pings host tunnel N's peer through IF until it
# answers and the handshake shows in `wg show`, then pings over IPv4 and IPv6.
uci_tunnel_checks() {
	local t1
	t1=$(now_ms)
	if wait_until 20 ping_once "10.204.$3.1" && handshake_done_of "$2" "${T_HPUB[$3]}"; then
		pass "$1.handshake" "$4; first reply $(($(now_ms) - t1)) ms after the first ping"
		ping_check "$1.ping4" "10.204.$3.1"
		ping_check "$1.ping6" "fd00:204:$3::1"
	else
		fail "$1.handshake" "no reply within 20 s"
		fail "$1.ping4" "no handshake"
		fail "$1.ping6" "no handshake"
	fi
}

# uci_network N1 N2 DESCRIPTION WITH_ADDED: the network file as uci writes it. The interface
# (N1's key and port; both tunnels' inner addresses) and the host's solowg as peer 'host1';
# with WITH_ADDED=1 also peer 'host2' (N2's host peer). The private key is given, so the
# daemon never runs uci to save a generated one.
uci_network() {
	local n1=$1 n2=$2
	cat <<EOF
config interface 'swg$n1'
	option proto 'solowg'
	option private_key '${T_GKEY[$n1]}'
	option listen_port '${T_GPORT[$n1]}'
	list addresses '10.204.$n1.2/24'
	list addresses 'fd00:204:$n1::2/64'
	list addresses '10.204.$n2.2/24'
	list addresses 'fd00:204:$n2::2/64'

config solowg_swg$n1 'host1'
	option public_key '${T_HPUB[$n1]}'
	option description '$3'
	list allowed_ips '10.204.$n1.1/32'
	list allowed_ips 'fd00:204:$n1::1/128'
	option endpoint_host '$HOST4'
	option endpoint_port '${T_HPORT[$n1]}'
EOF
	[[ $4 == 1 ]] || return 0
	cat <<EOF

config solowg_swg$n1 'host2'
	option public_key '${T_HPUB[$n2]}'
	option description 'added by reload'
	list allowed_ips '10.204.$n2.1/32'
	list allowed_ips 'fd00:204:$n2::1/128'
	option endpoint_host '$HOST4'
	option endpoint_port '${T_HPORT[$n2]}'
EOF
}

# uci_mode N1 N2: `solowg --uci` as procd and netifd run it on OpenWrt, with the job's
# mipsel ubus broker (ubusd) and CLI (ubus). The job plays netifd: `ubus call solowg up`,
# then the reply's addresses on the interface. Checked: the object and its methods, the up
# reply, the handshake and pings with the host's solowg (N1), `status` over ubus and
# `solowg show`, a reload that renames that peer and adds the second host peer (N2: its
# handshake and pings; the first peer's session kept), a reload that removes it again,
# and SIGTERM. Names: b.solowg-uci.* for the daemon, the tunnel names of N1 and N2.
uci_mode() {
	local n1=$1 n2=$2 ifn=swg$1 dir=/tmp/uci pre=b.solowg-uci
	local sock=/tmp/uci/ubus.sock name1 name2 t0 t1 upid spid reply st p1 p2 gpub hs1 shown a want
	name1="b.${T_GIMPL[$n1]}-vs-${T_HIMPL[$n1]}.${T_INIT[$n1]}-initiates"
	name2="b.${T_GIMPL[$n2]}-vs-${T_HIMPL[$n2]}.${T_INIT[$n2]}-initiates"
	t0=$(now_ms)
	info "---- OpenWrt mode: guest $ifn port ${T_GPORT[$n1]} <-> host ports ${T_HPORT[$n1]}" \
		"(${T_HIMPL[$n1]}) and ${T_HPORT[$n2]} (${T_HIMPL[$n2]}, added by a reload)"
	ubus_() { timeout 20 ./ubus -s "$sock" -t 10 "$@"; }
	mkdir -p "$dir/config"
	# The package's ACL (its user renamed to the one the daemon becomes here), which ubusd
	# reads only from a root-owned file no one else can write.
	mkdir -p /tmp/acl
	cp acl/solowg.json /tmp/acl/ && chown 0:0 /tmp/acl/solowg.json && chmod 644 /tmp/acl/solowg.json
	./ubusd --socket="$sock" --acl-dir=/tmp/acl >/tmp/ubusd.log 2>&1 &
	upid=$!
	if wait_until 10 test -S "$sock" && ubus_ ping >/dev/null; then
		pass "$pre.ubusd-up"
	else
		fail "$pre.ubusd-up" "no broker answering on $sock within 10 s"
		indent </tmp/ubusd.log
		kill "$upid" 2>/dev/null
		return
	fi
	(umask 077 && uci_network "$n1" "$n2" "host solowg" 0 >"$dir/config/network")
	# As on OpenWrt: the daemon becomes its own user (nobody here) once its sockets are
	# open, and reads what root's `solowg export` hands it before `up` and `reload`.
	export_() { ./solowg export --config-dir "$dir/config" --uci-bin /bin/false --to "$dir/run"; }
	UBUS_SOCKET=$sock LOG_LEVEL=verbose ./solowg --uci --user 65534:65534 --config-dir "$dir/run" \
		--state-file "$dir/run/state" >/tmp/solowg-uci.log 2>&1 &
	spid=$!
	t1=$(now_ms)
	reply=
	if ubus_ wait_for solowg >/dev/null 2>&1 && reply=$(ubus_ list solowg 2>&1) &&
		[[ $reply == *'"path":"solowg"'* && $reply == *'"up":{"interface":3}'* &&
			$reply == *'"reload":{}'* && $reply == *'"status":{}'* ]]; then
		pass "$pre.object-registered" "with up, reload and status, $(($(now_ms) - t1)) ms after the start"
		# Privileges given up once running (src/sys/privileges.rs), on this kernel's MIPS ABI:
		# its own user, CAP_NET_ADMIN and CAP_NET_BIND_SERVICE only, in the bounding set too,
		# no_new_privs, its system-call filter.
		caps=$(grep -E '^(Uid|CapEff|CapPrm|CapBnd|CapInh|NoNewPrivs|Seccomp):' "/proc/$spid/status" | tr -s '\t ' ' ' | tr '\n' ' ')
		if [[ $caps == *"Uid: 65534 65534 65534 65534"* && $caps == *"CapInh: 0000000000000000"* &&
			$caps == *"Seccomp: 2"* && $caps == *"CapPrm: 0000000000001400"* &&
			$caps == *"CapEff: 0000000000001400"* && $caps == *"CapBnd: 0000000000001400"* &&
			$caps == *"NoNewPrivs: 1"* ]]; then
			pass "$pre.privileges-dropped" "$caps"
		else
			fail "$pre.privileges-dropped" "$caps"
		fi
	else
		fail "$pre.object-registered" "${reply:-no object 'solowg' within 10 s}"
		tail -n 20 /tmp/solowg-uci.log | indent
		kill "$spid" "$upid" 2>/dev/null
		return
	fi

	# netifd's part: `up` (as the protocol handler calls it), then the reply's addresses.
	reply=$(export_ 2>&1 && ubus_ call solowg up "{\"interface\":\"$ifn\"}" 2>&1)
	info "up: $reply"
	want="\"addresses\":[\"10.204.$n1.2/24\",\"fd00:204:$n1::2/64\",\"10.204.$n2.2/24\",\"fd00:204:$n2::2/64\"]"
	if [[ $(json_get "$reply" ifname) == "$ifn" && $reply == *"$want"* && $reply == *'"errors":[]'* ]] &&
		sock_up "$ifn"; then
		pass "$pre.up" "TUN, UAPI socket and the section's addresses in the reply, mtu $(json_get "$reply" mtu)"
	else
		fail "$pre.up" "$reply"
	fi
	for a in $(grep -o '"addresses":\[[^]]*\]' <<<"$reply" | grep -o '"[^"]*/[0-9]*"' | tr -d '"'); do
		if [[ $a == *:* ]]; then ip addr add "$a" dev "$ifn" nodad; else ip addr add "$a" dev "$ifn"; fi
	done
	ip link set "$ifn" up

	# The first configuration's peer: the host's solowg.
	uci_tunnel_checks "$name1" "$ifn" "$n1" "guest initiated"
	gpub=$(wg pubkey <<<"${T_GKEY[$n1]}")
	st=$(ubus_ call solowg status 2>&1)
	p1=$(json_peer "$st" "${T_HPUB[$n1]}")
	info "status, peer host1: $p1"
	if [[ $st == *"\"name\":\"$ifn\""* && $st == *"\"public_key\":\"$gpub\""* &&
		$st == *"\"listen_port\":${T_GPORT[$n1]},"* && $st != *"${T_GKEY[$n1]}"* &&
		$(json_get "$p1" description) == "host solowg" &&
		$(json_get "$p1" endpoint) == "$HOST4:${T_HPORT[$n1]}" &&
		$(json_get "$p1" latest_handshake) =~ ^[1-9][0-9]*$ &&
		$(json_get "$p1" rx_bytes) =~ ^[1-9][0-9]*$ &&
		$p1 == *"\"allowed_ips\":[\"10.204.$n1.1/32\",\"fd00:204:$n1::1/128\"]"* ]]; then
		pass "$pre.ubus-status" "interface key and port, peer description, endpoint, handshake, rx $(json_get "$p1" rx_bytes) bytes; no private key"
	else
		fail "$pre.ubus-status" "$st"
	fi
	shown=$(timeout 10 ./solowg show "$ifn" 2>&1)
	info "solowg show $ifn:"
	printf '%s\n' "$shown" | indent
	if [[ $shown == *"peer: ${T_HPUB[$n1]}"* && $shown == *"latest handshake"* &&
		$shown == *"private key: (hidden)"* ]]; then
		pass "$pre.solowg-show"
	else
		fail "$pre.solowg-show"
	fi

	# Reload: host1 renamed, host2 added; host1 keeps its session (the same handshake).
	hs1=$(peer_field_of "$ifn" "${T_HPUB[$n1]}" 5)
	(umask 077 && uci_network "$n1" "$n2" "host solowg, renamed" 1 >"$dir/config/network")
	reply=$(export_ 2>&1 && ubus_ call solowg reload 2>&1)
	info "reload: $reply"
	st=$(ubus_ call solowg status 2>&1)
	p1=$(json_peer "$st" "${T_HPUB[$n1]}")
	p2=$(json_peer "$st" "${T_HPUB[$n2]}")
	if [[ $reply == "{\"errors\":[],\"interfaces\":[\"$ifn\"]}" &&
		$(json_get "$p1" description) == "host solowg, renamed" &&
		$(json_get "$p2" description) == "added by reload" &&
		$(json_get "$p2" endpoint) == "$HOST4:${T_HPORT[$n2]}" ]]; then
		pass "$pre.reload-adds-and-changes-peers" "host2 added, host1 renamed"
	else
		fail "$pre.reload-adds-and-changes-peers" "host1: $p1; host2: $p2"
	fi
	uci_tunnel_checks "$name2" "$ifn" "$n2" "guest initiated after the reload"
	if ping_once "10.204.$n1.1" && [[ -n $hs1 && $(peer_field_of "$ifn" "${T_HPUB[$n1]}" 5) == "$hs1" ]]; then
		pass "$pre.reload-keeps-unchanged-session" "host1's handshake still the one of $(($(date +%s) - hs1)) s ago"
	else
		fail "$pre.reload-keeps-unchanged-session" "handshake '$hs1' before, '$(peer_field_of "$ifn" "${T_HPUB[$n1]}" 5)' after"
	fi
	info "wg show $ifn:"
	wg show "$ifn" 2>&1 | indent

	# Reload without host2: gone from status, its inner address unreachable, host1 still up.
	(umask 077 && uci_network "$n1" "$n2" "host solowg, renamed" 0 >"$dir/config/network")
	reply=$(export_ 2>&1 && ubus_ call solowg reload 2>&1)
	st=$(ubus_ call solowg status 2>&1)
	if [[ $reply == *'"errors":[]'* && -z $(json_peer "$st" "${T_HPUB[$n2]}") &&
		-n $(json_peer "$st" "${T_HPUB[$n1]}") ]] && ! ping_once "10.204.$n2.1" && ping_once "10.204.$n1.1"; then
		pass "$pre.reload-removes-peer" "host2 gone, not reachable; host1 answers"
	else
		fail "$pre.reload-removes-peer" "reload: $reply; status: $st"
	fi

	# procd stops the daemon with SIGTERM: gone within 2 s, with its TUN and UAPI socket.
	t1=$(now_ms)
	kill -TERM "$spid"
	uci_gone() { pid_gone "$spid" && ! ip link show dev "$ifn" >/dev/null 2>&1 && [[ ! -e /var/run/wireguard/$ifn.sock ]]; }
	if wait_until 2 uci_gone; then
		pass "$pre.sigterm-exit" "process, TUN and UAPI socket gone $(($(now_ms) - t1)) ms after SIGTERM"
	else
		fail "$pre.sigterm-exit" "still there 2 s after SIGTERM"
		kill -KILL "$spid" 2>/dev/null
	fi
	wait "$spid" 2>/dev/null
	info "solowg --uci log (last lines):"
	tail -n 25 /tmp/solowg-uci.log | indent
	kill -TERM "$upid" 2>/dev/null
	wait_until 3 pid_gone "$upid" || kill -KILL "$upid" 2>/dev/null
	wait "$upid" 2>/dev/null
	rm -rf "$dir"
	info "TIME uci $(($(now_ms) - t0)) ms"
}

# ---- the tunnels, part by part ---------------------------------------------------------------
for part in $PARTS; do
	part_t0=$(now_ms)
	for n in "${!T_PART[@]}"; do
		[[ ${T_PART[$n]} == "$part" ]] || continue
		# OpenWrt mode's two tunnels: one run, after the part's other tunnels.
		[[ ${T_GIMPL[$n]} == solowg-uci* ]] && continue
		name="${T_PART[$n]}.${T_GIMPL[$n]}-vs-${T_HIMPL[$n]}.${T_INIT[$n]}-initiates"
		if [[ ${T_GIMPL[$n]} == kernel && $kernel_wg -eq 0 ]]; then
			skip "$name" "the guest kernel's wireguard module did not load"
		elif [[ ${T_GIMPL[$n]} == solowg && $have_solowg -eq 0 ]]; then
			skip "$name" "$SOLOWG_SKIP"
		elif [[ ${T_GIMPL[$n]} == wireguard-go && $have_wggo -eq 0 ]]; then
			skip "$name" "no wireguard-go in the guest image (image.sh --rebuild)"
		else
			tunnel "$n"
		fi
	done
	if [[ $part == b && -n ${UCI_N1:-} ]]; then
		if [[ $have_solowg -eq 1 && -x ./ubusd && -x ./ubus ]]; then
			uci_mode "$UCI_N1" "${UCI_N2:?}"
		else
			for n in "$UCI_N1" "$UCI_N2"; do
				skip "b.${T_GIMPL[$n]}-vs-${T_HIMPL[$n]}.${T_INIT[$n]}-initiates" \
					"${SOLOWG_SKIP:-no ubusd or ubus in the job}"
			done
		fi
	fi
	info "TIME part $part $(($(now_ms) - part_t0)) ms"
done

if [[ -n ${UCI_SKIP:-} ]]; then
	skip b.solowg-uci "$UCI_SKIP"
fi

info "TIME job $(($(now_ms) - job_t0)) ms"
printf '# guest tally: %d passed, %d failed\n' "$PASSED" "$FAILED"
[[ $FAILED -eq 0 ]]
