//! The call's loopback, on the program's own sockets: where the Landlock-only mode's held
//! `connect`, `bind` and `listen` put a socket of the program's when the helper acts on it
//! through a copy of its descriptor (see [`crate::notify::socket_copies`]), rather than on a
//! socket of the helper's put in its place ([`Loopback::connect`], [`Loopback::bind`],
//! [`Loopback::listen`]). The addresses, ports and bookkeeping are the same either way (see the
//! parent module): a program's socket is bound on the call's address, on a port of its band
//! (or, to connect, with no port: `connect` chooses one), and connects only where
//! [`Loopback::route`] says.
//!
//! What differs: the socket is the program's, so it may carry options the program set. Each
//! step here sets what the helper relies on (`SO_REUSEPORT` cleared, `IP_BIND_ADDRESS_NO_PORT`
//! for a connect's source) right before it binds, and binds and connects only to addresses of
//! the helper's choosing; see `crate::notify::socket_copies` for what a program that changes
//! its socket's options between the steps can and cannot gain.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::BorrowedFd;

use rustix::io::Errno;
use rustix::net::AddressFamily;

use super::{
    Admission, Loopback, MAX_SERVERS, canonical, in_family, local_address, lock, make_room, refused_errno,
};

/// Where a program's connect goes (see [`Loopback::target`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    /// The listener, in the family of the program's socket.
    pub address: SocketAddr,
    /// Whether it is the proxy's or a forwarder's, which serve only connections admitted.
    pub routed: bool,
}

impl Loopback {
    /// Binds the program's own `socket` (a copy of its descriptor; its inode `inode`, of
    /// `family`) for its `bind` of `asked`, where [`Loopback::bind`] binds a socket it makes: on
    /// the call's address, on a port of its band, neither listening nor connected. No socket is
    /// put in its place, and what the program set on it is kept, but `SO_REUSEPORT` (cleared:
    /// should the program set it again meanwhile, the port is shared only with its own sockets,
    /// or another call's that drew the same random address and port, its own user's).
    /// `EADDRINUSE` as for [`Loopback::listen`]; `EINVAL`, as the kernel says, for a socket
    /// bound or connected already.
    pub fn bind_program_socket(
        &self,
        socket: BorrowedFd<'_>,
        inode: u64,
        asked: SocketAddr,
        family: AddressFamily,
    ) -> Result<(), Errno> {
        let mut servers = lock(&self.servers);
        let mut bound = lock(&self.bound);
        make_room(&mut servers, &mut bound, asked)?;
        drop(servers);
        let server = self.place_in_band(socket, inode, asked, family)?;
        bound.0.push(server);
        Ok(())
    }

