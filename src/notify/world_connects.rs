//! Held connects in the own world: the program makes Unix stream and seqpacket sockets of its
//! own, binds them (the kernel's bind, under Landlock and the world's mounts; an abstract name
//! is the world network namespace's) and connects to them, and never reaches a socket of the
//! host's (the person's ssh agent, session bus or Docker's socket, in a folder the world shows).
//!
//! Why every connect is held. Landlock before `LANDLOCK_ACCESS_FS_RESOLVE_UNIX` does not govern a
//! `connect` to a socket file, a read-only mount does not stop one, and a network namespace does
//! not scope path sockets; a filter cannot tell a Unix `connect` from a TCP one (the address is
//! in memory), nor let one go on after the helper looked (the program's threads can change the
//! descriptor or the address in between). So the helper makes each connect itself, on a copy of
//! the program's socket (`pidfd_getfd`), with the address it read once:
//!
//! - a TCP or UDP socket: connected to that address. The copy is the program's own socket, in
//!   the world's network namespace, so it reaches only what the world's loopback and the proxy's
//!   door reach, as before; its options are kept.
//! - a Unix socket and a path: the path is opened in the program's world alone (from the
//!   world's root, its working folder by the world's name for it; no magic link of lnk's), and
//!   must be a socket file to which a socket of the world's network namespace is bound, asked
//!   of the kernel's socket diagnostics in that namespace (the program's process made that
//!   socket: the helper has none there). Only the call's processes make sockets in the world,
//!   so that socket is the call's. The diagnostics name a socket's file by its superblock's
//!   device and its inode's low 32 bits only: a file whose inode number is wider is refused,
//!   and so is one a socket of the host's namespace is found bound to as well (two files with
//!   the same number, after 32-bit inode numbers wrapped). The copy is then connected through
//!   the opened file's own descriptor (`/proc/self/fd/N`): the inode held open is the one
//!   checked, and a socket's file is never another socket's. Any other is refused (`EACCES`,
//!   named in the report).
//! - a Unix socket and an abstract name: connected as asked, once the copy is proved a socket of
//!   the world's namespace (one passed in from outside is not): the world's abstract names are
//!   the call's own.
//!
//! A connect never blocks the helper: it is made with the copy's file non-blocking for that one
//! call; when the program's socket was blocking and the connect is under way (TCP) or the
//! listener's queue full (Unix), the call is kept waiting ([`super::pending`], at most 1,024 at
//! once and a quarter of the helper's descriptors, each looked at again after a pause growing to
//! 32 ms) and answered when it is done, while the helper serves the rest; a waiting connect holds
//! no place among the calls handed over. What the program sees differently: the peer of a Unix connection
//! is the helper (`SO_PEERCRED`); for the moment of each try, its socket's file is non-blocking to
//! another thread of the program's (one that reads the flags then and writes them back keeps
//! that); a socket bound on btrfs or overlayfs beneath a write grant is not reached (its `stat`
//! device is not the one the kernel keeps for it: refused, never mistaken); where the kernel gives
//! no copy of a descriptor, no connect is held and Unix sockets are refused (`lacks` says so).
//!
//! Trusted with: which sockets the program's connects reach in the own world: a bug here could
//! connect it to the person's agent or bus. What it trusts: the kernel's copy of the program's
//! descriptor, its socket diagnostics in the world's network namespace, `/proc`, and the
//! world's being the call's alone; of the program's, only the call's numbers and an address
//! read once.

