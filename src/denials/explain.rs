//! Whether the sandbox explains a refusal a line named, and the change that would allow it.
//!
//! Looked up outside the sandbox, where lnk runs as the program's user: the path's place in the
//! grants (the sandbox file's, the system folders every program reads, the call's tmp folder),
//! and the file's own mode and owner, with every folder on the way, against the program's uid
//! and groups (which are lnk's own: the program holds no capability, as root too, so mode bits
//! are all that decide for it). ACLs are not read: where one would have let the program in, the
//! denial says the file's own permissions refused it, and gives no fix, which sends no one the
//! wrong way.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use super::lines::{Hint, Named, Reason};
use super::{Access, Cause, Denial};
use crate::flags::SandboxFlags;
use crate::sandbox_file::Commands;

/// What the refusals are checked against.
pub struct Scene<'a> {
    pub flags: &'a SandboxFlags,
    /// Where the program started: a relative path is found from there, and only where what it
    /// names (or, for a file to be made, its folder) is there.
    pub start: &'a Path,
    /// The call's tmp folder, which the program may write.
    pub tmp: Option<&'a Path>,
}

/// The denial a named refusal is, or `None` when the sandbox and the file's permissions do not
/// explain it.
pub fn explain(named: &Named, scene: &Scene<'_>, holes: &[PathBuf]) -> Option<Denial> {
    let flags = scene.flags;
    // A bare program name a shell could not run.
    if !named.text.contains('/') && (named.program || named.hint == Hint::Run) {
        return program_by_name(&named.text, flags);
    }
    let making = named.hint == Hint::Write || named.reason == Reason::ReadOnly || named.program;
    // A secret first, by the path alone: nothing of what lies in a hole is looked at (whether a
    // file exists there is not the program's to learn, and the own world shows it a mask).
    let lexical = lexical(&named.text, scene.start)?;
    if let Some(hole) = flags.deny.iter().chain(holes).find(|h| lexical.starts_with(h)) {
        // A relative path is taken from where the program started only if its first part is
        // there (a hole's own folder shows, masked, in the own world too).
        let first = Path::new(&named.text).components().next()?;
        if !Path::new(&named.text).is_absolute()
            && std::fs::symlink_metadata(scene.start.join(first)).is_err()
        {
            return None;
        }
        let access = match named.hint {
            Hint::Write => Access::Write,
            Hint::Run => Access::Run,
            _ if named.reason == Reason::ReadOnly => Access::Write,
            _ => Access::Read,
        };
        let why = format!(
            "it lies in `{}`, which the sandbox keeps out of every grant (a secret, the agent's records, or `[files] deny`)",
            hole.display()
        );
        return Some(Denial {
            access,
            target: lexical.display().to_string(),
            cause: Cause::Protected,
            why,
            fix: None,
            inferred: true,
        });
    }
    // The call's own `/tmp`, `/dev/shm` and `/proc` (the own world's) are gone or another's
    // here: nothing to look at, and the sandbox grants them whole anyway.
    if own_places(scene).iter().any(|p| lexical.starts_with(p)) {
        return None;
    }
    let path = resolve(&named.text, scene.start, making)?;
    // A shell names a command it could not run and a redirect's file it could not open alike
    // ("bash: line 1: /x: Permission denied"): a file that is not there was a redirect's, to be
    // made; one there is a command only where the sandbox let the program write it (else the
    // line could be either, and it is left out).
    let hint = match (named.program, std::fs::symlink_metadata(&path)) {
        (false, _) => named.hint,
        (true, Err(_)) => Hint::Write,
        (true, Ok(meta)) if meta.is_file() && grants_write(&path, scene) => Hint::Run,
        (true, Ok(_)) => return None,
    };
    let target = path.display().to_string();
    let denial = |access, cause, why: String, fix: Option<String>| {
        Some(Denial { access, target: target.clone(), cause, why, fix, inferred: true })
    };
    let hinted = match hint {
        Hint::Read => Access::Read,
        Hint::Write => Access::Write,
        Hint::Run => Access::Run,
        Hint::Unknown if named.reason == Reason::ReadOnly => Access::Write,
        Hint::Unknown => Access::ReadOrWrite,
    };
    let who = Who::me();
    let permissions = |access: Access| {
        let why = format!(
            "the file's own permissions (mode and owner{}) refuse the program's user: not the sandbox",
            if path.exists() { "" } else { ", of its folder" }
        );
        denial(access, Cause::Permissions, why, None)
    };
    let readable = grants_read(&path, scene);
    let writable = grants_write(&path, scene);
    if hinted == Access::Run {
        return explain_run(&path, scene, &who, denial);
    }
    // EROFS: only a write, and only the own world's read-only view gives it where the grants
    // do not reach.
    if named.reason == Reason::ReadOnly {
        if writable {
            return None;
        }
        return match who.allows(&path, Want::Write) {
            Some(false) => permissions(Access::Write),
            Some(true) => outside(Access::Write, &path, denial),
            None => None,
        };
    }
    match hinted {
        Access::Read => match (readable, who.allows(&path, Want::Read)) {
            (_, Some(false)) => permissions(Access::Read),
            (false, Some(true)) => outside(Access::Read, &path, denial),
            _ => None,
        },
        Access::Write => match (writable, who.allows(&path, Want::Write)) {
            (_, Some(false)) => permissions(Access::Write),
            (false, Some(true)) => outside(Access::Write, &path, denial),
            _ => None,
        },
        _ => {
            // The message did not say: the grants and the permissions together may.
            let read = who.allows(&path, Want::Read);
            let write = who.allows(&path, Want::Write);
            match (readable, writable, read, write) {
                (_, _, Some(false), _) => permissions(Access::Read),
                (false, _, Some(true), _) => outside(Access::ReadOrWrite, &path, denial),
                (true, false, Some(true), Some(true)) => outside(Access::Write, &path, denial),
                (true, _, Some(true), Some(false)) => permissions(Access::Write),
                _ => None,
            }
        }
    }
}

