//! The call's proxy for `[internet]`: each `lnk sandbox run` call whose sandbox file lists the
//! run tool in `[internet] tools` gets a proxy of its own, inside the helper, that ends with the
//! call.
//!
//! Three parts, each with its own guarantees:
//!
//! | part | what it does |
//! |---|---|
//! | [`door`] | the program's network namespace, whose only way out is the proxy's sockets |
//! | [`host_door`] | without a namespace: each `connect` held and made by the helper, to the proxy only |
//! | [`policy`] | which host, port and address a connection may reach, and how many a minute |
//! | [`request`] | what a program's request says, read strictly, and where its one body ends |
//! | [`server`] | the threads that accept, ask the policy, connect out and relay |
//! | [`loopback`] | the call's own loopback address without a namespace: the helper's connects and the program's servers there |
//! | [`log`] | what was refused and opened, for the report (the held calls write to it too) |
//!
//! The program learns of the proxy from `HTTP_PROXY`, `HTTPS_PROXY` and `ALL_PROXY` (and their
//! lowercase forms), with `NO_PROXY` naming the loopback only (its own servers are there); it
//! needs no DNS, since the proxy resolves names. A client that ignores the variables reaches
//! nothing: its namespace has loopback only.
//!
//! Each refusal (host not listed, rate spent, internal address, unreachable) is kept in a
//! [`Log`] that goes into the call's report, so a harness can tell the model what to ask for.
//!
//! Trusted with: that a program with `[internet]` reaches only what the file lists, and only
//! through the call's proxy (a bug in a part could let a program send what it can read to any
//! host), and the report's account of what was refused. What it trusts: the sandbox's `[internet]`
//! flags and the harness's `--resolve` pins (a pinned address is checked as any other); each part
//! says what else it trusts.

pub mod door;
pub mod host_door;
pub mod log;
pub mod loopback;
pub mod policy;
pub mod port_band;
pub mod request;
pub mod server;

use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use crate::flags::InternetFlags;
pub use log::{Log, MAX_NAMED_REFUSALS, Refusal, lock};

/// A `--resolve NAME:PORT:ADDR` pin: the proxy uses `address` for `name` on `port` instead of
/// asking the resolver (for tests, and for pinning a host to a known address). A pinned address
/// is checked like any other: an internal one is refused unless listed itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolveOverride {
    pub name: String,
    pub port: u16,
    pub address: IpAddr,
}

impl ResolveOverride {
    /// Parses `NAME:PORT:ADDR` (an IPv6 address may be bracketed).
    pub fn parse(text: &str) -> Result<ResolveOverride, String> {
        let bad = || format!("`{}`: give NAME:PORT:ADDRESS, as curl's --resolve", text.escape_debug());
        let (name, rest) = text.split_once(':').ok_or_else(bad)?;
        let (port, address) = rest.split_once(':').ok_or_else(bad)?;
        let name = name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase();
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.') {
            return Err(bad());
        }
        let port: u16 = port.parse().ok().filter(|p| *p != 0).ok_or_else(bad)?;
        let address = policy::parse_ip_literal(address).ok_or_else(bad)?;
        Ok(ResolveOverride { name, port, address })
    }
}

/// How the program reaches the call's proxy, and nothing else.
pub enum NetworkDoor {
    /// A network namespace of the program's own (the own world): see [`door`].
    Namespace(door::Door),
    /// The host's network, each `connect` held and made by the helper (the Landlock-only mode):
    /// see [`host_door`].
    Held(host_door::HostDoor),
}

impl NetworkDoor {
    /// What the report calls this way of confining the program.
    pub fn name(&self) -> &'static str {
        match self {
            NetworkDoor::Namespace(_) => "network namespace",
            NetworkDoor::Held(_) => "held connects",
        }
    }

    /// The TCP ports the program may connect to (Landlock's rule).
    pub fn ports(&self) -> Vec<u16> {
        match self {
            NetworkDoor::Namespace(door) => door.ports(),
            NetworkDoor::Held(door) => door.ports(),
        }
    }
}

