//! `lnk sandbox check` against the real binary: every kind of mistake gets its line, column and
//! text; every problem in a file is reported at once; odd files never hang or panic.

mod common;
use common::*;

/// Checks `text` and asserts the exit code 1 and each `(line, col, message fragment)`.
fn assert_errors(text: &str, expected: &[(usize, usize, &str)]) {
    let dir = Scratch::new("check");
    let file = dir.file("s.toml", text);
    let out = run(lnk().args(["sandbox", "check"]).arg(&file));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{text}\n{err}");
    for (line, col, message) in expected {
        let head = format!("{}:{line}:{col}: error: ", file.display());
        let found = err.lines().any(|l| l.starts_with(&head) && l.contains(message));
        assert!(found, "expected `{head}…{message}` in:\n{err}");
    }
    let n = expected.len();
    assert!(err.contains(&format!(": {n} error{}\n", if n == 1 { "" } else { "s" })), "count {n} in:\n{err}");
}

#[test]
fn unknown_keys_name_the_nearest_known_one() {
    assert_errors("comands = [\"sh\"]\n", &[(1, 1, "unknown key `comands`")]);
    let dir = Scratch::new("near");
    let file = dir.file("s.toml", "commands = []\n[fils]\nread = []\n");
    let err = stderr(&run(lnk().args(["sandbox", "check"]).arg(&file)));
    // The offending line is quoted with a caret under the key, and the nearest key suggested.
    assert!(err.contains("2 | [fils]\n  |  ^^^^\n  = help: did you mean `files`?"), "{err}");
    assert_errors("[tool.run]\ntimout = 5\n", &[(2, 1, "unknown key `tool.run.timout`")]);
    assert_errors("[internet]\nper-minute = 5\n", &[(2, 1, "unknown key `internet.per-minute`")]);
    assert_errors("[files]\nexec = []\n", &[(2, 1, "unknown key `files.exec`")]);
}

