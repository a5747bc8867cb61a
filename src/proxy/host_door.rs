//! The held door: `[internet]` without a network namespace of the program's own (the
//! Landlock-only mode, where the kernel refuses unprivileged user namespaces).
//!
//! There the program shares the host's network, and Landlock's TCP rules are by port only: a
//! program allowed the proxy's port could reach that port on any host. So the program never
//! makes a connection itself. Seccomp holds every `connect` ([`crate::notify`]); the helper
//! reads the address once, looks it up in the routes below, makes a TCP socket of its own,
//! connects it to the matching listener on the host's loopback, and puts it into the program's
//! descriptor table in place of the program's socket (`SECCOMP_IOCTL_NOTIF_ADDFD` with
//! `SETFD`, as `dup2` would). The held call is then answered `0`; it never goes on into the
//! kernel, so nothing the program changes in its memory afterwards is ever read.
//!
//! ```text
//! asked by the program                    connected by the helper to
//!   127.0.0.1:3128 (or ::ffff:127.0.0.1)    the proxy's listener, 127.0.0.1:<a free port>
//!   ADDRESS:PORT, each `tcp` address        its forwarder's listener, 127.0.0.1:<a free port>
//!   anything else                           nothing: ECONNREFUSED on loopback, ENETUNREACH
//!                                           elsewhere (what the own world's namespace answers),
//!                                           and a refusal in the report
//! ```
//!
//! The program sees the same addresses as in the own world (`HTTP_PROXY=http://127.0.0.1:3128`,
//! each `tcp` address as itself), so a harness need not know which mode ran. A `tcp` endpoint
//! given by name is refused here: showing the program a hosts file needs a mount namespace.
//!
//! The listeners are on the host's loopback, where any local process can connect. So the proxy
//! serves only connections the helper made: once each of its connections is made, its own
//! address is admitted, for a few seconds at most ([`ADMISSION`]); a connection's thread takes
//! the peer's address from `accept` itself (which has it even when the program already reset
//! the connection) and serves it only once that address is admitted, once, waiting a moment for
//! the admission ([`ADMISSION_WAIT`]: the helper admits right after its `connect` returns, which
//! may be after the listener queued the connection), and drops any other (another process
//! cannot bind the same address while the helper's socket holds it). Without that, any process
//! of the machine could use the call's proxy.
//!
//! The helper's connections reserve nothing on the host. Each connecting socket takes a loopback
//! address of the call's own (random in `127.0.0.0/8`, never `127.0.0.1`) with
//! `IP_BIND_ADDRESS_NO_PORT`, so its port is chosen by `connect`, unique for the connection
//! alone, as for any client's socket. A port `bind` chose would be withheld from every other
//! socket's automatic choice for as long as it was bound, `TIME_WAIT` included: a program that
//! connected and closed in a loop left 28,000 such ports within 30 s, and every other process
//! of the host, root included, got `EADDRNOTAVAIL` from any `connect` for a minute (found in
//! review).
//!
//! The rest of the held mode's network (see [`crate::sandbox::seccomp::Network::Held`]): only
//! TCP sockets may be made, `bind` and `listen` are refused (no server on the host's network),
//! `sendto`/`sendmsg` with `MSG_FASTOPEN` are refused (a connect that is not a `connect`), and
//! Landlock's TCP rule allows connects to the asked ports only, a second layer should seccomp's
//! hold ever be missing.
//!
//! What it trusts: the kernel's seccomp user notification (the held call waits until answered;
//! `ADDFD` acts on the holding process only while the call is held) and loopback's port
//! uniqueness.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::os::fd::{AsFd as _, OwnedFd};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use rustix::io::Errno;
use rustix::net::{AddressFamily, SocketFlags, SocketType};

use super::Log;
use super::door::{Listener, PROXY_PORT};
use crate::flags::InternetFlags;
use crate::sandbox_file::TcpHost;

