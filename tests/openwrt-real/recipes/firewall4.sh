# shellcheck shell=bash disable=SC2034 # a recipe: DEPS and ARCHIVE are read by build.sh
# firewall4: ucode scripts, installed as OpenWrt lays them out, relative to the prefix.
DEPS="ucode"
recipe_build() {
	mkdir -p "$PREFIX/fw4"
	cp -a root/. "$PREFIX/fw4/"
}
