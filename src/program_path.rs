//! Finding a program by name on the system PATH, and only there; and the system's folders
//! every sandbox reads (`SYSTEM_READ`) or, under `commands = ["*"]`, executes (`SYSTEM_EXEC`).
//!
//! The caller's `PATH` is never read: a harness's environment, or a folder the agent can write,
//! must not decide which file runs under a name the sandbox file allows. The folders are those a
//! person's terminal finds without their own `~/bin` (the seed's "system PATH"), with Homebrew's
//! first on macOS.
//!
//! A name resolves to the first folder's entry that is a regular file with an execute bit. The
//! answer carries both the path found and the file it really is (`/bin/sh` may be
//! `/usr/bin/dash` behind usrmerge and alternatives links), because the sandbox grants execute
//! on the real file: Landlock checks the file an `execve` finally opens.
//!
//! Trusted with: which file runs under a name the sandbox file allows (a wrong lookup could run a
//! file the agent wrote). What it trusts: the system's folders and the links in them, followed to
//! the real file: whoever may write in `/usr/bin` decides what runs, as for every other user; never
//! the caller's `PATH`.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use crate::sandbox_file::values;

/// The system PATH, in lookup order.
#[cfg(target_os = "macos")]
pub const SYSTEM_PATH: &[&str] =
    &["/opt/homebrew/bin", "/usr/local/bin", "/usr/bin", "/bin", "/usr/local/sbin", "/usr/sbin", "/sbin"];
#[cfg(not(target_os = "macos"))]
pub const SYSTEM_PATH: &[&str] =
    &["/usr/local/bin", "/usr/bin", "/bin", "/usr/local/sbin", "/usr/sbin", "/sbin"];

/// Folders every program may read, as it needs them to start (loader, libraries, locale,
/// certificates). Symlinked ones (`/bin` → `usr/bin`) are skipped: their target is in the list.
pub const SYSTEM_READ: &[&str] = &["/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/etc"];
/// Where `commands = ["*"]` may execute: the system PATH and the libraries beside it.
pub const SYSTEM_EXEC: &[&str] = &["/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin"];

/// The system PATH as one `PATH` value, for the sandboxed program's environment.
pub fn system_path_var() -> String {
    SYSTEM_PATH.join(":")
}

/// A program found on the system PATH.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundProgram {
    pub name: String,
    /// Where the lookup found it: `/usr/bin/sh`.
    pub path: PathBuf,
    /// The file it is once every link is followed: `/usr/bin/dash`.
    pub real: PathBuf,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LookupError {
    /// The name is not a plain program name (a path, empty, …).
    BadName(String),
    /// No folder of the system PATH has an executable file of that name.
    NotFound,
}

impl std::fmt::Display for LookupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LookupError::BadName(why) => f.write_str(why),
            LookupError::NotFound => {
                write!(f, "not installed: not found on the system PATH ({})", SYSTEM_PATH.join(":"))
            }
        }
    }
}

/// Which names a folder of the PATH holds, learnt while many programs are looked up in it (the
/// default sandbox lists 55): a name a folder lacks costs an `open` that fails (about 1.7 µs
/// here), and most programs miss `/usr/local/bin` before they are found in `/usr/bin`. After
/// a folder's second miss its names are read once (one `getdents` for a small folder) and
/// answer every later lookup there. A folder of more than [`LISTED_NAMES_MAX`] names
/// (`/usr/bin`: a thousand) is never kept: reading it would cost more than the misses saved.
///
/// Only ever a shortcut past folders that lack a name: a folder whose listing has the name, or
/// one not listed, is still opened and checked as before. A name added after the listing was
/// read is missed as if the lookup had come a moment earlier.
#[derive(Debug, Default)]
pub struct FolderNames {
    folders: Vec<Listing>,
}

#[derive(Debug, Clone)]
enum Listing {
    NotRead { misses: u8 },
    Read(std::collections::HashSet<Vec<u8>>),
    TooLarge,
}

/// The most names a folder may have for [`FolderNames`] to keep them.
pub const LISTED_NAMES_MAX: usize = 512;

impl FolderNames {
    /// False only when `folder` (the `i`th of the PATH) is known not to hold `name`.
    pub fn may_hold(&self, i: usize, name: &str) -> bool {
        match self.folders.get(i) {
            Some(Listing::Read(names)) => names.contains(name.as_bytes()),
            _ => true,
        }
    }

    /// Records that `folder` (the `i`th) has no program `name`; on its second miss, reads its
    /// names.
    pub fn missed(&mut self, i: usize, folder: &Path) {
        if self.folders.len() <= i {
            self.folders.resize(i + 1, Listing::NotRead { misses: 0 });
        }
        if let Listing::NotRead { misses } = &mut self.folders[i] {
            *misses += 1;
            if *misses >= 2 {
                self.folders[i] = read_names(folder);
            }
        }
    }
}

