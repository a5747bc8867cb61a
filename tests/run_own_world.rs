//! Ordinary agent work in the sandbox, in both modes: the call's own world (a `/tmp`, `/proc`,
//! `/dev/shm` and loopback of its own) and the Landlock-only mode (which lacks those, and says
//! so). As root and as an ordinary user (the suite runs twice).

mod common;
use common::*;

use std::process::Command;

const POLICY: &str = r#"commands = ["sh", "python3", "git", "ps", "ln", "mkfifo", "ls", "cat", "curl", "rm", "node", "grep", "cut"]
[files]
read = ["~"]
write = ["~/Link/Files"]
"#;

fn run_in(agent: &Agent, mode: Mode, script: &str) -> Report {
    Report::from(run(in_mode(&mut agent.command(&[], &["sh", "-c", script]), mode)))
}

/// The `name=value` lines a script printed, as `name` → `value`.
fn said(r: &Report, name: &str) -> String {
    r.said(name)
}

#[test]
fn the_call_has_a_tmp_proc_and_shm_of_its_own_in_the_own_world_only_and_local_servers_in_each() {
    let token = format!("out-{}.txt", std::process::id());
    for mode in modes() {
        // A home outside the host's /tmp: beneath it, its protected paths would keep the host's
        // /tmp (see `the_hosts_tmp_is_kept_where_a_grant_beneath_it_holds_protected_paths`).
        let agent = Agent::outside_tmp("own-tmp", POLICY);
        let script = format!(
            r#"
echo x > /tmp/{token} && echo "tmp_write=$(cat /tmp/{token})" || echo tmp_write=refused
echo "proc_status=$(grep -c '^Pid:' /proc/self/status 2>/dev/null || echo refused)"
echo "proc_fd=$(ls /proc/self/fd 2>/dev/null | grep -c . || echo refused)"
echo "ps=$(ps -e -o pid= 2>/dev/null | grep -c . || echo refused)"
echo "netns=$(cat /proc/self/net/dev >/dev/null 2>&1 && ls -l /proc/self/ns/net | grep -o 'net:.*' || echo refused)"
echo "interfaces=$(grep -c : /proc/self/net/dev 2>/dev/null || echo refused)"
python3 - <<'PY'
import multiprocessing as mp
def square(x):
    return x * x
try:
    with mp.Pool(2) as pool:
        total = sum(pool.map(square, range(10)))
    q = mp.Queue(); q.put(7)
    print(f"multiprocessing={{total}},{{q.get(timeout=5)}}")
except OSError as e:
    print(f"multiprocessing={{type(e).__name__}}")
PY
python3 -m http.server 8765 --bind 127.0.0.1 >/dev/null 2>&1 &
server=$!
code=000; i=0
while [ $i -lt 300 ] && [ "$code" != 200 ]; do code=$(curl -s -o /dev/null -w '%{{http_code}}' http://127.0.0.1:8765/); i=$((i+1)); sleep 0.1; done
echo "local_server=$code"
kill $server 2>/dev/null
"#
        );
        let r = run_in(&agent, mode, &script);
        let lacks = r.json["enforced"]["lacks"].as_array().unwrap();
        // The own world lacks only Unix sockets and extended attributes (and plain memfds where
        // the host keeps them executable and lnk is not root: see run_ordinary_programs.rs).
        let lacks = lacks.iter().filter(|l| !l.as_str().unwrap().starts_with("plain memfds")).count();
        match mode {
            Mode::OwnWorld => {
                assert_eq!(lacks, 2, "{}", r.raw);
                let named = r.json["enforced"]["lacks"].to_string();
                assert!(
                    named.contains("Unix sockets") && named.contains("setting extended attributes"),
                    "{named}"
                );
                assert_eq!(said(&r, "tmp_write"), "x");
                assert_eq!(said(&r, "proc_status"), "1");
                // A network namespace of the call's own (made by the keeper beside pid 1's
                // mounts: see `sandbox::world_network`), with its loopback alone.
                let host = std::fs::read_link("/proc/self/ns/net").unwrap().display().to_string();
                let netns = said(&r, "netns");
                assert!(netns.starts_with("net:[") && netns != host, "{netns} vs the host's {host}");
                assert_eq!(said(&r, "interfaces"), "1", "{}", r.raw);
                assert!(said(&r, "proc_fd").parse::<u32>().unwrap() >= 3, "{}", r.raw);
                // ps sees the call's processes only: its pid 1, the shell, ps and the
                // shell's subshell at most; never the harness's or the machine's.
                let seen: u32 = said(&r, "ps").parse().unwrap();
                assert!((2..=6).contains(&seen), "ps saw {seen} processes: {}", r.raw);
                assert_eq!(said(&r, "multiprocessing"), "285,7", "{}", r.err());
                assert_eq!(said(&r, "local_server"), "200", "{}", r.err());
                // The next call's /tmp is empty of it.
                let next = run_in(
                    &agent,
                    mode,
                    &format!("test -e /tmp/{token} && echo again=seen || echo again=fresh"),
                );
                assert_eq!(said(&next, "again"), "fresh");
            }
            Mode::LandlockOnly => {
                // What this mode lacks is said in the report, and refused, never faked.
                assert!(lacks >= 4, "{}", r.raw);
                assert_eq!(said(&r, "tmp_write"), "refused");
                assert_eq!(said(&r, "proc_status"), "refused");
                // ps finds no process: no /proc/<pid> is readable in this mode.
                assert_eq!(said(&r, "ps"), "0");
                // POSIX semaphores in a /dev/shm of the call's own, made by the helper.
                assert_eq!(said(&r, "multiprocessing"), "285,7", "{}", r.raw);
                // A local server and its client, on the call's own loopback address.
                assert_eq!(said(&r, "local_server"), "200", "{}", r.raw);
            }
        }
    }
}

#[test]
fn links_fifos_venvs_and_git_checkouts_work_in_write_grants() {
    // A repository with a symlink and an executable file, made outside the sandbox.
    let scratch = Scratch::new("own-repo");
    let repo = scratch.join("repo");
    let git = |args: &[&str], dir: &std::path::Path| {
        let out = Command::new("git")
            .args(["-c", "user.email=t@t", "-c", "user.name=t", "-c", "init.defaultBranch=main"])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    std::fs::create_dir_all(&repo).unwrap();
    git(&["init", "-q"], &repo);
    std::fs::write(repo.join("target.txt"), "linked\n").unwrap();
    std::os::unix::fs::symlink("target.txt", repo.join("link.txt")).unwrap();
    git(&["add", "."], &repo);
    git(&["commit", "-q", "-m", "m"], &repo);
    for mode in modes() {
        let agent = Agent::new(
            "own-links",
            &POLICY.replace("read = [\"~\"]", &format!("read = [\"~\", \"{}\"]", scratch.path.display())),
        );
        let script = format!(
            r#"
cd ~/Link/Files
ln -s target name && echo "symlink=$(ls -l name | grep -c -- '-> target')"
mkfifo pipe && echo "fifo=$(ls -l pipe | cut -c1)"
git clone -q {repo} checkout 2>&1 && echo "clone_link=$(cat checkout/link.txt)"
node -e 'require("fs").symlinkSync("../lib/x.js", "bin-link"); console.log("node_link=" + require("fs").readlinkSync("bin-link"))'
python3 -m venv --without-pip venv >/dev/null 2>&1; echo "venv=$(venv/bin/python -c 'import sys; print(sys.prefix != sys.base_prefix)' 2>&1)"
"#,
            repo = repo.display()
        );
        let r = run_in(&agent, mode, &script);
        assert_eq!(said(&r, "symlink"), "1", "{mode:?}: {}", r.err());
        assert_eq!(said(&r, "fifo"), "p", "{mode:?}: {}", r.err());
        assert_eq!(said(&r, "node_link"), "../lib/x.js", "{mode:?}: {}", r.err());
        // git sets its config lock's mode and venv its scripts': in the Landlock-only mode the
        // helper performs those beneath the write grants.
        assert_eq!(said(&r, "clone_link"), "linked", "{mode:?}: {}", r.err());
        assert_eq!(said(&r, "venv"), "True", "{mode:?}: {}", r.err());
        let pipe = agent.home.join("Link/Files/pipe");
        assert!(std::fs::symlink_metadata(&pipe).is_ok(), "{mode:?}: the FIFO is in the write grant");
    }
}

#[test]
fn git_works_without_a_readable_home_and_runs_its_own_helpers() {
    let policy = r#"commands = ["sh", "git"]
[files]
write = ["~/Link/Files"]
"#;
    for mode in modes() {
        let agent = Agent::new("own-git", policy);
        // The home itself is not granted: git gets a home of the call's own, and the report
        // says so. git's `remote-https` helper, in git's exec path, runs (the connection then
        // fails: there is no network here).
        let r = run_in(
            &agent,
            mode,
            r#"cd ~/Link/Files 2>/dev/null || cd "$OLDPWD"
git config --global user.name agent && echo "global_config=$(git config --global user.name)"
out=$(git ls-remote https://127.0.0.1:9/x 2>&1)
case "$out" in *"unable to access"*) echo https_helper=ran;; *) echo "https_helper=$out";; esac
"#,
        );
        assert_eq!(r.json["enforced"]["home_is_temporary"], true, "{mode:?}: {}", r.raw);
        // The home is the call's own tmp folder, gone with the call.
        assert_eq!(r.json["enforced"]["home"], r.json["enforced"]["tmp"], "{mode:?}: {}", r.raw);
        assert_eq!(said(&r, "global_config"), "agent", "{mode:?}: {}", r.err());
        assert_eq!(said(&r, "https_helper"), "ran", "{mode:?}: {}", r.err());
        // The person's real home is untouched.
        assert!(!agent.home.join(".gitconfig").exists());
    }
}

#[test]
fn any_program_includes_what_the_agent_builds() {
    if !require(std::path::Path::new("/usr/bin/gcc").exists(), "gcc (to build a program in the sandbox)") {
        return;
    }
    let policy = "commands = [\"*\"]\n[files]\nread = [\"~\"]\nwrite = [\"~/Link/Files\"]\n";
    for mode in modes() {
        let agent = Agent::new("own-any", policy);
        let r = run_in(
            &agent,
            mode,
            r#"cd ~/Link/Files
python3 -c "import os; fd = os.open('run.sh', os.O_CREAT | os.O_WRONLY, 0o755); os.write(fd, b'#!/bin/sh\necho script-ran\n')"
./run.sh
printf 'int main(void){return 42;}\n' > a.c && gcc a.c -o a.out 2>&1; ./a.out; echo "built=$?"
"#,
        );
        assert!(r.out().contains("script-ran"), "{mode:?}: {}", r.raw);
        // The linker sets the executable bits with chmod: a read-write mount allows it in the own
        // world, and the helper performs it beneath the write grants in the Landlock-only mode.
        assert_eq!(said(&r, "built"), "42", "{mode:?}: {}", r.err());
    }
    // With a list, a program the agent builds is still refused by the kernel.
    let listed = Agent::new(
        "own-listed",
        "commands = [\"sh\", \"cp\"]\n[files]\nread = [\"~\"]\nwrite = [\"~/Link/Files\"]\n",
    );
    let r = listed.run(&[
        "sh",
        "-c",
        "cd ~/Link/Files && cp /bin/sh ./mysh && ./mysh -c 'echo escaped'; echo rc=$?",
    ]);
    assert!(!r.out().contains("escaped"), "{}", r.raw);
    assert_eq!(said(&r, "rc"), "126", "{}", r.raw);
}

#[test]
fn the_programs_own_end_is_reported_in_both_modes() {
    for mode in modes() {
        let agent = Agent::new("own-end", POLICY);
        // In the own world the program is pid 2 below lnk's pid 1, whose own end is not the
        // program's: the report must still carry the program's code or signal.
        let exited = run_in(&agent, mode, "exit 7");
        assert_eq!(exited.json["program_exit_code"], 7, "{mode:?}: {}", exited.raw);
        assert_eq!(exited.outcome(), "exited");
        let killed = run_in(&agent, mode, "kill -9 $$");
        assert_eq!(killed.json["program_signal"], 9, "{mode:?}: {}", killed.raw);
        assert_eq!(killed.outcome(), "signaled");
    }
}

#[test]
fn the_masks_come_from_nowhere_a_program_can_reach() {
    if !require(own_world_here(), "the call's own world (user namespaces that can mount)") {
        return;
    }
    // The masks' sources are made in the world itself: nothing of them is left in the harness's
    // TMPDIR (where lnk's private tmp base is), during the call or after it. (A TMPDIR inside a
    // write grant, where a program could reach the sources, is refused: see
    // `run_programs_and_files::a_write_grant_over_the_private_tmp_base_is_refused`.)
    let policy = "commands = [\"sh\", \"cat\", \"ls\", \"stat\", \"tr\", \"grep\"]\n[files]\nread = [\"~\"]\nwrite = [\"~/Link/Files\"]\n";
    let agent = Agent::new("own-masks", policy);
    std::fs::create_dir_all(agent.home.join(".ssh")).unwrap();
    std::fs::write(agent.home.join(".ssh/id_ed25519"), "SECRET").unwrap();
    std::fs::write(agent.home.join(".netrc"), "SECRET").unwrap();
    let tmpdir = agent.dir.join("tmp");
    std::fs::create_dir_all(&tmpdir).unwrap();
    let script = "cat ~/.ssh/id_ed25519 ~/.netrc; echo \"modes=$(stat -c %a ~/.ssh ~/.netrc | tr '\\n' ,)\"; \
                  sleep 0.2";
    let mut c = agent.command(&[], &["sh", "-c", script]);
    c.env("TMPDIR", &tmpdir);
    let child = in_mode(&mut c, Mode::OwnWorld).stdout(std::process::Stdio::piped()).spawn().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(100));
    let during: Vec<_> = walk(&tmpdir)
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().contains("mask")))
        .collect();
    let r = Report::from(child.wait_with_output().unwrap());
    assert!(!r.out().contains("SECRET"), "{}", r.raw);
    assert_eq!(r.said("modes"), "0,0,", "{}", r.raw);
    assert!(during.is_empty(), "mask sources on the host during the call: {during:?}");
    let leftovers: Vec<_> = walk(&tmpdir)
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().contains("mask")))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            found.extend(walk(&path));
        }
        found.push(path);
    }
    found
}

