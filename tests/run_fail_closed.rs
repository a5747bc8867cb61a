//! `lnk sandbox run` on a kernel that lacks what it needs refuses (exit 125) and names the
//! missing guarantee; it never runs the program with less confinement. An old kernel is
//! simulated by running the helper under a seccomp filter that makes a feature's system call
//! fail the way an old kernel's does.

mod common;
use common::*;

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt as _;

use seccompiler::{BpfProgram, SeccompAction, SeccompFilter, TargetArch};

fn filter_failing(syscall: i64, errno: i32) -> BpfProgram {
    let arch = TargetArch::try_from(std::env::consts::ARCH).unwrap();
    SeccompFilter::new(
        BTreeMap::from([(syscall, Vec::new())]),
        SeccompAction::Allow,
        SeccompAction::Errno(errno as u32),
        arch,
    )
    .unwrap()
    .try_into()
    .unwrap()
}

/// Runs `lnk sandbox run -- sh -c 'echo RAN'` with `syscall` failing with `errno`.
fn run_on_simulated_kernel(syscall: i64, errno: i32) -> Report {
    let agent = Agent::new("old-kernel", "commands = [\"sh\"]\n");
    let mut cmd = agent.command(&[], &["sh", "-c", "echo RAN"]);
    let filter = filter_failing(syscall, errno);
    // SAFETY: installs a seccomp filter in the forked child before exec; apply_filter only
    // makes the prctl and seccomp system calls.
    unsafe {
        cmd.pre_exec(move || {
            seccompiler::apply_filter(&filter).map_err(|e| std::io::Error::other(e.to_string()))
        });
    }
    Report::from(run(&mut cmd))
}

#[test]
fn without_landlock_nothing_runs() {
    let r = run_on_simulated_kernel(libc::SYS_landlock_create_ruleset, libc::ENOSYS);
    assert_eq!(r.code, Some(125), "{}", r.raw);
    assert_eq!(r.outcome(), "unsupported");
    let error = r.json["error"].as_str().unwrap();
    assert!(error.contains("Landlock is unavailable (not in this kernel (ENOSYS))"), "{error}");
    assert!(!r.raw.contains("RAN"), "the program must not have run: {}", r.raw);
}

#[test]
fn with_landlock_disabled_at_boot_nothing_runs() {
    let r = run_on_simulated_kernel(libc::SYS_landlock_create_ruleset, libc::EOPNOTSUPP);
    assert_eq!(r.code, Some(125), "{}", r.raw);
    assert!(r.json["error"].as_str().unwrap().contains("turned off"), "{}", r.raw);
    assert!(!r.raw.contains("RAN"));
}

#[test]
fn without_seccomp_nothing_runs() {
    let r = run_on_simulated_kernel(libc::SYS_seccomp, libc::EINVAL);
    assert_eq!(r.code, Some(125), "{}", r.raw);
    assert!(r.json["error"].as_str().unwrap().contains("seccomp filters are unavailable"), "{}", r.raw);
    assert!(!r.raw.contains("RAN"));
}

#[test]
fn status_says_what_a_simulated_old_kernel_lacks() {
    let filter = filter_failing(libc::SYS_landlock_create_ruleset, libc::ENOSYS);
    let mut cmd = lnk();
    cmd.args(["sandbox", "status"]);
    // SAFETY: as above.
    unsafe {
        cmd.pre_exec(move || {
            seccompiler::apply_filter(&filter).map_err(|e| std::io::Error::other(e.to_string()))
        });
    }
    let text = stdout(&run(&mut cmd));
    assert!(text.contains("Landlock:                  unavailable: not in this kernel (ENOSYS)"), "{text}");
    assert!(text.contains("NO   files: reads and writes only beneath the grants"), "{text}");
}

