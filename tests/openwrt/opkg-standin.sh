#!/usr/bin/env bash
# STAND-IN for opkg (opkg-lede), used by tests/openwrt/upgrade.sh because CI has no opkg: it
# is in no package registry. It does, on an offline root only, what the real opkg-lede
# (git 38eccbb, 2024-10-16) was seen to do with the solowg .ipk on 2026-12-05, no more:
#
#   install FILE.ipk, package not installed: unpack the data into the root. A conffile already
#     on disk (left by an earlier removal) that differs from the shipped one stays; the shipped
#     one goes to FILE-opkg. Then postinst "configure" with PKG_UPGRADE=0.
#   install FILE.ipk, older version installed (an upgrade): old prerm "upgrade NEWVERSION"
#     with PKG_UPGRADE=1, the old version's files that the new one lacks deleted, the data
#     unpacked, conffiles resolved as above against the file the user had, then postinst
#     "configure" with PKG_UPGRADE=1.
#   remove NAME: prerm "remove" with PKG_UPGRADE=0, then every listed file deleted except a
#     conffile whose SHA-256 differs from the one recorded at install. Directories stay (the
#     .list names files only); so does FILE-opkg, which no package lists.
#   list-changed-conffiles: the conffiles whose SHA-256 differs from the recorded one.
#
# The package's postinst-pkg is kept beside its postinst, for default_postinst to source.
# Scripts run only with --force-postinstall, through `sh -c "SCRIPT ARGS"`, as the real one
# runs them. The status entry carries the fields the real one wrote, and Conffiles records
# the SHA-256 of the file as shipped. Not done: dependencies, feeds, preinst and postrm (the
# package has none; a package with them is refused), Replaces, Conflicts, alternatives.
#
#   opkg-standin.sh --offline-root ROOT [--force-postinstall] [--add-dest D] [--add-arch A]
#                   install FILE.ipk | remove NAME | list-changed-conffiles
set -euo pipefail

die() {
	echo "opkg-standin: $*" >&2
	exit 1
}
root="" scripts=0
while [[ $# -gt 0 ]]; do
	case $1 in
	--offline-root) root=${2%/} && shift 2 ;;
	--force-postinstall) scripts=1 && shift ;;
	--add-dest | --add-arch) shift 2 ;; # one destination, no architecture checks
	*) break ;;
	esac
