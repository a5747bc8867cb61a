//! The process lifetime: starting the program in a process group of its own, and making sure
//! nothing it started outlives the call.
//!
//! Three processes take part:
//!
//! ```text
//! helper (lnk, child subreaper)
//!  └─ keeper          new session and process group N; child subreaper; never sandboxed
//!      └─ program     sandboxed (Landlock + seccomp), in group N
//!          └─ …       what it starts: in group N, or in groups and sessions of its own
//! ```
//!
//! In the call's own world the keeper's child is the pid namespace's pid 1 (lnk's own code, in
//! group N), which starts the program; there the program may make sessions and groups of its
//! own, since pid 1's end (when group N is killed) ends every process of the namespace,
//! whatever group it is in. In the Landlock-only mode it may too: the helper notes the leader
//! of each group it makes, and what ends the call ends those groups and every process left
//! anywhere beneath the helper, the call's subreaper (see [`escaped`]).
//!
//! Why a keeper. The group's number N is the keeper's pid, so N stays the group's for as long
//! as the keeper lives, and the keeper lives until the helper reaps it. The helper therefore
//! signals `-N` only while the keeper is unreaped, and a group number can never have been reused
//! when it does. The program cannot signal the keeper (Landlock's signal scope: the keeper is
//! outside the sandbox's domain), so `kill(-N, SIGKILL)` ends every process of group N; the
//! groups the program made are ended by their noted leaders and by the walk of the helper's
//! descendants (see [`escaped`]). (A graceful stop's SIGTERM reaches group N and the noted
//! groups; in the own world a process of a session of its own gets the SIGKILL that ends the
//! namespace.)
//!
//! The keeper holds no descriptor of the helper's but the one it reports on (it closes the rest
//! once the program is forked), so it never keeps a pipe or a lock alive. Its job is small: reap
//! what is reparented to it; when the program exits, write its
//! wait status to the helper and kill the group (itself included); and if the helper dies,
//! however it dies (SIGKILL included), end every process beneath it and then the group. The last uses the parent-death signal,
//! which is delivered when the helper's thread exits; the race where the helper dies before the
//! signal is set is closed by checking the parent's pid afterwards.
//!
//! Trusted with: that nothing the program started outlives the call, and that the group's signals
//! reach only the call's processes: a bug here could leave a program running after its call, or
//! kill a process that is not the call's. What it trusts: the kernel (process groups, the
//! subreaper, the parent-death signal, and Landlock's scope, which keeps the program from
//! signalling the keeper), the keeper's report (lnk's own code, never sandboxed), and `/proc` for
//! the descendants (see [`escaped`]).

use std::ffi::{CString, c_char};
use std::os::fd::{AsFd, OwnedFd};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags};
use rustix::process::{Pid, Signal, WaitOptions};

use crate::notify::groups::Leader;
use crate::procfs::Process;
use crate::sandbox::Sandbox;
use crate::sys::{self, Forked};

mod escaped;
mod keeper;

use keeper::keeper_main;

/// How long the helper keeps reading the output after the group was killed. Killed processes
/// close their pipes at once; this bound only matters if something unexpected holds one.
pub const DRAIN_AFTER_KILL: Duration = Duration::from_secs(2);

/// How long the helper reaps the killed processes reparented to it before it ends what is left
/// of them by the tree (see [`Group::reap`]).
const REAP_LIMIT: Duration = Duration::from_millis(500);

/// The keeper's parent-death signal (see `keeper_main`).
const KEEPER_DEATH_SIGNAL: Signal = Signal::USR2;

/// The program's path, arguments and environment, made before the fork so the child only
/// makes system calls.
pub struct ProgramImage {
    path: CString,
    /// The program's file, executed by descriptor rather than by path (lnk's own image).
    fd: Option<OwnedFd>,
    _strings: Vec<CString>,
    argv: Vec<*const c_char>,
    envp: Vec<*const c_char>,
}

