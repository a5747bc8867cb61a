//! Performing a held metadata call for the program: on the file it names, beneath a write
//! grant, or not at all.
//!
//! The steps, each on descriptors the helper holds:
//! 1. the file: the program's own descriptor, or its path resolved (`openat2`, no magic links)
//!    from the program's working folder or descriptor, each an `O_PATH` descriptor of lnk's own
//!    that the receiver opened from `/proc/<tid>` (see [`super::handles`]); from here the file
//!    is that descriptor, never a path;
//! 2. the proof: the descriptor's path (as the kernel names it) lies beneath a write grant and
//!    in no hole, and walking that path from the grant's own descriptor, with no link, lands on
//!    the very same file (device and inode);
//! 3. the call, on that descriptor.
//!
//! Steps 1 and 3 run with the program's rights: the server holds no capability (see
//! [`super::server`]), so the kernel checks search permission, ownership
//! (`chmod`, explicit times), write permission (times set to now, `user.*` attributes) and
//! `chown`'s limits exactly as it would for the program. Set-user-id and set-group-id bits are
//! refused (as the filter already does). A folder on the way to a hole keeps its metadata: an
//! earlier call could otherwise make it unsearchable and fail every later call.
//!
//! Trusted with: that a held metadata call changes only a file beneath a write grant and in no
//! hole: a bug here could let the program `chmod` `~/.ssh`, or any other file its user owns. What
//! it trusts: the kernel's name for a descriptor (`/proc/self/fd`), proved by walking it again from
//! the grant's own descriptor; the grants and holes the sandbox found; and the kernel's permission
//! checks, made with the program's rights. Of the program's, only the call as [`super::request`]
//! decoded it and [`super::memory`] read it.

use std::os::fd::{AsRawFd as _, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags, Timespec, Timestamps};
use rustix::io::Errno;

use super::Refusal;
use super::handles::{CallHandles, What};
use super::memory::{Memory, XATTR_NAME_MAX, XATTR_SIZE_MAX};
use super::request::{AT_FDCWD, Op, Request, Target, Times};

/// Where the held calls may act.
pub struct Grants {
    /// The write grants and the call's tmp folder, each with the folder the helper opened.
    pub write_roots: Vec<(PathBuf, OwnedFd)>,
    /// The holes in the grants (see [`crate::sandbox::holes`]).
    pub holes: Vec<PathBuf>,
    /// The folders kept in place inside the write grants (a `..` on the way to a hole steps out
    /// of each: see [`crate::sandbox::holes::Holes::kept`]): their metadata, and that of the
    /// folders on the way to them, stays as it is.
    pub kept: Vec<PathBuf>,
    /// What the program may read: its grants and the system's folders (an inotify watch is
    /// made only there, or in the call's tmp folder: see [`super::inotify`]).
    pub readable: Vec<PathBuf>,
    /// The call's tmp folder, in lnk's private tmp base (a hole but for the call's own).
    pub tmp: PathBuf,
    /// The call's loopback, where held connects go and the program's servers listen (see
    /// [`super::loopback`]); none where the program may make no socket.
    pub connects: Option<std::sync::Arc<crate::proxy::loopback::Loopback>>,
    /// The call's own `/dev/shm` (see [`super::shm`]).
    pub shm: super::shm::ShmFolder,
    /// The Unix sockets the helper bound for the program (see [`super::unix_records`]).
    pub unix: super::unix_records::UnixSockets,
    /// The folders the program may write in, each granted whole (its write grants and tmp
    /// folder, cut around their holes as its Landlock rules are): where the server may make a
    /// socket file, and nowhere else.
    pub socket_folders: Vec<OwnedFd>,
    /// In the own world: a socket diagnostics socket of its network namespace, which the
    /// program's process made (see [`super::world_connects`]); `None` in the Landlock-only mode.
    pub world_diag: Option<OwnedFd>,
    /// In the own world: the same of the helper's (the host's) network namespace, made by the
    /// server before it confines itself, to tell a socket file no host socket is bound to.
    pub host_diag: Option<OwnedFd>,
}

