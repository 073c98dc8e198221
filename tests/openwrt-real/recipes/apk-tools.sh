# shellcheck shell=bash disable=SC2034 # a recipe: DEPS and ARCHIVE are read by build.sh
# apk-tools 3.0.x: the package manager of OpenWrt 25.12 and later (meson >= 0.64: Debian 12
# has 1.0.1; OpenSSL for signatures, zlib). No Lua, help text, docs, Python binding, tests or
# zstd: none is needed to install, sign or index packages.
DEPS=""
recipe_build() {
	meson setup build --prefix="$PREFIX" --libdir=lib -Dbuildtype=release \
		-Dlua=disabled -Dhelp=disabled -Ddocs=disabled -Dpython=disabled -Dtests=disabled \
		-Dzstd=disabled -Dc_link_args="-Wl,-rpath,$PREFIX/lib"
	nice -n 10 ninja -C build -j"$JOBS"
	ninja -C build install
	"$PREFIX/bin/apk" --version | grep -q '^apk-tools 3'
}
