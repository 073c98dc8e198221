#!/usr/bin/env bash
# shellcheck disable=SC2016 # jq programs in single quotes: their $names come from --arg
# luci-app-solowg on OpenWrt's own web stack: a router (lib.sh: procd, netifd, the C ubusd, logd,
# the package's handler, init script and release solowg) that also runs rpcd (session, uci,
# file, rpc-sys and ucode plugins; luci-base's `luci` object; the acl.d files of LuCI and of
# luci-app-solowg) and uhttpd with its ubus and ucode handlers serving LuCI's ucode
# dispatcher, luci-static, the bootstrap theme, luci-mod-network/-status/-system,
# luci-proto-wireguard and luci-app-solowg installed as its package installs it. wg0 has a
# peer that handshakes (wireguard-go in a second namespace) and one that never does; wg1 is
# an interface moved over from kernel WireGuard, its peers in `wireguard_wg1` sections.
# Two accounts in /etc/config/rpcd: root (every group) and `viewer`, given luci-base,
# luci-app-solowg and luci-app-solowg-bench for read only (the last grants nothing for read:
# listing it shows that a read-only account gets no benchmark from it).
#
# Checked through uhttpd's /ubus as LuCI calls it (session login, then the calls): what each
# account may call, and that nothing the viewer can read holds a private key or PSK. Then in
# headless Chromium (luci-app/tests/real-luci.js, over the DevTools pipe): login of both
# accounts, Status → solowg with the real daemon's data, the client configuration's QR code
# read back, Reload configuration (the init script through rpcd's file exec), the interface
# dialog of wg1 with its migrated peers, the import of a wg-quick file saved to UCI, the
# Benchmark tab running `solowg bench` for real (against the kernel module, which this machine
# lacks: the command's error shown; then solowg against itself, 5 s per run: progress, the
# page reopened while it runs, the result with its chart, reopened again; a run sent SIGTERM:
# the command's error shown; a run sent SIGKILL: the page says it stopped), and the viewer's
# read-only page without a private key in the DOM nor a benchmark. Screenshots go to OUTDIR.
#   usage: tests/openwrt-real/luci.sh [OUTDIR]   (default: a fresh temp directory)
#   env:   SOLOWG_BIN, HANDLER, INIT, ACL (as netifd.sh); LUCI_APP (default luci-app/, the
#          package's tree: htdocs/ and root/); OW_KEEP=1 keeps the scratch directory
set -euo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/openwrt-real/lib.sh
. "$here/lib.sh"
app=${LUCI_APP:-$OW_REPO/luci-app}
tests=$OW_REPO/luci-app/tests
out=${1:-$(mktemp -d /tmp/solowg-luci-real.XXXXXX)}
mkdir -p "$out"
out=$(cd "$out" && pwd)

chromium=$(command -v chromium || command -v chromium-browser || true)
[[ -n $chromium ]] || ow_die "chromium is not installed (apt-get install chromium)"
for t in node npm curl openssl; do command -v "$t" >/dev/null || ow_die "missing tool: $t"; done
ow_setup
start_s=$SECONDS
OW_PREFIX=$("$OW_DIR/build.sh" procd netifd ubus uci ubox rpcd uhttpd ucode lucihttp luci | tail -n 1)
[[ -d $OW_PREFIX/luci/www ]] || ow_die "build.sh gave no LuCI tree in $OW_PREFIX/luci"
sh "$tests/npm-deps.sh" >/dev/null

NR=owl-$OW_ID NP=owq-$OW_ID
ow_netns "$NR"
ow_netns "$NP"
ip link add rwan netns "$NR" type veth peer name pwan netns "$NP"
ip -n "$NP" addr add 10.231.0.2/24 dev pwan
ip -n "$NP" link set pwan up
ip -n "$NR" link add rlan type veth peer name rlan-peer

