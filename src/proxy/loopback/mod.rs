//! The call's loopback in the Landlock-only mode: where the program's held connects go, and
//! where its servers listen.
//!
//! Without a network namespace the program shares the host's network, so it never makes a
//! connection or a listening socket itself: its `connect`, `bind` and `listen` are held (see
//! [`crate::notify::sockets`]) and the helper makes each socket, on a loopback
//! address of the call's own, chosen at random in `127.0.0.0/8` (never `127.0.0.1`'s /16), and
//! puts it into the program's descriptor table.
//!
//! ```text
//! asked by the program                        made by the helper
//!   connect 127.0.0.1:3128 (or ::ffff:…)        to the proxy's listener (with [internet])
//!   connect ADDRESS:PORT, a listed tcp address   to its forwarder's listener (with [internet])
//!   bind/listen 127.0.0.1, ::1, 0.0.0.0, :: :P   a listener on the call's address, on a port
//!                                                outside the host's automatic range (never P
//!                                                itself: see below)
//!   connect a loopback address (or the wildcard)  to the program's own listener asked for that
//!     :P where the program listens                port
//!   connect anything else                        nothing: ECONNREFUSED on loopback, ENETUNREACH
//!                                                elsewhere (what a namespace with loopback only
//!                                                answers), named in the report but for loopback
//! ```
//!
//! **Nothing of the host's is taken.** A listener on `P` itself, even on the call's own address,
//! would stop any process of the host from listening on `0.0.0.0:P` (the person's own server on
//! 8000) for as long as the call lasts. Nor is a port of the kernel's choosing (`bind` to port 0)
//! harmless: it comes from the host's automatic range (`ip_local_port_range`), and a port `bind`
//! took is skipped by every other socket's automatic choice while it is held, `TIME_WAIT`
//! included, so a program that made and closed servers in a loop held 8-11 thousand of them
//! and made every unsandboxed connect fail (found in review). So each listens on a port of the
//! [`PortBand`] above that range (or, where it reaches 65535, below it), which no automatic
//! choice takes; the call's address is its own, so only a host's server on the wildcard and that
//! very port could clash, and then the next port is taken. The program is told the address it
//! asked for (`getsockname`, see [`crate::notify::sockets`]) while its own connects to that
//! address reach it. The helper's connecting sockets take the call's
//! address with `IP_BIND_ADDRESS_NO_PORT`, so their ports are chosen by `connect`, unique for the
//! connection alone, as any client's: a port `bind` chose would be withheld from every other
//! socket's automatic choice for as long as it was bound, `TIME_WAIT` included (a program that
//! connected and closed in a loop once left every other process of the host unable to connect
//! for a minute: found in review). At most [`MAX_SERVERS`] listeners live at once.
//!
//! **The proxy serves only the helper's connections.** Its listeners are on the host's loopback,
//! where any local process can connect: once each of the helper's connections to one is made,
//! its own address is admitted, for a few seconds at most ([`ADMISSION`]), and the proxy serves
//! a connection only once its peer address (from `accept` itself) is admitted, waiting a moment
//! for it ([`ADMISSION_WAIT`]: the helper admits right after its `connect` returns, which on
//! loopback may be after the listener queued the connection). Another process cannot bind the
//! same address while the helper's socket holds it.
//!
//! What it trusts: the kernel's seccomp user notification (a held call waits until answered;
//! `ADDFD` acts on the holding process only while the call is held) and loopback's address and
//! port uniqueness.
//!
//! Trusted with: where each of the program's connections goes in the Landlock-only mode, and that
//! the call's proxy serves only connections the helper made: a bug here could connect the program
//! to a server of the host's, or let another local process use the call's proxy.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsFd as _, BorrowedFd, OwnedFd};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use rustix::io::Errno;
use rustix::net::{AddressFamily, SocketFlags, SocketType};

use super::log::Log;
pub use super::port_band::PortBand;
pub use program_sockets::Target;

mod admission;
mod program_sockets;

use admission::Admission;

/// How long the helper waits for its own connect to a listener on loopback (a listener whose
/// queue strangers filled would otherwise hold the program's call, and the helper, forever).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// How long an admitted address may wait to be accepted: a connection the listener's queue
/// never took (a full queue) is not served later, to whoever holds that port then.
pub const ADMISSION: Duration = Duration::from_secs(5);

