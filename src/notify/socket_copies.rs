//! Held TCP socket calls in the Landlock-only mode, made on the program's own socket: the copy
//! of its descriptor the receiver took with the call (`pidfd_getfd`, [`super::handles::Taking`]).
//! Where the kernel gives no copy (container runtimes' default seccomp profiles refuse
//! `pidfd_getfd`), or the socket is one this way does not take (an IPv6 socket with
//! `IPV6_V6ONLY`, which the call's v4-mapped address cannot reach; one bound by anyone but the
//! helper), [`super::sockets`] makes a socket of the helper's and puts it in the program's
//! place, as before; the two agree on what is where (see [`crate::proxy::loopback`]).
//!
//! - `connect(fd, address, len)`: the address is read once; where the call's loopback routes it
//!   (the proxy, a listed `tcp` address's forwarder, one of the program's own servers), the
//!   copy is bound on the call's address with no port (unless it is there already: a socket
//!   the program bound, or one connected before) and connected to that listener, never
//!   blocking ([`super::pending`]); the connection is admitted for the proxy. Anything else is
//!   refused as before, and the socket is left as it was.
//! - `bind(fd, address, len)` on loopback or the wildcard: the copy is bound on the call's
//!   address, on a port of its band ([`Loopback::bind_program_socket`]).
//! - `listen(fd, backlog)`: the copy listens where it was bound, or, never bound, where the
//!   wildcard is placed ([`Loopback::listen_program_socket`]).
//!
//! Why on the program's socket rather than one of the helper's: putting a socket in the
//! program's place (`SECCOMP_IOCTL_NOTIF_ADDFD`) makes the program's thread run to take it and
//! then wakes the helper again, two wake-ups that the kernel sends to the other, sleeping CPU
//! (`ADDFD` wakes without `SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP`'s hint): 60–75 µs of a held
//! connect's 180 on the machine bench/README.md names. And the program keeps what it set on
//! its socket (`TCP_NODELAY`, buffer sizes), as the kernel would.
//!
//! What is the same either way: the program's socket never connects, binds or listens by its
//! own call (each is held, and the helper chooses every address); the address is read once;
//! nothing of the host's is reached or taken. What differs, and why it is safe: the helper acts
//! on a socket the program can act on too, between the helper's steps, from another thread.
//! What it can do there is set options and the file's flags:
//!
//! - none lets it reach another address: the helper binds and connects only to addresses of its
//!   own choosing (`IP_TRANSPARENT` needs a capability the program has not; `IP_FREEBIND` only
//!   lets a bind take an address not the host's, and the helper's are the host's loopback);
//! - `IP_BIND_ADDRESS_NO_PORT`, which the helper sets before it binds a socket to connect (so
//!   that `connect` chooses the port, taking none from the host's automatic range while the
//!   connection lasts), the program may not set at all (seccomp answers `EPERM`: cleared in
//!   between, that bind took such a port, and a loop of connects left the host's other processes
//!   without ports: found in review); a bind that took a port all the same fails closed;
//! - a cleared `SO_REUSEPORT` set again shares a port only with the program's own sockets, or
//!   another call's of the same person that drew the same random address;
//! - a file made blocking again between the helper's `O_NONBLOCK` and its `connect` makes the
//!   connect block, which the receiver interrupts ([`super::pending`]);
//! - a connection is admitted for the proxy only once the kernel says the socket's peer is the
//!   proxy's listener (an admission made before, for a connect that was not going there, stayed
//!   for a stranger to take: found in review).
//!
//! A thread that closes the descriptor or puts another socket there meanwhile changes nothing
//! the helper acts on: the copy is the socket the call named. What the program sees: its socket
//! keeps `IP_BIND_ADDRESS_NO_PORT` (a connecting one) and `SO_REUSEADDR` (one bound for a
//! server); its file's flags, for the moment of a connect, are non-blocking, and are then set
//! back to what the helper read (a change another thread made in that moment is lost). A
//! connect asked again of a socket the helper connected, or began to, is made on that socket,
//! whose kernel answers it as bare (0 once connected, then `EISCONN`; `EALREADY` while under
//! way); a socket listening, connected by the kernel (an accepted one) or bound by anyone else
//! is left to [`super::sockets`], untouched.
//!
//! Trusted with: where the program's TCP connections and listeners go in the Landlock-only
//! mode, as [`super::sockets`] is. What it trusts: the kernel's copy of the program's
//! descriptor and its socket options, and [`crate::proxy::loopback`].

