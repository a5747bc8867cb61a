//! Whether a TCP socket, known only by its inode, is connected or listening: asked of the
//! kernel's socket diagnostics (`NETLINK_SOCK_DIAG`, what `ss` uses), not of `/proc/net/tcp`.
//!
//! Why not `/proc/net/tcp`: the kernel formats a line for every TCP socket of the network
//! namespace, `TIME_WAIT` included, at about 2 µs each, and the host's namespace is the
//! program's in the Landlock-only mode; a program whose test suite connected a few thousand
//! times made each later held `bind` cost 11 ms (measured by `bench/held_calls.py`). Here the
//! kernel runs a filter of one instruction on each socket instead (the local address the call's
//! own), and tells only the call's sockets; `TIME_WAIT` ones, which no descriptor holds, are not
//! asked for. Why not `pidfd_getfd` and `getsockopt`: container runtimes' default seccomp
//! profiles refuse it (see `crate::notify::memory`).
//!
//! What it trusts: the kernel's answer; a reply it cannot read is taken as "not listed".

use std::net::{IpAddr, Ipv4Addr};

use std::os::fd::AsFd as _;

use rustix::io::Errno;
use rustix::net::{AddressFamily, SocketFlags, SocketType};

const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_DUMP: u16 = 0x300;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLMSG_HEADER: usize = 16;
/// `struct inet_diag_req_v2`: family, protocol, extensions, pad, states, and the socket id.
const REQUEST: usize = 56;
/// `INET_DIAG_REQ_BYTECODE`, the request's filter attribute.
const REQ_BYTECODE: u16 = 1;
/// `INET_DIAG_BC_S_COND`: the local address matches (a prefix of) the condition's.
const BC_S_COND: u8 = 7;
/// The offset of `idiag_inode` in `struct inet_diag_msg`.
const INODE_AT: usize = 68;
/// Every TCP state but `TIME_WAIT` (6) and `NEW_SYN_RECV` (12): sockets no descriptor holds.
const STATES: u32 = 0xfff & !(1 << 6) & !(1 << 12);
/// `TCP_LISTEN`.
const LISTEN: u32 = 10;

/// Where a process of the host listens for TCP on `port` so that a loopback connect reaches it,
/// other than on `except` (the call's own address): the loopback address it listens on, or
/// `127.0.0.1` for the wildcard (`0.0.0.0`, or `::`, which takes IPv4 too). Only the listening
/// sockets are asked for, which the kernel keeps apart: cheap.
pub fn host_listener(port: u16, except: Option<Ipv4Addr>) -> Option<IpAddr> {
    let reachable = |address: IpAddr| {
        let address = match address {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
            v4 => v4,
        };
        match address {
            a if Some(a) == except.map(IpAddr::V4) => None,
            a if a.is_unspecified() => Some(IpAddr::V4(Ipv4Addr::LOCALHOST)),
            a if a.is_loopback() => Some(a),
            _ => None,
        }
    };
    [AddressFamily::INET, AddressFamily::INET6].iter().find_map(|family| {
        let sockets = dump_sockets(*family, 1 << LISTEN, None).ok()?;
        sockets.iter().filter(|s| s.port == port).find_map(|s| reachable(s.address))
    })
}

/// Whether the TCP socket `inode` is listening or connected (in a state but closed and
/// `TIME_WAIT`), looking among the sockets whose local address is `local` (IPv4, or v4-mapped
/// on an IPv6 socket), or among all with `None`.
pub fn tcp_socket_listed(inode: u64, local: Option<Ipv4Addr>) -> bool {
    [AddressFamily::INET, AddressFamily::INET6]
        .iter()
        .any(|family| dump_sockets(*family, STATES, local).is_ok_and(|s| s.iter().any(|s| s.inode == inode)))
}

/// A Unix socket the kernel told of by its inode: where it is bound in the file system (the
/// device, as the kernel keeps it, and the inode of its socket file, both 32 bits wide as
/// `struct unix_diag_vfs` carries them), if it is bound there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnixSocket {
    pub vfs: Option<(u32, u32)>,
    /// Its state: `TCP_ESTABLISHED` (1) connected, `TCP_LISTEN` (10), `TCP_CLOSE` (7) neither.
    pub state: u8,
}

/// A Unix socket's state when it is connected (a socket pair's end, a connection).
pub const UNIX_CONNECTED: u8 = 1;

/// `UDIAG_SHOW_VFS` and the `UNIX_DIAG_VFS` attribute that answers it.
const UDIAG_SHOW_VFS: u32 = 0x2;
const UNIX_DIAG_VFS: u16 = 1;
/// `sizeof(struct unix_diag_msg)`: family, type, state, pad, inode, cookie.
const UNIX_MESSAGE: usize = 16;

