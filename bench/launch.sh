#!/usr/bin/env bash
# Launch-cost benchmark for `lnk sandbox run`, measured side by side in one hyperfine run:
#   /bin/true                      the program alone
#   execwrap /bin/true             one extra execve (../shared/bench/execwrap.c)
#   lljail /bin/true               a minimal C launcher: pgid, no_new_privs, Landlock, seccomp
#                                  (../shared/bench/lljail.c): the floor
#   keeperwrap lljail /bin/true    lnk's process shape around lljail (bench/keeperwrap.c: a keeper
#                                  in a session of its own forks the program and reports its
#                                  status on a pipe); less one execve (execwrap), the floor of
#                                  any launcher of this shape: see README, Performance
#   lnk sandbox run -- true        the embedded default (55 programs granted execute), in the
#                                  call's own world (user, mount, IPC, network, pid namespaces)
#   lnk … --command true -- true   a sandbox allowing one program and nothing else, own world
#   lnk … --file one-program.toml  the embedded default with `commands = ["true"]`: what issue
#                                  13 compares the default with (the same grants, holes and
#                                  masks; 1 program instead of 55)
#   the same two, Landlock-only    a test build (`--features fault-points`) with
#                                  LNK_TEST_LANDLOCK_ONLY=1, the mode of a kernel without
#                                  user namespaces
#   bwrap --ro-bind / / /bin/true  bubblewrap, for comparison, and with the namespaces the own
#                                  world has (--unshare-all, /proc, /dev, a /tmp of its own)
# then the helper's RSS while its child sleeps, and a child printing 1 GiB (throughput beside a
# bare pipe, and the helper's peak RSS).
#
#   bash bench/launch.sh            (needs hyperfine, gcc, bubblewrap: apt-get install …)
set -euo pipefail
cd "$(dirname "$0")/.."
shared=${LNK_SHARED:-../shared}
out=bench/out
mkdir -p "$out"
cargo build --release --quiet
lnk=$PWD/target/x86_64-unknown-linux-musl/release/lnk
CARGO_TARGET_DIR=$PWD/target/bench-landlock-only cargo build --release --quiet --features fault-points
lnk_ll=$PWD/target/bench-landlock-only/x86_64-unknown-linux-musl/release/lnk
gcc -O2 -o "$out/lljail" "$shared/bench/lljail.c"
gcc -O2 -o "$out/execwrap" "$shared/bench/execwrap.c"
gcc -O2 -o "$out/keeperwrap" bench/keeperwrap.c
gcc -O2 -o "$out/interleave" bench/interleave.c
# The default with one program: its `commands = [ … ]` array (several lines) becomes ["true"].
awk '/^commands = \[/ { print "commands = [\"true\"]"; skip = 1; next }
     skip && /^\]/ { skip = 0; next }
     !skip' policy/default.toml > "$out/one-program.toml"
one_program=$PWD/$out/one-program.toml

cd /  # a folder every sandbox may not read: the launch must not depend on its cwd
hyperfine -N --warmup 30 --runs 300 --export-json "$OLDPWD/$out/launch.json" \
  '/bin/true' \
  "$OLDPWD/$out/execwrap /bin/true" \
  "$OLDPWD/$out/lljail /bin/true" \
  "$OLDPWD/$out/keeperwrap $OLDPWD/$out/lljail /bin/true" \
  "$lnk sandbox run -- true" \
  "$lnk sandbox run --command true -- true" \
  "$lnk sandbox run --file $one_program -- true" \
  "env LNK_TEST_LANDLOCK_ONLY=1 $lnk_ll sandbox run -- true" \
  "env LNK_TEST_LANDLOCK_ONLY=1 $lnk_ll sandbox run --command true -- true" \
  "env $lnk sandbox run --command true -- true" \
  'bwrap --ro-bind / / /bin/true' \
  'bwrap --unshare-all --ro-bind / / --proc /proc --dev /dev --tmpfs /tmp /bin/true'

