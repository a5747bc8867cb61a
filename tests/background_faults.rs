//! Crashes at each step of a background command's life (anchors/supervision.md §5.1): the
//! supervisor, `start` or the keeper is SIGKILLed at a named point (`LNK_FAULT`, compiled only
//! with the `fault-points` feature) and the records must stay readable, the sweep must end each
//! one exactly once, and nothing may be left running.
#![cfg(feature = "fault-points")]

mod common;
use common::background::*;
use common::*;

use std::time::{Duration, Instant};

/// `start` of `program`, with `LNK_FAULT` set to `fault` (inherited by the supervisor).
fn faulty(bg: &Bg, fault: &str, bridge: &TestBridge, program: &[&str]) -> std::process::Command {
    let mut c = bg.cmd("start");
    c.env("LNK_FAULT", fault)
        .arg("--file")
        .arg(&bg.policy)
        .arg("--bridge")
        .arg(&bridge.path)
        .arg("--")
        .args(program);
    c
}

fn start_faulty(bg: &Bg, fault: &str, bridge: &TestBridge, program: &[&str]) -> std::process::Output {
    run(&mut faulty(bg, fault, bridge, program))
}

fn only_record(bg: &Bg) -> serde_json::Value {
    let list = bg.list();
    let records = list.as_array().unwrap();
    assert_eq!(records.len(), 1, "{list}");
    records[0].clone()
}

