//! `lnk-link-run`'s outputs (issue 12): a record stays readable whatever the command prints, the
//! message's `output_end` is exactly the end the README promises, an id is never a path, each
//! refusal has its own exit code and reason, and `--json` is always one object of schema 1.

mod common;
use common::background::*;
use common::*;

use std::process::Output;
use std::time::Duration;

/// The reader's limit on a record (`records::format::MAX_RECORD_BYTES`).
const MAX_RECORD_BYTES: u64 = 1 << 20;
/// The bound on a record's `output_end` (`records::format::OUTPUT_END_MAX_BYTES`).
const OUTPUT_END_MAX_BYTES: usize = 64 * 1024;

fn started(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(0), "start failed: {}", stderr(out));
    stdout(out).trim().to_owned()
}

/// `--json`'s answer to a failure: exactly one object saying ok false, the reason, the exit code.
fn failure(out: &Output, code: i32, reason: &str) -> serde_json::Value {
    let v = one_json_object(out);
    assert_eq!(out.status.code(), Some(code), "{v}\n{}", stderr(out));
    assert_eq!(v["ok"], false, "{v}");
    assert_eq!(v["reason"], reason, "{v}");
    assert_eq!(v["exit_code"], code, "{v}");
    assert!(!v["error"].as_str().unwrap().is_empty(), "{v}");
    v
}

#[test]
fn a_record_stays_readable_when_the_output_end_would_be_huge() {
    // Half of a million-character output is 500,000 CJK characters, 1.5 MB: more than a record
    // may be. The record keeps a bounded end, and the exit status survives.
    let bg = Bg::with_policy("huge-end", &POLICY.replace("output = 200", "output = 1000000"));
    let bridge = TestBridge::new(&bg.dir);
    let id = started(&bg.start_with(
        &["--bridge", bridge.path.to_str().unwrap()],
        &["python3", "-c", "import sys; sys.stdout.buffer.write(('漢' * 1_000_000).encode()); sys.exit(7)"],
    ));
    let r = bg.wait_state(&id, "exited", Duration::from_secs(60));
    assert_eq!(r["exit_code"], 7, "{r}");
    assert_eq!(r["output_bytes"], 3_000_000, "{r}");
    let size = std::fs::metadata(bg.agent_dir.join(format!("runs/{id}.toml"))).unwrap().len();
    assert!(size <= MAX_RECORD_BYTES, "the record is {size} bytes");

    let lines = bridge.wait_for(1, Duration::from_secs(20));
    let m: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!(m["exit_code"], 7, "{}", &lines[0][..200]);
    let end = m["output_end"].as_str().unwrap();
    assert!(end.len() <= OUTPUT_END_MAX_BYTES && end.len() > OUTPUT_END_MAX_BYTES - 3, "{}", end.len());
    assert!(end.chars().all(|c| c == '漢'), "cut at a character boundary");

    let read = run(bg.cmd("read").arg(&id).args(["--end", "6", "--json"]));
    assert_eq!(read.status.code(), Some(0), "{}", stderr(&read));
    assert_eq!(one_json_object(&read)["text"], "漢漢");
    let s = bg.sweep(None);
    assert_eq!(s["corrupt"], serde_json::json!([]), "{s}");
    assert_eq!(bg.record(&id)["state"], "exited");
}

#[test]
fn a_start_whose_record_would_be_too_large_is_refused() {
    let bg = Bg::new("huge-args");
    let arg = "x".repeat(100_000);
    let out = bg.start_with(&["--json"], &["sh", "-c", "true", &arg, &arg, &arg, &arg, &arg, &arg]);
    let v = failure(&out, 2, "usage");
    assert!(v["error"].as_str().unwrap().contains("pass long data in a file"), "{v}");
    assert_eq!(bg.list(), serde_json::json!([]), "nothing was recorded");
    assert_eq!(std::fs::read_dir(bg.agent_dir.join("runs")).unwrap().count(), 1, "only start.lock");
}

