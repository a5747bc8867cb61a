//! Background commands: `start`, the supervisor, `stop`, `list` and `read`.
//!
//! Lifetimes, from the outside in:
//!
//! ```text
//! lnk-link-run start      locks a record, starts the supervisor, writes and syncs the record,
//!  │                      says `go`, waits until the command has been executed (or says why
//!  │                      not), prints the id, exits
//!  └─ supervise           its own session, so a turn ending, the run server ending or the bridge
//!      │                  restarting leaves it running; holds the record's lock for its whole
//!      │                  life; reads the record and starts anything only after `go`; up only
//!      │                  while its command runs
//!      └─ keeper          the launcher's keeper (see `lifetime`): pins the process group
//!          └─ command     sandboxed exactly as `lnk sandbox run` sandboxes it (same code)
//! ```
//!
//! The supervisor records the command's end, then tells the bridge at most once (see [`bridge`]).
//! If it dies without a word, its lock is free and the sweep takes over (see `background::sweep`).
//!
//! Trusted with: which commands start in the background, and which process a `stop` signals: a bug
//! here could start a program the sandbox file does not list, past the hop cap or the limit of
//! four, or signal a process that is not the command's supervisor. What it trusts: the harness's
//! request (the flags, the hop, the conversation, the folders and the bridge, taken as given), the
//! supervisor's one line on the readiness pipe, and a record only once [`crate::records`] has
//! checked it is the caller's.

pub mod bridge;
pub mod output_end;
pub mod output_file;
pub mod supervise;
pub mod sweep;

use std::os::fd::{AsFd as _, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::exit;
use crate::flags::SandboxFlags;
use crate::records::{self, ReadError, Record, Records, State};
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
    /// The sandbox file the flags were read from (`--file`), if any.
    pub sandbox_file: Option<PathBuf>,
}

/// Why a verb failed, in a word a program can match on (`--json`'s `reason`), each with its own
/// exit code. Codes that mean "try later" and "never, from here" differ from "not allowed", so
/// a harness reading only the exit code can still tell them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// The command line is wrong (a flag, a missing value, an id that is not a record id).
    Usage,
    /// The program is not among the sandbox file's `commands`, or the sandbox refused it.
    NotAllowed,
    /// The call is `[tool.scheduler] hops` down a chain: no further start, ever, from there.
    HopCap,
    /// 4 commands are running: try again when one has ended.
    Limit,
    /// The program is not on the system PATH.
    ProgramNotFound,
    /// There is no background command with that id.
    UnknownId,
    /// A record, lock or output file is not the caller's (see `records::owner`): left alone.
    NotYours,
    /// `read`: the output file is not the one lnk wrote (a link, another file, a FIFO).
    OutputRefused,
    /// `read`: the command never started, so it has no output.
    NoOutput,
    /// lnk itself failed, or the sandbox could not be made.
    Failed,
    /// `start`: the sandbox file is invalid (its problems are in [`Failure::invalid_file`]).
    InvalidSandboxFile,
}

impl Reason {
    pub fn word(self) -> &'static str {
        match self {
            Reason::Usage => "usage",
            Reason::NotAllowed => "not_allowed",
            Reason::HopCap => "hop_cap",
            Reason::Limit => "limit",
            Reason::ProgramNotFound => "program_not_found",
            Reason::UnknownId => "unknown_id",
            Reason::NotYours => "not_yours",
            Reason::OutputRefused => "output_refused",
            Reason::NoOutput => "no_output",
            Reason::Failed => "failed",
            Reason::InvalidSandboxFile => "invalid_sandbox_file",
        }
    }

    pub fn exit_code(self) -> u8 {
        match self {
            Reason::Usage => exit::USAGE,
            Reason::NotAllowed | Reason::OutputRefused => exit::REFUSED,
            Reason::HopCap => exit::HOP_CAP,
            Reason::Limit => exit::TRY_LATER,
            Reason::ProgramNotFound | Reason::UnknownId => exit::NOT_FOUND,
            // 125, as `lnk sandbox run` answers an invalid file.
            Reason::NotYours | Reason::NoOutput | Reason::Failed | Reason::InvalidSandboxFile => {
                exit::HELPER_FAILED
            }
        }
    }
}

/// Why a verb failed: the reason, and a sentence for the person that says what to do.
#[derive(Debug)]
pub struct Failure {
    pub reason: Reason,
    pub message: String,
    /// With [`Reason::InvalidSandboxFile`]: what a harness needs to point at each problem.
    pub invalid_file: Option<InvalidFile>,
}