# Keys. Everything private the router holds is listed in SECRETS: no reply the viewer gets
# and no page it sees may contain one.
declare -A KEY PUB
keygen() { KEY[$1]=$(wg genkey) && PUB[$1]=$(wg pubkey <<<"${KEY[$1]}"); }
for k in wg0 wg1 a b phone; do keygen "$k"; done
PSK_A=$(wg genpsk)
PSK_B=$(wg genpsk)
SECRETS=("${KEY[wg0]}" "${KEY[wg1]}" "${KEY[phone]}" "$PSK_A" "$PSK_B")
ROOT_PW=$(openssl rand -hex 12)
VIEW_PW=$(openssl rand -hex 12)

ow_root r
R=$OW_TMP/r/root U=$OW_TMP/r/usr-up
cat >"$R/etc/config/network" <<CFG
config interface 'loopback'
	option device 'lo'
	option proto 'static'
	option ipaddr '127.0.0.1'
	option netmask '255.0.0.0'

config interface 'lan'
	option device 'rlan'
	option proto 'static'
	option ipaddr '192.168.1.1'
	option netmask '255.255.255.0'

config interface 'wan'
	option device 'rwan'
	option proto 'static'
	option ipaddr '10.231.0.1'
	option netmask '255.255.255.0'

config interface 'wg0'
	option proto 'solowg'
	option private_key '${KEY[wg0]}'
	option listen_port '51820'
	list addresses '10.232.0.1/24'

config solowg_wg0 'laptop'
	option description 'laptop'
	option public_key '${PUB[a]}'
	option preshared_key '$PSK_A'
	list allowed_ips '10.232.0.2/32'
	option endpoint_host '10.231.0.2'
	option endpoint_port '51821'
	option persistent_keepalive '25'

config solowg_wg0 'phone'
	option description 'phone'
	option public_key '${PUB[phone]}'
	option private_key '${KEY[phone]}'
	list allowed_ips '10.232.0.3/32'

config interface 'wg1'
	option proto 'solowg'
	option private_key '${KEY[wg1]}'
	option listen_port '51822'
	list addresses '10.233.0.1/24'

config wireguard_wg1
	option description 'tablet (from kernel WireGuard)'
	option public_key '${PUB[b]}'
	option preshared_key '$PSK_B'
	list allowed_ips '10.233.0.2/32'
	option endpoint_host '10.231.0.2'
	option endpoint_port '51823'
	option route_allowed_ips '1'
CFG

# LuCI as its packages install it (build.sh's luci recipe staged it), then luci-app-solowg
# as luci.mk installs it: htdocs/ to /www, root/ to /.
cp -a "$OW_PREFIX/luci/www" "$R/www"
cp -a "$OW_PREFIX/luci/etc/." "$R/etc/"
cp -a "$OW_PREFIX/luci/usr/." "$U/"
cp -a "$OW_PREFIX/share/rpcd/." "$U/share/rpcd/"
cp -a "$app/htdocs/." "$R/www/"
cp -a "$app/root/usr/." "$U/"
# luci-lib-uqr is not in ../shared/openwrt-src: its stand-in from the npm uqr it bundles.
node -e 'process.stdout.write(require(process.argv[1]).source())' "$tests/luci-standin/uqr-standin.js" \
	>"$R/www/luci-static/resources/uqr.js"
# ucode-mod-html is not there either (see glue-luci/html.uc).
install -D -m 644 "$here/glue-luci/html.uc" "$U/share/ucode/html.uc"
ln -s "$OW_PREFIX/sbin/rpcd" "$U/sbin/rpcd"
ln -s "$OW_PREFIX/bin/uhttpd" "$U/sbin/uhttpd"
ln -s "$OW_PREFIX/bin/ucode" "$U/bin/ucode"
# The accounts: root and a read-only viewer, with crypt(3) hashes in /etc/shadow.
echo 'viewer:x:1000:1000:viewer:/var:/bin/false' >>"$R/etc/passwd"
{
	printf 'root:%s:20000:0:99999:7:::\n' "$(openssl passwd -6 -stdin <<<"$ROOT_PW")"
	printf 'viewer:%s:20000:0:99999:7:::\n' "$(openssl passwd -6 -stdin <<<"$VIEW_PW")"
	printf 'solowg:*:20000:0:99999:7:::\nnobody:*:20000:0:99999:7:::\n'
} >"$R/etc/shadow"
chmod 600 "$R/etc/shadow"
cat >"$R/etc/config/rpcd" <<'CFG'
config rpcd
	option socket /var/run/ubus/ubus.sock
	option timeout 30

