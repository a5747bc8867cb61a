//! `search`: a literal string across a folder tree, bounded in entries, depth and file size.
//!
//! A search never pretends to be whole: the answer says `complete: true` only when every regular
//! file beneath the folder was searched and every match is in the answer. Otherwise `stopped`
//! says why the walk ended early (`limit`: the result limit was reached; `entries`: it visited
//! [`MAX_SEARCH_ENTRIES`]) and `skipped` counts what it passed over: folders deeper than
//! [`MAX_SEARCH_DEPTH`] (`too_deep`), files over [`MAX_SEARCH_FILE`] (`too_large`), and folders
//! or files it could not open or read (`unreadable`: a mode that forbids it, a sandbox hole). An
//! unreadable folder beneath the searched one is counted and passed, never the end of the search.
//! Binary files, links and special files are not searched by design and do not count.
//!
//! Trusted with: that a search reads only beneath the folder the request named, through no link,
//! and says truly whether it is complete. What it trusts: `roots` for whether that folder may be
//! read, and the sandbox it runs in for the holes beneath it (each counted `unreadable`).

use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt as _;

use rustix::fs::{FileType, Mode, OFlags};

use super::super::roots::{Roots, open_beneath};
use super::super::{FileError, Request, names};
use super::*;
use crate::json;

/// What a search passed over.
#[derive(Default)]
struct Skipped {
    too_deep: u64,
    too_large: u64,
    unreadable: u64,
}

impl Skipped {
    fn none(&self) -> bool {
        self.too_deep == 0 && self.too_large == 0 && self.unreadable == 0
    }

    fn json(&self) -> String {
        json::Object::new()
            .num("too_deep", self.too_deep)
            .num("too_large", self.too_large)
            .num("unreadable", self.unreadable)
            .finish()
    }
}

/// `search`: a literal string across a folder tree; files and line numbers, bounded; binary
/// files, links and special files are skipped.
pub fn search(roots: &mut Roots, req: &Request) -> Result<String, FileError> {
    let query = req.str("query")?.to_owned();
    if query.is_empty() || query.contains('\n') {
        return Err(FileError::new("bad_request", "`query` is one non-empty line"));
    }
    let limit = req.opt_u64("limit")?.unwrap_or(DEFAULT_SEARCH_RESULTS).min(MAX_SEARCH_RESULTS) as usize;
    let path = req.path("path", Some("."))?;
    let t = roots.resolve(&path, false)?;
    let top = open_beneath(t.root, &t.rel_os(), OFlags::PATH | OFlags::DIRECTORY, Mode::empty())?;
    // The searched folder itself must be readable: that is an error, not a skip.
    let top_entries = entries(&top)?;
    let finder = memchr::memmem::Finder::new(query.as_bytes());
    let mut results = Vec::new();
    let mut skipped = Skipped::default();
    let mut stopped = None;
    let mut visited = 0;
    // Paths are bytes until answered (see `names`): the request's path as written, then names.
    let mut stack: Vec<(OwnedFd, Vec<u8>, usize)> = vec![(top, Vec::new(), 0)];
    let mut first = Some(top_entries);
    let prefix = if t.is_root() {
        Vec::new()
    } else {
        let mut p = path.as_slice();
        while let [rest @ .., b'/'] = p {
            p = rest;
        }
        [p, b"/"].concat()
    };
    'walk: while let Some((dir, rel, depth)) = stack.pop() {
        let listed = match first.take() {
            Some(listed) => listed,
            None => match entries(&dir) {
                Ok(listed) => listed,
                Err(_) => {
                    skipped.unreadable += 1;
                    continue;
                }
            },
        };
        for (name, kind, size) in listed {
            visited += 1;
            if visited > MAX_SEARCH_ENTRIES {
                stopped = Some("entries");
                break 'walk;
            }
            let path = if rel.is_empty() {
                name.as_bytes().to_vec()
            } else {
                [rel.as_slice(), b"/", name.as_bytes()].concat()
            };
            match kind {
                FileType::Directory if depth >= MAX_SEARCH_DEPTH => skipped.too_deep += 1,
                FileType::Directory => {
                    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
                    match rustix::fs::openat(&dir, name.as_os_str(), flags, Mode::empty()) {
                        Ok(sub) => stack.push((sub, path, depth + 1)),
                        Err(_) => skipped.unreadable += 1,
                    }
                }
                FileType::RegularFile if size > MAX_SEARCH_FILE => skipped.too_large += 1,
                FileType::RegularFile => {
                    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
                    let Ok(bytes) = rustix::fs::openat(&dir, name.as_os_str(), flags, Mode::empty())
                        .map_err(io)
                        .and_then(|fd| read_all(&fd, MAX_SEARCH_FILE))
                    else {
                        skipped.unreadable += 1;
                        continue;
                    };
                    if memchr::memchr(0, &bytes[..bytes.len().min(8192)]).is_some() {
                        continue;
                    }
                    for at in finder.find_iter(&bytes) {
                        let line_start = memchr::memrchr(b'\n', &bytes[..at]).map_or(0, |i| i + 1);
                        let line_end = memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |i| at + i);
                        let line_no = memchr::memchr_iter(b'\n', &bytes[..at]).count() + 1;
                        let text =
                            String::from_utf8_lossy(&bytes[line_start..line_end.min(line_start + 500)]);
                        let (shown, escaped) = names::for_answer(&[prefix.as_slice(), &path].concat());
                        let o = json::Object::new().str("path", &shown);
                        let o = if escaped { o.bool("escaped", true) } else { o };
                        results.push(o.num("line", line_no as u64).str("text", &text).finish());
                        if results.len() >= limit {
                            stopped = Some("limit");
                            break 'walk;
                        }
                    }
                }
                _ => {}
            }
        }
    }
    let complete = stopped.is_none() && skipped.none();
    let mut answer = json::Object::new().raw("matches", &json::array(results)).bool("complete", complete);
    if let Some(why) = stopped {
        answer = answer.str("stopped", why);
    }
    Ok(answer.raw("skipped", &skipped.json()).finish())
}
