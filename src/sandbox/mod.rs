//! The sandbox itself: a Landlock ruleset and a seccomp filter, prepared in the helper and
//! entered by the program's process just before `execve`.
//!
//! Everything that can fail for a reason a person should read (a grant that is a symlink, a
//! kernel without the needed Landlock ABI, a write grant over the agent's records) fails in
//! [`Sandbox::prepare`], in the helper, before any process is started. [`Sandbox::confine`] runs
//! in the forked child and only makes system calls: `landlock_restrict_self` (which also sets
//! `no_new_privs`) and `seccomp(SECCOMP_SET_MODE_FILTER)`.
//!
//! What the ruleset allows (everything else Landlock governs is refused):
//!
//! | where | rights |
//! |---|---|
//! | `[files] read` roots | read files, list folders |
//! | `[files] write` roots and the call's private tmp | read, write, create and remove files and folders, symlinks and FIFOs, rename and link within, truncate; socket files only in the Landlock-only call tmp; never devices |
//! | the own world's `/proc` and `/dev/shm` (granted in its pid 1, once mounted) | `/proc`: read; `/dev/shm`: as the call's tmp |
//! | system folders (`/usr`, `/lib*`, `/bin`, `/sbin`, `/etc`) | read; with `commands` listed, the program folders of the system PATH only listed (their files read only where a listed program's is granted: see `rules::grant_system`) |
//! | `/proc/cpuinfo`, `meminfo`, `stat`, `loadavg`, `uptime`, `version`, `filesystems`, `sys/` | read (no `/proc/<pid>`) |
//! | `/dev/null`, `/dev/zero`, `/dev/full`, `/dev/random`, `/dev/urandom` | read, write (no ioctl) |
//! | each allowed program's file and its loader | execute (nothing else is executable) |
//! | `commands = ["*"]` | execute beneath the system folders instead |
//! | TCP | no bind; no connect, or with `[internet]` connect to the proxy's and forwarders' ports only (in a network namespace of the program's own: see [`crate::proxy::door`]) |
//! | scopes | no signals to, and no abstract Unix sockets of, anything outside the sandbox |
//!
//! Landlock's ABI is pinned to 6 with every feature a hard requirement: on an older kernel the
//! ruleset cannot be made and the call is refused, never weakened.
//!
//! What Landlock does not govern is closed around it: the call's own world ([`world`]: the file
//! system read-only outside the write grants, System V IPC of its own) where the kernel allows
//! it, no capabilities ([`capabilities`]), and the seccomp filter ([`seccomp`]), which refuses
//! what the world would otherwise have answered when there is none.
//!
//! Trusted with: everything the program may read, write, run and connect to: a bug here could let a
//! program read a secret, write outside its grants or run a program the file does not list. What it
//! trusts: the kernel to enforce what is prepared (Landlock, seccomp and the own world, checked
//! first by [`check_kernel`]); its caller's request, whose paths `refusal` checks are in their one
//! spelling; and the system folders (see [`crate::program_path`]).

pub mod appetite;
pub mod capabilities;
pub mod elf;
pub mod grants;
pub mod holes;
pub mod kernel;
pub mod mode;
pub mod mounts;
pub mod no_symlinks;
#[cfg(test)]
mod oracle;
pub mod parts;
mod program;
pub mod refusal;
mod request;
mod rules;
pub mod seccomp;
pub mod seccomp_policy;
mod serve_plan;
pub mod trusted;
pub mod walk;
pub mod world;
pub mod world_devices;
pub mod world_network;

use std::collections::HashSet;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags, ResolveFlags};

use landlock::{
    Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath, Ruleset,
    RulesetAttr, RulesetCreated, RulesetCreatedAttr, Scope,
};

