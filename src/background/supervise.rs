//! `lnk-link-run supervise`: one background command's supervisor.
//!
//! Started by `start` in a session of its own, with the record's lock as descriptor 3 (already
//! held: `start` locked it before publishing the record), a readiness pipe as descriptor 4, one
//! of the agent's slots as 5, and as 6 the pipe on which `start` says `go` once the record is
//! on the disk. Nothing is read or started before `go`: without it (`start` died, or could not
//! write the record) the supervisor ends having done nothing.
//! It runs the command through the launcher's own code (`Sandbox::prepare`, `lifetime::start`,
//! `Group::wait`), so a background command is confined exactly as a `run` call is.
//!
//! Trusted with: running one background command confined exactly as a run call is, and recording
//! truly how it ended (what the sweep acts on and the agent is told). What it trusts: the
//! descriptors `start` passed it and the record `start` wrote (read only after `go`, its flags
//! parsed again as strictly as on a command line); `start`'s checks of the sandbox file, which it
//! does not read; and the kernel.

use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::bridge;
use super::output_end::OutputEnd;
use super::output_file::OutputFile;
use super::{Agent, DEFAULT_GRACE};
use crate::exit;
use crate::flags::SandboxFlags;
use crate::lifetime::{self, Exit, ProgramImage, StartFailure, Stdio};
use crate::private_tmp::PrivateTmp;
use crate::records::{self, Record, RecordLock, State, identity};
use crate::sandbox::kernel::KernelSupport;
use crate::sandbox::{Refusal, Sandbox, SandboxRequest};

/// Options of the internal `supervise` verb.
pub struct SuperviseOptions {
    pub id: String,
    pub bridge: Option<PathBuf>,
    pub output_cap: u64,
    pub grace: Duration,
}

/// The stop signals: SIGTERM (`stop`: recorded stopped), SIGHUP (`stop --all`: the agent is going
/// away, recorded lost and told when it is back), SIGINT.
const STOP_SIGNALS: [i32; 3] = [libc::SIGTERM, libc::SIGHUP, libc::SIGINT];

#[cfg(feature = "fault-points")]
use crate::fault::{fails as fault_fails, point as fault};
#[cfg(not(feature = "fault-points"))]
fn fault(_: &str) {}
#[cfg(not(feature = "fault-points"))]
fn fault_fails(_: &str) -> bool {
    false
}

/// Runs the supervisor. Returns the process's exit code.
pub fn supervise(agent: &Agent, opts: &SuperviseOptions) -> u8 {
    // `start` passed these four (see `crate::sys::spawn_detached_with`).
    let Ok([lock_fd, ready, slot, go]) = crate::sys::take_passed::<4>() else {
        return exit::HELPER_FAILED;
    };
    for fd in [&lock_fd, &ready, &slot, &go] {
        let _ = rustix::io::fcntl_setfd(fd, rustix::io::FdFlags::CLOEXEC);
    }
    // What needs no record is made while `start` syncs it (dropped, with the tmp folder, if
    // `go` never comes).
    let early = Early::make();
    if !told_go(&go) {
        return exit::HELPER_FAILED;
    }
    drop(go);
    // Held until this process ends: one of the agent's four slots (see `Records::take_slot`).
    let _slot = slot;
    // One line, read by `start` up to its newline (the keeper, a fork, also holds this pipe).
    let say = |text: &str| {
        let _ = rustix::io::write(&ready, format!("{text}\n").as_bytes());
    };
    let lock = RecordLock::from_inherited(opts.id.clone(), lock_fd);
    let records = &agent.records;
    let mut record = match records.read(&opts.id) {
        Ok(r) => r,
        Err(why) => {
            say(&format!("fail {} {why}", exit::HELPER_FAILED));
            return exit::HELPER_FAILED;
        }
    };
    fault("supervise-before-identity");
    let me = rustix::process::getpid().as_raw_nonzero().get();
    record.supervisor =
        identity::proc_stat(me).map(|s| records::format::SupervisorIdentity { pid: me, start: s.start });

    let agent_stopped = match run_command(agent, opts, &lock, &mut record, &say, early) {
        Ok(agent_stopped) => agent_stopped,
        Err(Refusal { exit_code, message }) if record.state != State::Running => {
            // Refused before anything of the command ran (its sandbox could not be made, or its
            // file asks what this mode cannot give): `start` says so, and nothing is recorded,
            // as for the refusals `start` makes itself.
            fault("supervise-refusing");
            records.remove(lock);
            say(&format!("fail {exit_code} {message}"));
            return exit_code;
        }
        Err(Refusal { exit_code, message }) => {
            // Its group had started (the program could not be executed, or the running record
            // not written): recorded `failed`, said synchronously to `start`, so there is
            // nothing left to tell.
            record.state = State::Failed;
            record.detail = records::format::clip(&message, records::format::DETAIL_MAX_BYTES).to_owned();
            record.ended_ms = Some(records::now_ms());
            record.told = true;
            fault("supervise-failing");
            let _ = records.write(&lock, &record);
            say(&format!("fail {exit_code} {message}"));
            return exit_code;
        }
    };
    fault("supervise-after-end");
    if agent_stopped {
        // `stop --all`: the agent is going away; it is told when it is back (by a sweep).
        return 0;
    }
    let _ = bridge::tell(records, &lock, &mut record, opts.bridge.as_deref());
    0
}

