//! `write` and `edit`: a file replaced atomically (a new file beside it, synced, renamed over it).

use std::io::Write as _;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use super::super::roots::{Roots, Target, open_beneath};
use super::super::{FileError, Request};
use super::tree::make_folders;
use super::*;
use crate::json;

/// Writes `content` to the target atomically: a new file beside it, synced, renamed over it.
/// The rename replaces whatever name was there (a planted link included) and never writes
/// through it.
fn write_atomically(t: &Target<'_>, content: &[u8], sync: bool) -> Result<(), FileError> {
    let (parent, name) = t
        .split()
        .ok_or_else(|| FileError::new("not_a_file", "the root folder cannot be written as a file"))?;
    let dir = open_beneath(t.root, &parent, OFlags::PATH | OFlags::DIRECTORY, Mode::empty())?;
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = format!(".{name}.lnk-{}-{n}.tmp", rustix::process::getpid().as_raw_nonzero());
    let fd = rustix::fs::openat(
        &dir,
        tmp.as_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    )
    .map_err(|e| FileError::from_errno(e, &t.rel_str()))?;
    // A replaced file keeps its permissions (an edited script stays executable).
    if let Ok(old) = rustix::fs::statat(&dir, name.as_str(), AtFlags::SYMLINK_NOFOLLOW) {
        if FileType::from_raw_mode(old.st_mode) == FileType::RegularFile {
            let _ = rustix::fs::fchmod(&fd, Mode::from_raw_mode(old.st_mode & 0o777));
        }
    }
    let mut file = std::fs::File::from(fd);
    let written = file.write_all(content).and_then(|()| if sync { file.sync_data() } else { Ok(()) });
    let renamed = written.map_err(io).and_then(|()| {
        rustix::fs::renameat(&dir, tmp.as_str(), &dir, name.as_str())
            .map_err(|e| FileError::from_errno(e, &t.rel_str()))
    });
    if renamed.is_err() {
        let _ = rustix::fs::unlinkat(&dir, tmp.as_str(), AtFlags::empty());
    }
    renamed
}

/// `write`: create or replace a file with `content`, atomically, making missing folders. The new
/// file is synced before the rename unless `"sync": false`: the rename alone already means a
/// reader (or a killed session) never sees a half-written file; the sync adds durability across
/// a power loss, at the disk's price (about 0.5 ms on the development VM).
pub fn write(roots: &mut Roots, req: &Request) -> Result<String, FileError> {
    let content = req.str("content")?.to_owned();
    let t = roots.resolve(req.str("path")?, true)?;
    if let Some((parent, _)) = t.split() {
        make_folders(&t, &parent)?;
    }
    write_atomically(&t, content.as_bytes(), req.opt_bool("sync")?.unwrap_or(true))?;
    Ok(json::Object::new().num("size", content.len() as u64).finish())
}

/// `edit`: replace `old`, which must occur exactly once, with `new`.
pub fn edit(roots: &mut Roots, req: &Request) -> Result<String, FileError> {
    let (old, new) = (req.str("old")?.to_owned(), req.str("new")?.to_owned());
    if old.is_empty() {
        return Err(FileError::new("bad_request", "`old` is empty"));
    }
    let t = roots.resolve(req.str("path")?, true)?;
    let (fd, size) = open_regular(&t)?;
    // The whole file is rewritten, so it must be read whole: a larger one is refused rather than
    // cut short.
    if size > MAX_EDIT_BYTES {
        return Err(FileError::new(
            "too_large",
            format!("`{}` is over {} MiB; edit it in parts", t.rel, MAX_EDIT_BYTES >> 20),
        ));
    }
    let bytes = read_all(&fd, MAX_EDIT_BYTES + 1)?;
    if bytes.len() as u64 > MAX_EDIT_BYTES {
        return Err(FileError::new(
            "too_large",
            format!("`{}` grew past {} MiB while being read", t.rel, MAX_EDIT_BYTES >> 20),
        ));
    }
    let finder = memchr::memmem::Finder::new(old.as_bytes());
    let mut hits = finder.find_iter(&bytes);
    let (Some(at), rest) = (hits.next(), hits.count()) else {
        return Err(FileError::new("not_found", format!("`old` does not occur in `{}`", t.rel)));
    };
    if rest > 0 {
        return Err(FileError::new(
            "not_unique",
            format!("`old` occurs {} times in `{}`; give more context", rest + 1, t.rel),
        ));
    }
    let mut out = Vec::with_capacity(bytes.len() + new.len());
    out.extend_from_slice(&bytes[..at]);
    out.extend_from_slice(new.as_bytes());
    out.extend_from_slice(&bytes[at + old.len()..]);
    write_atomically(&t, &out, req.opt_bool("sync")?.unwrap_or(true))?;
    Ok(json::Object::new().num("size", out.len() as u64).finish())
}
