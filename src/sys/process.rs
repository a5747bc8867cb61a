//! Processes: forking (checked to be single-threaded), `execve` by path or descriptor, the
//! descriptors a child inherits, signals (masks, signalfd, a group's signal through a pidfd).
//!
//! Trusted with: forking only a single-threaded process, which descriptors a child keeps (one
//! leaked could hand the program a pipe or a record lock of lnk's), the `execve`, and the signals
//! to a group. What it trusts: the kernel, and its callers for which descriptors to keep and which
//! group to signal.

use std::io;

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

/// Starts a child process that runs `child` on a stack of its own while it shares this
/// process's memory (`CLONE_VM | CLONE_VFORK`, as glibc's `posix_spawn` starts a program), and
/// returns the child's pid once the child has executed a program or ended: until then this
/// process is stopped by the kernel. What it saves over [`fork`] for a child that only sets
/// itself up and executes a program: copying this process's page tables, the child's fault on
/// every page it then touches, and the kernel's tearing down of that copy at `execve`.
///
/// The child is a process of its own for everything but memory: its descriptor table, signal
/// handlers, credentials, limits, Landlock domain and seccomp filters are its own, so what it
/// drops, resets or confines changes nothing of this process's. Its memory writes are this
/// process's, which the caller's `child` must respect: it ends in `execve` or [`exit_now`] (one
/// that returns is ended with 125), takes nothing by value that this process will still use or
/// free (it borrows), and frees nothing this process will use again. The calling process must
/// have one thread (checked), so no lock of the allocator is held by a thread that is not
/// running. Every launch starts its program's process this way, in both modes, so the suite's
/// every test of a call runs it.
pub fn spawn_sharing_memory(child: &mut dyn FnMut()) -> Result<rustix::process::Pid, io::Error> {
    ensure_single_threaded()?;
    /// Deep enough for a test build's frames (the release child uses a few pages): only the
    /// pages touched are ever allocated. The lowest page is a guard, so an overflow faults
    /// (and ends the child) instead of writing below the stack.
    const STACK: usize = 1 << 20;
    const GUARD: usize = 4096;
    extern "C" fn trampoline(arg: *mut libc::c_void) -> libc::c_int {
        // SAFETY: `arg` is the pointer to the `&mut dyn FnMut` made below, valid until the
        // parent resumes, which is after this child has executed a program or ended.
        let child = unsafe { &mut *arg.cast::<&mut dyn FnMut()>() };
        child();
        // A child that returns breaks the contract: it ends here, never in the C library's `exit`,
        // whose `atexit` handlers would run on this process's memory.
        exit_now(125)
    }
    // SAFETY: a fresh private anonymous mapping, of a size that is a multiple of the page size.
    let stack = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            STACK,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if stack == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    let unmap = || {
        // SAFETY: the mapping made above, no longer used: the child has executed a program or
        // ended when `clone` returns (CLONE_VFORK), or it was never started.
        unsafe { libc::munmap(stack, STACK) };
    };
    // SAFETY: the lowest page of the mapping made above.
    if unsafe { libc::mprotect(stack, GUARD, libc::PROT_NONE) } != 0 {
        let e = io::Error::last_os_error();
        unmap();
        return Err(e);
    }
    let mut arg: &mut dyn FnMut() = child;
    // The child runs `trampoline` on the mapping's top (stacks grow down on the architectures
    // lnk builds for), and this thread is stopped until it has executed a program or ended
    // (CLONE_VFORK). This process has one thread (checked above), so no lock is held by a
    // thread that cannot run; the closure's contract (above) keeps the shared memory
    // consistent for this process.
    // SAFETY: `arg`, the closure and the stack outlive the child's use of them (see above).
    let pid = unsafe {
        libc::clone(
            trampoline,
            stack.cast::<u8>().add(STACK).cast(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            (&raw mut arg).cast(),
        )
    };
    let failed = io::Error::last_os_error();
    unmap();
    match pid {
        -1 => Err(failed),
        pid => rustix::process::Pid::from_raw(pid).ok_or_else(|| io::Error::other("clone returned pid 0")),
    }
}

/// Ends the calling process at once, without running destructors or `atexit` handlers (which
/// belong to the parent in a forked child).
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit takes an int and does not return.
    unsafe { libc::_exit(code) }
}

