//! `lnk-link-run`: background commands against the real binary, with real signals.

mod common;
use common::background::*;
use common::*;

use std::os::unix::net::UnixListener;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[test]
fn a_command_runs_in_the_background_and_its_end_is_told_once() {
    let bg = Bg::new("basic");
    let bridge = TestBridge::new(&bg.dir);
    let out = bg.start_with(
        &["--bridge", bridge.path.to_str().unwrap(), "--conversation", "conv-1", "--hop", "1"],
        &["sh", "-c", "echo hello; echo oops >&2; exit 3"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let id = stdout(&out).trim().to_owned();
    assert!(id.starts_with('r'), "{id}");
    let r = bg.wait_state(&id, "exited", Duration::from_secs(30));
    assert_eq!(r["exit_code"], 3);
    let lines = bridge.wait_for(1, Duration::from_secs(20));
    assert_eq!(lines.len(), 1, "{lines:?}");
    let m: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!(m["from"], format!("run:{id}"));
    assert_eq!(m["to"], "conv-1");
    assert_eq!(m["hop"], 2, "one hop further down than the starting call");
    assert_eq!(m["state"], "exited");
    assert_eq!(m["exit_code"], 3);
    assert!(m["output_end"].as_str().unwrap().contains("hello\noops\n"), "{m}");
    assert_eq!(bg.record(&id)["told"], true);
    // The output is in the files folder, and `read` returns it.
    let read = run(bg.cmd("read").arg(&id));
    assert_eq!(stdout(&read), "hello\noops\n");
    let end = run(bg.cmd("read").arg(&id).args(["--end", "5"]));
    assert_eq!(stdout(&end), "oops\n");
    // A sweep afterwards tells nothing again.
    let s = bg.sweep(Some(&bridge.path));
    assert_eq!(s["told"].as_array().unwrap().len(), 0);
    assert_eq!(bridge.wait_for(2, Duration::from_millis(300)).len(), 1);
}

#[test]
fn starts_are_refused_synchronously_with_run_exit_codes() {
    let bg = Bg::new("refuse");
    let out = bg.start_with(&[], &["perl", "-e", "1"]);
    assert_eq!(out.status.code(), Some(126), "{}", stderr(&out));
    assert!(stderr(&out).contains("not among"), "{}", stderr(&out));
    // Not listed and not installed: 127 as for a listed one, the why saying so.
    let out = bg.start_with(&[], &["no-such-program-lnk"]);
    assert_eq!(out.status.code(), Some(127), "{}", stderr(&out));
    assert!(stderr(&out).contains("not installed"), "{}", stderr(&out));
    let any = Bg::with_policy("refuse-any", "commands = [\"*\"]\n");
    let out = any.start_with(&[], &["no-such-program-lnk"]);
    assert_eq!(out.status.code(), Some(127), "{}", stderr(&out));
    let out = bg.start_with(&["--hop", "3"], &["sh", "-c", "true"]);
    assert_eq!(out.status.code(), Some(77), "the hop cap has its own code");
    assert!(stderr(&out).contains("hops"), "{}", stderr(&out));
    assert!(bg.list().as_array().unwrap().is_empty(), "nothing was recorded");
    let out = bg.start_with(&["--hop", "2"], &["sh", "-c", "true"]);
    assert_eq!(out.status.code(), Some(0), "hop 2 of 3 may still start: {}", stderr(&out));
    // The kernel-level refusal (a script's interpreter not listed: npm is `#!/usr/bin/env node`)
    // comes back from the supervisor, named with the fix that lists it.
    let npm = Bg::with_policy("refuse-interpreter", "commands = [\"npm\", \"node\"]\n");
    let out = npm.start_with(&[], &["npm", "--version"]);
    assert_eq!(out.status.code(), Some(126), "{}", stderr(&out));
    assert!(stderr(&out).contains("add \"env\" to commands"), "{}", stderr(&out));
    // Refusals the supervisor finds before anything runs record nothing either: a limit of the
    // mode (a tcp name without the own world: unsupported) and a grant naming a file (refused).
    for (policy, code) in [
        ("commands = [\"true\"]\n[internet]\ntcp = [\"db.example:5432\"]\n", 125),
        ("commands = [\"true\"]\n[files]\nread = [\"/etc/passwd\"]\n", 126),
    ] {
        let quiet = Bg::with_policy("refuse-in-supervisor", policy);
        let mut start = quiet.cmd("start");
        start.arg("--file").arg(&quiet.policy).args(["--", "true"]);
        let out = run(in_mode(&mut start, Mode::LandlockOnly));
        assert_eq!(out.status.code(), Some(code), "{policy}: {}", stderr(&out));
        assert!(quiet.list().as_array().unwrap().is_empty(), "{policy}: nothing recorded: {}", quiet.list());
    }
}

#[test]
fn a_command_the_kernel_will_not_execute_is_failed_when_start_returns() {
    // A `#!/bin/sh` script listed without `sh`: Landlock refuses its interpreter, so `execve`
    // fails inside the sandbox, after the supervisor has recorded the command running (it does
    // so while the sandbox is being made). When `start` returns, the record says failed.
    // The supervisor's `failed` record is made 300 ms slow (a fault point): `start` must still
    // return only after it, never while the record says `running`.
    let script = std::fs::read_dir("/usr/bin")
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file()))
        .find(|p| std::fs::read(p).is_ok_and(|b| b.starts_with(b"#!/bin/sh\n")));
    if !require(script.is_some(), "a `#!/bin/sh` script in /usr/bin (gzip's zgrep, on Debian)") {
        return;
    }
    let name = script.unwrap().file_name().unwrap().to_str().unwrap().to_owned();
    for mode in modes() {
        let bg = Bg::with_policy("exec-refused", &format!("commands = [\"{name}\"]\n"));
        let mut start = bg.cmd("start");
        start.env("LNK_FAULT", "supervise-failing:slow").arg("--file").arg(&bg.policy).args(["--", &name]);
        let out = run(in_mode(&mut start, mode));
        assert_eq!(out.status.code(), Some(126), "{mode:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("cannot execute"), "{mode:?}: {}", stderr(&out));
        let list = bg.list();
        let records = list.as_array().unwrap();
        assert_eq!(records.len(), 1, "{mode:?}: {list}");
        assert_eq!(records[0]["state"], "failed", "{mode:?}: {list}");
    }
}

#[test]
fn at_most_four_run_at_once_even_under_sixteen_concurrent_starts() {
    let bg = Bg::new("limit");
    let barrier = Arc::new(std::sync::Barrier::new(16));
    let bg = Arc::new(bg);
    let handles: Vec<_> = (0..16)
        .map(|_| {
            let (bg, barrier) = (bg.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                bg.start_with(&[], &["sleep", "30"]).status.code()
            })
        })
        .collect();
    let codes: Vec<Option<i32>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(codes.iter().filter(|c| **c == Some(0)).count(), 4, "{codes:?}");
    assert_eq!(codes.iter().filter(|c| **c == Some(75)).count(), 12, "try again later: {codes:?}");
    let running = bg.list().as_array().unwrap().iter().filter(|r| r["state"] == "running").count();
    assert_eq!(running, 4);
    // Stopping one frees its slot.
    let first = bg.list().as_array().unwrap()[0]["id"].as_str().unwrap().to_owned();
    assert_eq!(run(bg.cmd("stop").arg(&first)).status.code(), Some(0));
    assert_eq!(bg.start_with(&[], &["sleep", "30"]).status.code(), Some(0));
}

