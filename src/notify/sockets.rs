//! Held socket calls: in the Landlock-only mode the helper makes the program's TCP connections
//! and its listeners itself, on the call's loopback (see [`crate::proxy::loopback`] for where
//! they go and why nothing of the host's is taken). Where the receiver took a copy of the
//! program's socket with the call, [`super::socket_copies`] makes them on that very socket;
//! what follows is the way where it took none (container runtimes' default seccomp profiles
//! refuse `pidfd_getfd`), or for a socket that way does not take, and the `getsockname`s of
//! both:
//!
//! - `connect(fd, address, len)`: the address is read once from the program's memory and
//!   decoded ([`parse_sockaddr`]); the helper makes a connection of its own and puts that socket
//!   at `fd` in the program's descriptor table (`SECCOMP_IOCTL_NOTIF_ADDFD` with `SETFD`), with
//!   the program's `O_NONBLOCK` and close-on-exec, and answers the call.
//! - `bind(fd, address, len)` on loopback or the wildcard: the helper makes a socket bound on
//!   the call's address, neither listening nor connected, and puts it at `fd` the same way. Any
//!   other address is not the call's (`EADDRNOTAVAIL`, as in a namespace with loopback only).
//! - `listen(fd, backlog)`: on a listener the helper made, nothing to do; on a socket it bound, a
//!   listener for the address the program was told it had, put in its place; on a socket never
//!   bound (which the kernel would bind to the wildcard), a listener as for the wildcard.
//! - `connect` of a socket the helper bound: a connection as for any other (a client that binds
//!   its source address first: ftplib, smtplib), from the call's address; the port it bound is
//!   not kept (the connection's own is chosen by `connect`, as the module below explains).
//! - `getsockname(fd, …)` on a socket the helper bound or a listener it made: the address the
//!   program asked for (the port it got, for port 0), written into its memory; on any other
//!   socket the call goes on into the kernel, which answers for the program's own socket
//!   (nothing is checked there: the call only tells the program about a socket of its own).
//!
//! Every held call is answered as the kernel would answer it on the socket it names: a socket
//! pair's end (`UNIX-STREAM`, `UNIX`: the only other sockets a program may have) is never
//! replaced (`EINVAL`, or `EISCONN` for a Unix address); a socket already connected or
//! listening gets `EISCONN` from `connect` and `EINVAL` from `bind` and `listen`; an address of
//! the other family gets `EAFNOSUPPORT` (IPv6 on an IPv4 socket) or `EINVAL` (IPv4 on an IPv6
//! one). What a socket is, is read from `/proc` (its inode, its protocol's name), never from the
//! program's word. The held call is never let go on into the kernel but for `getsockname`: a
//! connect or a bind let go on would act on whatever socket the program's threads had put at
//! that number meanwhile.
//!
//! What a socket is, is read through the copy of the descriptor the receiver took with the
//! call (`pidfd_getfd`, [`super::handles::Taking`]), or where the kernel gives none (container
//! runtimes' default seccomp profiles refuse it, see [`super::memory`]) through its `O_PATH`
//! handle; its flags from its `fdinfo`. Nothing is changed on the copy: the socket put at the
//! program's number is a new one, so the mode works without copies. What the program loses is
//! what it set on its socket before the call (`TCP_NODELAY`, `SO_REUSEPORT`): the socket it
//! gets is new (its listeners have `SO_REUSEADDR`). Handles taken with the call are not asked
//! again whether the call is still held when used: a call whose thread gave it up meanwhile (a
//! signal) may still be acted on, on the program's own socket, and `ADDFD` then fails.
//!
//! Trusted with: where the program's TCP connections and listeners go in the Landlock-only mode: a
//! bug here could connect the program to a server of the host's, or past the call's proxy. What it
//! trusts: the kernel's `/proc` for what a socket is and `ADDFD` to act on the held process only,
//! and [`crate::proxy::loopback`] for where each connection may go; of the program's, only the
//! call's numbers and an address read once.

use std::net::SocketAddr;
use std::os::fd::{AsFd as _, BorrowedFd, OwnedFd};

use rustix::fs::OFlags;
use rustix::io::Errno;
use rustix::net::AddressFamily;

