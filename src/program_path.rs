//! Finding a program by name on the system PATH, and only there.
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
                write!(f, "not found on the system PATH ({})", SYSTEM_PATH.join(":"))
            }
        }
    }
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
    fn never_reads_the_callers_path() {
        // A PATH of the caller's naming a folder with a program of its own is ignored.
        let dir = std::env::temp_dir().join(format!("lnk-path-test-{}", std::process::id()));
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
        let dir = std::env::temp_dir().join(format!("lnk-path-test2-{}", std::process::id()));
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
