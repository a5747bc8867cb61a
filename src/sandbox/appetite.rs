//! A call's appetite for what the kernel counts per user: its processes and threads, its inotify
//! instances and watches, its queued signals and message queue bytes. Every other process of
//! the person's draws on the same counters, so a call that took them all (a fork loop, a
//! watcher per folder) would harm the person, not itself: the call gets a share, the
//! [`Appetite`] its sandbox file sets (`[tool.run] processes`, `inotify_instances`,
//! `inotify_watches`), and fixed shares of the rest ([`SIGNALS_QUEUED`], [`QUEUE_BYTES`]).
//!
//! How each mode holds a call to it:
//!
//! - **The own world**, by the kernel. The call's pid namespace gets a `pid_max` of its own
//!   ([`PID_MAX_MARGIN`] above the bound, its numbers starting there: Linux 6.14 made it a
//!   namespace's, and a root call needs it, since `RLIMIT_NPROC` never limits root); the program's `RLIMIT_NPROC` counts the
//!   tasks of its user in the call's user namespace, so only the call's (an ordinary user's
//!   bound, exact). The call's user namespace gets `user.max_inotify_instances` and
//!   `user.max_inotify_watches` of its own; what it uses counts against the person's limits
//!   too, never more than its own. Root's own world without a user namespace has no
//!   namespace's counters to set, and writing the host's would change them for everyone: there
//!   `inotify_init` is refused (`EMFILE`).
//! - **The Landlock-only mode**, by the helper: no namespace separates the call's counts from
//!   the person's. Its main thread watches the call's tasks and ends its newest processes past
//!   the bound, with an ordinary user's `RLIMIT_NPROC` (the machine's tasks at the start plus the
//!   bound) as a backstop ([`crate::notify::counts`]); the inotify calls are held, and the
//!   receiver makes the instances and counts the call's own ([`crate::notify::inotify`]).
//! - **Both**: `RLIMIT_SIGPENDING` and `RLIMIT_MSGQUEUE`, soft and hard, so the program cannot
//!   raise them again. A signal queued to one of the call's processes is checked against that
//!   process's limit; a message queue's bytes against its maker's.
//!
//! Not bounded here, and why (SECURITY.md): memory and CPU (a cgroup's to bound, which an
//! ordinary user seldom has), disk space beneath the write grants, epoll watches and pipe
//! buffers (per user, in no namespace; each costs memory, which is the real bound).
//!
//! Trusted with: that a call cannot take the person's shared counters: a bug here could let one
//! call starve every other program of the person's, or (worse) change a limit of the host's.
//! What it trusts: the kernel's version for where `pid_max` lives, and its namespaced sysctls.

use crate::sandbox_file::Appetite;

/// How far above the processes bound a call's own `pid_max` is: the kernel keeps the first 300
/// pids of a namespace for its first use (after the numbers wrap, new ones start at 300), and
/// the world's pid 1 starts its numbers there too (`ns_last_pid`), so the call's tasks have
/// exactly the bound's numbers, before a wrap and after (found in review: from pid 2, a root
/// call had 299 more until its first wrap).
pub const PID_MAX_MARGIN: u32 = 300;

/// Signals queued at once to the call's processes (`RLIMIT_SIGPENDING`), at most.
pub const SIGNALS_QUEUED: u64 = 4096;

/// Bytes of POSIX message queues the call makes (`RLIMIT_MSGQUEUE`), at most: a quarter of
/// Linux's default per user.
pub const QUEUE_BYTES: u64 = 204_800;

/// Whether this kernel keeps `pid_max` per pid namespace (Linux 6.14), from its release.
pub fn pid_max_per_namespace() -> bool {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .is_ok_and(|release| release_at_least(&release, (6, 14)))
}

/// Whether a kernel release (`6.18.44-generic`) is at least `want`.
fn release_at_least(release: &str, want: (u32, u32)) -> bool {
    let mut parts = release.trim().split(|c: char| !c.is_ascii_digit());
    let major = parts.next().and_then(|p| p.parse::<u32>().ok());
    let minor = parts.next().and_then(|p| p.parse::<u32>().ok());
    matches!((major, minor), (Some(major), Some(minor)) if (major, minor) >= want)
}