use super::Reply;
use super::handles::{CallHandles, Handle, What};
use super::memory::Memory;
use super::request::{Address, SocketCall};
use super::socket_names::SocketNames;
use crate::proxy::loopback::{Loopback, may_listen_on};

/// `sizeof(struct sockaddr_storage)`: the longest address the kernel takes.
const SOCKADDR_MAX: i32 = 128;
/// `sizeof(struct sockaddr_in)`; the kernel refuses a shorter IPv4 address.
const SOCKADDR_IN_LEN: usize = 16;
/// `SIN6_LEN_RFC2133`: the kernel takes an IPv6 address without its scope id.
const SOCKADDR_IN6_MIN_LEN: usize = 24;
/// `sizeof(struct sockaddr_in6)`.
const SOCKADDR_IN6_LEN: usize = 28;

/// What a program's descriptor is, as `/proc` shows it.
pub(super) struct Socket {
    pub(super) inode: u64,
    /// `Some(family)` for a TCP socket; `None` for a Unix socket (see [`super::unix_sockets`]).
    pub(super) tcp: Option<AddressFamily>,
    /// Its status flags (`O_NONBLOCK`), and `O_CLOEXEC` as `/proc` shows its close-on-exec.
    pub(super) flags: OFlags,
}

/// Performs one held socket call (whose thread's handles are `handles`), answering for the
/// program; a socket put at its descriptor with a name the program asked for is noted in
/// `names`.
pub(super) fn perform(
    (listener, id, names): (BorrowedFd<'_>, u64, &SocketNames),
    loopback: &Loopback,
    handles: &CallHandles<'_>,
    memory: &Memory,
    call: SocketCall,
) -> Result<Reply, Errno> {
    match call {
        SocketCall::Connect(Address { fd, address, len }) => {
            let socket = socket(handles, fd)?;
            let asked = read_address(memory, address, len);
            let Some(family) = socket.tcp else {
                // A socket pair's end is connected: a Unix address finds it so, any other is
                // not one for its family.
                return Err(match raw_family(memory, address, len) {
                    Some(libc::AF_UNIX) => Errno::ISCONN,
                    _ => Errno::INVAL,
                });
            };
            // A socket the program bound (a client with a source address) connects as any other;
            // the kernel would let it.
            let bound = loopback.bound(socket.inode).is_some();
            if !bound && in_use(loopback, handles, fd, socket.inode) {
                return Err(Errno::ISCONN);
            }
            let asked = of_family(asked?, family)?;
            let made = loopback.connect(asked, family, socket.flags.contains(OFlags::NONBLOCK))?;
            let reply = put(listener, id, &made, fd, &socket)?;
            if bound {
                loopback.unbind(socket.inode);
            }
            Ok(reply)
        }
        SocketCall::Bind(Address { fd, address, len }) => {
            let socket = socket(handles, fd)?;
            let family = socket.tcp.ok_or(Errno::INVAL)?;
            if in_use(loopback, handles, fd, socket.inode) {
                return Err(Errno::INVAL);
            }
            let asked = of_family(read_address(memory, address, len)?, family)?;
            if !may_listen_on(asked.ip()) {
                loopback.refuse_listen(asked);
                return Err(Errno::ADDRNOTAVAIL);
            }
            let made = loopback.bind(asked, family, socket.flags.contains(OFlags::NONBLOCK))?;
            put_named(names, (listener, id), &made, fd, &socket)
        }
        SocketCall::Listen { fd, .. } => {
            let socket = socket(handles, fd)?;
            let family = socket.tcp.ok_or(Errno::INVAL)?;
            if loopback.server(socket.inode).is_some() {
                return Ok(Reply::Done);
            }
            let nonblocking = socket.flags.contains(OFlags::NONBLOCK);
            if loopback.bound(socket.inode).is_some() {
                let made = loopback.listen_bound(socket.inode, family, nonblocking)?;
                return put_named(names, (listener, id), &made, fd, &socket);
            }
            if in_use(loopback, handles, fd, socket.inode) {
                return Err(Errno::INVAL);
            }
            // Never bound: the kernel would bind the wildcard, on the host's every interface.
            let wildcard = match family {
                AddressFamily::INET6 => SocketAddr::from((std::net::Ipv6Addr::UNSPECIFIED, 0)),
                _ => SocketAddr::from((std::net::Ipv4Addr::UNSPECIFIED, 0)),
            };
            let made = loopback.listen(wildcard, family, nonblocking)?;
            put_named(names, (listener, id), &made, fd, &socket)
        }
        SocketCall::Name { fd, address, len } => {
            let inode = socket_inode(handles, fd, &mut None)?.1;
            let Some(server) = loopback.named(inode) else { return Ok(Reply::Continue) };
            let family = socket(handles, fd)?.tcp.ok_or(Errno::INVAL)?;
            write_name(handles, address, len, &encode_sockaddr(server.asked, family))?;
            Ok(Reply::Done)
        }
    }
}

/// Answers a held `getsockname` with `bytes`: as much of them as the program's buffer at
/// `address` holds (its size at `len`), and their whole length at `len`, as the kernel does.
pub(super) fn write_name(
    handles: &CallHandles<'_>,
    address: u64,
    len: u64,
    bytes: &[u8],
) -> Result<(), Errno> {
    let writable = Memory::from_file(handles.open(What::WritableMemory)?);
    let mut room = [0u8; 4];
    writable.read(len, &mut room)?;
    let room = i32::from_ne_bytes(room);
    if room < 0 {
        return Err(Errno::INVAL);
    }
    let n = bytes.len().min(room as usize);
    writable.write(address, &bytes[..n])?;
    writable.write(len, &(bytes.len() as i32).to_ne_bytes())
}

/// Puts `made` at the program's descriptor `fd`, with its close-on-exec, and answers 0.
fn put(listener: BorrowedFd<'_>, id: u64, made: &OwnedFd, fd: i32, socket: &Socket) -> Result<Reply, Errno> {
    crate::sys::seccomp_notif_put_fd(listener, id, made.as_fd(), fd, socket.flags.contains(OFlags::CLOEXEC))?;
    Ok(Reply::Done)
}

/// [`put`]s `made`, a socket with the name the program asked for, noted in `names` first (so
/// that the receiver hands over its `getsockname`).
fn put_named(
    names: &SocketNames,
    (listener, id): (BorrowedFd<'_>, u64),
    made: &OwnedFd,
    fd: i32,
    socket: &Socket,
) -> Result<Reply, Errno> {
    names.note(rustix::fs::fstat(made)?.st_ino);
    put(listener, id, made, fd, socket)
}

/// Whether the program's socket `inode` (at `fd`) is connected or listening already: one the
/// helper made, or, when the program could have one the helper does not know (a connection its
/// own listener accepted; a socket passed in as a standard stream), what the kernel says of it:
/// asked on a copy of the descriptor where the kernel gives one, else of the kernel's socket
/// diagnostics (slower: see [`crate::sock_diag`]). A socket never bound or connected is
/// neither.
fn in_use(loopback: &Loopback, handles: &CallHandles<'_>, fd: i32, inode: u64) -> bool {
    if loopback.connected(inode) || loopback.named(inode).is_some() {
        return true;
    }
    if !loopback.has_servers() && fd >= 3 {
        return false;
    }
    if let Some(answer) = asked_on_a_copy(handles, fd, inode) {
        return answer;
    }
    // A connection the program's own listener accepted has the call's address; a stream the
    // harness passed in may have any.
    let local = if fd < 3 { None } else { Some(loopback.source()) };
    crate::sock_diag::tcp_socket_listed(inode, local)
}

/// Whether the program's socket at `fd` listens or is connected, asked on a copy of it
/// (`pidfd_getfd`, then `SO_ACCEPTCONN` and `getpeername`). `None` where no copy can be had
/// (container runtimes' default seccomp profiles refuse `pidfd_getfd`) or the copy is not the
/// socket `inode` (the program's threads put another at `fd` meanwhile). The copy is closed at
/// once; nothing is done with it but these two questions.
fn asked_on_a_copy(handles: &CallHandles<'_>, fd: i32, inode: u64) -> Option<bool> {
    let asked;
    let copy = match handles.taken(What::Copy(fd)) {
        Some(copy) => copy,
        None => {
            asked = handles.copy(fd).ok()?;
            asked.as_fd()
        }
    };
    if rustix::fs::fstat(copy).ok()?.st_ino != inode {
        return None;
    }
    let listening = rustix::net::sockopt::socket_acceptconn(copy).ok()?;
    Some(listening || rustix::net::getpeername(copy).is_ok_and(|peer| peer.is_some()))
}

/// What the program's descriptor `fd` is (see [`Socket`]). `EBADF` if it has none; `ENOTSOCK`
/// unless it is a socket.
pub(super) fn socket(handles: &CallHandles<'_>, fd: i32) -> Result<Socket, Errno> {
    let mut opened = None;
    let (reached, inode) = socket_inode(handles, fd, &mut opened)?;
    // The kernel names a socket's protocol in an attribute of its inode, reached here through
    // lnk's own descriptor of it.
    let mut name = [0u8; 32];
    let n = rustix::fs::getxattr(
        format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&reached)),
        "system.sockprotoname",
        &mut name,
    )
    .map_err(|_| Errno::BADF)?;
    let tcp = match name[..n].strip_suffix(b"\0").unwrap_or(&name[..n]) {
        b"TCP" => Some(AddressFamily::INET),
        b"TCPv6" => Some(AddressFamily::INET6),
        _ => None,
    };
    Ok(Socket { inode, tcp, flags: descriptor_flags(handles, fd)? })
}

