//! A process whose first thread ended alone is still the call's to end.
//!
//! A program's process may end its first thread with the raw `exit` system call (not
//! `exit_group`) while its other threads run on. `/proc` then shows the whole process as a
//! zombie (`Z`, the first thread's state), yet it runs, holds its pid and its group, and takes
//! signals. A helper that takes `Z` for "ended" skips it when it ends the call's processes, and
//! then waits for it forever. Each test here makes such a process in a session of its own (the
//! hostile form: out of the keeper's group), checks from outside that it really is one, and
//! checks that the call's end, its timeout, a background command's stop and the sweep end it,
//! in each mode.

mod common;
use common::background::*;
use common::*;

use std::process::Stdio;
use std::time::{Duration, Instant};

const POLICY: &str = r#"commands = ["python3"]
[files]
read = ["~"]
write = ["~/Link/Files"]
[tool.run]
timeout = 60
"#;

/// The hostile program. Its child ends its first thread alone and only then, from the thread
/// left, makes a session of its own (so the process that asks is already `Z` in `/proc`). With
/// `double` it leaves a grandchild in that session and exits (so the session has no leader),
/// and the grandchild ends its first thread alone too. The process left marks itself in
/// `~/Link/Files/<name>` (see [`MARK`]) and sleeps. The program waits until the test, having
/// seen that from outside, writes `~/Link/Files/go`, then sleeps `sleep` seconds.
fn first_thread_ends_alone(name: &str, double: bool, sleep: u32) -> String {
    let double = if double { "True" } else { "False" };
    format!(
        r#"import ctypes, os, platform, threading, time
EXIT = {{'x86_64': 60, 'aarch64': 93, 'riscv64': 93}}[platform.machine()]
libc = ctypes.CDLL(None)
libc.pthread_self.restype = ctypes.c_ulong
files = os.path.expanduser('~/Link/Files/')
def then_first_thread_ends(f):
    first = libc.pthread_self()
    def after():
        libc.pthread_join(ctypes.c_ulong(first), None)
        f()
    threading.Thread(target=after).start()
    libc.syscall(EXIT, 0)
def mark_and_sleep():
    mark = str(os.getpid())
    try:
        mark += ' ' + open('/proc/self/stat').read().rsplit(')', 1)[1].split()[19]
    except PermissionError:
        pass
    with open(files + '{name}.part', 'w') as f:
        f.write(mark + '\n')
    os.rename(files + '{name}.part', files + '{name}')
    time.sleep(3600)
def own_session():
    os.setsid()
    if {double}:
        if os.fork() > 0:
            os._exit(0)
        then_first_thread_ends(mark_and_sleep)
    mark_and_sleep()
if os.fork() == 0:
    then_first_thread_ends(own_session)
while not os.path.exists(files + 'go'):
    time.sleep(0.01)
print('going', flush=True)
time.sleep({sleep})
"#
    )
}

