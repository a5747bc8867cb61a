//! Nothing a call does reaches past it: a held call acts only on the call's own, the helper
//! never stops answering, and a call's appetite for the host's shared resources is bounded.
//!
//! Each test acts as a hostile program would, in each mode this machine gives (the own world,
//! and the Landlock-only mode, where the helper holds calls for the program), and the suite runs
//! as root and as an ordinary user.

mod common;
use common::background::*;
use common::*;

use std::os::unix::process::CommandExt as _;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A process of the host's, not the call's, that leads a process group and a session of its
/// own (as a shell, a daemon or the harness does); killed when dropped.
struct Stranger(Child);

impl Stranger {
    fn start() -> Stranger {
        let mut c = Command::new("sleep");
        c.arg("3600").stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        // SAFETY: setsid is async-signal-safe, and the closure touches nothing else.
        unsafe {
            c.pre_exec(|| if libc::setsid() < 0 { Err(std::io::Error::last_os_error()) } else { Ok(()) });
        }
        let child = c.spawn().unwrap();
        let pid = child.id() as i32;
        // It leads its group once setsid returned, before it ran `sleep`.
        let until = Instant::now() + Duration::from_secs(10);
        while std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| s.rsplit(')').next().unwrap_or("").split_whitespace().nth(2) != Some(&pid.to_string()))
            .unwrap_or(true)
        {
            assert!(Instant::now() < until, "the stranger never led its group");
            std::thread::sleep(Duration::from_millis(10));
        }
        Stranger(child)
    }

    fn pid(&self) -> i32 {
        self.0.id() as i32
    }

    fn alive(&mut self) -> bool {
        matches!(self.0.try_wait(), Ok(None))
    }
}