/// Performs `request` for the held call whose handles are `handles` and memory `memory`. The
/// answer is the call's result, as the program gets it. A refusal outside the write grants sets
/// `refused` to what the report names.
pub fn perform(
    grants: &Grants,
    handles: &CallHandles<'_>,
    memory: &Memory,
    request: &Request,
    refused: &mut Option<Refusal>,
) -> Result<(), Errno> {
    let follow = match request.target {
        Target::Fd(_) => true,
        Target::Path { follow, .. } => follow,
    };
    let file = open_target(handles, memory, request.target)?;
    let stat = rustix::fs::fstat(&file)?;
    let kind = FileType::from_raw_mode(stat.st_mode);
    if let Err(denial) = grants.prove(&file, (stat.st_dev, stat.st_ino), kind) {
        *refused = denial;
        return Err(Errno::PERM);
    }
    let link = kind == FileType::Symlink;
    match request.op {
        Op::Chmod { mode } => {
            if mode & 0o6000 != 0 {
                return Err(Errno::PERM);
            }
            if link {
                // As the kernel answers `fchmodat2(…, AT_SYMLINK_NOFOLLOW)` on a link.
                return Err(Errno::OPNOTSUPP);
            }
            rustix::fs::chmod(proc_self(&file).as_str(), Mode::from_raw_mode(mode & 0o7777))
        }
        Op::Chown { uid, gid } => {
            // `-1` leaves it as it is; any other number is the kernel's to check.
            let id = |v: u32| (v != u32::MAX).then_some(v);
            let (uid, gid) =
                (id(uid).map(rustix::process::Uid::from_raw), id(gid).map(rustix::process::Gid::from_raw));
            rustix::fs::chownat(&file, "", uid, gid, AtFlags::EMPTY_PATH | AtFlags::SYMLINK_NOFOLLOW)
        }
        Op::Times(times) => {
            // Now, or the times given; on the file itself (a link too, when the call does not
            // follow it). Both times `UTIME_NOW` is what a null pointer means to the kernel.
            let now = Timespec { tv_sec: 0, tv_nsec: rustix::fs::UTIME_NOW as _ };
            let times =
                read_times(memory, times)?.unwrap_or(Timestamps { last_access: now, last_modification: now });
            rustix::fs::utimensat(&file, "", &times, AtFlags::EMPTY_PATH | AtFlags::SYMLINK_NOFOLLOW)
        }
        Op::SetXattr { name, value, size, flags } => {
            if link && !follow {
                // No `user.*` attribute on a link; the others need capabilities.
                return Err(Errno::PERM);
            }
            let name = read_xattr_name(memory, name)?;
            let size = usize::try_from(size).map_err(|_| Errno::TOOBIG)?;
            if size > XATTR_SIZE_MAX {
                return Err(Errno::TOOBIG);
            }
            let mut bytes = vec![0u8; size];
            if size > 0 {
                memory.read(value, &mut bytes)?;
            }
            let flags = rustix::fs::XattrFlags::from_bits(flags).ok_or(Errno::INVAL)?;
            rustix::fs::setxattr(proc_self(&file).as_str(), name.as_c_str(), &bytes, flags)
        }
        Op::RemoveXattr { name } => {
            if link && !follow {
                return Err(Errno::PERM);
            }
            let name = read_xattr_name(memory, name)?;
            rustix::fs::removexattr(proc_self(&file).as_str(), name.as_c_str())
        }
    }
}

/// `/proc/self/fd/N` for one of lnk's own descriptors: a path that leads to exactly that file.
fn proc_self(file: &OwnedFd) -> String {
    format!("/proc/self/fd/{}", file.as_raw_fd())
}

/// Opens what the call names as an `O_PATH` descriptor of lnk's own.
pub(super) fn open_target(
    handles: &CallHandles<'_>,
    memory: &Memory,
    target: Target,
) -> Result<OwnedFd, Errno> {
    match target {
        Target::Fd(fd) => handles.open(What::Fd(fd)),
        Target::Path { dirfd, path, follow, empty_ok } => {
            let path = memory.read_path(path)?;
            open_path_from(handles, dirfd, &path, follow, empty_ok)
        }
    }
}

