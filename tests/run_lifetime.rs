//! `lnk sandbox run`: nothing the program starts outlives the call, whether it exits, times out,
//! is stopped, or the helper itself is killed; and the output is kept in bounded memory.
//!
//! Each lifetime test runs in both modes: in the call's own world, where the pid namespace adds
//! the kernel's guarantee, and in the Landlock-only mode, where the process group alone must
//! give it. Sandboxed scripts describe their processes with [`MARK`], so the test finds them
//! from outside in either.

mod common;
use common::*;

use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

const POLICY: &str = r#"commands = ["sh", "sleep", "python3", "head", "kill", "setsid"]
[files]
read = ["~"]
write = ["~/Link/Files"]
[tool.run]
timeout = 60
"#;

/// Reads the mark the sandboxed script wrote into `~/Link/Files/<name>` (see [`MARK`]), waiting
/// for it.
fn mark_file(agent: &Agent, name: &str) -> String {
    let path = agent.home.join("Link/Files").join(name);
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(text) = std::fs::read_to_string(&path) {
            if text.ends_with('\n') {
                return text.trim().to_owned();
            }
        }
        assert!(Instant::now() < until, "{name} was never written");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn assert_all_dead(marks: &[String], within: Duration) {
    let until = Instant::now() + within;
    while marks.iter().any(|m| marked_alive(m)) {
        assert!(
            Instant::now() < until,
            "still alive: {:?}",
            marks.iter().filter(|m| marked_alive(m)).collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A shell command that starts a process of a session of its own (where the sandbox allows it:
/// the own world) that sleeps, and marks it as `name` in `~/Link/Files`.
fn own_session_sleeper(name: &str) -> String {
    format!(
        "python3 -c 'import os, time
try:
    os.setsid()
except OSError:
    pass
time.sleep(99)' & mark $! > ~/Link/Files/{name}"
    )
}

/// A shell command that starts a double-forked daemon: a session of its own whose leader exits
/// at once, leaving a process in that session (a group with no leader), marked as `name`.
fn daemon(name: &str) -> String {
    format!("setsid sh -c '{MARK}; sleep 93 & mark $! > ~/Link/Files/{name}' &")
}

/// A script with [`MARK`] defined.
fn script(body: &str) -> String {
    format!("{MARK}\n{body}")
}

fn run_in(agent: &Agent, mode: Mode, cmd: &[&str]) -> Report {
    Report::from(run(in_mode(&mut agent.command(&[], cmd), mode)))
}

fn spawn(agent: &Agent, mode: Mode, body: &str) -> Child {
    in_mode(&mut agent.command(&[], &["sh", "-c", &script(body)]), mode)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn everything_the_program_started_dies_when_it_exits() {
    for mode in modes() {
        let agent = Agent::new("orphans", POLICY);
        let started = Instant::now();
        // A background child, a double fork, a TERM-ignoring child, a stopped child, a setsid
        // attempt: all left behind by a program that exits at once, all holding its output
        // pipes. The script waits until each is marked, so the marks name live processes.
        let r = run_in(
            &agent,
            mode,
            &[
                "sh",
                "-c",
                &script(&"cd ~/Link/Files
                     sleep 99 & mark $! > bg
                     (sleep 98 & mark $! > double) &
                     sh -c 'trap \"\" TERM; exec sleep 97' & mark $! > ignores_term
                     sleep 96 & mark $! > stopped; kill -STOP $!
                     setsid sleep 95 2>/dev/null & mark $! > setsid
                     python3 -c 'import os, time; os.setsid(); time.sleep(94)' 2>/dev/null & mark $! > py_setsid
                     DAEMON
                     while [ ! -s daemon ] || [ ! -s double ]; do sleep 0.02; done
                     sleep 0.2; echo done"
                        .replace("DAEMON", &daemon("daemon"))),
            ],
        );
        assert_eq!(r.code, Some(0), "{mode:?}: {}", r.raw);
        assert!(r.out().contains("done"));
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{mode:?}: the helper waited for the orphans' pipes (they sleep 93 s and more)"
        );
        let marks: Vec<String> = ["bg", "double", "ignores_term", "stopped", "setsid", "py_setsid", "daemon"]
            .iter()
            .map(|n| mark_file(&agent, n))
            .collect();
        assert_all_dead(&marks, Duration::from_secs(2));
    }
}

#[test]
fn the_timeout_stops_everything_a_tenth_early_and_keeps_the_output() {
    for mode in modes() {
        // 4 s: the program has 3.6 s to start everything it marks, however loaded the machine.
        let agent = Agent::new("timeout", &POLICY.replace("timeout = 60", "timeout = 4"));
        let started = Instant::now();
        let r = run_in(
            &agent,
            mode,
            &[
                "sh",
                "-c",
                &script(&format!(
                    "echo started; sleep 99 & mark $! > ~/Link/Files/child; {}; {} \
                     while [ ! -s ~/Link/Files/daemon ]; do sleep 0.02; done; wait",
                    own_session_sleeper("session"),
                    daemon("daemon")
                )),
            ],
        );
        let elapsed = started.elapsed();
        assert_eq!(r.code, Some(124), "{mode:?}: {}", r.raw);
        assert_eq!(r.outcome(), "timed_out");
        assert_eq!(r.json["timed_out"], true);
        assert!(r.out().contains("started"), "what was printed so far comes back: {}", r.raw);
        assert!(elapsed >= Duration::from_millis(3600), "stopped at 0.9 × 4 s, not before: {elapsed:?}");
        assert!(elapsed < Duration::from_secs(12), "and returned promptly: {elapsed:?}");
        let marks = [mark_file(&agent, "child"), mark_file(&agent, "session"), mark_file(&agent, "daemon")];
        assert_all_dead(&marks, Duration::from_secs(2));
    }
}

#[test]
fn the_timeout_holds_when_a_grandchild_keeps_the_pipes_open() {
    let agent = Agent::new("pipes", &POLICY.replace("timeout = 60", "timeout = 2"));
    let started = Instant::now();
    // The program waits on a child that holds stdout and stderr and never ends.
    let r = agent.run(&["sh", "-c", "(exec sleep 99) & wait"]);
    assert_eq!(r.code, Some(124), "{}", r.raw);
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the helper waited for the pipes' holder (sleep 99)"
    );
}

fn stop_with(signal: i32, expected_code: i32) {
    for mode in modes() {
        let agent = Agent::new("stop", POLICY);
        let body = format!(
            "sleep 99 & mark $! > ~/Link/Files/child; {}; {} echo ready; wait",
            own_session_sleeper("session"),
            daemon("daemon")
        );
        let child = spawn(&agent, mode, &body);
        let mark = mark_file(&agent, "child");
        let session = mark_file(&agent, "session");
        let daemon = mark_file(&agent, "daemon");
        assert!(marked_alive(&mark), "{mode:?}: the mark {mark:?} names the live child");
        // SAFETY: signals the helper this test started.
        assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
        let signalled = Instant::now();
        let out = child.wait_with_output().unwrap();
        assert!(
            signalled.elapsed() < Duration::from_secs(15),
            "{mode:?}: the helper waited for what it left"
        );
        let r = Report::from(out);
        assert_eq!(r.code, Some(expected_code), "{mode:?}: {}", r.raw);
        assert_eq!(r.outcome(), "stopped");
        assert_eq!(r.json["stop_signal"], signal);
        assert_all_dead(&[mark, session, daemon], Duration::from_secs(2));
    }
}

#[test]
fn sigterm_to_the_helper_stops_everything() {
    stop_with(libc::SIGTERM, 128 + libc::SIGTERM);
}

#[test]
fn sigint_to_the_helper_stops_everything() {
    stop_with(libc::SIGINT, 128 + libc::SIGINT);
}

#[test]
fn nothing_survives_the_helper_being_killed() {
    for mode in modes() {
        let agent = Agent::new("sigkill", POLICY);
        // A file in the call's tmp, found from outside afterwards by its unique name.
        let token = format!("killed-call-{}-{mode:?}", std::process::id());
        let mut child = spawn(
            &agent,
            mode,
            &format!(
                "cd ~/Link/Files; echo > $TMPDIR/{token}; mark $$ > leader; sleep 99 & mark $! > bg; (sleep 98 & mark $! > double) & {}; {} wait",
                own_session_sleeper("session"),
                daemon("daemon")
            ),
        );
        let marks = [
            mark_file(&agent, "leader"),
            mark_file(&agent, "bg"),
            mark_file(&agent, "double"),
            mark_file(&agent, "session"),
            mark_file(&agent, "daemon"),
        ];
        assert!(marks.iter().all(|m| marked_alive(m)), "{mode:?}: the marks name live processes: {marks:?}");
        let left = || calls_holding(&token);
        assert_eq!(left().len(), 1, "{mode:?}: the call's tmp holds the file");
        child.kill().unwrap();
        child.wait().unwrap();
        assert_all_dead(&marks, Duration::from_secs(3));
        // The killed call's tmp folder is removed by the next call.
        let _ = run_in(&agent, mode, &["sh", "-c", "true"]);
        assert!(left().is_empty(), "{mode:?}: {:?} should have been swept", left());
    }
}

/// The call tmp folders (of this user, under the base in `$TMPDIR`) holding a file `name`, at
/// their top or in their `tmp` (the own world's /tmp).
fn calls_holding(name: &str) -> Vec<PathBuf> {
    let base = std::env::temp_dir().join(format!("lnk-{}", rustix::process::geteuid().as_raw()));
    std::fs::read_dir(&base)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|call| call.join(name).exists() || call.join("tmp").join(name).exists())
        .collect()
}

#[test]
fn output_keeps_start_and_end_and_says_what_was_cut() {
    let agent = Agent::new("cut", &POLICY.replace("timeout = 60", "timeout = 60\noutput = 1000"));
    let r = agent.run(&["python3", "-c", "for i in range(100000): print(f'line {i}')"]);
    let out = r.out();
    assert!(out.starts_with("line 0\nline 1\n"), "{}", &out[..100.min(out.len())]);
    assert!(out.ends_with("line 99999\n"));
    assert!(out.contains("[… lnk cut "), "{out}");
    let s = &r.json["stdout"];
    assert_eq!(s["bytes"], 1_088_890);
    assert!(s["cut_chars"].as_u64().unwrap() > 1_080_000);
    assert!(out.chars().count() < 1100);
}

#[test]
#[allow(clippy::zombie_processes)] // reaped with wait4 below, which also gives its peak RSS
fn memory_stays_bounded_however_much_is_printed() {
    let agent = Agent::new("flood", POLICY);
    let bytes: u64 = 512 << 20;
    let mut child = agent
        .command(&[], &["head", "-c", &bytes.to_string(), "/dev/zero"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let mut stdout = child.stdout.take().unwrap();
    let mut report = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut report).unwrap();
    // SAFETY: wait4 on the child this test spawned, into a zeroed rusage.
    let maxrss_kib = unsafe {
        let mut status = 0;
        let mut usage: libc::rusage = std::mem::zeroed();
        assert_eq!(libc::wait4(pid, &mut status, 0, &mut usage), pid);
        usage.ru_maxrss
    };
    let json: serde_json::Value = serde_json::from_str(report.trim()).unwrap();
    assert_eq!(json["stdout"]["bytes"], bytes, "{report}");
    assert!(maxrss_kib < 40 * 1024, "the helper's peak RSS was {maxrss_kib} KiB for {bytes} bytes printed");
}

#[test]
fn the_text_report_is_for_a_person() {
    let agent = Agent::new("text", &POLICY.replace("timeout = 60", "timeout = 3"));
    let out = run(lnk()
        .env("HOME", &agent.home)
        .args(["sandbox", "run", "--file"])
        .arg(&agent.policy)
        .args(["--", "sh", "-c", "echo out; echo err >&2; sleep 9"]));
    assert_eq!(out.status.code(), Some(124));
    assert_eq!(stdout(&out), "out\n");
    let err = stderr(&out);
    // The program's own error output first, then lnk's lines (a note on what /tmp was, where
    // this test's home lies beneath the host's /tmp), the outcome last.
    assert!(err.starts_with("err\nlnk: "), "{err}");
    let last = err.trim_end().lines().last().unwrap_or("");
    assert!(last.starts_with("lnk: timed out after "), "{err}");
}

#[test]
fn a_program_makes_sessions_and_groups_of_its_own_in_each_mode() {
    // Python's start_new_session and process_group, and a shell's setsid, work in each mode: the
    // own world's pid namespace ends every process of the call, and without one the helper notes
    // each new group's leader and ends what the program left wherever it went (see the lifetime
    // tests above). Nothing of it is a refusal.
    let script = r#"
import os, subprocess, sys
def attempt(fn):
    try:
        fn(); return "ok"
    except OSError as e:
        return e.strerror
print("setsid=" + attempt(lambda: subprocess.run(["sleep", "0"], start_new_session=True, check=True)))
print("setpgid=" + attempt(lambda: subprocess.run(["sleep", "0"], process_group=0, check=True)))
# Keep the Popen until getsid has asked: a dropped Popen reaps an exited child at once, and
# getsid would then find no such process.
child = subprocess.Popen(["sleep", "5"], start_new_session=True)
print("session=" + str(os.getsid(child.pid) != os.getsid(0)))
child.kill(); child.wait()
"#;
    for mode in modes() {
        let agent = Agent::new("sessions", POLICY);
        let r = run_in(&agent, mode, &["python3", "-c", script]);
        assert_eq!(r.code, Some(0), "{mode:?}: {}", r.raw);
        for name in ["setsid", "setpgid"] {
            r.assert_said(name, "ok");
        }
        r.assert_said("session", "True");
        let sessions: Vec<&serde_json::Value> =
            r.json["denials"].as_array().unwrap().iter().filter(|d| d["access"] == "session").collect();
        assert!(sessions.is_empty(), "{mode:?}: {}", r.raw);
    }
}
