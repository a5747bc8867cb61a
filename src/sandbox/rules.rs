//! Landlock rules from grants: a folder whole, or cut around the holes in it; the system
//! folders around the program folders; the program's home. Split from `sandbox/mod.rs`, which
//! decides what is granted; this module only says how a grant becomes rules.
//!
//! Trusted with: turning each grant into exactly its Landlock rules: a wrong right or a missed cut
//! would grant more than the file says, a secret included. What it trusts: `sandbox/mod.rs` for
//! what is granted, `holes` for the holes and `grants` for the descriptors; and Landlock to enforce
//! the rules.

use std::collections::HashSet;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use landlock::{AccessFs, BitFlags, PathBeneath, RulesetCreated, RulesetCreatedAttr};

use super::grants;
pub(super) use super::grants::Kind;
use super::holes::Holes;
use super::request::Refusal;
use super::request::{PINNED_ABI, SandboxRequest};

/// What of `/proc` a program may read: system-wide figures only. No `/proc/<pid>` folder, not
/// even the program's own: Landlock's ptrace check lets a sandboxed process read another
/// same-user process's `environ`, `maps` and `cmdline` (only `mem` is refused), and the
/// harness's environment holds its secrets.
pub(super) const PROC_READ: &[&str] = &[
    "/proc/cpuinfo",
    "/proc/meminfo",
    "/proc/stat",
    "/proc/loadavg",
    "/proc/uptime",
    "/proc/version",
    "/proc/filesystems",
    "/proc/sys",
];
/// Device files any program may open for reading and writing.
pub(super) const DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"];

pub(super) fn read_rights() -> BitFlags<AccessFs> {
    AccessFs::ReadFile | AccessFs::ReadDir
}

/// Writing, with symlinks and FIFOs (a virtualenv, `ln -s`, git checkouts and npm's `.bin` need
/// them) but never sockets (only in the call's tmp) or devices. A link or FIFO planted in a
/// writable folder can trap a later, unsandboxed tool (anchors §3 class 16): lnk's own file tool
/// and grant opening never follow links and never block on a FIFO, and SECURITY.md says what a
/// person's other tools should know.
pub(super) fn write_rights() -> BitFlags<AccessFs> {
    read_rights()
        | AccessFs::WriteFile
        | AccessFs::RemoveDir
        | AccessFs::RemoveFile
        | AccessFs::MakeDir
        | AccessFs::MakeReg
        | AccessFs::MakeSym
        | AccessFs::MakeFifo
        | AccessFs::Refer
        | AccessFs::Truncate
}

/// Adds a grant's rules: the whole folder, or, when holes lie in it, the folder around them (see
/// [`grants::open_around`]). A grant with no hole in it that is, by another name, a folder a
/// hole is found through (a bind mount of the home) is refused: granted whole, it would hold the
/// hole.
pub(super) fn add_around(
    ruleset: RulesetCreated,
    path: &Path,
    fd: OwnedFd,
    holes_and_kept: (&[PathBuf], &[PathBuf]),
    aliases: &HashSet<(u64, u64)>,
    rights: BitFlags<AccessFs>,
) -> Result<RulesetCreated, Refusal> {
    add_around_keeping(ruleset, path, fd, holes_and_kept, aliases, rights, None)
}

/// [`add_around`], keeping in `whole` a copy of each descriptor granted whole (the folders the
/// Landlock-only mode's helper may bind the program's sockets in: see
/// [`crate::notify::unix_sockets`]; a folder only listed, on the way to a hole, is not one).
pub(super) fn add_around_keeping(
    mut ruleset: RulesetCreated,
    path: &Path,
    fd: OwnedFd,
    (holes, kept): (&[PathBuf], &[PathBuf]),
    aliases: &HashSet<(u64, u64)>,
    rights: BitFlags<AccessFs>,
    mut whole: Option<&mut Vec<OwnedFd>>,
) -> Result<RulesetCreated, Refusal> {
    // Folders only: a socket is made in a folder, and Landlock refuses a folder's right on a
    // file (found in review: a file beside a hole made every held call refused).
    let mut keep = |fd: &OwnedFd| -> Result<(), Refusal> {
        let folder = rustix::fs::fstat(fd)
            .is_ok_and(|s| rustix::fs::FileType::from_raw_mode(s.st_mode) == rustix::fs::FileType::Directory);
        if let Some(whole) = whole.as_mut().filter(|_| folder) {
            whole.push(fd.try_clone().map_err(|e| Refusal::kernel(e.to_string()))?);
        }
        Ok(())
    };
    let inside: Vec<PathBuf> = holes.iter().filter(|h| crate::paths::within(h, path)).cloned().collect();
    let kept: Vec<PathBuf> =
        kept.iter().filter(|k| crate::paths::within(k, path) && *k != path).cloned().collect();
    if inside.is_empty() && kept.is_empty() {
        let id = rustix::fs::fstat(&fd)
            .map(|s| (s.st_dev, s.st_ino))
            .map_err(|e| Refusal::kernel(e.to_string()))?;
        if aliases.contains(&id) {
            return Err(Refusal::refused(format!(
                "the grant `{}` is, by another name (a bind mount or a hard link), a folder that holds protected paths; grant that folder by its own path, so its holes are cut",
                path.display()
            )));
        }
        keep(&fd)?;
        return add(ruleset, fd, rights, Kind::Folder);
    }
    let cut = grants::Cut { secrets: &inside, listed: &[], aliases, kept: &kept };
    let parts = grants::open_around(path, fd, cut).map_err(|e| Refusal::kernel(e.to_string()))?;
    for (fd, part) in parts {
        ruleset = match part {
            grants::Part::Whole(kind) => {
                keep(&fd)?;
                add(ruleset, fd, rights, kind)?
            }
            grants::Part::Listing => add(ruleset, fd, AccessFs::ReadDir.into(), Kind::Folder)?,
        };
    }
    Ok(ruleset)
}

