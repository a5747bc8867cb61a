//! The command lines of `lnk` and `lnk-link-run`: flags, help, usage errors, and what each
//! `lnk sandbox` verb prints.

mod common;
use common::*;

const POLICY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/policy");

fn lines(s: &str) -> Vec<&str> {
    s.lines().collect()
}

#[test]
fn flags_of_the_embedded_default_spell_out_every_grant() {
    let out = run(lnk().args(["sandbox", "flags"]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let l = lines(&text);
    assert_eq!(l[0], "--tool run");
    for expected in [
        "--command sh",
        "--command python3",
        "--command node",
        "--command git",
        "--command curl",
        "--command jq",
        "--command true",
        "--read /home/test-user",
        "--write /home/test-user/Link/Files",
        "--timeout 120",
        "--output 30000",
    ] {
        assert!(l.contains(&expected), "`{expected}` missing from:\n{text}");
    }
    assert!(!text.contains("--internet"), "the default has no internet:\n{text}");
}

#[test]
fn flags_for_the_file_tool_have_no_programs_and_internet_only_when_listed() {
    let every = format!("{POLICY}/every-key.toml");
    let text = stdout(&run(lnk().args(["sandbox", "flags", &every, "--tool", "file"])));
    assert_eq!(lines(&text)[0], "--tool file");
    assert!(!text.contains("--command"), "{text}");
    assert!(text.contains("--internet-host *.example.com\n"), "{text}");
    assert!(text.contains("--internet-tcp [2001:db8::5]:22\n"), "{text}");
    assert!(text.contains("--read /srv/datasets\n"), "{text}");

    let dir = Scratch::new("flags");
    let only_run = dir.file("s.toml", "commands = [\"*\"]\n[internet]\nhosts = [\"a.org\"]\n");
    let file_text = stdout(&run(lnk().args(["sandbox", "flags", "--tool", "file"]).arg(&only_run)));
    assert!(!file_text.contains("--internet"), "tools defaults to [\"run\"]:\n{file_text}");
    let run_text = stdout(&run(lnk().args(["sandbox", "flags"]).arg(&only_run)));
    assert!(
        run_text.contains("--any-command\n") && run_text.contains("--internet-host a.org\n"),
        "{run_text}"
    );
    assert!(run_text.contains("--per-minute 60\n"), "the default per_minute is explicit:\n{run_text}");
}

#[test]
fn locked_down_flags_grant_no_program_and_no_write() {
    let text = stdout(&run(lnk().args(["sandbox", "flags", &format!("{POLICY}/locked-down.toml")])));
    assert!(!text.contains("--command") && !text.contains("--any-command"), "{text}");
    assert!(!text.contains("--write"), "{text}");
    assert!(text.contains("--read /home/test-user/Link/Files\n"), "{text}");
}

#[test]
fn flags_list_the_system_secrets_as_root_and_only_then() {
    // As root `run` cuts /etc/shadow out of what every program reads; `flags` says so, so its
    // output read as the sandbox is the sandbox (and an ordinary user cannot read it anyway).
    let text = stdout(&run(lnk().args(["sandbox", "flags"])));
    let as_root = rustix::process::geteuid().is_root();
    assert_eq!(text.contains("--deny /etc/shadow\n"), as_root, "root: {as_root}:\n{text}");
}

#[test]
fn flags_list_the_secrets_this_home_has_and_the_files_own_deny_whole() {
    // A launch cuts the whole protected set by name; `flags` lists the holes present, so its
    // output reads as what is cut, and every `deny` of the file, present or not.
    let dir = Scratch::new("flags-home");
    let home = dir.join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    let file = dir.file("s.toml", "[files]\nread = [\"~\"]\ndeny = [\"~/not-yet\"]\n");
    let text = stdout(&run(lnk().args(["sandbox", "flags"]).arg(&file).env("HOME", &home)));
    let home = home.display();
    assert!(text.contains(&format!("--deny {home}/.ssh\n")), "{text}");
    assert!(text.contains(&format!("--deny {home}/not-yet\n")), "{text}");
    assert!(!text.contains(&format!("--deny {home}/.aws\n")), "an absent secret is not listed:\n{text}");
}

#[test]
fn flags_without_a_home_refuse_rather_than_guess() {
    let out = run(lnk().args(["sandbox", "flags"]).env_remove("HOME"));
    assert_eq!(out.status.code(), Some(125));
    assert!(stderr(&out).contains("set HOME"), "{}", stderr(&out));
    let out = run(lnk().args(["sandbox", "flags"]).env("HOME", "relative/home"));
    assert_eq!(out.status.code(), Some(125));
}

#[test]
fn an_invalid_file_makes_no_flags() {
    let dir = Scratch::new("noflags");
    let bad = dir.file("s.toml", "commands = [\"/bin/sh\"]\n");
    let out = run(lnk().args(["sandbox", "flags"]).arg(&bad));
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).is_empty());
    assert!(stderr(&out).contains(":1:13: error:"), "{}", stderr(&out));
}