#[test]
fn the_worlds_dev_shm_maps_no_code_under_a_command_list_and_is_bounded() {
    if !require(own_world_here(), "the call's own world (user namespaces that can mount)") {
        return;
    }
    // The mount options of the call's /dev/shm, as the kernel shows them.
    let script = "cat /proc/self/mountinfo";
    let shm_line = |policy: &str, name: &str| {
        let agent = Agent::new(name, policy);
        let r = run_in(&agent, Mode::OwnWorld, script);
        assert_eq!(r.code, Some(0), "{}", r.raw);
        r.out()
            .lines()
            .rfind(|l| l.split_whitespace().nth(4) == Some("/dev/shm"))
            .unwrap_or_else(|| panic!("no /dev/shm mount: {}", r.raw))
            .to_owned()
    };
    let listed = shm_line(POLICY, "own-shm-listed");
    let mount_options = |line: &str| line.split_whitespace().nth(5).unwrap_or_default().to_owned();
    for option in ["nosuid", "nodev", "noexec"] {
        assert!(mount_options(&listed).split(',').any(|o| o == option), "{option}: {listed}");
    }
    // A quarter of memory at most (tmpfs shows its size in KiB).
    let total_kib: u64 = std::fs::read_to_string("/proc/meminfo")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap();
    let size_kib: u64 = listed
        .rsplit_once(" - ")
        .and_then(|(_, super_options)| super_options.split(',').find_map(|o| o.strip_prefix("size=")))
        .and_then(|v| v.trim_end_matches('k').parse().ok())
        .unwrap_or_else(|| panic!("no size: {listed}"));
    assert!(size_kib <= total_kib / 4 + 4, "{size_kib} KiB of {total_kib}: {listed}");
    // Under `commands = ["*"]` any program may run, so code may be mapped from it too.
    let any = shm_line("commands = [\"*\"]\n[files]\nread = [\"~\"]\n", "own-shm-any");
    assert!(!mount_options(&any).split(',').any(|o| o == "noexec"), "{any}");
}

