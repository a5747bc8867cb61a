//! The helper's own threads that read the program's bytes, confined before they read one.
//!
//! The call's proxy parses what the program sends (a request line, headers, a body's framing)
//! and what the upstream answers. Those threads run in the helper, with every right of the
//! person who called lnk: a bug in that parsing would be a bug outside the sandbox. So each such
//! thread confines itself first, and the threads it starts inherit the same (Landlock and
//! seccomp apply to a thread and what it clones, not to the rest of the process):
//!
//! - **Landlock**, handling every file right with no rule, and both scopes: no file can be
//!   opened, read, written, made, removed or executed by any path (a descriptor the thread
//!   already holds stays usable); no signal leaves the thread's domain; no abstract Unix socket
//!   is reached.
//! - **seccomp**, allowing only what a relay of TCP sockets needs ([`relay_policy`]): reads and
//!   writes, TCP/IP sockets (`socket` for `AF_INET` and `AF_INET6` only), `connect`, `accept4`,
//!   socket options, waits, memory, futexes, time, and threads (`clone` with `CLONE_THREAD`
//!   only; `clone3`, whose flags a filter cannot read, answers `ENOSYS`, so glibc falls back to
//!   `clone`). Every other call answers `EPERM`: no `open`, no `execve`, no `ptrace`, no
//!   `kill`, no Unix or netlink socket, no `bind`.
//!
//! The held calls' server (see [`crate::notify`]) reads the program's bytes too (a path, an
//! address, an attribute's value) and confines itself the same way, to what it does
//! ([`confine_held_calls`]): no capability; Landlock with every file right handled and these
//! rules: the call's tmp folder (where it makes the call's shared memory), and making a socket
//! file beneath the write grants (the program's Unix sockets); both scopes; and a seccomp
//! filter of the calls it makes ([`held_calls_policy`]): files by descriptor and the metadata
//! calls it performs, TCP/IP, Unix and socket-diagnostics sockets, the held calls' own ioctls,
//! and no new process or thread, no `execve`, no `ptrace`, no signal.
//!
//! What it cannot take from a relay thread: the network. A relay must connect out, so a thread
//! taken over could connect where the proxy's policy would not; it could not read a file to
//! send, start a program, or touch another process. Names are resolved outside these threads
//! (the system resolver reads files and may ask a local daemon over a Unix socket): see
//! `proxy::server`'s resolver.
//!
//! What it trusts: the kernel, and lnk's BPF compiler ([`crate::bpf`], tested against an
//! independent oracle).

use landlock::{ABI, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetStatus, Scope};

use crate::bpf::{Answer, Check, Entry, Instruction, Policy};

/// The Landlock ABI the confinement is written for (6: file rights and both scopes), as the
/// program's sandbox requires it.
const ABI_PINNED: ABI = ABI::V6;

/// `ioctl`s a relay makes: `FIONBIO` (std's `set_nonblocking`, for a connect with a timeout)
/// and `FIOCLEX`.
const RELAY_IOCTLS: [u32; 2] = [0x5421, 0x5451];

/// A compiled filter for relay threads: made once, installed by each thread that confines
/// itself.
#[derive(Debug, Clone)]
pub struct RelayFilter(Vec<Instruction>);

impl RelayFilter {
    pub fn new() -> RelayFilter {
        RelayFilter(relay_policy().compile())
    }
}

impl Default for RelayFilter {
    fn default() -> RelayFilter {
        RelayFilter::new()
    }
}

/// Confines the calling thread, and every thread it starts from now on, to relaying TCP
/// sockets (see the module's documentation). Fails, changing nothing that matters, when the
/// kernel cannot: the caller then must not read the program's bytes in this thread.
pub fn confine_this_thread(filter: &RelayFilter) -> Result<(), String> {
    let status = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(ABI_PINNED))
        .and_then(|r| r.scope(Scope::from_all(ABI_PINNED)))
        .and_then(|r| r.create())
        .and_then(|r| r.restrict_self())
        .map_err(|e| format!("Landlock for the thread: {e}"))?;
    if status.ruleset != RulesetStatus::FullyEnforced || !status.no_new_privs {
        return Err("Landlock for the thread: not fully enforced".to_owned());
    }
    crate::sys::install_seccomp_filter(&filter.0).map_err(|e| format!("seccomp for the thread: {e}"))
}