/// The Unix socket `inode` whose cookie is `cookie` (`SO_COOKIE`; `u64::MAX` for any), in the
/// network namespace of the thread that asks: `None` when no such socket lives (it was closed;
/// or its inode is another socket's now, which the cookie tells apart).
pub fn unix_socket(inode: u64, cookie: u64) -> Result<Option<UnixSocket>, Errno> {
    unix_socket_in(diagnostics_socket()?.as_fd(), inode, cookie)
}

/// A socket diagnostics socket, of the network namespace of the thread that makes it.
pub fn diagnostics_socket() -> Result<std::os::fd::OwnedFd, Errno> {
    rustix::net::socket_with(
        AddressFamily::NETLINK,
        SocketType::DGRAM,
        SocketFlags::CLOEXEC,
        Some(rustix::net::netlink::SOCK_DIAG),
    )
}

/// [`unix_socket`], asked of `diag`'s network namespace (the own world's: see
/// [`crate::notify::world_connects`]): `None` for a socket of another namespace too.
pub fn unix_socket_in(
    diag: std::os::fd::BorrowedFd<'_>,
    inode: u64,
    cookie: u64,
) -> Result<Option<UnixSocket>, Errno> {
    let inode = u32::try_from(inode).map_err(|_| Errno::INVAL)?;
    rustix::net::send(diag, &unix_request(inode, cookie, false), rustix::net::SendFlags::empty())?;
    let mut buffer = vec![0u8; 4096];
    let (n, _) = rustix::net::recv(diag, &mut buffer[..], rustix::net::RecvFlags::empty())?;
    parse_unix_reply(&buffer[..n], inode)
}

/// Whether a Unix socket of `diag`'s network namespace is bound to the file `vfs` (its device
/// as the kernel keeps it, and its inode's low 32 bits: see [`UnixSocket::vfs`]).
pub fn unix_bound_at(diag: std::os::fd::BorrowedFd<'_>, vfs: (u32, u32)) -> Result<bool, Errno> {
    rustix::net::send(diag, &unix_request(0, u64::MAX, true), rustix::net::SendFlags::empty())?;
    let mut buffer = vec![0u8; 32 * 1024];
    let mut found = false;
    loop {
        let (n, _) = rustix::net::recv(diag, &mut buffer[..], rustix::net::RecvFlags::empty())?;
        let mut bytes = &buffer[..n];
        while !bytes.is_empty() {
            let len = bytes.get(..4).map_or(0, |l| u32::from_ne_bytes([l[0], l[1], l[2], l[3]]) as usize);
            if len < NLMSG_HEADER || len > bytes.len() {
                return Err(Errno::PROTO);
            }
            match u16::from_ne_bytes([bytes[4], bytes[5]]) {
                NLMSG_DONE => return Ok(found),
                NLMSG_ERROR => return Err(Errno::PROTO),
                SOCK_DIAG_BY_FAMILY => {
                    let inode = bytes
                        .get(NLMSG_HEADER + 4..NLMSG_HEADER + 8)
                        .map_or(0, |i| u32::from_ne_bytes([i[0], i[1], i[2], i[3]]));
                    let one = parse_unix_reply(&bytes[..len], inode)?;
                    found |= one.is_some_and(|s| s.vfs == Some(vfs));
                }
                _ => {}
            }
            bytes = bytes.get(len.next_multiple_of(4)..).unwrap_or_default();
        }
    }
}

/// A `struct unix_diag_req` in its netlink message: for the socket `inode` (with `cookie`),
/// or with `dump`, for every socket in every state; showing where each is bound.
fn unix_request(inode: u32, cookie: u64, dump: bool) -> Vec<u8> {
    // family, protocol, pad, states, inode, what to show, cookie.
    let mut body = Vec::with_capacity(24);
    body.push(libc::AF_UNIX as u8);
    body.extend_from_slice(&[0, 0, 0]);
    body.extend_from_slice(&u32::MAX.to_ne_bytes());
    body.extend_from_slice(&inode.to_ne_bytes());
    body.extend_from_slice(&UDIAG_SHOW_VFS.to_ne_bytes());
    body.extend_from_slice(&(cookie as u32).to_ne_bytes());
    body.extend_from_slice(&((cookie >> 32) as u32).to_ne_bytes());
    let flags = if dump { NLM_F_REQUEST | NLM_F_DUMP } else { NLM_F_REQUEST };
    let mut message = Vec::with_capacity(NLMSG_HEADER + body.len());
    message.extend_from_slice(&((NLMSG_HEADER + body.len()) as u32).to_ne_bytes());
    message.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    message.extend_from_slice(&flags.to_ne_bytes());
    message.extend_from_slice(&1u32.to_ne_bytes());
    message.extend_from_slice(&0u32.to_ne_bytes());
    message.extend_from_slice(&body);
    message
}

