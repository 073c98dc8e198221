# shellcheck shell=bash disable=SC2034 # a recipe: DEPS and ARCHIVE are read by build.sh
# lucihttp and its ucode binding (LuCI's request parsing). As for netifd: _GNU_SOURCE.
DEPS="ucode"
recipe_build() { CFLAGS="$CFLAGS -D_GNU_SOURCE=" cmake_install -DBUILD_LUA=OFF -DBUILD_UCODE=ON -DBUILD_TESTS=OFF; }