impl Drop for Stranger {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A hostile script: names the stranger's pid in every `setpgid` and `setsid` form (each
/// refused by the kernel: it is not the caller's child), says what it got, then sleeps `sleep`
/// seconds (a background command is ended while it sleeps).
fn name_the_stranger(victim: i32, sleep: u32) -> String {
    format!(
        "import os, time, errno
def attempt(f):
    try:
        f(); return 'ok'
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
print('as_leader=' + attempt(lambda: os.setpgid({victim}, 0)), flush=True)
print('own_number=' + attempt(lambda: os.setpgid({victim}, {victim})), flush=True)
print('join=' + attempt(lambda: os.setpgid(0, {victim})), flush=True)
time.sleep({sleep})
"
    )
}

const POLICY: &str = r#"commands = ["sh", "sleep", "python3"]
[files]
read = ["~"]
write = ["~/Link/Files"]
[tool.run]
timeout = 60
"#;

#[test]
fn a_program_that_names_a_host_process_in_setpgid_ends_without_killing_its_group() {
    for mode in modes() {
        let agent = Agent::new("setpgid-stranger", POLICY);
        let mut stranger = Stranger::start();
        let script = name_the_stranger(stranger.pid(), 0);
        let r = Report::from(run(in_mode(&mut agent.command(&[], &["python3", "-c", &script]), mode)));
        assert_eq!(r.code, Some(0), "{mode:?}: {}", r.raw);
        // The kernel refuses each (the stranger is not the caller's child; in the own world it
        // is not even there), and the helper answers as the kernel does.
        for name in ["as_leader", "own_number", "join"] {
            assert_ne!(r.said(name), "ok", "{mode:?}: {name}");
        }
        std::thread::sleep(Duration::from_millis(200));
        assert!(stranger.alive(), "{mode:?}: the call's end killed the host's process group");
    }
}

#[test]
fn a_background_command_that_names_a_host_process_leaves_it_alone_at_its_stop_and_in_the_sweep() {
    for mode in modes() {
        // Ended by a stop.
        let bg = Bg::new("bg-stranger-stop");
        let mut stranger = Stranger::start();
        let out = start_in(&bg, mode, &["python3", "-c", &name_the_stranger(stranger.pid(), 90)]);
        assert_eq!(out.status.code(), Some(0), "{mode:?}: {}", stderr(&out));
        let id = stdout(&out).trim().to_owned();
        wait_for_output(&bg, &id, "join=");
        let out = run(bg.cmd("stop").arg(&id));
        assert_eq!(out.status.code(), Some(0), "{mode:?}: {}", stderr(&out));
        std::thread::sleep(Duration::from_millis(200));
        assert!(stranger.alive(), "{mode:?}: the stop killed the host's process group");
        assert!(!bg.record_text(&id).contains(&format!("\"{}:", stranger.pid())), "{mode:?}: recorded");
        drop(bg);

        // Its supervisor and keeper killed at once: the sweep ends what the record names.
        let bg = Bg::new("bg-stranger-sweep");
        let out = start_in(&bg, mode, &["python3", "-c", &name_the_stranger(stranger.pid(), 90)]);
        assert_eq!(out.status.code(), Some(0), "{mode:?}: {}", stderr(&out));
        let id = stdout(&out).trim().to_owned();
        wait_for_output(&bg, &id, "join=");
        assert!(!bg.record_text(&id).contains(&format!("\"{}:", stranger.pid())), "{mode:?}: recorded");
        bg.kill_supervisor_and_keeper(&id);
        bg.sweep(None);
        std::thread::sleep(Duration::from_millis(200));
        assert!(stranger.alive(), "{mode:?}: the sweep killed the host's process group");
    }
}

/// Starts a background command in `mode`.
fn start_in(bg: &Bg, mode: Mode, program: &[&str]) -> std::process::Output {
    let mut c = bg.cmd("start");
    c.arg("--file").arg(&bg.policy).args(["--grace-ms", "300", "--"]).args(program);
    run(in_mode(&mut c, mode))
}

/// Waits until the background command's output holds `text`.
fn wait_for_output(bg: &Bg, id: &str, text: &str) {
    let path = bg.files_dir.join("background").join(format!("{id}.out"));
    let until = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(&path).is_ok_and(|t| t.contains(text)) {
        assert!(Instant::now() < until, "the command never said {text:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_call_cannot_prepare_where_a_persons_link_will_put_a_secret() {
    // GNU stow's tree folding (`~/.config` → `dotfiles/config`, with `~/dotfiles` writable) and
    // a dangling `~/.netrc` → `work/dotfiles/netrc` (with `~/work` writable): where each link
    // leads does not exist yet. A call must not make it (a folder, a hard link to a file it can
    // read later, a link of its own), or the person's tool would write the token there.
    let policy = r#"commands = ["sh", "mkdir", "ln", "cat", "ls", "echo"]
[files]
read = ["~"]
write = ["~/Link/Files", "~/dotfiles", "~/work"]
"#;
    let agent = Agent::new("planted-secret", policy);
    let home = &agent.home;
    std::fs::create_dir_all(home.join("dotfiles")).unwrap();
    std::fs::create_dir_all(home.join("work")).unwrap();
    std::os::unix::fs::symlink("dotfiles/config", home.join(".config")).unwrap();
    std::os::unix::fs::symlink("work/dotfiles/netrc", home.join(".netrc")).unwrap();
    // Past a name that does not exist yet, `..`: the link resolves once anything is made there.
    std::fs::create_dir_all(home.join(".config-real")).unwrap();
    std::os::unix::fs::symlink("../Link/Files/missing/../npmrc", home.join(".config-real/npmrc")).unwrap();
    std::os::unix::fs::symlink(".config-real/npmrc", home.join(".npmrc")).unwrap();
    let hostile = "cd ~
mkdir -p dotfiles/config/gh 2>/dev/null && ln dotfiles/bait dotfiles/config/gh/hosts.yml 2>/dev/null
ln -s ../Link/Files dotfiles/config 2>/dev/null
mkdir -p work/dotfiles 2>/dev/null && ln work/bait work/dotfiles/netrc 2>/dev/null
echo planted > ~/.netrc 2>/dev/null
echo planted > ~/.config 2>/dev/null
mkdir Link/Files/missing 2>/dev/null; ln -s .. Link/Files/missing 2>/dev/null
echo planted > ~/.npmrc 2>/dev/null
ls dotfiles work
true";
    // Files of the call's to link from (a new file cannot be made beside a hole's way).
    std::fs::write(home.join("work/bait"), "bait").unwrap();
    std::fs::write(home.join("dotfiles/bait"), "bait").unwrap();
    for (mode, r) in agent.in_each_mode_at(home, &[], &[], &["sh", "-c", hostile]) {
        assert_eq!(r.code, Some(0), "{mode}: {}", r.raw);
        for made in ["dotfiles/config", "work/dotfiles", "Link/Files/missing", "Link/Files/npmrc"] {
            assert!(
                std::fs::symlink_metadata(home.join(made)).is_err(),
                "{mode}: the call made `~/{made}`, where a person's link leads: {}",
                r.raw
            );
        }
        for bait in ["work/bait", "dotfiles/bait"] {
            let links = std::fs::metadata(home.join(bait)).map(|m| std::os::unix::fs::MetadataExt::nlink(&m));
            assert_eq!(links.ok(), Some(1), "{mode}: `~/{bait}` was linked elsewhere");
        }
    }
    // The person's tools then write through the links; a call reads neither, by either name.
    std::fs::create_dir_all(home.join("dotfiles/config/gh")).unwrap();
    std::fs::write(home.join("dotfiles/config/gh/hosts.yml"), "token-gh\n").unwrap();
    std::fs::create_dir_all(home.join("work/dotfiles")).unwrap();
    std::fs::write(home.join("work/dotfiles/netrc"), "token-netrc\n").unwrap();
    let read = "cd ~; cat .config/gh/hosts.yml dotfiles/config/gh/hosts.yml .netrc work/dotfiles/netrc 2>/dev/null; true";
    for (mode, r) in agent.in_each_mode_at(home, &[], &[], &["sh", "-c", read]) {
        assert!(!r.out().contains("token"), "{mode}: {}", r.raw);
    }
}

/// `cmd` run in a network namespace of the test's own whose automatic port range is 100 ports
/// (40000-40099), followed there by an unsandboxed client that connects 20 times to a server of
/// its own: it prints `client=ok`, or the error its connect got.
fn then_an_unsandboxed_client_in_a_small_port_range(cmd: &Command) -> Command {
    let mut c = Command::new("unshare");
    c.args([
        "-rn",
        "sh",
        "-c",
        r#"echo "40000 40099" > /proc/sys/net/ipv4/ip_local_port_range || exit 97
PATH="$PATH:/usr/sbin:/sbin" ip link set lo up || exit 96
"$@"
python3 -c '
import errno, socket
server = socket.socket(); server.bind(("127.0.0.1", 5000)); server.listen(64)
try:
    for _ in range(20):
        c = socket.create_connection(("127.0.0.1", 5000)); a, _ = server.accept(); c.close(); a.close()
    print("client=ok")
except OSError as e:
    print("client=" + errno.errorcode.get(e.errno, str(e.errno)))
'"#,
        "sh",
    ]);
    run_inside(&mut c, cmd);
    c
}

#[test]
fn a_program_that_cycles_servers_leaves_the_hosts_automatic_ports_to_others() {
    // A dev server restarted in a loop, or a test suite making a server per test: each listener
    // is made by the helper (Landlock-only) and closed with its accepted connection closed
    // first, which leaves that port in TIME_WAIT. None may come from the host's automatic range.
    let cycle = "import socket
made = 0
for _ in range(300):
    s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(1)
    c = socket.create_connection(s.getsockname()); a, _ = s.accept()
    a.close(); c.close(); s.close()
    made += 1
print('cycled=%d' % made, flush=True)
";
    for mode in modes() {
        let agent = Agent::new("port-cycle", POLICY);
        let mut inner = agent.command(&[], &["python3", "-c", cycle]);
        in_mode(&mut inner, mode);
        // Root in the namespace: a private tmp base of the test's own, not the host root's.
        let tmp = agent.dir.join("tmp-netns");
        std::fs::create_dir_all(&tmp).unwrap();
        inner.env("TMPDIR", &tmp);
        let out = run(&mut then_an_unsandboxed_client_in_a_small_port_range(&inner));
        let text = stdout(&out);
        assert!(text.contains("cycled=300"), "{mode:?}: the program's own servers: {text}\n{}", stderr(&out));
        assert!(text.contains("client=ok"), "{mode:?}: the host's next connect: {text}\n{}", stderr(&out));
    }
}

/// A hostile script for the Landlock-only mode: makes a FIFO in the call's own shared memory
/// folder (`$TMPDIR/shm`, which the helper made at its first `shm_open`), then opens it by its
/// shared memory name as `shm_open` does (`O_NOFOLLOW`), which the helper performs; says what it
/// got, then sleeps.
const FIFO_AT_A_SHM_NAME: &str = r#"
import ctypes, errno, os, time
libc = ctypes.CDLL(None, use_errno=True)
def shm_open(name, flags):
    fd = libc.open(name, flags | os.O_NOFOLLOW, 0o600)
    return "ok" if fd >= 0 else errno.errorcode[ctypes.get_errno()]
print("seed=" + shm_open(b"/dev/shm/seed", os.O_RDWR | os.O_CREAT | os.O_EXCL), flush=True)
os.mkfifo(os.environ["TMPDIR"] + "/shm/f")
print("fifo=" + shm_open(b"/dev/shm/f", os.O_RDONLY), flush=True)
print("fifo_rw=" + shm_open(b"/dev/shm/f", os.O_RDWR), flush=True)
time.sleep(90)
"#;

/// `lnk sandbox run` of `cmd` for `agent` in `mode`, started with its outputs piped.
fn spawn_in(agent: &Agent, mode: Mode, cmd: &[&str]) -> Child {
    in_mode(&mut agent.command(&[], cmd), mode).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

#[test]
fn a_fifo_at_a_shared_memory_name_freezes_nothing_and_the_call_still_stops() {
    // Its timeout fires.
    let agent = Agent::new("shm-fifo", &POLICY.replace("timeout = 60", "timeout = 3"));
    let mut child = spawn_in(&agent, Mode::LandlockOnly, &["python3", "-c", FIFO_AT_A_SHM_NAME]);
    let r = Report::from(ends_within(&mut child, Duration::from_secs(30), "the timeout"));
    assert_eq!(r.outcome(), "timed_out", "{}", r.raw);
    r.assert_said("seed", "ok");
    // Refused, never opened as asked (a reader of a FIFO without a writer waits forever).
    r.assert_said("fifo", "EACCES");
    r.assert_said("fifo_rw", "EACCES");

    // A stop signal is read at once.
    let agent = Agent::new("shm-fifo-stop", POLICY);
    let mut child = spawn_in(&agent, Mode::LandlockOnly, &["python3", "-c", FIFO_AT_A_SHM_NAME]);
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: signals the lnk this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let r = Report::from(ends_within(&mut child, Duration::from_secs(15), "SIGTERM"));
    assert_eq!(r.outcome(), "stopped", "{}", r.raw);
}

/// The status lines of each thread of process `pid`: its name, and `Seccomp`, `NoNewPrivs` and
/// `CapEff`.
fn threads_of(pid: i32) -> Vec<(String, String)> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Vec::new() };
    tasks
        .flatten()
        .filter_map(|t| {
            let name = std::fs::read_to_string(t.path().join("comm")).ok()?.trim().to_owned();
            let status = std::fs::read_to_string(t.path().join("status")).ok()?;
            let keep = |l: &&str| ["Seccomp:", "NoNewPrivs:", "CapEff:"].iter().any(|k| l.starts_with(k));
            let lines: Vec<String> = status
                .lines()
                .filter(keep)
                .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
                .collect();
            Some((name, lines.join(", ")))
        })
        .collect()
}

#[test]
fn the_held_calls_server_is_confined_before_it_reads_a_byte_of_the_programs() {
    // A held call (a chmod inside the write grant), then the program waits: meanwhile the
    // helper's thread that served it runs under seccomp with no_new_privs and no capability,
    // and its main thread (which keeps the call's lifetime) does not. With a fault point it
    // also tries to open a file, which its Landlock domain refuses.
    let script = "import os, time
open('Link/Files/f', 'w').write('x')
os.chmod('Link/Files/f', 0o600)
print('held', flush=True)
open('Link/Files/held', 'w').close()
time.sleep(60)
";
    let agent = Agent::new("held-confined", POLICY);
    let mut child = in_mode(&mut agent.command(&[], &["python3", "-c", script]), Mode::LandlockOnly)
        .env("LNK_FAULT", "held-calls-server-opens-a-file:fail")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lnk = child.id() as i32;
    let until = Instant::now() + Duration::from_secs(30);
    let held = agent.home.join("Link/Files/held");
    let threads = loop {
        let threads = threads_of(lnk);
        if held.exists() && threads.iter().any(|(name, _)| name == "lnk-held-calls") {
            break threads;
        }
        assert!(Instant::now() < until, "no held calls' server ever ran: {threads:?}");
        std::thread::sleep(Duration::from_millis(20));
    };
    // SAFETY: signals the lnk this test started.
    unsafe { libc::kill(lnk, libc::SIGTERM) };
    let out = ends_within(&mut child, Duration::from_secs(15), "SIGTERM");
    let r = Report::from(out);
    assert!(r.out().contains("held"), "{}", r.raw);
    let server = &threads.iter().find(|(name, _)| name == "lnk-held-calls").unwrap().1;
    assert!(
        server.contains("Seccomp: 2")
            && server.contains("NoNewPrivs: 1")
            && server.contains("CapEff: 0000000000000000"),
        "the server: {server}"
    );
    let main = &threads.iter().find(|(name, _)| name == "lnk").unwrap().1;
    assert!(main.contains("Seccomp: 0"), "the main thread: {main}");
    assert!(
        r.stderr.contains("the held calls' server opening /etc/passwd: Permission denied"),
        "lnk's own standard error: {}",
        r.stderr
    );
}

/// The tests that load the machine's cores and pids run one at a time.
static HEAVY: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A fork loop that stops at its first refusal, says how many it made and why it stopped,
/// marks `~/Link/Files/full`, and holds what it made for `hold` seconds.
fn fork_loop(hold: u32) -> String {
    format!(
        "import errno, os, time
made, why, kids = 0, 'never', []
while made < 3000:
    try:
        pid = os.fork()
    except OSError as e:
        why = errno.errorcode[e.errno]; break
    if pid == 0:
        time.sleep(60); os._exit(0)
    kids.append(pid); made += 1
print('made=%d' % made, flush=True); print('why=' + why, flush=True)
open(os.path.expanduser('~/Link/Files/full'), 'w').write('full')
time.sleep({hold})
for k in kids: os.kill(k, 9)
"
    )
}

#[test]
fn a_fork_loop_stops_at_the_calls_bound_while_the_persons_own_processes_still_fork() {
    let _heavy = HEAVY.lock().unwrap_or_else(|e| e.into_inner());
    for mode in modes() {
        let agent = Agent::new("fork-loop", &POLICY.replace("timeout = 60", "timeout = 60\nprocesses = 100"));
        let as_root = rustix::process::geteuid().is_root();
        let machine_tasks = machine_tasks();
        let mut child = spawn_in(&agent, mode, &["python3", "-c", &fork_loop(3)]);
        let lnk = child.id() as i32;
        let full = agent.home.join("Link/Files/full");
        let until = Instant::now() + Duration::from_secs(60);
        // The call's tasks, counted from outside all the while (lnk's keeper among them).
        let mut most = 0;
        while !full.exists() && child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < until, "{mode:?}: the loop never stopped");
            most = most.max(tasks_beneath(lnk));
            // Leave the machine's cores to the call and its helper, as a person's machine would.
            std::thread::sleep(Duration::from_millis(2));
        }
        // The call holds all it may: the person's own processes still start.
        for _ in 0..20 {
            assert!(Command::new("true").status().unwrap().success(), "{mode:?}: the person could not fork");
        }
        most = most.max(tasks_beneath(lnk));
        let r = Report::from(ends_within(&mut child, Duration::from_secs(60), "the fork loop"));
        assert_eq!(r.json["enforced"]["appetite"]["processes"], 100, "{}", r.raw);
        match mode {
            // The kernel counts in the call's namespaces: the loop gets EAGAIN at the bound
            // (its own first processes, lnk's pid 1 among them, take a few of it).
            Mode::OwnWorld => {
                let made: u32 = r.said("made").parse().unwrap();
                r.assert_said("why", "EAGAIN");
                assert!((90..=100).contains(&made), "{mode:?}: made {made}");
                assert!(most <= 102, "{mode:?}: {most} tasks at once");
            }
            // As root the helper's watch contains the loop: past the bound it ends the loop's
            // children, and the loop itself once its unreaped children hold the pids; a loop can
            // outrun the looks by hundreds on a busy machine, never by the thousands it makes
            // (the machine's pids are 32768 here). The report names it.
            Mode::LandlockOnly if as_root => {
                assert!(most <= 2000, "{mode:?}: {most} tasks at once, the bound 100");
                let named = r.json["denials"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|d| d["access"] == "count" && d["target"] == "processes");
                assert!(named, "the bound reached is named: {}", r.raw);
            }
            // An ordinary user's fork gets EAGAIN past the bound and the machine's other tasks
            // at the start (the kernel counts every task of the user).
            Mode::LandlockOnly => {
                let made: u32 = r.said("made").parse().unwrap();
                r.assert_said("why", "EAGAIN");
                assert!(
                    made <= 100 + machine_tasks,
                    "{mode:?}: made {made}, {machine_tasks} tasks at the start"
                );
            }
        }
    }
}

