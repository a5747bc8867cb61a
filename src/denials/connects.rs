//! A connection to a server of the host's on loopback, refused for want of a `tcp` endpoint:
//! read from the program's error lines in the own world, where nothing of lnk's sees it.
//!
//! In the own world the program's loopback is its own network namespace's: a connect to
//! `127.0.0.1:8000` reaches only what the call started, and the host's server on that port is
//! out of reach unless `[internet] tcp` lists it (a forwarder then listens there). The kernel
//! answers `ECONNREFUSED` inside the namespace, and lnk sees nothing; so the tools' own words
//! are read (curl, wget, node, nc, Python's requests, psql), and the denial is made only where it
//! is right: the address is loopback, no `tcp` entry lists it, and a process of the host does
//! listen on that port now (asked of the kernel: [`crate::sock_diag::host_listens`]). Its fix is
//! the endpoint by address (`localhost` is `127.0.0.1`). In the Landlock-only mode the helper
//! makes every connect itself and names these as it refuses them.
//!
//! Trusted with: a denial for a refused loopback connect, and its `tcp` fix (a wrong one would have
//! a person open a server of the host's to the call needlessly). What it trusts: the kernel's
//! socket diagnostics, for whether a process of the host listens on the port; of the program's
//! line, only the address and port it names, taken only when loopback and not already listed.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use super::{Access, Cause, Denial, Fix};
use crate::flags::SandboxFlags;
use crate::sandbox_file::TcpHost;

/// The loopback host and port a line says a connection to was refused, if it says so in one of
/// the shapes the tools print.
pub fn read(line: &str) -> Option<(IpAddr, u16)> {
    let lower = line.to_ascii_lowercase();
    if !(lower.contains("refused") || lower.contains("couldn't connect")) {
        return None;
    }
    let (host, port) = None
        // curl: "Failed to connect to 127.0.0.1 port 8000 after 0 ms: ..."; nc: "connect to
        // 127.0.0.1 port 8000 (tcp) failed: Connection refused".
        .or_else(|| host_port_words(line, "connect to "))
        // node: "connect ECONNREFUSED 127.0.0.1:8000".
        .or_else(|| after(line, "ECONNREFUSED ").and_then(host_colon_port))
        // wget: "Connecting to localhost (localhost)|127.0.0.1|:8000... failed" or
        // "Connecting to 127.0.0.1:8000... failed: Connection refused."
        .or_else(|| wget(line))
        // requests/urllib3: "HTTPConnectionPool(host='localhost', port=8000): Max retries ..."
        .or_else(|| pool(line))
        // psql: "connection to server at \"localhost\" (127.0.0.1), port 5432 failed"
        .or_else(|| psql(line))?;
    Some((loopback(host)?, port))
}

/// The denial for a refused connection to a loopback address at `port`, when it is right (see
/// the module): named where the host's server really is (it may listen on 127.0.0.1 only,
/// while the program tried `::1` too).
pub fn explain(port: u16, flags: &SandboxFlags) -> Option<Denial> {
    let address = crate::sock_diag::host_listener(port, None)?;
    let listed = flags.internet.as_ref().is_some_and(|net| {
        net.tcp.iter().any(|e| e.port == port && matches!(e.host, TcpHost::Address(a) if a == address))
    });
    if listed {
        return None;
    }
    let endpoint = SocketAddr::new(address, port).to_string();
    Some(Denial {
        access: Access::Connect,
        target: endpoint.clone(),
        cause: Cause::NotAllowed,
        why: format!(
            "the server at {endpoint} is the host's, outside the call's own network (its loopback is its own); only a listed [internet] tcp endpoint reaches it"
        ),
        fix: Some(Fix::tcp(endpoint)),
        inferred: true,
    })
}

/// The text after `marker`.
fn after<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    line.find(marker).map(|at| &line[at + marker.len()..])
}

/// `HOST port PORT` after `marker`.
fn host_port_words<'a>(line: &'a str, marker: &str) -> Option<(&'a str, u16)> {
    let rest = after(line, marker)?;
    let (host, rest) = rest.split_once(" port ")?;
    Some((host, digits(rest)?))
}