#[test]
fn the_supervisor_is_detached_from_the_caller() {
    use std::os::unix::process::CommandExt as _;
    let bg = Bg::new("detached");
    // Start from a process group of its own, then kill that whole group and send it SIGHUP.
    let mut c = bg.cmd("start");
    c.arg("--file").arg(&bg.policy).args(["--", "sleep", "30"]).process_group(0);
    let child = c.stdout(std::process::Stdio::piped()).spawn().unwrap();
    let pgid = child.id() as i32;
    let out = child.wait_with_output().unwrap();
    let id = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    // SAFETY: signals the process group this test made.
    unsafe {
        libc::kill(-pgid, libc::SIGHUP);
        libc::kill(-pgid, libc::SIGKILL);
    }
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(bg.record(&id)["state"], "running");
    let sup: i32 = bg.record_field(&id, "supervisor_pid").parse().unwrap();
    let sid = std::fs::read_to_string(format!("/proc/{sup}/stat")).unwrap();
    let fields: Vec<&str> = sid.rsplit(')').next().unwrap().split_whitespace().collect();
    assert_eq!(fields[3], sup.to_string(), "the supervisor leads a session of its own");
}

#[test]
fn the_timeout_ends_everything_with_term_grace_kill() {
    let bg = Bg::new("timeout");
    let id = bg.start_with(
        &["--timeout", "3"],
        &["sh", "-c", &marked("trap '' TERM; sleep 99 & mark $! > ~/Link/Files/child; wait")],
    );
    assert_eq!(id.status.code(), Some(0), "{}", stderr(&id));
    let id = stdout(&id).trim().to_owned();
    let started = Instant::now();
    let child = read_pid(&bg.files_dir.join("child"));
    let r = bg.wait_state(&id, "timed_out", Duration::from_secs(30));
    assert!(started.elapsed() < Duration::from_secs(20), "{r}");
    wait_dead(child, Duration::from_secs(2));
}

#[test]
fn stop_ends_a_command_and_stopping_twice_is_harmless() {
    let bg = Bg::new("stop");
    let id = bg.start(&["sh", "-c", &marked("sleep 99 & mark $! > ~/Link/Files/child; wait")]);
    let child = read_pid(&bg.files_dir.join("child"));
    let out = run(bg.cmd("stop").arg(&id));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("was stopped"), "{}", stdout(&out));
    assert_eq!(bg.record(&id)["state"], "stopped");
    wait_dead(child, Duration::from_secs(2));
    let again = run(bg.cmd("stop").arg(&id));
    assert_eq!(again.status.code(), Some(0));
    assert_eq!(bg.record(&id)["state"], "stopped");
    // Stopping a command that is ending on its own gives one result.
    let quick = bg.start(&["sh", "-c", "sleep 0.05"]);
    let _ = run(bg.cmd("stop").arg(&quick));
    let state = bg.record(&quick)["state"].as_str().unwrap().to_owned();
    assert!(state == "exited" || state == "stopped", "{state}");
}