use crate::program_path::{SYSTEM_EXEC, SYSTEM_READ};
use crate::proxy::NetworkDoor;
use crate::proxy::door::Door;
use crate::sandbox_file::{Commands, Tool};
use grants::ExecFiles;
use holes::Hole;
use kernel::KernelSupport;
use mode::WorldMode;
use program::{resolve_program, start_folder};
pub use refusal::{REQUIRED_LANDLOCK_ABI, check_kernel, over_records, over_tmp_base};
use refusal::{refuse_unless_normal, refuse_write_grants_over};
use request::PINNED_ABI;
pub use request::{Refusal, SandboxRequest, StartFolder};
use rules::{
    DEVICES, Kind, PROC_READ, add, add_around, add_around_keeping, borrowed, grant_system, program_home,
    read_rights, write_rights,
};
use serve_plan::{network_door, notify_plan};
use world::World;

/// What was enforced, for the report.
#[derive(Debug, Clone)]
pub struct Enforcement {
    pub landlock_abi: u32,
    /// Grant roots that do not exist on this machine and so grant nothing.
    pub missing_grants: Vec<PathBuf>,
    /// How many files may be executed (programs and their loaders); `None` for any program.
    pub executables: Option<usize>,
    /// The call's own world, or Landlock only.
    pub mode: WorldMode,
    /// Why the own world was out of reach, in the Landlock-only mode.
    pub mode_reason: Option<String>,
    /// The program's `HOME`: the caller's, or the call's tmp folder when no grant reaches the
    /// caller's (`home_is_temporary`).
    pub home: PathBuf,
    pub home_is_temporary: bool,
    /// The program's `TMPDIR`: `/tmp` in the own world, else the call's tmp folder.
    pub tmp_dir: PathBuf,
    /// Where the program starts.
    pub start: StartFolder,
    /// The call's share of the person's processes and kernel counters.
    pub appetite: crate::sandbox_file::Appetite,
    /// What this call lacks of what a program could have bare (see [`mode::WorldMode::lacks`]).
    pub lacks: Vec<&'static str>,
}

/// A prepared sandbox: the path to execute, the ruleset and the filter.
pub struct Sandbox {
    pub program_path: PathBuf,
    /// The program's file, opened before the world is built, when it is executed by descriptor
    /// (lnk's own image, for the file tool: the world may not show the path it was started by).
    pub program_fd: Option<OwnedFd>,
    pub enforcement: Enforcement,
    ruleset: Option<RulesetCreated>,
    filter: Vec<crate::bpf::Instruction>,
    /// What the call's tmp grants: also the own world's `/dev/shm`, granted in the child.
    tmp_rights: BitFlags<AccessFs>,
    /// In the own-world mode: the namespaces and the read-only view.
    world: Option<World>,
    /// In the Landlock-only mode, the folder (an absolute path) the program starts in when it is
    /// not the caller's (the own world starts it in its world: see [`world::Start`]).
    move_to: Option<std::ffi::CString>,
    /// In the Landlock-only mode: the channel the filter's listener crosses to the helper, where
    /// the held metadata calls may act, and where held connects go (with `[internet]`).
    notify: Option<(crate::notify::Channel, crate::notify::Plan)>,
    /// With `[internet]`: the program's only way out, the call's proxy.
    door: Option<NetworkDoor>,
}