/// Opens `path` (read once from the program) from its working folder as an `O_PATH` descriptor
/// of lnk's own, as the kernel would reach it for the program: following links (with
/// `follow`), never a magic link of lnk's own.
pub(super) fn open_path(handles: &CallHandles<'_>, path: &[u8], follow: bool) -> Result<OwnedFd, Errno> {
    open_path_from(handles, AT_FDCWD, path, follow, false)
}

/// [`open_path`] in the program's own world: resolved in the world's tree alone, never through
/// the helper's own view of the host, where holes have no mask and the host's `/tmp` shows
/// (found in review). A relative path (and the rest after the program's own `/proc/self/fd/N`)
/// is first tried beneath its folder (`RESOLVE_BENEATH`: no `..` above it, no absolute link);
/// one that leaves it is the folder's path in the world (the kernel's name for it there), then
/// the rest, from the thread's `/proc/<tid>/root` (`RESOLVE_IN_ROOT`: a link's absolute target,
/// and `..`, never leave it), the folder checked to be the very one.
pub(super) fn open_path_in_world(handles: &CallHandles<'_>, path: &[u8]) -> Result<OwnedFd, Errno> {
    if path.is_empty() {
        return Err(Errno::NOENT);
    }
    if let Some((fd, rest)) = own_descriptor_path(path) {
        // As the kernel: no such descriptor, no such file.
        let fd = handles.open(What::Fd(fd)).map_err(|e| if e == Errno::BADF { Errno::NOENT } else { e })?;
        return if rest.is_empty() { Ok(fd) } else { from_folder_in_world(handles, &fd, rest) };
    }
    if path.starts_with(b"/") {
        return in_root(&handles.open(What::Root)?, path);
    }
    from_folder_in_world(handles, &handles.open(What::Cwd)?, path)
}

/// `rest` (relative) from the world's folder `folder` (see [`open_path_in_world`]).
fn from_folder_in_world(handles: &CallHandles<'_>, folder: &OwnedFd, rest: &[u8]) -> Result<OwnedFd, Errno> {
    use std::os::unix::ffi::OsStrExt as _;
    let how = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
    let flags = OFlags::PATH | OFlags::CLOEXEC;
    match retried(|| {
        rustix::fs::openat2(folder, std::ffi::OsStr::from_bytes(rest), flags, Mode::empty(), how)
    }) {
        Err(Errno::XDEV) => {}
        beneath => return beneath,
    }
    let root = handles.open(What::Root)?;
    let named = rustix::fs::readlink(proc_self(folder).as_str(), Vec::new())?;
    let named = named.as_bytes();
    if !named.starts_with(b"/") || named.ends_with(b" (deleted)") {
        return Err(Errno::NOENT);
    }
    let same = |a: &OwnedFd, b: &OwnedFd| {
        let (a, b) = (rustix::fs::fstat(a), rustix::fs::fstat(b));
        matches!((a, b), (Ok(a), Ok(b)) if (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino))
    };
    if !same(&in_root(&root, named)?, folder) {
        // Moved while the call was held: its name no longer leads to it.
        return Err(Errno::NOENT);
    }
    in_root(&root, &[named, b"/", rest].concat())
}

/// `open` run again while the kernel answers `EAGAIN` (a rename or a mount elsewhere during a
/// walk that `RESOLVE_IN_ROOT` or `RESOLVE_BENEATH` guards), at most 100 times, then `EAGAIN`.
fn retried(open: impl Fn() -> Result<OwnedFd, Errno>) -> Result<OwnedFd, Errno> {
    for _ in 0..100 {
        match open() {
            Err(Errno::AGAIN) => continue,
            other => return other,
        }
    }
    Err(Errno::AGAIN)
}

