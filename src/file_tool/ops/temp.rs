//! The atomic write's temporary files: a name anyone can recognise, a lock held while the file
//! is written, and the sweep that removes the ones a killed session left behind.
//!
//! A temporary file is `.lnk-tmp-<pid>-<n>-<name>` beside the file it will replace. Its writer
//! takes an exclusive `flock` on it right after creating it and holds it until the descriptor
//! closes, after the rename. A lock dies with the last descriptor, so with the process: a temp
//! file whose lock can be taken without waiting has no writer any more, and the sweep removes
//! it. Pids are not used to decide (a session in its own pid namespace sees other numbers).
//!
//! The one race, a sweep taking the lock between the writer's create and its `flock`, is closed
//! on the writer's side: when its lock fails, or the file it locked has no name any more, it
//! starts again with a new name.
//!
//! Trusted with: removing only temporary files no live writer holds, never through a link (a bug
//! here could remove a file being written, or a person's file). What it trusts: the kernel's
//! `flock` (a free lock means the writer is gone), and the name: any regular file beneath a write
//! root that is named as [`create`] names them is taken for one of its own.

use std::ffi::{OsStr, OsString};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};

use rustix::fs::{AtFlags, FileType, FlockOperation, Mode, OFlags};
use rustix::io::Errno;

use super::{MAX_SEARCH_DEPTH, MAX_SEARCH_ENTRIES, entries};

/// How every temporary file's name begins.
pub const TEMP_PREFIX: &str = ".lnk-tmp-";

/// The most bytes of the target's name kept in a temporary name (a name is at most 255 bytes).
const KEPT_OF_NAME: usize = 200;

/// Creates and locks a new temporary file in `dir` for replacing `name`; returns its name and
/// descriptor (the lock lasts as long as the descriptor).
pub(super) fn create(dir: &OwnedFd, name: &OsStr) -> Result<(OsString, OwnedFd), Errno> {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let name = name.as_bytes();
    let mut cut = name.len().min(KEPT_OF_NAME);
    // Not in the middle of a UTF-8 character (a continuation byte is 0b10xx_xxxx).
    while cut > 0 && cut < name.len() && name[cut] & 0xc0 == 0x80 {
        cut -= 1;
    }
    let pid = rustix::process::getpid().as_raw_nonzero();
    for _ in 0..8 {
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = OsString::from_vec([format!("{TEMP_PREFIX}{pid}-{n}-").as_bytes(), &name[..cut]].concat());
        let fd = rustix::fs::openat(
            dir,
            tmp.as_os_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )?;
        // A sweep that got here first holds the lock, or has already removed the name.
        let locked = rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive).is_ok();
        if locked && rustix::fs::fstat(&fd).is_ok_and(|st| st.st_nlink > 0) {
            return Ok((tmp, fd));
        }
    }
    Err(Errno::AGAIN)
}

/// Whether `name` is one [`create`] makes: the prefix, a pid, a number, a dash.
fn is_temp_name(name: &OsStr) -> bool {
    let Some(rest) = name.as_bytes().strip_prefix(TEMP_PREFIX.as_bytes()) else { return false };
    let mut parts = rest.splitn(3, |b| *b == b'-');
    let digits = |p: Option<&[u8]>| p.is_some_and(|p| !p.is_empty() && p.iter().all(u8::is_ascii_digit));
    digits(parts.next()) && digits(parts.next()) && parts.next().is_some()
}

/// Removes, beneath `root` (at most [`MAX_SEARCH_ENTRIES`] entries, [`MAX_SEARCH_DEPTH`]
/// deep, never through a link), every temporary file no writer holds; returns how many.
pub fn sweep(root: &OwnedFd) -> usize {
    let mut removed = 0;
    let mut visited = 0;
    let Ok(top) =
        rustix::fs::openat(root, ".", OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
    else {
        return 0;
    };
    let mut stack = vec![(top, 0usize)];
    while let Some((dir, depth)) = stack.pop() {
        let Ok(listed) = entries(&dir) else { continue };
        for (name, kind, _) in listed {
            visited += 1;
            if visited > MAX_SEARCH_ENTRIES {
                return removed;
            }
            match kind {
                FileType::Directory if depth < MAX_SEARCH_DEPTH => {
                    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
                    if let Ok(sub) = rustix::fs::openat(&dir, name.as_os_str(), flags, Mode::empty()) {
                        stack.push((sub, depth + 1));
                    }
                }
                FileType::RegularFile if is_temp_name(&name) => {
                    removed += usize::from(remove_if_unlocked(&dir, &name));
                }
                _ => {}
            }
        }
    }
    removed
}

/// Removes the temporary file `name` in `dir` if its lock is free, holding the lock while it
/// checks the name is still that file and removes it.
fn remove_if_unlocked(dir: &OwnedFd, name: &OsStr) -> bool {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let Ok(fd) = rustix::fs::openat(dir, name, flags, Mode::empty()) else { return false };
    if rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive).is_err() {
        return false; // a live writer holds it
    }
    let same = match (rustix::fs::fstat(&fd), rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)) {
        (Ok(a), Ok(b)) => (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino),
        _ => false,
    };
    same && rustix::fs::unlinkat(dir, name, AtFlags::empty()).is_ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_names_the_writer_makes_are_temporary() {
        let is_temp_name = |name: &str| super::is_temp_name(name.as_ref());
        assert!(is_temp_name(".lnk-tmp-12-0-notes.md"));
        assert!(is_temp_name(".lnk-tmp-12-0-a-b"));
        assert!(!is_temp_name(".lnk-tmp-notes.md"));
        assert!(!is_temp_name(".lnk-tmp-12-x-notes.md"));
        assert!(!is_temp_name(".lnk-tmp-12-0"));
        assert!(!is_temp_name("lnk-tmp-12-0-x"));
    }
}
