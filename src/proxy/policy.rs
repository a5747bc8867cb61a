//! The call's proxy's decisions: which host and port a request may reach, which resolved
//! addresses it may use, and how many new connections a minute it may open.
//!
//! Pure functions over the sandbox's `[internet]` flags and what the program sent, so every
//! rule is unit-tested (and the parsing fuzzed) on its own; [`super::server`] only carries out
//! what these decide.
//!
//! The rules:
//! - a host is allowed if a pattern lists it exactly, or `*.suffix` and it is a subdomain of the
//!   suffix (`evilexample.com` does not match `*.example.com`, nor does `example.com` itself),
//!   or the pattern is `*`; ports 80 and 443 only, unless a `tcp` endpoint names the exact host
//!   and port;
//! - an IP literal is refused unless that address is listed;
//! - a name that resolves to an internal address (loopback, private, link-local, unique-local,
//!   shared, unspecified, multicast, the metadata address, or an IPv4-mapped form of these) is
//!   refused unless that address is listed itself: no DNS-rebinding path to the harness;
//! - at most `per_minute` new connections in any sliding minute.

use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

use crate::flags::InternetFlags;
use crate::sandbox_file::{HostPattern, TcpHost};

/// Why a connection was refused, for the answer and for the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    HostNotListed,
    PortNotAllowed,
    AddressNotListed,
    /// Every address the name resolved to is internal and none is listed.
    InternalAddress(IpAddr),
    RateSpent,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::HostNotListed => f.write_str("the host is not listed in [internet] hosts"),
            Refused::PortNotAllowed => f.write_str(
                "only ports 80 and 443 are open for listed hosts; other ports need a [internet] tcp entry",
            ),
            Refused::AddressNotListed => {
                f.write_str("an IP address is reachable only when it is listed itself")
            }
            Refused::InternalAddress(a) => write!(
                f,
                "the name resolves to the internal address {a}, which is reachable only when listed itself"
            ),
            Refused::RateSpent => {
                f.write_str("the per_minute budget of new connections is spent; wait a minute")
            }
        }
    }
}

/// Lower-cases a host and strips one trailing dot, as names compare.
fn normal(host: &str) -> String {
    host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase()
}

/// Whether a listed pattern admits `host` (a name or an address literal).
pub fn pattern_matches(pattern: &HostPattern, host: &str) -> bool {
    let host = normal(host);
    match pattern {
        HostPattern::Any => true,
        HostPattern::Exact(name) => *name == host,
        HostPattern::Subdomains(suffix) => {
            host.len() > suffix.len() + 1
                && host.ends_with(suffix.as_str())
                && host[..host.len() - suffix.len()].ends_with('.')
        }
        HostPattern::Address(a) => parse_ip_literal(&host) == Some(*a),
    }
}

/// An IP address written as a host: `1.2.3.4`, `::1` or `[::1]`.
pub fn parse_ip_literal(host: &str) -> Option<IpAddr> {
    let inner = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    inner.parse().ok()
}

/// Whether an address belongs to this machine, its networks or the cloud's metadata service.
pub fn is_internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_internal_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_internal_v4(v4);
            }
            let s = v6.segments();
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00 // unique local fc00::/7
                || (s[0] & 0xffc0) == 0xfe80 // link-local fe80::/10
                || (s[0] == 0 && s[1] == 0 && s[2] == 0 && s[3] == 0 && s[4] == 0 && s[5] == 0) // IPv4-compatible ::a.b.c.d
                || (s[0] == 0x64 && s[1] == 0xff9b) // NAT64, which reaches IPv4 ranges
        }
    }
}

fn is_internal_v4(ip: Ipv4Addr) -> bool {
    let o = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local() // includes 169.254.169.254, the metadata service
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || o[0] == 0
        || (o[0] == 100 && (o[1] & 0xc0) == 64) // shared address space 100.64/10
        || (o[0] == 192 && o[1] == 0 && o[2] == 0) // IETF protocol assignments
        || (o[0] == 198 && (o[1] & 0xfe) == 18) // benchmarking 198.18/15
        || o[0] >= 240 // reserved
}

