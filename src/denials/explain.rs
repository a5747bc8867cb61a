//! Whether the sandbox explains a refusal a line named, and the change that would allow it.
//!
//! Checked outside the sandbox, where lnk runs as the program's user: first the path's name
//! alone against the places no grant opens (a secret, `[files] deny`, the agent's records: the
//! caller's `protected`, the whole set, not only the holes the grants were cut around), then the
//! path's place in the grants (the sandbox file's, the system folders every program reads, the
//! call's tmp folder), then the file's own mode and owner with every folder on the way
//! ([`super::look`]: never through a link, never much), against the program's uid and groups.
//! A fix is the narrowest grant that would allow the access, and never one that would let the
//! program change what runs outside it: no write grant over the system's folders, the program
//! folders, lnk's own executable's folder, or `/`.
//!
//! Trusted with: whether a refusal is blamed on the sandbox, and which grant is offered to allow
//! it: a wrong fix could have an agent ask for a write grant over a program folder, or a read grant
//! over a secret. What it trusts: the call's flags, its caller's list of the paths no grant opens,
//! and what [`super::look`] finds on the disk after the call; of the line, only the path it names,
//! as text.

use std::path::{Path, PathBuf};

use super::lines::{Hint, Named, Reason};
use super::look::{Seen, Want, Who, look};
use super::{Access, Cause, Denial, Fix};
use crate::flags::SandboxFlags;
use crate::sandbox_file::Commands;

/// What the refusals are checked against.
#[derive(Clone, Copy)]
pub struct Scene<'a> {
    pub flags: &'a SandboxFlags,
    /// Where the program started: a relative path is found from there, and only where what it
    /// names (or, for a file to be made, its folder) is there.
    pub start: &'a Path,
    /// The call's tmp folder, which the program may write.
    pub tmp: Option<&'a Path>,
    /// The caller's home: never offered as a grant for one file in it.
    pub home: &'a Path,
    /// Whether the call ran in its own world (else Landlock only: the host's `/tmp`,
    /// `/dev/shm` and `/proc` are the host's, and no grant should open them).
    pub own_world: bool,
}

