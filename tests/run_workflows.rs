//! `lnk sandbox run`: ordinary developer work, started from the harness's work folder, in both
//! modes (the own world, and Landlock only on a simulated kernel), as root and as the ordinary
//! user (the suite runs twice). What needs a namespace of the call's own (its own `/tmp`,
//! `ps`, a local server) is checked in the own world only.

mod common;
use common::*;

/// Runs `script` with `sh -c` from the agent's work folder (`~/Link/Files/work`) in each mode.
fn in_each_mode(agent: &Agent, script: &str) -> Vec<(&'static str, Report)> {
    let work = agent.home.join("Link/Files/work");
    std::fs::create_dir_all(&work).unwrap();
    agent.in_each_mode_at(&work, &[], &[], &["sh", "-c", script])
}

fn tool_here(name: &str) -> bool {
    std::process::Command::new("sh")
        .args(["-c", &format!("command -v {name}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn a_listed_compiler_runs_its_own_passes_and_nothing_more() {
    if !require(tool_here("gcc") && tool_here("g++"), "gcc and g++") {
        return;
    }
    let agent = Agent::new(
        "compilers",
        "commands = [\"sh\", \"gcc\", \"g++\", \"cc\", \"c++\"]\n[files]\nread = [\"~\"]\nwrite = [\"~/Link/Files\"]\n",
    );
    let script = r#"
printf '#include <stdio.h>\nint main(void) { puts("c ok"); return 0; }\n' > a.c
printf '#include <iostream>\nint main() { std::cout << "c++ ok" << std::endl; }\n' > b.cc
gcc -O1 -o a.out a.c && echo linked-c
cc -c a.c -o a.o && echo compiled-cc
g++ -o b.out b.cc && echo linked-c++
c++ -c b.cc -o b.o && echo compiled-c++
"#;
    for (mode, r) in in_each_mode(&agent, script) {
        for step in ["linked-c", "compiled-cc", "linked-c++", "compiled-c++"] {
            assert!(r.out().lines().any(|l| l == step), "{mode}: {step}: {}", r.raw);
        }
    }
    // The parts alone are no wider than the compiler: `as` runs because gcc may run it; a
    // program not listed (python3) is still refused.
    let r = agent.run(&[
        "sh",
        "-c",
        "as --version >/dev/null && echo as-ran; python3 -c 1 || echo python-refused",
    ]);
    assert!(r.out().contains("as-ran") && r.out().contains("python-refused"), "{}", r.raw);
    // Without a compiler listed, its parts are not executable.
    let none = Agent::new("no-compiler", "commands = [\"sh\"]\n");
    let r = none.run(&["sh", "-c", "as --version || echo refused"]);
    assert!(r.out().contains("refused") && !r.out().contains("GNU"), "{}", r.raw);
}

/// Ordinary work in a write grant, each step saying whether it worked: the metadata a tool sets
/// on what it made (times, modes), archives, git, a virtual environment, and a linked program
/// run (under `["*"]`).
const ORDINARY_WORK: &str = r#"
cd "$(mktemp -d ./work.XXXXXX)" || exit 1
touch newfile && echo touch-ok
printf '#!/bin/sh\necho script-ran\n' > run.sh && chmod +x run.sh && ./run.sh && echo chmod-x-ok
echo data > src.txt && touch -d '2001-01-01 00:00:00' src.txt && cp -p src.txt copy.txt &&
  [ "$(stat -c %Y copy.txt)" = "$(stat -c %Y src.txt)" ] && echo cp-p-ok
mkdir -p t/d && echo x > t/d/f && chmod 640 t/d/f && tar cf t.tar t && rm -rf t && tar xf t.tar &&
  [ "$(stat -c %a t/d/f)" = 640 ] && echo tar-ok
export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@a GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@a
git init -q repo && (cd repo && echo hi > f && git add f && git commit -qm one) &&
  git clone -q repo clone && [ "$(cat clone/f)" = hi ] && echo git-ok
python3 -m venv --without-pip venv && venv/bin/python -c 'print("venv-ok")'
printf 'int main(void) { return 0; }\n' > m.c && gcc -o m m.c && ./m && echo gcc-run-ok
"#;

const ORDINARY_STEPS: [&str; 8] =
    ["touch-ok", "script-ran", "chmod-x-ok", "cp-p-ok", "tar-ok", "git-ok", "venv-ok", "gcc-run-ok"];

fn ordinary_agent(name: &str) -> Option<Agent> {
    if !require(tool_here("gcc") && tool_here("git"), "gcc and git") {
        return None;
    }
    Some(Agent::new(name, "commands = [\"*\"]\n[files]\nread = [\"~\"]\nwrite = [\"~/Link/Files\"]\n"))
}

#[test]
fn ordinary_work_in_a_write_grant_passes_in_each_mode() {
    let Some(agent) = ordinary_agent("ordinary-work") else { return };
    for (mode, r) in in_each_mode(&agent, ORDINARY_WORK) {
        for step in ORDINARY_STEPS {
            assert!(r.out().lines().any(|l| l == step), "{mode}: {step}: {}", r.raw);
        }
    }
}

#[test]
fn under_a_containers_default_seccomp_profile_lnk_runs_landlock_only_and_ordinary_work_passes() {
    // Docker's and podman's default profiles refuse user namespaces (and `pidfd_getfd`,
    // `process_vm_readv`, `ptrace`): lnk finds no own world there, runs in the Landlock-only
    // mode, and still performs the program's metadata calls (through `/proc/<pid>/mem`, which
    // those profiles leave alone).
    let Some(agent) = ordinary_agent("ordinary-work-container") else { return };
    let work = agent.home.join("Link/Files/work");
    std::fs::create_dir_all(&work).unwrap();
    let mut inner = agent.command(&[], &["sh", "-c", ORDINARY_WORK]);
    inner.current_dir(&work).env("TMPDIR", agent.dir.join("tmp"));
    std::fs::create_dir_all(agent.dir.join("tmp")).unwrap();
    let Some(mut contained) = docker_like(&agent.dir.path, &inner) else { return };
    let r = Report::from(run(&mut contained));
    assert_eq!(r.json["enforced"]["mode"], "landlock-only", "{}", r.raw);
    for step in ORDINARY_STEPS {
        assert!(r.out().lines().any(|l| l == step), "{step}: {}", r.raw);
    }
    // And the metadata calls stay inside the write grants there too.
    let outside = agent.home.join("outside.txt");
    std::fs::write(&outside, "x").unwrap();
    let mut chmod = agent.command(&[], &["chmod", "777", outside.to_str().unwrap()]);
    chmod.env("TMPDIR", agent.dir.join("tmp"));
    let r = Report::from(run(&mut docker_like(&agent.dir.path, &chmod).unwrap()));
    assert_ne!(r.code, Some(0), "{}", r.raw);
    use std::os::unix::fs::PermissionsExt as _;
    assert_ne!(std::fs::metadata(&outside).unwrap().permissions().mode() & 0o777, 0o777);
}

/// What the Landlock-only mode used to refuse, and agents do every day: a local server and its
/// client in one call, Python's `multiprocessing` (POSIX semaphores and shared memory in
/// `/dev/shm`) and `ProcessPoolExecutor`, and new sessions.
const EVERYDAY_WORK: &str = r#"
python3 -m http.server 8765 --bind 127.0.0.1 >/dev/null 2>&1 &
server=$!
code=000; i=0
while [ $i -lt 300 ] && [ "$code" != 200 ]; do code=$(curl -s -o /dev/null -w '%{http_code}' http://localhost:8765/); i=$((i+1)); sleep 0.1; done
[ "$code" = 200 ] && echo server-ok
kill $server
python3 - <<'PY'
import multiprocessing as mp, subprocess, os
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import shared_memory
def square(x):
    return x * x
if __name__ == "__main__":
    with mp.Pool(2) as pool:
        if sum(pool.map(square, range(10))) == 285: print("pool-ok")
    q = mp.Queue(); q.put(7); lock = mp.Lock()
    with lock:
        if q.get(timeout=5) == 7: print("queue-lock-ok")
    block = shared_memory.SharedMemory(create=True, size=16)
    block.buf[0] = 42
    other = shared_memory.SharedMemory(name=block.name)
    if other.buf[0] == 42: print("shared-memory-ok")
    other.close(); block.close(); block.unlink()
    with ProcessPoolExecutor(2) as ex:
        if list(ex.map(square, [3, 4])) == [9, 16]: print("executor-ok")
    out = subprocess.run(["python3", "-c", "import os; print(os.getsid(0) == os.getpid())"],
                         start_new_session=True, check=True, capture_output=True, text=True)
    if out.stdout.strip() == "True": print("new-session-ok")
PY
setsid sh -c 'echo setsid-ok'
"#;

const EVERYDAY_STEPS: [&str; 7] = [
    "server-ok",
    "pool-ok",
    "queue-lock-ok",
    "shared-memory-ok",
    "executor-ok",
    "new-session-ok",
    "setsid-ok",
];

#[test]
fn under_a_containers_default_seccomp_profile_servers_multiprocessing_and_sessions_work() {
    if !require(tool_here("curl") && tool_here("python3") && tool_here("setsid"), "curl, python3 and setsid")
    {
        return;
    }
    let agent = Agent::new(
        "everyday-container",
        "commands = [\"*\"]\n[files]\nread = [\"~\"]\nwrite = [\"~/Link/Files\"]\n",
    );
    let work = agent.home.join("Link/Files/work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(agent.dir.join("tmp")).unwrap();
    let mut inner = agent.command(&[], &["sh", "-c", EVERYDAY_WORK]);
    inner.current_dir(&work).env("TMPDIR", agent.dir.join("tmp"));
    let Some(mut contained) = docker_like(&agent.dir.path, &inner) else { return };
    let r = Report::from(run(&mut contained));
    assert_eq!(r.json["enforced"]["mode"], "landlock-only", "{}", r.raw);
    for step in EVERYDAY_STEPS {
        assert!(r.out().lines().any(|l| l == step), "{step}: {}", r.raw);
    }
    // And in both modes as the harness's own kernel gives them.
    for (mode, r) in in_each_mode(&agent, EVERYDAY_WORK) {
        for step in EVERYDAY_STEPS {
            assert!(r.out().lines().any(|l| l == step), "{mode}: {step}: {}", r.raw);
        }
    }
}
