# shellcheck shell=bash disable=SC2034 # a recipe: DEPS and ARCHIVE are read by build.sh
# The kernel's UAPI headers of Linux 6.12, which OpenWrt 25.12 builds against: netifd uses
# ethtool's PSE attributes, newer than Debian 12's own headers (6.1). Debian's
# linux-libc-dev from bookworm-backports, fetched with a private apt list (the host's apt
# configuration is not changed) through the host's Debian mirror (SOLOWG_DEBIAN_MIRROR
# overrides it), unpacked to PREFIX/linux-headers and used only by the recipes that need it.
ARCHIVE=
DEPS=""
recipe_build() {
	local mirror deb
	# shellcheck disable=SC2154 # repo is build.sh's
	# shellcheck source=tests/mips-system/host-mirror.sh
	. "$repo/tests/mips-system/host-mirror.sh"
	mirror=${SOLOWG_DEBIAN_MIRROR:-$(host_mirror bookworm)}
	[[ $mirror =~ ^(https?|file):/ ]] || {
		echo "no Debian mirror in the host's apt sources (set SOLOWG_DEBIAN_MIRROR)"
		return 1
	}
	mkdir -p apt/lists/partial apt/cache/archives/partial apt/parts
	echo "deb $mirror bookworm-backports main" >apt/sources.list
	local -a o=(-o "Dir::Etc::SourceList=$PWD/apt/sources.list" -o "Dir::Etc::SourceParts=$PWD/apt/parts"
		-o "Dir::State::Lists=$PWD/apt/lists" -o "Dir::Cache=$PWD/apt/cache" -q)
	apt-get "${o[@]}" update
	apt-get "${o[@]}" download -t bookworm-backports linux-libc-dev
	deb=$(ls linux-libc-dev_6.12*_*.deb)
	dpkg-deb -x "$deb" pkg
	rm -rf "$PREFIX/linux-headers"
	mkdir -p "$PREFIX/linux-headers"
	cp -a pkg/usr/include/. "$PREFIX/linux-headers/"
	dpkg-deb -f "$deb" Package Version >"$PREFIX/linux-headers/VERSION"
}
