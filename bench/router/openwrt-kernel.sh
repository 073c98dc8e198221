#!/usr/bin/env bash
# The router guest's kernel as OpenWrt 25.12 builds it: Debian's linux-source-6.12 with
# OpenWrt's kernel configuration for malta little-endian, merged as OpenWrt's build merges it
# (scripts/kconfig.pl: target/linux/generic/config-6.12 + target/linux/malta/config-6.12 +
# the le subtarget's CPU settings), then the KERNEL_* defaults of OpenWrt's
# config/Config-kernel.in for a target without small_flash (ath79/generic and ramips/mt76x8
# have none: -O2, cgroups, namespaces, seccomp; no LSM, audit, ftrace, stack protector), the
# kmods the benchmark loads (WireGuard, TUN, veth, nftables, tbf) as modules, and OpenWrt's
# generic 6.12 patches that change the network stack, where they apply.
#
#   bench/router/openwrt-kernel.sh [--openwrt DIR] [--smp] [--no-pin] [OUT_DIR]
#   SOLOWG_MIPS_DIR=OUT_DIR bench/router/run --short
#
# --openwrt DIR: OpenWrt's files, either as in its repository (DIR/target/linux/...,
#   DIR/scripts/kconfig.pl) or flat with '/' spelt '__' (../shared/openwrt-src/kernel-6.12,
#   the default). Patches are taken from DIR/target/linux/generic/{backport,pending,hack}-6.12
#   (either layout); none there is not an error, and the report says so.
# --no-pin: accept configuration files whose hashes differ from the pinned ones below.
# --smp: keep malta's SMP (MIPS MT) configuration. By default the kernel is uniprocessor, as
#   OpenWrt builds it for ath79 and ramips/mt76x8 (their configurations have no CONFIG_SMP): a
#   one-core router has no SMP locking, atomics or IPIs on its packet path.
#
# What differs from OpenWrt's own malta kernel, and why: the guest boots Debian's userland
# from an initrd on a virtio disk (BLK_DEV_INITRD, DEVTMPFS, RD_*, VIRTIO_PCI/BLK built in,
# VIRTIO_NET as a module); no debug information (-g does not change the code GCC emits, and it
# takes time and disk); FPU support for Debian's hard-float userland; the le subtarget's
# config-default, which sets little-endian and the CPU, is replaced by those settings
# (MIPS32r2, little-endian). OUT_DIR/openwrt-kernel.txt lists the inputs, their commits and
# hashes, the patches applied and why the others were not, and the options that bear on cost.
#
# OUT_DIR defaults to ${SOLOWG_MIPS_DIR:-/var/tmp/solowg-mips-system}-openwrt. The image
# (SOLOWG_MIPS_DIR, made by tests/mips-system/image.sh if missing) is copied, not changed.
# Root on Debian; 20-40 minutes on 2 cores; run again, it applies patches that appeared
# since and rebuilds only what changed.
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd -- "$here/../.." && pwd)
SERIES=6.12
owrt=$repo/../shared/openwrt-src/kernel-6.12
smp=0
pin=1
out=''
while [[ $# -gt 0 ]]; do
	case $1 in
	--openwrt) owrt=$2 && shift ;;
	--smp) smp=1 ;;
	--no-pin) pin=0 ;;
	-*) echo "usage: $0 [--openwrt DIR] [--smp] [--no-pin] [OUT_DIR]" >&2 && exit 2 ;;
	*) out=$1 ;;
	esac
	shift
done
src_img=${SOLOWG_MIPS_DIR:-/var/tmp/solowg-mips-system}
out=${out:-$src_img-openwrt}
# shellcheck source=bench/router/kernel-lib.sh
. "$here/kernel-lib.sh"
kernel_root
[[ -d $owrt ]] || die "no OpenWrt files in $owrt (--openwrt DIR)"
owrt=$(cd -- "$owrt" && pwd)

