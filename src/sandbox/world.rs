//! The call's own world: namespaces that give the program a `/tmp`, `/dev/shm`, `/proc` and
//! loopback of its own, and make the rest of the file system read-only.
//!
//! Landlock governs opening, creating, removing and renaming files, but not a file's metadata:
//! `chmod`, `chown`, `utimensat` and `setxattr` work on any file the program's user owns,
//! anywhere, even through a descriptor a read grant opened. The kernel's own answer to "no
//! change outside these folders" is a read-only mount. And a program expects a `/tmp` it can
//! write, a `/proc` that shows its own processes, a `/dev/shm` for POSIX semaphores, and a
//! loopback for a server and its client. Where the kernel lets lnk make namespaces, the keeper
//! starts the program's first process in new user (unless lnk is root), mount, IPC and pid
//! namespaces, and that process, pid 1 there, makes the world ([`World::enter`]), while the
//! keeper makes its network namespace ([`super::world_network`]):
//!
//! ```text
//! uid and gid mapped to themselves, setgroups denied          (a user namespace)
//! every mount private (nothing propagates out)
//! each write root (write grants, the call's tmp): cloned read-write, detached
//! every mount of the tree read-only (mount_setattr, recursive)
//! each clone moved back over its own folder
//! the call's tmp folder over /tmp                              (fresh, the call's own)
//! a new tmpfs over /dev/shm                                    (in memory, as a /dev/shm is)
//! grants beneath the host's /tmp shown again at their paths inside the call's
//! each folder between a write grant and a hole in it bound onto itself   (a "pin": never renamed)
//! each hole in a grant covered by an empty, read-only mode-000 folder or file
//! a new proc over /proc                                        (this pid namespace's only)
//! the keeper's network namespace joined                        (loopback up: lo only)
//! the starting folder found again by its path (same device and inode), and entered
//! ```
//!
//! Where a grant beneath the host's `/tmp` holds a secret, the call's tmp is not shown at
//! `/tmp` (see [`World::new`] for why Landlock could not keep the secret closed there).
//!
//! A change of mode, owner, times or extended attributes outside the write roots then answers
//! `EROFS`, whatever descriptor is used. Landlock and seccomp are applied on top, exactly as
//! strict as in the Landlock-only mode (Landlock is given the new `/proc` for reading and the
//! new `/dev/shm` as the call's tmp; `/tmp` is the call's tmp folder, which it already grants:
//! Landlock's rules belong to the folder, wherever it is mounted).
//!
//! The write roots are opened again in the child (a descriptor from the helper's mount namespace
//! cannot be cloned in the new one), without following any link, and each must be the very
//! folder the helper opened for Landlock (same device and inode), or the child refuses to go on.
//!
//! The mode is chosen per call by [`super::mode`]: where these namespaces cannot be made, the
//! call runs Landlock-only.
//!
//! What it trusts: the kernel's namespaces and mount flags.

use std::ffi::CString;
use std::os::fd::{AsFd as _, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags, ResolveFlags};

use super::holes::Hole;
use super::mode::IdMaps;
pub use super::world_devices::Terminals;
use super::world_devices::{self, Devices};

/// A hole to cover, and whether it is a folder (else a file).
struct Mask {
    target: KnownFolder,
    folder: bool,
}

/// A folder opened again in the child: its path beneath `/`, and the identity the helper saw.
pub(super) struct KnownFolder {
    path: CString,
    id: (u64, u64),
}

impl KnownFolder {
    pub(super) fn new(path: &Path, fd: &OwnedFd) -> Result<KnownFolder, String> {
        let stat = rustix::fs::fstat(fd).map_err(|e| format!("cannot stat {}: {e}", path.display()))?;
        Ok(KnownFolder { path: relative_cstring(path)?, id: (stat.st_dev, stat.st_ino) })
    }
}

/// `path` without its leading `/` (`.` for `/` itself), for `openat2` beneath `/`.
fn relative_cstring(path: &Path) -> Result<CString, String> {
    let relative = path.strip_prefix("/").unwrap_or(path);
    let relative = if relative.as_os_str().is_empty() { Path::new(".") } else { relative };
    CString::new(relative.as_os_str().as_bytes()).map_err(|_| format!("a NUL byte in {}", path.display()))
}

