#!/usr/bin/env bash
# Debian's mipsel wireguard-go (bookworm), for bench/router's third implementation: the user-space
# daemon whose published figure on a 24KEc router (anchors.tsv) checks the cost model where a
# user-space VPN pays. Downloads the package with a private apt configuration (the host's own is
# not touched) and unpacks the binary into OUT_DIR (default /var/tmp/solowg-wireguard-go-mipsel).
#   bench/router/fetch-wireguard-go.sh [OUT_DIR]     prints the binary's path
set -euo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd -- "$here/../.." && pwd)
out=${1:-/var/tmp/solowg-wireguard-go-mipsel}
# shellcheck source-path=SCRIPTDIR source=../../tests/mips-system/host-mirror.sh
. "$repo/tests/mips-system/host-mirror.sh"
if [[ ! -x $out/wireguard-go ]]; then
	mirror=${SOLOWG_MIPS_MIRROR:-$(host_mirror bookworm)}
	[[ $mirror =~ ^(https?|file):/ ]] || {
		echo "fetch-wireguard-go: no Debian mirror in the host's apt sources (set SOLOWG_MIPS_MIRROR)" >&2
		exit 1
	}
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
	mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/parts"
	echo "deb $mirror bookworm main" >"$work/sources.list"
	opts=(-o "Dir::Etc::SourceList=$work/sources.list" -o "Dir::Etc::SourceParts=$work/parts"
		-o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache"
		-o APT::Architecture=mipsel -o APT::Architectures=mipsel -o APT::Sandbox::User=root -q)
	apt-get "${opts[@]}" update >/dev/null
	(cd "$work" && apt-get "${opts[@]}" download wireguard-go:mipsel >/dev/null)
	deb=$(find "$work" -maxdepth 1 -name 'wireguard-go_*_mipsel.deb' | head -n 1)
	[[ -f $deb ]] || {
		echo "fetch-wireguard-go: the package was not downloaded" >&2
		exit 1
	}
	dpkg-deb -x "$deb" "$work/x"
	mkdir -p "$out"
	install -m 0755 "$work/x/usr/bin/wireguard-go" "$out/wireguard-go.new"
	basename "$deb" >"$out/package"
	mv "$out/wireguard-go.new" "$out/wireguard-go"
fi
printf '%s\n' "$out/wireguard-go"