#[test]
fn the_message_tells_exactly_the_last_half_of_the_output() {
    // The test policy's `[tool.run] output` is 200: the message ends with its last 100
    // characters, exactly, whatever their width and wherever the lines end.
    let bg = Bg::new("end-half");
    let bridge = TestBridge::new(&bg.dir);
    let text: String = (0..300).map(|i| format!("line {i} é漢😀\n")).collect();
    let id = started(&bg.start_with(
        &["--bridge", bridge.path.to_str().unwrap()],
        &["python3", "-c", "import sys; sys.stdout.buffer.write(sys.argv[1].encode())", &text],
    ));
    bg.wait_state(&id, "exited", Duration::from_secs(30));
    let lines = bridge.wait_for(1, Duration::from_secs(20));
    let m: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
    let chars: Vec<char> = text.chars().collect();
    let expected: String = chars[chars.len() - 100..].iter().collect();
    assert_eq!(m["output_end"], expected.as_str());
}

#[test]
fn read_and_stop_take_only_a_record_id_never_a_path() {
    let bg = Bg::new("ids");
    let id = bg.start(&["sh", "-c", "echo mine"]);
    bg.wait_state(&id, "exited", Duration::from_secs(30));
    // A record-looking file beside `runs`, where `../x` would lead.
    let text = bg.record_text(&id);
    std::fs::write(bg.agent_dir.join("x.toml"), &text).unwrap();
    for bad in ["../x", "..", "", "/etc/passwd", &format!("{id}/"), &format!("../runs/{id}"), "R12", "r12\n"]
    {
        for verb in ["read", "stop"] {
            let out = run(bg.cmd(verb).arg(bad));
            assert_eq!(out.status.code(), Some(2), "{verb} {bad:?}: {}", stderr(&out));
            assert!(
                stderr(&out).contains("is not a background command id"),
                "{verb} {bad:?}: {}",
                stderr(&out)
            );
            assert!(stdout(&out).is_empty(), "{verb} {bad:?}: {}", stdout(&out));
            failure(&run(bg.cmd(verb).arg(bad).arg("--json")), 2, "usage");
        }
    }
    // A well-formed id with no record: not found, like a program that is not there.
    for verb in ["read", "stop"] {
        let out = run(bg.cmd(verb).arg("r0123456789abcdef").arg("--json"));
        let v = failure(&out, 127, "unknown_id");
        assert!(v["error"].as_str().unwrap().contains("lnk-link-run list"), "{v}");
    }
    assert_eq!(stdout(&run(bg.cmd("read").arg(&id))), "mine\n");
}

#[test]
fn every_refusal_has_its_own_exit_code_and_reason() {
    let bg = Bg::new("codes");
    let start = |extra: &[&str], program: &[&str]| {
        let mut all = vec!["--json"];
        all.extend_from_slice(extra);
        bg.start_with(&all, program)
    };
    failure(&start(&[], &["perl", "-e", "1"]), 126, "not_allowed");
    failure(&start(&["--hop", "3"], &["sh", "-c", "true"]), 77, "hop_cap");
    let any = Bg::with_policy("codes-any", "commands = [\"*\"]\n");
    let out = any.start_with(&["--json"], &["no-such-program-lnk"]);
    failure(&out, 127, "program_not_found");
    for _ in 0..4 {
        bg.start(&["sleep", "30"]);
    }
    let v = failure(&start(&[], &["sleep", "30"]), 75, "limit");
    assert!(v["error"].as_str().unwrap().contains("try again"), "{v}");
    // Without --json the codes are the same, and nothing is printed on stdout.
    let out = bg.start_with(&[], &["sleep", "30"]);
    assert_eq!(out.status.code(), Some(75));
    assert!(stdout(&out).is_empty() && stderr(&out).contains("at most 4"), "{}", stderr(&out));
}

