//! `lnk sandbox run`: one call, one sandbox.
//!
//! The steps, in order, each able to refuse before anything starts:
//! 1. the flags (from a sandbox file, from the command line, or the embedded default);
//! 2. the kernel check and the program against `commands` ([`Sandbox::prepare`]);
//! 3. the call's private tmp folder and the clean environment;
//! 4. the keeper and the program ([`lifetime::start`]);
//! 5. waiting, with the output kept by [`OutputTail`], until the program ends, the deadline (a
//!    tenth before `[tool.run] timeout`) passes, or the helper is told to stop;
//! 6. the report.
//!
//! Trusted with: one call from flags to report: that the program starts only in the sandbox
//! prepared for it, with the clean environment, and that the report says how it ended. What it
//! trusts: the request (the harness's flags, `--env` values, `--agent-dir` folders and `HOME`), the
//! caller's `LANG` only when it is a plain locale name, and the modules it calls for each step.

use std::os::fd::{AsFd as _, OwnedFd};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::exit;
use crate::flags::SandboxFlags;
use crate::lifetime::{self, Exit, ProgramImage, StartFailure, Stdio};
use crate::output::{Captured, OutputTail};
use crate::private_tmp::PrivateTmp;
use crate::program_path::system_path_var;
use crate::proxy::{self, ResolveOverride};
use crate::report::{Outcome, Report};
use crate::sandbox::kernel::KernelSupport;
use crate::sandbox::{Refusal, Sandbox, SandboxRequest};
use crate::sandbox_file::{Commands, Tool};

/// One call as the command line asked for it.
pub struct RunRequest {
    pub flags: SandboxFlags,
    pub program: String,
    pub args: Vec<String>,
    /// `NAME=value` pairs named explicitly by the caller.
    pub extra_env: Vec<String>,
    /// Pass the caller's standard input instead of /dev/null.
    pub pass_stdin: bool,
    /// Folders no write grant may cover (the agent's records).
    pub protected: Vec<PathBuf>,
    pub home: PathBuf,
    /// The sandbox file, when the call was made from one (`--file`).
    pub sandbox_file: Option<PathBuf>,
    /// `--resolve NAME:PORT:ADDR` pins for the call's proxy.
    pub resolve: Vec<ResolveOverride>,
}

/// The longest a file session may last (a bound for the deadline arithmetic, not a policy).
const SESSION_LIMIT: Duration = Duration::from_secs(30 * 86_400);

/// The signals that stop a call: the harness's SIGTERM, a person's Ctrl-C, a closed terminal.
const STOP_SIGNALS: [i32; 3] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP];

