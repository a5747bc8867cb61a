//! `lnk file`: the file session's operations, its errors, and the attacks code the agent ran
//! could have prepared in the files folder (symlinks, hard links, FIFOs, a folder swapped for a
//! link while calls run).

mod common;
use common::*;

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

struct Session {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
    /// Lines written so far: each answer's `seq` is its request's line number.
    lines: u64,
}

impl Session {
    fn spawn(mut cmd: Command) -> Session {
        let mut child =
            cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Session { child, stdin, stdout, next: 0, lines: 0 }
    }

    fn raw(&mut self, line: &str) -> Value {
        self.raw_bytes(line.as_bytes())
    }

    /// Sends one line of any bytes; checks the answer's `seq` is that line's number.
    fn raw_bytes(&mut self, line: &[u8]) -> Value {
        self.stdin.write_all(line).and_then(|()| self.stdin.write_all(b"\n")).unwrap();
        self.stdin.flush().unwrap();
        self.lines += 1;
        let mut answer = String::new();
        self.stdout.read_line(&mut answer).unwrap();
        let a: Value = serde_json::from_str(&answer).unwrap_or_else(|e| panic!("{e}: {answer:?}"));
        assert_eq!(a["seq"], json!(self.lines), "every answer has its line number: {a}");
        a
    }

    /// A blank line: no answer, but it counts as a line.
    fn blank(&mut self) {
        writeln!(self.stdin).unwrap();
        self.lines += 1;
    }

    /// Sends `req` with a fresh id; returns `ok` or panics on an error answer.
    fn ok(&mut self, mut req: Value) -> Value {
        let a = self.call(&mut req);
        assert!(a.get("error").is_none(), "{req} failed: {a}");
        a["ok"].clone()
    }

    /// Sends `req` expecting an error of `kind`.
    fn err(&mut self, mut req: Value, kind: &str) -> String {
        let a = self.call(&mut req);
        assert_eq!(a["error"]["kind"], kind, "{req}: {a}");
        a["error"]["message"].as_str().unwrap().to_owned()
    }

