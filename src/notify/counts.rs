//! The call's processes and threads in the Landlock-only mode (see [`crate::sandbox::appetite`]
//! for why, and for the own world, where the kernel counts them in the call's namespaces).
//!
//! Without a namespace of the call's own the kernel counts tasks per user only: the call's with
//! every other process of the person's. Holding the calls that make them is no answer: a held
//! call interrupted by a signal fails with `EINTR` where the program's handler has no
//! `SA_RESTART`, which `fork` natively never does (dash says "Cannot fork" when a child's
//! `SIGCHLD` comes at the wrong moment: found in this suite). So:
//!
//! - for an ordinary user, the kernel: the program's `RLIMIT_NPROC` is the machine's tasks at
//!   the call's start plus the bound ([`crate::sandbox::appetite::set_program_limits`]), so a
//!   fork loop gets `EAGAIN` past the bound at most by the other users' tasks, and the person's
//!   own processes, which keep their own limit, still fork;
//! - for root, which `RLIMIT_NPROC` never limits, this watch, run by the helper's main thread:
//!   it counts the call's tasks exactly (every task of every process beneath the helper, all
//!   the call's: the helper and the keeper are child subreapers, so nothing of it is reparented
//!   past them; an unreaped child too, which holds its pid), every [`PERIOD`] (more often near
//!   the bound), and past the bound ends the call's processes, those that started none first
//!   and the newest first, never the keeper, until it is within it again (a process whose
//!   unreaped children hold the pids is ended in the end, and they with it). It contains a fork
//!   loop rather than refuses it: the loop can outrun a look, the more so on a machine whose
//!   cores it keeps busy.
//!
//! Each process is found by walking the `children` lists `/proc` keeps for each thread, from the
//! helper down, so a look costs in proportion to the call, not to the machine (with a walk of
//! every process where the kernel keeps no such lists). A process is ended through a pidfd opened
//! on the pid it was seen at, only while it has the start time it was seen with.
//!
//! Trusted with: that a Landlock-only call takes no more of the machine's processes than its
//! appetite: a bug here could let a fork loop freeze the person's machine, or end a process that
//! is not the call's. What it trusts: `/proc` (the kernel's `children` lists and `stat` lines)
//! and pidfds.

use std::time::{Duration, Instant};

use crate::procfs::{ProcStat, Process};

/// How often the call's tasks are counted.
pub const PERIOD: Duration = Duration::from_millis(10);

/// How often once they are past half the bound.
const PERIOD_NEAR: Duration = Duration::from_millis(2);

/// The watch over the call's tasks.
pub struct TaskWatch {
    bound: u32,
    next: Instant,
}

impl TaskWatch {
    pub fn new(bound: u32) -> TaskWatch {
        TaskWatch { bound, next: Instant::now() + PERIOD }
    }

    /// When the next look is due.
    pub fn due(&self) -> Instant {
        self.next
    }

    /// Counts the call's tasks beneath `helper` and, past the bound, ends processes of the call
    /// until it is within it. Returns how many it ended.
    pub fn look(&mut self, helper: i32) -> usize {
        let call = call_processes(helper);
        let mut tasks: u64 = call.iter().map(|(_, stat)| u64::from(stat.threads.max(1))).sum();
        let near = tasks > u64::from(self.bound) / 2;
        self.next = Instant::now() + if near { PERIOD_NEAR } else { PERIOD };
        if tasks <= u64::from(self.bound) {
            return 0;
        }
        // The keeper (the helper's child) never; then processes that started none of the call's
        // first (a fork loop's children before the loop), newest first (start times are in
        // ticks, and pids wrap: both only order what they can).
        let parents: std::collections::HashSet<i32> = call.iter().map(|(_, stat)| stat.ppid).collect();
        let mut order: Vec<(i32, ProcStat)> =
            call.into_iter().filter(|(_, stat)| stat.ppid != helper).collect();
        order.sort_by(|a, b| {
            let leaf = |p: &(i32, ProcStat)| !parents.contains(&p.0);
            leaf(b).cmp(&leaf(a)).then(b.1.start.cmp(&a.1.start)).then(b.0.cmp(&a.0))
        });
        let mut ended = 0;
        for (pid, stat) in order {
            if tasks <= u64::from(self.bound) {
                break;
            }
            if let Some((pidfd, _)) = (Process { pid, start: stat.start }).open() {
                if rustix::process::pidfd_send_signal(&pidfd, rustix::process::Signal::KILL).is_ok() {
                    tasks = tasks.saturating_sub(u64::from(stat.threads.max(1)));
                    ended += 1;
                }
            }
        }
        ended
    }
}

