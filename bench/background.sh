#!/usr/bin/env bash
# Background-command benchmark, measured side by side:
#   `lnk-link-run start -- true` until the id is returned, beside `lnk sandbox run -- true`
#   (one hyperfine run); the supervisor's RSS while its command sleeps; and a sweep over
#   10,000 records (ended and told: the sweep's steady state), beside listing the folder (`ls`).
#
#   bash bench/background.sh            (needs hyperfine: apt-get install hyperfine)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
bin=$PWD/target/x86_64-unknown-linux-musl/release
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/agent" "$work/files" "$work/many/agent" "$work/many/files"
a=(--agent-dir "$work/agent" --files-dir "$work/files")

# A short pause before each run, for both lines alike: a start returns while its supervisor
# still records the end of `true`, which would otherwise overlap the next run.
hyperfine -N --warmup 10 --runs 200 --prepare 'sleep 0.02' \
  "$bin/lnk sandbox run -- true" \
  "$bin/lnk sandbox run --command true -- true" \
  "$bin/lnk-link-run start ${a[*]} -- true" \
  "$bin/lnk-link-run start ${a[*]} --command true -- true"

id=$("$bin/lnk-link-run" start "${a[@]}" -- sleep 3)
sleep 1
sup=$(sed -n 's/^supervisor_pid = //p' "$work/agent/runs/$id.toml")
echo "supervisor RSS while its command sleeps: $(awk '/VmRSS/ {print $2, $3}' /proc/$sup/status)"
"$bin/lnk-link-run" stop "$id" "${a[@]}" >/dev/null

# 10,000 ended, told records, made from a real one.
one=$("$bin/lnk-link-run" start --agent-dir "$work/many/agent" --files-dir "$work/many/files" -- true)
sleep 0.5
python3 - "$work/many/agent/runs" "$one" <<'PY'
import os, sys
runs, one = sys.argv[1], sys.argv[2]
text = open(f"{runs}/{one}.toml").read().replace("told = false", "told = true")
for i in range(10_000):
    rid = f"r{i:016x}"
    open(f"{runs}/{rid}.toml", "w").write(text.replace(f'id = "{one}"', f'id = "{rid}"'))
    open(f"{runs}/{rid}.lock", "w").close()
PY
hyperfine -N --warmup 3 --runs 20 \
  "ls -f $work/many/agent/runs" \
  "$bin/lnk-link-run sweep --agent-dir $work/many/agent --files-dir $work/many/files"