    fn call(&mut self, req: &mut Value) -> Value {
        self.next += 1;
        req["id"] = json!(self.next);
        let a = self.raw(&req.to_string());
        assert_eq!(a["id"], json!(self.next), "the id is echoed");
        a
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

fn set_mode(path: &std::path::Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

struct Files {
    dir: Scratch,
    home: PathBuf,
    files: PathBuf,
}

impl Files {
    fn new(name: &str) -> Files {
        let dir = Scratch::new(name);
        let home = dir.join("home");
        let files = home.join("Link/Files");
        std::fs::create_dir_all(&files).unwrap();
        std::fs::create_dir_all(home.join("Link/Teams/blue/Shared")).unwrap();
        std::fs::create_dir_all(home.join("Link/Teams/red/Shared")).unwrap();
        Files { dir, home, files }
    }

    /// A session run directly: reads beneath home, writes the files folder and team blue.
    fn session(&self) -> Session {
        let mut c = lnk();
        c.env("HOME", &self.home).arg("file").arg("--files-dir").arg(&self.files);
        c.arg("--read").arg(&self.home).arg("--write").arg(&self.files);
        c.arg("--write").arg(self.home.join("Link/Teams/blue/Shared"));
        Session::spawn(c)
    }

    /// A session that mode bits bind even when the tests run as root: the child drops
    /// CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from its bounding set before exec, so root's
    /// `lnk file` gets neither (an ordinary user never had them).
    fn session_bound_by_modes(&self) -> Session {
        use std::os::unix::process::CommandExt as _;
        let mut c = lnk();
        c.env("HOME", &self.home).arg("file").arg("--files-dir").arg(&self.files);
        c.arg("--read").arg(&self.home).arg("--write").arg(&self.files);
        if is_root() {
            // SAFETY: only prctl in the forked child before exec.
            unsafe {
                c.pre_exec(|| {
                    for cap in [1, 2] {
                        // CAP_DAC_OVERRIDE (1) and CAP_DAC_READ_SEARCH (2), which libc does not name.
                        if libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) != 0 {
                            return Err(std::io::Error::last_os_error());
                        }
                    }
                    Ok(())
                });
            }
        }
        Session::spawn(c)
    }

    /// A session on a simulated kernel without openat2 (ENOSYS), to exercise the fallback walk.
    fn without_openat2(&self) -> Session {
        use std::os::unix::process::CommandExt as _;
        let mut c = lnk();
        c.env("HOME", &self.home).arg("file").arg("--files-dir").arg(&self.files);
        c.arg("--read").arg(&self.home).arg("--write").arg(&self.files);
        let arch = seccompiler::TargetArch::try_from(std::env::consts::ARCH).unwrap();
        let filter: seccompiler::BpfProgram = seccompiler::SeccompFilter::new(
            std::collections::BTreeMap::from([(libc::SYS_openat2, Vec::new())]),
            seccompiler::SeccompAction::Allow,
            seccompiler::SeccompAction::Errno(libc::ENOSYS as u32),
            arch,
        )
        .unwrap()
        .try_into()
        .unwrap();
        // SAFETY: installs the filter in the forked child before exec; only system calls.
        unsafe {
            c.pre_exec(move || {
                seccompiler::apply_filter(&filter).map_err(|e| std::io::Error::other(e.to_string()))
            });
        }
        Session::spawn(c)
    }

    /// The same, inside the sandbox the launcher makes for the file tool.
    fn sandboxed(&self) -> Session {
        let policy = self.dir.file(
            "sandbox.toml",
            "commands = []\n[files]\nread = [\"~\"]\nwrite = [\"~/Link/Files\", \"~/Link/Teams/blue/Shared\"]\n",
        );
        let mut c = lnk();
        c.env("HOME", &self.home).args(["sandbox", "run", "--tool", "file", "--file"]).arg(policy);
        c.args(["--", "lnk", "file", "--files-dir"]).arg(&self.files);
        Session::spawn(c)
    }
}

#[test]
fn every_session_test_passes_with_lnk_beneath_tmp() {
    rerun_with_binaries_beneath_tmp("every_session_test_passes_with_lnk_beneath_tmp");
}

#[test]
fn every_operation_works_and_says_what_it_did() {
    let f = Files::new("ops");
    let mut s = f.session();
    assert_eq!(s.ok(json!({"op": "write", "path": "a/b.txt", "content": "one\ntwo\nthree\n"}))["size"], 14);
    let r = s.ok(json!({"op": "read", "path": "a/b.txt", "offset": 1, "limit": 1}));
    assert_eq!(
        (r["text"].as_str(), r["lines"].as_u64(), r["more"].as_bool()),
        (Some("two\n"), Some(1), Some(true))
    );
    let r = s.ok(json!({"op": "read", "path": "a/b.txt", "byte_offset": 4, "byte_length": 3}));
    assert_eq!(r["text"], "two");
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(f.files.join("a/b.txt"), std::fs::Permissions::from_mode(0o750)).unwrap();
    s.ok(json!({"op": "edit", "path": "a/b.txt", "old": "two", "new": "2"}));
    assert_eq!(std::fs::read_to_string(f.files.join("a/b.txt")).unwrap(), "one\n2\nthree\n");
    let mode = std::fs::metadata(f.files.join("a/b.txt")).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o750, "an edited file keeps its permissions");
    let e = s.err(json!({"op": "edit", "path": "a/b.txt", "old": "e", "new": "E"}), "not_unique");
    assert!(e.contains("occurs 3 times"), "{e}");
    s.err(json!({"op": "edit", "path": "a/b.txt", "old": "absent", "new": "x"}), "not_found");
    let l = s.ok(json!({"op": "list", "path": "a"}));
    assert_eq!(l["entries"], json!([{"name": "b.txt", "kind": "file", "size": 12}]));
    assert_eq!(s.ok(json!({"op": "stat", "path": "a"}))["kind"], "folder");
    s.ok(json!({"op": "mkdir", "path": "x/y/z"}));
    assert!(f.files.join("x/y/z").is_dir());
    s.ok(json!({"op": "write", "path": "x/y/z/n.md", "content": "needle here\nnope\nneedle again\n"}));
    let found = s.ok(json!({"op": "search", "query": "needle"}));
    assert_eq!(found["matches"].as_array().unwrap().len(), 2, "{found}");
    assert_eq!(found["matches"][0]["path"], "x/y/z/n.md");
    assert_eq!(found["matches"][1]["line"], 3);
    s.ok(json!({"op": "move", "from": "a/b.txt", "to": "x/moved.txt"}));
    assert!(f.files.join("x/moved.txt").exists() && !f.files.join("a/b.txt").exists());
    s.err(json!({"op": "move", "from": "x/moved.txt", "to": "x/y/z/n.md"}), "exists");
    s.err(json!({"op": "remove", "path": "x"}), "not_empty");
    s.ok(json!({"op": "remove", "path": "x", "recursive": true}));
    assert!(!f.files.join("x").exists());
    std::fs::write(f.files.join("bin"), b"\x00\x01\x02").unwrap();
    assert_eq!(s.ok(json!({"op": "read", "path": "bin"}))["binary"], true);
}

#[test]
fn bad_requests_are_answers_and_the_session_goes_on() {
    let f = Files::new("bad");
    let mut s = f.session();
    assert_eq!(s.raw("not json")["error"]["kind"], "bad_request");
    assert_eq!(s.raw("[1,2]")["error"]["kind"], "bad_request");
    s.err(json!({"op": "frobnicate"}), "bad_request");
    s.err(json!({"op": "read"}), "bad_request");
    s.err(json!({"op": "read", "path": 7}), "bad_request");
    s.err(json!({"op": "read", "path": "missing"}), "not_found");
    s.err(json!({"op": "read", "path": "../../etc/passwd"}), "bad_path");
    s.err(json!({"op": "read", "path": "/etc/passwd"}), "bad_path");
    s.err(json!({"op": "read", "path": "a\u{0}b"}), "bad_path");
    s.err(json!({"op": "write", "path": "x".repeat(300), "content": ""}), "bad_path");
    s.err(json!({"op": "remove", "path": "."}), "bad_path");
    // A line over the limit is refused without being kept, and the session goes on.
    let huge =
        format!("{{\"id\":1,\"op\":\"write\",\"path\":\"h\",\"content\":\"{}\"}}", "x".repeat(17 << 20));
    assert_eq!(s.raw(&huge)["error"]["kind"], "too_large");
    s.ok(json!({"op": "write", "path": "after", "content": "still here"}));
}

#[test]
fn writes_only_where_write_grants_reach() {
    let f = Files::new("grants");
    let mut s = f.session();
    s.ok(json!({"op": "write", "path": "teams/blue/plan.md", "content": "blue"}));
    assert_eq!(std::fs::read_to_string(f.home.join("Link/Teams/blue/Shared/plan.md")).unwrap(), "blue");
    std::fs::write(f.home.join("Link/Teams/red/Shared/r.md"), "red").unwrap();
    assert_eq!(s.ok(json!({"op": "read", "path": "teams/red/r.md"}))["text"], "red");
    s.err(json!({"op": "write", "path": "teams/red/r.md", "content": "x"}), "denied");
    s.err(json!({"op": "remove", "path": "teams/red/r.md"}), "denied");
    s.err(json!({"op": "read", "path": "teams/.hidden/x"}), "bad_path");
    s.err(json!({"op": "read", "path": "teams/green/x"}), "not_found");
    assert_eq!(std::fs::read_to_string(f.home.join("Link/Teams/red/Shared/r.md")).unwrap(), "red");
}

#[test]
fn planted_links_and_fifos_never_redirect_or_block() {
    let f = Files::new("links");
    let secret = f.dir.file("secret.txt", "SECRET");
    let outside = f.dir.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&secret, f.files.join("link.txt")).unwrap();
    std::os::unix::fs::symlink(&outside, f.files.join("dirlink")).unwrap();
    std::fs::hard_link(&secret, f.files.join("hard.txt")).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        f.files.join("fifo"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    std::fs::write(f.files.join("inside.txt"), "inside").unwrap();
    std::os::unix::fs::symlink("inside.txt", f.files.join("inner-link")).unwrap();
    let mut s = f.session();
    s.err(json!({"op": "read", "path": "link.txt"}), "symlink");
    // Even a link that stays inside the folder is not followed.
    s.err(json!({"op": "read", "path": "inner-link"}), "symlink");
    s.err(json!({"op": "read", "path": "dirlink/x"}), "symlink");
    s.err(json!({"op": "write", "path": "dirlink/x", "content": "x"}), "symlink");
    s.err(json!({"op": "list", "path": "dirlink"}), "symlink");
    s.err(json!({"op": "read", "path": "fifo"}), "not_a_file");
    // Writing a name that is a link or a hard link replaces the name; the target is untouched.
    s.ok(json!({"op": "write", "path": "link.txt", "content": "mine"}));
    s.ok(json!({"op": "write", "path": "hard.txt", "content": "mine"}));
    s.ok(json!({"op": "edit", "path": "hard.txt", "old": "mine", "new": "ours"}));
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "SECRET");
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    assert!(!std::fs::symlink_metadata(f.files.join("link.txt")).unwrap().file_type().is_symlink());
    // A search walks past links and special files without following them.
    std::fs::write(f.files.join("real.txt"), "SECRET in the open").unwrap();
    let found = s.ok(json!({"op": "search", "query": "SECRET"}));
    let paths: Vec<&str> =
        found["matches"].as_array().unwrap().iter().map(|m| m["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["real.txt"], "{found}");
}

#[test]
fn without_openat2_links_are_still_never_followed() {
    let f = Files::new("noopenat2");
    let secret = f.dir.file("secret.txt", "SECRET");
    std::os::unix::fs::symlink(&secret, f.files.join("link.txt")).unwrap();
    std::os::unix::fs::symlink(f.dir.path.clone(), f.files.join("dirlink")).unwrap();
    let mut s = f.without_openat2();
    s.ok(json!({"op": "write", "path": "a/b.txt", "content": "fine"}));
    assert_eq!(s.ok(json!({"op": "read", "path": "a/b.txt"}))["text"], "fine");
    let a = s.call(&mut json!({"op": "read", "path": "link.txt"}));
    assert!(a["error"].is_object() && !a.to_string().contains("SECRET"), "{a}");
    let a = s.call(&mut json!({"op": "read", "path": "dirlink/secret.txt"}));
    assert!(a["error"].is_object() && !a.to_string().contains("SECRET"), "{a}");
    let a = s.call(&mut json!({"op": "write", "path": "dirlink/x", "content": "x"}));
    assert!(a["error"].is_object(), "{a}");
    assert!(!f.dir.join("x").exists());
}

#[test]
fn a_folder_swapped_for_a_link_while_calls_run_never_leaks() {
    let f = Files::new("race");
    let secret_dir = f.dir.join("secret");
    std::fs::create_dir_all(&secret_dir).unwrap();
    std::fs::write(secret_dir.join("data.txt"), "SECRET").unwrap();
    std::fs::create_dir_all(f.files.join("work")).unwrap();
    std::fs::write(f.files.join("work/data.txt"), "public").unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (files, secret_dir, stop) = (f.files.clone(), secret_dir.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = std::fs::rename(files.join("work"), files.join("work.real"));
                let _ = std::os::unix::fs::symlink(&secret_dir, files.join("work"));
                let _ = std::fs::remove_file(files.join("work"));
                let _ = std::fs::rename(files.join("work.real"), files.join("work"));
            }
        })
    };
    let mut s = f.session();
    for i in 0..400 {
        let mut req = json!({"op": "read", "path": "work/data.txt"});
        let a = s.call(&mut req);
        assert!(!a.to_string().contains("SECRET"), "read through the swapped link: {a}");
        let mut req = json!({"op": "write", "path": "work/out.txt", "content": format!("{i}")});
        let _ = s.call(&mut req);
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    swapper.join().unwrap();
    assert_eq!(
        std::fs::read_dir(&secret_dir).unwrap().count(),
        1,
        "nothing was written into the secret folder"
    );
}

