#!/usr/bin/env bash
# Runs README.md's two commands ("Two commands (fresh Debian 12, as root, in this checkout)")
# in a fresh Debian 12 root made by debootstrap, so that a missing install step shows up here
# rather than on a user's machine (a machine with rustup, a C++ compiler or packages installed
# by hand hides it). The commands are read from README.md's first `sh` block, so what is tested
# is what users read.
#
#   tests/fresh-machine.sh [options] [DIR]        (as root, on a Debian host; 20 to 60 min)
#
#   DIR             work directory (default /var/tmp/solowg-fresh-debian12). It keeps the
#                   debootstrap result (DIR/pristine, built once and reused), the root the
#                   commands run in (DIR/root, copied anew from DIR/pristine on every run) and
#                   each command's output (DIR/logs/).
#   --rebuild       run debootstrap again even if DIR/pristine is complete
#   --keep-root     run in DIR/root as the last run left it (to iterate on a failure; not fresh)
#   --worktree      copy the work tree (tracked and untracked, not ignored files) instead of
#                   the committed tree (git archive HEAD)
#   --timeout SECS  bound for each command (default 5400: CI's budget for the whole suite)
#   --mirror URL, --security-mirror URL
#                   Debian archives to use (or DEBIAN_MIRROR, DEBIAN_SECURITY_MIRROR); by
#                   default the ones the host's apt sources name
#
# Prints each command's output as it runs, then per command its exit status and wall time,
# and a final line "fresh-machine: PASS" or "fresh-machine: FAIL ...". Exits 0 when both
# commands exit 0, 1 when one does not, 2 when the root could not be prepared.
# Everything mounted is unmounted and every process left in the root is stopped on exit.
set -euo pipefail

suite=bookworm
dir=/var/tmp/solowg-fresh-debian12
rebuild=0
keep_root=0
worktree=0
limit=5400
mirror=${DEBIAN_MIRROR:-}
security_mirror=${DEBIAN_SECURITY_MIRROR:-}
# The header from the usage line on.
usage() { awk 'NR >= 8 { if (!/^#/) exit; sub(/^# ?/, ""); print }' "${BASH_SOURCE[0]}" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
	case $1 in
	--rebuild) rebuild=1 ;;
	--keep-root) keep_root=1 ;;
	--worktree) worktree=1 ;;
	--timeout) limit=${2:?}; shift ;;
	--mirror) mirror=${2:?}; shift ;;
	--security-mirror) security_mirror=${2:?}; shift ;;
	-h | --help) usage ;;
	-*) echo "fresh-machine: unknown option $1" >&2; usage ;;
	*) dir=$1 ;;
	esac
	shift
