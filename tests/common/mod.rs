//! Helpers shared by the integration tests: the real binaries, and scratch folders.
#![allow(dead_code)]

pub mod background;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The `lnk` binary the tests run: the one cargo built, or its copy in `LNK_TEST_BIN_DIR` (see
/// [`rerun_with_binaries_beneath_tmp`]).
pub fn lnk_bin() -> PathBuf {
    match std::env::var_os("LNK_TEST_BIN_DIR") {
        Some(dir) => PathBuf::from(dir).join("lnk"),
        None => PathBuf::from(env!("CARGO_BIN_EXE_lnk")),
    }
}

/// The `lnk-link-run` binary the tests run (as [`lnk_bin`]).
pub fn link_run_bin() -> PathBuf {
    match std::env::var_os("LNK_TEST_BIN_DIR") {
        Some(dir) => PathBuf::from(dir).join("lnk-link-run"),
        None => PathBuf::from(env!("CARGO_BIN_EXE_lnk-link-run")),
    }
}

pub fn lnk() -> Command {
    let mut c = Command::new(lnk_bin());
    c.env("HOME", "/home/test-user");
    c
}

pub fn link_run() -> Command {
    Command::new(link_run_bin())
}

/// Runs this test binary's other tests again with both binaries copied beneath the host's
/// `/tmp` (a checkout or `cargo install --root` there), which the call's own world covers with
/// its own `/tmp`: lnk must run its own image by descriptor, never by a path the world hides.
/// `this_test` is the calling test's name (skipped in the second run). Returns at once in that
/// second run.
pub fn rerun_with_binaries_beneath_tmp(this_test: &str) {
    if std::env::var_os("LNK_TEST_BIN_DIR").is_some() {
        return;
    }
    let dir = Scratch::new_in(Path::new("/tmp"), "binaries");
    for (name, built) in
        [("lnk", env!("CARGO_BIN_EXE_lnk")), ("lnk-link-run", env!("CARGO_BIN_EXE_lnk-link-run"))]
    {
        std::fs::copy(built, dir.join(name)).unwrap();
    }
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&dir.path, std::fs::Permissions::from_mode(0o755)).unwrap();
    // In each mode: the own world, which hides the host's /tmp, and the Landlock-only mode.
    for mode in modes() {
        let mut again = Command::new(std::env::current_exe().unwrap());
        again.args(["--skip", this_test, "--test-threads", "2"]).env("LNK_TEST_BIN_DIR", &dir.path);
        let out = run(in_mode(&mut again, mode));
        assert!(
            out.status.success(),
            "with lnk beneath /tmp ({}), {mode:?}:\n{}\n{}",
            dir.path.display(),
            stdout(&out),
            stderr(&out)
        );
        assert!(stdout(&out).contains(" passed;"), "{}", stdout(&out));
    }
}

