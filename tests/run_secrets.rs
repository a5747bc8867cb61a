//! `lnk sandbox run`: the secrets (the protected set, `[files] deny`, the agent's records) stay
//! closed from wherever a harness starts a call and by whatever path the program takes: a
//! relative one from its starting folder, an absolute one, a name an earlier call moved.
//!
//! Every test runs in both modes (the own world, and Landlock only on a simulated kernel), as
//! root and as the ordinary user (the suite runs twice). In the own world the two layers that
//! keep a secret (Landlock's holes, and the masks) are each also turned off in turn
//! (`LNK_TEST_WITHOUT`, a switch of test builds only), to show the other holds alone.

mod common;
use common::*;

use std::path::{Path, PathBuf};

const POLICY: &str = r#"commands = ["sh", "cat", "ls", "mv", "chmod", "ln", "tail", "python3"]
[files]
read = ["~"]
write = ["~/Link/Files"]
deny = ["~/private", "~/Link/Files/denied"]
"#;

/// The secrets planted in a home: (path beneath the home, contents).
const SECRETS: &[(&str, &str)] = &[
    (".ssh/id_ed25519", "SECRET-ssh"),
    (".aws/credentials", "SECRET-aws"),
    (".config/gh/hosts.yml", "SECRET-gh"),
    (".netrc", "SECRET-netrc"),
    ("private/p.txt", "SECRET-deny"),
    ("Link/Files/denied/d.txt", "SECRET-deny-in-write"),
    ("agent/runs/r.toml", "SECRET-record"),
];

/// Where a harness starts a call.
#[derive(Debug, Clone, Copy)]
enum Start {
    /// Inside a write grant.
    WriteGrant,
    /// Inside a read grant.
    ReadGrant,
    /// Beneath the host's /tmp: the agent's home is there too (what `mkdtemp` gives a harness).
    BeneathHostTmp,
    /// Outside every grant.
    OutsideGrants,
}

const STARTS: [Start; 4] = [Start::WriteGrant, Start::ReadGrant, Start::BeneathHostTmp, Start::OutsideGrants];

/// An agent with the secrets planted, and the folder to start from.
fn agent_for(start: Start, name: &str, policy: &str) -> (Agent, PathBuf) {
    let agent = match start {
        Start::BeneathHostTmp => Agent::new(name, policy),
        _ => Agent::outside_tmp(name, policy),
    };
    for (rel, contents) in SECRETS {
        let path = agent.home.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, contents).unwrap();
    }
    let folder = match start {
        Start::WriteGrant | Start::BeneathHostTmp => agent.home.join("Link/Files/work"),
        Start::ReadGrant => agent.home.join("docs"),
        Start::OutsideGrants => agent.dir.join("outside"),
    };
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::create_dir_all(agent.home.join("Link/Files/work")).unwrap();
    (agent, folder)
}

/// The own world's two layers, each turned off in turn (the Landlock-only mode has one).
const LAYERS_OFF_IN_THE_OWN_WORLD: [&str; 2] = ["masks", "landlock-holes"];

fn assert_no_secret(r: &Report, context: &str) {
    for (_, secret) in SECRETS {
        assert!(!r.raw.contains(secret), "{context}: {secret} came out:\n{}", r.raw);
    }
}

#[test]
fn no_secret_opens_from_any_start_by_any_path() {
    for start in STARTS {
        let (agent, folder) = agent_for(start, "secrets-paths", POLICY);
        let mut script = String::from("cd \"$START\" || exit 9\n");
        for (rel, _) in SECRETS {
            let secret = agent.home.join(rel);
            let relative = relative(&folder, &secret);
            script.push_str(&format!(
                "cat '{}' '{}' 2>/dev/null; ls -a '{}' 2>/dev/null\n",
                relative.display(),
                secret.display(),
                relative.parent().unwrap_or(Path::new(".")).display()
            ));
        }
        // The secrets' folders themselves, listed: in the own world a mask shows nothing.
        script.push_str("ls -a ~/.ssh ~/private 2>/dev/null; echo done\n");
        let start_dir = folder.to_string_lossy().into_owned();
        let records = agent.home.join("agent");
        let extra = ["--agent-dir", records.to_str().unwrap()];
        let env = [("START", start_dir.as_str())];
        let mut reports = agent.in_each_mode_at(&folder, &extra, &env, &["sh", "-c", &script]);
        for off in LAYERS_OFF_IN_THE_OWN_WORLD {
            let env = [("START", start_dir.as_str()), ("LNK_TEST_WITHOUT", off)];
            reports
                .extend(agent.own_world_at(&folder, &extra, &env, &["sh", "-c", &script]).map(|r| (off, r)));
        }
        for (mode, r) in reports {
            let context = format!("{start:?}, {mode}");
            assert!(r.out().contains("done"), "{context}: the script did not run:\n{}", r.raw);
            assert_no_secret(&r, &context);
        }
    }
}