config login
	option username 'root'
	option password '$p$root'
	list read '*'
	list write '*'

config login
	option username 'viewer'
	option password '$p$viewer'
	list read 'unauthenticated'
	list read 'luci-base'
	list read 'luci-app-solowg'
	list read 'luci-app-solowg-bench'
CFG
cat >"$R/etc/config/system" <<'CFG'
config system
	option hostname 'OpenWrt'
	option timezone 'UTC'
CFG
printf 'NAME="OpenWrt"\nVERSION="SNAPSHOT"\nID="openwrt"\nPRETTY_NAME="OpenWrt SNAPSHOT"\n' >"$R/etc/os-release"

r() { ow_in r "$@"; }
up() { r ubus call "network.interface.$1" status 2>/dev/null | jq -e '.up == true' >/dev/null; }
check() {
	local n=$1 why=$2
	shift 2
	if "$@"; then ow_pass "$n"; else ow_fail "$n" "$why"; fi
}

t0=$SECONDS
ow_boot r "$NR"
check boot.up "wg0 and wg1 not both up within 20 s of boot" ow_wait 20 eval 'up wg0 && up wg1'
[[ $OW_FAIL == 0 ]] || ow_die "the router did not come up: $(r logread | tail -n 20)"

# rpcd reads its plugins, acl.d and ucode scripts under the prefix it was built with, ucode
# its modules too: in this router that prefix's share/ is an overlay whose rpcd/ and
# ucode/luci are the router's /usr/share/rpcd and /usr/share/ucode/luci, as on OpenWrt.
# Mounted from inside the router, with its paths: entering its mount namespace puts a
# process at that namespace's root, which is not this script's where the suite runs chrooted.
so=$R/.ow-share/up
mkdir -p "$so/ucode" "$R/.ow-share/work"
ln -s /usr/share/rpcd "$so/rpcd"
ln -s /usr/share/ucode/luci "$so/ucode/luci"
ln -s /usr/share/ucode/html.uc "$so/ucode/html.uc"
nsenter -t "${OW_PID1[r]}" -m -r -- mount -t overlay overlay \
	-o "lowerdir=$OW_PREFIX/share,upperdir=/.ow-share/up,workdir=/.ow-share/work" "$OW_PREFIX/share" ||
	ow_die "overlay over $OW_PREFIX/share failed"
# The packages' uci-defaults, run once as base-files does at boot.
# shellcheck disable=SC2016 # the router's shell expands it
r sh -c 'for f in /etc/uci-defaults/*; do (. "$f") >/dev/null 2>&1 && rm -f "$f"; done'
ow_bg r rpcd "/sbin/rpcd -s /var/run/ubus/ubus.sock -t 30"
ow_wait 10 eval 'r ubus -t 1 list luci >/dev/null 2>&1 && r ubus -t 1 list session >/dev/null 2>&1' ||
	ow_die "rpcd published no luci/session object: $(cat "$OW_TMP/r/rpcd.log")"