#[test]
fn a_killed_session_never_leaves_a_half_written_file() {
    let f = Files::new("killed");
    let big = "x".repeat(8 << 20);
    for _ in 0..5 {
        let mut s = f.session();
        s.ok(json!({"op": "write", "path": "f.txt", "content": "old"}));
        writeln!(s.stdin, "{}", json!({"id": 99, "op": "write", "path": "f.txt", "content": big})).unwrap();
        std::thread::sleep(Duration::from_millis(5));
        let _ = s.child.kill();
        let _ = s.child.wait();
        let now = std::fs::read_to_string(f.files.join("f.txt")).unwrap();
        assert!(now == "old" || now == big, "a half-written file: {} bytes", now.len());
    }
}

#[test]
fn the_sandboxed_session_works_and_can_execute_nothing() {
    let f = Files::new("sandboxed");
    let mut s = f.sandboxed();
    s.ok(json!({"op": "write", "path": "n.txt", "content": "hi"}));
    assert_eq!(s.ok(json!({"op": "read", "path": "n.txt"}))["text"], "hi");
    s.err(json!({"op": "write", "path": "teams/red/x", "content": "x"}), "denied");
    // The session (the helper's grandchild, below the keeper) runs under the launcher's three
    // filters and its own exec filter.
    let helper = s.child.id() as i32;
    let field = |status: &str, key: &str| -> Option<i32> {
        status.lines().find_map(|l| l.strip_prefix(key)).and_then(|v| v.trim().parse().ok())
    };
    let statuses: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("status")).ok())
        .collect();
    let keeper = statuses
        .iter()
        .find(|st| field(st, "PPid:") == Some(helper))
        .and_then(|st| field(st, "Pid:"))
        .unwrap();
    // The keeper's child is the session, or in the call's own world the world's pid 1 (lnk's
    // own code, unconfined), whose child is the session.
    let child_of = |parent: i32| statuses.iter().find(|st| field(st, "PPid:") == Some(parent));
    let first = child_of(keeper).expect("the keeper's child");
    let session = match field(first, "Seccomp_filters:") {
        Some(0) => child_of(field(first, "Pid:").unwrap()).expect("the session process"),
        _ => first,
    };
    // The sandbox's filter, then the session's own, which refuses execve.
    assert_eq!(field(session, "Seccomp_filters:"), Some(2), "{session}");
}

