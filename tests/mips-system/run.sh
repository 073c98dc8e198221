#!/usr/bin/env bash
# System test on a MIPS kernel: boots the Debian mipsel guest of image.sh in
# qemu-system-mipsel (Malta, one 24Kf CPU, 256 MiB), its NIC on a tap device inside a
# network namespace made here, and checks WireGuard tunnels between the guest and peers
# started in that namespace:
#   part a: Linux's own WireGuard module in the guest against solowg (x86_64) and
#           wireguard-go on the host
#   part b: the static mipsel solowg (openwrt/build mipsel_24kc) in the guest against the
#           same two host peers; then its OpenWrt mode, `solowg --uci`, with a mipsel ubus
#           broker and CLI (openwrt/build mipsel_24kc --crate ubusd|ubus-client 0.5.0): a
#           /etc/config/network-style file, `ubus call solowg up|status|reload`, a handshake
#           with the host's solowg, a second peer (host wireguard-go) added by a reload
#           while the first keeps its session, that peer removed again, and SIGTERM
#   part c: Debian's wireguard-go in the guest against solowg on the host: the other
#           userspace implementation on the same emulated CPU, for comparison
# Each pair runs twice, once per initiator (only the initiator knows the other's endpoint;
# host-initiated tunnels use outer IPv6), with iperf3 both ways on the guest-initiated one.
# The guest's checks are in guest/job.sh; the host then checks its own side (`wg show`,
# the endpoint it learnt, its pinger's replies).
#
#   run.sh [--rebuild] [--parts "a b c"]
#
# Environment:
#   SOLOWG_MIPS_DIR      image cache (default /var/tmp/solowg-mips-system; see image.sh)
#   SOLOWG_MIPSEL_BIN    the guest's solowg (default target/openwrt/mipsel_24kc/solowg)
#   SOLOWG_MIPSEL_UBUSD, SOLOWG_MIPSEL_UBUS  the guest's ubus broker and CLI (default
#                        target/openwrt/mipsel_24kc/ubusd and .../ubus-client)
#   SOLOWG_BIN           the host's solowg (default target/release/solowg)
#   SOLOWG_MIPS_TIMEOUT  seconds the guest may run before qemu is killed (default 900)
#   IPERF_SECS           length of each iperf3 run (default 5)
#   NT_KEEP_TMP=1        keep the logs and the console output
#   NT_SABOTAGE=wrong-key  harness self-test: the guest gets wrong peer keys, every
#                        tunnel check must FAIL
# Prints PASS/FAIL/SKIPPED lines, timings and versions, and ends with
# "N passed, M failed, K skipped".
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
RUN_TIMEOUT=${SOLOWG_MIPS_TIMEOUT:-900}
# Bounds for the boot (to the job's start marker) and for everything started on the host.
BOOT_TIMEOUT=600
HOST_MAX_S=$((BOOT_TIMEOUT + RUN_TIMEOUT + 60))
# Host daemons live as long as the whole run (boot included), not a netns test's 900 s.
NT_DAEMON_MAX_S=$HOST_MAX_S
# shellcheck source-path=SCRIPTDIR source=../netns/lib.sh
. "$here/../netns/lib.sh"

rebuild=()
PARTS="a b c"
while [[ $# -gt 0 ]]; do
	case $1 in
	--rebuild) rebuild=(--rebuild) ;;
	--parts)
		PARTS=${2:?--parts needs a value}
		shift
		;;
	-h | --help)
		awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "${BASH_SOURCE[0]}"
		exit 0
		;;
	*)
		echo "unknown argument $1" >&2
		exit 2
		;;
	esac
	shift
done