#[test]
fn the_program_starts_in_its_starting_folder_and_writes_there_by_relative_paths() {
    for start in STARTS {
        let (agent, folder) = agent_for(start, "secrets-start", POLICY);
        let work = agent.home.join("Link/Files/work");
        let to_work = relative(&folder, &work);
        let script = format!(
            "pwd; echo written >> '{}/rel.txt' && tail -n 1 '{}/rel.txt'",
            to_work.display(),
            to_work.display()
        );
        let reports = agent.in_each_mode_at(&folder, &[], &[], &["sh", "-c", &script]);
        for (mode, r) in &reports {
            let context = format!("{start:?}, {mode}");
            assert_eq!(r.out(), format!("{}\nwritten\n", folder.display()), "{context}: {}", r.raw);
            assert_eq!(r.code, Some(0), "{context}: {}", r.raw);
            assert_eq!(r.json["enforced"]["cwd"], folder.to_str().unwrap(), "{context}");
            assert_eq!(r.json["enforced"]["cwd_is_callers"], true, "{context}");
        }
        // One line from each call, in the folder the relative path names.
        let written = std::fs::read_to_string(work.join("rel.txt")).unwrap();
        assert_eq!(written, "written\n".repeat(reports.len()), "{start:?}");
    }
}

#[test]
fn a_starting_folder_the_world_hides_is_left_for_the_home_and_said() {
    // Beneath the host's /tmp and outside every grant: the call's own /tmp covers it in the own
    // world, so the program starts in its home and the report says why; the Landlock-only mode
    // shows it (and Landlock refuses what is in it).
    let (agent, _) = agent_for(Start::WriteGrant, "secrets-hidden-start", POLICY);
    let hidden = Scratch::new("hidden-start");
    for (mode, r) in agent.in_each_mode_at(&hidden.path, &[], &[], &["sh", "-c", "pwd; ls"]) {
        let cwd = r.json["enforced"]["cwd"].as_str().unwrap().to_owned();
        assert_eq!(r.out().lines().next(), Some(cwd.as_str()), "{mode}: {}", r.raw);
        match mode {
            "own-world" => {
                assert_eq!(cwd, agent.home.to_str().unwrap(), "{}", r.raw);
                assert_eq!(r.json["enforced"]["cwd_is_callers"], false);
                let why = r.json["enforced"]["cwd_reason"].as_str().unwrap();
                assert!(why.contains(hidden.path.to_str().unwrap()) && why.contains("/tmp"), "{why}");
            }
            _ => {
                assert_eq!(cwd, hidden.path.to_str().unwrap(), "{}", r.raw);
                assert_eq!(r.json["enforced"]["cwd_reason"], serde_json::Value::Null);
            }
        }
    }
    // Inside a secret: never started there, in either mode.
    let ssh = agent.home.join(".ssh");
    for (mode, r) in agent.in_each_mode_at(&ssh, &[], &[], &["sh", "-c", "pwd; cat id_ed25519"]) {
        assert_eq!(r.json["enforced"]["cwd"], agent.home.to_str().unwrap(), "{mode}: {}", r.raw);
        assert_eq!(r.json["enforced"]["cwd_is_callers"], false, "{mode}");
        assert_no_secret(&r, mode);
    }
}

/// A home where the whole home is writable (`write = ["~"]`), with a `deny` inside a write grant.
const WRITE_HOME: &str = r#"commands = ["sh", "cat", "ls", "mv", "chmod", "ln"]
[files]
read = ["~"]
write = ["~"]
deny = ["~/proj/conf/s"]
"#;