/// The mounts [`World::enter`] made that Landlock must be told of: they are new folders, which
/// no rule made in the helper can name.
pub struct Entered {
    pub proc: OwnedFd,
    /// `None` on a machine without `/dev/shm`, or where the host's is kept (see [`World::new`]).
    pub shm: Option<OwnedFd>,
    /// The call's own terminals (see [`Terminals`]); `None` where none could be made.
    pub terminals: Option<Terminals>,
}

/// What the world is made from, planned in the helper.
pub struct Plan<'a> {
    /// Namespaces in a user namespace (lnk is not root).
    pub user_namespace: bool,
    /// The write grants, each with the folder the helper opened.
    pub write_roots: &'a [(PathBuf, &'a OwnedFd)],
    pub read_roots: &'a [(PathBuf, &'a OwnedFd)],
    /// The call's tmp folder and its descriptor.
    pub tmp: (&'a Path, &'a OwnedFd),
    /// `commands = ["*"]`, under which `/dev/shm` is not `noexec`.
    pub any_program: bool,
    /// The holes in the grants, as found (see [`super::holes`]).
    pub holes: &'a [Hole],
    /// The links on the way to a hole inside a write grant: each pinned where it is.
    pub links: &'a [PathBuf],
    /// The folders a `..` steps out of on the way to a hole, inside a write grant: each pinned
    /// where it is (see [`super::holes::Holes::kept`]).
    pub kept: &'a [PathBuf],
    /// Whether each layer is made: always, but for the tests that show the other holds alone.
    pub masks: bool,
    /// The call's own limits of its processes and inotify use (see [`super::appetite`]).
    pub limits: super::appetite::WorldLimits,
}

/// The world, planned in the helper; [`World::enter`] makes it in the program's first process.
pub struct World {
    /// Pid 1's end of the pair the keeper sends the world's network namespace on (see
    /// [`super::world_network`]).
    network_from_keeper: Option<OwnedFd>,
    user_namespace: bool,
    maps: IdMaps,
    /// Write grants and the call's tmp, none beneath another.
    roots: Vec<KnownFolder>,
    /// The call's tmp folder: shown at `/tmp` when `own_tmp`.
    tmp: KnownFolder,
    /// Whether the call's tmp is shown at `/tmp`, and a new tmpfs at `/dev/shm` (see [`World::new`]).
    own_tmp: bool,
    own_shm: bool,
    /// Grants beneath `/tmp` or `/dev/shm`, which the call's own would hide: shown again at
    /// their paths inside it (none beneath another).
    covered: Vec<(PathBuf, KnownFolder)>,
    /// Holes in the grants (see [`crate::protected`]) that exist: each covered by an empty,
    /// read-only folder or file made in the world itself (see [`World::enter`]).
    masks: Vec<Mask>,
    /// The folders between a write grant and a hole inside it, or a link on the way to one,
    /// outermost first: each bound onto itself, so `rename` refuses to move it (`EBUSY`) and a
    /// hole keeps its name.
    pins: Vec<KnownFolder>,
    /// The links on the way to a hole inside a write grant (see [`super::holes::Holes::links`]):
    /// each bound onto itself, so neither `unlink` nor `rename` moves it (`EBUSY`), and no call
    /// can retarget it for the next.
    link_pins: Vec<KnownFolder>,
    /// As root: the top-level files of `/proc` only root may read (see
    /// [`crate::protected::root_only_proc_files`]), each masked in the world's own `/proc`.
    proc_masks: Vec<CString>,
    /// Room for their masks' clones, allocated before the fork.
    proc_mask_clones: Vec<OwnedFd>,
    /// Where the program starts: the caller's folder (checked to be the one the helper saw), or
    /// else the folder the helper chose (see [`super::StartFolder`]).
    start: Option<Start>,
    /// Whether programs may be mapped executable from `/dev/shm` (`commands = ["*"]`).
    shm_exec: bool,
    /// Room for the masks' detached clones, allocated before the fork.
    mask_clones: Vec<OwnedFd>,
    /// Room for the detached clones of the write roots, allocated before the fork.
    clones: Vec<OwnedFd>,
    /// The call's own limits, written once its `/proc` is mounted.
    limits: super::appetite::WorldLimits,
}