#[test]
fn stop_all_records_each_lost_and_tells_when_the_agent_is_back() {
    let bg = Bg::new("stopall");
    let a = bg.start(&["sleep", "30"]);
    let b = bg.start(&["sleep", "30"]);
    let out = run(bg.cmd("stop").arg("--all"));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for id in [&a, &b] {
        let r = bg.record(id);
        assert_eq!(r["state"], "lost", "{r}");
        assert_eq!(r["told"], false);
    }
    let bridge = TestBridge::new(&bg.dir);
    let s = bg.sweep(Some(&bridge.path));
    assert_eq!(s["told"].as_array().unwrap().len(), 2, "{s}");
    let lines = bridge.wait_for(2, Duration::from_secs(20));
    assert_eq!(lines.len(), 2);
    assert!(lines.iter().all(|l| l.contains("\"state\":\"lost\"")), "{lines:?}");
}

#[test]
fn output_is_capped_and_what_is_dropped_is_said() {
    let bg = Bg::new("cap");
    let id = bg.start_with(&["--output-cap", "1000"], &["head", "-c", "100000", "/dev/zero"]);
    let id = stdout(&id).trim().to_owned();
    let r = bg.wait_state(&id, "exited", Duration::from_secs(30));
    assert_eq!(r["output_bytes"], 1000);
    assert_eq!(r["output_dropped"], 99_000);
    let file = std::fs::read(bg.files_dir.join("background").join(format!("{id}.out"))).unwrap();
    assert!(
        String::from_utf8_lossy(&file)
            .ends_with("[… lnk dropped 99000 bytes of output past the 1000-byte cap …]\n")
    );
}

