//! Every JSON output, produced for real, checked against its JSON Schema in `schemas/`.
//!
//! The schemas are strict (`additionalProperties: false`, every field required unless it is
//! really optional), so a field added to or removed from an output without the schema changing
//! fails here; and every field a schema names must be defined in the README (in backquotes), so
//! the schemas and the README's field tables cannot drift apart silently.
//!
//! Requires Python's `jsonschema` (Debian: `python3-jsonschema`; `.ci/run` installs it): each
//! output is validated by `jsonschema.Draft202012Validator`. Outside CI a machine without it
//! skips loudly; in CI it fails.
//!
//! Tests marked "planned shape" check the `denials` entries with their `cause` field, and the
//! `denials` of background records: they pass once that change is in the binaries.

mod common;
use common::background::{Bg, TestBridge, one_json_object};
use common::*;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// Every schema in `schemas/`; each is used by a test below.
const SCHEMAS: &[&str] = &[
    "bridge-message.schema.json",
    "check.schema.json",
    "commands.schema.json",
    "file-answer.schema.json",
    "flags.schema.json",
    "link-run-list.schema.json",
    "link-run-read.schema.json",
    "link-run-start.schema.json",
    "link-run-stop.schema.json",
    "link-run-sweep.schema.json",
    "run-report.schema.json",
    "status.schema.json",
];

fn schemas_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas")
}

/// Validates each `(label, JSON text)` against `schema` with Python's jsonschema; reads
/// `{"schema": path, "outputs": [[label, text], …]}` on standard input, says every mismatch.
const VALIDATE: &str = r#"
import json, sys
import jsonschema
job = json.load(sys.stdin)
schema = json.load(open(job["schema"]))
jsonschema.Draft202012Validator.check_schema(schema)
validator = jsonschema.Draft202012Validator(schema)
short = lambda m: m if len(m) < 300 else m[:300] + " …"
where = lambda e: "/".join(map(str, e.absolute_path)) or "(top)"
failed = 0
for label, text in job["outputs"]:
    try:
        output = json.loads(text)
    except ValueError as e:
        print(f"{label}: not JSON ({e}): {text!r}")
        failed += 1
        continue
    errors = list(validator.iter_errors(output))
    if errors:
        failed += 1
        print(f"{label}: does not match {job['schema']}")
        # Each mismatch, down to the leaves; of oneOf's branches, the nearest (fewest leaves).
        def leaves_of(e):
            if not e.context:
                return [e]
            branches = {}
            for c in e.context:
                branches.setdefault(c.relative_schema_path[0], []).extend(leaves_of(c))
            return min(branches.values(), key=len)
        leaves = [leaf for e in errors for leaf in leaves_of(e)]
        for e in sorted(leaves, key=lambda e: [str(p) for p in e.absolute_path])[:16]:
            print(f"  at {where(e)}: {short(e.message)}")
        print(f"  the output: {short(text)}")
sys.exit(1 if failed else 0)
"#;

