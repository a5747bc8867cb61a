//! What runs in the processes the helper forks, up to the program's `execve`: the keeper (see
//! the parent module for why it exists), the own world's pid 1 that makes the world, and the
//! program's process, which confines itself and executes the program.
//!
//! Each of these is single-threaded and ends in `execve` or `_exit`, never by returning: they
//! run lnk's code on a copy of the helper, with the helper's rights until the sandbox is
//! entered. Their failures before `execve` go to the helper through a pipe, as one stage letter
//! and a few words (`fail_start`).
//!
//! What they trust: the sandbox the helper prepared (opened grants, the compiled filter).

use std::os::fd::{AsFd, OwnedFd};

use rustix::event::{PollFd, PollFlags};
use rustix::process::{Pid, Signal, WaitOptions, WaitStatus};

use super::{KEEPER_DEATH_SIGNAL, ProgramImage, Stdio, escaped};
use crate::sandbox::Sandbox;
use crate::sys::{self, Forked};

pub(super) fn keeper_main(
    helper: Pid,
    sandbox: &mut Sandbox,
    image: &ProgramImage,
    stdio: Stdio,
    status: OwnedFd,
    failure: OwnedFd,
) -> ! {
    // Until setsid succeeds the keeper is in the helper's group, which may be the harness's:
    // a failure there only exits. (It cannot fail: a fresh fork never leads a group.)
    if rustix::process::setsid().is_err() {
        sys::exit_now(125);
    }
    // From here on the keeper leads its own group, so a failure ends that group, itself included.
    let die = |_| -> ! {
        let _ = rustix::process::kill_current_process_group(Signal::KILL);
        sys::exit_now(125)
    };
    rustix::process::set_child_subreaper(Some(rustix::process::getpid())).unwrap_or_else(|e| die(e));
    // The parent-death signal is one the group is never sent: SIGTERM is how a graceful stop
    // reaches the program (SIGTERM to the group, SIGKILL after the grace), and a keeper that
    // killed the group on it would cut the grace short. The keeper ignores the stop signals
    // itself; the program's process puts them back to their defaults (`reset_signals`). The
    // program cannot send the keeper anything (Landlock's signal scope).
    sys::kill_group_on(KEEPER_DEATH_SIGNAL.as_raw())
        .unwrap_or_else(|e| die(rustix::io::Errno::from_io_error(&e).unwrap_or(rustix::io::Errno::INVAL)));
    sys::ignore_signals(&[libc::SIGTERM, libc::SIGINT, libc::SIGHUP]);
    rustix::process::set_parent_process_death_signal(Some(KEEPER_DEATH_SIGNAL)).unwrap_or_else(|e| die(e));
    if rustix::process::getppid() != Some(helper) {
        // The helper died before the death signal was set: nothing will tell us later.
        die(rustix::io::Errno::SRCH);
    }
    // In the call's own world the program's first process starts in new namespaces, as pid 1
    // of its own pid namespace (see `sandbox::world`); otherwise it is a plain fork.
    // The world's pid 1 tells the keeper the program's own wait status on a pipe of their own
    // (it must not hold the helper's status pipe, which has to close when the keeper dies).
    let (report_r, report_w) = match sandbox.clone_flags() {
        Some(_) => match rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC) {
            Ok((r, w)) => (Some(r), Some(w)),
            Err(e) => die(e),
        },
        None => (None, None),
    };
    // The world's network namespace, made by the keeper once pid 1 is cloned (see
    // `sandbox::world_network`), crosses on a pair of their own.
    let network_pair = match sandbox.world_user_namespace() {
        Some(_) => match crate::sandbox::world_network::pair() {
            Ok(pair) => Some(pair),
            Err(e) => die(e),
        },
        None => None,
    };
    let Some(flags) = sandbox.clone_flags() else {
        // No world: the program's process shares the keeper's memory until it executes the
        // program (the keeper waits meanwhile), and borrows what it needs: it ends in
        // `program_main`, which never returns (see `sys::spawn_sharing_memory`).
        let program = sys::spawn_sharing_memory(&mut || program_main(sandbox, image, &stdio, &failure))
            .unwrap_or_else(|_| die(rustix::io::Errno::AGAIN));
        drop(stdio);
        drop(failure);
        // Nothing else of the helper's stays open here: not its pipes, not a record lock.
        sys::close_all_except(&[status.as_fd()]);
        keep_without_a_world(program, &status)
    };
    // The keeper has one thread (checked); the child ends in `world_init`, which never returns.
    let forked = sys::clone_into_namespaces(flags);
    let program = match (forked, report_w) {
        (Ok(Forked::Child), Some(report_w)) => {
            drop(status);
            // The keeper is then the report's only reader: pid 1 sees it gone by that.
            drop(report_r);
            // Pid 1 keeps only its own end: with the keeper's closed, a keeper that sent nothing
            // shows as the pair's end, never as a wait.
            if let Some((keeper_end, world_end)) = network_pair {
                drop(keeper_end);
                sandbox.network_from_keeper(world_end);
            }
            world_init(sandbox, image, stdio, failure, report_w)
        }
        (Ok(Forked::Child), None) => unreachable!("a world's pid 1 always has its report pipe"),
        (Ok(Forked::Parent(pid)), _) => {
            // Made while pid 1 makes the mounts. A failure is said here, as a refused `clone`
            // is (pid 1, then without the pair's other end, fails too).
            if let (Some((keeper_end, world_end)), Some(user_namespace)) =
                (network_pair, sandbox.world_user_namespace())
            {
                drop(world_end);
                if let Err(e) =
                    crate::sandbox::world_network::make_for_world(pid, user_namespace, &keeper_end)
                {
                    let why = format!("cannot make the call's network namespace: {e}");
                    let _ = rustix::process::kill_process(pid, Signal::KILL);
                    fail_start(&failure, b'S', why.as_bytes());
                }
            }
            pid
        }
        // Said on the failure pipe: in the own world this is where a kernel that refuses the
        // namespaces shows (the keeper's group is only itself yet).
        (Err(_), _) if sandbox.clone_flags().is_some() => {
            fail_start(&failure, b'S', b"cannot make the call's namespaces (clone)")
        }
        (Err(_), _) => die(rustix::io::Errno::AGAIN),
    };
    drop(stdio);
    drop(failure);
    // Nothing else of the helper's stays open here: not its pipes, not a record lock.
    match &report_r {
        Some(report_r) => sys::close_all_except(&[status.as_fd(), report_r.as_fd()]),
        None => sys::close_all_except(&[status.as_fd()]),
    }
    // In the own world pid 1 writes the program's status and then exits. The status goes on
    // to the helper as soon as it is written, not after pid 1's exit (the end of its pid
    // namespace): the helper waits for that exit anyway when it reaps what the keeper leaves.
    // Without a report (pid 1 died first), pid 1's own status is told below.
    if let Some(told) = report_r.as_ref().and_then(read_report) {
        let _ = rustix::io::write(&status, &told);
        // The program is over: so is everything it started, the keeper included.
        let _ = rustix::process::kill_current_process_group(Signal::KILL);
    }
    if report_r.is_none() {
        keep_without_a_world(program, &status)
    }
    loop {
        match rustix::process::wait(WaitOptions::empty()) {
            Ok(Some((pid, wait_status))) if pid == program => {
                // The status of a pid 1 that ended without a report (a report was told above).
                let _ = rustix::io::write(&status, &encode_exit(wait_status));
                // The program is over: so is everything it started, the keeper included.
                let _ = rustix::process::kill_current_process_group(Signal::KILL);
            }
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => {
                let _ = rustix::process::kill_current_process_group(Signal::KILL);
                sys::exit_now(125);
            }
        }
    }
}

