//! The own world's loopback (the interface up, an address of the call's own), a socket option of
//! the held connects, and, in a glibc build only, the NSS services the proxy's name lookups use
//! (lnk links musl on x86_64, whose lookups have none: see `.cargo/config.toml`).
//!
//! Trusted with: making exactly these interface, socket and (glibc builds) NSS calls, soundly:
//! the own world's loopback (where the proxy's door listens), the held connects' socket option,
//! and `files dns` for names. What it trusts: the kernel's `ioctl` and socket-option layouts as
//! `libc` gives them, glibc's `__nss_configure_lookup`, and its callers for the addresses.

use std::io;

/// An `ifreq` naming `name` (NUL-terminated, at most 16 bytes), everything else zero.
fn interface_request(name: &[u8]) -> libc::ifreq {
    // SAFETY: ifreq is plain data; zeroed is a valid value.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    for (slot, byte) in request.ifr_name.iter_mut().zip(name) {
        *slot = *byte as libc::c_char;
    }
    request
}

fn datagram_socket(family: rustix::net::AddressFamily) -> Result<std::os::fd::OwnedFd, io::Error> {
    let flags = rustix::net::SocketFlags::CLOEXEC;
    Ok(rustix::net::socket_with(family, rustix::net::SocketType::DGRAM, flags, None)?)
}

/// Sets `IFF_UP` on the loopback interface of the caller's network namespace (a new namespace's
/// `lo` starts down).
pub fn bring_loopback_up() -> Result<(), io::Error> {
    use std::os::fd::AsRawFd as _;
    let socket = datagram_socket(rustix::net::AddressFamily::INET)?;
    let mut request = interface_request(b"lo\0");
    // SAFETY: SIOCGIFFLAGS and SIOCSIFFLAGS read and write the ifreq, a live local of the size
    // the kernel expects; `socket` is open for both calls. The flags are the union's short member.
    unsafe {
        if libc::ioctl(socket.as_raw_fd(), libc::SIOCGIFFLAGS as _, &mut request) != 0 {
            return Err(io::Error::last_os_error());
        }
        request.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        if libc::ioctl(socket.as_raw_fd(), libc::SIOCSIFFLAGS as _, &request) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Adds `address` to the loopback interface of the caller's network namespace, as a /32 on the
/// alias `lo:N` (`N` = `alias`), so a listening socket can be bound to it.
pub fn add_loopback_address_v4(address: std::net::Ipv4Addr, alias: u8) -> Result<(), io::Error> {
    use std::os::fd::AsRawFd as _;
    let socket = datagram_socket(rustix::net::AddressFamily::INET)?;
    let name = format!("lo:{alias}\0");
    let set = |request_code: libc::c_ulong, value: std::net::Ipv4Addr| {
        let mut request = interface_request(name.as_bytes());
        let sockaddr = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: 0,
            sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(value.octets()) },
            sin_zero: [0; 8],
        };
        // SAFETY: a sockaddr_in fits in the union's sockaddr (both 16 bytes); the ioctl reads the
        // ifreq, a live local, while `socket` is open.
        unsafe {
            std::ptr::addr_of_mut!(request.ifr_ifru).cast::<libc::sockaddr_in>().write(sockaddr);
            if libc::ioctl(socket.as_raw_fd(), request_code as _, &request) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    };
    set(libc::SIOCSIFADDR, address)?;
    set(libc::SIOCSIFNETMASK, std::net::Ipv4Addr::BROADCAST)
}

/// Adds `address` (a /128) to the loopback interface of the caller's network namespace.
pub fn add_loopback_address_v6(address: std::net::Ipv6Addr) -> Result<(), io::Error> {
    use std::os::fd::AsRawFd as _;
    let socket = datagram_socket(rustix::net::AddressFamily::INET6)?;
    let mut index_request = interface_request(b"lo\0");
    // SAFETY: SIOCGIFINDEX writes the union's index of a live local ifreq.
    let index = unsafe {
        if libc::ioctl(socket.as_raw_fd(), libc::SIOCGIFINDEX as _, &mut index_request) != 0 {
            return Err(io::Error::last_os_error());
        }
        index_request.ifr_ifru.ifru_ifindex
    };
    let request = libc::in6_ifreq {
        ifr6_addr: libc::in6_addr { s6_addr: address.octets() },
        ifr6_prefixlen: 128,
        ifr6_ifindex: index,
    };
    // SAFETY: SIOCSIFADDR on an AF_INET6 socket reads an in6_ifreq, a live local.
    if unsafe { libc::ioctl(socket.as_raw_fd(), libc::SIOCSIFADDR as _, &request) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `setsockopt(IP_BIND_ADDRESS_NO_PORT, on)`: on, a later `bind` to port 0 takes the address
/// only, and `connect` chooses the port, unique for the connection's four-tuple, as it would for
/// a socket never bound. (A port `bind` chose is withheld from every other socket's automatic
/// choice for as long as it is bound, `TIME_WAIT` included.)
pub fn set_bind_address_no_port(socket: std::os::fd::BorrowedFd<'_>, on: bool) -> Result<(), io::Error> {
    use std::os::fd::AsRawFd as _;
    let on = libc::c_int::from(on);
    // SAFETY: a valid descriptor, and a pointer to an int that outlives the call, with its size.
    let ret = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_BIND_ADDRESS_NO_PORT,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if ret == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// Under musl (lnk's build on x86_64, see `.cargo/config.toml`): nothing to do. musl's
/// `getaddrinfo` reads `/etc/hosts` and asks DNS (`resolv.conf`), and has no NSS modules.
#[cfg(target_env = "musl")]
pub fn resolve_hosts_with_files_and_dns() -> io::Result<()> {
    Ok(())
}

/// Makes glibc's `getaddrinfo` in this process read `/etc/hosts` and ask DNS (`files dns`),
/// whatever `nsswitch.conf`'s `hosts` line names. Both are built into glibc; any other NSS
/// module (`mdns4_minimal`, `resolve`, `myhostname`) is a shared library that a statically
/// linked lnk (see `.cargo/config.toml`) would load beside its own copy of glibc, which is safe
/// only while the system's glibc is the very version lnk was built with. The proxy reaches
/// public names, which DNS answers (systemd-resolved's stub included); it refuses local
/// addresses anyway. Call before any thread resolves a name: glibc does not lock this setting.
#[cfg(not(target_env = "musl"))]
pub fn resolve_hosts_with_files_and_dns() -> io::Result<()> {
    unsafe extern "C" {
        // glibc's <nss.h>: overrides the service line of one NSS database for this process.
        fn __nss_configure_lookup(db: *const libc::c_char, service_line: *const libc::c_char) -> libc::c_int;
    }
    // SAFETY: both arguments are NUL-terminated static strings, valid for as long as glibc may
    // look at them. The caller makes the call once, before any thread of this process looks a
    // name up, so no lookup reads the table while it changes.
    match unsafe { __nss_configure_lookup(c"hosts".as_ptr(), c"files dns".as_ptr()) } {
        0 => Ok(()),
        _ => Err(io::Error::other("glibc refused the hosts lookup `files dns`")),
    }
}