/// The program's socket at `fd`, as a descriptor of lnk's own (the copy the receiver took
/// with the call, else an `O_PATH` one, put in `opened`), and its inode. `EBADF` if it has
/// none; `ENOTSOCK` unless it is a socket.
fn socket_inode<'h>(
    handles: &'h CallHandles<'_>,
    fd: i32,
    opened: &'h mut Option<Handle<'h>>,
) -> Result<(BorrowedFd<'h>, u64), Errno> {
    let reached = match handles.taken(What::Copy(fd)) {
        Some(copy) => copy,
        None => {
            let reached: &'h Handle<'h> = Option::insert(opened, handles.reach(What::Fd(fd))?);
            reached.as_fd()
        }
    };
    let stat = rustix::fs::fstat(reached).map_err(|_| Errno::BADF)?;
    if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::Socket {
        return Err(Errno::NOTSOCK);
    }
    Ok((reached, stat.st_ino))
}

/// Reads a `struct sockaddr` of `len` bytes at `address` once, and decodes it.
pub(super) fn read_address(memory: &Memory, address: u64, len: i32) -> Result<SocketAddr, Errno> {
    if !(0..=SOCKADDR_MAX).contains(&len) {
        return Err(Errno::INVAL);
    }
    let mut raw = [0u8; SOCKADDR_IN6_LEN];
    let wanted = (len as usize).min(SOCKADDR_IN6_LEN);
    memory.read(address, &mut raw[..wanted])?;
    parse_sockaddr(&raw[..wanted], len as usize)
}