/// Ends the group at once (SIGKILL) and reaps it, for a command that must not go on.
fn end_now(group: lifetime::Group, stop_signals: &OwnedFd) {
    let none: [lifetime::OutputSink<'_>; 2] = [(None, &mut |_| {}), (None, &mut |_| {})];
    let _ = group.wait(none, Instant::now(), Duration::ZERO, stop_signals, None, &mut |_, _| {});
}

/// Waits for `start`'s word that the record is on the disk. False when the pipe closes without
/// it: `start` died or could not write the record, and nothing may be started.
fn told_go(go: &OwnedFd) -> bool {
    let mut word = [0u8; super::GO.len()];
    let mut got = 0;
    while got < word.len() {
        match rustix::io::read(go, &mut word[got..]) {
            Ok(0) => return false,
            Ok(n) => got += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => return false,
        }
    }
    word == super::GO
}

/// What the supervisor makes before the record is read: nothing here depends on it. A failure
/// is kept and reported once the record can say it.
struct Early {
    home: Result<PathBuf, String>,
    tmp: Result<PrivateTmp, String>,
    kernel: KernelSupport,
}

impl Early {
    fn make() -> Early {
        Early {
            home: crate::paths::home_dir().map_err(|e| e.to_string()),
            tmp: PrivateTmp::create(),
            kernel: KernelSupport::probe_for_launch(),
        }
    }
}

/// Runs the command to its end and records it. Returns whether the end was the agent stopping
/// (`stop --all`), whose message waits until the agent is back.
fn run_command(
    agent: &Agent,
    opts: &SuperviseOptions,
    lock: &RecordLock,
    record: &mut Record,
    say: &dyn Fn(&str),
    early: Early,
) -> Result<bool, Refusal> {
    let records = &agent.records;
    let failed = |e: String| Refusal::kernel(e);
    let flags = SandboxFlags::from_args(&record.sandbox).map_err(|e| failed(e.0))?;
    let home = early.home.map_err(failed)?;
    let tmp = early.tmp.map_err(failed)?;
    let protected = vec![agent.agent_dir.clone()];
    let mut kernel = early.kernel;
    let sandbox_req = SandboxRequest {
        flags: &flags,
        program: &record.program,
        private_tmp: tmp.path(),
        protected: &protected,
        home: &home,
        // The sandbox file was read, and checked, by `start`.
        sandbox_file: None,
    };
    let mut out = OutputFile::create(&agent.files_dir, &record.id, opts.output_cap).map_err(failed)?;
    record.output_inode = Some(out.inode);
    let mut argv = vec![record.program.clone()];
    argv.extend(record.args.iter().cloned());
    let stop_signals = crate::sys::signalfd_for(&STOP_SIGNALS).map_err(|e| failed(e.to_string()))?;
    let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
    // Started, then started again at most once: when a kept answer promised the own world and
    // the kernel no longer gives it (nothing of the command ran; see `mode::probe_cached`).
    let (mut sandbox, group, out_r, started) = loop {
        let mut sandbox = Sandbox::prepare(&sandbox_req, &kernel)?;
        // A background command with `[internet]` gets the same proxy as a run call, served by
        // this supervisor for as long as the command runs.
        let proxy_env = if sandbox.has_door() { crate::proxy::environment() } else { Vec::new() };
        let env =
            crate::run::environment(&sandbox.enforcement.home, &sandbox.enforcement.tmp_dir, &proxy_env);
        let image = ProgramImage::new(&sandbox.program_path, sandbox.program_fd.take(), &argv, &env)
            .map_err(failed)?;
        let (out_r, out_w) =
            rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(|e| failed(e.to_string()))?;
        let err_w = out_w.try_clone().map_err(|e| failed(e.to_string()))?;
        fault("supervise-before-keeper");

        let started = Instant::now();
        let mut group =
            lifetime::start(&mut sandbox, &image, Stdio { stdin: None, stdout: out_w, stderr: err_w })
                .map_err(failed)?;
        let keeper = group.id().as_raw_nonzero().get();
        record.group = identity::record_group(keeper).ok();
        // Recorded running, with the group, while the keeper makes the sandbox and executes the
        // command: the record's `fsync` (on the path `start` waits on) overlaps that work. From
        // here the group exists and is the command's, so `running` is what the sweep must know;
        // if the program then cannot be executed, the record goes on to `failed` before `start`
        // returns. The folder is not synced: `start` is waiting, and a crash of the machine loses
        // nothing the sweep needs (see `write_unsynced_name`).
        record.state = State::Running;
        let written = match fault_fails("supervise-running-write") {
            true => Err("the running record was not written (a fault point)".to_owned()),
            false => records.write_unsynced_name(lock, record),
        };
        if let Err(why) = written {
            // Not left to start unrecorded: the group ends here (the keeper, its program and all).
            end_now(group, &stop_signals);
            return Err(failed(why));
        }
        let failure = group.wait_started();
        if kernel.world_kept
            && sandbox.enforcement.mode.is_own_world()
            && matches!(failure, Some(StartFailure::Sandbox(_)))
        {
            end_now(group, &stop_signals);
            kernel.probe_world_again();
            continue;
        }
        if let Some(failure) = failure {
            let (code, why) = match failure {
                StartFailure::Exec(errno) => {
                    // A script whose interpreter is not listed: named, with its fix (as `run`).
                    let interpreter = match (errno, &flags.commands) {
                        (libc::EACCES, crate::sandbox_file::Commands::Listed(names)) => {
                            crate::denials::interpreter_not_listed(&sandbox.program_path, names)
                        }
                        _ => None,
                    };
                    let code = if errno == libc::ENOENT { exit::NOT_FOUND } else { exit::REFUSED };
                    let err = std::io::Error::from_raw_os_error(errno);
                    let why = match interpreter {
                        Some(d) => format!("cannot execute {}: {err}; {}", record.program, d.line()),
                        None => format!("cannot execute {}: {err}", record.program),
                    };
                    (code, why)
                }
                StartFailure::Sandbox(why) => {
                    // A kept answer that the own world can be made may be stale: probe next time.
                    crate::sandbox::mode::forget_cached_probe();
                    (exit::HELPER_FAILED, format!("cannot enter the sandbox: {why}"))
                }
            };
            end_now(group, &stop_signals);
            return Err(Refusal { exit_code: code, message: why });
        }
        break (sandbox, group, out_r, started);
    };
    let door = sandbox.take_door();
    let mut notifier = sandbox.take_notifier();
    // For the denials: where the command started, and its tmp folder.
    let (start, tmp_dir) = (sandbox.enforcement.start.path.clone(), sandbox.enforcement.tmp_dir.clone());
    let own_world = sandbox.enforcement.mode.is_own_world();
    drop(sandbox);
    // Every thread started from here has the held connects' interrupt blocked but the server.
    crate::notify::block_interrupt_here();
    let proxy = door.map(|door| crate::proxy::serve_door(door, flags.internet.as_ref(), &[]));
    fault("supervise-running");
    say("ok");

    // The message tells the last half of `[tool.run] output` characters (see `output_end`).
    let mut end = OutputEnd::new((record.output_chars as usize / 2).max(1));
    let deadline = started + Duration::from_secs(u64::from(record.timeout_secs));
    let grace = if opts.grace.is_zero() { DEFAULT_GRACE } else { opts.grace };
    let mut refusals = crate::denials::Scanner::default();
    let waited = {
        let mut sink = |b: &[u8]| {
            out.push(b);
            end.push(b);
            refusals.push(b);
        };
        let outputs = [(Some(out_r), &mut sink as &mut dyn FnMut(&[u8])), (None, &mut |_| {})];
        // The groups the command makes, recorded as they come: should this supervisor and the
        // keeper both die, the sweep ends each one it can still prove the command's.
        let mut record_groups = |leaders: &[crate::procfs::Process], more: bool| {
            record.groups = leaders.to_vec();
            record.more_groups = more;
            let _ = records.write_unsynced_name(lock, record);
        };
        group.wait(outputs, deadline, grace, &stop_signals, notifier.as_mut(), &mut record_groups)
    };
    drop(tmp);
    record.output_bytes = out.written;
    record.output_dropped = out.dropped;
    out.finish();
    record.output_end = end.finish();
    record.ended_ms = Some(records::now_ms());
    // What was refused, as a run call's report says it (see `crate::denials`).
    let mut known = notifier.as_ref().map(|n| n.refusals()).unwrap_or_default();
    known.extend(proxy.map(|log| crate::proxy::lock(&log).denials()).unwrap_or_default());
    let scene =
        crate::denials::Scene { flags: &flags, start: &start, tmp: Some(&tmp_dir), home: &home, own_world };
    let grants: Vec<&std::path::PathBuf> = flags.read.iter().chain(&flags.write).collect();
    let as_root = rustix::process::geteuid().is_root();
    let holes = || crate::protected::never_granted(&flags.deny, &home, &grants, &protected, as_root);
    record.denials = crate::denials::for_call(known, &refusals.finish(), &scene, holes);
    (record.exit_code, record.signal) = match waited.exit {
        Some(Exit::Code(c)) => (Some(c), None),
        Some(Exit::Signal(s)) => (None, Some(s)),
        None => (None, None),
    };
    record.state = match (waited.stopped_by, waited.timed_out, waited.exit) {
        (Some(libc::SIGHUP), ..) => {
            record.detail = "the agent stopped".into();
            State::Lost
        }
        (Some(_), ..) => State::Stopped,
        (None, true, _) => State::TimedOut,
        (None, false, Some(Exit::Code(_))) => State::Exited,
        (None, false, Some(Exit::Signal(_))) => State::Signaled,
        (None, false, None) => {
            record.detail = "its keeper ended without reporting the command's end".into();
            record.leftovers_possible = false;
            State::Lost
        }
    };
    // What could not be ended within the bounds may still run: a sweep must not say otherwise.
    record.leftovers_possible |= waited.outlived;
    records.write(lock, record).map_err(failed)?;
    Ok(waited.stopped_by == Some(libc::SIGHUP))
}