/// Where the world's program starts.
pub(super) enum Start {
    /// The caller's folder, found again by its path and checked to be the same folder.
    Same(KnownFolder),
    /// Another folder, by its path (the program's home or tmp folder), never through a link.
    Other(CString),
}

impl Start {
    pub(super) fn other(path: &Path) -> Result<Start, String> {
        Ok(Start::Other(relative_cstring(path)?))
    }
}

/// Whether `path` lies beneath `/tmp` (`shm`: `/dev/shm`).
fn beneath_tmp(path: &Path, shm: bool) -> bool {
    path.starts_with(if shm { "/dev/shm" } else { "/tmp" })
}

impl World {
    /// Plans the world. Write roots beneath another root are left out: the outer root's clone is
    /// recursive and covers them.
    ///
    /// The call's tmp folder is shown at `/tmp`, and a new tmpfs at `/dev/shm`, unless a grant
    /// beneath the host's `/tmp` (or `/dev/shm`) holds a hole, existing or not. Landlock's rights are
    /// inherited down the folders a path walks through, mount points included, so a grant shown
    /// again inside a writable `/tmp` gets the call's tmp rights on everything in it, holes
    /// included: Landlock could not keep such a hole closed. Then the host's `/tmp` is kept
    /// (read-only, like the rest, and closed by Landlock but for the grants), the grants are at
    /// their own paths, and the program's `TMPDIR` is the call's tmp folder at its own path, as
    /// in the Landlock-only mode.
    pub fn new(plan: &Plan<'_>) -> Result<World, String> {
        let (private_tmp, tmp_fd) = plan.tmp;
        let mut kept: Vec<KnownFolder> = Vec::new();
        for (path, fd) in plan.write_roots {
            let beneath_another =
                plan.write_roots.iter().any(|(other, _)| other != path && path.starts_with(other));
            let folder = KnownFolder::new(path, fd)?;
            if beneath_another || kept.iter().any(|k| k.path == folder.path) {
                continue;
            }
            kept.push(folder);
        }
        let tmp = KnownFolder::new(private_tmp, tmp_fd)?;
        let grants: Vec<&(PathBuf, &OwnedFd)> = plan
            .write_roots
            .iter()
            .chain(plan.read_roots)
            .filter(|(p, _)| !p.starts_with(private_tmp))
            .collect();
        let covered_by = |shm: bool| -> Vec<&(PathBuf, &OwnedFd)> {
            grants.iter().copied().filter(|(p, _)| beneath_tmp(p, shm)).collect()
        };
        // A hole that does not exist yet counts too: one made during the call (a key generated,
        // a record written) would get the call's tmp rights from Landlock there, and no mask.
        let holds_hole = |shm: bool| {
            covered_by(shm).iter().any(|(grant, _)| plan.holes.iter().any(|h| h.path.starts_with(grant)))
        };
        let own_tmp = !holds_hole(false);
        let own_shm = !holds_hole(true);
        let mut shown: Vec<&(PathBuf, &OwnedFd)> = Vec::new();
        if own_tmp {
            shown.extend(covered_by(false));
        }
        if own_shm {
            shown.extend(covered_by(true));
        }
        let mut covered: Vec<(PathBuf, KnownFolder)> = Vec::new();
        for (path, fd) in &shown {
            if shown.iter().any(|(other, _)| other != path && path.starts_with(other)) {
                continue;
            }
            let folder = KnownFolder::new(path, fd)?;
            if !covered.iter().any(|(_, c)| c.path == folder.path) {
                covered.push((path.clone(), folder));
            }
        }
        let mut world = World {
            network_from_keeper: None,
            user_namespace: plan.user_namespace,
            maps: IdMaps::for_self(),
            roots: kept,
            tmp,
            own_tmp,
            own_shm,
            covered,
            masks: Vec::new(),
            pins: Vec::new(),
            link_pins: Vec::new(),
            proc_masks: Vec::new(),
            proc_mask_clones: Vec::new(),
            start: None,
            shm_exec: plan.any_program,
            mask_clones: Vec::new(),
            clones: Vec::new(),
            limits: plan.limits.clone(),
        };
        if plan.masks {
            world.plan_masks(plan, private_tmp)?;
            if rustix::process::geteuid().is_root() {
                for name in crate::protected::root_only_proc_files() {
                    let name =
                        CString::new(name.as_bytes()).map_err(|_| "a NUL in a /proc name".to_owned())?;
                    world.proc_masks.push(name);
                }
                world.proc_mask_clones = Vec::with_capacity(world.proc_masks.len());
            }
        }
        world.clones = Vec::with_capacity(world.roots.len() + world.covered.len() + world.pins.len());
        Ok(world)
    }

