# shellcheck shell=bash disable=SC2034 # a recipe: DEPS and ARCHIVE are read by build.sh
# firewall4: ucode scripts. Its files as OpenWrt lays them out in PREFIX/fw4 (a router's
# root takes them from there), and its fw4 module also where this ucode looks for modules
# (PREFIX/share/ucode; OpenWrt's ucode looks in /usr/share/ucode).
DEPS="ucode"
recipe_build() {
	rm -rf "$PREFIX/fw4"
	mkdir -p "$PREFIX/fw4" "$PREFIX/share/ucode"
	cp -a root/. "$PREFIX/fw4/"
	cp root/usr/share/ucode/fw4.uc "$PREFIX/share/ucode/"
}
