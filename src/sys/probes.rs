//! Probes of what this kernel gives: the Landlock ABI, a seccomp action, user namespaces and
//! the own world's namespaces (tried in a short-lived child, never inferred from a version).
//!
//! Trusted with: the raw answers lnk's account of this kernel is built from (see
//! `sandbox::kernel`). What it trusts: the kernel's answers; a probe that would change the process
//! runs in a short-lived child.

use std::io;

use super::process::{Forked, clone_into_namespaces_unchecked, exit_now};
use super::world::{make_mounts_private, map_ids_to_self, mount_proc};

/// `LANDLOCK_CREATE_RULESET_VERSION`: ask `landlock_create_ruleset` for the ABI version.
const LANDLOCK_CREATE_RULESET_VERSION: u32 = 1 << 0;
/// `SECCOMP_GET_ACTION_AVAIL`.
const SECCOMP_GET_ACTION_AVAIL: libc::c_uint = 2;

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

/// Whether the kernel supports seccomp filters with return action `action`.
pub fn seccomp_action_available(action: u32) -> Result<(), io::Error> {
    // SAFETY: SECCOMP_GET_ACTION_AVAIL reads one u32 from the pointer, which points at a live
    // local for the duration of the call; nothing is installed.
    let ret = unsafe {
        libc::syscall(libc::SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0 as libc::c_uint, &action as *const u32)
    };
    if ret < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

/// This thread's seccomp mode (`PR_GET_SECCOMP`): 0 without a filter, 2 under one or more; an
/// error where a filter refuses the question.
pub fn seccomp_mode() -> Result<u32, io::Error> {
    // SAFETY: PR_GET_SECCOMP takes no pointer and changes nothing; it returns the mode. (A thread
    // in strict mode would be killed by it, but such a thread could not have run lnk this far.)
    let ret = unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) };
    if ret < 0 { Err(io::Error::last_os_error()) } else { Ok(ret as u32) }
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