#[test]
fn json_is_always_one_object_of_schema_1() {
    let bg = Bg::new("json");
    // Usage errors and refusals, for every verb: one object on stdout, the text on stderr.
    let usage = [
        bg.cmd("start").args(["--json", "--bogus", "--", "sh"]).output().unwrap(),
        bg.cmd("start").arg("--json").output().unwrap(),
        bg.cmd("list").args(["--json", "--agent-dir"]).output().unwrap(),
        bg.cmd("read").arg("--json").output().unwrap(),
        bg.cmd("read").args(["r12", "--json", "--end", "x"]).output().unwrap(),
        bg.cmd("stop").arg("--json").output().unwrap(),
        bg.cmd("sweep").args(["--json", "extra-word"]).output().unwrap(),
        link_run().args(["--json"]).output().unwrap(),
        link_run().args(["bogus", "--json"]).output().unwrap(),
    ];
    for out in &usage {
        failure(out, 2, "usage");
        // The same failure in one line on stderr, with the help to read; not the usage text.
        let err = stderr(out);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("lnk-link-run: ") && err.contains(" --help)"), "{err}");
        let v = failure(out, 2, "usage");
        assert!(v["help"].as_str().is_some_and(|h| h.starts_with("lnk-link-run")), "{v}");
    }
    let elsewhere = bg.dir.join("no-such-folder");
    for verb in ["list", "sweep", "stop", "read", "start"] {
        let mut c = link_run();
        c.env("HOME", &bg.home).args([verb, "--json", "--agent-dir"]).arg(&elsewhere);
        c.arg("--files-dir").arg(&bg.files_dir);
        match verb {
            "stop" | "read" => c.arg("r12"),
            "start" => c.args(["--file"]).arg(&bg.policy).args(["--", "sh", "-c", "true"]),
            _ => &mut c,
        };
        failure(&run(&mut c), 125, "failed");
    }

    // Every answer, successes too, carries the schema.
    let bridge = TestBridge::new(&bg.dir);
    let out = bg.start_with(&["--json", "--bridge", bridge.path.to_str().unwrap()], &["sh", "-c", "echo hi"]);
    let started = one_json_object(&out);
    assert_eq!(started["ok"], true, "{started}");
    let id = started["id"].as_str().unwrap().to_owned();
    let r = bg.wait_state(&id, "exited", Duration::from_secs(30));
    assert!(r["ended_ms"].as_u64().unwrap() >= r["started_ms"].as_u64().unwrap(), "{r}");
    let read = one_json_object(&run(bg.cmd("read").arg(&id).arg("--json")));
    assert_eq!((&read["ok"], &read["text"]), (&serde_json::json!(true), &serde_json::json!("hi\n")));
    let stopped = one_json_object(&run(bg.cmd("stop").arg(&id).arg("--json")));
    assert_eq!(stopped["stopped"][0]["state"], "exited", "{stopped}");
    assert_eq!(bg.sweep(None)["ok"], true);
    let running = bg.start(&["sleep", "30"]);
    assert_eq!(bg.record(&running)["ended_ms"], serde_json::Value::Null);

    // `stop --all` with one record it must leave alone: still one object, saying which.
    let runs = bg.agent_dir.join("runs");
    std::fs::hard_link(runs.join(format!("{id}.toml")), bg.dir.join("second-link")).unwrap();
    let out = run(bg.cmd("stop").args(["--all", "--json"]));
    let v = failure(&out, 125, "not_yours");
    assert_eq!(v["failed"][0]["id"], id.as_str(), "{v}");
    assert_eq!(v["failed"][0]["reason"], "not_yours", "{v}");
    let fields: Vec<&String> = v["failed"][0].as_object().unwrap().keys().collect();
    assert_eq!(fields, ["error", "exit_code", "id", "reason"], "an entry, not a whole answer: {v}");
    assert_eq!(v["stopped"][0]["id"], running.as_str(), "{v}");
    assert_eq!(v["stopped"][0]["state"], "lost", "{v}");
}

#[test]
fn a_start_with_an_invalid_sandbox_file_answers_with_its_diagnostics_and_records_nothing() {
    let bg = Bg::new("start-invalid-file");
    let bad = bg.dir.file("bad.toml", "commands = [\"sh\"]\n[files]\nread = [\"relative/path\"]\n");
    let out = run(bg.cmd("start").arg("--json").arg("--file").arg(&bad).args(["--", "sh", "-c", "true"]));
    let v = failure(&out, 125, "invalid_sandbox_file");
    assert_eq!(v["file"], bad.to_str().unwrap(), "{v}");
    let first = &v["diagnostics"][0];
    assert_eq!(
        (&first["line"], &first["severity"]),
        (&serde_json::json!(3), &serde_json::json!("error")),
        "{v}"
    );
    assert!(first["column"].as_u64().is_some_and(|c| c >= 8), "{v}");
    assert!(v["error"].as_str().unwrap().ends_with("1 error"), "{v}");
    // A person reads the rendered problem, pointing at the line, on standard error.
    assert!(stderr(&out).contains("bad.toml:3:"), "{}", stderr(&out));
    assert!(bg.list().as_array().unwrap().is_empty(), "nothing recorded: {}", bg.list());
}
