#!/usr/bin/env bash
# Memory under traffic to peers that are down: any LAN host can send to the tunnel addresses
# of peers that never answer, and each packet waits for a handshake that never completes.
# A gets PEERS peers whose endpoints (ports on B with no listener) never answer, then
# ROUNDS rounds of one 1,400-byte packet to every peer's tunnel address (130: more than a
# peer's own bound of 128, the worst case). Checked from
# /proc/PID/status:
#  - the peak (VmHWM) stays within LIMIT_KIB of the RSS with the peers configured, whatever
#    the number of peers (the device-wide staging bound);
#  - once the peers are removed, RSS is back within BACK_KIB of what it was before them.
# Prints the figures (KiB) for bench/README.md's memory table.
#   usage: offline-peers.sh [solowg]     PEERS=1000 ROUNDS=130 LIMIT_KIB=4096 BACK_KIB=1024
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

U=${1:-solowg}
PEERS=${PEERS:-1000}
ROUNDS=${ROUNDS:-130}
LIMIT_KIB=${LIMIT_KIB:-4096}
BACK_KIB=${BACK_KIB:-1024}
[[ $PEERS -ge 1 && $PEERS -le 16000 ]] || nt_die "PEERS must be 1..16000"
nt_setup
nt_require_tools python3
nt_require_impl "$U"
[[ $U == solowg ]] || nt_die "offline-peers.sh tests solowg's own memory bound"
nt_make_netns || nt_die "could not build the namespaces"
nt_start_daemon "$U" "$NT_NS_A" "$NT_IF_A" || nt_die "daemon did not start"
pid=$(nt_daemon_os_pid "$NT_IF_A")

status_kib() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }

nt_genkey a
conf_empty="$NT_TMP/empty.conf"
conf_peers="$NT_TMP/peers.conf"
{
	printf '[Interface]\nPrivateKey = %s\nListenPort = %s\n' "$(cat "$NT_TMP/a.key")" "$NT_PORT_A"
} >"$conf_empty"
# Peer keys: random 32-byte strings are valid X25519 public keys for configuration.
python3 - "$PEERS" "$NT_OUT4_B" >"$conf_peers" <<'EOF'
import base64, os, sys
n, host = int(sys.argv[1]), sys.argv[2]
for i in range(n):
    print("[Peer]")
    print("PublicKey = " + base64.b64encode(os.urandom(32)).decode())
    print(f"AllowedIPs = 10.77.{i >> 8}.{i & 255}/32")
    print(f"Endpoint = {host}:{20000 + i}")
EOF
chmod 600 "$conf_empty"
cat "$conf_empty" "$conf_peers" >"$NT_TMP/full.conf"
chmod 600 "$NT_TMP/full.conf"

nt_wg "$NT_NS_A" setconf "$NT_IF_A" "$conf_empty" || nt_die "setconf failed"
ip -n "$NT_NS_A" addr add 10.77.255.254/16 dev "$NT_IF_A"
ip -n "$NT_NS_A" link set dev "$NT_IF_A" up
sleep 1
rss_before=$(status_kib "$pid" VmRSS)

nt_wg "$NT_NS_A" setconf "$NT_IF_A" "$NT_TMP/full.conf" || nt_die "setconf with peers failed"
configured=$(nt_wg "$NT_NS_A" show "$NT_IF_A" peers | wc -l)
nt_check "peers.configured($configured)" test "$configured" -eq "$PEERS" || true
sleep 1
rss_peers=$(status_kib "$pid" VmRSS)

# The load: ROUNDS x PEERS packets, paced a little per round so the TUN queue takes most.
sent=$(ip netns exec "$NT_NS_A" timeout 120 python3 - "$PEERS" "$ROUNDS" <<'EOF'
import socket, sys, time
n, rounds = int(sys.argv[1]), int(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
payload = b"\x5a" * 1372
sent = 0
for r in range(rounds):
    for i in range(n):
        try:
            s.sendto(payload, (f"10.77.{i >> 8}.{i & 255}", 9))
            sent += 1
        except OSError:
            pass
    time.sleep(0.05)
print(sent)
EOF
) || nt_die "the load did not finish"
sleep 2
rss_load=$(status_kib "$pid" VmRSS)
hwm=$(status_kib "$pid" VmHWM)
nt_info "sent $sent packets of 1,400 bytes to $PEERS offline peers"
nt_check "load.sent" test "$sent" -ge $((PEERS * ROUNDS * 9 / 10)) || true
nt_check "daemon.alive" kill -0 "$pid"

nt_wg "$NT_NS_A" setconf "$NT_IF_A" "$conf_empty" || nt_die "removing the peers failed"
left=$(nt_wg "$NT_NS_A" show "$NT_IF_A" peers | wc -l)
nt_check "peers.removed($left)" test "$left" -eq 0 || true
sleep 1
rss_after=$(status_kib "$pid" VmRSS)

printf '# RSS KiB: before peers %s, %s peers %s, under load %s, peak %s, peers removed %s\n' \
	"$rss_before" "$PEERS" "$rss_peers" "$rss_load" "$hwm" "$rss_after"
printf 'offline-peers: peers=%s rounds=%s rss_before=%s rss_peers=%s rss_load=%s hwm=%s rss_after=%s\n' \
	"$PEERS" "$ROUNDS" "$rss_before" "$rss_peers" "$rss_load" "$hwm" "$rss_after"
nt_check "rss.peak_bounded($((hwm - rss_peers)) KiB over the configured peers, limit $LIMIT_KIB)" \
	test $((hwm - rss_peers)) -le "$LIMIT_KIB" || true
nt_check "rss.back_after_removal($((rss_after - rss_before)) KiB over the start, limit $BACK_KIB)" \
	test $((rss_after - rss_before)) -le "$BACK_KIB" || true
nt_summary
