//! Advice is tested by taking it: for each kind of refusal of files and programs, the denial's
//! `fix` is applied to the sandbox file as a harness would (its value appended to its list),
//! `lnk sandbox check` passes the result, and the same command, run again, now works; in each
//! mode, as root and as an ordinary user (the suite runs twice). Where no change could allow a
//! refusal, the fix is null and `why` says what would instead. The network's refusals are
//! looped in `proxy.rs`, in the tests' own internet.

mod common;
use common::*;

const COMMANDS: &str = r#"commands = ["sh", "cat", "touch", "mkdir", "mv", "ls", "python3", "true"]"#;

/// The agent's usual file: the home readable, its files folder writable.
fn usual() -> String {
    format!("{COMMANDS}\n[files]\nread = [\"~\"]\nwrite = [\"~/Link/Files\"]\n")
}

/// Runs `cmd` from the agent's work folder in `mode`.
fn call(agent: &Agent, mode: Mode, cmd: &[&str]) -> Report {
    let work = agent.home.join("Link/Files/work");
    std::fs::create_dir_all(&work).unwrap();
    let mut c = agent.command(&[], cmd);
    c.current_dir(&work);
    Report::from(run(in_mode(&mut c, mode)))
}

/// The denial of `target` in `r`: of the path itself, or else of its folder (what `mv` names
/// when the folder it moves into is one the program cannot see).
fn denial_of(r: &Report, target: &str) -> serde_json::Value {
    let denials = r.json["denials"].as_array().unwrap_or_else(|| panic!("{}", r.raw));
    let folder = std::path::Path::new(target).parent().map(|p| p.display().to_string());
    denials
        .iter()
        .find(|d| d["target"] == target)
        .or_else(|| denials.iter().find(|d| folder.as_deref().is_some_and(|f| d["target"] == f)))
        .cloned()
        .unwrap_or_else(|| panic!("no denial of {target}: {}", r.raw))
}

/// The loop: refused, with a fix; the fix applied; check passes; the command now works.
fn loop_once(agent: &Agent, mode: Mode, cmd: &[&str], target: &str) -> serde_json::Value {
    let first = call(agent, mode, cmd);
    assert_ne!(first.code, Some(0), "{mode:?}: {cmd:?} should be refused first: {}", first.raw);
    let denial = denial_of(&first, target);
    let fix = &denial["fix"];
    assert!(fix.is_object(), "{mode:?}: {cmd:?}: a fix: {denial}");
    apply_fix(&agent.policy, fix);
    assert_check_ok(&agent.policy, &agent.home);
    let again = call(agent, mode, cmd);
    assert_eq!(
        again.code,
        Some(0),
        "{mode:?}: {cmd:?} after `{}`: {}\n{}",
        fix["words"],
        again.raw,
        std::fs::read_to_string(&agent.policy).unwrap()
    );
    denial
}

#[test]
fn each_file_and_program_refusal_works_once_its_fix_is_applied() {
    // Outside every grant in `/var/tmp`, and beneath the host's `/tmp`, where a harness's
    // scratch folders often are: the own world shows the call its own `/tmp` there, so the
    // program is told "No such file or directory", and the denial must still name the grant.
    for (mode, base) in modes().into_iter().flat_map(|m| [(m, "/var/tmp"), (m, "/tmp")]) {
        let outside = Scratch::new_in(std::path::Path::new(base), "fix-outside");
        let o = |rest: &str| outside.join(rest).display().to_string();
        for folder in ["r", "w", "a", "t", "p", "m", "mv"] {
            std::fs::create_dir_all(outside.join(folder)).unwrap();
        }
        for file in ["r/e.txt", "a/e.txt", "t/e.txt"] {
            std::fs::write(outside.join(file), "e\n").unwrap();
        }
        let cases: Vec<(&str, Vec<String>, String, String)> = vec![
            ("read", vec!["cat".into(), o("r/e.txt")], o("r/e.txt"), o("r")),
            (
                "write",
                vec!["sh".into(), "-c".into(), format!("echo x > {}", o("w/new.txt"))],
                o("w/new.txt"),
                o("w"),
            ),
            (
                "append",
                vec!["sh".into(), "-c".into(), format!("echo x >> {}", o("a/e.txt"))],
                o("a/e.txt"),
                o("a"),
            ),
            ("touch", vec!["touch".into(), o("t/e.txt")], o("t/e.txt"), o("t")),
            (
                "create",
                vec!["python3".into(), "-c".into(), format!("open({:?}, 'w').write('x')", o("p/new.txt"))],
                o("p/new.txt"),
                o("p"),
            ),
            ("mkdir", vec!["mkdir".into(), o("m/newdir")], o("m/newdir"), o("m")),
            (
                "rename into",
                vec!["sh".into(), "-c".into(), format!("touch moved && mv moved {}/", o("mv"))],
                o("mv/moved"),
                o("mv"),
            ),
        ];
        for (kind, cmd, target, folder) in cases {
            // Beneath /tmp, a file that grants no folder holding a secret there: the own world
            // then covers the host's /tmp with the call's own (else it keeps it, read-only).
            let policy = match base {
                "/tmp" => format!("{COMMANDS}\n[files]\nwrite = [\"~/Link/Files\"]\n"),
                _ => usual(),
            };
            let agent = Agent::new(&format!("fix-{}", kind.replace(' ', "-")), &policy);
            let argv: Vec<&str> = cmd.iter().map(String::as_str).collect();
            let denial = loop_once(&agent, mode, &argv, &target);
            // The narrowest change: the folder it names, never above.
            assert_eq!(denial["fix"]["value"], folder, "{mode:?}, in {base}: {kind}: {denial}");
        }

        // A program not listed, named on lnk's command line (known) and by a shell (inferred).
        let agent = Agent::new("fix-program", &usual());
        let denial = loop_once(&agent, mode, &["seq", "3"], "seq");
        assert_eq!(
            (denial["fix"]["key"].as_str(), denial["inferred"].as_bool()),
            (Some("commands"), Some(false))
        );
        let agent = Agent::new("fix-program-in-shell", &usual());
        let denial = loop_once(&agent, mode, &["sh", "-c", "seq 3"], "seq");
        assert_eq!(
            (denial["fix"]["value"].as_str(), denial["inferred"].as_bool()),
            (Some("seq"), Some(true))
        );
    }
}