#[test]
fn other_tools_tables_and_harness_tables_are_accepted() {
    let dir = Scratch::new("other");
    let file = dir.file(
        "s.toml",
        "commands = []\n[tool.websearch]\nengine = \"x\"\n[localhost]\nports = [1]\n[browser]\nx = 1\n",
    );
    let out = run(lnk().args(["sandbox", "check"]).arg(&file));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn commands_are_plain_names_and_star_stands_alone() {
    assert_errors("commands = [\"/bin/sh\"]\n", &[(1, 13, "`/bin/sh` is a path")]);
    assert_errors("commands = [\"\"]\n", &[(1, 13, "a program name is empty")]);
    assert_errors("commands = [\"a\\nb\"]\n", &[(1, 13, "whitespace or a control character")]);
    assert_errors("commands = [\"a\\u0000b\"]\n", &[(1, 13, "control character")]);
    assert_errors("commands = [\"sh\", \"*\"]\n", &[(1, 19, "must stand alone")]);
    assert_errors("commands = \"sh\"\n", &[(1, 12, "must be an array of strings, not a string")]);
    assert_errors("commands = [1]\n", &[(1, 13, "holds strings only, not an integer")]);
}

#[test]
fn paths_are_absolute_or_home_based() {
    assert_errors("[files]\nread = [\"Link\"]\n", &[(2, 9, "must be absolute")]);
    assert_errors("[files]\nread = [\"~bob/x\"]\n", &[(2, 9, "another user's home")]);
    assert_errors("[files]\nwrite = [\"~/a/../b\"]\n", &[(2, 10, "contains `..`")]);
    assert_errors("[files]\nwrite = [\"/a\\u0000\"]\n", &[(2, 10, "NUL")]);
    assert_errors("[files]\nread = [\"\"]\n", &[(2, 9, "the path is empty")]);
}

#[test]
fn internet_values_are_checked() {
    assert_errors("[internet]\nhosts = [\"https://a.org\"]\n", &[(2, 10, "looks like a URL")]);
    assert_errors("[internet]\nhosts = [\"a.*.org\"]\n", &[(2, 10, "`*` is allowed only alone")]);
    assert_errors("[internet]\nhosts = [\"*\", \"a.org\"]\n", &[(2, 9, "must stand alone in `hosts`")]);
    assert_errors("[internet]\ntcp = [\"db\"]\n", &[(2, 8, "has no port")]);
    assert_errors("[internet]\ntcp = [\"db:65536\"]\n", &[(2, 8, "not a port")]);
    assert_errors("[internet]\ntcp = [\"db:0\"]\n", &[(2, 8, "not a port")]);
    assert_errors("[internet]\ntools = [\"a b\"]\n", &[(2, 10, "not a tool name")]);
    assert_errors("internet = 1\n", &[(1, 12, "must be a table")]);
}

#[test]
fn numbers_are_positive_and_bounded() {
    assert_errors("[tool.run]\ntimeout = 0\n", &[(2, 11, "`timeout` is 0, outside 1 to 86400")]);
    assert_errors("[tool.run]\ntimeout = 86401\n", &[(2, 11, "outside 1 to 86400")]);
    assert_errors("[tool.run]\ntimeout = 1.5\n", &[(2, 11, "must be a whole number")]);
    assert_errors("[tool.run]\noutput = -1\n", &[(2, 10, "`output` is -1")]);
    assert_errors("[tool.run]\noutput = 1000001\n", &[(2, 10, "outside 1 to 1000000")]);
    assert_errors("[internet]\nper_minute = 10001\n", &[(2, 14, "outside 1 to 10000")]);
    assert_errors("[tool.scheduler]\nhops = 65\n", &[(2, 8, "outside 1 to 64")]);
    assert_errors("[tool.scheduler]\nhops = 9223372036854775807\n", &[(2, 8, "outside 1 to 64")]);
}

#[test]
fn every_problem_is_reported_at_once() {
    let text = "comands = []\n\
                commands = [\"/x\"]\n\
                [files]\n\
                read = [\"rel\", 3]\n\
                [tool.run]\n\
                timeout = 0\n";
    assert_errors(
        text,
        &[
            (1, 1, "unknown key `comands`"),
            (2, 13, "is a path"),
            (4, 9, "must be absolute"),
            (4, 16, "holds strings only"),
            (6, 11, "outside 1 to 86400"),
        ],
    );
}

#[test]
fn toml_syntax_errors_point_at_the_place() {
    assert_errors("commands = [\n", &[(1, 13, "invalid TOML")]);
    assert_errors("a = 1\na = 2\n", &[(2, 1, "invalid TOML")]);
    assert_errors("é = 1\n", &[(1, 1, "invalid TOML")]);
    // Columns count characters, not bytes: `b` is the ninth character but the tenth byte.
    assert_errors("a = \"é\" b\n", &[(1, 9, "invalid TOML")]);
}

#[test]
fn odd_files_get_a_clear_error_and_never_hang() {
    let dir = Scratch::new("odd");
    let check = |p: &std::path::Path| run(lnk().args(["sandbox", "check"]).arg(p));

    let empty = dir.file("empty.toml", "  \n\n");
    let out = check(&empty);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("the sandbox file is empty"), "{}", stderr(&out));

    let latin1 = dir.file("latin1.toml", b"commands = [\"caf\xe9\"]\n");
    let out = check(&latin1);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains(":1:17: error: the sandbox file is not UTF-8 text"), "{}", stderr(&out));

    let huge = dir.file("huge.toml", format!("# {}\ncommands = []\n", "x".repeat(1 << 20)));
    let out = check(&huge);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("larger than 1024 KiB"), "{}", stderr(&out));

    let out = check(&dir.path);
    assert!(stderr(&out).contains("is a directory"), "{}", stderr(&out));

    let fifo = dir.join("fifo.toml");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    // Nobody ever writes to the FIFO: a blocking open would hang this test.
    let out = check(&fifo);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("is a FIFO"), "{}", stderr(&out));

    let to_fifo = dir.join("link-to-fifo.toml");
    std::os::unix::fs::symlink(&fifo, &to_fifo).unwrap();
    assert!(stderr(&check(&to_fifo)).contains("is a FIFO"));
    let to_dir = dir.join("link-to-dir.toml");
    std::os::unix::fs::symlink(&dir.path, &to_dir).unwrap();
    assert!(stderr(&check(&to_dir)).contains("is a directory"));

    let out = check(&dir.join("missing.toml"));
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("cannot open the sandbox file"), "{}", stderr(&out));

    let out = check(std::path::Path::new("/dev/zero"));
    assert!(stderr(&out).contains("is a character device"), "{}", stderr(&out));
}

#[test]
fn the_policies_in_the_repository_are_valid() {
    for name in ["default.toml", "locked-down.toml", "every-key.toml"] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("policy").join(name);
        let out = run(lnk().args(["sandbox", "check"]).arg(&path));
        assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
    }
}

#[test]
fn deny_takes_paths_like_the_grants() {
    let dir = Scratch::new("deny");
    let ok = dir.file("ok.toml", "[files]\nread = [\"~\"]\ndeny = [\"~/work-secrets\", \"/srv/keys\"]\n");
    let out = run(lnk().args(["sandbox", "check"]).arg(&ok));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let bad = dir.file("bad.toml", "[files]\ndeny = [\"relative/x\"]\n");
    let out = run(lnk().args(["sandbox", "check"]).arg(&bad));
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("bad.toml:2:"), "{}", stderr(&out));
}

