//! `write` and `edit`: a file replaced atomically (a new file beside it, synced, renamed over it).
//!
//! A replace never does what an editor's open for writing could not: the file it replaces must be
//! writable by this session, as the kernel answers `faccessat(W_OK, AT_EACCESS)` on that very name
//! (not following a link), else the answer is `denied` and nothing is written. A rename needs only
//! the folder to be writable, so without this a session would replace a read-only file; root
//! passes as the kernel says (a 0444 file, with `CAP_DAC_OVERRIDE`).
//!
//! The replacement keeps what the old file had that a rename would lose: its owner and group, then
//! its permission bits. When this process may not give the new file the old one's owner or group
//! (a sandboxed root holds no `CAP_CHOWN`; an ordinary user cannot give a file away; an id with no
//! mapping in this user namespace cannot be set), the answer is `denied` and nothing is written:
//! a session never hands a person's file to root, or to anyone else.
//!
//! Both may be told which version of the file they replace, `"expect": {"mtime_ns": …,
//! "size": …}` (either or both, as `read` and `stat` answer them): when the file is not that
//! version any more, the answer is `changed` and nothing is written. The check is made on the
//! file as read (for `edit`) and again on the name just before the rename; a writer in between
//! those last microseconds is not seen. An `edit` makes the last check even without `expect`,
//! against the file it read. Modification times are as fine as the file system keeps them, so
//! the size is part of the version.
//!
//! Trusted with: a replaced file's content, owner and permission bits: a bug here could leave a
//! half-written file, write through a planted link, or hand a person's file to root. What it
//! trusts: `roots` for what may be written, and the old file's `stat` for the owner, group and bits
//! it copies.

use std::io::Write as _;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat};
use rustix::io::Errno;

use super::super::roots::{Roots, Target, open_beneath};
use super::super::{FileError, Request};
use super::tree::make_folders;
use super::*;
use crate::json;
use crate::json::parse::Value;

/// A version of a file: what must still be true of it for a write to go ahead.
#[derive(Default)]
struct Version {
    mtime_ns: Option<i128>,
    size: Option<u64>,
    /// Only the implicit check of `edit`: the very file it read.
    ino: Option<u64>,
}

impl Version {
    /// The request's `expect`, if any.
    fn from_request(req: &Request) -> Result<Option<Version>, FileError> {
        let bad = || {
            FileError::new(
                "bad_request",
                "`expect` is {\"mtime_ns\": N, \"size\": N} (either or both), as read and stat answer them",
            )
        };
        let fields = match req.field("expect") {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::Object(fields)) => fields,
            Some(_) => return Err(bad()),
        };
        if fields.is_empty() || fields.keys().any(|k| k != "mtime_ns" && k != "size") {
            return Err(bad());
        }
        let number = |key: &str| match fields.get(key) {
            None => Ok(None),
            Some(v) => v.as_i64().filter(|n| *n >= 0).map(Some).ok_or_else(bad),
        };
        Ok(Some(Version {
            mtime_ns: number("mtime_ns")?.map(i128::from),
            size: number("size")?.map(|n| n as u64),
            ino: None,
        }))
    }

    /// The version `st` is.
    #[allow(clippy::unnecessary_cast, reason = "st_ino is not u64 on every target")]
    fn of(st: &Stat) -> Version {
        Version { mtime_ns: Some(mtime_ns(st)), size: Some(st.st_size as u64), ino: Some(st.st_ino as u64) }
    }

    /// `changed` unless `st` (the file now, `None` if there is none) is this version.
    #[allow(clippy::unnecessary_cast, reason = "st_ino is not u64 on every target")]
    fn check(&self, st: Option<&Stat>, rel: &str) -> Result<(), FileError> {
        let again = "read it again and redo the change";
        let Some(st) = st else {
            return Err(FileError::new("changed", format!("`{rel}` no longer exists; {again}")));
        };
        let now = (mtime_ns(st), st.st_size as u64, st.st_ino as u64);
        if self.mtime_ns.is_some_and(|m| m != now.0)
            || self.size.is_some_and(|s| s != now.1)
            || self.ino.is_some_and(|i| i != now.2)
        {
            return Err(FileError::new(
                "changed",
                format!(
                    "`{rel}` changed since it was read (now size {}, mtime_ns {}); {again}",
                    now.1, now.0
                ),
            ));
        }
        Ok(())
    }
}

