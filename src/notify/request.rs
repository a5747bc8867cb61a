//! A held system call, decoded: which metadata call (or socket call, or session call), on what,
//! with which values. Pure: it reads
//! only the numbers the kernel copied into the notification (the program cannot change those
//! after the fact), never the program's memory, so it can be fuzzed alone
//! (`fuzz/fuzz_targets/notify_request.rs`).
//!
//! Addresses are kept as addresses: the strings and structures behind them are read by
//! [`super::memory`] when the call is performed, once each.
//!
//! Trusted with: telling which call the program made and with which values, so that the helper
//! performs that call and refuses flags it does not know (a misread could change another file, or
//! other bits). What it trusts: the numbers the kernel copied into the notification, and its caller
//! for having checked the call's architecture.

use rustix::io::Errno;

/// Calls whose first argument is a pid: the call's own only (see `crate::sandbox::seccomp::Pids`).
pub const SELF_ONLY: &[libc::c_long] = &[
    libc::SYS_prlimit64,
    libc::SYS_sched_setaffinity,
    libc::SYS_sched_setscheduler,
    libc::SYS_sched_setparam,
    libc::SYS_sched_setattr,
    libc::SYS_migrate_pages,
    libc::SYS_move_pages,
];

/// `TIOCGPTPEER`: the peer of a pty master, opened by no path.
pub const TIOCGPTPEER: u32 = 0x5441;

/// `AT_FDCWD`, as the kernel reads a directory descriptor argument.
pub const AT_FDCWD: i32 = -100;
const AT_SYMLINK_NOFOLLOW: u32 = 0x100;
const AT_EMPTY_PATH: u32 = 0x1000;

/// What a held call acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// An open descriptor of the program's.
    Fd(i32),
    /// A path (at `path`, in the program's memory) relative to the directory descriptor `dirfd`
    /// (or `AT_FDCWD`); `follow`: a link at its end is followed; `empty_ok`: an empty path names
    /// `dirfd` itself (`AT_EMPTY_PATH`).
    Path { dirfd: i32, path: u64, follow: bool, empty_ok: bool },
}

/// How a call gives the times to set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Times {
    /// Now (a null pointer).
    Now,
    /// `struct timespec[2]` at this address (`utimensat`).
    Timespec(u64),
    /// `struct timeval[2]` at this address (`utimes`, `futimesat`).
    Timeval(u64),
    /// `struct utimbuf` at this address (`utime`).
    Utimbuf(u64),
}

/// What a held call does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Chmod {
        mode: u32,
    },
    /// `u32::MAX` leaves the owner or group as it is.
    Chown {
        uid: u32,
        gid: u32,
    },
    Times(Times),
    SetXattr {
        name: u64,
        value: u64,
        size: u64,
        flags: u32,
    },
    RemoveXattr {
        name: u64,
    },
}

/// One held call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    pub op: Op,
    pub target: Target,
}

/// An `int` argument: the low 32 bits, as the kernel reads it.
fn int(arg: u64) -> i32 {
    arg as u32 as i32
}

/// A path target: `dirfd`, the path's address, and the `AT_*` flags the call takes (`flags`,
/// of which only `allowed` may be set); `follow` when the call follows a last link by default.
fn path(dirfd: i32, address: u64, flags: u32, allowed: u32, follow: bool) -> Result<Target, Errno> {
    if flags & !allowed != 0 {
        return Err(Errno::INVAL);
    }
    Ok(Target::Path {
        dirfd,
        path: address,
        follow: follow && flags & AT_SYMLINK_NOFOLLOW == 0,
        empty_ok: flags & AT_EMPTY_PATH != 0,
    })
}

/// A held call of either kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// A metadata call (the Landlock-only mode: [`super::metadata`]).
    Metadata(Request),
    /// A call on a socket (the Landlock-only mode: [`super::sockets`]).
    Socket(SocketCall),
    /// `setsid` or `setpgid` (the Landlock-only mode), whose new group's leader the helper
    /// notes: the call's name.
    Session(&'static str),
    /// A call that may name a POSIX shared memory object or semaphore in `/dev/shm` (the
    /// Landlock-only mode: [`super::shm`]).
    Shm(ShmCall),
    /// A call that makes what the call's appetite bounds (the Landlock-only mode: see
    /// [`super::counts`]), answered from its number alone.
    Counted(Counted),
    /// `inotify_add_watch(fd, path, mask)` (the Landlock-only mode: [`super::inotify`]), made by
    /// the server on the very instance the call names, within the call's appetite. `path` is an
    /// address in the program's memory.
    Watch { fd: i32, path: u64, mask: u32 },
    /// A call that names a process by a pid other than 0 (the Landlock-only mode: the caller's
    /// own only, see [`crate::sandbox::seccomp::Pids`]): the pid.
    Pid(i32),
    /// `memfd_create(name, flags)` without `MFD_NOEXEC_SEAL`, or with `MFD_EXEC` (the
    /// Landlock-only mode: made by the server, sealed non-executable). `name` is an address in
    /// the program's memory.
    Memfd { name: u64, flags: u32 },
    /// `socket` of a UDP socket (the Landlock-only mode, on the host's network): refused, named
    /// in the report (the receiver answers it from its number).
    Udp,
    /// `ioctl(fd, TIOCGPTPEER, flags)` (the Landlock-only mode: [`super::terminal`]), answered by
    /// the receiver from its numbers.
    PtyPeer { fd: i32, flags: u32 },
}

