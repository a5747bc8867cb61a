//! `search`: a literal string across a folder tree, bounded in entries, depth and file size.

use rustix::fs::{FileType, Mode, OFlags};

use super::super::roots::{Roots, open_beneath};
use super::super::{FileError, Request};
use super::*;
use crate::json;

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