/// Runs the call and returns its report. Never panics on a refusal: every way it can end is an
/// [`Outcome`].
pub fn run(req: &RunRequest) -> Report {
    let started = Instant::now();
    let mut report = Report::new(&req.program);
    let mut kernel = KernelSupport::probe_for_launch();
    report.landlock_abi = kernel.landlock.as_ref().ok().copied();

    let tmp = match PrivateTmp::create() {
        Ok(t) => t,
        Err(why) => return report.failed(why, started),
    };
    let sandbox_req = SandboxRequest {
        flags: &req.flags,
        program: &req.program,
        private_tmp: tmp.path(),
        protected: &req.protected,
        home: &req.home,
        sandbox_file: req.sandbox_file.as_deref(),
    };
    let stop_signals = match crate::sys::signalfd_for(&STOP_SIGNALS) {
        Ok(fd) => fd,
        Err(e) => return report.failed(format!("signalfd: {e}"), started),
    };
    // Made here, before any thread or child: every thread the helper starts inherits SIGCHLD
    // blocked, so the signal stays pending for this descriptor (see `Group::wake_on_child_exit`).
    // The keeper blocks it too; the program's process unblocks every signal.
    let child_ended = match crate::sys::signalfd_for(&[libc::SIGCHLD]) {
        Ok(fd) => fd,
        Err(e) => return report.failed(format!("signalfd: {e}"), started),
    };
    // Anything the program's descendants leave behind is reparented to the helper, which reaps.
    let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
    let session = req.flags.tool == Tool::File;
    let mut launched = launch(req, &sandbox_req, &kernel);
    // A kept answer that promised the own world, which the kernel no longer gives: nothing of
    // the program ran, so the call starts again in the mode the kernel gives now.
    let stale = match &mut launched {
        Ok(Launched { sandbox, group, .. }) => {
            kernel.world_kept
                && sandbox.enforcement.mode.is_own_world()
                && matches!(group.wait_started(), Some(StartFailure::Sandbox(_)))
        }
        Err(_) => false,
    };
    if stale {
        if let Ok(Launched { group, .. }) = launched {
            group.abandon();
        }
        kernel.probe_world_again();
        launched = launch(req, &sandbox_req, &kernel);
    }
    let Launched { mut sandbox, mut group, out_r, err_r, image } = match launched {
        Ok(launched) => launched,
        Err(NotStarted::Refused(Refusal { exit_code, message })) => {
            // A program `commands` does not list, or none installed: lnk knows those for certain.
            let unlisted = match &req.flags.commands {
                Commands::Listed(names) => !names.contains(&req.program),
                Commands::Any => false,
            };
            if req.flags.tool == Tool::Run && (unlisted || exit_code == crate::exit::NOT_FOUND) {
                report.denials.push(crate::denials::program_refused(&req.program));
            }
            return report.refused(exit_code, message, started);
        }
        Err(NotStarted::Failed(why)) => return report.failed(why, started),
    };
    group.wake_on_child_exit(child_ended);
    report.enforcement = Some(sandbox.enforcement.clone());
    report.program_path = Some(sandbox.program_path.clone());
    // A session has no timeout: it lasts until its input closes or it is told to stop.
    let deadline = started + if session { SESSION_LIMIT } else { stop_after(req.flags.timeout_secs) };
    let door = sandbox.take_door();
    let mut notifier = sandbox.take_notifier();
    drop(sandbox);
    // Threads start only now, after the last fork: the proxy serves the sockets the program's
    // child made in its namespace. If they never come, the child failed before it could run
    // the program, and the wait below reports why; the program never runs without its door.
    // Every thread started from here has the held connects' interrupt blocked but the server.
    crate::notify::block_interrupt_here();
    let proxy_log = door.map(|door| proxy::serve_door(door, req.flags.internet.as_ref(), &req.resolve));

    let limit = req.flags.output_chars as usize;
    let mut stdout = OutputTail::new(limit);
    let mut stderr = OutputTail::new(limit);
    let waited = group.wait(
        [(out_r, &mut |b: &[u8]| stdout.push(b)), (Some(err_r), &mut |b: &[u8]| stderr.push(b))],
        deadline,
        Duration::ZERO,
        &stop_signals,
        notifier.as_mut(),
        &mut |_, _| {},
    );
    drop(image);
    drop(tmp);
    report.stdout = stdout.finish();
    report.stderr = stderr.finish();
    report.internet = proxy_log.map(|log| proxy::lock(&log).clone());
    report.servers = notifier
        .as_ref()
        .map(|n| n.servers().iter().map(|s| (s.asked, s.real)).collect())
        .unwrap_or_default();
    // What was refused: what lnk refused itself (known), then what the program's error lines
    // show and the grants and the files' own permissions explain (inferred).
    if !session {
        let mut known = notifier.as_ref().map(|n| n.refusals()).unwrap_or_default();
        known.extend(report.internet.as_ref().map(proxy::Log::denials).unwrap_or_default());
        let start = report.enforcement.as_ref().map_or_else(|| PathBuf::from("/"), |e| e.start.path.clone());
        let tmp = report.enforcement.as_ref().map(|e| e.tmp_dir.clone());
        let own_world = report.enforcement.as_ref().is_some_and(|e| e.mode.is_own_world());
        let scene = crate::denials::Scene {
            flags: &req.flags,
            start: &start,
            tmp: tmp.as_deref(),
            home: &req.home,
            own_world,
        };
        let grants: Vec<&PathBuf> = req.flags.read.iter().chain(&req.flags.write).collect();
        let as_root = rustix::process::geteuid().is_root();
        let holes =
            || crate::protected::never_granted(&req.flags.deny, &req.home, &grants, &req.protected, as_root);
        report.denials = crate::denials::for_call(known, &report.stderr.text, &scene, holes);
    }
    report.wall = started.elapsed();
    report.timed_out = waited.timed_out;
    report.stopped_by = waited.stopped_by;
    // A program that never started has no code of its own (the code its process exited with
    // is lnk's, and the outcome says it).
    report.exit = if waited.start_failure.is_some() { None } else { waited.exit };
    report.outcome = match (&waited.start_failure, waited.stopped_by, waited.timed_out, waited.exit) {
        (Some(StartFailure::Exec(errno)), ..) => {
            let err = std::io::Error::from_raw_os_error(*errno);
            let code = if *errno == libc::ENOENT { exit::NOT_FOUND } else { exit::REFUSED };
            if let (libc::EACCES, Commands::Listed(names), Some(path)) =
                (*errno, &req.flags.commands, &report.program_path)
            {
                report.denials.extend(crate::denials::interpreter_not_listed(path, names));
            }
            report.error = Some(format!(
                "cannot execute {}: {err} (the kernel refused; its interpreter may not be among `commands`)",
                req.program
            ));
            Outcome::Refused(code)
        }
        (Some(StartFailure::Sandbox(why)), ..) => {
            // A kept answer that the own world can be made may be stale: probe next time.
            crate::sandbox::mode::forget_cached_probe();
            report.error = Some(format!("cannot enter the sandbox: {why}"));
            Outcome::Failed
        }
        (None, Some(sig), ..) => Outcome::Stopped(sig),
        (None, None, true, _) => Outcome::TimedOut,
        (None, None, false, Some(Exit::Code(c))) => Outcome::Exited(c),
        (None, None, false, Some(Exit::Signal(s))) => Outcome::Signaled(s),
        (None, None, false, None) => {
            report.error = Some("the keeper process ended without reporting the program's end".into());
            Outcome::Failed
        }
    };
    if waited.outlived && report.error.is_none() {
        report.error = Some(
            "some of the program's processes could not be ended (the kernel did not end them \
            within lnk's bounds after SIGKILL); they may still run"
                .into(),
        );
    }
    report
}