use std::os::fd::{AsFd as _, AsRawFd as _, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStringExt as _;
use std::path::PathBuf;

use rustix::fs::FileType;
use rustix::io::Errno;
use rustix::net::{AddressFamily, SocketAddrUnix};

use super::handles::{CallHandles, What};
use super::memory::Memory;
use super::pending::{Wait, start};
use super::request::Address;
use super::unix_sockets::UnixAddress;
use super::{Grants, Refusal, Reply};

/// `sizeof(struct sockaddr_storage)`: the longest address the kernel takes.
const SOCKADDR_MAX: usize = 128;
/// `sizeof(struct sockaddr_un)`: the longest a Unix socket's.
const SOCKADDR_UN_LEN: usize = 110;

/// Performs the program's held `connect` (its thread's handles are `handles`) in the own
/// world.
pub fn connect(
    grants: &Grants,
    handles: &CallHandles<'_>,
    memory: &Memory,
    id: u64,
    Address { fd, address, len }: Address,
    refused: &mut Option<Refusal>,
) -> Result<Reply, Errno> {
    let diag = grants.world_diag.as_ref().ok_or(Errno::PERM)?;
    // The copy the receiver took with the call, or, where it got none, asked for now.
    let asked;
    let copy = match handles.taken(What::Copy(fd)).map_or_else(|| handles.copy(fd).map(Err), |c| Ok(Ok(c))) {
        Ok(Ok(taken)) => taken,
        Ok(Err(copy)) => {
            asked = copy;
            asked.as_fd()
        }
        // No such descriptor, or no socket; or the call is no longer held (its thread
        // interrupted, or gone).
        Err(e @ (Errno::BADF | Errno::NOENT | Errno::NOTSOCK)) => return Err(e),
        // The helper's own descriptors are all in use (many connects waiting): as a connect
        // past its timeout, never the helper's state (found in review).
        Err(Errno::MFILE | Errno::NFILE) => return Err(Errno::AGAIN),
        Err(_) => {
            *refused = Some(Refusal::UnixWithoutCopy);
            return Err(Errno::PERM);
        }
    };
    if FileType::from_raw_mode(rustix::fs::fstat(copy)?.st_mode) != FileType::Socket {
        return Err(Errno::NOTSOCK);
    }
    let len = usize::try_from(len).map_err(|_| Errno::INVAL)?;
    if len > SOCKADDR_MAX {
        return Err(Errno::INVAL);
    }
    let mut raw = vec![0u8; len];
    memory.read(address, &mut raw)?;
    match rustix::net::sockopt::socket_domain(copy)? {
        family @ (AddressFamily::INET | AddressFamily::INET6) => {
            // `AF_UNSPEC` dissolves a UDP socket's association (and fails on TCP's, as the
            // kernel says). Any other address shorter than the family's is `EINVAL` before its
            // family is looked at, as the kernel looks.
            let unspec = raw.len() >= 2 && u16::from_ne_bytes([raw[0], raw[1]]) == libc::AF_UNSPEC as u16;
            let shortest = if family == AddressFamily::INET { 16 } else { 24 };
            if !unspec && raw.len() < shortest {
                return Err(Errno::INVAL);
            }
            let target = if unspec { None } else { Some(super::sockets::parse_sockaddr(&raw, len)?) };
            start(id, copy, Wait::Tcp { target }, |c| match &target {
                None => rustix::net::connect_unspec(c),
                Some(address) => rustix::net::connect(c, address),
            })
        }
        AddressFamily::UNIX => {
            if raw.len() > SOCKADDR_UN_LEN {
                return Err(Errno::INVAL);
            }
            let (through, file) = match super::unix_sockets::parse_address(&raw)? {
                UnixAddress::Unnamed => return Err(Errno::INVAL),
                UnixAddress::Abstract(name) => {
                    let inode = rustix::fs::fstat(copy)?.st_ino;
                    let cookie = rustix::net::sockopt::socket_cookie(copy)?;
                    if crate::sock_diag::unix_socket_in(diag.as_fd(), inode, cookie)?.is_none() {
                        // A socket of another namespace (passed in): its abstract names are not
                        // the call's.
                        return Err(Errno::PERM);
                    }
                    (SocketAddrUnix::new_abstract_name(&name[1..])?, None)
                }
                UnixAddress::Path(path) => {
                    let file = super::metadata::open_path_in_world(handles, &path)?;
                    let stat = rustix::fs::fstat(&file)?;
                    if FileType::from_raw_mode(stat.st_mode) != FileType::Socket {
                        return Err(Errno::CONNREFUSED);
                    }
                    if !world_socket_file(diag.as_fd(), grants.host_diag.as_ref(), &stat)? {
                        *refused = Some(Refusal::ForeignUnixSocket { path: named(&file) });
                        return Err(Errno::ACCESS);
                    }
                    (SocketAddrUnix::new(format!("/proc/self/fd/{}", file.as_raw_fd()))?, Some(file))
                }
            };
            let wait = Wait::Unix { through: through.clone(), _file: file };
            start(id, copy, wait, |c| rustix::net::connect(c, &through))
        }
        // No other socket is made in the world.
        _ => Err(Errno::PERM),
    }
}

/// Whether the socket file `stat` describes is one a socket of the world's network namespace
/// (`world`) is bound to. The kernel's socket diagnostics name a bound socket's file by its
/// superblock's device and its inode's low 32 bits; so a file whose inode number is wider is
/// refused (it could share those bits with another), and so is one a socket of the host's
/// network namespace (`host`, the helper's) is found bound to as well: two files of one
/// file system with the same number (32-bit inode numbers that wrapped) would be told apart
/// by no more. A file on btrfs or overlayfs, whose `stat` device is not the superblock's, is
/// found nowhere: refused.
fn world_socket_file(
    world: BorrowedFd<'_>,
    host: Option<&OwnedFd>,
    stat: &rustix::fs::Stat,
) -> Result<bool, Errno> {
    let Ok(inode) = u32::try_from(stat.st_ino) else { return Ok(false) };
    let vfs = (crate::sock_diag::kernel_dev(stat.st_dev), inode);
    let Some(host) = host else { return Ok(false) };
    Ok(crate::sock_diag::unix_bound_at(world, vfs)? && !crate::sock_diag::unix_bound_at(host.as_fd(), vfs)?)
}

/// The name the kernel gives a file lnk holds (for the report).
fn named(file: &OwnedFd) -> PathBuf {
    let named = rustix::fs::readlink(format!("/proc/self/fd/{}", file.as_raw_fd()), Vec::new());
    named.map(|n| PathBuf::from(std::ffi::OsString::from_vec(n.into_bytes()))).unwrap_or_default()
}
