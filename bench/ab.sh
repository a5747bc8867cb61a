#!/usr/bin/env bash
# A launch A/B, as bench/README.md's rounds are measured: `farm-bench` runs AFTER and BEFORE in
# turn (A B A B …, 100 pairs after 5 warm-up runs) and takes the ratio pair by pair, so a drift
# of the machine's speed lands on both; then AFTER beside the references the issues name
# (`bwrap --unshare-all …` for the own world, the C floor `lljail` for the Landlock-only mode).
# Each launches `true` with the default file narrowed to one program, from `/`, as LNK_AB_USER
# (default `lnk-test`) when run as root, in both modes (the Landlock-only one through a test
# build's LNK_TEST_LANDLOCK_ONLY=1, given to both sides: build both with `--features
# fault-points`).
#
#   bash bench/ab.sh BEFORE_LNK AFTER_LNK      (needs farm-bench, bubblewrap, gcc)
set -euo pipefail
before=$(realpath "$1")
after=$(realpath "$2")
cd "$(dirname "$0")/.."
shared=${LNK_SHARED:-../shared}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
gcc -O2 -o "$out/lljail" "$shared/bench/lljail.c"
awk '/^commands = \[/ { print "commands = [\"true\"]"; skip = 1; next }
     skip && /^\]/ { skip = 0; next }
     !skip' policy/default.toml > "$out/one.toml"
chmod -R a+rX "$out"
as_user=()
if [ "$(id -u)" -eq 0 ]; then as_user=(runuser -u "${LNK_AB_USER:-lnk-test}" --); fi
bwrap='bwrap --unshare-all --ro-bind / / --proc /proc --dev /dev --tmpfs /tmp /bin/true'
bench() { (cd / && "${as_user[@]}" env "$@" 2>&1 | grep -E '^A/B wall') }
for mode in own-world landlock-only; do
  ll=$([ "$mode" = landlock-only ] && echo 1 || echo "")
  echo "== $mode: after / before"
  bench LNK_TEST_LANDLOCK_ONLY=$ll farm-bench -n 100 --warmup 5 \
    --vs "$before sandbox run --file $out/one.toml -- true" -- "$after" sandbox run --file "$out/one.toml" -- true
  if [ "$mode" = own-world ]; then
    echo "== own-world: after / bwrap --unshare-all"
    bench LNK_TEST_LANDLOCK_ONLY= farm-bench -n 100 --warmup 5 --vs "$bwrap" -- "$after" sandbox run --file "$out/one.toml" -- true
  else
    echo "== landlock-only: after / lljail"
    bench LNK_TEST_LANDLOCK_ONLY=1 farm-bench -n 100 --warmup 5 --vs "$out/lljail /bin/true" -- "$after" sandbox run --file "$out/one.toml" -- true
  fi
done