#[test]
fn the_hosts_tmp_is_kept_where_a_grant_beneath_it_holds_protected_paths() {
    // A harness's `mkdtemp` home beneath the host's /tmp, readable by the sandbox: Landlock would
    // give everything shown again inside a writable /tmp the call's tmp rights, protected paths
    // included (even one made during the call), so the own world keeps the host's /tmp there,
    // read-only, and the program's TMPDIR is the call's tmp folder at its own path.
    if !require(own_world_here(), "the call's own world (user namespaces that can mount)") {
        return;
    }
    let agent = Agent::new("own-kept-tmp", POLICY);
    assert!(agent.home.starts_with("/tmp"), "this test needs the home beneath /tmp");
    let script =
        "echo x > $TMPDIR/t && cat $TMPDIR/t; echo y > /tmp/direct 2>/dev/null || echo refused; echo $TMPDIR";
    let r = run_in(&agent, Mode::OwnWorld, script);
    let tmp = r.json["enforced"]["tmp"].as_str().unwrap().to_owned();
    assert_ne!(tmp, "/tmp", "{}", r.raw);
    assert_eq!(r.out(), format!("x\nrefused\n{tmp}\n"), "{}", r.raw);
    // A home elsewhere keeps the call's own /tmp.
    let elsewhere = Agent::outside_tmp("own-own-tmp", POLICY);
    let r = run_in(&elsewhere, Mode::OwnWorld, "echo y > /tmp/direct && cat /tmp/direct");
    assert_eq!((r.out(), r.json["enforced"]["tmp"].as_str()), ("y\n", Some("/tmp")), "{}", r.raw);
}

