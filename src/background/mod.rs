//! Background commands: `start`, the supervisor, `stop`, `list` and `read`.
//!
//! Lifetimes, from the outside in:
//!
//! ```text
//! lnk-link-run start      makes and locks the record, starts the supervisor, waits until the
//!  │                      command has been executed (or says why not), prints the id, exits
//!  └─ supervise           its own session, so a turn ending, the run server ending or the bridge
//!      │                  restarting leaves it running; holds the record's lock for its whole
//!      │                  life; up only while its command runs
//!      └─ keeper          the launcher's keeper (see `lifetime`): pins the process group
//!          └─ command     sandboxed exactly as `lnk sandbox run` sandboxes it (same code)
//! ```
//!
//! The supervisor records the command's end, then tells the bridge at most once (see [`bridge`]).
//! If it dies without a word, its lock is free and the sweep takes over (see `records::sweep`).

pub mod bridge;
pub mod output_file;
pub mod supervise;

use std::os::fd::{AsFd as _, OwnedFd};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::cli::exit;
use crate::flags::SandboxFlags;
use crate::records::{self, Record, Records, State, sweep};
use crate::sandbox_file::Commands;
pub use supervise::supervise;

/// At most this many commands run at once for one agent.
pub const MAX_RUNNING: usize = 4;
/// A background command's timeout when none is given: an hour (a long test suite).
pub const DEFAULT_TIMEOUT_SECS: u32 = 3600;
/// How long a command has between SIGTERM and SIGKILL at its timeout or stop.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(5);

/// Where an agent's background commands live.
pub struct Agent {
    pub records: Records,
    pub agent_dir: PathBuf,
    pub files_dir: PathBuf,
}

impl Agent {
    pub fn open(agent_dir: &Path, files_dir: &Path) -> Result<Agent, String> {
        let canonical = |p: &Path| std::fs::canonicalize(p).map_err(|e| format!("{}: {e}", p.display()));
        let agent_dir = canonical(agent_dir)?;
        let files_dir = canonical(files_dir)?;
        Ok(Agent { records: Records::open(&agent_dir)?, agent_dir, files_dir })
    }
}

/// What `start` is asked to run.
pub struct StartRequest {
    pub flags: SandboxFlags,
    pub hops: u32,
    pub program: String,
    pub args: Vec<String>,
    pub conversation: String,
    pub hop: u32,
    pub timeout_secs: u32,
    pub output_cap: u64,
    pub grace: Duration,
    pub bridge: Option<PathBuf>,
}

/// Why a start failed, with the exit code `lnk sandbox run` would give.
#[derive(Debug)]
pub struct StartError {
    pub exit_code: u8,
    pub message: String,
}

fn refused(message: String) -> StartError {
    StartError { exit_code: exit::REFUSED, message }
}

fn failed(message: String) -> StartError {
    StartError { exit_code: exit::HELPER_FAILED, message }
}

/// Starts a background command and returns its id once the supervisor holds the record's lock
/// and the command has been executed.
pub fn start(agent: &Agent, req: &StartRequest) -> Result<String, StartError> {
    if req.hop >= req.hops {
        return Err(refused(format!(
            "this call is {} hops down a chain and `[tool.scheduler] hops` is {}: no further background start",
            req.hop, req.hops
        )));
    }
    // Refuse what the sandbox would refuse before anything is recorded.
    if let Commands::Listed(names) = &req.flags.commands {
        if !names.iter().any(|n| n == &req.program) {
            return Err(refused(format!(
                "`{}` is not among the sandbox file's `commands`",
                req.program.escape_debug()
            )));
        }
    }
    crate::program_path::lookup(&req.program).map_err(|e| StartError {
        exit_code: exit::NOT_FOUND,
        message: format!("`{}`: {e}", req.program.escape_debug()),
    })?;

    let records = &agent.records;
    let starts = records.lock_starts().map_err(failed)?;
    let running = records.ids().iter().filter(|id| records.is_live(id)).count();
    if running >= MAX_RUNNING {
        return Err(refused(format!(
            "{running} background commands are running; at most {MAX_RUNNING} run at once"
        )));
    }
    let (id, lock) = (0..16)
        .find_map(|attempt| {
            let id = records::new_id(attempt);
            records.create_lock(&id).ok().map(|lock| (id, lock))
        })
        .ok_or_else(|| failed("cannot create a record lock".into()))?;
    let record = Record {
        id: id.clone(),
        program: req.program.clone(),
        args: req.args.clone(),
        sandbox: req.flags.to_args(),
        conversation: req.conversation.clone(),
        hop: req.hop,
        timeout_secs: req.timeout_secs,
        output_chars: req.flags.output_chars,
        started_ms: records::now_ms(),
        state: State::Starting,
        supervisor: None,
        group: None,
        exit_code: None,
        signal: None,
        detail: String::new(),
        leftovers_possible: false,
        ended_ms: None,
        output_bytes: 0,
        output_dropped: 0,
        output_inode: None,
        output_end: String::new(),
        told: false,
    };
    records.write(&lock, &record).map_err(failed)?;
    #[cfg(feature = "fault-points")]
    crate::fault::point("start-after-publish");

    let (ready_r, ready_w) =
        rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(|e| failed(e.to_string()))?;
    spawn_supervisor(agent, req, &id, lock.fd(), &ready_w)?;
    drop(ready_w);
    // The supervisor shares the record lock's open file description: the lock stays held when
    // this copy is closed. The next start may count now.
    drop(lock);
    drop(starts);
    wait_ready(&ready_r, &id)
}