/// The machine's tasks now (`/proc/loadavg`'s `running/all`).
fn machine_tasks() -> u32 {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap();
    text.split_whitespace()
        .nth(3)
        .and_then(|f| f.split_once('/'))
        .and_then(|(_, all)| all.parse().ok())
        .unwrap()
}

/// The tasks of every process beneath `pid`, from `/proc`.
fn tasks_beneath(pid: i32) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else { return 0 };
    let mut parent: std::collections::HashMap<i32, (i32, usize)> = std::collections::HashMap::new();
    for e in entries.flatten() {
        let Some(p) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else { continue };
        let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
        let (Some(ppid), Some(threads)) = (fields.get(1), fields.get(17)) else { continue };
        parent.insert(p, (ppid.parse().unwrap_or(0), threads.parse().unwrap_or(1)));
    }
    let beneath = |mut p: i32| {
        while let Some((ppid, _)) = parent.get(&p) {
            if *ppid == pid {
                return true;
            }
            p = *ppid;
        }
        false
    };
    parent.iter().filter(|(p, _)| beneath(**p)).map(|(_, (_, t))| *t).sum()
}

#[test]
fn many_threads_forking_at_once_stay_within_the_calls_bound() {
    // Found in review: 900 threads forking at once reached nearly twice the bound, and a helper
    // out of descriptors (a slow held call, many threads queuing chmods behind it) stopped
    // counting at all. Here 200 threads
    // fork at once while 200 more queue held chmods behind connects to a server that never
    // accepts; the test counts the call's tasks, and the helper's descriptors, from outside all
    // the while.
    let _heavy = HEAVY.lock().unwrap_or_else(|e| e.into_inner());
    let script = "import os, resource, socket, threading, time
hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
server = socket.socket(); server.bind(('127.0.0.1', 0)); server.listen(1)
address = server.getsockname()
# The listener's queue filled (the helper makes it with room for 4096), so the helper's next
# connects to it wait, one after another, and the held calls behind them queue.
kept = []
for _ in range(4100):
    c = socket.socket(); c.setblocking(False)
    try: c.connect(address)
    except OSError: pass
    kept.append(c)
def stuck():
    while True:
        c = socket.socket()
        try: c.connect(address)
        except OSError: pass
def chmods():
    open('Link/Files/f-%d' % threading.get_ident(), 'w').close()
    while True:
        try: os.chmod('Link/Files/f-%d' % threading.get_ident(), 0o600)
        except OSError: pass
def forks():
    while True:
        try:
            pid = os.fork()
        except OSError:
            time.sleep(0.01); continue
        if pid == 0:
            time.sleep(1.5); os._exit(0)
go = threading.Event()
def forks_together():
    go.wait(); forks()
for target, n in ((stuck, 8), (chmods, 200), (forks_together, 200)):
    for _ in range(n):
        threading.Thread(target=target, daemon=True).start()
go.set()
open('Link/Files/storming', 'w').close()
time.sleep(6)
os._exit(0)
";
    let agent = Agent::new("fork-storm", &POLICY.replace("timeout = 60", "timeout = 60\nprocesses = 500"));
    let mut child = spawn_in(&agent, Mode::LandlockOnly, &["python3", "-c", script]);
    let lnk = child.id() as i32;
    let (mut most, mut descriptors) = (0, 0);
    let storming = agent.home.join("Link/Files/storming");
    while child.try_wait().unwrap().is_none() {
        most = most.max(tasks_beneath(lnk));
        // Once the storm is on (the sandbox's own making opens many more, for a moment).
        if storming.exists() {
            descriptors =
                descriptors.max(std::fs::read_dir(format!("/proc/{lnk}/fd")).map_or(0, |d| d.count()));
        }
    }
    let r = Report::from(ends_within(&mut child, Duration::from_secs(1), "the storm"));
    // The keeper and the program's first process are beneath lnk too, and counted.
    // The watch looks every 10 ms near the bound: what the threads fork in between is ended.
    assert!(most <= 1000, "the call had {most} tasks at once, its bound 500: {}", r.raw);
    assert!(most >= 450, "the storm never neared the bound ({most}): {}", r.raw);
    // The calls queued behind the stuck ones hold no descriptor of the helper's each.
    assert!(descriptors < 120, "the helper held {descriptors} descriptors at once");
}

