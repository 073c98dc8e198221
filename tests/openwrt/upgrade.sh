#!/usr/bin/env bash
# Install, upgrade and removal of the solowg .ipk on an offline root, as in an image build
# (IPKG_INSTROOT set, so no daemon starts). Two versions are built by openwrt/mkpkg.py from
# the same binary: openwrt/feed/net/solowg/Makefile's release, and the next release with a changed
# /etc/config/solowg. Two runs:
#   changed    install; the user edits /etc/config/solowg; upgrade; remove; install again
#   unchanged  install; upgrade; remove
# Checked: the user and group solowg are added once and kept, on removal too (OpenWrt removes
# no package's user); /etc/config/solowg is kept when changed and replaced when not;
# /etc/config/network (base-files', which holds the keys) is never touched; the /etc/rc.d
# links are there after install and upgrade and gone after removal; no file of the package
# is left after removal but the conffile the user changed; and sysupgrade's keep list (the
# conffiles whose SHA-256 differs from the one opkg recorded, plus /lib/upgrade/keep.d)
# holds /etc/config/solowg exactly when it was changed, and /etc/config/network once a key
# has been saved in it.
#
# opkg and usign are the real ones, opkg-lede and usign built from ../shared/openwrt-src by
# tests/openwrt-real/build.sh (OPKG=/path/to/opkg-cl runs another; USIGN=/path/to/usign
# with it for the signed feed). The first runs install the .ipk files directly, as an image
# build does; the last goes through a signed feed (update, install, upgrade, remove, install
# again, and a tampered list refused). base-files' /lib/functions.sh is a stand-in,
# tests/openwrt/base-files-standin.sh: base-files is not among the shared sources (it lives
# in openwrt/openwrt's tree). BASE_FILES=DIR copies DIR into the root instead (the real
# lib/functions.sh, lib/functions/service.sh and procd.sh, etc/rc.common, etc/passwd, group
# and shadow, and libubox's usr/share/libubox/jshn.sh, which rc.common sources for procd
# scripts).
#
# What the real ones did on 2026-12-05 (opkg-lede git 38eccbb of 2024-10-16, built from
# source; base-files' and procd's files from OpenWrt's tree of 2025-06), with these packages
# on an offline root by hand, traced with strace, and through this test with OPKG and
# BASE_FILES set (78 passed):
#   - install: data unpacked; postinst "configure" with PKG_UPGRADE=0; default_postinst added
#     solowg:x:820:820:solowg:/var/run/solowg:/bin/false, group solowg:x:820:solowg and
#     shadow solowg:x:0:0:99999:7:::, then rc.common made S19solowg and K90solowg. The status
#     entry recorded "Conffiles: /etc/config/solowg SHA-256-as-shipped".
#   - upgrade (opkg install of the next release): old prerm "upgrade 0.1.0-r2" with
#     PKG_UPGRADE=1 (rc.common disable), then the new postinst "configure" with PKG_UPGRADE=1
#     (enable again); no preinst or postrm (the package has none). The user already existed:
#     no second entry. An edited /etc/config/solowg stayed and the new one went to
#     /etc/config/solowg-opkg (mode 0600), with "Collected errors: ... Existing conffile ...
#     is different ..." printed and exit status 0; the status entry then records the new
#     shipped SHA-256, so the file still counts as changed. An unedited one was replaced.
#   - remove: prerm "remove" with PKG_UPGRADE=0 (links gone); every listed file deleted
#     except an edited /etc/config/solowg ("Not deleting modified conffile"); solowg-opkg,
#     the directories (the .list names files only) and the user and group stayed.
#   - installing again over the kept edited file: it stayed, the shipped one went to -opkg.
#   - `opkg list-changed-conffiles` printed /etc/config/solowg exactly when it was edited.
#   - the real rc.common also left ROOT/var/lock/procd_solowg.lock (procd.sh's lock; /var is
#     a tmpfs on the router, and the image build deletes var/lock/*.lock).
#
#   usage: tests/openwrt/upgrade.sh      ARCH=mipsel_24kc (default); packages the binary of
#                                        target/openwrt/ARCH/solowg, or a stand-in file
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd -- "$here/../.." && pwd)
arch=${ARCH:-mipsel_24kc}
# The real opkg-lede and usign, built from ../shared/openwrt-src (tests/openwrt-real/).
if [[ -z ${OPKG:-} ]]; then
	prefix=$(bash "$repo/tests/openwrt-real/build.sh" opkg-lede usign | tail -n 1) ||
		{ echo "FAIL: opkg-lede or usign does not build (above)"; exit 1; }
	OPKG=$prefix/bin/opkg-cl
	USIGN=$prefix/bin/usign