/// How the own world's pid namespace keeps every memfd of the call's non-executable
/// (Landlock does not govern a memfd's inode, which lies on an internal mount).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorldMemfds {
    /// The world's pid 1 writes `vm.memfd_noexec` 2 in the call's pid namespace: lnk runs as the
    /// host's root, the only user the kernel lets write it (its permission check is the global
    /// root's, even in a user namespace of the call's own; root in another's user namespace may
    /// not: found when the suite ran as an ordinary user's `unshare -r`).
    Written,
    /// The host's value is already 1 or 2, which a new pid namespace inherits and cannot lower:
    /// every plain memfd is made sealed non-executable (the filter refuses `MFD_EXEC`).
    Inherited,
    /// Neither (an ordinary user on a host whose value is 0, or a kernel before 6.3): a plain
    /// memfd could be executed, so only one asked sealed (`MFD_NOEXEC_SEAL`) is made; listed
    /// among what the call lacks.
    SealedOnly,
}

/// What this host gives the own world's memfds (see [`WorldMemfds`]).
pub fn world_memfds() -> WorldMemfds {
    const PATH: &str = "/proc/sys/vm/memfd_noexec";
    let Ok(value) = std::fs::read(PATH) else {
        return WorldMemfds::SealedOnly;
    };
    // Asked of the kernel's own check (the global root's), not of the uid: root in a user
    // namespace of someone else's (a container, `unshare -r`) is uid 0 and may not write it.
    let writable = rustix::fs::accessat(
        rustix::fs::CWD,
        PATH,
        rustix::fs::Access::WRITE_OK,
        rustix::fs::AtFlags::EACCESS,
    )
    .is_ok();
    match (writable, value.trim_ascii()) {
        (true, _) => WorldMemfds::Written,
        (false, b"1" | b"2") => WorldMemfds::Inherited,
        (false, _) => WorldMemfds::SealedOnly,
    }
}

/// What the own world lacks where its memfds are [`WorldMemfds::SealedOnly`].
pub const SEALED_MEMFDS_ONLY: &str = "plain memfds (memfd_create is refused unless MFD_NOEXEC_SEAL is asked: the host's vm.memfd_noexec is 0 and only the host's root may raise a pid namespace's, so a plain one could be executed past commands)";

/// The own world's sysctls for `appetite`, written by the world's pid 1 while it still holds
/// capabilities in the call's namespaces, after its `/proc` is mounted: `pid_max` where the
/// kernel keeps it per pid namespace (else it is the host's: never written), the inotify
/// limits where the call has a user namespace of its own (else they are the host's: never
/// written); and `vm.memfd_noexec` 2 where lnk may write it ([`WorldMemfds::Written`]).
#[derive(Debug, Clone)]
pub struct WorldLimits {
    pid_max: Option<std::ffi::CString>,
    inotify: Option<(std::ffi::CString, std::ffi::CString)>,
    memfds: WorldMemfds,
}

impl WorldLimits {
    pub fn new(
        appetite: &Appetite,
        per_namespace_pid_max: bool,
        user_namespace: bool,
        memfds: WorldMemfds,
    ) -> WorldLimits {
        let number = |n: u32| std::ffi::CString::new(n.to_string()).unwrap_or_default();
        WorldLimits {
            pid_max: per_namespace_pid_max.then(|| number(appetite.processes.saturating_add(PID_MAX_MARGIN))),
            inotify: user_namespace
                .then(|| (number(appetite.inotify_instances), number(appetite.inotify_watches))),
            memfds,
        }
    }

    /// How the world keeps its memfds non-executable.
    pub fn memfds(&self) -> WorldMemfds {
        self.memfds
    }

    /// Writes them (see [`WorldLimits`]), in the call's pid and user namespaces.
    pub fn write(&self) -> Result<(), &'static str> {
        let write = |path: &std::ffi::CStr, value: &std::ffi::CStr, why: &'static str| {
            let file = rustix::fs::open(
                path,
                rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::CLOEXEC,
                rustix::fs::Mode::empty(),
            )
            .map_err(|_| why)?;
            match rustix::io::write(&file, value.to_bytes()) {
                Ok(n) if n == value.to_bytes().len() => Ok(()),
                _ => Err(why),
            }
        };
        if let Some(pid_max) = &self.pid_max {
            let why = "cannot bound the call's processes (its pid namespace's pid_max)";
            write(c"/proc/sys/kernel/pid_max", pid_max, why)?;
            // The next pid is the first past the kept ones (see `PID_MAX_MARGIN`).
            write(c"/proc/sys/kernel/ns_last_pid", c"299", why)?;
        }
        if let Some((instances, watches)) = &self.inotify {
            let why = "cannot bound the call's inotify instances and watches (its user namespace's limits)";
            write(c"/proc/sys/user/max_inotify_instances", instances, why)?;
            write(c"/proc/sys/user/max_inotify_watches", watches, why)?;
        }
        if self.memfds == WorldMemfds::Written {
            // The filter lets plain memfds be made on the strength of this: fail, never run
            // without it.
            write(
                c"/proc/sys/vm/memfd_noexec",
                c"2",
                "cannot make the call's memfds non-executable (vm.memfd_noexec)",
            )?;
        }
        Ok(())
    }
}

