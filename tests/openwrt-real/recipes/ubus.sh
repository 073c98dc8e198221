# shellcheck shell=bash disable=SC2034 # a recipe: DEPS and ARCHIVE are read by build.sh
# ubus: the C ubusd, libubus and the ubus CLI.
DEPS="libubox"
recipe_build() { cmake_install -DBUILD_LUA=OFF -DBUILD_EXAMPLES=OFF; }