/// Confines the calling thread to serving held calls (see the module's documentation): its
/// capabilities dropped, Landlock allowing files only beneath `tmp`, and the filter of
/// [`held_calls_policy`]. Fails when the kernel cannot: the caller then must not read the
/// program's bytes in this thread.
pub fn confine_held_calls(
    tmp: std::os::fd::BorrowedFd<'_>,
    fdinfo: Option<std::os::fd::BorrowedFd<'_>>,
    ptmx: Option<std::os::fd::BorrowedFd<'_>>,
    sockets_beneath: &[std::os::fd::BorrowedFd<'_>],
    own_world: bool,
) -> Result<(), String> {
    use landlock::{PathBeneath, RulesetCreatedAttr};
    // In the own world it connects copies of the program's sockets, to the world's abstract
    // names too, which the abstract scope would refuse (they are the program's domain's, not
    // its own); there it makes no socket of its own (see `held_calls_policy`), so it reaches
    // no abstract name of the host's.
    let scopes = match own_world {
        true => Scope::Signal.into(),
        false => Scope::from_all(ABI_PINNED),
    };
    let none = rustix::thread::CapabilitySet::empty();
    let sets = rustix::thread::CapabilitySets { effective: none, permitted: none, inheritable: none };
    rustix::thread::set_capabilities(None, sets).map_err(|e| format!("dropping capabilities: {e}"))?;
    let status = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(ABI_PINNED))
        .and_then(|r| r.scope(scopes))
        .and_then(|r| r.create())
        .and_then(|r| r.add_rule(PathBeneath::new(tmp, AccessFs::from_all(ABI_PINNED))))
        .and_then(|r| match fdinfo {
            // The helper's own `/proc/self/fdinfo`, read only (the inotify counts).
            Some(fdinfo) => r.add_rule(PathBeneath::new(fdinfo, AccessFs::ReadFile)),
            None => Ok(r),
        })
        .and_then(|r| match ptmx {
            // `/dev/ptmx`, to make the call's terminals (see `crate::notify::terminal`).
            Some(ptmx) => r.add_rule(PathBeneath::new(
                ptmx,
                AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::IoctlDev,
            )),
            None => Ok(r),
        })
        .and_then(|r| {
            // The write grants, where it binds the program's Unix sockets (making a socket file
            // only: see `crate::notify::unix_sockets`).
            sockets_beneath
                .iter()
                .try_fold(r, |r, folder| r.add_rule(PathBeneath::new(*folder, AccessFs::MakeSock)))
        })
        .and_then(|r| r.restrict_self())
        .map_err(|e| format!("Landlock for the thread: {e}"))?;
    if status.ruleset != RulesetStatus::FullyEnforced || !status.no_new_privs {
        return Err("Landlock for the thread: not fully enforced".to_owned());
    }
    let filter = held_calls_policy(own_world).compile();
    crate::sys::install_seccomp_filter(&filter).map_err(|e| format!("seccomp for the thread: {e}"))
}

/// `ioctl`s the held calls' server makes: the held calls' own (answer, put a descriptor, is it
/// still held), `FIONBIO`, and a terminal's number (`TIOCGPTN`, on a master it made).
const HELD_CALLS_IOCTLS: [u32; 5] = [
    0xc018_2101, // SECCOMP_IOCTL_NOTIF_SEND
    0x4018_2103, // SECCOMP_IOCTL_NOTIF_ADDFD
    0x4008_2102, // SECCOMP_IOCTL_NOTIF_ID_VALID
    0x5421,      // FIONBIO
    0x8004_5430, // TIOCGPTN
];

