//! `lnk sandbox check` says what `lnk sandbox run` will do: every refusal `run` makes of a
//! sandbox file on this computer, in the mode this kernel gives calls, `check` reports as an
//! error in the same words (one code decides both), and a file `check` passes, `run` does not
//! refuse. Each case runs through both, in each mode (`check` honours the test build's
//! `LNK_TEST_LANDLOCK_ONLY` as `run` does), as root and as an ordinary user.

mod common;
use common::*;
use serde_json::Value;

/// `check --json` of the agent's file, in `mode`, with the call's `TMPDIR`.
fn check(agent: &Agent, mode: Mode, extra: &[&str]) -> Value {
    let mut c = lnk();
    c.args(["sandbox", "check", "--json"]).args(extra).arg(&agent.policy);
    c.env("HOME", &agent.home).env("TMPDIR", agent.dir.join("tmp"));
    let out = run(in_mode(&mut c, mode));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("check prints JSON: {}", stdout(&out)))
}

/// `run` of `true` with the agent's file, in `mode`, with the call's `TMPDIR`.
fn call(agent: &Agent, mode: Mode, extra: &[&str]) -> Report {
    let mut c = agent.command(extra, &["true"]);
    c.env("TMPDIR", agent.dir.join("tmp"));
    Report::from(run(in_mode(&mut c, mode)))
}

/// The messages of `check`'s errors (not its warnings).
fn errors(answer: &Value) -> Vec<String> {
    let diagnostics = answer["diagnostics"].as_array().cloned().unwrap_or_default();
    diagnostics
        .iter()
        .filter(|d| d["severity"] == "error")
        .map(|d| d["message"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn each_refusal_run_makes_check_reports_in_the_same_words() {
    for mode in modes() {
        let outside = Scratch::new_in(std::path::Path::new("/var/tmp"), "check-run");
        std::fs::create_dir_all(outside.join("real")).unwrap();
        std::os::unix::fs::symlink(outside.join("real"), outside.join("link")).unwrap();
        let o = |rest: &str| outside.join(rest).display().to_string();
        let own_world = mode == Mode::OwnWorld;
        // (name, the file's grants and internet, run's extra flags, whether run refuses here)
        let cases: Vec<(&str, String, Vec<String>, bool)> = vec![
            ("write-root", "[files]\nwrite = [\"/\"]\n".into(), vec![], true),
            ("write-tmp-base", "[files]\nwrite = [\"TMP\"]\n".into(), vec![], true),
            ("through-a-link", format!("[files]\nread = [\"{}\"]\n", o("link")), vec![], true),
            (
                "in-deny",
                format!("[files]\nread = [\"{}\"]\ndeny = [\"{}\"]\n", o("real/x"), o("real")),
                vec![],
                true,
            ),
            (
                "over-records",
                format!("[files]\nwrite = [\"{}\"]\n", o("real")),
                vec!["--agent-dir".into(), o("real/agent")],
                true,
            ),
            ("tcp-by-name", "[internet]\ntcp = [\"db.example:5432\"]\n".into(), vec![], !own_world),
            ("tcp-at-the-proxy", "[internet]\ntcp = [\"127.0.0.1:3128\"]\n".into(), vec![], true),
            ("a-folder-of-its-own", format!("[files]\nwrite = [\"{}\"]\n", o("real")), vec![], false),
        ];
        for (name, files, extra, refused) in cases {
            let agent = Agent::new(&format!("check-run-{name}"), "commands = [\"true\"]\n");
            std::fs::create_dir_all(agent.dir.join("tmp")).unwrap();
            let base = agent.dir.join(&format!("tmp/lnk-{}", rustix::process::geteuid().as_raw()));
            let files = files.replace("TMP", base.to_str().unwrap());
            std::fs::write(&agent.policy, format!("commands = [\"true\"]\n{files}")).unwrap();
            if name == "over-records" {
                std::fs::create_dir_all(outside.join("real/agent")).unwrap();
            }
            let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
            let answer = check(&agent, mode, &extra);
            let r = call(&agent, mode, &extra);
            match refused {
                true => {
                    assert!(matches!(r.code, Some(125 | 126)), "{mode:?}: {name}: run refuses: {}", r.raw);
                    let said = r.json["error"].as_str().unwrap_or_default().to_owned();
                    assert!(
                        errors(&answer).contains(&said),
                        "{mode:?}: {name}: check says what run says ({said:?}): {answer}"
                    );
                }
                false => {
                    assert_eq!(answer["outcome"], "ok", "{mode:?}: {name}: {answer}");
                    assert_eq!(r.code, Some(0), "{mode:?}: {name}: {}", r.raw);
                }
            }
            // And check names the mode it decided for, which is the one run ran in.
            if answer["outcome"] == "ok" {
                assert_eq!(answer["mode"], r.json["enforced"]["mode"], "{name}");
            }
        }
    }
}

#[test]
fn a_mode_limit_is_unsupported_and_a_files_refusal_refused() {
    let agent =
        Agent::new("check-run-codes", "commands = [\"true\"]\n[internet]\ntcp = [\"db.example:5432\"]\n");
    std::fs::create_dir_all(agent.dir.join("tmp")).unwrap();
    let r = call(&agent, Mode::LandlockOnly, &[]);
    assert_eq!((r.code, r.outcome()), (Some(125), "unsupported"), "{}", r.raw);
    std::fs::write(&agent.policy, "commands = [\"true\"]\n[files]\nwrite = [\"/\"]\n").unwrap();
    let r = call(&agent, Mode::LandlockOnly, &[]);
    assert_eq!((r.code, r.outcome()), (Some(126), "refused"), "{}", r.raw);
}

#[test]
fn a_grant_of_the_hosts_shared_tmp_is_warned_at_check() {
    for place in ["/tmp", "/dev/shm"] {
        let agent = Agent::new(
            "check-run-shared",
            &format!("commands = [\"true\"]\n[files]\nread = [\"{place}\"]\n"),
        );
        for mode in modes() {
            let answer = check(&agent, mode, &[]);
            let warned = answer["diagnostics"].as_array().unwrap().iter().any(|d| {
                d["severity"] == "warning"
                    && d["message"].as_str().unwrap().contains("every process here shares")
            });
            assert!(warned, "{mode:?}: {place}: {answer}");
        }
    }
}