done
[[ $limit =~ ^[1-9][0-9]*$ ]] || { echo "fresh-machine: --timeout takes seconds" >&2; exit 2; }
die() { echo "fresh-machine: $*" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || die "needs root (debootstrap, chroot, mounts)"
command -v apt-get >/dev/null || die "needs a Debian host (apt-get)"

repo=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$dir"
dir=$(cd -- "$dir" && pwd -P)
# Mount points are compared with /proc/self/mountinfo, which escapes blanks: keep it simple.
[[ $dir != *[[:space:]]* ]] || die "DIR must not contain blanks: $dir"
pristine=$dir/pristine
root=$dir/root
logs=$dir/logs
checkout=/root/solowg

# One run per DIR at a time.
exec {lock_fd}>"$dir/lock"
flock -n "$lock_fd" || die "another run is using $dir"

# --- The README's commands: the non-comment lines of its first ```sh block.
commands=()
mapfile -t commands < <(awk '
	/^```sh[[:space:]]*$/ && !done { inside = 1; next }
	inside && /^```/ { inside = 0; done = 1; next }
	inside && !/^[[:space:]]*(#|$)/ { print }
' "$repo/README.md")
[[ ${#commands[@]} -eq 2 ]] ||
	die "expected two commands in README.md's first sh block, found ${#commands[@]}: ${commands[*]:-none}"

# --- Host tools.
host_missing=()
command -v debootstrap >/dev/null || host_missing+=(debootstrap)
[[ -f /usr/share/keyrings/debian-archive-keyring.gpg ]] || host_missing+=(debian-archive-keyring)
if [[ ${#host_missing[@]} -gt 0 ]]; then
	echo "fresh-machine: installing on the host: ${host_missing[*]}"
	apt-get update -q
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${host_missing[@]}" </dev/null
fi

# --- Debian archives: the ones the host's apt already uses (one-line and deb822 sources).
# Prints "URI SUITE" for every enabled deb source.
host_sources() {
	local f
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[[ -f $f ]] || continue
		awk '$1 == "deb" {
			i = 2
			if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
			print $i, $(i + 1)
		}' "$f"
	done
	for f in /etc/apt/sources.list.d/*.sources; do
		[[ -f $f ]] || continue
		awk '
			function flush(  i, j, u, s) {
				if (types ~ /(^| )deb( |$)/ && enabled != "no") {
					nu = split(uris, u, " "); ns = split(suites, s, " ")
					for (i = 1; i <= nu; i++) for (j = 1; j <= ns; j++) print u[i], s[j]
				}
				types = uris = suites = enabled = ""
			}
			/^[[:space:]]*#/ { next }
			/^[[:space:]]*$/ { flush(); next }
			{ key = tolower($1); sub(/:.*/, "", key); val = $0; sub(/^[^:]*:[[:space:]]*/, "", val) }
			key == "types" { types = val } key == "uris" { uris = val }
			key == "suites" { suites = val } key == "enabled" { enabled = tolower(val) }
			END { flush() }
		' "$f"
	done
}
debian_suites='(buster|bullseye|bookworm|trixie|forky|sid|oldstable|stable|testing|unstable)'
if [[ -z $mirror ]]; then
	mirror=$(host_sources | awk -v re="^${debian_suites}(-updates|-backports)?\$" '$2 ~ re { print $1; exit }')
fi
if [[ -z $security_mirror ]]; then
	security_mirror=$(host_sources | awk -v re="^${debian_suites}(-security|/updates)\$" '$2 ~ re { print $1; exit }')
fi
[[ -n $mirror ]] || die "no Debian archive in the host's apt sources; give --mirror URL"
# A security archive lives beside the main one as <archive>-security on Debian's mirrors.
[[ -n $security_mirror ]] || security_mirror=${mirror%/}-security
mirror=${mirror%/}
security_mirror=${security_mirror%/}
# The host's apt proxy, if it has one, for debootstrap and for apt inside the root.
apt_proxy=
eval "$(apt-config shell apt_proxy Acquire::http::Proxy)"
[[ -n $apt_proxy && $apt_proxy != DIRECT ]] && export http_proxy=$apt_proxy
echo "fresh-machine: Debian $suite from $mirror (security: $security_mirror)${apt_proxy:+, apt proxy $apt_proxy}"

# --- Cleanup: processes whose root is ours (ours by construction), then our mounts.
mounted_under() {
	# Mount points at or below $1, deepest first.
	awk -v p="$1" '$5 == p || index($5, p "/") == 1 { print $5 }' /proc/self/mountinfo |
		awk '{ print gsub("/", "/"), $0 }' | sort -rn | cut -d' ' -f2-
}
stop_root_processes() {
	local r=$1 pids=() p sig n
	[[ -d $r ]] || return 0
	for sig in TERM KILL; do
		pids=()
		for p in /proc/[0-9]*; do
			[[ ${p#/proc/} != "$$" && $(readlink "$p/root" 2>/dev/null) == "$r" ]] && pids+=("${p#/proc/}")
		done
		[[ ${#pids[@]} -eq 0 ]] && return 0
		echo "fresh-machine: stopping ${#pids[@]} process(es) left in the root (SIG$sig): ${pids[*]}"
		kill -s "$sig" "${pids[@]}" 2>/dev/null || true
		for n in $(seq 50); do
			sleep 0.1
			local alive=0
			for p in "${pids[@]}"; do [[ -e /proc/$p ]] && alive=1; done
			[[ $alive -eq 0 ]] && break
		done
		: "$n"
	done
}
unmount_all() {
	local r=$1 m
	while read -r m; do
		[[ -n $m ]] || continue
		umount "$m" 2>/dev/null || umount -l "$m" || echo "fresh-machine: could not unmount $m" >&2
	done < <(mounted_under "$r")
}
step_pid=
tail_pid=
# Reached through the trap below only.
# shellcheck disable=SC2317
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	# timeout(1) leads its own process group: stop that group first, then anything in the root.
	[[ -n $step_pid ]] && kill -s TERM -- "-$step_pid" 2>/dev/null
	[[ -n $tail_pid ]] && kill "$tail_pid" 2>/dev/null
	stop_root_processes "$root"
	stop_root_processes "$pristine.tmp"
	unmount_all "$root"
	unmount_all "$pristine.tmp"
	local left
	left=$(mounted_under "$dir")
	[[ -z $left ]] || { echo "fresh-machine: still mounted: $left" >&2; rc=2; }
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- The pristine root: debootstrap once, reused until --rebuild.
if [[ $rebuild -eq 1 || ! -f $pristine.done ]]; then
	[[ -z $(mounted_under "$pristine") && -z $(mounted_under "$pristine.tmp") ]] ||
		die "something is mounted under $pristine; unmount it first"
	rm -rf --one-file-system -- "$pristine.tmp" "$pristine" "$pristine.done"
	echo "fresh-machine: debootstrap $suite into $pristine"
	start=$SECONDS
	debootstrap --arch="$(dpkg --print-architecture)" \
		--keyring=/usr/share/keyrings/debian-archive-keyring.gpg \
		"$suite" "$pristine.tmp" "$mirror" >"$dir/debootstrap.log" 2>&1 ||
		{ tail -n 30 "$dir/debootstrap.log" >&2; die "debootstrap failed (log: $dir/debootstrap.log)"; }
	unmount_all "$pristine.tmp"
	mv -- "$pristine.tmp" "$pristine"
	touch "$pristine.done"
	echo "fresh-machine: debootstrap done in $((SECONDS - start)) s"
else
	echo "fresh-machine: reusing $pristine (--rebuild to make it again)"
fi

# --- The run's root: a copy of the pristine one, so every run starts fresh.
[[ -z $(mounted_under "$root") ]] || die "something is mounted under $root; unmount it first"
if [[ $keep_root -eq 0 || ! -d $root ]]; then
	rm -rf --one-file-system -- "$root"
	cp -a -- "$pristine" "$root"
else
	echo "fresh-machine: --keep-root: reusing $root as the last run left it (not fresh)"
fi

# What debootstrap leaves out that an installed system has.
cat >"$root/etc/apt/sources.list" <<EOF
deb $mirror $suite main
deb $mirror $suite-updates main
deb $security_mirror $suite-security main
EOF
cat >"$root/etc/hosts" <<EOF
127.0.0.1	localhost
127.0.1.1	$(hostname)
::1	localhost ip6-localhost ip6-loopback
ff02::1	ip6-allnodes
ff02::2	ip6-allrouters
EOF
rm -f -- "$root/etc/resolv.conf"
cp -L -- /etc/resolv.conf "$root/etc/resolv.conf"
if [[ -n $apt_proxy && $apt_proxy != DIRECT ]]; then
	printf 'Acquire::http::Proxy "%s";\n' "$apt_proxy" >"$root/etc/apt/apt.conf.d/01proxy"
fi
# Certificate authorities the host trusts locally (e.g. of a TLS-inspecting proxy) are part
# of its network, not of the project: the root needs them to reach the same registries.
# ca-certificates' own install step adds them to the bundle.
if compgen -G '/usr/local/share/ca-certificates/*' >/dev/null; then
	mkdir -p "$root/usr/local/share/ca-certificates"
	cp -a /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
	if [[ -x $root/usr/sbin/update-ca-certificates ]]; then
		chroot "$root" /usr/sbin/update-ca-certificates >/dev/null
	fi
fi
# No init runs in a chroot: services that packages start would outlive the run.
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"
[[ -L $root/var/run ]] || { rm -rf --one-file-system -- "$root/var/run"; ln -s /run "$root/var/run"; }

# A real system's / is a mount point; ip netns exec remounts it (mount --make-rslave /), which
# fails on a plain directory. Private, so that nothing mounted below reaches the host's tree.
mount --bind "$root" "$root"
mount --make-private "$root"
# Kernel file systems: /proc, /sys (ip netns exec mounts a sysfs of its own), /dev with pts
# and shm, /run as a tmpfs like at boot (ip netns keeps its bind mounts in /run/netns).
mount -t proc proc "$root/proc"
mount -t sysfs sysfs "$root/sys"
mount --rbind /dev "$root/dev"
# Unmounting it later must not reach the host's /dev/pts and /dev/shm.
mount --make-rslave "$root/dev"
mount -t tmpfs -o mode=755,nosuid,nodev tmpfs "$root/run"
mkdir -p "$root/run/lock"
[[ -c $root/dev/net/tun ]] || die "no /dev/net/tun on the host (modprobe tun)"

# --- The project: its committed tree, or the work tree with --worktree.
rm -rf --one-file-system -- "${root:?}$checkout"
mkdir -p "$root$checkout"
if [[ $worktree -eq 1 ]]; then
	(cd "$repo" && git ls-files -z --cached --others --exclude-standard |
		while IFS= read -r -d '' f; do [[ -e $f || -L $f ]] && printf '%s\0' "$f"; done |
		tar --null -T - -cf -) | tar -xf - -C "$root$checkout"
	what="work tree of $(git -C "$repo" rev-parse --short HEAD)"
else
	git -C "$repo" archive HEAD | tar -xf - -C "$root$checkout"
	what="commit $(git -C "$repo" rev-parse --short HEAD)"
fi
echo "fresh-machine: $what copied to $checkout in the root"
# CI's checkout has ../shared beside it, whose OpenWrt sources the real-component tests build
# (tests/openwrt-real/build.sh): the same beside the root's checkout.
shared_src=$repo/../shared/openwrt-src
if [[ -d $shared_src ]]; then
	rm -rf --one-file-system -- "${root:?}${checkout%/*}/shared"
	mkdir -p "$root${checkout%/*}/shared"
	cp -a -- "$shared_src" "$root${checkout%/*}/shared/openwrt-src"
	echo "fresh-machine: ../shared/openwrt-src copied beside it"
else
	echo "fresh-machine: NOTICE: no ../shared/openwrt-src beside the checkout; the suite's OpenWrt stage will stop"
fi

# --- The two commands, each as a root login would run it, bounded by --timeout.
mkdir -p "$logs"
fmt_time() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }
results=()
failed=0
for i in "${!commands[@]}"; do
	n=$((i + 1))
	cmd=${commands[$i]}
	log=$logs/command-$n.log
	echo
	echo "=== fresh-machine: command $n: $cmd   (timeout $(fmt_time "$limit"), log $log)"
	: >"$log"
	start=$(date +%s)
	timeout -k 30 "$limit" chroot "$root" /usr/bin/env -i HOME=/root USER=root LOGNAME=root \
		SHELL=/bin/bash TERM=dumb LANG=C.UTF-8 \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		/bin/bash -c "cd $checkout && $cmd" </dev/null >"$log" 2>&1 &
	step_pid=$!
	tail -n +1 -f --pid="$step_pid" "$log" &
	tail_pid=$!
	rc=0
	wait "$step_pid" || rc=$?
	wait "$tail_pid" || true
	step_pid=''
	tail_pid=''
	secs=$(($(date +%s) - start))
	# Whatever the command left running (daemons it detached) goes before the next one.
	stop_root_processes "$root"
	verdict="exit $rc"
	[[ $rc -eq 124 || $rc -eq 137 ]] && verdict="exit $rc (timed out after $(fmt_time "$limit"))"
	[[ $rc -eq 0 ]] || failed=1
	results+=("$(printf 'command %d: %-40s %-12s wall %s (%d s)' "$n" "$cmd" "$verdict" "$(fmt_time "$secs")" "$secs")")
done

echo
echo "=== fresh-machine: Debian $suite (debootstrap), $what"
printf '%s\n' "${results[@]}"
if [[ $failed -eq 0 ]]; then
	echo "fresh-machine: PASS (both README commands exit 0 in a fresh Debian 12 root)"
else
	echo "fresh-machine: FAIL (see the logs under $logs)"
fi
exit "$failed"