/// A Python with jsonschema: the one on PATH, else the system's (which `.ci/run` gives it).
fn python() -> Option<&'static str> {
    static FOUND: std::sync::OnceLock<Option<&'static str>> = std::sync::OnceLock::new();
    *FOUND.get_or_init(|| {
        ["python3", "/usr/bin/python3"].into_iter().find(|python| {
            Command::new(python)
                .args(["-c", "import jsonschema"])
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
    })
}

/// Whether Python's jsonschema is here (required in CI).
fn have_jsonschema() -> bool {
    require(python().is_some(), "Python's jsonschema (Debian: python3-jsonschema)")
}

/// Checks each output against `schema` (a file name in `schemas/`); fails with the validator's
/// messages for every output that does not match.
fn validate(schema: &str, outputs: &[(String, String)]) {
    assert!(SCHEMAS.contains(&schema), "{schema} is not in SCHEMAS");
    assert!(!outputs.is_empty(), "nothing to validate against {schema}");
    let job = serde_json::json!({
        "schema": schemas_dir().join(schema),
        "outputs": outputs.iter().map(|(l, t)| [l, t]).collect::<Vec<_>>(),
    });
    let mut child = Command::new(python().expect("a Python with jsonschema"))
        .args(["-c", VALIDATE])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    child.stdin.take().unwrap().write_all(job.to_string().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "against {schema}:\n{}{}", stdout(&out), stderr(&out));
}

/// Standard output as exactly one line: the one JSON object a `--json` output is.
fn one_line(label: &str, out: &Output) -> (String, String) {
    let text = stdout(out);
    assert_eq!(text.lines().count(), 1, "{label}: one line of JSON: {text:?}\nstderr: {}", stderr(out));
    (label.to_owned(), text.trim_end().to_owned())
}

fn labelled(label: &str, text: impl Into<String>) -> (String, String) {
    (label.to_owned(), text.into())
}

// ---- the schemas themselves ------------------------------------------------------------------

/// Every object schema's property names, recursively.
fn property_names(v: &serde_json::Value, names: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(map) => {
            if let Some(serde_json::Value::Object(props)) = map.get("properties") {
                names.extend(props.keys().cloned());
            }
            map.values().for_each(|x| property_names(x, names));
        }
        serde_json::Value::Array(items) => items.iter().for_each(|x| property_names(x, names)),
        _ => {}
    }
}

/// Every object schema with properties is closed (`additionalProperties: false`) and requires
/// only properties it has.
fn assert_closed(file: &str, at: &str, v: &serde_json::Value) {
    match v {
        serde_json::Value::Object(map) => {
            if let Some(serde_json::Value::Object(props)) = map.get("properties") {
                // A condition or a dependent schema only adds to an object that is closed.
                let partial = ["/if", "/then", "/else", "/allOf", "/dependentSchemas"];
                if !partial.iter().any(|p| at.contains(p)) {
                    assert_eq!(
                        map.get("additionalProperties"),
                        Some(&serde_json::Value::Bool(false)),
                        "{file}: the object at {at} is open"
                    );
                    for name in map.get("required").and_then(|r| r.as_array()).into_iter().flatten() {
                        assert!(props.contains_key(name.as_str().unwrap()), "{file}: {at} requires {name}");
                    }
                }
            }
            for (k, x) in map {
                assert_closed(file, &format!("{at}/{k}"), x);
            }
        }
        serde_json::Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                assert_closed(file, &format!("{at}/{i}"), x);
            }
        }
        _ => {}
    }
}

