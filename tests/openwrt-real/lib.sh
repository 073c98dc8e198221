# shellcheck shell=bash
# Routers made of OpenWrt's own daemons, for the real-component tests. Sourced.
#
# A router is a network namespace, a mount namespace and a PID namespace around a root
# laid out as OpenWrt's: /usr is the host's under an overlay that adds OpenWrt's files
# (the programs built by build.sh, the package's files from files/, the shell glue from
# glue/), /bin/sh is busybox (OpenWrt's ash), /etc, /var and /tmp are the router's own, /dev
# holds only null, zero, full, random, urandom and net/tun (logd's /dev/log stays inside).
# ubusd, logd and procd run there as on a router (procd as a plain process, not PID 1, which
# it only is when it boots a whole system); procd then starts /etc/rc.d/S* (`boot`), which
# brings up netifd and solowg as procd services. The namespace's PID 1 is a bash that
# sleeps (and reaps): killing it ends every process of the router.
#
# Everything here is bounded: waits in time, routers by OW_MAX_S (they end themselves
# after it even when the test is killed), the processes started are stopped by PID.

OW_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
OW_REPO=$(cd -- "$OW_DIR/../.." && pwd)
OW_MAX_S=${OW_MAX_S:-900}
OW_PASS=0
OW_FAIL=0
OW_TMP=
OW_ID=
OW_NS=()
OW_BG=()
declare -A OW_PID1=()

ow_info() { printf '# %s\n' "$*"; }
ow_die() {
	printf 'ERROR: %s\n' "$*" >&2
	exit 2
}
ow_pass() {
	OW_PASS=$((OW_PASS + 1))
	echo "PASS $1"
}
ow_fail() { # NAME WHY...
	OW_FAIL=$((OW_FAIL + 1))
	local n=$1
	shift
	echo "FAIL $n: $*"
}
# ow_check NAME WHY CMD...: PASS when CMD succeeds, else FAIL with WHY.
ow_check() {
	local n=$1 why=$2
	shift 2
	if "$@"; then ow_pass "$n"; else ow_fail "$n" "$why"; fi
}
# ow_wait SECONDS CMD...: CMD polled every 0.1 s until it succeeds or time is up.
ow_wait() {
	local end=$((SECONDS + $1)) i
	shift
	for ((i = 0; i < 100000; i++)); do
		"$@" && return 0
		((SECONDS < end)) || return 1
		sleep 0.1
	done
	return 1
}

# ow_wan_pair: the router's namespace NR and its peer's NP, joined by a veth (rwan in NR,
# pwan in NP at 10.231.0.2/24, still down: callers add addresses first).
ow_wan_pair() {
	NR=owr-$OW_ID NP=owp-$OW_ID
	ow_netns "$NR"
	ow_netns "$NP"
	ip link add rwan netns "$NR" type veth peer name pwan netns "$NP"
	ip -n "$NP" addr add 10.231.0.2/24 dev pwan
}

# ow_network_head: the start of a router's /etc/config/network, loopback and the wan on rwan
# (10.231.0.1/24, the peer's side at .2 as gateway); the scenarios add their tunnels after it.
ow_network_head() {
	cat <<'CFG'
config interface 'loopback'
	option device 'lo'
	option proto 'static'
	option ipaddr '127.0.0.1'
	option netmask '255.0.0.0'

config interface 'wan'
	option device 'rwan'
	option proto 'static'
	option ipaddr '10.231.0.1'
	option netmask '255.255.255.0'
	option gateway '10.231.0.2'
CFG
}

ow_cleanup() {
	local r p ns
	# Best effort: a process already gone is no error (and errexit would end the trap).
	set +e
	for r in "${!OW_PID1[@]}"; do
		p=${OW_PID1[$r]}
		[[ -n $p ]] && kill -KILL "$p" 2>/dev/null
	done
	for p in "${OW_BG[@]}"; do
		kill "$p" 2>/dev/null
	done
	sleep 0.2
	for p in "${OW_BG[@]}"; do
		kill -KILL "$p" 2>/dev/null
	done
	for ns in "${OW_NS[@]}"; do
		ip netns del "$ns" 2>/dev/null
	done
	[[ -n $OW_TMP && -z ${OW_KEEP:-} ]] && rm -rf "$OW_TMP"
	[[ -n ${OW_KEEP:-} ]] && echo "# kept $OW_TMP"
	return 0
}