/// Runs `cmd` until it works, applying each refusal's fix as given (at most `most` of them):
/// the denials, in order. Each fix must pass `check`.
fn loop_until_it_works(agent: &Agent, mode: Mode, cmd: &[&str], most: usize) -> Vec<serde_json::Value> {
    let mut taken = Vec::new();
    loop {
        let r = call(agent, mode, cmd);
        if r.code == Some(0) {
            return taken;
        }
        assert!(taken.len() < most, "{mode:?}: {cmd:?} still refused after {taken:?}: {}", r.raw);
        let denials = r.json["denials"].as_array().unwrap_or_else(|| panic!("{}", r.raw));
        // The first that has a fix: one without (node's UDP socket in the Landlock-only mode)
        // tells the harness something no change would allow.
        let denial = denials
            .iter()
            .find(|d| d["fix"].is_object())
            .unwrap_or_else(|| panic!("{mode:?}: {cmd:?}: no denial with a fix: {}", r.raw))
            .clone();
        apply_fix(&agent.policy, &denial["fix"]);
        assert_check_ok(&agent.policy, &agent.home);
        taken.push(denial);
    }
}

#[test]
fn a_program_a_tool_names_and_a_repository_outside_the_grants_get_fixes_that_work() {
    for mode in modes() {
        // A program a tool runs by name, not listed: make's recipe, env, xargs, find's -exec.
        let launchers: [(&str, &[&str], &str); 4] = [
            ("make", &["make"], "seq"),
            ("env", &["env", "seq", "3"], "seq"),
            ("xargs", &["sh", "-c", "echo 3 | xargs seq"], "seq"),
            ("find", &["find", ".", "-maxdepth", "0", "-exec", "echo", "{}", "+"], "echo"),
        ];
        for (tool, cmd, unlisted) in launchers {
            let policy = usual().replacen("\"true\"]", &format!("\"true\", \"{tool}\"]"), 1);
            let agent = Agent::new(&format!("fix-launched-{tool}"), &policy);
            let work = agent.home.join("Link/Files/work");
            std::fs::create_dir_all(&work).unwrap();
            std::fs::write(work.join("Makefile"), "all:\n\tseq 3\n").unwrap();
            let taken = loop_until_it_works(&agent, mode, cmd, 1);
            let d = &taken[0];
            assert_eq!(
                (d["target"].as_str(), d["cause"].as_str(), d["fix"]["value"].as_str()),
                (Some(unlisted), Some("not_listed"), Some(unlisted)),
                "{mode:?}: {tool}: {d}"
            );
        }
        // An npm script: npm itself is a script (`#!/usr/bin/env node`), so first `env`, which
        // the kernel refused to run for it; then what the script's shell could not run.
        let agent = Agent::new("fix-npm", &usual().replacen("\"true\"]", "\"true\", \"npm\", \"node\"]", 1));
        let work = agent.home.join("Link/Files/work");
        std::fs::create_dir_all(&work).unwrap();
        let package = r#"{"name": "x", "version": "1.0.0", "scripts": {"build": "seq 3"}}"#;
        std::fs::write(work.join("package.json"), package).unwrap();
        let taken = loop_until_it_works(&agent, mode, &["npm", "run", "build"], 3);
        let listed: Vec<&str> = taken.iter().map(|d| d["fix"]["value"].as_str().unwrap()).collect();
        assert_eq!(listed, ["env", "seq"], "{mode:?}: {taken:?}");
        // find names a folder it could not read the same way: that stays a folder's denial.
        let agent = Agent::new("fix-find-folder", &usual().replacen("\"true\"]", "\"true\", \"find\"]", 1));
        let work = agent.home.join("Link/Files/work");
        std::fs::create_dir_all(work.join("seq")).unwrap();
        std::fs::set_permissions(work.join("seq"), std::os::unix::fs::PermissionsExt::from_mode(0o000))
            .unwrap();
        let r = call(&agent, mode, &["find", "seq"]);
        std::fs::set_permissions(work.join("seq"), std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        // (Root reads a mode-000 folder: nothing is refused then.)
        if !rustix::process::geteuid().is_root() {
            let d = &r.json["denials"][0];
            assert_eq!(
                (d["cause"].as_str(), d["access"].as_str()),
                (Some("permissions"), Some("read")),
                "{mode:?}: a folder named like a program is a folder: {}",
                r.raw
            );
        }

        // git's "repository … does not exist" for one outside the grants: the fix names the
        // repository's folder, and the clone then works (git may next need `sh`, listed here).
        let outside = Scratch::new_in(std::path::Path::new("/var/tmp"), "fix-repo");
        let repo = outside.join("repo");
        let git = |args: &[&str]| {
            let out = std::process::Command::new("git").args(args).output().unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        };
        git(&["init", "-q", repo.to_str().unwrap()]);
        git(&[
            "-C",
            repo.to_str().unwrap(),
            "-c",
            "user.name=a",
            "-c",
            "user.email=a@b",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "x",
        ]);
        let agent = Agent::new("fix-repo", &usual().replacen("\"true\"]", "\"true\", \"git\"]", 1));
        let cmd = ["git", "clone", "-q", repo.to_str().unwrap(), "clone"];
        let taken = loop_until_it_works(&agent, mode, &cmd, 2);
        let d = &taken[0];
        assert_eq!(
            (d["cause"].as_str(), d["fix"]["key"].as_str(), d["fix"]["value"].as_str()),
            (Some("outside_grants"), Some("read"), repo.to_str()),
            "{mode:?}: {d}"
        );
        // A command git runs through the shell, not listed: `sh`, what could not be run.
        let agent = Agent::new(
            "fix-repo-shell",
            &usual().replace("\"sh\", ", "").replacen("\"true\"]", "\"true\", \"git\"]", 1),
        );
        let policy = std::fs::read_to_string(&agent.policy).unwrap();
        std::fs::write(
            &agent.policy,
            policy.replacen("read = [\"~\"]", &format!("read = [\"~\", {:?}]", repo.to_str().unwrap()), 1),
        )
        .unwrap();
        let taken = loop_until_it_works(&agent, mode, &cmd, 2);
        assert_eq!(taken[0]["fix"]["value"].as_str(), Some("sh"), "{mode:?}: {taken:?}");
    }
}

#[test]
fn where_no_change_would_allow_it_the_fix_is_null_and_why_says_what_would() {
    for mode in modes() {
        // A file directly in the home, which no grant gives for one file.
        let agent = Agent::new("fix-none-home", &usual());
        let target = agent.home.join("notes.txt").display().to_string();
        let r = call(&agent, mode, &["sh", "-c", "echo x > ~/notes.txt"]);
        let d = denial_of(&r, &target);
        assert!(d["fix"].is_null(), "{mode:?}: {d}");
        assert!(d["why"].as_str().unwrap().contains("never grants"), "{mode:?}: {d}");

        // Something new directly in a write-granted folder that holds protected paths: the
        // grant is cut around them, and nothing new can be made there. Named, no fix.
        let policy = format!("{COMMANDS}\n[files]\nwrite = [\"~\"]\n");
        let agent = Agent::new("fix-none-beside", &policy);
        let r = call(&agent, mode, &["sh", "-c", "echo x > ~/notes.txt"]);
        let d = denial_of(&r, &target_in(&agent, "notes.txt"));
        assert_eq!(
            (d["cause"].as_str(), d["fix"].is_null()),
            (Some("beside_protected"), true),
            "{mode:?}: {d}"
        );
        assert!(d["why"].as_str().unwrap().contains("folder already in it"), "{mode:?}: {d}");
        // And what it says works: a folder already in it.
        let r = call(&agent, mode, &["sh", "-c", "echo x > ~/Link/notes.txt && mkdir ~/Link/more"]);
        assert_eq!(r.code, Some(0), "{mode:?}: {}", r.raw);
    }
}

#[test]
fn without_the_own_world_the_hosts_shared_places_are_named_with_no_fix() {
    let agent = Agent::new("fix-none-shared", &usual());
    for (cmd, target) in
        [("ls /tmp", "/tmp"), ("ls /dev/shm", "/dev/shm"), ("cat /proc/1/environ", "/proc/1/environ")]
    {
        let r = call(&agent, Mode::LandlockOnly, &["sh", "-c", &format!("{cmd}; true")]);
        let d = denial_of(&r, target);
        assert_eq!((d["cause"].as_str(), d["fix"].is_null()), (Some("needs_own_world"), true), "{cmd}: {d}");
    }
}

fn target_in(agent: &Agent, name: &str) -> String {
    agent.home.join(name).display().to_string()
}