    /// Plans a mask over each hole that exists and that the world shows (a hole beneath the
    /// host's `/tmp` is hidden by the call's own, unless it lies in a grant shown again there,
    /// which the choice of layout above rules out), and a pin on each folder between a write
    /// grant and such a hole. The hole that holds the call's own tmp folder (lnk's private tmp
    /// base) is not masked: the call's tmp must stay reachable, and Landlock keeps the rest of
    /// it closed. Landlock still cuts every hole; what a program finds at a mask is an empty
    /// folder or file of mode 000 on a read-only mount, so neither the secret's contents nor its
    /// names are reachable (EACCES, as in the Landlock-only mode: the program holds no capability
    /// to override the mode), and nothing is written.
    fn plan_masks(&mut self, plan: &Plan<'_>, private_tmp: &Path) -> Result<(), String> {
        let mut pins: Vec<PathBuf> = Vec::new();
        // The folders between the write grant that holds `path` and `path` (and with `itself`,
        // `path` too), each pinned.
        let mut pin_folders_to = |path: &Path, itself: bool| {
            for (root, _) in plan.write_roots.iter().filter(|(w, _)| path.starts_with(w)) {
                let mut folder = if itself { Some(path) } else { path.parent() };
                while let Some(f) = folder.filter(|f| f.starts_with(root) && f != root) {
                    if !pins.iter().any(|p| p == f) {
                        pins.push(f.to_owned());
                    }
                    folder = f.parent();
                }
            }
        };
        for hole in plan.holes {
            let Some(found) = &hole.found else { continue };
            if private_tmp.starts_with(&hole.path) || !self.shows(&hole.path) {
                continue;
            }
            self.masks.push(Mask {
                target: KnownFolder { path: relative_cstring(&hole.path)?, id: found.id },
                folder: found.folder,
            });
            pin_folders_to(&hole.path, false);
        }
        for link in plan.links {
            if !self.shows(link) {
                continue;
            }
            let fd = rustix::fs::open(link, OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty())
                .map_err(|e| {
                    format!("cannot open the link `{}` on the way to a protected path: {e}", link.display())
                })?;
            self.link_pins.push(KnownFolder::new(link, &fd)?);
            pin_folders_to(link, false);
        }
        for kept in plan.kept.iter().filter(|k| self.shows(k)) {
            pin_folders_to(kept, true);
        }
        // Outermost first: an inner pin is made through the outer one's mount.
        pins.sort_by_key(|p| p.components().count());
        for pin in pins {
            let fd = super::grants::open_no_symlinks(&pin, true)
                .map_err(|e| e.to_string())?
                .ok_or_else(|| format!("`{}` vanished while the world was planned", pin.display()))?;
            self.pins.push(KnownFolder::new(&pin, &fd)?);
        }
        self.mask_clones = Vec::with_capacity(self.masks.len());
        Ok(())
    }

    /// Whether the world shows `path` at its own path: everything but what the call's own `/tmp`
    /// and `/dev/shm` cover, except grants shown again inside them.
    pub fn shows(&self, path: &Path) -> bool {
        let hidden = |shm: bool, own: bool| {
            own && beneath_tmp(path, shm) && !self.covered.iter().any(|(grant, _)| path.starts_with(grant))
        };
        !hidden(false, self.own_tmp) && !hidden(true, self.own_shm)
    }

    /// How the world's pid namespace keeps every memfd non-executable.
    pub fn memfds(&self) -> super::appetite::WorldMemfds {
        self.limits.memfds()
    }

    /// In pid 1: keeps its end of the pair the keeper sends the network namespace on.
    pub(super) fn network_from_keeper(&mut self, from_keeper: OwnedFd) {
        self.network_from_keeper = Some(from_keeper);
    }

