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
    assert!(json.starts_with("{\"any\":false,\"offered\":[{\"name\":\"sh\",\"path\":\"/"), "{json}");
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
    assert!(json.starts_with("{\"landlock_abi\":"), "{json}");
    assert!(json.contains("\"guarantees\":[{\"guarantee\":"), "{json}");
}

#[test]
fn usage_errors_exit_2_and_help_exits_0() {
    for args in [
        &[][..],
        &["nonsense"],
        &["sandbox"],
        &["sandbox", "frobnicate"],
        &["sandbox", "check"],
        &["sandbox", "check", "a", "b"],
        &["sandbox", "flags", "--tool"],
        &["sandbox", "flags", "--tool", "shell"],
        &["sandbox", "flags", "--tol", "run"],
        &["sandbox", "commands", "--jsn"],
        &["sandbox", "status", "--json=yes"],
        &["sandbox", "status", "extra"],
    ] {
        let out = run(lnk().args(args));
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("Usage:"), "{args:?} shows usage: {}", stderr(&out));
    }
    let near = stderr(&run(lnk().args(["sandbox", "flags", "--tol", "run"])));
    assert!(near.contains("did you mean `--tool`?"), "{near}");
    for args in [
        &["--help"][..],
        &["sandbox", "--help"],
        &["sandbox", "check", "--help"],
        &["sandbox", "flags", "--help"],
        &["sandbox", "commands", "--help"],
        &["sandbox", "status", "--help"],
    ] {
        let out = run(lnk().args(args));
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert!(stdout(&out).contains("Usage:"), "{args:?}");
    }
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
