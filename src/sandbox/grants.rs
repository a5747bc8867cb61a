//! Opening what a sandbox grants, once, as descriptors.
//!
//! Every grant root is opened here with `openat2(RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)`
//! and the descriptor, not the path, is handed to Landlock. A path is resolved exactly once, and
//! never through a symlink: a link planted by an earlier call (`~/Link/Files/proj` → `~/.ssh`)
//! makes the grant fail with a clear error instead of quietly granting the link's target. Where
//! `openat2` is missing (Linux before 5.6), a component-wise `O_PATH | O_NOFOLLOW` walk gives
//! the same answer.
//!
//! Programs are opened through the system PATH folders the same way, except that the last
//! component *is* followed: `/usr/bin/sh` is a link to `dash` on Debian, and the execute right
//! must be granted on the file the kernel finally runs. The folders themselves are system
//! folders, writable only by root.
//!
//! Trusted with: that Landlock is handed exactly what is granted, each root opened once and never
//! through a link, and a grant with holes split around them: a bug here could grant a planted
//! link's target (`~/.ssh`) or leave a secret inside a grant. What it trusts: the system PATH
//! folders and the links in them (followed for programs and their loaders), the holes its caller
//! found, and the kernel's `O_NOFOLLOW` opens and listings.

use std::collections::HashSet;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use super::elf::{self, Executable};
pub use super::no_symlinks::{GrantError, open_no_symlinks};
use crate::program_path::SYSTEM_PATH;

/// A file the sandbox may execute: an allowed program or the loader it needs.
pub struct ExecFile {
    pub fd: OwnedFd,
    /// (device, inode), to grant each file once.
    pub id: (u64, u64),
}

/// The files the sandbox may execute, each once, and the loaders already opened (by the path
/// programs name them with, so the common loader is opened once, not once per program).
#[derive(Default)]
pub struct ExecFiles {
    pub files: Vec<ExecFile>,
    /// Folders of an allowed program's own parts (see [`super::parts`]).
    pub helper_folders: Vec<OwnedFd>,
    loaders: Vec<PathBuf>,
    /// What the PATH folders hold, learnt from the lookups so far.
    folder_names: crate::program_path::FolderNames,
}

/// Opens an allowed program by name through the system PATH folders, following the last link,
/// and the dynamic loader it asks for. `Ok(None)` when no folder has it.
pub fn open_program(name: &str, out: &mut ExecFiles) -> Result<Option<PathBuf>, GrantError> {
    for (i, folder) in SYSTEM_PATH.iter().enumerate() {
        if !out.folder_names.may_hold(i, name) {
            continue;
        }
        let path = Path::new(folder).join(name);
        let fd =
            match rustix::fs::open(&path, OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK, Mode::empty())
            {
                Ok(fd) => fd,
                Err(Errno::NOENT) => {
                    out.folder_names.missed(i, Path::new(folder));
                    continue;
                }
                Err(_) => continue,
            };
        let Ok(stat) = rustix::fs::fstat(&fd) else { continue };
        let regular = rustix::fs::FileType::from_raw_mode(stat.st_mode) == rustix::fs::FileType::RegularFile;
        if !regular || stat.st_mode & 0o111 == 0 {
            continue;
        }
        add_with_loader(out, fd, (stat.st_dev, stat.st_ino))?;
        // Its own parts (git's exec path, a compiler's passes, assembler and linker).
        let (folders, programs) = super::parts::parts_of(name);
        let prefix = Path::new(folder).parent().unwrap_or(Path::new("/"));
        for pattern in folders {
            super::parts::open_folders(prefix, pattern, &mut out.helper_folders);
        }
        for program in programs {
            open_program(program, out)?;
        }
        return Ok(Some(path));
    }
    Ok(None)
}

/// Adds an opened program and, if it is a dynamically linked ELF file, its loader.
fn add_with_loader(out: &mut ExecFiles, fd: OwnedFd, id: (u64, u64)) -> Result<(), GrantError> {
    if out.files.iter().any(|f| f.id == id) {
        return Ok(());
    }
    // The loader's name is in the program headers, which linkers put in the first kilobyte.
    let mut head = [0u8; 2048];
    let n = rustix::io::pread(&fd, &mut head, 0).unwrap_or(0);
    out.files.push(ExecFile { fd, id });
    if let Executable::Elf { interpreter: Some(loader) } = elf::classify(&head[..n]) {
        if !out.loaders.contains(&loader) {
            open_loader(&loader, out)?;
            out.loaders.push(loader);
        }
    }
    Ok(())
}

/// The loader is named by the program's file; it is opened following links (it is usually a
/// link into /usr/lib) and must be a regular file.
fn open_loader(loader: &Path, out: &mut ExecFiles) -> Result<(), GrantError> {
    let fd = rustix::fs::open(loader, OFlags::PATH | OFlags::CLOEXEC, Mode::empty())
        .map_err(|e| GrantError::Other(loader.to_owned(), std::io::Error::from(e).to_string()))?;
    let stat = rustix::fs::fstat(&fd).map_err(|e| GrantError::Other(loader.to_owned(), e.to_string()))?;
    if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
        return Err(GrantError::WrongKind(loader.to_owned(), "a regular file"));
    }
    let id = (stat.st_dev, stat.st_ino);
    if !out.files.iter().any(|f| f.id == id) {
        out.files.push(ExecFile { fd, id });
    }
    Ok(())
}

