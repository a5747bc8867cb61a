//! What this kernel can enforce, found by asking it, never by its version number.
//!
//! lnk fails closed: a guarantee the kernel cannot give is refused, not weakened. This module
//! probes each feature lnk relies on and maps the answers to the guarantees of the brief, so
//! `lnk sandbox status` can say exactly what a given machine gets, and the launcher can name what
//! is missing when it refuses. Backports make version numbers lie; a probe cannot.
//!
//! Trusted with: what lnk believes this kernel enforces, and so what `lnk sandbox status` says and
//! which world a call gets. What it trusts: the kernel's answers to its probes, never its version;
//! for a launch, the own world's answer kept for the boot in the caller's private tmp base (see
//! `mode::probe_cached`), which is probed again when it proves stale.

use std::io;

use super::mode::{self as world, WorldMode};
use crate::sys;
use crate::user_namespaces::user_namespace_error;

/// The Landlock ABI each feature needs (the kernel's `landlock.h`).
pub mod landlock_abi {
    /// Read, write and execute rights on files and folders (Linux 5.13).
    pub const FILESYSTEM: u32 = 1;
    /// `LANDLOCK_ACCESS_FS_REFER`: renames and links across folders under control (5.19).
    pub const REFER: u32 = 2;
    /// `LANDLOCK_ACCESS_FS_TRUNCATE` (6.2).
    pub const TRUNCATE: u32 = 3;
    /// TCP bind and connect by port (6.7).
    pub const NETWORK: u32 = 4;
    /// `LANDLOCK_ACCESS_FS_IOCTL_DEV`: ioctls on device files (6.10).
    pub const IOCTL_DEV: u32 = 5;
    /// Scopes: no signals to, and no abstract Unix sockets of, processes outside the domain (6.12).
    pub const SCOPES: u32 = 6;
}

/// What the kernel offers, as probed.
#[derive(Debug, Clone)]
pub struct KernelSupport {
    /// The Landlock ABI, or why there is none.
    pub landlock: Result<u32, String>,
    /// seccomp filters that can kill the process.
    pub seccomp: Result<(), String>,
    /// seccomp user notification (for a proxy without user namespaces).
    pub seccomp_notify: Result<(), String>,
    /// Unprivileged user namespaces (for a network namespace whose only door is the proxy).
    pub user_namespaces: Result<(), String>,
    /// `pidfd_open`: a handle on a process that cannot be fooled by pid reuse.
    pub pidfd: Result<(), String>,
    /// `openat2` with `RESOLVE_BENEATH` and `RESOLVE_NO_SYMLINKS`.
    pub openat2: Result<(), String>,
    /// The world a call gets here, and why not the own world when it is Landlock only.
    pub world: (WorldMode, Option<String>),
    /// Whether `world` is a kept answer (not probed now), which may be stale.
    pub world_kept: bool,
}

fn describe(e: io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::ENOSYS) => "not in this kernel (ENOSYS)".into(),
        Some(libc::EOPNOTSUPP) => "built in but turned off (EOPNOTSUPP)".into(),
        _ => e.to_string(),
    }
}

impl KernelSupport {
    pub fn probe() -> KernelSupport {
        let pidfd =
            rustix::process::pidfd_open(rustix::process::getpid(), rustix::process::PidfdFlags::empty())
                .map(drop)
                .map_err(|e| describe(e.into()));
        let path_flags = rustix::fs::OFlags::PATH | rustix::fs::OFlags::CLOEXEC;
        let openat2 = rustix::fs::open("/", path_flags, rustix::fs::Mode::empty())
            .and_then(|root| {
                rustix::fs::openat2(
                    &root,
                    ".",
                    path_flags,
                    rustix::fs::Mode::empty(),
                    rustix::fs::ResolveFlags::BENEATH | rustix::fs::ResolveFlags::NO_SYMLINKS,
                )
            })
            .map(drop)
            .map_err(|e| describe(e.into()));
        KernelSupport {
            landlock: sys::landlock_abi().map_err(describe),
            seccomp: sys::seccomp_action_available(sys::SECCOMP_RET_KILL_PROCESS).map_err(describe),
            seccomp_notify: sys::seccomp_action_available(sys::SECCOMP_RET_USER_NOTIF).map_err(describe),
            user_namespaces: sys::can_create_user_namespace().map_err(|e| user_namespace_error(&e)),
            pidfd,
            openat2,
            world: world::probe(),
            world_kept: false,
        }
    }

    /// The probe a launch needs (Landlock, seccomp, the world), without the ones a launch does
    /// not use.
    pub fn probe_for_launch() -> KernelSupport {
        let skipped = || Err("not probed for a launch".to_owned());
        let (world, world_kept) = world::probe_cached();
        KernelSupport {
            landlock: sys::landlock_abi().map_err(describe),
            seccomp: sys::seccomp_action_available(sys::SECCOMP_RET_KILL_PROCESS).map_err(describe),
            seccomp_notify: skipped(),
            user_namespaces: skipped(),
            pidfd: skipped(),
            openat2: skipped(),
            world,
            world_kept,
        }
    }

