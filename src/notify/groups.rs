//! The groups and sessions a program makes in the Landlock-only mode, noted only when they are
//! provably the call's own.
//!
//! Without a pid namespace, the keeper's group no longer holds every process of the call once
//! the program calls `setsid` or `setpgid`, so the helper holds those calls, notes the process
//! that may lead the new group, and lets the call go on into the kernel, which decides it (see
//! [`crate::lifetime`] for how the call's end uses what is noted). What is noted is then
//! signalled at the call's end, at a stop, and by the sweep, so it must never be anything but a
//! process of the call: an earlier version noted whatever pid the program named, before the
//! kernel had answered, and a program that called `setpgid(VICTIM, 0)` with a host process that
//! leads its group (a shell, a daemon, the harness) had that group killed at its end (found in
//! review).
//!
//! The rule: a leader is noted only when it is the calling process itself, or a child of it.
//! Those are the only processes the kernel lets `setsid` and `setpgid` act on at all (anything
//! else is `ESRCH`), and every process they can be is the call's: the caller is held by the
//! call's filter, which only the call's processes carry, and a child of a process of the call
//! is one too. The proof, in order, each step on what the kernel says:
//!
//! 1. the caller's process (its thread group) is read from `/proc/<tid>/status`;
//! 2. a pidfd is opened on the target, then its `stat` read: its parent must be the caller;
//! 3. the pidfd's process must still be there, so the `stat` read was its own (a process that
//!    took its number later cannot have been read while it lived), and the held call must still
//!    be held, so the caller's number was still the caller's.
//!
//! The call always goes on, noted or not, and the kernel alone answers it (a call it refuses
//! leaves a noted call process that leads no group: signalling its group then reaches nothing).
//! What is noted is the pidfd itself: the call's end signals the group named by the process
//! the pidfd holds (`PIDFD_SIGNAL_PROCESS_GROUP`), which only that process or its parent can have
//! made, and never a group that merely took the same number later. The sweep, which outlives
//! the pidfd, has the pid and start time (see [`crate::records::identity::prove_leader`]).
//!
//! Trusted with: which process groups the call's end may kill in the Landlock-only mode: a bug
//! here could kill the host's processes. What it trusts: the kernel's notification (the calling
//! thread, the call's numbers), `/proc`, pidfds and `SECCOMP_IOCTL_NOTIF_ID_VALID`.

use std::os::fd::{AsFd as _, BorrowedFd, OwnedFd};
use std::sync::Arc;

use super::Held;
use crate::procfs::Process;

/// A process of the call that may lead a group it made, with a pidfd taken while it was
/// provably the call's.
#[derive(Debug, Clone)]
pub struct Leader {
    pub process: Process,
    pub pidfd: Arc<OwnedFd>,
}

impl PartialEq for Leader {
    fn eq(&self, other: &Leader) -> bool {
        self.process == other.process
    }
}

/// What a held `setsid` or `setpgid` leaves to note.
#[derive(Debug)]
pub enum Noted {
    /// The process that may lead the group the call makes, provably the call's.
    Leader(Leader),
    /// Nothing: the call makes no group, or would make one of a process that is not the call's
    /// (which the kernel refuses).
    Nothing,
    /// It could not be told (the helper out of descriptors, say): the call's end still finds
    /// every process it left (by the tree), but a record must say leftovers are possible.
    Unknown,
}

/// What a held `setsid` or `setpgid` leaves to note (see the module's documentation). `call` is
/// the call's name, as [`super::request::decode_call`] gives it.
pub fn leader_of(listener: BorrowedFd<'_>, held: &Held, call: &str) -> Noted {
    #[cfg(feature = "fault-points")]
    if crate::fault::fails("held-group-is-not-noted") {
        // For the test that the call's end finds, by the tree, a group the helper never noted.
        return Noted::Nothing;
    }
    let Some(caller) = thread_group(held.pid) else {
        // The thread is gone (its call with it), or `/proc` could not be read.
        return match crate::sys::seccomp_notif_id_valid(listener, held.id) {
            true => Noted::Unknown,
            false => Noted::Nothing,
        };
    };
    let target = match call {
        "setsid" => caller,
        _ => {
            // `setpgid(pid, pgid)`: a new group only when `pgid` is 0 or `pid` itself; any
            // other `pgid` joins a group that exists already (of the caller's session, which the
            // kernel checks), and makes none.
            let (pid, pgid) = (held.args[0] as u32 as i32, held.args[1] as u32 as i32);
            let target = if pid == 0 { caller } else { pid };
            if pgid != 0 && pgid != target {
                return Noted::Nothing;
            }
            target
        }
    };
    let Some(pid) = rustix::process::Pid::from_raw(target) else { return Noted::Nothing };
    let pidfd = match rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()) {
        Ok(pidfd) => pidfd,
        // No such process, or a thread that leads no process: the kernel refuses the call.
        Err(rustix::io::Errno::SRCH | rustix::io::Errno::INVAL) => return Noted::Nothing,
        Err(_) => return Noted::Unknown,
    };
    let Some(stat) = crate::procfs::stat(target) else {
        return if crate::sys::pidfd_alive(pidfd.as_fd()) { Noted::Unknown } else { Noted::Nothing };
    };
    if target != caller && stat.ppid != caller {
        return Noted::Nothing;
    }
    if !stat.lives()
        || !crate::sys::pidfd_alive(pidfd.as_fd())
        || !crate::sys::seccomp_notif_id_valid(listener, held.id)
    {
        return Noted::Nothing;
    }
    Noted::Leader(Leader { process: Process { pid: target, start: stat.start }, pidfd: Arc::new(pidfd) })
}

/// The process (thread group) of thread `tid`.
pub(super) fn thread_group(tid: u32) -> Option<i32> {
    let status = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    status.lines().find_map(|l| l.strip_prefix("Tgid:")).and_then(|v| v.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_threads_process_is_read_from_proc() {
        let me = rustix::process::getpid().as_raw_nonzero().get();
        let tid = rustix::thread::gettid().as_raw_nonzero().get() as u32;
        assert_eq!(thread_group(tid), Some(me));
        assert_eq!(thread_group(u32::MAX), None);
    }
}
