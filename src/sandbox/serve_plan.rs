//! What serves a call while it runs, planned with its sandbox: the network door for
//! `[internet]` (a namespace of the program's own, or the held door without one) and the plan
//! for the held calls of the Landlock-only mode. Both must exist before the program's process
//! is made (its filter's listener, its namespace's sockets); the call takes them from the
//! sandbox once it has started (`Sandbox::take_door`, `Sandbox::take_notifier`) and serves them.
//!
//! Trusts the grants' descriptors it is given (opened without following links).

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use super::holes::Hole;
use super::kernel::KernelSupport;
use super::request::Refusal;
use super::request::SandboxRequest;
use crate::flags::InternetFlags;
use crate::proxy::NetworkDoor;
use crate::proxy::door::Door;
use crate::proxy::host_door::HostDoor;

/// What the helper needs to answer the program's held metadata calls: a descriptor of each
/// write grant and of the call's tmp folder (the ones Landlock was given), and the holes, except
/// the one that holds the call's own tmp folder (lnk's private tmp base).
pub(super) fn notify_plan(
    req: &SandboxRequest<'_>,
    write_roots: &[(PathBuf, OwnedFd)],
    holes: &[Hole],
    kept: &[PathBuf],
    door: Option<&NetworkDoor>,
) -> Result<(crate::notify::Channel, crate::notify::Plan), Refusal> {
    let private_tmp = req.private_tmp;
    let mut roots = Vec::with_capacity(write_roots.len());
    for (path, fd) in write_roots {
        let fd = fd.try_clone().map_err(|e| Refusal::kernel(format!("cannot keep a write grant: {e}")))?;
        roots.push((path.clone(), fd));
    }
    let holes = holes.iter().map(|h| h.path.clone()).filter(|h| !private_tmp.starts_with(h)).collect();
    let channel = crate::notify::Channel::new().map_err(Refusal::kernel)?;
    // The call's loopback: the proxy's and forwarders' routes with `[internet]`, and the
    // program's own servers in any case.
    let connects = match door {
        Some(NetworkDoor::Held(door)) => door.loopback(),
        _ => std::sync::Arc::new(crate::proxy::loopback::Loopback::new(Vec::new())),
    };
    let never_granted = never_granted(req);
    // The call's own /dev/shm, in its tmp folder (see `crate::notify::shm`).
    let shm = crate::notify::shm::ShmFolder::new(private_tmp.to_owned());
    let mut readable: Vec<PathBuf> = req.flags.read.iter().chain(&req.flags.write).cloned().collect();
    readable.extend(crate::program_path::SYSTEM_READ.iter().map(PathBuf::from));
    let grants = crate::notify::Grants {
        write_roots: roots,
        holes,
        kept: kept.to_vec(),
        readable,
        tmp: private_tmp.to_owned(),
        connects: Some(connects),
        shm,
        unix: crate::notify::unix_records::UnixSockets::new(private_tmp.to_owned()),
        // Set once the grants' rules are cut (see `super::Sandbox`'s rules).
        socket_folders: Vec::new(),
        world_diag: None,
        host_diag: None,
    };
    let appetite = req.flags.appetite;
    let plan = crate::notify::Plan {
        grants,
        tmp: private_tmp.to_owned(),
        never_granted,
        appetite,
        own_world: false,
    };
    Ok((channel, plan))
}

/// What the own world's held calls need: only its connects are held (see
/// [`crate::notify::world_connects`]), and they act on copies of the program's sockets and on
/// the world's network namespace, whose socket diagnostics the program's process sends with
/// its filter's listener. No grant is acted in.
pub(super) fn world_notify_plan(
    req: &SandboxRequest<'_>,
) -> Result<(crate::notify::Channel, crate::notify::Plan), Refusal> {
    let private_tmp = req.private_tmp;
    let channel = crate::notify::Channel::new().map_err(Refusal::kernel)?;
    let grants = crate::notify::Grants {
        write_roots: Vec::new(),
        holes: Vec::new(),
        kept: Vec::new(),
        readable: Vec::new(),
        tmp: private_tmp.to_owned(),
        connects: None,
        shm: crate::notify::shm::ShmFolder::new(private_tmp.to_owned()),
        unix: crate::notify::unix_records::UnixSockets::new(private_tmp.to_owned()),
        socket_folders: Vec::new(),
        // Set when the listener comes (see `crate::notify::Notifier`).
        world_diag: None,
        host_diag: None,
    };
    let never_granted = never_granted(req);
    let appetite = req.flags.appetite;
    let plan =
        crate::notify::Plan { grants, tmp: private_tmp.to_owned(), never_granted, appetite, own_world: true };
    Ok((channel, plan))
}

/// Every path no grant opens, to name a refusal there as a secret's: found only if a held call
/// is refused (see `Secrets`), nothing of it on the launch.
fn never_granted(req: &SandboxRequest<'_>) -> crate::protected::Secrets {
    crate::protected::Secrets {
        deny: req.flags.deny.clone(),
        home: req.home.to_owned(),
        grants: req.flags.read.iter().chain(&req.flags.write).cloned().collect(),
        protected: req.protected.to_vec(),
        as_root: rustix::process::geteuid().is_root(),
        found: std::cell::OnceCell::new(),
    }
}

/// Plans the network door for `[internet]`: a network namespace of the program's own in the
/// own world; without one, the held door (each connect made by the helper, to the proxy only).
/// Never Landlock's port rules alone: they would let the program reach any host on the proxy's
/// port.
pub(super) fn network_door(net: &InternetFlags, kernel: &KernelSupport) -> Result<NetworkDoor, Refusal> {
    if kernel.world.0.is_own_world() {
        // The door's scratch folder for the hosts file must be visible in the program's mount
        // namespace, where the world's /tmp covers the call's tmp folder.
        return Door::new(net, Path::new("/tmp")).map(NetworkDoor::Namespace).map_err(Refusal::refused);
    }
    // A limit of this mode, not of the file: unsupported (125), as `check` says it here.
    if let Some(why) = crate::proxy::host_door::named_endpoint(net) {
        return Err(Refusal::kernel(why));
    }
    // Seccomp's user notification (Linux 5.0) and its ADDFD (5.9) are in every kernel with the
    // Landlock ABI lnk requires (Linux 6.12); should a filter with a listener still be refused,
    // the program's process fails before `execve` and nothing runs.
    HostDoor::new(net).map(NetworkDoor::Held).map_err(Refusal::refused)
}
