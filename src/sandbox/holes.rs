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
//!   cut and masked as well as its name. Every link passed on the way that lies inside a write
//!   grant ([`Holes::links`]) is kept where it is for the call, as the folders on the way are:
//!   its folder may only be listed (Landlock), and in the own world the link itself is pinned
//!   (a mount point, which neither `unlink` nor `rename` moves). Else one call could retarget a
//!   link in a chain (`~/.ssh` → `work/a/l/keys`, `work/a/l` → `../b`) so that the next call
//!   masked a decoy and left the real keys open (found in review). Where a link leads is never
//!   a hole when that is a grant or holds one: a link never moves a mask onto granted folders.
//! - **Folders left by `..`.** A link's target (or a path) may step out of a folder with `..`
//!   (`~/.npmrc` → `proj/a/b/../../npmrc`): where that leads depends on what is at the folder's
//!   name, since a link put there leads its `..` anywhere. So each folder a `..` steps out of
//!   that lies inside a write grant ([`Holes::kept`]) is kept where it is as a link is (its
//!   folder may only be listed; in the own world it is pinned), while what it holds stays
//!   granted (found in review: a call renamed `proj/a` and put a link in its place, and the
//!   person's link led into a folder of the call's).
//! - **Other names.** A bind mount shows a folder at a second path (a home bound again inside a
//!   grant, `/etc` bound beneath `/srv`). Where the mount table has such mounts inside what the
//!   call may reach, every protected path, in a grant or not, is looked up, and each of its other
//!   names ([`super::mounts::MountTable::other_paths`]) that lies inside a grant or a system
//!   folder is a hole of its own, cut and masked like the first. As a last guard, the folders a
//!   hole is found through and the hole itself are noted by device and inode ([`Hole::ways`]):
//!   an entry of a cut folder that is one of them is never granted whole.
//! - **Modes.** A folder on the way to a hole that the caller owns but cannot search (an earlier
//!   call's `chmod 000 ~`) refuses the call: its owner, the program, could open it again, and
//!   lnk could not see what to mask. A folder the caller neither owns nor can search keeps the
//!   program out exactly as it keeps lnk out, so the hole is "not there".
//! - **Nesting.** A hole beneath another is dropped: the outer one covers it (two masks, one
//!   inside the other, could not both be made).
//!
//! Paths are compared as they come: absolute and normal (see [`crate::paths::normal`]), which
//! the callers guarantee.
//!
//! What it trusts: the kernel's `O_NOFOLLOW` opens and `fstat`, and its mount table.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::mounts::MountTable;
pub use super::walk::Found;
use super::walk::{Folders, walk};
use crate::paths::within;

/// A hole in the call's grants.
#[derive(Debug)]
pub struct Hole {
    /// The path the grants are cut around.
    pub path: PathBuf,
    /// What is there now (opened without following a link), to mask; `None` when nothing is.
    pub found: Option<Found>,
}

impl Hole {
    /// The folders this hole was found through and the hole itself, by device and inode (none
    /// when it does not exist).
    pub fn ways(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.found.iter().flat_map(|f| f.ways.iter().copied().chain([f.id]))
    }
}

/// What [`find`] found.
#[derive(Debug, Default)]
pub struct Holes {
    pub holes: Vec<Hole>,
    /// The links a hole was found through that lie inside a write grant, by their own paths
    /// (without links): kept where they are for the call (see the module's documentation).
    pub links: Vec<PathBuf>,
    /// The folders a `..` stepped out of on the way to a hole that lie inside a write grant
    /// (not a grant itself): kept where they are, what they hold granted.
    pub kept: Vec<PathBuf>,
}

/// What [`find`] looks for, and where.
pub struct Search<'a> {
    /// The holes in the grants, before links are followed (absolute, normal).
    pub candidates: &'a [PathBuf],
    /// The protected set wherever it lies, in a grant or not ([`crate::protected::beyond_grants`]):
    /// where a link or a bind mount shows one inside a grant by another name, that is a hole too.
    pub everywhere: &'a dyn Fn() -> Vec<PathBuf>,
    /// What the program may reach: its grants and the system's folders. A link's target there
    /// is a hole (unless it is or holds one of these), and so is another name of a secret.
    pub roots: &'a [&'a Path],
    /// The write grants: a link on the way to a hole inside one is kept in place.
    pub writable: &'a [&'a Path],
}