impl Sandbox {
    /// Checks the kernel, resolves the program, opens every grant and builds the ruleset and
    /// filter. Starts nothing.
    pub fn prepare(req: &SandboxRequest<'_>, kernel: &KernelSupport) -> Result<Sandbox, Refusal> {
        check_kernel(kernel)?;
        refuse_unless_normal(req)?;
        let (mode, mode_reason) = kernel.world.clone();
        // The file tool starts nothing and connects nowhere: it never gets a network, whatever
        // `[internet] tools` says.
        let door = match (&req.flags.internet, req.flags.tool) {
            (Some(net), Tool::Run) => Some(network_door(net, kernel)?),
            _ => None,
        };
        let own_world = mode.is_own_world();
        // lnk's private tmp base, where every call's tmp folder lives: as closed as the records.
        let base = req
            .private_tmp
            .parent()
            .map(Path::to_owned)
            .ok_or_else(|| Refusal::kernel("the call's tmp folder has no parent folder"))?;
        refuse_write_grants_over(req, &base)?;
        // Where file systems of devices are mounted: no write grant may hold one, and every grant
        // is cut around them (below).
        let device_mounts = mounts::MountTable::of_this_process().map_err(Refusal::kernel)?.device_mounts();
        refusal::refuse_device_grants(req, &device_mounts)?;

        let mut exec_files = ExecFiles::default();
        let (program_path, program_fd) = resolve_program(req, &mut exec_files)?;
        let found = rules::holes(req, std::slice::from_ref(&base))?;
        let holes = &found.holes;
        // Landlock cuts around the holes and the links kept on the way to them (their folders
        // may then only be listed, so no call can replace one). Test builds can leave Landlock's
        // holes out, to show the masks and pins alone keep them closed.
        let (cut, aliases): (Vec<PathBuf>, HashSet<(u64, u64)>) = match layer_off("landlock-holes") {
            true => Default::default(),
            false => (
                holes.iter().map(|h| h.path.clone()).chain(found.links.iter().cloned()).collect(),
                holes.iter().flat_map(Hole::ways).collect(),
            ),
        };

        let mut missing_grants = Vec::new();
        // TCP is Landlock's to govern only without a network namespace: in the own world the
        // namespace has loopback and the proxy's door and nothing else, and the program's own
        // servers must be reachable on any port.
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessFs::from_all(PINNED_ABI))
            .and_then(|r| if own_world { Ok(r) } else { r.handle_access(AccessNet::from_all(PINNED_ABI)) })
            .and_then(|r| r.scope(Scope::from_all(PINNED_ABI)))
            .and_then(|r| r.create())
            .map_err(|e| Refusal::kernel(format!("cannot create the Landlock ruleset: {e}")))?;