/// Reads the answer to [`unix_socket`]'s request: one message of the socket (then `Some`), or
/// an error (`ENOENT` or `ESTALE`: no such socket, then `None`).
fn parse_unix_reply(bytes: &[u8], inode: u32) -> Result<Option<UnixSocket>, Errno> {
    let u32_at =
        |b: &[u8], at: usize| b.get(at..at + 4).map(|v| u32::from_ne_bytes(v.try_into().unwrap_or([0; 4])));
    let u16_at =
        |b: &[u8], at: usize| b.get(at..at + 2).map(|v| u16::from_ne_bytes(v.try_into().unwrap_or([0; 2])));
    let len = u32_at(bytes, 0).ok_or(Errno::PROTO)? as usize;
    if len < NLMSG_HEADER || len > bytes.len() {
        return Err(Errno::PROTO);
    }
    match u16_at(bytes, 4).ok_or(Errno::PROTO)? {
        NLMSG_ERROR => {
            let error = u32_at(bytes, NLMSG_HEADER).ok_or(Errno::PROTO)? as i32;
            return match error.checked_neg().unwrap_or(0) {
                // No socket of that inode; one, but of another cookie (`ESTALE`).
                libc::ENOENT | libc::ESTALE => Ok(None),
                0 => Err(Errno::PROTO),
                e => Err(Errno::from_raw_os_error(e)),
            };
        }
        SOCK_DIAG_BY_FAMILY => {}
        _ => return Err(Errno::PROTO),
    }
    let message = &bytes[NLMSG_HEADER..len];
    if message.len() < UNIX_MESSAGE || u32_at(message, 4) != Some(inode) {
        return Err(Errno::PROTO);
    }
    let state = message[2];
    let mut vfs = None;
    let mut attributes = &message[UNIX_MESSAGE..];
    while attributes.len() >= 4 {
        let at_len = usize::from(u16_at(attributes, 0).ok_or(Errno::PROTO)?);
        if at_len < 4 || at_len > attributes.len() {
            return Err(Errno::PROTO);
        }
        if u16_at(attributes, 2) == Some(UNIX_DIAG_VFS) && at_len >= 12 {
            // `struct unix_diag_vfs`: the inode, then the device.
            let ino = u32_at(attributes, 4).ok_or(Errno::PROTO)?;
            let dev = u32_at(attributes, 8).ok_or(Errno::PROTO)?;
            vfs = Some((dev, ino));
        }
        attributes = attributes.get(at_len.next_multiple_of(4)..).unwrap_or_default();
    }
    Ok(Some(UnixSocket { vfs, state }))
}

/// A file's device (as `stat` gives it) as the kernel keeps it inside (`MKDEV`: the major number
/// above the minor's 20 bits), which is how [`UnixSocket::vfs`] names it.
pub fn kernel_dev(st_dev: u64) -> u32 {
    let major = rustix::fs::major(st_dev);
    let minor = rustix::fs::minor(st_dev);
    (major << 20) | (minor & 0xf_ffff)
}

/// One socket the kernel told of.
struct Socket {
    inode: u64,
    /// Its local port and address.
    port: u16,
    address: IpAddr,
}

/// The TCP sockets of `family` in `states` whose local address is `local` (any, with `None`).
fn dump_sockets(family: AddressFamily, states: u32, local: Option<Ipv4Addr>) -> Result<Vec<Socket>, Errno> {
    let socket = rustix::net::socket_with(
        AddressFamily::NETLINK,
        SocketType::DGRAM,
        SocketFlags::CLOEXEC,
        Some(rustix::net::netlink::SOCK_DIAG),
    )?;
    rustix::net::send(&socket, &request(family, states, local), rustix::net::SendFlags::empty())?;
    let mut inodes = Vec::new();
    let mut buffer = vec![0u8; 32 * 1024];
    loop {
        let (n, _) = rustix::net::recv(&socket, &mut buffer[..], rustix::net::RecvFlags::empty())?;
        match replies(&buffer[..n], &mut inodes) {
            Some(true) => return Ok(inodes),
            Some(false) => {}
            None => return Err(Errno::PROTO),
        }
    }
}