#[test]
fn every_schema_is_closed_checked_and_defined_in_the_readme() {
    let mut found: Vec<String> = std::fs::read_dir(schemas_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    found.sort();
    assert_eq!(found, SCHEMAS, "each schema in schemas/ is listed in SCHEMAS and used here");
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    // The words of the README's code spans (`{size, mtime_ns}`, `cwd_reason`): where fields are named.
    let in_code: std::collections::HashSet<&str> = readme
        .split('`')
        .skip(1)
        .step_by(2)
        .flat_map(|span| span.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')))
        .filter(|w| !w.is_empty())
        .collect();
    for file in SCHEMAS {
        let text = std::fs::read_to_string(schemas_dir().join(file)).unwrap();
        let schema: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema", "{file}");
        assert_closed(file, "", &schema);
        let named = match file.strip_prefix("link-run-") {
            Some(_) => "schemas/link-run-*.schema.json".to_owned(),
            None => format!("schemas/{file}"),
        };
        assert!(readme.contains(&named), "the README names {named}");
        let mut names = Vec::new();
        property_names(&schema, &mut names);
        for name in names {
            assert!(in_code.contains(name.as_str()), "{file}: the field `{name}` is not in the README");
        }
    }
    if have_jsonschema() {
        let check = "import json, sys, jsonschema\nfor f in sys.argv[1:]:\n    jsonschema.Draft202012Validator.check_schema(json.load(open(f)))";
        let out = run(Command::new(python().unwrap())
            .args(["-c", check])
            .args(SCHEMAS.iter().map(|f| schemas_dir().join(f))));
        assert!(out.status.success(), "{}", stderr(&out));
    }
}

// ---- lnk sandbox run ---------------------------------------------------------------------------

const POLICY: &str = r#"commands = ["sh", "cat", "sleep", "python3", "curl"]
[files]
read = ["~"]
write = ["~/Link/Files"]
[tool.run]
timeout = 30
"#;

#[test]
fn run_reports_match_the_schema() {
    if !have_jsonschema() {
        return;
    }
    let agent = Agent::new("schema-run", POLICY);
    let mut outputs = vec![
        one_line("a program that exits", &run(&mut agent.command(&[], &["sh", "-c", "echo hi; exit 3"]))),
        one_line(
            "a program that times out",
            &run(&mut Agent::new("schema-run-timeout", &POLICY.replace("timeout = 30", "timeout = 1"))
                .command(&[], &["sleep", "5"])),
        ),
        one_line(
            "a start outside every grant (in the own world, maybe beneath the host's /tmp)",
            &run(agent.command(&[], &["sh", "-c", "pwd"]).current_dir(&agent.dir.path)),
        ),
        one_line(
            "a usage error",
            &run(lnk().args(["sandbox", "run", "--report", "json", "--tol", "x", "--", "true"])),
        ),
        one_line(
            "an invalid sandbox file",
            &run(lnk()
                .args(["sandbox", "run", "--report", "json", "--file"])
                .arg(agent.dir.file("bad.toml", "[fils]\n"))
                .args(["--", "true"])),
        ),
        one_line(
            "no HOME",
            &run(lnk().env_remove("HOME").args(["sandbox", "run", "--report", "json", "--", "true"])),
        ),
    ];
    let r: serde_json::Value = serde_json::from_str(&outputs[1].1).unwrap();
    assert_eq!(r["outcome"], "timed_out", "{r}");
    // The Landlock-only mode (a test build forces it).
    let mut landlock_only = agent.command(&[], &["sh", "-c", "echo hi"]);
    outputs.push(one_line("the Landlock-only mode", &run(in_mode(&mut landlock_only, Mode::LandlockOnly))));
    // With [internet]: a host the proxy refuses.
    if require(Path::new("/usr/bin/curl").exists(), "curl") {
        let net = Agent::new(
            "schema-run-internet",
            "commands = [\"curl\"]\n[internet]\nhosts = [\"allowed.test\"]\n",
        );
        let out = run(&mut net.command(&[], &["curl", "-sS", "-m", "10", "http://refused.test/"]));
        let (label, text) = one_line("a call with [internet]", &out);
        let r: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(r["internet"]["refused"], 1, "{r}");
        outputs.push((label, text));
    }
    validate("run-report.schema.json", &outputs);
}

/// Planned shape: each denial has `cause`.
#[test]
fn run_reports_with_denials_match_the_schema() {
    if !have_jsonschema() {
        return;
    }
    let agent = Agent::new("schema-denials", POLICY);
    let outside = agent.elsewhere.file("outside.txt", "not granted\n");
    let mut outputs = vec![
        one_line("a program not listed", &run(&mut agent.command(&[], &["true"]))),
        one_line(
            "a read outside the grants",
            &run(&mut agent.command(&[], &["cat", outside.to_str().unwrap()])),
        ),
    ];
    // What the helper itself refused in the Landlock-only mode: a metadata call outside the
    // write grants, a session of its own.
    let script = format!(
        "import os\nfor f in (lambda: os.chmod({outside:?}, 0o600), lambda: os.setpgid(0, 0)):\n    try: f()\n    except OSError: pass\n",
        outside = outside.to_str().unwrap()
    );
    if let Some(r) = agent.landlock_only_at(&agent.home, &[], &[], &["python3", "-c", &script]) {
        outputs.push(labelled("what the helper refused (Landlock-only)", r.raw.trim_end()));
    }
    for (label, text) in &outputs {
        let r: serde_json::Value = serde_json::from_str(text).unwrap();
        assert!(!r["denials"].as_array().unwrap().is_empty(), "{label}: a denial is named: {r}");
    }
    validate("run-report.schema.json", &outputs);
}

// ---- lnk sandbox status, check, flags, commands --------------------------------------------------

#[test]
fn status_check_flags_and_commands_match_their_schemas() {
    if !have_jsonschema() {
        return;
    }
    let agent = Agent::new(
        "schema-sandbox",
        "commands = [\"sh\", \"no-such-program-lnk\"]\n[files]\nread = [\"~\"]\n",
    );
    std::fs::create_dir_all(agent.home.join(".ssh")).unwrap();
    let bad = agent.dir.file("bad.toml", "[fils]\nread = 1\n");
    let any = agent.dir.file("any.toml", "commands = [\"*\"]\n");
    let sandbox = |args: &[&std::ffi::OsStr]| {
        let mut c = lnk();
        c.env("HOME", &agent.home).arg("sandbox").args(args);
        run(&mut c)
    };
    let os = |s: &'static str| std::ffi::OsStr::new(s);
    let (policy, bad, any) = (agent.policy.as_os_str(), bad.as_os_str(), any.as_os_str());

    validate(
        "status.schema.json",
        &[
            one_line("status", &sandbox(&[os("status"), os("--json")])),
            one_line("status, a usage error", &sandbox(&[os("status"), os("--json"), os("extra")])),
        ],
    );
    let check_ok = sandbox(&[os("check"), policy, os("--json")]);
    let warned: serde_json::Value = serde_json::from_str(&stdout(&check_ok)).unwrap();
    assert!(!warned["diagnostics"].as_array().unwrap().is_empty(), "a warning for ~/.ssh: {warned}");
    validate(
        "check.schema.json",
        &[
            one_line("check, valid with a warning", &check_ok),
            one_line("check, invalid", &sandbox(&[os("check"), bad, os("--json")])),
            one_line(
                "check, unreadable",
                &sandbox(&[os("check"), os("/nonexistent/lnk.toml"), os("--json")]),
            ),
            one_line("check, no FILE", &sandbox(&[os("check"), os("--json")])),
        ],
    );
    let no_home = run(lnk().env_remove("HOME").args(["sandbox", "flags", "--json"]));
    validate(
        "flags.schema.json",
        &[
            one_line("flags", &sandbox(&[os("flags"), policy, os("--json")])),
            one_line(
                "flags, the default, the file tool",
                &sandbox(&[os("flags"), os("--tool"), os("file"), os("--json")]),
            ),
            one_line("flags, invalid", &sandbox(&[os("flags"), bad, os("--json")])),
            one_line("flags, a bad tool", &sandbox(&[os("flags"), os("--tool"), os("shell"), os("--json")])),
            one_line("flags, no HOME", &no_home),
        ],
    );
    validate(
        "commands.schema.json",
        &[
            one_line("commands", &sandbox(&[os("commands"), policy, os("--json")])),
            one_line("commands, any", &sandbox(&[os("commands"), any, os("--json")])),
            one_line("commands, invalid", &sandbox(&[os("commands"), bad, os("--json")])),
            one_line("commands, a usage error", &sandbox(&[os("commands"), policy, policy, os("--json")])),
        ],
    );
}

// ---- lnk file ----------------------------------------------------------------------------------

#[test]
fn file_session_answers_match_the_schema() {
    if !have_jsonschema() {
        return;
    }
    let agent = Agent::new("schema-file", "[files]\nread = [\"~\"]\nwrite = [\"~/Link/Files/out\"]\n");
    let files = agent.home.join("Link/Files");
    std::fs::create_dir_all(files.join("out/full")).unwrap();
    std::fs::write(files.join("out/full/x"), "x").unwrap();
    std::fs::write(files.join("bin.dat"), b"\0\x01\x02").unwrap();
    std::fs::write(files.join("long.txt"), "TODO 1\nTODO 2\nTODO 3\n").unwrap();
    std::os::unix::fs::symlink("/etc", files.join("link")).unwrap();
    // A name that is not UTF-8: listed and found in the escaped form, with `escaped: true`.
    let odd = <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(b"odd\xff");
    std::fs::write(files.join(odd), "TODO odd\n").unwrap();
    let requests = [
        r#"{"id":1,"op":"write","path":"out/a.md","content":"one\ntwo\ntwo\n"}"#,
        r#"{"id":2,"op":"read","path":"out/a.md"}"#,
        r#"{"id":3,"op":"read","path":"long.txt","limit":1}"#,
        r#"{"id":4,"op":"read","path":"long.txt","byte_offset":0,"byte_length":4}"#,
        r#"{"id":5,"op":"read","path":"bin.dat"}"#,
        r#"{"id":6,"op":"read","path":"bin.dat","byte_offset":0}"#,
        r#"{"id":7,"op":"edit","path":"out/a.md","old":"one","new":"1"}"#,
        r#"{"id":8,"op":"edit","path":"out/a.md","old":"two","new":"2"}"#,
        r#"{"id":9,"op":"list","path":"."}"#,
        r#"{"id":10,"op":"list","path":".","limit":1}"#,
        r#"{"id":11,"op":"stat","path":"link"}"#,
        r#"{"id":12,"op":"search","path":".","query":"TODO"}"#,
        r#"{"id":13,"op":"search","path":".","query":"TODO","limit":1}"#,
        r#"{"id":14,"op":"mkdir","path":"out/x/y"}"#,
        r#"{"id":15,"op":"move","from":"out/a.md","to":"out/b.md"}"#,
        r#"{"id":16,"op":"move","from":"out/b.md","to":"out/full"}"#,
        r#"{"id":17,"op":"remove","path":"out/full"}"#,
        r#"{"id":18,"op":"remove","path":"out/x","recursive":true}"#,
        r#"{"id":19,"op":"write","path":"out/b.md","content":"z","expect":{"size":1}}"#,
        r#"{"id":20,"op":"write","path":"top.md","content":"z"}"#,
        r#"{"id":21,"op":"read","path":"../x"}"#,
        r#"{"id":22,"op":"read","path":"missing.md"}"#,
        r#"{"id":23,"op":"read","path":"link/hostname"}"#,
        r#"{"id":24,"op":"read","path":"out"}"#,
        r#"{"id":"s","op":"list","path":"long.txt"}"#,
        r#"{"id":25,"op":"fly"}"#,
        r#"{"id":{"turn":3},"op":"stat","path":"."}"#,
        r#"{"id":[1], "op":"#,
        "not json at all",
        "",
        r#"{"op":"stat","path":"."}"#,
        r#"{"id":26,"op":"read","path":"odd\\xff","escaped":true}"#,
    ];
    let mut input = requests.join("\n");
    input.push('\n');
    let mut cmd =
        agent.command(&["--tool", "file"], &["lnk", "file", "--files-dir", files.to_str().unwrap()]);
    let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    // The session's answers own standard output; the launcher's report is on standard error.
    let errors = stderr(&out);
    let report = errors.lines().last().expect("the report");
    assert_eq!(
        lines.len(),
        requests.len() - 1,
        "an answer per line but the blank one:\n{text}{}",
        stderr(&out)
    );
    let answers: Vec<serde_json::Value> = lines.iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    let kinds: Vec<&str> = answers.iter().filter_map(|a| a["error"]["kind"].as_str()).collect();
    for kind in ["bad_request", "bad_path", "denied", "not_found", "symlink", "not_a_file", "not_a_folder"] {
        assert!(kinds.contains(&kind), "an error of kind {kind} among {kinds:?}:\n{text}");
    }
    for kind in ["exists", "not_unique", "not_empty", "changed"] {
        assert!(kinds.contains(&kind), "an error of kind {kind} among {kinds:?}:\n{text}");
    }
    assert!(answers.iter().any(|a| a.get("raw_id").is_some()), "a raw id:\n{text}");
    for escaped in [r#"{"name":"odd\\xff","escaped":true,"#, r#"{"path":"odd\\xff","escaped":true,"#] {
        assert!(text.contains(escaped), "{escaped} among the answers:\n{text}");
    }
    assert!(text.contains(r#""text":"TODO odd\n""#), "the escaped name reads its file:\n{text}");
    let outputs: Vec<(String, String)> =
        lines.iter().enumerate().map(|(i, l)| labelled(&format!("answer {}", i + 1), *l)).collect();
    validate("file-answer.schema.json", &outputs);
    validate("run-report.schema.json", &[labelled("the file session's report", report)]);
}

// ---- lnk-link-run ------------------------------------------------------------------------------

/// One `lnk-link-run --json` answer, as printed.
fn json_line(label: &str, out: &Output) -> (String, String) {
    one_json_object(out);
    one_line(label, out)
}

#[test]
fn link_run_answers_match_their_schemas() {
    if !have_jsonschema() {
        return;
    }
    let bg = Bg::new("schema-link-run");
    let bridge = TestBridge::new(&bg.dir);
    let started = bg.start_with(
        &["--json", "--bridge", bridge.path.to_str().unwrap(), "--conversation", "conv-1", "--hop", "1"],
        &["sh", "-c", "echo hello; exit 3"],
    );
    let id = one_json_object(&started)["id"].as_str().unwrap().to_owned();
    bg.wait_state(&id, "exited", Duration::from_secs(30));
    validate(
        "link-run-start.schema.json",
        &[
            json_line("start", &started),
            json_line("start, not allowed", &bg.start_with(&["--json"], &["true"])),
            json_line("start, the hop cap", &bg.start_with(&["--json", "--hop", "3"], &["sh", "-c", "true"])),
            json_line("start, a usage error", &run(bg.cmd("start").args(["--json", "--bogus", "--", "sh"]))),
            json_line(
                "start, an invalid sandbox file",
                &run(bg
                    .cmd("start")
                    .arg("--json")
                    .arg("--file")
                    .arg(bg.dir.file("bad.toml", "commands = 3\n"))
                    .args(["--", "sh"])),
            ),
            json_line("an unknown verb", &run(link_run().args(["strat", "--json"]))),
        ],
    );
    validate(
        "link-run-read.schema.json",
        &[
            json_line("read", &run(bg.cmd("read").arg(&id).arg("--json"))),
            json_line("read, the end", &run(bg.cmd("read").arg(&id).args(["--end", "3", "--json"]))),
            json_line("read, an unknown id", &run(bg.cmd("read").args(["r0123", "--json"]))),
            json_line("read, not an id", &run(bg.cmd("read").args(["../x", "--json"]))),
        ],
    );
    validate("link-run-sweep.schema.json", &[labelled("sweep", bg.sweep(Some(&bridge.path)).to_string())]);
    let told = bridge.wait_for(1, Duration::from_secs(20));
    assert_eq!(told.len(), 1, "{told:?}");
    validate("bridge-message.schema.json", &[labelled("the bridge message", told[0].clone())]);
}

/// Planned shape: background records carry `denials`.
#[test]
fn link_run_records_match_their_schemas() {
    if !have_jsonschema() {
        return;
    }
    let bg = Bg::new("schema-records");
    let outside = Scratch::new_in(Path::new("/var/tmp"), "schema-records-outside");
    let secret = outside.file("outside.txt", "not granted\n");
    let ended = bg.start(&["cat", secret.to_str().unwrap()]);
    let running = bg.start(&["sleep", "60"]);
    bg.wait_state(&ended, "exited", Duration::from_secs(30));
    bg.wait_state(&running, "running", Duration::from_secs(30));
    let list = run(bg.cmd("list").arg("--json"));
    let stop = run(bg.cmd("stop").arg(&running).arg("--json"));
    let again = bg.start(&["sleep", "60"]);
    bg.wait_state(&again, "running", Duration::from_secs(30));
    let stop_all = run(bg.cmd("stop").args(["--all", "--json"]));
    validate("link-run-list.schema.json", &[json_line("list", &list)]);
    validate(
        "link-run-stop.schema.json",
        &[
            json_line("stop", &stop),
            json_line("stop --all", &stop_all),
            json_line("stop, an unknown id", &run(bg.cmd("stop").args(["r0123", "--json"]))),
        ],
    );
}
