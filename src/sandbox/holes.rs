//! The holes in a call's grants, found on this computer: the paths the sandbox keeps out of every
//! grant they lie in (see [`crate::protected`]: the protected set, `[files] deny`, the agent's
//! records, lnk's private tmp base, and as root the system's secret files).
//!
//! Each hole is kept closed by two layers that do not depend on each other: Landlock, whose
//! grants are cut around it (see [`super::grants::open_around`]), and in the own world a mask
//! mounted over it (see [`super::world`]). Both are made from what this module finds, and an
//! earlier call's program must not be able to steer what it finds:
//!
//! - **Names.** A program cannot rename a folder on the way to a hole: Landlock lets it only list
//!   such a folder, and in the own world each one inside a write grant is also a mount point
//!   (a "pin"), which `rename` refuses to move. So a secret is found again by its name.
//! - **Links.** A hole's path is followed through symbolic links, as the kernel would follow it
//!   (a person's `~/.ssh` → `dotfiles/ssh`, `/data/keys`): where it leads is the secret, and is
//!   cut and masked as well as its name. No program of the sandbox can make a link on the way
//!   to a hole, since the folders there may only be listed (Landlock's cut, in both modes); a
//!   link there is the person's (or a program's under an earlier sandbox file that did not have
//!   the hole). Where it leads is never a hole when that is a grant or holds one: a link never
//!   moves a mask onto granted folders.
//! - **Aliases.** The folders a hole is found through (from `/` down) and the hole itself are
//!   noted by device and inode ([`Hole::ways`]): a grant's entry that is one of them by another
//!   name (a bind mount of the home inside a grant) is never granted whole, or the secret would
//!   be reachable beneath it (see [`super::grants::open_around`]).
//! - **Modes.** A folder on the way to a hole that the caller owns but cannot search (an earlier
//!   call's `chmod 000 ~`) refuses the call: its owner, the program, could open it again, and
//!   lnk could not see what to mask. A folder the caller neither owns nor can search keeps the
//!   program out exactly as it keeps lnk out, so the hole is "not there".
//! - **Nesting.** A hole beneath another is dropped: the outer one covers it (two masks, one
//!   inside the other, could not both be made).
//!
//! What it trusts: the kernel's `O_NOFOLLOW` opens and `fstat`.

use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::path::{Component, Path, PathBuf};
use std::rc::Rc;

use rustix::fs::{FileType, Mode, OFlags};
use rustix::io::Errno;

/// A hole in the call's grants.
#[derive(Debug)]
pub struct Hole {
    /// The path the grants are cut around.
    pub path: PathBuf,
    /// What is there now (opened without following a link), to mask; `None` when nothing is.
    pub found: Option<Found>,
}

/// A hole that exists: the file or folder itself.
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

impl Hole {
    /// The folders this hole was found through and the hole itself, by device and inode (none
    /// when it does not exist).
    pub fn ways(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.found.iter().flat_map(|f| f.ways.iter().copied().chain([f.id]))
    }
}

/// How far a walk got.
enum Walked {
    /// Nothing is at the path (or it leads through a folder neither lnk nor the program may
    /// search, or through too many links).
    Missing,
    /// It is there; `real` is its path without links.
    Found { real: PathBuf, found: Found },
}

/// How many links one path may pass through, as the kernel's own limit.
const MAX_LINKS: usize = 40;

/// Finds the holes `candidates` (absolute, without `..`) make in the grants `grants`. Returns an
/// error, naming the folder and the fix, when a folder the caller owns cannot be searched.
pub fn find(candidates: &[PathBuf], grants: &[&PathBuf]) -> Result<Vec<Hole>, String> {
    let mut holes: Vec<Hole> = Vec::with_capacity(candidates.len());
    let mut seen = std::collections::HashSet::new();
    let mut walked = Folders::new();
    for candidate in candidates {
        if !seen.insert(candidate.as_os_str().as_bytes()) {
            continue;
        }
        match walk(candidate, &mut walked)? {
            Walked::Missing => holes.push(Hole { path: candidate.clone(), found: None }),
            Walked::Found { real, found } if real == *candidate => {
                holes.push(Hole { path: real, found: Some(found) })
            }
            Walked::Found { real, found } => {
                // Through a person's link: the name is cut, and where it leads is as secret as the
                // name, when that lies in a grant and holds none.
                holes.push(Hole { path: candidate.clone(), found: None });
                let in_grant = grants.iter().any(|g| real.starts_with(g) && real != **g);
                let holds_grant = grants.iter().any(|g| g.starts_with(&real));
                if in_grant && !holds_grant {
                    holes.push(Hole { path: real, found: Some(found) });
                }
            }
        }
    }
    Ok(without_nested(holes))
}