/// How long the helper waits for its own connect to a listener on loopback (a listener whose
/// queue strangers filled would otherwise hold the program's call, and the helper, forever).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// How long an admitted address may wait to be accepted: a connection the listener's queue
/// never took (a full queue) is not served later, to whoever holds that port then.
pub const ADMISSION: Duration = Duration::from_secs(5);

/// How long an accepted connection waits for its admission: the helper admits its connection's
/// address right after `connect` returns, which on loopback may be after the listener has
/// queued it. A stranger's connection is dropped after this wait.
pub const ADMISSION_WAIT: Duration = Duration::from_millis(500);

/// The listeners, made before the fork, and the routes the held connects follow.
pub struct HostDoor {
    listeners: Vec<(OwnedFd, Listener)>,
    router: Arc<Router>,
}

/// Where a held `connect` goes, and which connections the proxy may serve. Shared by the
/// helper's notification handling (which connects) and the proxy's threads (which accept).
pub struct Router {
    /// Each address a program may ask for, and the listener that serves it.
    routes: Vec<(SocketAddr, SocketAddr)>,
    /// The loopback address the helper's connecting sockets are bound to (the call's own).
    source: Ipv4Addr,
    /// The helper's connecting sockets' own addresses, and when each was admitted, until their
    /// connection is accepted.
    admitted: Mutex<HashMap<SocketAddr, Instant>>,
    /// Told when an address is admitted, for the connections waiting for theirs.
    admission: Condvar,
    /// The call's proxy log: refused connects are named there too.
    log: Arc<Mutex<Log>>,
}

impl HostDoor {
    /// Makes a listener on the host's loopback for the proxy and for each `tcp` address.
    pub fn new(net: &InternetFlags) -> Result<HostDoor, String> {
        let mut asked = vec![(SocketAddr::from((Ipv4Addr::LOCALHOST, PROXY_PORT)), Listener::Proxy)];
        for endpoint in &net.tcp {
            let ip = match &endpoint.host {
                TcpHost::Address(ip) => canonical(*ip),
                TcpHost::Name(name) => {
                    return Err(format!(
                        "[internet] tcp lists `{name}:{}` by name; without a namespace of the program's own (the Landlock-only mode) lnk cannot show the program a hosts file that names it. List the endpoint's address instead, or reach it through the proxy",
                        endpoint.port
                    ));
                }
            };
            let address = SocketAddr::new(ip, endpoint.port);
            if address == asked[0].0 {
                return Err(format!(
                    "[internet] tcp lists {address}, where the call's proxy is; reach that endpoint by another address"
                ));
            }
            if asked.iter().any(|(a, _)| *a == address) {
                continue;
            }
            let host = match ip {
                IpAddr::V4(v4) => v4.to_string(),
                IpAddr::V6(v6) => format!("[{v6}]"),
            };
            asked.push((address, Listener::Forward { host, port: endpoint.port }));
        }
        let mut routes = Vec::with_capacity(asked.len());
        let mut listeners = Vec::with_capacity(asked.len());
        for (address, kind) in asked {
            let listener =
                rustix::net::socket_with(AddressFamily::INET, SocketType::STREAM, SocketFlags::CLOEXEC, None)
                    .map_err(|e| format!("cannot make the proxy's listening socket: {e}"))?;
            rustix::net::bind(&listener, &SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
                .and_then(|()| rustix::net::listen(&listener, 128))
                .map_err(|e| format!("cannot listen on the host's loopback for the call's proxy: {e}"))?;
            let local = local_address(&listener)?;
            routes.push((address, local));
            listeners.push((listener, kind));
        }
        let router = Router {
            routes,
            source: call_source(),
            admitted: Mutex::new(HashMap::new()),
            admission: Condvar::new(),
            log: Arc::default(),
        };
        Ok(HostDoor { listeners, router: Arc::new(router) })
    }

    /// The ports the program may ask for (Landlock's second layer).
    pub fn ports(&self) -> Vec<u16> {
        let mut ports: Vec<u16> = self.router.routes.iter().map(|(asked, _)| asked.port()).collect();
        ports.sort_unstable();
        ports.dedup();
        ports
    }

    /// The routes, for the helper's notification handling.
    pub fn router(&self) -> Arc<Router> {
        Arc::clone(&self.router)
    }

    /// The listeners, for the proxy's threads, and the router they admit connections by.
    pub fn into_parts(self) -> (Vec<(OwnedFd, Listener)>, Arc<Router>) {
        (self.listeners, self.router)
    }
}

impl Router {
    /// The call's proxy log.
    pub fn log(&self) -> Arc<Mutex<Log>> {
        Arc::clone(&self.log)
    }

