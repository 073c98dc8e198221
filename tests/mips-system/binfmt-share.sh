# shellcheck shell=bash
# Sourced (bash); needs `die`. binfmt_misc makes the kernel run a chroot's mipsel programs
# through qemu-user-static. `binfmt_setup` registers qemu-user-static's handler line when no
# such handler is there (mounting binfmt_misc if need be), `binfmt_cleanup` undoes that.
# Builds may run at the same time (two image directories, a kernel build beside an image
# build), so what was added is shared: each build joins as a user under a lock, and the last
# one to leave removes it. A user whose process is gone does not count.
binfmt_dir=/proc/sys/fs/binfmt_misc
# The handler to register (qemu-user-static's line) and how to recognise one already there.
BINFMT_CONF=${BINFMT_CONF:-/usr/lib/binfmt.d/qemu-mipsel.conf}
BINFMT_MATCH=${BINFMT_MATCH:-mipsel}
binfmt_state=${SOLOWG_BINFMT_STATE:-/run/solowg-mips-binfmt}
binfmt_user=0
# The process the build runs in (not a subshell of the lock).
binfmt_pid=
# binfmt_locked CMD...: CMD under the shared lock (bounded wait).
binfmt_locked() {
	mkdir -p "$binfmt_state/users"
	(
		flock -w 60 9 || exit 1
		"$@"
	) 9>"$binfmt_state/lock"
}
binfmt_leave() {
	local u name
	rm -f "$binfmt_state/users/$binfmt_pid"
	for u in "$binfmt_state"/users/*; do
		[[ -e $u ]] || continue
		kill -0 "${u##*/}" 2>/dev/null && return 0 # another build still needs it
		rm -f "$u"
	done
	if [[ -f $binfmt_state/added ]]; then
		name=$(cat "$binfmt_state/added")
		[[ -n $name && -e $binfmt_dir/$name ]] && { echo -1 >"$binfmt_dir/$name" || true; }
		rm -f "$binfmt_state/added"
	fi
	if [[ -f $binfmt_state/mounted ]]; then
		umount "$binfmt_dir" 2>/dev/null || true
		rm -f "$binfmt_state/mounted"
	fi
}
binfmt_cleanup() {
	[[ $binfmt_user -eq 1 ]] || return 0
	binfmt_user=0
	binfmt_locked binfmt_leave || true
}
binfmt_has_handler() {
	local e
	for e in "$binfmt_dir"/*; do
		[[ -f $e && ${e##*/} != status && ${e##*/} != register ]] || continue
		grep -qx enabled "$e" && grep -q "^interpreter .*$BINFMT_MATCH" "$e" && return 0
	done
	return 1
}
binfmt_join() {
	local conf=$BINFMT_CONF line
	: >"$binfmt_state/users/$binfmt_pid"
	if ! mountpoint -q "$binfmt_dir"; then
		mount -t binfmt_misc binfmt_misc "$binfmt_dir" || return 1
		: >"$binfmt_state/mounted"
	fi
	binfmt_has_handler && return 0
	[[ -f $conf ]] || return 2
	line=$(grep -v '^#' "$conf" | head -n 1)
	printf '%s' "$line" >"$binfmt_dir/register" || return 3
	printf '%s\n' "$line" | cut -d: -f2 >"$binfmt_state/added"
}
binfmt_setup() {
	binfmt_user=1
	binfmt_pid=$BASHPID
	binfmt_locked binfmt_join || die "cannot set up binfmt_misc for $BINFMT_MATCH ($BINFMT_CONF)"
}