/// An invalid sandbox file as a `start` failure reports it, the JSON made where the problems are
/// known: the file as named, a one-line summary for `error`, and the diagnostics (a JSON array of
/// `{file, line, column, severity, message, help}`, as `lnk sandbox check --json` gives them).
#[derive(Debug)]
pub struct InvalidFile {
    pub file: String,
    pub summary: String,
    pub diagnostics_json: String,
}

impl Failure {
    pub fn new(reason: Reason, message: impl Into<String>) -> Failure {
        Failure { reason, message: message.into(), invalid_file: None }
    }

    pub fn exit_code(&self) -> u8 {
        self.reason.exit_code()
    }
}

fn failed(message: String) -> Failure {
    Failure::new(Reason::Failed, message)
}

/// Starts a background command and returns its id once the supervisor holds the record's lock
/// and the command has been executed.
pub fn start(agent: &Agent, req: &StartRequest) -> Result<String, Failure> {
    if req.hop >= req.hops {
        return Err(Failure::new(
            Reason::HopCap,
            format!(
                "this call is {} hops down a chain and `[tool.scheduler] hops` is {}: no further background start from here",
                req.hop, req.hops
            ),
        ));
    }
    // Refuse what the sandbox would refuse before anything is recorded; a program not
    // installed first (127, listed or not: no change to the sandbox file would run it).
    if let Err(e @ crate::program_path::LookupError::NotFound) = crate::program_path::lookup(&req.program) {
        return Err(Failure::new(Reason::ProgramNotFound, format!("`{}`: {e}", req.program.escape_debug())));
    }
    if let Commands::Listed(names) = &req.flags.commands {
        if !names.iter().any(|n| n == &req.program) {
            return Err(Failure::new(
                Reason::NotAllowed,
                format!("`{}` is not among the sandbox file's `commands`", req.program.escape_debug()),
            ));
        }
    }
    // lnk itself and the sandbox file stay out of the write grants: the supervisor checks its
    // own image again, but only `start` knows the file.
    let mut trusted = crate::sandbox::trusted::own_paths();
    if let Some(path) = &req.sandbox_file {
        trusted.push(crate::sandbox::trusted::Trusted { path: path.clone(), what: "the sandbox file" });
    }
    crate::sandbox::trusted::refuse_write_grants_over(&trusted, &req.flags.write).map_err(|r| {
        let reason = if r.exit_code == exit::REFUSED { Reason::NotAllowed } else { Reason::Failed };
        Failure::new(reason, r.message)
    })?;
    crate::program_path::lookup(&req.program).map_err(|e| {
        Failure::new(Reason::ProgramNotFound, format!("`{}`: {e}", req.program.escape_debug()))
    })?;

    let records = &agent.records;
    let starts = records.lock_starts().map_err(failed)?;
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
        groups: Vec::new(),
        more_groups: false,
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
        denials: Vec::new(),
    };
    // The caller's part of the record is bounded, so that every later write (with the output's
    // end and lnk's own fields) stays readable (see `records::format`).
    let size = record.to_toml().len();
    if size > records::format::START_RECORD_MAX_BYTES {
        records.remove(lock);
        return Err(Failure::new(
            Reason::Usage,
            format!(
                "the program, its arguments and the conversation id make a {size}-byte record; at most {} bytes are accepted (pass long data in a file)",
                records::format::START_RECORD_MAX_BYTES
            ),
        ));
    }
    let slot = match records.take_slot(MAX_RUNNING) {
        Ok(Some(slot)) => slot,
        Ok(None) => {
            records.remove(lock);
            return Err(Failure::new(
                Reason::Limit,
                format!(
                    "{MAX_RUNNING} background commands are running and at most {MAX_RUNNING} run at once: try again when one has ended (or stop one)"
                ),
            ));
        }
        Err(why) => {
            records.remove(lock);
            return Err(failed(why));
        }
    };
    // The supervisor is started before the record is written, and waits for the word `go`,
    // sent once the record is on the disk: its `execve` and this `fsync` overlap (together,
    // about a sixth of a start), and still no command runs before its record exists. The
    // supervisor reads the record only after `go`, so it never reads one half made, and its
    // own later writes replace a record already synced (see `Records::write_unsynced_name`).
    let pipes = (|| {
        let flags = rustix::pipe::PipeFlags::CLOEXEC;
        Ok::<_, rustix::io::Errno>((rustix::pipe::pipe_with(flags)?, rustix::pipe::pipe_with(flags)?))
    })();
    let ((ready_r, ready_w), (go_r, go_w)) = match pipes {
        Ok(p) => p,
        Err(e) => {
            records.remove(lock);
            return Err(failed(format!("pipe: {e}")));
        }
    };
    if let Err(why) = spawn_supervisor(agent, req, &id, [lock.fd(), &ready_w, &slot, &go_r]) {
        records.remove(lock);
        return Err(why);
    }
    // The supervisor holds the slot now, as it holds the record's lock.
    drop(slot);
    drop(ready_w);
    drop(go_r);
    #[cfg(feature = "fault-points")]
    crate::fault::point("start-before-publish");
    if let Err(why) = records.write(&lock, &record) {
        // Without `go` the supervisor ends at once, having started nothing.
        drop(go_w);
        records.remove(lock);
        return Err(failed(why));
    }
    #[cfg(feature = "fault-points")]
    crate::fault::point("start-after-publish");
    // A supervisor already gone is seen below: its readiness pipe closes without a word.
    let _ = rustix::io::write(&go_w, GO);
    drop(go_w);
    // The supervisor shares the record lock's open file description: the lock stays held when
    // this copy is closed. The next start may count now.
    drop(lock);
    drop(starts);
    wait_ready(&ready_r, &id)
}

