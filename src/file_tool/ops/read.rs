//! `read`, `list` and `stat`: what a file holds and what a folder lists, never through a link.
//!
//! Each answer is bounded and says whether more remains: a read returns at most
//! [`MAX_READ_LINES`] lines and [`MAX_READ_BYTES`] bytes, a list at most [`MAX_LIST_ENTRIES`]
//! entries; `"more": true` comes with `next_offset` (or `next_byte_offset`), the value to ask for
//! next. A read streams the file, so any line of any size of file can be reached.
//!
//! Trusted with: what a read, list or stat shows the agent: only what `roots` allowed, never
//! through a link, and without blocking on a FIFO. What it trusts: `roots` for what may be read;
//! nothing of what a file holds (any bytes: a binary file is said to be one, not shown).

use std::io::BufRead as _;
use std::os::unix::ffi::OsStrExt as _;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use super::super::roots::{Roots, open_beneath};
use super::super::{FileError, Request, names};
use super::*;
use crate::json;

/// `read`: lines `offset` (0-based) to `offset + limit`, or a byte range with `byte_offset` and
/// `byte_length`. A binary file answers its size and `binary: true`, not its bytes.
pub fn read(roots: &mut Roots, req: &Request) -> Result<String, FileError> {
    let t = roots.resolve(&req.path("path", None)?, false)?;
    let (fd, st) = open_regular(&t)?;
    let size = st.st_size as u64;
    let answer = json::Object::new().num("size", size).num("mtime_ns", mtime_ns(&st));
    if let Some(byte_offset) = req.opt_u64("byte_offset")? {
        let len = req.opt_u64("byte_length")?.unwrap_or(MAX_READ_BYTES).min(MAX_READ_BYTES);
        let mut buf = vec![0u8; len.min(size.saturating_sub(byte_offset)) as usize];
        let n = rustix::io::pread(&fd, &mut buf, byte_offset).map_err(io)?;
        buf.truncate(n);
        let binary = is_binary(&buf);
        let next = byte_offset + n as u64;
        let mut o = answer
            .num("byte_offset", byte_offset)
            .num("byte_length", n as u64)
            .bool("binary", binary)
            .bool("more", next < size);
        if next < size {
            o = o.num("next_byte_offset", next);
        }
        if !binary {
            o = o.str("text", &String::from_utf8_lossy(&buf));
        }
        return Ok(o.finish());
    }
    let mut head = [0u8; 8192];
    let n = rustix::io::pread(&fd, &mut head, 0).map_err(io)?;
    if memchr::memchr(0, &head[..n]).is_some() {
        return Ok(answer.bool("binary", true).finish());
    }
    let offset = req.opt_u64("offset")?.unwrap_or(0);
    let limit = req.opt_u64("limit")?.unwrap_or(DEFAULT_READ_LINES).min(MAX_READ_LINES);
    let lines = read_lines(fd, offset, limit)?;
    let mut text = lines.text;
    if let Err(e) = std::str::from_utf8(&text) {
        match e.error_len() {
            Some(_) => return Ok(answer.bool("binary", true).finish()),
            // A character cut by the byte bound: drop its first bytes.
            None => text.truncate(e.valid_up_to()),
        }
    }
    let mut o = answer.num("offset", offset).num("lines", lines.taken).bool("more", lines.more);
    if lines.more {
        o = o.num("next_offset", offset + lines.taken);
    }
    if lines.cut_line {
        o = o.bool("cut_line", true);
    }
    Ok(o.str("text", &String::from_utf8_lossy(&text)).finish())
}

/// Lines read from a file.
struct Lines {
    text: Vec<u8>,
    taken: u64,
    more: bool,
    /// The one line returned was longer than [`MAX_READ_BYTES`] and is cut there.
    cut_line: bool,
}

