//! A corpus of real error lines from real tools (captured on Debian 13 as an ordinary user
//! refused by a file's own permissions, and inside lnk's sandbox, where Landlock's refusal reads
//! the same), each with what `denials` must read from it: the path (or program) the line names
//! and the access it says, or nothing. A word of a message is never a target.
//!
//! The checks against the grants and the files' permissions run in
//! `run_programs_and_files.rs::refusals_explain_themselves`, with the real tools.

use lnk::denials::lines::{Hint, read};

/// (tool, the lines before, the line, what it names).
type Case = (&'static str, &'static [&'static str], &'static str, Option<(&'static str, Hint)>);

const CORPUS: &[Case] = &[
    // sh (dash) and bash
    ("sh", &[], "sh: 1: ./noexec/run.sh: Permission denied", Some(("./noexec/run.sh", Hint::Run))),
    ("sh", &[], "sh: 1: seq: Permission denied", Some(("seq", Hint::Run))),
    (
        "sh",
        &[],
        "sh: 1: cannot create /tmp/corp/lockdir/y: Permission denied",
        Some(("/tmp/corp/lockdir/y", Hint::Write)),
    ),
    (
        "sh",
        &[],
        "/bin/sh: 1: cannot create /tmp/corp/lockdir/out: Permission denied",
        Some(("/tmp/corp/lockdir/out", Hint::Write)),
    ),
    ("sh", &[], "sh: 1: cd: can't cd to /root", None),
    ("sh", &[], "sh: 1: kill: Operation not permitted", None),
    ("bash", &[], "bash: line 1: ./noexec/run.sh: Permission denied", Some(("./noexec/run.sh", Hint::Run))),
    (
        "bash",
        &[],
        "bash: line 1: /tmp/corp/lockdir/y: Permission denied",
        Some(("/tmp/corp/lockdir/y", Hint::Run)),
    ),
    ("bash", &[], "bash: line 1: cd: /root: Permission denied", Some(("/root", Hint::Read))),
    ("bash", &[], "bash: ./run.sh: Permission denied", Some(("./run.sh", Hint::Run))),
    // coreutils and friends
    ("cat", &[], "cat: ro/f: Permission denied", Some(("ro/f", Hint::Read))),
    ("cat", &[], "cat: /tmp/corp/ro/f: Permission denied", Some(("/tmp/corp/ro/f", Hint::Read))),
    (
        "head",
        &[],
        "head: cannot open '/tmp/corp/ro/f' for reading: Permission denied",
        Some(("/tmp/corp/ro/f", Hint::Read)),
    ),
    ("grep", &[], "grep: /tmp/corp/ro/f: Permission denied", Some(("/tmp/corp/ro/f", Hint::Read))),
    ("wc", &[], "wc: /tmp/corp/ro/f: Permission denied", Some(("/tmp/corp/ro/f", Hint::Read))),
    (
        "sort",
        &[],
        "sort: cannot read: /tmp/corp/ro/f: Permission denied",
        Some(("/tmp/corp/ro/f", Hint::Read)),
    ),
    ("less", &[], "/tmp/corp/ro/f: Permission denied", Some(("/tmp/corp/ro/f", Hint::Unknown))),
    ("ls", &[], "ls: cannot open directory '/root': Permission denied", Some(("/root", Hint::Read))),
    ("du", &[], "du: cannot read directory '/root': Permission denied", Some(("/root", Hint::Read))),
    (
        "stat",
        &[],
        "stat: cannot statx '/root/.bashrc': Permission denied",
        Some(("/root/.bashrc", Hint::Read)),
    ),
    (
        "touch",
        &[],
        "touch: cannot touch '/tmp/corp/lockdir/new': Permission denied",
        Some(("/tmp/corp/lockdir/new", Hint::Write)),
    ),
    (
        "touch",
        &[],
        "touch: cannot touch 'notes.txt': Read-only file system",
        Some(("notes.txt", Hint::Write)),
    ),
    (
        "mkdir",
        &[],
        "mkdir: cannot create directory ‘/tmp/corp/lockdir/d’: Permission denied",
        Some(("/tmp/corp/lockdir/d", Hint::Write)),
    ),
    (
        "cp",
        &[],
        "cp: cannot open '/tmp/corp/ro/f' for reading: Permission denied",
        Some(("/tmp/corp/ro/f", Hint::Read)),
    ),
    (
        "cp",
        &[],
        "cp: cannot create regular file '/tmp/corp/lockdir/hostname': Permission denied",
        Some(("/tmp/corp/lockdir/hostname", Hint::Write)),
    ),
    ("cp", &[], "cp: cannot stat '/root/x': Permission denied", Some(("/root/x", Hint::Read))),
    (
        "rm",
        &[],
        "rm: cannot remove '/tmp/corp/lockdir/zz': Permission denied",
        Some(("/tmp/corp/lockdir/zz", Hint::Write)),
    ),
    (
        "mv",
        &[],
        "mv: cannot move '/tmp/corp/m.c' to '/tmp/corp/lockdir/m.c': Permission denied",
        Some(("/tmp/corp/lockdir/m.c", Hint::Write)),
    ),
    (
        "ln",
        &[],
        "ln: failed to create symbolic link '/tmp/corp/lockdir/l': Permission denied",
        Some(("/tmp/corp/lockdir/l", Hint::Write)),
    ),
    ("tee", &[], "tee: /tmp/corp/lockdir/t: Permission denied", Some(("/tmp/corp/lockdir/t", Hint::Write))),
    (
        "sed",
        &[],
        "sed: couldn't open temporary file /tmp/corp/lockdir/../sedn2xXes: Permission denied",
        Some(("/tmp/corp/lockdir/../sedn2xXes", Hint::Write)),
    ),
    ("chmod", &[], "chmod: changing permissions of '/etc/hostname': Operation not permitted", None),
    // python and pip
    (
        "python",
        &[],
        "PermissionError: [Errno 13] Permission denied: '/tmp/corp/ro/f'",
        Some(("/tmp/corp/ro/f", Hint::Unknown)),
    ),
    ("python", &[], "PermissionError: [Errno 13] Permission denied: '/root'", Some(("/root", Hint::Unknown))),
    ("python", &[], "OSError: [Errno 30] Read-only file system: '/srv/y'", Some(("/srv/y", Hint::Unknown))),
    (
        "python",
        &[],
        "python3: can't open file '/tmp/corp/ro/f': [Errno 13] Permission denied",
        Some(("/tmp/corp/ro/f", Hint::Unknown)),
    ),
    (
        "pip",
        &[],
        "ERROR: Could not install packages due to an OSError: [Errno 13] Permission denied: '/usr/lib/python3/dist-packages/lnkdemo'",
        Some(("/usr/lib/python3/dist-packages/lnkdemo", Hint::Unknown)),
    ),
    // node and npm
    (
        "node",
        &[],
        "Error: EACCES: permission denied, open '/tmp/corp/ro/f'",
        Some(("/tmp/corp/ro/f", Hint::Unknown)),
    ),
    (
        "node",
        &[],
        "Error: EACCES: permission denied, mkdir '/tmp/corp/lockdir/m'",
        Some(("/tmp/corp/lockdir/m", Hint::Write)),
    ),
    ("node", &[], "Error: EACCES: permission denied, scandir '/root'", Some(("/root", Hint::Read))),
    ("node", &[], "Error: spawnSync /tmp/corp/noexec/run.sh EACCES", None),
    (
        "npm",
        &[],
        "npm error Error: EACCES: permission denied, open '/tmp/corp/lockdir/package.json'",
        Some(("/tmp/corp/lockdir/package.json", Hint::Unknown)),
    ),
    (
        "npm",
        &[],
        "npm ERR! Error: EACCES: permission denied, mkdir '/usr/lib/node_modules/x'",
        Some(("/usr/lib/node_modules/x", Hint::Write)),
    ),
    // git
    (
        "git",
        &[],
        "fatal: cannot mkdir /tmp/corp/lockdir/repo: Permission denied",
        Some(("/tmp/corp/lockdir/repo", Hint::Write)),
    ),
    (
        "git",
        &[],
        "error: could not lock config file /r/.git/config: Permission denied",
        Some(("/r/.git/config", Hint::Write)),
    ),
    (
        "git",
        &[],
        "fatal: could not create work tree dir 'clone': Permission denied",
        Some(("clone", Hint::Write)),
    ),
    ("git", &[], "error: unable to create file f.txt: Permission denied", Some(("f.txt", Hint::Write))),
    ("git", &[], "fatal: Unable to read current working directory: Permission denied", None),
    // gcc, ld, make
    (
        "gcc",
        &[],
        "gcc: fatal error: cannot execute '/usr/lib/gcc/x86_64-linux-gnu/12/cc1': execv: Permission denied",
        Some(("/usr/lib/gcc/x86_64-linux-gnu/12/cc1", Hint::Run)),
    ),
    (
        "gcc",
        &[],
        "cc1: fatal error: /tmp/corp/ro/f.c: Permission denied",
        Some(("/tmp/corp/ro/f.c", Hint::Unknown)),
    ),
    (
        "ld",
        &[],
        "/usr/bin/ld: cannot open output file /tmp/corp/lockdir/a.out: Permission denied",
        Some(("/tmp/corp/lockdir/a.out", Hint::Write)),
    ),
    (
        "make",
        &[],
        "make: /tmp/corp/noexec/run.sh: Permission denied",
        Some(("/tmp/corp/noexec/run.sh", Hint::Run)),
    ),
    ("make", &[], "make: *** [/tmp/mk.mk:2: all] Error 2", None),
    // cargo (a Rust program: the path on a line before)
    (
        "cargo",
        &["error: failed to create directory `/work/p/target/debug`", "", "Caused by:"],
        "  Permission denied (os error 13)",
        Some(("/work/p/target/debug", Hint::Write)),
    ),
    ("cargo", &["warning: something else"], "  Permission denied (os error 13)", None),
    // tar (its paths are relative to `-C`, which lnk does not know: the check finds them only
    // where the program started)
    ("tar", &[], "tar: m.c: Cannot open: Permission denied", Some(("m.c", Hint::Unknown))),
    ("tar", &[], "tar: d: Cannot mkdir: Permission denied", Some(("d", Hint::Write))),
    ("tar", &[], "tar: Exiting with failure status due to previous errors", None),
];

#[test]
fn each_real_line_names_its_path_and_access_or_nothing() {
    let mut failures = Vec::new();
    for (tool, before, line, expected) in CORPUS {
        let got = read(line, before).map(|n| (n.text, n.hint));
        let expected = expected.map(|(p, h)| (p.to_owned(), h));
        if got != expected {
            failures.push(format!("{tool}: {line}\n  expected {expected:?}\n  got      {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_corpus_covers_every_tool_the_issue_names() {
    for tool in ["sh", "bash", "cat", "python", "node", "git", "gcc", "make", "pip", "npm", "cargo", "tar"] {
        assert!(CORPUS.iter().any(|(t, ..)| *t == tool), "{tool}");
    }
}