fi
opkg=$OPKG
base_files=${BASE_FILES:-}
work=$(mktemp -d)
trap '[[ -n ${KEEP:-} ]] || rm -rf "$work"' EXIT
# shellcheck source=tests/openwrt/check.sh
. "$here/check.sh"

# ---- the two versions
binary=$repo/target/openwrt/$arch/solowg
mkpkg_args=(solowg --arch "$arch" --format ipk)
if [[ ! -f $binary ]]; then
	echo "NOTICE: $binary not built; packaging a stand-in file as /usr/sbin/solowg"
	binary=$work/solowg
	echo "not a binary" >"$binary"
	mkpkg_args+=(--allow-non-elf)
fi
release=$(sed -n 's/^PKG_RELEASE:=[[:space:]]*//p' "$repo/openwrt/feed/net/solowg/Makefile")
next=$((release + 1))
mkdir -p "$work/src2"
cp -a "$repo/files" "$work/src2/"
printf '\n# shipped with release %s\n' "$next" >>"$work/src2/files/solowg.config"
# The second build's daemon differs from the first (a byte appended), so an upgrade that
# kept the old binary shows.
cp "$binary" "$work/solowg.v2"
printf '\n' >>"$work/solowg.v2"
python3 "$repo/openwrt/mkpkg.py" "${mkpkg_args[@]}" --binary "$binary" --out "$work/v1" >/dev/null
python3 "$repo/openwrt/mkpkg.py" "${mkpkg_args[@]}" --binary "$work/solowg.v2" --out "$work/v2" \
	--release "$next" --src "$work/src2" >/dev/null
v1=$(echo "$work"/v1/solowg_*.ipk)
v2=$(echo "$work"/v2/solowg_*.ipk)
for v in v1 v2; do
	mkdir -p "$work/$v.d"
	tar -xzOf "${!v}" ./data.tar.gz | tar -xzf - -C "$work/$v.d"
	mkdir -p "$work/$v.control"
	tar -xzOf "${!v}" ./control.tar.gz | tar -xzf - -C "$work/$v.control"
	(cd "$work/$v.d" && find . -type f -printf '/%P\n' | LC_ALL=C sort) >"$work/$v.files"
