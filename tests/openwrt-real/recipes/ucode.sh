# shellcheck shell=bash disable=SC2034 # a recipe: DEPS and ARCHIVE are read by build.sh
# ucode with the modules fw4, rpcd and LuCI load (fs, uci, ubus, uloop, rtnl, nl80211, ...).
DEPS="libubox ubus uci libnl-tiny"
recipe_build() {
	cmake_install -DUBUS_SUPPORT=ON -DUCI_SUPPORT=ON -DULOOP_SUPPORT=ON -DRTNL_SUPPORT=ON \
		-DNL80211_SUPPORT=ON -DDIGEST_SUPPORT=OFF -DDIGEST_SUPPORT_EXTENDED=OFF
}