/// What a counted call makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    /// A process or a thread: never held, watched (see [`super::counts`]); named in a refusal.
    Task,
    /// An inotify instance (`inotify_init`, `inotify_init1(flags)`; `flags` 0 for the first).
    Instance { flags: u64 },
    /// An inotify watch (`inotify_add_watch`: [`Call::Watch`]).
    Watch,
}

impl Counted {
    /// The `[tool.run]` key that bounds it.
    pub fn key(self) -> &'static str {
        match self {
            Counted::Task => "processes",
            Counted::Instance { .. } => "inotify_instances",
            Counted::Watch => "inotify_watches",
        }
    }

    /// Its bound in `appetite`.
    pub fn bound(self, appetite: &crate::sandbox_file::Appetite) -> u32 {
        match self {
            Counted::Task => appetite.processes,
            Counted::Instance { .. } => appetite.inotify_instances,
            Counted::Watch => appetite.inotify_watches,
        }
    }
}

/// A held call that may name `/dev/shm`: an `open` of the kinds `shm_open` and `sem_open` make,
/// a `link`, an `unlink`. Paths are addresses in the program's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShmCall {
    /// `open(path, flags, mode)` (`dirfd` `AT_FDCWD`) or `openat(dirfd, path, flags, mode)`.
    Open { dirfd: i32, path: u64, flags: u32, mode: u32 },
    /// `link(old, new)`.
    Link { old: u64, new: u64 },
    /// `unlink(path)`.
    Unlink { path: u64 },
}

/// A held call on a socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SocketCall {
    /// `connect(fd, address, len)`.
    Connect(Address),
    /// `bind(fd, address, len)`.
    Bind(Address),
    /// `listen(fd, backlog)`.
    Listen { fd: i32, backlog: i32 },
    /// `getsockname(fd, address, len)`: `len` is the address of the buffer's length.
    Name { fd: i32, address: u64, len: u64 },
}

/// A socket call's descriptor and the `struct sockaddr` it gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Address {
    pub fd: i32,
    /// The `struct sockaddr`'s address in the program's memory.
    pub address: u64,
    /// Its length, as the program gave it.
    pub len: i32,
}

/// Decodes a held call: a session call, a socket call, or a metadata call as [`decode`] reads
/// it.
pub fn decode_call(nr: i64, args: [u64; 6]) -> Result<Call, Errno> {
    let address = || Address { fd: int(args[0]), address: args[1], len: int(args[2]) };
    match nr {
        n if n == libc::SYS_setsid => Ok(Call::Session("setsid")),
        n if n == libc::SYS_setpgid => Ok(Call::Session("setpgid")),
        n if n == libc::SYS_inotify_init => Ok(Call::Counted(Counted::Instance { flags: 0 })),
        n if n == libc::SYS_inotify_init1 => Ok(Call::Counted(Counted::Instance { flags: args[0] })),
        n if n == libc::SYS_inotify_add_watch => {
            Ok(Call::Watch { fd: int(args[0]), path: args[1], mask: args[2] as u32 })
        }
        n if SELF_ONLY.contains(&n) => Ok(Call::Pid(int(args[0]))),
        n if n == libc::SYS_setpriority || n == libc::SYS_ioprio_set => Ok(Call::Pid(int(args[1]))),
        n if n == libc::SYS_socket => Ok(Call::Udp),
        n if n == libc::SYS_ioctl && args[1] as u32 == TIOCGPTPEER => {
            Ok(Call::PtyPeer { fd: int(args[0]), flags: args[2] as u32 })
        }
        n if n == libc::SYS_memfd_create => Ok(Call::Memfd { name: args[0], flags: args[1] as u32 }),
        n if n == libc::SYS_connect => Ok(Call::Socket(SocketCall::Connect(address()))),
        n if n == libc::SYS_bind => Ok(Call::Socket(SocketCall::Bind(address()))),
        n if n == libc::SYS_listen => {
            Ok(Call::Socket(SocketCall::Listen { fd: int(args[0]), backlog: int(args[1]) }))
        }
        n if n == libc::SYS_getsockname => {
            Ok(Call::Socket(SocketCall::Name { fd: int(args[0]), address: args[1], len: args[2] }))
        }
        n if n == libc::SYS_open => Ok(Call::Shm(ShmCall::Open {
            dirfd: AT_FDCWD,
            path: args[0],
            flags: args[1] as u32,
            mode: args[2] as u32,
        })),
        n if n == libc::SYS_openat => Ok(Call::Shm(ShmCall::Open {
            dirfd: int(args[0]),
            path: args[1],
            flags: args[2] as u32,
            mode: args[3] as u32,
        })),
        n if n == libc::SYS_link => Ok(Call::Shm(ShmCall::Link { old: args[0], new: args[1] })),
        n if n == libc::SYS_unlink => Ok(Call::Shm(ShmCall::Unlink { path: args[0] })),
        _ => decode(nr, args).map(Call::Metadata),
    }
}