#[test]
fn the_exec_filter_refuses_execve() {
    // The filter is built before the fork; the child only installs it and tries to execute.
    let filter = lnk::file_tool::exec_filter();
    // SAFETY: the child makes only system calls (prctl, seccomp, execve, _exit).
    unsafe {
        let pid = libc::fork();
        if pid == 0 {
            if lnk::sandbox::seccomp::install(&filter).is_err() {
                libc::_exit(2);
            }
            let argv = [c"/bin/true".as_ptr(), std::ptr::null()];
            libc::execve(c"/bin/true".as_ptr(), argv.as_ptr(), std::ptr::null());
            libc::_exit(if *libc::__errno_location() == libc::EPERM { 42 } else { 3 });
        }
        let mut status = 0;
        libc::waitpid(pid, &mut status, 0);
        assert_eq!(libc::WEXITSTATUS(status), 42, "execve answered EPERM");
    }
}

#[test]
fn an_edit_of_a_file_too_large_to_read_whole_is_refused_not_truncated() {
    let f = Files::new("bigedit");
    let big = f.files.join("big.txt");
    let file = std::fs::File::create(&big).unwrap();
    file.set_len((64 << 20) + 10).unwrap();
    drop(file);
    let mut s = f.session();
    s.err(json!({"op": "edit", "path": "big.txt", "old": "\u{0}\u{0}", "new": "x"}), "too_large");
    assert_eq!(std::fs::metadata(&big).unwrap().len(), (64 << 20) + 10, "left whole");
}

#[test]
fn a_huge_offset_or_limit_answers_at_once() {
    let f = Files::new("offset");
    std::fs::write(f.files.join("t.txt"), "a\nb\n").unwrap();
    let mut s = f.session();
    let started = std::time::Instant::now();
    let r = s.ok(json!({"op": "read", "path": "t.txt", "offset": i64::MAX, "limit": i64::MAX}));
    assert_eq!((r["lines"].as_u64(), r["text"].as_str()), (Some(0), Some("")));
    let r = s.ok(json!({"op": "read", "path": "t.txt", "offset": 1, "limit": i64::MAX}));
    assert_eq!(r["text"], "b\n");
    assert!(started.elapsed() < Duration::from_secs(15), "found by fuzzing: a loop to the offset");
}