# ow_setup: root, the tools, the components built (build.sh), the solowg binary; scratch.
ow_setup() {
	[[ $(id -u) == 0 ]] || ow_die "needs root (namespaces, mounts)"
	local t
	for t in ip busybox unshare nsenter wg wireguard-go jq md5sum; do
		command -v "$t" >/dev/null || ow_die "missing tool: $t"
	done
	OW_PREFIX=$("$OW_DIR/build.sh" procd netifd ubus uci ubox | tail -n 1)
	[[ -x $OW_PREFIX/sbin/netifd ]] || ow_die "build.sh gave no netifd in $OW_PREFIX"
	OW_SOLOWG=${SOLOWG_BIN:-}
	if [[ -z $OW_SOLOWG ]]; then
		local td=${CARGO_TARGET_DIR:-$OW_REPO/target}
		[[ $td == /* ]] || td=$OW_REPO/$td
		OW_SOLOWG=$td/release/solowg
	fi
	[[ -x $OW_SOLOWG ]] || ow_die "no solowg binary at $OW_SOLOWG (cargo build --release, or SOLOWG_BIN)"
	OW_ID=$(printf '%04x' $((RANDOM % 65536)))
	OW_TMP=$(mktemp -d "/tmp/solowg-owrt-$OW_ID.XXXX")
	chmod 755 "$OW_TMP"
	trap ow_cleanup EXIT
	trap 'exit 130' INT TERM
}

ow_netns() { # NAME: a namespace of ours, with lo up
	ip netns add "$1" || ow_die "ip netns add $1"
	OW_NS+=("$1")
	ip -n "$1" link set lo up
}

# ow_root NAME: lays out router NAME's root in OW_TMP/NAME (before ow_boot).
#   env: HANDLER INIT ACL (default: the package's files/solowg.sh, .init, .acl.json)
ow_root() {
	local n=$1 d=$OW_TMP/$1 u f
	local root=$d/root
	u=$d/usr-up
	mkdir -p "$root"/{usr,proc,sys,dev,etc,tmp,root,var/run,var/lock,var/state,var/log} "$d/usr-work" \
		"$u"/{bin,sbin,lib/netifd/proto,lib/functions,share/libubox,share/acl.d}
	chmod 1777 "$root/tmp"
	for f in bin sbin lib lib64; do ln -s "usr/$f" "$root/$f"; done
	# OpenWrt's shell.
	ln -sf /usr/bin/busybox "$u/bin/sh"
	# The built programs, where OpenWrt has them; their libraries through their RPATH.
	for f in ubusd procd netifd logd logread validate_data; do
		ln -s "$OW_PREFIX/sbin/$f" "$u/sbin/$f"
	done
	for f in ubus uci jshn; do ln -s "$OW_PREFIX/bin/$f" "$u/bin/$f"; done
	# procd preloads it into services for line-buffered output.
	ln -s "$OW_PREFIX/lib/libsetlbf.so" "$u/lib/libsetlbf.so"
	cp "$OW_PREFIX/share/libubox/jshn.sh" "$u/share/libubox/"
	cp "$OW_PREFIX/lib/netifd/"*.sh "$u/lib/netifd/"
	# OpenWrt's shell glue (stand-ins; SOLOWG_OPENWRT_FILES puts the real ones over them).
	cp -a "$OW_DIR/glue/etc/." "$root/etc/"
	cp -a "$OW_DIR/glue/lib/." "$u/lib/"
	cp -a "$OW_DIR/glue/sbin/." "$u/sbin/"
	if [[ -n ${SOLOWG_OPENWRT_FILES:-} ]]; then
		cp -a "$SOLOWG_OPENWRT_FILES/etc/." "$root/etc/" 2>/dev/null || true
		for f in lib sbin bin usr/share usr/sbin usr/bin; do
			[[ -d $SOLOWG_OPENWRT_FILES/$f ]] || continue
			cp -a "$SOLOWG_OPENWRT_FILES/$f/." "$u/${f#usr/}/"
		done
	fi
	# The package, installed as its Makefile installs it.
	install -m 755 "$OW_SOLOWG" "$u/sbin/solowg"
	install -m 755 "${INIT:-$OW_REPO/files/solowg.init}" "$root/etc/init.d/solowg"
	install -m 755 "${HANDLER:-$OW_REPO/files/solowg.sh}" "$u/lib/netifd/proto/solowg.sh"
	install -m 644 "${ACL:-$OW_REPO/files/solowg.acl.json}" "$u/share/acl.d/solowg.json"
	mkdir -p "$root/etc/config" "$root/etc/rc.d"
	install -m 644 "$OW_REPO/files/solowg.config" "$root/etc/config/solowg"
	# The user the package asks base-files for (Require-User solowg=820:solowg=820).
	printf 'root:x:0:0:root:/root:/bin/sh\nsolowg:x:820:820:solowg:/var/run/solowg:/bin/false\nnobody:x:65534:65534:nobody:/var:/bin/false\n' >"$root/etc/passwd"
	printf 'root:x:0:\nsolowg:x:820:\nnogroup:x:65534:\n' >"$root/etc/group"
	printf '127.0.0.1 localhost\n' >"$root/etc/hosts"
	ln -s ../init.d/network "$root/etc/rc.d/S20network"
	ln -s ../init.d/solowg "$root/etc/rc.d/S19solowg"
	# PID 1's script: sleeps (bounded) and reaps.
	printf '%s\n' 'trap "exit 0" TERM' "sleep $OW_MAX_S & wait \$!" >"$root/etc/ow-pid1"
}

# By device and inode: the link's text is a path only where the reader's root reaches the
# process's mount namespace (not when this suite itself runs in a chroot).
ow_rooted() { [[ $(stat -Lc %d:%i "/proc/$1/root/" 2>/dev/null) == "$(stat -c %d:%i "$2")" ]]; }
# ow_boot NAME NETNS: the router's namespaces and PID 1, then ubusd, logd, procd and
# `boot` of /etc/rc.d/S*. Returns once procd's `service` object is there.
ow_boot() {
	local n=$1 ns=$2 d=$OW_TMP/$1 p i
	# shellcheck disable=SC2016 # expanded by the inner bash
	ip netns exec "$ns" unshare --mount --pid --fork --propagation private bash -c '
		set -e
		d=$1 prefix=$2 root=$1/root
		mount -t overlay overlay -o "lowerdir=/usr,upperdir=$d/usr-up,workdir=$d/usr-work" "$root/usr"
		mount -t proc proc "$root/proc"
		mount -t sysfs sysfs "$root/sys"
		mount -t tmpfs -o mode=755,size=1m tmpfs "$root/dev"
		mkdir "$root/dev/net"
		for f in null zero full random urandom net/tun; do
			touch "$root/dev/$f"
			mount --bind "/dev/$f" "$root/dev/$f"
		done
		mkdir -p "$root$prefix"
		mount --bind "$prefix" "$root$prefix"
		mount -o remount,bind,ro "$root$prefix"
		exec chroot "$root" /usr/bin/bash /etc/ow-pid1
	' ow-pid1 "$d" "$OW_PREFIX" >"$d/pid1.log" 2>&1 &
	OW_BG+=("$!")
	p=
	for ((i = 0; i < 50; i++)); do
		p=$(pgrep -P "$!" -x bash) && break
		p=
		sleep 0.1
	done
	[[ -n $p ]] || ow_die "$n: no PID 1 ($(cat "$d/pid1.log"))"
	OW_PID1[$n]=$p
	# Its mounts are made before it execs into the chroot: wait for the chroot.
	ow_wait 5 ow_rooted "$p" "$d/root" || ow_die "$n: PID 1 did not enter its root ($(cat "$d/pid1.log"))"
	ow_bg "$n" ubusd "/sbin/ubusd"
	ow_wait 5 ow_in "$n" test -S /var/run/ubus/ubus.sock || ow_die "$n: ubusd did not start ($(cat "$d/ubusd.log"))"
	ow_bg "$n" logd "/sbin/logd -S 64"
	ow_bg "$n" procd "/sbin/procd -S"
	ow_wait 10 ow_in "$n" ubus -t 1 list service >/dev/null 2>&1 || ow_die "$n: procd's service object missing ($(cat "$d/procd.log"))"
	# reload_config compares with what it recorded last: record the booted configuration.
	ow_in "$n" reload_config
	# shellcheck disable=SC2016 # the router's shell expands it
	ow_in "$n" sh -c 'for s in /etc/rc.d/S*; do "$s" boot; done' >"$d/boot.log" 2>&1 ||
		ow_die "$n: boot failed: $(cat "$d/boot.log")"
}

# ow_in NAME CMD...: runs CMD inside router NAME (its namespaces and root), with a clean
# environment as a router's shell has.
ow_in() {
	local n=$1
	shift
	nsenter -t "${OW_PID1[$n]}" -m -n -p -r -w -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root "$@"
}
# ow_bg NAME LOG CMDLINE: a daemon inside router NAME, its output in OW_TMP/NAME/LOG.log.
ow_bg() {
	local n=$1 log=$2
	shift 2
	# shellcheck disable=SC2086 # a command line
	ow_in "$n" $1 >>"$OW_TMP/$n/$log.log" 2>&1 &
	OW_BG+=("$!")
}

ow_summary() {
	echo "$OW_PASS passed, $OW_FAIL failed"
	[[ $OW_FAIL == 0 ]]
}