/// The denial a named refusal is, or `None` when the sandbox and the file's permissions do not
/// explain it. `protected`: every path no grant opens here (see [`crate::protected`]).
pub fn explain(named: &Named, scene: &Scene<'_>, protected: &[PathBuf]) -> Option<Denial> {
    let flags = scene.flags;
    // A bare name make or find printed: the program it could not run, unless the start folder
    // has a file of that name (then that file, explained below).
    if named.program_or_file && !named.text.contains('/') {
        let here = look(&scene.start.join(&named.text)).is_some_and(|seen| seen.file.is_some());
        if !here {
            return program_by_name(&named.text, flags);
        }
    }
    // A bare program name a shell could not run.
    if !named.text.contains('/') && (named.program || named.hint == Hint::Run) {
        return program_by_name(&named.text, flags);
    }
    let relative = !Path::new(&named.text).is_absolute();
    let lexical = lexical(&named.text, scene.start)?;
    // A secret first, by its name alone: nothing of what lies there is looked at (whether a
    // file exists in `~/.ssh` is not the program's to learn; the own world shows it a mask).
    if let Some(hole) = flags.deny.iter().chain(protected).find(|h| lexical.starts_with(h)) {
        // A relative path is taken from where the program started only if its first part is
        // there (a secret's own folder shows, masked, in the own world too).
        let first = Path::new(&named.text).components().next()?;
        if relative && look(&scene.start.join(first)).is_none_or(|seen| seen.file.is_none()) {
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
        let target = lexical.display().to_string();
        return Some(Denial { access, target, cause: Cause::Protected, why, fix: None, inferred: true });
    }
    // The host's devices: no grant opens one (see `crate::protected::device_grant`).
    if crate::protected::is_device_path(&lexical) && !relative && named.reason != Reason::Missing {
        let access = match named.hint {
            Hint::Write => Access::Write,
            _ if named.reason == Reason::ReadOnly => Access::Write,
            _ => Access::Read,
        };
        let why = "it is one of the host's devices (`/dev`: the person's terminals, disks and console), which no grant opens; a call gets /dev/null, /dev/zero, /dev/full, /dev/random, /dev/urandom and a terminal of its own (/dev/ptmx)".to_owned();
        let target = lexical.display().to_string();
        return Some(Denial { access, target, cause: Cause::Protected, why, fix: None, inferred: true });
    }
    // The call's own `/tmp`, `/dev/shm` and `/proc` (the own world's) are gone or another's
    // here: nothing to look at, and the sandbox grants them whole anyway. Grants beneath the
    // host's `/tmp` are shown again there at their own paths: those are the host's.
    let granted = flags.read.iter().chain(&flags.write).any(|g| lexical.starts_with(g));
    // "No such file or directory": a missing file is just missing, except where the own world
    // covers the host's `/tmp` with the call's own and the path is in no grant there (grants
    // beneath it are shown again): what is there on the host looks missing to the program, and
    // a grant would show it (looked at below, as for a refusal).
    let hidden = scene.own_world && !relative && !granted && hidden_by_own_tmp(&lexical);
    if named.reason == Reason::Missing && !hidden {
        return None;
    }
    if !hidden && !granted && own_places(scene).iter().any(|p| lexical.starts_with(p)) {
        return None;
    }
    // A hidden path is the host's, not in the call's own `/tmp` (which the program may write).
    let scene = &Scene { tmp: if hidden { None } else { scene.tmp }, ..*scene };
    // Without the own world, the host's shared places are the host's: no grant is offered.
    if !scene.own_world && !granted && !scene.tmp.is_some_and(|t| lexical.starts_with(t)) {
        if let Some(why) = hosts_own(&lexical) {
            let access = if named.hint == Hint::Write || named.reason == Reason::ReadOnly {
                Access::Write
            } else {
                Access::Read
            };
            let target = lexical.display().to_string();
            return Some(Denial {
                access,
                target,
                cause: Cause::NeedsOwnWorld,
                why,
                fix: None,
                inferred: true,
            });
        }
    }
    let path = lexical;
    let seen = look(&path)?;
    // Missing on the host too, where the program read it: nothing to grant (one it may have
    // been making, its folder there, is refused being made below).
    if matches!(named.reason, Reason::Missing | Reason::Unseen)
        && seen.file.is_none()
        && named.hint == Hint::Read
    {
        return None;
    }
    // A relative path only where it is found from where the program started: the file, or for
    // a file to be made, its folder (which `look` found).
    let making = named.hint == Hint::Write || named.reason == Reason::ReadOnly || named.program;
    if relative && seen.file.is_none() && !making {
        return None;
    }
    // A shell names a command it could not run and a redirect's file it could not open alike
    // ("bash: line 1: /x: Permission denied"): a file that is not there was a redirect's, to be
    // made; one there is a command only where the sandbox let the program write it (else the
    // line could be either, and it is left out).
    let hint = match (named.program, &seen.file) {
        (false, _) => named.hint,
        (true, None) => Hint::Write,
        (true, Some(file))
            if file.kind == rustix::fs::FileType::RegularFile && grants_write(&path, scene) =>
        {
            Hint::Run
        }
        (true, Some(_)) => return None,
    };
    let target = path.display().to_string();
    let denial = |access, cause, why: String, fix: Option<Fix>| {
        Some(Denial { access, target: target.clone(), cause, why, fix, inferred: true })
    };
    let hinted = match hint {
        Hint::Read => Access::Read,
        Hint::Write => Access::Write,
        Hint::Run => Access::Run,
        Hint::Unknown if named.reason == Reason::ReadOnly => Access::Write,
        // A file that is not there was refused being made (reading it would say it is not).
        Hint::Unknown if seen.file.is_none() => Access::Write,
        Hint::Unknown => Access::ReadOrWrite,
    };
    let who = Who::me();
    let permissions = |access: Access| {
        let whose = if seen.file.is_some() { "" } else { ", of its folder" };
        let why = format!(
            "the file's own permissions (mode and owner{whose}) refuse the program's user: not the sandbox"
        );
        denial(access, Cause::Permissions, why, None)
    };
    let outside = |access: Access| {
        let (why, list) = match access {
            Access::Read => ("it is outside every `[files] read` and `write` grant", "read"),
            Access::Write => ("it is outside every `[files] write` grant", "write"),
            // The message did not say: reading is what a grant surely has to allow (a write
            // refused after it would name itself next time).
            _ => ("it is outside every `[files] read` and `write` grant", "read"),
        };
        let writes = access != Access::Read;
        match grant_for(&path, &seen, writes, scene.home, protected) {
            Ok(folder) => {
                let fix = if list == "read" { Fix::read(&folder) } else { Fix::write(&folder) };
                denial(access, Cause::OutsideGrants, why.to_owned(), Some(fix))
            }
            Err(none) => denial(access, Cause::OutsideGrants, format!("{why}; {none}"), None),
        }
    };
    if hinted == Access::Run {
        return explain_run(&path, &seen, scene, &who, denial);
    }
    let readable = grants_read(&path, scene);
    let writable = grants_write(&path, scene);
    // EROFS: only a write, and only the own world's read-only view gives it where the grants
    // do not reach.
    if named.reason == Reason::ReadOnly {
        if writable {
            return None;
        }
        return match who.allows(&seen, Want::Write) {
            Some(false) => permissions(Access::Write),
            Some(true) => outside(Access::Write),
            None => None,
        };
    }
    match hinted {
        Access::Read => match (readable, who.allows(&seen, Want::Read)) {
            (_, Some(false)) => permissions(Access::Read),
            (false, Some(true)) => outside(Access::Read),
            _ => None,
        },
        Access::Write => match (writable, who.allows(&seen, Want::Write)) {
            (_, Some(false)) => permissions(Access::Write),
            (false, Some(true)) => outside(Access::Write),
            (true, Some(true)) => beside_protected(&path, &seen, protected)
                .and_then(|why| denial(Access::Write, Cause::BesideProtected, why, None)),
            _ => None,
        },
        _ => {
            // The message did not say: the grants and the permissions together may.
            let read = who.allows(&seen, Want::Read);
            let write = who.allows(&seen, Want::Write);
            match (readable, writable, read, write) {
                (_, _, Some(false), _) => permissions(Access::Read),
                (false, _, Some(true), _) => outside(Access::ReadOrWrite),
                (true, false, Some(true), Some(true)) => outside(Access::Write),
                (true, _, Some(true), Some(false)) => permissions(Access::Write),
                _ => None,
            }
        }
    }
}

/// The folder the narrowest grant that allows `path` (which `seen` shows) would name: the path
/// itself where it is a folder, else its folder (grants name folders). Or why there is none:
/// `/`; the home, or a folder above it, for something in it (a grant would open all of it); a
/// write grant that would let the program change what runs outside it ([`unsafe_to_write`]);
/// and for something to be made, a folder that holds protected paths (a grant of it is cut
/// around them, and nothing can be made directly in it: see [`beside_protected`]).
fn grant_for(
    path: &Path,
    seen: &Seen,
    writes: bool,
    home: &Path,
    protected: &[PathBuf],
) -> Result<PathBuf, String> {
    let folder = match &seen.file {
        Some(file) if file.kind == rustix::fs::FileType::Directory => path,
        _ => path.parent().ok_or("a grant of `/` would open the whole computer")?,
    };
    if folder == Path::new("/") {
        return Err("no fix: a grant of `/` would open the whole computer".into());
    }
    if folder == Path::new("/tmp") || folder == Path::new("/dev/shm") {
        return Err(format!(
            "no fix: a grant of `{}` would open every process's files there (it is shared); the program's own tmp folder is `$TMPDIR`",
            folder.display()
        ));
    }
    if folder != path && home.starts_with(folder) {
        return Err(format!(
            "no fix: a grant names a folder, and this one's is `{}`, which lnk never grants for one file in it (it would open all of it); move the file into a folder of its own and grant that",
            folder.display()
        ));
    }
    if writes && unsafe_to_write(folder) {
        return Err(format!(
            "no fix: a write grant of `{}` would let the program change what runs outside the sandbox (the system's folders, or lnk's own)",
            folder.display()
        ));
    }
    if seen.file.is_none() {
        if let Some(why) = beside_protected(path, seen, protected) {
            return Err(format!("no fix: {why}"));
        }
    }
    Ok(folder.to_owned())
}

/// Why `path`, not there yet, cannot be made by any grant: its folder holds protected paths (a
/// secret, a `deny` entry, the agent's records, where they are or would be), so a grant of it
/// is cut around them, and in a folder so cut the program may change what is already there but
/// make nothing new (which could be a protected path that does not exist yet).
fn beside_protected(path: &Path, seen: &Seen, protected: &[PathBuf]) -> Option<String> {
    if seen.file.is_some() {
        return None;
    }
    let folder = path.parent()?;
    let held: Vec<&PathBuf> =
        protected.iter().filter(|h| h.starts_with(folder) && h.as_path() != folder).collect();
    let first = held.first()?;
    Some(format!(
        "`{}` holds protected paths (`{}`{}), so a grant of it lets the program change what is already in it but make nothing new directly in it; make it in a folder already in it (or grant a folder beneath it)",
        folder.display(),
        first.display(),
        if held.len() > 1 { format!(" and {} more", held.len() - 1) } else { String::new() }
    ))
}

/// The write grant a refused metadata call on `path` (an existing file the helper found) would
/// need: its folder (see [`grant_for`]), or why there is none.
pub fn write_fix(path: &Path, home: &Path) -> Result<Fix, String> {
    let seen = look(path).ok_or("no fix: the path cannot be looked at")?;
    grant_for(path, &seen, true, home, &[]).map(|folder| Fix::write(&folder))
}

/// The read grant an inotify watch refused on `path` (an existing file or folder the helper
/// found) would need: its folder (see [`grant_for`]), or why there is none.
pub fn read_fix(path: &Path, home: &Path) -> Result<Fix, String> {
    let seen = look(path).ok_or("no fix: the path cannot be looked at")?;
    grant_for(path, &seen, false, home, &[]).map(|folder| Fix::read(&folder))
}

/// Whether the own world hides `path` (absolute, in no grant): it lies strictly beneath the
/// host's `/tmp`, which the call's own `/tmp` covers.
fn hidden_by_own_tmp(path: &Path) -> bool {
    path.starts_with("/tmp") && path != Path::new("/tmp")
}

/// Why no grant should open `path` without the own world, if the grant a fix would name is one
/// of the host's shared places: its `/tmp` or `/dev/shm` themselves (the folder asked for, or a
/// file's or a new file's folder), or a process's folder in `/proc`. A folder beneath `/tmp`
/// (a harness's work folder, an agent's home in a scratch folder) is an ordinary grant.
pub fn hosts_own(path: &Path) -> Option<String> {
    let is_folder = path.symlink_metadata().is_ok_and(|m| m.is_dir());
    let under = |place: &str| {
        let place = Path::new(place);
        path == place || (path.parent() == Some(place) && !is_folder)
    };
    if under("/tmp") {
        return Some("the host's `/tmp` is shared with every process here, and the sandbox never opens it without the call's own world; the call's own tmp folder is `$TMPDIR` (a `/tmp` of its own needs user namespaces)".into());
    }
    if under("/dev/shm") {
        return Some("the host's `/dev/shm` holds every process's shared memory, and the sandbox never opens it without the call's own world; `shm_open` and `sem_open` work (lnk makes them in the call's own folder), listing it needs user namespaces".into());
    }
    let in_proc = path.strip_prefix("/proc").ok()?;
    let first = in_proc.components().next()?.as_os_str().to_string_lossy();
    let process = first == "self" || first == "thread-self" || first.bytes().all(|b| b.is_ascii_digit());
    process.then(|| "no process's `/proc` folder is readable without the call's own world (it would show the host's processes, their environment included); a `/proc` of the call's own needs user namespaces".into())
}

/// Whether a write grant on `grant` would let the program change what runs outside the sandbox:
/// the system's folders and program folders (or a folder holding them), and the folder of the
/// lnk that runs (a program could replace lnk itself, and the next call would run its code
/// unconfined).
fn unsafe_to_write(grant: &Path) -> bool {
    let system = crate::program_path::SYSTEM_READ.iter().chain(crate::program_path::SYSTEM_PATH);
    let mut places: Vec<PathBuf> = system.map(PathBuf::from).collect();
    if let Some(folder) =
        std::fs::read_link("/proc/self/exe").ok().and_then(|e| e.parent().map(Path::to_owned))
    {
        places.push(folder);
    }
    places.iter().any(|place| place.starts_with(grant) || grant.starts_with(place))
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
            fix: Some(Fix::program(name)),
            inferred: true,
        }),
    }
}

