//! The raw system calls lnk makes that neither rustix nor the landlock crate wrap. Every
//! `unsafe` block of the crate that talks to the kernel directly lives here, each with the
//! reason it is sound, so a reviewer can audit them in one place.

use std::io;

/// `LANDLOCK_CREATE_RULESET_VERSION`: ask `landlock_create_ruleset` for the ABI version.
const LANDLOCK_CREATE_RULESET_VERSION: u32 = 1 << 0;
/// `SECCOMP_GET_ACTION_AVAIL`.
const SECCOMP_GET_ACTION_AVAIL: libc::c_uint = 2;
/// `AUDIT_ARCH_*` of the architecture lnk was built for: a call made through another table
/// (`int 0x80` on x86_64) is killed by lnk's filters, and not answered by the helper.
#[cfg(target_arch = "x86_64")]
pub const AUDIT_ARCH: u32 = 0xc000_003e;
#[cfg(target_arch = "aarch64")]
pub const AUDIT_ARCH: u32 = 0xc000_00b7;
#[cfg(target_arch = "riscv64")]
pub const AUDIT_ARCH: u32 = 0xc000_00f3;

/// System calls newer than the `libc` crate's tables. Numbers from 424 on are the same on every
/// architecture.
pub const SYS_FCHMODAT2: libc::c_long = 452;
pub const SYS_SETXATTRAT: libc::c_long = 463;
pub const SYS_REMOVEXATTRAT: libc::c_long = 466;

/// One classic BPF instruction, laid out as the kernel's `struct sock_filter`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Instruction {
    pub code: u16,
    pub jt: u8,
    pub jf: u8,
    pub k: u32,
}

/// `SECCOMP_RET_KILL_PROCESS`, the action lnk's filters end in.
pub const SECCOMP_RET_KILL_PROCESS: u32 = 0x8000_0000;
/// `SECCOMP_RET_USER_NOTIF`.
pub const SECCOMP_RET_USER_NOTIF: u32 = 0x7fc0_0000;

/// The Landlock ABI version this kernel offers, or the errno saying why there is none (`ENOSYS`:
/// not built in; `EOPNOTSUPP`: built in but disabled at boot).
pub fn landlock_abi() -> Result<u32, io::Error> {
    // SAFETY: with a NULL attribute pointer, size 0 and the VERSION flag, the kernel reads no
    // memory and returns the ABI version (or an error); no descriptor is created.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if ret < 0 { Err(io::Error::last_os_error()) } else { Ok(ret as u32) }
}

/// `SECCOMP_SET_MODE_FILTER`.
const SECCOMP_SET_MODE_FILTER: libc::c_uint = 1;

/// Installs a seccomp filter on the calling thread, after setting `no_new_privs` (which the
/// kernel requires of a process without `CAP_SYS_ADMIN`). The kernel copies and checks the
/// program; a malformed one is refused (`EINVAL`), never half-installed.
pub fn install_seccomp_filter(program: &[Instruction]) -> Result<(), rustix::io::Errno> {
    seccomp_set_filter(program, 0).map(drop)
}

/// `SECCOMP_FILTER_FLAG_NEW_LISTENER`.
const SECCOMP_FILTER_FLAG_NEW_LISTENER: libc::c_uint = 1 << 3;

/// Installs a seccomp filter (as [`install_seccomp_filter`]) that may hold calls
/// (`SECCOMP_RET_USER_NOTIF`), and returns its listener (close-on-exec, as the kernel makes it).
pub fn install_seccomp_filter_with_listener(
    program: &[Instruction],
) -> Result<std::os::fd::OwnedFd, rustix::io::Errno> {
    use std::os::fd::FromRawFd as _;
    let fd = seccomp_set_filter(program, SECCOMP_FILTER_FLAG_NEW_LISTENER)?;
    // SAFETY: with NEW_LISTENER the kernel returned a new descriptor to this process, owned by
    // nothing else.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as i32) })
}

/// `seccomp(SECCOMP_SET_MODE_FILTER, flags, program)`, after `no_new_privs`; the call's result.
fn seccomp_set_filter(
    program: &[Instruction],
    flags: libc::c_uint,
) -> Result<libc::c_long, rustix::io::Errno> {
    rustix::thread::set_no_new_privs(true)?;
    let len = u16::try_from(program.len()).map_err(|_| rustix::io::Errno::INVAL)?;
    let fprog = libc::sock_fprog { len, filter: program.as_ptr().cast_mut().cast::<libc::sock_filter>() };
    // SAFETY: `Instruction` is `#[repr(C)]` with the fields of `struct sock_filter` (u16, u8,
    // u8, u32) in order, so the pointer is to `len` valid sock_filters; the kernel only reads
    // them, during the call, while `program` is borrowed.
    let ret = unsafe {
        libc::syscall(libc::SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &fprog as *const libc::sock_fprog)
    };
    if ret < 0 { Err(rustix::io::Errno::from_raw_os_error(errno())) } else { Ok(ret) }
}

/// `SECCOMP_IOCTL_NOTIF_RECV`: `_IOWR('!', 0, struct seccomp_notif)` (80 bytes).
const SECCOMP_IOCTL_NOTIF_RECV: libc::c_ulong = 0xc050_2100;
/// `SECCOMP_IOCTL_NOTIF_SEND`: `_IOWR('!', 1, struct seccomp_notif_resp)` (24 bytes).
const SECCOMP_IOCTL_NOTIF_SEND: libc::c_ulong = 0xc018_2101;
/// `SECCOMP_IOCTL_NOTIF_ID_VALID`: `_IOW('!', 2, __u64)`.
const SECCOMP_IOCTL_NOTIF_ID_VALID: libc::c_ulong = 0x4008_2102;