/// Sweeps until the record is ended and told, and checks exactly one message came.
fn swept_once(bg: &Bg, bridge: &TestBridge, state: &str) -> serde_json::Value {
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        bg.sweep(Some(&bridge.path));
        let r = only_record(bg);
        if r["told"] == true {
            assert_eq!(r["state"], state, "{r}");
            assert_eq!(bridge.wait_for(1, Duration::from_secs(20)).len(), 1, "the message came");
            let lines = bridge.wait_for(2, Duration::from_millis(300));
            assert_eq!(lines.len(), 1, "exactly one message: {lines:?}");
            return r;
        }
        assert!(Instant::now() < until, "never told: {r}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn start_dies_after_publishing_the_record() {
    let bg = Bg::new("f-publish");
    let bridge = TestBridge::new(&bg.dir);
    let out = start_faulty(&bg, "start-after-publish", &bridge, &["sleep", "30"]);
    assert_eq!(out.status.code(), None, "killed by its fault point");
    let r = swept_once(&bg, &bridge, "lost");
    assert_eq!(r["leftovers_possible"], false, "nothing was ever started: {r}");
}

#[test]
fn start_dies_before_the_record_and_its_supervisor_starts_nothing() {
    // The supervisor is already running when `start` writes the record; `start` dies between
    // the two. Without `go` the supervisor must end having started nothing.
    let bg = Bg::new("f-before");
    let bridge = TestBridge::new(&bg.dir);
    let ran = bg.files_dir.join("ran");
    let script = format!("touch {}; exec sleep 30", ran.display());
    let out = start_faulty(&bg, "start-before-publish", &bridge, &["sh", "-c", &script]);
    assert_eq!(out.status.code(), None, "killed by its fault point");
    wait_for_no_supervisor(&bg);
    std::thread::sleep(Duration::from_millis(200));
    assert!(!ran.exists(), "the command ran without a record");
    assert!(bg.list().as_array().unwrap().is_empty(), "{}", bg.list());
    // Only the lock file was left; the sweep removes it and tells nothing.
    let s = bg.sweep(Some(&bridge.path));
    assert_eq!(s["told"].as_array().unwrap().len(), 0, "{s}");
    let left: Vec<_> = std::fs::read_dir(bg.agent_dir.join("runs"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n.to_string_lossy().starts_with('r'))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    assert!(bridge.wait_for(1, Duration::from_millis(300)).is_empty());
}

#[test]
fn a_published_record_is_not_run_before_start_says_go() {
    // `start` frozen (SIGSTOP) right after its record is on the disk, before `go`: the
    // supervisor, already running and able to read the record, must not start the command.
    // When `start` then dies, nothing has run and the sweep ends the record once.
    let bg = Bg::new("f-go");
    let bridge = TestBridge::new(&bg.dir);
    let ran = bg.files_dir.join("ran");
    let script = format!("touch {}; exec sleep 30", ran.display());
    let mut start = faulty(&bg, "start-after-publish:stop", &bridge, &["sh", "-c", &script])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stat = format!("/proc/{}/stat", start.id());
    let stopped = || {
        std::fs::read_to_string(&stat)
            .is_ok_and(|s| s.rsplit(')').next().is_some_and(|r| r.trim_start().starts_with('T')))
    };
    let until = Instant::now() + Duration::from_secs(10);
    while !stopped() {
        assert!(Instant::now() < until, "start never reached its fault point");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(only_record(&bg)["state"], "starting", "the record is published");
    std::thread::sleep(Duration::from_millis(500));
    assert!(!ran.exists(), "the supervisor started the command before `go`");
    start.kill().unwrap();
    start.wait().unwrap();
    wait_for_no_supervisor(&bg);
    assert!(!ran.exists(), "the command ran without `go`");
    let r = swept_once(&bg, &bridge, "lost");
    assert_eq!(r["leftovers_possible"], false, "nothing was ever started: {r}");
}

/// Waits until no `lnk-link-run supervise` of this agent is left.
fn wait_for_no_supervisor(bg: &Bg) {
    let agent = bg.agent_dir.to_str().unwrap().to_owned();
    let supervisors = || {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .filter(|c| {
                let c = String::from_utf8_lossy(c);
                c.contains("supervise") && c.contains(agent.as_str())
            })
            .count()
    };
    let until = Instant::now() + Duration::from_secs(10);
    while supervisors() > 0 {
        assert!(Instant::now() < until, "the supervisor outlived start without being told to go");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_running_record_that_cannot_be_written_fails_the_start_and_ends_the_command() {
    // The group exists when the `running` record is written; if that write fails, the command
    // must not go on unrecorded: the start fails, the record says so, and nothing is left.
    let bg = Bg::new("f-write");
    let bridge = TestBridge::new(&bg.dir);
    let out = start_faulty(&bg, "supervise-running-write:fail", &bridge, &["sleep", "31.4159"]);
    assert_eq!(out.status.code(), Some(125), "{}", stderr(&out));
    wait_for_no_supervisor(&bg);
    let alive = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .filter(|c| String::from_utf8_lossy(c).contains("31.4159"))
        .count();
    assert_eq!(alive, 0, "the command outlived its failed start");
    assert_eq!(only_record(&bg)["state"], "failed", "{}", bg.list());
}

#[test]
fn the_supervisor_dies_before_starting_anything() {
    for fault in ["supervise-before-identity", "supervise-before-keeper"] {
        let bg = Bg::new("f-early");
        let bridge = TestBridge::new(&bg.dir);
        let out = start_faulty(&bg, fault, &bridge, &["sleep", "30"]);
        assert_eq!(out.status.code(), Some(125), "{fault}: {}", stderr(&out));
        assert!(stderr(&out).contains("the sweep will record it"), "{}", stderr(&out));
        let r = swept_once(&bg, &bridge, "lost");
        assert_eq!(r["leftovers_possible"], false, "{fault}: {r}");
    }
}

#[test]
fn the_supervisor_dies_with_the_command_running() {
    let bg = Bg::new("f-running");
    let bridge = TestBridge::new(&bg.dir);
    let out = start_faulty(
        &bg,
        "supervise-running",
        &bridge,
        &["sh", "-c", &marked("mark $$ > ~/Link/Files/pid; exec sleep 30")],
    );
    assert_eq!(out.status.code(), Some(125), "{}", stderr(&out));
    let pid_file = bg.files_dir.join("pid");
    // The command may have been killed before it wrote its pid (the keeper ends the group as
    // soon as the supervisor dies); if it wrote one, that process must be gone.
    let until = Instant::now() + Duration::from_millis(500);
    let mut mark = None;
    while mark.is_none() && Instant::now() < until {
        mark = std::fs::read_to_string(&pid_file).ok().filter(|t| t.ends_with('\n'));
        std::thread::sleep(Duration::from_millis(10));
    }
    if let Some(pid) = mark.as_deref().and_then(host_pid) {
        wait_dead(pid, Duration::from_secs(3));
    }
    swept_once(&bg, &bridge, "lost");
}

#[test]
fn the_supervisor_dies_after_recording_the_end_before_telling() {
    let bg = Bg::new("f-end");
    let bridge = TestBridge::new(&bg.dir);
    let out = start_faulty(&bg, "supervise-after-end", &bridge, &["sh", "-c", "exit 7"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = swept_once(&bg, &bridge, "exited");
    assert_eq!(r["exit_code"], 7);
}

#[test]
fn the_supervisor_dies_after_marking_told_and_no_message_is_ever_sent() {
    let bg = Bg::new("f-told");
    let bridge = TestBridge::new(&bg.dir);
    let out = start_faulty(&bg, "after-told-mark", &bridge, &["sh", "-c", "true"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let until = Instant::now() + Duration::from_secs(20);
    while only_record(&bg)["told"] != true {
        assert!(Instant::now() < until);
        std::thread::sleep(Duration::from_millis(10));
    }
    for _ in 0..3 {
        bg.sweep(Some(&bridge.path));
    }
    // At most once: marked before the first byte, so a crash here loses the message.
    assert!(bridge.wait_for(1, Duration::from_millis(300)).is_empty());
}

#[test]
fn the_keeper_killed_with_the_supervisor_alive() {
    let bg = Bg::new("f-keeper");
    let bridge = TestBridge::new(&bg.dir);
    let mut c = bg.cmd("start");
    c.arg("--file").arg(&bg.policy).arg("--bridge").arg(&bridge.path).args([
        "--",
        "sh",
        "-c",
        &marked("sleep 99 & mark $! > ~/Link/Files/child; wait"),
    ]);
    let out = run(&mut c);
    let id = stdout(&out).trim().to_owned();
    let child_file = bg.files_dir.join("child");
    let child = read_pid(&child_file);
    let keeper: i32 = bg.record_field(&id, "keeper_pid").parse().unwrap();
    // SAFETY: kills the keeper of the command this test started.
    unsafe { libc::kill(keeper, libc::SIGKILL) };
    // The supervisor sees the keeper gone and kills the group while the keeper is unreaped.
    wait_dead(child, Duration::from_secs(10));
    let r = bg.wait_state(&id, "lost", Duration::from_secs(20));
    assert_eq!(r["leftovers_possible"], false, "{r}");
    assert_eq!(bridge.wait_for(1, Duration::from_secs(20)).len(), 1);
}
