//! The call's own world: namespaces that make the file system read-only outside the write
//! grants, and give the program System V IPC of its own.
//!
//! Landlock governs opening, creating, removing and renaming files, but not a file's metadata:
//! `chmod`, `chown`, `utimensat` and `setxattr` work on any file the program's user owns,
//! anywhere, even through a descriptor a read grant opened. The kernel's own answer to "no
//! change outside these folders" is a read-only mount, so where the kernel lets lnk make a mount
//! namespace, the program's child makes one:
//!
//! ```text
//! unshare(user?, mount, IPC [, network: see proxy::door])
//! every mount private (nothing propagates out)
//! each write root (write grants and the call's tmp): cloned, still read-write, detached
//! every mount of the tree read-only (mount_setattr, recursive)
//! each clone moved back over its own folder
//! ```
//!
//! The program then sees the same files at the same paths, but a change of mode, owner, times or
//! extended attributes outside the write roots answers `EROFS`, whatever descriptor it uses.
//! Landlock and seccomp are applied on top exactly as in the Landlock-only mode.
//!
//! The write roots are opened again in the child (a descriptor from the helper's mount namespace
//! cannot be cloned in the new one), without following any link, and each must be the very
//! folder the helper opened for Landlock (same device and inode), or the child refuses to go on.
//!
//! The mode is chosen per call by [`probe`], which tries the same steps in a throwaway child: a
//! kernel without user namespaces, or one whose user namespaces cannot mount (Ubuntu's AppArmor
//! restriction), gets the Landlock-only mode, where seccomp refuses these calls instead (see
//! [`super::seccomp`]). Root needs no user namespace for a mount namespace; an unprivileged user
//! does (mapped to itself, setgroups denied, so it gains nothing over anything outside).
//!
//! What it trusts: the kernel's namespaces and mount flags.

use std::ffi::CString;
use std::os::fd::{AsFd as _, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags, ResolveFlags};

/// Which world a call gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorldMode {
    /// Namespaces of the call's own (mount and IPC, in a user namespace unless lnk is root).
    OwnWorld { user_namespace: bool },
    /// No namespace: Landlock and seccomp only.
    LandlockOnly,
}

impl WorldMode {
    /// The name the report and `lnk sandbox status` use.
    pub fn name(self) -> &'static str {
        match self {
            WorldMode::OwnWorld { .. } => "own-world",
            WorldMode::LandlockOnly => "landlock-only",
        }
    }

    pub fn is_own_world(self) -> bool {
        matches!(self, WorldMode::OwnWorld { .. })
    }
}

/// Finds the mode this process gets, by making the namespaces in a short-lived child. The error
/// says why the own world is out of reach (for the report and `status`).
pub fn probe() -> (WorldMode, Option<String>) {
    let maps = IdMaps::for_self();
    let user = crate::sys::probe_private_mounts(Some((&maps.uid_map, &maps.gid_map)));
    match user {
        Ok(()) => (WorldMode::OwnWorld { user_namespace: true }, None),
        Err(e) if rustix::process::geteuid().is_root() => match crate::sys::probe_private_mounts(None) {
            Ok(()) => (WorldMode::OwnWorld { user_namespace: false }, None),
            Err(e2) => (WorldMode::LandlockOnly, Some(format!("user namespace: {e}; mount namespace: {e2}"))),
        },
        Err(e) => (WorldMode::LandlockOnly, Some(format!("no user namespace with mounts: {e}"))),
    }
}