/// What the held calls' server may call; everything else answers `EPERM`. In the own world it
/// makes no socket (it acts on the program's, and on the world's socket diagnostics).
pub fn held_calls_policy(own_world: bool) -> Policy {
    let eperm = Answer::Errno(libc::EPERM as u16);
    let mut policy = Policy::allowing_only(eperm);
    let mut allowed = common_calls();
    allowed.extend([
        // Files: the program's memory and `/proc` files the receiver opened, the shared memory
        // folder (Landlock's one rule), the grants' descriptors (`O_PATH`), and the metadata
        // calls it performs on them.
        libc::SYS_pread64,
        libc::SYS_pwrite64,
        libc::SYS_lseek,
        libc::SYS_openat,
        libc::SYS_openat2,
        libc::SYS_fstat,
        libc::SYS_newfstatat,
        libc::SYS_statx,
        libc::SYS_readlinkat,
        libc::SYS_mkdirat,
        libc::SYS_linkat,
        libc::SYS_unlinkat,
        libc::SYS_fchmodat,
        crate::sys::SYS_FCHMODAT2,
        libc::SYS_fchownat,
        libc::SYS_utimensat,
        libc::SYS_setxattr,
        libc::SYS_removexattr,
        libc::SYS_getxattr,
        // The inotify instances and watches it makes for the program.
        libc::SYS_inotify_init1,
        libc::SYS_inotify_add_watch,
        libc::SYS_memfd_create,
        libc::SYS_epoll_create1,
        libc::SYS_epoll_ctl,
        libc::SYS_fstatfs,
        // The call's loopback and the kernel's socket diagnostics; the folder a Unix socket is
        // bound in (its own working folder).
        libc::SYS_fchdir,
        libc::SYS_umask,
        libc::SYS_bind,
        libc::SYS_listen,
        libc::SYS_getuid,
        libc::SYS_geteuid,
    ]);
    // rustix names a path from the working folder with the older calls.
    #[cfg(target_arch = "x86_64")]
    allowed.extend([libc::SYS_open, libc::SYS_stat, libc::SYS_lstat, libc::SYS_readlink]);
    for nr in allowed {
        policy.set(nr, Entry::Always(Answer::Allow));
    }
    let family = |f: i32| vec![Check::eq(0, f as u32)];
    let families = match own_world {
        true => Entry::Always(eperm),
        false => Entry::when(
            vec![
                family(libc::AF_INET),
                family(libc::AF_INET6),
                family(libc::AF_NETLINK),
                family(libc::AF_UNIX),
            ],
            Answer::Allow,
            eperm,
        ),
    };
    policy.set(libc::SYS_socket, families);
    policy.set(libc::SYS_clone3, Entry::Always(Answer::Errno(libc::ENOSYS as u16)));
    let ioctls = HELD_CALLS_IOCTLS.iter().map(|request| vec![Check::eq(1, *request)]).collect();
    policy.set(libc::SYS_ioctl, Entry::when(ioctls, Answer::Allow, eperm));
    policy
}

/// What every confined thread calls: bytes and sockets, memory, locks, time, and a thread's
/// own start and end.
fn common_calls() -> Vec<libc::c_long> {
    let mut calls = vec![
        libc::SYS_read,
        libc::SYS_write,
        libc::SYS_readv,
        libc::SYS_writev,
        libc::SYS_recvfrom,
        libc::SYS_sendto,
        libc::SYS_recvmsg,
        libc::SYS_sendmsg,
        libc::SYS_close,
        libc::SYS_shutdown,
        libc::SYS_connect,
        libc::SYS_setsockopt,
        libc::SYS_getsockopt,
        libc::SYS_getsockname,
        libc::SYS_getpeername,
        libc::SYS_fcntl,
        libc::SYS_ppoll,
        libc::SYS_mmap,
        libc::SYS_munmap,
        libc::SYS_mprotect,
        libc::SYS_madvise,
        libc::SYS_mremap,
        libc::SYS_brk,
        libc::SYS_futex,
        libc::SYS_getrandom,
        libc::SYS_clock_gettime,
        libc::SYS_clock_nanosleep,
        libc::SYS_nanosleep,
        libc::SYS_sched_yield,
        libc::SYS_set_robust_list,
        libc::SYS_rseq,
        libc::SYS_rt_sigprocmask,
        libc::SYS_sigaltstack,
        libc::SYS_gettid,
        libc::SYS_getpid,
        libc::SYS_restart_syscall,
        libc::SYS_rt_sigreturn,
        libc::SYS_exit,
        libc::SYS_exit_group,
    ];
    #[cfg(target_arch = "x86_64")]
    calls.extend([libc::SYS_poll]);
    calls
}

