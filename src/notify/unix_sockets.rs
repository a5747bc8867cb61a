//! Held Unix socket calls: in the Landlock-only mode the program makes Unix sockets of its own
//! (`socket(AF_UNIX)`, stream or seqpacket), binds and listens on them and connects to them, and
//! never reaches a socket it did not bind (the person's ssh agent, session bus or Docker's
//! socket, a harness's, a socket another process made in a write grant).
//!
//! Why held. This kernel's Landlock (before `LANDLOCK_ACCESS_FS_RESOLVE_UNIX`) does not govern a
//! `connect` to a socket file, and a filter cannot read the address; the Landlock-only mode
//! already holds every `connect`, `bind`, `listen` and `getsockname` (for TCP: see
//! [`super::sockets`]), so on a Unix socket the helper performs them, each on a copy of the
//! program's own socket (`pidfd_getfd`), never on the program's word of what it is:
//!
//! - `bind(path)`: the folder is opened as the program would reach it (no magic link) and
//!   proved to lie beneath a write grant (or the call's tmp folder), in no hole and on the way
//!   to none, as a held `chmod`'s file is ([`super::metadata`]); the socket is bound there by
//!   that folder's descriptor (the server's own working folder, then the last name), so a link
//!   swapped in meanwhile changes nothing, with the program's umask. The kernel checks the
//!   folder's permissions against the program's rights (the server has no capability), and the
//!   server's Landlock allows making a socket file only where the program's own rules let it
//!   write, cut around the same holes ([`super::Grants::socket_folders`]). The socket is then
//!   recorded: its inode and cookie, and its file, held open (`O_PATH`, so its inode is never
//!   another's) once the kernel's socket diagnostics said the socket is bound to that very file.
//! - `bind(abstract name)`: an abstract name lives in the network namespace, which the
//!   Landlock-only mode shares with the host: bound there, a program could take a name a host
//!   service binds later (an X display's, a bus's) and take its clients. So the name is the
//!   call's own: the socket is bound to a file in the call's tmp folder, and the name kept in
//!   the record; a connect to that name reaches that socket and nothing else.
//! - `listen`: on the copy, as the kernel answers it.
//! - `connect`: the target is resolved as the program would reach it (a path) or looked up (an
//!   abstract name); it must be a socket the helper recorded, still alive and bound to that
//!   same file (asked of the kernel by inode and cookie). Any other socket is refused
//!   (`EACCES`, named in the report); a name nobody of the call bound is `ECONNREFUSED`, as the
//!   kernel says of it. The helper then makes a socket of the same type, connects it through
//!   the recorded file's own descriptor (`/proc/self/fd/N`, so nothing is resolved twice), and
//!   puts it at the program's descriptor (`SECCOMP_IOCTL_NOTIF_ADDFD`), with the program's
//!   `O_NONBLOCK` and close-on-exec. A new socket, not the copy: its connect is made without
//!   blocking, so a listener whose queue is full (the program's own) never holds the helper;
//!   a blocking program's connect is tried again for a short while, then `EAGAIN`, as a
//!   connect past its send timeout.
//! - `getsockname` on a socket bound here: the address the program asked for.
//!
//! What the program sees differently from a bare run: the peer of a connection it made is the
//! helper (`SO_PEERCRED`), and so is a listener's, for a client of the host's (the kernel takes
//! it at `listen`, which the helper makes: letting the program's own go on could listen on an
//! unbound TCP socket put at that number meanwhile); `getpeername` shows the name the socket
//! was bound by (the last name, or the tmp file for an abstract one); a client that binds its
//! own name before connecting, an automatic name (`bind` with the family only, or a socket
//! passing credentials, whose option the filter refuses) and Unix datagram sockets are refused
//! (each would reach, or take, what the call does not own); a held call the program's thread
//! gave up (a signal) may still have been made (a bind then answers `EINVAL` when asked again);
//! and at most [`MAX_BOUND`] sockets are bound at once. Where the kernel gives no copy of a descriptor (container runtimes' default
//! seccomp profiles refuse `pidfd_getfd`), no Unix socket call is served, and where the server
//! thread cannot have a working folder of its own (`unshare(CLONE_FS)`, which those profiles
//! refuse too) none is bound (`EPERM`, named, in both cases).
//!
//! Trusted with: which Unix sockets the program reaches: a bug here could connect it to the
//! person's agent or bus, or bind a socket outside the write grants. The server's confinement
//! bounds what a bug could bind (Landlock), not what it could connect to: Landlock on this
//! kernel does not govern a Unix connect. What it trusts: the kernel's copy of the program's
//! descriptor, its socket diagnostics, `/proc/self/fd`, and [`super::metadata`]'s proof; of the
//! program's, only the call's numbers and an address read once.

