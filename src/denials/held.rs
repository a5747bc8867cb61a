//! The denials for what the held calls' helper refused itself (the Landlock-only mode's metadata
//! calls, watches, counts and terminals; either mode's Unix sockets): known, never inferred, each
//! with the fix that works or none.
//!
//! What it trusts: the refusal as the helper recorded it (see [`crate::notify::Refusal`]).

use std::path::{Path, PathBuf};

use super::{Access, Cause, Denial, explain};

/// The denial for a process, thread, inotify instance or watch past the call's bound (`key` of
/// `[tool.run]`, which is `bound`): the Landlock-only mode's helper counts them (see
/// [`crate::notify::counts`]). No fix: a bound reached is as often a loop as a need.
pub fn appetite_reached(key: &str, bound: u32, uncounted: bool) -> Denial {
    let what = match key {
        "processes" => "processes and threads",
        "inotify_instances" => "inotify instances",
        _ => "inotify watches",
    };
    let why = match uncounted {
        false => format!(
            "the call already had {bound} {what} at once, the most `[tool.run] {key}` allows (it shares the person's with every other program); raise it in the sandbox file if the work needs more"
        ),
        true => format!(
            "lnk could not count the call's {what} (a process of the call hid its descriptors: not dumpable, or lnk's mark on an instance removed; or the kernel gives no copy of a process's descriptors, `pidfd_getfd`), so it refused as at the bound of `[tool.run] {key}`"
        ),
    };
    Denial {
        access: Access::Count,
        target: key.to_owned(),
        cause: Cause::Appetite,
        why,
        fix: None,
        inferred: false,
    }
}

/// The denial for processes the Landlock-only mode's helper ended past the call's bound of
/// `bound` tasks (see [`crate::notify::counts`]).
pub fn processes_ended(bound: u32) -> Denial {
    Denial {
        access: Access::Count,
        target: "processes".to_owned(),
        cause: Cause::Appetite,
        why: format!(
            "the call had more than {bound} processes and threads at once, the most `[tool.run] processes` allows (it shares the machine's with every other program), so lnk ended its newest processes; raise it in the sandbox file if the work needs more"
        ),
        fix: None,
        inferred: false,
    }
}

/// The denial for a terminal past the `bound` a call holds at once (see
/// [`crate::notify::terminal`]). No fix: every call's terminals share the machine's.
pub fn terminals_bounded(bound: usize) -> Denial {
    Denial {
        access: Access::Count,
        target: "terminals (/dev/ptmx)".to_owned(),
        cause: Cause::Appetite,
        why: format!(
            "the call holds at most {bound} terminals at once: every terminal made draws from the machine's (`kernel.pty.max`), which the person's own share"
        ),
        fix: None,
        inferred: false,
    }
}

/// The denial for a terminal's peer asked of a master the Landlock-only mode's helper did not
/// make for the call (one passed in: the person's terminal). No fix: no grant opens one.
pub fn foreign_terminal() -> Denial {
    Denial {
        access: Access::ReadOrWrite,
        target: "ioctl(TIOCGPTPEER) on a terminal the call did not make".to_owned(),
        cause: Cause::Protected,
        why: "a terminal of the person's is never opened for the program; terminals the call makes itself (`openpty`, `forkpty`, `script`) work".to_owned(),
        fix: None,
        inferred: false,
    }
}

/// The denial for a connect to a Unix socket at `path` that the call did not bind (the helper
/// refused it: see [`crate::notify::unix_sockets`], [`crate::notify::world_connects`]). No fix: a
/// socket of the person's (an ssh agent, a session bus, Docker's) is never the program's to
/// reach, whatever it may read.
pub fn foreign_unix_socket(path: &Path) -> Denial {
    Denial {
        access: Access::Connect,
        target: path.display().to_string(),
        cause: Cause::Protected,
        why: "it is a Unix socket the call did not make (another process's: an ssh agent, a session bus, Docker's socket, the harness's); a program reaches only the sockets it binds itself".to_owned(),
        fix: None,
        inferred: false,
    }
}

/// The denial for a Unix socket bound at `path`, which the Landlock-only mode's helper refused:
/// it lies in `hole`, or outside every write grant (then the fix is the write grant).
pub fn unix_bind_refused(path: &Path, hole: Option<&Path>) -> Denial {
    let outside = "it is outside every `[files] write` grant (a socket file is made only beneath them, or in the call's tmp folder)";
    outside_write_grants(Access::Listen, path, (hole, ""), outside)
}

/// A held call's denial on `path` that lies in `hole` (`protected`, no fix; `on_the_way` said
/// after the hole) or outside every write grant (`outside_grants`, `outside` saying why, with the
/// write grant as the fix where there is one).
fn outside_write_grants(
    access: Access,
    path: &Path,
    (hole, on_the_way): (Option<&Path>, &str),
    outside: &str,
) -> Denial {
    let (cause, why, fix) = match hole {
        Some(hole) => (
            Cause::Protected,
            format!(
                "it lies in `{}`, which the sandbox keeps out of every grant (a secret, the agent's records, or `[files] deny`){on_the_way}",
                hole.display()
            ),
            None,
        ),
        None => {
            let home = crate::paths::home_dir().unwrap_or_else(|_| PathBuf::from("/"));
            match explain::write_fix(path, &home) {
                Ok(fix) => (Cause::OutsideGrants, outside.to_owned(), Some(fix)),
                Err(none) => (Cause::OutsideGrants, format!("{outside}; {none}"), None),
            }
        }
    };
    Denial { access, target: path.display().to_string(), cause, why, fix, inferred: false }
}