/// Receives one held call into `raw` (a `struct seccomp_notif`, zeroed first as the kernel
/// requires).
pub fn seccomp_notif_recv(
    listener: std::os::fd::BorrowedFd<'_>,
    raw: &mut [u8; 80],
) -> Result<(), rustix::io::Errno> {
    use std::os::fd::AsRawFd as _;
    raw.fill(0);
    // SAFETY: the kernel writes at most 80 bytes, the size this ioctl's number encodes, into a
    // live buffer of that size.
    let ret = unsafe { libc::ioctl(listener.as_raw_fd(), SECCOMP_IOCTL_NOTIF_RECV as _, raw.as_mut_ptr()) };
    if ret < 0 { Err(rustix::io::Errno::from_raw_os_error(errno())) } else { Ok(()) }
}

/// Whether the held call `id` is still held (its thread alive and waiting).
pub fn seccomp_notif_id_valid(listener: std::os::fd::BorrowedFd<'_>, id: u64) -> bool {
    use std::os::fd::AsRawFd as _;
    // SAFETY: the kernel reads one u64 from a live local.
    unsafe { libc::ioctl(listener.as_raw_fd(), SECCOMP_IOCTL_NOTIF_ID_VALID as _, &id as *const u64) == 0 }
}

/// Answers the held call `id`: it returns `val`, or fails with `-error` when `error` is negative.
pub fn seccomp_notif_send(
    listener: std::os::fd::BorrowedFd<'_>,
    id: u64,
    val: i64,
    error: i32,
) -> Result<(), rustix::io::Errno> {
    use std::os::fd::AsRawFd as _;
    #[repr(C)]
    struct Response {
        id: u64,
        val: i64,
        error: i32,
        flags: u32,
    }
    let response = Response { id, val, error, flags: 0 };
    // SAFETY: `Response` is `struct seccomp_notif_resp` (24 bytes, the size the ioctl's number
    // encodes); the kernel only reads it.
    let ret = unsafe {
        libc::ioctl(listener.as_raw_fd(), SECCOMP_IOCTL_NOTIF_SEND as _, &response as *const Response)
    };
    if ret < 0 { Err(rustix::io::Errno::from_raw_os_error(errno())) } else { Ok(()) }
}

/// `SECCOMP_IOCTL_NOTIF_ADDFD`: `_IOW('!', 3, struct seccomp_notif_addfd)` (24 bytes).
const SECCOMP_IOCTL_NOTIF_ADDFD: libc::c_ulong = 0x4018_2103;
/// `SECCOMP_ADDFD_FLAG_SETFD`: put the descriptor at `newfd`, as `dup2` would.
const SECCOMP_ADDFD_FLAG_SETFD: u32 = 1;

/// Puts a copy of `file` in the descriptor table of the process holding call `id`, at number
/// `at` (replacing whatever is there, as `dup2` does), close-on-exec when `cloexec`. The held
/// call is still held afterwards: the caller answers it.
pub fn seccomp_notif_put_fd(
    listener: std::os::fd::BorrowedFd<'_>,
    id: u64,
    file: std::os::fd::BorrowedFd<'_>,
    at: i32,
    cloexec: bool,
) -> Result<(), rustix::io::Errno> {
    use std::os::fd::AsRawFd as _;
    #[repr(C)]
    struct AddFd {
        id: u64,
        flags: u32,
        srcfd: u32,
        newfd: u32,
        newfd_flags: u32,
    }
    let request = AddFd {
        id,
        flags: SECCOMP_ADDFD_FLAG_SETFD,
        srcfd: file.as_raw_fd() as u32,
        newfd: at as u32,
        newfd_flags: if cloexec { libc::O_CLOEXEC as u32 } else { 0 },
    };
    // SAFETY: `AddFd` is `struct seccomp_notif_addfd` (24 bytes, the size the ioctl's number
    // encodes); the kernel only reads it, and `file` stays open for the call.
    let ret = unsafe {
        libc::ioctl(listener.as_raw_fd(), SECCOMP_IOCTL_NOTIF_ADDFD as _, &request as *const AddFd)
    };
    if ret < 0 { Err(rustix::io::Errno::from_raw_os_error(errno())) } else { Ok(()) }
}

/// This thread's `errno`, read right after a failed libc call.
fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(libc::EINVAL)
}

/// Whether the kernel supports seccomp filters with return action `action`.
pub fn seccomp_action_available(action: u32) -> Result<(), io::Error> {
    // SAFETY: SECCOMP_GET_ACTION_AVAIL reads one u32 from the pointer, which points at a live
    // local for the duration of the call; nothing is installed.
    let ret = unsafe {
        libc::syscall(libc::SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0 as libc::c_uint, &action as *const u32)
    };
    if ret < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

/// Whether this process may create a user namespace, found by trying in a short-lived child so
/// the caller's own namespaces never change.
pub fn can_create_user_namespace() -> Result<(), io::Error> {
    // SAFETY: the child calls only async-signal-safe system calls (`unshare`, `_exit`) before
    // exiting, so forking a possibly multi-threaded process is sound; the parent reaps it below.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: in the child: unshare takes a flag word; _exit never returns.
        unsafe {
            let ok = libc::unshare(libc::CLONE_NEWUSER) == 0;
            let code = if ok { 0 } else { *libc::__errno_location() & 0x7f };
            libc::_exit(code);
        }
    }
    let mut status = 0;
    // SAFETY: waits for the child forked above; `status` is a live local.
    let waited = unsafe { libc::waitpid(pid, &mut status, 0) };
    if waited != pid {
        return Err(io::Error::last_os_error());
    }
    match (libc::WIFEXITED(status), libc::WEXITSTATUS(status)) {
        (true, 0) => Ok(()),
        (true, errno) => Err(io::Error::from_raw_os_error(errno)),
        _ => Err(io::Error::other("the probe child was killed")),
    }
}

