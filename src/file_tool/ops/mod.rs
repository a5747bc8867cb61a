//! The file tool's operations, each through descriptors from its root (see `roots`), one module
//! per kind of call: [`read`] (read, list, stat), [`write`] (write, edit, the atomic replace),
//! [`search`], and [`tree`] (mkdir, move, remove). What they share is here.
//!
//! Trusted with: that each operation reaches only the file its request named, beneath its root and
//! never through a link, and that its answer stays bounded. What it trusts: [`super::roots`] for
//! what may be read or written, and the kernel's descriptors.

mod read;
mod search;
pub mod temp;
mod tree;
mod write;

pub use read::{list, read, stat};
pub use search::search;
pub use tree::{mkdir, remove, rename};
pub use write::{edit, write};

use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStringExt as _;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat};

use super::FileError;
use super::roots::{Target, open_beneath};

/// At most this many bytes of a file are returned by one read (lines or a byte range).
pub const MAX_READ_BYTES: u64 = 1 << 20;
/// The most lines one read returns.
pub const MAX_READ_LINES: u64 = 10_000;
/// Entries a list returns when no limit is given, and the most it returns.
pub const DEFAULT_LIST_ENTRIES: u64 = 1000;
pub const MAX_LIST_ENTRIES: u64 = 5000;
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

pub(super) fn kind_name(t: FileType) -> &'static str {
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
pub(super) fn open_regular(t: &Target<'_>) -> Result<(OwnedFd, Stat), FileError> {
    let fd =
        open_beneath(t.root, &t.rel_os(), OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY, Mode::empty())?;
    let st = rustix::fs::fstat(&fd).map_err(|e| FileError::from_errno(e, &t.shown()))?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Err(FileError::new(
            "not_a_file",
            format!("`{}` is a {}", t.shown(), kind_name(FileType::from_raw_mode(st.st_mode))),
        ));
    }
    Ok((fd, st))
}

/// A file's modification time in nanoseconds since the epoch: with its size, the version
/// `read` and `stat` answer and `edit` and `write` can be told to expect.
pub(super) fn mtime_ns(st: &Stat) -> i128 {
    st.st_mtime as i128 * 1_000_000_000 + st.st_mtime_nsec as i128
}

pub(super) fn read_all(fd: &OwnedFd, limit: u64) -> Result<Vec<u8>, FileError> {
    let mut buf = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(std::fs::File::from(fd.try_clone().map_err(io)?), limit),
        &mut buf,
    )
    .map_err(|e| FileError::new("io", e.to_string()))?;
    Ok(buf)
}

pub(super) fn io(e: impl std::fmt::Display) -> FileError {
    FileError::new("io", e.to_string())
}

/// Binary: a NUL in the first 8 KiB, or bytes that are not UTF-8 (a character cut at the end of
/// what was read does not count).
pub(super) fn is_binary(bytes: &[u8]) -> bool {
    memchr::memchr(0, &bytes[..bytes.len().min(8192)]).is_some()
        || std::str::from_utf8(bytes).is_err_and(|e| e.error_len().is_some())
}

/// A folder's entries (not `.` and `..`), sorted by name (bytewise): name, kind, size.
pub(super) fn entries(dir: &OwnedFd) -> Result<Vec<(OsString, FileType, u64)>, FileError> {
    let fd =
        rustix::fs::openat(dir, ".", OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
            .map_err(io)?;
    let reader = rustix::fs::Dir::read_from(&fd).map_err(io)?;
    let mut out = Vec::new();
    for entry in reader {
        let entry = entry.map_err(io)?;
        let name = OsString::from_vec(entry.file_name().to_bytes().to_vec());
        if name == "." || name == ".." {
            continue;
        }
        let Ok(st) = rustix::fs::statat(&fd, entry.file_name(), AtFlags::SYMLINK_NOFOLLOW) else { continue };
        out.push((name, FileType::from_raw_mode(st.st_mode), st.st_size as u64));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}