    /// The listener that serves `asked`, if the program may connect there.
    pub fn route(&self, asked: SocketAddr) -> Option<SocketAddr> {
        let asked = SocketAddr::new(canonical(asked.ip()), asked.port());
        self.routes.iter().find(|(a, _)| *a == asked).map(|(_, local)| *local)
    }

    /// Makes a connection to the listener for `asked`, in `asked`'s family (so the program's
    /// socket stays the family it made), blocking or not as the program's was. Refuses an
    /// address without a route as the own world's namespace would, and names it in the log.
    pub fn connect(&self, asked: SocketAddr, nonblocking: bool) -> Result<OwnedFd, Errno> {
        let Some(local) = self.route(asked) else {
            self.refuse(asked);
            return Err(refused_errno(asked.ip()));
        };
        let (family, loopback, source) = match asked {
            SocketAddr::V4(_) => {
                (AddressFamily::INET, IpAddr::V4(Ipv4Addr::LOCALHOST), IpAddr::V4(self.source))
            }
            SocketAddr::V6(_) => (
                AddressFamily::INET6,
                IpAddr::V6(Ipv4Addr::LOCALHOST.to_ipv6_mapped()),
                IpAddr::V6(self.source.to_ipv6_mapped()),
            ),
        };
        let socket = rustix::net::socket_with(
            family,
            SocketType::STREAM,
            SocketFlags::CLOEXEC | SocketFlags::NONBLOCK,
            None,
        )?;
        if family == AddressFamily::INET6 {
            // A v4-mapped address needs a dual-stack socket, whatever `bindv6only` says.
            rustix::net::sockopt::set_ipv6_v6only(&socket, false)?;
        }
        // The call's own address, and no port: `connect` chooses one for this connection alone
        // (see the module's documentation).
        crate::sys::set_bind_address_no_port(socket.as_fd()).map_err(|_| Errno::INVAL)?;
        rustix::net::bind(&socket, &SocketAddr::new(source, 0))?;
        let target = SocketAddr::new(loopback, local.port());
        let connected = match rustix::net::connect(&socket, &target) {
            Ok(()) => Ok(()),
            Err(Errno::INPROGRESS) => Ok(()),
            Err(e) => Err(e),
        };
        connected?;
        // The port is known now; the listener may already hold the connection, whose thread
        // waits for this admission.
        let own = local_address(&socket).map_err(|_| Errno::ADDRNOTAVAIL)?;
        let admitted = Admission::new(self, own);
        wait_connected(&socket)?;
        rustix::io::ioctl_fionbio(&socket, nonblocking)?;
        admitted.keep();
        Ok(socket)
    }

    /// Whether the proxy may serve a connection from `peer` (one the helper made, admitted
    /// less than [`ADMISSION`] ago), once; waits up to `wait` for its admission.
    pub fn accepts(&self, peer: SocketAddr, wait: Duration) -> bool {
        let peer = SocketAddr::new(canonical(peer.ip()), peer.port());
        let until = Instant::now() + wait;
        let mut admitted = self.admitted.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(at) = admitted.remove(&peer) {
                return at.elapsed() < ADMISSION;
            }
            let now = Instant::now();
            if now >= until {
                return false;
            }
            admitted = match self.admission.wait_timeout(admitted, until - now) {
                Ok((guard, _)) => guard,
                Err(e) => e.into_inner().0,
            };
        }
    }