/// The family word of a `struct sockaddr`, when it can be read.
fn raw_family(memory: &Memory, address: u64, len: i32) -> Option<i32> {
    let mut raw = [0u8; 2];
    (len >= 2).then_some(())?;
    memory.read(address, &mut raw).ok()?;
    Some(i32::from(u16::from_ne_bytes(raw)))
}

/// `asked`, checked against the socket's `family` as the kernel checks it: an IPv6 address on
/// an IPv4 socket is `EAFNOSUPPORT`, an IPv4 one on an IPv6 socket `EINVAL`.
pub(super) fn of_family(asked: SocketAddr, family: AddressFamily) -> Result<SocketAddr, Errno> {
    match (asked, family) {
        (SocketAddr::V6(_), AddressFamily::INET) => Err(Errno::AFNOSUPPORT),
        (SocketAddr::V4(_), AddressFamily::INET6) => Err(Errno::INVAL),
        _ => Ok(asked),
    }
}

/// Decodes a `struct sockaddr` of `len` bytes (of which `raw` holds the first ones, up to a
/// `sockaddr_in6`'s size) as the kernel would for a TCP socket: `EINVAL` when too short,
/// `EAFNOSUPPORT` for any family but IPv4 and IPv6 (`AF_UNSPEC`, a disconnect, included).
pub fn parse_sockaddr(raw: &[u8], len: usize) -> Result<SocketAddr, Errno> {
    use std::net::{Ipv4Addr, Ipv6Addr, SocketAddrV4, SocketAddrV6};
    let family = match raw {
        [a, b, ..] => u16::from_ne_bytes([*a, *b]),
        _ => return Err(Errno::INVAL),
    };
    let port = |raw: &[u8]| u16::from_be_bytes([raw[2], raw[3]]);
    match i32::from(family) {
        libc::AF_INET if len >= SOCKADDR_IN_LEN && raw.len() >= SOCKADDR_IN_LEN => {
            let ip = Ipv4Addr::new(raw[4], raw[5], raw[6], raw[7]);
            Ok(SocketAddrV4::new(ip, port(raw)).into())
        }
        libc::AF_INET6 if len >= SOCKADDR_IN6_MIN_LEN && raw.len() >= SOCKADDR_IN6_MIN_LEN => {
            let flowinfo = u32::from_be_bytes([raw[4], raw[5], raw[6], raw[7]]);
            let mut octets = [0u8; 16];
            octets.copy_from_slice(&raw[8..24]);
            let scope = match raw.get(24..28) {
                Some(s) => u32::from_ne_bytes([s[0], s[1], s[2], s[3]]),
                None => 0,
            };
            Ok(SocketAddrV6::new(Ipv6Addr::from(octets), port(raw), flowinfo, scope).into())
        }
        libc::AF_INET | libc::AF_INET6 => Err(Errno::INVAL),
        _ => Err(Errno::AFNOSUPPORT),
    }
}