impl ProgramImage {
    /// `argv[0]` is the name the caller gave; `env` is `NAME=value` strings. With `fd`, the
    /// program is executed by that descriptor (`execveat`), and `path` only names it.
    pub fn new(
        path: &std::path::Path,
        fd: Option<OwnedFd>,
        argv: &[String],
        env: &[String],
    ) -> Result<ProgramImage, String> {
        use std::os::unix::ffi::OsStrExt as _;
        let cstring = |s: &[u8]| {
            CString::new(s).map_err(|_| "an argument or environment value contains a NUL byte".to_owned())
        };
        let path = cstring(path.as_os_str().as_bytes())?;
        let mut strings = Vec::new();
        for a in argv.iter().chain(env) {
            strings.push(cstring(a.as_bytes())?);
        }
        let ptrs: Vec<*const c_char> = strings.iter().map(|s| s.as_ptr()).collect();
        let mut argv_ptrs = ptrs[..argv.len()].to_vec();
        argv_ptrs.push(std::ptr::null());
        let mut envp_ptrs = ptrs[argv.len()..].to_vec();
        envp_ptrs.push(std::ptr::null());
        Ok(ProgramImage { path, fd, _strings: strings, argv: argv_ptrs, envp: envp_ptrs })
    }
}

/// The program's standard streams.
pub struct Stdio {
    /// `None`: `/dev/null`, opened by the program's process once its world is made, so the
    /// program holds no descriptor of the host's file system that lnk opened (as root it could
    /// otherwise `fchmod(0, …)` the host's `/dev/null`).
    pub stdin: Option<OwnedFd>,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
}

/// A started program's group, owned by the helper.
pub struct Group {
    /// The keeper's pid, which is also the group's number.
    keeper: Pid,
    /// The keeper writes the program's wait status here.
    status: OwnedFd,
    /// The program's child writes here if setting up the sandbox or `execve` fails.
    failure: OwnedFd,
    /// What `wait_started` found, once it has looked.
    started: Option<Option<StartFailure>>,
    reaped: bool,
    /// A signalfd of SIGCHLD (blocked in every thread of the helper), when the caller made one:
    /// the last reaping then wakes as a child ends instead of sleeping in steps (see [`Self::reap`]).
    child_ended: Option<OwnedFd>,
}

/// How the program started, or why it could not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartFailure {
    /// Entering the sandbox failed (the kernel refused a Landlock or seccomp call).
    Sandbox(String),
    /// `execve` failed with this errno.
    Exec(i32),
}

/// Starts the keeper, which starts the program in the sandbox.
///
/// Must be called while the helper is single-threaded.
pub fn start(sandbox: &mut Sandbox, image: &ProgramImage, stdio: Stdio) -> Result<Group, String> {
    let pipe = || rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(|e| format!("pipe: {e}"));
    let (status_r, status_w) = pipe()?;
    let (failure_r, failure_w) = pipe()?;
    let helper = rustix::process::getpid();
    // The helper has one thread here (this function's contract, and `sys::fork` checks it); the
    // child ends in `keeper_main`, which never returns.
    match sys::fork().map_err(|e| format!("fork: {e}"))? {
        Forked::Child => {
            drop(status_r);
            drop(failure_r);
            keeper_main(helper, sandbox, image, stdio, status_w, failure_w)
        }
        Forked::Parent(keeper) => Ok(Group {
            keeper,
            status: status_r,
            failure: failure_r,
            started: None,
            reaped: false,
            child_ended: None,
        }),
    }
}

fn decode_exit(raw: [u8; 8]) -> Option<Exit> {
    let tag = i32::from_ne_bytes([raw[0], raw[1], raw[2], raw[3]]);
    let value = i32::from_ne_bytes([raw[4], raw[5], raw[6], raw[7]]);
    match tag {
        0 => Some(Exit::Code(value)),
        1 => Some(Exit::Signal(value)),
        _ => None,
    }
}

/// An output pipe and what to do with each chunk read from it; the descriptor becomes `None` at
/// end of file.
pub type OutputSink<'a> = (Option<OwnedFd>, &'a mut dyn FnMut(&[u8]));

/// How the program ended, as the keeper saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
}