done
[[ -n $root && -d $root ]] || die "--offline-root ROOT is required (this stand-in never touches /)"
[[ $# -ge 1 ]] || die "no command"
info=$root/usr/lib/opkg/info
status=$root/usr/lib/opkg/status
mkdir -p "$info"
touch "$status"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

sha() { sha256sum <"$1" | cut -d' ' -f1; }
field() { sed -n "s/^$1: //p" "$2" | head -n1; }
# The status file without package $1's stanza.
without() { awk -v p="Package: $1\n" 'BEGIN{RS=""; ORS="\n\n"} index($0 "\n", p) != 1' "$status"; }
recorded() { # recorded NAME: "path sha256" for each of its conffiles
	awk -v p="$1" '/^Package: /{pkg = $2} /^Conffiles:/{on = (pkg == p); next} !/^ /{on = 0}
		on {print $1, $2}' "$status"
}

run_script() { # run_script NAME SCRIPT PKG_UPGRADE ARGS
	if [[ $scripts == 1 && -f $info/$1.$2 ]]; then
		PKG_UPGRADE=$3 sh -c "$info/$1.$2 $4" || die "$1 $2 script failed"
	fi
}

install_ipk() {
	local ipk=$1 name version old="" f c upgrade=0
	mkdir "$tmp/control"
	tar -xzf "$ipk" -C "$tmp" ./control.tar.gz ./data.tar.gz
	tar -xzf "$tmp/control.tar.gz" -C "$tmp/control"
	for f in preinst postrm; do
		[[ ! -e $tmp/control/$f ]] || die "$f scripts are not supported by this stand-in"
	done
	touch "$tmp/control/conffiles"
	name=$(field Package "$tmp/control/control")
	version=$(field Version "$tmp/control/control")
	tar -tzf "$tmp/data.tar.gz" | sed -n 's,^\./,/,; /[^/]$/p' >"$tmp/list"
	if [[ -f $info/$name.control ]]; then
		old=$(field Version "$info/$name.control")
		upgrade=1
		echo "Upgrading $name on root from $old to $version..."
		run_script "$name" prerm 1 "upgrade $version"
	else
		echo "Installing $name ($version) to root..."
	fi
	recorded "$name" >"$tmp/old-conffiles"
	# Set aside the file on disk of each conffile: for one the old version had, only if the
	# user changed it; for any other, whatever it holds.
	while read -r f; do
		[[ -f $root$f ]] || continue
		c=$(awk -v f="$f" '$1 == f {print $2}' "$tmp/old-conffiles")
		if [[ -z $c || $(sha "$root$f") != "$c" ]]; then
			cp -p "$root$f" "$root$f-opkg.backup"
		fi
	done <"$tmp/control/conffiles"
	if [[ $upgrade == 1 ]]; then
		while read -r f; do
			grep -qxF -- "$f" "$tmp/list" || rm -f "$root$f"
		done <"$info/$name.list"
	fi
	tar -xzpf "$tmp/data.tar.gz" -C "$root"
	: >"$tmp/conffiles.sha"
	while read -r f; do
		echo " $f $(sha "$root$f")" >>"$tmp/conffiles.sha"
		[[ -f $root$f-opkg.backup ]] || continue
		if [[ $(sha "$root$f-opkg.backup") != "$(sha "$root$f")" ]]; then
			echo "Existing conffile $root$f is different from the conffile in the new package." \
				"The new conffile will be placed at $root$f-opkg."
			mv "$root$f" "$root$f-opkg"
			mv "$root$f-opkg.backup" "$root$f"
		else
			rm -f "$root$f-opkg.backup"
		fi
	done <"$tmp/control/conffiles"
	rm -f "$info/$name".*
	for f in control conffiles postinst postinst-pkg prerm; do
		if [[ -s $tmp/control/$f ]]; then cp -p "$tmp/control/$f" "$info/$name.$f"; fi
	done
	cp "$tmp/list" "$info/$name.list"
	{
		without "$name"
		printf 'Package: %s\nVersion: %s\n' "$name" "$version"
		printf 'Depends: %s\n' "$(field Depends "$tmp/control/control")"
		printf 'Status: install user installed\nArchitecture: %s\n' "$(field Architecture "$tmp/control/control")"
		if [[ -s $tmp/conffiles.sha ]]; then echo "Conffiles:" && cat "$tmp/conffiles.sha"; fi
		printf 'Installed-Time: %s\n\n' "$(date +%s)"
	} >"$tmp/status"
	cat "$tmp/status" >"$status"
	echo "Configuring $name."
	run_script "$name" postinst "$upgrade" configure
}

remove_pkg() {
	local name=$1 f c
	[[ -f $info/$name.list ]] || die "$name is not installed"
	echo "Removing package $name from root..."
	run_script "$name" prerm 0 remove
	recorded "$name" >"$tmp/conffiles"
	while read -r f; do
		c=$(awk -v f="$f" '$1 == f {print $2}' "$tmp/conffiles")
		if [[ -n $c && -f $root$f && $(sha "$root$f") != "$c" ]]; then
			echo "Not deleting modified conffile $root$f."
		else
			rm -f "$root$f"
		fi
	done <"$info/$name.list"
	without "$name" >"$tmp/status"
	cat "$tmp/status" >"$status"
	rm -f "$info/$name".*
}

case $1 in
install) install_ipk "${2:?install needs an .ipk file}" ;;
remove) remove_pkg "${2:?remove needs a package name}" ;;
list-changed-conffiles)
	awk '/^Conffiles:/{on = 1; next} !/^ /{on = 0} on {print $1, $2}' "$status" | while read -r f c; do
		if [[ -f $root$f && $(sha "$root$f") != "$c" ]]; then echo "$f"; fi
	done
	;;
*) die "command $1 is not supported by this stand-in" ;;
esac
exit 0
