#!/bin/sh
# Installs the tests' npm packages (jsqr, and uqr at the release LuCI's
# luci-lib-uqr bundles; exact versions in package-lock.json) with `npm ci`,
# unless node_modules already holds exactly those versions: an older checkout's
# node_modules without uqr is brought up to date. Used by run-node.sh and
# browser.sh; needs node and npm.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
cd "$here"

if ! node -e '
	const lock = require("./package-lock.json").packages;
	for (const [dir, pkg] of Object.entries(lock)) {
		if (dir === "") continue;
		let have = null;
		try { have = require("./" + dir + "/package.json").version; } catch (e) {}
		if (have !== pkg.version) process.exit(1);
	}' 2>/dev/null; then
	npm ci --no-audit --no-fund
fi
