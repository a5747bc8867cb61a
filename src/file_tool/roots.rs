//! Where the file tool may read and write, and how a path reaches a descriptor.
//!
//! A request's path is parsed by [`crate::paths::AgentPath`] (relative, normalised, never above
//! its root; `teams/<team>/…` is that team's `Shared` folder). Its root folder is opened once,
//! without following any link, and every operation opens beneath that descriptor with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)`: a symlink planted
//! anywhere in the path makes the call fail, and nothing can climb out of the root. Whether a
//! path may be read or written is decided here from the sandbox's own grants, whatever Landlock
//! would allow: a write needs a `[files] write` grant covering the path.
//!
//! Trusted with: whether a request's path may be read or written, and the descriptor it reaches (a
//! bug here could let a request climb out of its root or follow a planted link). What it trusts:
//! the grants, home and files folder it is given (from the launcher) and the kernel's `openat2`;
//! nothing of the request's path, which [`crate::paths::AgentPath`] parses.

use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use super::FileError;
use crate::paths::{AgentPath, is_beneath, team_folder};
use crate::sandbox::grants;

/// An opened root folder.
pub struct Root {
    pub path: PathBuf,
    pub fd: OwnedFd,
    /// Whether this session has swept it for stale temporary files (see `ops::temp`).
    swept: std::cell::Cell<bool>,
}

impl Root {
    fn new(path: PathBuf, fd: OwnedFd) -> Root {
        Root { path, fd, swept: std::cell::Cell::new(false) }
    }

    /// Before this session's first write beneath this root: removes the temporary files killed
    /// writes left (only where this session may write, so only once a write is allowed here).
    fn sweep_once(&self) {
        if !self.swept.replace(true) {
            let removed = super::ops::temp::sweep(&self.fd);
            if removed > 0 {
                eprintln!(
                    "lnk file: removed {removed} temporary file(s) left by killed writes in {}",
                    self.path.display()
                );
            }
        }
    }
}

/// A request's path, resolved to its root and the names beneath it (any bytes: see
/// `super::names`).
pub struct Target<'a> {
    pub root: &'a Root,
    /// The names beneath the root, none `.`, `..` or empty; none for the root itself.
    names: Vec<OsString>,
    pub abs: PathBuf,
}

impl Target<'_> {
    /// Whether this is the root itself.
    pub fn is_root(&self) -> bool {
        self.names.is_empty()
    }

    /// The names beneath the root, in order.
    pub fn names(&self) -> &[OsString] {
        &self.names
    }

    /// The relative path as `openat2` takes it (`.` for the root itself).
    pub fn rel_os(&self) -> OsString {
        join(&self.names)
    }

    /// The relative path as an answer's message shows it (escaped if it is not UTF-8).
    pub fn shown(&self) -> String {
        super::names::escape(self.rel_os().as_bytes())
    }

    /// The parent folder's relative path and the last name; `None` for the root itself.
    pub fn split(&self) -> Option<(OsString, OsString)> {
        let (last, parent) = self.names.split_last()?;
        Some((join(parent), last.clone()))
    }
}

/// Names joined with `/`; `.` for none.
fn join(names: &[OsString]) -> OsString {
    if names.is_empty() {
        return ".".into();
    }
    let mut out = OsString::new();
    for (i, name) in names.iter().enumerate() {
        if i > 0 {
            out.push("/");
        }
        out.push(name);
    }
    out
}

/// The path's names as bytes, normalised as [`RelativePath::parse`] normalises its text (which
/// has already accepted the same path): `.` and empty names dropped, `..` removing the one
/// before.
fn normalised_names(path: &[u8]) -> Vec<OsString> {
    let mut names: Vec<OsString> = Vec::new();
    for name in path.split(|b| *b == b'/') {
        match name {
            b"" | b"." => {}
            b".." => {
                names.pop();
            }
            name => names.push(OsString::from_vec(name.to_vec())),
        }
    }
    names
}

/// The grants and the opened roots of one file session.
pub struct Roots {
    home: PathBuf,
    files: Root,
    read: Vec<PathBuf>,
    write: Vec<PathBuf>,
    teams: Vec<(String, Root)>,
}