/// Ends the calling process at once with `SIGABRT` (a crash, as `abort` ends one), sent to the
/// calling thread by the ids the kernel gives now. musl's `abort` signals the thread id it
/// cached, which in a child sharing its parent's memory (see [`spawn_sharing_memory`]) is the
/// parent's (found in review). Ends by `exit_group(134)` if the signal did not.
pub fn abort_now() -> ! {
    // SAFETY: `signal` with SIG_DFL installs no handler (this process's own table: a child
    // sharing memory has its own); the mask is this thread's; `getpid`, `gettid` and `tgkill`
    // are system calls on this thread's own ids; `exit_group` does not return.
    unsafe {
        libc::signal(libc::SIGABRT, libc::SIG_DFL);
        let mut abort: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut abort);
        libc::sigaddset(&mut abort, libc::SIGABRT);
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_UNBLOCK,
            &abort,
            std::ptr::null_mut::<libc::sigset_t>(),
            8usize,
        );
        let (pid, tid) = (libc::syscall(libc::SYS_getpid), libc::syscall(libc::SYS_gettid));
        libc::syscall(libc::SYS_tgkill, pid, tid, libc::SIGABRT);
        libc::syscall(libc::SYS_exit_group, 134);
    }
    unreachable!("exit_group returned")
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
    // The descriptors are borrowed for this call, so they are open when the child is forked.
    // SAFETY: the hook makes only async-signal-safe calls (setsid, fcntl, dup2, close_range) on
    // values copied before the fork, allocates nothing and takes no lock: sound beside threads.
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

extern "C" fn do_nothing(_: libc::c_int) {}

/// Makes `signal`, sent to one of the helper's threads ([`interrupt_thread`]), interrupt the
/// blocking system call that thread is in: a handler that does nothing, without `SA_RESTART`,
/// so the call returns `EINTR`. The disposition is the process's; each thread blocks the signal
/// or not ([`block_signal_here`], [`unblock_signal_here`]).
pub fn interrupt_with(signal: i32) -> Result<(), io::Error> {
    // SAFETY: installs an async-signal-safe handler (it does nothing) with a zeroed, then
    // filled, sigaction.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = do_nothing as *const () as libc::sighandler_t;
        libc::sigemptyset(&mut action.sa_mask);
        if libc::sigaction(signal, &action, std::ptr::null_mut()) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Blocks `signal` in the calling thread (and the threads it starts from now on).
pub fn block_signal_here(signal: i32) {
    set_signal_mask(&[signal], libc::SIG_BLOCK);
}

/// Unblocks `signal` in the calling thread.
pub fn unblock_signal_here(signal: i32) {
    set_signal_mask(&[signal], libc::SIG_UNBLOCK);
}

/// Sends `signal` to the helper's own thread `tid` (`tgkill` with the helper's pid: never
/// another process's thread, whatever became of the number).
pub fn interrupt_thread(tid: rustix::process::Pid, signal: i32) -> Result<(), io::Error> {
    let me = rustix::process::getpid().as_raw_nonzero().get();
    // SAFETY: tgkill takes three integers and touches no memory of ours.
    let sent = unsafe { libc::syscall(libc::SYS_tgkill, me, tid.as_raw_nonzero().get(), signal) };
    if sent != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
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
pub(super) unsafe fn clone_into_namespaces_unchecked(flags: libc::c_int) -> Result<Forked, io::Error> {
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

/// Whether the process a pidfd holds is still there (not yet reaped): `pidfd_send_signal` with
/// signal 0, which only checks. A process the caller may not signal is there too (`EPERM`).
pub fn pidfd_alive(pidfd: std::os::fd::BorrowedFd<'_>) -> bool {
    use std::os::fd::AsRawFd as _;
    // SAFETY: a live descriptor, signal 0, a NULL siginfo and no flags: the kernel reads no
    // memory of ours and sends nothing.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd(),
            0,
            std::ptr::null::<libc::siginfo_t>(),
            0 as libc::c_uint,
        )
    };
    ret == 0 || super::errno() == libc::EPERM
}