IMAGE_DIR=${SOLOWG_MIPS_DIR:-/var/tmp/solowg-mips-system}
GUEST_BIN=${SOLOWG_MIPSEL_BIN:-$NT_REPO_ROOT/target/openwrt/mipsel_24kc/solowg}
GUEST_UBUSD=${SOLOWG_MIPSEL_UBUSD:-$NT_REPO_ROOT/target/openwrt/mipsel_24kc/ubusd}
GUEST_UBUS=${SOLOWG_MIPSEL_UBUS:-$NT_REPO_ROOT/target/openwrt/mipsel_24kc/ubus-client}
# The ubus crates' version, as .ci/install pins it for the host.
UBUS_CRATES_VERSION=0.5.0
IPERF_SECS=${IPERF_SECS:-5}
# Outer link (tap) and tunnel addresses, private to the namespace made here.
HOST4=10.203.0.1
GUEST4=10.203.0.2
HOST6=fd00:203::1
GUEST6=fd00:203::2
GUEST_MAC=52:54:00:20:30:02
TAP=swgtap0
SKIPPED=0

skipped() {
	SKIPPED=$((SKIPPED + 1))
	printf 'SKIPPED %s (%s)\n' "$1" "$2"
}
summary() {
	printf '%d passed, %d failed, %d skipped\n' "$NT_PASS" "$NT_FAIL" "$SKIPPED"
	[[ $NT_FAIL -eq 0 ]]
}

run_t0=$(nt_now_ms)
nt_setup
nt_require_tools tar jq nice qemu-system-mipsel iperf3
nt_require_impl solowg
NS="swg-$NT_ID-m"

# ---- image (cached) ----------------------------------------------------------------------
t=$(nt_now_ms)
"$here/image.sh" "${rebuild[@]}" "$IMAGE_DIR" || nt_die "image build failed"
image_ms=$(($(nt_now_ms) - t))
# shellcheck source=/dev/null
. "$IMAGE_DIR/image.env"
nt_info "image ready in $image_ms ms: kernel $KERNEL_RELEASE (root file system built $ROOTFS_BUILT in $ROOTFS_BUILD_S s)"

# A static little-endian MIPS32 executable: ELF magic, 32-bit, little-endian (bytes 0-5);
# e_machine 8 = MIPS (bytes 18-19).
mipsel_elf() {
	[[ $(od -An -tx1 -N6 "$1" | tr -d ' \n') == 7f454c460101 &&
		$(od -An -tx1 -j18 -N2 "$1" | tr -d ' \n') == 0800 ]]
}
# The guest's solowg, or part b is skipped.
SOLOWG_SKIP=
if [[ " $PARTS " == *" b "* ]]; then
	if [[ ! -f $GUEST_BIN ]]; then
		SOLOWG_SKIP="no mipsel solowg at ${GUEST_BIN#"$NT_REPO_ROOT"/} (openwrt/build mipsel_24kc)"
	elif ! mipsel_elf "$GUEST_BIN"; then
		SOLOWG_SKIP="${GUEST_BIN#"$NT_REPO_ROOT"/} is not a little-endian MIPS32 executable"
	fi
fi
# OpenWrt mode also needs a mipsel ubus broker and CLI: no Debian package has them, so they
# are the pure-Rust crates the host's tests use, built by openwrt/build --crate.
UCI_SKIP=
if [[ " $PARTS " == *" b "* ]]; then
	if [[ -n $SOLOWG_SKIP ]]; then
		UCI_SKIP="solowg --uci needs the mipsel solowg: $SOLOWG_SKIP"
	else
		for f in "$GUEST_UBUSD" "$GUEST_UBUS"; do
			if [[ ! -f $f ]]; then
				UCI_SKIP="no mipsel ${f##*/} at ${f#"$NT_REPO_ROOT"/} (openwrt/build mipsel_24kc --crate ${f##*/} $UBUS_CRATES_VERSION)"
			elif ! mipsel_elf "$f"; then
				UCI_SKIP="${f#"$NT_REPO_ROOT"/} is not a little-endian MIPS32 executable"
			fi
			[[ -z $UCI_SKIP ]] || break
		done
	fi
fi

