# shellcheck shell=bash disable=SC2034 # a recipe: DEPS and ARCHIVE are read by build.sh
# libnl-tiny: netlink for netifd and ucode's rtnl/nl80211 modules.
DEPS=""
recipe_build() { cmake_install; }