/// Drops every hole that lies beneath another (or repeats it, keeping the one found).
fn without_nested(mut holes: Vec<Hole>) -> Vec<Hole> {
    // Shortest first, and of equal paths the found one first: an outer hole is kept before any
    // hole beneath it is looked at.
    holes.sort_by(|a, b| {
        a.path
            .as_os_str()
            .len()
            .cmp(&b.path.as_os_str().len())
            .then(b.found.is_some().cmp(&a.found.is_some()))
    });
    let mut kept: Vec<Hole> = Vec::with_capacity(holes.len());
    for hole in holes {
        if !kept.iter().any(|k| hole.path.starts_with(&k.path)) {
            kept.push(hole);
        }
    }
    kept
}

/// The folders walked so far (each reached from `/` without a link), by path, each with its
/// device and inode: most holes share their first folders (`/home/ann`, `/etc`), which are then
/// opened once.
type Folders = std::collections::HashMap<PathBuf, (Rc<OwnedFd>, (u64, u64))>;

/// Walks `path` from `/` one name at a time, never following a link blindly: a link's target is
/// walked in its place, as the kernel would.
fn walk(path: &Path, walked: &mut Folders) -> Result<Walked, String> {
    let root = super::grants::root().map_err(|e| format!("cannot open /: {e}"))?;
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
    let mut links = 0;
    let mut last: Option<(OwnedFd, rustix::fs::Stat)> = None;
    while let Some(name) = pending.pop() {
        if name == "." {
            continue;
        }
        if name == ".." {
            // Only from a link's relative target: the folders walked so far have no links, so
            // their parent is the one walked before.
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
        let fd = match rustix::fs::openat(
            dir,
            name.as_os_str(),
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(Errno::NOENT) | Err(Errno::NOTDIR) => return Ok(Walked::Missing),
            Err(Errno::ACCESS) => return unsearchable(dir, &done),
            Err(e) => return Err(format!("cannot look for `{}`: {e}", path.display())),
        };
        let stat = rustix::fs::fstat(&fd)
            .map_err(|e| format!("cannot stat `{}`: {e}", done.join(&name).display()))?;
        if FileType::from_raw_mode(stat.st_mode) == FileType::Symlink {
            links += 1;
            if links > MAX_LINKS {
                return Ok(Walked::Missing);
            }
            let link = done.join(&name);
            let target = rustix::fs::readlinkat(dir, name.as_os_str(), Vec::new())
                .map_err(|e| format!("cannot read the link `{}`: {e}", link.display()))?;
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
    // The folders it was found through, `/` first.
    let root_id =
        rustix::fs::fstat(root).map(|s| (s.st_dev, s.st_ino)).map_err(|e| format!("cannot stat /: {e}"))?;
    let mut ways = vec![root_id];
    let mut above: Vec<(u64, u64)> =
        done.ancestors().skip(1).filter_map(|a| walked.get(a).map(|(_, id)| *id)).collect();
    above.reverse();
    ways.extend(above);
    let folder = FileType::from_raw_mode(stat.st_mode) == FileType::Directory;
    Ok(Walked::Found { real: done, found: Found { fd, id: (stat.st_dev, stat.st_ino), folder, ways } })
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
fn unsearchable(dir: &OwnedFd, path: &Path) -> Result<Walked, String> {
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
    Ok(Walked::Missing)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Dir(PathBuf);
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    fn scratch(name: &str) -> Dir {
        let dir = std::env::temp_dir().join(format!("lnk-holes-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Dir(dir)
    }

    /// The holes, in the order of their paths, each with whether it was found.
    fn paths(holes: &[Hole]) -> Vec<(PathBuf, bool)> {
        let mut paths: Vec<(PathBuf, bool)> =
            holes.iter().map(|h| (h.path.clone(), h.found.is_some())).collect();
        paths.sort();
        paths
    }

    #[test]
    fn a_hole_beneath_another_is_dropped() {
        let d = scratch("nested");
        let home = d.0.join("home");
        std::fs::create_dir_all(home.join("proj/conf/s")).unwrap();
        let grant = home.clone();
        let holes =
            find(&[home.join("proj/conf/s"), home.join("proj"), home.join("proj")], &[&grant]).unwrap();
        assert_eq!(paths(&holes), vec![(home.join("proj"), true)]);
    }

    #[test]
    fn a_link_inside_a_write_grant_is_followed_but_never_onto_a_grant() {
        let d = scratch("planted");
        let home = d.0.join("home");
        std::fs::create_dir_all(home.join("proj/other/s")).unwrap();
        std::fs::create_dir_all(home.join("dotfiles/ssh")).unwrap();
        std::os::unix::fs::symlink("other", home.join("proj/conf")).unwrap();
        std::os::unix::fs::symlink("dotfiles/ssh", home.join(".ssh")).unwrap();
        let write = home.join("proj");
        let grant = home.clone();
        // The person's stow-style `~/.ssh` in a writable home: its target is the secret.
        let holes = find(&[home.join(".ssh"), home.join("proj/conf/s")], &[&grant, &write]).unwrap();
        assert_eq!(
            paths(&holes),
            vec![
                (home.join(".ssh"), false),
                (home.join("dotfiles/ssh"), true),
                (home.join("proj/conf/s"), false),
                (home.join("proj/other/s"), true),
            ]
        );
        // A link that leads to a grant (or above one) never makes it a hole.
        std::fs::remove_file(home.join("proj/conf")).unwrap();
        std::os::unix::fs::symlink("..", home.join("proj/conf")).unwrap();
        let holes = find(&[home.join("proj/conf")], &[&grant, &write]).unwrap();
        assert_eq!(paths(&holes), vec![(home.join("proj/conf"), false)]);
    }

    #[test]
    fn a_persons_link_outside_the_write_grants_makes_its_target_a_hole() {
        let d = scratch("persons");
        let home = d.0.join("home");
        std::fs::create_dir_all(d.0.join("data/keys")).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        std::os::unix::fs::symlink(d.0.join("data/keys"), home.join(".ssh")).unwrap();
        let (read_home, read_data) = (home.clone(), d.0.join("data"));
        let holes = find(&[home.join(".ssh")], &[&read_home, &read_data]).unwrap();
        assert_eq!(paths(&holes), vec![(d.0.join("data/keys"), true), (home.join(".ssh"), false)]);
        // A target that holds a grant is never a hole: a link cannot mask granted folders.
        std::fs::remove_file(home.join(".ssh")).unwrap();
        std::os::unix::fs::symlink(d.0.join("data"), home.join(".ssh")).unwrap();
        let holes = find(&[home.join(".ssh")], &[&read_home, &read_data]).unwrap();
        assert_eq!(paths(&holes), vec![(home.join(".ssh"), false)]);
    }

    #[test]
    fn a_relative_link_with_dots_is_walked_to_its_target() {
        let d = scratch("relative");
        std::fs::create_dir_all(d.0.join("a/b")).unwrap();
        std::fs::create_dir_all(d.0.join("keys/k")).unwrap();
        std::os::unix::fs::symlink("../../keys", d.0.join("a/b/l")).unwrap();
        let grant = d.0.clone();
        let holes = find(&[d.0.join("a/b/l/k")], &[&grant]).unwrap();
        assert_eq!(paths(&holes), vec![(d.0.join("a/b/l/k"), false), (d.0.join("keys/k"), true)]);
    }

    #[test]
    fn an_unsearchable_folder_the_caller_owns_refuses_the_call() {
        if rustix::process::geteuid().is_root() {
            // Root searches every folder: nothing to refuse (the ordinary-user pass runs this).
            eprintln!(
                "\n!!! SKIPPED as root: root searches every folder; the ordinary-user pass runs it !!!\n"
            );
            return;
        }
        use std::os::unix::fs::PermissionsExt as _;
        let d = scratch("mode");
        let home = d.0.join("home");
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o000)).unwrap();
        let grant = home.clone();
        let err = find(&[home.join(".ssh")], &[&grant]).unwrap_err();
        std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(err.contains(&format!("`chmod u+rx {}`", home.display())), "{err}");
    }
}
