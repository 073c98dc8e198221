# shellcheck shell=bash disable=SC2034,SC2154 # sourced by build-pkgtools.sh, which sets prefix, jobs, dep_NAME
# apk-tools 3.0.x: the package manager of OpenWrt 25.12 and later. meson >= 0.64 (Debian 12
# has 1.0.1); OpenSSL for signatures; zlib. No Lua, help text, docs, Python binding, tests
# or zstd: none is needed to install, sign or index packages.
deps=()
build() {
	meson setup build --prefix="$prefix" --libdir=lib -Dbuildtype=release \
		-Dlua=disabled -Dhelp=disabled -Ddocs=disabled -Dpython=disabled -Dtests=disabled \
		-Dzstd=disabled -Dc_link_args="-Wl,-rpath,$prefix/lib" &&
		ninja -C build -j"$jobs" && ninja -C build install
}
check() { "$prefix/bin/apk" --version | grep -q "^apk-tools 3"; }
