# shellcheck shell=bash disable=SC2034 # a recipe: DEPS and ARCHIVE are read by build.sh
# uhttpd with its ubus and ucode handlers (no Lua, no TLS). _GNU_SOURCE: see netifd. gcc 12
# takes blobmsg_name() for a zero-sized region (a false positive under the sources'
# -Werror): that warning stays a warning.
DEPS="libubox ubus ucode"
recipe_build() {
	CFLAGS="$CFLAGS -D_GNU_SOURCE= -Wno-error=stringop-overread" cmake_install \
		-DTLS_SUPPORT=OFF -DLUA_SUPPORT=OFF -DUBUS_SUPPORT=ON -DUCODE_SUPPORT=ON
}
