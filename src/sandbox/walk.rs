//! A path resolved as the kernel would resolve it, one name at a time from `/`, never following
//! a link blindly: a link's own path is noted and its target walked in its place. Used to find
//! the holes (what a secret's name leads to, and every link on the way: see [`super::holes`])
//! and the places the next call trusts (see [`super::trusted`]).
//!
//! What it trusts: the kernel's `O_NOFOLLOW` opens, `fstat` and `readlinkat`.

use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStringExt as _;
use std::path::{Component, Path, PathBuf};
use std::rc::Rc;

use rustix::fs::{FileType, Mode, OFlags};
use rustix::io::Errno;

use super::mounts;

/// What a walk found: the file or folder itself.
#[derive(Debug)]
pub struct Found {
    /// An `O_PATH` descriptor of it.
    pub fd: OwnedFd,
    /// (device, inode), for the world to check it finds the same one.
    pub id: (u64, u64),
    pub folder: bool,
    /// The (device, inode) of each folder it was found through, `/` first: what no grant's
    /// entry may be granted whole as (see the module's documentation).
    pub ways: Vec<(u64, u64)>,
}

/// Where a walk ended.
pub struct Walk {
    /// The path without links: of what was found, or of where it would be (see [`would_be`]).
    /// `None` when the walk stopped at a folder neither lnk nor the program may search, or at
    /// too many links.
    pub real: Option<PathBuf>,
    /// Each link passed, by its own path (without links).
    pub links: Vec<PathBuf>,
    /// Each folder a `..` stepped out of, by its own path (without links): where the walk went
    /// depends on what is at that name (a link put there leads its `..` anywhere), so it is
    /// kept in place as a link on the way is.
    pub kept: Vec<PathBuf>,
    /// What is there, if anything.
    pub found: Option<Found>,
    /// The mount `real` lies in (of the last folder that exists, when nothing is there), when
    /// asked for.
    pub mount: Option<u64>,
}

/// How many links one path may pass through, as the kernel's own limit.
const MAX_LINKS: usize = 40;

/// What the walks so far found: the folders (each reached from `/` without a link), by path, each
/// with its device and inode, and the names found missing in them. Most holes share their first
/// folders (`/home/ann`, `/etc`), which are then opened once, and many share a missing first
/// name (`~/.config` of `~/.config/gh`, `~/.config/gcloud`, …), looked for once.
#[derive(Default)]
pub struct Folders {
    found: std::collections::HashMap<PathBuf, (Rc<OwnedFd>, (u64, u64))>,
    missing: std::collections::HashSet<PathBuf>,
}

impl Folders {
    pub fn new() -> Folders {
        Folders::default()
    }

    fn get(&self, path: &Path) -> Option<&(Rc<OwnedFd>, (u64, u64))> {
        self.found.get(path)
    }

    fn insert(&mut self, path: PathBuf, folder: (Rc<OwnedFd>, (u64, u64))) {
        self.found.insert(path, folder);
    }
}

