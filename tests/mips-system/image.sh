#!/usr/bin/env bash
# Builds, once, the little-endian MIPS guest that run.sh boots in qemu-system-mipsel (Malta
# board, 24Kf CPU): a Debian bookworm mipsel root file system, its Malta kernel and an initrd.
# Everything comes from Debian's archive, through the mirror the host's apt uses.
#
#   image.sh [--rebuild] [DIR]      DIR: ${SOLOWG_MIPS_DIR:-/var/tmp/solowg-mips-system}
#
# Two cached layers, each rebuilt only when its inputs change (or with --rebuild):
#   rootfs/   debootstrap --foreign, then the second stage in a chroot under qemu-mipsel-static
#             (binfmt_misc); a small initrd (virtio and ext4 only). Slow: minutes.
#   disk.ext4 the tree plus guest/init.sh, made by mkfs.ext4 -d (no loop mount); seconds.
# Also written: vmlinux, initrd.img and image.env (kernel release, label, build times).
# The guest's init (guest/init.sh) runs one job per boot; run.sh writes the job.
#
# Environment: SOLOWG_MIPS_MIRROR overrides the Debian mirror read from /etc/apt/sources.list*.
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)

# bookworm is the last Debian release with a mipsel port; 4kc-malta is its Malta kernel
# flavour (built for MIPS32r2 despite the name, so it runs on a 24K).
SUITE=bookworm
ARCH=mipsel
KERNEL_PKG=linux-image-4kc-malta
# wireguard-go: a second userspace implementation in the guest, on the same emulated CPU;
# ethtool: bench/router --no-gro switches the NICs' GRO off, as ath79's ag71xx has none;
# openssl, fastd, nftables: the user-space and kernel-only settings bench/router's cost model
# is checked against (openssl speed, a fastd tunnel, NAT forwarding).
GUEST_PKGS=("$KERNEL_PKG" iproute2 iputils-ping iperf3 wireguard-tools wireguard-go kmod procps ethtool
	openssl fastd nftables)
# Mounted by label so the boot does not depend on the order disks are probed in.
ROOT_LABEL=swg-mips-root
GUEST_INIT=/usr/local/sbin/solowg-guest-init
# Only what the initrd needs to mount the root disk: a smaller initrd boots faster under
# emulation than MODULES=most.
INITRD_MODULES=(virtio_pci virtio_blk ext4 crc32c_generic)

rebuild=0
dir=
while [[ $# -gt 0 ]]; do
	case $1 in
	--rebuild) rebuild=1 ;;
	-h | --help)
		awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "${BASH_SOURCE[0]}"
		exit 0
		;;
	-*)
		echo "unknown option $1" >&2
		exit 2
		;;
	*) dir=$1 ;;
	esac
	shift
done
dir=${dir:-${SOLOWG_MIPS_DIR:-/var/tmp/solowg-mips-system}}

log() { printf '# image: %s\n' "$*"; }
die() {
	printf 'ERROR: image: %s\n' "$*" >&2
	exit 2
}

[[ $(id -u) -eq 0 ]] || die "must run as root (debootstrap, chroot, binfmt_misc)"

# tool -> Debian package
declare -A pkg_of=(
	[debootstrap]=debootstrap
	[qemu-mipsel-static]=qemu-user-static
	[qemu-system-mipsel]=qemu-system-mips
	[mkfs.ext4]=e2fsprogs
	[sha256sum]=coreutils
	[flock]=util-linux
)
missing=()
for tool in "${!pkg_of[@]}"; do
	command -v "$tool" >/dev/null || missing+=("${pkg_of[$tool]}")
