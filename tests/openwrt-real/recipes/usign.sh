# shellcheck shell=bash disable=SC2034 # a recipe: DEPS and ARCHIVE are read by build.sh
# usign: signs and verifies opkg feeds (Packages.sig) with Ed25519 keys; its own base64 code
# (USE_LIBUBOX off), as OpenWrt's host build has it.
DEPS=""
recipe_build() {
	cmake_install -DUSE_LIBUBOX=OFF
	{ "$PREFIX/bin/usign" 2>&1 || true; } | grep -q '^Usage'
}
