//! The seccomp filter every sandboxed program runs under.
//!
//! Landlock decides *which files and sockets* a program reaches; seccomp removes the kernel
//! interfaces that would go around it or that a program in the sandbox has no business with:
//!
//! - `io_uring_*`: it performs opens and connects without the system calls filtered here.
//! - `ptrace`, `process_vm_readv`/`writev`: reading or steering another process.
//! - `bpf`, `userfaultfd`, `keyctl`, `add_key`, `request_key`, `perf_event_open`: large kernel
//!   attack surface no tool needs.
//! - `fanotify_init`: an unprivileged fanotify group counts against the person's 128 (per user,
//!   beside their inotify), and nothing counts a call's share of it; tools watch with inotify.
//! - `mount` and the new mount API, `pivot_root`, `chroot`, `unshare`, `setns`, and `clone` with
//!   any namespace flag (`clone3` answers `ENOSYS`, so libc falls back to `clone`, whose flags a
//!   filter can read): no new namespaces, so no way to look different from the outside.
//! - `open_by_handle_at`, `name_to_handle_at`: opening files by handle skips path checks.
//! - `kexec_*`, module loading, `reboot`, `swapon`/`swapoff`, `acct`, `quotactl`.
//! - `setsid` and `setpgid` run in the own world, whose pid namespace's end ends every process
//!   of the call whatever its group. In the Landlock-only mode they are held: the helper notes
//!   the leader of each new group, so that the call's end, a stop and the sweep end that group
//!   too, and lets the call go on (see [`crate::notify`] and [`crate::lifetime`]). Where no
//!   listener can hold them (the file tool's filter), they are refused.
//! - Acting on another process's limits, priority, scheduling, memory or descriptors:
//!   `prlimit64`, `sched_setaffinity`, `sched_setscheduler`, `sched_setparam`, `sched_setattr`,
//!   `migrate_pages` and `move_pages`, and `setpriority` and `ioprio_set` for a process
//!   (`PRIO_PROCESS`/`IOPRIO_WHO_PROCESS`; never a group or a user), only on the call's own
//!   ([`Pids`]): any pid of the call's own pid namespace, or, without one, the caller itself (by
//!   0 or its own number, which the helper checks: see [`crate::notify::receiver`]);
//!   `process_madvise`, `process_mrelease`, `kcmp` and `pidfd_getfd` entirely. Landlock's scopes
//!   cover signals, not these: a program set `RLIMIT_CPU` on its harness (same uid) and killed it.
//! - System V IPC (`shm*`, `sem*`, `msg*`) and POSIX message queues (`mq_*`), unless the call has
//!   an IPC namespace of its own: otherwise they reach the host's segments and queues, which
//!   Landlock does not govern.
//! - Changing a file's mode, owner, times or extended attributes (`chmod` and `chown` families,
//!   `utime`, `utimes`, `futimesat`, `utimensat`, the `setxattr` and `removexattr` families),
//!   unless the call's own world answers them outside the write grants with a read-only mount
//!   (see [`super::world`]), or the program is lnk's own file tool (whose code changes only what
//!   it wrote beneath a write grant). Landlock does not govern them.
//! - `send*` with `MSG_FASTOPEN`: it connects without `connect`, so Landlock's TCP rule does
//!   not see it.
//! - An executable memfd ([`Memfd`]): Landlock does not govern a memfd (its inode is on an
//!   internal mount), so an executable one would run code no `commands` entry allowed. The own
//!   world's pid namespace makes every memfd non-executable (`vm.memfd_noexec` 2), so only
//!   `MFD_EXEC` is refused; without it the helper makes a plain one sealed non-executable
//!   ([`crate::notify`]); where neither can, only one sealed so (`MFD_NOEXEC_SEAL`) is made.
//! - `ioctl(TIOCSTI)` and `ioctl(TIOCLINUX)`, compared on the low 32 bits (the kernel's `cmd` is
//!   an `unsigned int`; a 64-bit compare is bypassed by setting high bits, CVE-2019-10063).
//! - `socket` entirely without a network namespace of the call's own: no TCP, no UDP (no DNS
//!   covert channel), no netlink, no packet sockets, and no pathname or abstract Unix socket of
//!   the host (Landlock before ABI 9 cannot stop a `connect` to a socket file in a readable
//!   folder). With one (the own world), TCP and UDP over IPv4 and IPv6 only: its loopback is the
//!   call's own, and its only way out the proxy's door. Without one (the Landlock-only mode):
//!   TCP sockets only, each `connect`, `bind`, `listen` and `getsockname` held for the helper,
//!   which makes connections (to the call's proxy with `[internet]`, or the program's own
//!   servers) and listeners on the call's own loopback ([`crate::proxy::loopback`]), so
//!   nothing binds on the host's network; and Unix stream and seqpacket sockets, whose `bind`,
//!   `listen` and `connect` the helper performs on a copy, reaching only the sockets the call
//!   bound ([`crate::notify::unix_sockets`]). The own world refuses Unix sockets: its connects
//!   are not held. `socketpair` is allowed for `AF_UNIX` stream and seqpacket sockets only,
//!   which can never reach another socket (a datagram pair could `sendto` a host socket by
//!   path), and so is a Unix datagram socket nowhere.
//!
//! One filter is installed, compiled by [`crate::bpf`]: it kills the process for a call made
//! through another architecture's table (`int 0x80`) or with the x32 bit set, answers `clone3`
//! with `ENOSYS` (its flags are in memory, which a filter cannot read, so libc falls back to
//! `clone`, whose flags it can), and refuses the calls above with `EPERM`.
//!
//! Trusted with: which kernel interfaces a program can use around Landlock: one left open here
//! could let it escape the file rules (`io_uring`, a new namespace, a `chmod` outside the write
//! grants) or reach the host's processes. What it trusts: [`crate::bpf`] to compile the policy as
//! written and the kernel to run it; the filter reads the call's number and register arguments
//! only, never the program's memory.

