#!/usr/bin/env bash
# A newer kernel for the router benchmark's guest: Debian's linux-source-SERIES from
# bookworm-backports, built for the Malta guest with the configuration of the image's own
# Debian kernel, installed into a copy of that image. Linux 6.11 and later segment a UDP GSO
# train in software where the NIC has no checksum offload (6.1 answers EIO), so on such a
# kernel solowg keeps GSO on the plain NIC; this is how the README's 6.12 figures were made.
#
#   bench/router/backports-kernel.sh [--version 6.12] [OUT_DIR]
#   SOLOWG_MIPS_DIR=OUT_DIR bench/router/run --short --runs 3 --nics plain --dirs up
#
# OUT_DIR defaults to ${SOLOWG_MIPS_DIR:-/var/tmp/solowg-mips-system}-SERIES. The source image
# (SOLOWG_MIPS_DIR, made by tests/mips-system/image.sh if missing) is not changed.
# Configuration: the 6.1 kernel's, every module switched off, then built in what boots the
# guest without an initrd's modules (virtio PCI and block, ext4), and as modules what the
# benchmark loads (wireguard, tun, virtio_net) or may (sch_tbf); `make olddefconfig` picks
# the rest (the MIPS ChaCha20 and Poly1305 that wireguard selects come out built in). No
# debug information, no module signing. About 40 minutes on 2 cores.
# Needs root on Debian: installs gcc-mipsel-linux-gnu, flex, bison, bc, libssl-dev, libelf-dev
# and kmod when missing; fetches the source package through the host's apt mirror with a
# private sources list (the host's apt configuration is not changed; SOLOWG_MIPS_MIRROR overrides
# the mirror, as for image.sh).
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd -- "$here/../.." && pwd)
SERIES=6.12
out=''
while [[ $# -gt 0 ]]; do
	case $1 in
	--version) SERIES=$2 && shift ;;
	-*) echo "usage: $0 [--version 6.12] [OUT_DIR]" >&2 && exit 2 ;;
	*) out=$1 ;;
	esac
	shift
done
src_img=${SOLOWG_MIPS_DIR:-/var/tmp/solowg-mips-system}
out=${out:-$src_img-$SERIES}
# shellcheck source=bench/router/kernel-lib.sh
. "$here/kernel-lib.sh"
kernel_root

kernel_tools

bash "$repo/tests/mips-system/image.sh" "$src_img"
base_cfg=$(find "$src_img/rootfs/boot" -maxdepth 1 -name 'config-6.1*' | sort -V | tail -n 1)
[[ -f $base_cfg ]] || die "no 6.1 kernel configuration in $src_img/rootfs/boot"

work=$out.build
mkdir -p "$work"
src=$work/linux-source-$SERIES
kernel_source "$SERIES" "$work"

make_k() { make -C "$src" ARCH=mips CROSS_COMPILE=mipsel-linux-gnu- "$@"; }
sed -E 's/^(CONFIG_[A-Za-z0-9_]+)=m$/# \1 is not set/' "$base_cfg" >"$src/.config"
cfg() { "$src/scripts/config" --file "$src/.config" "$@"; }
cfg --enable VIRTIO --enable VIRTIO_PCI --enable VIRTIO_BLK --enable EXT4_FS \
	--module WIREGUARD --module TUN --module VIRTIO_NET --module NET_UDP_TUNNEL \
	--module NET_SCH_TBF \
	--disable DEBUG_INFO --disable DEBUG_INFO_DWARF5 --enable DEBUG_INFO_NONE \
	--disable MODULE_SIG --set-str SYSTEM_TRUSTED_KEYS '' --set-str SYSTEM_REVOCATION_KEYS '' \
	--set-val RELOCATION_TABLE_SIZE 0x00200000 --set-str LOCALVERSION -solowg \
	--disable LOCALVERSION_AUTO
make_k olddefconfig >/dev/null
for want in CONFIG_WIREGUARD=m CONFIG_TUN=m CONFIG_VIRTIO_NET=m CONFIG_VIRTIO_BLK=y \
	CONFIG_EXT4_FS=y CONFIG_PACKET=y; do
	grep -qx "$want" "$src/.config" || die "configuration lacks $want"
done
log "building Linux $SERIES (make -j$(nproc) vmlinux modules)"
t0=$SECONDS
make_k -j"$(nproc)" vmlinux modules >"$work/make.log" 2>&1 || die "build failed, see $work/make.log"
kver=$(cat "$src/include/config/kernel.release")
log "built $kver in $((SECONDS - t0)) s"

kernel_install "$src_img" "$out" "$src"
log "ready: SOLOWG_MIPS_DIR=$out bench/router/run ..."