/// Gives the new file `fd` the old file's owner and group when they differ. When this process
/// may not (EPERM: no `CAP_CHOWN`, or a group it is not in; EINVAL: an id with no mapping in this
/// user namespace), the write is refused as `denied`: the replacement would change hands.
fn keep_owner(fd: &OwnedFd, old: &Stat, rel: &str) -> Result<(), FileError> {
    let new = rustix::fs::fstat(fd).map_err(io)?;
    if (new.st_uid, new.st_gid) == (old.st_uid, old.st_gid) {
        return Ok(());
    }
    let (uid, gid) = (rustix::fs::Uid::from_raw(old.st_uid), rustix::fs::Gid::from_raw(old.st_gid));
    match rustix::fs::fchown(fd, Some(uid), Some(gid)) {
        Ok(()) => Ok(()),
        Err(Errno::PERM | Errno::INVAL) => Err(FileError::new(
            "denied",
            format!(
                "`{rel}` belongs to uid {} gid {}, which this session cannot give its replacement \
                 (it would become uid {} gid {}); nothing was written",
                old.st_uid, old.st_gid, new.st_uid, new.st_gid
            ),
        )),
        Err(e) => {
            Err(FileError::new("io", format!("cannot keep the owner of `{rel}` ({e}); nothing was written")))
        }
    }
}

/// `denied` unless the file `name` in `dir` could be opened for writing by this session: the
/// kernel's own answer (`faccessat2` with `AT_EACCESS`, on the name itself, not following a link),
/// so root passes where the kernel lets it and a file's mode, ACL or immutable flag refuse where
/// they would.
fn refuse_unless_writable(dir: &OwnedFd, name: &std::ffi::OsStr, rel: &str) -> Result<(), FileError> {
    let flags = AtFlags::EACCESS | AtFlags::SYMLINK_NOFOLLOW;
    match rustix::fs::accessat(dir, name, rustix::fs::Access::WRITE_OK, flags) {
        Ok(()) => Ok(()),
        Err(Errno::ACCESS | Errno::PERM | Errno::ROFS) => Err(FileError::new(
            "denied",
            format!(
                "`{rel}` is not writable by this session (its mode, owner or flags forbid it); nothing was written"
            ),
        )),
        Err(e) => Err(FileError::from_errno(e, rel)),
    }
}

/// Writes `content` to the target atomically: a new file beside it (see [`temp`]), synced,
/// renamed over it. The rename replaces whatever name was there (a planted link included) and
/// never writes through it. With `expect`, the name must still be that version just before the
/// rename.
fn write_atomically(
    t: &Target<'_>,
    content: &[u8],
    sync: bool,
    expect: Option<&Version>,
) -> Result<(), FileError> {
    let (parent, name) = t
        .split()
        .ok_or_else(|| FileError::new("not_a_file", "the root folder cannot be written as a file"))?;
    let dir = open_beneath(t.root, &parent, OFlags::PATH | OFlags::DIRECTORY, Mode::empty())?;
    let old = rustix::fs::statat(&dir, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW).ok();
    if let Some(expect) = expect {
        expect.check(old.as_ref(), &t.shown())?;
    }
    if old.as_ref().is_some_and(|o| FileType::from_raw_mode(o.st_mode) != FileType::Symlink) {
        refuse_unless_writable(&dir, &name, &t.shown())?;
    }
    let (tmp, fd) = temp::create(&dir, &name).map_err(|e| FileError::from_errno(e, &t.shown()))?;
    let written = (|| {
        // A replaced file keeps its owner, then its permissions (in that order: a change of
        // owner clears set-id bits). An edited script stays executable.
        if let Some(old) =
            old.as_ref().filter(|o| FileType::from_raw_mode(o.st_mode) == FileType::RegularFile)
        {
            keep_owner(&fd, old, &t.shown())?;
            let _ = rustix::fs::fchmod(&fd, Mode::from_raw_mode(old.st_mode & 0o777));
        }
        let mut file = std::fs::File::from(fd.try_clone().map_err(io)?);
        file.write_all(content).and_then(|()| if sync { file.sync_data() } else { Ok(()) }).map_err(io)?;
        #[cfg(feature = "fault-points")]
        crate::fault::point("file-write-before-rename");
        if let Some(expect) = expect {
            let now = rustix::fs::statat(&dir, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW).ok();
            expect.check(now.as_ref(), &t.shown())?;
        }
        rustix::fs::renameat(&dir, tmp.as_os_str(), &dir, name.as_os_str())
            .map_err(|e| FileError::from_errno(e, &t.shown()))
    })();
    if written.is_err() {
        let _ = rustix::fs::unlinkat(&dir, tmp.as_os_str(), AtFlags::empty());
    }
    written
}