/// What happened while the helper waited.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waited {
    /// The program's end, if the keeper reported it.
    pub exit: Option<Exit>,
    pub timed_out: bool,
    /// The signal that told the helper to stop, if one did.
    pub stopped_by: Option<i32>,
    pub start_failure: Option<StartFailure>,
    /// Some of the call's processes could not be ended within the bounds (see [`Group::reap`]).
    pub outlived: bool,
}

impl Group {
    pub fn id(&self) -> Pid {
        self.keeper
    }

    /// Makes the last reaping wait on `signalfd`, a signalfd of SIGCHLD that the helper made
    /// (blocking SIGCHLD) before it started any thread or child: the world's pid 1, reparented
    /// to the helper when the keeper ends, takes its namespaces down before it can be reaped,
    /// and a sleep in steps overshot that by about half (measured: 0.1 ms of an own-world call).
    pub fn wake_on_child_exit(&mut self, signalfd: OwnedFd) {
        self.child_ended = Some(signalfd);
    }

    /// Kills every process of the group, and of the groups the program made (`leaders`, see
    /// [`escaped`]). Sound only while the keeper is unreaped, which the type guarantees: `reap`
    /// consumes the group.
    fn kill(&self, leaders: &[Leader]) {
        debug_assert!(!self.reaped);
        let _ = rustix::process::kill_process_group(self.keeper, Signal::KILL);
        escaped::signal_groups(leaders, Signal::KILL);
    }

    /// Waits until the program has been executed (the failure pipe closes with `execve`), or
    /// setting it up failed. Bounded: a child that neither executes nor fails within 30 s is
    /// treated as failed.
    pub fn wait_started(&mut self) -> Option<StartFailure> {
        if let Some(known) = &self.started {
            return known.clone();
        }
        let mut fds = [PollFd::new(&self.failure, PollFlags::IN)];
        let timeout = rustix::event::Timespec { tv_sec: 30, tv_nsec: 0 };
        let result = match rustix::event::poll(&mut fds, Some(&timeout)) {
            Ok(0) => Some(StartFailure::Sandbox("the program did not start within 30 s".into())),
            _ => self.read_start_failure(),
        };
        self.started = Some(result.clone());
        result
    }

    /// Sends SIGTERM and SIGCONT (a stopped process must run to act on a SIGTERM) to the group,
    /// and to the groups the program made (`leaders`).
    fn signal_gracefully(&self, leaders: &[Leader]) {
        debug_assert!(!self.reaped);
        let _ = rustix::process::kill_process_group(self.keeper, Signal::TERM);
        let _ = rustix::process::kill_process_group(self.keeper, Signal::CONT);
        escaped::signal_groups(leaders, Signal::TERM);
        escaped::signal_groups(leaders, Signal::CONT);
    }