/// Decodes a held metadata call, as the kernel's `seccomp_data` gives it (`nr`, `args`). A call this
/// does not know (none is held but these) or flags it does not know are refused: `ENOSYS`,
/// `EINVAL`.
pub fn decode(nr: i64, args: [u64; 6]) -> Result<Request, Errno> {
    let at = |i: usize| int(args[i]);
    let cwd = |i: usize, follow: bool| path(AT_FDCWD, args[i], 0, 0, follow);
    let chown = |u: usize| Op::Chown { uid: args[u] as u32, gid: args[u + 1] as u32 };
    let times = |address: u64, kind: fn(u64) -> Times| if address == 0 { Times::Now } else { kind(address) };
    let (op, target) = match nr {
        n if n == libc::SYS_chmod => (Op::Chmod { mode: args[1] as u32 }, cwd(0, true)?),
        n if n == libc::SYS_fchmod => (Op::Chmod { mode: args[1] as u32 }, Target::Fd(at(0))),
        n if n == libc::SYS_fchmodat => {
            (Op::Chmod { mode: args[2] as u32 }, path(at(0), args[1], 0, 0, true)?)
        }
        n if n == crate::sys::SYS_FCHMODAT2 => {
            let allowed = AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH;
            (Op::Chmod { mode: args[2] as u32 }, path(at(0), args[1], args[3] as u32, allowed, true)?)
        }
        n if n == libc::SYS_chown => (chown(1), cwd(0, true)?),
        n if n == libc::SYS_lchown => (chown(1), cwd(0, false)?),
        n if n == libc::SYS_fchown => (chown(1), Target::Fd(at(0))),
        n if n == libc::SYS_fchownat => {
            let allowed = AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH;
            (chown(2), path(at(0), args[1], args[4] as u32, allowed, true)?)
        }
        n if n == libc::SYS_utime => (Op::Times(times(args[1], Times::Utimbuf)), cwd(0, true)?),
        n if n == libc::SYS_utimes => (Op::Times(times(args[1], Times::Timeval)), cwd(0, true)?),
        n if n == libc::SYS_futimesat => {
            // A null path acts on the descriptor itself, as `futimes` does.
            let target = match args[1] {
                0 => Target::Fd(at(0)),
                address => path(at(0), address, 0, 0, true)?,
            };
            (Op::Times(times(args[2], Times::Timeval)), target)
        }
        n if n == libc::SYS_utimensat => {
            let flags = args[3] as u32;
            let target = match args[1] {
                // A null path acts on the descriptor itself (`futimens`), and takes no flags.
                0 if flags != 0 => return Err(Errno::INVAL),
                0 => Target::Fd(at(0)),
                address => path(at(0), address, flags, AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH, true)?,
            };
            (Op::Times(times(args[2], Times::Timespec)), target)
        }
        n if n == libc::SYS_setxattr || n == libc::SYS_lsetxattr || n == libc::SYS_fsetxattr => {
            let op = Op::SetXattr { name: args[1], value: args[2], size: args[3], flags: args[4] as u32 };
            let target = match n {
                n if n == libc::SYS_fsetxattr => Target::Fd(at(0)),
                n => cwd(0, n == libc::SYS_setxattr)?,
            };
            (op, target)
        }
        n if n == libc::SYS_removexattr || n == libc::SYS_lremovexattr || n == libc::SYS_fremovexattr => {
            let target = match n {
                n if n == libc::SYS_fremovexattr => Target::Fd(at(0)),
                n => cwd(0, n == libc::SYS_removexattr)?,
            };
            (Op::RemoveXattr { name: args[1] }, target)
        }
        _ => return Err(Errno::NOSYS),
    };
    Ok(Request { op, target })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[u64]) -> [u64; 6] {
        let mut all = [0; 6];
        all[..a.len()].copy_from_slice(a);
        all
    }

    #[test]
    fn each_held_call_is_decoded_with_its_target_and_values() {
        let p = 0x1000;
        let cwd = |follow| Target::Path { dirfd: AT_FDCWD, path: p, follow, empty_ok: false };
        let cases = [
            (libc::SYS_chmod, args(&[p, 0o755]), Op::Chmod { mode: 0o755 }, cwd(true)),
            (libc::SYS_fchmod, args(&[3, 0o644]), Op::Chmod { mode: 0o644 }, Target::Fd(3)),
            (
                libc::SYS_lchown,
                args(&[p, 5, u64::from(u32::MAX)]),
                Op::Chown { uid: 5, gid: u32::MAX },
                cwd(false),
            ),
            (libc::SYS_utimes, args(&[p, 0]), Op::Times(Times::Now), cwd(true)),
            (libc::SYS_utime, args(&[p, 0x2000]), Op::Times(Times::Utimbuf(0x2000)), cwd(true)),
            (
                libc::SYS_utimensat,
                args(&[4, 0, 0x3000, 0]),
                Op::Times(Times::Timespec(0x3000)),
                Target::Fd(4),
            ),
            (libc::SYS_futimesat, args(&[5, 0, 0]), Op::Times(Times::Now), Target::Fd(5)),
            (libc::SYS_fremovexattr, args(&[6, 0x4000]), Op::RemoveXattr { name: 0x4000 }, Target::Fd(6)),
        ];
        for (nr, a, op, target) in cases {
            assert_eq!(decode(nr, a), Ok(Request { op, target }), "nr {nr}");
        }
        // The directory descriptor is an int: its high bits are the kernel's to ignore.
        let at = decode(libc::SYS_fchownat, args(&[0xffff_ffff_ffff_ff9c, p, 1, 2, 0x1100])).unwrap();
        assert_eq!(at.target, Target::Path { dirfd: AT_FDCWD, path: p, follow: false, empty_ok: true });
        // Flags it does not know, and calls it does not hold, are refused.
        assert_eq!(decode(libc::SYS_fchownat, args(&[3, p, 1, 2, 0x8000])), Err(Errno::INVAL));
        assert_eq!(decode(libc::SYS_utimensat, args(&[3, 0, 0, 0x100])), Err(Errno::INVAL));
        assert_eq!(decode(libc::SYS_read, args(&[])), Err(Errno::NOSYS));
    }

    #[test]
    fn socket_calls_are_decoded_with_the_ints_the_kernel_reads() {
        let address = Address { fd: 5, address: 0x5000, len: -1 };
        assert_eq!(
            decode_call(libc::SYS_connect, args(&[0xffff_ffff_0000_0005, 0x5000, 0xffff_ffff])),
            Ok(Call::Socket(SocketCall::Connect(address)))
        );
        assert_eq!(
            decode_call(libc::SYS_bind, args(&[0xffff_ffff_0000_0005, 0x5000, 0xffff_ffff])),
            Ok(Call::Socket(SocketCall::Bind(address)))
        );
        assert_eq!(
            decode_call(libc::SYS_listen, args(&[7, 128])),
            Ok(Call::Socket(SocketCall::Listen { fd: 7, backlog: 128 }))
        );
        assert_eq!(
            decode_call(libc::SYS_getsockname, args(&[7, 0x10, 0x20])),
            Ok(Call::Socket(SocketCall::Name { fd: 7, address: 0x10, len: 0x20 }))
        );
        let chmod = decode_call(libc::SYS_fchmod, args(&[3, 0o644])).unwrap();
        assert_eq!(chmod, Call::Metadata(Request { op: Op::Chmod { mode: 0o644 }, target: Target::Fd(3) }));
        assert_eq!(decode_call(libc::SYS_accept, args(&[])), Err(Errno::NOSYS));
        assert_eq!(
            decode_call(libc::SYS_openat, args(&[0xffff_ff9c, 0x10, 0o301, 0o600])),
            Ok(Call::Shm(ShmCall::Open { dirfd: AT_FDCWD, path: 0x10, flags: 0o301, mode: 0o600 }))
        );
        assert_eq!(
            decode_call(libc::SYS_open, args(&[0x10, 0o400000, 0])),
            Ok(Call::Shm(ShmCall::Open { dirfd: AT_FDCWD, path: 0x10, flags: 0o400000, mode: 0 }))
        );
        assert_eq!(
            decode_call(libc::SYS_link, args(&[1, 2])),
            Ok(Call::Shm(ShmCall::Link { old: 1, new: 2 }))
        );
        assert_eq!(decode_call(libc::SYS_unlink, args(&[3])), Ok(Call::Shm(ShmCall::Unlink { path: 3 })));
        assert_eq!(decode_call(libc::SYS_setsid, args(&[])), Ok(Call::Session("setsid")));
    }
}