/// The program started in its sandbox, with the read ends of its output pipes (none for a
/// session's standard output, which is the helper's own).
struct Launched {
    sandbox: Sandbox,
    group: lifetime::Group,
    out_r: Option<OwnedFd>,
    err_r: OwnedFd,
    /// The program's argument and environment strings, freed only once the call is over: until
    /// then the keeper shares the helper's memory page by page, and each page `free` writes to
    /// is copied for the helper (measured: about 1 % of a launch).
    image: ProgramImage,
}

/// Why a launch did not start the program.
enum NotStarted {
    Refused(Refusal),
    Failed(String),
}

/// Prepares the sandbox, the program's image, environment and streams, and starts it.
fn launch(
    req: &RunRequest,
    sandbox_req: &SandboxRequest<'_>,
    kernel: &KernelSupport,
) -> Result<Launched, NotStarted> {
    let mut sandbox = Sandbox::prepare(sandbox_req, kernel).map_err(NotStarted::Refused)?;
    // The proxy variables come first, so a caller's explicit `--env` can still override one.
    let mut extra_env = if sandbox.has_door() { proxy::environment() } else { Vec::new() };
    extra_env.extend(req.extra_env.iter().cloned());
    let session = req.flags.tool == Tool::File;
    if session {
        // The file session enforces the grants itself too ("writes only where [files] write
        // grants"), so it gets them from the launcher, which computed them.
        let flags = crate::json::array(req.flags.to_args().iter().map(|a| crate::json::string(a)));
        extra_env.push(format!("{}={flags}", crate::file_tool::FLAGS_VAR));
    }
    let env = environment(&sandbox.enforcement.home, &sandbox.enforcement.tmp_dir, &extra_env);
    let mut argv = vec![req.program.clone()];
    argv.extend(req.args.iter().cloned());
    let image = ProgramImage::new(&sandbox.program_path, sandbox.program_fd.take(), &argv, &env)
        .map_err(NotStarted::Failed)?;
    // A file session talks to the harness directly: its standard input and output are the
    // helper's, not captured; only its standard error is kept.
    let pipes = (|| {
        let flags = rustix::pipe::PipeFlags::CLOEXEC;
        let out = if session {
            (None, rustix::io::fcntl_dupfd_cloexec(std::io::stdout().as_fd(), 3)?)
        } else {
            let (r, w) = rustix::pipe::pipe_with(flags)?;
            (Some(r), w)
        };
        let err = rustix::pipe::pipe_with(flags)?;
        Ok::<_, rustix::io::Errno>((out, err))
    })();
    let ((out_r, out_w), (err_r, err_w)) = pipes.map_err(|e| NotStarted::Failed(format!("pipe: {e}")))?;
    // The caller's own standard input when asked (a session's requests come on it); else none
    // of lnk's: the program's process opens `/dev/null` in its own world.
    let stdin = match req.pass_stdin || session {
        true => Some(
            rustix::io::fcntl_dupfd_cloexec(std::io::stdin().as_fd(), 3)
                .map_err(|e| NotStarted::Failed(format!("standard input: {e}")))?,
        ),
        false => None,
    };
    let group = lifetime::start(&mut sandbox, &image, Stdio { stdin, stdout: out_w, stderr: err_w })
        .map_err(NotStarted::Failed)?;
    Ok(Launched { sandbox, group, out_r, err_r, image })
}

