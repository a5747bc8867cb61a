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
//! Every open made there is made without blocking and refuses anything but a regular file (a
//! FIFO the program made at a name once froze the helper: see [`open_never_blocking`]).
//!
//! What it trusts: the kernel's `O_NOFOLLOW` opens beneath the folder's descriptor.

use std::os::fd::{AsFd as _, BorrowedFd, OwnedFd};
use std::path::PathBuf;

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

use super::Reply;
use super::handles::{CallHandles, What};
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

/// Performs a held open of `path` (read once, relative to `dirfd`) that may be `shm_open`'s or
/// `sem_open`'s (see the module's documentation).
pub fn open(
    listener: BorrowedFd<'_>,
    id: u64,
    shm: &ShmFolder,
    handles: &CallHandles<'_>,
    (dirfd, path): (i32, &[u8]),
    flags: u32,
    mode: u32,
) -> Result<Reply, Errno> {
    let Some(name) = shm_name(path).filter(|_| dirfd == AT_FDCWD) else {
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
    let umask = handles.open(What::Status).ok().and_then(|status| umask(&status));
    let mode = mode & 0o777 & !umask.unwrap_or(0o022);
    let opened = open_never_blocking(shm.open()?, name, flags & kept, Mode::from_raw_mode(mode))?;
    crate::sys::seccomp_notif_send_fd(listener, id, opened.as_fd(), flags.contains(OFlags::CLOEXEC))?;
    Ok(Reply::Sent)
}

/// Performs a held `link` or `unlink` that may name `/dev/shm` (see the module's
/// documentation); an open is [`open`]'s.
pub fn perform(shm: &ShmFolder, memory: &Memory, call: ShmCall) -> Result<Reply, Errno> {
    match call {
        // The server reads an open's path itself (it may be `/dev/ptmx`'s: see
        // `super::terminal`), and calls [`open`].
        ShmCall::Open { .. } => Err(Errno::INVAL),
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

/// Opens `name` in `folder` with the program's `flags`, never blocking and never anything but a
/// regular file (or a folder, when `O_DIRECTORY` asks for one): the name is the program's to
/// make, and a FIFO there, opened as the program asked, once froze the helper (found in
/// review). Opened with `O_NONBLOCK` (a FIFO's reader opens at once, its writer gets `ENXIO`),
/// and never following a link; anything else is refused `EACCES` before it is used, and a
/// regular file gets the program's own `O_NONBLOCK` back.
fn open_never_blocking(folder: &OwnedFd, name: &[u8], flags: OFlags, mode: Mode) -> Result<OwnedFd, Errno> {
    use std::os::unix::ffi::OsStrExt as _;
    let name = std::ffi::OsStr::from_bytes(name);
    let opened = rustix::fs::openat(
        folder,
        name,
        flags | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        mode,
    )?;
    let kind = rustix::fs::FileType::from_raw_mode(rustix::fs::fstat(&opened)?.st_mode);
    let wanted = kind == rustix::fs::FileType::RegularFile
        || (kind == rustix::fs::FileType::Directory && flags.contains(OFlags::DIRECTORY));
    if !wanted {
        return Err(Errno::ACCESS);
    }
    if !flags.contains(OFlags::NONBLOCK) {
        let status = rustix::fs::fcntl_getfl(&opened)?;
        rustix::fs::fcntl_setfl(&opened, status - OFlags::NONBLOCK)?;
    }
    Ok(opened)
}

/// The program's umask, from its `/proc/<tid>/status` as the receiver opened it.
pub(super) fn umask(status: &OwnedFd) -> Option<u32> {
    let text = super::handles::read_small(status).ok()?;
    let text = std::str::from_utf8(&text).ok()?;
    let line = text.lines().find_map(|l| l.strip_prefix("Umask:"))?;
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
        let status = rustix::fs::open("/proc/thread-self/status", OFlags::RDONLY, Mode::empty()).unwrap();
        assert!(umask(&status).is_some());
    }

    #[test]
    fn a_fifo_or_a_link_at_a_shared_memory_name_is_refused_without_blocking() {
        let dir = std::env::temp_dir().join(format!(
            "lnk-shm-kinds-{}-{}",
            rustix::process::getuid().as_raw(),
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let folder = rustix::fs::open(&dir, OFlags::PATH | OFlags::DIRECTORY, Mode::empty()).unwrap();
        rustix::fs::mknodat(&folder, "fifo", rustix::fs::FileType::Fifo, Mode::from_raw_mode(0o600), 0)
            .unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.join("link")).unwrap();
        std::fs::create_dir(dir.join("folder")).unwrap();
        let mode = Mode::from_raw_mode(0o600);
        // Opened blocking, as shm_open asks: a reader of a FIFO with no writer would wait forever.
        for flags in [OFlags::RDONLY, OFlags::RDWR, OFlags::WRONLY] {
            assert_eq!(
                open_never_blocking(&folder, b"fifo", flags, mode).err(),
                Some(Errno::ACCESS).filter(|_| flags != OFlags::WRONLY).or(Some(Errno::NXIO)),
                "{flags:?}"
            );
        }
        assert_eq!(open_never_blocking(&folder, b"link", OFlags::RDONLY, mode).err(), Some(Errno::LOOP));
        assert_eq!(open_never_blocking(&folder, b"folder", OFlags::RDONLY, mode).err(), Some(Errno::ACCESS));
        assert!(open_never_blocking(&folder, b"folder", OFlags::RDONLY | OFlags::DIRECTORY, mode).is_ok());
        let made = open_never_blocking(&folder, b"made", OFlags::RDWR | OFlags::CREATE | OFlags::EXCL, mode)
            .unwrap();
        assert!(
            !rustix::fs::fcntl_getfl(&made).unwrap().contains(OFlags::NONBLOCK),
            "the program's own flags"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
