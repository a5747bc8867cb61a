//! The sweep never signals a group it cannot prove is the command's, even when the recorded
//! number has been reused (anchors/supervision.md §4.5, R1, R3, R6).
//!
//! The scenarios run in a fresh user and pid namespace (`unshare -Urpf --mount-proc`), where
//! nothing else allocates pids, `kill(-N)` cannot reach outside, and writing
//! `/proc/sys/kernel/ns_last_pid` places the next pid exactly: a decoy takes the recorded number
//! on purpose.

mod common;
use common::*;

const SCENARIOS: &str = r#"
import json, os, subprocess, sys, time

R = os.environ["LNK_LINK_RUN"]
WORK = os.environ["WORK"]
A = ["--agent-dir", WORK + "/agent", "--files-dir", WORK + "/files"]
POLICY = WORK + "/sandbox.toml"

def reap():
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass

def alive(pid):
    reap()
    try:
        stat = open(f"/proc/{pid}/stat").read()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"

def wait_gone(pid):
    # Gone means reaped, its number free: a zombie still holds it (one that reaches this pid 1
    # only once the kernel has reparented it, a moment after its parent died).
    for _ in range(500):
        reap()
        if not os.path.exists(f"/proc/{pid}"):
            return
        time.sleep(0.01)
    raise AssertionError(f"{pid} never went away")

def start(*program):
    out = subprocess.run([R, "start", *A, "--file", POLICY, "--", *program], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()

def field(id, key):
    for line in open(f"{WORK}/agent/runs/{id}.toml"):
        if line.startswith(key + " = "):
            return line.split(" = ", 1)[1].strip()
    raise KeyError(key)

def sweep():
    out = subprocess.run([R, "sweep", *A, "--json"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)

def state(id):
    return field(id, "state").strip('"')

def decoy_group_at(number):
    """An unrelated session whose leader is `number` and has exited, leaving a member."""
    open("/proc/sys/kernel/ns_last_pid", "w").write(str(number - 1))
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.setsid()
        member = os.fork()
        if member == 0:
            time.sleep(120)
            os._exit(0)
        os.write(w, str(member).encode())
        os._exit(0)
    assert pid == number, f"the decoy got {pid}, not {number}"
    os.waitpid(pid, 0)
    member = int(os.read(r, 32))
    assert open(f"/proc/{member}/stat").read().rsplit(")", 1)[1].split()[2] == str(number)
    return member

# R1: the command's group is gone (supervisor SIGKILLed, keeper ended the group); an unrelated
# group takes the number. The sweep must leave it alone and record lost.
id = start("sleep", "60")
keeper, sup = int(field(id, "keeper_pid")), int(field(id, "supervisor_pid"))
os.kill(sup, 9)
wait_gone(keeper)
member = decoy_group_at(keeper)
report = sweep()
assert alive(member), f"R1: the sweep killed the decoy: {report}"
assert state(id) == "lost", state(id)
print("R1 ok: decoy at the reused number survived; record lost")
os.kill(member, 9)

# R1b: the number is reused by a live leader (another start time).
id = start("sleep", "60")
keeper, sup = int(field(id, "keeper_pid")), int(field(id, "supervisor_pid"))
os.kill(sup, 9)
wait_gone(keeper)
open("/proc/sys/kernel/ns_last_pid", "w").write(str(keeper - 1))
leader = os.fork()
if leader == 0:
    os.setsid()
    time.sleep(120)
    os._exit(0)
assert leader == keeper
time.sleep(0.05)
report = sweep()
assert alive(leader), f"R1b: the sweep killed a live stranger at the number: {report}"
print("R1b ok: a live leader at the reused number survived")
os.kill(leader, 9)

# R3: supervisor dead, keeper alive (stopped, so its parent-death signal waits): the group is
# provably the command's, and the sweep ends it all; a sibling decoy group survives.
sibling = os.fork()
if sibling == 0:
    os.setsid()
    time.sleep(120)
    os._exit(0)
id = start("sh", "-c", "sleep 60 & echo $! > " + WORK + "/files/bg; wait")
for _ in range(500):
    # `echo $! > bg` makes the file before it writes the number: wait for the whole line.
    if os.path.exists(WORK + "/files/bg") and open(WORK + "/files/bg").read().endswith("\n"):
        break
    time.sleep(0.01)
bg = int(open(WORK + "/files/bg").read())
keeper, sup = int(field(id, "keeper_pid")), int(field(id, "supervisor_pid"))
os.kill(keeper, 19)  # SIGSTOP
os.kill(sup, 9)
wait_gone(sup)
report = sweep()
assert [l for l in report["lost"] if l["id"] == id and l["killed"]], report
wait_gone(bg)
wait_gone(keeper)
assert alive(sibling), "R3: the sibling group was hit"
print("R3 ok: a provable group was ended whole, the sibling survived")
os.kill(sibling, 9)

# R6: hostile numbers in records never reach kill(): pgid 1, 0, -1, our own group.
victim = os.fork()
if victim == 0:
    time.sleep(120)
    os._exit(0)
good = open(f"{WORK}/agent/runs/{id}.toml").read()
for i, bad in enumerate(["1", "0", "-1", str(os.getpgrp()), str(victim)]):
    vid = f"r00000000000000f{i}"
    text = good.replace(f'id = "{id}"', f'id = "{vid}"').replace('state = "lost"', 'state = "running"')
    text = "\n".join(f"keeper_pid = {bad}" if l.startswith("keeper_pid") else l for l in text.splitlines()) + "\n"
    open(f"{WORK}/agent/runs/{vid}.toml", "w").write(text)
    open(f"{WORK}/agent/runs/{vid}.lock", "w").close()
report = sweep()
assert alive(victim), report
print("R6 ok: hostile records signalled nothing:", len(report["corrupt"]), "corrupt,", len(report["lost"]), "lost")
os.kill(victim, 9)
"#;

#[test]
fn the_sweep_never_kills_a_group_that_reused_the_number() {
    let unshare = std::path::Path::new("/usr/bin/unshare");
    let probe = unshare.exists()
        && std::process::Command::new(unshare)
            .args(["-Urpf", "--mount-proc", "true"])
            .status()
            .is_ok_and(|s| s.success());
    if !require(probe, "unprivileged user and pid namespaces (unshare -Urpf --mount-proc)") {
        return;
    }
    let dir = Scratch::new("pidreuse");
    for sub in ["agent", "files", "home", "tmp"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    std::fs::write(
        dir.join("sandbox.toml"),
        "commands = [\"sleep\", \"sh\"]\n[files]\nwrite = [\"~/../files\"]\n"
            .replace("~/../files", dir.join("files").to_str().unwrap()),
    )
    .unwrap();
    let out = run(std::process::Command::new(unshare)
        .args(["-Urpf", "--mount-proc", "python3", "-c", SCENARIOS])
        .env("LNK_LINK_RUN", env!("CARGO_BIN_EXE_lnk-link-run"))
        // The scenarios reason about pid numbers the command writes, so its processes must be
        // in this test's pid namespace: the Landlock-only mode (the own world's pid namespace
        // would only add the kernel's guarantee on top of what is tested here).
        .env("LNK_TEST_LANDLOCK_ONLY", "1")
        .env("WORK", &dir.path)
        .env("HOME", dir.join("home"))
        .env("TMPDIR", dir.join("tmp")));
    let text = stdout(&out);
    assert!(out.status.success(), "{text}\n{}", stderr(&out));
    for scenario in ["R1 ok", "R1b ok", "R3 ok", "R6 ok"] {
        assert!(text.contains(scenario), "{scenario} missing:\n{text}\n{}", stderr(&out));
    }
}