/// The two sides of a `fork`.
pub enum Forked {
    Child,
    Parent(rustix::process::Pid),
}

/// Fails unless the calling process has one thread: `/proc/self/task` has a link for each
/// thread besides its own two. No other thread can start between this check and a fork that
/// follows it: only this one could start it.
fn ensure_single_threaded() -> Result<(), io::Error> {
    let task = rustix::fs::stat("/proc/self/task")?;
    match task.st_nlink {
        3 => Ok(()),
        links => Err(io::Error::other(format!(
            "lnk forks only while it has one thread, and has {}",
            links.saturating_sub(2)
        ))),
    }
}

/// Forks the calling process, which must have one thread (checked: lnk forks before it starts
/// any), so the child inherits no lock another thread held and may allocate. The child should
/// end in [`exit_now`] or `execve`: returning into the caller's frames would run its code twice.
pub fn fork() -> Result<Forked, io::Error> {
    ensure_single_threaded()?;
    // SAFETY: this process has one thread (checked above), so the child is a consistent copy
    // of it.
    let pid = unsafe { libc::fork() };
    match pid {
        -1 => Err(io::Error::last_os_error()),
        0 => Ok(Forked::Child),
        // SAFETY: fork returned a positive pid.
        pid => Ok(Forked::Parent(unsafe { rustix::process::Pid::from_raw_unchecked(pid) })),
    }
}

/// Ends the calling process at once, without running destructors or `atexit` handlers (which
/// belong to the parent in a forked child).
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit takes an int and does not return.
    unsafe { libc::_exit(code) }
}

