#!/usr/bin/env python3
"""File-session benchmark, side by side in one run.

1. Session start until the first answer: `lnk sandbox run --tool file -- lnk file` against
   `cat` (the same pipe round trip with no work), 200 starts each, medians.
2. A small read and a small write in a running session: 5,000 round trips each, against a
   round trip through `cat` in the same driver (the driver's own cost), medians.

    python3 bench/file_session.py target/x86_64-unknown-linux-musl/release/lnk
"""
import json, os, statistics, subprocess, sys, tempfile, time

lnk = os.path.abspath(sys.argv[1])
work = tempfile.mkdtemp()
home = os.path.join(work, "home")
files = os.path.join(home, "Link", "Files")
os.makedirs(files)
open(os.path.join(files, "small.txt"), "w").write("hello\n" * 10)
policy = os.path.join(work, "sandbox.toml")
open(policy, "w").write('commands = []\n[files]\nread = ["~"]\nwrite = ["~/Link/Files"]\n')
env = dict(os.environ, HOME=home)
session_cmd = [lnk, "sandbox", "run", "--file", policy, "--tool", "file", "--", "lnk", "file", "--files-dir", files]

def start_until_first_answer(cmd, runs=200):
    times = []
    request = b'{"id":1,"op":"stat","path":"small.txt"}\n'
    for _ in range(runs):
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        p.stdin.write(request)
        p.stdin.flush()
        p.stdout.readline()
        times.append(time.perf_counter() - t0)
        p.stdin.close()
        p.wait()
    return statistics.median(times)

def round_trips(cmd, request, n=5000):
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    line = (json.dumps(request) + "\n").encode()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        p.stdin.write(line)
        p.stdin.flush()
        answer = p.stdout.readline()
        times.append(time.perf_counter() - t0)
    assert b"error" not in answer or cmd[0] == "cat", answer
    p.stdin.close()
    p.wait()
    return statistics.median(times)

cat_start = start_until_first_answer(["cat"])
lnk_start = start_until_first_answer(session_cmd)
print(f"session start until the first answer: {lnk_start*1e3:.2f} ms "
      f"(cat: {cat_start*1e3:.2f} ms; lnk adds {(lnk_start-cat_start)*1e3:.2f} ms)")
read = {"id": 1, "op": "read", "path": "small.txt"}
write = {"id": 2, "op": "write", "path": "out.txt", "content": "hello\n"}
cat_rt = round_trips(["cat"], read)
lnk_read = round_trips(session_cmd, read)
lnk_write = round_trips(session_cmd, write, 1000)
lnk_write_nosync = round_trips(session_cmd, dict(write, sync=False))
print(f"round trip, median: cat {cat_rt*1e6:.1f} µs; read {lnk_read*1e6:.1f} µs "
      f"(+{(lnk_read-cat_rt)*1e6:.1f} µs over cat); write {lnk_write*1e6:.1f} µs (+{(lnk_write-cat_rt)*1e6:.1f} µs, fsync); "
      f"write with \"sync\": false {lnk_write_nosync*1e6:.1f} µs (+{(lnk_write_nosync-cat_rt)*1e6:.1f} µs)")

def pipelined(cmd, request, n=5000):
    """Mean cost per call with the requests queued: the session's own work, without the two
    process wakeups a strict round trip pays on each call."""
    lines = "".join(json.dumps(dict(request, id=i)) + "\n" for i in range(n)).encode()
    t0 = time.perf_counter()
    out = subprocess.run(cmd, input=lines, stdout=subprocess.PIPE, env=env).stdout
    elapsed = time.perf_counter() - t0
    assert out.count(b"\n") == n
    return elapsed / n

base = pipelined(["cat"], read)
for name, req in [("read", read), ("write", dict(write, sync=False)), ("write+fsync", write)]:
    per = pipelined(session_cmd, req, 2000 if name == "write+fsync" else 5000)
    print(f"pipelined, mean per call: {name} {per*1e6:.1f} µs (cat {base*1e6:.1f} µs)")