/// A home folder with `~/.ssh` and a files folder in which an earlier call planted
/// `proj` → `~/.ssh`.
fn home_with_a_planted_link() -> Scratch {
    let home = Scratch::new("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::create_dir_all(home.join("Link/Files")).unwrap();
    std::os::unix::fs::symlink(home.join(".ssh"), home.join("Link/Files/proj")).unwrap();
    home
}

#[test]
fn a_grant_through_a_symbolic_link_is_an_error_at_check() {
    let home = home_with_a_planted_link();
    let policy = home.file(
        "s.toml",
        "commands = []\n[files]\nread = [\"~/Link/Files\"]\nwrite = [\"~/Link/Files/proj\"]\n",
    );
    let out = run(lnk().args(["sandbox", "check"]).arg(&policy).env("HOME", &home.path));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let head = format!(
        "{}:4:10: error: `{}` passes through a symbolic link",
        policy.display(),
        home.join("Link/Files/proj").display()
    );
    assert!(err.contains(&head), "{err}");
    let real = std::fs::canonicalize(home.join(".ssh")).unwrap();
    assert!(err.contains(&format!("= help: name the real folder: `{}`", real.display())), "{err}");
    assert!(err.contains(": 1 error\n"), "only the link is an error: {err}");

    // An absolute grant through a link, and the system's own (`/lib` → `usr/lib` on merged usr).
    let link = home.join("lib");
    std::os::unix::fs::symlink(home.join("Link"), &link).unwrap();
    let policy = home.file("abs.toml", format!("[files]\nread = [\"{}\"]\n", link.display()));
    let out = run(lnk().args(["sandbox", "check"]).arg(&policy).env("HOME", &home.path));
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains(":2:9: error:"), "{}", stderr(&out));
    if std::fs::symlink_metadata("/lib").is_ok_and(|m| m.file_type().is_symlink()) {
        let policy = home.file("lib.toml", "[files]\nread = [\"/lib\"]\n");
        let out = run(lnk().args(["sandbox", "check", "--json"]).arg(&policy));
        assert_eq!(out.status.code(), Some(1));
        let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        let d = &v["diagnostics"][0];
        assert_eq!((d["line"].as_u64(), d["column"].as_u64()), (Some(2), Some(9)), "{v}");
        let real = std::fs::canonicalize("/lib").unwrap();
        assert_eq!(d["help"], format!("name the real folder: `{}`", real.display()), "{v}");
    }
}

#[test]
fn a_grant_in_a_denied_path_or_over_the_records_is_an_error_at_check() {
    let home = Scratch::new("denyrec");
    let policy = home.file("s.toml", "[files]\nwrite = [\"/srv/data/x\"]\ndeny = [\"/srv/data\"]\n");
    let out = run(lnk().args(["sandbox", "check"]).arg(&policy));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(":2:10: error: the grant `/srv/data/x` lies in `/srv/data`"),
        "{}",
        stderr(&out)
    );

    let policy = home.file("w.toml", "[files]\nwrite = [\"~\"]\n");
    let records = home.join(".lnk-records");
    let out = run(lnk()
        .args(["sandbox", "check"])
        .arg(&policy)
        .arg("--agent-dir")
        .arg(&records)
        .env("HOME", &home.path));
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("overlaps the agent's records folder"), "{}", stderr(&out));
}

#[test]
fn a_wide_grant_is_a_warning_naming_the_holes() {
    let home = home_with_a_planted_link();
    std::fs::create_dir_all(home.join(".aws")).unwrap();
    let records = home.join(".local/state/agent");
    let policy = home.file("s.toml", "commands = []\n[files]\nread = [\"~\"]\nwrite = [\"~/Link/Files\"]\n");
    let out = run(lnk()
        .args(["sandbox", "check"])
        .arg(&policy)
        .arg("--agent-dir")
        .arg(&records)
        .env("HOME", &home.path));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "a warning does not fail the check: {err}");
    assert!(stdout(&out).ends_with(": ok\n"), "{}", stdout(&out));
    let warning = err
        .lines()
        .find(|l| l.contains(":3:9: warning: `~` holds more than it looks"))
        .unwrap_or_else(|| panic!("{err}"));
    for hole in [".ssh", ".aws"] {
        assert!(warning.contains(&format!("`{}`", home.join(hole).display())), "{hole}: {warning}");
    }
    assert!(!warning.contains(".gnupg"), "only the holes this computer has: {warning}");
    assert!(warning.contains(&format!("`{}` (the agent's records)", records.display())), "{warning}");
    assert!(err.ends_with(": 1 warning\n"), "{err}");

    let out = run(lnk().args(["sandbox", "check", "--json"]).arg(&policy).env("HOME", &home.path));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["outcome"], "ok");
    assert_eq!(v["diagnostics"][0]["severity"], "warning", "{v}");

    // Naming the secret in a grant means it: no hole, no warning.
    let named = home.file("named.toml", "[files]\nread = [\"~\", \"~/.ssh\", \"~/.aws\"]\n");
    let out = run(lnk().args(["sandbox", "check"]).arg(&named).env("HOME", &home.path));
    assert_eq!(out.status.code(), Some(0));
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
}