#[cfg(test)]
pub(super) use super::seccomp_policy::every_policy;
pub use super::seccomp_policy::{Counting, Memfd, Metadata, Network, Pids, SeccompPolicy, Sessions};
use crate::bpf::{Answer, Check, Entry, Instruction, Policy};
pub use crate::notify::request::{SELF_ONLY, TIOCGPTPEER};
use crate::sys::{SYS_FCHMODAT2, SYS_REMOVEXATTRAT, SYS_SETXATTRAT};

const TIOCSTI: u32 = 0x5412;
const MFD_NOEXEC_SEAL: u32 = 0x0008;
const MFD_EXEC: u32 = 0x0010;
const MFD_HUGETLB: u32 = 0x0004;
const TIOCLINUX: u32 = 0x541c;
const CLONE_NAMESPACE_FLAGS: [u32; 7] = [
    libc::CLONE_NEWNS as u32,
    libc::CLONE_NEWCGROUP as u32,
    libc::CLONE_NEWUTS as u32,
    libc::CLONE_NEWIPC as u32,
    libc::CLONE_NEWUSER as u32,
    libc::CLONE_NEWPID as u32,
    libc::CLONE_NEWNET as u32,
];

const SYS_OPEN_TREE_ATTR: libc::c_long = 467;
/// `SO_PASSPIDFD` (Linux 6.5), which libc may not name.
const SO_PASSPIDFD: u32 = 76;
const SYS_FILE_SETATTR: libc::c_long = 469;

/// `O_NOCTTY`: an open with it may be `posix_openpt`'s, held where the call's terminals are the
/// helper's (see [`crate::notify::terminal`]), as is one with exactly `O_RDWR` (glibc's `getpt`).
const O_NOCTTY: u32 = libc::O_NOCTTY as u32;

/// The `open` flags under which a call may be `shm_open`'s or `sem_open`'s, held where the call
/// has a `/dev/shm` of its own made by the helper (see [`crate::notify::shm`]): `O_NOFOLLOW`
/// (both, and musl's), or `O_CREAT | O_EXCL` together (`sem_open`'s temporary file). A filter
/// cannot read the path; these are the fewest opens it can tell apart that hold them all.
pub const SHM_OPEN_FLAGS: [u32; 2] = [libc::O_NOFOLLOW as u32, (libc::O_CREAT | libc::O_EXCL) as u32];

/// The set-user-id and set-group-id bits of a mode.
const SET_ID_BITS: u32 = 0o6000;
/// `O_CREAT`, and `__O_TMPFILE` (the bit of `O_TMPFILE` that is not `O_DIRECTORY`): the open
/// flags under which `open` takes a mode.
const O_CREAT: u32 = libc::O_CREAT as u32;
const O_TMPFILE_BIT: u32 = (libc::O_TMPFILE & !libc::O_DIRECTORY) as u32;
/// `fcntl(F_SETLEASE)`: a lease makes any other opener (the harness too) wait for its break.
const F_SETLEASE: u32 = 1024;
/// The file systems' own ioctl families, by the type byte of the command (`cmd & 0xff00`):
/// `'f'` (`FS_IOC_*`, `EXT4_IOC_*`, fscrypt, fs-verity), `'v'` (the inode's generation), `'X'`
/// (XFS and the extended flags), `0x94` (btrfs, `FICLONE`). Many of them change a file's state
/// (`chattr`'s flags, the generation, an encryption policy, fs-verity, a subvolume's flags) and
/// need only a descriptor the program owns, which a read grant opens; new ones, and file
/// systems' aliases of old ones (`EXT4_IOC_SETVERSION` beside `FS_IOC_SETVERSION`), keep
/// coming. So where metadata is not the own world's read-only view's to answer, the whole
/// families are refused but for the commands that only read (and `FICLONE`-like ones, which
/// write only into a descriptor Landlock let be opened for writing), each allowed by number.
const FS_IOCTL_FAMILIES: [(u32, &[u32]); 4] = [
    (
        0x6600,
        &[
            0x8008_6601, // FS_IOC_GETFLAGS
            0x8004_6601, // FS_IOC32_GETFLAGS
            0x8008_6603, // EXT4_IOC_GETVERSION
            0xc020_660b, // FS_IOC_FIEMAP
        ],
    ),
    (
        0x7600,
        &[
            0x8008_7601, // FS_IOC_GETVERSION
            0x8004_7601, // FS_IOC32_GETVERSION
        ],
    ),
    (0x5800, &[0x801c_581f]), // FS_IOC_FSGETXATTR
    (
        0x9400,
        &[
            0x4004_9409, // FICLONE
            0x4020_940d, // FICLONERANGE
            0xc018_9436, // FIDEDUPERANGE
            0x8100_9431, // FS_IOC_GETFSLABEL
        ],
    ),
];

const MSG_FASTOPEN: u32 = 0x2000_0000;
const PRIO_PROCESS: u32 = 0;
const IOPRIO_WHO_PROCESS: u32 = 1;

/// The system calls refused outright, with `EPERM`.
const DENIED: &[libc::c_long] = &[
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_bpf,
    libc::SYS_userfaultfd,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_perf_event_open,
    libc::SYS_fanotify_init,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    SYS_OPEN_TREE_ATTR,
    libc::SYS_mount_setattr,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_reboot,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_acct,
    libc::SYS_quotactl,
    libc::SYS_process_madvise,
    libc::SYS_process_mrelease,
    libc::SYS_kcmp,
    libc::SYS_pidfd_getfd,
];

/// A new session or process group: run in a pid namespace of the call's own, whose end ends
/// every process in it, whatever group it is in; held where the helper notes each new group.
const SESSIONS: &[libc::c_long] = &[libc::SYS_setsid, libc::SYS_setpgid];

/// System V IPC and POSIX message queues: the host's, unless the call has an IPC namespace.
const IPC: &[libc::c_long] = &[
    libc::SYS_shmget,
    libc::SYS_shmat,
    libc::SYS_shmctl,
    libc::SYS_semget,
    libc::SYS_semop,
    libc::SYS_semtimedop,
    libc::SYS_semctl,
    libc::SYS_msgget,
    libc::SYS_msgsnd,
    libc::SYS_msgrcv,
    libc::SYS_msgctl,
    libc::SYS_mq_open,
    libc::SYS_mq_unlink,
    libc::SYS_mq_timedsend,
    libc::SYS_mq_timedreceive,
    libc::SYS_mq_notify,
    libc::SYS_mq_getsetattr,
];