        // Any program may run under `["*"]`, so any may be read; otherwise the program folders'
        // files only where a listed program's is granted.
        let any_program = req.flags.commands == Commands::Any && req.flags.tool == Tool::Run;
        ruleset = grant_system(ruleset, SYSTEM_READ, read_rights(), !any_program, &cut, &aliases)?;
        // In the own world the program gets a /proc of its pid namespace, granted whole once it
        // is mounted (`enter_world`); without one, system-wide figures only.
        // As root, `/proc/sys/net` is left out: its root-only entries are the host's network
        // secrets (`tcp_fastopen_key`, IPv6 `stable_secret`), and uid 0 owns them.
        if !own_world {
            let as_root = rustix::process::geteuid().is_root();
            let net = [PathBuf::from("/proc/sys/net")];
            for path in PROC_READ {
                let Ok(Some(fd)) = grants::open_no_symlinks(Path::new(path), false) else { continue };
                ruleset = match (as_root, *path == "/proc/sys") {
                    (true, true) => {
                        let cut = (&net[..], &[][..]);
                        add_around(ruleset, Path::new(path), fd, cut, &HashSet::new(), read_rights())?
                    }
                    _ => add(ruleset, fd, read_rights(), Kind::Either)?,
                };
            }
        }
        for device in DEVICES {
            if let Ok(Some(fd)) = grants::open_no_symlinks(Path::new(device), false) {
                ruleset = add(
                    ruleset,
                    fd,
                    AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate,
                    Kind::File,
                )?;
            }
        }
        let executables = match req.flags.commands {
            Commands::Any if req.flags.tool == Tool::Run => {
                let rights = AccessFs::Execute | AccessFs::ReadFile;
                ruleset = grant_system(ruleset, SYSTEM_EXEC, rights, false, &cut, &aliases)?;
                None
            }
            _ => {
                let n = exec_files.files.len();
                for file in exec_files.files {
                    ruleset = add(ruleset, file.fd, AccessFs::Execute | AccessFs::ReadFile, Kind::File)?;
                }
                let helper_rights = AccessFs::Execute | AccessFs::ReadFile | AccessFs::ReadDir;
                for folder in exec_files.helper_folders {
                    ruleset = add(ruleset, folder, helper_rights, Kind::Folder)?;
                }
                Some(n)
            }
        };
        let mut write_roots: Vec<(PathBuf, OwnedFd)> = Vec::new();
        let mut read_roots: Vec<(PathBuf, OwnedFd)> = Vec::new();
        for (dirs, writable) in [(&req.flags.read, false), (&req.flags.write, true)] {
            for dir in dirs {
                match grants::open_no_symlinks(dir, true) {
                    Ok(Some(fd)) if writable => write_roots.push((dir.clone(), fd)),
                    Ok(Some(fd)) => read_roots.push((dir.clone(), fd)),
                    Ok(None) => missing_grants.push(dir.clone()),
                    Err(e) => return Err(Refusal::refused(e.to_string())),
                }
            }
        }
        match grants::open_no_symlinks(req.private_tmp, true) {
            Ok(Some(fd)) => write_roots.push((req.private_tmp.to_owned(), fd)),
            _ => {
                return Err(Refusal::kernel(
                    "the call's private tmp folder vanished before the sandbox was made",
                ));
            }
        }
        // What the call's tmp grants (beneath /tmp in the own world; and its /dev/shm there). No
        // sockets in the own world: grants beneath the harness's /tmp are shown again inside the
        // call's /tmp, and so beneath this rule too (their own mounts still make read grants
        // read-only), and there is no Unix socket to bind in the sandbox anyway.
        let mut tmp_rights = write_rights();
        // Where a connect reaches only the call's own sockets (the held connects: see
        // `crate::notify::unix_sockets` and `crate::notify::world_connects`), a socket bound
        // by the program is the call's. The Landlock-only mode's are bound by the helper, in the
        // call's tmp by the program's own right and beneath the write grants by the helper's.
        let world_sockets =
            own_world && req.flags.tool == Tool::Run && crate::notify::handles::copies_available();
        if !own_world || world_sockets {
            tmp_rights |= AccessFs::MakeSock;
        }
        let grant_rights = match world_sockets {
            true => write_rights() | AccessFs::MakeSock,
            false => write_rights(),
        };
        // Under `commands = ["*"]`, "any program" includes the ones the agent builds or installs
        // beneath its write grants (`./run.sh`, `gcc a.c && ./a.out`, `venv/bin/python`).
        if any_program {
            tmp_rights |= AccessFs::Execute;
        }
        // The call's share of the person's processes and kernel counters (see `appetite`).
        let appetite = req.flags.appetite;
        let as_root = rustix::process::geteuid().is_root();
        let per_namespace_pid_max = own_world && as_root && appetite::pid_max_per_namespace();
        if own_world && as_root && !per_namespace_pid_max {
            return Err(Refusal::kernel(
                "cannot bound the call's processes ([tool.run] processes): RLIMIT_NPROC never limits root, and this kernel (before Linux 6.14) keeps pid_max for the whole host, not for the call's pid namespace; run lnk as an ordinary user, or on Linux 6.14 or later",
            ));
        }
        let mut world = match mode {
            WorldMode::OwnWorld { user_namespace } => {
                let (tmp_path, tmp_fd) = write_roots
                    .iter()
                    .find(|(path, _)| path == req.private_tmp)
                    .ok_or_else(|| Refusal::kernel("the call's tmp folder is not among the write roots"))?;
                let plan = world::Plan {
                    user_namespace,
                    write_roots: &borrowed(&write_roots),
                    read_roots: &borrowed(&read_roots),
                    tmp: (tmp_path, tmp_fd),
                    any_program,
                    holes,
                    links: &found.links,
                    kept: &found.kept,
                    masks: !layer_off("masks"),
                    limits: appetite::WorldLimits::new(
                        &appetite,
                        per_namespace_pid_max,
                        user_namespace,
                        appetite::world_memfds(),
                    ),
                };
                Some(World::new(&plan).map_err(Refusal::kernel)?)
            }
            WorldMode::LandlockOnly => None,
        };
        // The program's TMPDIR: the call's own /tmp, or its tmp folder where there is none.
        let tmp_dir = match &world {
            Some(w) if w.own_tmp() => PathBuf::from("/tmp"),
            _ => req.private_tmp.to_owned(),
        };
        let (home, home_is_temporary) = program_home(req, &tmp_dir);
        let (start, move_to) = start_folder(holes, world.as_mut(), &home, &tmp_dir)?;
        // Without the own world, the program's metadata calls are held for the helper, which
        // performs them beneath the write grants (see `crate::notify`). The file tool's own code
        // needs none held.
        let mut notify = match (&world, req.flags.tool) {
            (None, Tool::Run) => Some(notify_plan(req, &write_roots, holes, &found.kept, door.as_ref())?),
            // The own world holds every connect, to serve the program's Unix sockets (see
            // `crate::notify::world_connects`), where the kernel gives copies of its descriptors.
            (Some(_), Tool::Run) if world_sockets => Some(serve_plan::world_notify_plan(req)?),
            _ => None,
        };
        // Every grant is cut around the holes in it, in both modes: Landlock's rules belong to
        // the folders, whatever mount a path reaches them through (an inherited working folder,
        // a descriptor), so the masks of the own world are a second layer, not the only one.
        // A folder kept in place (see `holes`) lies in a write grant, where its name could move:
        // a read grant lets no name move anyway.
        let kept = match layer_off("landlock-holes") {
            true => &[][..],
            false => &found.kept[..],
        };
        // Under `["*"]` any program means any the call may read: the person's own toolchains
        // beneath a read grant (`~/.cargo/bin`, pyenv, nvm, `~/.local/bin`) too.
        let read_grant_rights = match any_program {
            true => read_rights() | AccessFs::Execute,
            false => read_rights(),
        };
        // A grant that holds the host's `/dev` (`/`) is cut around it as around a hole (but not
        // masked in the own world, which needs its `/dev/null`): the person's terminals, disks and
        // console lie there (see `crate::protected::device_grant`). The devices a call gets are granted
        // above, one by one; the own world's terminals and `/dev/shm` in its pid 1.
        // Wherever else a file system of devices is mounted (the host's `/dev` bound in a chroot)
        // is cut too; a device node made on an ordinary file system is not seen here (the own
        // world mounts everything without devices: see `world`).
        let cut: Vec<PathBuf> = cut.into_iter().chain([PathBuf::from("/dev")]).chain(device_mounts).collect();
        for (path, fd) in read_roots {
            ruleset = add_around(ruleset, &path, fd, (&cut, &[]), &aliases, read_grant_rights)?;
        }
        // Where the held calls' server may bind the program's Unix sockets (the Landlock-only
        // mode): exactly what the program may write, cut around the same holes.
        let mut socket_folders = (notify.is_some() && !own_world).then(Vec::new);
        for (path, fd) in write_roots {
            let rights = match (path == req.private_tmp, any_program) {
                (true, _) => tmp_rights,
                (false, true) => grant_rights | AccessFs::Execute,
                (false, false) => grant_rights,
            };
            let whole = socket_folders.as_mut();
            ruleset = add_around_keeping(ruleset, &path, fd, (&cut, kept), &aliases, rights, whole)?;
        }
        if let (Some((_, plan)), Some(folders)) = (notify.as_mut(), socket_folders) {
            plan.grants.socket_folders = folders;
        }