/// Opens `path` beneath `root` as if `root` were `/` (`RESOLVE_IN_ROOT`), following links but
/// never a magic link, as an `O_PATH` descriptor.
fn in_root(root: &OwnedFd, path: &[u8]) -> Result<OwnedFd, Errno> {
    use std::os::unix::ffi::OsStrExt as _;
    let inside = &path[path.iter().take_while(|b| **b == b'/').count()..];
    let inside = if inside.is_empty() { &b"."[..] } else { inside };
    let how = ResolveFlags::IN_ROOT | ResolveFlags::NO_MAGICLINKS;
    let flags = OFlags::PATH | OFlags::CLOEXEC;
    retried(|| rustix::fs::openat2(root, std::ffi::OsStr::from_bytes(inside), flags, Mode::empty(), how))
}

/// [`open_path`] from the program's descriptor `dirfd` (or its working folder, `AT_FDCWD`); an
/// empty path is that folder itself with `empty_ok`.
fn open_path_from(
    handles: &CallHandles<'_>,
    dirfd: i32,
    path: &[u8],
    follow: bool,
    empty_ok: bool,
) -> Result<OwnedFd, Errno> {
    let path_flags = OFlags::PATH | OFlags::CLOEXEC;
    let program_fd = |fd: i32| handles.open(What::Fd(fd));
    let base = || match dirfd {
        AT_FDCWD => handles.open(What::Cwd),
        fd => program_fd(fd),
    };
    if path.is_empty() {
        return if empty_ok { base() } else { Err(Errno::NOENT) };
    }
    // `/proc/self/fd/N`: the program's own descriptor N, which the kernel would reach through
    // that magic link (glibc's `fchmodat(…, AT_SYMLINK_NOFOLLOW)` names a file so where the
    // kernel lacks `fchmodat2`). Never lnk's own.
    if follow && let Some((fd, rest)) = own_descriptor_path(path) {
        let fd = program_fd(fd)?;
        if rest.is_empty() {
            return Ok(fd);
        }
        return beneath(&fd, rest, path_flags);
    }
    let base = if path.starts_with(b"/") {
        rustix::fs::open("/", path_flags | OFlags::DIRECTORY, Mode::empty())?
    } else {
        base()?
    };
    let mut flags = path_flags;
    if !follow {
        flags |= OFlags::NOFOLLOW;
    }
    beneath(&base, path, flags)
}

/// Opens `path` from `base` as the kernel would for the program, following links, but never a
/// magic link (`/proc/self/…` would be lnk's own).
fn beneath(base: &OwnedFd, path: &[u8], flags: OFlags) -> Result<OwnedFd, Errno> {
    use std::os::unix::ffi::OsStrExt as _;
    let path = std::ffi::OsStr::from_bytes(path);
    loop {
        match rustix::fs::openat2(base, path, flags, Mode::empty(), ResolveFlags::NO_MAGICLINKS) {
            Err(Errno::AGAIN) => continue,
            other => return other,
        }
    }
}

/// `/proc/self/fd/N` or `/proc/thread-self/fd/N`, then nothing or `/` and the rest: `N`, and the
/// rest.
fn own_descriptor_path(path: &[u8]) -> Option<(i32, &[u8])> {
    let after =
        path.strip_prefix(b"/proc/self/fd/").or_else(|| path.strip_prefix(b"/proc/thread-self/fd/"))?;
    let digits = after.iter().take_while(|b| b.is_ascii_digit()).count();
    let (number, rest) = after.split_at(digits);
    // Nothing after the number, or a slash and the rest (further slashes are one, as the kernel
    // reads them; a rest that stayed absolute would be resolved from `/` instead).
    if !rest.is_empty() && rest[0] != b'/' {
        return None;
    }
    let rest = &rest[rest.iter().take_while(|b| **b == b'/').count()..];
    let fd = std::str::from_utf8(number).ok()?.parse::<i32>().ok()?;
    Some((fd, rest))
}