    /// A connect without a route, answered as the own world's namespace would: to the
    /// program's own loopback silently (there it is the program's business, as in a namespace
    /// of its own), elsewhere named, with a fix only where listing it would be reasonable (never
    /// for an internal address: a metadata service, a host's own API).
    fn refuse(&self, asked: SocketAddr) {
        let ip = canonical(asked.ip());
        if ip.is_loopback() || ip.is_unspecified() {
            return;
        }
        let why = "a direct connection: only the call's proxy (HTTP_PROXY) and the listed tcp addresses are reachable";
        let fix = (!super::policy::is_internal(ip)).then(|| {
            format!(
                "connect through the proxy (HTTP_PROXY), or add \"{}\" to [internet] tcp",
                SocketAddr::new(ip, asked.port())
            )
        });
        super::lock(&self.log).refuse_by_policy(&ip.to_string(), asked.port(), why, fix);
    }
}

/// The loopback address of a call's own, at random in `127.0.0.0/8` (never `127.0.0.1`'s
/// `127.0.0.0/16`), from the standard library's per-process random seed.
fn call_source() -> Ipv4Addr {
    use std::hash::{BuildHasher as _, Hasher as _};
    let bits = std::collections::hash_map::RandomState::new().build_hasher().finish();
    let [a, b, c, ..] = bits.to_le_bytes();
    Ipv4Addr::new(127, 1 + a % 254, b, 1 + c % 254)
}

/// An admitted address, withdrawn again unless its connection was made (a stale admission
/// would let whoever binds that port next use the proxy).
struct Admission<'a> {
    router: &'a Router,
    address: SocketAddr,
    kept: bool,
}

impl<'a> Admission<'a> {
    fn new(router: &'a Router, address: SocketAddr) -> Admission<'a> {
        let address = SocketAddr::new(canonical(address.ip()), address.port());
        let mut admitted = router.admitted.lock().unwrap_or_else(|e| e.into_inner());
        // Those never accepted in time go: they will not be served.
        admitted.retain(|_, at| at.elapsed() < ADMISSION);
        admitted.insert(address, Instant::now());
        router.admission.notify_all();
        Admission { router, address, kept: false }
    }

    fn keep(mut self) {
        self.kept = true;
    }
}

impl Drop for Admission<'_> {
    fn drop(&mut self) {
        if !self.kept {
            self.router.admitted.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.address);
        }
    }
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
fn local_address(socket: &OwnedFd) -> Result<SocketAddr, String> {
    let address = rustix::net::getsockname(socket.as_fd()).map_err(|e| format!("getsockname: {e}"))?;
    SocketAddr::try_from(address).map_err(|_| "getsockname: not an internet address".to_owned())
}

/// An address as the routes keep it: a v4-mapped IPv6 address is the IPv4 address it maps.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

