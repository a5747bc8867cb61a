//! The call's processes and threads in the Landlock-only mode, counted by the helper (see
//! [`crate::sandbox::appetite`] for why, and for the own world, where the kernel counts them in
//! the call's namespaces; [`super::inotify`] counts the call's inotify use).
//!
//! Without a namespace of the call's own the kernel counts tasks per user only: the call's with
//! every other process of the person's. So the calls that make them are held (`clone`, `fork`,
//! `vfork`), and the receiver answers each from its number alone: it goes on into the kernel
//! while the call's count is below its bound, and is refused past it as the kernel refuses past
//! a limit (`EAGAIN`). The person's own processes are not held and not counted: a fork loop in
//! the call stops at its bound while theirs still fork.
//!
//! How it counts: each call let go on adds one to a rough count, which never notices what ended.
//! When the rough count reaches the bound, the call's tasks are counted exactly from `/proc`
//! (every task of every process beneath the helper: all the call's, since the helper and the
//! keeper are child subreapers and nothing of it is reparented past them), and the rough count
//! starts again from there, plus the calls let go on in the last [`IN_FLIGHT`] that the count
//! did not grow by: one let go on may not have made its task yet when `/proc` is read (found in
//! review: 900 threads forking at once reached nearly twice the bound, each fork in flight
//! counted by none). A `/proc` that
//! cannot be read is a count at the bound, never one of zero (found in review: a helper out of
//! descriptors read no process, and the bound stopped applying).
//!
//! Trusted with: that a Landlock-only call takes no more of the person's processes than its
//! appetite: a bug here could let a fork loop freeze the person's machine. What it trusts: the
//! kernel's notification (the call's number) and `/proc` (each process's `stat`, the kernel's
//! text; the one field a program names, its command, is skipped by position).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use rustix::io::Errno;

/// How long a call let go on is counted beside an exact count: far longer than the kernel takes
/// to make the task once the calling thread runs.
const IN_FLIGHT: Duration = Duration::from_millis(200);

/// The call's rough count of tasks, and its bound.
pub struct Counts {
    bound: u32,
    tasks: u32,
    /// The last exact count.
    exact: u32,
    /// When each of the calls let go on since the last exact count, in the last [`IN_FLIGHT`],
    /// was: those that may not be in it.
    recent: VecDeque<Instant>,
}

impl Counts {
    /// Counts starting from the call's first two tasks (the keeper and the program's first
    /// process, made before any call was held).
    pub fn new(bound: u32) -> Counts {
        Counts { bound, tasks: 2, exact: 2, recent: VecDeque::new() }
    }

    /// Whether one more task keeps the call within its bound: `Ok` (and it is counted), or
    /// `EAGAIN`, what the kernel answers past its own limit.
    pub fn admit(&mut self) -> Result<(), Errno> {
        let now = Instant::now();
        while self.recent.front().is_some_and(|at| now.duration_since(*at) > IN_FLIGHT) {
            self.recent.pop_front();
        }
        if self.tasks >= self.bound {
            let exact = exact_tasks().unwrap_or(self.bound);
            // What grew since the last exact count has landed: that many of the recent are in it.
            let landed = exact.saturating_sub(self.exact) as usize;
            self.recent.drain(..landed.min(self.recent.len()));
            self.exact = exact;
            self.tasks = exact.saturating_add(self.recent.len() as u32);
        }
        if self.tasks >= self.bound {
            return Err(Errno::AGAIN);
        }
        self.tasks += 1;
        self.recent.push_back(now);
        Ok(())
    }
}

/// The tasks of every process beneath this one, from `/proc`; an error when `/proc` could not be
/// read whole.
fn exact_tasks() -> Result<u32, Errno> {
    let helper = rustix::process::getpid().as_raw_nonzero().get();
    let call = crate::procfs::descendants(helper, &crate::procfs::all_or_error()?);
    Ok(call.iter().map(|(_, stat)| stat.threads.max(1)).fold(0u32, u32::saturating_add))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_at_its_bound_is_recounted_with_what_is_in_flight_before_it_refuses() {
        // Exact counts here are of this test's own children (none, unless another test of the
        // binary has some right now: then the figures only grow, and the refusal still comes).
        let mut counts = Counts::new(4);
        counts.exact = 0;
        assert_eq!((counts.admit(), counts.admit()), (Ok(()), Ok(())));
        // At the bound: recounted, the two just let go on still counted as on their way.
        assert_eq!((counts.admit(), counts.admit()), (Ok(()), Ok(())));
        assert_eq!(counts.admit(), Err(Errno::AGAIN), "four on their way, none landed: at the bound");
        // Once they are past in flight, the exact count lets more go on.
        counts.recent.clear();
        let beneath = exact_tasks().unwrap();
        if beneath < 4 {
            assert_eq!(counts.admit(), Ok(()), "recounted: {beneath} beneath this test");
        }
    }
}