/// Skips `offset` lines, then takes whole lines while there are fewer than `limit` and they fit
/// in [`MAX_READ_BYTES`]; a first line that alone does not fit is returned cut (`cut_line`).
fn read_lines(fd: OwnedFd, offset: u64, limit: u64) -> Result<Lines, FileError> {
    let mut input = std::io::BufReader::with_capacity(64 << 10, std::fs::File::from(fd));
    // Never loops to the caller's offset past the end of the file (found by fuzzing).
    let mut skipped = 0;
    while skipped < offset {
        let buf = input.fill_buf().map_err(io)?;
        if buf.is_empty() {
            break;
        }
        let used = match memchr::memchr(b'\n', buf) {
            Some(i) => {
                skipped += 1;
                i + 1
            }
            None => buf.len(),
        };
        input.consume(used);
    }
    let mut lines = Lines { text: Vec::new(), taken: 0, more: false, cut_line: false };
    let mut line_start = 0;
    while lines.taken < limit {
        let buf = input.fill_buf().map_err(io)?;
        if buf.is_empty() {
            if lines.text.len() > line_start {
                lines.taken += 1; // the last line, without a newline
            }
            return Ok(lines);
        }
        let (chunk, ends_line) = match memchr::memchr(b'\n', buf) {
            Some(i) => (&buf[..=i], true),
            None => (buf, false),
        };
        if (lines.text.len() + chunk.len()) as u64 > MAX_READ_BYTES {
            if lines.taken == 0 {
                let room = MAX_READ_BYTES as usize - lines.text.len();
                lines.text.extend_from_slice(&chunk[..room]);
                lines.taken = 1;
                lines.cut_line = true;
            } else {
                lines.text.truncate(line_start);
            }
            lines.more = true;
            return Ok(lines);
        }
        lines.text.extend_from_slice(chunk);
        let used = chunk.len();
        input.consume(used);
        if ends_line {
            lines.taken += 1;
            line_start = lines.text.len();
        }
    }
    lines.more = !input.fill_buf().map_err(io)?.is_empty();
    Ok(lines)
}

/// `list`: a folder's entries with their kinds and sizes (links are listed, not followed),
/// sorted by name, `limit` of them from `offset`.
pub fn list(roots: &mut Roots, req: &Request) -> Result<String, FileError> {
    let offset = req.opt_u64("offset")?.unwrap_or(0);
    let limit = req.opt_u64("limit")?.unwrap_or(DEFAULT_LIST_ENTRIES).min(MAX_LIST_ENTRIES);
    let t = roots.resolve(&req.path("path", Some("."))?, false)?;
    let dir = open_beneath(t.root, &t.rel_os(), OFlags::PATH | OFlags::DIRECTORY, Mode::empty())?;
    let all = entries(&dir)?;
    let total = all.len() as u64;
    let end = offset.saturating_add(limit).min(total);
    let items = all.into_iter().skip(offset as usize).take(limit as usize).map(|(name, kind, size)| {
        let (name, escaped) = names::for_answer(name.as_bytes());
        let o = json::Object::new().str("name", &name);
        let o = if escaped { o.bool("escaped", true) } else { o };
        o.str("kind", kind_name(kind)).num("size", size).finish()
    });
    let mut o =
        json::Object::new().raw("entries", &json::array(items)).num("total", total).bool("more", end < total);
    if end < total {
        o = o.num("next_offset", end);
    }
    Ok(o.finish())
}

/// `stat`: kind, size and modification time (a link is described, not followed).
pub fn stat(roots: &mut Roots, req: &Request) -> Result<String, FileError> {
    let t = roots.resolve(&req.path("path", None)?, false)?;
    let st = match t.split() {
        None => rustix::fs::fstat(&t.root.fd).map_err(io)?,
        Some((parent, name)) => {
            let dir = open_beneath(t.root, &parent, OFlags::PATH | OFlags::DIRECTORY, Mode::empty())?;
            rustix::fs::statat(&dir, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW)
                .map_err(|e| FileError::from_errno(e, &t.shown()))?
        }
    };
    let modified_ms = st.st_mtime as i128 * 1000 + i128::from(st.st_mtime_nsec as i64 / 1_000_000);
    Ok(json::Object::new()
        .str("kind", kind_name(FileType::from_raw_mode(st.st_mode)))
        .num("size", st.st_size as u64)
        .num("modified_ms", modified_ms)
        .num("mtime_ns", mtime_ns(&st))
        .finish())
}
