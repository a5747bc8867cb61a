//! The file tool's operations, each through descriptors from its root (see `roots`).

use std::io::Write as _;
use std::os::fd::OwnedFd;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::roots::{Roots, Target, open_beneath};
use super::{FileError, Request};
use crate::json;

/// At most this many bytes of a file are read for one answer.
pub const MAX_READ_BYTES: u64 = 1 << 20;
/// The largest file `edit` rewrites.
pub const MAX_EDIT_BYTES: u64 = 64 << 20;
/// Lines returned by a read when no limit is given.
pub const DEFAULT_READ_LINES: u64 = 2000;
/// Search results when no limit is given, and the most a search returns.
pub const DEFAULT_SEARCH_RESULTS: u64 = 200;
pub const MAX_SEARCH_RESULTS: u64 = 2000;
/// Files larger than this are not searched.
pub const MAX_SEARCH_FILE: u64 = 8 << 20;
/// A search visits at most this many entries, and this deep.
pub const MAX_SEARCH_ENTRIES: usize = 100_000;
pub const MAX_SEARCH_DEPTH: usize = 32;

fn kind_name(t: FileType) -> &'static str {
    match t {
        FileType::RegularFile => "file",
        FileType::Directory => "folder",
        FileType::Symlink => "symlink",
        FileType::Fifo => "fifo",
        FileType::Socket => "socket",
        FileType::CharacterDevice | FileType::BlockDevice => "device",
        _ => "other",
    }
}

/// Opens a regular file for reading, never blocking on a FIFO and never following a link.
fn open_regular(t: &Target<'_>) -> Result<(OwnedFd, u64), FileError> {
    let fd = open_beneath(
        t.root,
        &t.rel_str(),
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY,
        Mode::empty(),
    )?;
    let st = rustix::fs::fstat(&fd).map_err(|e| FileError::from_errno(e, &t.rel_str()))?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Err(FileError::new(
            "not_a_file",
            format!("`{}` is a {}", t.rel, kind_name(FileType::from_raw_mode(st.st_mode))),
        ));
    }
    Ok((fd, st.st_size as u64))
}

fn read_all(fd: &OwnedFd, limit: u64) -> Result<Vec<u8>, FileError> {
    let mut buf = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(std::fs::File::from(fd.try_clone().map_err(io)?), limit),
        &mut buf,
    )
    .map_err(|e| FileError::new("io", e.to_string()))?;
    Ok(buf)
}

fn io(e: impl std::fmt::Display) -> FileError {
    FileError::new("io", e.to_string())
}

/// Binary: a NUL in the first 8 KiB, or bytes that are not UTF-8 (a character cut at the end of
/// what was read does not count).
fn is_binary(bytes: &[u8]) -> bool {
    memchr::memchr(0, &bytes[..bytes.len().min(8192)]).is_some()
        || std::str::from_utf8(bytes).is_err_and(|e| e.error_len().is_some())
}

/// `read`: lines `offset` (0-based) to `offset + limit`, or a byte range with `byte_offset` and
/// `byte_length`. A binary file answers its size and `binary: true`, not its bytes.
pub fn read(roots: &mut Roots, req: &Request) -> Result<String, FileError> {
    let t = roots.resolve(req.str("path")?, false)?;
    let (fd, size) = open_regular(&t)?;
    if let Some(byte_offset) = req.opt_u64("byte_offset")? {
        let len = req.opt_u64("byte_length")?.unwrap_or(MAX_READ_BYTES).min(MAX_READ_BYTES);
        let mut buf = vec![0u8; len.min(size.saturating_sub(byte_offset)) as usize];
        let n = rustix::io::pread(&fd, &mut buf, byte_offset).map_err(io)?;
        buf.truncate(n);
        let binary = is_binary(&buf);
        let mut o = json::Object::new()
            .num("size", size)
            .num("byte_offset", byte_offset)
            .num("byte_length", n as u64)
            .bool("binary", binary);
        if !binary {
            o = o.str("text", &String::from_utf8_lossy(&buf));
        }
        return Ok(o.finish());
    }
    let bytes = read_all(&fd, MAX_READ_BYTES + 1)?;
    let truncated_file = bytes.len() as u64 > MAX_READ_BYTES;
    let bytes = &bytes[..bytes.len().min(MAX_READ_BYTES as usize)];
    if is_binary(bytes) {
        return Ok(json::Object::new().num("size", size).bool("binary", true).finish());
    }
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or_default(),
    };
    let offset = req.opt_u64("offset")?.unwrap_or(0) as usize;
    let limit = req.opt_u64("limit")?.unwrap_or(DEFAULT_READ_LINES) as usize;
    // Skip `offset` lines, stopping at the end of the text: the offset is the caller's number
    // and may be far larger than the file (found by fuzzing: a loop to it never ended).
    let mut start = 0;
    let mut line = 0;
    while line < offset && start < text.len() {
        match memchr::memchr(b'\n', &text.as_bytes()[start..]) {
            Some(i) => start += i + 1,
            None => start = text.len(),
        }
        line += 1;
    }
    let mut end = start;
    let mut taken = 0;
    while taken < limit && end < text.len() {
        end = memchr::memchr(b'\n', &text.as_bytes()[end..]).map_or(text.len(), |i| end + i + 1);
        taken += 1;
    }
    let more = end < text.len() || truncated_file;
    Ok(json::Object::new()
        .num("size", size)
        .num("offset", offset as u64)
        .num("lines", taken as u64)
        .bool("more", more)
        .str("text", &text[start..end])
        .finish())
}

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

