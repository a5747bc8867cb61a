//! POSIX shared memory and semaphores in the Landlock-only mode: a `/dev/shm` of the call's
//! own, without a mount namespace.
//!
//! glibc's `shm_open` opens `/dev/shm/NAME` (`O_NOFOLLOW | O_CLOEXEC`), `sem_open` creates a
//! temporary `/dev/shm/sem.XXXXXX` (`O_RDWR | O_CREAT | O_EXCL`), `link`s it to
//! `/dev/shm/sem.NAME` and `unlink`s the temporary name; `shm_unlink` and `sem_unlink` `unlink`;
//! musl's do the same with `O_NOFOLLOW`. The host's `/dev/shm` holds every process's of the
//! user, and Landlock cannot tell the call's files there from theirs, so the program gets none
//! of it (no grant). Instead seccomp holds the opens it can tell apart as these (`O_NOFOLLOW`,
//! or `O_CREAT | O_EXCL`: flags are numbers a filter reads; the path is behind a pointer it
//! cannot), `link` and `unlink` (not `unlinkat`, which `rm -r` uses), and the helper:
//!
//! - for a path `/dev/shm/NAME` (one name, not `.` or `..`) performs the call in a folder of the
//!   call's own (`shm` in the call's tmp folder, made at first use, gone with the call): an
//!   `open` is made there, with the program's flags and its umask, and the descriptor put into
//!   the program as the call's answer (`SECCOMP_ADDFD_FLAG_SEND`); a `link` of two such names
//!   links them there (of one such name and another path: `EXDEV`, as across two file
//!   systems); an `unlink` unlinks there;
//! - for any other path lets the call go on into the kernel, where Landlock decides as it does
//!   for every call: the path is read once, and if the program's threads change it before the
//!   kernel reads it, the kernel and Landlock judge what they read, never the helper.
//!
//! What it costs: every open with those flags (a lockfile, `mkstemp`) and every `unlink` waits
//! for the helper (measured in bench/README.md).
//!
//! What it trusts: the kernel's `O_NOFOLLOW` opens beneath the folder's descriptor.

use std::os::fd::{AsFd as _, BorrowedFd, OwnedFd};
use std::path::PathBuf;

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

use super::Reply;
use super::memory::Memory;
use super::request::{AT_FDCWD, ShmCall};

/// The folder where the call's `/dev/shm` is: made at first use in the call's tmp folder.
pub struct ShmFolder {
    /// The call's tmp folder.
    tmp: PathBuf,
    folder: std::cell::OnceCell<OwnedFd>,
}

impl ShmFolder {
    pub fn new(tmp: PathBuf) -> ShmFolder {
        ShmFolder { tmp, folder: std::cell::OnceCell::new() }
    }

    /// The folder, made (mode 0700) and opened without following a link at first use.
    fn open(&self) -> Result<&OwnedFd, Errno> {
        if let Some(fd) = self.folder.get() {
            return Ok(fd);
        }
        let tmp =
            rustix::fs::open(&self.tmp, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
        match rustix::fs::mkdirat(&tmp, "shm", Mode::from_raw_mode(0o700)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(e),
        }
        let fd = rustix::fs::openat(
            &tmp,
            "shm",
            OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(self.folder.get_or_init(|| fd))
    }
}

/// Performs one held call that may name `/dev/shm` (see the module's documentation).
pub fn perform(
    listener: BorrowedFd<'_>,
    id: u64,
    shm: &ShmFolder,
    tid: u32,
    memory: &Memory,
    call: ShmCall,
) -> Result<Reply, Errno> {
    match call {
        ShmCall::Open { dirfd, path, flags, mode } => {
            let path = memory.read_path(path)?;
            let Some(name) = shm_name(&path).filter(|_| dirfd == AT_FDCWD) else {
                return Ok(Reply::Continue);
            };
            let flags = OFlags::from_bits_retain(flags);
            let kept = OFlags::ACCMODE
                | OFlags::CREATE
                | OFlags::EXCL
                | OFlags::TRUNC
                | OFlags::APPEND
                | OFlags::NONBLOCK
                | OFlags::DIRECTORY
                | OFlags::NOFOLLOW;
            let mode = mode & 0o777 & !umask(tid).unwrap_or(0o022);
            let opened = rustix::fs::openat(
                shm.open()?,
                name,
                (flags & kept) | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(mode),
            )?;
            crate::sys::seccomp_notif_send_fd(listener, id, opened.as_fd(), flags.contains(OFlags::CLOEXEC))?;
            Ok(Reply::Sent)
        }
        ShmCall::Link { old, new } => {
            let (old, new) = (memory.read_path(old)?, memory.read_path(new)?);
            match (shm_name(&old), shm_name(&new)) {
                (Some(old), Some(new)) => {
                    let folder = shm.open()?;
                    rustix::fs::linkat(folder, old, folder, new, AtFlags::empty())?;
                    Ok(Reply::Done)
                }
                (None, None) if !names_shm(&old) && !names_shm(&new) => Ok(Reply::Continue),
                _ => Err(Errno::XDEV),
            }
        }
        ShmCall::Unlink { path } => {
            let path = memory.read_path(path)?;
            match shm_name(&path) {
                Some(name) => {
                    rustix::fs::unlinkat(shm.open()?, name, AtFlags::empty())?;
                    Ok(Reply::Done)
                }
                None => Ok(Reply::Continue),
            }
        }
    }
}

/// The NAME of a path `/dev/shm/NAME` (one name, not `.` or `..`, no NUL), as glibc and musl
/// spell it (repeated slashes allowed).
fn shm_name(path: &[u8]) -> Option<&[u8]> {
    let rest = path.strip_prefix(b"/dev/shm/")?;
    let name = rest.iter().position(|b| *b != b'/').map_or(&b""[..], |i| &rest[i..]);
    let ok = !name.is_empty() && name != b"." && name != b".." && !name.contains(&b'/') && name.len() <= 255;
    ok.then_some(name)
}

/// Whether a path lies in `/dev/shm` at all (for `link`: one name there and one elsewhere is a
/// link across file systems).
fn names_shm(path: &[u8]) -> bool {
    path == b"/dev/shm" || path.starts_with(b"/dev/shm/")
}

/// The program's umask (`/proc/<tid>/status`).
fn umask(tid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("Umask:"))?;
    u32::from_str_radix(line.trim(), 8).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_name_directly_in_dev_shm_is_the_calls() {
        assert_eq!(shm_name(b"/dev/shm/sem.mp-x1"), Some(&b"sem.mp-x1"[..]));
        assert_eq!(shm_name(b"/dev/shm/psm_0e06"), Some(&b"psm_0e06"[..]));
        assert_eq!(shm_name(b"/dev/shm//x"), Some(&b"x"[..]));
        for other in [
            &b"/dev/shm/"[..],
            b"/dev/shm/.",
            b"/dev/shm/..",
            b"/dev/shm/a/b",
            b"/dev/shmx/a",
            b"/tmp/a",
            b"dev/shm/a",
        ] {
            assert_eq!(shm_name(other), None, "{}", String::from_utf8_lossy(other));
        }
        assert!(names_shm(b"/dev/shm") && names_shm(b"/dev/shm/a/b") && !names_shm(b"/dev/shmx"));
        let me = rustix::process::getpid().as_raw_nonzero().get() as u32;
        assert!(umask(me).is_some());
    }
}