/// Opens the running `lnk` binary, for the file tool's sandbox, whose only program is lnk.
/// Returns its path (for the report) and a descriptor to execute it by: it is opened through
/// `/proc/self/exe`, the very image running, so neither a world that hides its path (lnk beneath
/// the host's `/tmp`) nor a file moved or replaced since lnk started changes what runs.
pub fn open_self(out: &mut ExecFiles) -> Result<(PathBuf, OwnedFd), GrantError> {
    let self_exe = PathBuf::from("/proc/self/exe");
    let exe =
        std::fs::read_link(&self_exe).map_err(|e| GrantError::Other(self_exe.clone(), e.to_string()))?;
    let fd = rustix::fs::open(&self_exe, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())
        .map_err(|e| GrantError::Other(exe.clone(), e.to_string()))?;
    let stat = rustix::fs::fstat(&fd).map_err(|e| GrantError::Other(exe.clone(), e.to_string()))?;
    let exec = fd.try_clone().map_err(|e| GrantError::Other(exe.clone(), e.to_string()))?;
    add_with_loader(out, fd, (stat.st_dev, stat.st_ino))?;
    Ok((exe, exec))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_come_with_their_loader() {
        let mut files = ExecFiles::default();
        assert!(open_program("sh", &mut files).unwrap().is_some());
        assert!(files.files.len() >= 2, "sh and its dynamic loader");
        let before = files.files.len();
        assert!(open_program("sh", &mut files).unwrap().is_some());
        assert_eq!(files.files.len(), before, "each file is granted once");
        assert!(open_program("no-such-program-lnk", &mut files).unwrap().is_none());
    }
}

/// How much of a folder a rule covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// Everything beneath it, with the grant's rights; what it is, when known from opening it.
    Whole(Kind),
    /// Its listing only: a folder on the way to a hole.
    Listing,
}

/// What a rule's descriptor is, when the caller knows (opened with `O_DIRECTORY`, a program, or
/// an entry whose descriptor was `fstat`ed); `Either` is found out with an `fstat`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Folder,
    File,
    Either,
}

/// What a folder is granted around (see [`open_around`]).
#[derive(Clone, Copy)]
pub struct Cut<'a> {
    /// Holes left out entirely (secrets).
    pub secrets: &'a [PathBuf],
    /// Holes that may themselves be listed (program folders).
    pub listed: &'a [PathBuf],
    /// The folders a secret is found through and the secrets themselves, by device and inode
    /// (see [`super::holes::Hole::ways`]): an entry that is one of them by another name (a bind
    /// mount) is left out, or the secret would be reachable beneath it.
    pub aliases: &'a HashSet<(u64, u64)>,
    /// Folders kept in place (see [`super::holes::Holes::kept`]): cut around as holes are, so
    /// their folders may only be listed, but each granted whole itself (unless a hole lies
    /// beneath it).
    pub kept: &'a [PathBuf],
}

/// Whether `path` is `dir` or lies beneath it, both normal absolute paths as bytes.
fn beneath(path: &[u8], dir: &[u8]) -> bool {
    match path.strip_prefix(dir) {
        Some(rest) => rest.is_empty() || rest[0] == b'/' || dir == b"/",
        None => false,
    }
}