impl Roots {
    pub fn new(
        home: PathBuf,
        files_dir: &Path,
        read: Vec<PathBuf>,
        write: Vec<PathBuf>,
    ) -> Result<Roots, String> {
        let fd = grants::open_no_symlinks(files_dir, true)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("the files folder {} does not exist", files_dir.display()))?;
        Ok(Roots { home, files: Root::new(files_dir.to_owned(), fd), read, write, teams: Vec::new() })
    }

    /// At the start of a session: sweeps the files folder if this session may write there.
    pub fn sweep_files_folder(&mut self) {
        let _ = self.resolve(b".", true);
    }

    /// Resolves a request's path, as bytes (see `super::names`). `write` asks for a path a
    /// write grant covers.
    ///
    /// The path's text rules (relative, no climbing, no NUL, names within `NAME_MAX`, a team's
    /// name) are [`AgentPath`]'s, checked on its text with each byte that is not UTF-8 standing
    /// as `?` (one byte for one, never `/`, `.` or NUL, never in a team's name); its names are
    /// then the bytes themselves, normalised the same way, and the grants are checked on them.
    pub fn resolve(&mut self, path: &[u8], write: bool) -> Result<Target<'_>, FileError> {
        let shown = super::names::escape(path);
        let mut text = String::with_capacity(path.len());
        for chunk in path.utf8_chunks() {
            text.push_str(chunk.valid());
            text.extend(std::iter::repeat_n('?', chunk.invalid().len()));
        }
        let agent_path = AgentPath::parse(&text).map_err(|e| FileError::new("bad_path", e.to_string()))?;
        let mut names = normalised_names(path);
        let (base, team) = match &agent_path {
            AgentPath::Files(_) => (self.files.path.clone(), None),
            AgentPath::Team { team, .. } => {
                names.drain(..2);
                (team_folder(&self.home, team), Some(team.clone()))
            }
        };
        let mut abs = base;
        abs.extend(&names);
        let allowed = |grants: &[PathBuf]| grants.iter().any(|g| is_beneath(&abs, g));
        let permitted =
            if write { allowed(&self.write) } else { allowed(&self.read) || allowed(&self.write) };
        if !permitted {
            let what = if write {
                "written: no `[files] write` grant covers it"
            } else {
                "read: no grant covers it"
            };
            return Err(FileError::new("denied", format!("`{shown}` may not be {what}")));
        }
        let Some(team) = team else {
            if write {
                self.files.sweep_once();
            }
            return Ok(Target { root: &self.files, names, abs });
        };
        if !self.teams.iter().any(|(t, _)| *t == team) {
            let folder = team_folder(&self.home, &team);
            let fd = grants::open_no_symlinks(&folder, true)
                .map_err(|e| FileError::new("symlink", e.to_string()))?
                .ok_or_else(|| {
                    FileError::new("not_found", format!("the team folder of `{team}` does not exist"))
                })?;
            self.teams.push((team.clone(), Root::new(folder, fd)));
        }
        let root = &self.teams.iter().find(|(t, _)| *t == team).expect("inserted above").1;
        if write {
            root.sweep_once();
        }
        Ok(Target { root, names, abs })
    }
}

/// Opens `rel` beneath `root` without following any link.
pub fn open_beneath(
    root: &Root,
    rel: &std::ffi::OsStr,
    flags: OFlags,
    mode: Mode,
) -> Result<OwnedFd, FileError> {
    let shown = super::names::escape(rel.as_bytes());
    let how = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    for _ in 0..16 {
        match rustix::fs::openat2(&root.fd, rel, flags | OFlags::CLOEXEC, mode, how) {
            Err(Errno::AGAIN) => continue,
            Err(Errno::NOSYS) => {
                return walk_beneath(root, rel, flags, mode).map_err(|e| FileError::from_errno(e, &shown));
            }
            Ok(fd) => return Ok(fd),
            Err(e) => return Err(FileError::from_errno(e, &shown)),
        }
    }
    Err(FileError::new("io", format!("`{shown}`: the lookup kept racing a rename")))
}

/// The same without `openat2` (Linux before 5.6): one name at a time with `O_NOFOLLOW`, each
/// folder checked not to be a link, the last name opened with `O_NOFOLLOW` too. `rel` is
/// already normalised (no `..`), so nothing climbs.
fn walk_beneath(root: &Root, rel: &std::ffi::OsStr, flags: OFlags, mode: Mode) -> Result<OwnedFd, Errno> {
    let names: Vec<&[u8]> =
        rel.as_bytes().split(|b| *b == b'/').filter(|n| !n.is_empty() && *n != b".").collect();
    let Some((last, folders)) = names.split_last() else {
        return rustix::fs::openat(&root.fd, ".", flags | OFlags::CLOEXEC, mode);
    };
    let mut dir =
        rustix::fs::openat(&root.fd, ".", OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
    for name in folders {
        if *name == b".." {
            return Err(Errno::XDEV);
        }
        // A link here fails (ENOTDIR: O_NOFOLLOW opens the link itself, not a folder).
        dir = rustix::fs::openat(
            &dir,
            *name,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
    }
    rustix::fs::openat(&dir, *last, flags | OFlags::NOFOLLOW | OFlags::CLOEXEC, mode)
}
