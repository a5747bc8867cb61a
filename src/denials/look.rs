//! Looking at a path a program's output named, from outside the sandbox, without trusting it.
//!
//! The path is the program's choice, so lnk looks the way the least it can be led: from `/`,
//! one name at a time, through descriptors of its own, never following a link (a link anywhere
//! on the way and nothing is told: where it leads is the program's to choose, and could be a
//! secret by another name), never triggering an automount (a name on an automounted folder
//! would make lnk mount, or wait for, a server the program named), never opening what it looks
//! at (a FIFO stays closed), and at most [`MAX_DEPTH`] names deep. Each name costs one `statx`
//! and, for a folder on the way, one `openat` of `O_PATH`: the work is bounded by the depth.

use std::os::fd::OwnedFd;
use std::path::{Component, Path};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, StatxAttributes, StatxFlags};

/// The most names lnk walks through for one path.
pub const MAX_DEPTH: usize = 64;

/// What a file is, as far as a permission check needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub kind: FileType,
}

/// What lnk found on the way to a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// `/` and each folder on the way, the path's own folder last.
    pub way: Vec<Meta>,
    /// The path itself, or `None` when it is not there (its folder is).
    pub file: Option<Meta>,
}

/// Walks to `path` (absolute, normalised). `None` when nothing can be told: a link or an
/// automount point on the way or at the end, a folder on the way missing or not a folder, the
/// path too deep, or any error.
pub fn look(path: &Path) -> Option<Seen> {
    let mut names = Vec::new();
    for component in path.components() {
        match component {
            Component::RootDir => {}
            Component::Normal(name) => names.push(name),
            // `.`, `..`: the caller normalises first.
            _ => return None,
        }
    }
    if !path.is_absolute() || names.len() > MAX_DEPTH {
        return None;
    }
    let mut folder: OwnedFd =
        rustix::fs::open("/", OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).ok()?;
    let mut way = vec![meta_at(&folder, std::ffi::OsStr::new(""), true)?.1?];
    for (i, name) in names.iter().enumerate() {
        let last = i + 1 == names.len();
        let (missing, found) = meta_at(&folder, name, false)?;
        let Some(found) = found else {
            // Only the last name may be missing: a file to be made.
            return (missing && last).then_some(Seen { way, file: None });
        };
        if last {
            return Some(Seen { way, file: Some(found) });
        }
        if found.kind != FileType::Directory {
            return None;
        }
        folder = rustix::fs::openat(
            &folder,
            *name,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .ok()?;
        way.push(found);
    }
    // The path is `/` itself.
    let root = way.pop()?;
    Some(Seen { way, file: Some(root) })
}

/// `statx` of `name` in `folder` (or of `folder` itself, `empty`), following nothing and
/// triggering no automount: `(missing, meta)`, where a link or an automount point is `None`
/// (and the outer `None` is any other failure).
fn meta_at(folder: &OwnedFd, name: &std::ffi::OsStr, empty: bool) -> Option<(bool, Option<Meta>)> {
    let mut flags = AtFlags::SYMLINK_NOFOLLOW | AtFlags::NO_AUTOMOUNT;
    if empty {
        flags |= AtFlags::EMPTY_PATH;
    }
    let wanted = StatxFlags::TYPE | StatxFlags::MODE | StatxFlags::UID | StatxFlags::GID;
    let st = match rustix::fs::statx(folder, name, flags, wanted) {
        Ok(st) => st,
        Err(rustix::io::Errno::NOENT) => return Some((true, None)),
        Err(_) => return None,
    };
    let kind = FileType::from_raw_mode(u32::from(st.stx_mode));
    let automount = st.stx_attributes.contains(StatxAttributes::AUTOMOUNT);
    if kind == FileType::Symlink || automount {
        return None;
    }
    Some((
        false,
        Some(Meta { mode: u32::from(st.stx_mode) & 0o7777, uid: st.stx_uid, gid: st.stx_gid, kind }),
    ))
}

/// What a permission check asks of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    Read,
    Write,
    Run,
}

/// The program's user, as the kernel's permission checks see it.
pub struct Who {
    pub uid: u32,
    pub gids: Vec<u32>,
}

