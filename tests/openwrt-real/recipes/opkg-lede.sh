# shellcheck shell=bash disable=SC2034 # a recipe: DEPS and ARCHIVE are read by build.sh
# opkg-lede: the package manager of OpenWrt 24.10 and older, with usign support (it runs
# `usign -V` on a feed's Packages.sig, found on PATH).
DEPS="libubox"
recipe_build() {
	cmake_install -DBUILD_TESTS=OFF -DENABLE_USIGN=ON -DVERSION=38eccbb
	{ "$PREFIX/bin/opkg-cl" --version 2>&1 || true; } | grep -q 'opkg version'
}
