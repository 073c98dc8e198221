# shellcheck shell=bash disable=SC2034,SC2154 # sourced by build-pkgtools.sh, which sets prefix, jobs, dep_NAME
# libubox: the C library opkg-lede links (and most of OpenWrt's programs). No Lua binding,
# no examples.
deps=()
build() {
	cmake -S . -B build -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_BUILD_TYPE=Release \
		-DBUILD_LUA=OFF -DBUILD_EXAMPLES=OFF -DCMAKE_POLICY_VERSION_MINIMUM=3.5 &&
		make -C build -j"$jobs" && make -C build install
}
check() { [[ -f $prefix/include/libubox/list.h ]] && ls "$prefix"/lib/libubox.* >/dev/null; }