/// A program file by path that could not be run.
fn explain_run(
    path: &Path,
    seen: &Seen,
    scene: &Scene<'_>,
    who: &Who,
    denial: impl Fn(Access, Cause, String, Option<Fix>) -> Option<Denial>,
) -> Option<Denial> {
    match who.allows(seen, Want::Run) {
        Some(false) => {
            let why = "the file's own permissions (its execute bits, or a folder on its way) refuse the program's user: not the sandbox";
            return denial(Access::Run, Cause::Permissions, why.to_owned(), None);
        }
        Some(true) => {}
        None => return None,
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
                true => (format!("`{name}` is not among `commands`"), Some(Fix::program(&name))),
                false => (
                    "only the programs `commands` lists run, from the system's program folders (or any program, with `commands = [\"*\"]`)".to_owned(),
                    None,
                ),
            };
            denial(Access::Run, Cause::NotListed, why, fix)
        }
        // Under ["*"], programs run from the system's folders and the write grants.
        Commands::Any if grants_write(path, scene) || under(path, crate::program_path::SYSTEM_EXEC) => None,
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
    if !under(path, crate::program_path::SYSTEM_READ) {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn flags() -> SandboxFlags {
        SandboxFlags::from_args(&["--tool".into(), "run".into()]).unwrap()
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "lnk-denials-{name}-{}-{}",
            rustix::process::getuid().as_raw(),
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn read(text: &str) -> Named {
        super::super::lines::read(&format!("cat: {text}: Permission denied"), &[]).unwrap()
    }

    #[test]
    fn nothing_in_a_secret_or_the_calls_own_places_is_looked_at() {
        let home = scratch("hole");
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        let flags = flags();
        let scene =
            Scene { flags: &flags, start: &home, tmp: Some(Path::new("/tmp")), home: &home, own_world: true };
        let protected = vec![home.join(".ssh")];
        // A file that is not there in a secret is named all the same: its existence is not
        // looked at, so not told; and no grant is offered.
        let d = explain(&read(".ssh/never-there"), &scene, &protected).unwrap();
        let target = home.join(".ssh/never-there").display().to_string();
        assert_eq!((d.cause, d.fix, d.target), (Cause::Protected, None, target));
        // The secret's folder itself, outside every grant: no fix that would open it.
        let d = explain(&read(&home.join(".ssh").display().to_string()), &scene, &protected).unwrap();
        assert_eq!((d.cause, d.fix), (Cause::Protected, None));
        // A relative path whose first part is not where the program started is left out.
        assert_eq!(explain(&read(".gnupg/x"), &scene, &[home.join(".gnupg")]), None);
        // The own world's /tmp is the call's own, gone by now; a grant beneath the host's /tmp
        // is shown again at its path, and is the host's.
        assert_eq!(explain(&read("/tmp/anything"), &scene, &protected), None);
        let granted = SandboxFlags::from_args(&[
            "--tool".into(),
            "run".into(),
            "--read".into(),
            home.display().to_string(),
        ])
        .unwrap();
        let scene = Scene {
            flags: &granted,
            start: &home,
            tmp: Some(Path::new("/tmp")),
            home: &home,
            own_world: true,
        };
        std::fs::write(home.join("closed"), "").unwrap();
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(home.join("closed"), std::fs::Permissions::from_mode(0o000)).unwrap();
        }
        let d = explain(&read(&home.join("closed").display().to_string()), &scene, &protected);
        assert!(home.starts_with("/tmp") == d.is_some(), "{d:?}");
        std::fs::remove_dir_all(&home).unwrap();
    }

    #[test]
    fn a_fix_names_a_folder_never_root_nor_the_home_for_one_file_in_it() {
        let dir = scratch("fix");
        let home = dir.join("home");
        std::fs::create_dir_all(dir.join("a")).unwrap();
        std::fs::create_dir_all(home.join("work")).unwrap();
        std::fs::write(dir.join("a/f"), "").unwrap();
        std::fs::write(home.join("notes.txt"), "").unwrap();
        let grant = |p: &Path, writes, protected: &[PathBuf]| {
            look(p).ok_or_else(String::new).and_then(|seen| grant_for(p, &seen, writes, &home, protected))
        };
        // A folder itself; a file's folder; a file to be made in it.
        assert_eq!(grant(&dir.join("a"), false, &[]), Ok(dir.join("a")));
        assert_eq!(grant(&dir.join("a/f"), true, &[]), Ok(dir.join("a")));
        assert_eq!(grant(&dir.join("a/new"), false, &[]), Ok(dir.join("a")));
        // Never /, never the home (nor above it) for one file in it; the home itself may be.
        assert!(grant(Path::new("/new-top-level-lnk"), true, &[]).is_err(), "never /");
        assert!(grant(&home.join("notes.txt"), false, &[]).unwrap_err().contains("never grants"));
        assert!(grant(&home.join("new.txt"), true, &[]).is_err());
        assert!(grant(&dir.join("home-sibling-file"), true, &[]).is_err(), "above the home");
        assert_eq!(grant(&home, false, &[]), Ok(home.clone()));
        assert_eq!(grant(&home.join("work/new"), true, &[]), Ok(home.join("work")));
        // Nothing new directly in a folder that holds protected paths, even where they are not.
        let secret = [home.join("work/.ssh")];
        let why = grant(&home.join("work/new"), true, &secret).unwrap_err();
        assert!(why.contains("holds protected paths"), "{why}");
        assert_eq!(grant(&home.join("work"), true, &secret), Ok(home.join("work")), "the folder itself");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn without_the_own_world_the_hosts_shared_places_get_no_fix() {
        let file =
            format!("/tmp/lnk-hosts-own-{}-{}", rustix::process::getuid().as_raw(), std::process::id());
        let folder = format!("{file}-folder");
        std::fs::create_dir_all(&folder).unwrap();
        for place in [
            "/tmp",
            "/tmp/not-there-lnk",
            &file,
            "/dev/shm",
            "/dev/shm/sem.x",
            "/proc/1",
            "/proc/self/environ",
        ] {
            assert!(hosts_own(Path::new(place)).is_some(), "{place}");
        }
        // A folder in /tmp, and anything beneath one, is granted by its own name.
        let beneath = format!("{folder}/notes.txt");
        for place in ["/proc/cpuinfo", "/srv/tmp", "/dev/null", "/tmpx", "/tmp/x/y", &folder, &beneath] {
            assert!(hosts_own(Path::new(place)).is_none(), "{place}");
        }
        std::fs::remove_dir_all(&folder).unwrap();
    }

    #[test]
    fn no_write_fix_would_let_the_program_change_what_runs_outside() {
        for place in ["/usr", "/usr/local", "/usr/local/bin", "/etc/cron.d", "/bin", "/"] {
            assert!(unsafe_to_write(Path::new(place)), "{place}");
        }
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        assert!(unsafe_to_write(exe.parent().unwrap()), "the running binary's folder");
        assert!(unsafe_to_write(exe.parent().unwrap().parent().unwrap()), "and one holding it");
        assert!(!unsafe_to_write(Path::new("/srv/project")));
    }

    #[test]
    fn relative_paths_are_found_only_where_the_program_started() {
        let dir = scratch("rel");
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/x"), "").unwrap();
        assert_eq!(lexical("sub/x", &dir), Some(dir.join("sub/x")));
        assert_eq!(lexical("../../../../../../../../../../..", &dir), None, "above /");
        assert_eq!(lexical("/a/../b", &dir), Some(PathBuf::from("/b")));
        let flags = flags();
        let scene =
            Scene { flags: &flags, start: &dir, tmp: None, home: Path::new("/home/nobody"), own_world: true };
        // Not there: the program may have changed folder; nothing is said.
        assert_eq!(explain(&read("peers/x"), &scene, &[]), None);
        // There and outside every grant: said, with its folder to grant.
        let d = explain(&read("sub/x"), &scene, &[]).unwrap();
        assert_eq!(d.fix, Some(Fix::read(&dir.join("sub"))));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