# ---- the tunnels -------------------------------------------------------------------------
# Index n: guest interface swg<n>, ports 51910+n (guest) and 51900+n (host), inner
# addresses 10.204.<n>.{1 host,2 guest} and fd00:204:<n>::{1,2}.
# OpenWrt mode (part b) has one guest interface, swg<UCI_N1>, and two host peers: UCI_N1
# (solowg-uci: host solowg, in the first configuration) and UCI_N2 (solowg-uci-added: the
# peer a reload adds; wireguard-go when installed). Both guest-initiated; UCI_N2 shares
# UCI_N1's guest key and port, and the guest interface has both tunnels' inner addresses.
declare -a T_PART=() T_GIMPL=() T_HIMPL=() T_INIT=() T_IPERF=() T_GKEY=() T_HPUB=() T_GPORT=() T_HPORT=()
host_impls=(solowg)
if nt_impl_available wireguard-go; then
	host_impls+=(wireguard-go)
else
	skipped host.wireguard-go "wireguard-go not installed (.ci/install)"
fi
n=0
for part in $PARTS; do
	peers=("${host_impls[@]}")
	case $part in
	a) gimpl=kernel ;;
	b) gimpl=solowg ;;
	c) gimpl=wireguard-go peers=(solowg) ;;
	*) nt_die "unknown part '$part' (a | b | c)" ;;
	esac
	for himpl in "${peers[@]}"; do
		for init in guest host; do
			n=$((n + 1))
			T_PART[n]=$part T_GIMPL[n]=$gimpl T_HIMPL[n]=$himpl T_INIT[n]=$init
			# Throughput for one tunnel per pair; the other role checks the handshake.
			T_IPERF[n]=0
			[[ $init == guest ]] && T_IPERF[n]=1
			T_GPORT[n]=$((51910 + n)) T_HPORT[n]=$((51900 + n))
		done
	done
	if [[ $part == b && -z $UCI_SKIP ]]; then
		UCI_N1=$((n + 1)) UCI_N2=$((n + 2))
		T_GIMPL[UCI_N1]=solowg-uci T_HIMPL[UCI_N1]=solowg
		T_GIMPL[UCI_N2]=solowg-uci-added T_HIMPL[UCI_N2]=${host_impls[-1]}
		for n in "$UCI_N1" "$UCI_N2"; do
			T_PART[n]=b T_INIT[n]=guest T_IPERF[n]=0
			T_GPORT[n]=$((51910 + UCI_N1)) T_HPORT[n]=$((51900 + n))
		done
		n=$UCI_N2
	fi
done
tname() { printf '%s.%s-vs-%s.%s-initiates' "${T_PART[$1]}" "${T_GIMPL[$1]}" "${T_HIMPL[$1]}" "${T_INIT[$1]}"; }
hif() { printf 'wg%sh%s' "$NT_ID" "$1"; }