/// What a relay thread may call; everything else answers `EPERM`.
pub fn relay_policy() -> Policy {
    let eperm = Answer::Errno(libc::EPERM as u16);
    let mut policy = Policy::allowing_only(eperm);
    let mut allowed = common_calls();
    allowed.push(libc::SYS_accept4);
    for nr in allowed {
        policy.set(nr, Entry::Always(Answer::Allow));
    }
    let family = |f: i32| vec![Check::eq(0, f as u32)];
    policy.set(
        libc::SYS_socket,
        Entry::when(vec![family(libc::AF_INET), family(libc::AF_INET6)], Answer::Allow, eperm),
    );
    let thread = libc::CLONE_THREAD as u32;
    policy.set(
        libc::SYS_clone,
        Entry::when(vec![vec![Check::masked_eq(0, thread, thread)]], Answer::Allow, eperm),
    );
    policy.set(libc::SYS_clone3, Entry::Always(Answer::Errno(libc::ENOSYS as u16)));
    let ioctls = RELAY_IOCTLS.iter().map(|request| vec![Check::eq(1, *request)]).collect();
    policy.set(libc::SYS_ioctl, Entry::when(ioctls, Answer::Allow, eperm));
    policy
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bpf::tests::assert_compiles_faithfully;

    #[test]
    fn the_relay_policy_compiles_faithfully_and_refuses_what_a_relay_never_needs() {
        let policy = relay_policy();
        assert_compiles_faithfully(&policy);
        let arch = crate::bpf::AUDIT_ARCH;
        let nr = |n: libc::c_long| n as u32;
        let eperm = Answer::Errno(libc::EPERM as u16);
        for refused in [
            libc::SYS_openat,
            libc::SYS_execve,
            libc::SYS_ptrace,
            libc::SYS_kill,
            libc::SYS_bind,
            libc::SYS_unlinkat,
        ] {
            assert_eq!(policy.decide(arch, nr(refused), &[0; 6]), eperm, "{refused}");
        }
        let socket = |family: i32| policy.decide(arch, nr(libc::SYS_socket), &[family as u64, 1, 0, 0, 0, 0]);
        assert_eq!((socket(libc::AF_INET), socket(libc::AF_INET6)), (Answer::Allow, Answer::Allow));
        assert_eq!((socket(libc::AF_UNIX), socket(libc::AF_NETLINK)), (eperm, eperm));
        let clone = |flags: i32| policy.decide(arch, nr(libc::SYS_clone), &[flags as u64, 0, 0, 0, 0, 0]);
        assert_eq!(clone(libc::CLONE_THREAD | libc::CLONE_VM), Answer::Allow);
        assert_eq!(clone(libc::SIGCHLD), eperm, "a new process");
        assert_eq!(policy.decide(arch, nr(libc::SYS_read), &[0; 6]), Answer::Allow);
        assert_eq!(policy.decide(arch, nr(libc::SYS_clone3), &[0; 6]), Answer::Errno(libc::ENOSYS as u16));
        assert_eq!(policy.decide(arch, 1000, &[0; 6]), eperm, "a number no entry names");
    }

    #[test]
    fn a_confined_thread_opens_nothing_and_starts_no_process_while_the_others_can() {
        let filter = RelayFilter::new();
        let confined = std::thread::spawn(move || {
            confine_this_thread(&filter).unwrap();
            let opened = std::fs::File::open("/etc/passwd").map(drop).map_err(|e| e.raw_os_error());
            let spawned =
                std::process::Command::new("/bin/true").status().map(drop).map_err(|e| e.raw_os_error());
            // A thread it starts is as confined.
            let child = std::thread::spawn(|| {
                std::fs::File::open("/etc/passwd").map(drop).map_err(|e| e.raw_os_error())
            })
            .join()
            .unwrap();
            let socket = std::net::TcpListener::bind("127.0.0.1:0").map(drop).map_err(|e| e.raw_os_error());
            (opened, spawned, child, socket)
        })
        .join()
        .unwrap();
        assert_eq!(confined.0, Err(Some(libc::EPERM)), "open");
        assert!(confined.1.is_err(), "a process started: {:?}", confined.1);
        assert_eq!(confined.2, Err(Some(libc::EPERM)), "open from a thread it started");
        assert_eq!(confined.3, Err(Some(libc::EPERM)), "bind");
        // The rest of the process is untouched.
        assert!(std::fs::File::open("/etc/passwd").is_ok());
    }
}