/// Runs `cmd` to its end. A binary a test has just copied can be briefly "busy": another test
/// thread that forked meanwhile holds the copy's write descriptor until its child execs. That
/// passes, so the run is tried again, a bounded number of times.
pub fn run(cmd: &mut Command) -> Output {
    let mut tries = 0;
    loop {
        match cmd.output() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 100 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            result => return result.expect("the binary runs"),
        }
    }
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A scratch folder removed when dropped.
pub struct Scratch {
    pub path: PathBuf,
}

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        let base = std::env::var_os("LNK_TEST_TMP").map(PathBuf::from).unwrap_or_else(std::env::temp_dir);
        Scratch::new_in(&base, name)
    }

    /// A scratch folder in `base` (such as `/var/tmp`, outside the host's `/tmp`).
    pub fn new_in(base: &Path, name: &str) -> Scratch {
        static N: AtomicUsize = AtomicUsize::new(0);
        let path = base.join(format!(
            "lnk-test-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        Scratch { path }
    }

    pub fn file(&self, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let p = self.path.join(name);
        std::fs::write(&p, contents).unwrap();
        p
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

pub fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A home folder with a files folder, and a sandbox file in it.
pub struct Agent {
    pub dir: Scratch,
    pub home: PathBuf,
    pub policy: PathBuf,
    /// A folder outside every grant and outside the host's `/tmp`, to start calls from.
    pub elsewhere: Scratch,
}

impl Agent {
    /// `policy` is the sandbox file's text; `~` in it is this agent's home.
    pub fn new(name: &str, policy: &str) -> Agent {
        let dir = Scratch::new(name);
        let home = dir.join("home");
        std::fs::create_dir_all(home.join("Link/Files")).unwrap();
        let policy_path = dir.file("sandbox.toml", policy);
        Agent {
            dir,
            home,
            policy: policy_path,
            elsewhere: Scratch::new_in(Path::new("/var/tmp"), "elsewhere"),
        }
    }

    /// An agent whose home lies outside the host's `/tmp` (in `/var/tmp`), so that a start
    /// beneath `/tmp` is a case of its own.
    pub fn outside_tmp(name: &str, policy: &str) -> Agent {
        let dir = Scratch::new_in(Path::new("/var/tmp"), name);
        let home = dir.join("home");
        std::fs::create_dir_all(home.join("Link/Files")).unwrap();
        let policy_path = dir.file("sandbox.toml", policy);
        Agent {
            dir,
            home,
            policy: policy_path,
            elsewhere: Scratch::new_in(Path::new("/var/tmp"), "elsewhere"),
        }
    }

    /// `lnk sandbox run --file POLICY --report json ARGS… -- CMD…`
    pub fn command(&self, extra: &[&str], cmd: &[&str]) -> Command {
        let mut c = lnk();
        c.env("HOME", &self.home).current_dir(&self.home);
        c.args(["sandbox", "run", "--report", "json", "--file"])
            .arg(&self.policy)
            .args(extra)
            .arg("--")
            .args(cmd);
        c
    }

    pub fn run(&self, cmd: &[&str]) -> Report {
        Report::from(run(&mut self.command(&[], cmd)))
    }

    /// Runs a Python script in the sandbox (python3 must be among `commands`).
    pub fn python(&self, script: &str) -> Report {
        let full = format!("{PY_PRELUDE}\n{script}");
        self.run(&["python3", "-c", &full])
    }
}

/// Helpers for hostile Python: raw system calls through ctypes, answering `ok` or the errno name.
pub const PY_PRELUDE: &str = r#"
import ctypes, errno, os, sys, socket
libc = ctypes.CDLL(None, use_errno=True)
def sc(nr, *args):
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    return "ok" if r >= 0 else errno.errorcode[ctypes.get_errno()]
def attempt(fn):
    try:
        fn()
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
def say(name, result):
    print(f"{name}={result}", flush=True)
"#;

/// The JSON report of one call, with its exit code.
pub struct Report {
    pub code: Option<i32>,
    pub json: serde_json::Value,
    pub raw: String,
    pub stderr: String,
}

impl From<Output> for Report {
    fn from(o: Output) -> Report {
        let raw = stdout(&o);
        let json = serde_json::from_str(raw.trim()).unwrap_or_else(|e| {
            panic!("the report is one JSON object ({e}):\n{raw}\nstderr: {}", stderr(&o))
        });
        Report { code: o.status.code(), json, raw, stderr: stderr(&o) }
    }
}

impl Report {
    pub fn out(&self) -> &str {
        self.json["stdout"]["text"].as_str().unwrap()
    }
    pub fn err(&self) -> &str {
        self.json["stderr"]["text"].as_str().unwrap()
    }
    pub fn outcome(&self) -> &str {
        self.json["outcome"].as_str().unwrap()
    }
    /// The `name=result` line the script printed for `name`.
    pub fn said(&self, name: &str) -> String {
        let prefix = format!("{name}=");
        self.out()
            .lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .unwrap_or_else(|| {
                panic!(
                    "`{name}` not reported ({}: {}); stdout:\n{}\nstderr:\n{}",
                    self.outcome(),
                    self.json["error"],
                    self.out(),
                    self.err()
                )
            })
            .to_owned()
    }
    pub fn assert_said(&self, name: &str, expected: &str) {
        assert_eq!(self.said(name), expected, "{name}; stderr:\n{}", self.err());
    }
}

/// True when this test must not skip: in CI every kernel feature is required.
pub fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty())
}

/// Skips loudly outside CI, fails in CI.
pub fn require(available: bool, what: &str) -> bool {
    if available {
        return true;
    }
    assert!(!in_ci(), "CI lacks {what}: this test must run there");
    eprintln!("\n!!! SKIPPED: this machine lacks {what}; the test did not run !!!\n");
    false
}

/// `cmd`, run where the kernel offers no user namespace: the Landlock-only mode.
///
/// Simulated the way bubblewrap's `--disable-userns` does it: in a user namespace of the test's
/// own, `cmd` runs as uid 1234 (no capabilities, so no mount namespace without a user namespace)
/// in a nested user namespace, and the outer one's limit of user namespaces is then set to 0, so
/// `cmd` can make none. The nested namespace is made first (a limit of 0 would forbid it too).
/// `cmd`'s files appear owned by uid 1234 there, so a `TMPDIR` of the test's own is needed.
pub fn without_user_namespaces(cmd: &Command) -> Command {
    let mut c = Command::new("unshare");
    c.args([
        "-Ur",
        "sh",
        "-c",
        r#"d=$(mktemp -d) && mkfifo "$d/ready" "$d/go" || exit 99
unshare -U --map-user=1234 --map-group=1234 -- sh -c 'echo > "$0/ready"; read x < "$0/go"; exec "$@"' "$d" "$@" &
read x < "$d/ready"
echo 0 > /proc/sys/user/max_user_namespaces || exit 98
echo > "$d/go"
wait $!
code=$?
rm -rf "$d"
exit $code"#,
        "sh",
    ]);
    run_inside(&mut c, cmd);
    c
}

/// `cmd` under a seccomp filter like Docker's and podman's default profile for a container
/// without `CAP_SYS_ADMIN` or `CAP_SYS_PTRACE` (`tests/containers/docker_like_seccomp.c`,
/// compiled into `dir` with gcc), or `None` where gcc is missing (outside CI).
pub fn docker_like(dir: &Path, cmd: &Command) -> Option<Command> {
    let mut c = Command::new(container_filter(dir)?);
    run_inside(&mut c, cmd);
    Some(c)
}

/// `cmd` under a seccomp filter that refuses only `pidfd_getfd` (`--copies-only`): a profile
/// that lets lnk make its namespaces but gives it no copy of a process's descriptor; `None`
/// where gcc is missing (outside CI).
pub fn without_copies(dir: &Path, cmd: &Command) -> Option<Command> {
    let mut c = Command::new(container_filter(dir)?);
    c.arg("--copies-only");
    run_inside(&mut c, cmd);
    Some(c)
}

/// `tests/containers/docker_like_seccomp.c`, compiled into `dir`.
fn container_filter(dir: &Path) -> Option<PathBuf> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/containers/docker_like_seccomp.c");
    let helper = dir.join("docker_like_seccomp");
    if !helper.exists() {
        let built = Command::new("gcc").arg("-O1").arg("-o").arg(&helper).arg(&source).status();
        if !require(built.is_ok_and(|s| s.success()), "gcc (to build the container-like seccomp filter)") {
            return None;
        }
    }
    Some(helper)
}