/// The keeper's life in the Landlock-only mode, where the program may make sessions and groups
/// of its own (see [`escaped`]): it reaps, tells the program's end and kills its group; and if
/// the helper dies, it ends every one of its descendants, whatever their group, before its own
/// group and itself (nothing it ends is reparented past it: it is their subreaper). Signals come
/// on a signalfd, so that ending runs as ordinary code, not in a handler.
fn keep_without_a_world(program: Pid, status: &OwnedFd) -> ! {
    let end_everything = || -> ! {
        escaped::end_descendants(sys::own_process_group());
        let _ = rustix::process::kill_current_process_group(Signal::KILL);
        sys::exit_now(125)
    };
    // Before this, the parent-death signal's handler ends the group. A helper that died while
    // the program's process was setting up is seen once it has executed the program (the keeper
    // is stopped until then): the program may then have run a few instructions, but cannot have
    // left the group (its `setsid` and `setpgid` are refused or held for the dead helper).
    let Ok(signals) = sys::signalfd_for(&[libc::SIGCHLD, KEEPER_DEATH_SIGNAL.as_raw()]) else {
        let _ = rustix::process::kill_current_process_group(Signal::KILL);
        sys::exit_now(125)
    };
    loop {
        // A SIGCHLD that came before the signalfd was made is seen here: the child waits.
        loop {
            match rustix::process::wait(WaitOptions::NOHANG) {
                Ok(Some((pid, wait_status))) if pid == program => {
                    // The program's own status; then the program is over, and so is its
                    // group, the keeper included (what left the group is the helper's to end:
                    // it is reparented there).
                    let _ = rustix::io::write(status, &encode_exit(wait_status));
                    let _ = rustix::process::kill_current_process_group(Signal::KILL);
                }
                Ok(Some(_)) => {}
                Ok(None) | Err(rustix::io::Errno::CHILD) => break,
                Err(rustix::io::Errno::INTR) => {}
                Err(_) => end_everything(),
            }
        }
        let mut fds = [PollFd::new(&signals, PollFlags::IN)];
        match rustix::event::poll(&mut fds, None) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(_) => end_everything(),
        }
        while let Some(signal) = sys::read_signal(signals.as_fd()) {
            if signal == KEEPER_DEATH_SIGNAL.as_raw() {
                end_everything();
            }
        }
    }
}