/// What `start` writes on the supervisor's descriptor 6 once the record is on the disk.
pub(crate) const GO: &[u8] = b"go\n";

/// Starts `lnk-link-run supervise`, detached, with `inherited` (the record's lock, the
/// readiness pipe, the slot and the pipe `go` comes on) as its descriptors 3, 4, 5 and 6.
fn spawn_supervisor(
    agent: &Agent,
    req: &StartRequest,
    id: &str,
    inherited: [&OwnedFd; 4],
) -> Result<(), Failure> {
    use std::os::fd::AsFd as _;
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
    // The record lock as descriptor 3, the readiness pipe as 4, the slot as 5 and the `go`
    // pipe as 6; every other descriptor the caller may have leaked stays behind.
    let child = crate::sys::spawn_detached_with(&mut cmd, &inherited.map(|fd| fd.as_fd()))
        .map_err(|e| failed(format!("cannot start the supervisor: {e}")))?;
    // Not waited for: it outlives this process, and init (or a subreaper) reaps it.
    drop(child);
    Ok(())
}

/// Waits for the supervisor's word: `ok`, or `fail <code> <why>`.
fn wait_ready(ready: &OwnedFd, id: &str) -> Result<String, Failure> {
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
        Some((code, why)) => {
            let reason = match code.parse::<u8>() {
                Ok(exit::REFUSED) => Reason::NotAllowed,
                Ok(exit::NOT_FOUND) => Reason::ProgramNotFound,
                _ => Reason::Failed,
            };
            Err(Failure::new(reason, why.trim()))
        }
        None => Err(failed(format!(
            "{id}: the supervisor ended before the command started; the sweep will record it"
        ))),
    }
}

/// Stops one command: its supervisor is told (SIGTERM: stopped, or SIGHUP: the agent is going
/// away, recorded lost) and this waits until it has recorded the end. A command whose supervisor
/// is already gone is swept instead. A record or lock file that is not the caller's is an
/// error naming it, and nothing is signalled (see `records::owner`).
pub fn stop(agent: &Agent, id: &str, signal: i32, bridge: Option<&Path>) -> Result<Record, Failure> {
    let records = &agent.records;
    let record = read_record(records, id)?;
    if record.state.ended() {
        return Ok(record);
    }
    if records.is_live(id) {
        if let Some(sup) = &record.supervisor {
            // The lock is held, so the supervisor is alive; the pidfd and start time make sure the
            // signal reaches it and nothing that took its number.
            records::identity::signal_process(sup.pid, sup.start, signal)
                .map_err(|e| failed(format!("{id}: cannot signal its supervisor: {e}")))?;
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
        return Err(Failure::new(Reason::NotYours, why.clone()));
    }
    read_record(records, id)
}

/// Reads a record for a verb: an id that is not a record id is a usage error (never a path), a
/// missing record is an unknown id, and someone else's is left alone.
pub fn read_record(records: &Records, id: &str) -> Result<Record, Failure> {
    check_id(id)?;
    records.read_checked(id).map_err(|e| match e {
        ReadError::Missing(why) => Failure::new(Reason::UnknownId, why),
        ReadError::NotOurs(why) => Failure::new(Reason::NotYours, why),
        ReadError::Invalid(why) => failed(why),
    })
}

/// An id names files, so one that is not a record id is a usage error, never made into a path.
pub fn check_id(id: &str) -> Result<(), Failure> {
    records::format::validate_id(id).map_err(|why| {
        Failure::new(Reason::Usage, format!("{why}: give an id as `start` printed it (`r` and hex digits)"))
    })
}
