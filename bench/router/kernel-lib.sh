#!/usr/bin/env bash
# Shared by the guest kernel builders (backports-kernel.sh, openwrt-kernel.sh): fetching
# Debian's linux-source-SERIES from bookworm-backports, and installing a built kernel into a
# copy of the router guest's image, and the scripts' messages. Sourced; expects $repo.
# shellcheck disable=SC2154 # repo is the caller's

# Messages name the script that sourced this file.
log() { printf '# %s: %s\n' "$(basename -- "$0" .sh)" "$*"; }
die() {
	printf '%s: %s\n' "$(basename -- "$0" .sh)" "$*" >&2
	exit 1
}

# kernel_root: a kernel is built and installed into the image as root.
kernel_root() { [[ $(id -u) == 0 ]] || die "run as root"; }

# kernel_tools: the cross compiler and build tools, installed when missing.
kernel_tools() {
	local need=() p
	for p in gcc-mipsel-linux-gnu flex bison bc libssl-dev libelf-dev kmod xz-utils patch perl; do
		dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || need+=("$p")
	done
	if [[ ${#need[@]} -gt 0 ]]; then
		log "installing ${need[*]}"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" >/dev/null
	fi
}

# kernel_source SERIES WORK: unpacks Debian's linux-source-SERIES into WORK/linux-source-SERIES
# (once), through the host's apt mirror with a private sources list (the host's apt
# configuration is not changed; SOLOWG_MIPS_MIRROR overrides the mirror).
kernel_source() {
	local series=$1 work=$2 mirror apt_dir deb
	local -a apt_opts
	[[ -d $work/linux-source-$series ]] && return 0
	# shellcheck source=tests/mips-system/host-mirror.sh
	. "$repo/tests/mips-system/host-mirror.sh"
	mirror=${SOLOWG_MIPS_MIRROR:-$(host_mirror bookworm)}
	[[ $mirror =~ ^(https?|file):/ ]] || die "no Debian mirror in the host's apt sources (set SOLOWG_MIPS_MIRROR)"
	apt_dir=$work/apt
	mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/parts"
	echo "deb $mirror bookworm-backports main" >"$apt_dir/sources.list"
	apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o "Dir::Etc::SourceParts=$apt_dir/parts"
		-o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache" -q)
	log "fetching linux-source-$series from bookworm-backports"
	apt-get "${apt_opts[@]}" update >/dev/null
	(cd "$work" && apt-get "${apt_opts[@]}" download "linux-source-$series" >/dev/null)
	deb=$(find "$work" -maxdepth 1 -name "linux-source-${series}_*.deb" | head -n 1)
	[[ -f $deb ]] || die "linux-source-$series was not downloaded"
	dpkg-deb -f "$deb" Version >"$work/debian-version"
	dpkg-deb -x "$deb" "$work/pkg"
	tar -C "$work" -xf "$work/pkg/usr/src/linux-source-$series.tar.xz"
	rm -rf "$work/pkg"
}

# kernel_install SRC_IMG OUT SRC: a copy of the image SRC_IMG in OUT with the kernel built in
# SRC as its kernel, and its modules.
kernel_install() {
	local src_img=$1 out=$2 src=$3 kver
	kver=$(cat "$src/include/config/kernel.release")
	rm -rf "$out.new"
	cp -a "$src_img" "$out.new"
	rm -f "$out.new/.lock" "$out.new/disk.stamp"
	make -C "$src" ARCH=mips CROSS_COMPILE=mipsel-linux-gnu- INSTALL_MOD_PATH="$out.new/rootfs" \
		modules_install >/dev/null
	depmod -b "$out.new/rootfs" "$kver"
	cp "$src/vmlinux" "$out.new/rootfs/boot/vmlinuz-$kver"
	cp "$src/System.map" "$out.new/rootfs/boot/System.map-$kver"
	cp "$src/.config" "$out.new/rootfs/boot/config-$kver"
	# The initrd's modules are 6.1's and unused: what it needs to mount the root is built in.
	cp "$(find "$src_img/rootfs/boot" -maxdepth 1 -name 'initrd.img-6.1*' | sort -V | tail -n 1)" \
		"$out.new/rootfs/boot/initrd.img-$kver"
	rm -rf "$out"
	mv "$out.new" "$out"
	bash "$repo/tests/mips-system/image.sh" "$out"
	grep -q "$kver" "$out/image.env" || die "the image in $out did not take $kver"
}