/// What a connect to an address without a route answers: what the own world's namespace, with
/// loopback its only interface, would.
pub fn refused_errno(ip: IpAddr) -> Errno {
    let ip = canonical(ip);
    if ip.is_loopback() || ip.is_unspecified() { Errno::CONNREFUSED } else { Errno::NETUNREACH }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read as _, Write as _};
    use std::net::TcpStream;

    use crate::proxy::test_net as net;

    #[test]
    fn the_proxy_and_each_tcp_address_get_a_route_and_nothing_else_does() {
        let door = HostDoor::new(&net(&["192.0.2.7:22", "[2001:db8::5]:5432", "192.0.2.7:22"])).unwrap();
        let router = door.router();
        let proxy = router.route("127.0.0.1:3128".parse().unwrap()).unwrap();
        assert!(proxy.ip().is_loopback() && proxy.port() != 3128, "{proxy}");
        assert_eq!(router.route("[::ffff:127.0.0.1]:3128".parse().unwrap()), Some(proxy));
        assert!(router.route("192.0.2.7:22".parse().unwrap()).is_some());
        assert!(router.route("[2001:db8::5]:5432".parse().unwrap()).is_some());
        for none in ["192.0.2.7:3128", "127.0.0.1:22", "[::1]:3128", "127.0.0.2:3128", "192.0.2.8:22"] {
            assert_eq!(router.route(none.parse().unwrap()), None, "{none}");
        }
        assert_eq!(door.ports(), vec![22, 3128, 5432]);
        let (listeners, _) = door.into_parts();
        assert_eq!(listeners.len(), 3, "a repeated endpoint gets one listener");
    }

    #[test]
    fn names_and_the_proxys_own_address_are_refused() {
        let named = HostDoor::new(&net(&["db.example.net:5432"])).err().unwrap();
        assert!(named.contains("by name") && named.contains("address instead"), "{named}");
        let clash = HostDoor::new(&net(&["127.0.0.1:3128"])).err().unwrap();
        assert!(clash.contains("where the call's proxy is"), "{clash}");
    }

    #[test]
    fn an_address_without_a_route_is_answered_as_the_namespace_would() {
        let door = HostDoor::new(&net(&[])).unwrap();
        let router = door.router();
        assert_eq!(router.connect("192.0.2.1:80".parse().unwrap(), false).err(), Some(Errno::NETUNREACH));
        assert_eq!(router.connect("127.0.0.1:8080".parse().unwrap(), false).err(), Some(Errno::CONNREFUSED));
        assert_eq!(router.connect("[::1]:3128".parse().unwrap(), false).err(), Some(Errno::CONNREFUSED));
        assert_eq!(router.connect("0.0.0.0:3128".parse().unwrap(), false).err(), Some(Errno::CONNREFUSED));
        assert_eq!(
            router.connect("169.254.169.254:80".parse().unwrap(), false).err(),
            Some(Errno::NETUNREACH)
        );
        // The program's own loopback is its business, as in a namespace of its own: not named.
        // Elsewhere named, with a fix, but none for an internal address.
        let log = router.log();
        let log = super::super::lock(&log);
        assert_eq!(log.refused, 2);
        assert_eq!((log.refusals[0].host.as_str(), log.refusals[0].port), ("192.0.2.1", 80));
        assert!(log.refusals[0].fix.as_deref().is_some_and(|f| f.contains("192.0.2.1:80")));
        assert_eq!((log.refusals[1].host.as_str(), &log.refusals[1].fix), ("169.254.169.254", &None));
    }

    #[test]
    fn only_the_helpers_own_connections_are_admitted_and_each_once() {
        let door = HostDoor::new(&net(&[])).unwrap();
        let router = door.router();
        let (listeners, _) = door.into_parts();
        let listener = std::net::TcpListener::from(listeners.into_iter().next().unwrap().0);
        for asked in ["127.0.0.1:3128", "[::ffff:127.0.0.1]:3128"] {
            let ours = TcpStream::from(router.connect(asked.parse().unwrap(), false).unwrap());
            let (mut served, peer) = listener.accept().unwrap();
            assert!(router.accepts(peer, Duration::ZERO), "{asked}: the helper's connection is admitted");
            assert!(!router.accepts(peer, Duration::ZERO), "{asked}: once");
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
        assert!(!router.accepts(peer, Duration::from_millis(50)), "a stranger is never admitted");
        assert!(waited.elapsed() >= Duration::from_millis(50), "after waiting for an admission");
        // A failed connect leaves nothing admitted.
        assert!(router.admitted.lock().unwrap().is_empty());
    }

    #[test]
    fn an_admission_not_accepted_in_time_is_not_served_later() {
        let door = HostDoor::new(&net(&[])).unwrap();
        let router = door.router();
        let late: SocketAddr = "127.9.9.9:4000".parse().unwrap();
        let past = Instant::now().checked_sub(ADMISSION + Duration::from_secs(1)).unwrap();
        router.admitted.lock().unwrap().insert(late, past);
        assert!(!router.accepts(late, Duration::ZERO), "whoever holds that port now is a stranger");
        assert!(router.admitted.lock().unwrap().is_empty(), "and it is gone");
        // The call's own source address is one of 127/8's, never 127.0.0.1's /16.
        let [a, b, ..] = router.source.octets();
        assert_eq!(a, 127);
        assert_ne!(b, 0);
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
