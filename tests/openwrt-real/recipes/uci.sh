# shellcheck shell=bash disable=SC2034 # a recipe: DEPS and ARCHIVE are read by build.sh
# uci: libuci and the uci CLI.
DEPS="libubox"
recipe_build() { cmake_install -DBUILD_LUA=OFF; }
