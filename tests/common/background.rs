//! Helpers for the background-command tests: an agent's folders, and a bridge of the test's own.

use super::*;

use std::io::{BufRead as _, BufReader};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const POLICY: &str = r#"commands = ["sh", "sleep", "python3", "head", "cat", "setsid"]
[files]
read = ["~"]
write = ["~/Link/Files"]
[tool.run]
output = 200
[tool.scheduler]
hops = 3
"#;

pub struct Bg {
    pub dir: Scratch,
    pub home: PathBuf,
    pub agent_dir: PathBuf,
    pub files_dir: PathBuf,
    pub policy: PathBuf,
}

impl Bg {
    pub fn new(name: &str) -> Bg {
        Bg::with_policy(name, POLICY)
    }

    pub fn with_policy(name: &str, policy: &str) -> Bg {
        let dir = Scratch::new(name);
        let home = dir.join("home");
        let agent_dir = home.join("Link/Agents/a");
        let files_dir = home.join("Link/Files");
        std::fs::create_dir_all(&agent_dir).unwrap();
        std::fs::create_dir_all(&files_dir).unwrap();
        let policy = dir.file("sandbox.toml", policy);
        Bg { dir, home, agent_dir, files_dir, policy }
    }

    pub fn cmd(&self, verb: &str) -> Command {
        let mut c = link_run();
        c.env("HOME", &self.home)
            .arg(verb)
            .arg("--agent-dir")
            .arg(&self.agent_dir)
            .arg("--files-dir")
            .arg(&self.files_dir);
        c
    }

    pub fn start_with(&self, extra: &[&str], program: &[&str]) -> Output {
        let mut c = self.cmd("start");
        c.arg("--file").arg(&self.policy).args(["--grace-ms", "300"]).args(extra).arg("--").args(program);
        run(&mut c)
    }

    pub fn start(&self, program: &[&str]) -> String {
        let out = self.start_with(&[], program);
        assert_eq!(out.status.code(), Some(0), "start failed: {}", stderr(&out));
        stdout(&out).trim().to_owned()
    }

    /// The records `list --json` shows (its answer's `records`).
    pub fn list(&self) -> serde_json::Value {
        let out = run(self.cmd("list").arg("--json"));
        let answer = one_json_object(&out);
        assert_eq!(answer["ok"], true, "{answer}");
        answer["records"].clone()
    }

    pub fn record(&self, id: &str) -> serde_json::Value {
        self.list()
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("{id} not listed"))
    }

    pub fn wait_state(&self, id: &str, state: &str, within: Duration) -> serde_json::Value {
        let until = Instant::now() + within;
        loop {
            let r = self.record(id);
            if r["state"] == state {
                return r;
            }
            assert!(Instant::now() < until, "{id} never reached {state}: {r}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn record_text(&self, id: &str) -> String {
        std::fs::read_to_string(self.agent_dir.join("runs").join(format!("{id}.toml"))).unwrap()
    }

    pub fn record_field(&self, id: &str, key: &str) -> String {
        let text = self.record_text(id);
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{key} = ")))
            .unwrap_or_else(|| panic!("{key} not in record:\n{text}"))
            .to_owned()
    }

    pub fn sweep(&self, bridge: Option<&Path>) -> serde_json::Value {
        let mut c = self.cmd("sweep");
        c.arg("--json");
        if let Some(b) = bridge {
            c.arg("--bridge").arg(b);
        }
        let out = run(&mut c);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        one_json_object(&out)
    }

    /// Kills the command `id`'s supervisor and keeper at once (the keeper stopped first, so it
    /// ends nothing), as a machine's crash would, and waits until both are gone.
    pub fn kill_supervisor_and_keeper(&self, id: &str) {
        let sup: i32 = self.record_field(id, "supervisor_pid").parse().unwrap();
        let keeper: i32 = self.record_field(id, "keeper_pid").parse().unwrap();
        // SAFETY: stops, then kills, the keeper and the supervisor this test started.
        unsafe {
            libc::kill(keeper, libc::SIGSTOP);
            libc::kill(sup, libc::SIGKILL);
            libc::kill(keeper, libc::SIGKILL);
        }
        wait_dead(sup, Duration::from_secs(15));
        wait_dead(keeper, Duration::from_secs(15));
    }

    pub fn stop_all(&self) {
        let _ = run(self.cmd("stop").arg("--all"));
    }
}

impl Drop for Bg {
    fn drop(&mut self) {
        self.stop_all();
    }
}

/// Standard output as exactly one JSON object (one line) of schema 1, whatever the exit code.
pub fn one_json_object(out: &Output) -> serde_json::Value {
    let text = stdout(out);
    assert_eq!(text.lines().count(), 1, "one line of JSON: {text:?}\nstderr: {}", stderr(out));
    let v: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text:?}"));
    assert!(v.is_object(), "not an object: {v}");
    assert_eq!(v["schema"], 1, "{v}");
    v
}

pub fn alive(pid: i32) -> bool {
    super::pid_alive(pid)
}

pub fn wait_dead(pid: i32, within: Duration) {
    let until = Instant::now() + within;
    while alive(pid) {
        assert!(Instant::now() < until, "{pid} still alive");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A bridge of the test's own that records every line it is told.
pub struct TestBridge {
    pub path: PathBuf,
    pub lines: Arc<Mutex<Vec<String>>>,
}

impl TestBridge {
    pub fn new(dir: &Scratch) -> TestBridge {
        let path = dir.join("bridge.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    sink.lock().unwrap().push(line);
                }
            }
        });
        TestBridge { path, lines }
    }

    pub fn wait_for(&self, n: usize, within: Duration) -> Vec<String> {
        let until = Instant::now() + within;
        loop {
            let lines = self.lines.lock().unwrap().clone();
            if lines.len() >= n || Instant::now() >= until {
                return lines;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Waits for the mark (see [`MARK`]) the sandboxed command wrote to `path` of a process that is
/// alive, and returns its host pid.
pub fn read_pid(path: &Path) -> i32 {
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(mark) = std::fs::read_to_string(path).ok().filter(|t| t.ends_with('\n')) {
            return host_pid(&mark).unwrap_or_else(|| panic!("the marked process {mark:?} is not running"));
        }
        assert!(Instant::now() < until, "no pid in {}", path.display());
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `body`, a shell script, with [`MARK`] defined.
pub fn marked(body: &str) -> String {
    format!("{MARK}\n{body}")
}