/// Walks `path` from `/` one name at a time, never following a link blindly: a link's target is
/// walked in its place, as the kernel would. With `want_mount`, also finds the mount where it
/// ends.
pub fn walk(path: &Path, walked: &mut Folders, want_mount: bool) -> Result<Walk, String> {
    let root = super::no_symlinks::root().map_err(|e| format!("cannot open /: {e}"))?;
    // Start from the deepest folder of `path` already walked, if any.
    let mut done = PathBuf::from("/");
    let mut current: Option<Rc<OwnedFd>> = None;
    for ancestor in path.ancestors().skip(1) {
        if let Some((fd, _)) = walked.get(ancestor) {
            done = ancestor.to_owned();
            current = Some(fd.clone());
            break;
        }
    }
    let rest = path.strip_prefix(&done).unwrap_or(path);
    let mut pending: Vec<OsString> = names_reversed(rest);
    let mut links = Vec::new();
    let mut kept = Vec::new();
    let mut last: Option<(OwnedFd, rustix::fs::Stat)> = None;
    let stopped = |links, kept| Ok(Walk { real: None, links, kept, found: None, mount: None });
    while let Some(name) = pending.pop() {
        if name == "." {
            continue;
        }
        if name == ".." {
            // The folders walked so far have no links, so their parent is the one walked
            // before (a `..` of a link's target, or of the path itself).
            if done != Path::new("/") && !kept.contains(&done) {
                kept.push(done.clone());
            }
            done.pop();
            current = match done == Path::new("/") {
                true => None,
                false => Some(
                    walked
                        .get(&done)
                        .map(|(fd, _)| fd.clone())
                        .ok_or_else(|| format!("`{}` was not walked", done.display()))?,
                ),
            };
            last = None;
            continue;
        }
        let dir: &OwnedFd = current.as_deref().unwrap_or(root);
        // A name this walk's folder was found not to hold (by an earlier walk): nothing there.
        if !want_mount && walked.missing.contains(&done.join(&name)) {
            return Ok(Walk {
                real: Some(would_be(&done, &name, &pending)),
                links,
                kept,
                found: None,
                mount: None,
            });
        }
        let fd = match rustix::fs::openat(
            dir,
            name.as_os_str(),
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(Errno::NOENT) | Err(Errno::NOTDIR) => {
                walked.missing.insert(done.join(&name));
                // Nothing there: where it would be, and the mount of the last folder that is.
                let mount = match want_mount {
                    true => Some(mounts::mount_id(dir)?),
                    false => None,
                };
                let real = Some(would_be(&done, &name, &pending));
                return Ok(Walk { real, links, kept, found: None, mount });
            }
            Err(Errno::ACCESS) => {
                unsearchable(dir, &done)?;
                return stopped(links, kept);
            }
            Err(e) => return Err(format!("cannot look for `{}`: {e}", path.display())),
        };
        let stat = rustix::fs::fstat(&fd)
            .map_err(|e| format!("cannot stat `{}`: {e}", done.join(&name).display()))?;
        if FileType::from_raw_mode(stat.st_mode) == FileType::Symlink {
            if links.len() >= MAX_LINKS {
                return stopped(links, kept);
            }
            let link = done.join(&name);
            let target = rustix::fs::readlinkat(dir, name.as_os_str(), Vec::new())
                .map_err(|e| format!("cannot read the link `{}`: {e}", link.display()))?;
            links.push(link);
            let target = PathBuf::from(OsString::from_vec(target.into_bytes()));
            if target.is_absolute() {
                current = None;
                done = PathBuf::from("/");
            }
            // The target's names are walked next, before the rest of the path.
            pending.extend(names_reversed(&target));
            last = None;
            continue;
        }
        done.push(&name);
        if pending.is_empty() {
            last = Some((fd, stat));
        } else {
            let fd = Rc::new(fd);
            walked.insert(done.clone(), (fd.clone(), (stat.st_dev, stat.st_ino)));
            current = Some(fd);
        }
    }
    let (fd, stat) = match last {
        Some(found) => found,
        // The path ended on a folder reached by `..` or was `/` itself: open what `done` names.
        None => {
            let fd = super::grants::open_no_symlinks(&done, false)
                .map_err(|e| e.to_string())?
                .ok_or_else(|| format!("`{}` vanished while it was looked at", done.display()))?;
            let stat =
                rustix::fs::fstat(&fd).map_err(|e| format!("cannot stat `{}`: {e}", done.display()))?;
            (fd, stat)
        }
    };
    let mount = match want_mount {
        true => Some(mounts::mount_id(&fd)?),
        false => None,
    };
    // The folders it was found through, `/` first.
    let root_id =
        rustix::fs::fstat(root).map(|s| (s.st_dev, s.st_ino)).map_err(|e| format!("cannot stat /: {e}"))?;
    let mut ways = vec![root_id];
    let mut above: Vec<(u64, u64)> =
        done.ancestors().skip(1).filter_map(|a| walked.get(a).map(|(_, id)| *id)).collect();
    above.reverse();
    ways.extend(above);
    let folder = FileType::from_raw_mode(stat.st_mode) == FileType::Directory;
    let found = Found { fd, id: (stat.st_dev, stat.st_ino), folder, ways };
    Ok(Walk { real: Some(done), links, kept, found: Some(found), mount })
}