/// The denial for a path outside the grants the access needs, with the narrowest grant.
fn outside(
    access: Access,
    path: &Path,
    denial: impl Fn(Access, Cause, String, Option<String>) -> Option<Denial>,
) -> Option<Denial> {
    let (why, list) = match access {
        Access::Read => ("it is outside every `[files] read` and `write` grant", "read"),
        Access::Write => ("it is outside every `[files] write` grant", "write"),
        _ => (
            "it is outside every `[files] read` and `write` grant",
            "read (or to [files] write, to change it)",
        ),
    };
    denial(access, Cause::OutsideGrants, why.to_owned(), grant_fix(path, list))
}

/// `add "PATH" to [files] LIST` for the narrowest grant that allows `path`: the path itself
/// where it exists, else the nearest folder on its way that does; never `/`.
pub fn grant_fix(path: &Path, list: &str) -> Option<String> {
    let grant = path.ancestors().find(|p| std::fs::symlink_metadata(p).is_ok())?;
    if grant == Path::new("/") {
        return None;
    }
    Some(format!("add \"{}\" to [files] {list}", grant.display()))
}

/// A program a shell named that it could not run.
fn program_by_name(name: &str, flags: &SandboxFlags) -> Option<Denial> {
    let found = crate::program_path::lookup(name).ok()?;
    match &flags.commands {
        Commands::Any => None,
        Commands::Listed(names) if names.iter().any(|n| n == name) => None,
        Commands::Listed(_) => Some(Denial {
            access: Access::Run,
            target: name.to_owned(),
            cause: Cause::NotListed,
            why: format!("`{name}` ({}) is not among `commands`", found.path.display()),
            fix: Some(format!("add \"{name}\" to commands")),
            inferred: true,
        }),
    }
}

/// A program file by path that could not be run.
fn explain_run(
    path: &Path,
    scene: &Scene<'_>,
    who: &Who,
    denial: impl Fn(Access, Cause, String, Option<String>) -> Option<Denial>,
) -> Option<Denial> {
    if who.allows(path, Want::Run) == Some(false) {
        let why = "the file's own permissions (its execute bits, or a folder on its way) refuse the program's user: not the sandbox";
        return denial(Access::Run, Cause::Permissions, why.to_owned(), None);
    }
    match &scene.flags.commands {
        Commands::Listed(names) => {
            let name = path.file_name()?.to_string_lossy().into_owned();
            let in_system = path
                .parent()
                .is_some_and(|dir| crate::program_path::SYSTEM_PATH.iter().any(|p| Path::new(p) == dir));
            if in_system && names.contains(&name) {
                return None;
            }
            let (why, fix) = match in_system {
                true => (format!("`{name}` is not among `commands`"), Some(format!("add \"{name}\" to commands"))),
                false => (
                    "only the programs `commands` lists run, from the system's program folders (or any program, with `commands = [\"*\"]`)".to_owned(),
                    None,
                ),
            };
            denial(Access::Run, Cause::NotListed, why, fix)
        }
        // Under ["*"], programs run from the system's folders and the write grants.
        Commands::Any if grants_write(path, scene) || under(path, crate::sandbox::SYSTEM_EXEC) => None,
        Commands::Any => denial(
            Access::Run,
            Cause::OutsideGrants,
            "under `commands = [\"*\"]` programs run from the system's program folders and the write grants only".to_owned(),
            None,
        ),
    }
}

