#!/usr/bin/env bash
# The call's proxy, measured side by side in one run (numbers in the README):
#   1. open-to-first-byte of a TCP connection directly and through a CONNECT tunnel (same world,
#      same server, same run), and the throughput of a 1 GiB download both ways;
#   2. the launch cost of `lnk sandbox run -- true` with [internet] beside the same call without.
# The world is tests/proxy_world.py: servers of its own in a user and network namespace.
#
#   bash bench/proxy.sh        (needs hyperfine, openssl, iproute2, and user namespaces)
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/out
mkdir -p "$out/world/www"
cargo build --release --quiet
lnk=$PWD/target/x86_64-unknown-linux-musl/release/lnk
connects=${CONNECTS:-300}
bytes=${BYTES:-1073741824}

cat > "$out/net.toml" <<TOML
commands = ["python3", "true"]
[internet]
hosts = ["192.0.2.1"]
tcp = ["192.0.2.1:5432", "192.0.2.1:9001"]
per_minute = 10000
[files]
read = ["$PWD/bench"]
TOML
printf 'commands = ["python3", "true"]\n' > "$out/plain.toml"

echo "== connections and a 1 GiB download: direct, then through the proxy (same world)"
unshare -Urn python3 tests/proxy_world.py "$PWD/$out/world" -- sh -c "
  python3 '$PWD/bench/proxy_measure.py' direct $connects $bytes &&
  '$lnk' sandbox run --file '$PWD/$out/net.toml' -- python3 '$PWD/bench/proxy_measure.py' proxy $connects $bytes
" | tee "$out/proxy.jsonl"
python3 - "$out/proxy.jsonl" <<'PY'
import json, sys
rows = {r["mode"]: r for r in map(json.loads, open(sys.argv[1]))}
d, p = rows["direct"], rows["proxy"]
print(f"open to first byte, median: direct {d['connect_median_us']:.0f} us, proxy {p['connect_median_us']:.0f} us "
      f"(+{p['connect_median_us'] - d['connect_median_us']:.0f} us, {p['connect_median_us'] / d['connect_median_us']:.2f}x)")
print(f"1 GiB download: direct {d['mib_per_s']:.0f} MiB/s, proxy {p['mib_per_s']:.0f} MiB/s "
      f"({p['mib_per_s'] / d['mib_per_s']:.2f}x)")
PY

echo "== launch: with [internet] beside without (same run)"
cd /
hyperfine -N --warmup 20 --runs 200 --export-json "$OLDPWD/$out/proxy-launch.json" \
  "$lnk sandbox run --file $OLDPWD/$out/plain.toml -- true" \
  "$lnk sandbox run --file $OLDPWD/$out/net.toml -- true"
cd "$OLDPWD"
python3 - "$out/proxy-launch.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
print(f"launch with [internet] / without: {r[1]['median'] / r[0]['median']:.2f}x "
      f"({r[0]['median'] * 1e3:.2f} ms vs {r[1]['median'] * 1e3:.2f} ms)")
PY
