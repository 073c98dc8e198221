# shellcheck shell=bash disable=SC2034 # a recipe: DEPS and ARCHIVE are read by build.sh
# libubox: uloop, blobmsg, json, jshn, udebug (netifd and procd link it too).
DEPS=""
recipe_build() { cmake_install -DBUILD_LUA=OFF -DBUILD_EXAMPLES=OFF; }
