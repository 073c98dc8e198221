#!/bin/sh
# Node tests of luci-app-solowg's pure modules (conf.js, qr.js).
# Installs the test dependency (jsqr, pinned in package-lock.json) with
# `npm ci` when it is missing, then runs `node --test luci-app/tests/`.
# Needs node >= 18 and npm; run from anywhere.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

if [ ! -f "$here/node_modules/jsqr/dist/jsQR.js" ]; then
	(cd "$here" && npm ci --no-audit --no-fund)
fi

cd "$repo"
exec node --test luci-app/tests/
