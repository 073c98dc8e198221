# shellcheck shell=bash disable=SC2034 # a recipe: DEPS and ARCHIVE are read by build.sh
# LuCI's runtime from luci.tar.gz: luci-base's C module (luci.core, core.so) built against
# the cache's ucode, in ucode's module path; and the packages a router's web interface is
# made of (luci-base, luci-mod-network, -status, -system, the bootstrap theme,
# luci-proto-wireguard) staged in PREFIX/luci as luci.mk installs them: htdocs/ to /www,
# ucode/ to /usr/share/ucode/luci, root/ to /. A test copies that tree into its router.
DEPS="ucode"
recipe_build() {
	local s=modules/luci-base/src p d
	# _GNU_SOURCE: ucode's headers need it on glibc (see netifd). Its Makefile names -lcrypt
	# before the objects, which an as-needed link drops: kept with --no-as-needed.
	make -C "$s" FPIC=-fPIC CFLAGS="$CFLAGS -O2 -std=gnu17 -D_GNU_SOURCE=" \
		LDFLAGS="$LDFLAGS -Wl,--no-as-needed" \
		LUCI_VERSION=git-luci.tar.gz LUCI_GITBRANCH=master core.so version.uc
	install -D -m 755 "$s/core.so" "$PREFIX/lib/ucode/luci/core.so"
	d=$PREFIX/luci
	rm -rf "$d"
	mkdir -p "$d/www" "$d/usr/share/ucode/luci"
	for p in modules/luci-base modules/luci-mod-network modules/luci-mod-status \
		modules/luci-mod-system themes/luci-theme-bootstrap protocols/luci-proto-wireguard; do
		if [[ -d $p/htdocs ]]; then cp -pR "$p/htdocs/." "$d/www/"; fi
		if [[ -d $p/ucode ]]; then cp -pR "$p/ucode/." "$d/usr/share/ucode/luci/"; fi
		if [[ -d $p/root ]]; then cp -pR "$p/root/." "$d/"; fi
	done
	install -m 644 "$s/version.uc" "$d/usr/share/ucode/luci/version.uc"
	test -x "$d/www/cgi-bin/luci" -a -f "$d/usr/share/ucode/luci/dispatcher.uc"
	ldd "$PREFIX/lib/ucode/luci/core.so" | grep -q libcrypt
}