/// Makes `fd` the descriptor number `target` (0, 1 or 2), without close-on-exec.
pub fn dup_to(fd: std::os::fd::BorrowedFd<'_>, target: i32) -> Result<(), io::Error> {
    use std::os::fd::AsRawFd as _;
    let raw = fd.as_raw_fd();
    // SAFETY: dup2 and fcntl take descriptor numbers; `fd` is open for the duration of the call.
    let ok = unsafe {
        if raw == target {
            libc::fcntl(raw, libc::F_SETFD, 0) == 0
        } else {
            libc::dup2(raw, target) == target
        }
    };
    if ok { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// Marks every descriptor from `first` up close-on-exec, so only 0, 1 and 2 cross `execve`.
/// Falls back to closing through `/proc/self/fd` where `close_range` is missing (before 5.11).
pub fn cloexec_from(first: u32) -> Result<(), io::Error> {
    const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
    // SAFETY: close_range takes two descriptor numbers and flags; it touches no memory.
    let ret = unsafe { libc::syscall(libc::SYS_close_range, first, libc::c_uint::MAX, CLOSE_RANGE_CLOEXEC) };
    if ret == 0 {
        return Ok(());
    }
    let entries = std::fs::read_dir("/proc/self/fd")?;
    for entry in entries.flatten() {
        if let Some(fd) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) {
            if fd >= first as i32 {
                // SAFETY: setting FD_CLOEXEC on a descriptor number; an already closed one fails
                // harmlessly (the directory's own descriptor among them).
                unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
            }
        }
    }
    Ok(())
}

/// The most descriptors [`spawn_detached_with`] passes.
const MAX_PASSED: usize = 8;

/// Spawns `cmd` in a session of its own (detached from the caller's terminal, group and
/// session), with `passed` as its descriptors 3, 4, … (not close-on-exec) and every other
/// descriptor from there up close-on-exec, so the child inherits exactly these besides its
/// standard streams: for a process that outlives its caller (`lnk-link-run`'s supervisor).
pub fn spawn_detached_with(
    cmd: &mut std::process::Command,
    passed: &[std::os::fd::BorrowedFd<'_>],
) -> io::Result<std::process::Child> {
    use std::os::fd::AsRawFd as _;
    use std::os::unix::process::CommandExt as _;
    if passed.len() > MAX_PASSED {
        return Err(io::Error::other("too many descriptors to pass"));
    }
    let mut raw = [0; MAX_PASSED];
    for (slot, fd) in raw.iter_mut().zip(passed) {
        *slot = fd.as_raw_fd();
    }
    let count = passed.len();
    let first_free = 3 + count as libc::c_int;
    // SAFETY: the hook runs in the forked child before `execve` and makes only async-signal-
    // safe system calls (setsid, fcntl, dup2, close_range) on values copied before the fork; it
    // allocates nothing and takes no lock, so it is sound even when the caller has threads. The
    // descriptors are borrowed for this call, so they are open when the child is forked.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setsid() < 0 {
                return Err(io::Error::last_os_error());
            }
            // Each moved above the targets first, so that no dup2 below overwrites one not yet
            // moved.
            let mut high = [0; MAX_PASSED];
            for (slot, from) in high.iter_mut().zip(&raw[..count]) {
                *slot = libc::fcntl(*from, libc::F_DUPFD, first_free);
                if *slot < 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            for (from, to) in high[..count].iter().zip(3..) {
                if libc::dup2(*from, to) != to {
                    return Err(io::Error::last_os_error());
                }
            }
            // Linux 5.11 and later (lnk needs 6.12): no fallback that would allocate.
            const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
            if libc::syscall(
                libc::SYS_close_range,
                first_free as libc::c_uint,
                libc::c_uint::MAX,
                CLOSE_RANGE_CLOEXEC,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.spawn()
}

/// The descriptors 3, 4, … that [`spawn_detached_with`] passed to this process, owned once:
/// a second call fails, so no descriptor gets two owners. Each is checked to be open.
pub fn take_passed<const N: usize>() -> io::Result<[std::os::fd::OwnedFd; N]> {
    use std::os::fd::FromRawFd as _;
    static TAKEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if TAKEN.swap(true, std::sync::atomic::Ordering::SeqCst) {
        return Err(io::Error::other("the passed descriptors were taken already"));
    }
    for fd in 3..3 + N as libc::c_int {
        // SAFETY: F_GETFD reads a descriptor's flags and touches no memory.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    // SAFETY: each is open (checked above) and was passed by the parent for this process to own;
    // nothing else in it takes them (this function only, once, by the guard above).
    Ok(std::array::from_fn(|i| unsafe { std::os::fd::OwnedFd::from_raw_fd(3 + i as libc::c_int) }))
}

/// The signal state a program expects to start with: SIGPIPE at its default action (Rust's
/// runtime ignores it, and an ignored signal stays ignored across `execve`) and an empty mask (the
/// helper blocks the signals it reads through signalfd). Handlers need no reset: `execve` resets
/// every caught signal to its default. Other signals the harness itself ignored stay ignored, as
/// POSIX (and `nohup`) intend.
pub fn reset_signals() {
    // SAFETY: SIG_DFL is a valid disposition for each of these signals. The keeper ignores the
    // stop signals and handles its parent-death signal; an ignored disposition would survive
    // execve, so the program's process puts every one of them back.
    unsafe {
        for signal in [libc::SIGPIPE, libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGUSR2] {
            libc::signal(signal, libc::SIG_DFL);
        }
    }
    set_signal_mask(&[], libc::SIG_SETMASK);
}

/// Sets `signals` to be ignored by the calling process.
pub fn ignore_signals(signals: &[i32]) {
    for signal in signals {
        // SAFETY: SIG_IGN is a valid disposition for these catchable signals.
        unsafe { libc::signal(*signal, libc::SIG_IGN) };
    }
}

fn set_signal_mask(signals: &[i32], how: libc::c_int) {
    // SAFETY: the sigset is a zeroed local initialised by sigemptyset before use.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in signals {
            libc::sigaddset(&mut set, *s);
        }
        libc::pthread_sigmask(how, &set, std::ptr::null_mut());
    }
}

/// Blocks `signals` and returns a signalfd that reads them, so the helper's poll loop sees a stop
/// request as one more readable descriptor instead of through an asynchronous handler.
pub fn signalfd_for(signals: &[i32]) -> Result<std::os::fd::OwnedFd, io::Error> {
    use std::os::fd::FromRawFd as _;
    set_signal_mask(signals, libc::SIG_BLOCK);
    // SAFETY: as in set_signal_mask; signalfd returns a new descriptor that we own.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in signals {
            libc::sigaddset(&mut set, *s);
        }
        let fd = libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(std::os::fd::OwnedFd::from_raw_fd(fd))
    }
}

/// Reads one signal number from a signalfd, if one is pending.
pub fn read_signal(fd: std::os::fd::BorrowedFd<'_>) -> Option<i32> {
    // SAFETY: signalfd_siginfo is plain data; zeroed is a valid value.
    let mut info: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
    // SAFETY: reads into a live local of the size the kernel writes.
    let buf = unsafe {
        std::slice::from_raw_parts_mut(
            (&mut info as *mut libc::signalfd_siginfo).cast::<u8>(),
            size_of_val(&info),
        )
    };
    match rustix::io::read(fd, buf) {
        Ok(n) if n == size_of_val(&info) => Some(info.ssi_signo as i32),
        _ => None,
    }
}

extern "C" fn kill_own_group(_: libc::c_int) {
    // SAFETY: kill is async-signal-safe; 0 names the caller's own process group.
    unsafe { libc::kill(0, libc::SIGKILL) };
}

/// For the keeper: when `signal` arrives (its parent-death signal), kill the whole process group,
/// the keeper included.
pub fn kill_group_on(signal: i32) -> Result<(), io::Error> {
    // SAFETY: installs an async-signal-safe handler with a zeroed, then filled, sigaction.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = kill_own_group as *const () as libc::sighandler_t;
        libc::sigemptyset(&mut action.sa_mask);
        if libc::sigaction(signal, &action, std::ptr::null_mut()) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    set_signal_mask(&[signal], libc::SIG_UNBLOCK);
    Ok(())
}

/// `execve` with argument and environment arrays prepared before the fork (NULL-terminated).
/// Returns only on failure.
pub fn execve(
    path: &std::ffi::CStr,
    argv: &[*const libc::c_char],
    envp: &[*const libc::c_char],
) -> io::Error {
    debug_assert!(argv.last().is_some_and(|p| p.is_null()) && envp.last().is_some_and(|p| p.is_null()));
    // SAFETY: the arrays are NULL-terminated and point at CStrings that outlive the call.
    unsafe { libc::execve(path.as_ptr(), argv.as_ptr(), envp.as_ptr()) };
    io::Error::last_os_error()
}