# ---- host side: namespace, tap, peers ----------------------------------------------------------
setup_host() {
	local n ifn
	ip netns add "$NS" || return 1
	NT_NAMESPACES+=("$NS")
	ip -n "$NS" link set lo up || return 1
	ip -n "$NS" tuntap add dev "$TAP" mode tap || return 1
	ip -n "$NS" addr add "$HOST4/24" dev "$TAP" || return 1
	ip -n "$NS" addr add "$HOST6/64" dev "$TAP" nodad || return 1
	ip -n "$NS" link set "$TAP" up || return 1
	for n in "${!T_PART[@]}"; do
		[[ ${T_GIMPL[n]} == solowg && -n $SOLOWG_SKIP ]] && continue
		ifn=$(hif "$n")
		if [[ ${T_GIMPL[n]} == solowg-uci-added ]]; then
			# The same guest interface as UCI_N1's: its key.
			cp -p "$NT_TMP/g$UCI_N1.key" "$NT_TMP/g$n.key" &&
				cp -p "$NT_TMP/g$UCI_N1.pub" "$NT_TMP/g$n.pub" && nt_genkey "h$n" || return 1
		else
			nt_genkey "g$n" && nt_genkey "h$n" || return 1
		fi
		T_GKEY[n]=$(cat "$NT_TMP/g$n.key")
		T_HPUB[n]=$(nt_pub "h$n")
		# Harness self-test: the guest gets a wrong key for its peer, so every tunnel
		# check must FAIL.
		[[ ${NT_SABOTAGE:-} == wrong-key ]] && T_HPUB[n]=$(wg genkey | wg pubkey)
		nt_start_daemon "${T_HIMPL[n]}" "$NS" "$ifn" || return 1
		nt_config_iface "$NS" "$ifn" "h$n" "${T_HPORT[n]}" || return 1
		if [[ ${T_INIT[n]} == host ]]; then
			nt_config_peer "$NS" "$ifn" "$(nt_pub "g$n")" "10.204.$n.2/32,fd00:204:$n::2/128" "[$GUEST6]:${T_GPORT[n]}" || return 1
		else
			nt_config_peer "$NS" "$ifn" "$(nt_pub "g$n")" "10.204.$n.2/32,fd00:204:$n::2/128" || return 1
		fi
		nt_iface_up "$NS" "$ifn" "10.204.$n.1" "fd00:204:$n::1" || return 1
		if [[ ${T_IPERF[n]} == 1 ]]; then
			ip netns exec "$NS" timeout "$HOST_MAX_S" iperf3 -s -B "10.204.$n.1" -p "$NT_IPERF_PORT" \
				>>"$NT_TMP/iperf3-server-$n.log" 2>&1 &
			NT_BG_PIDS+=($!)
		fi
		if [[ ${T_INIT[n]} == host ]]; then
			# Queued pings make the host initiate, again after each give-up, until the guest
			# answers; bounded like everything on the host.
			ip netns exec "$NS" timeout "$HOST_MAX_S" ping -D -i 1 -W 1 "10.204.$n.2" \
				>"$NT_TMP/pinger-$n.txt" 2>&1 &
			NT_BG_PIDS+=($!)
		fi
	done
}
t=$(nt_now_ms)
setup_host || nt_die "host side setup failed"
nt_info "host side ready in $(($(nt_now_ms) - t)) ms: namespace $NS, tap $TAP, ${#T_PART[@]} tunnels"

# ---- the job disk --------------------------------------------------------------------------------
job=$NT_TMP/job
mkdir -p "$job"
cp "$here/guest/job.sh" "$job/job.sh"
[[ " $PARTS " == *" b "* && -z $SOLOWG_SKIP ]] && cp "$GUEST_BIN" "$job/solowg"
if [[ -n ${UCI_N1:-} ]]; then
	cp "$GUEST_UBUSD" "$job/ubusd"
	cp "$GUEST_UBUS" "$job/ubus"
	# The package's ubusd ACL, for the user the daemon runs as in the guest.
	mkdir -p "$job/acl"
	jq '.user = "nobody"' "$NT_REPO_ROOT/files/solowg.acl.json" >"$job/acl/solowg.json"
fi
{
	printf 'HOST4=%q\nHOST6=%q\nGUEST4=%q\nGUEST6=%q\n' "$HOST4" "$HOST6" "$GUEST4" "$GUEST6"
	printf 'PARTS=%q\nIPERF_SECS=%q\nIPERF_PORT=%q\n' "$PARTS" "$IPERF_SECS" "$NT_IPERF_PORT"
	printf 'SOLOWG_SKIP=%q\nUCI_SKIP=%q\nUCI_N1=%q\nUCI_N2=%q\n' "$SOLOWG_SKIP" "$UCI_SKIP" "${UCI_N1:-}" "${UCI_N2:-}"
	declare -p T_PART T_GIMPL T_HIMPL T_INIT T_IPERF T_GKEY T_HPUB T_GPORT T_HPORT
} >"$job/job.env"
chmod 0600 "$job/job.env"
tar -C "$job" -cf "$NT_TMP/job.tar" . || nt_die "cannot write the job disk"