/// How long an accepted connection waits for its admission; a stranger's connection is dropped
/// after this wait.
pub const ADMISSION_WAIT: Duration = Duration::from_millis(500);

/// The most listeners a call's program has at once.
pub const MAX_SERVERS: usize = 64;

/// How many ports of its band a listener tries before it gives up.
const BAND_TRIES: u32 = 512;

/// The connections the helper made whose sockets it remembers (for `EISCONN`); past it the
/// oldest are forgotten.
const MAX_REMEMBERED: usize = 65_536;

/// A listener the helper made for the program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Server {
    /// What the program asked for (a port 0 is the port it got).
    pub asked: SocketAddr,
    /// Where it really listens.
    pub real: SocketAddr,
    /// The socket's inode, to know it again in the program's descriptor table.
    pub inode: u64,
}

/// The call's loopback (see the module's documentation).
pub struct Loopback {
    /// Each address a program may connect to besides its own servers (the proxy, each listed
    /// `tcp` address), and the listener that serves it.
    routes: Vec<(SocketAddr, SocketAddr)>,
    /// The call's own loopback address.
    source: Ipv4Addr,
    /// The program's listeners.
    servers: Mutex<Vec<Server>>,
    /// The program's sockets bound and not (yet) listening or connected (see [`Loopback::bind`]),
    /// and those a listener or connection took the place of at one descriptor, which a copy of
    /// it may still hold (bound, their ports still taken: counted until closed).
    bound: Mutex<(Vec<Server>, Vec<Server>)>,
    /// Every listener made for the program, the first [`MAX_SERVERS`], for the report.
    made: Mutex<Vec<Server>>,
    /// The inodes of the sockets the helper connected for the program (or began to, on the
    /// program's own socket), each with whether its connection was admitted for the proxy;
    /// oldest first.
    connected: Mutex<(HashMap<u64, bool>, std::collections::VecDeque<u64>)>,
    /// The helper's connecting sockets' own addresses, and when each was admitted, until their
    /// connection is accepted.
    admitted: Mutex<HashMap<SocketAddr, Instant>>,
    /// Told when an address is admitted, for the connections waiting for theirs.
    admission: Condvar,
    /// The call's proxy log: refused connects are named there too.
    log: Arc<Mutex<Log>>,
    /// The ports its listeners take, read from the host at the first listener (see
    /// [`Loopback::learn_port_band`]).
    band: std::sync::OnceLock<Option<PortBand>>,
    /// How far into its band the call's listeners have gone: each new one starts past the last.
    made_ports: Mutex<u32>,
}

impl Loopback {
    /// The call's loopback, with `routes` (asked address, listener) besides the program's own
    /// servers.
    pub fn new(routes: Vec<(SocketAddr, SocketAddr)>) -> Loopback {
        Loopback {
            routes,
            source: call_source(),
            servers: Mutex::new(Vec::new()),
            bound: Mutex::new((Vec::new(), Vec::new())),
            made: Mutex::new(Vec::new()),
            connected: Mutex::default(),
            admitted: Mutex::new(HashMap::new()),
            admission: Condvar::new(),
            log: Arc::default(),
            band: std::sync::OnceLock::new(),
            made_ports: Mutex::new(0),
        }
    }

    /// Reads the host's automatic port range, once, for the listeners' [`PortBand`]. Called
    /// before the first listener is made, by a thread that may read `/proc` (the held calls'
    /// server may not).
    pub fn learn_port_band(&self) -> Option<PortBand> {
        *self.band.get_or_init(|| {
            let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
            PortBand::beside(&range)
        })
    }

    /// The call's own loopback address: where its listeners, and so their accepted
    /// connections, are.
    pub fn source(&self) -> Ipv4Addr {
        self.source
    }

    /// Whether any address routes to the call's proxy or a forwarder (`[internet]`).
    pub fn has_routes(&self) -> bool {
        !self.routes.is_empty()
    }

    /// The call's proxy log.
    pub fn log(&self) -> Arc<Mutex<Log>> {
        Arc::clone(&self.log)
    }

    /// The ports a program may connect to through a route (Landlock's second layer).
    pub fn ports(&self) -> Vec<u16> {
        let mut ports: Vec<u16> = self.routes.iter().map(|(asked, _)| asked.port()).collect();
        ports.sort_unstable();
        ports.dedup();
        ports
    }

