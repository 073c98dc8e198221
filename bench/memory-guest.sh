#!/bin/bash
# The guest's half of bench/memory, shipped on the job disk as mem.sh and called by the host
# through guest.sh's command port (bench/router/guest.sh), one subcommand a call:
#   start      a fresh solowg (plain mode, `./solowg -f wg0`), configured from empty.conf
#              (key, port) over its UAPI socket with wg, 10.77.255.254/16 on wg0, up
#   peers      wg setconf from full.conf (the same interface and all the peers); prints their count
#   empty      wg setconf from empty.conf (every peer removed); prints the count left
#   mem        the daemon's "rss=KiB hwm=KiB" from /proc/PID/status, or "gone"
#   sampler    in the background, every 0.5 s (at most 1,200 times) while the daemon lives,
#              the highest VmRSS and the last VmHWM seen into /run/sample: what is left to
#              read if the kernel's OOM killer ends the daemon
#   sample     what the sampler saw: "rss_max=KiB hwm_last=KiB samples=N"
#   counters   packets the kernel handed to the daemon's TUN (wg0 tx), those it dropped
#              there (queue full), LAN and WAN NIC receive and drops, UDP datagrams delivered
#              and dropped for full receive buffers, and the daemon's stats line (second line)
#   oom        the kernel's out-of-memory lines, if any
#   stop       SIGTERM to the daemon started here (its PID from /run/solowg.pid), SIGKILL
#              after 5 s
# Only the daemon this script started is ever signalled, by its PID.
set -u
cd "$(dirname -- "$0")" || exit 2
PIDFILE=/run/solowg.pid
LOG=/run/solowg.log

pid_of() {
	local pid
	[[ -f $PIDFILE ]] || return 1
	read -r pid <"$PIDFILE" || return 1
	[[ $pid =~ ^[0-9]+$ ]] && ! gone "$pid" && printf '%s\n' "$pid"
}
# wait_until SECS CMD...: poll every 0.1 s, bounded by count and clock.
wait_until() {
	local i deadline=$((SECONDS + $1 + 1)) n=$(($1 * 10))
	shift
	for ((i = 0; i < n; i++)); do
		"$@" && return 0
		((SECONDS < deadline)) || break
		sleep 0.1
	done
	return 1
}
kib() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status" 2>/dev/null; }
sock_up() { [[ -S /var/run/wireguard/wg0.sock ]] && ip link show dev wg0 >/dev/null 2>&1; }
# Gone, or a zombie not yet reaped by the guest's init.
gone() { ! kill -0 "$1" 2>/dev/null || [[ $(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) == Z ]]; }
npeers() { wg show wg0 peers | wc -l; }

case ${1:-} in
start)
	if pid_of >/dev/null; then
		echo "a daemon started here still runs"
		exit 1
	fi
	rm -f /run/sample
	LOG_LEVEL=info ./solowg -f wg0 >"$LOG" 2>&1 </dev/null &
	echo $! >"$PIDFILE"
	wait_until 10 sock_up || {
		echo "no TUN or UAPI socket within 10 s"
		tail -n 5 "$LOG"
		exit 1
	}
	wg setconf wg0 empty.conf && ip addr add 10.77.255.254/16 dev wg0 && ip link set wg0 up
	;;
peers)
	wg setconf wg0 full.conf && npeers
	;;
empty)
	wg setconf wg0 empty.conf && npeers
	;;
mem)
	if pid=$(pid_of); then
		echo "rss=$(kib "$pid" VmRSS) hwm=$(kib "$pid" VmHWM)"
	else
		echo gone
	fi
	;;
sampler)
	pid=$(pid_of) || exit 1
	(
		max=0 hwm=0 n=0
		for ((i = 0; i < 1200; i++)); do
			r=$(kib "$pid" VmRSS) h=$(kib "$pid" VmHWM)
			[[ -n $r && -n $h ]] || break
			((r > max)) && max=$r
			hwm=$h n=$((n + 1))
			echo "rss_max=$max hwm_last=$hwm samples=$n" >/run/sample.new && mv /run/sample.new /run/sample
			sleep 0.5
		done
	) </dev/null >/dev/null 2>&1 &
	;;
sample)
	cat /run/sample 2>/dev/null || echo "rss_max= hwm_last= samples=0"
	;;
counters)
	s() { cat "/sys/class/net/$1/statistics/$2" 2>/dev/null || echo -; }
	echo "tun_tx=$(s wg0 tx_packets) tun_tx_dropped=$(s wg0 tx_dropped) lan_rx=$(s lan rx_packets)" \
		"lan_rx_dropped=$(s lan rx_dropped) wan_rx=$(s wan rx_packets) wan_rx_dropped=$(s wan rx_dropped)" \
		"$(awk '/^Udp:/ { if (!h) { for (i = 2; i <= NF; i++) k[i] = $i; h = 1 } else for (i = 2; i <= NF; i++)
			if (k[i] ~ /^(InDatagrams|RcvbufErrors)$/) printf "udp_%s=%s ", k[i], $i }' /proc/net/snmp)"
	if pid=$(pid_of); then
		n=$(grep -c 'stats wg0' "$LOG")
		kill -USR1 "$pid"
		for ((i = 0; i < 50; i++)); do
			(($(grep -c 'stats wg0' "$LOG") > n)) && break
			sleep 0.1
		done
		grep 'stats wg0' "$LOG" | tail -n 1
	fi
	;;
oom)
	dmesg | grep -i -E 'out of memory|oom-kill|killed process' || true
	;;
stop)
	pid=$(pid_of) || exit 0
	kill -TERM "$pid"
	wait_until 5 gone "$pid" || kill -KILL "$pid"
	wait_until 5 gone "$pid"
	ip link del wg0 2>/dev/null
	rm -f "$PIDFILE"
	;;
*)
	echo "unknown subcommand '${1:-}'"
	exit 2
	;;
esac