/// The connection a request asks for, decided before any name is resolved.
pub fn check_target(net: &InternetFlags, host: &str, port: u16) -> Result<(), Refused> {
    let literal = parse_ip_literal(host);
    let endpoint = net.tcp.iter().any(|e| {
        e.port == port
            && match (&e.host, literal) {
                (TcpHost::Name(n), None) => *n == normal(host),
                (TcpHost::Address(a), Some(l)) => *a == l,
                _ => false,
            }
    });
    if endpoint {
        return Ok(());
    }
    let listed = net.hosts.iter().any(|p| pattern_matches(p, host));
    if literal.is_some()
        && !net.hosts.iter().any(|p| matches!(p, HostPattern::Address(a) if Some(*a) == literal))
    {
        return Err(Refused::AddressNotListed);
    }
    if !listed {
        return Err(Refused::HostNotListed);
    }
    if port != 80 && port != 443 {
        return Err(Refused::PortNotAllowed);
    }
    Ok(())
}

/// The resolved addresses a connection may use: internal ones only when listed themselves.
pub fn usable_addresses(net: &InternetFlags, resolved: &[IpAddr]) -> Result<Vec<IpAddr>, Refused> {
    let listed = |ip: &IpAddr| {
        net.hosts.iter().any(|p| matches!(p, HostPattern::Address(a) if a == ip))
            || net.tcp.iter().any(|e| matches!(e.host, TcpHost::Address(a) if a == *ip))
    };
    let usable: Vec<IpAddr> = resolved.iter().copied().filter(|ip| !is_internal(*ip) || listed(ip)).collect();
    match (usable.is_empty(), resolved.first()) {
        (false, _) => Ok(usable),
        (true, Some(first)) => Err(Refused::InternalAddress(*first)),
        (true, None) => Err(Refused::HostNotListed),
    }
}

/// At most `per_minute` new connections in any sliding minute.
pub struct RateLimit {
    per_minute: usize,
    recent: VecDeque<Instant>,
}

impl RateLimit {
    pub fn new(per_minute: u32) -> RateLimit {
        RateLimit { per_minute: per_minute as usize, recent: VecDeque::new() }
    }

    /// Takes one connection from the budget at `now`, or says it is spent.
    pub fn take(&mut self, now: Instant) -> Result<(), Refused> {
        while self.recent.front().is_some_and(|t| now.duration_since(*t) >= Duration::from_secs(60)) {
            self.recent.pop_front();
        }
        if self.recent.len() >= self.per_minute {
            return Err(Refused::RateSpent);
        }
        self.recent.push_back(now);
        Ok(())
    }
}

/// What a client asked the proxy for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProxyRequest {
    /// `CONNECT host:port HTTP/1.1`: a tunnel.
    Connect { host: String, port: u16 },
    /// `GET http://host[:port]/path HTTP/1.1`: plain HTTP with an absolute URI; `origin_form` is
    /// the request line to send upstream (`GET /path HTTP/1.1`).
    Forward { host: String, port: u16, origin_form: String },
}

/// Parses a request line. Anything else (origin-form requests, `https://` absolute URIs, other
/// schemes, bad ports) is an error: the proxy answers 400 and closes.
pub fn parse_request_line(line: &str) -> Result<ProxyRequest, String> {
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err("a request line is METHOD TARGET VERSION".into());
    };
    if version != "HTTP/1.1" && version != "HTTP/1.0" {
        return Err(format!("unsupported version `{}`", version.escape_debug()));
    }
    if method == "CONNECT" {
        let (host, port) = split_host_port(target).ok_or("CONNECT takes host:port")?;
        return Ok(ProxyRequest::Connect { host, port });
    }
    if !method.bytes().all(|b| b.is_ascii_uppercase()) || method.is_empty() {
        return Err("invalid method".into());
    }
    let rest = target
        .strip_prefix("http://")
        .ok_or("only http:// absolute URIs are forwarded; use CONNECT for https")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if authority.contains('@') {
        return Err("credentials in the URI are not forwarded".into());
    }
    let (host, port) = if authority.ends_with(']') || !authority.contains(':') {
        (authority.to_owned(), 80)
    } else {
        split_host_port(authority).ok_or("invalid port")?
    };
    if !valid_host(&host) {
        return Err("not a host name or address".into());
    }
    if path.bytes().any(|b| b.is_ascii_control()) {
        return Err("control characters in the path".into());
    }
    Ok(ProxyRequest::Forward { host, port, origin_form: format!("{method} {path} {version}") })
}

fn split_host_port(s: &str) -> Option<(String, u16)> {
    let (host, port) = s.rsplit_once(':')?;
    let port: u16 = port.parse().ok().filter(|p| *p != 0)?;
    valid_host(host).then(|| (host.to_owned(), port))
}

