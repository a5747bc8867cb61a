//! The call's appetite in the Landlock-only mode, counted by the helper: its processes and
//! threads, its inotify instances and watches (see [`crate::sandbox::appetite`] for why, and
//! for the own world, where the kernel counts them in the call's namespaces).
//!
//! Without a namespace of the call's own the kernel counts these per user only: the call's
//! with every other process of the person's. So the calls that make them are held (`clone`,
//! `fork`, `vfork`, `inotify_init`, `inotify_init1`, `inotify_add_watch`), and the receiver
//! answers each from its number alone: it goes on into the kernel while the call's count is
//! below its bound, and is refused past it as the kernel refuses past a limit (`EAGAIN`,
//! `EMFILE`, `ENOSPC`). The person's own processes are not held and not counted: a fork loop
//! in the call stops at its bound while theirs still fork.
//!
//! How it counts: each call let go on adds one to a rough count, which never notices what ended
//! (a process that exited, an instance closed). When the rough count reaches the bound, the
//! call's own are counted exactly from `/proc`, and the rough count starts again from there:
//! the tasks of every process beneath the helper (all the call's: the helper and the keeper are
//! child subreapers, so nothing of it is reparented past them), and the inotify instances and
//! watches their descriptor tables hold. An instance shared by several of the call's processes
//! (inherited across a `fork`) is counted once per process holding it, so the count errs high:
//! a call near its bound may be refused early, never let past it.
//!
//! Trusted with: that a Landlock-only call takes no more of the person's processes and inotify
//! counters than its appetite: a bug here could let a fork loop freeze the person's machine.
//! What it trusts: the kernel's notification (the call's number) and `/proc` (each process's
//! `stat`, descriptor table and `fdinfo`, all the kernel's text; the one field a program names,
//! its command, is skipped by position).

use rustix::io::Errno;

use super::request::Counted;
use crate::sandbox_file::Appetite;

/// The call's rough counts, and its bounds.
pub struct Counts {
    bounds: Appetite,
    tasks: u32,
    instances: u32,
    watches: u32,
}

impl Counts {
    /// Counts starting from the call's first two tasks (the keeper and the program's first
    /// process, made before any call was held).
    pub fn new(bounds: Appetite) -> Counts {
        Counts { bounds, tasks: 2, instances: 0, watches: 0 }
    }

    /// Whether one more `what` keeps the call within its bound: `Ok` (and it is counted), or the
    /// error the kernel answers past its own limit.
    pub fn admit(&mut self, what: Counted) -> Result<(), Errno> {
        let (bound, errno) = match what {
            Counted::Task => (self.bounds.processes, Errno::AGAIN),
            Counted::Instance => (self.bounds.inotify_instances, Errno::MFILE),
            Counted::Watch => (self.bounds.inotify_watches, Errno::NOSPC),
        };
        if self.count(what) >= bound {
            self.recount(what);
        }
        let count = self.count_mut(what);
        if *count >= bound {
            return Err(errno);
        }
        *count += 1;
        Ok(())
    }

    fn count(&mut self, what: Counted) -> u32 {
        *self.count_mut(what)
    }

    fn count_mut(&mut self, what: Counted) -> &mut u32 {
        match what {
            Counted::Task => &mut self.tasks,
            Counted::Instance => &mut self.instances,
            Counted::Watch => &mut self.watches,
        }
    }

    /// Counts the call's own exactly, from `/proc`.
    fn recount(&mut self, what: Counted) {
        let helper = rustix::process::getpid().as_raw_nonzero().get();
        let call = crate::procfs::descendants(helper, &crate::procfs::all());
        match what {
            Counted::Task => {
                self.tasks = call.iter().map(|(_, stat)| stat.threads.max(1)).fold(0u32, u32::saturating_add);
            }
            Counted::Instance | Counted::Watch => {
                let (instances, watches) = call
                    .iter()
                    .map(|(pid, _)| inotify_of(*pid))
                    .fold((0u32, 0u32), |a, b| (a.0.saturating_add(b.0), a.1.saturating_add(b.1)));
                (self.instances, self.watches) = (instances, watches);
            }
        }
    }
}

/// The inotify instances process `pid`'s descriptor table holds, and their watches.
fn inotify_of(pid: i32) -> (u32, u32) {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return (0, 0) };
    let mut instances = 0u32;
    let mut watches = 0u32;
    for fd in fds.flatten() {
        let is_inotify =
            std::fs::read_link(fd.path()).is_ok_and(|target| target.as_os_str() == "anon_inode:inotify");
        if !is_inotify {
            continue;
        }
        instances = instances.saturating_add(1);
        let info = std::fs::read(format!("/proc/{pid}/fdinfo/{}", fd.file_name().to_string_lossy()));
        let lines = info
            .map_or(0, |text| text.split(|b| *b == b'\n').filter(|l| l.starts_with(b"inotify wd:")).count());
        watches = watches.saturating_add(u32::try_from(lines).unwrap_or(u32::MAX));
    }
    (instances, watches)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_at_its_bound_is_recounted_before_it_refuses() {
        let bounds = Appetite { processes: 10_000, inotify_instances: 2, inotify_watches: 1_000_000 };
        let mut counts = Counts::new(bounds);
        // This process holds one instance; its children none. Rough counts reach the bound at
        // once; the exact count (this test process is not a descendant of itself: none of
        // its own) lets two more go, then refuses.
        let held = rustix::fs::inotify::init(rustix::fs::inotify::CreateFlags::CLOEXEC).unwrap();
        assert_eq!(counts.admit(Counted::Instance), Ok(()));
        assert_eq!(counts.admit(Counted::Instance), Ok(()));
        assert_eq!(counts.instances, 2);
        assert_eq!(counts.admit(Counted::Instance), Ok(()), "recounted: the call holds none");
        assert_eq!(counts.instances, 1);
        assert_eq!(counts.admit(Counted::Instance), Ok(()));
        assert_eq!(counts.admit(Counted::Instance), Ok(()), "recounted again");
        drop(held);
        // A child holding one is counted.
        let me = rustix::process::getpid().as_raw_nonzero().get();
        let mut child = std::process::Command::new("python3")
            .args([
                "-c",
                "import ctypes, time; ctypes.CDLL(None).inotify_init(); print(flush=True); time.sleep(30)",
            ])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.as_mut().unwrap()), &mut line)
            .unwrap();
        let mut exact = Counts::new(Appetite { inotify_instances: 1, ..bounds });
        exact.instances = 1;
        assert_eq!(exact.admit(Counted::Instance), Err(Errno::MFILE), "the child's one: at the bound");
        assert!(
            crate::procfs::descendants(me, &crate::procfs::all())
                .iter()
                .any(|(p, _)| *p == child.id() as i32)
        );
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
