//! `read`, `list` and `stat`: what a file holds and what a folder lists, never through a link.

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use super::super::roots::{Roots, open_beneath};
use super::super::{FileError, Request};
use super::*;
use crate::json;

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
