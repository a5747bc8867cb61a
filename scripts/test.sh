#!/usr/bin/env bash
# The whole test suite: the README's test command.
#
#   bash scripts/test.sh
#
# Runs `cargo test` (unit, integration and corpus tests against the real binaries). Run as root,
# it then runs the same compiled tests again as an ordinary user (LNK_TEST_USER, default
# `lnk-test`, created if missing), because lnk must never need root: a sandbox that only works
# as root is not the sandbox a harness gets.
#
# With CI=true, a test that needs a kernel feature this machine lacks fails instead of skipping.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo test (as $(id -un))"
cargo test --locked --all-targets --features fault-points --no-fail-fast

if [ "$(id -u)" -ne 0 ]; then
  exit 0
fi

user="${LNK_TEST_USER:-lnk-test}"
if ! id -u "$user" >/dev/null 2>&1; then
  useradd --create-home --shell /bin/sh "$user"
fi
user_home=$(getent passwd "$user" | cut -d: -f6)

# The ordinary user must be able to read the tree and the compiled tests. If this checkout is in
# a folder it cannot reach (such as /root), build a readable copy instead.
src=$PWD
if ! runuser -u "$user" -- test -r "$src/Cargo.toml"; then
  copy=$(mktemp -d /tmp/lnk-unprivileged.XXXXXX)
  tar --exclude=./target --exclude=./fuzz/target --exclude=./miri/target -cf - . | tar -C "$copy" -xf -
  chmod -R a+rX "$copy"
  chmod a+rx "$copy"
  src=$copy
fi
cd "$src"
tests=$(cargo test --locked --all-targets --features fault-points --no-run --message-format=json 2>/dev/null |
  python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("profile", {}).get("test") and m.get("executable"):
        print(m["executable"])
')
chmod -R a+rX target
echo "== the same tests as the ordinary user $user (uid $(id -u "$user"))"
status=0
for t in $tests; do
  echo "-- $(basename "$t")"
  runuser -u "$user" -- env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$user_home" \
    CI="${CI:-}" LNK_TEST_UNPRIVILEGED=1 "$t" || status=1
done
exit $status
