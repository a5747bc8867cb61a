//! `lnk sandbox run`: which programs run, which files are reached, the environment and the
//! descriptors that cross. Each attack runs as its own sandboxed process and the test asserts
//! the precise outcome (an errno name, an exit code), so a missing tool never passes as
//! "blocked".

mod common;
use common::*;
use std::os::unix::fs::PermissionsExt as _;

const PY: &str = r#"commands = ["sh", "python3", "cat", "ls", "true", "cp", "perl-not-listed-here"]
[files]
read = ["~"]
write = ["~/Link/Files"]
"#;

#[test]
fn a_listed_program_runs_with_its_arguments_as_given() {
    let agent = Agent::new("args", PY);
    let r = agent.run(&["sh", "-c", "printf '%s|' \"$@\"", "sh", "a b", "$HOME", "'q'"]);
    assert_eq!(r.code, Some(0), "{}", r.raw);
    assert_eq!(r.out(), "a b|$HOME|'q'|");
    assert_eq!(r.outcome(), "exited");
}

#[test]
fn programs_outside_commands_are_refused_before_anything_starts() {
    let agent = Agent::new("refused", PY);
    let r = agent.run(&["perl", "-e", "1"]);
    assert_eq!(r.code, Some(126));
    assert_eq!(r.outcome(), "refused");
    assert!(
        r.json["error"].as_str().unwrap().contains("not among the sandbox file's `commands`"),
        "{}",
        r.raw
    );

    let r = agent.run(&["/usr/bin/true"]);
    assert_eq!(r.code, Some(126), "a path is never a program: {}", r.raw);

    let r = agent.run(&["perl-not-listed-here"]);
    assert_eq!(r.code, Some(127), "listed but not on this computer: {}", r.raw);
    assert_eq!(r.outcome(), "not_found");
    // Not listed and not installed: "not installed" first (127), never a fix to list it, so
    // an agent can tell "not allowed" from "not there".
    for program in ["perl-not-listed-here", "no-such-program-lnk"] {
        let r = agent.run(&[program]);
        assert_eq!((r.code, r.outcome()), (Some(127), "not_found"), "{}", r.raw);
        let denials = r.json["denials"].as_array().unwrap();
        assert_eq!(denials.len(), 1, "{}", r.raw);
        assert_eq!(denials[0]["cause"], "not_installed", "{}", r.raw);
        assert!(denials[0]["fix"].is_null(), "{}", r.raw);
        assert!(denials[0]["why"].as_str().unwrap().contains("not installed"), "{}", r.raw);
    }
    let r = agent.run(&["perl", "-e", "1"]);
    assert_eq!(r.json["denials"][0]["cause"], "not_listed", "installed, not listed: {}", r.raw);

    let off = Agent::new("off", "commands = []\n");
    let r = off.run(&["true"]);
    assert_eq!(r.code, Some(126));
    assert!(r.json["error"].as_str().unwrap().contains("run is off"), "{}", r.raw);

    let any = Agent::new("any", "commands = [\"*\"]\n");
    let r = any.run(&["id", "-u"]);
    assert_eq!(r.code, Some(0), "[\"*\"] runs any program on the system PATH: {}", r.raw);
    let r = any.run(&["no-such-program-lnk"]);
    assert_eq!(r.code, Some(127));
}

