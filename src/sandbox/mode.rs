//! Which world a call gets: the own world where the kernel lets lnk make its namespaces, else
//! the Landlock-only mode, and why.
//!
//! The mode is chosen per call by [`probe`], which makes the same namespaces in a throwaway
//! child and mounts a `/proc` there: a kernel without user namespaces, or one whose user
//! namespaces cannot mount (Ubuntu's AppArmor restriction, Docker's default seccomp), gets the
//! Landlock-only mode, where seccomp refuses what the read-only view and the IPC namespace would
//! have answered (see [`super::seccomp`]). The answer is kept for the boot in the caller's
//! private tmp base ([`probe_cached`]), keyed so that another container or user never reads it.
//!
//! What it trusts: the kernel's answer to the probe, and the caller's private tmp base (0700,
//! the caller's).

use std::os::fd::OwnedFd;

use rustix::fs::{Mode, OFlags};

/// Which world a call gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorldMode {
    /// Namespaces of the call's own (in a user namespace unless lnk is root).
    OwnWorld { user_namespace: bool },
    /// No namespace: Landlock and seccomp only.
    LandlockOnly,
}

/// What the Landlock-only mode lacks, for the report and `lnk sandbox status`.
pub const LANDLOCK_ONLY_LACKS: &[&str] = &[
    "a /tmp of the call's own (TMPDIR is a private folder; /tmp is unreachable)",
    "a /proc of the call's own (no /proc/self, no ps)",
    "/dev/shm itself (POSIX shared memory and semaphores work: shm_open and sem_open are made by the helper in the call's tmp folder; the host's /dev/shm stays unreachable)",
    "a network of the call's own (the host's is shared: TCP only, no UDP; the program's servers listen on the call's own loopback address, on ports above the host's automatic range (the report's servers), where other local processes could connect too; [internet] tcp endpoints by address only)",
    "a secret folder's names kept out (in a hole of a read grant, such as ~/.ssh, the names, sizes and modes of what is inside can be listed: Landlock lets the folders on the way be listed and there is no mask to cover them; what is inside stays closed)",
    "System V IPC (refused)",
    LANDLOCK_ONLY_UNIX_SOCKETS,
    "a terminal's peer by its path (ptsname, then open: expect's way; openpty, forkpty, script and pty.fork work, the helper makes the pair)",
    "the file systems' own ioctls that change a file (chattr's flags), even inside the write grants (refused; mode, owner, times and extended attributes there are performed by the helper)",
];

/// What the own world lacks where the kernel gives lnk no copy of a process's descriptor:
/// Landlock before ABI 9 (`LANDLOCK_ACCESS_FS_RESOLVE_UNIX`) cannot keep a program's `connect`
/// from the host's sockets in a folder it may read (the ssh agent, Docker's socket, the session
/// bus), nor can a read-only mount or a network namespace; the held connect that stands in for
/// it ([`crate::notify::world_connects`]) is made on such a copy.
pub const UNIX_SOCKETS: &str = "Unix sockets of the call's own (socket(AF_UNIX) is refused: this kernel's Landlock cannot keep a connect from the host's sockets, and the helper, which makes each connect where it can, gets no copy of a process's descriptor here (pidfd_getfd); socketpair works, and so do TCP servers on the call's loopback)";

/// What the own world's Unix sockets lack (see [`crate::notify::world_connects`]).
pub const OWN_WORLD_UNIX_SOCKETS: &str = "Unix sockets exactly as bare: the helper makes every connect on a copy of the program's socket, and a Unix one reaches only a socket of the call's own world; the peer of a Unix connection is the helper (SO_PEERCRED); a socket bound on btrfs or overlayfs beneath a write grant is not reached; no Unix datagram socket";

/// What the Landlock-only mode's Unix sockets lack (see [`crate::notify::unix_sockets`]).
pub const LANDLOCK_ONLY_UNIX_SOCKETS: &str = "Unix sockets exactly as bare: the helper binds, listens and connects the program's own (beneath the write grants and in the call's tmp folder; abstract names the call's own), and a connect reaches only a socket the call bound; the peer of a connection is the helper (SO_PEERCRED); no Unix datagram socket, no automatic name, no client bound to a name of its own; none where the kernel gives no copy of a descriptor (pidfd_getfd)";

/// What the own world lacks (see [`super::seccomp`]'s `XATTR_SETTERS`).
pub const OWN_WORLD_LACKS_XATTRS: &str = "setting extended attributes and POSIX ACLs (EOPNOTSUPP, as a file system without them answers: an ACL set on a memfd would make it executable past the kernel's exec seal)";