#[test]
fn a_secret_one_call_tried_to_move_stays_closed_to_the_next() {
    let first = "mv ~/.config ~/.cfgx; mv ~/.config/gh ~/.config/gx; mv ~/proj/conf ~/proj/conf2; \
                 mv ~/.ssh ~/.sshx; ln -s .ssh ~/keys; echo tried";
    let second = "cat ~/.cfgx/gh/hosts.yml ~/.config/gx/hosts.yml ~/proj/conf2/s/x ~/.sshx/id_ed25519 \
                  ~/keys/id_ed25519 ~/.config/gh/hosts.yml ~/proj/conf/s/x; echo read";
    // Both modes with every layer; then the own world with each of its two layers alone.
    for off in [""].into_iter().chain(LAYERS_OFF_IN_THE_OWN_WORLD) {
        let (agent, _) = agent_for(Start::WriteGrant, "secrets-moved", WRITE_HOME);
        let s = agent.home.join("proj/conf/s");
        std::fs::create_dir_all(&s).unwrap();
        std::fs::write(s.join("x"), "SECRET-proj").unwrap();
        let home = agent.home.clone();
        let calls = |script: &str| match off {
            "" => agent.in_each_mode_at(&home, &[], &[], &["sh", "-c", script]),
            _ => agent
                .own_world_at(&home, &[], &[("LNK_TEST_WITHOUT", off)], &["sh", "-c", script])
                .map(|r| ("own-world", r))
                .into_iter()
                .collect(),
        };
        for (mode, r) in calls(first) {
            assert!(r.out().contains("tried"), "{mode}: {}", r.raw);
            // Every name is where it was: no call moved a secret from under its protection.
            for kept in [".config/gh/hosts.yml", "proj/conf/s/x", ".ssh/id_ed25519"] {
                assert!(home.join(kept).exists(), "{mode}, without {off:?}: `{kept}` was moved:\n{}", r.raw);
            }
        }
        for (mode, r) in calls(second) {
            assert!(r.out().contains("read"), "{mode}: {}", r.raw);
            assert_no_secret(&r, &format!("{mode}, without {off:?}"));
            assert!(!r.raw.contains("SECRET-proj"), "{mode}, without {off:?}: {}", r.raw);
        }
    }
}

#[test]
fn a_folder_one_call_made_unsearchable_fails_the_next_instead_of_hiding_a_secret() {
    let (agent, _) = agent_for(Start::WriteGrant, "secrets-mode", WRITE_HOME);
    let home = agent.home.clone();
    // The first call's `chmod 000 ~` (the own world lets a program change modes in its write
    // grants; the Landlock-only mode refuses it, so the harness's own chmod stands in for it),
    // before each second call, whose program then tries to open the folder again.
    use std::os::unix::fs::PermissionsExt as _;
    let second = "chmod 755 ~; cat ~/.ssh/id_ed25519; echo read";
    let mut reports = Vec::new();
    let cwd = agent.dir.path.clone();
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o000)).unwrap();
    reports.extend(agent.own_world_at(&cwd, &[], &[], &["sh", "-c", second]).map(|r| ("own-world", r)));
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o000)).unwrap();
    reports
        .extend(agent.landlock_only_at(&cwd, &[], &[], &["sh", "-c", second]).map(|r| ("landlock-only", r)));
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o755)).unwrap();
    // lnk runs as root only in the own world of the root pass: the simulated kernel runs it as
    // an ordinary user of a user namespace.
    let root = rustix::process::geteuid().is_root();
    for (mode, r) in reports {
        assert_no_secret(&r, mode);
        if root && mode == "own-world" {
            // Root searches any folder: lnk finds the secret and closes it as ever.
            assert!(r.out().contains("read"), "{mode}: {}", r.raw);
        } else {
            assert_eq!(r.code, Some(125), "{mode}: {}", r.raw);
            let error = r.json["error"].as_str().unwrap();
            assert!(error.contains("chmod u+rx") && error.contains(home.to_str().unwrap()), "{error}");
        }
    }
}

