//! Removing a call's tmp folder, whatever its program left in it.
//!
//! A hostile program can leave a tree no ordinary removal gets through: folders it made
//! unreadable or unsearchable (`chmod 000`, in the own world), a chain of folders a hundred
//! thousand deep (one `mkdir` and `rename` at a time), names that vanish or fail. A recursive
//! removal would hold a descriptor per level (running out of them) and a stack frame per level
//! (overflowing the stack: the helper then aborts, and so would every later call whose sweep met
//! the same folder). So this removal:
//! - works through descriptors, never following a link (`unlinkat`, `openat` with
//!   `O_NOFOLLOW`);
//! - gives the owner back the rights a program took from its own folders (`u+rwx`) before it
//!   reads or empties them;
//! - holds at most [`MAX_DEPTH`] folders open: a folder deeper than that is moved up, to the
//!   top of the tree being removed, and removed from there, so depth costs renames, not
//!   descriptors or stack;
//! - goes on past an entry it cannot remove, and says so at the end.
//!
//! It runs only on a call's own tmp folder, once every process of the call is dead, so nothing
//! changes the tree meanwhile.
//!
//! Trusted with: removing a call's tmp folder and nothing outside it, whatever the program left
//! there. What it trusts: its caller, that every process of the call is dead and that the folder it
//! names is the call's; nothing of the tree.

use std::ffi::{OsStr, OsString};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt as _;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

/// The most folders held open at once.
const MAX_DEPTH: usize = 32;

/// Removes `name` in `parent` and everything beneath it (see the module's documentation).
pub fn remove_tree(parent: &OwnedFd, name: &OsStr) -> Result<(), Errno> {
    match rustix::fs::unlinkat(parent, name, AtFlags::empty()) {
        Ok(()) | Err(Errno::NOENT) => return Ok(()),
        // A folder (unlinkat never follows a link, so a link was removed above).
        Err(Errno::ISDIR) | Err(Errno::PERM) => {}
        Err(e) => return Err(e),
    }
    // An empty folder (a call whose program left nothing) goes in one call; anything else is
    // emptied below.
    match rustix::fs::unlinkat(parent, name, AtFlags::REMOVEDIR) {
        Ok(()) | Err(Errno::NOENT) => return Ok(()),
        Err(_) => {}
    }
    let top = open_folder(parent, name)?;
    let mut failed = None;
    // The folders being emptied, the top first, each with its name in the one before.
    let mut open: Vec<(OwnedFd, OsString)> = Vec::new();
    let mut moved = 0u64;
    loop {
        let dir = open.last().map_or(&top, |(fd, _)| fd);
        let mut folders = Vec::new();
        for entry in rustix::fs::Dir::read_from(dir)? {
            let Ok(entry) = entry else { break };
            let entry_name = entry.file_name().to_bytes();
            if entry_name == b"." || entry_name == b".." {
                continue;
            }
            let entry_name = OsStr::from_bytes(entry_name).to_owned();
            match rustix::fs::unlinkat(dir, &entry_name, AtFlags::empty()) {
                Ok(()) | Err(Errno::NOENT) => {}
                Err(Errno::ISDIR) | Err(Errno::PERM) => folders.push(entry_name),
                Err(e) => failed = Some(e),
            }
        }
        // Descend into a folder that is not empty (an empty one is removed at once); past the
        // depth bound, move it up to the top instead.
        let mut descended = false;
        for folder in folders {
            match rustix::fs::unlinkat(dir, &folder, AtFlags::REMOVEDIR) {
                Ok(()) | Err(Errno::NOENT) => continue,
                Err(_) if open.len() + 1 >= MAX_DEPTH => {
                    moved += 1;
                    let up = format!(".lnk-removing-{moved}");
                    if let Err(e) = rustix::fs::renameat(dir, &folder, &top, up.as_str()) {
                        failed = Some(e);
                    }
                }
                Err(_) => match open_folder(dir, &folder) {
                    Ok(fd) => {
                        open.push((fd, folder));
                        descended = true;
                        break;
                    }
                    Err(e) => failed = Some(e),
                },
            }
        }
        if descended {
            continue;
        }
        // This folder is as empty as it will get: removed from the one above, or, for the top,
        // from `parent`.
        match open.pop() {
            Some((fd, folder)) => {
                drop(fd);
                let above = open.last().map_or(&top, |(fd, _)| fd);
                if let Err(e) = rustix::fs::unlinkat(above, &folder, AtFlags::REMOVEDIR) {
                    failed = Some(e);
                    // Left in place; not tried again (its folder above would loop on it).
                    return finish(parent, name, top, failed);
                }
            }
            None => return finish(parent, name, top, failed),
        }
    }
}

