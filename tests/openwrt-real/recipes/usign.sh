# shellcheck shell=bash disable=SC2034,SC2154 # sourced by build-pkgtools.sh, which sets prefix, jobs, dep_NAME
# usign: signs and verifies opkg feeds (Packages.sig) with Ed25519 keys. Built with its own
# base64 code (USE_LIBUBOX off), as OpenWrt's host build does.
deps=()
build() {
	cmake -S . -B build -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_BUILD_TYPE=Release &&
		make -C build -j"$jobs" && make -C build install
}
check() { { "$prefix/bin/usign" 2>&1 || true; } | grep -q '^Usage'; }