impl WorldMode {
    /// The name the report and `lnk sandbox status` use.
    pub fn name(self) -> &'static str {
        match self {
            WorldMode::OwnWorld { .. } => "own-world",
            WorldMode::LandlockOnly => "landlock-only",
        }
    }

    /// What a call in this mode lacks, for the report and `lnk sandbox status`: the
    /// Landlock-only mode's list, or in the own world plain memfds where the host keeps them
    /// executable (`sealed_memfds_only`, see [`super::appetite::WorldMemfds`]), and its Unix
    /// sockets, which need copies of the program's descriptors (`copies`, see
    /// [`crate::notify::handles::copies_available`]).
    pub fn lacks(self, sealed_memfds_only: bool, copies: bool) -> Vec<&'static str> {
        let unix = if copies { OWN_WORLD_UNIX_SOCKETS } else { UNIX_SOCKETS };
        match self {
            WorldMode::OwnWorld { .. } if sealed_memfds_only => {
                vec![unix, OWN_WORLD_LACKS_XATTRS, super::appetite::SEALED_MEMFDS_ONLY]
            }
            WorldMode::OwnWorld { .. } => vec![unix, OWN_WORLD_LACKS_XATTRS],
            WorldMode::LandlockOnly => LANDLOCK_ONLY_LACKS.to_vec(),
        }
    }

    /// Every namespace the own world has, for the probe: [`WorldMode::clone_flags`]'s and the
    /// network namespace the keeper makes (a kernel that refuses it gets the Landlock-only mode).
    pub fn namespace_flags(self) -> Option<libc::c_int> {
        self.clone_flags().map(|flags| flags | libc::CLONE_NEWNET)
    }

    pub fn is_own_world(self) -> bool {
        matches!(self, WorldMode::OwnWorld { .. })
    }

    /// The flags of the `clone` that starts the program's first process, in the own world. Its
    /// network namespace the keeper makes meanwhile (see [`super::world_network`]).
    pub fn clone_flags(self) -> Option<libc::c_int> {
        match self {
            WorldMode::OwnWorld { user_namespace } => {
                let mut flags = libc::CLONE_NEWNS | libc::CLONE_NEWIPC | libc::CLONE_NEWPID;
                if user_namespace {
                    flags |= libc::CLONE_NEWUSER;
                }
                Some(flags)
            }
            WorldMode::LandlockOnly => None,
        }
    }
}