done
userid=$(sed -n 's/^Require-User: //p' "$work/v1.control/control")
user=${userid%%=*} uid=${userid%%:*} uid=${uid#*=} gid=${userid##*=}
start=$(sed -n 's/^START=//p' "$work/v1.d/etc/init.d/solowg")
stop=$(sed -n 's/^STOP=//p' "$work/v1.d/etc/init.d/solowg")
sha() { sha256sum <"$1" | cut -d' ' -f1; }
check package.conffiles "/etc/config/solowg" "$(cat "$work/v1.control/conffiles" 2>/dev/null)"
check package.no-keep.d "" "$(grep '^/lib/upgrade/keep.d/' "$work/v1.files" || true)"
check package.require-user "solowg=820:solowg=820" "$userid"
check package.init-start-stop "set set" "${start:+set} ${stop:+set}"
check package.postinst-pkg "present 755" \
	"$([[ -s $work/v1.control/postinst-pkg ]] && echo present) $(stat -c %a "$work/v1.control/postinst-pkg" 2>/dev/null)"
check package.configs-differ 1 "$(cmp -s "$work/v1.d/etc/config/solowg" "$work/v2.d/etc/config/solowg" || echo 1)"

# ---- an offline root, as an image build leaves it
new_root() {
	root=$work/$1/root
	mkdir -p "$root"/{etc/config,etc/rc.d,lib,tmp,var/lock,usr/lib/opkg/info}
	if [[ -n $base_files ]]; then
		cp -a "$base_files/." "$root/"
	else
		cp "$here/base-files-standin.sh" "$root/lib/functions.sh"
		printf 'root:x:0:0:root:/root:/bin/ash\nnobody:*:65534:65534:nobody:/var:/bin/false\n' >"$root/etc/passwd"
		printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
		printf 'root:::0:99999:7:::\nnobody:*:0:0:99999:7:::\n' >"$root/etc/shadow"
	fi
	printf "config interface 'loopback'\n\toption device 'lo'\n\toption proto 'static'\n" \
		>"$root/etc/config/network"
	network_sha=$(sha "$root/etc/config/network")
	# What the package depends on, and base-files with its conffile /etc/config/network.
	local p
	for p in libc kmod-tun base-files; do
		printf 'Package: %s\nVersion: 1\nStatus: install ok installed\nArchitecture: %s\n' "$p" "$arch"
		[[ $p != base-files ]] || printf 'Conffiles:\n /etc/config/network %s\n' "$network_sha"
		echo
		: >"$root/usr/lib/opkg/info/$p.list"
	done >"$root/usr/lib/opkg/status"
	echo /etc/config/network >"$root/usr/lib/opkg/info/base-files.list"
}

# Recording stand-ins for the commands the package's postinst part runs on a live router:
# each call is appended to $CALLS. ubus answers as netifd would: get_proto_handlers names
# solowg when $KNOWN is set; an interface's status says "up": true when it is in $UP_IFACES,
# "autostart": false when it is in $DOWN_IFACES (taken down with ifdown).
mkdir -p "$work/bin"
cat >"$work/bin/ubus" <<'STANDIN'
#!/bin/sh
echo "ubus $*" >>"$CALLS"
case "$*" in
"call network get_proto_handlers")
	if [ -n "$KNOWN" ]; then name=solowg; else name=static; fi
	printf '{\n\t"%s": {\n\t\t"no_device": true\n\t}\n}\n' "$name"
	;;
"call network.interface."*" status")
	up=false auto=true
	case " $UP_IFACES " in *" ${2#network.interface.} "*) up=true ;; esac
	case " $DOWN_IFACES " in *" ${2#network.interface.} "*) auto=false ;; esac
	printf '{\n\t"up": %s,\n\t"pending": false,\n\t"autostart": %s\n}\n' "$up" "$auto"
	;;
esac
STANDIN
cat >"$work/bin/killall" <<'STANDIN'
#!/bin/sh
echo "killall $*" >>"$CALLS"
exit "${KILLALL_RC:-0}"
STANDIN
chmod 755 "$work/bin/ubus" "$work/bin/killall"
export CALLS=$work/calls
: >"$CALLS"

# opkg as the image build runs it, its output appended to opkg.log and printed on failure.
# The stand-ins come first on PATH: offline, the package must call none of them.
run_opkg() {
	echo "### opkg $*" >>"$work/opkg.log"
	if ! PATH=$work/bin:$PATH IPKG_INSTROOT=$root TMPDIR=$root/tmp "$opkg" --offline-root "$root" --force-postinstall \
		--add-dest root:/ --add-arch all:100 --add-arch "$arch:200" "$@" >"$work/opkg.out" 2>&1; then
		check "opkg $* exits 0" 0 1
		cat "$work/opkg.out"
	fi
	cat "$work/opkg.out" >>"$work/opkg.log"
}