/// Changes to a file's mode, owner, times or extended attributes, which Landlock does not govern:
/// [`NOTIFIED_METADATA`], which the helper can perform for the program, and these, which it
/// cannot (their arguments are structures it does not read) and which stay refused wherever
/// metadata is not allowed outright.
const UNHELD_METADATA: &[libc::c_long] = &[SYS_SETXATTRAT, SYS_REMOVEXATTRAT, SYS_FILE_SETATTR];

/// The calls that set an extended attribute (a POSIX ACL among them), refused where the metadata
/// calls are allowed (see [`build`]).
const XATTR_SETTERS: &[libc::c_long] =
    &[libc::SYS_setxattr, libc::SYS_lsetxattr, libc::SYS_fsetxattr, SYS_SETXATTRAT];

/// The calls that set a mode, with the argument the mode is in: none may set the set-user-id or
/// set-group-id bit (a file made set-user-id inside a write grant would run with its owner's
/// rights outside the sandbox, for anyone: as root, a root shell). The chmod family is here only
/// where metadata is allowed at all; `open`, `openat` and `creat` take a mode only when they
/// create a file, `mknod` may make a regular file, and `mkdir` drops both bits itself.
const MODE_SETTERS: [(libc::c_long, u8); 4] =
    [(libc::SYS_chmod, 1), (libc::SYS_fchmod, 1), (libc::SYS_fchmodat, 2), (SYS_FCHMODAT2, 2)];

/// The metadata calls the helper can perform for the program in the Landlock-only mode,
/// beneath the write grants (see [`crate::notify`]); [`UNHELD_METADATA`] stay refused there.
pub const NOTIFIED_METADATA: &[libc::c_long] = &[
    libc::SYS_chmod,
    libc::SYS_fchmod,
    libc::SYS_fchmodat,
    SYS_FCHMODAT2,
    libc::SYS_chown,
    libc::SYS_fchown,
    libc::SYS_lchown,
    libc::SYS_fchownat,
    libc::SYS_utime,
    libc::SYS_utimes,
    libc::SYS_futimesat,
    libc::SYS_utimensat,
    libc::SYS_setxattr,
    libc::SYS_lsetxattr,
    libc::SYS_fsetxattr,
    libc::SYS_removexattr,
    libc::SYS_lremovexattr,
    libc::SYS_fremovexattr,
];

/// The calls [`Counting::Held`] holds: inotify instances and watches.
const COUNTED: [libc::c_long; 3] =
    [libc::SYS_inotify_init, libc::SYS_inotify_init1, libc::SYS_inotify_add_watch];

/// The filter's program for `policy`, to install just before `execve`.
pub fn build(policy: SeccompPolicy) -> Vec<Instruction> {
    rules(policy).compile()
}