#[test]
fn commands_lists_what_this_computer_has_and_lacks() {
    let dir = Scratch::new("commands");
    let file = dir.file("s.toml", "commands = [\"sh\", \"no-such-program-lnk\"]\n");
    let out = run(lnk().args(["sandbox", "commands"]).arg(&file));
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert!(text.lines().any(|l| l.starts_with("sh\t/")), "{text}");
    assert!(text.contains("not on this computer: no-such-program-lnk"), "{text}");

    let json = stdout(&run(lnk().args(["sandbox", "commands", "--json"]).arg(&file)));
    let start = "{\"schema\":1,\"outcome\":\"ok\",\"any\":false,\"offered\":[{\"name\":\"sh\",\"path\":\"/";
    assert!(json.starts_with(start), "{json}");
    assert!(json.trim_end().ends_with("\"missing\":[\"no-such-program-lnk\"]}"), "{json}");

    let any = dir.file("any.toml", "commands = [\"*\"]\n");
    assert!(stdout(&run(lnk().args(["sandbox", "commands"]).arg(&any))).starts_with("any program"));
    let none = format!("{POLICY}/locked-down.toml");
    assert!(stdout(&run(lnk().args(["sandbox", "commands", &none]))).starts_with("no programs: run is off"));
    // The embedded default offers at least `true`, which every system has.
    let default = stdout(&run(lnk().args(["sandbox", "commands"])));
    assert!(default.lines().any(|l| l.starts_with("true\t/")), "{default}");
}

#[test]
fn status_names_each_feature_and_guarantee() {
    let out = run(lnk().args(["sandbox", "status"]));
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    for feature in ["Landlock:", "seccomp filters:", "user namespaces:", "pidfd:", "openat2:", "Guarantees"] {
        assert!(text.contains(feature), "{feature} missing:\n{text}");
    }
    let json = stdout(&run(lnk().args(["sandbox", "status", "--json"])));
    assert!(json.starts_with("{\"schema\":1,\"outcome\":\"ok\",\"landlock_abi\":"), "{json}");
    assert!(json.contains("\"guarantees\":[{\"guarantee\":"), "{json}");
}