fn read_names(folder: &Path) -> Listing {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let Ok(fd) = rustix::fs::open(folder, flags, Mode::empty()) else { return Listing::TooLarge };
    let Ok(dir) = rustix::fs::Dir::read_from(&fd) else { return Listing::TooLarge };
    let mut names = std::collections::HashSet::new();
    for entry in dir {
        let Ok(entry) = entry else { return Listing::TooLarge };
        if names.len() == LISTED_NAMES_MAX {
            return Listing::TooLarge;
        }
        names.insert(entry.file_name().to_bytes().to_vec());
    }
    Listing::Read(names)
}

/// Looks `name` up on the system PATH.
pub fn lookup(name: &str) -> Result<FoundProgram, LookupError> {
    lookup_in(name, SYSTEM_PATH.iter().map(Path::new))
}

/// Looks `name` up in `folders`, in order. Tests use this with folders of their own.
pub fn lookup_in<'a>(
    name: &str,
    folders: impl IntoIterator<Item = &'a Path>,
) -> Result<FoundProgram, LookupError> {
    values::program_name(name).map_err(LookupError::BadName)?;
    for folder in folders {
        let path = folder.join(name);
        // `metadata` follows links: what matters is the file a link leads to.
        let Ok(meta) = std::fs::metadata(&path) else { continue };
        if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
            continue;
        }
        let Ok(real) = std::fs::canonicalize(&path) else { continue };
        return Ok(FoundProgram { name: name.to_owned(), path, real });
    }
    Err(LookupError::NotFound)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_sh_and_its_real_file() {
        let sh = lookup("sh").expect("every Linux system has sh");
        assert!(SYSTEM_PATH.iter().any(|d| sh.path.parent() == Some(Path::new(d))));
        assert!(sh.real.is_absolute());
        assert!(std::fs::symlink_metadata(&sh.real).unwrap().is_file());
    }

    #[test]
    fn a_small_folder_is_listed_after_two_misses_and_a_large_one_never() {
        let base = std::env::temp_dir().join(format!(
            "lnk-folder-names-{}-{}",
            rustix::process::getuid().as_raw(),
            std::process::id()
        ));
        let (small, large) = (base.join("small"), base.join("large"));
        std::fs::create_dir_all(&small).unwrap();
        std::fs::create_dir_all(&large).unwrap();
        std::fs::write(small.join("here"), "").unwrap();
        for i in 0..=LISTED_NAMES_MAX {
            std::fs::write(large.join(format!("f{i}")), "").unwrap();
        }
        let mut names = FolderNames::default();
        // Not listed yet: every name may be there.
        assert!(names.may_hold(0, "absent") && names.may_hold(1, "absent"));
        names.missed(0, &small);
        assert!(names.may_hold(0, "absent"), "one miss does not list the folder");
        names.missed(0, &small);
        assert!(!names.may_hold(0, "absent"), "listed after the second miss");
        assert!(names.may_hold(0, "here"));
        names.missed(1, &large);
        names.missed(1, &large);
        assert!(names.may_hold(1, "absent"), "a folder over the limit is never kept");
        // A folder that is not there is never taken for an empty one.
        names.missed(2, &base.join("missing"));
        names.missed(2, &base.join("missing"));
        assert!(names.may_hold(2, "absent"));
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn never_reads_the_callers_path() {
        // A PATH of the caller's naming a folder with a program of its own is ignored.
        let dir = std::env::temp_dir().join(format!(
            "lnk-path-test-{}-{}",
            rustix::process::getuid().as_raw(),
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let fake = dir.join("lnk-only-here");
        std::fs::write(&fake, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(lookup("lnk-only-here"), Err(LookupError::NotFound));
        // The same name is found when the folder is searched on purpose, so the test can fail.
        assert_eq!(lookup_in("lnk-only-here", [dir.as_path()]).unwrap().path, fake);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn skips_non_executables_and_folders_and_refuses_paths() {
        let dir = std::env::temp_dir().join(format!(
            "lnk-path-test2-{}-{}",
            rustix::process::getuid().as_raw(),
            std::process::id()
        ));
        std::fs::create_dir_all(dir.join("adir")).unwrap();
        std::fs::write(dir.join("plain"), "x").unwrap();
        std::fs::set_permissions(dir.join("plain"), std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(lookup_in("plain", [dir.as_path()]), Err(LookupError::NotFound));
        assert_eq!(lookup_in("adir", [dir.as_path()]), Err(LookupError::NotFound));
        assert!(matches!(lookup("/bin/sh"), Err(LookupError::BadName(_))));
        assert!(matches!(lookup("../sh"), Err(LookupError::BadName(_))));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