/// The system folders `roots`, opened, with how much of each: whole, cut around `cut` (see
/// [`open_around`]). Missing folders and links (`/bin` → `usr/bin`, whose target is granted on
/// its own) are skipped.
pub fn open_system(roots: &[&str], cut: Cut<'_>) -> Result<Vec<(OwnedFd, Part)>, GrantError> {
    let mut opened = Vec::new();
    for root in roots {
        match open_no_symlinks(Path::new(root), false) {
            Ok(Some(fd)) => opened.extend(open_around(Path::new(root), fd, cut)?),
            Ok(None) | Err(GrantError::Symlink(_)) | Err(GrantError::WrongKind(..)) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(opened)
}

/// A folder (`path`, opened as `fd`) granted around holes. Landlock cannot subtract from a
/// grant, so "all of `/usr` but the files of `/usr/bin`", or "all of `~` but `~/.ssh`", is said
/// entry by entry: a folder on the way to a hole may only be listed, every other entry is
/// granted whole. A hole in `cut.listed` (a program folder) may itself be listed; one in
/// `cut.secrets` is left out entirely, and so is any entry that is, by another name, a folder
/// on the way to a secret or a secret (`cut.aliases`); one in `cut.kept` is granted whole, so
/// only its name is kept in place. Entries that are links are left out: what
/// they point at is reached (or not) through its own path. Each entry is opened through its
/// folder's descriptor without following links and looked at on that descriptor, so the split
/// is of the folder the caller opened.
pub fn open_around(path: &Path, fd: OwnedFd, cut: Cut<'_>) -> Result<Vec<(OwnedFd, Part)>, GrantError> {
    use std::os::unix::ffi::OsStrExt as _;
    // Every path here has its one normal spelling (see `crate::paths::normal`), so paths are
    // compared as bytes, a `/` marking where a name ends (`Path`'s comparisons walk names).
    let bytes = |p: &PathBuf| p.as_os_str().as_bytes().to_vec();
    let holes: Vec<Vec<u8>> = cut.secrets.iter().chain(cut.listed).chain(cut.kept).map(bytes).collect();
    let secrets: Vec<Vec<u8>> = cut.secrets.iter().map(bytes).collect();
    let listed: Vec<Vec<u8>> = cut.listed.iter().map(bytes).collect();
    let kept: Vec<Vec<u8>> = cut.kept.iter().map(bytes).collect();
    let holds_hole = |dir: &[u8]| holes.iter().any(|h| beneath(h, dir));
    // Whether a hole lies at or beneath `dir`/`name` (no path is made for the many entries that
    // hold none).
    let holds_hole_beneath = |dir: &[u8], name: &[u8]| {
        let dir = if dir == b"/" { &b""[..] } else { dir };
        holes.iter().any(|h| {
            h.len() > dir.len() + name.len()
                && h.starts_with(dir)
                && h[dir.len()] == b'/'
                && h[dir.len() + 1..].starts_with(name)
                && matches!(h.get(dir.len() + 1 + name.len()), None | Some(b'/'))
        })
    };
    let mut opened = Vec::new();
    let mut pending: Vec<(PathBuf, OwnedFd, Kind)> = vec![(path.to_owned(), fd, Kind::Either)];
    while let Some((path, fd, kind)) = pending.pop() {
        let at = path.as_os_str().as_bytes();
        if !holds_hole(at) {
            opened.push((fd, Part::Whole(kind)));
            continue;
        }
        if secrets.iter().any(|h| h == at) {
            continue;
        }
        if listed.iter().any(|h| h == at) {
            opened.push((fd, Part::Listing));
            continue;
        }
        // Kept: its name is kept by its folder's listing; what it holds is granted, unless a
        // hole lies beneath it too.
        if kept.iter().any(|k| k == at) && !holes.iter().any(|h| h != at && beneath(h, at)) {
            opened.push((fd, Part::Whole(kind)));
            continue;
        }
        let other = |e: Errno| GrantError::Other(path.clone(), std::io::Error::from(e).to_string());
        let listing =
            rustix::fs::openat(&fd, ".", OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
                .map_err(other)?;
        for entry in rustix::fs::Dir::read_from(&listing).map_err(other)? {
            let entry = entry.map_err(other)?;
            let name = entry.file_name();
            if name == c"." || name == c".." || entry.file_type() == rustix::fs::FileType::Symlink {
                continue;
            }
            let child = match rustix::fs::openat(
                &fd,
                name,
                OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            ) {
                Ok(child) => child,
                // Gone since it was listed: nothing to grant.
                Err(Errno::NOENT) => continue,
                Err(e) => return Err(other(e)),
            };
            let on_the_way = holds_hole_beneath(path.as_os_str().as_bytes(), name.to_bytes());
            // A regular file not on the way to a hole needs no `stat`: it is no folder by
            // another name (only a mount makes one, and a mount never puts a folder over a
            // file). Should the listing be stale (a folder made at its name since), the rule
            // gives that folder file rights, fewer than a folder not on the way to a hole gets
            // anyway. Anything else is looked at on its descriptor: a mount point shows the
            // listing's inode, not the mount's.
            if !on_the_way && entry.file_type() == rustix::fs::FileType::RegularFile {
                opened.push((child, Part::Whole(Kind::File)));
                continue;
            }
            // Nor a folder not on the way when no folder has another name: a mount on it is a
            // folder too (the kernel mounts folders on folders only), and its (device, inode)
            // matters only to tell aliases apart. A stale listing (a file at its name since)
            // fails the call: Landlock refuses folder rights on a file.
            if !on_the_way && cut.aliases.is_empty() && entry.file_type() == rustix::fs::FileType::Directory {
                opened.push((child, Part::Whole(Kind::Folder)));
                continue;
            }
            let stat = rustix::fs::fstat(&child).map_err(other)?;
            let kind = match rustix::fs::FileType::from_raw_mode(stat.st_mode) {
                rustix::fs::FileType::Symlink => continue,
                rustix::fs::FileType::Directory => Kind::Folder,
                _ => Kind::File,
            };
            if on_the_way {
                pending.push((path.join(std::ffi::OsStr::from_bytes(name.to_bytes())), child, kind));
            } else if !cut.aliases.contains(&(stat.st_dev, stat.st_ino)) {
                opened.push((child, Part::Whole(kind)));
            }
        }
        opened.push((fd, Part::Listing));
    }
    Ok(opened)
}