/// Whether `unshare` can make the nested user namespaces [`without_user_namespaces`] needs.
pub fn can_simulate_no_user_namespaces() -> bool {
    Command::new("unshare")
        .args(["-Ur", "unshare", "-U", "--map-user=1234", "--map-group=1234", "true"])
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether calls here get the call's own world (namespaces), as `lnk sandbox status` says.
pub fn own_world_here() -> bool {
    let out = run(lnk().args(["sandbox", "status", "--json"]));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("status prints JSON");
    json["mode"] == "own-world"
}

impl Agent {
    /// Runs a Python script in the sandbox in the Landlock-only mode (see
    /// [`without_user_namespaces`]), with a `TMPDIR` of the agent's own.
    pub fn python_without_user_namespaces(&self, script: &str) -> Report {
        let full = format!("{PY_PRELUDE}\n{script}");
        let mut inner = self.command(&[], &["python3", "-c", &full]);
        let tmp = self.dir.join("tmp-landlock-only");
        std::fs::create_dir_all(&tmp).unwrap();
        inner.env("TMPDIR", &tmp);
        Report::from(run(&mut without_user_namespaces(&inner)))
    }

    /// The script's report in each mode this machine offers (the own world, required in CI,
    /// and the Landlock-only mode, simulated), each checked to be the mode it claims, and from
    /// each place a harness starts a call (see [`Agent::starts`]): a script's answers must not
    /// depend on where it was started, so one that uses absolute paths is checked from all.
    pub fn python_in_each_mode(&self, script: &str) -> Vec<(&'static str, Report)> {
        let full = format!("{PY_PRELUDE}\n{script}");
        let mut reports = Vec::new();
        for start in self.starts() {
            reports.extend(self.in_each_mode_at(&start, &[], &[], &["python3", "-c", &full]));
        }
        reports
    }

    /// The places a harness starts a call from: inside the write grant the sandbox files of
    /// these tests give (`~/Link/Files`), inside the read grant (`~`), beneath the host's `/tmp`
    /// outside every grant, and outside every grant and `/tmp` (in `/var/tmp`). Made if needed.
    pub fn starts(&self) -> Vec<PathBuf> {
        let starts = vec![
            self.home.join("Link/Files/start"),
            self.home.clone(),
            self.dir.join("start-tmp"),
            self.elsewhere.path.clone(),
        ];
        for start in &starts {
            std::fs::create_dir_all(start).unwrap();
        }
        starts
    }
}

impl Agent {
    /// `cmd` run from `cwd` with `extra` flags and `env`, in each mode this machine offers: the
    /// own world (required in CI) and the Landlock-only mode on a simulated kernel, each
    /// checked to be the mode it claims.
    pub fn in_each_mode_at(
        &self,
        cwd: &Path,
        extra: &[&str],
        env: &[(&str, &str)],
        cmd: &[&str],
    ) -> Vec<(&'static str, Report)> {
        let mut reports = Vec::new();
        reports.extend(self.own_world_at(cwd, extra, env, cmd).map(|r| ("own-world", r)));
        reports.extend(self.landlock_only_at(cwd, extra, env, cmd).map(|r| ("landlock-only", r)));
        reports
    }

    /// `cmd` run from `cwd` in the Landlock-only mode, on a simulated kernel without user
    /// namespaces, with a `TMPDIR` of the agent's own; `None` where it cannot be simulated
    /// (outside CI).
    pub fn landlock_only_at(
        &self,
        cwd: &Path,
        extra: &[&str],
        env: &[(&str, &str)],
        cmd: &[&str],
    ) -> Option<Report> {
        if !require(
            can_simulate_no_user_namespaces(),
            "nested user namespaces (to simulate a kernel without)",
        ) {
            return None;
        }
        let mut inner = self.command(extra, cmd);
        inner.current_dir(cwd);
        for (k, v) in env {
            inner.env(k, v);
        }
        let tmp = self.dir.join("tmp-landlock-only");
        std::fs::create_dir_all(&tmp).unwrap();
        inner.env("TMPDIR", &tmp);
        let r = Report::from(run(&mut without_user_namespaces(&inner)));
        if !r.json["enforced"].is_null() {
            assert_eq!(r.json["enforced"]["mode"], "landlock-only", "{}", r.raw);
        }
        Some(r)
    }
}

impl Agent {
    /// `cmd` run from `cwd` in the own world only (for what only it has: the masks), or `None`
    /// where this machine gives none (outside CI).
    pub fn own_world_at(
        &self,
        cwd: &Path,
        extra: &[&str],
        env: &[(&str, &str)],
        cmd: &[&str],
    ) -> Option<Report> {
        if !require(own_world_here(), "the call's own world (user namespaces that can mount)") {
            return None;
        }
        let mut c = self.command(extra, cmd);
        c.current_dir(cwd);
        for (k, v) in env {
            c.env(k, v);
        }
        let r = Report::from(run(&mut c));
        if !r.json["enforced"].is_null() {
            assert_eq!(r.json["enforced"]["mode"], "own-world", "{}", r.raw);
        }
        Some(r)
    }
}

/// `to` relative to `from` (both absolute, without links), as `..` and names.
pub fn relative(from: &Path, to: &Path) -> PathBuf {
    let (f, t): (Vec<_>, Vec<_>) = (from.components().collect(), to.components().collect());
    let common = f.iter().zip(&t).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..f.len() {
        out.push("..");
    }
    for c in &t[common..] {
        out.push(c);
    }
    if out.as_os_str().is_empty() { PathBuf::from(".") } else { out }
}

/// The two modes a call can get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    OwnWorld,
    LandlockOnly,
}