/// `write`: create or replace a file with `content`, atomically, making missing folders. The new
/// file is synced before the rename unless `"sync": false`: the rename alone already means a
/// reader (or a killed session) never sees a half-written file; the sync adds durability across
/// a power loss, at the disk's price (about 0.5 ms on the development VM). With `expect`, only
/// over that version of the file.
pub fn write(roots: &mut Roots, req: &Request) -> Result<String, FileError> {
    let content = req.str("content")?.to_owned();
    let t = roots.resolve(&req.path("path", None)?, true)?;
    if let Some((_, parents)) = t.names().split_last() {
        make_folders(&t, parents)?;
    }
    let expect = Version::from_request(req)?;
    write_atomically(&t, content.as_bytes(), req.opt_bool("sync")?.unwrap_or(true), expect.as_ref())?;
    Ok(json::Object::new().num("size", content.len() as u64).finish())
}

/// `edit`: replace `old`, which must occur exactly once, with `new`; with `expect`, only in that
/// version of the file.
pub fn edit(roots: &mut Roots, req: &Request) -> Result<String, FileError> {
    let (old, new) = (req.str("old")?.to_owned(), req.str("new")?.to_owned());
    if old.is_empty() {
        return Err(FileError::new("bad_request", "`old` is empty"));
    }
    let expect = Version::from_request(req)?;
    let t = roots.resolve(&req.path("path", None)?, true)?;
    let (fd, st) = open_regular(&t)?;
    if let Some(expect) = &expect {
        expect.check(Some(&st), &t.shown())?;
    }
    let size = st.st_size as u64;
    // The whole file is rewritten, so it must be read whole: a larger one is refused rather than
    // cut short.
    if size > MAX_EDIT_BYTES {
        return Err(FileError::new(
            "too_large",
            format!("`{}` is over {} MiB; edit it in parts", t.shown(), MAX_EDIT_BYTES >> 20),
        ));
    }
    let bytes = read_all(&fd, MAX_EDIT_BYTES + 1)?;
    if bytes.len() as u64 > MAX_EDIT_BYTES {
        return Err(FileError::new(
            "too_large",
            format!("`{}` grew past {} MiB while being read", t.shown(), MAX_EDIT_BYTES >> 20),
        ));
    }
    let finder = memchr::memmem::Finder::new(old.as_bytes());
    let mut hits = finder.find_iter(&bytes);
    let (Some(at), rest) = (hits.next(), hits.count()) else {
        return Err(FileError::new("not_found", format!("`old` does not occur in `{}`", t.shown())));
    };
    if rest > 0 {
        return Err(FileError::new(
            "not_unique",
            format!("`old` occurs {} times in `{}`; give more context", rest + 1, t.shown()),
        ));
    }
    let mut out = Vec::with_capacity(bytes.len() + new.len());
    out.extend_from_slice(&bytes[..at]);
    out.extend_from_slice(new.as_bytes());
    out.extend_from_slice(&bytes[at + old.len()..]);
    // Whatever `expect` said, the name must still be the file read, unchanged.
    write_atomically(&t, &out, req.opt_bool("sync")?.unwrap_or(true), Some(&Version::of(&st)))?;
    Ok(json::Object::new().num("size", out.len() as u64).finish())
}