/// Finds the holes `search` describes. Returns an error, naming the folder and the fix, when a
/// folder the caller owns cannot be searched, or when the mount table cannot be read.
pub fn find(search: &Search<'_>) -> Result<Holes, String> {
    let mut finder = Finder { search, walked: Folders::new(), seen: HashSet::new(), found: Holes::default() };
    let table = MountTable::of_this_process()?;
    let aliases = table.has_aliases_within(search.roots);
    for candidate in search.candidates {
        finder.add(candidate)?;
    }
    // Every secret, in a grant or not: where its name leads through links, when that is inside
    // what the program may reach (a home no grant holds, whose `~/.ssh` is a link into a
    // grant); and with bind mounts about, its other names there.
    let mut others: Vec<PathBuf> = Vec::new();
    let mut everywhere = (search.everywhere)();
    if aliases {
        everywhere.extend(search.candidates.iter().cloned());
    }
    for path in everywhere {
        if finder.seen.contains(&path) && !aliases {
            continue;
        }
        let walk = walk(&path, &mut finder.walked, aliases)?;
        let through_links = !walk.links.is_empty();
        finder.keep_links(walk.links);
        finder.keep_folders(walk.kept);
        let Some(real) = walk.real else { continue };
        if let Some(mount) = walk.mount {
            let reachable = |p: &PathBuf| search.roots.iter().any(|r| within(p, r));
            let names: Vec<PathBuf> = table.other_paths(&real, mount).into_iter().filter(reachable).collect();
            if !names.is_empty() {
                // Landlock's rules belong to the files, not the names: a grant of another name
                // would open this one too, so the own world masks it here as well.
                others.push(real.clone());
            }
            others.extend(names);
        }
        if through_links {
            finder.add_target(real, walk.found);
        }
    }
    for other in others {
        finder.add(&other)?;
    }
    let Holes { holes, mut links, mut kept } = finder.found;
    links.sort();
    links.dedup();
    kept.sort();
    kept.dedup();
    Ok(Holes { holes: without_nested(holes), links, kept })
}

/// The state of one [`find`].
struct Finder<'a> {
    search: &'a Search<'a>,
    walked: Folders,
    seen: HashSet<PathBuf>,
    found: Holes,
}

