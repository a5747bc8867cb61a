//! Ending what left the program's process group.
//!
//! In the Landlock-only mode a program may make sessions and groups of its own: `setsid` and
//! `setpgid` are held, the leader of each new group is noted (see [`crate::notify`]), and the
//! call goes on into the kernel. So the keeper's group alone no longer holds every process of
//! the call, and ending it no longer ends them all. What does:
//!
//! - **The groups noted.** Each noted leader is a process of the call, held by a pidfd taken
//!   while it provably was (see [`crate::notify::groups`]), and its group is signalled through
//!   that pidfd ([`signal_groups`]): the group the kernel names by that process, which only it
//!   or its parent (both the call's) can have made, all of it at once and nothing else, since a
//!   group holds processes of one session only, and a sandboxed process can make or join
//!   sessions of its own descent only.
//! - **The tree.** The helper and the keeper are child subreapers: whatever the program's
//!   processes leave behind is reparented to the keeper, then to the helper, never past it. So
//!   every process of the call is a descendant of the one that ends it, and
//!   [`end_descendants`] kills descendants (their groups, then themselves, each found by pid and
//!   start time, signalled through a pidfd) round after round until none is left: a double
//!   forked daemon whose session's leader already exited is found that way.
//!
//! Nothing here signals by number alone: a process is acted on only through a pidfd opened on
//! the pid it was seen at, and only when the process behind that pidfd has the start time it
//! was seen with (see [`crate::procfs::Process`]).
//!
//! What it trusts: `/proc` (to find the tree), pidfds, and the kernel's rule that a process
//! joins only groups of its own session.

use std::time::{Duration, Instant};

use rustix::process::Signal;

use crate::notify::groups::Leader;
use crate::procfs::{self, Process};

/// How long [`end_descendants`] goes on before it gives up on what still lives.
const ENDING_LIMIT: Duration = Duration::from_secs(5);

/// Sends `signal` to the group each of `leaders` leads, through the pidfd taken when it was
/// noted: a group it made and still leads, or whose members outlive it (the group is named by
/// the process the pidfd holds, never by a number another process could have taken since).
pub fn signal_groups(leaders: &[Leader], signal: Signal) {
    for leader in leaders {
        let _ = crate::sys::pidfd_signal_group(&leader.pidfd, signal.as_raw());
    }
}

/// Kills every descendant of the calling process, round after round, until none is left (or
/// [`ENDING_LIMIT`] passes), reaping its own children as they end. The group of each is killed
/// with it, except `spare_group` (the caller's own: the keeper leads group N, and ends it
/// itself, last), whose members are killed one by one. Returns whether none was left.
pub fn end_descendants(spare_group: i32) -> bool {
    let me = rustix::process::getpid().as_raw_nonzero().get();
    let until = Instant::now() + ENDING_LIMIT;
    loop {
        reap_what_ended();
        let found = procfs::descendants(me, &procfs::all());
        if found.is_empty() {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        for (pid, seen) in found.iter().filter(|(_, s)| s.lives()) {
            let Some((pidfd, now)) = (Process { pid: *pid, start: seen.start }).open() else { continue };
            if now.pgrp != spare_group && now.pgrp > 1 {
                let _ = crate::sys::pidfd_signal_group(&pidfd, Signal::KILL.as_raw());
            }
            let _ = rustix::process::pidfd_send_signal(&pidfd, Signal::KILL);
        }
        // Killed processes end, and their children come to this process, a moment later.
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Reaps every child of the calling process that has ended, without waiting.
fn reap_what_ended() {
    use rustix::process::WaitOptions;
    while let Ok(Some(_)) = rustix::process::wait(WaitOptions::NOHANG) {}
}