#[test]
fn nested_denies_and_a_planted_link_fail_no_call_and_move_no_mask() {
    let policy = r#"commands = ["sh", "cat", "ln"]
[files]
read = ["~"]
write = ["~/proj"]
deny = ["~/proj/conf/s", "~/proj/conf", "~/notes/x", "~/notes"]
"#;
    let (agent, _) = agent_for(Start::WriteGrant, "secrets-nested", policy);
    std::fs::create_dir_all(agent.home.join("proj/conf/s")).unwrap();
    std::fs::write(agent.home.join("proj/conf/s/x"), "SECRET-nested").unwrap();
    std::fs::create_dir_all(agent.home.join("notes/x")).unwrap();
    std::fs::create_dir_all(agent.home.join("proj/work")).unwrap();
    std::fs::write(agent.home.join("proj/work/w.txt"), "visible").unwrap();
    let home = agent.home.clone();
    for (mode, r) in
        agent.in_each_mode_at(&home, &[], &[], &["sh", "-c", "cat proj/conf/s/x; cat proj/work/w.txt"])
    {
        assert_eq!(r.out(), "visible", "{mode}: {}", r.raw);
        assert!(!r.raw.contains("SECRET-nested"), "{mode}: {}", r.raw);
    }
    // A link on the way to a denied path: no program of the sandbox can make one there (the
    // folder on the way to a hole may only be listed), so one there is the person's, and where it
    // leads is what they keep out; a later call neither fails nor reads it. A link that leads to
    // a grant never makes the grant a hole.
    let policy = "commands = [\"sh\", \"cat\", \"ln\", \"ls\"]\n[files]\nread = [\"~\"]\nwrite = [\"~/proj\"]\ndeny = [\"~/proj/cfg/s\", \"~/proj/up\"]\n";
    let (agent, _) = agent_for(Start::WriteGrant, "secrets-planted", policy);
    std::fs::create_dir_all(agent.home.join("proj/work/s")).unwrap();
    std::fs::write(agent.home.join("proj/work/s/w.txt"), "SECRET-behind-a-link").unwrap();
    std::fs::write(agent.home.join("proj/work/v.txt"), "visible").unwrap();
    let home = agent.home.clone();
    for (mode, r) in
        agent.in_each_mode_at(&home, &[], &[], &["sh", "-c", "ln -s work proj/cfg || echo refused"])
    {
        assert_eq!(r.out(), "refused\n", "{mode}: a program planted a link beside a hole: {}", r.raw);
    }
    std::os::unix::fs::symlink("work", home.join("proj/cfg")).unwrap();
    std::os::unix::fs::symlink(".", home.join("proj/up")).unwrap();
    let script = "cat proj/work/s/w.txt proj/cfg/s/w.txt; cat proj/work/v.txt; ls proj/up/work/v.txt";
    for (mode, r) in agent.in_each_mode_at(&home, &[], &[], &["sh", "-c", script]) {
        assert!(r.json["enforced"].is_object(), "{mode}: the call ran: {}", r.raw);
        assert!(!r.raw.contains("SECRET-behind-a-link"), "{mode}: {}", r.raw);
        assert!(r.out().starts_with("visible"), "{mode}: the grant itself stays granted: {}", r.raw);
    }
}

#[test]
fn a_write_grant_over_lnks_private_tmp_base_is_refused() {
    let (agent, _) = agent_for(Start::WriteGrant, "secrets-tmp-base", WRITE_HOME);
    let tmpdir = agent.home.join("tmp");
    std::fs::create_dir_all(&tmpdir).unwrap();
    let mut c = agent.command(&[], &["sh", "-c", "echo ran"]);
    c.env("TMPDIR", &tmpdir);
    for mode in modes() {
        let r = Report::from(run(in_mode(&mut c, mode)));
        assert_eq!(r.code, Some(126), "{mode:?}: {}", r.raw);
        assert!(r.json["error"].as_str().unwrap().contains("every call's own tmp folder"), "{}", r.raw);
        assert!(!r.out().contains("ran"));
    }
}