/// The modes to run a lifetime or background test in: the own world where this machine gives
/// it (required in CI), and the Landlock-only mode, forced in the test build by
/// `LNK_TEST_LANDLOCK_ONLY` (the lifetime tests signal lnk itself, which a simulated kernel
/// would wrap).
pub fn modes() -> Vec<Mode> {
    let mut modes = Vec::new();
    if require(own_world_here(), "the call's own world (user namespaces that can mount)") {
        modes.push(Mode::OwnWorld);
    }
    modes.push(Mode::LandlockOnly);
    modes
}

/// Sets `cmd` up to get `mode`.
pub fn in_mode(cmd: &mut Command, mode: Mode) -> &mut Command {
    match mode {
        Mode::OwnWorld => cmd.env_remove("LNK_TEST_LANDLOCK_ONLY"),
        Mode::LandlockOnly => cmd.env("LNK_TEST_LANDLOCK_ONLY", "1"),
    }
}

/// A shell function for sandboxed scripts: `mark PID` prints what a test needs to find that
/// process from outside. Without a pid namespace that is its pid; in the call's own world, its
/// pid there and its start time (clock ticks since boot, the same in every namespace), which
/// [`host_pid`] matches against the host's processes.
pub const MARK: &str = r#"mark() { if [ -r /proc/self/stat ]; then read -r s < /proc/$1/stat; set -- $1 $s; echo "$1 ${23}"; else echo "$1"; fi; }"#;