/// Where a walk that found `name` missing in `done` (with `pending` names still to go, last
/// first) would end: the rest of the names after it, or, when a `..` follows, the missing name
/// itself. Past a missing name a `..` means nothing yet: the path resolves only once something
/// is made at that name, and what it leads to then depends on what is made (a folder, or a link
/// to anywhere); so that name is where nothing may be made (found in review: a person's
/// `~/.netrc` → `Link/Files/missing/../netrc` let a call make `missing` and then the secret).
fn would_be(done: &Path, name: &std::ffi::OsStr, pending: &[OsString]) -> PathBuf {
    let mut real = done.join(name);
    if !pending.iter().any(|n| n == "..") {
        real.extend(pending.iter().rev().filter(|n| *n != "."));
    }
    real
}

/// `path`'s names, last first (so `pop` yields them in order).
fn names_reversed(path: &Path) -> Vec<OsString> {
    let mut names: Vec<OsString> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_owned()),
            Component::ParentDir => Some(OsString::from("..")),
            _ => None,
        })
        .collect();
    names.reverse();
    names
}

/// A folder on the way to a hole that cannot be searched: a refusal when the caller owns it
/// (its owner, the program, could open it again), else nothing is reachable beneath it.
fn unsearchable(dir: &OwnedFd, path: &Path) -> Result<(), String> {
    let owner = rustix::fs::fstat(dir).map(|s| s.st_uid).ok();
    if owner == Some(rustix::process::geteuid().as_raw()) {
        return Err(format!(
            "cannot look inside `{}` (permission denied) for the protected paths beneath it; its owner, \
             and so a program of the sandbox, could open it again, so lnk will not run without knowing \
             what to keep out. Fix: `chmod u+rx {}`",
            path.display(),
            path.display()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_hole_is_found_where_it_would_be() {
        let d = std::env::temp_dir().join(format!(
            "lnk-walk-{}-{}",
            rustix::process::getuid().as_raw(),
            std::process::id()
        ));
        let mut walked = Folders::new();
        let w = walk(&d.join("no/such/./x"), &mut walked, true).unwrap();
        assert_eq!(w.real, Some(d.join("no/such/x")));
        assert!(w.found.is_none() && w.mount.is_some());
    }

    #[test]
    fn past_a_missing_name_a_dot_dot_makes_that_name_where_it_would_be() {
        let d = std::env::temp_dir().join(format!(
            "lnk-walk-missing-dots-{}-{}",
            rustix::process::getuid().as_raw(),
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("files")).unwrap();
        std::os::unix::fs::symlink("files/missing/../netrc", d.join(".netrc")).unwrap();
        let w = walk(&d.join(".netrc"), &mut Folders::new(), false).unwrap();
        assert_eq!(w.real, Some(d.join("files/missing")));
        assert!(w.found.is_none());
        // Without a `..` after it, where it would be is the whole rest.
        let w = walk(&d.join("files/no/such/x"), &mut Folders::new(), false).unwrap();
        assert_eq!(w.real, Some(d.join("files/no/such/x")));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_relative_path_with_dots_and_links_is_walked_to_where_it_leads() {
        let d = std::env::temp_dir().join(format!(
            "lnk-walk-dots-{}-{}",
            rustix::process::getuid().as_raw(),
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("a/b")).unwrap();
        std::fs::write(d.join("a/f"), "x").unwrap();
        std::os::unix::fs::symlink("b", d.join("a/l")).unwrap();
        let w = walk(&d.join("a/l/../f"), &mut Folders::new(), false).unwrap();
        assert_eq!(w.real, Some(d.join("a/f")));
        assert_eq!(w.links, vec![d.join("a/l")]);
        // The `..` stepped out of the link's target: that folder is kept in place.
        assert_eq!(w.kept, vec![d.join("a/b")]);
        assert!(w.found.is_some_and(|f| !f.folder));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