/// Serves the call's proxy on the door's listening sockets, for as long as this process lives.
/// Call after the last fork (the proxy's threads start here).
///
/// With a namespace, the sockets come from the program's child, which made them there. If they
/// never come, the child failed before it could run the program (and says why through the
/// lifetime's failure pipe): the program never runs without its door; the log then names the
/// failure too.
pub fn serve_door(
    door: NetworkDoor,
    net: Option<&InternetFlags>,
    resolve: &[ResolveOverride],
) -> Arc<Mutex<Log>> {
    let confinement = door.name();
    let (listeners, router, log) = match door {
        NetworkDoor::Namespace(mut door) => {
            door.close_child_end();
            let log = Arc::new(Mutex::new(Log::default()));
            match door.receive() {
                Ok(listeners) => (listeners, None, log),
                Err(why) => {
                    let mut failed = lock(&log);
                    failed.confinement = confinement;
                    failed.refuse("", 0, &why);
                    drop(failed);
                    return log;
                }
            }
        }
        NetworkDoor::Held(door) => {
            let (listeners, loopback) = door.into_parts();
            let log = loopback.log();
            (listeners, Some(loopback), log)
        }
    };
    lock(&log).confinement = confinement;
    if let Some(net) = net {
        server::serve(listeners, net.clone(), resolve.to_vec(), Arc::clone(&log), router);
    }
    log
}

/// What bypasses the proxy: the loopback, where the program's own servers are (its own in the
/// own world's network namespace; the call's own loopback address, which the program names as
/// `127.0.0.1`, in the Landlock-only mode). Each spelling a client may match: curl reads the
/// range, Python's `urllib` and `requests` the names.
pub const NO_PROXY: &str = "localhost,127.0.0.1,::1,127.0.0.0/8";

/// The proxy variables a program gets: every common spelling points at the proxy, and only
/// the loopback bypasses it ([`NO_PROXY`]): a request for the program's own server sent to the
/// proxy would reach the host's port, or nothing.
pub fn environment() -> Vec<String> {
    let url = format!("http://127.0.0.1:{}", door::PROXY_PORT);
    let mut env = Vec::new();
    for name in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"] {
        env.push(format!("{name}={url}"));
        env.push(format!("{}={url}", name.to_ascii_lowercase()));
    }
    env.push(format!("NO_PROXY={NO_PROXY}"));
    env.push(format!("no_proxy={NO_PROXY}"));
    env
}

/// `[internet]` for tests: `example.org`, and these `tcp` endpoints.
#[cfg(test)]
pub(crate) fn test_net(tcp: &[&str]) -> InternetFlags {
    use crate::sandbox_file::{HostPattern, TcpEndpoint};
    InternetFlags {
        hosts: vec![HostPattern::parse("example.org").unwrap()],
        tcp: tcp.iter().map(|t| TcpEndpoint::parse(t).unwrap()).collect(),
        per_minute: 60,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_pins_parse_like_curls() {
        assert_eq!(
            ResolveOverride::parse("Allowed.Test:443:192.0.2.1"),
            Ok(ResolveOverride {
                name: "allowed.test".into(),
                port: 443,
                address: "192.0.2.1".parse().unwrap()
            })
        );
        assert_eq!(ResolveOverride::parse("a:80:[::1]").unwrap().address, "::1".parse::<IpAddr>().unwrap());
        for bad in ["a:80", "a:0:1.2.3.4", ":80:1.2.3.4", "a:80:nope", "a b:80:1.2.3.4", "a:99999:1.2.3.4"] {
            assert!(ResolveOverride::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn refusals_are_counted_past_the_named_ones() {
        let mut log = Log::default();
        for i in 0..MAX_NAMED_REFUSALS + 5 {
            log.refuse("h", i as u16, "why");
        }
        assert_eq!(log.refused as usize, MAX_NAMED_REFUSALS + 5);
        assert_eq!(log.refusals.len(), MAX_NAMED_REFUSALS);
    }

    #[test]
    fn every_proxy_variable_points_at_the_door() {
        let env = environment();
        for name in ["HTTP_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"] {
            assert!(env.contains(&format!("{name}=http://127.0.0.1:3128")), "{name}");
        }
        assert!(env.contains(&format!("NO_PROXY={NO_PROXY}")));
        assert!(env.contains(&format!("no_proxy={NO_PROXY}")));
    }
}