    /// The program's listeners, as made.
    pub fn servers(&self) -> Vec<Server> {
        lock(&self.servers).clone()
    }

    /// The listeners made for the program, live or not (the first [`MAX_SERVERS`]): where each
    /// server really listened, for the report.
    pub fn made(&self) -> Vec<Server> {
        lock(&self.made).clone()
    }

    /// The listener of the program's with socket `inode`, if any.
    pub fn server(&self, inode: u64) -> Option<Server> {
        lock(&self.servers).iter().find(|s| s.inode == inode).copied()
    }

    /// The program's socket `inode` as it was bound (see [`Loopback::bind`]), if it was and has
    /// not listened or connected since.
    pub fn bound(&self, inode: u64) -> Option<Server> {
        lock(&self.bound).0.iter().find(|s| s.inode == inode).copied()
    }

    /// What the program's socket `inode` was bound to or listens on, if the helper made it so:
    /// what `getsockname` tells the program.
    pub fn named(&self, inode: u64) -> Option<Server> {
        self.server(inode).or_else(|| self.bound(inode))
    }

    /// Forgets the bound socket `inode` as bound: the program's descriptor now holds a listener
    /// or connection made in its place. A copy of the descriptor may still hold it, so it counts
    /// until closed (found in review: a program that `dup`ed each bound socket before it
    /// listened held thousands of ports).
    pub fn unbind(&self, inode: u64) {
        let mut bound = lock(&self.bound);
        let (bound, replaced) = &mut *bound;
        if let Some(at) = bound.iter().position(|s| s.inode == inode) {
            replaced.push(bound.remove(at));
        }
    }

    /// Whether the helper connected the socket `inode` for the program, or began to.
    pub fn connected(&self, inode: u64) -> bool {
        lock(&self.connected).0.contains_key(&inode)
    }

    /// Whether the program has any listener (its accepted sockets are then connected ones the
    /// helper does not know by inode).
    pub fn has_servers(&self) -> bool {
        !lock(&self.servers).is_empty()
    }

    /// The listener that serves `asked`, if the program may connect there: a route, or one of
    /// the program's own servers.
    pub fn route(&self, asked: SocketAddr) -> Option<SocketAddr> {
        let asked = SocketAddr::new(canonical(asked.ip()), asked.port());
        if let Some((_, local)) = self.routes.iter().find(|(a, _)| *a == asked) {
            return Some(*local);
        }
        let local = asked.ip().is_loopback() || asked.ip().is_unspecified();
        let servers = lock(&self.servers);
        let found = servers.iter().find(|s| {
            let real = SocketAddr::new(canonical(s.real.ip()), s.real.port());
            let wanted = SocketAddr::new(canonical(s.asked.ip()), s.asked.port());
            real == asked || (local && wanted.port() == asked.port() && serves(wanted.ip(), asked.ip()))
        });
        found.map(|s| s.real)
    }

    /// Makes a connection to the listener for `asked`, in `family` (the program's socket's),
    /// blocking or not as the program's was. Refuses an address without a route as a namespace
    /// with loopback only would, and names it in the log.
    pub fn connect(
        &self,
        asked: SocketAddr,
        family: AddressFamily,
        nonblocking: bool,
    ) -> Result<OwnedFd, Errno> {
        let Some(local) = self.route(asked) else {
            self.refuse(asked);
            return Err(refused_errno(asked.ip()));
        };
        let socket = self.socket(family)?;
        // The call's own address, and no port: `connect` chooses one for this connection alone.
        crate::sys::set_bind_address_no_port(socket.as_fd(), true).map_err(|_| Errno::INVAL)?;
        rustix::net::bind(&socket, &self.address_in(family, 0))?;
        let target = in_family(family, local);
        match rustix::net::connect(&socket, &target) {
            Ok(()) | Err(Errno::INPROGRESS) => {}
            Err(e) => return Err(e),
        }
        // The port is known now; the proxy may already hold the connection, whose thread waits
        // for this admission.
        let own = local_address(&socket).map_err(|_| Errno::ADDRNOTAVAIL)?;
        let admitted = Admission::new(self, own);
        wait_connected(&socket)?;
        rustix::io::ioctl_fionbio(&socket, nonblocking)?;
        admitted.keep();
        self.remember_connected(&socket);
        Ok(socket)
    }

