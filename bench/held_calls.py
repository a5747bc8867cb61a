#!/usr/bin/env python3
"""What the Landlock-only mode's held calls cost, beside the same work in the own world and with
no sandbox at all, measured side by side in one run (numbers in bench/README.md).

    python3 bench/held_calls.py LNK_TEST_BUILD [ROUNDS] [WORKLOAD,...]

LNK_TEST_BUILD is a build with `--features fault-points` (it honours LNK_TEST_LANDLOCK_ONLY=1).
Each workload is a Python loop that times itself (`time.perf_counter`, the loop alone, not the
launch), run in turn under the three (A B C A B C ...), ROUNDS times (default 5), all of them or
those named (e.g. `connect,bind_listen`); the table gives each one's median time per operation
and its ratio to the bare run. The workloads:

  connect      a TCP connect to a server of the program's own on loopback, and close
  bind_listen  a socket bound to 127.0.0.1:0 and listened on, and closed
  shm          POSIX shared memory made, opened again, unlinked (multiprocessing.shared_memory)
  semaphore    a multiprocessing.Lock made and dropped (sem_open: open, link, unlink)
  mkstemp      tempfile.mkstemp, close, unlink (O_CREAT | O_EXCL: held, let go on; unlink held)
  open_read    open and read an existing file (held by no rule: the baseline of a build's reads)
  tar_x        `tar x` of 2,000 small files (its creating opens are held and let go on), per file
  rm_rf        `rm -rf` of the same tree (unlinkat, never held), per file
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

WORKLOADS = {
    "connect": ("""
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0)); srv.listen(1024); addr = srv.getsockname()
n = 500
t = time.perf_counter()
for _ in range(n):
    c = socket.create_connection(addr); a, _ = srv.accept(); a.close(); c.close()
""", 500),
    "bind_listen": ("""
n = 500
t = time.perf_counter()
for _ in range(n):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(); s.close()
""", 500),
    "shm": ("""
n = 300
t = time.perf_counter()
for _ in range(n):
    a = shared_memory.SharedMemory(create=True, size=4096); b = shared_memory.SharedMemory(name=a.name)
    b.close(); a.close(); a.unlink()
""", 300),
    "semaphore": ("""
n = 300
t = time.perf_counter()
for _ in range(n):
    l = multiprocessing.Lock(); del l
""", 300),
    "mkstemp": ("""
n = 1000
t = time.perf_counter()
for _ in range(n):
    fd, p = tempfile.mkstemp(dir=work); os.close(fd); os.unlink(p)
""", 1000),
    "open_read": ("""
n = 2000
path = os.path.join(work, "r.txt"); open(path, "w").write("x" * 100)
t = time.perf_counter()
for _ in range(n):
    with open(path) as f: f.read()
""", 2000),
    "tar_x": ("""
n = 2000
subprocess.run(["tar", "xf", tree_tar, "-C", work], check=True)
subprocess.run(["rm", "-rf", os.path.join(work, "tree")], check=True)
t = time.perf_counter()
subprocess.run(["tar", "xf", tree_tar, "-C", work], check=True)
""", 2000),
    "rm_rf": ("""
n = 2000
subprocess.run(["tar", "xf", tree_tar, "-C", work], check=True)
t = time.perf_counter()
subprocess.run(["rm", "-rf", os.path.join(work, "tree")], check=True)
""", 2000),
}

PRELUDE = """
import os, socket, subprocess, sys, tempfile, time, multiprocessing
from multiprocessing import shared_memory
work = tempfile.mkdtemp(dir=sys.argv[1]); tree_tar = sys.argv[2]
"""
EPILOGUE = """
elapsed = time.perf_counter() - t
subprocess.run(["rm", "-rf", work])
print("PER_OP_US", elapsed / n * 1e6)
"""


def main():
    lnk = os.path.abspath(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    chosen = sys.argv[3].split(",") if len(sys.argv) > 3 else list(WORKLOADS)
    unknown = [w for w in chosen if w not in WORKLOADS]
    if unknown:
        sys.exit(f"no such workload: {', '.join(unknown)} (there are: {', '.join(WORKLOADS)})")
    base = tempfile.mkdtemp(prefix="lnk-held-bench-")
    os.chmod(base, 0o755)
    scratch = os.path.join(base, "scratch")
    os.makedirs(os.path.join(base, "tree_src", "tree"))
    for i in range(2000):
        with open(os.path.join(base, "tree_src", "tree", f"f{i}"), "w") as f:
            f.write("x")
    tree_tar = os.path.join(base, "tree.tar")
    subprocess.run(["tar", "cf", tree_tar, "-C", os.path.join(base, "tree_src"), "tree"], check=True)
    os.makedirs(scratch)
    policy = os.path.join(base, "sandbox.toml")
    with open(policy, "w") as f:
        f.write(f'commands = ["python3", "tar", "rm"]\n[files]\nread = ["{base}"]\nwrite = ["{scratch}"]\n')
    ways = {
        "bare": lambda script: ["python3", "-c", script, scratch, tree_tar],
        "own-world": lambda script: [lnk, "sandbox", "run", "--file", policy, "--report", "json", "--",
                                     "python3", "-c", script, scratch, tree_tar],
        "landlock-only": lambda script: ["env", "LNK_TEST_LANDLOCK_ONLY=1", lnk, "sandbox", "run", "--file",
                                         policy, "--report", "json", "--", "python3", "-c", script, scratch,
                                         tree_tar],
    }
    results = {(w, way): [] for w in chosen for way in ways}
    for _ in range(rounds):
        for name in chosen:
            body = WORKLOADS[name][0]
            script = PRELUDE + body + EPILOGUE
            for way, argv in ways.items():
                out = subprocess.run(argv(script), capture_output=True, text=True, cwd=base)
                text = out.stdout
                if way != "bare":
                    report = json.loads(out.stdout)
                    mode = report["enforced"]["mode"] if report.get("enforced") else None
                    if mode != way:
                        sys.exit(f"{name}: asked for {way}, ran {mode}: {out.stdout[:2000]}")
                    text = report["stdout"]["text"]
                line = [l for l in text.splitlines() if l.startswith("PER_OP_US")]
                if not line:
                    sys.exit(f"{name} {way}: no measurement: {out.stdout[:2000]} {out.stderr[:2000]}")
                results[(name, way)].append(float(line[0].split()[1]))
    subprocess.run(["rm", "-rf", base])
    print(f"per operation, median of {rounds} rounds (us), and the ratio to the bare run")
    print(f"  {'workload':12} {'bare':>9} {'own world':>16} {'landlock-only':>18}")
    for name in chosen:
        bare = statistics.median(results[(name, "bare")])
        own = statistics.median(results[(name, "own-world")])
        ll = statistics.median(results[(name, "landlock-only")])
        print(f"  {name:12} {bare:9.1f} {own:9.1f} ({own / bare:4.2f}x) {ll:9.1f} ({ll / bare:5.2f}x)")


if __name__ == "__main__":
    main()
