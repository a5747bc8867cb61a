//! The choices a call's seccomp filter is built from ([`super::seccomp::build`]): what the
//! world the call runs in answers itself (its namespaces), what the Landlock-only mode's helper
//! holds and performs, and what is refused outright. One value per concern, so a reviewer reads
//! the policy for a mode in one place ([`super`] chooses them) and the filter for each in
//! [`super::seccomp`].
//!
//! What it trusts: nothing; it only names choices.

/// How the metadata calls ([`NOTIFIED_METADATA`](super::seccomp::NOTIFIED_METADATA), [`UNHELD_METADATA`](super::seccomp::UNHELD_METADATA)) are answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metadata {
    /// Run: a read-only mount answers them outside the write grants (the own world), or the
    /// program is lnk's own file tool.
    Allowed,
    /// Refused everywhere.
    Refused,
    /// Held for the helper ([`NOTIFIED_METADATA`](super::seccomp::NOTIFIED_METADATA); the rest refused), which performs them
    /// beneath the write grants and refuses them elsewhere: the Landlock-only mode. The calls
    /// that may name a POSIX shared memory object or semaphore are held there too
    /// ([`SHM_OPEN_FLAGS`](super::seccomp::SHM_OPEN_FLAGS), `link`, `unlink`: see [`crate::notify::shm`]).
    Notified,
}

/// Which sockets the program may make, and how its connects are answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Network {
    /// No socket at all (only `socketpair`).
    None,
    /// `AF_INET`/`AF_INET6` TCP and UDP sockets, in a network namespace of the call's own.
    Namespace,
    /// The same, and Unix stream and seqpacket sockets, each `connect` held for the helper,
    /// which makes it on a copy of the program's socket and lets a Unix one reach only the
    /// call's own sockets (see [`crate::notify::world_connects`]). Needs the filter's listener.
    NamespaceHeld,
    /// `AF_INET`/`AF_INET6` TCP sockets on the host's network, each `connect`, `bind`,
    /// `listen` and `getsockname` held for the helper, which makes connections and listeners on
    /// the call's own loopback (see [`crate::proxy::loopback`]). Needs the filter's listener
    /// ([`Metadata::Notified`]).
    Held,
}

/// What the filter must allow beyond the base.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeccompPolicy {
    /// Sockets: see [`Network`].
    pub network: Network,
    /// The metadata calls.
    pub metadata: Metadata,
    /// The [`IPC`](super::seccomp::IPC) calls: only with an IPC namespace of the call's own.
    pub ipc: bool,
    /// `openat2`, whose mode lies in memory a filter cannot read: only for lnk's own file tool,
    /// which never sets one. Other programs get `ENOSYS` and fall back to `openat` (glibc never
    /// uses it for `open`; Go's `os.Root` and others fall back on `ENOSYS`).
    pub openat2: bool,
    /// The [`SESSIONS`](super::seccomp::SESSIONS) calls.
    pub sessions: Sessions,
    /// How the call's processes and inotify use are held to its appetite (see
    /// [`super::appetite`]).
    pub counting: Counting,
    /// Which processes the calls that take a pid may name.
    pub pids: Pids,
    /// Which memfds may be made.
    pub memfd: Memfd,
}

/// Which processes [`SELF_ONLY`](super::seccomp::SELF_ONLY), `setpriority` and `ioprio_set` may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pids {
    /// The caller, by 0.
    Caller,
    /// Any pid of the call's own pid namespace but 1 (every process there is the call's but its
    /// pid 1, lnk's own).
    Namespace,
    /// The caller, by 0; another number held for the helper, which lets it go on only when it
    /// is the caller's own (its process or its thread), and answers `ESRCH` where no process is
    /// and `EPERM` where another's is: the Landlock-only mode.
    Held,
}

/// Which memfds `memfd_create` may make. None executable: Landlock does not govern a memfd.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Memfd {
    /// Only one sealed non-executable by the caller (`MFD_NOEXEC_SEAL`), and no huge-page one
    /// (hugetlbfs checks no exec seal on a `chmod`).
    Sealed,
    /// Any but `MFD_EXEC` and a huge-page one: the call's pid namespace makes every memfd
    /// non-executable (`vm.memfd_noexec`, Linux 6.3).
    Namespace,
    /// One sealed non-executable runs; any other is held for the helper, which makes it sealed
    /// non-executable and refuses `MFD_EXEC`, named: the Landlock-only mode.
    Held,
}

/// How the calls that make processes, threads and inotify instances and watches are answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counting {
    /// Run: the kernel counts them in the call's own namespaces.
    Kernel,
    /// Run, but `inotify_init` refused (`EMFILE`): no namespace of the call's own counts its
    /// instances and watches, and no helper does (root's own world without a user namespace,
    /// lnk's own file tool without the own world).
    InotifyRefused,
    /// The inotify calls held for the helper, which counts the call's own and answers past its
    /// bound as the kernel does past a limit (`EMFILE`, `ENOSPC`): the Landlock-only mode. (The
    /// calls that make processes are never held: a held call interrupted by a signal fails with
    /// `EINTR` where the program has no `SA_RESTART`, and a `fork` never does so natively; dash
    /// then says "Cannot fork". See [`super::appetite`] for how processes are bounded there.)
    Held,
}

/// How the [`SESSIONS`](super::seccomp::SESSIONS) calls (`setsid`, `setpgid`) are answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sessions {
    /// Run: in a pid namespace of the call's own (see [`crate::lifetime`]: the keeper's group
    /// still holds the namespace's pid 1, whose end ends them all).
    Allowed,
    /// Refused with `EPERM`.
    Refused,
    /// Held for the helper, which notes the leader of each new group (so that the call's end
    /// ends that group too) and lets the call go on: the Landlock-only mode.
    Held,
}

/// Every policy lnk can install, for the tests.
#[cfg(test)]
pub(super) fn every_policy() -> Vec<SeccompPolicy> {
    let mut all = Vec::new();
    for network in [Network::None, Network::Namespace, Network::NamespaceHeld, Network::Held] {
        for metadata in [Metadata::Allowed, Metadata::Refused, Metadata::Notified] {
            for bits in 0..4u8 {
                for sessions in [Sessions::Allowed, Sessions::Refused, Sessions::Held] {
                    // Counting other than by the kernel only where lnk installs it: held with the
                    // held calls, inotify refused where metadata is allowed (a world without a user
                    // namespace, the file tool).
                    let countings = match (metadata, sessions) {
                        (Metadata::Notified, Sessions::Held) => &[Counting::Kernel, Counting::Held][..],
                        (Metadata::Allowed, _) => &[Counting::Kernel, Counting::InotifyRefused][..],
                        _ => &[Counting::Kernel][..],
                    };
                    // The pids and memfds a program may name and make follow the world: its own pid
                    // namespace (where `vm.memfd_noexec` may be missing), the helper, or neither.
                    let own = match sessions {
                        Sessions::Allowed => {
                            &[(Pids::Namespace, Memfd::Namespace), (Pids::Namespace, Memfd::Sealed)][..]
                        }
                        Sessions::Held => &[(Pids::Held, Memfd::Held)][..],
                        Sessions::Refused => &[(Pids::Caller, Memfd::Sealed)][..],
                    };
                    for &counting in countings {
                        for &(pids, memfd) in own {
                            all.push(SeccompPolicy {
                                network,
                                metadata,
                                ipc: bits & 1 != 0,
                                openat2: bits & 2 != 0,
                                sessions,
                                counting,
                                pids,
                                memfd,
                            });
                        }
                    }
                }
            }
        }
    }
    all
}
