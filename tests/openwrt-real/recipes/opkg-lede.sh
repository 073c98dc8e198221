# shellcheck shell=bash disable=SC2034,SC2154 # sourced by build-pkgtools.sh, which sets prefix, jobs, dep_NAME
# opkg-lede: the package manager of OpenWrt 24.10 and older, with usign support (it runs
# `usign -V` on a feed's Packages.sig, found on PATH). Linked against the libubox recipe.
deps=(libubox)
build() {
	cmake -S . -B build -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_BUILD_TYPE=Release \
		-DCMAKE_PREFIX_PATH="$dep_libubox" -DCMAKE_C_FLAGS="-I$dep_libubox/include" \
		-DCMAKE_INSTALL_RPATH="$dep_libubox/lib" \
		-DBUILD_TESTS=OFF -DENABLE_USIGN=ON -DVERSION=38eccbb -DCMAKE_POLICY_VERSION_MINIMUM=3.5 &&
		make -C build -j"$jobs" && make -C build install
}
check() { { "$prefix/bin/opkg-cl" --version 2>&1 || true; } | grep -q 'opkg version'; }