        // Without the own world, Landlock allows a connect to the asked ports only (the proxy's
        // and each tcp endpoint's), and no bind: a second layer under the held connects (see
        // `crate::proxy::host_door`), which never let a connect of the program's own go on.
        if !own_world {
            for port in door.as_ref().map(|d| d.ports()).unwrap_or_default() {
                ruleset = ruleset
                    .add_rule(NetPort::new(port, AccessNet::ConnectTcp))
                    .map_err(|e| Refusal::kernel(format!("cannot add a Landlock network rule: {e}")))?;
            }
        }

        let policy = seccomp::SeccompPolicy {
            // TCP and UDP in a network namespace of the call's own (loopback, and the door);
            // without one, TCP sockets whose connects the helper makes, with [internet] only.
            network: match (&door, own_world && req.flags.tool == Tool::Run, &notify) {
                (_, true, Some(_)) => seccomp::Network::NamespaceHeld,
                (_, true, None) => seccomp::Network::Namespace,
                // Test builds can leave the hold out, to show Landlock's port rule under it.
                (Some(NetworkDoor::Held(_)), false, _) if layer_off("held-connects") => {
                    seccomp::Network::Namespace
                }
                // The host's network, each socket call held: the call's own loopback (its
                // servers), and the proxy with `[internet]`.
                (_, false, Some(_)) => seccomp::Network::Held,
                _ => seccomp::Network::None,
            },
            // Outside the write grants a read-only mount answers these with EROFS; without one
            // they are refused, except for lnk's own file tool (see `seccomp`).
            metadata: match (world.is_some() || req.flags.tool == Tool::File, &notify) {
                (true, _) => seccomp::Metadata::Allowed,
                (false, Some(_)) => seccomp::Metadata::Notified,
                (false, None) => seccomp::Metadata::Refused,
            },
            ipc: world.is_some(),
            // lnk's own file tool resolves every path with openat2 (and never sets a mode).
            openat2: req.flags.tool == Tool::File,
            // A pid namespace ends everything in it, whatever session or group.
            sessions: match (&world, &notify) {
                (Some(_), _) => seccomp::Sessions::Allowed,
                (None, Some(_)) => seccomp::Sessions::Held,
                (None, None) => seccomp::Sessions::Refused,
            },
            // The kernel counts in the call's own namespaces; without a user namespace nothing
            // of the call's own counts its inotify use, and without the own world the helper
            // counts (see `appetite`).
            counting: match (mode, &notify) {
                (WorldMode::OwnWorld { user_namespace: true }, _) => seccomp::Counting::Kernel,
                (WorldMode::OwnWorld { user_namespace: false }, _) => seccomp::Counting::InotifyRefused,
                (WorldMode::LandlockOnly, Some(_)) => seccomp::Counting::Held,
                (WorldMode::LandlockOnly, None) => seccomp::Counting::InotifyRefused,
            },
            // Every process of the own world's pid namespace is the call's; without one, the
            // helper checks a pid is the caller's own.
            pids: match (&world, &notify) {
                (Some(_), _) => seccomp::Pids::Namespace,
                (None, Some(_)) => seccomp::Pids::Held,
                (None, None) => seccomp::Pids::Caller,
            },
            // The own world's pid namespace makes every memfd non-executable where the kernel
            // keeps `vm.memfd_noexec` (see `world`); without one the helper makes them sealed.
            memfd: match (&world, &notify) {
                (Some(w), _) if w.memfds() != appetite::WorldMemfds::SealedOnly => seccomp::Memfd::Namespace,
                (Some(_), _) => seccomp::Memfd::Sealed,
                (None, Some(_)) => seccomp::Memfd::Held,
                (None, None) => seccomp::Memfd::Sealed,
            },
        };
        let filter = seccomp::build(policy);
        let landlock_abi = *kernel.landlock.as_ref().unwrap_or(&0);
        Ok(Sandbox {
            program_path,
            program_fd,
            enforcement: Enforcement {
                landlock_abi,
                missing_grants,
                executables,
                mode,
                mode_reason,
                home,
                home_is_temporary,
                tmp_dir,
                start,
                appetite,
                lacks: mode.lacks(
                    world.as_ref().is_some_and(|w| w.memfds() == appetite::WorldMemfds::SealedOnly),
                    world_sockets,
                ),
            },
            ruleset: Some(ruleset),
            filter,
            tmp_rights,
            world,
            move_to,
            notify,
            door,
        })
    }

    /// Whether the program gets `[internet]` through the call's proxy.
    pub fn has_door(&self) -> bool {
        self.door.is_some()
    }

    /// The network door, for the helper to receive the proxy's sockets from after the fork.
    pub fn take_door(&mut self) -> Option<NetworkDoor> {
        self.door.take()
    }

    /// The flags of the `clone` that starts the program's first process in the own world
    /// (`None`: a plain fork, the Landlock-only mode).
    pub fn clone_flags(&self) -> Option<libc::c_int> {
        self.world.as_ref().and(self.enforcement.mode.clone_flags())
    }

    /// Whether the own world is in a user namespace of its own (`None`: the Landlock-only mode).
    pub fn world_user_namespace(&self) -> Option<bool> {
        match (&self.world, self.enforcement.mode) {
            (Some(_), WorldMode::OwnWorld { user_namespace }) => Some(user_namespace),
            _ => None,
        }
    }

    /// In the world's pid 1, before [`Sandbox::enter_world`]: its end of the pair the keeper
    /// sends the world's network namespace on (see [`world_network`]).
    pub fn network_from_keeper(&mut self, from_keeper: OwnedFd) {
        if let Some(world) = &mut self.world {
            world.network_from_keeper(from_keeper);
        }
    }

    /// In the program's first process: makes the call's own world (read-only view, `/tmp`,
    /// `/dev/shm`, `/proc`, loopback, the network door) and grants its `/proc` (to read) and
    /// `/dev/shm` (as the call's tmp) to Landlock.
    /// Nothing to do in the Landlock-only mode.
    pub fn enter_world(&mut self) -> Result<(), &'static str> {
        let Some(world) = &mut self.world else { return Ok(()) };
        let entered = world.enter()?;
        let ruleset = self.ruleset.take().ok_or("the sandbox was entered twice")?;
        let mut ruleset = ruleset
            .add_rule(PathBeneath::new(entered.proc, read_rights()))
            .map_err(|_| "cannot grant the call's /proc to Landlock")?;
        if let Some(shm) = entered.shm {
            ruleset = ruleset
                .add_rule(PathBeneath::new(shm, self.tmp_rights))
                .map_err(|_| "cannot grant the call's /dev/shm to Landlock")?;
        }
        // The call's own terminals: its pairs read, written and `ioctl`ed (a terminal's
        // settings, its size), and `/dev/ptmx` to make them.
        if let Some(terminals) = entered.terminals {
            let pair = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::IoctlDev;
            ruleset = ruleset
                .add_rule(PathBeneath::new(terminals.pts, pair | AccessFs::ReadDir))
                .map_err(|_| "cannot grant the call's /dev/pts to Landlock")?;
            if let Some(ptmx) = terminals.ptmx {
                ruleset = ruleset
                    .add_rule(PathBeneath::new(ptmx, pair))
                    .map_err(|_| "cannot grant the call's /dev/ptmx to Landlock")?;
            }
        }
        let door = match &self.door {
            Some(NetworkDoor::Namespace(door)) => Some(door),
            _ => None,
        };
        if let Some(hosts) = door.map(Door::open).transpose()?.flatten() {
            ruleset = ruleset
                .add_rule(PathBeneath::new(hosts, AccessFs::ReadFile))
                .map_err(|_| "cannot grant the call's /etc/hosts to Landlock")?;
        }
        self.ruleset = Some(ruleset);
        Ok(())
    }

    /// In the Landlock-only mode, enters the folder the program starts in when it is not the
    /// caller's (found by its path, never through a link). The own world does this in
    /// [`World::enter`].
    pub fn enter_start_folder(&self) -> Result<(), &'static str> {
        let Some(path) = &self.move_to else { return Ok(()) };
        let root = rustix::fs::open(c"/", OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
            .map_err(|_| "cannot open /")?;
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let how = ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
        let folder = rustix::fs::openat2(&root, path.as_c_str(), flags, Mode::empty(), how)
            .map_err(|_| "cannot open the program's starting folder")?;
        rustix::process::fchdir(folder).map_err(|_| "cannot enter the program's starting folder")
    }

    /// Confines the calling process right before `execve`: no capabilities, Landlock (with
    /// `no_new_privs`), then the seccomp filter.
    pub fn confine(&mut self) -> Result<(), &'static str> {
        appetite::set_program_limits(&self.enforcement.appetite, self.enforcement.mode.is_own_world())?;
        capabilities::drop_all()?;
        let ruleset = self.ruleset.take().ok_or("the sandbox was entered twice")?;
        match ruleset.restrict_self() {
            Ok(status) if status.ruleset == landlock::RulesetStatus::FullyEnforced && status.no_new_privs => {
            }
            _ => return Err("landlock_restrict_self failed"),
        }
        match &self.notify {
            Some((channel, _)) => {
                // In the own world, its network namespace's socket diagnostics, for the held
                // connects (see `crate::notify::world_connects`): made before the filter, which
                // refuses netlink sockets.
                let world_diag = match self.enforcement.mode.is_own_world() {
                    true => Some(crate::sock_diag::diagnostics_socket().map_err(
                        |_| "cannot make a socket diagnostics socket in the call's network namespace",
                    )?),
                    false => None,
                };
                let listener = crate::sys::install_seccomp_filter_with_listener(&self.filter)
                    .map_err(|_| "installing the seccomp filter failed")?;
                // The program never holds its own filter's listener, nor that socket.
                channel.send_listener(&listener, world_diag.as_ref())?;
                drop(listener);
                drop(world_diag);
            }
            None => seccomp::install(&self.filter).map_err(|_| "installing the seccomp filter failed")?,
        }
        Ok(())
    }

    /// In the helper, right after the program's process is started: the side that answers its
    /// held calls, if any are held.
    pub fn take_notifier(&mut self) -> Option<crate::notify::Notifier> {
        let (channel, plan) = self.notify.take()?;
        Some(crate::notify::Notifier::new(plan, channel.into_helper_end()?))
    }
}

