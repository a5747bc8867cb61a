//! The own world's devices: the five every call gets and its terminals, the only device nodes
//! that open there.
//!
//! Landlock's rules follow inodes, not names, so a device reached by another path (the host's
//! `/dev` bound in a chroot beneath a grant, a node made on an ordinary file system) would open
//! as the grant it lies in allows. So [`super::world::World::enter`] mounts the whole tree
//! `nodev` and then shows again, over their own paths, clones of `/dev/null`, `/dev/zero`,
//! `/dev/full`, `/dev/random` and `/dev/urandom` taken before ([`Devices`]: read-only, as the
//! tree is by then), and mounts a devpts instance of the call's own over `/dev/pts`
//! ([`own_terminals`]).
//!
//! Everything here runs in the world's pid 1, which allocates nothing: the names and options are
//! written out, and the clones kept in an array.
//!
//! What it trusts: the kernel's mounts, and devpts's `ptmx` making pairs in its own instance.

use std::ffi::CStr;
use std::os::fd::OwnedFd;

use rustix::fs::{Mode, OFlags};

/// The devices every call gets (`super::rules::DEVICES`), relative to the root.
const DEVICE_FILES: [&CStr; 5] = [c"dev/null", c"dev/zero", c"dev/full", c"dev/random", c"dev/urandom"];

/// devpts's options for the call's own instance: a new one, its `ptmx` for anyone (it makes the
/// caller's own pairs), their peers the opener's alone, at most
/// [`crate::notify::terminal::MAX_PAIRS`] pairs (every instance but the host's draws from one
/// pool of the machine's, `kernel.pty.max` less `kernel.pty.reserve`, which containers'
/// terminals share).
const DEVPTS_OPTIONS: &CStr = c"newinstance,ptmxmode=0666,mode=0600,max=16";

/// A mount's clone, made by the world's `open_tree` (see [`super::world::World::enter`]).
type Clone<'a> = &'a dyn Fn(&OwnedFd) -> Result<OwnedFd, &'static str>;
/// Puts a clone over a target, as the world's `move_mount` does.
type Put<'a> = &'a dyn Fn(&OwnedFd, &OwnedFd) -> Result<(), &'static str>;

/// Clones of the devices every call gets, each shown again over its own path once the tree has
/// no devices; `None` for one this machine lacks.
pub struct Devices {
    clones: [Option<OwnedFd>; DEVICE_FILES.len()],
}

impl Devices {
    /// Clones each device node of [`DEVICE_FILES`] beneath `root`.
    pub fn clone_from(root: &OwnedFd, clone: Clone<'_>) -> Result<Devices, &'static str> {
        let mut clones: [Option<OwnedFd>; DEVICE_FILES.len()] = Default::default();
        for (name, made) in DEVICE_FILES.iter().zip(clones.iter_mut()) {
            *made = device_node(root, name).map(|node| clone(&node)).transpose()?;
        }
        Ok(Devices { clones })
    }

    /// Puts each clone over its device's path again.
    pub fn put_back(self, root: &OwnedFd, put: Put<'_>) -> Result<(), &'static str> {
        for (name, device) in DEVICE_FILES.iter().zip(self.clones) {
            if let Some(device) = device {
                let target = device_node(root, name).ok_or("cannot find a device's place again")?;
                put(&device, &target)?;
            }
        }
        Ok(())
    }
}

/// The call's own terminals in the own world: a devpts instance of its own over `/dev/pts` (to
/// read, write and `ioctl` its pairs), and its `ptmx`, shown at `/dev/ptmx`, which makes pairs
/// in it. The host's instance, with the person's terminals, is covered, and the host's `ptmx` is
/// granted nowhere, so no other path to it makes a pair in the host's instance.
pub struct Terminals {
    pub pts: OwnedFd,
    /// `None` where there is no `/dev/ptmx` (then `/dev/pts/ptmx`, in `pts`, is the way).
    pub ptmx: Option<OwnedFd>,
}

/// Mounts the call's own devpts instance over `/dev/pts` (see [`Terminals`]), and shows its
/// `ptmx` at `/dev/ptmx` (where that is a device node, not a link to `pts/ptmx`). `None` where
/// the world has no `/dev/pts` or the kernel refuses the mount: the call then has no terminal,
/// and nothing of the host's is granted in its place.
pub fn own_terminals(root: &OwnedFd, clone: Clone<'_>, put: Put<'_>) -> Option<Terminals> {
    let folder = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    rustix::fs::openat(root, c"dev/pts", folder, Mode::empty()).ok()?;
    crate::sys::mount_devpts(c"/dev/pts", DEVPTS_OPTIONS).ok()?;
    let pts = rustix::fs::open(c"/dev/pts", folder, Mode::empty()).ok()?;
    let own =
        rustix::fs::openat(&pts, c"ptmx", OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty());
    if let (Ok(own), Some(host)) = (own, device_node(root, c"dev/ptmx")) {
        clone(&own).and_then(|own| put(&own, &host)).ok()?;
    }
    // Ours now, or a link to `pts/ptmx` (as containers make it: followed, it lies in `pts`).
    let ptmx = rustix::fs::open(c"/dev/ptmx", OFlags::PATH | OFlags::CLOEXEC, Mode::empty()).ok();
    Some(Terminals { pts, ptmx })
}

/// The device node at `path` (relative to `root`), never through a link; `None` where there is
/// none.
fn device_node(root: &OwnedFd, path: &CStr) -> Option<OwnedFd> {
    let node =
        rustix::fs::openat(root, path, OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty())
            .ok()?;
    let kind = rustix::fs::FileType::from_raw_mode(rustix::fs::fstat(&node).ok()?.st_mode);
    (kind == rustix::fs::FileType::CharacterDevice).then_some(node)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_world_shows_again_the_devices_every_call_gets() {
        let world: Vec<String> = DEVICE_FILES.iter().map(|d| format!("/{}", d.to_str().unwrap())).collect();
        assert_eq!(world, super::super::rules::DEVICES);
    }

    #[test]
    fn the_calls_devpts_holds_at_most_its_terminals() {
        let options = DEVPTS_OPTIONS.to_str().unwrap();
        let max = crate::notify::terminal::MAX_PAIRS;
        assert!(options.split(',').any(|o| o == format!("max={max}")), "{options}");
    }
}