/// The dump request: a netlink header, `inet_diag_req_v2` for TCP of `family` in `states`,
/// and, with `local`, a filter of one instruction: accept when the local address is `local`.
fn request(family: AddressFamily, states: u32, local: Option<Ipv4Addr>) -> Vec<u8> {
    let mut body = Vec::with_capacity(REQUEST + 20);
    body.push(family.as_raw() as u8);
    body.push(libc::IPPROTO_TCP as u8);
    body.extend_from_slice(&[0, 0]);
    body.extend_from_slice(&states.to_ne_bytes());
    body.extend_from_slice(&[0u8; REQUEST - 8]);
    if let Some(address) = local {
        // rtattr { len, type } then inet_diag_bc_op { code, yes, no } and inet_diag_hostcond
        // { family, prefix_len, port, addr }: yes jumps to the end (accept), no past it by 4
        // (reject), as the kernel's filter checker requires. For IPv6 sockets the kernel
        // compares a v4-mapped local address with an AF_INET condition.
        let op_len: u16 = 4 + 8 + 4;
        body.extend_from_slice(&(4 + op_len).to_ne_bytes());
        body.extend_from_slice(&REQ_BYTECODE.to_ne_bytes());
        body.push(BC_S_COND);
        body.push(op_len as u8);
        body.extend_from_slice(&(op_len + 4).to_ne_bytes());
        body.push(libc::AF_INET as u8);
        body.push(32);
        body.extend_from_slice(&[0, 0]);
        body.extend_from_slice(&(-1i32).to_ne_bytes());
        body.extend_from_slice(&address.octets());
    }
    let mut message = Vec::with_capacity(NLMSG_HEADER + body.len());
    message.extend_from_slice(&((NLMSG_HEADER + body.len()) as u32).to_ne_bytes());
    message.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    message.extend_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
    message.extend_from_slice(&1u32.to_ne_bytes());
    message.extend_from_slice(&0u32.to_ne_bytes());
    message.extend_from_slice(&body);
    message
}

/// Reads the messages of one `recv`, adding each socket to `sockets`. `Some(true)` at the
/// dump's end, `Some(false)` when more is to come, `None` on an error or a reply that does not
/// parse.
fn replies(mut bytes: &[u8], sockets: &mut Vec<Socket>) -> Option<bool> {
    let u32_at = |b: &[u8], at: usize| Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?));
    let u16_at = |b: &[u8], at: usize| Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?));
    while !bytes.is_empty() {
        let len = u32_at(bytes, 0)? as usize;
        if len < NLMSG_HEADER || len > bytes.len() {
            return None;
        }
        match u16_at(bytes, 4)? {
            NLMSG_DONE => return Some(true),
            NLMSG_ERROR => return None,
            SOCK_DIAG_BY_FAMILY => sockets.push(socket(&bytes[NLMSG_HEADER..len])?),
            _ => {}
        }
        // Messages are aligned to 4 bytes.
        bytes = bytes.get(len.next_multiple_of(4)..).unwrap_or_default();
    }
    Some(false)
}

