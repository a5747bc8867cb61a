//! The program of a call: checked against `commands` and found on the system PATH (with every
//! file it may execute opened), and the folder it starts in.
//!
//! Trusts the system PATH's folders (root's) and the grants already opened; never the caller's
//! `PATH`.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};

use super::grants::{self, ExecFiles, GrantError};
use super::holes::Hole;
use super::request::Refusal;
use super::request::{SandboxRequest, StartFolder};
use super::world::{self, World};
use crate::sandbox_file::{Commands, Tool};

/// Checks the program against `commands`, finds it on the system PATH, and opens every file
/// the sandbox may execute. Returns the path to execute, and the descriptor to execute it by
/// when it is lnk itself (for the file tool).
pub(super) fn resolve_program(
    req: &SandboxRequest<'_>,
    exec_files: &mut ExecFiles,
) -> Result<(PathBuf, Option<OwnedFd>), Refusal> {
    let name = req.program;
    crate::sandbox_file::values::program_name(name).map_err(Refusal::refused)?;
    let grant_err = |e: GrantError| Refusal::kernel(e.to_string());
    match (&req.flags.tool, &req.flags.commands) {
        (Tool::File, _) => {
            if name != "lnk" {
                return Err(Refusal::refused(format!(
                    "the file tool's sandbox runs only `lnk file`, not `{}`",
                    name.escape_debug()
                )));
            }
            grants::open_self(exec_files).map(|(path, fd)| (path, Some(fd))).map_err(grant_err)
        }
        (Tool::Run, Commands::Listed(names)) if names.is_empty() => {
            Err(Refusal::refused("`commands` is empty: run is off in this sandbox"))
        }
        (Tool::Run, Commands::Listed(names)) => {
            if !names.iter().any(|n| n == name) {
                // Not installed comes first: no change to the sandbox file would run it, and an
                // agent must not be told to list it (127, as for a listed one).
                if let Err(e @ crate::program_path::LookupError::NotFound) = crate::program_path::lookup(name)
                {
                    return Err(Refusal::not_found(format!("`{}`: {e}", name.escape_debug())));
                }
                return Err(Refusal::refused(format!(
                    "`{}` is not among the sandbox file's `commands`",
                    name.escape_debug()
                )));
            }
            let mut found = None;
            for listed in names {
                let path = grants::open_program(listed, exec_files).map_err(grant_err)?;
                if listed == name {
                    found = path;
                }
            }
            let found = found.ok_or_else(|| {
                Refusal::not_found(format!(
                    "`{}`: {}",
                    name.escape_debug(),
                    crate::program_path::LookupError::NotFound
                ))
            })?;
            Ok((found, None))
        }
        (Tool::Run, Commands::Any) => crate::program_path::lookup(name)
            .map(|p| (p.path, None))
            .map_err(|e| Refusal::not_found(format!("`{}`: {e}", name.escape_debug()))),
    }
}

/// Where the program starts (see [`StartFolder`]): the caller's working folder, unless it lies
/// in a hole or the world does not show it; then the program's home, or its tmp folder when the
/// home does not exist. In the own world the choice is handed to the world, which finds the
/// folder again once it is built; in the Landlock-only mode the program inherits the caller's
/// folder, and only a move is needed (returned).
pub(super) fn start_folder(
    holes: &[Hole],
    world: Option<&mut World>,
    home: &Path,
    tmp_dir: &Path,
) -> Result<(StartFolder, Option<std::ffi::CString>), Refusal> {
    let caller = std::env::current_dir().ok().and_then(|path| {
        let here =
            rustix::fs::open(".", OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).ok()?;
        Some((path, here))
    });
    let shown = |path: &Path| world.as_ref().is_none_or(|w| w.shows(path));
    let moved = match &caller {
        None => Some("the caller's working folder no longer exists".to_owned()),
        Some((path, _)) if holes.iter().any(|h| path.starts_with(&h.path)) => Some(format!(
            "the caller's working folder `{}` lies in a path the sandbox keeps out of every grant",
            path.display()
        )),
        Some((path, _)) if !shown(path) => Some(format!(
            "the caller's working folder `{}` lies beneath the host's /tmp or /dev/shm, which the call's own cover (only grants beneath them are shown again)",
            path.display()
        )),
        Some(_) => None,
    };
    let Some(why) = moved else {
        let (path, here) = caller.expect("a caller's folder when none was moved");
        if let Some(world) = world {
            world.start_in(world::Start::Same(
                world::KnownFolder::new(&path, &here).map_err(Refusal::kernel)?,
            ));
        }
        return Ok((StartFolder { path, moved: None }, None));
    };
    let home_there = matches!(grants::open_no_symlinks(home, true), Ok(Some(_))) && shown(home);
    let path = if home_there { home.to_owned() } else { tmp_dir.to_owned() };
    let start = StartFolder { path: path.clone(), moved: Some(why) };
    match world {
        Some(world) => {
            world.start_in(world::Start::other(&path).map_err(Refusal::kernel)?);
            Ok((start, None))
        }
        None => {
            use std::os::unix::ffi::OsStrExt as _;
            let relative = path.strip_prefix("/").unwrap_or(&path);
            let relative = if relative.as_os_str().is_empty() { Path::new(".") } else { relative };
            let c = std::ffi::CString::new(relative.as_os_str().as_bytes())
                .map_err(|_| Refusal::kernel("a NUL byte in the starting folder's path"))?;
            Ok((start, Some(c)))
        }
    }
}
