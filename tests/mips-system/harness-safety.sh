#!/usr/bin/env bash
# The image build's two shared-state hazards, without building an image:
#  - remove_tree on a tree that a failed debootstrap second stage left with proc and sys
#    mounted inside: the mounts go first, the tree goes, nothing outside it is touched;
#  - binfmt_misc shared by builds running at the same time: a handler one build added stays
#    while another build still uses it, and goes when the last one leaves (a user whose
#    process died does not keep it). A throw-away handler of this test's own (a magic no file
#    has, interpreter /bin/false) stands in for qemu-mipsel's, so the host's real handlers are
#    never touched.
#   usage: tests/mips-system/harness-safety.sh      (as root)
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
[[ $(id -u) -eq 0 ]] || { echo "must run as root"; exit 2; }
pass=0 fail=0
check() { # NAME CMD...
	local what=$1
	shift
	if "$@"; then
		pass=$((pass + 1))
		echo "PASS $what"
	else
		fail=$((fail + 1))
		echo "FAIL $what"
	fi
}
die() { echo "die: $*" >&2; exit 1; }
tmp=$(mktemp -d /tmp/solowg-harness.XXXXXX)
name=solowg-test-$$
cleanup() {
	[[ -e /proc/sys/fs/binfmt_misc/$name ]] && echo -1 >"/proc/sys/fs/binfmt_misc/$name"
	umount -l "$tmp/tree/proc" "$tmp/tree/sys" 2>/dev/null || true
	rm -rf --one-file-system "$tmp"
}
trap cleanup EXIT

# shellcheck source=tests/mips-system/remove-tree.sh
. "$here/remove-tree.sh"
mkdir -p "$tmp/tree/proc" "$tmp/tree/sys" "$tmp/tree/etc"
echo x >"$tmp/tree/etc/file"
mount -t proc proc "$tmp/tree/proc"
mount -t sysfs sysfs "$tmp/tree/sys"
mounted_below() { grep -c " $tmp/tree" /proc/self/mounts || true; }
check tree.mounted-before test "$(mounted_below)" -eq 2
check tree.remove_tree-succeeds remove_tree "$tmp/tree"
check tree.no-mount-left test "$(mounted_below)" -eq 0
check tree.removed test ! -e "$tmp/tree"
check tree.host-proc-intact test -r /proc/self/status
# As image.sh calls it: under `set -euo pipefail`, with nothing mounted below, at top level.
survives() {
	bash -c 'set -euo pipefail; . "$1"; unmount_below "$2"; echo survived' sh \
		"$here/remove-tree.sh" "$tmp/nothing-here" | grep -qx survived
}
check tree.unmount_below-under-errexit-and-pipefail survives

# binfmt: a handler line of our own, in qemu-user-static's format.
magic=$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n' | sed 's/../\\x&/g')
printf ':%s:M::%s::/bin/false:\n' "$name" "$magic" >"$tmp/handler.conf"
export BINFMT_CONF=$tmp/handler.conf BINFMT_MATCH=/bin/false SOLOWG_BINFMT_STATE=$tmp/state
handler_there() { [[ -e /proc/sys/fs/binfmt_misc/$name ]]; }
handler_gone() { ! handler_there; }
# start_build ID: a build process that joins, then waits for "leave" on its fifo.
declare -A pids=()
start_build() {
	mkfifo "$tmp/$1.ctl"
	(
		# shellcheck source=tests/mips-system/binfmt-share.sh
		. "$here/binfmt-share.sh"
		binfmt_setup
		echo joined >"$tmp/$1.state"
		read -r -t 30 _ <"$tmp/$1.ctl" || true
		binfmt_cleanup
		echo left >"$tmp/$1.state"
	) &
	pids[$1]=$!
	for _ in $(seq 100); do [[ -f $tmp/$1.state ]] && return 0; sleep 0.1; done
	return 1
}
leave() { # ID
	echo leave >"$tmp/$1.ctl"
	wait "${pids[$1]}"
}
check binfmt.first-build-joins start_build a
check binfmt.handler-added handler_there
check binfmt.second-build-joins start_build b
leave a
check binfmt.kept-while-the-second-build-runs handler_there
leave b
check binfmt.removed-by-the-last-build handler_gone
# A build that died without leaving does not keep the handler for ever.
check binfmt.build-that-dies-joins start_build c
kill -9 "${pids[c]}" 2>/dev/null || true
wait "${pids[c]}" 2>/dev/null || true
check binfmt.fourth-build-joins start_build d
leave d
check binfmt.a-dead-user-does-not-keep-it handler_gone

printf '%d passed, %d failed\n' "$pass" "$fail"
[[ $fail -eq 0 ]]