# uhttpd as luci-base's /etc/config/uhttpd has it (main section), on the router's loopback.
ow_bg r uhttpd "/sbin/uhttpd -f -h /www -r OpenWrt -x /cgi-bin -u /ubus -t 60 -T 30 -k 20 -A 1 -n 3 -N 100 -R -o /cgi-bin/luci -O $OW_PREFIX/share/ucode/luci/uhttpd.uc -p 127.0.0.1:80"
login_page() { ip netns exec "$NR" curl -s -m 5 http://127.0.0.1/cgi-bin/luci/ | grep -q luci_password; }
check web.login-page "no LuCI login page at http://127.0.0.1/cgi-bin/luci/ within 15 s: $(cat "$OW_TMP/r/uhttpd.log")" \
	ow_wait 15 login_page
[[ $OW_FAIL == 0 ]] || ow_die "the web stack did not come up"
echo "# boot to LuCI's login page: $((SECONDS - t0)) s"
# LUCI_HOLD=SECONDS: time to look at the router by hand (nsenter -t PID1), then go on.
[[ -z ${LUCI_HOLD:-} ]] || { echo "# holding: router PID 1 ${OW_PID1[r]}, netns $NR"; sleep "$LUCI_HOLD"; }

# The peers: wireguard-go for wg0's laptop and wg1's migrated tablet, so that the status
# shows handshakes, transfer and rates.
wgp_up() { # NAME KEY PORT ROUTER_PUB ROUTER_PORT TUNNEL_ADDR ROUTER_TUNNEL_ADDR
	local dev=wgq$OW_ID$1
	ip netns exec "$NP" timeout "$OW_MAX_S" wireguard-go -f "$dev" >>"$OW_TMP/wireguard-go-$1.log" 2>&1 &
	OW_BG+=("$!")
	ow_wait 5 test -S "/var/run/wireguard/$dev.sock" || ow_die "wireguard-go $dev did not start"
	ip netns exec "$NP" wg set "$dev" private-key <(echo "$2") listen-port "$3" \
		peer "$4" preshared-key <(echo "$8") endpoint "10.231.0.1:$5" allowed-ips "$7/32" persistent-keepalive 25
	ip -n "$NP" addr add "$6/32" dev "$dev"
	ip -n "$NP" link set "$dev" up
	ip -n "$NP" route add "$7/32" dev "$dev"
}
wgp_up a "${KEY[a]}" 51821 "${PUB[wg0]}" 51820 10.232.0.2 10.232.0.1 "$PSK_A"
wgp_up b "${KEY[b]}" 51823 "${PUB[wg1]}" 51822 10.233.0.2 10.233.0.1 "$PSK_B"
ping1() { r ping -n -q -c 1 -W 1 "$@" >/dev/null 2>&1; }
check tunnel.wg0 "no ping over wg0 to the laptop within 10 s" ow_wait 10 ping1 -I wg0 10.232.0.2
check tunnel.wg1 "no ping over wg1 (wireguard_wg1 peer) within 10 s" ow_wait 10 ping1 -I wg1 10.233.0.2
# traffic that keeps the rate graphs moving while the pages are open
ip netns exec "$NP" timeout 300 ping -q -i 0.5 10.232.0.1 >/dev/null 2>&1 &
OW_BG+=("$!")

# --- uhttpd's /ubus, as LuCI's rpc.js calls it: JSON-RPC `call` with the session id.
rpc_n=0
ubus_call() { # SID OBJECT METHOD [ARGS-JSON]: the JSON-RPC reply
	rpc_n=$((rpc_n + 1))
	jq -nc --arg s "$1" --arg o "$2" --arg m "$3" --argjson a "${4:-{\}}" --argjson id "$rpc_n" \
		'{jsonrpc:"2.0",id:$id,method:"call",params:[$s,$o,$m,$a]}' |
		ip netns exec "$NR" curl -s -m 10 -H 'Content-Type: application/json' --data-binary @- http://127.0.0.1/ubus
}
login() { # USER PASSWORD: the session id (the password goes through stdin, not argv)
	jq -nc --arg u "$1" --arg p "$2" \
		'{jsonrpc:"2.0",id:1,method:"call",params:["00000000000000000000000000000000","session","login",{username:$u,password:$p}]}' |
		ip netns exec "$NR" curl -s -m 10 -H 'Content-Type: application/json' --data-binary @- http://127.0.0.1/ubus |
		jq -r '.result[1].ubus_rpc_session // empty'
}
jqe() { jq -e "$@" >/dev/null; }
code() { jq -r 'if .error then "error \(.error.code) \(.error.message)" else "status \(.result[0])" end' <<<"$1"; }
no_secret() { # TEXT: none of SECRETS in it
	local s
	for s in "${SECRETS[@]}"; do [[ $1 != *"$s"* ]] || return 1; done
}
SID_ROOT=$(login root "$ROOT_PW")
SID_VIEW=$(login viewer "$VIEW_PW")
check ubus.login-root "root's session login over /ubus failed" test -n "$SID_ROOT"
check ubus.login-viewer "viewer's session login over /ubus failed" test -n "$SID_VIEW"
bad=$(login viewer "wrong-$VIEW_PW")
check ubus.login-wrong-password "a wrong password gave a session" test -z "$bad"

st=$(ubus_call "$SID_VIEW" solowg status)
check ubus.viewer-status "viewer: solowg status not allowed ($(code "$st"))" test "$(code "$st")" = "status 0"
check ubus.viewer-status-data "viewer: status lacks wg0's laptop with a handshake" \
	jqe --arg k "${PUB[a]}" '[.result[1] | .. | objects | select(.public_key? == $k and (.latest_handshake // 0) > 0)] | length == 1' <<<"$st"
check ubus.viewer-status-no-secret "viewer: solowg status holds a private key or PSK" no_secret "$st"
check ubus.viewer-status-no-private-field "viewer: solowg status has a private_key field" \
	jqe '[.result[1] | .. | objects | select(has("private_key"))] | length == 0' <<<"$st"
for call in "uci get {\"config\":\"network\"}" "uci get {\"config\":\"network\",\"section\":\"wg0\",\"option\":\"private_key\"}" \
	"uci get {\"config\":\"network\",\"section\":\"laptop\",\"option\":\"preshared_key\"}"; do
	read -r o m a <<<"$call"
	rep=$(ubus_call "$SID_VIEW" "$o" "$m" "$a")
	check "ubus.viewer-denied.$o-$m-$(jq -r '[.config,.section,.option]|map(select(.))|join(".")' <<<"$a")" \
		"viewer: $o $m $a was not refused by rpcd ($(code "$rep"))" test "$(code "$rep")" = "status 6"
	check "ubus.viewer-no-secret.$o-$m-$(jq -r '[.config,.section,.option]|map(select(.))|join(".")' <<<"$a")" \
		"viewer: $o $m $a returned a secret" no_secret "$rep"
done
rep=$(ubus_call "$SID_VIEW" uci get '{"config":"solowg"}')
check ubus.viewer-uci-solowg "viewer: uci get solowg not allowed ($(code "$rep"))" test "$(code "$rep")" = "status 0"
for call in "solowg genkey" "solowg genpsk" "solowg reload" "solowg pubkey" "network.interface.wan status" \
	"file exec" "uci set" "uci apply"; do
	read -r o m <<<"$call"
	rep=$(ubus_call "$SID_VIEW" "$o" "$m" '{"command":"/etc/init.d/solowg","params":["reload"],"config":"solowg","values":{"log_level":"verbose"},"private_key":"x"}')
	check "ubus.viewer-denied.$o-$m" "viewer: $o $m not refused by uhttpd ($(code "$rep"))" test "$(code "$rep")" = "error -32002 Access denied"
	check "ubus.viewer-no-secret.$o-$m" "viewer: $o $m returned a secret" no_secret "$rep"
done
acc=$(ubus_call "$SID_VIEW" session access "{\"scope\":\"uci\",\"object\":\"network\",\"function\":\"read\"}")
check ubus.viewer-access-network "viewer: session access uci network read is not false ($acc)" \
	jqe '.result[1].access == false' <<<"$acc"
# The same calls as root succeed: the refusals above come from the ACL, not from a broken call.
rep=$(ubus_call "$SID_ROOT" uci get '{"config":"network","section":"wg0","option":"private_key"}')
check ubus.root-uci-network "root: uci get network.wg0.private_key did not return the key" \
	jqe --arg k "${KEY[wg0]}" '.result[1].value == $k' <<<"$rep"
rep=$(ubus_call "$SID_ROOT" solowg genpsk)
check ubus.root-genpsk "root: solowg genpsk failed ($(code "$rep"))" test "$(code "$rep")" = "status 0"
rep=$(ubus_call "$SID_ROOT" file exec '{"command":"/etc/init.d/solowg","params":["stop"]}')
check ubus.root-exec-stop-refused "root: exec of /etc/init.d/solowg stop was not refused by rpcd's file grant ($(code "$rep"))" \
	test "$(code "$rep")" = "status 6"
# The benchmark: the viewer may neither start it nor read its state file (uhttpd refuses the
# ubus call: the group grants nothing for read); root may run only the listed command lines.
bench_args='["bench","--detach","--state-file","/var/run/solowg-bench.json","--json","--seconds","5","--impls","solowg,solowg"]'
for call in "file exec {\"command\":\"/usr/sbin/solowg\",\"params\":$bench_args}" \
	'file read {"path":"/var/run/solowg-bench.json"}'; do
	read -r o m a <<<"$call"
	rep=$(ubus_call "$SID_VIEW" "$o" "$m" "$a")
	check "ubus.viewer-denied.bench-$m" "viewer: $o $m of the benchmark not refused by uhttpd ($(code "$rep"))" \
		test "$(code "$rep")" = "error -32002 Access denied"
done
for params in '["bench","--detach","--state-file","/var/run/solowg-bench.json","--json","--seconds","7"]' \
	'["bench","--detach","--state-file","/etc/passwd","--json","--seconds","5"]' '["bench","--seconds","5"]' '["genkey"]'; do
	rep=$(ubus_call "$SID_ROOT" file exec "{\"command\":\"/usr/sbin/solowg\",\"params\":$params}")
	check "ubus.root-bench-refused.$(jq -r 'join("_")' <<<"$params" | tr -c 'A-Za-z0-9_\n' '-')" \
		"root: solowg $params was not refused by rpcd's file grant ($(code "$rep"))" test "$(code "$rep")" = "status 6"
done

# --- the pages in headless Chromium, inside the router's network namespace.
jq -n --arg rootpw "$ROOT_PW" --arg viewpw "$VIEW_PW" --arg wg0pub "${PUB[wg0]}" --arg wg1pub "${PUB[wg1]}" \
	--arg pska "$PSK_A" --arg pskb "$PSK_B" --arg apub "${PUB[a]}" --arg bpub "${PUB[b]}" --arg phonepub "${PUB[phone]}" \
	--argjson secrets "$(printf '%s\n' "${SECRETS[@]}" | jq -R . | jq -s .)" --arg root "$R" \
	'{base:"http://127.0.0.1", root_password:$rootpw, viewer_password:$viewpw, wg0_pub:$wg0pub, wg1_pub:$wg1pub,
	  psk_a:$pska, psk_b:$pskb, laptop_pub:$apub, tablet_pub:$bpub, phone_pub:$phonepub, secrets:$secrets,
	  wan:"10.231.0.1", lan:"192.168.1.1", wg0_port:"51820", router_root:$root}' >"$OW_TMP/page-env.json"