use std::os::fd::{AsFd as _, AsRawFd as _, BorrowedFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::path::PathBuf;

use rustix::fs::{FileType, Mode, OFlags};
use rustix::io::Errno;
use rustix::net::{AddressFamily, SocketAddrUnix, SocketFlags, SocketType};

use super::handles::{CallHandles, What};
use super::memory::Memory;
use super::request::{Address, SocketCall};
use super::socket_names::SocketNames;
use super::unix_records::{Bound, State, UnixSockets};
use super::{Grants, Refusal, Reply};

/// The most sockets the program binds at once (a closed one is forgotten).
pub const MAX_BOUND: usize = 64;
/// `sizeof(struct sockaddr_un)`: the longest address the kernel takes for a Unix socket.
const SOCKADDR_UN_LEN: usize = 110;
/// The folder in the call's tmp folder where the sockets bound by an abstract name are.
const ABSTRACT_FOLDER: &str = "lnk-abstract-sockets";
/// How long a blocking program's connect to a listener whose queue is full is tried again.
const FULL_QUEUE_TRIES: u32 = 20;
const FULL_QUEUE_PAUSE: std::time::Duration = std::time::Duration::from_millis(5);

/// A Unix address, as the kernel reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnixAddress {
    /// A path (up to its first NUL).
    Path(Vec<u8>),
    /// An abstract name: every byte after the family, the leading NUL included.
    Abstract(Vec<u8>),
    /// The family alone: an automatic name for `bind`.
    Unnamed,
}