/// The holes to cut in this call's grants (see [`crate::protected`] and [`super::holes`]): the
/// file's `deny`, the protected set where it lies in a grant, the agent's records and lnk's
/// private tmp base (`extra_protected`), and as root the system's secret files; and the other
/// names bind mounts give any of them inside what the program may reach. A grant inside a
/// denied path is refused: `deny` must not lose to a grant silently.
pub(super) fn holes(req: &SandboxRequest<'_>, extra_protected: &[PathBuf]) -> Result<Holes, Refusal> {
    let grants: Vec<&PathBuf> = req.flags.read.iter().chain(&req.flags.write).collect();
    if let Some((grant, denied)) = crate::protected::grant_in_denied(&req.flags.deny, &grants) {
        return Err(Refusal::refused(crate::protected::grant_in_denied_why(grant, denied)));
    }
    let protected: Vec<PathBuf> = req.protected.iter().chain(extra_protected).cloned().collect();
    let as_root = rustix::process::geteuid().is_root();
    let deny = &req.flags.deny;
    let candidates = crate::protected::call_holes(deny, req.home, &grants, &protected, as_root);
    let everywhere = || crate::protected::beyond_grants(req.home, &grants, &protected, as_root);
    let mut roots: Vec<&Path> = grants.iter().map(|g| g.as_path()).collect();
    roots.extend(crate::program_path::SYSTEM_READ.iter().map(Path::new));
    let writable: Vec<&Path> = req.flags.write.iter().map(PathBuf::as_path).collect();
    let search = super::holes::Search {
        candidates: &candidates,
        everywhere: &everywhere,
        roots: &roots,
        writable: &writable,
    };
    super::holes::find(&search).map_err(Refusal::kernel)
}

pub(super) fn borrowed(roots: &[(PathBuf, OwnedFd)]) -> Vec<(PathBuf, &OwnedFd)> {
    roots.iter().map(|(p, fd)| (p.clone(), fd)).collect()
}

/// The program's `HOME`: the caller's when a grant reaches it (git and many tools fail hard on
/// an unreadable home), else the call's own tmp folder (`tmp_dir`: `/tmp` in the own world),
/// which the report names. The tmp folder itself rather than a folder in it: it is already
/// private, writable and gone with the call, and a folder of its own would cost a `mkdir` and an
/// `rmdir` on every launch (measured: about a tenth of a Landlock-only launch on ext4).
pub(super) fn program_home(req: &SandboxRequest<'_>, tmp_dir: &Path) -> (PathBuf, bool) {
    let granted = req.flags.read.iter().chain(&req.flags.write).any(|g| crate::paths::within(req.home, g));
    match granted {
        true => (req.home.to_owned(), false),
        false => (tmp_dir.to_owned(), true),
    }
}

pub(super) fn add(
    ruleset: RulesetCreated,
    fd: OwnedFd,
    rights: BitFlags<AccessFs>,
    kind: Kind,
) -> Result<RulesetCreated, Refusal> {
    // A file (a program, a device) takes only the rights that apply to files.
    let is_folder = match kind {
        Kind::Folder => true,
        Kind::File => false,
        Kind::Either => rustix::fs::fstat(&fd)
            .is_ok_and(|s| rustix::fs::FileType::from_raw_mode(s.st_mode) == rustix::fs::FileType::Directory),
    };
    let rights = if is_folder { rights } else { rights & AccessFs::from_file(PINNED_ABI) };
    ruleset
        .add_rule(PathBeneath::new(fd, rights))
        .map_err(|e| Refusal::kernel(format!("cannot add a Landlock rule: {e}")))
}

/// Grants the system folders `roots` with `rights`, cut around the system's secrets among
/// `holes` and, when `except_programs`, around the files of the folders programs are found in
/// (the system PATH): those folders may be listed, but their files read (and executed) only
/// where a listed program's file is granted on its own. The dynamic loader must be executable
/// for any dynamic program, and run directly (`ld-linux-x86-64.so.2 /usr/bin/perl`) it maps
/// whatever program file it can read; so an unlisted program must not be readable.
pub(super) fn grant_system(
    mut ruleset: RulesetCreated,
    roots: &[&str],
    rights: BitFlags<AccessFs>,
    except_programs: bool,
    holes: &[PathBuf],
    aliases: &HashSet<(u64, u64)>,
) -> Result<RulesetCreated, Refusal> {
    let listed: Vec<PathBuf> = match except_programs {
        true => crate::program_path::SYSTEM_PATH.iter().map(PathBuf::from).collect(),
        false => Vec::new(),
    };
    let secrets: Vec<PathBuf> = holes
        .iter()
        .filter(|h| roots.iter().any(|root| crate::paths::within(h, Path::new(root))))
        .cloned()
        .collect();
    let cut = grants::Cut { secrets: &secrets, listed: &listed, aliases, kept: &[] };
    let folders = grants::open_system(roots, cut).map_err(|e| Refusal::kernel(e.to_string()))?;
    for (fd, how) in folders {
        ruleset = match how {
            grants::Part::Whole(kind) => add(ruleset, fd, rights, kind)?,
            grants::Part::Listing => add(ruleset, fd, AccessFs::ReadDir.into(), Kind::Folder)?,
        };
    }
    Ok(ruleset)
}
