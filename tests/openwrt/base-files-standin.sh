#!/bin/sh
# STAND-IN for base-files' /lib/functions.sh, used by tests/openwrt/upgrade.sh because CI has
# no OpenWrt root to take it from (base-files is in no package registry). Copied to
# ROOT/lib/functions.sh, where the package's postinst and prerm source it. It has only the
# three hooks those scripts call, and only their offline-root branch (IPKG_INSTROOT set, as
# in an image build), which is what the real ones (OpenWrt's tree, 2025-06) did in the hand
# run recorded in upgrade.sh:
#
#   add_group_and_user  reads NAME=UID:GROUP=GID from the package's Require-User field (or
#                       its .rusers list, for apk); adds the group, then the user (home
#                       /var/run/NAME, shell /bin/false, a locked shadow entry) unless they
#                       exist, then the user to the group's members unless it is there.
#   default_postinst    add_group_and_user for an opkg package, then sources the package's
#                       postinst-pkg in a subshell, then enables each init script the
#                       package lists: /etc/rc.d/S<START>name and K<STOP>name, links to
#                       ../init.d/name; returns the postinst-pkg's status.
#   default_prerm       disables them: the links go.
#
# The real ones reach the links through /etc/rc.common; this reads START and STOP itself.
#
# `local` is not POSIX, but busybox ash (OpenWrt) and dash have it, as the real file assumes.
# shellcheck disable=SC3043

standin_die() {
	echo "base-files stand-in: $*" >&2
	exit 1
}

# The files list of package $pkgname, opkg's or apk's.
standin_filelist() {
	if [ -f "$IPKG_INSTROOT/lib/apk/packages/$pkgname.list" ]; then
		echo "$IPKG_INSTROOT/lib/apk/packages/$pkgname.list"
	else
		echo "$IPKG_INSTROOT/usr/lib/opkg/info/$pkgname.list"
	fi
}

# standin_initscripts enable|disable
standin_initscripts() {
	local i name start stop
	[ -n "$IPKG_INSTROOT" ] || standin_die "only an offline root (IPKG_INSTROOT) is handled"
	grep -s "^/etc/init.d/" "$(standin_filelist)" | while read -r i; do
		name=${i##*/}
		rm -f "$IPKG_INSTROOT"/etc/rc.d/S??"$name" "$IPKG_INSTROOT"/etc/rc.d/K??"$name"
		[ "$1" = enable ] || continue
		start=$(sed -n 's/^START=//p' "$IPKG_INSTROOT$i")
		stop=$(sed -n 's/^STOP=//p' "$IPKG_INSTROOT$i")
		[ -z "$start" ] || ln -sf "../init.d/$name" "$IPKG_INSTROOT/etc/rc.d/S$start$name"
		[ -z "$stop" ] || ln -sf "../init.d/$name" "$IPKG_INSTROOT/etc/rc.d/K$stop$name"
	done
}

add_group_and_user() {
	local etc="$IPKG_INSTROOT/etc" rusers tuple user uid group gid members
	[ -n "$pkgname" ] || pkgname=$(basename "${1%.*}")
	rusers=$(sed -n 's/^Require-User: *//p' "$IPKG_INSTROOT/usr/lib/opkg/info/$pkgname.control" 2>/dev/null)
	[ ! -f "$IPKG_INSTROOT/lib/apk/packages/$pkgname.rusers" ] ||
		rusers=$(cat "$IPKG_INSTROOT/lib/apk/packages/$pkgname.rusers")
	for tuple in $rusers; do
		case $tuple in
		*=*:*=*) ;;
		*) standin_die "only NAME=UID:GROUP=GID is handled, not $tuple" ;;
		esac
		user=${tuple%%=*} uid=${tuple%%:*} uid=${uid#*=}
		group=${tuple#*:} gid=${group#*=} group=${group%%=*}
		grep -q "^$group:" "$etc/group" || echo "$group:x:$gid:" >>"$etc/group"
		if ! grep -q "^$user:" "$etc/passwd"; then
			echo "$user:x:$uid:$gid:$user:/var/run/$user:/bin/false" >>"$etc/passwd"
			echo "$user:x:0:0:99999:7:::" >>"$etc/shadow"
		fi
		members=$(sed -n "s/^$group:[^:]*:[^:]*://p" "$etc/group")
		case ",$members," in
		*",$user,"*) ;;
		,,) sed -i "s/^$group:\([^:]*\):\([^:]*\):\$/&$user/" "$etc/group" ;;
		*) sed -i "s/^$group:.*\$/&,$user/" "$etc/group" ;;
		esac
	done
}

default_postinst() {
	local pkgname="${pkgname:-$(basename "${1%.*}")}" ret=0
	[ ! -e "$IPKG_INSTROOT/usr/lib/opkg/info/$pkgname.list" ] || add_group_and_user "$pkgname"
	if [ -f "$IPKG_INSTROOT/usr/lib/opkg/info/$pkgname.postinst-pkg" ]; then
		# shellcheck disable=SC1090 # the package's own part
		(. "$IPKG_INSTROOT/usr/lib/opkg/info/$pkgname.postinst-pkg")
		ret=$?
	fi
	standin_initscripts enable
	return $ret
}

default_prerm() {
	local pkgname="${pkgname:-$(basename "${1%.*}")}"
	standin_initscripts disable
}