#[test]
fn a_kept_answer_the_kernel_no_longer_gives_fails_no_call() {
    // A kept answer (the test build's stand-in for a stale one) promises the own world where the
    // kernel gives no user namespace: the same call probes again and runs, Landlock only; so
    // does a background start.
    let agent = Agent::new(
        "stale-world",
        "commands = [\"sh\"]\n[files]\nread = [\"~\"]\nwrite = [\"~/Link/Files\"]\n",
    );
    let mut c = agent.command(&[], &["sh", "-c", "echo ran"]);
    c.env("LNK_TEST_STALE_WORLD", "1").env("TMPDIR", agent.dir.join("tmp"));
    std::fs::create_dir_all(agent.dir.join("tmp")).unwrap();
    if !require(can_simulate_no_user_namespaces(), "nested user namespaces (to simulate a kernel without)") {
        return;
    }
    let r = Report::from(run(&mut without_user_namespaces(&c)));
    assert_eq!((r.code, r.out()), (Some(0), "ran\n"), "{}", r.raw);
    assert_eq!(r.json["enforced"]["mode"], "landlock-only", "{}", r.raw);
    // A background command, the same.
    let agent_dir = agent.home.join("Link/Agents/a");
    std::fs::create_dir_all(&agent_dir).unwrap();
    let mut start = link_run();
    start
        .env("HOME", &agent.home)
        .env("LNK_TEST_STALE_WORLD", "1")
        .env("TMPDIR", agent.dir.join("tmp"))
        .args(["start", "--json", "--agent-dir"])
        .arg(&agent_dir)
        .arg("--files-dir")
        .arg(agent.home.join("Link/Files"))
        .arg("--file")
        .arg(&agent.policy)
        .args(["--", "sh", "-c", "echo background-ran"]);
    let out = run(&mut without_user_namespaces(&start));
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    let id = serde_json::from_str::<serde_json::Value>(stdout(&out).trim()).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let output = agent.home.join("Link/Files/background").join(format!("{id}.out"));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !std::fs::read_to_string(&output).unwrap_or_default().contains("background-ran") {
        assert!(std::time::Instant::now() < deadline, "the background command never ran");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn multiprocessing_works_in_each_mode_and_the_hosts_dev_shm_stays_out_of_reach() {
    // Pool, Queue, Lock, shared_memory and ProcessPoolExecutor: in the own world on its own
    // /dev/shm; without one, in a folder of the call's own, made by the helper (see
    // `crate::notify::shm`), while the host's /dev/shm stays unreachable, and none of the
    // program's objects is made there.
    let host_shm = std::path::Path::new("/dev/shm");
    if !host_shm.is_dir() {
        assert!(!in_ci(), "CI has a /dev/shm");
        return;
    }
    let token = format!("lnk-test-host-shm-{}", std::process::id());
    std::fs::write(host_shm.join(&token), "SECRET-host-shm").unwrap();
    let agent = Agent::new("multiprocessing", POLICY);
    let script = format!(
        r#"
import multiprocessing as mp
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import shared_memory
import _posixshmem
def square(x):
    return x * x
if __name__ == "__main__":
    with mp.Pool(2) as pool:
        say("pool", sum(pool.map(square, range(10))))
    q = mp.Queue(); q.put(7); say("queue", q.get(timeout=5))
    lock = mp.Lock(); lock.acquire(); lock.release(); say("lock", "ok")
    s = shared_memory.SharedMemory(create=True, size=64); s.buf[0] = 42
    t = shared_memory.SharedMemory(name=s.name); say("shared", t.buf[0]); t.close(); s.close(); s.unlink()
    with ProcessPoolExecutor(2) as e:
        say("executor", sum(e.map(square, range(4))))
    say("host_shm", attempt(lambda: open("/dev/shm/{token}").read()))
    say("host_shm_open", attempt(lambda: _posixshmem.shm_open("/{token}", os.O_RDONLY, 0)))
    say("shm_escape", attempt(lambda: _posixshmem.shm_open("/../../tmp/x", os.O_RDWR | os.O_CREAT, 0o600)))
"#
    );
    let before: Vec<_> = std::fs::read_dir(host_shm).unwrap().flatten().map(|e| e.file_name()).collect();
    let reports = agent.python_in_each_mode(&script);
    let after: Vec<_> = std::fs::read_dir(host_shm).unwrap().flatten().map(|e| e.file_name()).collect();
    std::fs::remove_file(host_shm.join(&token)).unwrap();
    for (mode, r) in &reports {
        let context = format!("{mode}: {}", r.raw);
        assert_eq!(r.said("pool"), "285", "{context}");
        assert_eq!(r.said("queue"), "7", "{context}");
        assert_eq!(r.said("lock"), "ok", "{context}");
        assert_eq!(r.said("shared"), "42", "{context}");
        assert_eq!(r.said("executor"), "14", "{context}");
        assert_ne!(r.said("host_shm"), "ok", "{context}");
        assert_ne!(r.said("host_shm_open"), "ok", "{context}");
        assert_ne!(r.said("shm_escape"), "ok", "{context}");
        assert!(!r.raw.contains("SECRET-host-shm"), "{context}");
    }
    let made: Vec<_> = after.iter().filter(|n| !before.contains(n)).collect();
    assert!(made.is_empty(), "the calls left objects in the host's /dev/shm: {made:?}");
}