impl Grants {
    /// Succeeds when `file` (whose device and inode are `id`, of `kind`) lies beneath a write
    /// grant, in no hole and on the way to none, and is no device; otherwise fails (the caller
    /// answers `EPERM`) with the refusal to name, if the file has a name.
    fn prove(&self, file: &OwnedFd, id: (u64, u64), kind: FileType) -> Result<(), Option<Refusal>> {
        let named = rustix::fs::readlink(proc_self(file).as_str(), Vec::new()).map_err(|_| None)?;
        let named = named.as_bytes();
        // An unlinked file has no place to prove, nor has a pipe or a socket.
        if !named.starts_with(b"/") || named.ends_with(b" (deleted)") {
            return Err(None);
        }
        use std::os::unix::ffi::OsStrExt as _;
        let path = Path::new(std::ffi::OsStr::from_bytes(named));
        // A device node, wherever it lies (the host's `/dev` bound in a write grant, a chroot's
        // nodes): its mode and owner say who may open the device, a disk or a terminal, so
        // they are never the program's to change (found in review: as root, `chmod 666` of a
        // disk's node through a bound `/dev`).
        if matches!(kind, FileType::CharacterDevice | FileType::BlockDevice) {
            return Err(Some(Refusal::Device { path: path.to_owned() }));
        }
        if let Some(hole) = self.holes.iter().find(|h| path.starts_with(h) || h.starts_with(path)) {
            return Err(Some(Refusal::Metadata { path: path.to_owned(), hole: Some(hole.clone()) }));
        }
        // A folder kept in place, or one on the way to it: made unsearchable, it would make a
        // person's link fail, and every later call refuse to run.
        if self.kept.iter().any(|k| k.starts_with(path)) {
            return Err(Some(Refusal::KeptInPlace { path: path.to_owned() }));
        }
        let mut named_inside_a_grant = false;
        for (root, root_fd) in &self.write_roots {
            let Ok(rest) = path.strip_prefix(root) else { continue };
            named_inside_a_grant = true;
            let rest = if rest.as_os_str().is_empty() { Path::new(".") } else { rest };
            let how = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
            let flags = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            let Ok(found) = rustix::fs::openat2(root_fd, rest, flags, Mode::empty(), how) else { continue };
            if rustix::fs::fstat(&found).is_ok_and(|s| (s.st_dev, s.st_ino) == id) {
                return Ok(());
            }
        }
        // Its name lies in a write grant but no longer leads to it: the file was moved, or a
        // link swapped in on the way, while the call was held. Refused, and nothing is named:
        // the name is not where the file is, so a grant offered for it would be wrong advice.
        if named_inside_a_grant {
            return Err(None);
        }
        // Outside every write grant (the report names a secret there as one: see
        // `Notifier::refusals`).
        Err(Some(Refusal::Metadata { path: path.to_owned(), hole: None }))
    }
}

impl Grants {
    /// Succeeds, with its path, when a new file named `name` in the folder `folder` would lie
    /// beneath a write grant, in no hole and not beside one (a bound socket: see
    /// [`super::unix_sockets`]); otherwise fails with the refusal to name, if the folder has a
    /// name. The server's Landlock rules say the same (see [`Grants::socket_folders`]): this
    /// proof names the refusal, and keeps a folder the rules may not know by name.
    pub(super) fn prove_new_entry(&self, folder: &OwnedFd, name: &[u8]) -> Result<PathBuf, Option<Refusal>> {
        use std::os::unix::ffi::OsStrExt as _;
        let named = rustix::fs::readlink(proc_self(folder).as_str(), Vec::new()).map_err(|_| None)?;
        let named = named.as_bytes();
        if !named.starts_with(b"/") || named.ends_with(b" (deleted)") {
            return Err(None);
        }
        let folder_path = Path::new(std::ffi::OsStr::from_bytes(named));
        let path = folder_path.join(std::ffi::OsStr::from_bytes(name));
        if let Some(hole) = self.holes.iter().find(|h| path.starts_with(h) || h.starts_with(&path)) {
            return Err(Some(Refusal::UnixBind { path, hole: Some(hole.clone()) }));
        }
        let id = rustix::fs::fstat(folder).map(|s| (s.st_dev, s.st_ino)).map_err(|_| None)?;
        let mut named_inside_a_grant = false;
        for (root, root_fd) in &self.write_roots {
            let Ok(rest) = folder_path.strip_prefix(root) else { continue };
            named_inside_a_grant = true;
            // A folder of a write grant on the way to a hole: the program may add nothing new
            // there (its Landlock rules only list it), and nor may the helper for it.
            if let Some(hole) = self.holes.iter().find(|h| h.starts_with(folder_path)) {
                return Err(Some(Refusal::UnixBeside { path, hole: hole.clone() }));
            }
            let rest = if rest.as_os_str().is_empty() { Path::new(".") } else { rest };
            let how = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
            let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            let Ok(found) = rustix::fs::openat2(root_fd, rest, flags, Mode::empty(), how) else { continue };
            if rustix::fs::fstat(&found).is_ok_and(|s| (s.st_dev, s.st_ino) == id) {
                return Ok(path);
            }
        }
        // Named inside a grant but no longer there (moved, or a link swapped in): nothing named.
        if named_inside_a_grant {
            return Err(None);
        }
        Err(Some(Refusal::UnixBind { path, hole: None }))
    }
}