/// The absolute path a line names, lexically: as it is, or from where the program started.
fn lexical(text: &str, start: &Path) -> Option<PathBuf> {
    if text.starts_with('~') {
        return None;
    }
    normalize(&start.join(text))
}

/// Where the own world gives the call places of its own, which lnk cannot look at afterwards:
/// its `/tmp` (when the call's tmp is shown there), `/dev/shm` and `/proc`.
fn own_places<'a>(scene: &Scene<'a>) -> Vec<&'a Path> {
    match scene.tmp {
        Some(tmp) if tmp == Path::new("/tmp") => vec![tmp, Path::new("/dev/shm"), Path::new("/proc")],
        _ => Vec::new(),
    }
}

/// The absolute path a line names: as it is when absolute; a relative one from where the
/// program started, only when it (or, for a file to be made, its folder) is there.
fn resolve(text: &str, start: &Path, making: bool) -> Option<PathBuf> {
    let path = Path::new(text);
    if path.is_absolute() {
        return normalize(path);
    }
    let path = lexical(text, start)?;
    let there = std::fs::symlink_metadata(&path).is_ok()
        || (making && path.parent().is_some_and(|p| std::fs::metadata(p).is_ok_and(|m| m.is_dir())));
    there.then_some(path)
}

/// `path` with `.` and `..` taken away lexically (the program's view of it); `None` above `/`.
fn normalize(path: &Path) -> Option<PathBuf> {
    use std::path::Component;
    let mut out = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::RootDir | Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(name) => out.push(name),
            Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

fn under(path: &Path, roots: &[&str]) -> bool {
    roots.iter().any(|r| path.starts_with(r))
}

/// Whether the grants let the program read `path`: the sandbox file's, the call's tmp folder,
/// and the system folders every program reads (but a program folder's files only for listed
/// programs).
fn grants_read(path: &Path, scene: &Scene<'_>) -> bool {
    let flags = scene.flags;
    if flags.read.iter().chain(&flags.write).any(|g| path.starts_with(g)) || grants_write(path, scene) {
        return true;
    }
    if !under(path, crate::sandbox::SYSTEM_READ) {
        return false;
    }
    let in_program_folder =
        path.parent().is_some_and(|dir| crate::program_path::SYSTEM_PATH.iter().any(|p| Path::new(p) == dir));
    match (&flags.commands, in_program_folder) {
        (_, false) | (Commands::Any, true) => true,
        (Commands::Listed(names), true) => {
            path.file_name().is_some_and(|n| names.iter().any(|l| n.to_string_lossy() == l.as_str()))
        }
    }
}

/// Whether the grants let the program write `path`.
fn grants_write(path: &Path, scene: &Scene<'_>) -> bool {
    scene.flags.write.iter().any(|g| path.starts_with(g)) || scene.tmp.is_some_and(|t| path.starts_with(t))
}

/// What a check asks of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    Read,
    Write,
    Run,
}

/// The program's user, as the kernel's permission checks see it.
pub struct Who {
    uid: u32,
    gids: Vec<u32>,
}

impl Who {
    /// lnk's own effective user and groups: the program's.
    pub fn me() -> Who {
        let mut gids = vec![rustix::process::getegid().as_raw()];
        gids.extend(supplementary_groups());
        Who { uid: rustix::process::geteuid().as_raw(), gids }
    }