impl Who {
    /// lnk's own effective user and groups: the program's.
    pub fn me() -> Who {
        let mut gids = vec![rustix::process::getegid().as_raw()];
        gids.extend(supplementary_groups());
        Who { uid: rustix::process::geteuid().as_raw(), gids }
    }

    /// Whether the mode bits let this user do `want` to what `seen` found (and search every
    /// folder on its way); for a file that is not there, write means making it in its folder.
    /// `None` where it cannot be told (reading or running what is not there).
    pub fn allows(&self, seen: &Seen, want: Want) -> Option<bool> {
        if !seen.way.iter().all(|folder| self.may(folder, 0o1)) {
            return Some(false);
        }
        match (&seen.file, want) {
            (Some(file), Want::Read) => Some(self.may(file, 0o4)),
            (Some(file), Want::Write) => Some(self.may(file, 0o2)),
            (Some(file), Want::Run) => Some(self.may(file, 0o1) && file.kind == FileType::RegularFile),
            (None, Want::Write) => seen.way.last().map(|folder| self.may(folder, 0o3)),
            (None, _) => None,
        }
    }

    /// Whether `bits` (of r=4, w=2, x=1) are all granted by the owner, group or other class
    /// that applies to this user, as the kernel picks it (mode bits only: no capability
    /// overrides them for the program, as root too; ACLs are not read).
    fn may(&self, meta: &Meta, bits: u32) -> bool {
        let class = if meta.uid == self.uid {
            meta.mode >> 6
        } else if self.gids.contains(&meta.gid) {
            meta.mode >> 3
        } else {
            meta.mode
        };
        class & bits == bits
    }
}

/// This process's supplementary groups.
fn supplementary_groups() -> Vec<u32> {
    rustix::process::getgroups()
        .map(|groups| groups.into_iter().map(|g| g.as_raw()).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "lnk-look-{name}-{}-{}",
            rustix::process::getuid().as_raw(),
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_link_anywhere_on_the_way_tells_nothing() {
        let dir = scratch("links");
        std::fs::create_dir_all(dir.join("real")).unwrap();
        std::fs::write(dir.join("real/f"), "x").unwrap();
        std::os::unix::fs::symlink(dir.join("real"), dir.join("link")).unwrap();
        std::os::unix::fs::symlink(dir.join("real/f"), dir.join("real/lf")).unwrap();
        assert!(look(&dir.join("real/f")).is_some_and(|s| s.file.is_some()));
        assert_eq!(look(&dir.join("link/f")), None, "through a link");
        assert_eq!(look(&dir.join("real/lf")), None, "a link at the end");
        assert!(look(&dir.join("real/new")).is_some_and(|s| s.file.is_none()), "to be made");
        assert_eq!(look(&dir.join("missing/new")), None, "a folder on the way missing");
        assert_eq!(look(&dir.join("real/f/x")), None, "a file on the way");
        assert!(look(Path::new("/")).is_some_and(|s| s.way.is_empty() && s.file.is_some()));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_path_too_deep_is_not_walked() {
        let deep: String = (0..MAX_DEPTH + 1).map(|_| "/d").collect();
        assert_eq!(look(Path::new(&deep)), None);
        assert_eq!(look(Path::new("relative/x")), None);
    }

    #[test]
    fn mode_bits_are_read_as_the_kernel_reads_them() {
        let dir = scratch("dac");
        let file = dir.join("f");
        std::fs::write(&file, "x").unwrap();
        let me = Who::me();
        let allows = |path: &Path, want| look(path).and_then(|seen| me.allows(&seen, want));
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o000)).unwrap();
        assert_eq!(allows(&file, Want::Read), Some(false), "the owner's class decides, even for root");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o400)).unwrap();
        assert_eq!(allows(&file, Want::Read), Some(true));
        assert_eq!(allows(&file, Want::Write), Some(false));
        assert_eq!(allows(&dir.join("new"), Want::Write), Some(true), "made in a folder it owns");
        assert_eq!(allows(&dir.join("new"), Want::Read), None);
        let other = Who { uid: me.uid.wrapping_add(12345), gids: vec![54321] };
        let seen = |path: &Path| look(path).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o604)).unwrap();
        assert_eq!(other.allows(&seen(&file), Want::Read), Some(true), "the other class");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(
            other.allows(&seen(&file), Want::Read),
            Some(false),
            "a folder on the way it cannot search"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