    /// Whether the call's tmp folder is shown at `/tmp` (else the program's `TMPDIR` is its path).
    pub fn own_tmp(&self) -> bool {
        self.own_tmp
    }

    /// Sets where the program starts.
    pub(super) fn start_in(&mut self, start: Start) {
        self.start = Some(start);
    }

    /// In the program's first process (pid 1 of the new pid namespace, already in the new
    /// namespaces), before the sandbox is entered: makes the read-only view, `/tmp`, `/dev/shm`,
    /// `/proc` and loopback. Returns the new `/proc` and `/dev/shm`, for Landlock to grant. Any
    /// failure is returned and the process exits: the program never runs in a world half made.
    pub fn enter(&mut self) -> Result<Entered, &'static str> {
        use rustix::mount::{MoveMountFlags, OpenTreeFlags};
        if self.user_namespace {
            crate::sys::map_ids_to_self(&self.maps.uid_map, &self.maps.gid_map)
                .map_err(|_| "cannot map the user into its namespace")?;
        }
        crate::sys::make_mounts_private().map_err(|_| "cannot make the mount namespace private")?;
        let root = rustix::fs::open(c"/", OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
            .map_err(|_| "cannot open /")?;
        let clone = |folder: &OwnedFd| {
            rustix::mount::open_tree(
                folder.as_fd(),
                c"",
                OpenTreeFlags::OPEN_TREE_CLONE
                    | OpenTreeFlags::OPEN_TREE_CLOEXEC
                    | OpenTreeFlags::AT_RECURSIVE
                    | OpenTreeFlags::AT_EMPTY_PATH,
            )
            .map_err(|_| "cannot clone a mount (open_tree)")
        };
        let put = |mount: &OwnedFd, target: &OwnedFd| {
            rustix::mount::move_mount(
                mount.as_fd(),
                c"",
                target.as_fd(),
                c"",
                MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH | MoveMountFlags::MOVE_MOUNT_T_EMPTY_PATH,
            )
            .map_err(|_| "cannot put a mount in place (move_mount)")
        };
        for write_root in &self.roots {
            let folder = open_verified(&root, write_root)?;
            if self.clones.len() == self.clones.capacity() {
                return Err("more clones than write roots");
            }
            self.clones.push(clone(&folder)?);
        }
        crate::sys::make_tree_read_only(&root).map_err(|_| "cannot make the file system read-only")?;
        // The devices a call gets, cloned (read-only, as the tree now is) before any mount loses
        // its devices (below).
        let devices = Devices::clone_from(&root, &clone)?;
        for (write_root, mount) in self.roots.iter().zip(&self.clones) {
            put(mount, &open_verified(&root, write_root)?)?;
        }
        self.clones.clear();
        // Grants the call's /tmp is about to hide, cloned now (recursively, so a write grant
        // inside a read grant stays writable) and shown again inside it below.
        for (_, folder) in &self.covered {
            let mount = clone(&open_verified(&root, folder)?)?;
            if self.clones.len() == self.clones.capacity() {
                return Err("more clones than grants");
            }
            self.clones.push(mount);
        }
        // The call's own /tmp: its tmp folder (a read-write clone, now in place), cloned before
        // it is shown, since it usually lies beneath the /tmp it is about to cover.
        let tmp = match self.own_tmp {
            true => Some(clone(&open_verified(&root, &self.tmp)?)?),
            false => None,
        };
        self.make_mask_sources(&root, &clone)?;
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        if let Some(tmp) = tmp {
            let tmp_target =
                rustix::fs::openat(&root, c"tmp", flags, Mode::empty()).map_err(|_| "cannot open /tmp")?;
            put(&tmp, &tmp_target)?;
        }
        // The call's own /dev/shm: a new tmpfs, in memory as the host's is, gone with the mount
        // namespace. A machine without /dev/shm gets none.
        let shm = match rustix::fs::openat(&root, c"dev/shm", flags, Mode::empty()) {
            Ok(_) if self.own_shm => {
                // A quarter of memory at most (the host's is half), and no mapping of code from it
                // unless any program may run.
                crate::sys::mount_tmpfs(c"/dev/shm", !self.shm_exec, c"mode=1777,size=25%")
                    .map_err(|_| "cannot mount a tmpfs on /dev/shm")?;
                Some(
                    rustix::fs::open(c"/dev/shm", flags, Mode::empty())
                        .map_err(|_| "cannot open the new /dev/shm")?,
                )
            }
            Ok(_) | Err(rustix::io::Errno::NOENT) => None,
            Err(_) => return Err("cannot open /dev/shm"),
        };
        for ((_, folder), mount) in self.covered.iter().zip(&self.clones) {
            put(mount, &make_folders(&root, folder.path.as_bytes())?)?;
        }
        self.clones.clear();
        // The folders on the way to a hole in a write grant, each bound onto itself (outermost
        // first): `rename` refuses to move a mount point, so no program of this call can move a
        // hole's name for a later call to miss.
        for pin in &self.pins {
            let mount = clone(&open_verified(&root, pin)?)?;
            put(&mount, &open_verified(&root, pin)?)?;
        }
        // The links on the way to a hole, each bound onto itself through the pins above.
        for link in &self.link_pins {
            let mount = clone(&open_verified_any(&root, link)?)?;
            put(&mount, &open_verified_any(&root, link)?)?;
        }
        // The holes, each found again by its path and checked to be what the helper saw.
        for (mask, mount) in self.masks.iter().zip(&self.mask_clones) {
            let target = if mask.folder {
                open_verified(&root, &mask.target)?
            } else {
                open_verified_any(&root, &mask.target)?
            };
            put(mount, &target)?;
        }
        self.mask_clones.clear();
        // No device node anywhere can be opened (one in a grant by another path: a chroot's
        // `/dev` bound or made there, the console, a disk), but the call's own: the devices a
        // call gets, each put back over its own path, and its terminals.
        crate::sys::make_tree_without_devices(&root).map_err(|_| "cannot keep the host's devices out")?;
        devices.put_back(&root, &put)?;
        let terminals = world_devices::own_terminals(&root, &clone, &put);
        crate::sys::mount_proc().map_err(|_| "cannot mount /proc for the call's pid namespace")?;
        self.limits.write()?;
        // The network namespace the keeper made while the mounts were made, loopback up.
        let from_keeper =
            self.network_from_keeper.take().ok_or("cannot make the call's network namespace")?;
        super::world_network::join_from_keeper(from_keeper)?;
        let proc =
            rustix::fs::open(c"/proc", OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
                .map_err(|_| "cannot open the new /proc")?;
        // As root: the new /proc's files only root may read, masked.
        for (name, mount) in self.proc_masks.iter().zip(&self.proc_mask_clones) {
            match rustix::fs::openat(
                &proc,
                name.as_c_str(),
                OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            ) {
                Ok(target) => put(mount, &target)?,
                Err(rustix::io::Errno::NOENT) => {}
                Err(_) => return Err("cannot open a root-only file of the new /proc"),
            }
        }
        self.proc_mask_clones.clear();
        // The starting folder, found again in the finished world: the working folder the
        // program inherited points into the mounts as they were before, beneath what is now
        // read-only, masked or covered.
        match &self.start {
            Some(Start::Same(folder)) => rustix::process::fchdir(open_verified(&root, folder)?)
                .map_err(|_| "cannot enter the starting folder")?,
            Some(Start::Other(path)) => {
                let how = ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
                let folder = rustix::fs::openat2(&root, path.as_c_str(), flags, Mode::empty(), how)
                    .map_err(|_| "cannot open the program's starting folder in its world")?;
                rustix::process::fchdir(folder).map_err(|_| "cannot enter the starting folder")?
            }
            None => {}
        }
        Ok(Entered { proc, shm, terminals })
    }

    /// The masks: an empty folder and an empty file of mode 000, made on a tmpfs mounted for a
    /// moment over /tmp in this namespace only, each cloned read-only, and the tmpfs detached:
    /// their sources exist nowhere a program (of this call or another) can reach.
    fn make_mask_sources(
        &mut self,
        root: &OwnedFd,
        clone: &dyn Fn(&OwnedFd) -> Result<OwnedFd, &'static str>,
    ) -> Result<(), &'static str> {
        if self.masks.is_empty() && self.proc_masks.is_empty() {
            return Ok(());
        }
        crate::sys::mount_small_tmpfs(c"/tmp").map_err(|_| "cannot mount a tmpfs for the masks")?;
        let none = Mode::from_raw_mode(0o000);
        rustix::fs::mkdir(c"/tmp/mask", none).map_err(|_| "cannot make the masks' folder")?;
        rustix::fs::open(
            c"/tmp/mask-file",
            OFlags::CREATE | OFlags::EXCL | OFlags::RDONLY | OFlags::CLOEXEC,
            none,
        )
        .map_err(|_| "cannot make the masks' file")?;
        for mask in &self.masks {
            let name = if mask.folder { c"tmp/mask" } else { c"tmp/mask-file" };
            let source = rustix::fs::openat(
                root,
                name,
                OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|_| "cannot open a mask")?;
            let mount = clone(&source)?;
            crate::sys::make_tree_read_only(&mount).map_err(|_| "cannot make a mask read-only")?;
            if self.mask_clones.len() == self.mask_clones.capacity() {
                return Err("more masks than holes");
            }
            self.mask_clones.push(mount);
        }
        for _ in &self.proc_masks {
            let source = rustix::fs::openat(
                root,
                c"tmp/mask-file",
                OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|_| "cannot open a mask")?;
            let mount = clone(&source)?;
            crate::sys::make_tree_read_only(&mount).map_err(|_| "cannot make a mask read-only")?;
            if self.proc_mask_clones.len() == self.proc_mask_clones.capacity() {
                return Err("more masks than root-only /proc files");
            }
            self.proc_mask_clones.push(mount);
        }
        crate::sys::unmount_detach(c"/tmp").map_err(|_| "cannot detach the masks' tmpfs")
    }
}