#[test]
fn as_root_what_only_root_may_read_stays_closed() {
    // Both modes as the user the suite runs as (the Landlock-only mode forced in the test build:
    // a simulated kernel would not run lnk as root). As an ordinary user the files' modes close
    // them; as root, lnk does.
    let (agent, folder) = agent_for(Start::WriteGrant, "secrets-root", POLICY);
    let keys: Vec<String> = std::fs::read_dir("/etc/ssh")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().to_string_lossy().into_owned())
        .filter(|p| p.contains("ssh_host_") && p.ends_with("_key"))
        .collect();
    let mut secrets = keys.clone();
    secrets.extend(["/etc/shadow", "/etc/gshadow", "/etc/apt/auth.conf.d/lnk-test.conf"].map(str::to_owned));
    if rustix::process::geteuid().is_root() {
        // A repository password of apt's, and /proc's files only root may read.
        std::fs::create_dir_all("/etc/apt/auth.conf.d").unwrap();
        std::fs::write("/etc/apt/auth.conf.d/lnk-test.conf", "machine x login y password z\n").unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(
            "/etc/apt/auth.conf.d/lnk-test.conf",
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        secrets.extend(["/proc/slabinfo", "/proc/timer_list"].map(str::to_owned));
    }
    secrets.retain(|k| Path::new(k).exists());
    assert!(secrets.iter().any(|s| s == "/etc/shadow"), "this machine has no /etc/shadow");
    let script = format!(
        "for f in {}; do if cat \"$f\" >/dev/null 2>&1; then echo \"open: $f\"; fi; done; cat /etc/passwd >/dev/null && echo done",
        secrets.iter().map(|k| format!("'{k}'")).collect::<Vec<_>>().join(" ")
    );
    for mode in modes() {
        let mut c = agent.command(&[], &["sh", "-c", &script]);
        let r = Report::from(run(in_mode(c.current_dir(&folder), mode)));
        assert_eq!(r.out(), "done\n", "{mode:?}: a file only root may read was open: {}", r.raw);
    }
    // Without a network namespace of its own, the host's network secrets (the own world's
    // `/proc/sys/net` is its own namespace's).
    let fastopen = "cat /proc/sys/net/ipv4/tcp_fastopen_key >/dev/null 2>&1 && echo open; echo done";
    let mut c = agent.command(&[], &["sh", "-c", fastopen]);
    let r = Report::from(run(in_mode(c.current_dir(&folder), Mode::LandlockOnly)));
    assert_eq!(r.out(), "done\n", "the host's TCP fast-open key was open: {}", r.raw);
    // The own world's two layers, each alone (for the files of the system's folders: the
    // world's own /proc has its masks only, since a cut of it would leave out the processes that
    // start later).
    let system_only = script.replace("'/proc/slabinfo' '/proc/timer_list'", "");
    for off in LAYERS_OFF_IN_THE_OWN_WORLD {
        let r = agent.own_world_at(&folder, &[], &[("LNK_TEST_WITHOUT", off)], &["sh", "-c", &system_only]);
        if let Some(r) = r {
            assert_eq!(r.out(), "done\n", "own world without {off}: a root-only file was open: {}", r.raw);
        }
    }
    // A grant that names such a folder means it.
    let Some(key) = keys.first() else { return };
    if !rustix::process::geteuid().is_root() {
        return;
    }
    let policy = "commands = [\"cat\"]\n[files]\nread = [\"~\", \"/etc/ssh\"]\n";
    let (named, folder) = agent_for(Start::WriteGrant, "secrets-root-named", policy);
    for mode in modes() {
        let mut c = named.command(&[], &["cat", key]);
        let r = Report::from(run(in_mode(c.current_dir(&folder), mode)));
        assert_eq!(r.code, Some(0), "{mode:?}: a grant that names /etc/ssh gives its keys: {}", r.raw);
    }
}