use std::os::fd::BorrowedFd;
use std::sync::Arc;

use rustix::io::Errno;
use rustix::net::AddressFamily;

use super::Reply;
use super::handles::{CallHandles, What};
use super::memory::Memory;
use super::pending::{Wait, start};
use super::request::{Address, SocketCall};
use super::socket_names::SocketNames;
use super::sockets::{of_family, read_address};
use crate::proxy::loopback::{Loopback, may_listen_on};

/// Performs one held `connect`, `bind` or `listen` (whose thread's handles are `handles`) on the
/// copy the receiver took with it. `None` where this way does not take the call (no copy; not
/// a TCP socket; see the module's documentation): [`super::sockets`] then does.
pub(super) fn perform(
    (id, names): (u64, &SocketNames),
    loopback: &Arc<Loopback>,
    handles: &CallHandles<'_>,
    memory: &Memory,
    call: SocketCall,
) -> Option<Result<Reply, Errno>> {
    let fd = match call {
        SocketCall::Connect(Address { fd, .. }) | SocketCall::Bind(Address { fd, .. }) => fd,
        SocketCall::Listen { fd, .. } => fd,
        SocketCall::Name { .. } => return None,
    };
    let copy = handles.taken(What::Copy(fd))?;
    let family = tcp_family(copy)?;
    let inode = rustix::fs::fstat(copy).ok()?.st_ino;
    Some(match call {
        SocketCall::Connect(Address { address, len, .. }) => {
            let asked = match read_address(memory, address, len).and_then(|a| of_family(a, family)) {
                Ok(asked) => asked,
                Err(e) => return Some(Err(e)),
            };
            let bound = loopback.bound(inode).is_some();
            if !bound && has_port(copy) {
                // One the helper connected, or started to: as the kernel answers, touching
                // nothing (found in review: a second connect while the first waited went the
                // old way, which put a socket of the helper's in its place).
                if loopback.connected(inode) && loopback.server(inode).is_none() {
                    return Some(again(id, loopback, copy, (asked, family), inode));
                }
                // Listening, connected by the kernel (accepted), bound by someone else: as
                // before, which answers as the kernel does, and touches nothing of it.
                return None;
            }
            // Refused before the socket is touched: it stays as it was.
            let target = match loopback.target(asked, family) {
                Ok(target) => target,
                Err(e) => return Some(Err(e)),
            };
            if !bound {
                match loopback.bind_source(copy, family) {
                    Ok(()) => {}
                    // Bound elsewhere meanwhile: as before.
                    Err(Errno::INVAL) => return None,
                    Err(e) => return Some(Err(e)),
                }
            }
            let to = target.address;
            let made = start(id, copy, Wait::Tcp { target: Some(to) }, |c| rustix::net::connect(c, &to));
            match made {
                Ok(Reply::Later(mut waiting)) => {
                    loopback.connecting(inode);
                    waiting.note_when_connected(Arc::clone(loopback), target, inode);
                    if bound {
                        loopback.unbind(inode);
                    }
                    Ok(Reply::Later(waiting))
                }
                // Connected, or (non-blocking) under way and on loopback mostly done: noted if
                // it is connected to the target now.
                made @ (Ok(_) | Err(Errno::INPROGRESS)) => {
                    loopback.connected_to(&target, copy, inode);
                    if bound {
                        // No longer a bound socket of the program's: its port counts until
                        // closed.
                        loopback.unbind(inode);
                    }
                    made
                }
                made => made,
            }
        }
        SocketCall::Bind(Address { address, len, .. }) => {
            // Bound, listening or connected already (a connection the program's listener
            // accepted too): as before, which answers as the kernel does.
            if has_port(copy) {
                return None;
            }
            let asked = match read_address(memory, address, len).and_then(|a| of_family(a, family)) {
                Ok(asked) => asked,
                Err(e) => return Some(Err(e)),
            };
            if !may_listen_on(asked.ip()) {
                loopback.refuse_listen(asked);
                return Some(Err(Errno::ADDRNOTAVAIL));
            }
            // Noted first, so that the receiver hands over the `getsockname` that may follow the
            // answer.
            names.note(inode);
            match loopback.bind_program_socket(copy, inode, asked, family) {
                // Bound (or connected) by someone else (a socket passed in): as before.
                Err(Errno::INVAL) => return None,
                made => made.map(|()| Reply::Done),
            }
        }
        SocketCall::Listen { backlog, .. } => {
            if loopback.server(inode).is_some() {
                return Some(Ok(Reply::Done));
            }
            // Connected, or bound by someone else: as before.
            if loopback.bound(inode).is_none() && has_port(copy) {
                return None;
            }
            names.note(inode);
            match loopback.listen_program_socket(copy, inode, family, backlog) {
                // Bound (or connected) by someone else (a socket passed in): as before.
                Err(Errno::INVAL) => return None,
                made => made.map(|()| Reply::Done),
            }
        }
        SocketCall::Name { .. } => return None,
    })
}