#[test]
fn read_refuses_a_swapped_output_file_and_never_blocks() {
    let bg = Bg::new("swap");
    let id = bg.start(&["sh", "-c", "echo mine"]);
    bg.wait_state(&id, "exited", Duration::from_secs(30));
    let out_path = bg.files_dir.join("background").join(format!("{id}.out"));
    let secret = bg.dir.file("secret", "SECRET");
    let read = || run(bg.cmd("read").arg(&id));

    std::fs::remove_file(&out_path).unwrap();
    std::os::unix::fs::symlink(&secret, &out_path).unwrap();
    let r = read();
    assert_eq!(r.status.code(), Some(126));
    assert!(!stdout(&r).contains("SECRET") && stderr(&r).contains("symbolic link"), "{}", stderr(&r));

    std::fs::remove_file(&out_path).unwrap();
    std::fs::hard_link(&secret, &out_path).unwrap();
    let r = read();
    assert_eq!(r.status.code(), Some(126));
    assert!(
        !stdout(&r).contains("SECRET") && stderr(&r).contains("not the file lnk wrote"),
        "{}",
        stderr(&r)
    );

    std::fs::remove_file(&out_path).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &out_path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let r = read();
    assert_eq!(r.status.code(), Some(126), "a FIFO is refused without blocking");

    // `background/` itself swapped for a link: nothing is read or written through it.
    let bg2 = Bg::new("swapdir");
    std::fs::create_dir_all(bg2.dir.join("elsewhere")).unwrap();
    std::os::unix::fs::symlink(bg2.dir.join("elsewhere"), bg2.files_dir.join("background")).unwrap();
    let out = bg2.start_with(&[], &["sh", "-c", "echo x"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("symbolic link"), "{}", stderr(&out));
    assert_eq!(std::fs::read_dir(bg2.dir.join("elsewhere")).unwrap().count(), 0);
}

#[test]
fn the_records_are_out_of_the_commands_reach() {
    let bg = Bg::new("reach");
    let runs = bg.agent_dir.join("runs");
    let id = bg.start(&[
        "python3",
        "-c",
        &format!(
            "import os, errno\nfor p in ['{r}/x', '{r}/start.lock']:\n    try:\n        open(p, 'w')\n        print('ok')\n    except OSError as e:\n        print(errno.errorcode[e.errno])",
            r = runs.display()
        ),
    ]);
    bg.wait_state(&id, "exited", Duration::from_secs(30));
    let out = stdout(&run(bg.cmd("read").arg(&id)));
    // The records are a hole in the read grant of home (see `protected`): not even opened.
    assert!(out.starts_with("EACCES\nEACCES\n"), "{out}");
}

#[test]
fn a_supervisor_killed_mid_run_leaves_a_record_the_sweep_ends() {
    let bg = Bg::new("sigkill");
    let bridge = TestBridge::new(&bg.dir);
    let id = bg.start_with(
        &["--bridge", bridge.path.to_str().unwrap()],
        &["sh", "-c", &marked("sleep 99 & mark $! > ~/Link/Files/child; wait")],
    );
    let id = stdout(&id).trim().to_owned();
    let child = read_pid(&bg.files_dir.join("child"));
    let sup: i32 = bg.record_field(&id, "supervisor_pid").parse().unwrap();
    // SAFETY: kills the supervisor this test started.
    unsafe { libc::kill(sup, libc::SIGKILL) };
    // The keeper sees its parent die and ends the whole group.
    wait_dead(child, Duration::from_secs(10));
    let r = bg.wait_state(&id, "lost", Duration::from_secs(20));
    assert_eq!(r["told"], false);
    let s = bg.sweep(Some(&bridge.path));
    assert_eq!(s["lost"].as_array().unwrap().len(), 1, "{s}");
    let lines = bridge.wait_for(1, Duration::from_secs(20));
    assert_eq!(lines.len(), 1);
    assert!(lines[0].contains("\"state\":\"lost\""));
    assert_eq!(bg.record(&id)["told"], true);
    // Sweeping again does nothing more.
    let s = bg.sweep(Some(&bridge.path));
    assert!(s["lost"].as_array().unwrap().is_empty() && s["told"].as_array().unwrap().is_empty(), "{s}");
    assert_eq!(bridge.wait_for(2, Duration::from_millis(300)).len(), 1);
}

#[test]
fn a_bridge_that_is_down_is_told_exactly_once_later() {
    let bg = Bg::new("down");
    let missing = bg.dir.join("no-bridge.sock");
    let id = bg.start_with(&["--bridge", missing.to_str().unwrap()], &["sh", "-c", "echo done"]);
    let id = stdout(&id).trim().to_owned();
    bg.wait_state(&id, "exited", Duration::from_secs(30));
    // Wait for the supervisor to be gone (the record says exited before the supervisor tells
    // the bridge, and it marks told before it connects), then the mark must be clear.
    let supervisor: i32 = bg.record_field(&id, "supervisor_pid").parse().unwrap();
    wait_dead(supervisor, Duration::from_secs(20));
    assert_eq!(bg.record(&id)["told"], false, "connect failed: the mark was cleared");
    let bridge = TestBridge::new(&bg.dir);
    // Two sweeps at once: exactly one message.
    let a = std::thread::scope(|s| {
        let h1 = s.spawn(|| bg.sweep(Some(&bridge.path)));
        let h2 = s.spawn(|| bg.sweep(Some(&bridge.path)));
        (h1.join().unwrap(), h2.join().unwrap())
    });
    let told = a.0["told"].as_array().unwrap().len() + a.1["told"].as_array().unwrap().len();
    assert_eq!(told, 1, "{a:?}");
    assert_eq!(bridge.wait_for(1, Duration::from_secs(20)).len(), 1, "the one message came");
    assert_eq!(bridge.wait_for(2, Duration::from_millis(500)).len(), 1, "and no second");
}

#[test]
fn a_bridge_that_accepts_and_closes_is_never_told_twice() {
    let bg = Bg::new("closes");
    let path = bg.dir.join("rude.sock");
    let listener = UnixListener::bind(&path).unwrap();
    let accepted = Arc::new(Mutex::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        for s in listener.incoming().flatten() {
            *count.lock().unwrap() += 1;
            drop(s);
        }
    });
    for _ in 0..5 {
        let id = bg.start_with(&["--bridge", path.to_str().unwrap()], &["sh", "-c", "true"]);
        let id = stdout(&id).trim().to_owned();
        bg.wait_state(&id, "exited", Duration::from_secs(30));
        let until = Instant::now() + Duration::from_secs(20);
        while bg.record(&id)["told"] != true {
            assert!(Instant::now() < until, "connected: the mark stays");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    for _ in 0..3 {
        bg.sweep(Some(&path));
    }
    // A record says `told` before its connect lands: wait for the five, then for a sixth.
    let until = Instant::now() + Duration::from_secs(20);
    while *accepted.lock().unwrap() < 5 {
        assert!(Instant::now() < until, "each command's end was told once");
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(*accepted.lock().unwrap(), 5, "one connection per command, never a second");
}

#[test]
fn old_records_are_removed_but_never_a_running_ones() {
    let bg = Bg::new("cleanup");
    let done = bg.start(&["sh", "-c", "echo x"]);
    bg.wait_state(&done, "exited", Duration::from_secs(30));
    let running = bg.start(&["sleep", "30"]);
    // Age both records by two days (the harness's folder; lnk only trusts its own records, but
    // time is not a field an attacker gains anything from).
    for id in [&done, &running] {
        let path = bg.agent_dir.join("runs").join(format!("{id}.toml"));
        let text = std::fs::read_to_string(&path).unwrap();
        let old = lnk_ms_now() - 2 * 86_400_000;
        let text = text
            .lines()
            .map(|l| {
                if l.starts_with("ended_ms = ") || l.starts_with("started_ms = ") {
                    format!("{} = {old}", l.split(" = ").next().unwrap())
                } else if l == "told = false" {
                    "told = true".to_owned()
                } else {
                    l.to_owned()
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        std::fs::write(&path, text + "\n").unwrap();
    }
    let s = bg.sweep(None);
    assert_eq!(s["removed"], serde_json::json!([done]), "{s}");
    assert!(!bg.files_dir.join("background").join(format!("{done}.out")).exists());
    assert_eq!(bg.record(&running)["state"], "running");
}

fn lnk_ms_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64
}

#[test]
fn corrupt_and_hostile_records_never_cause_a_signal() {
    let bg = Bg::new("hostile");
    let mut decoy = Command::new("sleep").arg("30").spawn().unwrap();
    let decoy_pid = decoy.id() as i32;
    let id = bg.start(&["sh", "-c", "true"]);
    bg.wait_state(&id, "exited", Duration::from_secs(30));
    let good = bg.record_text(&id);
    let runs = bg.agent_dir.join("runs");
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap().trim().to_owned();
    let variants = [
        // The decoy's pid with the wrong start time: the number belongs to another process.
        (
            "r0000000000000001",
            good.replace("state = \"exited\"", "state = \"running\"").replace(
                &format!("keeper_pid = {}", bg.record_field(&id, "keeper_pid")),
                &format!("keeper_pid = {decoy_pid}"),
            ),
        ),
        (
            "r0000000000000002",
            good.replace("state = \"exited\"", "state = \"running\"")
                .replace(&format!("keeper_pid = {}", bg.record_field(&id, "keeper_pid")), "keeper_pid = 1"),
        ),
        (
            "r0000000000000003",
            good.replace("state = \"exited\"", "state = \"running\"").replace(
                &format!("boot_id = \"{boot}\""),
                "boot_id = \"00000000-0000-0000-0000-000000000000\"",
            ),
        ),
        ("r0000000000000004", "keeper_pid = 1\nstate = \"running\"\n".to_owned()),
        ("r0000000000000005", good.replace("version = 1", "version = 1\nversion = 2")),
    ];
    for (vid, text) in &variants {
        let text = text.replace(&format!("id = \"{id}\""), &format!("id = \"{vid}\""));
        std::fs::write(runs.join(format!("{vid}.toml")), text).unwrap();
        std::fs::write(runs.join(format!("{vid}.lock")), "").unwrap();
    }
    let s = bg.sweep(None);
    assert!(decoy.try_wait().unwrap().is_none(), "the decoy is alive: {s}");
    assert_eq!(s["corrupt"].as_array().unwrap().len(), 3, "pgid 1, no version, a duplicate key: {s}");
    for vid in ["r0000000000000001", "r0000000000000003"] {
        let r = bg.record(vid);
        assert_eq!(r["state"], "lost", "{r}");
    }
    assert_eq!(bg.record("r0000000000000003")["leftovers_possible"], false, "another boot: nothing left");
    decoy.kill().unwrap();
    decoy.wait().unwrap();
}

#[test]
fn a_dead_unswept_supervisor_holds_no_slot() {
    let bg = Bg::new("slots");
    let ids: Vec<String> = (0..4).map(|_| bg.start(&["sleep", "30"])).collect();
    assert_eq!(bg.start_with(&[], &["sleep", "30"]).status.code(), Some(75), "the fifth is refused");
    let sup: i32 = bg.record_field(&ids[0], "supervisor_pid").parse().unwrap();
    // SAFETY: kills a supervisor this test started.
    unsafe { libc::kill(sup, libc::SIGKILL) };
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let out = bg.start_with(&[], &["sleep", "30"]);
        if out.status.code() == Some(0) {
            break;
        }
        assert!(Instant::now() < until, "the dead supervisor's slot was never freed: {}", stderr(&out));
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_bridge_that_reads_slowly_is_told_once_per_command() {
    let bg = Bg::new("slow");
    let path = bg.dir.join("slow.sock");
    let listener = UnixListener::bind(&path).unwrap();
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    std::thread::spawn(move || {
        for s in listener.incoming().flatten() {
            std::thread::sleep(Duration::from_millis(300));
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut &s, &mut text);
            sink.lock().unwrap().extend(text.lines().map(str::to_owned));
        }
    });
    let ids: Vec<String> = (0..3)
        .map(|_| {
            let out = bg.start_with(&["--bridge", path.to_str().unwrap()], &["sh", "-c", "true"]);
            stdout(&out).trim().to_owned()
        })
        .collect();
    for id in &ids {
        bg.wait_state(id, "exited", Duration::from_secs(30));
    }
    for _ in 0..3 {
        bg.sweep(Some(&path));
    }
    let until = Instant::now() + Duration::from_secs(20);
    while lines.lock().unwrap().len() < 3 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    let got = lines.lock().unwrap().clone();
    assert_eq!(got.len(), 3, "{got:?}");
    for id in &ids {
        assert_eq!(got.iter().filter(|l| l.contains(id.as_str())).count(), 1, "{id}: {got:?}");
    }
}

#[test]
fn the_supervisor_holds_no_descriptor_the_caller_leaked() {
    use std::os::unix::process::CommandExt as _;
    let bg = Bg::new("leak");
    let leaked = std::fs::File::open(&bg.policy).unwrap();
    let raw = std::os::fd::AsRawFd::as_raw_fd(&leaked);
    let mut c = bg.cmd("start");
    c.arg("--file").arg(&bg.policy).args(["--", "sleep", "30"]);
    // SAFETY: dup2 in the forked child onto a number it does not otherwise use.
    unsafe {
        c.pre_exec(move || {
            if libc::dup2(raw, 9) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = run(&mut c);
    let id = stdout(&out).trim().to_owned();
    let sup = bg.record_field(&id, "supervisor_pid");
    let fds: Vec<String> = std::fs::read_dir(format!("/proc/{sup}/fd"))
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .map(|p| p.display().to_string())
        .collect();
    assert!(!fds.iter().any(|p| p.ends_with("sandbox.toml")), "{fds:?}");
}

#[test]
fn stop_gives_the_command_its_grace_period() {
    // The command cleans up on SIGTERM; the group is killed only after the grace period. (The
    // keeper once killed the whole group the moment the SIGTERM reached it.)
    for mode in modes() {
        let bg = Bg::new("grace");
        let mut start = bg.cmd("start");
        start
            .arg("--file")
            .arg(&bg.policy)
            .args(["--grace-ms", "3000", "--", "sh", "-c"])
            .arg("trap 'echo cleaned > ~/Link/Files/cleanup; exit 3' TERM; echo > ~/Link/Files/ready; sleep 99 & wait");
        let out = run(in_mode(&mut start, mode));
        assert_eq!(out.status.code(), Some(0), "{mode:?}: {}", stderr(&out));
        let id = stdout(&out).trim().to_owned();
        let ready = bg.files_dir.join("ready");
        let until = Instant::now() + Duration::from_secs(20);
        while !ready.exists() {
            assert!(Instant::now() < until, "{mode:?}: the command never started");
            std::thread::sleep(Duration::from_millis(10));
        }
        let out = run(bg.cmd("stop").arg(&id));
        assert_eq!(out.status.code(), Some(0), "{mode:?}: {}", stderr(&out));
        let cleanup = std::fs::read_to_string(bg.files_dir.join("cleanup")).unwrap_or_default();
        assert_eq!(cleanup, "cleaned\n", "{mode:?}: the command's SIGTERM handler ran");
    }
}

#[test]
fn a_bridge_that_never_accepts_holds_no_supervisor() {
    use rustix::net::{AddressFamily, SocketAddrUnix, SocketType};
    let bg = Bg::new("stuck");
    let path = bg.dir.join("stuck.sock");
    // A bridge that listens with no room in its backlog and never accepts; one connection of
    // the test's own fills it, so every later connect would wait forever.
    let listener = rustix::net::socket(AddressFamily::UNIX, SocketType::STREAM, None).unwrap();
    rustix::net::bind(&listener, &SocketAddrUnix::new(&path).unwrap()).unwrap();
    rustix::net::listen(&listener, 0).unwrap();
    let filler = rustix::net::socket(AddressFamily::UNIX, SocketType::STREAM, None).unwrap();
    rustix::net::connect(&filler, &SocketAddrUnix::new(&path).unwrap()).unwrap();
    let ids: Vec<String> = (0..4)
        .map(|_| {
            let out = bg.start_with(&["--bridge", path.to_str().unwrap()], &["sh", "-c", "true"]);
            assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
            stdout(&out).trim().to_owned()
        })
        .collect();
    for id in &ids {
        let r = bg.wait_state(id, "exited", Duration::from_secs(30));
        // Not delivered (the bridge could not take it), so a later sweep may still tell it.
        let until = Instant::now() + Duration::from_secs(10);
        while bg.record(id)["told"] != false || !supervisor_gone(&bg, id) {
            assert!(Instant::now() < until, "a supervisor is stuck on the bridge: {r}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    // Every slot is free again: a fifth command starts.
    let out = bg.start(&["sh", "-c", "true"]);
    assert!(!out.is_empty());
    drop((filler, listener));
}

/// Whether the supervisor of `id` has exited.
fn supervisor_gone(bg: &Bg, id: &str) -> bool {
    let pid: i32 = bg.record_field(id, "supervisor_pid").parse().unwrap();
    !alive(pid)
}

#[test]
fn the_supervisor_holds_a_slot_and_nothing_it_starts_does() {
    let bg = Bg::new("slot-holder");
    let id = bg.start(&["sleep", "30"]);
    let fds = |pid: &str| -> Vec<String> {
        std::fs::read_dir(format!("/proc/{pid}/fd"))
            .map(|d| {
                d.flatten()
                    .filter_map(|e| std::fs::read_link(e.path()).ok())
                    .map(|p| p.display().to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    let slot = |v: &[String]| v.iter().any(|p| p.contains("/runs/slot-"));
    let sup = bg.record_field(&id, "supervisor_pid");
    assert!(slot(&fds(&sup)), "the supervisor holds its slot: {:?}", fds(&sup));
    // The keeper's process group: the keeper, the command and whatever it started.
    let keeper = bg.record_field(&id, "keeper_pid");
    let mut members = 0;
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let pid = entry.file_name().to_string_lossy().into_owned();
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        let after = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or_default();
        if after.split_whitespace().nth(2) == Some(keeper.as_str()) {
            members += 1;
            assert!(!slot(&fds(&pid)), "{pid} in the command's group holds a slot: {:?}", fds(&pid));
        }
    }
    assert!(members >= 2, "the keeper and the command were found");
    assert_eq!(run(bg.cmd("stop").arg(&id)).status.code(), Some(0));
}

#[test]
fn a_command_starts_where_start_was_called_and_writes_there_by_relative_paths() {
    // The harness starts `start` in its work folder (here a write grant beneath the host's /tmp):
    // the command runs there, as its world shows it, so a relative write lands in that folder.
    for mode in modes() {
        let bg = Bg::new("start-folder");
        let work = bg.files_dir.join("work");
        std::fs::create_dir_all(&work).unwrap();
        let mut c = bg.cmd("start");
        c.current_dir(&work).arg("--file").arg(&bg.policy);
        c.args(["--", "sh", "-c", "pwd > here.txt && echo written >> rel.txt"]);
        let out = run(in_mode(&mut c, mode));
        assert_eq!(out.status.code(), Some(0), "{mode:?}: {}", stderr(&out));
        let id = stdout(&out).trim().to_owned();
        let record = bg.wait_state(&id, "exited", Duration::from_secs(10));
        assert_eq!(record["exit_code"], 0, "{mode:?}: {record}");
        assert_eq!(std::fs::read_to_string(work.join("here.txt")).unwrap().trim(), work.to_str().unwrap());
        assert_eq!(std::fs::read_to_string(work.join("rel.txt")).unwrap(), "written\n", "{mode:?}");
    }
}

/// A command making sessions of its own: a session whose leader sleeps (`session`), and a
/// double-forked daemon whose session's leader has exited (`daemon`), each marked in the files
/// folder.
fn sessions_of_its_own() -> String {
    marked(&format!(
        "python3 -c 'import os, time
os.setsid()
time.sleep(99)' & mark $! > ~/Link/Files/session
setsid sh -c '{MARK}; sleep 93 & mark $! > ~/Link/Files/daemon' &
wait"
    ))
}

#[test]
fn a_command_that_makes_sessions_of_its_own_ends_with_its_stop() {
    // A command may call setsid in each mode (the own world's pid namespace ends with it;
    // without one, its supervisor ends every group it made and every process it left); a stop
    // ends it all.
    for mode in modes() {
        let bg = Bg::new("own-session");
        let mut start = bg.cmd("start");
        start.arg("--file").arg(&bg.policy).args([
            "--grace-ms",
            "300",
            "--",
            "sh",
            "-c",
            &sessions_of_its_own(),
        ]);
        let out = run(in_mode(&mut start, mode));
        assert_eq!(out.status.code(), Some(0), "{mode:?}: {}", stderr(&out));
        let id = stdout(&out).trim().to_owned();
        let session = read_pid(&bg.files_dir.join("session"));
        let daemon = read_pid(&bg.files_dir.join("daemon"));
        assert!(alive(session) && alive(daemon), "{mode:?}: {session} {daemon}");
        let stopped = Instant::now();
        let out = run(bg.cmd("stop").arg(&id));
        assert_eq!(out.status.code(), Some(0), "{mode:?}: {}", stderr(&out));
        assert!(stopped.elapsed() < Duration::from_secs(15), "{mode:?}: the stop waited for what was left");
        wait_dead(session, Duration::from_secs(3));
        wait_dead(daemon, Duration::from_secs(3));
    }
}

#[test]
fn a_supervisor_killed_leaves_no_session_of_the_command_behind() {
    // The supervisor SIGKILLed: its keeper ends every process of the command, whatever session
    // it made, before its own group (nothing it ends is reparented past it); the sweep then
    // records the command lost.
    for mode in modes() {
        let bg = Bg::new("sessions-sigkill");
        let mut start = bg.cmd("start");
        start.arg("--file").arg(&bg.policy).args(["--", "sh", "-c", &sessions_of_its_own()]);
        let out = run(in_mode(&mut start, mode));
        assert_eq!(out.status.code(), Some(0), "{mode:?}: {}", stderr(&out));
        let id = stdout(&out).trim().to_owned();
        let (session, daemon) =
            (read_pid(&bg.files_dir.join("session")), read_pid(&bg.files_dir.join("daemon")));
        let sup: i32 = bg.record_field(&id, "supervisor_pid").parse().unwrap();
        // SAFETY: kills the supervisor this test started.
        unsafe { libc::kill(sup, libc::SIGKILL) };
        wait_dead(session, Duration::from_secs(15));
        wait_dead(daemon, Duration::from_secs(15));
        bg.wait_state(&id, "lost", Duration::from_secs(20));
    }
}

#[test]
fn the_sweep_ends_a_session_the_command_made_when_supervisor_and_keeper_died_at_once() {
    // Without a pid namespace, the groups a command makes are recorded as they come. Should its
    // supervisor and its keeper both die (the keeper stopped first, so it cannot end anything),
    // the sweep ends each recorded group whose leader still provably leads it, and says that
    // leftovers are possible (the keeper's own group, and a group whose leader is gone, cannot
    // be proven the command's any more).
    let bg = Bg::new("sessions-both-killed");
    let mut start = bg.cmd("start");
    start.arg("--file").arg(&bg.policy).args(["--", "sh", "-c", &sessions_of_its_own()]);
    let out = run(in_mode(&mut start, Mode::LandlockOnly));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let id = stdout(&out).trim().to_owned();
    let session = read_pid(&bg.files_dir.join("session"));
    let daemon = read_pid(&bg.files_dir.join("daemon"));
    let until = Instant::now() + Duration::from_secs(10);
    while !bg.record_text(&id).contains(&format!("\"{session}:")) {
        assert!(Instant::now() < until, "the session's leader was never recorded:\n{}", bg.record_text(&id));
        std::thread::sleep(Duration::from_millis(20));
    }
    bg.kill_supervisor_and_keeper(&id);
    assert!(alive(session), "still there for the sweep to end");
    let s = bg.sweep(None);
    let lost = s["lost"].as_array().unwrap();
    assert_eq!(lost.len(), 1, "{s}");
    assert_eq!(lost[0]["leftovers_possible"], true, "{s}");
    wait_dead(session, Duration::from_secs(15));
    // The daemon's session lost its leader: nothing proves it the command's. It is ended here
    // by the test, as the record warns.
    // SAFETY: kills a process this test's command started.
    unsafe { libc::kill(daemon, libc::SIGKILL) };
}

#[test]
fn the_own_world_ends_with_its_keeper_when_supervisor_and_keeper_died_at_once() {
    // In the call's own world the keeper's child is its pid namespace's pid 1, whose end ends
    // every process there. Its parent-death signal is the keeper's death: killed with its
    // supervisor (the keeper stopped first, so it ends nothing itself), no process of the
    // command is left, the sessions it made included, before any sweep (found in review: the
    // whole world lived on, and no sweep could prove its group).
    if !require(own_world_here(), "the call's own world (user namespaces)") {
        return;
    }
    let bg = Bg::new("own-world-keeper-killed");
    let mut start = bg.cmd("start");
    start.arg("--file").arg(&bg.policy).args(["--", "sh", "-c", &sessions_of_its_own()]);
    let out = run(in_mode(&mut start, Mode::OwnWorld));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let id = stdout(&out).trim().to_owned();
    let session = read_pid(&bg.files_dir.join("session"));
    let daemon = read_pid(&bg.files_dir.join("daemon"));
    assert!(alive(session) && alive(daemon), "{session} {daemon}");
    bg.kill_supervisor_and_keeper(&id);
    wait_dead(session, Duration::from_secs(5));
    wait_dead(daemon, Duration::from_secs(5));
}

#[test]
fn a_background_commands_denials_are_recorded_and_shown() {
    // What the sandbox refused a background command is kept in its record, as a run call's
    // report has it: known (a held setpgid in the Landlock-only mode) and inferred (the
    // command's own error lines, checked against the grants), also from output long past the
    // end the message tells.
    for mode in modes() {
        let bg = Bg::new("bg-denials");
        let outside = Scratch::new_in(std::path::Path::new("/var/tmp"), "bg-denials-outside");
        std::fs::write(outside.join("f"), "x").unwrap();
        let script = format!(
            "cat {o}/f; i=0; while [ $i -lt 300 ]; do echo line $i; i=$((i+1)); done; \
             echo x > ~/notes.txt; python3 -c 'import os; os.setpgid(0, 0)' 2>/dev/null; true",
            o = outside.path.display()
        );
        let mut start = bg.cmd("start");
        start.arg("--file").arg(&bg.policy).args(["--", "sh", "-c", &script]);
        let out = run(in_mode(&mut start, mode));
        assert_eq!(out.status.code(), Some(0), "{mode:?}: {}", stderr(&out));
        let id = stdout(&out).trim().to_owned();
        let record = bg.wait_state(&id, "exited", Duration::from_secs(20));
        let denials = record["denials"].as_array().unwrap_or_else(|| panic!("{record}"));
        let find = |target: &str| denials.iter().find(|d| d["target"] == target);
        let read =
            find(&format!("{}/f", outside.path.display())).unwrap_or_else(|| panic!("{mode:?}: {record}"));
        assert_eq!((read["access"].as_str(), read["cause"].as_str()), (Some("read"), Some("outside_grants")));
        assert_eq!(read["inferred"], true);
        let home = bg.home.display();
        let write = find(&format!("{home}/notes.txt")).unwrap_or_else(|| panic!("{mode:?}: {record}"));
        // The home is never offered for one file in it: no fix, and why says so.
        assert!(write["fix"].is_null(), "{write}");
        assert!(write["why"].as_str().unwrap().contains("never grants"), "{write}");
        // A group of its own is no refusal in either mode.
        assert!(find("setpgid").is_none(), "{mode:?}: {record}");
        // `read --json` shows them too; without --json they come on standard error.
        let out = run(bg.cmd("read").arg(&id).arg("--json"));
        let answer = one_json_object(&out);
        assert_eq!(answer["denials"], record["denials"], "{answer}");
        let out = run(bg.cmd("read").arg(&id));
        assert!(stderr(&out).contains("denied: read"), "{}", stderr(&out));
    }
}
