//! Why a sandbox is refused before anything of it is made: the kernel lacks a guarantee, a path
//! of the request is not in its one spelling, or a write grant reaches what must stay out of
//! every write grant (the agent's records, lnk's tmp base, lnk itself, the sandbox file). The
//! words are shared with `lnk sandbox check`, which says the same before a call is made.
//!
//! Trusts the paths it is given to be the request's (it only compares them).

use std::path::{Path, PathBuf};

use super::kernel::KernelSupport;
use super::request::{Refusal, SandboxRequest};
use super::trusted;
use crate::paths::overlaps;

/// The Landlock ABI lnk needs: 6, for the signal and abstract-socket scopes.
pub const REQUIRED_LANDLOCK_ABI: u32 = super::kernel::landlock_abi::SCOPES;

/// Refuses unless the kernel gives every guarantee a sandbox needs, naming what is missing.
pub fn check_kernel(kernel: &KernelSupport) -> Result<(), Refusal> {
    match &kernel.landlock {
        Err(why) => {
            return Err(Refusal::kernel(format!(
                "Landlock is unavailable ({why}): lnk cannot confine files, programs, signals or sockets, so it runs nothing"
            )));
        }
        Ok(abi) if *abi < REQUIRED_LANDLOCK_ABI => {
            return Err(Refusal::kernel(format!(
                "this kernel's Landlock ABI is {abi}; lnk needs ABI {REQUIRED_LANDLOCK_ABI} (Linux 6.12) to keep signals and abstract Unix sockets inside the sandbox, so it runs nothing"
            )));
        }
        Ok(_) => {}
    }
    if let Err(why) = &kernel.seccomp {
        return Err(Refusal::kernel(format!(
            "seccomp filters are unavailable ({why}): lnk cannot refuse io_uring, ptrace, namespaces or TIOCSTI, so it runs nothing"
        )));
    }
    Ok(())
}

/// Refuses unless every path of the request has its one normal spelling (see
/// [`crate::paths::normal`]): grants, holes and folders are compared name by name and, in the
/// cut, byte by byte, and two spellings of one folder would look unrelated there. The callers
/// normalise what they are given (`HOME`, `TMPDIR`, the flags); this is the check that they did.
pub(super) fn refuse_unless_normal(req: &SandboxRequest<'_>) -> Result<(), Refusal> {
    let flags = req.flags;
    let paths = flags.read.iter().chain(&flags.write).chain(&flags.deny).chain(req.protected);
    let mut paths = paths.map(PathBuf::as_path).chain([req.home, req.private_tmp]);
    match paths.find(|p| crate::paths::normal(p).is_none_or(|n| n.as_os_str() != p.as_os_str())) {
        Some(odd) => Err(Refusal::kernel(format!(
            "`{}` is not spelled as an absolute path without `.`, `..`, `//` or a final `/`; lnk compares paths in that one spelling only, so it will not run (a bug of lnk's: please report it)",
            odd.display()
        ))),
        None => Ok(()),
    }
}

/// Refuses a write grant over the agent's records or over lnk's private tmp base (`base`), where
/// a program could forge a record or reach other calls' tmp folders, or over what the next call
/// trusts (lnk itself, the sandbox file: see [`trusted`]).
pub(super) fn refuse_write_grants_over(req: &SandboxRequest<'_>, base: &Path) -> Result<(), Refusal> {
    for write in &req.flags.write {
        if let Some(records) = req.protected.iter().find(|p| overlaps(write, p)) {
            return Err(Refusal::refused(over_records(write, records)));
        }
        if let Some(why) = over_tmp_base(write, base) {
            return Err(Refusal::refused(why));
        }
    }
    // lnk itself and the sandbox file: what the next call runs and grants.
    let mut files = trusted::own_paths();
    if let Some(path) = req.sandbox_file {
        files.push(trusted::Trusted { path: path.to_owned(), what: "the sandbox file" });
    }
    trusted::refuse_write_grants_over(&files, &req.flags.write)
}

/// Refuses a grant in the host's devices (see [`crate::protected::device_grant`]), and a write
/// grant that holds a file system of devices mounted elsewhere ([`devices_in_write_grant`]).
/// `device_mounts` are where the mount table shows a file system of devices.
pub(super) fn refuse_device_grants(
    req: &SandboxRequest<'_>,
    device_mounts: &[PathBuf],
) -> Result<(), Refusal> {
    if let Some(why) =
        req.flags.read.iter().chain(&req.flags.write).find_map(|g| crate::protected::device_grant(g))
    {
        return Err(Refusal::refused(why));
    }
    match req.flags.write.iter().find_map(|w| devices_in_write_grant(w, device_mounts)) {
        Some(why) => Err(Refusal::refused(why)),
        None => Ok(()),
    }
}

/// Why a write grant `write` is refused, if one of `device_mounts` (where a file system of
/// devices is mounted: the host's `/dev` bound in a chroot) lies in it (for `run` and `check`
/// alike). A grant is cut around them, so nothing there opens, but a write grant lets a
/// program change a node's mode and owner, who may open the device (found in review: as root,
/// `chmod 666` of a disk's node), in the own world where the kernel performs it.
pub fn devices_in_write_grant(write: &Path, device_mounts: &[PathBuf]) -> Option<String> {
    let held = device_mounts.iter().find(|m| m.starts_with(write))?;
    Some(format!(
        "the write grant `{}` holds `{}`, where a file system of devices is mounted (the host's `/dev` bound there): a program could change who may open a device; narrow the grant",
        write.display(),
        held.display()
    ))
}

/// Why a write grant `write` may not overlap the agent's records folder `records` (for `run` and
/// `check` alike).
pub fn over_records(write: &Path, records: &Path) -> String {
    format!(
        "the write grant `{}` overlaps the agent's records folder `{}`; a program could forge a record there, so narrow the grant",
        write.display(),
        records.display()
    )
}

/// Why a write grant `write` may not be, if it overlaps lnk's private tmp base `base` (for `run`
/// and `check` alike).
pub fn over_tmp_base(write: &Path, base: &Path) -> Option<String> {
    overlaps(write, base).then(|| format!(
        "the write grant `{}` overlaps `{}`, where lnk keeps every call's own tmp folder; a program could reach other calls' files there. Narrow the grant (each call has a /tmp of its own), or set TMPDIR to a folder outside the write grants",
        write.display(),
        base.display()
    ))
}