/// A connect asked again of a socket the helper connected, or began to (`inode`, its copy
/// `copy`; `asked`, the address, in the socket's family): made on that socket, whose kernel
/// answers it as bare (0 the first time after the connection is made, then `EISCONN`;
/// `EALREADY` while under way, or for a blocking socket a wait with the first), to where it
/// goes (its peer; while under way, where `asked` is routed: the kernel looks at no more than
/// its family). Noted as the first was: admitted once a socket, once connected.
fn again(
    id: u64,
    loopback: &Arc<Loopback>,
    copy: BorrowedFd<'_>,
    (asked, family): (std::net::SocketAddr, AddressFamily),
    inode: u64,
) -> Result<Reply, Errno> {
    let peer =
        rustix::net::getpeername(copy).ok().flatten().and_then(|p| std::net::SocketAddr::try_from(p).ok());
    let target = match peer {
        Some(peer) => loopback.target_at(peer),
        None => loopback.target(asked, family).map_err(|_| Errno::ALREADY)?,
    };
    let to = target.address;
    match start(id, copy, Wait::Tcp { target: Some(to) }, |c| rustix::net::connect(c, &to)) {
        Ok(Reply::Later(mut waiting)) => {
            waiting.note_when_connected(Arc::clone(loopback), target, inode);
            Ok(Reply::Later(waiting))
        }
        Ok(reply) => {
            loopback.connected_to(&target, copy, inode);
            Ok(reply)
        }
        // Under way, or connected: still one the helper connected.
        made @ Err(Errno::ALREADY | Errno::ISCONN | Errno::INPROGRESS) => made,
        // Failed: no longer (the old way would take it for connected).
        Err(e) => {
            loopback.not_connected(inode);
            Err(e)
        }
    }
}

/// Whether `copy` has a port: bound, listening or connected (a socket bound on the call's
/// address with no port, by a connect that failed, has none).
fn has_port(copy: BorrowedFd<'_>) -> bool {
    crate::proxy::loopback::local_address(copy).map_or(true, |own| own.port() != 0)
}

/// The family of `copy`, if it is a TCP socket this way takes: `AF_INET`, or `AF_INET6`
/// without `IPV6_V6ONLY` (the call's address is v4-mapped there).
fn tcp_family(copy: BorrowedFd<'_>) -> Option<AddressFamily> {
    use rustix::net::sockopt;
    if sockopt::socket_protocol(copy).ok()? != Some(rustix::net::ipproto::TCP) {
        return None;
    }
    match sockopt::socket_domain(copy).ok()? {
        AddressFamily::INET => Some(AddressFamily::INET),
        AddressFamily::INET6 if !sockopt::ipv6_v6only(copy).ok()? => Some(AddressFamily::INET6),
        _ => None,
    }
}