/// The calls the filter answers other than by running them.
pub(super) fn rules(policy: SeccompPolicy) -> Policy {
    let eperm = Answer::Errno(libc::EPERM as u16);
    let refuse = Entry::Always(eperm);
    let when = |rules: Vec<Vec<Check>>| Entry::when(rules, eperm, Answer::Allow);
    let mut p = Policy::default();
    let mut refused: Vec<libc::c_long> = DENIED.to_vec();
    if !policy.ipc {
        refused.extend_from_slice(IPC);
    }
    if policy.metadata != Metadata::Allowed {
        refused.extend_from_slice(NOTIFIED_METADATA);
        refused.extend_from_slice(UNHELD_METADATA);
    }
    if policy.sessions == Sessions::Refused {
        refused.extend_from_slice(SESSIONS);
    }
    for nr in refused {
        p.set(nr, refuse.clone());
    }
    // Where metadata calls run in the kernel, no extended attribute is set: `EOPNOTSUPP`, as a
    // file system without them answers. A POSIX ACL (`system.posix_acl_access`) set on a memfd
    // changes its mode past the kernel's exec seal (`F_SEAL_EXEC` is checked where a chmod goes,
    // not where an ACL does), and Landlock does not govern a memfd: it would then run code no
    // `commands` entry lists (found in review). A filter cannot read the attribute's name, so
    // none is set. The Landlock-only mode's helper sets them beneath the write grants only,
    // where no memfd is.
    if policy.metadata == Metadata::Allowed {
        for nr in XATTR_SETTERS {
            p.set(*nr, Entry::Always(Answer::Errno(libc::EOPNOTSUPP as u16)));
        }
    }

    if policy.sessions == Sessions::Held {
        for nr in SESSIONS {
            p.set(*nr, Entry::Always(Answer::Notify));
        }
    }
    // Held for the helper where it performs them; the set-id check below still comes first.
    if policy.metadata == Metadata::Notified {
        for nr in NOTIFIED_METADATA {
            p.set(*nr, Entry::Always(Answer::Notify));
        }
    }
    // No set-user-id or set-group-id bit from any call that sets a mode.
    let otherwise = match policy.metadata {
        Metadata::Allowed => Some(Answer::Allow),
        Metadata::Notified => Some(Answer::Notify),
        Metadata::Refused => None,
    };
    if let Some(otherwise) = otherwise {
        for (nr, mode) in MODE_SETTERS {
            let rules = vec![vec![Check::masked_ne(mode, SET_ID_BITS, 0)]];
            p.set(nr, Entry::when(rules, eperm, otherwise));
        }
    }
    // One rule, not one per flag: (flags & (O_CREAT | O_TMPFILE)) != 0 holds when either does
    // (every instruction is one the kernel verifies and compiles at each launch).
    let creating = |flags: u8, mode: u8| {
        vec![vec![
            Check::masked_ne(flags, O_CREAT | O_TMPFILE_BIT, 0),
            Check::masked_ne(mode, SET_ID_BITS, 0),
        ]]
    };
    // No set-user-id bit from an open that creates; and where the call's /dev/shm and
    // terminals are the helper's, the opens that may be shm_open's, sem_open's or
    // posix_openpt's held for it.
    let opening = |flags: u8, mode: u8| match policy.metadata {
        Metadata::Notified => {
            let mut held: Vec<Vec<Check>> =
                SHM_OPEN_FLAGS.iter().map(|f| vec![Check::masked_eq(flags, *f, *f)]).collect();
            held.push(vec![Check::masked_eq(flags, O_NOCTTY, O_NOCTTY)]);
            held.push(vec![Check::eq(flags, libc::O_RDWR as u32)]);
            Entry::cases(vec![(creating(flags, mode), eperm), (held, Answer::Notify)], Answer::Allow)
        }
        _ => when(creating(flags, mode)),
    };
    p.set(libc::SYS_open, opening(1, 2));
    p.set(libc::SYS_openat, opening(2, 3));
    if policy.metadata == Metadata::Notified {
        for nr in [libc::SYS_link, libc::SYS_unlink] {
            p.set(nr, Entry::Always(Answer::Notify));
        }
    }
    p.set(libc::SYS_creat, when(vec![vec![Check::masked_ne(1, SET_ID_BITS, 0)]]));
    p.set(libc::SYS_mknod, when(vec![vec![Check::masked_ne(1, SET_ID_BITS, 0)]]));
    p.set(libc::SYS_mknodat, when(vec![vec![Check::masked_ne(2, SET_ID_BITS, 0)]]));
    if !policy.openat2 {
        p.set(libc::SYS_openat2, Entry::Always(Answer::Errno(libc::ENOSYS as u16)));
    }
    // No lease: it would make the harness's own open of the file wait.
    p.set(libc::SYS_fcntl, when(vec![vec![Check::eq(1, F_SETLEASE)]]));

    // Another process's limits, scheduling and memory: the call's own only (see `Pids`).
    // setpriority(which, who, prio) and ioprio_set(which, who, ioprio): a process, never
    // PRIO_PGRP or PRIO_USER, which would reach the keeper's group and every process of the uid.
    let by_pid = [(libc::SYS_setpriority, PRIO_PROCESS), (libc::SYS_ioprio_set, IOPRIO_WHO_PROCESS)];
    match policy.pids {
        Pids::Caller => {
            for nr in SELF_ONLY {
                p.set(*nr, when(vec![vec![Check::ne(0, 0)]]));
            }
            for (nr, process) in by_pid {
                p.set(nr, when(vec![vec![Check::ne(0, process)], vec![Check::ne(1, 0)]]));
            }
        }
        // Every process of the pid namespace is the call's but its pid 1, lnk's own (which
        // ends the world should its limits stop it: found in review).
        Pids::Namespace => {
            for nr in SELF_ONLY {
                p.set(*nr, when(vec![vec![Check::eq(0, 1)]]));
            }
            for (nr, process) in by_pid {
                p.set(nr, when(vec![vec![Check::ne(0, process)], vec![Check::eq(1, 1)]]));
            }
        }
        Pids::Held => {
            for nr in SELF_ONLY {
                p.set(*nr, Entry::when(vec![vec![Check::ne(0, 0)]], Answer::Notify, Answer::Allow));
            }
            for (nr, process) in by_pid {
                let cases = vec![
                    (vec![vec![Check::ne(0, process)]], eperm),
                    (vec![vec![Check::ne(1, 0)]], Answer::Notify),
                ];
                p.set(nr, Entry::cases(cases, Answer::Allow));
            }
        }
    }
    // sendto(fd, buf, len, flags, …), sendmsg(fd, msg, flags), sendmmsg(fd, vec, n, flags) with
    // MSG_FASTOPEN: a TCP connect that never passes through `connect`, where Landlock checks.
    for (nr, flags_arg) in [(libc::SYS_sendto, 3), (libc::SYS_sendmsg, 2), (libc::SYS_sendmmsg, 3)] {
        p.set(nr, when(vec![vec![Check::masked_eq(flags_arg, MSG_FASTOPEN, MSG_FASTOPEN)]]));
    }

    // ioctl(fd, TIOCSTI | TIOCLINUX, …), on the low 32 bits of the command; and where metadata
    // is refused, the ioctls that change a file's attributes.
    let mut ioctl_rules = vec![vec![Check::eq(1, TIOCSTI)], vec![Check::eq(1, TIOCLINUX)]];
    if policy.metadata != Metadata::Allowed {
        for (family, reads) in FS_IOCTL_FAMILIES {
            let mut rule = vec![Check::masked_eq(1, 0xff00, family)];
            rule.extend(reads.iter().map(|cmd| Check::ne(1, *cmd)));
            ioctl_rules.push(rule);
        }
    }
    // Where the helper makes the call's terminals, a terminal's peer asked by no path is its
    // too (see `crate::notify::terminal`).
    let ioctl = match policy.metadata {
        Metadata::Notified => {
            let peer = vec![vec![Check::eq(1, TIOCGPTPEER)]];
            Entry::cases(vec![(ioctl_rules, eperm), (peer, Answer::Notify)], Answer::Allow)
        }
        _ => when(ioctl_rules),
    };
    p.set(libc::SYS_ioctl, ioctl);

    // memfd_create without MFD_NOEXEC_SEAL, or with MFD_EXEC. A memfd's inode lies on an
    // internal mount that Landlock does not govern, so an executable memfd would run any code the
    // program wrote into it; sealed non-executable, the kernel refuses to execute it.
    let executable = vec![Check::masked_eq(1, MFD_EXEC, MFD_EXEC)];
    let unsealed = vec![Check::masked_eq(1, MFD_NOEXEC_SEAL, 0)];
    // A huge-page memfd's mode can be changed past its exec seal (hugetlbfs checks no seal:
    // found in review): refused where the kernel performs the program's chmod (the own world);
    // the Landlock-only mode's helper refuses a chmod of any memfd.
    let huge = vec![Check::masked_eq(1, MFD_HUGETLB, MFD_HUGETLB)];
    let memfd = match policy.memfd {
        Memfd::Sealed => when(vec![unsealed, executable, huge]),
        // As the kernel answers it under `vm.memfd_noexec` 2.
        Memfd::Namespace => Entry::cases(
            vec![(vec![huge], eperm), (vec![executable], Answer::Errno(libc::EACCES as u16))],
            Answer::Allow,
        ),
        Memfd::Held => Entry::when(vec![unsealed, executable], Answer::Notify, Answer::Allow),
    };
    p.set(libc::SYS_memfd_create, memfd);

    // clone(flags, …) with any namespace flag. clone takes the low 32 bits of its flags.
    p.set(
        libc::SYS_clone,
        when(vec![vec![Check::masked_ne(0, CLONE_NAMESPACE_FLAGS.iter().fold(0, |all, f| all | f), 0)]]),
    );
    match policy.counting {
        Counting::Kernel => {}
        Counting::InotifyRefused => {
            for nr in [libc::SYS_inotify_init, libc::SYS_inotify_init1] {
                p.set(nr, Entry::Always(Answer::Errno(libc::EMFILE as u16)));
            }
        }
        // Every inotify instance and watch, counted by the helper.
        Counting::Held => {
            for nr in COUNTED {
                p.set(nr, Entry::Always(Answer::Notify));
            }
        }
    }
    // clone3 passes its flags in memory, which a filter cannot read: `ENOSYS`, so libc falls
    // back to clone, whose flags are checked above.
    p.set(libc::SYS_clone3, Entry::Always(Answer::Errno(libc::ENOSYS as u16)));

    // socketpair: AF_UNIX with a stream or seqpacket type only. The type's low 4 bits are the
    // kind; the rest are SOCK_NONBLOCK and SOCK_CLOEXEC.
    let other_kind = |allowed: [i32; 2]| allowed.map(|k| Check::masked_ne(1, 0xf, k as u32)).to_vec();
    let pair_rules =
        vec![vec![Check::ne(0, libc::AF_UNIX as u32)], other_kind([libc::SOCK_STREAM, libc::SOCK_SEQPACKET])];
    p.set(libc::SYS_socketpair, when(pair_rules));

    // Only TCP and UDP over IPv4 or IPv6 (protocol 0, IPPROTO_TCP or IPPROTO_UDP: not raw,
    // ICMP, MPTCP or SCTP); every other family is refused.
    let inet_rules = |kinds: [i32; 2], protocols: &[i32]| {
        let mut rules = vec![vec![Check::ne(0, libc::AF_INET as u32), Check::ne(0, libc::AF_INET6 as u32)]];
        rules.push(other_kind(kinds));
        rules.push(protocols.iter().map(|p| Check::ne(2, *p as u32)).collect());
        rules
    };
    match policy.network {
        Network::None => p.set(libc::SYS_socket, refuse.clone()),
        // In the call's own network namespace, whose only interface is loopback (and whose only
        // way out is the proxy's door).
        Network::Namespace => p.set(
            libc::SYS_socket,
            when(inet_rules(
                [libc::SOCK_STREAM, libc::SOCK_DGRAM],
                &[0, libc::IPPROTO_TCP, libc::IPPROTO_UDP],
            )),
        ),
        // The same, and Unix stream and seqpacket sockets: every `connect` held, for the helper
        // makes each (a filter cannot tell a Unix connect from a TCP one), and a Unix one only to
        // a socket of the call's own world (see `crate::notify::world_connects`). Their `bind`
        // is the kernel's (Landlock's, the world's mounts): an abstract name is the world
        // network namespace's, the call's own.
        Network::NamespaceHeld => {
            p.set(libc::SYS_socket, when(unix_and_inet_rules()));
            p.set(libc::SYS_connect, Entry::Always(Answer::Notify));
        }
        // On the host's network: TCP only (no UDP, no DNS), and no connect, bind or listen of
        // the program's own: the helper makes each on the call's loopback, and tells the
        // program the address its listeners were asked for.
        // A UDP socket is held only to be refused and named in the report (see
        // `crate::notify::receiver`).
        // Unix stream and seqpacket sockets too (protocol 0): their bind, listen and connect are
        // held like TCP's, and made by the helper on a copy (see `crate::notify::unix_sockets`).
        // Never a Unix datagram socket: its `sendto` names any socket, unheld.
        Network::Held => {
            let udp = vec![vec![Check::masked_eq(1, 0xf, libc::SOCK_DGRAM as u32)]];
            let inet = unix_and_inet_rules();
            p.set(
                libc::SYS_socket,
                Entry::cases(
                    vec![(inet, Answer::Errno(libc::EPERM as u16)), (udp, Answer::Notify)],
                    Answer::Allow,
                ),
            );
            for nr in [libc::SYS_connect, libc::SYS_bind, libc::SYS_listen, libc::SYS_getsockname] {
                p.set(nr, Entry::Always(Answer::Notify));
            }
            // A Unix socket that passes credentials (`SO_PASSCRED`, `SO_PASSPIDFD`) is given an
            // automatic abstract name by the kernel when it connects or sends: a name of the
            // host's (found in review). No TCP socket needs either.
            let passes = |option: u32| vec![Check::eq(1, libc::SOL_SOCKET as u32), Check::eq(2, option)];
            // `IP_BIND_ADDRESS_NO_PORT` is the helper's: it sets it on the program's socket
            // before it binds it on the call's address to connect, so that `connect` chooses
            // the port; cleared by a thread of the program's in between, that bind took a port
            // every other socket's automatic choice then skipped, and a loop of connects left
            // the host's other processes without ports (found in review). The program's own
            // binds are held, so the option means nothing to it.
            let no_port = vec![
                Check::eq(1, libc::IPPROTO_IP as u32),
                Check::eq(2, libc::IP_BIND_ADDRESS_NO_PORT as u32),
            ];
            p.set(
                libc::SYS_setsockopt,
                Entry::when(
                    vec![passes(libc::SO_PASSCRED as u32), passes(SO_PASSPIDFD), no_port],
                    Answer::Errno(libc::EPERM as u16),
                    Answer::Allow,
                ),
            );
        }
    }
    p
}

