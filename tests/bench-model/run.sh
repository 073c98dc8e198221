#!/usr/bin/env bash
# bench/router's cost model without QEMU: the plugin's cache and pipeline model (model-test.c
# includes cpu-model.c) and the arithmetic that turns its counts into cycles (test_cost.py).
set -euo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
gcc -O1 -Wall -Wextra -Werror -o "$tmp/model-test" "$here/model-test.c" -lpthread
"$tmp/model-test"
python3 -B -W error::ResourceWarning -m unittest "$here/test_cost.py"
