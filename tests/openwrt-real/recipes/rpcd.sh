# shellcheck shell=bash disable=SC2034 # a recipe: DEPS and ARCHIVE are read by build.sh
# rpcd with its file, rpc-sys and ucode plugins (no iwinfo: no wireless here). ucode's
# headers need _GNU_SOURCE on glibc (see netifd). OpenWrt's package adds the ACL that lets
# an anonymous session log in (unauthenticated.json), which CMake does not install.
DEPS="libubox ubus uci ucode"
recipe_build() {
	CFLAGS="$CFLAGS -D_GNU_SOURCE=" cmake_install -DIWINFO_SUPPORT=OFF -DFILE_SUPPORT=ON -DUCODE_SUPPORT=ON -DRPCSYS_SUPPORT=ON
	install -D -m 644 unauthenticated.json "$PREFIX/share/rpcd/acl.d/unauthenticated.json"
}
