# shellcheck shell=bash disable=SC2034 # a recipe: DEPS and ARCHIVE are read by build.sh
# netifd, with its shell library (scripts/) where OpenWrt installs it: /lib/netifd. ucode's
# util.h calls vasprintf, which glibc declares only with _GNU_SOURCE (defined empty, as the
# sources do, so their own definitions are no redefinition). Linux 6.12's UAPI headers
# (linux-headers) first: netifd reads ethtool's PSE attributes.
DEPS="libubox ubus uci libnl-tiny ucode udebug linux-headers"
recipe_build() {
	CFLAGS="-isystem $PREFIX/linux-headers $CFLAGS -D_GNU_SOURCE= -I$PREFIX/include/libnl-tiny" \
		cmake_install -DLIBNL_LIBS=nl-tiny
	mkdir -p "$PREFIX/lib/netifd"
	cp scripts/*.sh "$PREFIX/lib/netifd/"
}