#[test]
fn the_kernel_refuses_programs_that_are_not_allowed() {
    // Refused twice: lnk refuses `perl` by name, and inside the sandbox the kernel refuses to
    // execute it whoever asks, here a shell that is allowed.
    let agent = Agent::new("twice", PY);
    let r = agent.run(&["sh", "-c", "perl -e 'print 1'; echo \"rc=$?\""]);
    assert!(r.out().contains("rc=126"), "sh could not execute perl: {}", r.raw);
    assert!(r.err().contains("Permission denied"), "{}", r.raw);

    // A copy of an allowed program in a writable folder is not executable.
    let r = agent.python(
        r#"
import shutil
dst = os.path.expanduser("~/Link/Files/mytrue")
shutil.copy("/usr/bin/true", dst)
os.chmod(dst, 0o755)
say("copy", attempt(lambda: os.execv(dst, [dst])))
"#,
    );
    r.assert_said("copy", "EACCES");

    // Nor is code in a memfd, which Landlock does not govern: an executable memfd cannot be
    // made (a plain one is made sealed non-executable, or refused where it cannot be: see
    // run_ordinary_programs.rs), and a sealed non-executable one cannot be executed.
    let r = agent.python(
        r#"
try:
    plain = os.memfd_create("x", 0)
    os.write(plain, open("/usr/bin/true", "rb").read())
    say("memfd_plain", attempt(lambda: os.execv(f"/proc/self/fd/{plain}", ["x"])))
except OSError as e:
    say("memfd_plain", "not made: " + errno.errorcode[e.errno])
say("memfd_exec_flag", attempt(lambda: os.memfd_create("x", 0x10)))
fd = os.memfd_create("x", 0x8)
os.write(fd, open("/usr/bin/true", "rb").read())
say("memfd_sealed", attempt(lambda: os.execv(f"/proc/self/fd/{fd}", ["x"])))
"#,
    );
    assert!(["EACCES", "not made: EPERM"].contains(&r.said("memfd_plain").as_str()), "{}", r.raw);
    assert!(["EACCES", "EPERM"].contains(&r.said("memfd_exec_flag").as_str()), "{}", r.raw);
    r.assert_said("memfd_sealed", "EACCES");

    // Nor a program that is on the system PATH but not listed.
    let r = agent.python(r#"say("unlisted", attempt(lambda: os.execv("/usr/bin/id", ["id"])))"#);
    r.assert_said("unlisted", "EACCES");
}

#[test]
fn a_script_whose_interpreter_is_not_allowed_does_not_run() {
    // A `#!` script on the system PATH whose interpreter is perl: listing the script does not
    // allow its interpreter.
    let Some(script) = find_script_with_interpreter("/usr/bin/perl") else {
        require(false, "a perl script on the system PATH");
        return;
    };
    let name = script.file_name().unwrap().to_str().unwrap().to_owned();
    let agent = Agent::new("script", &format!("commands = [\"{name}\"]\n"));
    for mode in modes() {
        let r = Report::from(run(in_mode(&mut agent.command(&[], &[&name, "--help"]), mode)));
        assert_eq!(r.code, Some(126), "{mode:?}: {}", r.raw);
        assert!(r.json["error"].as_str().unwrap().contains("Permission denied"), "{}", r.raw);
        // The report never contradicts itself: the program never ran, so it has no code.
        assert_eq!(r.outcome(), "refused", "{}", r.raw);
        assert_eq!(r.json["exit_code"], 126, "{}", r.raw);
        assert!(r.json["program_exit_code"].is_null() && r.json["program_signal"].is_null(), "{}", r.raw);
    }
    // Listing the interpreter too lets it start, so the refusal above was the interpreter's.
    let both = Agent::new("script2", &format!("commands = [\"{name}\", \"perl\"]\n"));
    let r = both.run(&[&name, "--help"]);
    assert_ne!(r.code, Some(126), "{}", r.raw);
}

fn find_script_with_interpreter(interpreter: &str) -> Option<std::path::PathBuf> {
    let prefix = format!("#!{interpreter}");
    let mut entries: Vec<_> = std::fs::read_dir("/usr/bin").ok()?.flatten().map(|e| e.path()).collect();
    entries.sort();
    entries.into_iter().find(|p| {
        let Ok(meta) = std::fs::symlink_metadata(p) else { return false };
        meta.is_file()
            && meta.permissions().mode() & 0o111 != 0
            && std::fs::read(p).is_ok_and(|b| b.starts_with(prefix.as_bytes()))
    })
}

#[test]
fn folders_granted_entry_by_entry_stay_folders() {
    // A grant with a hole in it (`~/proj` around its denied `secret`, `~` around `~/.ssh`,
    // `/usr` around its program folders) is given to Landlock entry by entry. A folder entry
    // must keep a folder's rights (making files in it, listing it), a file entry a file's.
    let policy = r#"commands = ["python3"]
[files]
read = ["~"]
write = ["~/proj"]
deny = ["~/proj/secret"]
"#;
    let agent = Agent::new("entries", policy);
    std::fs::create_dir_all(agent.home.join(".ssh")).unwrap();
    std::fs::write(agent.home.join(".ssh/id_test"), "secret").unwrap();
    std::fs::create_dir_all(agent.home.join("proj/sub/deep")).unwrap();
    std::fs::create_dir_all(agent.home.join("proj/secret")).unwrap();
    std::fs::write(agent.home.join("proj/secret/key"), "secret").unwrap();
    std::fs::write(agent.home.join("proj/top.txt"), "top").unwrap();
    let script = r#"
home = os.path.expanduser("~")
say("list_usr_share", attempt(lambda: os.listdir("/usr/share")))
say("list_usr_bin", attempt(lambda: os.listdir("/usr/bin")))
say("list_sub", attempt(lambda: os.listdir(home + "/proj/sub")))
new, d = home + "/proj/sub/new.txt", home + "/proj/sub/deep/d"
say("make_in_sub", attempt(lambda: (open(new, "w").write("x"), os.remove(new))))
say("mkdir_in_deep", attempt(lambda: (os.mkdir(d), os.rmdir(d))))
say("append_top", attempt(lambda: open(home + "/proj/top.txt", "a").write("x")))
say("read_key", attempt(lambda: open(home + "/proj/secret/key").read()))
say("read_ssh", attempt(lambda: open(home + "/.ssh/id_test").read()))
"#;
    for (mode, r) in agent.python_in_each_mode(script) {
        for name in
            ["list_usr_share", "list_usr_bin", "list_sub", "make_in_sub", "mkdir_in_deep", "append_top"]
        {
            assert_eq!(r.said(name), "ok", "{mode}: {name}: {}", r.raw);
        }
        // (Without a mount namespace the names in a hole can be listed, not opened: SECURITY.md.)
        assert_ne!(r.said("read_key"), "ok", "{mode}: the denied folder stays shut: {}", r.raw);
        assert_ne!(r.said("read_ssh"), "ok", "{mode}: the protected folder stays shut: {}", r.raw);
    }
}

#[test]
fn files_are_reached_only_as_granted() {
    // A home outside the host's /tmp, so the own world shows its own /tmp.
    let agent = Agent::outside_tmp("files", PY);
    let outside = agent.dir.file("outside.txt", "secret");
    std::fs::write(agent.home.join("readable.txt"), "hello").unwrap();
    let script = format!(
        r#"
home = os.path.expanduser("~")
files = home + "/Link/Files"
say("read_home", open(home + "/readable.txt").read())
say("read_outside", attempt(lambda: open("{outside}").read()))
say("write_home", attempt(lambda: open(home + "/new.txt", "w").write("x")))
say("write_files", attempt(lambda: open(files + "/new.txt", "w").write("x")))
say("truncate_readonly", attempt(lambda: os.truncate(home + "/readable.txt", 0)))
say("rename_out", attempt(lambda: os.rename(files + "/new.txt", home + "/moved.txt")))
say("symlink", attempt(lambda: os.symlink("/etc/passwd", files + "/link")))
say("write_through_link", attempt(lambda: open(files + "/link", "w")))
say("fifo", attempt(lambda: os.mkfifo(files + "/fifo")))
# (Made by an earlier run in another mode, where the program may: made again here.)
attempt(lambda: os.unlink(files + "/sock"))
say("mknod_sock", attempt(lambda: os.mknod(files + "/sock", 0o600 | 0o140000)))
say("mknod_sock_tmp", attempt(lambda: os.mknod(os.environ["TMPDIR"] + "/sock", 0o600 | 0o140000)))
say("mknod_char", attempt(lambda: os.mknod(files + "/null", 0o600 | 0o020000, os.makedev(1, 3))))
for leftover in ["link", "fifo"]:
    if os.path.lexists(files + "/" + leftover):
        os.unlink(files + "/" + leftover)
say("write_etc", attempt(lambda: open("/etc/lnk-test", "w")))
say("list_root_tmp", attempt(lambda: os.listdir("/tmp")))
say("sys", attempt(lambda: os.listdir("/sys")))
"#,
        outside = outside.display()
    );
    for (mode, r) in agent.python_in_each_mode(&script) {
        // Outside the write grants Landlock refuses (EACCES); in the call's own world the
        // read-only mount answers first (EROFS), and a rename out of a write grant crosses
        // mounts (EXDEV).
        let own_world = mode == "own-world";
        let (write_refused, rename_refused) =
            if own_world { ("EROFS", "EXDEV") } else { ("EACCES", "EACCES") };
        let said =
            |name: &str, expected: &str| assert_eq!(r.said(name), expected, "{mode}: {name}\n{}", r.err());
        said("read_home", "hello");
        // In the own world the call's /tmp hides what the harness keeps in its /tmp.
        let hidden = own_world && outside.starts_with("/tmp");
        said("read_outside", if hidden { "ENOENT" } else { "EACCES" });
        said("write_home", write_refused);
        said("write_files", "ok");
        said("truncate_readonly", write_refused);
        said("rename_out", rename_refused);
        // Symlinks and FIFOs may be made in write grants; a link leads nowhere the program
        // could not reach itself.
        said("symlink", "ok");
        said("write_through_link", write_refused);
        said("fifo", "ok");
        // Sockets in the write grants and the call's tmp where the program's own connects
        // reach only the call's (the own world's held connects); without it, the helper binds
        // beneath the write grants (run_unix_sockets.rs) and the program only in its tmp.
        // Devices never.
        said("mknod_sock", if own_world { "ok" } else { "EACCES" });
        said("mknod_sock_tmp", "ok");
        said("mknod_char", "EACCES");
        said("write_etc", write_refused);
        // The own world's /tmp is the call's own; without it, /tmp is out of reach.
        said("list_root_tmp", if own_world { "ok" } else { "EACCES" });
        said("sys", "EACCES");
    }
    assert_eq!(std::fs::read_to_string(agent.home.join("Link/Files/new.txt")).unwrap(), "x");
    assert_eq!(std::fs::read_to_string(agent.home.join("readable.txt")).unwrap(), "hello");
    assert_eq!(std::fs::read_to_string("/etc/passwd").map(|p| p.is_empty()).ok(), Some(false));
}

#[test]
fn a_grant_through_a_symlink_is_refused() {
    let agent =
        Agent::new("symlink-grant", "commands = [\"true\"]\n[files]\nwrite = [\"~/Link/Files/proj\"]\n");
    // Code the agent ran earlier planted a link where a grant points, aiming at a secret folder.
    std::fs::create_dir_all(agent.dir.join("secret")).unwrap();
    std::os::unix::fs::symlink(agent.dir.join("secret"), agent.home.join("Link/Files/proj")).unwrap();
    let r = agent.run(&["true"]);
    assert_eq!(r.code, Some(126), "{}", r.raw);
    assert!(r.json["error"].as_str().unwrap().contains("symbolic link"), "{}", r.raw);

    // A link in a middle component is refused too.
    let agent =
        Agent::new("symlink-mid", "commands = [\"true\"]\n[files]\nread = [\"~/Link/Files/lnk/inner\"]\n");
    std::fs::create_dir_all(agent.dir.join("real/inner")).unwrap();
    std::os::unix::fs::symlink(agent.dir.join("real"), agent.home.join("Link/Files/lnk")).unwrap();
    let r = agent.run(&["true"]);
    assert_eq!(r.code, Some(126), "{}", r.raw);
}

#[test]
fn a_write_grant_over_the_agents_records_is_refused() {
    let agent = Agent::new("records", "commands = [\"true\"]\n[files]\nwrite = [\"~\"]\n");
    let records = agent.home.join("Link/Agents/a");
    std::fs::create_dir_all(&records).unwrap();
    let r = Report::from(run(&mut agent.command(&["--agent-dir", records.to_str().unwrap()], &["true"])));
    assert_eq!(r.code, Some(126), "{}", r.raw);
    assert!(r.json["error"].as_str().unwrap().contains("records folder"), "{}", r.raw);
    // The same file without the records folder named runs.
    assert_eq!(agent.run(&["true"]).code, Some(0));
}

#[test]
fn each_call_has_a_fresh_private_tmp_removed_at_its_end() {
    for mode in modes() {
        let agent = Agent::outside_tmp("tmp", PY);
        let token = format!("tmp-token-{}-{mode:?}", std::process::id());
        let write = format!("echo $TMPDIR; ls -A $TMPDIR; echo x > $TMPDIR/{token} && cat $TMPDIR/{token}");
        let r = Report::from(run(in_mode(&mut agent.command(&[], &["sh", "-c", &write]), mode)));
        let lines: Vec<&str> = r.out().lines().collect();
        assert_eq!(lines.last(), Some(&"x"), "{mode:?}: {}", r.raw);
        // Fresh: nothing in it.
        let listed = &lines[1..lines.len() - 1];
        if mode == Mode::OwnWorld {
            assert_eq!(lines[0], "/tmp", "{}", r.raw);
        }
        assert!(listed.is_empty(), "{mode:?}: not fresh: {listed:?}");
        // Gone when the call ends: no call folder of this user holds the file.
        let base = std::env::temp_dir().join(format!("lnk-{}", rustix::process::geteuid().as_raw()));
        let holding: Vec<_> = std::fs::read_dir(&base)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.path().join(&token).exists() || e.path().join("tmp").join(&token).exists())
            .collect();
        assert!(holding.is_empty(), "{mode:?}: the call's tmp is removed when it ends");
        // And the next call does not see it.
        let check = format!("test -e $TMPDIR/{token} && echo seen || echo fresh");
        let r2 = Report::from(run(in_mode(&mut agent.command(&[], &["sh", "-c", &check]), mode)));
        assert_eq!(r2.out().trim(), "fresh", "{mode:?}: {}", r2.raw);
    }
}

