#!/bin/bash
# screenshots.sh ROOT [OUTDIR]
#
# Screenshots of luci-app-solowg in real LuCI (theme bootstrap), taken headless with
# Debian's chromium through puppeteer-core:
#   OUTDIR/luci-status.png     Status → solowg: interface wg0, two peers, one with a handshake
#   OUTDIR/luci-interface.png  Network → Interfaces → wg0 (proto solowg): the form, its peers
#   OUTDIR/luci-client-qr.png  the client configuration dialog of a peer, with its QR code
# OUTDIR defaults to docs/img of this repository.
#
# ROOT is a prepared real-LuCI root, built from OpenWrt's public sources (the build recipe,
# build-real-luci.sh, is kept outside this repository: it builds third-party code): ubusd, rpcd (with rpcd-mod-ucode, luci-base's `luci` object, rpcd-mod-luci's
# `luci-rpc`, the file plugin), uhttpd with the ucode handler, ucode with LuCI's modules,
# /www (luci-base, luci-theme-bootstrap, luci-mod-network, luci-mod-status, luci-lib-uqr,
# luci-app-solowg) and /usr/sbin/solowg. Everything runs in ROOT as a chroot, in a new
# network and mount namespace (loopback only; the mounts vanish with it).
#
# What runs is real: ubusd, rpcd, uhttpd + LuCI's ucode dispatcher, the solowg daemon in
# OpenWrt mode (`solowg --uci --config-dir /etc/config`) serving ubus `solowg`, and a second
# solowg (a plain WireGuard peer on loopback, `solowg -f wgpeer`, configured over its UAPI
# socket) that handshakes with wg0.
# SUBSTITUTED: netifd and procd. They need a whole OpenWrt userland, so STAND-INS
# (tools/ubus-standins.uc, clearly named) publish the objects of theirs the pages read
# (netifd: network get_proto_handlers, network.interface dump, network.interface.<if>
# status, network.device status; procd: system board and info), and this script does netifd's part of `ifup wg0` itself: it calls
# `ubus call solowg up {"interface":"wg0"}` (as /lib/netifd/proto/solowg.sh does) and sets the
# returned addresses on the TUN with ip(8). The `wan` interface exists only in the stand-in,
# with a documentation address (203.0.113.7), for the client configuration's endpoint.
#
# Needs: root (chroot, unshare), ip(8), openssl, python3, node, chromium; puppeteer-core
# (PUPPETEER_DIR: a node_modules parent holding it; default luci-app/tests).
set -euo pipefail

HERE=$(realpath "$(dirname "$0")")
REPO=$(realpath "$HERE/../..")