/// `uid_map` and `gid_map` lines mapping the caller to itself.
struct IdMaps {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

impl IdMaps {
    fn for_self() -> IdMaps {
        let uid = rustix::process::getuid().as_raw();
        let gid = rustix::process::getgid().as_raw();
        IdMaps {
            uid_map: format!("{uid} {uid} 1").into_bytes(),
            gid_map: format!("{gid} {gid} 1").into_bytes(),
        }
    }
}

/// A folder that stays writable: its path, and the identity the helper saw.
struct WriteRoot {
    path: CString,
    id: (u64, u64),
}

/// The world, planned in the helper; [`World::enter`] makes it in the program's child.
pub struct World {
    user_namespace: bool,
    network: bool,
    maps: IdMaps,
    roots: Vec<WriteRoot>,
    /// Room for the detached clones, allocated before the fork so the child does not allocate.
    clones: Vec<OwnedFd>,
}

impl World {
    /// Plans the world for write roots `roots` (each an opened folder and its path). Roots
    /// beneath another root are left out: the outer root's clone is recursive and covers them.
    /// `network` adds a network namespace (the proxy's door fills it).
    pub fn new(user_namespace: bool, network: bool, roots: &[(PathBuf, &OwnedFd)]) -> Result<World, String> {
        let mut kept: Vec<WriteRoot> = Vec::new();
        for (path, fd) in roots {
            let outer = roots.iter().any(|(other, _)| other != path && path.starts_with(other));
            let duplicate = kept.iter().any(|k| k.path.as_bytes() == path.as_os_str().as_bytes());
            if outer || duplicate {
                continue;
            }
            let stat = rustix::fs::fstat(fd).map_err(|e| format!("cannot stat {}: {e}", path.display()))?;
            let relative = path.strip_prefix("/").unwrap_or(path);
            let relative = if relative.as_os_str().is_empty() { Path::new(".") } else { relative };
            let path = CString::new(relative.as_os_str().as_bytes())
                .map_err(|_| format!("a NUL byte in {}", path.display()))?;
            kept.push(WriteRoot { path, id: (stat.st_dev, stat.st_ino) });
        }
        let clones = Vec::with_capacity(kept.len());
        Ok(World { user_namespace, network, maps: IdMaps::for_self(), roots: kept, clones })
    }

    /// In the program's child, before the sandbox is entered: makes the namespaces and the
    /// read-only view. Any failure is returned and the child exits: the program never runs in a
    /// world half made. Makes system calls only (no allocation).
    pub fn enter(&mut self) -> Result<(), &'static str> {
        let mut flags = libc::CLONE_NEWNS | libc::CLONE_NEWIPC;
        if self.user_namespace {
            flags |= libc::CLONE_NEWUSER;
        }
        if self.network {
            flags |= libc::CLONE_NEWNET;
        }
        crate::sys::unshare(flags).map_err(|_| "cannot make the call's namespaces (unshare)")?;
        if self.user_namespace {
            crate::sys::map_ids_to_self(&self.maps.uid_map, &self.maps.gid_map)
                .map_err(|_| "cannot map the user into its namespace")?;
        }
        crate::sys::make_mounts_private().map_err(|_| "cannot make the mount namespace private")?;
        let root = rustix::fs::open(c"/", OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
            .map_err(|_| "cannot open /")?;
        for write_root in &self.roots {
            let folder = open_verified(&root, write_root)?;
            let clone = rustix::mount::open_tree(
                folder.as_fd(),
                c"",
                rustix::mount::OpenTreeFlags::OPEN_TREE_CLONE
                    | rustix::mount::OpenTreeFlags::OPEN_TREE_CLOEXEC
                    | rustix::mount::OpenTreeFlags::AT_RECURSIVE
                    | rustix::mount::OpenTreeFlags::AT_EMPTY_PATH,
            )
            .map_err(|_| "cannot clone a write grant's mount (open_tree)")?;
            if self.clones.len() == self.clones.capacity() {
                return Err("more clones than write roots");
            }
            self.clones.push(clone);
        }
        crate::sys::make_tree_read_only(&root).map_err(|_| "cannot make the file system read-only")?;
        for (write_root, clone) in self.roots.iter().zip(&self.clones) {
            let target = open_verified(&root, write_root)?;
            rustix::mount::move_mount(
                clone.as_fd(),
                c"",
                target.as_fd(),
                c"",
                rustix::mount::MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH
                    | rustix::mount::MoveMountFlags::MOVE_MOUNT_T_EMPTY_PATH,
            )
            .map_err(|_| "cannot put a write grant back read-write (move_mount)")?;
        }
        self.clones.clear();
        Ok(())
    }
}

/// Opens a write root beneath `/` without following links, and checks it is the folder the
/// helper granted.
fn open_verified(root: &OwnedFd, write_root: &WriteRoot) -> Result<OwnedFd, &'static str> {
    let how = ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let fd = rustix::fs::openat2(root, write_root.path.as_c_str(), flags, Mode::empty(), how)
        .map_err(|_| "cannot open a write grant in the call's mount namespace")?;
    let stat = rustix::fs::fstat(&fd).map_err(|_| "cannot stat a write grant")?;
    if (stat.st_dev, stat.st_ino) != write_root.id {
        return Err("a write grant changed between the helper's check and the mount namespace");
    }
    Ok(fd)
}