/// The 8-byte report of the world's pid 1, or `None` when its pipe closes without one.
fn read_report(report: &OwnedFd) -> Option<[u8; 8]> {
    let mut told = [0u8; 8];
    loop {
        match rustix::io::read(report, &mut told) {
            Ok(8) => return Some(told),
            Err(rustix::io::Errno::INTR) => {}
            // One `write` of 8 bytes on a pipe is atomic: anything else is no report.
            _ => return None,
        }
    }
}

/// Reports a failure to start on the failure pipe and exits: `S` (setting up) or `X` (`execve`,
/// with the errno).
fn fail_start(failure: &OwnedFd, stage: u8, detail: &[u8]) -> ! {
    let mut message = [0u8; 256];
    message[0] = stage;
    let n = detail.len().min(message.len() - 1);
    message[1..=n].copy_from_slice(&detail[..n]);
    let _ = rustix::io::write(failure, &message[..=n]);
    sys::exit_now(if stage == b'X' { 126 } else { 125 })
}

/// Gives the process the program's standard streams as 0, 1 and 2 (standard input only when the
/// caller passed one: see [`Stdio`]), and marks every other descriptor close-on-exec.
fn set_up_streams(stdio: &Stdio, failure: &OwnedFd) {
    sys::reset_signals();
    let streams = [(stdio.stdin.as_ref(), 0), (Some(&stdio.stdout), 1), (Some(&stdio.stderr), 2)];
    for (fd, target) in streams {
        if fd.is_some_and(|fd| sys::dup_to(fd.as_fd(), target).is_err()) {
            fail_start(failure, b'S', b"cannot set up the standard streams");
        }
    }
    if sys::cloexec_from(3).is_err() {
        fail_start(failure, b'S', b"cannot mark descriptors close-on-exec");
    }
}

/// Once the world is made: enters the starting folder, and opens the default standard input
/// there (the world's `/dev/null`, on its read-only mount).
fn enter_start(sandbox: &Sandbox, stdio: &Stdio, failure: &OwnedFd) {
    if let Err(why) = sandbox.enter_start_folder() {
        fail_start(failure, b'S', why.as_bytes());
    }
    if stdio.stdin.is_none() {
        let null = rustix::fs::open(c"/dev/null", rustix::fs::OFlags::RDONLY, rustix::fs::Mode::empty());
        match null {
            Ok(null) if sys::dup_to(null.as_fd(), 0).is_ok() => {}
            _ => fail_start(failure, b'S', b"cannot open /dev/null as standard input"),
        }
    }
}

/// The program's process without a world: its streams, its starting folder, its confinement,
/// and the program. It borrows everything: it runs in the keeper's memory (see
/// `sys::spawn_sharing_memory`), and the keeper's own descriptors (the helper's status pipe
/// among them) are close-on-exec, so the program holds none of them.
fn program_main(sandbox: &mut Sandbox, image: &ProgramImage, stdio: &Stdio, failure: &OwnedFd) -> ! {
    set_up_streams(stdio, failure);
    if let Err(why) = sandbox.enter_world() {
        fail_start(failure, b'S', why.as_bytes());
    }
    enter_start(sandbox, stdio, failure);
    exec_confined(sandbox, image, failure)
}