/// A `struct inet_diag_msg`: family, state, timer, retransmits, then the socket's id (source
/// port in network order at 4, source address at 8, 16 bytes), and its inode at [`INODE_AT`].
fn socket(message: &[u8]) -> Option<Socket> {
    let inode = u32::from_ne_bytes(message.get(INODE_AT..INODE_AT + 4)?.try_into().ok()?);
    let port = u16::from_be_bytes(message.get(4..6)?.try_into().ok()?);
    let address: [u8; 16] = message.get(8..24)?.try_into().ok()?;
    let address = match i32::from(*message.first()?) {
        libc::AF_INET => IpAddr::from([address[0], address[1], address[2], address[3]]),
        _ => IpAddr::from(address),
    };
    Some(Socket { inode: u64::from(inode), port, address })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inode(fd: impl std::os::fd::AsFd) -> u64 {
        rustix::fs::fstat(fd.as_fd()).unwrap().st_ino
    }

    #[test]
    fn a_unix_socket_is_found_by_inode_and_cookie_with_its_file() {
        let dir = std::env::temp_dir().join(format!(
            "lnk-sock-diag-{}-{}",
            rustix::process::getuid().as_raw(),
            rustix::process::getpid().as_raw_nonzero()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s");
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let cookie = rustix::net::sockopt::socket_cookie(&listener).unwrap();
        let stat = rustix::fs::stat(&path).unwrap();
        let found = unix_socket(inode(&listener), cookie).unwrap().unwrap();
        assert_eq!(found.vfs, Some((kernel_dev(stat.st_dev), stat.st_ino as u32)));
        // Another cookie is another socket's (the inode reused), and an unbound one has no file.
        assert_eq!(unix_socket(inode(&listener), cookie ^ 1).unwrap(), None);
        let (pair, _other) = std::os::unix::net::UnixStream::pair().unwrap();
        let pair_cookie = rustix::net::sockopt::socket_cookie(&pair).unwrap();
        let seen = unix_socket(inode(&pair), pair_cookie).unwrap().unwrap();
        assert_eq!((seen.vfs, seen.state), (None, UNIX_CONNECTED));
        // Any cookie: the socket of that inode, whichever it is.
        assert!(unix_socket(inode(&pair), u64::MAX).unwrap().is_some());
        let diag = diagnostics_socket().unwrap();
        let vfs = (kernel_dev(stat.st_dev), stat.st_ino as u32);
        assert!(unix_bound_at(diag.as_fd(), vfs).unwrap(), "found among all");
        assert!(!unix_bound_at(diag.as_fd(), (vfs.0, vfs.1 ^ 1)).unwrap(), "no other file");
        assert!(unix_socket_in(diag.as_fd(), inode(&listener), cookie).unwrap().is_some());
        let gone = inode(&listener);
        drop(listener);
        assert!(!unix_bound_at(diag.as_fd(), vfs).unwrap(), "a closed socket is bound nowhere");
        assert_eq!(unix_socket(gone, cookie).unwrap(), None, "a closed socket is not found");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn listening_and_connected_sockets_are_listed_by_their_local_address() {
        let here = Ipv4Addr::new(127, 83, 17, 5);
        let elsewhere = Ipv4Addr::new(127, 83, 17, 6);
        let server = std::net::TcpListener::bind((here, 0)).unwrap();
        let client = std::net::TcpStream::connect(server.local_addr().unwrap()).unwrap();
        let (accepted, _) = server.accept().unwrap();
        let v6 = std::net::TcpListener::bind(("::ffff:127.83.17.5", 0)).unwrap();
        for socket in [inode(&server), inode(&accepted), inode(&v6)] {
            assert!(tcp_socket_listed(socket, Some(here)));
            assert!(tcp_socket_listed(socket, None));
            assert!(!tcp_socket_listed(socket, Some(elsewhere)));
        }
        // The client's local address is 127.0.0.1 (the kernel's choice for a connect from an
        // unbound socket to 127.83.17.5: the destination itself).
        assert!(tcp_socket_listed(inode(&client), None));
        // A socket never bound or connected is in no table.
        let fresh = rustix::net::socket(AddressFamily::INET, SocketType::STREAM, None).unwrap();
        assert!(!tcp_socket_listed(inode(&fresh), None));
        drop(client);
    }

    #[test]
    fn a_hosts_listener_is_found_by_its_port_but_not_on_the_calls_own_address() {
        let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = server.local_addr().unwrap().port();
        let here = Some(IpAddr::V4(Ipv4Addr::LOCALHOST));
        assert_eq!(host_listener(port, None), here);
        assert_eq!(host_listener(port, Some(Ipv4Addr::new(127, 9, 9, 9))), here);
        let own = Ipv4Addr::new(127, 83, 17, 9);
        let mine = std::net::TcpListener::bind((own, 0)).unwrap();
        let my_port = mine.local_addr().unwrap().port();
        assert_eq!(host_listener(my_port, Some(own)), None, "the call's own server is not the host's");
        assert_eq!(host_listener(my_port, None), Some(IpAddr::V4(own)));
        drop(server);
        assert_eq!(host_listener(port, None), None, "closed");
        let wildcard = std::net::TcpListener::bind("[::]:0").unwrap();
        assert_eq!(host_listener(wildcard.local_addr().unwrap().port(), None), here, "at 127.0.0.1");
    }

    #[test]
    fn replies_that_do_not_parse_are_refused_not_trusted() {
        let mut inodes = Vec::new();
        assert_eq!(replies(&[1, 2, 3], &mut inodes), None);
        let mut done = vec![0u8; 16];
        done[0] = 16;
        done[4] = NLMSG_DONE as u8;
        assert_eq!(replies(&done, &mut inodes), Some(true));
        let mut short = vec![0u8; 20];
        short[0] = 20;
        short[4] = SOCK_DIAG_BY_FAMILY as u8;
        assert_eq!(replies(&short, &mut inodes), None);
        let mut too_long = done.clone();
        too_long[0] = 200;
        assert_eq!(replies(&too_long, &mut inodes), None);
    }
}