#[test]
fn usage_errors_exit_2_with_one_line_and_help_exits_0() {
    for (args, help) in [
        (&[][..], "lnk --help"),
        (&["nonsense"], "lnk --help"),
        (&["sandbox"], "lnk sandbox --help"),
        (&["sandbox", "frobnicate"], "lnk sandbox --help"),
        (&["sandbox", "check"], "lnk sandbox check --help"),
        (&["sandbox", "check", "a", "b"], "lnk sandbox check --help"),
        (&["sandbox", "check", "a", "--agent-dir", "rel"], "lnk sandbox check --help"),
        (&["sandbox", "flags", "--tool"], "lnk sandbox flags --help"),
        (&["sandbox", "flags", "--tool", "shell"], "lnk sandbox flags --help"),
        (&["sandbox", "flags", "--tol", "run"], "lnk sandbox flags --help"),
        (&["sandbox", "commands", "--jsn"], "lnk sandbox commands --help"),
        (&["sandbox", "status", "--json=yes"], "lnk sandbox status --help"),
        (&["sandbox", "status", "extra"], "lnk sandbox status --help"),
        (&["sandbox", "run", "--tol", "x", "--", "true"], "lnk sandbox run --help"),
        (&["sandbox", "run", "--read"], "lnk sandbox run --help"),
        (&["sandbox", "run", "--"], "lnk sandbox run --help"),
        // A flag that is not a list, given twice: which was meant is not lnk's to guess.
        (&["sandbox", "run", "--timeout", "5", "--timeout", "9", "--", "true"], "lnk sandbox run --help"),
        (&["sandbox", "run", "--file", "a", "--file", "b", "--", "true"], "lnk sandbox run --help"),
        (&["sandbox", "run", "--stdin", "--stdin", "--", "true"], "lnk sandbox run --help"),
        (&["sandbox", "run", "--any-command", "--any-command", "--", "true"], "lnk sandbox run --help"),
        (&["sandbox", "flags", "--tool", "run", "--tool", "file"], "lnk sandbox flags --help"),
        // Beside a file, only the call's own limits.
        (&["sandbox", "run", "--file", "a", "--read", "/tmp", "--", "true"], "lnk sandbox run --help"),
        (&["file"], "lnk file --help"),
    ] {
        let out = run(lnk().args(args));
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(stdout(&out).is_empty(), "{args:?}: {}", stdout(&out));
        // One line naming what was wrong and where help is; not the whole usage text.
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("lnk: ") && err.ends_with(&format!(" ({help})\n")), "{args:?}: {err}");
    }
    let near = stderr(&run(lnk().args(["sandbox", "run", "--tol", "run", "--", "true"])));
    assert_eq!(near, "lnk: unknown flag `--tol`; did you mean `--tool`? (lnk sandbox run --help)\n");
    let near = stderr(&run(lnk().args(["sandbox", "flags", "--tol", "run"])));
    assert!(near.contains("did you mean `--tool`?"), "{near}");
    for args in [
        &["--help"][..],
        &["sandbox", "--help"],
        &["sandbox", "run", "--help"],
        &["sandbox", "check", "--help"],
        &["sandbox", "flags", "--help"],
        &["sandbox", "commands", "--help"],
        &["sandbox", "status", "--help"],
        &["file", "--help"],
    ] {
        let out = run(lnk().args(args));
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert!(stdout(&out).contains("Usage:"), "{args:?}");
    }
}

#[test]
fn a_mistyped_command_gets_the_near_one() {
    let err = stderr(&run(lnk().arg("sandbx")));
    assert_eq!(err, "lnk: unknown command `sandbx`; did you mean `sandbox`? (lnk --help)\n");
    let err = stderr(&run(lnk().args(["sandbox", "chek", "f.toml"])));
    assert_eq!(err, "lnk: unknown sandbox command `chek`; did you mean `check`? (lnk sandbox --help)\n");
    let err = stderr(&run(lnk().args(["sandbox", "zzzzzz"])));
    assert!(!err.contains("did you mean") && err.contains("run, check, flags"), "{err}");
}