#[test]
fn only_the_helpers_environment_crosses() {
    let agent = Agent::new("env", PY);
    let script = "import os; print('\\n'.join(f'{k}={v}' for k, v in sorted(os.environ.items())))";
    let mut cmd = agent.command(&["--env", "EXTRA=1"], &["python3", "-c", script]);
    cmd.env("LD_PRELOAD", "/tmp/evil.so").env("SECRET_TOKEN", "x").env("PATH", "/tmp/evil:/usr/bin");
    let r = Report::from(run(&mut cmd));
    let names: Vec<&str> = r.out().lines().map(|l| l.split('=').next().unwrap()).collect();
    assert_eq!(names, ["EXTRA", "HOME", "LANG", "PATH", "TERM", "TMPDIR"], "{}", r.raw);
    assert!(r.out().contains("PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin\n"));
}

#[test]
fn only_standard_streams_cross_and_stdin_is_dev_null() {
    use std::os::unix::process::CommandExt as _;
    let agent = Agent::new("fds", PY);
    let leaked = std::fs::File::open(&agent.policy).unwrap();
    let script = "import os, stat\nopen_fds = []\nfor fd in range(1024):\n    try:\n        os.fstat(fd); open_fds.append(fd)\n    except OSError: pass\nprint(open_fds)\nprint(stat.S_ISCHR(os.fstat(0).st_mode), os.fstat(0).st_rdev == os.stat('/dev/null').st_rdev)";
    let mut cmd = agent.command(&[], &["python3", "-c", script]);
    let raw = std::os::fd::AsRawFd::as_raw_fd(&leaked);
    // SAFETY: dup2 in the forked child, onto a number the child does not use otherwise.
    unsafe {
        cmd.pre_exec(move || {
            if libc::dup2(raw, 9) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let r = Report::from(run(&mut cmd));
    let lines: Vec<&str> = r.out().lines().collect();
    assert_eq!(lines[0], "[0, 1, 2]", "{}", r.raw);
    assert_eq!(lines[1], "True True", "standard input is /dev/null: {}", r.raw);
}

#[test]
fn no_new_privileges_and_a_session_of_its_own() {
    let agent = Agent::new("nnp", PY);
    let r = agent.python(
        r#"
PR_GET_NO_NEW_PRIVS = 39
say("nnp", libc.prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0))
say("own_session", os.getsid(0) == os.getpgid(0))
say("group_is_parents", os.getpgid(0) == os.getpgid(os.getppid()))
"#,
    );
    r.assert_said("nnp", "1");
    r.assert_said("own_session", "True");
    // The program's parent is the keeper, which leads the group.
    r.assert_said("group_is_parents", "True");
}

#[test]
fn the_report_says_what_was_enforced() {
    let agent = Agent::new("report", PY);
    let r = agent.run(&["true"]);
    let e = &r.json["enforced"];
    assert_eq!(e["landlock_abi_required"], 6);
    assert!(e["landlock_abi"].as_u64().unwrap() >= 6);
    assert_eq!(e["seccomp"], true);
    assert_eq!(e["network"], "none");
    assert!(e["executables"].as_u64().unwrap() >= 2, "{}", r.raw);
    assert_eq!(r.json["exit_code"], 0);
    assert_eq!(r.json["program_exit_code"], 0);
    assert!(r.json["wall_ms"].is_u64());
}

#[test]
fn refusals_explain_themselves() {
    let policy = "commands = [\"sh\", \"cat\", \"ls\", \"mkdir\", \"python3\"]\n[files]\nread = [\"~\"]\nwrite = [\"~/Link/Files\"]\n";
    for mode in modes() {
        let agent = Agent::new("denials", policy);
        // Named on lnk's command line and not listed: known, not inferred.
        let r = Report::from(run(in_mode(&mut agent.command(&[], &["seq", "3"]), mode)));
        assert_eq!(r.code, Some(126), "{}", r.raw);
        let d = &r.json["denials"][0];
        assert_eq!((d["access"].as_str(), d["target"].as_str()), (Some("run"), Some("seq")), "{}", r.raw);
        assert_eq!(d["cause"], "not_listed");
        assert_eq!(d["fix"]["words"], "add \"seq\" to commands");
        assert_eq!((d["fix"]["table"].is_null(), d["fix"]["key"].as_str()), (true, Some("commands")));
        assert_eq!(d["inferred"], false);

        // Refused inside: read from the program's own error lines, checked against the grants
        // and the files' own permissions, with the narrowest grant that would allow each.
        let outside = Scratch::new_in(std::path::Path::new("/var/tmp"), "denials-outside");
        std::fs::create_dir_all(outside.join("peers")).unwrap();
        std::fs::write(outside.join("peers/x"), "x").unwrap();
        std::fs::write(outside.join("f"), "x").unwrap();
        let ssh = agent.home.join(".ssh");
        std::fs::create_dir_all(&ssh).unwrap();
        std::fs::write(ssh.join("id_x"), "k").unwrap();
        let locked = agent.home.join("Link/Files/locked");
        std::fs::write(&locked, "x").unwrap();
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
        let o = outside.path.display();
        let script = format!(
            "seq 3; echo x > ~/notes.txt; cat ~/Link/Files/missing 2>/dev/null; \
             cat .ssh/id_x; (cd {o} && cat peers/x); ls {o}; cat ~/Link/Files/locked; cat /etc/shadow; \
             mkdir ~/newdir; python3 -c \"open('{o}/f')\"; true"
        );
        let r = Report::from(run(in_mode(&mut agent.command(&[], &["sh", "-c", &script]), mode)));
        let denials = r.json["denials"].as_array().unwrap();
        let find = |target: &str| {
            denials
                .iter()
                .find(|d| d["target"] == target)
                .unwrap_or_else(|| panic!("{mode:?}: no denial of {target}: {}", r.raw))
        };
        let says = |target: &str, access: &str, cause: &str, fix: Option<String>| {
            let d = find(target);
            assert_eq!(
                (d["access"].as_str(), d["cause"].as_str(), d["fix"]["words"].as_str().map(str::to_owned)),
                (Some(access), Some(cause), fix),
                "{mode:?}: {target}: {d}"
            );
            assert_eq!(d["inferred"], true, "{mode:?}: {d}");
        };
        let home = agent.home.display().to_string();
        says("seq", "run", "not_listed", Some("add \"seq\" to commands".into()));
        // A file to be made directly in the home: never the home for one file in it.
        says(&format!("{home}/notes.txt"), "write", "outside_grants", None);
        says(&format!("{home}/newdir"), "write", "outside_grants", None);
        // A relative path from where the program started; a secret gets no fix.
        says(&format!("{home}/.ssh/id_x"), "read", "protected", None);
        // A folder is granted itself, never its parent.
        says(&o.to_string(), "read", "outside_grants", Some(format!("add \"{o}\" to [files] read")));
        // A file's own mode refuses it: not the sandbox, no fix.
        says(&format!("{home}/Link/Files/locked"), "read", "permissions", None);
        // The message names no access: read or write, its folder to read first.
        says(
            &format!("{o}/f"),
            "read_or_write",
            "outside_grants",
            Some(format!("add \"{o}\" to [files] read")),
        );
        // /etc is readable: as an ordinary user /etc/shadow's own mode refuses it; as root it
        // is one of the system's secrets.
        let shadow = find("/etc/shadow");
        let expected = if rustix::process::geteuid().is_root() { "protected" } else { "permissions" };
        assert_eq!(
            (shadow["cause"].as_str(), &shadow["fix"]),
            (Some(expected), &serde_json::Value::Null),
            "{shadow}"
        );
        // A relative path that is not where the program started (it changed folder) is left
        // out, never resolved against the wrong folder.
        assert!(
            !denials.iter().any(|d| d["target"].as_str().unwrap().ends_with("peers/x")),
            "{mode:?}: {}",
            r.raw
        );
        assert_eq!(denials.len(), 8, "{mode:?}: nothing else is blamed on the sandbox: {}", r.raw);
    }
    // The text report says it on `lnk:` lines.
    let agent = Agent::new("denials-text", policy);
    let out = run(lnk()
        .env("HOME", &agent.home)
        .args(["sandbox", "run", "--file"])
        .arg(&agent.policy)
        .args(["--", "sh", "-c", "seq 3"]));
    assert!(stderr(&out).contains("lnk: denied: run seq: `seq`"), "{}", stderr(&out));
}

#[test]
fn a_hostile_programs_lines_never_get_a_grant_that_opens_a_secret() {
    // The lines a denial reads are the program's to choose. A secret outside every grant (a
    // project-only sandbox, with no grant on the home) is still named a secret, with no fix; a
    // path through a link the program made tells nothing; the agent's records get no fix.
    for mode in modes() {
        let agent = Agent::new(
            "denials-hostile",
            "commands = [\"sh\", \"python3\"]\n[files]\nwrite = [\"~/Link/Files\"]\n",
        );
        let home = agent.home.display().to_string();
        std::fs::create_dir_all(agent.home.join(".ssh")).unwrap();
        std::fs::write(agent.home.join(".ssh/id_x"), "k").unwrap();
        let records = agent.dir.join("records");
        std::fs::create_dir_all(&records).unwrap();
        // The link leads out of every grant to a file its own mode closes: looked at through the
        // link, it would be named (`permissions`); a link tells nothing.
        let elsewhere = agent.dir.join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::write(elsewhere.join("id_x"), "k").unwrap();
        std::fs::set_permissions(elsewhere.join("id_x"), std::fs::Permissions::from_mode(0o000)).unwrap();
        std::os::unix::fs::symlink(&elsewhere, agent.home.join("Link/Files/through")).unwrap();
        let r = Report::from(run(in_mode(
            &mut agent.command(
                &["--agent-dir", records.to_str().unwrap()],
                &[
                    "sh",
                    "-c",
                    &format!(
                        "echo \"ls: cannot open directory '{home}/.ssh': Permission denied\" >&2; \
                         echo \"touch: cannot touch '{home}/.ssh/authorized_keys': Permission denied\" >&2; \
                         echo \"cat: {r}/runs/r1.toml: Permission denied\" >&2; \
                         echo \"cat: {home}/Link/Files/through/id_x: Permission denied\" >&2; \
                         python3 -c \"import os; os.chmod('{home}/.ssh', 0o777)\" 2>/dev/null; true",
                        r = records.display()
                    ),
                ],
            ),
            mode,
        )));
        let denials = r.json["denials"].as_array().unwrap();
        for target in [
            format!("{home}/.ssh"),
            format!("{home}/.ssh/authorized_keys"),
            format!("{}/runs/r1.toml", records.display()),
        ] {
            let d = denials
                .iter()
                .find(|d| d["target"] == target.as_str() && d["inferred"] == true)
                .unwrap_or_else(|| panic!("{mode:?}: {target}: {}", r.raw));
            assert_eq!(
                (d["cause"].as_str(), &d["fix"]),
                (Some("protected"), &serde_json::Value::Null),
                "{mode:?}: {d}"
            );
        }
        assert!(
            !denials.iter().any(|d| d["target"].as_str().unwrap().contains("through")),
            "{mode:?}: a path through a link tells nothing: {}",
            r.raw
        );
        if mode == Mode::LandlockOnly {
            let held =
                denials.iter().find(|d| d["access"] == "metadata").unwrap_or_else(|| panic!("{}", r.raw));
            assert_eq!(
                (held["cause"].as_str(), &held["fix"]),
                (Some("protected"), &serde_json::Value::Null),
                "{held}"
            );
        }
        assert!(
            denials
                .iter()
                .all(|d| d["fix"].is_null() || !d["fix"]["value"].as_str().unwrap().contains(".ssh")),
            "{mode:?}: {}",
            r.raw
        );
    }
}

#[test]
fn one_calls_timeout_and_output_are_set_beside_the_file() {
    // A harness that keeps one sandbox file per agent gives one long build, or one quick probe,
    // its own limit without rewriting the file; nothing else may be changed beside it.
    let agent = Agent::new("call-limits", "commands = [\"sleep\", \"sh\"]\n[tool.run]\ntimeout = 300\n");
    for mode in modes() {
        let r = Report::from(run(in_mode(&mut agent.command(&["--timeout", "1"], &["sleep", "30"]), mode)));
        assert_eq!((r.outcome(), r.code), ("timed_out", Some(124)), "{mode:?}: {}", r.raw);
        let printed = "printf '%0200d' 0";
        let r =
            Report::from(run(in_mode(&mut agent.command(&["--output", "50"], &["sh", "-c", printed]), mode)));
        assert_eq!(r.code, Some(0), "{mode:?}: {}", r.raw);
        assert!(r.json["stdout"]["cut_chars"].as_u64().unwrap() > 0, "{mode:?}: {}", r.raw);
        let r = Report::from(run(in_mode(&mut agent.command(&[], &["sh", "-c", printed]), mode)));
        assert_eq!(r.json["stdout"]["cut_chars"], 0, "{mode:?}: the file's own limit otherwise: {}", r.raw);
    }
    let out = run(&mut agent.command(&["--command", "cat"], &["cat", "/etc/hostname"]));
    assert_eq!(out.status.code(), Some(2), "a grant beside the file is a usage error");
}

#[test]
fn the_text_report_says_where_the_program_started_and_what_tmp_was() {
    // A harness's work folder beneath the host's /tmp, in no grant: the own world shows its own
    // /tmp there, so the program starts elsewhere, and a person reading the text is told why.
    let scratch = Scratch::new_in(std::path::Path::new("/tmp"), "text-notes-work");
    let work = scratch.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let call = |agent: &Agent, mode: Mode| {
        let mut c = lnk();
        c.env("HOME", &agent.home).current_dir(&work);
        c.args(["sandbox", "run", "--file"]).arg(&agent.policy).args(["--", "sh", "-c", "pwd"]);
        let out = run(in_mode(&mut c, mode));
        assert_eq!(out.status.code(), Some(0), "{mode:?}: {}", stderr(&out));
        (stdout(&out).trim().to_owned(), stderr(&out))
    };
    let no_grants = Agent::new("text-notes", "commands = [\"sh\"]\n");
    // The home granted, beneath the host's /tmp here, with its secrets: the own world then shows
    // the host's /tmp read-only, and the call's own tmp elsewhere.
    let home_granted = Agent::new("text-notes-home", "commands = [\"sh\"]\n[files]\nread = [\"~\"]\n");
    for mode in modes() {
        let (started, notes) = call(&no_grants, mode);
        match mode {
            Mode::OwnWorld => {
                assert_ne!(started, work.display().to_string(), "{mode:?}");
                let said = format!("lnk: started in `{started}`, not the caller's folder: ");
                assert!(notes.contains(&said) && notes.contains("/tmp"), "{mode:?}: {notes}");
            }
            Mode::LandlockOnly => {
                assert_eq!(started, work.display().to_string(), "{mode:?}");
                assert!(
                    notes.contains("lnk: Landlock-only mode") && notes.contains("($TMPDIR)"),
                    "{mode:?}: {notes}"
                );
                assert!(!notes.contains("started in"), "{mode:?}: {notes}");
            }
        }
        let (_, notes) = call(&home_granted, mode);
        if home_granted.home.starts_with("/tmp") && mode == Mode::OwnWorld {
            assert!(notes.contains("lnk: the host's /tmp is shown read-only"), "{mode:?}: {notes}");
        }
    }
}