# The OpenWrt files this kernel is made from: path in openwrt/openwrt, the commit the copy was
# taken at, its SHA-256.
PINS=(
	"target/linux/generic/config-6.12 011a5a3123a0dc1046c8b566be88fab5066b631f 435e3216fb3283aa044abe0d46ff7240f895bc0d4a68370b1fb6e272e21286a9"
	"target/linux/malta/config-6.12 10b38a1c4036f68e606a1ad358e35a12ac4e945f 3151f56329ff2454dd4e2b7030f6a48b3125b6b2badef15e3ff7dac327ce51e4"
	"scripts/kconfig.pl 75e38a19cfab3a42fb225bb181b9aa652443dc31 3a4cf5ff0799263f3125443bcb638c5f2df59038dd51fd725db8daaa56673c0c"
	"target/linux/generic/kernel-6.12 517bc603a61ffe9ec49857d2b7d168c268c07050 15ff97c972fc4ccefb7c25dbf4d4752aeb07bb0be5a35d8d920c3ca3c0da3aed"
)
# owrt_file PATH: the file in either layout.
owrt_file() {
	if [[ -f $owrt/$1 ]]; then
		printf '%s\n' "$owrt/$1"
	elif [[ -f $owrt/${1//\//__} ]]; then
		printf '%s\n' "$owrt/${1//\//__}"
	else
		return 1
	fi
}
inputs=()
for p in "${PINS[@]}"; do
	read -r path commit sum <<<"$p"
	f=$(owrt_file "$path") || die "missing $path in $owrt"
	got=$(sha256sum "$f" | cut -d' ' -f1)
	if [[ $got != "$sum" ]]; then
		((pin)) || { log "WARNING: $path differs from the pinned copy ($commit)"; commit=unpinned; }
		((pin)) && die "$path differs from the pinned copy (openwrt/openwrt $commit, sha256 $sum); --no-pin to use it"
	fi
	inputs+=("$path $commit $got")
done

kernel_tools

work=$out.build
mkdir -p "$work"
src=$work/linux-source-$SERIES
kernel_source "$SERIES" "$work"
make_k() { make -C "$src" ARCH=mips CROSS_COMPILE=mipsel-linux-gnu- "$@"; }

# OpenWrt's generic patches that change the network stack: every file they touch is under
# net/, include/ or drivers/net/ (not a driver's own directory), and one at least is the
# stack's own (net/, include/net/, include/linux/net*, include/linux/skbuff*).
patch_dirs=(backport-6.12 pending-6.12 hack-6.12)
net_patch() {
	local files
	files=$(sed -n 's|^+++ [^/]*/\([^[:space:]]*\).*|\1|p' "$1")
	[[ -n $files ]] || return 1
	grep -qE '^(net/|include/net/|include/linux/net|include/linux/skbuff)' <<<"$files" || return 1
	! grep -vqE '^(net/|include/|drivers/net/[^/]+\.[ch]$|Documentation/)' <<<"$files"
}
touch "$work/patches.applied" "$work/patches.refused"
mapfile -t patches < <(
	for d in "${patch_dirs[@]}"; do
		find "$owrt/target/linux/generic/$d" -maxdepth 1 -name '*.patch' 2>/dev/null
		find "$owrt" -maxdepth 1 -name "target__linux__generic__${d}__*.patch" 2>/dev/null
	done | awk -F/ '{ print $NF "\t" $0 }' | sort | cut -f2
)
n_new=0
for p in "${patches[@]}"; do
	name=${p##*/}
	[[ $name == target__linux__generic__* ]] && name=${name#target__linux__generic__*-6.12__}
	grep -qxF "$name" "$work/patches.applied" "$work/patches.refused" && continue
	if ! net_patch "$p"; then
		continue
	elif patch -d "$src" -p1 -N --dry-run -s <"$p" >/dev/null 2>&1; then
		patch -d "$src" -p1 -N -s <"$p" >/dev/null
		echo "$name" >>"$work/patches.applied"
		n_new=$((n_new + 1))
	else
		echo "$name" >>"$work/patches.refused"
	fi
done
log "patches: $(wc -l <"$work/patches.applied") applied ($n_new new), $(wc -l <"$work/patches.refused") did not apply"

# OpenWrt's KERNEL_* defaults (config/Config-kernel.in, openwrt/openwrt 0130b33f) for a
# target without small_flash, as the CONFIG_ symbols they set. Symbols that do not exist in
# 6.12 are dropped by olddefconfig.
cat >"$work/config-kernel-defaults" <<'CFG'
CONFIG_PRINTK=y
CONFIG_SWAP=y
CONFIG_DEBUG_FS=y
CONFIG_KALLSYMS=y
# CONFIG_PERF_EVENTS is not set
# CONFIG_PROFILING is not set
# CONFIG_UBSAN is not set
# CONFIG_KCOV is not set
# CONFIG_TASKSTATS is not set
# CONFIG_PSI is not set
# CONFIG_FTRACE is not set
CONFIG_DEBUG_KERNEL=y
# CONFIG_DEBUG_VIRTUAL is not set
# CONFIG_DYNAMIC_DEBUG is not set
# CONFIG_KPROBES is not set
CONFIG_AIO=y
# CONFIG_IO_URING is not set
CONFIG_FHANDLE=y
CONFIG_FANOTIFY=y
# CONFIG_BLK_DEV_BSG is not set
# CONFIG_TRANSPARENT_HUGEPAGE is not set
# CONFIG_HUGETLBFS is not set
CONFIG_MAGIC_SYSRQ=y
CONFIG_COREDUMP=y
CONFIG_ELF_CORE=y
# CONFIG_PROVE_LOCKING is not set
# CONFIG_SOFTLOCKUP_DETECTOR is not set
# CONFIG_HARDLOCKUP_DETECTOR is not set
# CONFIG_DETECT_HUNG_TASK is not set
# CONFIG_WQ_WATCHDOG is not set
# CONFIG_DEBUG_ATOMIC_SLEEP is not set
# CONFIG_DEBUG_VM is not set
CONFIG_PRINTK_TIME=y
# CONFIG_SLUB_DEBUG is not set
# CONFIG_PROC_PAGE_MONITOR is not set
# CONFIG_KEXEC is not set
CONFIG_KEYS=y
CONFIG_CGROUPS=y
# CONFIG_CGROUP_DEBUG is not set
CONFIG_FREEZER=y
# CONFIG_CGROUP_FREEZER is not set
# CONFIG_CGROUP_DEVICE is not set
CONFIG_CGROUP_PIDS=y
CONFIG_CGROUP_RDMA=y
CONFIG_CGROUP_BPF=y
CONFIG_CPUSETS=y
# CONFIG_CPUSETS_V1 is not set
CONFIG_CGROUP_CPUACCT=y
CONFIG_MEMCG=y
# CONFIG_MEMCG_V1 is not set
# CONFIG_CGROUP_PERF is not set
CONFIG_CGROUP_SCHED=y
CONFIG_FAIR_GROUP_SCHED=y
CONFIG_CFS_BANDWIDTH=y
CONFIG_RT_GROUP_SCHED=y
CONFIG_BLK_CGROUP=y
CONFIG_BLK_DEV_THROTTLING=y
# CONFIG_NET_CLS_CGROUP is not set
# CONFIG_CGROUP_NET_CLASSID is not set
# CONFIG_CGROUP_NET_PRIO is not set
CONFIG_NAMESPACES=y
CONFIG_UTS_NS=y
CONFIG_IPC_NS=y
CONFIG_USER_NS=y
CONFIG_PID_NS=y
CONFIG_NET_NS=y
CONFIG_POSIX_MQUEUE=y
CONFIG_SECCOMP=y
CONFIG_SECCOMP_FILTER=y
CONFIG_IP_MROUTE=y
CONFIG_IP_MROUTE_MULTIPLE_TABLES=y
CONFIG_IP_PIMSM_V1=y
CONFIG_IP_PIMSM_V2=y
CONFIG_IPV6=y
CONFIG_IPV6_MULTIPLE_TABLES=y
CONFIG_IPV6_SUBTREES=y
CONFIG_IPV6_MROUTE=y
CONFIG_IPV6_MROUTE_MULTIPLE_TABLES=y
CONFIG_IPV6_PIMSM_V2=y
CONFIG_IPV6_SEG6_LWTUNNEL=y
# CONFIG_LWTUNNEL_BPF is not set
CONFIG_NET_L3_MASTER_DEV=y
# CONFIG_DCB is not set
# CONFIG_XDP_SOCKETS is not set
CONFIG_MPTCP=y
CONFIG_MPTCP_IPV6=y
CONFIG_NF_CONNTRACK_TIMEOUT=y
# CONFIG_IP_PNP is not set
CONFIG_FS_POSIX_ACL=y
CONFIG_EXT4_FS_POSIX_ACL=y
CONFIG_TMPFS_POSIX_ACL=y
CONFIG_EXT4_FS_SECURITY=y
# CONFIG_DEVMEM is not set
CONFIG_CC_OPTIMIZE_FOR_PERFORMANCE=y
# CONFIG_CC_OPTIMIZE_FOR_SIZE is not set
# CONFIG_AUDIT is not set
# CONFIG_SECURITY is not set
# CONFIG_SECURITY_NETWORK is not set
# CONFIG_SECURITY_SELINUX is not set
# CONFIG_WERROR is not set
CFG

# The le subtarget (its config-default sets these) and the kmods the benchmark loads.
cat >"$work/config-le-kmods" <<'CFG'
CONFIG_32BIT=y
# CONFIG_CPU_BIG_ENDIAN is not set
CONFIG_CPU_LITTLE_ENDIAN=y
CONFIG_CPU_MIPS32_R2=y
CONFIG_WIREGUARD=m
CONFIG_NET_UDP_TUNNEL=m
CONFIG_TUN=m
CONFIG_VETH=m
CONFIG_NETFILTER=y
CONFIG_NF_TABLES=m
CONFIG_NF_CONNTRACK=m
CONFIG_NF_NAT=m
CONFIG_NFT_CT=m
CONFIG_NFT_NAT=m
CONFIG_NFT_MASQ=m
CONFIG_NFT_REJECT=m
CONFIG_NFT_FIB_INET=m
CONFIG_NET_SCH_TBF=m
CFG
# What the emulator needs to boot Debian's userland, and the router's one core. Debian's
# mipsel userland is hard-float: without the kernel's FPU support its first floating-point
# instruction is a SIGILL (OpenWrt's userland is soft-float, so OpenWrt leaves it off; solowg
# is soft-float too, and the kernel saves FPU state only for tasks that used the FPU).
cat >"$work/config-guest" <<CFG
CONFIG_MIPS_FP_SUPPORT=y
CONFIG_BLK_DEV_INITRD=y
CONFIG_RD_GZIP=y
CONFIG_RD_XZ=y
CONFIG_RD_ZSTD=y
CONFIG_RD_LZ4=y
CONFIG_DEVTMPFS=y
CONFIG_VIRTIO_MENU=y
CONFIG_VIRTIO=y
CONFIG_VIRTIO_PCI=y
CONFIG_VIRTIO_BLK=y
CONFIG_VIRTIO_NET=m
CONFIG_EXT4_FS=y
# CONFIG_DEBUG_INFO is not set
CONFIG_DEBUG_INFO_NONE=y
# CONFIG_MODULE_SIG is not set
CONFIG_LOCALVERSION="-openwrt"
# CONFIG_LOCALVERSION_AUTO is not set
CFG
if ((smp == 0)); then
	printf '%s\n' '# CONFIG_SMP is not set' '# CONFIG_MIPS_MT_SMP is not set' '# CONFIG_MIPS_MT is not set' \
		'# CONFIG_MIPS_CPS is not set' >>"$work/config-guest"
fi
kconfig=$(owrt_file scripts/kconfig.pl)
perl "$kconfig" + + + + "$(owrt_file target/linux/generic/config-6.12)" \
	"$(owrt_file target/linux/malta/config-6.12)" "$work/config-kernel-defaults" \
	"$work/config-le-kmods" "$work/config-guest" >"$work/config.target"
# Only rebuild from scratch when the configuration changed.
if ! cmp -s "$work/config.target" "$work/config.target.used"; then
	cp "$work/config.target" "$src/.config"
	make_k olddefconfig >/dev/null
	cp "$work/config.target" "$work/config.target.used"
fi
for want in CONFIG_WIREGUARD=m CONFIG_TUN=m CONFIG_VETH=m CONFIG_VIRTIO_NET=m CONFIG_VIRTIO_BLK=y \
	CONFIG_EXT4_FS=y CONFIG_PACKET=y CONFIG_CPU_LITTLE_ENDIAN=y CONFIG_CPU_MIPS32_R2=y \
	CONFIG_CC_OPTIMIZE_FOR_PERFORMANCE=y CONFIG_SECCOMP=y CONFIG_NF_TABLES=m CONFIG_NET_SCH_TBF=m; do
	grep -qx "$want" "$src/.config" || die "configuration lacks $want"
done
for unwanted in CONFIG_SECURITY CONFIG_AUDIT CONFIG_FTRACE CONFIG_SCHED_DEBUG CONFIG_STACKPROTECTOR; do
	grep -q "^$unwanted=y" "$src/.config" && die "configuration has $unwanted, which OpenWrt leaves off"
done
((smp)) || ! grep -q '^CONFIG_SMP=y' "$src/.config" || die "configuration has CONFIG_SMP"

log "building Linux $SERIES (make -j$(nproc) vmlinux modules)"
t0=$SECONDS
make_k -j"$(nproc)" vmlinux modules >"$work/make.log" 2>&1 || die "build failed, see $work/make.log"
kver=$(cat "$src/include/config/kernel.release")
log "built $kver in $((SECONDS - t0)) s"

bash "$repo/tests/mips-system/image.sh" "$src_img"
kernel_install "$src_img" "$out" "$src"
{
	echo "# The OpenWrt-built guest kernel $kver ($(date -u +%F))"
	echo "Debian linux-source-$SERIES $(cat "$work/debian-version" 2>/dev/null || echo '?'); OpenWrt 25.12 pins $(sed -n 's/^LINUX_VERSION-6.12 = /6.12/p' "$(owrt_file target/linux/generic/kernel-6.12)")"
	echo "SMP: $( ((smp)) && echo "malta's (--smp)" || echo 'off (uniprocessor, as ath79 and ramips/mt76x8)')"
	echo
	echo "## Inputs (openwrt/openwrt path, commit, sha256)"
	printf '%s\n' "${inputs[@]}"
	echo
	echo "## Generic network patches applied"
	cat "$work/patches.applied"
	echo
	echo "## Generic network patches that did not apply to Debian's $SERIES"
	# A backport whose reverse applies is in this kernel already.
	while read -r name; do
		[[ -n $name ]] || continue
		f=$(printf '%s\n' "${patches[@]}" | grep -F "/$name" | head -n 1)
		if [[ -n $f ]] && patch -d "$src" -p1 -R --dry-run -s <"$f" >/dev/null 2>&1; then
			echo "$name (already in $kver)"
		elif [[ $name =~ -v6\.([0-9]+)- ]] && ((BASH_REMATCH[1] <= 12)); then
			echo "$name (upstream since v6.${BASH_REMATCH[1]}: this copy is an older series' backport)"
		else
			echo "$name (conflicts)"
		fi
	done <"$work/patches.refused"
	echo
	echo "## Options that bear on cost"
	grep -E '^(# )?CONFIG_(SMP|PREEMPT[A-Z_]*|HZ|CC_OPTIMIZE_FOR_[A-Z]+|SECURITY|AUDIT|FTRACE|SCHED_DEBUG|SCHEDSTATS|STACKPROTECTOR[A-Z_]*|MEMCG|CGROUPS|INIT_ON_ALLOC_DEFAULT_ON|HARDENED_USERCOPY|SLAB_FREELIST_HARDENED|RETPOLINE|JUMP_LABEL|KALLSYMS|MPTCP|NET_RX_BUSY_POLL|RPS|XPS|BPF_JIT|NETFILTER|NF_CONNTRACK)[ =]' "$src/.config"
} >"$out/openwrt-kernel.txt"
cp "$work/config-kernel-defaults" "$out/config-kernel-defaults"
log "ready: SOLOWG_MIPS_DIR=$out bench/router/run ... (inputs and patches in $out/openwrt-kernel.txt)"