    /// Makes a socket bound for the program's `bind` of `asked`, in `family`: on the call's
    /// address, on a port of its band, and neither listening nor connected, as the kernel
    /// leaves a bound socket. So a connection to it is refused until the program listens (then
    /// [`Loopback::listen_bound`]), and a client that binds its source before it connects
    /// (ftplib, smtplib, `create_connection(source_address=…)`) connects ([`Loopback::unbind`]
    /// once it has: the connection is made as any other, from the call's address). `EADDRINUSE`
    /// as for [`Loopback::listen`].
    pub fn bind(
        &self,
        asked: SocketAddr,
        family: AddressFamily,
        nonblocking: bool,
    ) -> Result<OwnedFd, Errno> {
        let mut servers = lock(&self.servers);
        let mut bound = lock(&self.bound);
        make_room(&mut servers, &mut bound, asked)?;
        drop(servers);
        let (socket, server) = self.in_band(asked, family, false, nonblocking)?;
        bound.0.push(server);
        Ok(socket)
    }

    /// Makes the listener for the program's `listen` of its bound socket `inode` (made by
    /// [`Loopback::bind`]): a listener as [`Loopback::listen`] makes for the address the program
    /// was told it had, to be put in its place. The listener takes the bound socket's room (a
    /// call at its most sockets may still listen on one it bound, as the kernel lets it); where
    /// it cannot be made, the socket stays bound.
    pub fn listen_bound(
        &self,
        inode: u64,
        family: AddressFamily,
        nonblocking: bool,
    ) -> Result<OwnedFd, Errno> {
        let taken = {
            let mut bound = lock(&self.bound);
            let at = bound.0.iter().position(|s| s.inode == inode).ok_or(Errno::INVAL)?;
            bound.0.remove(at)
        };
        let made = self.listen(taken.asked, family, nonblocking);
        let mut bound = lock(&self.bound);
        match made {
            // Replaced at the program's descriptor, and counted while a copy keeps it open.
            Ok(_) => bound.1.push(taken),
            Err(_) => bound.0.push(taken),
        }
        made
    }

    /// A socket of `family` on the call's address, on a port of its band (listening if
    /// `listening`, blocking or not as the program's was), and the server it is for `asked` (a
    /// port 0 is the port it got).
    fn in_band(
        &self,
        asked: SocketAddr,
        family: AddressFamily,
        listening: bool,
        nonblocking: bool,
    ) -> Result<(OwnedFd, Server), Errno> {
        let socket = self.socket(family)?;
        let inode = rustix::fs::fstat(&socket)?.st_ino;
        let server = self.place_in_band(socket.as_fd(), inode, asked, family)?;
        if listening {
            rustix::net::listen(&socket, 4096)?;
        }
        rustix::io::ioctl_fionbio(&socket, nonblocking)?;
        Ok((socket, server))
    }

    /// Binds `socket` (whose inode is `inode`, of `family`) on the call's address, on a port of
    /// its band, and the server it is for `asked` (a port 0 is the port it got). Its
    /// `SO_REUSEADDR` is set (a port its last server left in `TIME_WAIT` is taken again) and its
    /// `SO_REUSEPORT` cleared (the program's own socket may have it: a port shared with another
    /// call that drew the same address; see [`Loopback::bind_program_socket`]).
    fn place_in_band(
        &self,
        socket: BorrowedFd<'_>,
        inode: u64,
        asked: SocketAddr,
        family: AddressFamily,
    ) -> Result<Server, Errno> {
        rustix::net::sockopt::set_socket_reuseaddr(socket, true)?;
        rustix::net::sockopt::set_socket_reuseport(socket, false)?;
        self.bind_in_band(socket, family)?;
        let real = local_address(socket).map_err(|_| Errno::ADDRNOTAVAIL)?;
        let port = if asked.port() == 0 { real.port() } else { asked.port() };
        Ok(Server { asked: SocketAddr::new(asked.ip(), port), real, inode })
    }

    /// Makes a listener for the program's `listen` of `asked` (of a socket it bound, or one it
    /// never bound), in `family`: on the call's address, on a port of its band. `EADDRINUSE` when
    /// a live listener or bound socket of the program's already has the address, or
    /// [`MAX_SERVERS`] are live.
    pub fn listen(
        &self,
        asked: SocketAddr,
        family: AddressFamily,
        nonblocking: bool,
    ) -> Result<OwnedFd, Errno> {
        let mut servers = lock(&self.servers);
        let mut bound = lock(&self.bound);
        make_room(&mut servers, &mut bound, asked)?;
        drop(bound);
        let (socket, server) = self.in_band(asked, family, true, nonblocking)?;
        servers.push(server);
        let mut made = lock(&self.made);
        if made.len() < MAX_SERVERS {
            made.push(server);
        }
        Ok(socket)
    }

