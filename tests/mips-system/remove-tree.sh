# shellcheck shell=bash
# Sourced (bash).

# unmount_below DIR: unmounts whatever is mounted at or below DIR, deepest first: a second stage that failed
# leaves its proc and sys mounted in the tree, and removing the tree must not walk into them.
unmount_below() {
	local d m
	d=$(realpath -m -- "$1")
	awk '{ print $2 }' /proc/self/mounts | while read -r m; do
		m=$(printf '%b' "$m") # /proc/self/mounts escapes spaces as \040
		if [[ $m == "$d" || $m == "$d"/* ]]; then printf '%s\n' "$m"; fi
	done | sort -r | while read -r m; do
		umount "$m" 2>/dev/null || umount -l "$m" || true
	done
}
# remove_tree DIR: unmount below DIR, then remove it without crossing into any other file
# system (should an unmount have failed).
remove_tree() {
	[[ -e $1 ]] || return 0
	unmount_below "$1" || return 1
	rm -rf --one-file-system -- "$1"
}