chmod 600 "$OW_TMP/page-env.json"
t0=$SECONDS
set +e
ip netns exec "$NR" timeout 420 node "$tests/real-luci.js" "$OW_TMP/page-env.json" "$out" "$chromium" \
	>"$OW_TMP/pages.log" 2>&1
rc=$?
set -e
while IFS= read -r line; do
	case $line in
	PASS\ *) ow_pass "page.${line#PASS }" ;;
	FAIL\ *)
		n=${line#FAIL }
		ow_fail "page.${n%%:*}" "${n#*: }"
		;;
	*) echo "    | $line" ;;
	esac
done <"$OW_TMP/pages.log"
check page.driver "real-luci.js exited with $rc" test "$rc" = 0
echo "# pages: $((SECONDS - t0)) s"

# What the pages' Save did: the import's peers, staged in root's session (not committed).
check uci.import-not-committed "the import's staged changes reached /etc/config/network before Save & Apply" \
	test "$(r uci -q get network.wg0.private_key)" = "${KEY[wg0]}"
check log.no-secret "a private key or PSK in the router's log" no_secret "$(r logread)"
find "$out" -maxdepth 1 -name '*.png' | sort | sed 's/^/# screenshot /'
echo "# luci.sh: $((SECONDS - start_s)) s"
ow_summary