fn spawn_supervisor(
    agent: &Agent,
    req: &StartRequest,
    id: &str,
    lock: &OwnedFd,
    ready: &OwnedFd,
) -> Result<(), StartError> {
    use std::os::fd::AsRawFd as _;
    let exe =
        std::fs::read_link("/proc/self/exe").map_err(|e| failed(format!("cannot find lnk-link-run: {e}")))?;
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("supervise")
        .arg("--agent-dir")
        .arg(&agent.agent_dir)
        .arg("--files-dir")
        .arg(&agent.files_dir)
        .args([
            "--id",
            id,
            "--output-cap",
            &req.output_cap.to_string(),
            "--grace-ms",
            &req.grace.as_millis().to_string(),
        ]);
    if let Some(bridge) = &req.bridge {
        cmd.arg("--bridge").arg(bridge);
    }
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let (lock_fd, ready_fd) = (lock.as_raw_fd(), ready.as_raw_fd());
    // In the child before exec: a new session (detached from the caller's terminal, group and
    // session), the record lock as descriptor 3 and the readiness pipe as 4 without
    // close-on-exec, and every other descriptor the caller may have leaked marked close-on-exec.
    // SAFETY: the hook runs in the forked child of a single-threaded `start`, so even the
    // `/proc/self/fd` fallback of close_range, which allocates, cannot meet a held lock.
    unsafe {
        cmd.pre_exec(move || {
            rustix::process::setsid()?;
            for (from, to) in [(lock_fd, 3), (ready_fd, 4)] {
                if libc::dup2(from, to) != to {
                    return Err(std::io::Error::last_os_error());
                }
            }
            crate::sys::cloexec_from(5)
        });
    }
    let child = cmd.spawn().map_err(|e| failed(format!("cannot start the supervisor: {e}")))?;
    // Not waited for: it outlives this process, and init (or a subreaper) reaps it.
    drop(child);
    Ok(())
}

/// Waits for the supervisor's word: `ok`, or `fail <code> <why>`.
fn wait_ready(ready: &OwnedFd, id: &str) -> Result<String, StartError> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut text = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let timeout = rustix::event::Timespec::try_from(left).ok();
        let mut fds = [rustix::event::PollFd::new(ready, rustix::event::PollFlags::IN)];
        match rustix::event::poll(&mut fds, timeout.as_ref()) {
            Ok(0) => return Err(failed(format!("{id}: the supervisor did not say it started within 60 s"))),
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(failed(e.to_string())),
        }
        match rustix::io::read(ready.as_fd(), &mut buf) {
            Ok(0) => break,
            Ok(n) => {
                text.extend_from_slice(&buf[..n]);
                if text.contains(&b'\n') {
                    break;
                }
            }
            Err(rustix::io::Errno::INTR | rustix::io::Errno::AGAIN) => {}
            Err(e) => return Err(failed(e.to_string())),
        }
    }
    let text = String::from_utf8_lossy(&text);
    if text.trim() == "ok" {
        return Ok(id.to_owned());
    }
    match text.strip_prefix("fail ").and_then(|t| t.split_once(' ')) {
        Some((code, why)) => Err(StartError {
            exit_code: code.parse().unwrap_or(exit::HELPER_FAILED),
            message: why.trim().to_owned(),
        }),
        None => Err(failed(format!(
            "{id}: the supervisor ended before the command started; the sweep will record it"
        ))),
    }
}

/// Stops one command: its supervisor is told (SIGTERM: stopped, or SIGHUP: the agent is going
/// away, recorded lost) and this waits until it has recorded the end. A command whose supervisor
/// is already gone is swept instead. A record or lock file that is not the caller's is an
/// error naming it, and nothing is signalled (see `records::owner`).
pub fn stop(agent: &Agent, id: &str, signal: i32, bridge: Option<&Path>) -> Result<Record, String> {
    records::format::validate_id(id)?;
    let records = &agent.records;
    let record = records.read(id)?;
    if record.state.ended() {
        return Ok(record);
    }
    if records.is_live(id) {
        if let Some(sup) = &record.supervisor {
            // The lock is held, so the supervisor is alive; the pidfd and start time make sure the
            // signal reaches it and nothing that took its number.
            records::identity::signal_process(sup.pid, sup.start, signal)
                .map_err(|e| format!("{id}: cannot signal its supervisor: {e}"))?;
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        while records.is_live(id) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let why = if signal == libc::SIGHUP { "the agent stopped" } else { "its supervisor died without a word" };
    let mut report = sweep::SweepReport::default();
    sweep::sweep_one(records, &agent.files_dir, bridge, id, &mut report, why);
    if let Some((_, why)) = report.skipped.first() {
        return Err(why.clone());
    }
    records.read(id)
}