/// The `socket` calls refused where Unix stream and seqpacket sockets are served beside TCP (and
/// UDP, a `SOCK_DGRAM` of the internet families): any other family, kind or protocol, and a Unix
/// socket of another kind than stream or seqpacket, or of a protocol.
fn unix_and_inet_rules() -> Vec<Vec<Check>> {
    let (unix, not_unix) = (Check::eq(0, libc::AF_UNIX as u32), Check::ne(0, libc::AF_UNIX as u32));
    let kind_not = |k: i32| Check::masked_ne(1, 0xf, k as u32);
    vec![
        vec![Check::ne(0, libc::AF_INET as u32), Check::ne(0, libc::AF_INET6 as u32), not_unix],
        vec![not_unix, kind_not(libc::SOCK_STREAM), kind_not(libc::SOCK_DGRAM)],
        [0, libc::IPPROTO_TCP, libc::IPPROTO_UDP].iter().map(|p| Check::ne(2, *p as u32)).collect(),
        // Neither stream (1) nor seqpacket (5): the kinds whose low bits but the third are 0b001
        // (one check, where two would be hundreds of rules for the oracle).
        vec![unix, Check::masked_ne(1, 0xb, libc::SOCK_STREAM as u32)],
        vec![unix, Check::ne(2, 0)],
    ]
}