#[test]
fn each_command_has_its_own_help() {
    let help = |args: &[&str]| stdout(&run(lnk().args(args)));
    let run_help = help(&["sandbox", "run", "--help"]);
    // Every sandbox flag, with a line of its own.
    for flag in lnk::flags::FLAG_NAMES {
        let line = run_help.lines().find(|l| l.trim_start().starts_with(&format!("{flag} ")));
        assert!(line.is_some_and(|l| l.split_whitespace().count() > 2), "{flag} in:\n{run_help}");
    }
    for option in ["--file", "--report", "--stdin", "--env", "--agent-dir", "--resolve"] {
        assert!(run_help.contains(&format!("  {option} ")), "{option} in:\n{run_help}");
    }
    // The file tool's help shows the README's own line (a session always gets standard input).
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let session = "lnk sandbox run --file FILE --tool file -- lnk file --files-dir";
    assert!(help(&["file", "--help"]).contains(session) && readme.contains(session), "{session}");
    for (verb, own, other) in [
        ("check", "lnk sandbox check FILE [--agent-dir DIR]... [--json]", "lnk sandbox status"),
        ("flags", "lnk sandbox flags [FILE] [--tool run|file] [--json]", "lnk sandbox check"),
        ("commands", "lnk sandbox commands [FILE] [--json]", "lnk sandbox flags"),
        ("status", "lnk sandbox status [--json]", "lnk sandbox commands"),
    ] {
        let text = help(&["sandbox", verb, "--help"]);
        assert!(text.contains(own), "{verb}: {text}");
        assert!(!text.contains(other), "{verb} shows its own help, not the group's: {text}");
    }
    let group = help(&["sandbox", "--help"]);
    assert!(group.contains("lnk sandbox check") && group.contains("lnk sandbox status"), "{group}");
}