/// `HOST:PORT` (or `[V6]:PORT`) at the start of `text`.
fn host_colon_port(text: &str) -> Option<(&str, u16)> {
    let word = text.split_whitespace().next()?;
    let (host, port) = word.rsplit_once(':')?;
    Some((host, digits(port)?))
}

fn wget(line: &str) -> Option<(&str, u16)> {
    let rest = after(line, "Connecting to ")?;
    match rest.split('|').nth(1) {
        Some(address) => Some((address, digits(rest.split("|:").nth(1)?)?)),
        None => host_colon_port(rest.split("...").next()?),
    }
}

fn pool(line: &str) -> Option<(&str, u16)> {
    let host = after(line, "host='")?.split('\'').next()?;
    Some((host, digits(after(line, "port=")?)?))
}

fn psql(line: &str) -> Option<(&str, u16)> {
    let rest = after(line, "server at \"")?;
    let address = after(rest, "(").and_then(|r| r.split(')').next()).unwrap_or(rest.split('"').next()?);
    Some((address, digits(after(rest, ", port ")?)?))
}

/// The leading digits of `text`, as a port other than 0.
fn digits(text: &str) -> Option<u16> {
    let end = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    text[..end].parse().ok().filter(|p| *p != 0)
}

/// The loopback address `host` names (`localhost`, `127.x.y.z`, `::1`, the wildcard), if any.
fn loopback(host: &str) -> Option<IpAddr> {
    let host = host.trim_matches(|c| c == '[' || c == ']' || c == '"' || c == '\'');
    let lower = host.to_ascii_lowercase();
    if lower == "localhost" || lower.ends_with(".localhost") {
        return Some(IpAddr::V4(Ipv4Addr::LOCALHOST));
    }
    let ip: IpAddr = host.parse().ok()?;
    match ip {
        ip if ip.is_unspecified() => Some(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        ip if ip.is_loopback() => Some(ip),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tools_words_name_the_address_refused() {
        let v4 = |p| Some((IpAddr::V4(Ipv4Addr::LOCALHOST), p));
        let lines = [
            (
                "curl: (7) Failed to connect to 127.0.0.1 port 8765 after 0 ms: Couldn't connect to server",
                v4(8765),
            ),
            ("curl: (7) Failed to connect to localhost port 8000 after 2 ms: Connection refused", v4(8000)),
            ("nc: connect to 127.0.0.1 port 5432 (tcp) failed: Connection refused", v4(5432)),
            ("Error: connect ECONNREFUSED 127.0.0.1:3000", v4(3000)),
            ("Connecting to localhost (localhost)|127.0.0.1|:8080... failed: Connection refused.", v4(8080)),
            ("Connecting to 127.0.0.1:8081... failed: Connection refused.", v4(8081)),
            (
                "requests.exceptions.ConnectionError: HTTPConnectionPool(host='localhost', port=8000): Max retries exceeded with url: / (Caused by NewConnectionError('<urllib3.connection.HTTPConnection object at 0x7f>: Failed to establish a new connection: [Errno 111] Connection refused'))",
                v4(8000),
            ),
            (
                "psql: error: connection to server at \"localhost\" (127.0.0.1), port 5432 failed: Connection refused",
                v4(5432),
            ),
            ("Error: connect ECONNREFUSED ::1:3000", Some(("::1".parse().unwrap(), 3000))),
        ];
        for (line, want) in lines {
            assert_eq!(read(line), want, "{line}");
        }
        // Not loopback, no refusal, no address: nothing.
        for line in [
            "curl: (7) Failed to connect to 192.0.2.1 port 80 after 0 ms: Connection refused",
            "ConnectionRefusedError: [Errno 111] Connection refused",
            "connect to 127.0.0.1 port 8000: ok",
            "curl: (7) Failed to connect to 127.0.0.1 port 0 after 0 ms: Connection refused",
        ] {
            assert_eq!(read(line), None, "{line}");
        }
    }
}