/// Whether a test build was asked to leave out one layer of the sandbox (`LNK_TEST_WITHOUT`),
/// so a test can show the other keeps a secret closed alone. Never in a release build.
fn layer_off(layer: &str) -> bool {
    #[cfg(feature = "fault-points")]
    if std::env::var("LNK_TEST_WITHOUT").is_ok_and(|v| v.split(',').any(|l| l == layer)) {
        return true;
    }
    let _ = layer;
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flags::SandboxFlags;

    fn kernel(landlock: Result<u32, String>, seccomp: Result<(), String>) -> KernelSupport {
        let none = || Err("not probed".to_owned());
        KernelSupport {
            landlock,
            seccomp,
            seccomp_notify: none(),
            user_namespaces: none(),
            pidfd: none(),
            openat2: none(),
            world: (WorldMode::LandlockOnly, None),
            world_kept: false,
        }
    }

    #[test]
    fn a_path_in_another_spelling_is_refused_not_compared() {
        let flags = SandboxFlags {
            tool: Tool::Run,
            commands: Commands::Listed(vec!["sh".into()]),
            read: vec![PathBuf::from("/home/ann")],
            write: Vec::new(),
            deny: Vec::new(),
            internet: None,
            timeout_secs: 10,
            output_chars: 100,
            appetite: crate::sandbox_file::Appetite::DEFAULT,
        };
        let req = |home: &'static str| SandboxRequest {
            flags: &flags,
            program: "sh",
            private_tmp: Path::new("/tmp/lnk-1/call-1"),
            protected: &[],
            home: Path::new(home),
            sandbox_file: None,
        };
        assert!(refuse_unless_normal(&req("/home/ann")).is_ok());
        for odd in ["/home/ann/", "/home//ann", "/home/ann/.", "/home/x/../ann"] {
            let r = refuse_unless_normal(&req(odd)).unwrap_err();
            assert!(r.message.contains(odd), "{}", r.message);
        }
    }

    #[test]
    fn an_old_landlock_abi_is_refused_by_name() {
        let r = check_kernel(&kernel(Ok(5), Ok(()))).unwrap_err();
        assert_eq!(r.exit_code, 125);
        assert!(r.message.contains("Landlock ABI is 5; lnk needs ABI 6"), "{}", r.message);
        assert!(check_kernel(&kernel(Ok(6), Ok(()))).is_ok());
        assert!(check_kernel(&kernel(Ok(7), Err("x".into()))).unwrap_err().message.contains("seccomp"));
    }
}