# sysupgrade's keep list, built as /sbin/sysupgrade builds it: the conffiles in opkg's status
# whose SHA-256 differs from the recorded one, plus what /lib/upgrade/keep.d names.
keep_list() {
	{
		awk '/^Conffiles:/{on = 1; next} !/^ /{on = 0} on {print $1, $2}' "$root/usr/lib/opkg/status" |
			while read -r f c; do
				if [[ -r $root$f && $(sha "$root$f") != "$c" ]]; then echo "$f"; fi
			done
		cat "$root"/lib/upgrade/keep.d/* 2>/dev/null || true
	} | LC_ALL=C sort -u | tr '\n' ' ' | sed 's/ $//'
}

count() { grep -c "^$1:" "$root/etc/$2" || true; }
user_checks() { # user_checks STEP
	check "$1.user-once" "1 1 1" "$(count "$user" passwd) $(count "$user" group) $(count "$user" shadow)"
	check "$1.user" "$user:x:$uid:$gid:/bin/false" \
		"$(awk -F: -v u="$user" '$1 == u {print $1":x:"$3":"$4":"$7}' "$root/etc/passwd")"
	check "$1.group" "$user:x:$gid:$user" "$(grep "^$user:" "$root/etc/group")"
}
links() { (cd "$root/etc/rc.d" && find . -name '*solowg' -printf '%P -> %l\n' | LC_ALL=C sort | tr '\n' ' ' | sed 's/ $//'); }
want_links="K${stop}solowg -> ../init.d/solowg S${start}solowg -> ../init.d/solowg"
installed_files() { # files of list $1 present in the root
	local f
	while read -r f; do if [[ -e $root$f ]]; then echo "$f"; fi; done <"$1"
}
status_conffiles() { awk '/^Package: /{p = $2} /^Conffiles:/{on = (p == "solowg"); next} !/^ /{on = 0} on' "$root/usr/lib/opkg/status" | sed 's/^ //'; }
installed_checks() { # installed_checks STEP v1|v2: files, links, network, user
	check "$1.files" "$(cat "$work/$2.files")" "$(installed_files "$work/$2.files")"
	check "$1.version" "$(sed -n 's/^Version: //p' "$work/$2.control/control")" \
		"$(sed -n 's/^Version: //p' "$root/usr/lib/opkg/info/solowg.control")"
	check "$1.rc.d" "$want_links" "$(links)"
	check "$1.daemon-is-$2's" "$(sha "$work/$2.d/usr/sbin/solowg")" "$(sha "$root/usr/sbin/solowg")"
	check "$1.network-untouched" "$network_sha" "$(sha "$root/etc/config/network")"
	user_checks "$1"
	check "$1.status-conffiles" "/etc/config/solowg $(sha "$work/$2.d/etc/config/solowg")" "$(status_conffiles)"
}
removed_checks() { # removed_checks STEP KEPT...: nothing of either version left but KEPT
	local step=$1
	shift
	check "$step.files" "$(printf '%s\n' "$@" | sed '/^$/d')" \
		"$(LC_ALL=C sort -u "$work/v1.files" "$work/v2.files" >"$work/both.files" && installed_files "$work/both.files")"
	check "$step.rc.d" "" "$(links)"
	check "$step.opkg-info" "" "$(cd "$root/usr/lib/opkg/info" && find . -name 'solowg.*')"
	check "$step.status" "" "$(grep '^Package: solowg$' "$root/usr/lib/opkg/status" || true)"
	check "$step.network-untouched" "$network_sha" "$(sha "$root/etc/config/network")"
	user_checks "$step"
}

# ---- the user changed /etc/config/solowg
new_root changed
run_opkg install "$v1"
installed_checks install v1
check install.keep-list "" "$(keep_list)"
sed -i "s/option log_level 'info'/option log_level 'verbose'/" "$root/etc/config/solowg"
cp -p "$root/etc/config/solowg" "$work/edited"
check edited.keep-list "/etc/config/solowg" "$(keep_list)"
run_opkg list-changed-conffiles
check edited.list-changed-conffiles "/etc/config/solowg" "$(grep '^/' "$work/opkg.out")"

run_opkg install "$v2"
installed_checks upgrade-changed v2
check upgrade-changed.config-kept "$(sha "$work/edited")" "$(sha "$root/etc/config/solowg")"
check upgrade-changed.config-mode "600" "$(stat -c %a "$root/etc/config/solowg")"
check upgrade-changed.new-config-beside "$(sha "$work/v2.d/etc/config/solowg")" "$(sha "$root/etc/config/solowg-opkg")"
check upgrade-changed.new-config-mode "600" "$(stat -c %a "$root/etc/config/solowg-opkg")"
check upgrade-changed.keep-list "/etc/config/solowg" "$(keep_list)"
# The daemon saves a generated key in /etc/config/network: base-files' conffile, kept too.
echo "	option private_key 'saved-by-the-daemon'" >>"$root/etc/config/network"
check key-saved.keep-list "/etc/config/network /etc/config/solowg" "$(keep_list)"
network_sha=$(sha "$root/etc/config/network")

run_opkg remove solowg
removed_checks remove-changed /etc/config/solowg
check remove-changed.config-kept "$(sha "$work/edited")" "$(sha "$root/etc/config/solowg")"
check remove-changed.opkg-file-left "yes" "$([[ -f $root/etc/config/solowg-opkg ]] && echo yes)"

run_opkg install "$v2"
installed_checks reinstall v2
check reinstall.config-kept "$(sha "$work/edited")" "$(sha "$root/etc/config/solowg")"
check reinstall.new-config-beside "$(sha "$work/v2.d/etc/config/solowg")" "$(sha "$root/etc/config/solowg-opkg")"

# ---- /etc/config/solowg left as shipped
new_root unchanged
run_opkg install "$v1"
installed_checks install-unchanged v1
run_opkg install "$v2"
installed_checks upgrade-unchanged v2
check upgrade-unchanged.config-replaced "$(sha "$work/v2.d/etc/config/solowg")" "$(sha "$root/etc/config/solowg")"
check upgrade-unchanged.no-opkg-file "" "$(find "$root/etc/config" -name '*-opkg')"
check upgrade-unchanged.keep-list "" "$(keep_list)"
run_opkg remove solowg
removed_checks remove-unchanged ""
check remove-unchanged.etc-config "network" "$(ls "$root/etc/config/")"
check offline.no-ubus-or-killall "" "$(cat "$CALLS")"

# ---- a signed feed: opkg update, install, upgrade to the next build, remove, install again
# The feed's Packages is what OpenWrt's ipkg-make-index.sh writes (each control file, then
# Filename, Size and SHA256sum), signed with usign as the build signs its feeds; opkg runs its
# verify_program (OpenWrt's opkg-key, a wrapper of `usign -V -P /etc/opkg/keys`; ours here)
# on Packages.sig. Without USIGN (OPKG given) the feed part is skipped.
if [[ -n ${USIGN:-} ]]; then
	make_feed() { # make_feed DIR IPK...: Packages and Packages.sig
		local dir=$1 ipk
		shift
		mkdir -p "$dir"
		for ipk in "$@"; do
			cp "$ipk" "$dir/"
			tar -xzOf "$ipk" ./control.tar.gz | tar -xzOf - ./control
			printf 'Filename: %s\nSize: %s\nSHA256sum: %s\n\n' "$(basename "$ipk")" "$(stat -c %s "$ipk")" "$(sha "$ipk")"
		done >"$dir/Packages"
		"$USIGN" -S -m "$dir/Packages" -s "$work/key.sec" -x "$dir/Packages.sig"
	}
	"$USIGN" -G -s "$work/key.sec" -p "$work/key.pub" -c "solowg test feed"
	make_feed "$work/feed1" "$v1"
	make_feed "$work/feed2" "$v2"
	new_root feed
	mkdir -p "$root/etc/opkg/keys"
	cp "$work/key.pub" "$root/etc/opkg/keys/$("$USIGN" -F -p "$work/key.pub")"
	cat >"$work/bin/opkg-key" <<KEY
#!/bin/sh
# opkg-key verify SIG FILE, against the offline root's keys
[ "\$1" = verify ] || exit 1
exec '$USIGN' -V -q -P '$root/etc/opkg/keys' -x "\$2" -m "\$3"
KEY
	chmod 755 "$work/bin/opkg-key"
	feed_conf() { # feed_conf DIR: opkg.conf naming the feed in DIR
		# The destination is run_opkg's --add-dest; lists_dir is under the offline root.
		printf 'src solowg file://%s\nlists_dir ext /var/opkg-lists\n' "$1"
		printf 'option check_signature 1\noption verify_program %s/bin/opkg-key\n' "$work"
		printf 'arch all 100\narch %s 200\n' "$arch"
	}
	feed_conf "$work/feed1" >"$work/opkg.conf"
	run_opkg -f "$work/opkg.conf" update
	check feed.update.signature-passed "Signature check passed." "$(grep -o 'Signature check passed.' "$work/opkg.out")"
	run_opkg -f "$work/opkg.conf" install solowg
	installed_checks feed.install v1
	feed_conf "$work/feed2" >"$work/opkg.conf"
	run_opkg -f "$work/opkg.conf" update
	run_opkg -f "$work/opkg.conf" list-upgradable
	check feed.upgradable "solowg - $(sed -n 's/^Version: //p' "$work/v1.control/control") - $(sed -n 's/^Version: //p' "$work/v2.control/control")" \
		"$(grep '^solowg ' "$work/opkg.out")"
	run_opkg -f "$work/opkg.conf" upgrade solowg
	installed_checks feed.upgrade v2
	run_opkg -f "$work/opkg.conf" remove solowg
	removed_checks feed.remove ""
	run_opkg -f "$work/opkg.conf" install solowg
	installed_checks feed.reinstall v2
	# A feed whose Packages changed after signing is refused: the list is dropped.
	cp -r "$work/feed2" "$work/feed3"
	sed -i 's/^Description: .*/Description:  changed/' "$work/feed3/Packages"
	feed_conf "$work/feed3" >"$work/opkg.conf"
	run_opkg -f "$work/opkg.conf" update || true
	check feed.tampered.refused "Signature check failed. no-list" \
		"$(grep -o 'Signature check failed.' "$work/opkg.out") $([[ -e $root/var/opkg-lists/solowg ]] && echo list-kept || echo no-list)"
	check feed.offline.no-ubus-or-killall "" "$(cat "$CALLS")"
else
	echo "NOTICE: OPKG given without USIGN: the signed feed part is skipped"
fi

# ---- the postinst part alone on a running router (IPKG_INSTROOT empty), under busybox sh
# default_postinst sources it with base-files' functions loaded; these stand in for the three
# it uses, over the sections in $SECTIONS ("name=proto ..."), and record config_load.
cat >"$work/functions.sh" <<'STANDIN'
config_load() { echo "config_load $*" >>"$CALLS"; }
config_get() { # config_get VAR SECTION OPTION: only 'proto'
	for s in $SECTIONS; do [ "${s%%=*}" != "$2" ] || eval "$1=\${s#*=}"; done
}
config_foreach() { # config_foreach FUNCTION interface: every section is an interface
	for s in $SECTIONS; do "$1" "${s%%=*}"; done
}
STANDIN
# A busybox built with FEATURE_SH_STANDALONE (Debian's) runs its own killall before PATH's
# (OpenWrt's does not prefer applets): a function, which the shell looks up first, reaches
# the recorder.
echo "killall() { \"$work/bin/killall\" \"\$@\"; }" >>"$work/functions.sh"
live_part() { # live_part KNOWN UP_IFACES [KILLALL_RC]: prints "exit STATUS" and the output
	local out rc=0
	: >"$CALLS"
	# shellcheck disable=SC2016 # expanded by busybox sh
	out=$(env -u IPKG_INSTROOT PATH="$work/bin:$PATH" KNOWN="$1" UP_IFACES="$2" DOWN_IFACES="${DOWN_IFACES:-}" \
		KILLALL_RC="${3:-0}" SECTIONS="lan=static wg0=solowg wg1=solowg" \
		busybox sh -c '. "$1"; . "$2"' sh "$work/functions.sh" "$work/v1.control/postinst-pkg") || rc=$?
	echo "exit $rc${out:+ $out}"
}
hup="killall -HUP ubusd"
handlers="ubus call network get_proto_handlers"
status="ubus call network.interface.wg0 status
ubus call network.interface.wg1 status"
if command -v busybox >/dev/null; then
	check live.all-up.output "exit 0" "$(live_part 1 "wg0 wg1")"
	check live.all-up.calls "$hup
$handlers
config_load network
$status" "$(cat "$CALLS")"
	check live.one-pending.output "exit 0" "$(live_part 1 "wg0")"
	check live.one-pending.calls "$hup
$handlers
config_load network
$status
ubus call network.interface.wg1 down
ubus call network.interface.wg1 up" "$(cat "$CALLS")"
	check live.taken-down-stays-down.output "exit 0" "$(DOWN_IFACES=wg1 live_part 1 "wg0")"
	check live.taken-down-stays-down.calls "$hup
$handlers
config_load network
$status" "$(cat "$CALLS")"
	check live.first-install.output \
		"exit 0 solowg: run /etc/init.d/network restart (or reboot) to start using proto solowg" \
		"$(live_part "" "" 1)"
	check live.first-install.calls "$hup
$handlers" "$(cat "$CALLS")"
	# Upgrades: apk runs no pre-deinstall and starts the service before this part, which
	# procd ignores while the old daemon runs: the part restarts a running service. With opkg
	# the old prerm has stopped it (not running: no restart; default_postinst starts it).
	# /etc/init.d/solowg is a recorder, mounted over /etc/init.d in a mount namespace of this
	# test's own.
	cat >"$work/init-recorder" <<'STANDIN'
#!/bin/sh
echo "init.d/solowg $*" >>"$CALLS"
[ "$1" != running ] || [ -n "$RUNNING" ]
STANDIN
	chmod 755 "$work/init-recorder"
	live_upgrade() { # live_upgrade PKG_UPGRADE RUNNING: the init script's calls
		: >"$CALLS"
		# shellcheck disable=SC2016 # expanded by the inner shells
		PKG_UPGRADE=$1 RUNNING=$2 unshare -m --propagation private sh -c '
			mount -t tmpfs tmpfs /etc/init.d && cp "$1" /etc/init.d/solowg &&
			env -u IPKG_INSTROOT PATH="$2:$PATH" KNOWN=1 UP_IFACES="wg0 wg1" SECTIONS="wg0=solowg wg1=solowg" \
				busybox sh -c ". \"\$1\"; . \"\$2\"" sh "$3" "$4"' \
			sh "$work/init-recorder" "$work/bin" "$work/functions.sh" "$work/v1.control/postinst-pkg" >/dev/null
		grep '^init.d/' "$CALLS" | tr '\n' ' ' | sed 's/ $//'
	}
	if [[ $(id -u) -eq 0 ]] && unshare -m true 2>/dev/null; then
		check live.apk-upgrade.restarts "init.d/solowg running init.d/solowg restart" "$(live_upgrade 1 1)"
		check live.opkg-upgrade.stopped-no-restart "init.d/solowg running" "$(live_upgrade 1 "")"
		check live.first-install.no-restart "" "$(live_upgrade 0 1)"
	else
		echo "NOTICE: not root or no mount namespace: the live upgrade restart checks are skipped"
	fi
else
	echo "NOTICE: no busybox; the live-mode checks of the postinst part are skipped"
fi

checks_done