/// Every process beneath `root`, each with its `stat`: by the kernel's `children` lists, or by
/// every process's `stat` where there are none.
fn call_processes(root: i32) -> Vec<(i32, ProcStat)> {
    let mut found = Vec::new();
    let mut pending = vec![root];
    while let Some(parent) = pending.pop() {
        let Ok(threads) = std::fs::read_dir(format!("/proc/{parent}/task")) else { continue };
        for thread in threads.flatten() {
            let Ok(children) = std::fs::read_to_string(thread.path().join("children")) else {
                if parent == root {
                    // No `children` lists: every process's `stat`.
                    return crate::procfs::descendants(root, &crate::procfs::all());
                }
                continue;
            };
            for child in children.split_whitespace().filter_map(|c| c.parse::<i32>().ok()) {
                if let Some(stat) = crate::procfs::stat(child) {
                    found.push((child, stat));
                    pending.push(child);
                }
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_whose_first_thread_ended_alone_is_counted_and_ended() {
        // A helper of the test's own, its keeper, and beneath it a process whose first thread
        // ended alone (`/proc` shows it `Z`) while its second sleeps.
        let script = "import ctypes, platform, threading, time
threading.Thread(target=lambda: time.sleep(60)).start()
ctypes.CDLL(None).syscall({'x86_64': 60, 'aarch64': 93, 'riscv64': 93}[platform.machine()], 0)";
        let mut helper = std::process::Command::new("sh")
            .args(["-c", "sh -c 'python3 -c \"$SCRIPT\" & wait' & wait"])
            .env("SCRIPT", script)
            .spawn()
            .unwrap();
        let helper_pid = helper.id() as i32;
        let first_thread_ended =
            || call_processes(helper_pid).into_iter().find(|(_, s)| s.state == 'Z' && s.threads == 2);
        let until = Instant::now() + Duration::from_secs(10);
        let (pid, _) = loop {
            if let Some(found) = first_thread_ended() {
                break found;
            }
            assert!(Instant::now() < until, "no such process: {:?}", call_processes(helper_pid));
            std::thread::sleep(Duration::from_millis(10));
        };
        // The keeper's one task and its two: past a bound of two, it is ended.
        let mut watch = TaskWatch { bound: 2, next: Instant::now() };
        assert_eq!(watch.look(helper_pid), 1);
        let until = Instant::now() + Duration::from_secs(10);
        while crate::procfs::stat(pid).is_some_and(|s| s.lives()) {
            assert!(Instant::now() < until, "it still runs");
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = helper.kill();
        let _ = helper.wait();
    }

    #[test]
    fn past_the_bound_processes_that_started_none_end_newest_first_and_never_the_keeper() {
        // A helper of the test's own (the outer `sh`), its keeper (the inner `sh`), and three
        // sleepers beneath the keeper, started in turn.
        let mut helper = std::process::Command::new("sh")
            .args(["-c", "sh -c 'sleep 30 & sleep 30 & sleep 30 & wait' & wait"])
            .spawn()
            .unwrap();
        let helper_pid = helper.id() as i32;
        let live = || -> Vec<(i32, ProcStat)> {
            call_processes(helper_pid).into_iter().filter(|(_, s)| s.lives()).collect()
        };
        let until = Instant::now() + Duration::from_secs(10);
        while live().len() < 4 {
            assert!(Instant::now() < until, "the sleepers never started: {:?}", live());
            std::thread::sleep(Duration::from_millis(10));
        }
        let keeper = live().into_iter().find(|(_, s)| s.ppid == helper_pid).unwrap().0;
        let mut sleepers: Vec<(i32, ProcStat)> = live().into_iter().filter(|(p, _)| *p != keeper).collect();
        sleepers.sort_by_key(|(pid, s)| (s.start, *pid));
        // Within its bound, nothing ends; the next look comes soon.
        let mut watch = TaskWatch { bound: 4, next: Instant::now() };
        assert_eq!(watch.look(helper_pid), 0);
        assert!(watch.due() > Instant::now());
        assert_eq!(TaskWatch::new(4).look(helper_pid + 4_000_000), 0, "nothing beneath a pid not there");
        // Room for the keeper and one sleeper: two end, the keeper stays.
        let mut watch = TaskWatch { bound: 2, next: Instant::now() };
        assert_eq!(watch.look(helper_pid), 2);
        let until = Instant::now() + Duration::from_secs(10);
        while live().len() > 2 {
            assert!(Instant::now() < until, "two sleepers were not ended: {:?}", live());
            std::thread::sleep(Duration::from_millis(10));
        }
        let left: Vec<i32> = live().iter().map(|(p, _)| *p).collect();
        assert!(left.contains(&keeper), "the keeper was ended: {left:?}");
        assert!(left.contains(&sleepers[0].0), "the oldest stays: {left:?} of {sleepers:?}");
        let _ = helper.kill();
        let _ = helper.wait();
        for pid in left {
            // SAFETY: ends what is left of the processes this test started.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}