impl Finder<'_> {
    /// Adds the holes `candidate` makes: its name, and where it leads when that is elsewhere.
    fn add(&mut self, candidate: &Path) -> Result<(), String> {
        if !self.seen.insert(candidate.to_owned()) {
            return Ok(());
        }
        let walk = walk(candidate, &mut self.walked, false)?;
        self.keep_links(walk.links);
        self.keep_folders(walk.kept);
        match (walk.real, walk.found) {
            (Some(real), Some(found)) if real == candidate => {
                self.found.holes.push(Hole { path: real, found: Some(found) })
            }
            (Some(real), found) if real != candidate => {
                // Through a link: the name is cut, and where it leads is as secret as the name,
                // whether something is there yet or not (a secret a person's tool will write
                // through the link must not find a file a call planted there).
                self.found.holes.push(Hole { path: candidate.to_owned(), found: None });
                self.add_target(real, found);
            }
            _ => self.found.holes.push(Hole { path: candidate.to_owned(), found: None }),
        }
        Ok(())
    }

    /// Where a secret's name leads through links is a hole when it lies in what the program may
    /// reach and holds none of it (a link never moves a hole onto granted folders). When nothing
    /// is there yet it is a hole by name, as a missing `deny` entry is: Landlock's cut then
    /// lets nothing be made or moved there, in either mode (found in review: a call made the
    /// missing folder a person's link led to, and planted a hard link where the person's tool
    /// would then write a token).
    fn add_target(&mut self, real: PathBuf, found: Option<Found>) {
        let roots = self.search.roots;
        let in_reach = roots.iter().any(|g| within(&real, g) && real.as_os_str() != g.as_os_str());
        let holds_root = roots.iter().any(|g| within(g, &real));
        if in_reach && !holds_root && self.seen.insert(real.clone()) {
            self.found.holes.push(Hole { path: real, found });
        }
    }

    /// Keeps the links of a walk that lie inside a write grant.
    fn keep_links(&mut self, links: Vec<PathBuf>) {
        let writable = self.search.writable;
        self.found.links.extend(links.into_iter().filter(|l| writable.iter().any(|w| within(l, w))));
    }

    /// Keeps the folders a walk's `..` stepped out of that lie inside a write grant (a grant
    /// itself is kept by its parent, which no write grant of the call holds, or by its own cut).
    fn keep_folders(&mut self, kept: Vec<PathBuf>) {
        let writable = self.search.writable;
        let inside = |k: &PathBuf| writable.iter().any(|w| within(k, w) && k.as_os_str() != w.as_os_str());
        self.found.kept.extend(kept.into_iter().filter(inside));
    }
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
        if !kept.iter().any(|k| within(&hole.path, &k.path)) {
            kept.push(hole);
        }
    }
    kept
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
        let dir = std::env::temp_dir().join(format!(
            "lnk-holes-{name}-{}-{}",
            rustix::process::getuid().as_raw(),
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Dir(dir)
    }

    /// The holes `candidates` make in `grants` (the first `writable` of them write grants).
    fn find_in(candidates: &[PathBuf], grants: &[&PathBuf], writable: usize) -> Result<Holes, String> {
        let roots: Vec<&Path> = grants.iter().map(|g| g.as_path()).collect();
        let search =
            Search { candidates, everywhere: &Vec::new, roots: &roots, writable: &roots[..writable] };
        find(&search)
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
            find_in(&[home.join("proj/conf/s"), home.join("proj"), home.join("proj")], &[&grant], 0).unwrap();
        assert_eq!(paths(&holes.holes), vec![(home.join("proj"), true)]);
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
        let found = find_in(&[home.join(".ssh"), home.join("proj/conf/s")], &[&write, &grant], 1).unwrap();
        assert_eq!(
            paths(&found.holes),
            vec![
                (home.join(".ssh"), false),
                (home.join("dotfiles/ssh"), true),
                (home.join("proj/conf/s"), false),
                (home.join("proj/other/s"), true),
            ]
        );
        // The link inside the write grant is kept in place; `~/.ssh` is outside it.
        assert_eq!(found.links, vec![home.join("proj/conf")]);
        // A link that leads to a grant (or above one) never makes it a hole.
        std::fs::remove_file(home.join("proj/conf")).unwrap();
        std::os::unix::fs::symlink("..", home.join("proj/conf")).unwrap();
        let found = find_in(&[home.join("proj/conf")], &[&write, &grant], 1).unwrap();
        assert_eq!(paths(&found.holes), vec![(home.join("proj/conf"), false)]);
    }

    #[test]
    fn a_persons_link_outside_the_write_grants_makes_its_target_a_hole() {
        let d = scratch("persons");
        let home = d.0.join("home");
        std::fs::create_dir_all(d.0.join("data/keys")).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        std::os::unix::fs::symlink(d.0.join("data/keys"), home.join(".ssh")).unwrap();
        let (read_home, read_data) = (home.clone(), d.0.join("data"));
        let found = find_in(&[home.join(".ssh")], &[&read_home, &read_data], 0).unwrap();
        assert_eq!(paths(&found.holes), vec![(d.0.join("data/keys"), true), (home.join(".ssh"), false)]);
        assert!(found.links.is_empty(), "no link in a write grant: {:?}", found.links);
        // A target that holds a grant is never a hole: a link cannot mask granted folders.
        std::fs::remove_file(home.join(".ssh")).unwrap();
        std::os::unix::fs::symlink(d.0.join("data"), home.join(".ssh")).unwrap();
        let found = find_in(&[home.join(".ssh")], &[&read_home, &read_data], 0).unwrap();
        assert_eq!(paths(&found.holes), vec![(home.join(".ssh"), false)]);
    }

    #[test]
    fn where_a_secrets_link_leads_is_a_hole_before_anything_is_there() {
        // A dangling `~/.netrc` → `work/dotfiles/netrc`, and a folded `~/.config` → `dotfiles/
        // config`, with their targets' folders missing: each target is a hole by name.
        let d = scratch("dangling");
        let home = d.0.join("home");
        std::fs::create_dir_all(home.join("work")).unwrap();
        std::fs::create_dir_all(home.join("dotfiles")).unwrap();
        std::os::unix::fs::symlink("work/dotfiles/netrc", home.join(".netrc")).unwrap();
        std::os::unix::fs::symlink("dotfiles/config", home.join(".config")).unwrap();
        let (read, work, dotfiles) = (home.clone(), home.join("work"), home.join("dotfiles"));
        let found =
            find_in(&[home.join(".netrc"), home.join(".config/gh")], &[&work, &dotfiles, &read], 2).unwrap();
        assert_eq!(
            paths(&found.holes),
            vec![
                (home.join(".config/gh"), false),
                (home.join(".netrc"), false),
                (home.join("dotfiles/config/gh"), false),
                (home.join("work/dotfiles/netrc"), false),
            ]
        );
    }

    #[test]
    fn a_relative_link_with_dots_is_walked_to_its_target() {
        let d = scratch("relative");
        std::fs::create_dir_all(d.0.join("a/b")).unwrap();
        std::fs::create_dir_all(d.0.join("keys/k")).unwrap();
        std::os::unix::fs::symlink("../../keys", d.0.join("a/b/l")).unwrap();
        let grant = d.0.clone();
        let found = find_in(&[d.0.join("a/b/l/k")], &[&grant], 1).unwrap();
        assert_eq!(paths(&found.holes), vec![(d.0.join("a/b/l/k"), false), (d.0.join("keys/k"), true)]);
        assert_eq!(found.links, vec![d.0.join("a/b/l")]);
    }

    #[test]
    fn the_folders_a_dot_dot_steps_out_of_inside_a_write_grant_are_kept() {
        // A person's `~/.npmrc` → `proj/a/b/../../npmrc`: `proj/a/b` and `proj/a` decide where it
        // leads, so both are kept; `npmrc` is the hole.
        let d = scratch("dots");
        let home = d.0.join("home");
        std::fs::create_dir_all(home.join("proj/a/b")).unwrap();
        std::fs::write(home.join("proj/npmrc"), "").unwrap();
        std::os::unix::fs::symlink("proj/a/b/../../npmrc", home.join(".npmrc")).unwrap();
        let (read, write) = (home.clone(), home.join("proj"));
        let found = find_in(&[home.join(".npmrc")], &[&write, &read], 1).unwrap();
        assert_eq!(paths(&found.holes), vec![(home.join(".npmrc"), false), (home.join("proj/npmrc"), true)]);
        assert_eq!(found.kept, vec![home.join("proj/a"), home.join("proj/a/b")]);
        // Outside every write grant nothing can move them: none kept.
        let found = find_in(&[home.join(".npmrc")], &[&read], 0).unwrap();
        assert!(found.kept.is_empty(), "{:?}", found.kept);
    }

    #[test]
    fn a_secret_named_outside_every_grant_is_a_hole_where_it_leads_inside_one() {
        // No grant holds the home, but its `.ssh` is a link into a granted folder.
        let d = scratch("outside");
        let home = d.0.join("home");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(d.0.join("data/keys")).unwrap();
        std::os::unix::fs::symlink(d.0.join("data/keys"), home.join(".ssh")).unwrap();
        let data = d.0.join("data");
        let roots = [data.as_path()];
        let everywhere = || vec![home.join(".ssh"), home.join(".aws")];
        let search = Search { candidates: &[], everywhere: &everywhere, roots: &roots, writable: &roots };
        let found = find(&search).unwrap();
        assert_eq!(paths(&found.holes), vec![(d.0.join("data/keys"), true)]);
        assert!(found.links.is_empty(), "the link is outside the write grant: {:?}", found.links);
    }

    #[test]
    fn every_link_of_a_chain_inside_a_write_grant_is_kept() {
        // `~/.ssh` → `work/a/l/keys`, `work/a/l` → `../b`: both links are on the way, and the
        // second, inside the write grant, is what a call could retarget for the next.
        let d = scratch("chain");
        let home = d.0.join("home");
        std::fs::create_dir_all(home.join("work/a")).unwrap();
        std::fs::create_dir_all(home.join("work/b/keys")).unwrap();
        std::os::unix::fs::symlink("work/a/l/keys", home.join(".ssh")).unwrap();
        std::os::unix::fs::symlink("../b", home.join("work/a/l")).unwrap();
        let (read, write) = (home.clone(), home.join("work"));
        let found = find_in(&[home.join(".ssh")], &[&write, &read], 1).unwrap();
        assert_eq!(paths(&found.holes), vec![(home.join(".ssh"), false), (home.join("work/b/keys"), true)]);
        assert_eq!(found.links, vec![home.join("work/a/l")]);
        // With the whole home writable, both.
        let found = find_in(&[home.join(".ssh")], &[&read], 1).unwrap();
        assert_eq!(found.links, vec![home.join(".ssh"), home.join("work/a/l")]);
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
        let err = find_in(&[home.join(".ssh")], &[&grant], 0).unwrap_err();
        std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(err.contains(&format!("`chmod u+rx {}`", home.display())), "{err}");
    }
}
