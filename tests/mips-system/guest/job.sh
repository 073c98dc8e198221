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
# `wg show` (for solowg over its UAPI socket) and `solowg show`. Prints PASS/FAIL/SKIPPED
# lines for run.sh to count, and '# TIME ...' lines for its report.
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

# ---- the tunnels, part by part ---------------------------------------------------------------
for part in $PARTS; do
	part_t0=$(now_ms)
	for n in "${!T_PART[@]}"; do
		[[ ${T_PART[$n]} == "$part" ]] || continue
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
	info "TIME part $part $(($(now_ms) - part_t0)) ms"
done

if [[ -n ${UCI_SKIP:-} ]]; then
	skip b.solowg-uci "$UCI_SKIP"
fi

info "TIME job $(($(now_ms) - job_t0)) ms"
printf '# guest tally: %d passed, %d failed\n' "$PASSED" "$FAILED"
[[ $FAILED -eq 0 ]]