/// The call stops a tenth before `[tool.run] timeout`, so the harness gets what was printed
/// before its own timeout could fire.
pub fn stop_after(timeout_secs: u32) -> Duration {
    Duration::from_millis(u64::from(timeout_secs) * 900)
}

/// The program's environment, made by the helper: nothing of the caller's leaks in but what is
/// named here or explicitly by the caller (`extra`, `NAME=value` strings).
pub fn environment(home: &std::path::Path, tmp: &std::path::Path, extra: &[String]) -> Vec<String> {
    let lang = std::env::var("LANG")
        .ok()
        .filter(|l| {
            !l.is_empty()
                && l.len() < 64
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-@".contains(&b))
        })
        .unwrap_or_else(|| "C.UTF-8".to_owned());
    let mut env = vec![
        format!("PATH={}", system_path_var()),
        format!("HOME={}", home.display()),
        format!("TMPDIR={}", tmp.display()),
        format!("LANG={lang}"),
        "TERM=dumb".to_owned(),
    ];
    for extra in extra {
        let name = extra.split('=').next().unwrap_or_default();
        env.retain(|e| e.split('=').next() != Some(name));
        env.push(extra.clone());
    }
    env
}

impl Report {
    fn refused(mut self, code: u8, message: String, started: Instant) -> Report {
        self.outcome = Outcome::Refused(code);
        self.error = Some(message);
        self.wall = started.elapsed();
        self.stdout = Captured::empty();
        self.stderr = Captured::empty();
        self
    }

    fn failed(mut self, message: String, started: Instant) -> Report {
        self.outcome = Outcome::Failed;
        self.error = Some(message);
        self.wall = started.elapsed();
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_call_stops_a_tenth_early() {
        assert_eq!(stop_after(120), Duration::from_secs(108));
        assert_eq!(stop_after(1), Duration::from_millis(900));
    }
}