/// A host as the proxy accepts it: a name of letters, digits, `-` and `.` (at most 253), or an
/// IP address (IPv6 in brackets). Anything else is refused before any decision.
fn valid_host(host: &str) -> bool {
    if host.starts_with('[') {
        return host.ends_with(']') && matches!(parse_ip_literal(host), Some(IpAddr::V6(_)));
    }
    !host.is_empty()
        && host.len() <= 253
        && host.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
}

/// Headers the proxy does not forward: its own, and those about the client's connection (the
/// upstream connection is always `Connection: close`).
const HOP_HEADERS: &[&str] = &["proxy-connection", "proxy-authorization", "connection", "keep-alive"];

/// Parses a request head (the request line and headers, without the blank line). Returns the
/// request and, for a plain-HTTP one, the head to send upstream: the origin-form request line,
/// the client's headers but [`HOP_HEADERS`], and `Connection: close`. A head with a control
/// character other than a tab inside a line (a lone CR or LF among them) is refused, so nothing
/// can be smuggled upstream as an extra header or request.
pub fn parse_request_head(head: &str) -> Result<(ProxyRequest, String), String> {
    let mut lines = head.split("\r\n");
    let request = parse_request_line(lines.next().unwrap_or_default())?;
    let mut upstream = String::new();
    if let ProxyRequest::Forward { origin_form, .. } = &request {
        upstream.push_str(origin_form);
        upstream.push_str("\r\n");
    }
    for line in lines {
        if line.bytes().any(|b| b.is_ascii_control() && b != b'\t') {
            return Err("control characters in a header".into());
        }
        let Some((name, _)) = line.split_once(':') else {
            return Err("a header line without a colon".into());
        };
        let name = name.trim().to_ascii_lowercase();
        if name.is_empty() || name.bytes().any(|b| b.is_ascii_whitespace()) {
            return Err("an invalid header name".into());
        }
        if matches!(request, ProxyRequest::Forward { .. }) && !HOP_HEADERS.contains(&name.as_str()) {
            upstream.push_str(line);
            upstream.push_str("\r\n");
        }
    }
    if matches!(request, ProxyRequest::Forward { .. }) {
        upstream.push_str("Connection: close\r\n\r\n");
    }
    Ok((request, upstream))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox_file::TcpEndpoint;

    fn net(hosts: &[&str], tcp: &[&str]) -> InternetFlags {
        InternetFlags {
            hosts: hosts.iter().map(|h| HostPattern::parse(h).unwrap()).collect(),
            tcp: tcp.iter().map(|t| TcpEndpoint::parse(t).unwrap()).collect(),
            per_minute: 60,
        }
    }

    #[test]
    fn suffix_patterns_match_subdomains_only() {
        let p = HostPattern::parse("*.example.com").unwrap();
        assert!(pattern_matches(&p, "a.example.com"));
        assert!(pattern_matches(&p, "A.B.Example.COM."));
        assert!(!pattern_matches(&p, "example.com"));
        assert!(!pattern_matches(&p, "evilexample.com"));
        assert!(!pattern_matches(&p, "example.com.evil.org"));
    }

    #[test]
    fn targets_are_checked_before_resolution() {
        let n = net(&["example.org", "*.example.com", "192.0.2.10"], &["db.example.net:5432"]);
        assert_eq!(check_target(&n, "example.org", 443), Ok(()));
        assert_eq!(check_target(&n, "x.example.com", 80), Ok(()));
        assert_eq!(check_target(&n, "example.org", 22), Err(Refused::PortNotAllowed));
        assert_eq!(check_target(&n, "evil.org", 443), Err(Refused::HostNotListed));
        assert_eq!(check_target(&n, "db.example.net", 5432), Ok(()));
        assert_eq!(check_target(&n, "db.example.net", 443), Err(Refused::HostNotListed));
        assert_eq!(check_target(&n, "192.0.2.10", 443), Ok(()));
        assert_eq!(check_target(&n, "192.0.2.11", 443), Err(Refused::AddressNotListed));
        assert_eq!(check_target(&n, "[::1]", 443), Err(Refused::AddressNotListed));
        let any = net(&["*"], &[]);
        assert_eq!(check_target(&any, "anything.org", 443), Ok(()));
        assert_eq!(
            check_target(&any, "127.0.0.1", 443),
            Err(Refused::AddressNotListed),
            "* is names, not addresses"
        );
    }

    #[test]
    fn internal_addresses_need_listing_themselves() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "::1",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "64:ff9b::a00:1",
        ] {
            assert!(is_internal(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["93.184.216.34", "2606:2800:220:1::1", "8.8.8.8"] {
            assert!(!is_internal(ip.parse().unwrap()), "{ip}");
        }
        let n = net(&["example.org", "10.0.0.5"], &[]);
        let resolved: Vec<IpAddr> = vec!["127.0.0.1".parse().unwrap()];
        assert_eq!(
            usable_addresses(&n, &resolved),
            Err(Refused::InternalAddress("127.0.0.1".parse().unwrap()))
        );
        let mixed: Vec<IpAddr> = vec!["10.0.0.5".parse().unwrap(), "10.0.0.6".parse().unwrap()];
        assert_eq!(usable_addresses(&n, &mixed), Ok(vec!["10.0.0.5".parse().unwrap()]));
    }

    #[test]
    fn the_rate_is_a_sliding_minute() {
        let mut r = RateLimit::new(2);
        let t0 = Instant::now();
        assert!(r.take(t0).is_ok());
        assert!(r.take(t0 + Duration::from_secs(1)).is_ok());
        assert_eq!(r.take(t0 + Duration::from_secs(59)), Err(Refused::RateSpent));
        assert!(r.take(t0 + Duration::from_secs(60)).is_ok(), "the first one left the window");
    }

    #[test]
    fn request_heads_forward_only_clean_headers() {
        let (request, upstream) = parse_request_head(
            "GET http://a.org/x HTTP/1.1\r\nHost: a.org\r\nProxy-Authorization: secret\r\nConnection: keep-alive\r\nAccept: */*",
        )
        .unwrap();
        assert!(matches!(request, ProxyRequest::Forward { port: 80, .. }));
        assert_eq!(upstream, "GET /x HTTP/1.1\r\nHost: a.org\r\nAccept: */*\r\nConnection: close\r\n\r\n");
        let (request, upstream) =
            parse_request_head("CONNECT a.org:443 HTTP/1.1\r\nHost: a.org:443").unwrap();
        assert_eq!(request, ProxyRequest::Connect { host: "a.org".into(), port: 443 });
        assert_eq!(upstream, "");
        for bad in [
            "GET http://a.org/ HTTP/1.1\r\nHost: a\nX-Smuggled: 1",
            "GET http://a.org/ HTTP/1.1\r\nHost: a\rb",
            "GET http://a.org/ HTTP/1.1\r\nno colon",
            "GET http://a.org/ HTTP/1.1\r\nBad Name: x",
        ] {
            assert!(parse_request_head(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn request_lines() {
        assert_eq!(
            parse_request_line("CONNECT example.org:443 HTTP/1.1"),
            Ok(ProxyRequest::Connect { host: "example.org".into(), port: 443 })
        );
        assert_eq!(
            parse_request_line("GET http://example.org:8080/a?b HTTP/1.1"),
            Ok(ProxyRequest::Forward {
                host: "example.org".into(),
                port: 8080,
                origin_form: "GET /a?b HTTP/1.1".into()
            })
        );
        assert_eq!(
            parse_request_line("GET http://[::1] HTTP/1.0"),
            Ok(ProxyRequest::Forward {
                host: "[::1]".into(),
                port: 80,
                origin_form: "GET / HTTP/1.0".into()
            })
        );
        for bad in [
            "GET /relative HTTP/1.1",
            "GET https://x/ HTTP/1.1",
            "CONNECT x HTTP/1.1",
            "CONNECT x:0 HTTP/1.1",
            "CONNECT ::1:443 HTTP/1.1",
            "GET http://u:p@x/ HTTP/1.1",
            "get http://x/ HTTP/1.1",
            "GET http://x/ SPDY/3",
            "GET  http://x/ HTTP/1.1",
            "GET http://x/ HTTP/1.1\nHost: y",
            "GET http://x/\n HTTP/1.1",
            "CONNECT a\nb:443 HTTP/1.1",
            "CONNECT a_b:443 HTTP/1.1",
            "GET http://[x]/ HTTP/1.1",
            "GET http://x/ HTTP/1.2",
            "",
        ] {
            assert!(parse_request_line(bad).is_err(), "{bad:?} accepted");
        }
    }
}