fn entries(dir: &OwnedFd) -> Result<Vec<(String, FileType, u64)>, FileError> {
    let fd =
        rustix::fs::openat(dir, ".", OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
            .map_err(io)?;
    let reader = rustix::fs::Dir::read_from(&fd).map_err(io)?;
    let mut out = Vec::new();
    for entry in reader {
        let entry = entry.map_err(io)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == "." || name == ".." {
            continue;
        }
        let Ok(st) = rustix::fs::statat(&fd, entry.file_name(), AtFlags::SYMLINK_NOFOLLOW) else { continue };
        out.push((name, FileType::from_raw_mode(st.st_mode), st.st_size as u64));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// `list`: a folder's entries with their kinds and sizes (links are listed, not followed).
pub fn list(roots: &mut Roots, req: &Request) -> Result<String, FileError> {
    let t = roots.resolve(req.opt_str("path")?.unwrap_or("."), false)?;
    let dir = open_beneath(t.root, &t.rel_str(), OFlags::PATH | OFlags::DIRECTORY, Mode::empty())?;
    let items = entries(&dir)?.into_iter().map(|(name, kind, size)| {
        json::Object::new().str("name", &name).str("kind", kind_name(kind)).num("size", size).finish()
    });
    Ok(json::Object::new().raw("entries", &json::array(items)).finish())
}

/// `stat`: kind, size and modification time (a link is described, not followed).
pub fn stat(roots: &mut Roots, req: &Request) -> Result<String, FileError> {
    let t = roots.resolve(req.str("path")?, false)?;
    let st = match t.split() {
        None => rustix::fs::fstat(&t.root.fd).map_err(io)?,
        Some((parent, name)) => {
            let dir = open_beneath(t.root, &parent, OFlags::PATH | OFlags::DIRECTORY, Mode::empty())?;
            rustix::fs::statat(&dir, name.as_str(), AtFlags::SYMLINK_NOFOLLOW)
                .map_err(|e| FileError::from_errno(e, &t.rel_str()))?
        }
    };
    let modified_ms = st.st_mtime as i128 * 1000 + i128::from(st.st_mtime_nsec as i64 / 1_000_000);
    Ok(json::Object::new()
        .str("kind", kind_name(FileType::from_raw_mode(st.st_mode)))
        .num("size", st.st_size as u64)
        .num("modified_ms", modified_ms)
        .finish())
}

/// `search`: a literal string across a folder tree; files and line numbers, bounded; binary
/// files, links and special files are skipped.
pub fn search(roots: &mut Roots, req: &Request) -> Result<String, FileError> {
    let query = req.str("query")?.to_owned();
    if query.is_empty() || query.contains('\n') {
        return Err(FileError::new("bad_request", "`query` is one non-empty line"));
    }
    let limit = req.opt_u64("limit")?.unwrap_or(DEFAULT_SEARCH_RESULTS).min(MAX_SEARCH_RESULTS) as usize;
    let t = roots.resolve(req.opt_str("path")?.unwrap_or("."), false)?;
    let top = open_beneath(t.root, &t.rel_str(), OFlags::PATH | OFlags::DIRECTORY, Mode::empty())?;
    let finder = memchr::memmem::Finder::new(query.as_bytes());
    let mut results = Vec::new();
    let mut visited = 0;
    let mut stack = vec![(top, String::new(), 0usize)];
    let prefix = if t.rel.is_root() {
        String::new()
    } else {
        format!("{}/", req.opt_str("path")?.unwrap_or(".").trim_end_matches('/'))
    };
    'walk: while let Some((dir, rel, depth)) = stack.pop() {
        for (name, kind, size) in entries(&dir)? {
            visited += 1;
            if visited > MAX_SEARCH_ENTRIES {
                break 'walk;
            }
            let path = if rel.is_empty() { name.clone() } else { format!("{rel}/{name}") };
            match kind {
                FileType::Directory if depth < MAX_SEARCH_DEPTH => {
                    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
                    if let Ok(sub) = rustix::fs::openat(&dir, name.as_str(), flags, Mode::empty()) {
                        stack.push((sub, path, depth + 1));
                    }
                }
                FileType::RegularFile if size <= MAX_SEARCH_FILE => {
                    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
                    let Ok(fd) = rustix::fs::openat(&dir, name.as_str(), flags, Mode::empty()) else {
                        continue;
                    };
                    let Ok(bytes) = read_all(&fd, MAX_SEARCH_FILE) else { continue };
                    if memchr::memchr(0, &bytes[..bytes.len().min(8192)]).is_some() {
                        continue;
                    }
                    for at in finder.find_iter(&bytes) {
                        let line_start = memchr::memrchr(b'\n', &bytes[..at]).map_or(0, |i| i + 1);
                        let line_end = memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |i| at + i);
                        let line_no = memchr::memchr_iter(b'\n', &bytes[..at]).count() + 1;
                        let text =
                            String::from_utf8_lossy(&bytes[line_start..line_end.min(line_start + 500)]);
                        results.push(
                            json::Object::new()
                                .str("path", &format!("{prefix}{path}"))
                                .num("line", line_no as u64)
                                .str("text", &text)
                                .finish(),
                        );
                        if results.len() >= limit {
                            break 'walk;
                        }
                    }
                }
                _ => {}
            }
        }
    }
    let complete = results.len() < limit && visited <= MAX_SEARCH_ENTRIES;
    Ok(json::Object::new().raw("matches", &json::array(results)).bool("complete", complete).finish())
}

/// `mkdir`: a folder, with its parents.
pub fn mkdir(roots: &mut Roots, req: &Request) -> Result<String, FileError> {
    let t = roots.resolve(req.str("path")?, true)?;
    make_folders(&t, &t.rel_str())?;
    Ok("{}".into())
}

/// Makes each folder of `rel` (beneath the target's root) that is missing, one name at a time,
/// never through a link.
fn make_folders(t: &Target<'_>, rel: &str) -> Result<(), FileError> {
    let mut current = open_beneath(t.root, ".", OFlags::PATH | OFlags::DIRECTORY, Mode::empty())?;
    let mut so_far = String::new();
    for name in rel.split('/').filter(|n| !n.is_empty() && *n != ".") {
        match rustix::fs::mkdirat(&current, name, Mode::from_raw_mode(0o755)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(FileError::from_errno(e, name)),
        }
        if !so_far.is_empty() {
            so_far.push('/');
        }
        so_far.push_str(name);
        // Reopened from the root, so a link in its place is refused as a link.
        current = open_beneath(t.root, &so_far, OFlags::PATH | OFlags::DIRECTORY, Mode::empty())?;
    }
    Ok(())
}

/// `move`: rename `from` to `to` (both where writes are granted); never replaces a folder.
pub fn rename(roots: &mut Roots, req: &Request) -> Result<String, FileError> {
    let (from, to) = (req.str("from")?.to_owned(), req.str("to")?.to_owned());
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
        src_name.as_str(),
        &dst_dir,
        dst_name.as_str(),
        rustix::fs::RenameFlags::NOREPLACE,
    )
    .map_err(|e| FileError::from_errno(e, &to))?;
    Ok("{}".into())
}