    /// The same, with the world probed now: after a kept answer proved stale (see
    /// [`mode::probe_cached`]).
    pub fn probe_world_again(&mut self) {
        world::forget_cached_probe();
        self.world = world::probe();
        self.world_kept = false;
    }

    /// Whether Landlock offers at least `abi`.
    pub fn landlock_at_least(&self, abi: u32) -> bool {
        matches!(self.landlock, Ok(v) if v >= abi)
    }

    /// How a call with `[internet]` is confined on this kernel, or why it is refused there:
    /// a network namespace whose only door is the proxy (the own world), or, without one, each
    /// connect held and made by the helper, to the proxy only (see [`crate::proxy::host_door`]).
    pub fn internet_confinement(&self) -> Result<&'static str, String> {
        match (&self.world, &self.seccomp_notify) {
            ((mode, _), _) if mode.is_own_world() => {
                Ok("a network namespace whose only door is the call's proxy")
            }
            (_, Ok(())) => Ok(
                "the host's network, each connect held by seccomp and made by the helper, to the call's proxy (and listed tcp addresses) only",
            ),
            ((_, why), Err(notify)) => Err(format!(
                "refused: no unprivileged user namespaces ({}), so no network namespace of the program's own, and no seccomp user notification ({notify}) for the helper to make each connect",
                why.as_deref().unwrap_or("unknown reason")
            )),
        }
    }

    /// Each guarantee lnk gives, with whether this kernel can give it and what it needs.
    pub fn guarantees(&self) -> Vec<GuaranteeSupport> {
        use landlock_abi::*;
        let ll = |abi: u32| self.landlock_at_least(abi);
        let seccomp = self.seccomp.is_ok();
        let row = |name: &'static str, needs: &'static str, available: bool| GuaranteeSupport {
            name,
            needs,
            available,
        };
        vec![
            row("files: reads and writes only beneath the grants", "Landlock ABI 1", ll(FILESYSTEM)),
            row("files: renames and links cannot move a file out of a grant", "Landlock ABI 2", ll(REFER)),
            row("files: truncation only beneath write grants", "Landlock ABI 3", ll(TRUNCATE)),
            row(
                "programs: the kernel refuses to execute what is not allowed",
                "Landlock ABI 1",
                ll(FILESYSTEM),
            ),
            row("devices: no ioctls on device files beyond the terminal's", "Landlock ABI 5", ll(IOCTL_DEV)),
            row(
                "signals and abstract sockets: nothing outside the sandbox is reached",
                "Landlock ABI 6",
                ll(SCOPES),
            ),
            row(
                "system calls: io_uring, ptrace, namespaces, TIOCSTI and the rest refused",
                "seccomp filter",
                seccomp,
            ),
            row("network: none without [internet] (socket families filtered)", "seccomp filter", seccomp),
            row(
                "other processes: no limits, priority, scheduling or memory of theirs changed",
                "seccomp filter",
                seccomp,
            ),
            row(
                "files: no mode, owner, times or xattr change outside write grants (read-only view in the own world, refused by seccomp without one)",
                "seccomp filter",
                seccomp,
            ),
            row(
                "System V IPC and POSIX queues: the call's own (own world), else refused",
                "seccomp filter",
                seccomp,
            ),
            row(
                "the call's own world: mount and IPC namespaces, the file system read-only outside write grants",
                "user namespaces that can mount, or root",
                self.world.0.is_own_world(),
            ),
            row("network: TCP connects pinned to the proxy's port", "Landlock ABI 4", ll(NETWORK)),
            row(
                "[internet]: a network namespace whose only door is the call's proxy",
                "the call's own world",
                self.world.0.is_own_world(),
            ),
            row(
                "background commands: a process is signalled only by a pidfd handle",
                "pidfd_open",
                self.pidfd.is_ok(),
            ),
            row(
                "file tool: paths resolved beneath their root without symlinks",
                "openat2",
                self.openat2.is_ok(),
            ),
        ]
    }
}

/// One guarantee and whether this kernel can give it.
#[derive(Debug, Clone)]
pub struct GuaranteeSupport {
    pub name: &'static str,
    pub needs: &'static str,
    pub available: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probing_never_fails_and_covers_every_feature() {
        let k = KernelSupport::probe();
        assert!(k.guarantees().len() >= 10);
        // Whatever the kernel, an error names why.
        for r in [&k.seccomp, &k.pidfd, &k.openat2, &k.user_namespaces] {
            if let Err(why) = r {
                assert!(!why.is_empty());
            }
        }
    }
}