/// `execveat(fd, "", argv, envp, AT_EMPTY_PATH)`: executes the file `fd` is open on, whatever
/// path it may or may not have in this mount namespace. Returns only on failure.
pub fn execveat_empty(
    fd: std::os::fd::BorrowedFd<'_>,
    argv: &[*const libc::c_char],
    envp: &[*const libc::c_char],
) -> io::Error {
    use std::os::fd::AsRawFd as _;
    debug_assert!(argv.last().is_some_and(|p| p.is_null()) && envp.last().is_some_and(|p| p.is_null()));
    // SAFETY: an open descriptor, an empty NUL-terminated path, and NULL-terminated arrays of
    // pointers to CStrings that outlive the call.
    unsafe {
        libc::syscall(
            libc::SYS_execveat,
            fd.as_raw_fd(),
            c"".as_ptr(),
            argv.as_ptr(),
            envp.as_ptr(),
            libc::AT_EMPTY_PATH,
        )
    };
    io::Error::last_os_error()
}

/// Makes sure descriptors 0, 1 and 2 are open (on /dev/null if not), so a pipe created later can
/// never land on one of them and be clobbered when the child's standard streams are set up.
pub fn ensure_standard_fds() {
    for fd in 0..3 {
        // SAFETY: F_GETFD only queries the descriptor number.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1 {
            // SAFETY: opens /dev/null; the lowest free number is `fd`, which is what we want, so
            // the descriptor is deliberately not wrapped in an owner that would close it.
            unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) };
        }
    }
}

/// This process's group number, as the kernel reports it. 0 when the group was made outside
/// this pid namespace (the leader is not visible here): rustix's `getpgrp` assumes nonzero.
pub fn own_process_group() -> i32 {
    // SAFETY: getpgrp takes no arguments and cannot fail.
    unsafe { libc::getpgrp() }
}