/// `address` as a `struct sockaddr` of `family` (an IPv4 address v4-mapped in IPv6).
fn encode_sockaddr(address: SocketAddr, family: AddressFamily) -> Vec<u8> {
    let ip6 = match (address, family) {
        (SocketAddr::V4(v4), AddressFamily::INET) => {
            let mut raw = vec![0u8; SOCKADDR_IN_LEN];
            raw[..2].copy_from_slice(&(libc::AF_INET as u16).to_ne_bytes());
            raw[2..4].copy_from_slice(&v4.port().to_be_bytes());
            raw[4..8].copy_from_slice(&v4.ip().octets());
            return raw;
        }
        (SocketAddr::V4(v4), _) => v4.ip().to_ipv6_mapped(),
        (SocketAddr::V6(v6), _) => *v6.ip(),
    };
    let mut raw = vec![0u8; SOCKADDR_IN6_LEN];
    raw[..2].copy_from_slice(&(libc::AF_INET6 as u16).to_ne_bytes());
    raw[2..4].copy_from_slice(&address.port().to_be_bytes());
    raw[8..24].copy_from_slice(&ip6.octets());
    raw
}

/// The status flags of the program's descriptor `fd` (its `O_NONBLOCK`, and `O_CLOEXEC` as
/// `/proc` shows the descriptor's close-on-exec), from its `fdinfo`.
fn descriptor_flags(handles: &CallHandles<'_>, fd: i32) -> Result<OFlags, Errno> {
    let info = handles.reach(What::FdInfo(fd)).map_err(|_| Errno::BADF)?;
    let text = super::handles::read_small(&info).map_err(|_| Errno::BADF)?;
    parse_fdinfo_flags(&text).ok_or(Errno::BADF)
}