/// Waits for the mark `name` in `files`, and until `/proc` shows the marked process as one
/// whose first thread ended alone (`Z`, two threads); then lets the program go on.
fn wait_until_first_thread_ended(files: &std::path::Path, name: &str, what: &str) -> String {
    let until = Instant::now() + Duration::from_secs(30);
    let mark = loop {
        if let Some(mark) = std::fs::read_to_string(files.join(name)).ok().filter(|t| t.ends_with('\n')) {
            break mark.trim().to_owned();
        }
        assert!(Instant::now() < until, "{what}: the program never marked its process");
        std::thread::sleep(Duration::from_millis(10));
    };
    loop {
        let pid = host_pid(&mark).unwrap_or_else(|| panic!("{what}: {mark} is not running"));
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
        if fields.first() == Some(&"Z") && fields.get(17) == Some(&"2") {
            break;
        }
        assert!(Instant::now() < until, "{what}: its first thread never ended alone: {stat}");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(marked_alive(&mark), "{what}: it runs on");
    std::fs::write(files.join("go"), "").unwrap();
    mark
}

/// Waits until the marked process is gone (or a zombie that truly ended).
fn assert_ends(mark: &str, within: Duration, what: &str) {
    let until = Instant::now() + within;
    while marked_alive(mark) {
        assert!(Instant::now() < until, "{what}: the process whose first thread ended alone still runs");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_calls_end_and_its_timeout_end_a_process_whose_first_thread_ended_alone() {
    for mode in modes() {
        for double in [false, true] {
            // The program exits once its process is made: its end ends the call; then the
            // program sleeps: the timeout ends the call.
            for (sleep, timeout, outcome) in [(0, 60, "exited"), (3600, 4, "timed_out")] {
                let what = format!("{mode:?}, double fork {double}, {outcome}");
                let policy = POLICY.replace("timeout = 60", &format!("timeout = {timeout}"));
                let agent = Agent::new("first-thread-ends-alone", &policy);
                let script = first_thread_ends_alone("p", double, sleep);
                let mut child = in_mode(&mut agent.command(&[], &["python3", "-c", &script]), mode)
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap();
                let mark = wait_until_first_thread_ended(&agent.home.join("Link/Files"), "p", &what);
                let r = Report::from(ends_within(&mut child, Duration::from_secs(30), &what));
                assert_eq!(r.outcome(), outcome, "{what}: {}", r.raw);
                assert!(r.out().contains("going"), "{what}: {}", r.raw);
                assert_ends(&mark, Duration::from_secs(2), &what);
            }
        }
    }
}

#[test]
fn a_group_the_helper_never_noted_is_ended_by_the_tree() {
    // Should the helper miss a group the program made (here a fault point makes it never note
    // one), the call's end still ends what it left, by the tree, within its bounds, rather than
    // wait for it.
    let what = "a group never noted";
    let agent = Agent::new("first-thread-unnoted", POLICY);
    let script = first_thread_ends_alone("p", false, 0);
    let mut cmd = agent.command(&[], &["python3", "-c", &script]);
    cmd.env("LNK_FAULT", "held-group-is-not-noted:fail");
    let mut child =
        in_mode(&mut cmd, Mode::LandlockOnly).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mark = wait_until_first_thread_ended(&agent.home.join("Link/Files"), "p", what);
    let r = Report::from(ends_within(&mut child, Duration::from_secs(30), what));
    assert_eq!(r.outcome(), "exited", "{what}: {}", r.raw);
    assert_ends(&mark, Duration::from_secs(2), what);
}

#[test]
fn a_stop_ends_a_background_process_whose_first_thread_ended_alone() {
    for mode in modes() {
        let bg = Bg::new("first-thread-stop");
        let (id, mark) = start(&bg, mode);
        let out = run(bg.cmd("stop").arg(&id));
        assert_eq!(out.status.code(), Some(0), "{mode:?}: {}", stderr(&out));
        assert_ends(&mark, Duration::from_secs(5), &format!("{mode:?}, stop"));
        let record = bg.record(&id);
        assert_eq!(record["leftovers_possible"], false, "{mode:?}: {record}");
    }
}

#[test]
fn the_sweep_ends_a_recorded_group_whose_leaders_first_thread_ended_alone() {
    // The Landlock-only mode records the groups a command makes; should its supervisor and
    // keeper both die, the sweep ends each whose leader still provably leads it (the own world
    // records none: its groups end with its pid namespace, and a sweep after both died says
    // leftovers are possible, as `tests/background.rs` checks).
    let bg = Bg::new("first-thread-sweep");
    let (id, mark) = start(&bg, Mode::LandlockOnly);
    let leader = host_pid(&mark).unwrap();
    let until = Instant::now() + Duration::from_secs(10);
    while !bg.record_text(&id).contains(&format!("\"{leader}:")) {
        assert!(Instant::now() < until, "the leader was never recorded:\n{}", bg.record_text(&id));
        std::thread::sleep(Duration::from_millis(20));
    }
    bg.kill_supervisor_and_keeper(&id);
    assert!(marked_alive(&mark), "it outlived its supervisor and keeper");
    let swept = bg.sweep(None);
    assert_ends(&mark, Duration::from_secs(5), &format!("sweep: {swept}"));
}

/// Starts the hostile program as a background command in `mode`, and waits until its process
/// is one whose first thread ended alone. Returns the command's id and the process's mark.
fn start(bg: &Bg, mode: Mode) -> (String, String) {
    let script = first_thread_ends_alone("p", false, 3600);
    let mut c = bg.cmd("start");
    c.arg("--file").arg(&bg.policy).args(["--grace-ms", "300", "--", "python3", "-c", &script]);
    let out = run(in_mode(&mut c, mode));
    assert_eq!(out.status.code(), Some(0), "{mode:?}: {}", stderr(&out));
    let id = stdout(&out).trim().to_owned();
    let mark = wait_until_first_thread_ended(&bg.files_dir, "p", &format!("{mode:?}"));
    (id, mark)
}