#[test]
fn a_search_says_what_it_skipped_and_passes_an_unreadable_folder() {
    let f = Files::new("searchskips");
    let mut deep = f.files.join("deep");
    for i in 0..34 {
        deep = deep.join(format!("d{i}"));
    }
    std::fs::create_dir_all(&deep).unwrap();
    std::fs::write(deep.join("n.txt"), "needle deep").unwrap();
    std::fs::write(f.files.join("big.txt"), format!("needle\n{}", "x".repeat(9 << 20))).unwrap();
    std::fs::create_dir_all(f.files.join("locked/inner")).unwrap();
    std::fs::write(f.files.join("locked/inner/n.txt"), "needle locked").unwrap();
    std::fs::create_dir_all(f.files.join("open")).unwrap();
    std::fs::write(f.files.join("open/n.txt"), "needle open").unwrap();
    set_mode(&f.files.join("locked"), 0o000);
    let mut s = f.session_bound_by_modes();
    let found = s.ok(json!({"op": "search", "query": "needle"}));
    set_mode(&f.files.join("locked"), 0o755);
    let paths: Vec<&str> =
        found["matches"].as_array().unwrap().iter().map(|m| m["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["open/n.txt"], "the unreadable folder did not end the search: {found}");
    assert_eq!(found["complete"], false, "{found}");
    assert_eq!(found["skipped"], json!({"too_deep": 1, "too_large": 1, "unreadable": 1}), "{found}");
    assert!(found.get("stopped").is_none(), "{found}");
    // A search that passed over nothing is complete.
    let found = s.ok(json!({"op": "search", "path": "open", "query": "needle"}));
    assert_eq!(found["complete"], true, "{found}");
    assert_eq!(found["skipped"], json!({"too_deep": 0, "too_large": 0, "unreadable": 0}), "{found}");
    // One stopped by its limit says so.
    let found = s.ok(json!({"op": "search", "path": "open", "query": "needle", "limit": 1}));
    assert_eq!(
        (found["complete"].as_bool(), found["stopped"].as_str()),
        (Some(false), Some("limit")),
        "{found}"
    );
}

#[test]
fn every_answer_can_be_matched_to_its_request() {
    let f = Files::new("ids");
    let mut s = f.session();
    // A valid request whose id is neither a string nor a number: answered, with the id's text.
    let a = s.raw(r#"{"id":{"turn":3},"op":"stat","path":"."}"#);
    assert_eq!(
        (&a["id"], &a["raw_id"], &a["ok"]["kind"]),
        (&Value::Null, &json!(r#"{"turn":3}"#), &json!("folder")),
        "{a}"
    );
    let a = s.raw(r#"{"id":1.5,"op":"stat","path":"."}"#);
    assert_eq!((&a["id"], &a["raw_id"]), (&Value::Null, &json!("1.5")), "{a}");
    // A line that is not JSON at all: the id is found in its text.
    let a = s.raw(r#"{"id":"req-7","op":"read","path":"#);
    assert_eq!((&a["id"], &a["error"]["kind"]), (&json!("req-7"), &json!("bad_request")), "{a}");
    assert!(a.get("raw_id").is_none(), "{a}");
    let a = s.raw(r#"{"id":[1,2],"op":"read" "path":"x"}"#);
    assert_eq!((&a["id"], &a["raw_id"]), (&Value::Null, &json!("[1,2]")), "{a}");
    let a = s.raw("not json");
    assert_eq!((&a["id"], a.get("raw_id")), (&Value::Null, None), "{a}");
    // Blank lines are skipped but counted; a line that is not UTF-8 or is too long is still matched.
    s.blank();
    s.blank();
    let a = s.raw_bytes(b"{\"id\":9,\"op\":\"stat\",\"path\":\"\xff\"}");
    assert_eq!((&a["id"], &a["error"]["kind"]), (&json!(9), &json!("bad_request")), "{a}");
    let huge =
        format!("{{\"id\":41,\"op\":\"write\",\"path\":\"h\",\"content\":\"{}\"}}", "x".repeat(17 << 20));
    let a = s.raw(&huge);
    assert_eq!((&a["id"], &a["error"]["kind"]), (&json!(41), &json!("too_large")), "{a}");
    assert_eq!(s.ok(json!({"op": "stat", "path": "."}))["kind"], "folder");
}

#[test]
fn an_edit_or_write_told_what_to_expect_never_overwrites_a_change() {
    let f = Files::new("expect");
    let path = f.files.join("f.txt");
    let mut s = f.session();
    s.ok(json!({"op": "write", "path": "f.txt", "content": "one two"}));
    let r = s.ok(json!({"op": "read", "path": "f.txt"}));
    let st = s.ok(json!({"op": "stat", "path": "f.txt"}));
    assert_eq!((&r["mtime_ns"], &r["size"]), (&st["mtime_ns"], &st["size"]), "read and stat agree");
    let seen = json!({"mtime_ns": r["mtime_ns"], "size": r["size"]});
    // Another writer changes the file in place, same size, a different time.
    std::fs::write(&path, "one TWO").unwrap();
    let later = std::time::SystemTime::now() + Duration::from_secs(5);
    std::fs::File::options().write(true).open(&path).unwrap().set_modified(later).unwrap();
    let e =
        s.err(json!({"op": "edit", "path": "f.txt", "old": "one", "new": "1", "expect": seen}), "changed");
    assert!(e.contains("read it again"), "{e}");
    s.err(json!({"op": "write", "path": "f.txt", "content": "mine", "expect": seen}), "changed");
    s.err(json!({"op": "write", "path": "f.txt", "content": "mine", "expect": {"size": 3}}), "changed");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "one TWO", "nothing was written");
    // The version read now is accepted.
    let st = s.ok(json!({"op": "stat", "path": "f.txt"}));
    let now = json!({"mtime_ns": st["mtime_ns"], "size": st["size"]});
    s.ok(json!({"op": "edit", "path": "f.txt", "old": "one", "new": "1", "expect": now}));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "1 TWO");
    s.err(json!({"op": "write", "path": "gone.txt", "content": "x", "expect": {"size": 0}}), "changed");
    s.err(json!({"op": "write", "path": "f.txt", "content": "x", "expect": {}}), "bad_request");
    s.err(json!({"op": "write", "path": "f.txt", "content": "x", "expect": {"mtime": 1}}), "bad_request");
    s.err(json!({"op": "write", "path": "f.txt", "content": "x", "expect": {"size": "5"}}), "bad_request");
}

#[test]
fn read_and_list_are_bounded_and_say_where_to_go_on() {
    let f = Files::new("paging");
    // 3 MiB of numbered lines: the last ones lie far past the first MiB.
    let text: String = (0..300_000).map(|i| format!("{i:09}\n")).collect();
    std::fs::write(f.files.join("long.txt"), &text).unwrap();
    let mut s = f.session();
    let r = s.ok(json!({"op": "read", "path": "long.txt", "limit": 1_000_000}));
    assert_eq!(
        (r["lines"].as_u64(), r["more"].as_bool(), r["next_offset"].as_u64()),
        (Some(10_000), Some(true), Some(10_000))
    );
    let r = s.ok(json!({"op": "read", "path": "long.txt", "offset": 299_998}));
    assert_eq!(r["text"], "000299998\n000299999\n", "a line past the first MiB is reached");
    assert_eq!((r["more"].as_bool(), r.get("next_offset")), (Some(false), None), "{r}");
    // Lines too many bytes: cut at whole lines under 1 MiB, then go on from there.
    let wide: String = (0..3000).map(|i| format!("{i:04}{}\n", "w".repeat(995))).collect();
    std::fs::write(f.files.join("wide.txt"), &wide).unwrap();
    let r = s.ok(json!({"op": "read", "path": "wide.txt"}));
    let n = r["lines"].as_u64().unwrap();
    assert!(
        n < 3000
            && r["text"].as_str().unwrap().len() <= 1 << 20
            && r["text"].as_str().unwrap().ends_with('\n'),
        "{n}"
    );
    assert_eq!((r["more"].as_bool(), r["next_offset"].as_u64()), (Some(true), Some(n)));
    let r = s.ok(json!({"op": "read", "path": "wide.txt", "offset": n, "limit": 1}));
    assert!(
        r["text"].as_str().unwrap().starts_with(&format!("{n:04}w")),
        "{}",
        &r["text"].as_str().unwrap()[..8]
    );
    // One line over 1 MiB comes cut, and says so.
    std::fs::write(f.files.join("one.txt"), format!("{}\nnext\n", "z".repeat(2 << 20))).unwrap();
    let r = s.ok(json!({"op": "read", "path": "one.txt"}));
    assert_eq!(
        (r["lines"].as_u64(), r["cut_line"].as_bool(), r["next_offset"].as_u64()),
        (Some(1), Some(true), Some(1))
    );
    assert_eq!(r["text"].as_str().unwrap().len(), 1 << 20);
    assert_eq!(s.ok(json!({"op": "read", "path": "one.txt", "offset": 1}))["text"], "next\n");
    // Byte ranges: at most 1 MiB, and where the next one starts.
    let r = s.ok(json!({"op": "read", "path": "long.txt", "byte_offset": 10, "byte_length": 1 << 30}));
    assert_eq!(
        (r["byte_length"].as_u64(), r["more"].as_bool(), r["next_byte_offset"].as_u64()),
        (Some(1 << 20), Some(true), Some(10 + (1 << 20)))
    );
    // A list pages through a folder.
    for i in 0..7 {
        std::fs::write(f.files.join(format!("d{i}")), "").unwrap();
    }
    std::fs::create_dir(f.files.join("many")).unwrap();
    for i in 0..5 {
        std::fs::write(f.files.join(format!("many/{i}")), "").unwrap();
    }
    let l = s.ok(json!({"op": "list", "path": "many", "limit": 2}));
    assert_eq!(
        (
            l["entries"].as_array().unwrap().len(),
            l["total"].as_u64(),
            l["more"].as_bool(),
            l["next_offset"].as_u64()
        ),
        (2, Some(5), Some(true), Some(2))
    );
    let l = s.ok(json!({"op": "list", "path": "many", "offset": 4, "limit": 2}));
    assert_eq!(
        (l["entries"][0]["name"].as_str(), l["more"].as_bool(), l.get("next_offset")),
        (Some("4"), Some(false), None)
    );
}

#[test]
fn a_root_session_keeps_a_replaced_files_owner() {
    if !is_root() {
        eprintln!(
            "SKIPPED a_root_session_keeps_a_replaced_files_owner: needs root (run the suite as root to check it)"
        );
        return;
    }
    use std::os::unix::fs::MetadataExt as _;
    let f = Files::new("owner");
    let path = f.files.join("theirs.txt");
    std::fs::write(&path, "one").unwrap();
    std::os::unix::fs::chown(&path, Some(1234), Some(2345)).unwrap();
    set_mode(&path, 0o640);
    let mut s = f.session();
    s.ok(json!({"op": "write", "path": "theirs.txt", "content": "two"}));
    let m = std::fs::metadata(&path).unwrap();
    assert_eq!((m.uid(), m.gid(), m.mode() & 0o777), (1234, 2345, 0o640), "write kept owner, group, mode");
    s.ok(json!({"op": "edit", "path": "theirs.txt", "old": "two", "new": "three"}));
    let m = std::fs::metadata(&path).unwrap();
    assert_eq!((m.uid(), m.gid(), m.mode() & 0o777), (1234, 2345, 0o640), "edit kept owner, group, mode");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "three");
}

#[cfg(feature = "fault-points")]
#[test]
fn a_killed_writes_temporary_file_is_removed_by_the_next_session() {
    let f = Files::new("stale");
    std::fs::create_dir_all(f.files.join("a/b")).unwrap();
    let temps = |f: &Files| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(f.files.join("a/b"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".lnk-tmp-"))
            .collect();
        names.sort();
        names
    };
    // A session killed between writing its temporary file and renaming it.
    let mut c = lnk();
    c.env("HOME", &f.home)
        .env("LNK_FAULT", "file-write-before-rename")
        .arg("file")
        .arg("--files-dir")
        .arg(&f.files);
    c.arg("--read").arg(&f.home).arg("--write").arg(&f.files);
    let mut killed = Session::spawn(c);
    writeln!(killed.stdin, "{}", json!({"id": 1, "op": "write", "path": "a/b/n.md", "content": "new"}))
        .unwrap();
    let status = killed.child.wait().unwrap();
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(libc::SIGKILL));
    let left = temps(&f);
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(!f.files.join("a/b/n.md").exists());
    // A temporary file a live writer still holds (locked here) must stay.
    let held = f.files.join("a/b/.lnk-tmp-1-0-held.md");
    let held_file = std::fs::File::create(&held).unwrap();
    rustix::fs::flock(&held_file, rustix::fs::FlockOperation::LockExclusive).unwrap();
    std::fs::write(f.files.join("a/b/.lnk-tmp-notes"), "not ours").unwrap();
    let mut s = f.session();
    s.ok(json!({"op": "stat", "path": "."}));
    assert_eq!(temps(&f), [".lnk-tmp-1-0-held.md", ".lnk-tmp-notes"], "the dead write's file is gone");
    drop(held_file);
}

#[test]
fn a_sandboxed_sessions_answers_and_its_report_never_share_a_stream() {
    let f = Files::new("report-stream");
    let policy =
        f.dir.file("sandbox.toml", "commands = []\n[files]\nread = [\"~\"]\nwrite = [\"~/Link/Files\"]\n");
    let mut c = lnk();
    c.env("HOME", &f.home)
        .args(["sandbox", "run", "--tool", "file", "--report", "json", "--file"])
        .arg(policy);
    c.args(["--", "lnk", "file", "--files-dir"]).arg(&f.files);
    c.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    {
        use std::io::Write as _;
        let mut input = child.stdin.take().unwrap();
        writeln!(input, "{}", json!({"op": "write", "path": "x.txt", "content": "x"})).unwrap();
        writeln!(input, "{}", json!({"op": "list", "path": "."})).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    // Standard output: the session's answers, one per request, and nothing else.
    let answers: Vec<serde_json::Value> =
        stdout(&out).lines().map(|l| serde_json::from_str(l).expect("each line an answer")).collect();
    assert_eq!(answers.len(), 2, "{}", stdout(&out));
    assert!(answers.iter().all(|a| a["ok"].is_object() && a.get("outcome").is_none()), "{answers:?}");
    // The report: one object on standard error.
    let report: serde_json::Value = serde_json::from_str(stderr(&out).trim()).expect("the report on stderr");
    assert_eq!(
        (report["schema"].as_u64(), report["outcome"].as_str()),
        (Some(1), Some("exited")),
        "{report}"
    );
}

/// As root, the harness's way (`lnk sandbox run --tool file`): the session holds no capability,
/// so it cannot give a replacement another user's owner, and must refuse rather than hand the
/// file to root. Needs root (a file owned by another uid); as an ordinary user, skipped.
#[test]
fn a_sandboxed_root_session_never_hands_a_users_file_to_root() {
    if !is_root() {
        eprintln!(
            "SKIPPED a_sandboxed_root_session_never_hands_a_users_file_to_root: needs root (chown to uid 65534)"
        );
        return;
    }
    use std::os::unix::fs::MetadataExt as _;
    let f = Files::new("sandboxed-owner");
    let path = f.files.join("theirs.txt");
    std::fs::write(&path, "one").unwrap();
    std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
    set_mode(&path, 0o666);
    let mut s = f.sandboxed();
    let e = s.err(json!({"op": "write", "path": "theirs.txt", "content": "two"}), "denied");
    assert!(e.contains("uid 65534") && e.contains("nothing was written"), "{e}");
    s.err(json!({"op": "edit", "path": "theirs.txt", "old": "one", "new": "two"}), "denied");
    let m = std::fs::metadata(&path).unwrap();
    assert_eq!((m.uid(), m.gid(), m.mode() & 0o777), (65534, 65534, 0o666), "still theirs");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "one", "nothing was written");
    assert!(
        s.ok(json!({"op": "list", "path": "."}))["entries"].as_array().unwrap().len() == 1,
        "no temp left"
    );
    // Root's own file is replaced as before.
    s.ok(json!({"op": "write", "path": "mine.txt", "content": "a"}));
    s.ok(json!({"op": "edit", "path": "mine.txt", "old": "a", "new": "b"}));
    assert_eq!(std::fs::read_to_string(f.files.join("mine.txt")).unwrap(), "b");
}

/// A rename needs only the folder writable; a write or edit must also find the file writable, as
/// the kernel answers for this session. Runs as root and as an ordinary user: the session bound
/// by modes is refused either way; the plain session as root may write a 0444 file (the kernel's
/// answer: CAP_DAC_OVERRIDE) and keeps its mode, as a user it is refused.
#[test]
fn a_write_never_replaces_a_file_its_caller_could_not_open_for_writing() {
    use std::os::unix::fs::PermissionsExt as _;
    let f = Files::new("read-only");
    let ro = f.files.join("ro.txt");
    std::fs::write(&ro, "keep").unwrap();
    set_mode(&ro, 0o444);
    std::fs::write(f.files.join("rw.txt"), "old").unwrap();
    let mut bound = f.session_bound_by_modes();
    let e = bound.err(json!({"op": "write", "path": "ro.txt", "content": "lost"}), "denied");
    assert!(e.contains("not writable by this session"), "{e}");
    let e = bound.err(json!({"op": "edit", "path": "ro.txt", "old": "keep", "new": "lost"}), "denied");
    assert!(e.contains("not writable by this session"), "{e}");
    assert_eq!(std::fs::read_to_string(&ro).unwrap(), "keep", "nothing was written");
    bound.ok(json!({"op": "write", "path": "rw.txt", "content": "new"}));
    bound.ok(json!({"op": "write", "path": "fresh.txt", "content": "new"}));
    let mut s = f.session();
    if is_root() {
        s.ok(json!({"op": "edit", "path": "ro.txt", "old": "keep", "new": "root's"}));
        assert_eq!(std::fs::read_to_string(&ro).unwrap(), "root's", "root may, as the kernel says");
        assert_eq!(std::fs::metadata(&ro).unwrap().permissions().mode() & 0o777, 0o444);
    } else {
        s.err(json!({"op": "write", "path": "ro.txt", "content": "lost"}), "denied");
        assert_eq!(std::fs::read_to_string(&ro).unwrap(), "keep", "nothing was written");
    }
}

/// A name that is not UTF-8 is listed (and found) in the escaped form with `escaped: true`, and
/// that form sent back with `"escaped": true` reaches that very file in every operation; a UTF-8
/// name that looks like an escape stays a different file, reached as itself.
#[test]
fn a_name_that_is_not_utf8_is_listed_by_a_name_that_reaches_it() {
    use std::os::unix::ffi::OsStrExt as _;
    let os = |b: &[u8]| std::ffi::OsStr::from_bytes(b).to_owned();
    let f = Files::new("not-utf8");
    std::fs::write(f.files.join(os(b"bad\xff.txt")), "invalid").unwrap();
    std::fs::write(f.files.join("bad\\xff.txt"), "literal").unwrap();
    std::fs::create_dir(f.files.join(os(b"d\xfe"))).unwrap();
    std::fs::write(f.files.join(os(b"d\xfe/n.txt")), "needle\n").unwrap();
    let mut s = f.session();
    let l = s.ok(json!({"op": "list", "path": "."}));
    assert_eq!(
        l["entries"],
        json!([
            {"name": "bad\\xff.txt", "kind": "file", "size": 7},
            {"name": "bad\\xff.txt", "escaped": true, "kind": "file", "size": 7},
            {"name": "d\\xfe", "escaped": true, "kind": "folder", "size": l["entries"][2]["size"]},
        ]),
        "sorted by bytes: `\\` (5c) before ff"
    );
    let esc = |req: Value| {
        let mut req = req;
        req["escaped"] = json!(true);
        req
    };
    assert_eq!(s.ok(esc(json!({"op": "read", "path": "bad\\xff.txt"})))["text"], "invalid");
    assert_eq!(s.ok(json!({"op": "read", "path": "bad\\xff.txt"}))["text"], "literal");
    assert_eq!(s.ok(esc(json!({"op": "read", "path": "bad\\\\xff.txt"})))["text"], "literal");
    assert_eq!(s.ok(esc(json!({"op": "stat", "path": "bad\\xff.txt"})))["size"], 7);
    s.ok(esc(json!({"op": "edit", "path": "bad\\xff.txt", "old": "invalid", "new": "edited"})));
    assert_eq!(std::fs::read_to_string(f.files.join(os(b"bad\xff.txt"))).unwrap(), "edited");
    s.ok(esc(json!({"op": "write", "path": "d\\xfe/w\\xfd", "content": "w"})));
    assert_eq!(std::fs::read_to_string(f.files.join(os(b"d\xfe/w\xfd"))).unwrap(), "w");
    let found = s.ok(json!({"op": "search", "query": "needle"}));
    assert_eq!(
        found["matches"],
        json!([{"path": "d\\xfe/n.txt", "escaped": true, "line": 1, "text": "needle"}])
    );
    let sub = s.ok(esc(json!({"op": "list", "path": "d\\xfe"})));
    assert_eq!(sub["entries"][1], json!({"name": "w\\xfd", "escaped": true, "kind": "file", "size": 1}));
    s.ok(esc(json!({"op": "move", "from": "bad\\xff.txt", "to": "moved\\xfc"})));
    assert_eq!(std::fs::read_to_string(f.files.join(os(b"moved\xfc"))).unwrap(), "edited");
    s.ok(esc(json!({"op": "remove", "path": "moved\\xfc"})));
    s.ok(esc(json!({"op": "remove", "path": "d\\xfe", "recursive": true})));
    assert_eq!(
        std::fs::read_to_string(f.files.join("bad\\xff.txt")).unwrap(),
        "literal",
        "the literal one stays"
    );
    assert_eq!(std::fs::read_dir(&f.files).unwrap().count(), 1);
    // An escape never makes a separator, a dot or a NUL, so it cannot climb or split a name.
    for bad in ["\\x2e\\x2e/x", "a\\x2fb", "a\\x00", "a\\q"] {
        s.err(esc(json!({"op": "read", "path": bad})), "bad_path");
    }
    s.err(json!({"op": "read", "path": "x", "escaped": "yes"}), "bad_request");
}