/// Performs a held socket call when its descriptor is a Unix socket: `None` for any other
/// (a TCP socket's, see [`super::sockets`]).
pub(super) fn perform(
    (listener, id, names): (BorrowedFd<'_>, u64, &SocketNames),
    grants: &Grants,
    handles: &CallHandles<'_>,
    memory: &Memory,
    call: SocketCall,
    refused: &mut Option<Refusal>,
) -> Option<Result<Reply, Errno>> {
    let fd = match call {
        SocketCall::Connect(Address { fd, .. }) | SocketCall::Bind(Address { fd, .. }) => fd,
        SocketCall::Listen { fd, .. } | SocketCall::Name { fd, .. } => fd,
    };
    // A TCP socket told by the receiver's copy at once.
    let taken = handles.taken(What::Copy(fd));
    if taken.is_some_and(|c| rustix::net::sockopt::socket_domain(c).ok() != Some(AddressFamily::UNIX)) {
        return None;
    }
    let socket = super::sockets::socket(handles, fd).ok()?;
    if socket.tcp.is_some() {
        return None;
    }
    if let SocketCall::Name { address, len, .. } = call {
        // Only a socket bound here has a name to tell; any other's the kernel tells.
        let asked = grants.unix.asked(socket.inode)?;
        return Some(super::sockets::write_name(handles, address, len, &asked).map(|()| Reply::Done));
    }
    // Every other call acts on a copy of the program's socket, and only if it is the socket
    // looked at (the program's threads may have put another at `fd` meanwhile).
    let copy = match handles.copy(fd) {
        Ok(copy) => copy,
        // No such descriptor, or (put there meanwhile) no socket; or the call is no longer held
        // (its thread interrupted, or gone).
        Err(e @ (Errno::BADF | Errno::NOENT | Errno::NOTSOCK)) => return Some(Err(e)),
        // The helper's own descriptors are all in use: as a call that may be made again.
        Err(Errno::MFILE | Errno::NFILE) => return Some(Err(Errno::AGAIN)),
        // No copy: a connected socket (a socket pair's end) is answered as before, as the
        // kernel answers it there (see `super::sockets`); any other is refused by name.
        Err(_) => {
            let state = crate::sock_diag::unix_socket(socket.inode, u64::MAX).ok().flatten().map(|s| s.state);
            if state == Some(crate::sock_diag::UNIX_CONNECTED) {
                return None;
            }
            *refused = Some(Refusal::UnixWithoutCopy);
            return Some(Err(Errno::PERM));
        }
    };
    if rustix::fs::fstat(&copy).map(|s| s.st_ino).ok() != Some(socket.inode)
        || rustix::net::sockopt::socket_domain(&copy).ok() != Some(AddressFamily::UNIX)
    {
        return Some(Err(Errno::BADF));
    }
    let unix = &grants.unix;
    Some(match call {
        SocketCall::Listen { backlog, .. } => rustix::net::listen(&copy, backlog).map(|()| Reply::Done),
        SocketCall::Bind(Address { address, len, .. }) => {
            // Noted before it is bound, in case it is: its name is the one the program asked for.
            names.note(socket.inode);
            read_address(memory, address, len)
                .and_then(|(asked, parsed)| bind(unix, grants, handles, &copy, (asked, parsed), refused))
                .map(|()| Reply::Done)
        }
        SocketCall::Connect(Address { address, len, .. }) => {
            let target = read_address(memory, address, len).and_then(|(_, parsed)| match parsed {
                UnixAddress::Unnamed => Err(Errno::INVAL),
                named => Ok(named),
            });
            let nonblocking = socket.flags.contains(OFlags::NONBLOCK);
            target
                .and_then(|target| {
                    connect(unix, (listener, id), handles, &copy, (target, !nonblocking), refused)
                })
                .and_then(|made| {
                    rustix::io::ioctl_fionbio(&made, nonblocking)?;
                    let cloexec = socket.flags.contains(OFlags::CLOEXEC);
                    crate::sys::seccomp_notif_put_fd(listener, id, made.as_fd(), fd, cloexec)?;
                    Ok(Reply::Done)
                })
        }
        SocketCall::Name { .. } => Err(Errno::INVAL),
    })
}

/// Reads a `struct sockaddr_un` of `len` bytes at `address` once: its bytes, and what they name.
fn read_address(memory: &Memory, address: u64, len: i32) -> Result<(Vec<u8>, UnixAddress), Errno> {
    let len = usize::try_from(len).map_err(|_| Errno::INVAL)?;
    if !(2..=SOCKADDR_UN_LEN).contains(&len) {
        return Err(Errno::INVAL);
    }
    let mut raw = vec![0u8; len];
    memory.read(address, &mut raw)?;
    let parsed = parse_address(&raw)?;
    Ok((raw, parsed))
}

/// What a Unix address of these bytes names, as the kernel reads it: `EINVAL` for another
/// family.
pub fn parse_address(raw: &[u8]) -> Result<UnixAddress, Errno> {
    if raw.len() < 2 {
        return Err(Errno::INVAL);
    }
    let family = u16::from_ne_bytes([raw[0], raw[1]]);
    if i32::from(family) != libc::AF_UNIX {
        return Err(Errno::INVAL);
    }
    Ok(match &raw[2..] {
        [] => UnixAddress::Unnamed,
        [0, ..] => UnixAddress::Abstract(raw[2..].to_vec()),
        path => UnixAddress::Path(path.split(|b| *b == 0).next().unwrap_or_default().to_vec()),
    })
}

/// Binds the program's socket (`copy`) where `asked` names, beneath a write grant or as the
/// call's own abstract name, and records it.
fn bind(
    unix: &UnixSockets,
    grants: &Grants,
    handles: &CallHandles<'_>,
    copy: &OwnedFd,
    (asked, parsed): (Vec<u8>, UnixAddress),
    refused: &mut Option<Refusal>,
) -> Result<(), Errno> {
    if !unix.own_folder {
        *refused = Some(Refusal::UnixWithoutCopy);
        return Err(Errno::PERM);
    }
    // A socket bound already: the kernel's answer.
    if has_a_name(copy) {
        return Err(Errno::INVAL);
    }
    let mut state = unix.state.borrow_mut();
    state.bound.retain(|b| alive(b).unwrap_or(true));
    if state.bound.len() >= MAX_BOUND {
        return Err(Errno::ADDRINUSE);
    }
    // What `getsockname` tells: a path up to its NUL, with one; an abstract name as given.
    let asked = match &parsed {
        UnixAddress::Path(path) => [&asked[..2], path, &[0]].concat(),
        _ => asked,
    };
    let (folder, name, abstract_name) = match parsed {
        // An automatic name would be taken from the host's abstract names.
        UnixAddress::Unnamed => return Err(Errno::PERM),
        UnixAddress::Abstract(name) => {
            if state.bound.iter().any(|b| b.abstract_name.as_ref() == Some(&name)) {
                return Err(Errno::ADDRINUSE);
            }
            let folder = abstract_folder(&unix.tmp, &mut state)?;
            // The next name no file has (the program may have made some there).
            let mut tries = 0;
            let file = loop {
                state.next += 1;
                let file = state.next.to_string();
                match rustix::fs::statat(&folder, &file, rustix::fs::AtFlags::SYMLINK_NOFOLLOW) {
                    Err(Errno::NOENT) => break file,
                    _ if tries < 16 => tries += 1,
                    _ => return Err(Errno::ADDRINUSE),
                }
            };
            (folder, file.into_bytes(), Some(name))
        }
        UnixAddress::Path(path) => {
            let (folder, name) = split_last(&path)?;
            let folder = super::metadata::open_path(handles, folder, true)?;
            if rustix::fs::fstat(&folder).map(|s| FileType::from_raw_mode(s.st_mode))? != FileType::Directory
            {
                return Err(Errno::NOTDIR);
            }
            if let Err(refusal) = grants.prove_new_entry(&folder, name) {
                *refused = refusal;
                return Err(Errno::ACCESS);
            }
            (folder, name.to_vec(), None)
        }
    };
    // Bound by the folder's descriptor: the server's working folder is its own (see
    // `super::server`), and the last name has no slash. A path's file has the mode the
    // program's umask makes (ssh-agent's `umask(0177)` before `bind`; the strictest where it
    // cannot be read), set for this bind only (the server's umask is its thread's own); an
    // abstract name's file is private to the helper whatever the program's umask (the kernel
    // gives an abstract name none).
    let mask = match abstract_name {
        Some(_) => 0o077,
        None => {
            handles.open(What::Status).ok().and_then(|status| super::shm::umask(&status)).unwrap_or(0o777)
        }
    };
    rustix::process::fchdir(&folder)?;
    let name = std::ffi::OsStr::from_bytes(&name);
    let address = SocketAddrUnix::new(name).map_err(|_| Errno::NAMETOOLONG)?;
    let before = rustix::process::umask(Mode::from_raw_mode(mask & 0o777));
    let bound = rustix::net::bind(copy, &address);
    rustix::process::umask(before);
    bound?;
    let inode = rustix::fs::fstat(copy)?.st_ino;
    let cookie = rustix::net::sockopt::socket_cookie(copy)?;
    // Recorded only if the file found by that name is the one the socket is bound to (the
    // program could have renamed another there meanwhile): else no connect reaches it.
    let file =
        rustix::fs::openat(&folder, name, OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty())?;
    let stat = rustix::fs::fstat(&file)?;
    // By the inode only: the file was found by the name just bound, in the folder bound in,
    // and the program mounts nothing; the device the kernel keeps is not `stat`'s on btrfs.
    let vfs = crate::sock_diag::unix_socket(inode, cookie)?.and_then(|s| s.vfs);
    let is_socket = FileType::from_raw_mode(stat.st_mode) == FileType::Socket;
    if let Some(vfs) = vfs.filter(|v| is_socket && v.1 == stat.st_ino as u32) {
        let id = (stat.st_dev, stat.st_ino);
        state.bound.push(Bound { inode, cookie, file, id, vfs, asked, abstract_name });
    }
    Ok(())
}

/// Whether the Unix socket `copy` is bound (to a path or an abstract name): an unbound one's
/// address is its family alone.
fn has_a_name(copy: &OwnedFd) -> bool {
    rustix::net::getsockname(copy).is_ok_and(|a| a.addr_len() as usize > std::mem::size_of::<u16>())
}

/// A path's folder (`.` for none, `/` for the root) and its last name, which must be one:
/// `ENOENT` for a path that ends in a slash, `EADDRINUSE` for `.` or `..` (they exist).
fn split_last(path: &[u8]) -> Result<(&[u8], &[u8]), Errno> {
    if path.is_empty() || path.ends_with(b"/") {
        return Err(Errno::NOENT);
    }
    let (folder, name) = match memchr::memrchr(b'/', path) {
        Some(0) => (&path[..1], &path[1..]),
        Some(at) => (&path[..at], &path[at + 1..]),
        None => (&b"."[..], path),
    };
    if name == b"." || name == b".." {
        return Err(Errno::ADDRINUSE);
    }
    Ok((folder, name))
}

/// The folder of the abstract names' files (mode 0700), made and opened without following a
/// link at the first use.
fn abstract_folder(tmp: &std::path::Path, state: &mut State) -> Result<OwnedFd, Errno> {
    if let Some(folder) = &state.abstract_folder {
        return folder.try_clone().map_err(|_| Errno::NOMEM);
    }
    let how = rustix::fs::ResolveFlags::NO_SYMLINKS | rustix::fs::ResolveFlags::NO_MAGICLINKS;
    let dir = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let tmp = rustix::fs::openat2(rustix::fs::CWD, tmp, dir, Mode::empty(), how)?;
    match rustix::fs::mkdirat(&tmp, ABSTRACT_FOLDER, Mode::from_raw_mode(0o700)) {
        Ok(()) | Err(Errno::EXIST) => {}
        Err(e) => return Err(e),
    }
    let folder = rustix::fs::openat(&tmp, ABSTRACT_FOLDER, dir | OFlags::NOFOLLOW, Mode::empty())?;
    state.abstract_folder = Some(folder.try_clone().map_err(|_| Errno::NOMEM)?);
    Ok(folder)
}

/// Whether the recorded socket still lives, bound to its file: `Err` when the kernel could not
/// be asked.
fn alive(bound: &Bound) -> Result<bool, Errno> {
    let vfs = crate::sock_diag::unix_socket(bound.inode, bound.cookie)?.and_then(|s| s.vfs);
    Ok(vfs == Some(bound.vfs))
}

/// Makes a connection for the program's socket (`copy`) to `target`, if it names a socket the
/// helper bound for the call: a new socket of the copy's type, connected.
fn connect(
    unix: &UnixSockets,
    (listener, id): (BorrowedFd<'_>, u64),
    handles: &CallHandles<'_>,
    copy: &OwnedFd,
    (target, blocking): (UnixAddress, bool),
    refused: &mut Option<Refusal>,
) -> Result<OwnedFd, Errno> {
    // The kernel's answers for a socket that is listening or connected already.
    if rustix::net::sockopt::socket_acceptconn(copy)? {
        return Err(Errno::INVAL);
    }
    if rustix::net::getpeername(copy).is_ok_and(|peer| peer.is_some()) {
        return Err(Errno::ISCONN);
    }
    // A client bound to a name of its own: its connection would be the helper's socket, not
    // that name's (see the module's documentation).
    if has_a_name(copy) {
        return Err(Errno::INVAL);
    }
    let kind = rustix::net::sockopt::socket_type(copy)?;
    if kind != SocketType::STREAM && kind != SocketType::SEQPACKET {
        return Err(Errno::PERM);
    }
    let mut state = unix.state.borrow_mut();
    let at = match target {
        UnixAddress::Abstract(name) => {
            state.bound.iter().position(|b| b.abstract_name.as_ref() == Some(&name))
        }
        UnixAddress::Path(path) => {
            let file = super::metadata::open_path(handles, &path, true)?;
            let stat = rustix::fs::fstat(&file)?;
            if FileType::from_raw_mode(stat.st_mode) != FileType::Socket {
                return Err(Errno::CONNREFUSED);
            }
            let at = state.bound.iter().position(|b| b.id == (stat.st_dev, stat.st_ino));
            if at.is_none() {
                // Not a socket the call bound: the person's, or another process's.
                let named = rustix::fs::readlink(format!("/proc/self/fd/{}", file.as_raw_fd()), Vec::new());
                let path = named.map(|n| PathBuf::from(std::ffi::OsString::from_vec(n.into_bytes())));
                *refused = Some(Refusal::ForeignUnixSocket { path: path.unwrap_or_default() });
                return Err(Errno::ACCESS);
            }
            at
        }
        UnixAddress::Unnamed => return Err(Errno::INVAL),
    };
    // A name no socket of the call's holds now: as the kernel says of it.
    let Some(at) = at else { return Err(Errno::CONNREFUSED) };
    if !alive(&state.bound[at])? {
        state.bound.remove(at);
        return Err(Errno::CONNREFUSED);
    }
    let made = rustix::net::socket_with(
        AddressFamily::UNIX,
        kind,
        SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
        None,
    )?;
    let through = SocketAddrUnix::new(format!("/proc/self/fd/{}", state.bound[at].file.as_raw_fd()))?;
    drop(state);
    let mut tries = 0;
    loop {
        match rustix::net::connect(&made, &through) {
            Ok(()) => return Ok(made),
            // Tried again while the program's thread still waits for it.
            Err(Errno::AGAIN)
                if blocking
                    && tries < FULL_QUEUE_TRIES
                    && crate::sys::seccomp_notif_id_valid(listener, id) =>
            {
                tries += 1;
                std::thread::sleep(FULL_QUEUE_PAUSE);
            }
            Err(e) => return Err(e),
        }
    }
}