    /// Binds `socket` to the call's address on a free port of the [`PortBand`], starting from a
    /// place of the call's own in it. `EADDRNOTAVAIL` where the host leaves no band, or no port
    /// of the first [`BAND_TRIES`] tried is free.
    fn bind_in_band(&self, socket: BorrowedFd<'_>, family: AddressFamily) -> Result<(), Errno> {
        let band = self.learn_port_band().ok_or(Errno::ADDRNOTAVAIL)?;
        let [_, b, c, d] = self.source.octets();
        let start = u32::from_le_bytes([b, c, d, 0]) % band.ports();
        let mut made = lock(&self.made_ports);
        for step in 0..band.ports().min(BAND_TRIES) {
            let offset = (start + *made + step) % band.ports();
            let port = (u32::from(band.first) + offset) as u16;
            match rustix::net::bind(socket, &self.address_in(family, port)) {
                Ok(()) => {
                    *made = made.wrapping_add(step + 1);
                    return Ok(());
                }
                Err(Errno::ADDRINUSE) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(Errno::ADDRNOTAVAIL)
    }

    /// A new TCP socket of `family`, non-blocking, close-on-exec (a v6 one dual-stack, for the
    /// call's v4-mapped address).
    fn socket(&self, family: AddressFamily) -> Result<OwnedFd, Errno> {
        let socket = rustix::net::socket_with(
            family,
            SocketType::STREAM,
            SocketFlags::CLOEXEC | SocketFlags::NONBLOCK,
            None,
        )?;
        if family == AddressFamily::INET6 {
            rustix::net::sockopt::set_ipv6_v6only(&socket, false)?;
        }
        Ok(socket)
    }

    /// The call's address with `port`, in `family` (v4-mapped in IPv6).
    fn address_in(&self, family: AddressFamily, port: u16) -> SocketAddr {
        in_family(family, SocketAddr::new(IpAddr::V4(self.source), port))
    }

    fn remember_connected(&self, socket: &OwnedFd) {
        if let Ok(stat) = rustix::fs::fstat(socket) {
            self.remember_inode(stat.st_ino);
        }
    }

    /// Remembers the socket `inode` as one the helper connected, or began to (for `EISCONN`, and
    /// a connect asked again: see `crate::notify::socket_copies`), not yet admitted.
    fn remember_inode(&self, inode: u64) {
        let mut connected = lock(&self.connected);
        let (set, order) = &mut *connected;
        if let std::collections::hash_map::Entry::Vacant(new) = set.entry(inode) {
            // Never admitted yet; one remembered keeps its admission.
            new.insert(false);
            order.push_back(inode);
            if order.len() > MAX_REMEMBERED {
                if let Some(old) = order.pop_front() {
                    set.remove(&old);
                }
            }
        }
    }

    /// A server's address that is not the call's, named (see [`crate::denials::listen_refused`]).
    pub fn refuse_listen(&self, asked: SocketAddr) {
        super::log::lock(&self.log).refuse_listen(asked);
    }

    /// A connect without a route, answered as a namespace with loopback only would: to the
    /// program's own loopback silently (there it is the program's business, as in a namespace
    /// of its own), elsewhere named, with a fix only where listing it would be reasonable (never
    /// for an internal address: a metadata service, a host's own API).
    fn refuse(&self, asked: SocketAddr) {
        let ip = canonical(asked.ip());
        if ip.is_loopback() || ip.is_unspecified() {
            // The program's own loopback: as in a namespace of its own, only what it started
            // listens there. Named only where a server of the host's listens on that port,
            // which a tcp endpoint reaches (by address: `localhost` is 127.0.0.1).
            if let Some(address) = crate::sock_diag::host_listener(asked.port(), Some(self.source)) {
                let endpoint = SocketAddr::new(address, asked.port()).to_string();
                let why = format!(
                    "the server at {endpoint} is the host's, outside the call's own loopback; only a listed [internet] tcp endpoint reaches it"
                );
                let fix = crate::denials::Fix::tcp(endpoint);
                super::log::lock(&self.log).refuse_by_policy(
                    &address.to_string(),
                    asked.port(),
                    &why,
                    Some(fix),
                );
            }
            return;
        }
        let why = "a direct connection: only the call's proxy (HTTP_PROXY) and the listed tcp addresses are reachable (a web request goes through the proxy)";
        let fix = (!super::policy::is_internal(ip))
            .then(|| crate::denials::Fix::tcp(SocketAddr::new(ip, asked.port()).to_string()));
        super::log::lock(&self.log).refuse_by_policy(&ip.to_string(), asked.port(), why, fix);
    }
}

/// Whether a listener asked on `server` (canonical) takes connections to `client` (canonical):
/// the same address, or the wildcard of a family that has it.
fn serves(server: IpAddr, client: IpAddr) -> bool {
    match server {
        IpAddr::V4(v4) if v4.is_unspecified() => client.is_ipv4(),
        IpAddr::V6(v6) if v6.is_unspecified() => true,
        _ => server == client || (server.is_loopback() && client.is_unspecified()),
    }
}

/// Whether a socket of the program's still holds `server`'s address, found by a probe's bind
/// there: without `SO_REUSEADDR` it fails while any socket is bound there (a bound socket);
/// with it, only while one listens (a listener: `SO_REUSEADDR` lets `TIME_WAIT` be).
fn still_holds(server: &Server, listening: bool) -> bool {
    let family = if server.real.is_ipv4() { AddressFamily::INET } else { AddressFamily::INET6 };
    let Ok(probe) = rustix::net::socket_with(family, SocketType::STREAM, SocketFlags::CLOEXEC, None) else {
        return true;
    };
    let _ = rustix::net::sockopt::set_socket_reuseaddr(&probe, listening);
    if family == AddressFamily::INET6 {
        let _ = rustix::net::sockopt::set_ipv6_v6only(&probe, false);
    }
    rustix::net::bind(&probe, &server.real) == Err(Errno::ADDRINUSE)
}

/// Room for one more listener or bound socket of the program's, for `asked`: those it closed are
/// forgotten (their ports are free again); `EADDRINUSE` past [`MAX_SERVERS`] at once (bound
/// sockets replaced at a descriptor but still open counted too), or where a listener or bound
/// socket already has the address.
fn make_room(
    servers: &mut Vec<Server>,
    (bound, replaced): &mut (Vec<Server>, Vec<Server>),
    asked: SocketAddr,
) -> Result<(), Errno> {
    servers.retain(|s| still_holds(s, true));
    bound.retain(|s| still_holds(s, false));
    replaced.retain(|s| still_holds(s, false));
    let held = servers.len() + bound.len() + replaced.len();
    if held >= MAX_SERVERS || servers.iter().chain(bound.iter()).any(clashes(asked)) {
        return Err(Errno::ADDRINUSE);
    }
    Ok(())
}

/// Whether a server or bound socket of the program's already has what `asked` asks for (its port,
/// on an address one of them serves).
fn clashes(asked: SocketAddr) -> impl Fn(&Server) -> bool {
    move |s: &Server| {
        asked.port() != 0
            && s.asked.port() == asked.port()
            && (serves(canonical(s.asked.ip()), canonical(asked.ip()))
                || serves(canonical(asked.ip()), canonical(s.asked.ip())))
    }
}

/// `address` in `family`: an IPv4 address as itself, or v4-mapped in IPv6.
fn in_family(family: AddressFamily, address: SocketAddr) -> SocketAddr {
    match (family, address.ip()) {
        (AddressFamily::INET6, IpAddr::V4(v4)) => {
            SocketAddr::new(IpAddr::V6(v4.to_ipv6_mapped()), address.port())
        }
        _ => address,
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// The loopback address of a call's own, at random in `127.0.0.0/8` (never `127.0.0.1`'s
/// `127.0.0.0/16`), from the standard library's per-process random seed.
fn call_source() -> Ipv4Addr {
    use std::hash::{BuildHasher as _, Hasher as _};
    let bits = std::collections::hash_map::RandomState::new().build_hasher().finish();
    let [a, b, c, ..] = bits.to_le_bytes();
    Ipv4Addr::new(127, 1 + a % 254, b, 1 + c % 254)
}

/// Waits, a bounded time, for a non-blocking connect to complete (at once when it has).
fn wait_connected(socket: &OwnedFd) -> Result<(), Errno> {
    use rustix::event::{PollFd, PollFlags, Timespec};
    let mut fds = [PollFd::new(socket, PollFlags::OUT)];
    let timeout = Timespec { tv_sec: CONNECT_TIMEOUT.as_secs() as i64, tv_nsec: 0 };
    match rustix::event::poll(&mut fds, Some(&timeout))? {
        0 => Err(Errno::TIMEDOUT),
        _ => match rustix::net::sockopt::socket_error(socket)? {
            Ok(()) => Ok(()),
            Err(e) => Err(e),
        },
    }
}

/// A socket's own address.
pub fn local_address(socket: impl std::os::fd::AsFd) -> Result<SocketAddr, String> {
    let address = rustix::net::getsockname(socket.as_fd()).map_err(|e| format!("getsockname: {e}"))?;
    SocketAddr::try_from(address).map_err(|_| "getsockname: not an internet address".to_owned())
}

/// An address as the routes keep it: a v4-mapped IPv6 address is the IPv4 address it maps.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

/// Whether a program may listen on `ip`: loopback or the wildcard (taken as loopback); nothing
/// is ever listened on beyond the call's loopback address.
pub fn may_listen_on(ip: IpAddr) -> bool {
    let ip = canonical(ip);
    ip.is_loopback() || ip.is_unspecified() || ip == IpAddr::V6(Ipv6Addr::LOCALHOST)
}

/// What a connect to an address without a route answers: what a namespace with loopback its
/// only interface would.
pub fn refused_errno(ip: IpAddr) -> Errno {
    let ip = canonical(ip);
    if ip.is_loopback() || ip.is_unspecified() { Errno::CONNREFUSED } else { Errno::NETUNREACH }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read as _, Write as _};
    use std::net::TcpStream;

    fn proxy() -> (Loopback, std::net::TcpListener) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let local = listener.local_addr().unwrap();
        (Loopback::new(vec![("127.0.0.1:3128".parse().unwrap(), local)]), listener)
    }

    #[test]
    fn an_address_without_a_route_is_answered_as_a_namespace_would() {
        let (lo, _listener) = proxy();
        let v4 = AddressFamily::INET;
        assert_eq!(lo.connect("192.0.2.1:80".parse().unwrap(), v4, false).err(), Some(Errno::NETUNREACH));
        assert_eq!(lo.connect("127.0.0.1:8080".parse().unwrap(), v4, false).err(), Some(Errno::CONNREFUSED));
        let v6 = AddressFamily::INET6;
        assert_eq!(lo.connect("[::1]:3128".parse().unwrap(), v6, false).err(), Some(Errno::CONNREFUSED));
        assert_eq!(lo.connect("0.0.0.0:3128".parse().unwrap(), v4, false).err(), Some(Errno::CONNREFUSED));
        assert_eq!(
            lo.connect("169.254.169.254:80".parse().unwrap(), v4, false).err(),
            Some(Errno::NETUNREACH)
        );
        // The program's own loopback is its business, as in a namespace of its own: not named.
        // Elsewhere named, with a fix, but none for an internal address.
        let log = lo.log();
        let log = crate::proxy::log::lock(&log);
        assert_eq!(log.refused, 2);
        assert_eq!((log.refusals[0].host.as_str(), log.refusals[0].port), ("192.0.2.1", 80));
        assert_eq!(log.refusals[0].fix, Some(crate::denials::Fix::tcp("192.0.2.1:80".into())));
        assert_eq!((log.refusals[1].host.as_str(), &log.refusals[1].fix), ("169.254.169.254", &None));
    }

    #[test]
    fn only_the_helpers_own_connections_are_admitted_and_each_once() {
        let (lo, listener) = proxy();
        for (asked, family) in
            [("127.0.0.1:3128", AddressFamily::INET), ("[::ffff:127.0.0.1]:3128", AddressFamily::INET6)]
        {
            let ours = TcpStream::from(lo.connect(asked.parse().unwrap(), family, false).unwrap());
            let (mut served, peer) = listener.accept().unwrap();
            assert!(lo.accepts(peer, Duration::ZERO), "{asked}: the helper's connection is admitted");
            assert!(!lo.accepts(peer, Duration::ZERO), "{asked}: once");
            let mut ours = ours;
            ours.write_all(b"x").unwrap();
            let mut byte = [0u8; 1];
            served.read_exact(&mut byte).unwrap();
            assert_eq!(&byte, b"x");
        }
        // Another process's connection to the same listener is not.
        let _stranger = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (_, peer) = listener.accept().unwrap();
        let waited = Instant::now();
        assert!(!lo.accepts(peer, Duration::from_millis(50)), "a stranger is never admitted");
        assert!(waited.elapsed() >= Duration::from_millis(50), "after waiting for an admission");
        // A failed connect leaves nothing admitted.
        assert!(lock(&lo.admitted).is_empty());
    }

    #[test]
    fn an_admission_not_accepted_in_time_is_not_served_later() {
        let (lo, _listener) = proxy();
        let late: SocketAddr = "127.9.9.9:4000".parse().unwrap();
        let past = Instant::now().checked_sub(ADMISSION + Duration::from_secs(1)).unwrap();
        lock(&lo.admitted).insert(late, past);
        assert!(!lo.accepts(late, Duration::ZERO), "whoever holds that port now is a stranger");
        assert!(lock(&lo.admitted).is_empty(), "and it is gone");
        // The call's own source address is one of 127/8's, never 127.0.0.1's /16.
        let [a, b, ..] = lo.source.octets();
        assert_eq!(a, 127);
        assert_ne!(b, 0);
    }

    #[test]
    fn a_programs_server_listens_on_the_calls_address_and_its_connects_reach_it() {
        let lo = Loopback::new(Vec::new());
        let v4 = AddressFamily::INET;
        let server =
            std::net::TcpListener::from(lo.listen("127.0.0.1:8000".parse().unwrap(), v4, false).unwrap());
        let real = server.local_addr().unwrap();
        assert_eq!(real.ip(), IpAddr::V4(lo.source), "on the call's own address");
        assert_ne!(real.port(), 8000, "not on the port asked: that is the host's to use");
        let band = lo.learn_port_band().unwrap();
        assert!((band.first..=band.last).contains(&real.port()), "{real} outside {band:?}");
        // The same address again while it listens: in use; another port is fine.
        assert_eq!(lo.listen("0.0.0.0:8000".parse().unwrap(), v4, false).err(), Some(Errno::ADDRINUSE));
        let other = lo.listen("127.0.0.1:0".parse().unwrap(), v4, false).unwrap();
        let other_port = local_address(&other).unwrap().port();
        assert_eq!(lo.servers()[1].asked.port(), other_port, "port 0: the port it got");
        // Its connects to the asked address, by 127.0.0.1, the wildcard, or the real address.
        for asked in ["127.0.0.1:8000", "0.0.0.0:8000", "[::ffff:127.0.0.1]:8000"] {
            let family = if asked.starts_with('[') { AddressFamily::INET6 } else { v4 };
            let client = TcpStream::from(lo.connect(asked.parse().unwrap(), family, false).unwrap());
            let (mut accepted, _) = server.accept().unwrap();
            (&client).write_all(b"y").unwrap();
            let mut byte = [0u8; 1];
            accepted.read_exact(&mut byte).unwrap();
        }
        assert!(lo.route(real).is_some(), "by its real address too");
        assert!(lo.route("[::1]:8000".parse().unwrap()).is_none(), "an IPv4 server takes no IPv6 client");
        // Closed, its address is free again.
        drop(server);
        assert!(lo.listen("127.0.0.1:8000".parse().unwrap(), v4, false).is_ok());
        assert!(may_listen_on("::1".parse().unwrap()) && may_listen_on("0.0.0.0".parse().unwrap()));
        assert!(
            !may_listen_on("192.0.2.1".parse().unwrap()) && !may_listen_on("2001:db8::1".parse().unwrap())
        );
    }

    #[test]
    fn refusals_answer_like_a_namespace_with_loopback_only() {
        assert_eq!(refused_errno("127.0.0.5".parse().unwrap()), Errno::CONNREFUSED);
        assert_eq!(refused_errno("::ffff:127.0.0.1".parse().unwrap()), Errno::CONNREFUSED);
        assert_eq!(refused_errno("::".parse().unwrap()), Errno::CONNREFUSED);
        assert_eq!(refused_errno("10.0.0.1".parse().unwrap()), Errno::NETUNREACH);
        assert_eq!(refused_errno("2001:db8::1".parse().unwrap()), Errno::NETUNREACH);
    }
}