/// Removes the emptied top folder, or says the first thing that could not be removed.
fn finish(parent: &OwnedFd, name: &OsStr, top: OwnedFd, failed: Option<Errno>) -> Result<(), Errno> {
    drop(top);
    match rustix::fs::unlinkat(parent, name, AtFlags::REMOVEDIR) {
        Ok(()) => Ok(()),
        Err(e) => Err(failed.unwrap_or(e)),
    }
}

/// Opens folder `name` in `dir` for reading and emptying, giving its owner back what a program
/// took (`u+rwx`) when it must.
fn open_folder(dir: &OwnedFd, name: &OsStr) -> Result<OwnedFd, Errno> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = match rustix::fs::openat(dir, name, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::ACCESS) => {
            // Unreadable to its owner: opened by path for its mode alone, checked to be a folder.
            let path = rustix::fs::openat(
                dir,
                name,
                OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            if FileType::from_raw_mode(rustix::fs::fstat(&path)?.st_mode) != FileType::Directory {
                return Err(Errno::NOTDIR);
            }
            rustix::fs::chmodat(dir, name, Mode::RWXU, AtFlags::empty())?;
            rustix::fs::openat(dir, name, flags, Mode::empty())?
        }
        Err(e) => return Err(e),
    };
    // Its entries can be removed only with write and search rights on it.
    if rustix::fs::fstat(&fd)?.st_mode & 0o300 != 0o300 {
        rustix::fs::fchmod(&fd, Mode::RWXU)?;
    }
    Ok(fd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_far_deeper_than_the_descriptors_allow_is_removed() {
        let top = std::env::temp_dir().join(format!(
            "lnk-remove-deep-{}-{}",
            rustix::process::getuid().as_raw(),
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&top);
        std::fs::create_dir(&top).unwrap();
        // 3,000 levels (more than a default limit of 1,024 descriptors, were one held per
        // level), each with a file, made through descriptors since no path could name them.
        let mut dir = rustix::fs::open(&top, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty()).unwrap();
        for _ in 0..3000 {
            let f = rustix::fs::openat(&dir, "f", OFlags::CREATE | OFlags::WRONLY, Mode::RUSR).unwrap();
            drop(f);
            rustix::fs::mkdirat(&dir, "d", Mode::RWXU).unwrap();
            dir = rustix::fs::openat(&dir, "d", OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty()).unwrap();
        }
        // A folder its program made unreadable, deep down.
        rustix::fs::mkdirat(&dir, "locked", Mode::RWXU).unwrap();
        let locked =
            rustix::fs::openat(&dir, "locked", OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty()).unwrap();
        drop(rustix::fs::openat(&locked, "g", OFlags::CREATE | OFlags::WRONLY, Mode::RUSR).unwrap());
        rustix::fs::fchmod(&locked, Mode::empty()).unwrap();
        drop((dir, locked));
        let parent =
            rustix::fs::open(top.parent().unwrap(), OFlags::PATH | OFlags::DIRECTORY, Mode::empty()).unwrap();
        assert_eq!(remove_tree(&parent, top.file_name().unwrap()), Ok(()));
        assert!(!top.exists());
    }
}