/// `remove`: a file or link, or an empty folder; a folder with contents only with `recursive`.
pub fn remove(roots: &mut Roots, req: &Request) -> Result<String, FileError> {
    let recursive = req.opt_bool("recursive")?.unwrap_or(false);
    let t = roots.resolve(req.str("path")?, true)?;
    let (parent, name) = t.split().ok_or_else(|| FileError::new("bad_path", "the root cannot be removed"))?;
    let dir = open_beneath(t.root, &parent, OFlags::PATH | OFlags::DIRECTORY, Mode::empty())?;
    let st = rustix::fs::statat(&dir, name.as_str(), AtFlags::SYMLINK_NOFOLLOW)
        .map_err(|e| FileError::from_errno(e, &t.rel_str()))?;
    if FileType::from_raw_mode(st.st_mode) != FileType::Directory {
        rustix::fs::unlinkat(&dir, name.as_str(), AtFlags::empty())
            .map_err(|e| FileError::from_errno(e, &t.rel_str()))?;
        return Ok("{}".into());
    }
    if recursive {
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let sub = rustix::fs::openat(&dir, name.as_str(), flags, Mode::empty()).map_err(io)?;
        remove_contents(&sub, 0)?;
    }
    rustix::fs::unlinkat(&dir, name.as_str(), AtFlags::REMOVEDIR).map_err(|e| match e {
        Errno::NOTEMPTY => {
            FileError::new("not_empty", format!("`{}` is not empty; pass \"recursive\": true", t.rel))
        }
        e => FileError::from_errno(e, &t.rel_str()),
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
            let sub = rustix::fs::openat(dir, name.as_str(), flags, Mode::empty()).map_err(io)?;
            remove_contents(&sub, depth + 1)?;
            rustix::fs::unlinkat(dir, name.as_str(), AtFlags::REMOVEDIR).map_err(io)?;
        } else {
            rustix::fs::unlinkat(dir, name.as_str(), AtFlags::empty()).map_err(io)?;
        }
    }
    Ok(())
}