/// The `flags:` line of a `/proc/<pid>/fdinfo/<fd>` file (octal).
fn parse_fdinfo_flags(text: &[u8]) -> Option<OFlags> {
    let text = std::str::from_utf8(text).ok()?;
    let line = text.lines().find_map(|l| l.strip_prefix("flags:"))?;
    let bits = u32::from_str_radix(line.trim(), 8).ok()?;
    Some(OFlags::from_bits_retain(bits))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::fs::Mode;

    fn v4(port: u16, ip: [u8; 4], len: usize) -> Vec<u8> {
        let mut raw = vec![0u8; len];
        raw[..2].copy_from_slice(&(libc::AF_INET as u16).to_ne_bytes());
        raw[2..4].copy_from_slice(&port.to_be_bytes());
        raw[4..8].copy_from_slice(&ip);
        raw
    }

    #[test]
    fn addresses_are_read_as_the_kernel_reads_them() {
        assert_eq!(parse_sockaddr(&v4(3128, [127, 0, 0, 1], 16), 16), Ok("127.0.0.1:3128".parse().unwrap()));
        // Longer than needed is fine; shorter is not.
        assert_eq!(parse_sockaddr(&v4(80, [192, 0, 2, 1], 28), 128), Ok("192.0.2.1:80".parse().unwrap()));
        assert_eq!(parse_sockaddr(&v4(80, [192, 0, 2, 1], 8), 8), Err(Errno::INVAL));
        let mut six = vec![0u8; 28];
        six[..2].copy_from_slice(&(libc::AF_INET6 as u16).to_ne_bytes());
        six[2..4].copy_from_slice(&3128u16.to_be_bytes());
        six[8..24].copy_from_slice(&"::ffff:127.0.0.1".parse::<std::net::Ipv6Addr>().unwrap().octets());
        assert_eq!(parse_sockaddr(&six, 28), Ok("[::ffff:127.0.0.1]:3128".parse().unwrap()));
        assert_eq!(parse_sockaddr(&six[..24], 24), Ok("[::ffff:127.0.0.1]:3128".parse().unwrap()));
        assert_eq!(parse_sockaddr(&six[..20], 20), Err(Errno::INVAL));
        let mut unix = vec![0u8; 16];
        unix[..2].copy_from_slice(&(libc::AF_UNIX as u16).to_ne_bytes());
        assert_eq!(parse_sockaddr(&unix, 16), Err(Errno::AFNOSUPPORT));
        assert_eq!(parse_sockaddr(&[0, 0], 2), Err(Errno::AFNOSUPPORT), "AF_UNSPEC");
        assert_eq!(parse_sockaddr(&[2], 1), Err(Errno::INVAL));
        // And written back as the kernel writes them, each family in its own.
        for (address, family) in [
            ("127.0.0.1:8000", AddressFamily::INET),
            ("[::1]:8000", AddressFamily::INET6),
            ("[::ffff:127.0.0.1]:0", AddressFamily::INET6),
        ] {
            let address: SocketAddr = address.parse().unwrap();
            let raw = encode_sockaddr(address, family);
            assert_eq!(parse_sockaddr(&raw, raw.len()), Ok(address));
        }
        assert_eq!(of_family("[::1]:1".parse().unwrap(), AddressFamily::INET), Err(Errno::AFNOSUPPORT));
        assert_eq!(of_family("127.0.0.1:1".parse().unwrap(), AddressFamily::INET6), Err(Errno::INVAL));
    }

    #[test]
    fn fdinfo_flags_are_octal() {
        let info = b"pos:\t0\nflags:\t02004002\nmnt_id:\t9\nino:\t123\n";
        let flags = parse_fdinfo_flags(info).unwrap();
        assert!(
            flags.contains(OFlags::NONBLOCK)
                && flags.contains(OFlags::CLOEXEC)
                && flags.contains(OFlags::RDWR)
        );
        assert!(!parse_fdinfo_flags(b"flags:\t02\n").unwrap().contains(OFlags::NONBLOCK));
        assert_eq!(parse_fdinfo_flags(b"pos:\t0\n"), None);
        assert_eq!(parse_fdinfo_flags(b"flags:\tzz\n"), None);
    }

    #[test]
    fn a_socket_is_known_by_its_protocol_and_inode() {
        let me = rustix::thread::gettid().as_raw_nonzero().get() as u32;
        let handles = CallHandles::of_thread(me);
        let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let (pair, _other) = std::os::unix::net::UnixStream::pair().unwrap();
        use std::os::fd::AsRawFd as _;
        let seen = socket(&handles, tcp.as_raw_fd()).unwrap();
        assert_eq!(seen.tcp, Some(AddressFamily::INET));
        assert_eq!(seen.inode, rustix::fs::fstat(&tcp).unwrap().st_ino);
        assert_eq!(socket(&handles, pair.as_raw_fd()).unwrap().tcp, None);
        let file = std::fs::File::open("/proc/self/stat").unwrap();
        assert_eq!(socket(&handles, file.as_raw_fd()).err(), Some(Errno::NOTSOCK));
        assert_eq!(socket(&handles, 100_000).err(), Some(Errno::BADF));
        // A FIFO at the number is never opened for reading (it would block): only looked at.
        let dir = std::env::temp_dir()
            .join(format!("lnk-sockets-fifo-{}-{me}", rustix::process::getuid().as_raw()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            dir.join("f"),
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let fifo = rustix::fs::open(dir.join("f"), OFlags::RDONLY | OFlags::NONBLOCK, Mode::empty()).unwrap();
        assert_eq!(socket(&handles, fifo.as_raw_fd()).err(), Some(Errno::NOTSOCK));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