/// The denial for a Unix socket bound at `path`, in a folder on the way to `hole` (the
/// Landlock-only mode's helper refused it, as the program's own grants would refuse any new
/// file there). No fix: a grant cannot add to that folder without opening the hole.
pub fn unix_bind_beside(path: &Path, hole: &Path) -> Denial {
    Denial {
        access: Access::Listen,
        target: path.display().to_string(),
        cause: Cause::BesideProtected,
        why: format!(
            "its folder holds `{}`, which the sandbox keeps out of every grant, so nothing new may be made there; bind it in a folder of its own",
            hole.display()
        ),
        fix: None,
        inferred: false,
    }
}

/// The denial for a Unix socket call the Landlock-only mode's helper could not serve: it acts
/// on a copy of the program's socket (`pidfd_getfd`) and binds from a working folder of its
/// thread's own (`unshare(CLONE_FS)`), which this kernel or the container's seccomp profile
/// refuses. No fix in the sandbox file.
pub fn unix_without_copy() -> Denial {
    Denial {
        access: Access::Connect,
        target: "socket(AF_UNIX)".to_owned(),
        cause: Cause::Protected,
        why: "lnk serves a Unix socket's bind, listen and connect on a copy of the program's socket (`pidfd_getfd`), and binds it from a working folder of its own thread's (`unshare(CLONE_FS)`); this kernel or the container's seccomp profile refuses them; socketpair works".to_owned(),
        fix: None,
        inferred: false,
    }
}

/// The denial for a metadata call (`chmod`, `chown`, times, attributes) on `path` that the
/// helper refused (the Landlock-only mode): `path` lies in `hole`, or outside every write grant.
pub fn metadata_refused(path: &Path, hole: Option<&Path>) -> Denial {
    let outside = "it is outside every `[files] write` grant (a file's mode, owner, times and attributes change only beneath them)";
    outside_write_grants(Access::Metadata, path, (hole, ", or on the way to it"), outside)
}

/// The denial for an executable memfd (`memfd_create` with `MFD_EXEC`), which the Landlock-only
/// mode's helper refused (see [`crate::notify::memfd`]). No fix: no entry allows it.
pub fn memfd_executable() -> Denial {
    Denial {
        access: Access::Run,
        target: "memfd_create(MFD_EXEC)".to_owned(),
        cause: Cause::NotListed,
        why: "an executable memfd would run code no `commands` entry lists (Landlock does not govern a memfd); every memfd is made non-executable, and a plain `memfd_create` works".to_owned(),
        fix: None,
        inferred: false,
    }
}

/// The denial for a UDP socket in the Landlock-only mode, which shares the host's network: the
/// helper makes the program's TCP connections and listeners on the call's own loopback, but no
/// UDP socket (each datagram's address would be the program's to choose). No fix: only a kernel
/// that lets lnk make the call's own network namespace gives UDP.
pub fn udp_without_own_world() -> Denial {
    Denial {
        access: Access::Connect,
        target: "socket(SOCK_DGRAM)".to_owned(),
        cause: Cause::NeedsOwnWorld,
        why: "UDP needs the call's own network namespace, which this kernel does not let lnk make (the Landlock-only mode shares the host's network: TCP only, made by the helper on the call's own loopback); `lnk sandbox status` says why".to_owned(),
        fix: None,
        inferred: false,
    }
}

/// The denial for a metadata call on a device node (the Landlock-only mode's helper refused
/// it: see [`crate::notify::metadata`]). No fix: no grant lets a program change who may open a
/// device.
pub fn device_metadata(path: &Path) -> Denial {
    Denial {
        access: Access::Metadata,
        target: path.display().to_string(),
        cause: Cause::Protected,
        why: "it is a device node: its mode and owner say who may open the device (a disk, a terminal), so they are never the program's to change".to_owned(),
        fix: None,
        inferred: false,
    }
}

/// The denial for a metadata call on a folder kept in place, or on the way to one (the
/// Landlock-only mode's helper refused it: see [`crate::notify::Grants::kept`]). No fix.
pub fn metadata_kept(path: &Path) -> Denial {
    let why = "a person's link to a protected path steps out of it (`..`), so where the link leads depends on it: its mode, owner and times stay as they are";
    Denial {
        access: Access::Metadata,
        target: path.display().to_string(),
        cause: Cause::Protected,
        why: why.to_owned(),
        fix: None,
        inferred: false,
    }
}

/// The denial for an inotify watch the helper refused (the Landlock-only mode, where it makes
/// them: see [`crate::notify::inotify`]): on `path`, which lies in `hole`, or where the program
/// may not read (`None`).
pub fn watch_refused(path: &Path, hole: Option<&Path>) -> Denial {
    let target = path.display().to_string();
    let (cause, why, fix) = match hole {
        Some(hole) => (
            Cause::Protected,
            format!(
                "it lies in `{}`, which the sandbox keeps out of every grant (a secret, the agent's records, or `[files] deny`): a watch would show what is made there and when it is read",
                hole.display()
            ),
            None,
        ),
        None => match explain::hosts_own(path) {
            Some(why) => (Cause::NeedsOwnWorld, why, None),
            None => {
                let why = "it is outside every grant the program may read, and a watch shows the names and the use of what it cannot list";
                let home = crate::paths::home_dir().unwrap_or_else(|_| PathBuf::from("/"));
                match explain::read_fix(path, &home) {
                    Ok(fix) => (Cause::OutsideGrants, why.to_owned(), Some(fix)),
                    Err(none) => (Cause::OutsideGrants, format!("{why}; {none}"), None),
                }
            }
        },
    };
    Denial { access: Access::Read, target, cause, why, fix, inferred: false }
}