#[test]
fn a_held_calls_server_that_ends_leaves_no_call_waiting() {
    // Should the held calls' server end (a bug), each held call is refused at once (the kernel's
    // `ENOSYS`, once nothing listens), and the call ends as the program does: nothing waits for
    // the timeout, and nothing spins (found when a bug ended the server: its receiver spun on
    // the server's closed end, and every held call waited).
    let script = "import os, time
os.makedirs('w', exist_ok=True)
start = time.monotonic()
for _ in range(3):
    try:
        os.chmod('w', 0o700)
        print('chmod=ok', flush=True)
    except OSError as e:
        print('chmod=' + str(e.errno), flush=True)
print('quick=%s' % (time.monotonic() - start < 5), flush=True)
";
    let agent = Agent::new("held-server-ends", POLICY);
    let files = agent.home.join("Link/Files");
    let r = Report::from(run(in_mode(
        agent
            .command(&["--timeout", "20"], &["python3", "-c", script])
            .current_dir(&files)
            .env("LNK_FAULT", "held-calls-server-ends:fail"),
        Mode::LandlockOnly,
    )));
    assert_eq!(r.json["outcome"], "exited", "{}", r.raw);
    r.assert_said("quick", "True");
    assert!(!r.out().contains("chmod=ok"), "nothing served it: {}", r.raw);
}