/// An attribute's name, as the kernel bounds it (`ERANGE` past 255 bytes).
fn read_xattr_name(memory: &Memory, address: u64) -> Result<std::ffi::CString, Errno> {
    if address == 0 {
        return Err(Errno::FAULT);
    }
    let name = memory.read_cstring(address, XATTR_NAME_MAX, Errno::RANGE)?;
    if name.is_empty() {
        return Err(Errno::RANGE);
    }
    std::ffi::CString::new(name).map_err(|_| Errno::INVAL)
}

/// The times to set (`None`: now), read once from the program's memory.
fn read_times(memory: &Memory, times: Times) -> Result<Option<Timestamps>, Errno> {
    let spec = |seconds: i64, nanoseconds: i64| Timespec { tv_sec: seconds, tv_nsec: nanoseconds as _ };
    let micro = |seconds: i64, micros: i64| {
        if !(0..1_000_000).contains(&micros) {
            return Err(Errno::INVAL);
        }
        Ok(spec(seconds, micros * 1000))
    };
    Ok(Some(match times {
        Times::Now => return Ok(None),
        Times::Timespec(address) => {
            let [a_s, a_ns, m_s, m_ns] = memory.read_words::<4>(address)?;
            Timestamps { last_access: spec(a_s, a_ns), last_modification: spec(m_s, m_ns) }
        }
        Times::Timeval(address) => {
            let [a_s, a_us, m_s, m_us] = memory.read_words::<4>(address)?;
            Timestamps { last_access: micro(a_s, a_us)?, last_modification: micro(m_s, m_us)? }
        }
        Times::Utimbuf(address) => {
            let [access, modification] = memory.read_words::<2>(address)?;
            Timestamps { last_access: spec(access, 0), last_modification: spec(modification, 0) }
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_programs_own_descriptor_paths_are_recognised() {
        assert_eq!(own_descriptor_path(b"/proc/self/fd/7"), Some((7, &b""[..])));
        assert_eq!(own_descriptor_path(b"/proc/thread-self/fd/12/a/b"), Some((12, &b"a/b"[..])));
        assert_eq!(own_descriptor_path(b"/proc/self/fd/3//x"), Some((3, &b"x"[..])));
        assert_eq!(own_descriptor_path(b"/proc/self/fd/3/"), Some((3, &b""[..])));
        for other in [
            &b"/proc/self/fd/"[..],
            b"/proc/self/fd/3x",
            b"/proc/1/fd/3",
            b"/proc/self/fdinfo/3",
            b"proc/self/fd/3",
        ] {
            assert_eq!(own_descriptor_path(other), None, "{}", String::from_utf8_lossy(other));
        }
        assert_eq!(own_descriptor_path(b"/proc/self/fd/99999999999"), None, "past an int");
    }
}
