//! `mkdir`, `move` and `remove`: folders and names, one descriptor at a time, never through a link.
//!
//! Trusted with: which names are made, moved and removed: only where a write grant covers them, one
//! descriptor at a time and never through a link (a bug here could remove or move a file outside
//! the grants). What it trusts: `roots` for what may be written, and the sandbox it runs in for the
//! holes beneath a write grant.

use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt as _;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::super::roots::{Roots, Target, open_beneath};
use super::super::{FileError, Request, names};
use super::*;

/// `mkdir`: a folder, with its parents.
pub fn mkdir(roots: &mut Roots, req: &Request) -> Result<String, FileError> {
    let t = roots.resolve(&req.path("path", None)?, true)?;
    make_folders(&t, t.names())?;
    Ok("{}".into())
}

/// Makes each folder of `folders` (beneath the target's root) that is missing, one name at a time,
/// never through a link.
pub(super) fn make_folders(t: &Target<'_>, folders: &[OsString]) -> Result<(), FileError> {
    let mut current = open_beneath(t.root, ".".as_ref(), OFlags::PATH | OFlags::DIRECTORY, Mode::empty())?;
    let mut so_far = OsString::new();
    for name in folders {
        match rustix::fs::mkdirat(&current, name.as_os_str(), Mode::from_raw_mode(0o755)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(FileError::from_errno(e, &names::escape(name.as_bytes()))),
        }
        if !so_far.is_empty() {
            so_far.push("/");
        }
        so_far.push(name);
        // Reopened from the root, so a link in its place is refused as a link.
        current = open_beneath(t.root, &so_far, OFlags::PATH | OFlags::DIRECTORY, Mode::empty())?;
    }
    Ok(())
}

/// `move`: rename `from` to `to` (both where writes are granted); never replaces a folder.
pub fn rename(roots: &mut Roots, req: &Request) -> Result<String, FileError> {
    let (from, to) = (req.path("from", None)?, req.path("to", None)?);
    let src = roots.resolve(&from, true)?;
    let (src_parent, src_name) =
        src.split().ok_or_else(|| FileError::new("bad_path", "the root cannot be moved"))?;
    let src_dir = open_beneath(src.root, &src_parent, OFlags::PATH | OFlags::DIRECTORY, Mode::empty())?;
    let dst = roots.resolve(&to, true)?;
    let (dst_parent, dst_name) =
        dst.split().ok_or_else(|| FileError::new("bad_path", "cannot move onto the root"))?;
    let dst_dir = open_beneath(dst.root, &dst_parent, OFlags::PATH | OFlags::DIRECTORY, Mode::empty())?;
    rustix::fs::renameat_with(
        &src_dir,
        src_name.as_os_str(),
        &dst_dir,
        dst_name.as_os_str(),
        rustix::fs::RenameFlags::NOREPLACE,
    )
    .map_err(|e| FileError::from_errno(e, &names::escape(&to)))?;
    Ok("{}".into())
}

/// `remove`: a file or link, or an empty folder; a folder with contents only with `recursive`.
pub fn remove(roots: &mut Roots, req: &Request) -> Result<String, FileError> {
    let recursive = req.opt_bool("recursive")?.unwrap_or(false);
    let t = roots.resolve(&req.path("path", None)?, true)?;
    let (parent, name) = t.split().ok_or_else(|| FileError::new("bad_path", "the root cannot be removed"))?;
    let dir = open_beneath(t.root, &parent, OFlags::PATH | OFlags::DIRECTORY, Mode::empty())?;
    let st = rustix::fs::statat(&dir, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW)
        .map_err(|e| FileError::from_errno(e, &t.shown()))?;
    if FileType::from_raw_mode(st.st_mode) != FileType::Directory {
        rustix::fs::unlinkat(&dir, name.as_os_str(), AtFlags::empty())
            .map_err(|e| FileError::from_errno(e, &t.shown()))?;
        return Ok("{}".into());
    }
    if recursive {
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let sub = rustix::fs::openat(&dir, name.as_os_str(), flags, Mode::empty()).map_err(io)?;
        remove_contents(&sub, 0)?;
    }
    rustix::fs::unlinkat(&dir, name.as_os_str(), AtFlags::REMOVEDIR).map_err(|e| match e {
        Errno::NOTEMPTY => {
            FileError::new("not_empty", format!("`{}` is not empty; pass \"recursive\": true", t.shown()))
        }
        e => FileError::from_errno(e, &t.shown()),
    })?;
    Ok("{}".into())
}

/// Removes a folder's contents through descriptors, never following a link.
fn remove_contents(dir: &OwnedFd, depth: usize) -> Result<(), FileError> {
    if depth > MAX_SEARCH_DEPTH {
        return Err(FileError::new("too_deep", "the folder is nested too deeply to remove"));
    }
    for (name, kind, _) in entries(dir)? {
        if kind == FileType::Directory {
            let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            let sub = rustix::fs::openat(dir, name.as_os_str(), flags, Mode::empty()).map_err(io)?;
            remove_contents(&sub, depth + 1)?;
            rustix::fs::unlinkat(dir, name.as_os_str(), AtFlags::REMOVEDIR).map_err(io)?;
        } else {
            rustix::fs::unlinkat(dir, name.as_os_str(), AtFlags::empty()).map_err(io)?;
        }
    }
    Ok(())
}
