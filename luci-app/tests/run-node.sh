#!/bin/sh
# Node tests of luci-app-solowg: the pure module conf.js, the QR codes the
# status page draws with LuCI's uqr (a stand-in built from the pinned npm uqr,
# read back by jsqr), menu, ACL and translations. Installs the test
# dependencies (package-lock.json) with npm-deps.sh when they are missing or
# stale, then runs `node --test luci-app/tests/`.
# Needs node >= 18 and npm; run from anywhere.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

sh "$here/npm-deps.sh"

cd "$repo"
exec node --test luci-app/tests/