    /// Makes the program's own `socket` (a copy; its inode `inode`, of `family`) listen, with
    /// the program's `backlog`, for its `listen`: where it was bound
    /// ([`Loopback::bind_program_socket`], or [`Loopback::bind`], whose socket the program
    /// holds), or, never bound (where the kernel would bind the wildcard, on the host's every
    /// interface), bound first as for the wildcard, as [`Loopback::listen`] does. `EADDRINUSE`
    /// as there; `EINVAL`, as the kernel says, for a socket connected (or bound by anyone else).
    pub fn listen_program_socket(
        &self,
        socket: BorrowedFd<'_>,
        inode: u64,
        family: AddressFamily,
        backlog: i32,
    ) -> Result<(), Errno> {
        let mut servers = lock(&self.servers);
        let mut bound = lock(&self.bound);
        let server = match bound.0.iter().position(|s| s.inode == inode) {
            Some(at) => {
                rustix::net::sockopt::set_socket_reuseport(socket, false)?;
                rustix::net::listen(socket, backlog)?;
                bound.0.remove(at)
            }
            None => {
                let wildcard = match family {
                    AddressFamily::INET6 => SocketAddr::from((Ipv6Addr::UNSPECIFIED, 0)),
                    _ => SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)),
                };
                make_room(&mut servers, &mut bound, wildcard)?;
                let server = self.place_in_band(socket, inode, wildcard, family)?;
                if let Err(e) = rustix::net::listen(socket, backlog) {
                    // Bound, as a bound socket it stays: its port counts until closed.
                    bound.0.push(server);
                    return Err(e);
                }
                server
            }
        };
        drop(bound);
        servers.push(server);
        let mut made = lock(&self.made);
        if made.len() < MAX_SERVERS {
            made.push(server);
        }
        Ok(())
    }

    /// The listener a connect to `asked` goes to, in `family` (the program's socket's), if the
    /// program may connect there; else refused as a namespace with loopback only would refuse
    /// it, and named in the log.
    pub fn target(&self, asked: SocketAddr, family: AddressFamily) -> Result<Target, Errno> {
        let canonical_asked = SocketAddr::new(canonical(asked.ip()), asked.port());
        let routed = self.routes.iter().any(|(a, _)| *a == canonical_asked);
        match self.route(asked) {
            Some(local) => Ok(Target { address: in_family(family, local), routed }),
            None => {
                self.refuse(asked);
                Err(refused_errno(asked.ip()))
            }
        }
    }

    /// The listener at `address` (a connection's peer) as a target: routed if it is the proxy's
    /// or a forwarder's. Nothing is refused or named.
    pub fn target_at(&self, address: SocketAddr) -> Target {
        let at = SocketAddr::new(canonical(address.ip()), address.port());
        let routed = self.routes.iter().any(|(_, l)| SocketAddr::new(canonical(l.ip()), l.port()) == at);
        Target { address, routed }
    }

    /// Readies the program's own `socket` (a copy, of `family`) to connect from the call's
    /// address, as the helper's connecting sockets do: bound there with no port
    /// (`IP_BIND_ADDRESS_NO_PORT`: `connect` chooses one, for that connection alone; the program
    /// may not clear it, see `crate::sandbox::seccomp`). A socket on the call's address with no
    /// port already (a connect that failed) is left as it is. `EINVAL` for a socket bound
    /// anywhere else, or with a port; `EADDRNOTAVAIL`, failing closed, should the bind have
    /// taken a port after all.
    pub fn bind_source(&self, socket: BorrowedFd<'_>, family: AddressFamily) -> Result<(), Errno> {
        crate::sys::set_bind_address_no_port(socket, true).map_err(|_| Errno::INVAL)?;
        // Test builds only: the option is cleared in between, as a thread of the program's could
        // if seccomp let it (see `crate::sandbox::seccomp`).
        #[cfg(feature = "fault-points")]
        if crate::fault::fails("held-connect-source-takes-a-port") {
            crate::sys::set_bind_address_no_port(socket, false).map_err(|_| Errno::INVAL)?;
        }
        let bound = rustix::net::bind(socket, &self.address_in(family, 0));
        let own = local_address(socket).map_err(|_| Errno::INVAL)?;
        match bound {
            Ok(()) if own.port() != 0 => Err(Errno::ADDRNOTAVAIL),
            Ok(()) => Ok(()),
            Err(Errno::INVAL) if own.port() == 0 && canonical(own.ip()) == IpAddr::V4(self.source) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Notes the connection the program's `socket` (a copy; its inode `inode`) makes from the
    /// call's address (see [`Loopback::bind_source`]) to `target`: remembered as one the helper
    /// began ([`Loopback::connecting`]); and admitted for the proxy to serve once, where the
    /// target is the proxy's or a forwarder's listener (the program's own servers take any
    /// connection, as a server does), only once the kernel says the socket's peer is that
    /// listener, and once a socket. A connect under way is noted again when it is done (see
    /// `crate::notify::pending`): an admission made before the connection went there could stay
    /// unused for a stranger that takes the address and port (found in review).
    pub fn connected_to(&self, target: &Target, socket: BorrowedFd<'_>, inode: u64) {
        self.connecting(inode);
        let peer = rustix::net::getpeername(socket).ok().flatten().and_then(|p| SocketAddr::try_from(p).ok());
        if !target.routed
            || peer.map(|p| SocketAddr::new(canonical(p.ip()), p.port()))
                != Some(SocketAddr::new(canonical(target.address.ip()), target.address.port()))
        {
            return;
        }
        let Ok(own) = local_address(socket) else { return };
        let mut connected = lock(&self.connected);
        match connected.0.get_mut(&inode) {
            Some(admitted) if !*admitted => {
                *admitted = true;
                drop(connected);
                Admission::new(self, own).keep();
            }
            // Admitted once already (a connect asked again), or forgotten meanwhile.
            _ => {}
        }
    }

    /// Remembers the program's socket `inode` as one the helper began to connect (see
    /// [`Loopback::connected`]): a connect it is asked again is made on that socket, whose
    /// kernel then answers it.
    pub fn connecting(&self, inode: u64) {
        self.remember_inode(inode);
    }

    /// Forgets the program's socket `inode` as one the helper connected: its connect failed.
    pub fn not_connected(&self, inode: u64) {
        let mut connected = lock(&self.connected);
        let (set, order) = &mut *connected;
        if set.remove(&inode).is_some() {
            order.retain(|i| *i != inode);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::os::fd::AsFd as _;
    use std::time::Duration;

    #[test]
    fn a_connection_is_admitted_only_once_its_peer_is_the_proxys_listener() {
        // Found in review: an admission made for a connect that went elsewhere (or not yet
        // anywhere) stayed for five seconds, for a stranger that took the address and port.
        let proxy = TcpListener::bind("127.0.0.1:0").unwrap();
        let elsewhere = TcpListener::bind("127.0.0.1:0").unwrap();
        let asked: SocketAddr = "127.0.0.1:3128".parse().unwrap();
        let lo = Loopback::new(vec![(asked, proxy.local_addr().unwrap())]);
        let target = lo.target(asked, AddressFamily::INET).unwrap();
        assert!(target.routed, "the proxy's address is a route");
        let connect_to = |to: SocketAddr| {
            let socket =
                rustix::net::socket(AddressFamily::INET, rustix::net::SocketType::STREAM, None).unwrap();
            lo.bind_source(socket.as_fd(), AddressFamily::INET).unwrap();
            rustix::net::connect(&socket, &to).unwrap();
            let own = local_address(&socket).unwrap();
            lo.connected_to(&target, socket.as_fd(), rustix::fs::fstat(&socket).unwrap().st_ino);
            (socket, own)
        };
        let (_astray, astray) = connect_to(elsewhere.local_addr().unwrap());
        assert_eq!(canonical(astray.ip()), IpAddr::V4(lo.source()), "from the call's address");
        assert!(!lo.accepts(astray, Duration::ZERO), "admitted a connection that went elsewhere");
        let (made_socket, made) = connect_to(proxy.local_addr().unwrap());
        assert!(lo.accepts(made, Duration::ZERO), "the proxy's own connection is admitted");
        // Noted again (a connect asked again), it is not admitted again: the proxy served it.
        let inode = rustix::fs::fstat(&made_socket).unwrap().st_ino;
        lo.connected_to(&target, made_socket.as_fd(), inode);
        assert!(!lo.accepts(made, Duration::ZERO), "admitted twice");
    }
}