/// Closes every descriptor from 3 up except `keep`, so a forked keeper holds nothing of its
/// parent's (a record lock held by the keeper would make a dead supervisor look alive).
pub fn close_all_except(keep: &[std::os::fd::BorrowedFd<'_>]) {
    close_all_from_except(3, keep)
}

/// Closes every descriptor numbered `first` or above except those in `keep`.
pub fn close_all_from_except(first: libc::c_uint, keep: &[std::os::fd::BorrowedFd<'_>]) {
    use std::os::fd::AsRawFd as _;
    let close = |first: libc::c_uint, last: libc::c_uint| {
        if first <= last {
            // SAFETY: close_range on a range of descriptor numbers; the caller owns none of them
            // any more (it is a forked child about to wait and exit).
            unsafe { libc::syscall(libc::SYS_close_range, first, last, 0 as libc::c_uint) };
        }
    };
    // The kept descriptors in increasing order (at most a few), and the gaps between them closed.
    debug_assert!(keep.len() <= 4, "close_all_from_except keeps at most four descriptors");
    let mut kept = [libc::c_uint::MAX; 4];
    for (slot, fd) in kept.iter_mut().zip(keep) {
        *slot = fd.as_raw_fd() as libc::c_uint;
    }
    kept.sort_unstable();
    let mut from = first;
    for fd in kept.iter().copied().filter(|fd| *fd != libc::c_uint::MAX) {
        if fd > from {
            close(from, fd - 1);
        }
        from = from.max(fd + 1);
    }
    close(from, libc::c_uint::MAX);
}

/// `pidfd_send_signal(pidfd, signal, NULL, PIDFD_SIGNAL_PROCESS_GROUP)`: signals the process group
/// of the process the pidfd holds (Linux 6.9; `EINVAL` before). rustix passes no flags.
pub fn pidfd_signal_group(pidfd: &std::os::fd::OwnedFd, signal: i32) -> Result<(), io::Error> {
    use std::os::fd::AsRawFd as _;
    const PIDFD_SIGNAL_PROCESS_GROUP: libc::c_uint = 1 << 2;
    // SAFETY: a valid pidfd, a NULL siginfo and a flag word; the kernel reads no memory of ours.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd(),
            signal,
            std::ptr::null::<libc::siginfo_t>(),
            PIDFD_SIGNAL_PROCESS_GROUP,
        )
    };
    if ret == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// `unshare(flags)`: the program's child enters namespaces of its own (see `sandbox::world`).
/// Must be called by a single-threaded process (a user namespace requires it).
pub fn unshare(flags: libc::c_int) -> Result<(), io::Error> {
    // SAFETY: unshare takes a flag word and touches no memory of ours.
    if unsafe { libc::unshare(flags) } == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// Denies `setgroups` and writes the `uid_map` and `gid_map` of the caller's new user namespace
/// (each mapping the caller to itself), so it gains nothing over anything outside.
pub fn map_ids_to_self(uid_map: &[u8], gid_map: &[u8]) -> Result<(), io::Error> {
    write_proc_self(c"/proc/self/setgroups", b"deny")?;
    write_proc_self(c"/proc/self/uid_map", uid_map)?;
    write_proc_self(c"/proc/self/gid_map", gid_map)
}

fn write_proc_self(path: &std::ffi::CStr, contents: &[u8]) -> Result<(), io::Error> {
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::open(path, OFlags::WRONLY | OFlags::CLOEXEC, Mode::empty())?;
    let written = rustix::io::write(&fd, contents)?;
    if written == contents.len() { Ok(()) } else { Err(io::Error::from_raw_os_error(libc::EIO)) }
}

/// `mount_setattr(root, "", AT_EMPTY_PATH | AT_RECURSIVE, { attr_set: MOUNT_ATTR_RDONLY })`:
/// every mount beneath `root` becomes read-only.
pub fn make_tree_read_only(root: &std::os::fd::OwnedFd) -> Result<(), io::Error> {
    use std::os::fd::AsRawFd as _;
    const SYS_MOUNT_SETATTR: libc::c_long = 442;
    const MOUNT_ATTR_RDONLY: u64 = 0x1;
    const AT_RECURSIVE: libc::c_uint = 0x8000;
    #[repr(C)]
    struct MountAttr {
        attr_set: u64,
        attr_clr: u64,
        propagation: u64,
        userns_fd: u64,
    }
    let attr = MountAttr { attr_set: MOUNT_ATTR_RDONLY, attr_clr: 0, propagation: 0, userns_fd: 0 };
    // SAFETY: the path is a NUL-terminated literal and `attr` a live local of the size passed;
    // the kernel only reads both.
    let ret = unsafe {
        libc::syscall(
            SYS_MOUNT_SETATTR,
            root.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH as libc::c_uint | AT_RECURSIVE,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if ret == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// Whether this process can make the call's own world: a child cloned into namespaces `flags`
/// (with a user namespace mapping the caller to itself when `maps` is given) makes its mounts
/// private and mounts a `/proc` of its pid namespace, then exits; the caller's own namespaces
/// never change. The error is the failing step's errno.
pub fn probe_namespaces(flags: libc::c_int, maps: Option<(&[u8], &[u8])>) -> Result<(), io::Error> {
    // SAFETY: the child makes only system calls (open, write, mount, _exit) on memory prepared
    // before the clone, so cloning a possibly multi-threaded process is sound; the parent reaps
    // it below.
    let pid = match unsafe { clone_into_namespaces_unchecked(flags) }? {
        Forked::Child => {
            // The exit code is the errno of the step that failed.
            let step = |r: Result<(), io::Error>| {
                if let Err(e) = r {
                    exit_now(e.raw_os_error().unwrap_or(libc::EIO) & 0x7f);
                }
            };
            if let Some((uid_map, gid_map)) = maps {
                step(map_ids_to_self(uid_map, gid_map));
            }
            step(make_mounts_private());
            step(mount_proc());
            exit_now(0)
        }
        Forked::Parent(pid) => pid,
    };
    match rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::empty())? {
        Some((_, status)) => match status.exit_status() {
            Some(0) => Ok(()),
            Some(errno) => Err(io::Error::from_raw_os_error(errno)),
            None => Err(io::Error::other("the probe child was killed")),
        },
        None => Err(io::Error::other("the probe child vanished")),
    }
}

/// `clone(flags | SIGCHLD)` without `CLONE_VM`: a fork whose child starts in new namespaces
/// (`CLONE_NEWUSER`, `CLONE_NEWPID`, …). With `CLONE_NEWPID` the child is pid 1 of its own pid
/// namespace. As [`fork`], the caller must have one thread (checked).
pub fn clone_into_namespaces(flags: libc::c_int) -> Result<Forked, io::Error> {
    ensure_single_threaded()?;
    // SAFETY: as for `fork`: one thread, checked.
    unsafe { clone_into_namespaces_unchecked(flags) }
}

/// [`clone_into_namespaces`] without the check.
///
/// # Safety
///
/// In a multi-threaded process the child may only make async-signal-safe calls.
unsafe fn clone_into_namespaces_unchecked(flags: libc::c_int) -> Result<Forked, io::Error> {
    // SAFETY: without CLONE_VM or a new stack, clone returns twice like fork, each side on its
    // own copy of the address space; the caller upholds fork's contract.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_clone,
            (flags | libc::SIGCHLD) as libc::c_ulong,
            0usize,
            0usize,
            0usize,
            0usize,
        )
    };
    match ret {
        r if r < 0 => Err(io::Error::last_os_error()),
        0 => Ok(Forked::Child),
        pid => Ok(Forked::Parent(
            rustix::process::Pid::from_raw(pid as i32)
                .ok_or_else(|| io::Error::other("clone returned pid 0"))?,
        )),
    }
}

/// Mounts a new `proc` (no set-uid, devices or execution) over `/proc`: it shows the caller's
/// pid namespace only.
pub fn mount_proc() -> Result<(), io::Error> {
    // SAFETY: NUL-terminated literals; proc takes no data here.
    let ret = unsafe {
        libc::mount(
            c"proc".as_ptr(),
            c"/proc".as_ptr(),
            c"proc".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            std::ptr::null(),
        )
    };
    if ret == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// An `ifreq` naming `name` (NUL-terminated, at most 16 bytes), everything else zero.
fn interface_request(name: &[u8]) -> libc::ifreq {
    // SAFETY: ifreq is plain data; zeroed is a valid value.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    for (slot, byte) in request.ifr_name.iter_mut().zip(name) {
        *slot = *byte as libc::c_char;
    }
    request
}

fn datagram_socket(family: rustix::net::AddressFamily) -> Result<std::os::fd::OwnedFd, io::Error> {
    let flags = rustix::net::SocketFlags::CLOEXEC;
    Ok(rustix::net::socket_with(family, rustix::net::SocketType::DGRAM, flags, None)?)
}

/// Sets `IFF_UP` on the loopback interface of the caller's network namespace (a new namespace's
/// `lo` starts down).
pub fn bring_loopback_up() -> Result<(), io::Error> {
    use std::os::fd::AsRawFd as _;
    let socket = datagram_socket(rustix::net::AddressFamily::INET)?;
    let mut request = interface_request(b"lo\0");
    // SAFETY: SIOCGIFFLAGS and SIOCSIFFLAGS read and write the ifreq, a live local of the size
    // the kernel expects; `socket` is open for both calls. The flags are the union's short member.
    unsafe {
        if libc::ioctl(socket.as_raw_fd(), libc::SIOCGIFFLAGS, &mut request) != 0 {
            return Err(io::Error::last_os_error());
        }
        request.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        if libc::ioctl(socket.as_raw_fd(), libc::SIOCSIFFLAGS, &request) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Adds `address` to the loopback interface of the caller's network namespace, as a /32 on the
/// alias `lo:N` (`N` = `alias`), so a listening socket can be bound to it.
pub fn add_loopback_address_v4(address: std::net::Ipv4Addr, alias: u8) -> Result<(), io::Error> {
    use std::os::fd::AsRawFd as _;
    let socket = datagram_socket(rustix::net::AddressFamily::INET)?;
    let name = format!("lo:{alias}\0");
    let set = |request_code: libc::c_ulong, value: std::net::Ipv4Addr| {
        let mut request = interface_request(name.as_bytes());
        let sockaddr = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: 0,
            sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(value.octets()) },
            sin_zero: [0; 8],
        };
        // SAFETY: a sockaddr_in fits in the union's sockaddr (both 16 bytes); the ioctl reads the
        // ifreq, a live local, while `socket` is open.
        unsafe {
            std::ptr::addr_of_mut!(request.ifr_ifru).cast::<libc::sockaddr_in>().write(sockaddr);
            if libc::ioctl(socket.as_raw_fd(), request_code as _, &request) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    };
    set(libc::SIOCSIFADDR, address)?;
    set(libc::SIOCSIFNETMASK, std::net::Ipv4Addr::BROADCAST)
}

/// Adds `address` (a /128) to the loopback interface of the caller's network namespace.
pub fn add_loopback_address_v6(address: std::net::Ipv6Addr) -> Result<(), io::Error> {
    use std::os::fd::AsRawFd as _;
    let socket = datagram_socket(rustix::net::AddressFamily::INET6)?;
    let mut index_request = interface_request(b"lo\0");
    // SAFETY: SIOCGIFINDEX writes the union's index of a live local ifreq.
    let index = unsafe {
        if libc::ioctl(socket.as_raw_fd(), libc::SIOCGIFINDEX, &mut index_request) != 0 {
            return Err(io::Error::last_os_error());
        }
        index_request.ifr_ifru.ifru_ifindex
    };
    let request = libc::in6_ifreq {
        ifr6_addr: libc::in6_addr { s6_addr: address.octets() },
        ifr6_prefixlen: 128,
        ifr6_ifindex: index,
    };
    // SAFETY: SIOCSIFADDR on an AF_INET6 socket reads an in6_ifreq, a live local.
    if unsafe { libc::ioctl(socket.as_raw_fd(), libc::SIOCSIFADDR, &request) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Makes every mount of the caller's (new) mount namespace private, so nothing mounted in it
/// propagates anywhere else.
pub fn make_mounts_private() -> Result<(), io::Error> {
    // SAFETY: NUL-terminated literals and null pointers where mount(2) allows them for a
    // propagation change.
    let ret = unsafe {
        libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        )
    };
    if ret == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// Bind-mounts `source` over `target` and makes that mount read-only.
pub fn bind_mount_read_only(source: &std::ffi::CStr, target: &std::ffi::CStr) -> Result<(), io::Error> {
    // SAFETY: both paths are NUL-terminated and outlive the calls; the type and data may be null
    // for a bind mount and for a remount of one.
    unsafe {
        if libc::mount(source.as_ptr(), target.as_ptr(), std::ptr::null(), libc::MS_BIND, std::ptr::null())
            != 0
        {
            return Err(io::Error::last_os_error());
        }
        let flags = libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV;
        if libc::mount(std::ptr::null(), target.as_ptr(), std::ptr::null(), flags, std::ptr::null()) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Mounts a small empty tmpfs (64 KiB, no devices, no set-uid, no execution) at `target`.
pub fn mount_small_tmpfs(target: &std::ffi::CStr) -> Result<(), io::Error> {
    mount_tmpfs(target, true, c"size=64k,mode=0755")
}

/// Mounts a new tmpfs on `target`: no set-uid, no devices, no execution when `noexec`, with
/// tmpfs's `options` (`size=…,mode=…`).
pub fn mount_tmpfs(target: &std::ffi::CStr, noexec: bool, options: &std::ffi::CStr) -> Result<(), io::Error> {
    let mut flags = libc::MS_NOSUID | libc::MS_NODEV;
    if noexec {
        flags |= libc::MS_NOEXEC;
    }
    // SAFETY: NUL-terminated strings that outlive the call; the data is tmpfs's option string.
    let ret = unsafe {
        libc::mount(c"tmpfs".as_ptr(), target.as_ptr(), c"tmpfs".as_ptr(), flags, options.as_ptr().cast())
    };
    if ret == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// Detaches the mount at `target` (what was beneath it shows again; a bind mount of a file in
/// it keeps that file alive).
pub fn unmount_detach(target: &std::ffi::CStr) -> Result<(), io::Error> {
    // SAFETY: a NUL-terminated path and a flag word.
    if unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The path this process's program was started by, as the kernel recorded it for `execve`
/// (`AT_EXECFN`: relative to the folder it started in when relative), or `None`.
pub fn exec_path() -> Option<std::ffi::OsString> {
    use std::os::unix::ffi::OsStrExt as _;
    // SAFETY: getauxval only reads the auxiliary vector the kernel gave this process.
    let at = unsafe { libc::getauxval(libc::AT_EXECFN) };
    if at == 0 {
        return None;
    }
    // SAFETY: AT_EXECFN is the address of the NUL-terminated file name the kernel copied onto
    // this process's initial stack at `execve`; that memory is never freed or written while the
    // process lives, and it is read here only up to its NUL.
    let name = unsafe { std::ffi::CStr::from_ptr(at as *const libc::c_char) };
    Some(std::ffi::OsStr::from_bytes(name.to_bytes()).to_owned())
}

/// `setsockopt(IP_BIND_ADDRESS_NO_PORT, 1)`: a later `bind` to port 0 takes the address only,
/// and `connect` chooses the port, unique for the connection's four-tuple, as it would for a
/// socket never bound. (A port `bind` chose is withheld from every other socket's automatic
/// choice for as long as it is bound, `TIME_WAIT` included.)
pub fn set_bind_address_no_port(socket: std::os::fd::BorrowedFd<'_>) -> Result<(), io::Error> {
    use std::os::fd::AsRawFd as _;
    let on: libc::c_int = 1;
    // SAFETY: a valid descriptor, and a pointer to an int that outlives the call, with its size.
    let ret = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_BIND_ADDRESS_NO_PORT,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if ret == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// `SECCOMP_USER_NOTIF_FLAG_CONTINUE`: the held call goes on into the kernel as made.
const SECCOMP_USER_NOTIF_FLAG_CONTINUE: u32 = 1;

/// Lets the held call `id` go on into the kernel, which then performs it with the arguments the
/// program's memory holds at that moment. Only for calls whose arguments lie in registers, never
/// behind a pointer: what the helper saw is then exactly what the kernel performs.
pub fn seccomp_notif_continue(
    listener: std::os::fd::BorrowedFd<'_>,
    id: u64,
) -> Result<(), rustix::io::Errno> {
    use std::os::fd::AsRawFd as _;
    #[repr(C)]
    struct Response {
        id: u64,
        val: i64,
        error: i32,
        flags: u32,
    }
    let response = Response { id, val: 0, error: 0, flags: SECCOMP_USER_NOTIF_FLAG_CONTINUE };
    // SAFETY: `Response` is `struct seccomp_notif_resp` (24 bytes, the size the ioctl's number
    // encodes); the kernel only reads it.
    let ret = unsafe {
        libc::ioctl(listener.as_raw_fd(), SECCOMP_IOCTL_NOTIF_SEND as _, &response as *const Response)
    };
    if ret < 0 { Err(rustix::io::Errno::from_raw_os_error(errno())) } else { Ok(()) }
}

/// `SECCOMP_ADDFD_FLAG_SEND`: install the descriptor and answer the held call with its number, in
/// one step (Linux 5.14).
const SECCOMP_ADDFD_FLAG_SEND: u32 = 1 << 1;

/// Puts a copy of `file` in the descriptor table of the process holding call `id`, at the lowest
/// free number (close-on-exec when `cloexec`), and answers the call with that number, as `open`
/// would have. The call is answered: the caller sends nothing more for it.
pub fn seccomp_notif_send_fd(
    listener: std::os::fd::BorrowedFd<'_>,
    id: u64,
    file: std::os::fd::BorrowedFd<'_>,
    cloexec: bool,
) -> Result<i32, rustix::io::Errno> {
    use std::os::fd::AsRawFd as _;
    #[repr(C)]
    struct AddFd {
        id: u64,
        flags: u32,
        srcfd: u32,
        newfd: u32,
        newfd_flags: u32,
    }
    let request = AddFd {
        id,
        flags: SECCOMP_ADDFD_FLAG_SEND,
        srcfd: file.as_raw_fd() as u32,
        newfd: 0,
        newfd_flags: if cloexec { libc::O_CLOEXEC as u32 } else { 0 },
    };
    // SAFETY: `AddFd` is `struct seccomp_notif_addfd` (24 bytes, the size the ioctl's number
    // encodes); the kernel only reads it, and `file` stays open for the call.
    let ret = unsafe {
        libc::ioctl(listener.as_raw_fd(), SECCOMP_IOCTL_NOTIF_ADDFD as _, &request as *const AddFd)
    };
    if ret < 0 { Err(rustix::io::Errno::from_raw_os_error(errno())) } else { Ok(ret) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fork_refuses_while_the_process_has_other_threads() {
        // The test harness runs this on a thread of its own, beside its main thread.
        let (stop, wait) = std::sync::mpsc::channel::<()>();
        let other = std::thread::spawn(move || wait.recv());
        let refused = fork().err().map(|e| e.to_string()).unwrap_or_default();
        assert!(refused.contains("one thread"), "{refused}");
        let refused = clone_into_namespaces(0).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(refused.contains("one thread"), "{refused}");
        stop.send(()).unwrap();
        other.join().unwrap().unwrap();
    }
}