/// The host pid of a process [`MARK`] described, if it is still there.
pub fn host_pid(mark: &str) -> Option<i32> {
    let fields: Vec<&str> = mark.split_whitespace().collect();
    match fields[..] {
        [pid] => pid.parse().ok(),
        [inner, start] => std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let status = std::fs::read_to_string(e.path().join("status")).ok()?;
            let nspid = status.lines().find_map(|l| l.strip_prefix("NSpid:"))?;
            if nspid.split_whitespace().last()? != inner {
                return None;
            }
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let after_name = stat.rsplit(')').next()?;
            // Fields after the name start at field 3; the start time is field 22.
            (after_name.split_whitespace().nth(19)? == start).then_some(pid)
        }),
        _ => panic!("not a mark: {mark:?}"),
    }
}

/// Whether the process [`MARK`] described is still a live process (see [`pid_alive`]).
pub fn marked_alive(mark: &str) -> bool {
    host_pid(mark).is_some_and(pid_alive)
}

/// Whether `pid` is a live process: not a zombie, or a zombie only in its first thread (one
/// whose first thread ended alone while others run on shows `Z` and counts them).
pub fn pid_alive(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    let threads: u32 = fields.get(17).and_then(|t| t.parse().ok()).unwrap_or(1);
    !matches!(fields.first(), Some(&"Z" | &"X")) || threads > 1
}

