//! Opening a path once, without following a symbolic link anywhere on it.
//!
//! `openat2(RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)` beneath `/`, opened once per process;
//! where `openat2` is missing (Linux before 5.6), a component-wise `O_PATH | O_NOFOLLOW` walk
//! gives the same answer. Every grant, pin and program folder the sandbox opens goes through
//! here, so a link planted by an earlier call fails the grant instead of widening it.
//!
//! Trusts only the kernel's path walk; a leaf of the sandbox.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

/// Why a grant could not be opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrantError {
    /// A component of the path is a symbolic link.
    Symlink(PathBuf),
    /// The path names a file where a folder was expected, or the reverse.
    WrongKind(PathBuf, &'static str),
    Other(PathBuf, String),
}

impl std::fmt::Display for GrantError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GrantError::Symlink(p) => write!(
                f,
                "`{}` passes through a symbolic link; a grant must name the real folder (links are never followed, so a link planted inside a grant cannot widen it)",
                p.display()
            ),
            GrantError::WrongKind(p, want) => write!(f, "`{}` is not {want}", p.display()),
            GrantError::Other(p, why) => write!(f, "cannot open `{}`: {why}", p.display()),
        }
    }
}

/// Opens `path` (absolute) as an `O_PATH` descriptor without following any symlink. `Ok(None)`
/// when it does not exist: a grant of nothing grants nothing, so a missing folder is skipped,
/// not an error.
pub fn open_no_symlinks(path: &Path, directory: bool) -> Result<Option<OwnedFd>, GrantError> {
    let mut flags = OFlags::PATH | OFlags::CLOEXEC;
    if directory {
        flags |= OFlags::DIRECTORY;
    }
    let result = open_resolved(path, flags);
    match result {
        Ok(fd) => Ok(Some(fd)),
        Err(Errno::NOENT) => Ok(None),
        Err(Errno::LOOP) => Err(GrantError::Symlink(path.to_owned())),
        Err(Errno::NOTDIR) => Err(GrantError::WrongKind(path.to_owned(), "a folder")),
        Err(e) => Err(GrantError::Other(path.to_owned(), std::io::Error::from(e).to_string())),
    }
}

/// `/`, opened once per process: every grant is resolved beneath it.
pub(super) fn root() -> Result<&'static OwnedFd, Errno> {
    static ROOT: std::sync::OnceLock<OwnedFd> = std::sync::OnceLock::new();
    if let Some(root) = ROOT.get() {
        return Ok(root);
    }
    let fd = rustix::fs::open("/", OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
    Ok(ROOT.get_or_init(|| fd))
}

fn open_resolved(path: &Path, flags: OFlags) -> Result<OwnedFd, Errno> {
    let relative = path.strip_prefix("/").map_err(|_| Errno::INVAL)?;
    let root = root()?;
    let relative = if relative.as_os_str().is_empty() { Path::new(".") } else { relative };
    let how = ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    // openat2 may answer EAGAIN when a rename raced the lookup; a few tries settle it.
    for _ in 0..8 {
        match rustix::fs::openat2(root, relative, flags, Mode::empty(), how) {
            Err(Errno::AGAIN) => continue,
            Err(Errno::NOSYS) => {
                return walk_no_symlinks(root.try_clone().map_err(|_| Errno::MFILE)?, relative, flags);
            }
            other => return other,
        }
    }
    Err(Errno::AGAIN)
}

/// The fallback for kernels without `openat2`: one component at a time with `O_NOFOLLOW`, so a
/// symlink anywhere is an `ELOOP` as with `RESOLVE_NO_SYMLINKS`.
fn walk_no_symlinks(root: OwnedFd, relative: &Path, flags: OFlags) -> Result<OwnedFd, Errno> {
    let mut current = root;
    for component in relative.components() {
        let name = component.as_os_str();
        if name == ".." {
            return Err(Errno::INVAL);
        }
        let next = rustix::fs::openat(
            &current,
            name,
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let kind = rustix::fs::FileType::from_raw_mode(rustix::fs::fstat(&next)?.st_mode);
        if kind == rustix::fs::FileType::Symlink {
            return Err(Errno::LOOP);
        }
        current = next;
    }
    if flags.contains(OFlags::DIRECTORY) {
        let kind = rustix::fs::FileType::from_raw_mode(rustix::fs::fstat(&current)?.st_mode);
        if kind != rustix::fs::FileType::Directory {
            return Err(Errno::NOTDIR);
        }
    }
    Ok(current)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symlinks_anywhere_in_a_grant_are_refused() {
        let dir = std::env::temp_dir().join(format!(
            "lnk-grants-{}-{}",
            rustix::process::getuid().as_raw(),
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("real/inner")).unwrap();
        std::os::unix::fs::symlink(dir.join("real"), dir.join("link")).unwrap();
        assert!(open_no_symlinks(&dir.join("real/inner"), true).unwrap().is_some());
        assert_eq!(
            open_no_symlinks(&dir.join("link"), true).err(),
            Some(GrantError::Symlink(dir.join("link")))
        );
        assert!(matches!(open_no_symlinks(&dir.join("link/inner"), true), Err(GrantError::Symlink(_))));
        assert!(open_no_symlinks(&dir.join("missing"), true).unwrap().is_none());
        // The fallback walk gives the same answers.
        let root = rustix::fs::open("/", OFlags::PATH | OFlags::CLOEXEC, Mode::empty()).unwrap();
        let rel = dir.strip_prefix("/").unwrap().join("link/inner");
        assert_eq!(walk_no_symlinks(root, &rel, OFlags::PATH).err(), Some(Errno::LOOP));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