if [ -z "${SOLOWG_SHOTS_NS:-}" ]; then
	[ $# -ge 1 ] || { echo "usage: $0 ROOT [OUTDIR]" >&2; exit 2; }
	exec unshare --net --mount --fork env SOLOWG_SHOTS_NS=1 bash "$0" "$@"
fi

R=$(realpath "$1")
OUT=$(realpath -m "${2:-$REPO/docs/img}")
PORT=${PORT:-8080}
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
PASSWORD=solowg
LOG=${SHOTS_LOG:-/tmp/solowg-screenshots-log}    # the daemons' logs, outside the namespace
mkdir -p "$OUT" "$LOG"
trap 'echo "screenshots.sh: failed at line $LINENO (logs: $LOG)" >&2' ERR

if [ -z "${PUPPETEER_DIR:-}" ] && [ -d "$HERE/../tests/node_modules/puppeteer-core" ]; then
	PUPPETEER_DIR=$(realpath "$HERE/../tests")
fi
[ -n "${PUPPETEER_DIR:-}" ] || { echo "puppeteer-core not found (set PUPPETEER_DIR)" >&2; exit 1; }

# --- namespace: loopback, private mounts over ROOT's /proc /dev /tmp /var/run /etc/config
mount --make-rprivate /
ip link set lo up
mount -t proc proc "$R/proc"
mount -t tmpfs -o mode=755 tmpfs "$R/dev"
for n in null:1:3 zero:1:5 random:1:8 urandom:1:9; do
	IFS=: read -r name ma mi <<<"$n"; mknod -m 666 "$R/dev/$name" c "$ma" "$mi"
done
mkdir -p "$R/dev/net" && mknod -m 666 "$R/dev/net/tun" c 10 200
mount -t tmpfs -o mode=1777 tmpfs "$R/tmp"
mkdir -p "$R/var/run" && mount -t tmpfs tmpfs "$R/var/run"
mkdir -p "$R/etc/config" && cp -a "$R/etc/config" "$R/tmp/config.orig"
mount -t tmpfs tmpfs "$R/etc/config" && cp -a "$R/tmp/config.orig/." "$R/etc/config/"
mkdir -p "$R/var/run/ubus" "$R/tmp/luci-sessions" "$R/tmp/run"

PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap cleanup EXIT

# --- keys: wg0 (the router), the peer "laptop" (a real second solowg), the peer "phone"
genkey() { # -> "private public" (base64)
	local der; der=$(openssl genpkey -algorithm x25519 -outform DER | base64 -w0)
	echo "$(echo "$der" | base64 -d | tail -c 32 | base64 -w0)" \
		"$(echo "$der" | base64 -d | openssl pkey -inform DER -pubout -outform DER | tail -c 32 | base64 -w0)"
}
read -r WG0_PRIV WG0_PUB <<<"$(genkey)"
read -r LAPTOP_PRIV LAPTOP_PUB <<<"$(genkey)"
read -r _ PHONE_PUB <<<"$(genkey)"

# --- configuration, as on a router with luci-app-solowg
cat >"$R/etc/config/network" <<EOF
config interface 'loopback'
	option device 'lo'
	option proto 'static'
	option ipaddr '127.0.0.1'
	option netmask '255.0.0.0'

config interface 'wan'
	option device 'eth0'
	option proto 'dhcp'

config interface 'wg0'
	option proto 'solowg'
	option private_key '$WG0_PRIV'
	option listen_port '51820'
	list addresses '10.99.0.1/24'
	list addresses 'fd99::1/64'

config solowg_wg0 'laptop'
	option description 'laptop'
	option public_key '$LAPTOP_PUB'
	option private_key '$LAPTOP_PRIV'
	list allowed_ips '10.99.0.2/32'
	list allowed_ips 'fd99::2/128'
	option endpoint_host '127.0.0.1'
	option endpoint_port '51821'
	option persistent_keepalive '25'
	option route_allowed_ips '1'

config solowg_wg0 'phone'
	option description 'phone'
	option public_key '$PHONE_PUB'
	list allowed_ips '10.99.0.3/32'
	option route_allowed_ips '1'
EOF
cat >"$R/etc/config/solowg" <<EOF
config solowg 'main'
	option enabled '1'
	option log_level 'info'
	option packet_tx '0'
EOF
cat >"$R/etc/config/rpcd" <<EOF
config rpcd
	option socket /var/run/ubus/ubus.sock
	option timeout 30

config login
	option username 'root'
	option password '\$p\$root'
	list read '*'
	list write '*'
EOF
touch "$R/etc/config/firewall" "$R/etc/config/dhcp" "$R/etc/config/system" "$R/etc/config/ucitrack"
cat >>"$R/etc/config/system" <<EOF
config system
	option hostname 'OpenWrt'
	option timezone 'UTC'
EOF
# what luci-theme-bootstrap's uci-defaults script adds on a router
cat >>"$R/etc/config/luci" <<EOF

config internal 'themes'
	option Bootstrap '/luci-static/bootstrap'
EOF
sed -i "s|^\(root:\)[^:]*|\1$(openssl passwd -1 "$PASSWORD" | sed 's/[|&]/\\&/g')|" "$R/etc/shadow"
[ -e "$R/etc/board.json" ] || echo '{"model":{"id":"solowg-screenshots","name":"real LuCI (screenshots)"}}' >"$R/etc/board.json"

ch() { chroot "$R" "$@"; }
bg() { # name cmd...: starts cmd in the chroot, logs to LOG/name.log
	local n=$1; shift
	chroot "$R" "$@" >"$LOG/$n.log" 2>&1 &
	PIDS+=($!)
}
wait_for() { # seconds cmd...
	local t=$(($1 * 10)); shift
	until "$@" >/dev/null 2>&1; do t=$((t - 1)); [ $t -gt 0 ] || return 1; sleep 0.1; done
}

bg ubusd /usr/sbin/ubusd -s /var/run/ubus/ubus.sock
wait_for 5 test -S "$R/var/run/ubus/ubus.sock"
bg rpcd /usr/sbin/rpcd -s /var/run/ubus/ubus.sock -t 30
wait_for 10 ch ubus -s /var/run/ubus/ubus.sock list luci-rpc
LOG_LEVEL=verbose bg solowg /usr/sbin/solowg --uci --config-dir /etc/config
wait_for 10 ch ubus list solowg

# netifd's part of `ifup wg0` (what /lib/netifd/proto/solowg.sh's setup does)
UP=$(ch ubus -t 15 call solowg up '{"interface":"wg0"}')
echo "solowg up wg0: $UP"
python3 - "$UP" <<'EOF' >"$R/tmp/run/ip.sh"
import json, sys
r = json.loads(sys.argv[1])
dev = r.get('ifname') or r.get('device') or 'wg0'
for a in r.get('addresses', []) + r.get('ipaddrs', []) + r.get('ip6addrs', []):
    a = a if isinstance(a, str) else '%s/%s' % (a.get('address') or a.get('ipaddr'), a.get('mask') or a.get('prefix'))
    print('ip addr add %s dev %s' % (a, dev))
print('ip link set %s up' % dev)
EOF
cat "$R/tmp/run/ip.sh"; sh -e "$R/tmp/run/ip.sh"

# the peer "laptop": a second solowg on loopback, configured over its UAPI socket
WG_PROCESS_FOREGROUND=1 bg wgpeer /usr/sbin/solowg -f wgpeer
wait_for 10 test -S "$R/var/run/wireguard/wgpeer.sock"
python3 - "$R/var/run/wireguard/wgpeer.sock" "$LAPTOP_PRIV" "$WG0_PUB" <<'EOF'
import base64, socket, sys
hx = lambda k: base64.b64decode(k).hex()
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(('set=1\nprivate_key=%s\nlisten_port=51821\nreplace_peers=true\n'
           'public_key=%s\nendpoint=127.0.0.1:51820\npersistent_keepalive_interval=25\n'
           'allowed_ip=0.0.0.0/0\n\n' % (hx(sys.argv[2]), hx(sys.argv[3]))).encode())
print('wgpeer UAPI:', s.recv(100).decode().strip())
EOF
ip addr add 10.99.0.2/32 dev wgpeer
ip link set wgpeer up
ip route add 10.99.0.128/25 dev wgpeer
# traffic from the laptop into the tunnel (to an address behind wg0 that is not local): handshake
ping -c 3 -i 0.3 -W 1 10.99.0.200 >/dev/null 2>&1 || true
ch ubus call solowg status >"$R/tmp/run/status.json"
python3 - "$R/tmp/run/status.json" <<'EOF'
import json, sys
st = json.load(open(sys.argv[1]))
print(json.dumps(st)[:1500])
EOF

# netifd and procd STAND-INS (see the top): the state netifd would report after the ifup
# above, and procd's board information
python3 - "$R/tmp/run/ip.sh" >"$R/tmp/run/netifd-state.json" <<'EOF'
import json, re, sys
v4, v6 = [], []
for line in open(sys.argv[1]):
    m = re.match(r'ip addr add (\S+)/(\d+) dev', line)
    if m:
        (v6 if ':' in m.group(1) else v4).append({'address': m.group(1), 'mask': int(m.group(2))})
def iface(name, proto, up, dev=None, **kw):
    d = {'interface': name, 'up': up, 'pending': False, 'available': True, 'autostart': True,
         'dynamic': False, 'proto': proto, 'uptime': 754 if up else 0, 'data': {},
         'ipv4-address': [], 'ipv6-address': [], 'ipv6-prefix': [], 'ipv6-prefix-assignment': [],
         'route': [], 'dns-server': [], 'dns-search': [], 'neighbors': [], 'inactive': {}}
    if dev: d['l3_device'] = dev; d['device'] = dev
    d.update(kw); return d
state = {
  'protocols': {'static': {'no_device': False}, 'dhcp': {'no_device': False},
                'solowg': {'no_device': True, 'no_proto_task': True}},
  'interfaces': [
    iface('loopback', 'static', True, 'lo', **{'ipv4-address': [{'address': '127.0.0.1', 'mask': 8}]}),
    iface('wan', 'dhcp', True, 'eth0', **{'ipv4-address': [{'address': '203.0.113.7', 'mask': 24}]}),
    iface('wg0', 'solowg', True, 'wg0', **{'ipv4-address': v4, 'ipv6-address': v6}),
  ],
  'board': {'kernel': open('/proc/sys/kernel/osrelease').read().strip(), 'hostname': 'OpenWrt',
            'system': 'x86_64', 'model': 'solowg screenshot host (real LuCI, stand-in procd)',
            'board_name': 'solowg-screenshots', 'rootfs_type': 'tmpfs',
            'release': {'distribution': 'OpenWrt', 'version': 'SNAPSHOT', 'revision': 'solowg-screenshots',
                        'target': 'x86/64', 'description': 'OpenWrt SNAPSHOT (real LuCI; netifd, procd: stand-ins)'}},
  }
json.dump(state, sys.stdout)
EOF
cp "$HERE/ubus-standins.uc" "$R/tmp/run/ubus-standins.uc"
bg ubus-standins /usr/bin/ucode /tmp/run/ubus-standins.uc /tmp/run/netifd-state.json
wait_for 10 ch ubus list network.interface.wg0

# uhttpd with LuCI's ucode handler, as /etc/config/uhttpd of luci-base sets it up
bg uhttpd /usr/bin/uhttpd -f -h /www -r OpenWrt -x /cgi-bin -u /ubus -t 60 -T 30 -k 20 -A 1 -n 3 -N 100 -R \
	-o /cgi-bin/luci -O /usr/share/ucode/luci/uhttpd.uc -p "127.0.0.1:$PORT"
login_page() { curl -s "http://127.0.0.1:$PORT/cgi-bin/luci/" | grep -q 'luci_password'; }
wait_for 10 login_page || { curl -s -D- "http://127.0.0.1:$PORT/cgi-bin/luci/" | head -c 3000 >&2; exit 1; }
curl -s "http://127.0.0.1:$PORT/cgi-bin/luci/" >"$LOG/login.html"   # the login page (HTTP 403, as on a router)

[ -n "${SHOTS_HOLD:-}" ] && { echo "holding for $SHOTS_HOLD s (http://127.0.0.1:$PORT/cgi-bin/luci/)"; sleep "$SHOTS_HOLD"; }

NODE_PATH="$PUPPETEER_DIR/node_modules" node "$HERE/screenshots.js" "http://127.0.0.1:$PORT" "$PASSWORD" "$OUT" "$CHROMIUM"
ls -l "$OUT"/luci-status.png "$OUT"/luci-interface.png "$OUT"/luci-client-qr.png