# ---- boot ------------------------------------------------------------------------------------
console=$NT_TMP/console.log
: >"$console"
qemu_version=$(qemu-system-mipsel --version | head -n 1)
qemu=(
	qemu-system-mipsel -M malta -cpu 24Kf -smp 1 -m 256
	-nodefaults -no-reboot -display none -monitor none -serial "file:$console"
	-kernel "$IMAGE_DIR/vmlinux" -initrd "$IMAGE_DIR/initrd.img"
	-append "root=LABEL=$ROOT_LABEL ro rootfstype=ext4 console=ttyS0 init=$GUEST_INIT panic=1 swg.timeout=$RUN_TIMEOUT"
	# snapshot=on: the guest's writes go to a throw-away overlay; the cached image stays as built.
	-drive "if=none,id=root,file=$IMAGE_DIR/disk.ext4,format=raw,snapshot=on"
	-device "virtio-blk-pci,drive=root"
	-drive "if=none,id=job,file=$NT_TMP/job.tar,format=raw,readonly=on"
	-device "virtio-blk-pci,drive=job"
	-netdev "tap,id=net0,ifname=$TAP,script=no,downscript=no"
	# romfile=: no PXE option ROM (the Malta firmware never runs it; ipxe-qemu need not be installed).
	-device "virtio-net-pci,netdev=net0,mac=$GUEST_MAC,romfile="
)
nt_info "$qemu_version"
boot_t0=$(nt_now_ms)
# timeout: qemu dies by itself even if this script is killed before its trap runs.
ip netns exec "$NS" timeout -k 5 "$HOST_MAX_S" nice "${qemu[@]}" >"$NT_TMP/qemu.log" 2>&1 &
qemu_pid=$!
NT_BG_PIDS+=("$qemu_pid")

console_has() { tr -d '\r' <"$console" | grep -q -- "$1"; }
qemu_running() { kill -0 "$qemu_pid" 2>/dev/null; }
began() { console_has '@@SWG-JOB-BEGIN' || ! qemu_running; }
ended() { console_has '@@SWG-JOB-END' || ! qemu_running; }

boot_ms=
if nt_wait_until "$BOOT_TIMEOUT" began && console_has '@@SWG-JOB-BEGIN'; then
	boot_ms=$(($(nt_now_ms) - boot_t0))
	nt_pass boot "job started $boot_ms ms after qemu started"
else
	nt_fail boot "no job start within $BOOT_TIMEOUT s (qemu $(qemu_running && echo running || echo exited))"
	# Nothing else can be checked without a guest; the logs are printed on exit.
	nt_stop_job "$qemu_pid"
	summary || true
	exit 1
fi
job_ms=
# The guest's own timeout ends the job first (RUN_TIMEOUT, then 5 s to die).
if nt_wait_until $((RUN_TIMEOUT + 30)) ended && console_has '@@SWG-JOB-END'; then
	job_ms=$(($(nt_now_ms) - boot_t0 - boot_ms))
else
	nt_fail guest.job "no end marker within $((RUN_TIMEOUT + 30)) s"
fi
if nt_wait_until 30 nt_pid_gone "$qemu_pid"; then
	nt_pass guest.power-off "qemu exited by itself"
else
	nt_fail guest.power-off "qemu still running 30 s after the job; stopped"
	nt_stop_job "$qemu_pid"
fi
wait "$qemu_pid" 2>/dev/null || true
[[ -d $IMAGE_DIR ]] && tr -d '\r' <"$console" >"$IMAGE_DIR/last-console.log"

