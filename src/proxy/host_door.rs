//! The held door: `[internet]` without a network namespace of the program's own (the
//! Landlock-only mode, where the kernel refuses unprivileged user namespaces).
//!
//! There the program shares the host's network, and Landlock's TCP rules are by port only: a
//! program allowed the proxy's port could reach that port on any host. So the program never
//! makes a connection itself: seccomp holds every `connect` ([`crate::notify`]), and the helper
//! makes it on the call's loopback ([`crate::proxy::loopback`]), where this module puts the
//! proxy's listener and one per listed `tcp` address, each on a free port of the host's loopback:
//!
//! ```text
//! asked by the program                    connected by the helper to
//!   127.0.0.1:3128 (or ::ffff:127.0.0.1)    the proxy's listener, 127.0.0.1:<a free port>
//!   ADDRESS:PORT, each `tcp` address        its forwarder's listener, 127.0.0.1:<a free port>
//! ```
//!
//! The program sees the same addresses as in the own world (`HTTP_PROXY=http://127.0.0.1:3128`,
//! each `tcp` address as itself), so a harness need not know which mode ran. A `tcp` endpoint
//! given by name is refused here: showing the program a hosts file needs a mount namespace.
//! The proxy serves only connections the helper made (see [`crate::proxy::loopback`]: each is
//! admitted by its own address once made).
//!
//! The rest of the held mode's network (see [`crate::sandbox::seccomp::Network::Held`]): only
//! TCP sockets may be made, `bind`, `listen` and `getsockname` are held too (the program's own
//! servers, on the call's loopback), `sendto`/`sendmsg` with `MSG_FASTOPEN` are refused (a
//! connect that is not a `connect`), and Landlock's TCP rule allows connects to the asked ports
//! only, a second layer should seccomp's hold ever be missing.
//!
//! What it trusts: the kernel's seccomp user notification and loopback's port uniqueness.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::os::fd::OwnedFd;
use std::sync::Arc;

use rustix::net::{AddressFamily, SocketFlags, SocketType};

use super::door::{Listener, PROXY_PORT};
use crate::flags::InternetFlags;
use crate::proxy::loopback::{Loopback, canonical, local_address};
use crate::sandbox_file::TcpHost;

/// The listeners, made before the fork, and the call's loopback the held connects follow.
pub struct HostDoor {
    listeners: Vec<(OwnedFd, Listener)>,
    loopback: Arc<Loopback>,
}

/// Why the held door refuses these flags, before anything is made: a `tcp` endpoint by name
/// ([`named_endpoint`]), or one at the proxy's own address.
pub fn plan_refusal(net: &InternetFlags) -> Option<String> {
    let proxy = SocketAddr::from((Ipv4Addr::LOCALHOST, PROXY_PORT));
    named_endpoint(net).or_else(|| {
        net.tcp.iter().find_map(|endpoint| match endpoint.host {
            TcpHost::Address(ip) if SocketAddr::new(canonical(ip), endpoint.port) == proxy => Some(format!(
                "[internet] tcp lists {proxy}, where the call's proxy is; reach that endpoint by another address"
            )),
            _ => None,
        })
    })
}

/// Why a `tcp` endpoint by name cannot be had without the own world, naming the first: the
/// program reaches an endpoint by the address it resolves, and only the own world can show it a
/// hosts file that maps the name to the forwarder. A limit of the mode, not of the file.
pub fn named_endpoint(net: &InternetFlags) -> Option<String> {
    net.tcp.iter().find_map(|endpoint| match &endpoint.host {
        TcpHost::Name(name) => Some(format!(
            "[internet] tcp lists `{name}:{}` by name; without a namespace of the program's own (the Landlock-only mode: no user namespaces here) lnk cannot show the program a hosts file that names it. List the endpoint's address instead, or reach it through the proxy",
            endpoint.port
        )),
        TcpHost::Address(_) => None,
    })
}

impl HostDoor {
    /// Makes a listener on the host's loopback for the proxy and for each `tcp` address.
    pub fn new(net: &InternetFlags) -> Result<HostDoor, String> {
        let mut asked = vec![(SocketAddr::from((Ipv4Addr::LOCALHOST, PROXY_PORT)), Listener::Proxy)];
        if let Some(why) = plan_refusal(net) {
            return Err(why);
        }
        for endpoint in &net.tcp {
            let ip = match &endpoint.host {
                TcpHost::Address(ip) => canonical(*ip),
                TcpHost::Name(_) => continue,
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
        Ok(HostDoor { listeners, loopback: Arc::new(Loopback::new(routes)) })
    }

    /// The ports the program may ask for (Landlock's second layer).
    pub fn ports(&self) -> Vec<u16> {
        self.loopback.ports()
    }

    /// The call's loopback, for the helper's held calls.
    pub fn loopback(&self) -> Arc<Loopback> {
        Arc::clone(&self.loopback)
    }

    /// The listeners, for the proxy's threads, and the loopback they admit connections by.
    pub fn into_parts(self) -> (Vec<(OwnedFd, Listener)>, Arc<Loopback>) {
        (self.listeners, self.loopback)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::proxy::test_net as net;

    #[test]
    fn the_proxy_and_each_tcp_address_get_a_route_and_nothing_else_does() {
        let door = HostDoor::new(&net(&["192.0.2.7:22", "[2001:db8::5]:5432", "192.0.2.7:22"])).unwrap();
        let lo = door.loopback();
        let proxy = lo.route("127.0.0.1:3128".parse().unwrap()).unwrap();
        assert!(proxy.ip().is_loopback() && proxy.port() != 3128, "{proxy}");
        assert_eq!(lo.route("[::ffff:127.0.0.1]:3128".parse().unwrap()), Some(proxy));
        assert!(lo.route("192.0.2.7:22".parse().unwrap()).is_some());
        assert!(lo.route("[2001:db8::5]:5432".parse().unwrap()).is_some());
        for none in ["192.0.2.7:3128", "127.0.0.1:22", "[::1]:3128", "127.0.0.2:3128", "192.0.2.8:22"] {
            assert_eq!(lo.route(none.parse().unwrap()), None, "{none}");
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
}