/// Installs `program` as the calling thread's seccomp filter. `no_new_privs` must be set
/// (Landlock's `restrict_self` sets it; this sets it again, which is harmless).
pub fn install(program: &[Instruction]) -> Result<(), rustix::io::Errno> {
    crate::sys::install_seccomp_filter(program)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `probe` in a forked child under the filters and returns its exit code. The filters
    /// are built before the fork; the child only installs them and makes system calls.
    fn in_child_under(filter: &[Instruction], probe: fn() -> i32) -> i32 {
        // SAFETY: the child makes only system calls (prctl, seccomp, socket, _exit) and never
        // returns into the test harness.
        unsafe {
            let pid = libc::fork();
            if pid == 0 {
                if !filter.is_empty() && install(filter).is_err() {
                    libc::_exit(100);
                }
                libc::_exit(probe());
            }
            let mut status = 0;
            libc::waitpid(pid, &mut status, 0);
            libc::WEXITSTATUS(status)
        }
    }

    /// Each bit says one socket call was answered as the filter intends.
    fn socket_probe() -> i32 {
        let errno = || {
            // SAFETY: reads this thread's errno.
            unsafe { *libc::__errno_location() }
        };
        let try_socket = |family, kind, proto| {
            // SAFETY: socket takes three integers; a created descriptor is closed at once.
            let fd = unsafe { libc::socket(family, kind, proto) };
            if fd >= 0 {
                // SAFETY: closes the descriptor just created.
                unsafe { libc::close(fd) };
                0
            } else {
                errno()
            }
        };
        let mut bits = 0;
        bits |= i32::from(try_socket(libc::AF_INET, libc::SOCK_STREAM, 0) == 0);
        bits |= i32::from(
            try_socket(libc::AF_INET6, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, libc::IPPROTO_TCP) == 0,
        ) << 1;
        bits |= i32::from(try_socket(libc::AF_INET, libc::SOCK_RAW, libc::IPPROTO_ICMP) == libc::EPERM) << 2;
        bits |= i32::from(try_socket(libc::AF_INET, libc::SOCK_STREAM, 262 /* MPTCP */) == libc::EPERM) << 3;
        bits |= i32::from(try_socket(libc::AF_UNIX, libc::SOCK_STREAM, 0) == libc::EPERM) << 4;
        bits |= i32::from(try_socket(libc::AF_NETLINK, libc::SOCK_RAW, 0) == libc::EPERM) << 5;
        bits |= i32::from(fast_open() == libc::EPERM) << 6;
        bits
    }

    /// A TCP Fast Open `sendto` to a closed loopback port: the connect happens inside `sendto`,
    /// so Landlock's connect rule never sees it. Answers the errno (ECONNREFUSED without a
    /// filter, EPERM with one, EAFNOSUPPORT-like where TCP itself is refused).
    fn fast_open() -> i32 {
        // SAFETY: socket, sendto and close on a descriptor made here, with a live local address.
        unsafe {
            let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
            if fd < 0 {
                return -1;
            }
            let addr = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: 9u16.to_be(),
                sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes([127, 0, 0, 1]) },
                sin_zero: [0; 8],
            };
            let r = libc::sendto(
                fd,
                b"x".as_ptr().cast(),
                1,
                libc::MSG_FASTOPEN,
                std::ptr::addr_of!(addr).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as u32,
            );
            let errno = if r < 0 { *libc::__errno_location() } else { 0 };
            libc::close(fd);
            errno
        }
    }

    #[test]
    fn fast_open_is_refused_and_would_otherwise_connect() {
        // Without the filter the call reaches the kernel, which tries to connect.
        assert_ne!(in_child_under(&[], || i32::from(fast_open() == libc::EPERM)), 1);
    }

    #[test]
    fn with_a_network_namespace_only_tcp_and_udp_sockets_are_allowed() {
        let filter = build(SeccompPolicy {
            network: Network::Namespace,
            metadata: Metadata::Refused,
            ipc: false,
            openat2: false,
            sessions: Sessions::Refused,
            counting: Counting::Kernel,
            pids: Pids::Caller,
            memfd: Memfd::Sealed,
        });
        assert_eq!(in_child_under(&filter, socket_probe), 0b111_1111);
    }

    #[test]
    fn without_internet_no_socket_is_allowed() {
        let filter = build(SeccompPolicy {
            network: Network::None,
            metadata: Metadata::Refused,
            ipc: false,
            openat2: false,
            sessions: Sessions::Refused,
            counting: Counting::Kernel,
            pids: Pids::Caller,
            memfd: Memfd::Sealed,
        });
        // TCP refused too: bits 0 and 1 clear, the rest set.
        assert_eq!(in_child_under(&filter, socket_probe), 0b11_1100);
    }

    #[test]
    fn without_a_namespace_tcp_sockets_are_made_and_every_socket_call_is_held() {
        let filter = build(SeccompPolicy {
            network: Network::Held,
            metadata: Metadata::Notified,
            ipc: false,
            openat2: false,
            sessions: Sessions::Refused,
            counting: Counting::Kernel,
            pids: Pids::Caller,
            memfd: Memfd::Sealed,
        });
        // TCP made (bits 0, 1) and a Unix stream socket (bit 4 clear), everything else refused.
        assert_eq!(in_child_under(&filter, socket_probe), 0b110_1111);
        // Unix stream and seqpacket sockets made; never a datagram one, nor another protocol.
        let unix = || {
            let made = |kind, proto| {
                // SAFETY: socket takes three integers; a created descriptor is closed at once.
                let fd = unsafe { libc::socket(libc::AF_UNIX, kind, proto) };
                // SAFETY: closes the descriptor just created, if any.
                (fd >= 0).then(|| unsafe { libc::close(fd) }).is_some()
            };
            let mut bits = i32::from(made(libc::SOCK_STREAM | libc::SOCK_NONBLOCK, 0));
            bits |= i32::from(made(libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0)) << 1;
            bits |= i32::from(!made(libc::SOCK_DGRAM, 0)) << 2;
            bits |= i32::from(!made(libc::SOCK_STREAM, 1)) << 3;
            bits |= i32::from(!made(libc::SOCK_RAW, 0)) << 4;
            bits
        };
        assert_eq!(in_child_under(&filter, unix), 0b1_1111);
        // UDP held (to be refused and named), and a connect, a bind, a listen and a getsockname
        // held (without a listener the kernel answers ENOSYS).
        let held = || {
            let errno = || {
                // SAFETY: reads this thread's errno.
                unsafe { *libc::__errno_location() }
            };
            // SAFETY: socket, connect, bind, listen and close on descriptors made here, with a
            // live local address.
            unsafe {
                let mut bits = 0;
                bits |= i32::from(
                    libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0) < 0 && errno() == libc::ENOSYS,
                );
                let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
                let addr = libc::sockaddr_in {
                    sin_family: libc::AF_INET as libc::sa_family_t,
                    sin_port: 9u16.to_be(),
                    sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes([127, 0, 0, 1]) },
                    sin_zero: [0; 8],
                };
                let len = std::mem::size_of::<libc::sockaddr_in>() as u32;
                let r = libc::connect(fd, std::ptr::addr_of!(addr).cast(), len);
                bits |= i32::from(r < 0 && errno() == libc::ENOSYS) << 1;
                let r = libc::bind(fd, std::ptr::addr_of!(addr).cast(), len);
                bits |= i32::from(r < 0 && errno() == libc::ENOSYS) << 2;
                bits |= i32::from(libc::listen(fd, 1) < 0 && errno() == libc::ENOSYS) << 3;
                let mut name = addr;
                let mut name_len = len;
                let r = libc::getsockname(fd, std::ptr::addr_of_mut!(name).cast(), &mut name_len);
                bits |= i32::from(r < 0 && errno() == libc::ENOSYS) << 4;
                libc::close(fd);
                bits
            }
        };
        assert_eq!(in_child_under(&filter, held), 0b1_1111);
    }

    #[test]
    fn inotify_is_held_for_counting_or_refused_where_nothing_counts_it() {
        let arch = crate::bpf::AUDIT_ARCH;
        let with = |counting| {
            rules(SeccompPolicy {
                network: Network::None,
                metadata: Metadata::Notified,
                ipc: false,
                openat2: false,
                sessions: Sessions::Held,
                counting,
                pids: Pids::Held,
                memfd: Memfd::Held,
            })
        };
        let fork = [libc::SIGCHLD as u64, 0, 0, 0, 0, 0];
        let thread = [(libc::CLONE_VM | libc::CLONE_THREAD | libc::CLONE_SIGHAND) as u64, 0, 0, 0, 0, 0];
        let new_user = [(libc::CLONE_NEWUSER | libc::SIGCHLD) as u64, 0, 0, 0, 0, 0];
        let held = with(Counting::Held);
        // Processes and threads are never held (see `Counting::Held`); namespaces still refused.
        assert_eq!(held.decide(arch, libc::SYS_clone as u32, &fork), Answer::Allow);
        assert_eq!(held.decide(arch, libc::SYS_clone as u32, &thread), Answer::Allow);
        assert_eq!(held.decide(arch, libc::SYS_fork as u32, &[0; 6]), Answer::Allow);
        assert_eq!(held.decide(arch, libc::SYS_clone as u32, &new_user), Answer::Errno(libc::EPERM as u16));
        for nr in COUNTED {
            assert_eq!(held.decide(arch, nr as u32, &[0; 6]), Answer::Notify, "{nr}");
        }
        let refused = with(Counting::InotifyRefused);
        assert_eq!(refused.decide(arch, libc::SYS_clone as u32, &fork), Answer::Allow);
        assert_eq!(
            refused.decide(arch, libc::SYS_inotify_init1 as u32, &[0; 6]),
            Answer::Errno(libc::EMFILE as u16)
        );
        let kernel = with(Counting::Kernel);
        assert_eq!(kernel.decide(arch, libc::SYS_inotify_init1 as u32, &[0; 6]), Answer::Allow);
        assert_eq!(kernel.decide(arch, libc::SYS_fork as u32, &[0; 6]), Answer::Allow);
    }

    #[test]
    fn every_policy_compiles_to_what_it_says() {
        for policy in every_policy() {
            crate::bpf::tests::assert_compiles_faithfully(&rules(policy));
        }
    }

    #[test]
    fn pids_and_memfds_follow_the_world() {
        let arch = crate::bpf::AUDIT_ARCH;
        let with = |pids, memfd| {
            let policy = SeccompPolicy {
                network: Network::None,
                metadata: Metadata::Refused,
                ipc: false,
                openat2: false,
                sessions: Sessions::Refused,
                counting: Counting::Kernel,
                pids,
                memfd,
            };
            move |nr: libc::c_long, args: [u64; 6]| rules(policy).decide(arch, nr as u32, &args)
        };
        let eperm = Answer::Errno(libc::EPERM as u16);
        let pid = |p: u64| [p, 0, 0, 0, 0, 0];
        let prio = |which: u64, who: u64| [which, who, 5, 0, 0, 0];
        let memfd = |flags: u32| [0, u64::from(flags), 0, 0, 0, 0];
        let caller = with(Pids::Caller, Memfd::Sealed);
        assert_eq!(caller(libc::SYS_prlimit64, pid(0)), Answer::Allow);
        assert_eq!(caller(libc::SYS_prlimit64, pid(7)), eperm);
        assert_eq!(caller(libc::SYS_setpriority, prio(0, 7)), eperm);
        assert_eq!(caller(libc::SYS_memfd_create, memfd(0)), eperm);
        assert_eq!(caller(libc::SYS_memfd_create, memfd(MFD_NOEXEC_SEAL)), Answer::Allow);
        let own = with(Pids::Namespace, Memfd::Namespace);
        assert_eq!(own(libc::SYS_prlimit64, pid(7)), Answer::Allow);
        assert_eq!(own(libc::SYS_setpriority, prio(0, 7)), Answer::Allow);
        assert_eq!(own(libc::SYS_setpriority, prio(1, 0)), eperm, "PRIO_PGRP");
        assert_eq!(own(libc::SYS_ioprio_set, prio(2, 0)), eperm, "IOPRIO_WHO_PGRP");
        assert_eq!(own(libc::SYS_memfd_create, memfd(0)), Answer::Allow);
        assert_eq!(own(libc::SYS_memfd_create, memfd(MFD_EXEC)), Answer::Errno(libc::EACCES as u16));
        let held = with(Pids::Held, Memfd::Held);
        assert_eq!(held(libc::SYS_sched_setaffinity, pid(0)), Answer::Allow);
        assert_eq!(held(libc::SYS_sched_setaffinity, pid(7)), Answer::Notify);
        assert_eq!(held(libc::SYS_setpriority, prio(0, 0)), Answer::Allow);
        assert_eq!(held(libc::SYS_setpriority, prio(0, 7)), Answer::Notify);
        assert_eq!(held(libc::SYS_setpriority, prio(2, 0)), eperm, "PRIO_USER");
        assert_eq!(held(libc::SYS_memfd_create, memfd(MFD_NOEXEC_SEAL)), Answer::Allow);
        assert_eq!(held(libc::SYS_memfd_create, memfd(0)), Answer::Notify);
        assert_eq!(held(libc::SYS_memfd_create, memfd(MFD_EXEC)), Answer::Notify);
    }

    #[test]
    fn the_policy_says_what_the_module_says() {
        let p = rules(SeccompPolicy {
            network: Network::None,
            metadata: Metadata::Refused,
            ipc: false,
            openat2: false,
            sessions: Sessions::Refused,
            counting: Counting::Kernel,
            pids: Pids::Caller,
            memfd: Memfd::Sealed,
        });
        let arch = crate::bpf::AUDIT_ARCH;
        let call = |nr: libc::c_long, args: [u64; 6]| p.decide(arch, nr as u32, &args);
        let eperm = Answer::Errno(libc::EPERM as u16);
        assert_eq!(call(libc::SYS_ptrace, [0; 6]), eperm);
        assert_eq!(call(libc::SYS_clone3, [0; 6]), Answer::Errno(libc::ENOSYS as u16));
        assert_eq!(call(libc::SYS_read, [0; 6]), Answer::Allow);
        assert_eq!(call(libc::SYS_chmod, [0; 6]), eperm);
        assert_eq!(call(libc::SYS_shmget, [0; 6]), eperm);
        // The high bits of ioctl's command are ignored by the kernel, and so by the filter.
        assert_eq!(call(libc::SYS_ioctl, [0, 0x1_0000_0000 | u64::from(TIOCSTI), 0, 0, 0, 0]), eperm);
        assert_eq!(
            call(libc::SYS_clone, [libc::CLONE_NEWUSER as u64 | libc::SIGCHLD as u64, 0, 0, 0, 0, 0]),
            eperm
        );
        assert_eq!(call(libc::SYS_clone, [libc::SIGCHLD as u64, 0, 0, 0, 0, 0]), Answer::Allow);
        // Every namespace flag alone, and the creating opens by either flag, with a set-id mode.
        let namespaces = [
            libc::CLONE_NEWNS,
            libc::CLONE_NEWUTS,
            libc::CLONE_NEWIPC,
            libc::CLONE_NEWUSER,
            libc::CLONE_NEWPID,
            libc::CLONE_NEWNET,
            libc::CLONE_NEWCGROUP,
        ];
        for flag in namespaces {
            assert_eq!(call(libc::SYS_clone, [flag as u64, 0, 0, 0, 0, 0]), eperm, "{flag:#x}");
        }
        for flags in [libc::O_CREAT, libc::O_TMPFILE, libc::O_CREAT | libc::O_EXCL] {
            let suid = 0o4755;
            assert_eq!(call(libc::SYS_openat, [0, 0, flags as u64, suid, 0, 0]), eperm, "{flags:#x}");
            assert_eq!(call(libc::SYS_open, [0, flags as u64, suid, 0, 0, 0]), eperm, "{flags:#x}");
            assert_eq!(call(libc::SYS_openat, [0, 0, flags as u64, 0o755, 0, 0]), Answer::Allow);
        }
        assert_eq!(call(libc::SYS_openat, [0, 0, libc::O_RDWR as u64, 0o4755, 0, 0]), Answer::Allow);
        assert_eq!(call(libc::SYS_prlimit64, [0; 6]), Answer::Allow);
        assert_eq!(call(libc::SYS_prlimit64, [1, 0, 0, 0, 0, 0]), eperm);
        assert_eq!(call(libc::SYS_memfd_create, [0, u64::from(MFD_NOEXEC_SEAL), 0, 0, 0, 0]), Answer::Allow);
        assert_eq!(call(libc::SYS_memfd_create, [0; 6]), eperm);
        let open = rules(SeccompPolicy {
            network: Network::Namespace,
            metadata: Metadata::Allowed,
            ipc: true,
            openat2: true,
            sessions: Sessions::Allowed,
            counting: Counting::Kernel,
            pids: Pids::Namespace,
            memfd: Memfd::Namespace,
        });
        assert_eq!(open.decide(arch, libc::SYS_chmod as u32, &[0; 6]), Answer::Allow);
        assert_eq!(open.decide(arch, libc::SYS_shmget as u32, &[0; 6]), Answer::Allow);
        assert_eq!(
            open.decide(arch, libc::SYS_socket as u32, &[libc::AF_INET as u64, 1, 0, 0, 0, 0]),
            Answer::Allow
        );
    }
}