# The pairs whose ratios are issue 13's goals, again, run in turn (A B C A B C …) rather than in
# blocks: this VM's speed drifts between minutes, and a drift then lands on every line alike.
"$OLDPWD/$out/interleave" 300 /bin/true ::: "$OLDPWD/$out/execwrap" /bin/true ::: \
  "$OLDPWD/$out/lljail" /bin/true ::: "$OLDPWD/$out/keeperwrap" "$OLDPWD/$out/lljail" /bin/true ::: \
  /usr/bin/env LNK_TEST_LANDLOCK_ONLY=1 "$lnk_ll" sandbox run --command true -- true ::: \
  "$lnk" sandbox run --command true -- true ::: "$lnk" sandbox run --file "$one_program" -- true ::: \
  "$lnk" sandbox run -- true ::: "$(command -v bwrap)" --ro-bind / / /bin/true ::: \
  "$(command -v bwrap)" --unshare-all --ro-bind / / --proc /proc --dev /dev --tmpfs /tmp /bin/true \
  > "$OLDPWD/$out/interleaved.txt"
cd "$OLDPWD"

python3 - "$out/launch.json" "$lnk" "$out/interleaved.txt" <<'PY'
import json, os, subprocess, sys, time
results = json.load(open(sys.argv[1]))["results"]
lnk = sys.argv[2]

def table(title, median):
    floor = next(v for k, v in median.items() if "lljail" in k and "keeperwrap" not in k)
    print(f"\n{title}, ratio to lljail:")
    for cmd, m in median.items():
        print(f"  {m*1e3:7.3f} ms  {m/floor:5.2f}x  {cmd}")
    pick = lambda *words: next(v for k, v in median.items() if all(w in k for w in words))
    execve = pick("execwrap") - median["/bin/true"]
    shape = pick("keeperwrap") - execve
    ro_bind = pick("bwrap --ro-bind")
    ll = pick("LNK_TEST_LANDLOCK_ONLY=1", "--command true") - execve  # less `env`'s own execve
    print(f"  the floor of lnk's shape (keeperwrap lljail, less one execve): {shape*1e3:.3f} ms = "
          f"{shape/floor:.2f}x lljail = {shape/ro_bind:.2f}x bwrap --ro-bind")
    print(f"  Landlock-only, one program, less env's execve: {ll/floor:.2f}x lljail, "
          f"{ll/ro_bind:.2f}x bwrap --ro-bind, {ll/shape:.2f}x the floor of its shape")
    own = median[f"{lnk} sandbox run --command true -- true"]
    print(f"  own world, one program: {own/pick('--unshare-all'):.2f}x bwrap with those namespaces")
    default = median[f"{lnk} sandbox run -- true"]
    print(f"  the default beside the same file with one program: {default/pick('one-program.toml'):.2f}x")

table("hyperfine, medians of 300 runs in blocks", {r["command"]: r["median"] for r in results})
interleaved = {}
for line in open(sys.argv[3]):
    ms, _, cmd = line.strip().partition(" ms  ")
    interleaved[cmd.replace("/usr/bin/env", "env").replace("/usr/bin/bwrap", "bwrap")] = float(ms) / 1e3
table("interleaved (bench/interleave.c), medians of 300 turns", interleaved)

def run_measured(args, stdout=subprocess.DEVNULL):
    start = time.monotonic()
    p = subprocess.Popen(args, stdout=stdout, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(p.pid, 0)
    return time.monotonic() - start, usage.ru_maxrss

# The helper's resident memory while its child sleeps.
p = subprocess.Popen([lnk, "sandbox", "run", "--", "sleep", "2"], stdout=subprocess.DEVNULL)
time.sleep(1)
status = open(f"/proc/{p.pid}/status").read()
rss = next(l.split()[1] for l in status.splitlines() if l.startswith("VmRSS"))
p.wait()
print(f"\nhelper RSS while its child sleeps: {rss} KiB")

gib = str(1 << 30)
bare, _ = run_measured(["sh", "-c", f"head -c {gib} /dev/zero | cat > /dev/null"])
inside, peak = run_measured([lnk, "sandbox", "run", "--report", "json", "--", "head", "-c", gib, "/dev/zero"])
print(f"1 GiB printed: bare pipe {1/bare:.2f} GiB/s, through lnk {1/inside:.2f} GiB/s "
      f"({bare/inside:.2f}x of bare); helper peak RSS {peak} KiB")
PY