/// Sets the program's limits for `appetite` (soft and hard, which it cannot raise again):
/// `RLIMIT_NPROC` (in the own world counted in the call's user namespace, so the bound exactly;
/// without it, for an ordinary user, counted with every task of the person's, so the machine's
/// tasks now plus the bound, a backstop to the helper's watch: see [`crate::notify::counts`]),
/// and in both modes [`SIGNALS_QUEUED`] and [`QUEUE_BYTES`], each never above what it was.
pub fn set_program_limits(appetite: &Appetite, own_world: bool) -> Result<(), &'static str> {
    use rustix::process::{Resource, Rlimit};
    let lower = |resource: Resource, to: u64, why: &'static str| {
        let now = rustix::process::getrlimit(resource);
        let cap = |limit: Option<u64>| Some(limit.map_or(to, |l| l.min(to)));
        let limit = Rlimit { current: cap(now.current).min(cap(now.maximum)), maximum: cap(now.maximum) };
        rustix::process::setrlimit(resource, limit).map_err(|_| why)
    };
    let why = "cannot bound the call's processes (RLIMIT_NPROC)";
    match own_world {
        true => lower(Resource::Nproc, u64::from(appetite.processes), why)?,
        // Root is never held to it; an ordinary user's every task counts.
        false if !rustix::process::geteuid().is_root() => {
            let now = machine_tasks().ok_or(why)?;
            lower(Resource::Nproc, now + u64::from(appetite.processes), why)?
        }
        false => {}
    }
    lower(
        Resource::Sigpending,
        SIGNALS_QUEUED,
        "cannot bound the call's queued signals (RLIMIT_SIGPENDING)",
    )?;
    lower(Resource::Msgqueue, QUEUE_BYTES, "cannot bound the call's message queues (RLIMIT_MSGQUEUE)")
}

/// The machine's tasks now, every user's (`/proc/loadavg`'s fourth field, `running/all`): one
/// read, where counting the person's own would read every process.
fn machine_tasks() -> Option<u64> {
    let file = rustix::fs::open(
        c"/proc/loadavg",
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .ok()?;
    let mut text = [0u8; 128];
    let n = rustix::io::read(&file, &mut text).ok()?;
    tasks_in_loadavg(&text[..n])
}

fn tasks_in_loadavg(text: &[u8]) -> Option<u64> {
    let field = std::str::from_utf8(text).ok()?.split_whitespace().nth(3)?;
    field.split_once('/')?.1.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_machines_tasks_are_read_from_loadavg() {
        assert_eq!(tasks_in_loadavg(b"0.02 0.44 4.87 1/113 19817\n"), Some(113));
        assert_eq!(tasks_in_loadavg(b"0.02 0.44"), None);
        assert!(machine_tasks().is_some_and(|n| n > 0));
    }

    #[test]
    fn a_release_is_compared_by_major_and_minor() {
        assert!(release_at_least("6.18.44-fc-v1272\n", (6, 14)));
        assert!(release_at_least("6.14.0", (6, 14)));
        assert!(release_at_least("7.0-rc1", (6, 14)));
        assert!(!release_at_least("6.13.12-arch1-1", (6, 14)));
        assert!(!release_at_least("6.12.0", (6, 14)));
        assert!(!release_at_least("", (6, 14)));
        assert!(!release_at_least("six", (6, 14)));
    }

    #[test]
    fn a_call_gets_its_own_pid_max_only_where_it_is_its_own() {
        let appetite = Appetite::DEFAULT;
        let both = WorldLimits::new(&appetite, true, true, WorldMemfds::Written);
        assert_eq!(both.pid_max.as_deref(), Some(c"1324"));
        assert!(both.inotify.is_some());
        let neither = WorldLimits::new(&appetite, false, false, WorldMemfds::SealedOnly);
        assert!(neither.pid_max.is_none() && neither.inotify.is_none(), "the host's are never written");
    }
}