/// Parses `text` as JSON values one after another and returns them.
fn json_values(text: &str) -> Vec<serde_json::Value> {
    serde_json::Deserializer::from_str(text)
        .into_iter::<serde_json::Value>()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// Runs `lnk` with `args`, asserts standard output is exactly one JSON object with
/// `"schema": 1` first and the exit code `code`, and returns the object.
fn one_object(args: &[&str], code: i32) -> serde_json::Value {
    let out = run(lnk().args(args));
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {text} {}", stderr(&out));
    assert!(text.starts_with("{\"schema\":1,") && text.ends_with("}\n"), "{args:?}: {text}");
    let mut values = json_values(&text);
    assert_eq!(values.len(), 1, "{args:?}: {text}");
    let value = values.remove(0);
    assert!(value.is_object() && value["outcome"].is_string(), "{args:?}: {text}");
    value
}

#[test]
fn json_is_one_object_even_for_a_usage_error() {
    for (args, help) in [
        // The switch after the error, and before it.
        (&["sandbox", "run", "--tol", "x", "--report", "json", "--", "true"][..], "lnk sandbox run --help"),
        (&["sandbox", "run", "--report=json", "--timeout"], "lnk sandbox run --help"),
        (&["sandbox", "run", "--report", "json", "--read"], "lnk sandbox run --help"),
        (&["sandbox", "run", "--report", "json"], "lnk sandbox run --help"),
        (&["sandbox", "check", "--jsn", "--json"], "lnk sandbox check --help"),
        (&["sandbox", "check", "--json"], "lnk sandbox check --help"),
        (&["sandbox", "flags", "--tool", "shell", "--json"], "lnk sandbox flags --help"),
        (&["sandbox", "commands", "a", "b", "--json"], "lnk sandbox commands --help"),
        (&["sandbox", "status", "extra", "--json"], "lnk sandbox status --help"),
        (&["sandbox", "chek", "--json"], "lnk sandbox --help"),
        (&["sandbx", "--json"], "lnk --help"),
    ] {
        let out = run(lnk().args(args));
        assert!(stderr(&out).is_empty(), "{args:?}: JSON only: {}", stderr(&out));
        let v = one_object(args, 2);
        assert_eq!(v["outcome"], "usage_error", "{args:?}");
        assert_eq!(v["exit_code"], 2, "{args:?}");
        assert!(v["error"].as_str().is_some_and(|e| !e.is_empty()), "{args:?}");
        assert_eq!(v["help"], help, "{args:?}");
    }
    // A `--json` after `--` is the program's, not lnk's.
    let out = run(lnk().args(["sandbox", "run", "--tol", "--", "prog", "--json"]));
    assert!(stdout(&out).is_empty() && stderr(&out).starts_with("lnk: unknown flag"));
}

#[test]
fn json_is_one_object_with_the_diagnostics_for_an_invalid_file() {
    let dir = Scratch::new("jsoninvalid");
    let bad = dir.file("s.toml", "comands = []\n[files]\nread = [\"rel\"]\n");
    let bad = path_str(&bad);
    for (args, code) in [
        (vec!["sandbox", "check", bad, "--json"], 1),
        (vec!["sandbox", "flags", bad, "--json"], 1),
        (vec!["sandbox", "commands", bad, "--json"], 1),
        (vec!["sandbox", "run", "--file", bad, "--report", "json", "--", "true"], 125),
    ] {
        let out = run(lnk().args(&args));
        assert!(stderr(&out).is_empty(), "{args:?}: {}", stderr(&out));
        let v = one_object(&args, code);
        assert_eq!(v["outcome"], "invalid_sandbox_file", "{args:?}");
        assert_eq!(v["exit_code"], code, "{args:?}");
        assert_eq!(v["file"], bad);
        let d = v["diagnostics"].as_array().unwrap();
        assert_eq!(d.len(), 2, "{v}");
        assert_eq!(
            (&d[0]["file"], &d[0]["line"], &d[0]["column"], &d[0]["severity"]),
            (
                &serde_json::json!(bad),
                &serde_json::json!(1),
                &serde_json::json!(1),
                &serde_json::json!("error")
            )
        );
        assert!(d[0]["message"].as_str().unwrap().contains("unknown key `comands`"), "{v}");
        assert_eq!(d[0]["help"], "did you mean `commands`?");
        assert_eq!((&d[1]["line"], &d[1]["column"]), (&serde_json::json!(3), &serde_json::json!(9)));
    }
    // A file that cannot be read is one diagnostic with no line.
    let missing = dir.join("missing.toml");
    let v = one_object(&["sandbox", "check", path_str(&missing), "--json"], 1);
    assert!(v["diagnostics"][0]["line"].is_null(), "{v}");
    assert!(v["diagnostics"][0]["message"].as_str().unwrap().contains("cannot open"), "{v}");
    // No HOME is a failure, in JSON too.
    let out = run(lnk().args(["sandbox", "flags", "--json"]).env_remove("HOME"));
    assert_eq!(out.status.code(), Some(125));
    let v = &json_values(&stdout(&out))[0];
    assert_eq!((v["schema"].as_u64(), v["outcome"].as_str()), (Some(1), Some("failed")), "{v}");
}

#[test]
fn every_json_output_carries_the_schema() {
    let dir = Scratch::new("jsonok");
    let ok = dir.file("s.toml", "commands = [\"true\"]\n");
    let ok = path_str(&ok);
    let v = one_object(&["sandbox", "check", ok, "--json"], 0);
    assert_eq!((v["outcome"].as_str(), v["diagnostics"].as_array().map(Vec::len)), (Some("ok"), Some(0)));
    let v = one_object(&["sandbox", "flags", ok, "--json", "--tool", "run"], 0);
    assert_eq!(v["args"][0], "--tool");
    assert!(v["args"].as_array().unwrap().contains(&serde_json::json!("true")), "{v}");
    let v = one_object(&["sandbox", "flags", "--json"], 0);
    assert_eq!(v["file"], "<embedded policy/default.toml>");
    one_object(&["sandbox", "commands", ok, "--json"], 0);
    one_object(&["sandbox", "status", "--json"], 0);
    // The run report, however the call ends on this kernel.
    let out = run(lnk().args(["sandbox", "run", "--command", "true", "--report", "json", "--", "true"]));
    let values = json_values(&stdout(&out));
    assert_eq!(values.len(), 1, "{}", stdout(&out));
    assert_eq!(values[0]["schema"], 1);
    assert!(values[0]["outcome"].is_string());
}

#[test]
fn link_run_prints_its_usage_and_refuses_bad_words() {
    let out = run(link_run().arg("--help"));
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).contains("lnk-link-run start"));
    assert_eq!(run(&mut link_run()).status.code(), Some(2));
    assert_eq!(run(link_run().arg("bogus")).status.code(), Some(2));
    let out = run(link_run().arg("start"));
    assert_eq!(out.status.code(), Some(2), "a start without a program is a usage error");
    let out = run(link_run().args(["list", "--agent-dir"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("needs a value"), "{}", stderr(&out));
    let out = run(link_run().args(["list", "--files-dir", "/tmp"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("`--agent-dir` is needed"), "{}", stderr(&out));
    let out = run(link_run().args(["read", "--agent-dir", "/tmp", "--files-dir", "/tmp"]));
    assert_eq!(out.status.code(), Some(2), "read needs an id");
    let twice = [
        "start",
        "--agent-dir",
        "/tmp",
        "--files-dir",
        "/tmp",
        "--timeout",
        "5",
        "--timeout",
        "9",
        "--",
        "true",
    ];
    let out = run(link_run().args(twice));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("`--timeout` is given twice"), "{}", stderr(&out));
}

#[test]
fn link_run_usage_errors_are_one_line_and_each_verb_has_its_help() {
    for (args, help) in [
        (&[][..], "lnk-link-run --help"),
        (&["bogus"], "lnk-link-run --help"),
        (&["start"], "lnk-link-run start --help"),
        (&["start", "--bogus", "--", "true"], "lnk-link-run start --help"),
        (&["list", "--agent-dir"], "lnk-link-run list --help"),
        (&["read"], "lnk-link-run read --help"),
        (&["stop"], "lnk-link-run stop --help"),
        (&["sweep", "extra"], "lnk-link-run sweep --help"),
    ] {
        let out = run(link_run().args(args));
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(stdout(&out).is_empty(), "{args:?}: {}", stdout(&out));
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("lnk-link-run: ") && err.ends_with(&format!(" ({help})\n")),
            "{args:?}: {err}"
        );
    }
    let err = stderr(&run(link_run().arg("strat")));
    assert_eq!(err, "lnk-link-run: unknown verb `strat`; did you mean `start`? (lnk-link-run --help)\n");
    let err = stderr(&run(link_run().args(["list", "--agnet-dir", "x"])));
    assert!(err.contains("did you mean `--agent-dir`?"), "{err}");
    // Each verb's own help, not the overview: it names the verb's flags.
    for (verb, own) in [
        ("start", "--output-cap"),
        ("list", "lost"),
        ("read", "--offset"),
        ("stop", "--all"),
        ("sweep", "lock"),
    ] {
        for args in [[verb, "--help"], ["--help", verb]] {
            let out = run(link_run().args(args));
            assert_eq!(out.status.code(), Some(0), "{args:?}");
            let text = stdout(&out);
            assert!(text.starts_with(&format!("lnk-link-run {verb}:")), "{args:?}: {text}");
            assert!(text.contains(own) && text.contains("Usage:"), "{args:?}: {text}");
        }
    }
}

#[test]
fn a_closed_pipe_ends_the_command_quietly_and_both_binaries_have_a_version() {
    for args in
        [&["sandbox", "flags"][..], &["sandbox", "status"], &["sandbox", "commands", "--json"], &["--help"]]
    {
        let mut child = lnk()
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // The reader goes away before a byte is read, as `| head -0` would.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(matches!(out.status.code(), Some(0) | Some(141)), "{args:?}: {:?}", out.status);
    }
    let v = run(lnk().arg("--version"));
    assert!(stdout(&v).starts_with("lnk "), "{}", stdout(&v));
    let v = run(link_run().arg("--version"));
    assert_eq!(v.status.code(), Some(0));
    assert!(stdout(&v).starts_with("lnk-link-run "), "{}", stdout(&v));
}

#[test]
fn status_and_reports_name_apparmors_restriction_and_its_exact_fix() {
    // A kernel without user namespaces (simulated), whose AppArmor restricts them (a file of the
    // test's own stands for the sysctl): the mode's reason names the restriction and the fix.
    if !require(can_simulate_no_user_namespaces(), "nested user namespaces (to simulate a kernel without)") {
        return;
    }
    let dir = Scratch::new("apparmor");
    for (value, restricted) in [("1\n", true), ("0\n", false)] {
        let sysctl = dir.file("apparmor_restrict_unprivileged_userns", value);
        let mut status = lnk();
        status.args(["sandbox", "status", "--json"]).env("LNK_TEST_APPARMOR_SYSCTL", &sysctl);
        status.env("TMPDIR", &dir.path);
        let out = run(&mut without_user_namespaces(&status));
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
        assert_eq!(json["mode"], "landlock-only", "{json}");
        assert_eq!(json["apparmor_restricts_user_namespaces"], restricted, "{json}");
        let why = json["mode_reason"].as_str().unwrap();
        assert_eq!(why.contains("sudo apparmor_parser -r /etc/apparmor.d/lnk"), restricted, "{why}");
        assert_eq!(
            why.contains("lnk sandbox status --apparmor-profile | sudo tee /etc/apparmor.d/lnk"),
            restricted
        );
    }
    // The profile it names is the one shipped.
    let out = run(lnk().args(["sandbox", "status", "--apparmor-profile"]));
    assert_eq!(out.status.code(), Some(0));
    let shipped =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/policy/apparmor/lnk")).unwrap();
    assert_eq!(stdout(&out), shipped);
}

#[test]
fn arguments_that_are_not_utf8_get_one_json_object_that_says_what_to_do() {
    use std::os::unix::ffi::OsStrExt as _;
    let bad = std::ffi::OsStr::from_bytes(b"/tmp/caf\xe9.toml");
    let bad_env = std::ffi::OsStr::from_bytes(b"NAME=caf\xe9");
    let cases: Vec<Vec<&std::ffi::OsStr>> = vec![
        ["sandbox", "run", "--report", "json", "--file"]
            .iter()
            .map(std::ffi::OsStr::new)
            .chain([bad])
            .chain(["--", "true"].map(std::ffi::OsStr::new))
            .collect(),
        ["sandbox", "run", "--report", "json", "--env"]
            .iter()
            .map(std::ffi::OsStr::new)
            .chain([bad_env])
            .chain(["--", "true"].map(std::ffi::OsStr::new))
            .collect(),
        ["sandbox", "check", "--json"].iter().map(std::ffi::OsStr::new).chain([bad]).collect(),
        ["sandbox", "run", "--report", "json", "--", "echo"]
            .iter()
            .map(std::ffi::OsStr::new)
            .chain([bad])
            .collect(),
    ];
    for args in cases {
        let out = run(lnk().args(&args));
        let text = stdout(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {text}");
        let values = json_values(&text);
        assert_eq!(values.len(), 1, "{args:?}: one object: {text}");
        assert_eq!(values[0]["outcome"], "usage_error", "{args:?}");
        assert!(values[0]["error"].as_str().unwrap().contains("not valid UTF-8"), "{args:?}: {text}");
    }
    // lnk-link-run too.
    let out = run(link_run().args([std::ffi::OsStr::new("read"), std::ffi::OsStr::new("--json"), bad]));
    let values = json_values(&stdout(&out));
    assert_eq!((out.status.code(), values.len()), (Some(2), 1), "{}", stdout(&out));
    assert!(values[0]["error"].as_str().unwrap().contains("not valid UTF-8"));
}

#[test]
fn run_exits_141_when_its_standard_output_is_closed() {
    for report in ["json", "text"] {
        let mut child = lnk()
            .args([
                "sandbox",
                "run",
                "--command",
                "sh",
                "--report",
                report,
                "--",
                "sh",
                "-c",
                "sleep 0.3; echo out",
            ])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(141), "{report}: a reader that left gets 141, as for SIGPIPE");
    }
}
