# shellcheck shell=bash disable=SC2034 # a recipe: DEPS and ARCHIVE are read by build.sh
# ubox: logd, logread, validate_data.
DEPS="libubox ubus uci udebug"
recipe_build() { cmake_install; }