    /// Waits for the program, reading its output as it comes, until it ends, `deadline` passes,
    /// or a signal arrives on `stop_signals`. Then ends the group (SIGTERM, `grace`, SIGKILL; or
    /// SIGKILL at once when `grace` is zero), and the groups the program made, drains the output
    /// (bounded), and reaps the keeper and anything reparented to the helper, ending whatever of
    /// the program's is left (see [`escaped`]). `on_new_groups` is told the leaders of the groups
    /// the program made (and whether there were more) each time more are noted (a background
    /// command records them).
    pub fn wait(
        mut self,
        mut outputs: [OutputSink<'_>; 2],
        deadline: Instant,
        grace: Duration,
        stop_signals: &OwnedFd,
        mut notifier: Option<&mut crate::notify::Notifier>,
        on_new_groups: &mut dyn FnMut(&[Process], bool),
    ) -> Waited {
        let mut waited =
            Waited { exit: None, timed_out: false, stopped_by: None, start_failure: None, outlived: false };
        // When the group was asked to end with SIGTERM: SIGKILL follows at this instant.
        let mut kill_at: Option<Instant> = None;
        let mut drain_until: Option<Instant> = None;
        let mut status_open = true;
        // Read into spare room, never zeroed: a pipe holds 64 KiB, and a program that writes
        // little touches only the pages its output fills (zeroing all of it was 16 page faults
        // and a `memset` on every launch).
        let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
        loop {
            let outputs_open = outputs.iter().any(|(fd, _)| fd.is_some());
            if !outputs_open && !status_open {
                break;
            }
            let now = Instant::now();
            let until = drain_until.or(kill_at).unwrap_or(deadline);
            if now >= until {
                if drain_until.is_some() {
                    break;
                }
                if kill_at.is_none() {
                    waited.timed_out = true;
                }
                let leaders = notifier.as_deref().map(|n| n.leaders()).unwrap_or_default();
                if kill_at.is_none() && !grace.is_zero() {
                    self.signal_gracefully(&leaders);
                    kill_at = Some(now + grace);
                } else {
                    self.kill(&leaders);
                    drain_until = Some(now + DRAIN_AFTER_KILL);
                }
                continue;
            }
            let mut fds = Vec::with_capacity(4);
            let mut roles = Vec::with_capacity(4);
            for (i, (fd, _)) in outputs.iter().enumerate() {
                if let Some(fd) = fd {
                    fds.push(PollFd::new(fd, PollFlags::IN));
                    roles.push(i);
                }
            }
            if status_open {
                fds.push(PollFd::new(&self.status, PollFlags::IN));
                roles.push(2);
            }
            fds.push(PollFd::new(stop_signals, PollFlags::IN));
            roles.push(3);
            // The program's held calls, answered as they come (only in the Landlock-only mode).
            let held = notifier.as_deref().and_then(|n| n.fd());
            if let Some(fd) = &held {
                fds.push(PollFd::from_borrowed_fd(fd.as_fd(), PollFlags::IN));
                roles.push(4);
            }
            // The watch over the call's tasks looks in between (the Landlock-only mode).
            let wake = notifier.as_deref().and_then(|n| n.watch_due()).map_or(until, |due| until.min(due));
            let timeout = rustix::event::Timespec::try_from(wake.saturating_duration_since(now)).ok();
            match rustix::event::poll(&mut fds, timeout.as_ref()) {
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(_) => {
                    self.kill(&notifier.as_deref().map(|n| n.leaders()).unwrap_or_default());
                    break;
                }
            }
            let ready: Vec<(usize, PollFlags)> = fds
                .iter()
                .zip(&roles)
                .filter(|(fd, _)| !fd.revents().is_empty())
                .map(|(fd, role)| (*role, fd.revents()))
                .collect();
            drop(fds);
            if let Some(n) =
                notifier.as_deref_mut().filter(|n| n.watch_due().is_some_and(|due| Instant::now() >= due))
            {
                n.watch();
            }
            for (role, revents) in ready {
                match role {
                    0 | 1 => {
                        let (fd, sink) = &mut outputs[role];
                        buf.clear();
                        let spare = rustix::buffer::spare_capacity(&mut buf);
                        let n = fd.as_ref().map_or(0, |fd| rustix::io::read(fd, spare).unwrap_or(0));
                        if n == 0 {
                            *fd = None;
                        } else {
                            sink(&buf);
                        }
                    }
                    2 => {
                        let mut raw = [0u8; 8];
                        if let Ok(8) = rustix::io::read(&self.status, &mut raw) {
                            waited.exit = decode_exit(raw);
                        }
                        // Reported, or the keeper is gone without a word: either way the group
                        // ends now (the keeper's own kill may not have happened).
                        status_open = false;
                        self.kill(&notifier.as_deref().map(|n| n.leaders()).unwrap_or_default());
                        drain_until.get_or_insert(Instant::now() + DRAIN_AFTER_KILL);
                    }
                    4 => {
                        if let Some(n) = notifier.as_deref_mut() {
                            n.ready(revents.intersects(PollFlags::HUP | PollFlags::ERR | PollFlags::NVAL));
                            if n.take_new_groups() {
                                on_new_groups(&n.groups(), n.more_groups());
                            }
                        }
                    }
                    _ => {
                        if let Some(sig) = sys::read_signal(stop_signals.as_fd()) {
                            waited.stopped_by.get_or_insert(sig);
                            let leaders = notifier.as_deref().map(|n| n.leaders()).unwrap_or_default();
                            if grace.is_zero() || kill_at.is_some() {
                                self.kill(&leaders);
                                drain_until.get_or_insert(Instant::now() + DRAIN_AFTER_KILL);
                            } else if drain_until.is_none() {
                                self.signal_gracefully(&leaders);
                                kill_at = Some(Instant::now() + grace);
                            }
                        }
                    }
                }
            }
        }
        waited.start_failure = match self.started.take() {
            Some(known) => known,
            None => self.read_start_failure(),
        };
        let all_gone = match notifier {
            Some(n) => self.reap(&n.leaders(), n.made_groups()),
            None => self.reap(&[], false),
        };
        waited.outlived = !all_gone;
        waited
    }

    fn read_start_failure(&self) -> Option<StartFailure> {
        let mut buf = [0u8; 256];
        let n = rustix::io::read(&self.failure, &mut buf).unwrap_or(0);
        match buf[..n] {
            [] => None,
            [b'X', a, b, c, d, ..] => Some(StartFailure::Exec(i32::from_ne_bytes([a, b, c, d]))),
            [_, ref detail @ ..] => Some(StartFailure::Sandbox(String::from_utf8_lossy(detail).into_owned())),
        }
    }

    /// Ends a group whose program never started (see [`Group::wait_started`]): kills what is
    /// there and reaps it.
    pub fn abandon(mut self) {
        let _ = self.reap(&[], false);
    }

    /// Signals the group one last time (the keeper is still unreaped, so the number is still the
    /// group's), and the groups the program made (`leaders`), then reaps the keeper and every
    /// process reparented to the helper. When the program made groups of its own (`escaped`),
    /// what it left in them is the helper's descendants now (the keeper and the helper are child
    /// subreapers) and is ended too, group by group (see [`escaped`]).
    ///
    /// Returns whether every process of the call is provably gone. It never waits without a
    /// bound on what the program controls: its processes are reaped as they end, and what is
    /// still there after [`REAP_LIMIT`] is ended by the tree (see [`escaped`]), itself bounded.
    fn reap(&mut self, leaders: &[Leader], escaped: bool) -> bool {
        self.kill(leaders);
        // The keeper is lnk's own code, killed with its group above: it ends at once.
        let _ = rustix::process::waitpid(Some(self.keeper), WaitOptions::empty());
        self.reaped = true;
        if escaped && !escaped::end_descendants(sys::own_process_group()) {
            return false;
        }
        // Anything else that is our child was reparented to the helper (a child subreaper) when
        // the keeper died; it was in a group killed above and is dying. A child that does not
        // end (one the kill did not reach) is ended by the tree rather than waited for.
        // Looked at often at first (a killed child ends within microseconds, and the call's end
        // waits for it), then less.
        let until = Instant::now() + REAP_LIMIT;
        let mut pause = Duration::from_micros(20);
        loop {
            match rustix::process::wait(WaitOptions::NOHANG) {
                Ok(Some(_)) => {}
                Ok(None) if Instant::now() < until => match &self.child_ended {
                    // A SIGCHLD since the last look is pending, so none is missed between the
                    // `wait` above and the `poll`; its siginfo is only read away.
                    Some(ended) => {
                        let left = until.saturating_duration_since(Instant::now());
                        let timeout = rustix::event::Timespec::try_from(left).ok();
                        let mut fds = [rustix::event::PollFd::new(ended, rustix::event::PollFlags::IN)];
                        let _ = rustix::event::poll(&mut fds, timeout.as_ref());
                        while sys::read_signal(ended.as_fd()).is_some() {}
                    }
                    None => {
                        std::thread::sleep(pause);
                        pause = (pause * 2).min(Duration::from_millis(2));
                    }
                },
                Ok(None) => return escaped::end_descendants(sys::own_process_group()),
                // ECHILD: none is left.
                Err(_) => return true,
            }
        }
    }
}