#[test]
fn a_secret_made_during_a_call_stays_closed_to_it() {
    // A home beneath the host's /tmp with no secret yet: one made while the call runs (a key
    // generated, a record written) is as closed as one that was there (the own world keeps the
    // host's /tmp there, where Landlock's cut holds).
    let policy = "commands = [\"sh\", \"cat\", \"sleep\", \"test\"]\n[files]\nread = [\"~\"]\nwrite = [\"~/Link/Files\"]\n";
    // No secret at all when the call starts.
    let agent = Agent::new("secrets-late", policy);
    let folder = agent.home.join("Link/Files/work");
    std::fs::create_dir_all(&folder).unwrap();
    let records = agent.home.join("agent");
    // The program marks that it runs (its world is built by then), and only then are the
    // secrets made: made earlier, they would be there at the start, which other tests cover.
    let script = ": > started; while ! test -e ~/.ssh/late; do sleep 0.05; done; cat ~/.ssh/late ~/agent/runs/r; cat ../../.ssh/late; echo done";
    for mode in modes() {
        let mut c = agent.command(&["--agent-dir", records.to_str().unwrap()], &["sh", "-c", script]);
        c.current_dir(&folder).stdout(std::process::Stdio::piped());
        let child = in_mode(&mut c, mode).spawn().unwrap();
        let started = folder.join("started");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !started.exists() {
            assert!(std::time::Instant::now() < deadline, "{mode:?}: the program never started");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        std::fs::remove_file(&started).unwrap();
        std::fs::create_dir_all(records.join("runs")).unwrap();
        std::fs::write(records.join("runs/r"), "SECRET-late-record").unwrap();
        std::fs::create_dir_all(agent.home.join(".ssh")).unwrap();
        std::fs::write(agent.home.join(".ssh/late"), "SECRET-late-key").unwrap();
        let r = Report::from(child.wait_with_output().unwrap());
        assert!(r.out().contains("done"), "{mode:?}: {}", r.raw);
        assert!(
            !r.raw.contains("SECRET-late"),
            "{mode:?}: a secret made during the call was read: {}",
            r.raw
        );
        for relative in [".ssh", "agent"] {
            std::fs::remove_dir_all(agent.home.join(relative)).unwrap();
        }
    }
}

#[test]
fn a_persons_links_to_secrets_are_followed_even_inside_a_write_grant() {
    // A stow-style home: `~/.ssh` is a link to `~/dotfiles/ssh`, and the whole home writable.
    let policy =
        "commands = [\"sh\", \"cat\"]\n[files]\nread = [\"~\"]\nwrite = [\"~\"]\ndeny = [\"~/proj/conf\"]\n";
    let (agent, _) = agent_for(Start::WriteGrant, "secrets-stow", policy);
    std::fs::remove_dir_all(agent.home.join(".ssh")).unwrap();
    std::fs::create_dir_all(agent.home.join("dotfiles/ssh")).unwrap();
    std::fs::write(agent.home.join("dotfiles/ssh/id"), "SECRET-stow").unwrap();
    std::os::unix::fs::symlink("dotfiles/ssh", agent.home.join(".ssh")).unwrap();
    // A denied folder that is a link to another.
    std::fs::create_dir_all(agent.home.join("shared-conf")).unwrap();
    std::fs::write(agent.home.join("shared-conf/s"), "SECRET-shared").unwrap();
    std::fs::create_dir_all(agent.home.join("proj")).unwrap();
    std::os::unix::fs::symlink("../shared-conf", agent.home.join("proj/conf")).unwrap();
    let home = agent.home.clone();
    let script = "cat ~/.ssh/id ~/dotfiles/ssh/id proj/conf/s shared-conf/s; echo x >> ~/.ssh/id; echo done";
    for (mode, r) in agent.in_each_mode_at(&home, &[], &[], &["sh", "-c", script]) {
        assert!(r.out().contains("done"), "{mode}: {}", r.raw);
        assert!(!r.raw.contains("SECRET-"), "{mode}: {}", r.raw);
    }
    assert_eq!(std::fs::read_to_string(home.join("dotfiles/ssh/id")).unwrap(), "SECRET-stow");
}

#[test]
fn a_grant_beneath_a_protected_folder_opens_that_folder_alone() {
    let policy =
        "commands = [\"sh\", \"cat\"]\n[files]\nread = [\"~\", \"~/.config/gcloud/configurations\"]\n";
    let (agent, _) = agent_for(Start::WriteGrant, "secrets-inner", policy);
    let gcloud = agent.home.join(".config/gcloud");
    std::fs::create_dir_all(gcloud.join("configurations")).unwrap();
    std::fs::write(gcloud.join("access_tokens.db"), "SECRET-gcloud").unwrap();
    std::fs::write(gcloud.join("configurations/config_default"), "granted").unwrap();
    let home = agent.home.clone();
    let script = "cat ~/.config/gcloud/configurations/config_default; cat ~/.config/gcloud/access_tokens.db; echo done";
    for (mode, r) in agent.in_each_mode_at(&home, &[], &[], &["sh", "-c", script]) {
        assert!(r.out().starts_with("granted"), "{mode}: the grant is open: {}", r.raw);
        assert!(!r.raw.contains("SECRET-gcloud"), "{mode}: {}", r.raw);
    }
}

/// Whether this test may do what only root can (mount, write system folders); says so loudly
/// when it may not (the root pass runs it).
fn root_for(what: &str) -> bool {
    let root = rustix::process::geteuid().is_root();
    if !root {
        eprintln!("\n!!! SKIPPED as an ordinary user: {what} needs root; the root pass runs it !!!\n");
    }
    root
}

#[test]
fn a_folder_bound_again_inside_a_grant_never_reaches_the_secrets_beneath_it() {
    if !root_for("a bind mount") {
        return;
    }
    // The home, bound again at `alias` inside the grant (a person's or an admin's mount): the
    // alias is the home's folder by another name, and is never granted whole.
    let scratch = Scratch::new_in(std::path::Path::new("/var/tmp"), "secrets-alias");
    let home = scratch.join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::create_dir_all(home.join("Link/Files")).unwrap();
    std::fs::write(home.join(".ssh/id"), "SECRET-alias").unwrap();
    std::fs::create_dir_all(scratch.join("alias")).unwrap();
    let status = std::process::Command::new("mount")
        .args(["--bind", home.to_str().unwrap(), scratch.join("alias").to_str().unwrap()])
        .status()
        .unwrap();
    assert!(status.success(), "mount --bind");
    let policy = scratch.file(
        "sb.toml",
        format!("commands = [\"sh\", \"cat\"]\n[files]\nread = [\"{}\"]\n", scratch.path.display()),
    );
    let script = format!("cat {0}/home/.ssh/id {0}/alias/.ssh/id; echo done", scratch.path.display());
    let mut reports = Vec::new();
    for mode in modes() {
        let mut c = lnk();
        c.env("HOME", &home).current_dir(&home);
        c.args(["sandbox", "run", "--report", "json", "--file"])
            .arg(&policy)
            .args(["--", "sh", "-c", &script]);
        reports.push((mode, Report::from(run(in_mode(&mut c, mode)))));
    }
    let _ = std::process::Command::new("umount").arg(scratch.join("alias")).status();
    for (mode, r) in reports {
        assert!(r.out().contains("done"), "{mode:?}: {}", r.raw);
        assert!(!r.raw.contains("SECRET-alias"), "{mode:?}: {}", r.raw);
    }
}

#[test]
fn under_any_program_a_denied_file_in_a_system_folder_stays_closed() {
    if !root_for("writing a system folder") {
        return;
    }
    let secret = std::path::PathBuf::from(format!("/usr/local/share/lnk-test-denied-{}", std::process::id()));
    std::fs::write(&secret, "SECRET-system").unwrap();
    let policy = format!("commands = [\"*\"]\n[files]\ndeny = [\"{}\"]\n", secret.display());
    let (agent, folder) = agent_for(Start::WriteGrant, "secrets-any", &policy);
    let mut reports = Vec::new();
    for mode in modes() {
        let mut c = agent.command(&[], &["cat", secret.to_str().unwrap()]);
        reports.push((mode, Report::from(run(in_mode(c.current_dir(&folder), mode)))));
        let mut c = agent.command(&[], &["cat", secret.to_str().unwrap()]);
        c.current_dir(&folder).env("LNK_TEST_WITHOUT", "masks");
        reports.push((mode, Report::from(run(in_mode(&mut c, mode)))));
    }
    std::fs::remove_file(&secret).unwrap();
    for (mode, r) in reports {
        assert!(!r.raw.contains("SECRET-system"), "{mode:?}: {}", r.raw);
    }
}

#[test]
fn a_secret_folders_names_are_listed_only_where_the_mode_says_it_lacks_that() {
    // The own world covers a hole with an empty mask; the Landlock-only mode cannot (the
    // folders on the way to a hole may be listed), and says so in `lacks` and `status`.
    let agent = Agent::new("secret-names", "commands = [\"sh\", \"ls\", \"cat\"]\n[files]\nread = [\"~\"]\n");
    std::fs::create_dir_all(agent.home.join(".ssh")).unwrap();
    std::fs::write(agent.home.join(".ssh/id_named_only"), "secret\n").unwrap();
    for mode in modes() {
        let mut c = agent.command(&[], &["sh", "-c", "ls -a ~/.ssh; cat ~/.ssh/id_named_only; echo done"]);
        let r = Report::from(run(in_mode(&mut c, mode)));
        assert!(r.out().contains("done") && !r.out().contains("secret"), "{mode:?}: {}", r.raw);
        let listed = r.out().contains("id_named_only");
        let said = r.json["enforced"]["lacks"].to_string().contains("a secret folder's names kept out");
        assert_eq!(
            (listed, said),
            (mode == Mode::LandlockOnly, mode == Mode::LandlockOnly),
            "{mode:?}: {}",
            r.raw
        );
    }
}