/// Confines the process (capabilities, Landlock, seccomp) and executes the program.
fn exec_confined(sandbox: &mut Sandbox, image: &ProgramImage, failure: &OwnedFd) -> ! {
    if let Err(why) = sandbox.confine() {
        fail_start(failure, b'S', why.as_bytes());
    }
    let err = match &image.fd {
        Some(fd) => sys::execveat_empty(fd.as_fd(), &image.argv, &image.envp),
        None => sys::execve(&image.path, &image.argv, &image.envp),
    };
    let errno = err.raw_os_error().unwrap_or(0);
    fail_start(failure, b'X', &errno.to_ne_bytes())
}

/// Pid 1 of the call's own world: makes the world, starts the program (pid 2), and then only
/// reaps, as an init does, until the program ends; it writes the program's wait status to the
/// keeper (`report`) and exits, and the kernel kills whatever is left in the pid namespace.
///
/// Why not run the program as pid 1: an init ignores every signal it has no handler for, even
/// the helper's SIGTERM from outside, so a graceful stop would not reach it; and orphans would
/// be reparented to a program that may never reap them. This process is lnk's own code, never
/// confined by Landlock (so the program, which is, cannot signal or trace it) and holding no
/// descriptor the program needs.
fn world_init(
    sandbox: &mut Sandbox,
    image: &ProgramImage,
    stdio: Stdio,
    failure: OwnedFd,
    report: OwnedFd,
) -> ! {
    // The keeper's death ends the world: pid 1's end ends every process of its namespace, so
    // no process of the call outlives a keeper killed with its helper (a background command's
    // supervisor and keeper killed at once, which no sweep can then prove the call's). A keeper
    // that died before the signal was set shows as the report's reader gone.
    let reader_gone = || {
        let mut fds = [rustix::event::PollFd::new(&report, rustix::event::PollFlags::OUT)];
        let zero = rustix::event::Timespec { tv_sec: 0, tv_nsec: 0 };
        rustix::event::poll(&mut fds, Some(&zero)).is_err()
            || fds[0].revents().intersects(rustix::event::PollFlags::ERR | rustix::event::PollFlags::HUP)
    };
    if rustix::process::set_parent_process_death_signal(Some(Signal::KILL)).is_err() || reader_gone() {
        sys::exit_now(125);
    }
    set_up_streams(&stdio, &failure);
    if let Err(why) = sandbox.enter_world() {
        fail_start(&failure, b'S', why.as_bytes());
    }
    enter_start(sandbox, &stdio, &failure);
    // This process has one thread (a clone of the keeper; checked). The program's process
    // shares its memory until it executes the program (pid 1 waits meanwhile) and borrows what
    // it needs; it ends in `exec_confined`, which never returns, and holds no descriptor of pid
    // 1's past the `execve` (the report pipe is close-on-exec). See `sys::spawn_sharing_memory`.
    let program = match sys::spawn_sharing_memory(&mut || exec_confined(sandbox, image, &failure)) {
        Ok(pid) => pid,
        Err(_) => fail_start(&failure, b'S', b"cannot start the program in its pid namespace (clone)"),
    };
    // The program's streams and failure pipe are the program's alone from here, so they close
    // when it (and what it started) is done with them.
    drop(stdio);
    drop(failure);
    sys::close_all_from_except(0, &[report.as_fd()]);
    loop {
        match rustix::process::wait(WaitOptions::empty()) {
            Ok(Some((pid, wait_status))) if pid == program => {
                let _ = rustix::io::write(&report, &encode_exit(wait_status));
                sys::exit_now(0);
            }
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(_) => sys::exit_now(125),
        }
    }
}

/// The keeper's report of the program's end: a tag (0 exited, 1 killed by a signal) and the
/// code or signal, 8 bytes in one `write` (atomic on a pipe).
fn encode_exit(status: WaitStatus) -> [u8; 8] {
    let (tag, value) = match (status.exit_status(), status.terminating_signal()) {
        (Some(code), _) => (0i32, code),
        (_, Some(sig)) => (1, sig),
        _ => (2, 0),
    };
    let mut out = [0u8; 8];
    out[..4].copy_from_slice(&tag.to_ne_bytes());
    out[4..].copy_from_slice(&value.to_ne_bytes());
    out
}