/// The mode for a launch: [`probe`]'s answer, kept for the rest of the boot in the caller's
/// private tmp base (`$TMPDIR/lnk-<uid>/world`, a folder only the caller can write), so a launch
/// makes its namespaces once instead of twice. The answer is keyed by the boot, the user and
/// mount namespaces, the seccomp filters this process runs under (a container sharing the
/// host's tmp has its own mounts and filters) and the effective uid. The second part of the
/// answer is whether it was kept (not probed now). A kept answer can be stale (a sysctl
/// changed since): then its call probes again and runs in the mode the kernel gives (see
/// [`crate::run::start_sandboxed`]), and the answer is forgotten ([`forget_cached_probe`]).
pub fn probe_cached() -> ((WorldMode, Option<String>), bool) {
    #[cfg(feature = "fault-points")]
    if std::env::var_os("LNK_TEST_LANDLOCK_ONLY").is_some_and(|v| !v.is_empty()) {
        return (probe(), false);
    }
    // Test builds only: a kept answer that promises the own world, whatever this kernel gives
    // (the stale answer a test needs).
    #[cfg(feature = "fault-points")]
    if std::env::var_os("LNK_TEST_STALE_WORLD").is_some_and(|v| !v.is_empty()) {
        return ((WorldMode::OwnWorld { user_namespace: !rustix::process::geteuid().is_root() }, None), true);
    }
    let Some((base, key)) = cache_place() else { return (probe(), false) };
    let read = rustix::fs::openat(
        &base,
        CACHE_NAME,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()
    .and_then(|fd| {
        let mut buf = [0u8; 512];
        let n = rustix::io::read(&fd, &mut buf).ok()?;
        String::from_utf8(buf[..n].to_vec()).ok()
    });
    let cached =
        read.as_deref().and_then(|text| text.strip_prefix(key.as_str())).and_then(|mode| match mode {
            "own-world user\n" => Some(WorldMode::OwnWorld { user_namespace: true }),
            "own-world root\n" => Some(WorldMode::OwnWorld { user_namespace: false }),
            _ => None,
        });
    if let Some(mode) = cached {
        return ((mode, None), true);
    }
    let (mode, why) = probe();
    // Only the own world is kept: the Landlock-only answer is probed each time, so a machine
    // that gains user namespaces gets them at once.
    let line = match mode {
        WorldMode::OwnWorld { user_namespace: true } => Some("own-world user\n"),
        WorldMode::OwnWorld { user_namespace: false } => Some("own-world root\n"),
        WorldMode::LandlockOnly => None,
    };
    if let Some(line) = line {
        let tmp_name = format!("{CACHE_NAME}.{}", std::process::id());
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        if let Ok(fd) = rustix::fs::openat(&base, tmp_name.as_str(), flags, Mode::from_raw_mode(0o600)) {
            let written = rustix::io::write(&fd, format!("{key}{line}").as_bytes());
            drop(fd);
            if written.is_ok() {
                let _ = rustix::fs::renameat(&base, tmp_name.as_str(), &base, CACHE_NAME);
            }
            let _ = rustix::fs::unlinkat(&base, tmp_name.as_str(), rustix::fs::AtFlags::empty());
        }
    }
    ((mode, why), false)
}

/// Forgets the kept answer of [`probe_cached`], after the namespaces it promised could not be
/// made.
pub fn forget_cached_probe() {
    if let Some((base, _)) = cache_place() {
        let _ = rustix::fs::unlinkat(&base, CACHE_NAME, rustix::fs::AtFlags::empty());
    }
}

const CACHE_NAME: &str = "world";

/// The private tmp base and the key of this boot, user and mount namespaces, seccomp filters
/// and uid.
fn cache_place() -> Option<(OwnedFd, String)> {
    let uid = rustix::process::geteuid().as_raw();
    let base = crate::private_tmp::base_path(uid).ok()?;
    let _ = rustix::fs::mkdir(&base, Mode::from_raw_mode(0o700));
    let base = crate::private_tmp::open_private_base(&base, uid).ok()?;
    // One read each (`read_to_string` takes about ten for `status`, from 32 bytes up).
    let text = |path| crate::procfs::read_whole(path).ok().and_then(|t| String::from_utf8(t).ok());
    let boot = text("/proc/sys/kernel/random/boot_id")?;
    let userns = std::fs::read_link("/proc/self/ns/user").ok()?;
    let mountns = std::fs::read_link("/proc/self/ns/mnt").ok()?;
    // The number of filters, from `/proc/self/status` (which the kernel writes whole for one
    // line: measured 0.986 and 0.999 of an own-world launch without it) only where there are any.
    let filters = match crate::sys::seccomp_mode() {
        Ok(0) => "0".to_owned(),
        _ => {
            let status = text("/proc/self/status")?;
            status.lines().find_map(|l| l.strip_prefix("Seccomp_filters:")).unwrap_or("0").trim().to_owned()
        }
    };
    Some((base, format!("{} {} {} {filters} {uid} ", boot.trim(), userns.display(), mountns.display())))
}

/// Finds the mode this process gets, by making the namespaces in a short-lived child. The
/// second part says why the own world is out of reach (for the report and `status`).
pub fn probe() -> (WorldMode, Option<String>) {
    // Test builds only: the suite runs its lifetime and background tests in both modes, where
    // simulating a kernel (as the escape tests do) cannot wrap the process they signal.
    #[cfg(feature = "fault-points")]
    if std::env::var_os("LNK_TEST_LANDLOCK_ONLY").is_some_and(|v| !v.is_empty()) {
        return (WorldMode::LandlockOnly, Some("LNK_TEST_LANDLOCK_ONLY is set (a test build)".into()));
    }
    let maps = IdMaps::for_self();
    let own = WorldMode::OwnWorld { user_namespace: true };
    let user = crate::sys::probe_namespaces(
        own.namespace_flags().unwrap_or(0),
        Some((&maps.uid_map, &maps.gid_map)),
    );
    match user {
        Ok(()) => (own, None),
        Err(e) if rustix::process::geteuid().is_root() => {
            let root = WorldMode::OwnWorld { user_namespace: false };
            match crate::sys::probe_namespaces(root.namespace_flags().unwrap_or(0), None) {
                Ok(()) => (root, None),
                Err(e2) => (
                    WorldMode::LandlockOnly,
                    Some(format!("namespaces in a user namespace: {e}; as root without one: {e2}")),
                ),
            }
        }
        Err(e) => {
            let mut why = format!(
                "no user namespace with mounts: {}",
                crate::user_namespaces::user_namespace_error(&e)
            );
            let exe = std::fs::read_link("/proc/self/exe").ok();
            if let Some(fix) = crate::user_namespaces::apparmor_fix(
                crate::user_namespaces::apparmor_restricts_user_namespaces(),
                exe.as_deref(),
            ) {
                why = format!("{why}; {fix}");
            }
            (WorldMode::LandlockOnly, Some(why))
        }
    }
}

/// `uid_map` and `gid_map` lines mapping the caller to itself.
pub(super) struct IdMaps {
    pub(super) uid_map: Vec<u8>,
    pub(super) gid_map: Vec<u8>,
}

impl IdMaps {
    pub(super) fn for_self() -> IdMaps {
        let uid = rustix::process::getuid().as_raw();
        let gid = rustix::process::getgid().as_raw();
        IdMaps {
            uid_map: format!("{uid} {uid} 1").into_bytes(),
            gid_map: format!("{gid} {gid} 1").into_bytes(),
        }
    }
}
