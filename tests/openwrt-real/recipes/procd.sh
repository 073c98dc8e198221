# shellcheck shell=bash disable=SC2034 # a recipe: DEPS and ARCHIVE are read by build.sh
# procd as OpenWrt builds it, without jail and seccomp (the scenarios run it as a plain
# process, not PID 1: it then serves ubus and runs services, and boots nothing). gcc 12 sees
# a path where signal_shutdown logs a null message and, with the sources' -Werror, stops:
# that warning stays a warning.
DEPS="libubox ubus uci udebug"
recipe_build() {
	CFLAGS="$CFLAGS -Wno-error=format-overflow" cmake_install \
		-DJAIL_SUPPORT=OFF -DSECCOMP_SUPPORT=OFF -DUTRACE_SUPPORT=OFF
}