# ---- the guest's results -------------------------------------------------------------------------
guest_out=$NT_TMP/guest.txt
tr -d '\r' <"$console" | sed -n '/@@SWG-JOB-BEGIN/,/@@SWG-JOB-END/p' >"$guest_out"
begin_line=$(grep -m1 '@@SWG-JOB-BEGIN' "$guest_out" || true)
end_line=$(grep -m1 '@@SWG-JOB-END' "$guest_out" || true)
guest_kernel=$(sed -n 's/.*kernel=\([^@ ]*\).*/\1/p' <<<"$begin_line")
guest_uptime=$(sed -n 's/.*uptime=\([0-9.]*\).*/\1/p' <<<"$begin_line")
while IFS= read -r line; do
	case $line in
	PASS\ *)
		NT_PASS=$((NT_PASS + 1))
		printf '%s\n' "$line"
		;;
	FAIL\ *)
		NT_FAIL=$((NT_FAIL + 1))
		printf '%s\n' "$line"
		;;
	SKIPPED\ *)
		SKIPPED=$((SKIPPED + 1))
		printf '%s\n' "$line"
		;;
	'#'* | ' '*) printf '%s\n' "$line" ;;
	@@SWG-JOB-*) ;;
	*) printf '#   guest: %s\n' "$line" ;;
	esac
done <"$guest_out"
if [[ -n $end_line ]]; then
	rc=$(sed -n 's/.*rc=\([^ @]*\).*/\1/p' <<<"$end_line")
	[[ $rc == 0 ]] || nt_fail guest.job "job exit status $rc"
fi

# ---- host side checks ----------------------------------------------------------------------------
pinger_replies() { grep -c 'bytes from' "$1" 2>/dev/null || true; }
for n in "${!T_PART[@]}"; do
	name=$(tname "$n")
	# Skipped by the guest (and reported there): nothing to check on this side either.
	[[ ${T_GIMPL[n]} == solowg && -n $SOLOWG_SKIP ]] && continue
	grep -q "^SKIPPED $name " "$guest_out" && continue
	ifn=$(hif "$n")
	nt_info "host ${T_HIMPL[n]} $ifn: wg show"
	nt_wg "$NS" show "$ifn" 2>&1 | sed 's/^/#     /' || true
	# The host looks after the whole guest job: a tunnel checked early in it may have been
	# idle since, so its handshake may be as old as the job (plus the usual 120 s).
	nt_check "$name.host-wg-show" nt_wg_stats_ok "$NS" "$ifn" $((120 + ${job_ms:-0} / 1000)) || true
	if [[ ${T_INIT[n]} == guest ]]; then
		want="$GUEST4:${T_GPORT[n]}"
		ep=$(nt_peer_field "$NS" "$ifn" 3 || true)
		if [[ $ep == "$want" ]]; then
			nt_pass "$name.host-learnt-endpoint" "$ep"
		else
			nt_fail "$name.host-learnt-endpoint" "'$ep', want $want"
		fi
	else
		replies=$(pinger_replies "$NT_TMP/pinger-$n.txt")
		if ((replies > 0)); then
			nt_pass "$name.host-ping4" "$replies replies to the host's pinger, pings queued before the handshake included"
		else
			nt_fail "$name.host-ping4" "the host's pinger got no reply"
		fi
	fi
done
[[ -n $UCI_SKIP ]] && ! grep -q '^SKIPPED b.solowg-uci' "$guest_out" && skipped b.solowg-uci "$UCI_SKIP"

# ---- report --------------------------------------------------------------------------------------
nt_info "versions: $qemu_version; guest kernel ${guest_kernel:-unknown}; host solowg $("$(nt_impl_bin solowg)" --version 2>&1 | head -n 1)"
nt_info "timings: image check/build ${image_ms} ms; boot ${boot_ms:-?} ms (guest uptime ${guest_uptime:-?} s at job start); job ${job_ms:-?} ms; run $(($(nt_now_ms) - run_t0)) ms"
grep '^# TIME' "$guest_out" | sed 's/^# TIME/#   guest time:/' || true
summary
