#!/bin/bash
# One line of the guest's counters for bench/router (run in the guest before and after a
# measurement): CPU time by kind (USER_HZ ticks), context switches, NIC and tunnel packets and bytes,
# UDP errors, page faults, and solowg's own counters when it runs (asked for with SIGUSR1).
read -r _ user nice system idle iowait irq softirq _ </proc/stat
printf 'user=%s nice=%s system=%s idle=%s iowait=%s irq=%s softirq=%s' \
	"$user" "$nice" "$system" "$idle" "$iowait" "$irq" "$softirq"
awk '/^ctxt / { printf " ctxt=%s", $2 } /^intr / { printf " intr=%s", $2 }' /proc/stat
awk '/^pgfault / { printf " pgfault=%s", $2 }' /proc/vmstat
for d in wan lan wg0; do
	s=/sys/class/net/$d/statistics
	[[ -d $s ]] || continue
	printf ' %s_rx=%s %s_tx=%s %s_rxb=%s %s_txb=%s' "$d" "$(cat "$s/rx_packets")" "$d" "$(cat "$s/tx_packets")" \
		"$d" "$(cat "$s/rx_bytes")" "$d" "$(cat "$s/tx_bytes")"
done
awk '/^Udp:/ { if (!h) { for (i = 2; i <= NF; i++) k[i] = $i; h = 1 } else for (i = 2; i <= NF; i++)
	if (k[i] ~ /^(InDatagrams|RcvbufErrors|SndbufErrors|InErrors)$/) printf " udp_%s=%s", k[i], $i }' /proc/net/snmp
if pid=$(pidof solowg); then
	n=$(grep -c 'stats' /run/solowg.log 2>/dev/null)
	kill -USR1 "$pid"
	for ((i = 0; i < 50; i++)); do
		(($(grep -c 'stats' /run/solowg.log) >= n + 2)) && break
		sleep 0.05
	done
	grep 'stats' /run/solowg.log | tail -n 2 | sed 's/^solowg: stats[^:]*://' | tr '\n' ' ' | sed 's/^/ /; s/ *$//'
	awk '{ printf " solowg_utime=%s solowg_stime=%s solowg_minflt=%s", $14, $15, $10 }' "/proc/$pid/stat"
	awk '/voluntary_ctxt_switches/ { printf " solowg_%s=%s", $1, $2 }' "/proc/$pid/status" | tr -d ':'
fi
echo
