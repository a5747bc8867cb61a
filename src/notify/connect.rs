//! Held connects: in the Landlock-only mode with `[internet]`, the helper makes each of the
//! program's TCP connections itself, to the call's proxy and listed `tcp` addresses only (see
//! [`crate::proxy::host_door`] for why and where they go).
//!
//! For a held `connect(fd, address, len)` the helper reads the address once from the program's
//! memory and decodes it ([`parse_sockaddr`]), checks that `fd` names a socket of the program's,
//! asks the router for a connection of its own, and puts that socket at `fd` in the program's
//! descriptor table (`SECCOMP_IOCTL_NOTIF_ADDFD` with `SETFD`), with the program's
//! `O_NONBLOCK` and close-on-exec. The held call is then answered `0` (or the connect's error);
//! it is never let go on into the kernel, so the program's socket itself never connects and
//! nothing it writes into its memory afterwards is read.
//!
//! Not `pidfd_getfd`: container runtimes' default seccomp profiles refuse it (see
//! [`super::memory`]); the helper needs no descriptor of the program's. What the program loses
//! is what it set on its socket before connecting (`TCP_NODELAY`, a bound address): the socket
//! it gets is new, of the family of the address it asked for. A thread that swaps `fd` for
//! another descriptor while the call is held gets the connection at that number all the same:
//! its own table, and a connection it may have.

use std::os::fd::{AsFd as _, BorrowedFd, OwnedFd};

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use super::memory::Memory;
use super::request::Connect;
use crate::proxy::host_door::Router;

/// `sizeof(struct sockaddr_storage)`: the longest address the kernel takes.
const SOCKADDR_MAX: i32 = 128;
/// `sizeof(struct sockaddr_in)`; the kernel refuses a shorter IPv4 address.
const SOCKADDR_IN_LEN: usize = 16;
/// `SIN6_LEN_RFC2133`: the kernel takes an IPv6 address without its scope id.
const SOCKADDR_IN6_MIN_LEN: usize = 24;
/// `sizeof(struct sockaddr_in6)`.
const SOCKADDR_IN6_LEN: usize = 28;

/// Performs one held `connect`, answering for the program.
pub fn perform(
    listener: BorrowedFd<'_>,
    id: u64,
    router: &Router,
    process: &OwnedFd,
    memory: &Memory,
    request: Connect,
) -> Result<(), Errno> {
    let Connect { fd, address, len } = request;
    if !(0..=SOCKADDR_MAX).contains(&len) {
        return Err(Errno::INVAL);
    }
    let mut raw = [0u8; SOCKADDR_IN6_LEN];
    let wanted = (len as usize).min(SOCKADDR_IN6_LEN);
    memory.read(address, &mut raw[..wanted])?;
    let asked = parse_sockaddr(&raw[..wanted], len as usize)?;
    let flags = descriptor_flags(process, fd)?;
    let socket = router.connect(asked, flags.contains(OFlags::NONBLOCK))?;
    crate::sys::seccomp_notif_put_fd(listener, id, socket.as_fd(), fd, flags.contains(OFlags::CLOEXEC))
}

/// Decodes a `struct sockaddr` of `len` bytes (of which `raw` holds the first ones, up to a
/// `sockaddr_in6`'s size) as the kernel would for a TCP socket: `EINVAL` when too short,
/// `EAFNOSUPPORT` for any family but IPv4 and IPv6 (`AF_UNSPEC`, a disconnect, included).
pub fn parse_sockaddr(raw: &[u8], len: usize) -> Result<std::net::SocketAddr, Errno> {
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

/// The status flags of the program's descriptor `fd` (its `O_NONBLOCK`, and `O_CLOEXEC` as
/// `/proc` shows the descriptor's close-on-exec), from the held thread's `/proc` folder.
/// `EBADF` if it has none; `ENOTSOCK` unless it is a socket.
fn descriptor_flags(process: &OwnedFd, fd: i32) -> Result<OFlags, Errno> {
    if fd < 0 {
        return Err(Errno::BADF);
    }
    let named = rustix::fs::readlinkat(process, format!("fd/{fd}"), Vec::new()).map_err(|_| Errno::BADF)?;
    if !named.as_bytes().starts_with(b"socket:") {
        return Err(Errno::NOTSOCK);
    }
    let info =
        rustix::fs::openat(process, format!("fdinfo/{fd}"), OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())
            .map_err(|_| Errno::BADF)?;
    let mut text = [0u8; 512];
    let n = rustix::io::read(&info, &mut text).map_err(|_| Errno::BADF)?;
    parse_fdinfo_flags(&text[..n]).ok_or(Errno::BADF)
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
}