/// Whether `path` has no `user.lnk` extended attribute (the one the metadata tests try to set).
pub fn xattr_absent(path: &Path) -> bool {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    let mut buf = [0u8; 8];
    // SAFETY: a NUL-terminated path and a live buffer; getxattr writes at most buf.len() bytes.
    let n = unsafe { libc::getxattr(c.as_ptr(), c"user.lnk".as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    n < 0
}

/// `cmd`, run with each `(source, target)` of `binds` bind-mounted first (with what is mounted
/// beneath it, as `mount --rbind`: a user namespace may not show a mount without those its
/// owner locked beneath it, such as the host's `/dev` without its `/dev/pts`), in a mount namespace
/// of its own (nothing of it reaches the host's mounts): as root, a new mount namespace; as an
/// ordinary user, a user namespace of its own whose root makes the mounts and which then runs
/// `cmd` as the user again (a nested user namespace mapping the user to itself), so lnk runs as
/// that user would, among mounts an administrator made. `None` where such namespaces cannot be
/// made (outside CI).
pub fn with_binds(binds: &[(&Path, &Path)], cmd: &Command) -> Option<Command> {
    let root = rustix::process::geteuid().is_root();
    let probe = match root {
        true => Command::new("unshare").args(["-m", "true"]).status(),
        false => Command::new("unshare")
            .args(["-rm", "unshare", "-U", "--map-user=1", "--map-group=1", "true"])
            .status(),
    };
    if !require(
        probe.is_ok_and(|s| s.success()),
        "mount namespaces (to bind-mount as an administrator would)",
    ) {
        return None;
    }
    let script =
        r#"while [ "$1" != -- ]; do mount --rbind "$1" "$2" || exit 97; shift 2; done; shift; exec "$@""#;
    let mut c = Command::new("unshare");
    match root {
        true => c.args(["-m", "--propagation", "private"]),
        false => c.args(["-rm", "--propagation", "private"]),
    };
    c.args(["sh", "-c", script, "sh"]);
    for (source, target) in binds {
        c.arg(source).arg(target);
    }
    c.arg("--");
    if !root {
        let (uid, gid) = (rustix::process::getuid().as_raw(), rustix::process::getgid().as_raw());
        c.args(["unshare", "-U", &format!("--map-user={uid}"), &format!("--map-group={gid}"), "--"]);
    }
    run_inside(&mut c, cmd);
    Some(c)
}

/// Applies a denial's `fix` to the sandbox file at `policy` as a harness would: its `value`
/// appended to the list `key` of the table `table` (the top level when null), the list or
/// table made when missing. A small TOML editor for the tests' own files, whose lists are on
/// one line; `lnk sandbox check` then reads the result, so a file it broke would show.
pub fn apply_fix(policy: &Path, fix: &serde_json::Value) {
    let key = fix["key"].as_str().unwrap_or_else(|| panic!("a fix names its key: {fix}"));
    let value = fix["value"].as_str().unwrap_or_else(|| panic!("a fix has a value: {fix}"));
    let table = fix["table"].as_str();
    let text = std::fs::read_to_string(policy).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    // The lines of the table: from its header (or the top) to the next header.
    let start = match table {
        None => Some(0),
        Some(t) => lines.iter().position(|l| l.trim() == format!("[{t}]")).map(|i| i + 1),
    };
    let Some(start) = start else {
        lines.push(format!("[{}]", table.unwrap()));
        lines.push(format!("{key} = [{}]", serde_json::Value::from(value)));
        return std::fs::write(policy, lines.join("\n") + "\n").unwrap();
    };
    let end = lines[start..]
        .iter()
        .position(|l| l.trim_start().starts_with('['))
        .map_or(lines.len(), |i| start + i);
    let quoted = serde_json::Value::from(value).to_string();
    match (start..end).find(|i| lines[*i].split('=').next().is_some_and(|k| k.trim() == key)) {
        Some(i) => {
            let line = lines[i].trim_end();
            let inside = line.strip_suffix(']').unwrap_or_else(|| panic!("a one-line list: {line}"));
            let empty = inside.trim_end().ends_with('[');
            lines[i] = format!("{inside}{}{quoted}]", if empty { "" } else { ", " });
        }
        None => lines.insert(start, format!("{key} = [{quoted}]")),
    }
    std::fs::write(policy, lines.join("\n") + "\n").unwrap();
}

/// `lnk sandbox check --json FILE`'s answer, asserted to be `ok` (warnings allowed).
pub fn assert_check_ok(policy: &Path, home: &Path) {
    let out = run(lnk().args(["sandbox", "check", "--json"]).arg(policy).env("HOME", home));
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).expect("check prints JSON");
    assert_eq!(
        answer["outcome"],
        "ok",
        "the fixed file fails check: {answer}\n{}",
        std::fs::read_to_string(policy).unwrap()
    );
}

/// Makes `outer` run `cmd` last: its program and arguments appended, with `cmd`'s environment
/// changes and working folder (a wrapper that makes a namespace or a filter, then `exec`s).
pub fn run_inside(outer: &mut Command, cmd: &Command) {
    outer.arg(cmd.get_program()).args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => outer.env(k, v),
            None => outer.env_remove(k),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        outer.current_dir(dir);
    }
}

/// Waits for `child` to end by itself within `within`; kills it and fails otherwise.
pub fn ends_within(child: &mut std::process::Child, within: Duration, what: &str) -> std::process::Output {
    let until = Instant::now() + within;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{what}: lnk did not end within {within:?} (frozen in a held call, or waiting for a process it took for ended?)"
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut out =
        std::process::Output { status: child.wait().unwrap(), stdout: Vec::new(), stderr: Vec::new() };
    use std::io::Read as _;
    child.stdout.take().unwrap().read_to_end(&mut out.stdout).unwrap();
    child.stderr.take().unwrap().read_to_end(&mut out.stderr).unwrap();
    out
}