    /// Whether the mode bits let this user do `want` to `path` (and search every folder on its
    /// way); for a file that does not exist, write means making it in its folder. `None` where
    /// it cannot be told (a folder on the way is missing, or the file is, for a read).
    pub fn allows(&self, path: &Path, want: Want) -> Option<bool> {
        let mut way: Vec<&Path> = path.ancestors().skip(1).collect();
        way.reverse();
        for folder in &way {
            let meta = std::fs::metadata(folder).ok()?;
            if !self.may(&meta, 0o1) {
                return Some(false);
            }
        }
        match std::fs::metadata(path) {
            Ok(meta) => Some(match want {
                Want::Read => self.may(&meta, 0o4),
                Want::Write => self.may(&meta, 0o2),
                Want::Run => self.may(&meta, 0o1) && meta.is_file(),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && want == Want::Write => {
                let folder = std::fs::metadata(path.parent()?).ok()?;
                Some(self.may(&folder, 0o3))
            }
            Err(_) => None,
        }
    }

    /// Whether `bits` (of r=4, w=2, x=1) are all granted by the owner, group or other class
    /// that applies to this user, as the kernel picks it.
    fn may(&self, meta: &std::fs::Metadata, bits: u32) -> bool {
        let mode = meta.mode();
        let class = if meta.uid() == self.uid {
            mode >> 6
        } else if self.gids.contains(&meta.gid()) {
            mode >> 3
        } else {
            mode
        };
        class & bits == bits
    }
}

/// This process's supplementary groups.
fn supplementary_groups() -> Vec<u32> {
    let mut groups = vec![0 as libc::gid_t; 256];
    // SAFETY: getgroups writes at most `groups.len()` ids into the buffer it is given, which
    // holds that many, and returns how many it wrote (or -1).
    let n = unsafe { libc::getgroups(groups.len() as libc::c_int, groups.as_mut_ptr()) };
    groups.truncate(usize::try_from(n).unwrap_or(0));
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags() -> SandboxFlags {
        SandboxFlags::from_args(&["--tool".into(), "run".into()]).unwrap()
    }

    #[test]
    fn nothing_in_a_hole_or_the_calls_own_places_is_looked_at() {
        let home = std::env::temp_dir().join(format!("lnk-denials-hole-{}", std::process::id()));
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        let flags = flags();
        let scene = Scene { flags: &flags, start: &home, tmp: Some(Path::new("/tmp")) };
        let holes = vec![home.join(".ssh")];
        let read =
            |text: &str| super::super::lines::read(&format!("cat: {text}: Permission denied"), &[]).unwrap();
        // A file that does not exist in a hole is named all the same: its existence is not
        // looked at, so not told.
        let d = explain(&read(".ssh/never-there"), &scene, &holes).unwrap();
        assert_eq!(
            (d.cause, d.fix.as_deref(), d.target),
            (Cause::Protected, None, home.join(".ssh/never-there").display().to_string())
        );
        // A relative path whose first part is not where the program started is left out.
        assert_eq!(explain(&read(".gnupg/x"), &scene, &[home.join(".gnupg")]), None);
        // The own world's /tmp is the call's own, gone by now.
        assert_eq!(explain(&read("/tmp/anything"), &scene, &holes), None);
        std::fs::remove_dir_all(&home).unwrap();
    }

    #[test]
    fn a_fix_grants_what_was_named_or_the_folder_it_would_be_made_in_never_root() {
        let dir = std::env::temp_dir().join(format!("lnk-denials-fix-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("a")).unwrap();
        let d = dir.display();
        assert_eq!(grant_fix(&dir.join("a"), "read"), Some(format!("add \"{d}/a\" to [files] read")));
        assert_eq!(
            grant_fix(&dir.join("a/new/deeper"), "write"),
            Some(format!("add \"{d}/a\" to [files] write"))
        );
        assert_eq!(grant_fix(Path::new("/no-such-folder-lnk/x"), "write"), None, "never /");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn mode_bits_are_read_as_the_kernel_reads_them() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = std::env::temp_dir().join(format!("lnk-denials-dac-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("f");
        std::fs::write(&file, "x").unwrap();
        let me = Who::me();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o000)).unwrap();
        assert_eq!(me.allows(&file, Want::Read), Some(false), "the owner's class decides, even for root");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o400)).unwrap();
        assert_eq!(me.allows(&file, Want::Read), Some(true));
        assert_eq!(me.allows(&file, Want::Write), Some(false));
        assert_eq!(me.allows(&dir.join("new"), Want::Write), Some(true), "made in a folder it owns");
        assert_eq!(me.allows(&dir.join("missing"), Want::Read), None);
        let other = Who { uid: me.uid.wrapping_add(12345), gids: vec![54321] };
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o604)).unwrap();
        assert_eq!(other.allows(&file, Want::Read), Some(true), "the other class");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(other.allows(&file, Want::Read), Some(false), "a folder on the way it cannot search");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn relative_paths_are_found_only_where_the_program_started() {
        let dir = std::env::temp_dir().join(format!("lnk-denials-rel-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/x"), "").unwrap();
        assert_eq!(resolve("sub/x", &dir, false), Some(dir.join("sub/x")));
        assert_eq!(resolve("peers/x", &dir, false), None, "not there: the program may have moved");
        assert_eq!(
            resolve("sub/new", &dir, true),
            Some(dir.join("sub/new")),
            "to be made, in a folder that is"
        );
        assert_eq!(resolve("../../../../../../../../../../..", &dir, false), None, "above /");
        assert_eq!(resolve("/a/../b", &dir, false), Some(PathBuf::from("/b")));
        assert_eq!(
            own_places(&Scene { flags: &flags(), start: &dir, tmp: Some(Path::new("/tmp")) }).len(),
            3
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
