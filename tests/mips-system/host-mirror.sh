# shellcheck shell=bash
# Sourced by tests/mips-system/image.sh and bench/router/backports-kernel.sh.
#   host_mirror SUITE   prints the Debian mirror the host's apt uses, for SUITE
# The first Debian mirror the host's apt is configured with: a deb822 stanza or a one-line
# entry serving $SUITE, else the host's own release (any Debian mirror carries both).
host_mirror() {
	local codename want f SUITE=$1
	codename=$(. /etc/os-release && printf '%s' "${VERSION_CODENAME:-}")
	for want in "$SUITE" "$codename"; do
		[[ -n $want ]] || continue
		for f in /etc/apt/sources.list.d/*.sources; do
			[[ -f $f ]] || continue
			awk -v want="$want" '
				BEGIN { RS = ""; FS = "\n" }
				{
					types = ""; uris = ""; suites = ""; enabled = "yes"
					for (i = 1; i <= NF; i++) {
						if ($i ~ /^[ \t]*#/) continue
						split($i, kv, ":[ \t]*")
						key = tolower(kv[1]); val = substr($i, length(kv[1]) + 2)
						sub(/^[ \t]+/, "", val)
						if (key == "types") types = val
						else if (key == "uris") uris = val
						else if (key == "suites") suites = val
						else if (key == "enabled") enabled = tolower(val)
					}
					if (enabled == "no" || (" " types " ") !~ / deb /) next
					if ((" " suites " ") !~ (" " want " ")) next
					split(uris, u, /[ \t]+/)
					print u[1]; exit
				}' "$f"
		done
		for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
			[[ -f $f ]] || continue
			# deb [options] URI SUITE COMPONENT...
			sed -e 's/\[[^]]*\]//' "$f" | awk -v want="$want" '$1 == "deb" && $3 == want { print $2; exit }'
		done
	done | head -n 1
}
