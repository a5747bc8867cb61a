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
# Each pair runs A then B at once, and B pays for what A's end leaves the kernel to do after
# it (a network namespace is taken down by a kernel worker after the process is gone): two
# identical builds measure 0.92-0.94 in that order (found in issue 32's second round). So each
# comparison runs in both orders, and the ratio quoted is the geometric mean of the two
# (sqrt(A/B first / (B/A first))), which that bias cancels from.
median() { (cd / && "${as_user[@]}" env "$@" 2>&1 | awk '/^A\/B wall/ { print $4 }') }
both() { # ENV_ASSIGNMENT LABEL "COMMAND_A" "COMMAND_B"
  local env=$1 label=$2 a=$3 b=$4 first second
  first=$(median "$env" farm-bench -n 100 --warmup 5 --vs "$b" -- $a)
  second=$(median "$env" farm-bench -n 100 --warmup 5 --vs "$a" -- $b)
  awk -v l="$label" -v f="$first" -v s="$second" \
    'BEGIN { printf "%-44s %.3f  (A first %.3f, B first %.3f)\n", l, sqrt(f / s), f, 1 / s }'
}
lnk_after="$after sandbox run --file $out/one.toml -- true"
lnk_before="$before sandbox run --file $out/one.toml -- true"
both LNK_TEST_LANDLOCK_ONLY= "own world: after / before" "$lnk_after" "$lnk_before"
both LNK_TEST_LANDLOCK_ONLY= "own world: after / bwrap --unshare-all" "$lnk_after" "$bwrap"
both LNK_TEST_LANDLOCK_ONLY=1 "Landlock-only: after / before" "$lnk_after" "$lnk_before"
both LNK_TEST_LANDLOCK_ONLY=1 "Landlock-only: after / lljail" "$lnk_after" "$out/lljail /bin/true"