#[test]
fn a_write_grant_over_the_folder_lnk_runs_from_is_refused() {
    // A program that could write lnk's own binary could replace it, and the next call would run
    // its code unconfined: lnk refuses such a grant and runs nothing.
    let agent = Agent::new("own-folder", "commands = [\"true\"]\n[files]\nwrite = [\"~/Link/Files\"]\n");
    let bin = agent.home.join("Link/Files/bin");
    std::fs::create_dir_all(&bin).unwrap();
    let lnk = bin.join("lnk");
    std::fs::copy(env!("CARGO_BIN_EXE_lnk"), &lnk).unwrap();
    let run_with = |policy: &std::path::Path| {
        let mut c = std::process::Command::new(&lnk);
        c.env("HOME", &agent.home).current_dir(&agent.home);
        c.args(["sandbox", "run", "--report", "json", "--file"]).arg(policy).args(["--", "true"]);
        Report::from(run(&mut c))
    };
    let r = run_with(&agent.policy);
    assert_eq!((r.code, r.outcome()), (Some(126), "refused"), "{}", r.raw);
    let error = r.json["error"].as_str().unwrap();
    assert!(error.contains("the lnk that runs this call") && error.contains("bin/lnk"), "{error}");
    // A grant beside it is fine.
    let beside =
        agent.dir.file("beside.toml", "commands = [\"true\"]\n[files]\nwrite = [\"~/Link/Files/work\"]\n");
    std::fs::create_dir_all(agent.home.join("Link/Files/work")).unwrap();
    let r = run_with(&beside);
    assert_eq!(r.code, Some(0), "{}", r.raw);
}

#[test]
fn a_spent_namespace_count_is_named_by_its_setting_not_by_its_errno() {
    // `No space left on device` is what the kernel answers when `user.max_user_namespaces` is
    // spent or 0 (some distributions ship it 0): status and the mode's reason name the setting.
    if !require(can_simulate_no_user_namespaces(), "nested user namespaces (unshare -Ur)") {
        return;
    }
    // In a user namespace of the test's own, at most one more: the one `unshare -U` makes for
    // lnk, which then cannot make its own.
    let lnk_path = lnk_bin();
    let out = run(std::process::Command::new("unshare").args([
        "-Ur",
        "sh",
        "-c",
        "echo 1 > /proc/sys/user/max_user_namespaces && exec unshare -U --map-user=1234 --map-group=1234 \"$0\" sandbox status --json",
        lnk_path.to_str().unwrap(),
    ]));
    let status: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", stderr(&out)));
    assert_eq!(status["mode"], "landlock-only", "{status}");
    for field in ["user_namespaces_error", "mode_reason"] {
        let why = status[field].as_str().unwrap_or_default();
        assert!(why.contains("user.max_user_namespaces"), "{field} names the setting: {status}");
    }
}

#[test]
fn a_kernel_that_refuses_network_namespaces_gets_the_landlock_only_mode_without_a_wait() {
    // The own world's network namespace is made by the keeper, apart from pid 1's `clone` (see
    // `sandbox::world_network`). A kernel that refuses one (here a user namespace of the test's
    // own whose `max_net_namespaces` is 0) must get the Landlock-only mode from the probe, and
    // a kept answer that promised the own world must fail at once and be probed again: never a
    // call that waits for a namespace that will not come, never a program in the host's network.
    if !require(own_world_here(), "the call's own world (user namespaces that can mount)") {
        return;
    }
    let agent = Agent::new("no-netns", "commands = [\"sh\"]\n");
    let lnk = lnk_bin().display().to_string();
    let policy = agent.policy.display().to_string();
    let script = format!(
        r#"run() {{ timeout 20 "{lnk}" sandbox run --timeout 15 --report json --file "{policy}" -- sh -c 'echo RAN'; echo "rc=$?"; }}
run
echo 0 > /proc/sys/user/max_net_namespaces || exit 9
run
run
"#
    );
    // A tmp folder of the test's own: root in the user namespace is the test's user outside, and
    // the host root's `/tmp/lnk-0` is not its.
    let tmp = agent.dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let started = std::time::Instant::now();
    let out = run(std::process::Command::new("unshare")
        .args(["--user", "--map-root-user", "sh", "-c", &script])
        .env("HOME", &agent.home)
        .env("TMPDIR", &tmp)
        .current_dir(&agent.home));
    let text = stdout(&out);
    let reports: Vec<serde_json::Value> =
        text.lines().filter(|l| l.starts_with('{')).map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(reports.len(), 3, "{text}\n{}", stderr(&out));
    assert_eq!(reports[0]["enforced"]["mode"], "own-world", "{text}");
    // The kept answer, stale now: started again in the mode the kernel gives, at once; then
    // the answer kept since.
    for r in &reports[1..] {
        assert_eq!(
            (r["outcome"].as_str(), r["enforced"]["mode"].as_str()),
            (Some("exited"), Some("landlock-only")),
            "{text}"
        );
        assert_eq!(r["stdout"]["text"], "RAN\n", "{text}");
    }
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "a call waited: {text}");
}