/// Makes the folders of `path` (relative to `root`, in the call's own /tmp or /dev/shm) that do
/// not exist yet, never following a link, and returns the last. Allocation-free: components are
/// copied into a buffer on the stack.
fn make_folders(root: &OwnedFd, path: &[u8]) -> Result<OwnedFd, &'static str> {
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut dir = rustix::fs::openat(root, c".", flags, Mode::empty()).map_err(|_| "cannot open /")?;
    for component in path.split(|b| *b == b'/').filter(|c| !c.is_empty()) {
        let mut name = [0u8; 256];
        if component.len() >= name.len() || component == b".." {
            return Err("a grant's path has a component lnk cannot show again");
        }
        name[..component.len()].copy_from_slice(component);
        let name = std::ffi::CStr::from_bytes_until_nul(&name).map_err(|_| "a NUL in a grant's path")?;
        match rustix::fs::mkdirat(&dir, name, Mode::from_raw_mode(0o700)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {}
            Err(_) => return Err("cannot make a mount point for a grant in the call's /tmp"),
        }
        dir = rustix::fs::openat(&dir, name, flags, Mode::empty())
            .map_err(|_| "cannot open a mount point for a grant in the call's /tmp")?;
    }
    Ok(dir)
}

/// Opens a file, folder or link (itself) beneath `/` without following links, and checks it is
/// the one the helper saw.
fn open_verified_any(root: &OwnedFd, known: &KnownFolder) -> Result<OwnedFd, &'static str> {
    let how = ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    let flags = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::openat2(root, known.path.as_c_str(), flags, Mode::empty(), how)
        .map_err(|_| "cannot open a protected path in the call's mount namespace")?;
    let stat = rustix::fs::fstat(&fd).map_err(|_| "cannot stat a protected path")?;
    if (stat.st_dev, stat.st_ino) != known.id {
        return Err("a protected path changed between the helper's check and the mount namespace");
    }
    Ok(fd)
}

/// Opens a folder beneath `/` without following links, and checks it is the folder the helper
/// saw.
fn open_verified(root: &OwnedFd, folder: &KnownFolder) -> Result<OwnedFd, &'static str> {
    let how = ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let fd = rustix::fs::openat2(root, folder.path.as_c_str(), flags, Mode::empty(), how)
        .map_err(|_| "cannot open a grant, a pin or the starting folder in the call's mount namespace")?;
    let stat = rustix::fs::fstat(&fd).map_err(|_| "cannot stat a folder of the world")?;
    if (stat.st_dev, stat.st_ino) != folder.id {
        return Err(
            "a grant, a pin or the starting folder changed between the helper's check and the mount namespace",
        );
    }
    Ok(fd)
}