done
[[ -f /usr/share/keyrings/debian-archive-keyring.gpg ]] || missing+=(debian-archive-keyring)
if [[ ${#missing[@]} -gt 0 ]]; then
	log "installing ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get update -q
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null
fi

# shellcheck source=tests/mips-system/host-mirror.sh
. "$here/host-mirror.sh"

mkdir -p "$dir"
exec 9>"$dir/.lock"
# One build at a time per cache directory; a second caller waits, then finds it built.
flock -w 3600 9 || die "could not lock $dir/.lock"

rootfs=$dir/rootfs
rootfs_key=$(printf '%s\n' "$SUITE" "$ARCH" "${GUEST_PKGS[@]}" "${INITRD_MODULES[@]}" | sha256sum | cut -c1-16)
# The disk is remade when guest/init.sh or the root file system changes.
disk_key() { cat "$here/guest/init.sh" "$dir/rootfs.stamp" | sha256sum | cut -c1-16; }

# binfmt_misc for the chroot's mipsel programs, shared with concurrent builds; removing a
# tree that may still have mounts below it.
# shellcheck source=tests/mips-system/binfmt-share.sh
. "$here/binfmt-share.sh"
# shellcheck source=tests/mips-system/remove-tree.sh
. "$here/remove-tree.sh"

build_rootfs() {
	local mirror t0 new=$dir/rootfs.new
	mirror=${SOLOWG_MIPS_MIRROR:-$(host_mirror "$SUITE")}
	[[ $mirror =~ ^(https?|file):/ ]] || die "no Debian mirror found in /etc/apt/sources.list* (set SOLOWG_MIPS_MIRROR)"
	log "debootstrap $SUITE/$ARCH from the host's mirror: ${GUEST_PKGS[*]}"
	t0=$SECONDS
	remove_tree "$new"
	remove_tree "$rootfs"
	rm -f "$dir/rootfs.stamp" "$dir/disk.stamp"
	local joined
	joined=$(
		IFS=,
		printf '%s' "${GUEST_PKGS[*]}"
	)
	timeout 1800 nice debootstrap --arch="$ARCH" --foreign --variant=minbase --include="$joined" \
		"$SUITE" "$new" "$mirror" >"$dir/debootstrap-1.log" 2>&1 ||
		die "debootstrap (first stage) failed: see $dir/debootstrap-1.log"
	log "first stage done in $((SECONDS - t0)) s; second stage under qemu-mipsel-static"
	# The initrd settings go in before the second stage, whose kernel postinst builds the
	# initrd: building it under qemu-user is slow, so it is built once, small. Neither file
	# belongs to a package, so dpkg leaves them alone.
	mkdir -p "$new/etc/initramfs-tools/conf.d" "$new/usr/share/initramfs-tools/modules.d"
	printf 'MODULES=list\n' >"$new/etc/initramfs-tools/conf.d/solowg-mips"
	printf '%s\n' "${INITRD_MODULES[@]}" >"$new/usr/share/initramfs-tools/modules.d/solowg-mips"
	# On any exit: what the second stage left mounted goes, and so does this build's share
	# of binfmt_misc.
	trap 'unmount_below "$dir/rootfs.new"; binfmt_cleanup' EXIT
	binfmt_setup
	chroot "$new" /bin/true || die "the chroot cannot run mipsel programs (binfmt_misc)"
	timeout 3600 nice chroot "$new" /debootstrap/debootstrap --second-stage >"$dir/debootstrap-2.log" 2>&1 ||
		die "debootstrap (second stage) failed: see $dir/debootstrap-2.log"
	unmount_below "$new"
	binfmt_cleanup
	trap - EXIT
	# Downloaded packages and indexes are not needed in the guest.
	rm -rf "$new"/var/cache/apt/archives/*.deb "$new"/var/lib/apt/lists/*
	printf 'mips-guest\n' >"$new/etc/hostname"
	mv "$new" "$rootfs"
	printf '%s\n' "$rootfs_key" >"$dir/rootfs.stamp"
	printf 'ROOTFS_BUILD_S=%s\nROOTFS_BUILT=%s\n' "$((SECONDS - t0))" "$(date -u +%FT%TZ)" >"$dir/rootfs.env"
	log "root file system built in $((SECONDS - t0)) s"
}

build_disk() {
	local t0=$SECONDS kver size_mb
	install -m 0755 "$here/guest/init.sh" "$rootfs$GUEST_INIT"
	kver=$(find "$rootfs/boot" -maxdepth 1 -name 'vmlinuz-*' -printf '%f\n' | sed 's/^vmlinuz-//' | sort -V | tail -n 1)
	[[ -n $kver && -f $rootfs/boot/initrd.img-$kver ]] || die "no kernel or initrd in $rootfs/boot"
	# The Malta kernel package ships an ELF image that qemu's -kernel loads as it is.
	cp "$rootfs/boot/vmlinuz-$kver" "$dir/vmlinux.new"
	cp "$rootfs/boot/initrd.img-$kver" "$dir/initrd.img.new"
	# Room for the guest's writes (they go to a throw-away qemu snapshot anyway).
	size_mb=$(($(du -sm "$rootfs" | cut -f1) * 5 / 4 + 64))
	rm -f "$dir/disk.ext4.new"
	mkfs.ext4 -q -F -L "$ROOT_LABEL" -d "$rootfs" "$dir/disk.ext4.new" "${size_mb}M" >/dev/null ||
		die "mkfs.ext4 -d failed"
	mv "$dir/vmlinux.new" "$dir/vmlinux"
	mv "$dir/initrd.img.new" "$dir/initrd.img"
	mv "$dir/disk.ext4.new" "$dir/disk.ext4"
	{
		cat "$dir/rootfs.env"
		printf 'KERNEL_RELEASE=%s\n' "$kver"
		printf 'ROOT_LABEL=%s\n' "$ROOT_LABEL"
		printf 'GUEST_INIT=%s\n' "$GUEST_INIT"
		printf 'DISK_BUILD_S=%s\n' "$((SECONDS - t0))"
	} >"$dir/image.env"
	disk_key >"$dir/disk.stamp"
	log "disk image ${size_mb} MiB made in $((SECONDS - t0)) s (kernel $kver)"
}

if [[ $rebuild -eq 1 || ! -d $rootfs || $(cat "$dir/rootfs.stamp" 2>/dev/null) != "$rootfs_key" ]]; then
	build_rootfs
fi
if [[ ! -f $dir/disk.ext4 || $(cat "$dir/disk.stamp" 2>/dev/null) != "$(disk_key)" ]]; then
	build_disk
fi
log "ready in $dir (kernel $(sed -n 's/^KERNEL_RELEASE=//p' "$dir/image.env"))"
