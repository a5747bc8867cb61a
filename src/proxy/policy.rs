//! The call's proxy's decisions: which host and port a request may reach, which resolved
//! addresses it may use, and how many new connections a minute it may open.
//!
//! Pure functions over the sandbox's `[internet]` flags and the target a request named (read by
//! [`super::request`]), so every rule is unit-tested (and fuzzed) on its own; [`super::server`]
//! only carries out what these decide.
//!
//! The rules:
//! - a host is allowed if a pattern lists it exactly, or `*.suffix` and it is a subdomain of the
//!   suffix (`evilexample.com` does not match `*.example.com`, nor does `example.com` itself),
//!   or the pattern is `*`; ports 80 and 443 only, unless a `tcp` endpoint names the exact host
//!   and port;
//! - an IP literal is refused unless that address is listed; a host is a literal if it is a
//!   bracketed IPv6 address or anything glibc's `inet_aton` reads as IPv4 (`2130706433`,
//!   `0x7f.1`, `127.1`), since the program's tools (glibc) would read it so too, and lnk's own
//!   resolver (musl's, whose grammar is within glibc's: the unit test checks) too;
//! - a name that resolves to an internal address (loopback, private, link-local, unique-local,
//!   shared, unspecified, multicast, the metadata address, or an IPv4-mapped form of these) is
//!   refused unless that address is listed itself: no DNS-rebinding path to the harness;
//! - at most `per_minute` new connections in any sliding minute.
//!
//! Trusted with: every yes the proxy gives: a wrong one could let a program reach a host the file
//! does not list, or an internal address of the harness. What it trusts: the `[internet]` flags as
//! given; neither the target a request named nor the resolver's answers, which are checked.

use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::{Duration, Instant};

use crate::denials::Fix;
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

impl Refused {
    /// The one change to the sandbox file that allows `host:port`, where one does: a host for
    /// ports 80 and 443 (the only ones `hosts` opens), a `tcp` endpoint for any other port, by
    /// address where the host is one or resolved to an internal one (`localhost` is
    /// `127.0.0.1`), by name only where names work (`tcp_by_name`: the own world's hosts file).
    /// `None` where no entry would: the `per_minute` budget (a number, not a list), a `tcp`
    /// name without the own world, and the loopback (see [`Refused::needs`]).
    pub fn fix(&self, host: &str, port: u16, tcp_by_name: bool) -> Option<Fix> {
        let web = port == 80 || port == 443;
        let address = match self {
            Refused::RateSpent => return None,
            Refused::InternalAddress(a) => Some(*a),
            _ => parse_ip_literal(host)
                .or_else(|| is_localhost(host).then_some(IpAddr::V4(Ipv4Addr::LOCALHOST))),
        };
        // A request for the loopback sent to the proxy is most often one for the program's own
        // server (a client that ignored `NO_PROXY`): an entry would open the host's port of that
        // number instead, a service of the person's.
        if address.is_some_and(|a| a.is_loopback() || a.to_canonical().is_loopback()) {
            return None;
        }
        let endpoint = |ip: IpAddr| match ip {
            IpAddr::V6(v6) => format!("[{v6}]:{port}"),
            IpAddr::V4(v4) => format!("{v4}:{port}"),
        };
        match (web, address) {
            (true, Some(ip)) => Some(Fix::host(&ip.to_string())),
            (true, None) => Some(Fix::host(&normal(host))),
            (false, Some(ip)) => Some(Fix::tcp(endpoint(ip))),
            (false, None) if tcp_by_name => Some(Fix::tcp(format!("{}:{port}", normal(host)))),
            (false, None) => None,
        }
    }

    /// What the refusal's words add where [`Refused::fix`] has no fix.
    pub fn needs(&self, host: &str, port: u16, tcp_by_name: bool) -> Option<String> {
        match self.fix(host, port, tcp_by_name) {
            Some(_) => None,
            None if *self == Refused::RateSpent => None,
            None if self.loopback(host) => Some(
                "the loopback is reached directly, not through the proxy (NO_PROXY names it): the program's own servers are there; a server of the host's is reached only through a tcp endpoint the person lists".to_owned(),
            ),
            None => Some(format!(
                "a tcp endpoint by name needs the call's own world (user namespaces); list the address `{host}` has instead, as tcp \"ADDRESS:{port}\""
            )),
        }
    }
}

impl Refused {
    /// Whether the refused target is the loopback (by address, or `localhost`).
    fn loopback(&self, host: &str) -> bool {
        match self {
            Refused::InternalAddress(a) => a.is_loopback(),
            _ => parse_ip_literal(host).is_some_and(|a| a.is_loopback()) || is_localhost(host),
        }
    }
}

/// `localhost` and its subdomains, which the system resolves to loopback.
fn is_localhost(host: &str) -> bool {
    let name = normal(host);
    name == "localhost" || name.ends_with(".localhost")
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

/// An IP address written as a host: `[::1]` or `::1`, or an IPv4 address in any form the
/// system resolver reads as one (see [`parse_inet_aton`]; one trailing dot allowed, as names
/// compare). A host this returns an address for is an address, never a name: the IP-literal
/// rule and the internal-address check apply to it, and it is never given to `getaddrinfo`.
pub fn parse_ip_literal(host: &str) -> Option<IpAddr> {
    if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return inner.parse::<Ipv6Addr>().ok().map(IpAddr::V6);
    }
    if let Ok(v6) = host.parse::<Ipv6Addr>() {
        return Some(IpAddr::V6(v6));
    }
    parse_inet_aton(host.strip_suffix('.').unwrap_or(host)).map(IpAddr::V4)
}

/// An IPv4 address in glibc's `inet_aton` grammar, which `getaddrinfo` applies to a "name"
/// before any lookup: 1 to 4 parts separated by dots, each decimal, `0x` hex or `0` octal;
/// every part but the last is one byte, and the last fills the bytes left. So `127.1`,
/// `0x7f.1`, `0177.0.0.1` and `2130706433` are all 127.0.0.1. Written out here (not a call
/// to libc) so it is pure and the same on every system; a unit test compares it with glibc's.
pub fn parse_inet_aton(text: &str) -> Option<Ipv4Addr> {
    let mut parts = Vec::with_capacity(4);
    for part in text.split('.') {
        if parts.len() == 4 {
            return None;
        }
        parts.push(parse_inet_aton_part(part)?);
    }
    let (last, leading) = parts.split_last()?;
    if leading.iter().any(|p| *p > 0xff) {
        return None;
    }
    // The last part fills the 4 - leading.len() bytes left: 32, 24, 16 or 8 bits.
    let last_bits = 8 * (4 - leading.len() as u32);
    if u64::from(*last) >= 1u64 << last_bits {
        return None;
    }
    let high = leading.iter().enumerate().fold(0u32, |a, (i, p)| a | p << (24 - 8 * i as u32));
    Some(Ipv4Addr::from(high | last))
}

/// One part of an `inet_aton` address, as `strtoul(part, _, 0)` reads all of it: `0x` or `0X`
/// and hex digits, `0` and octal digits, or decimal digits; at most 32 bits.
fn parse_inet_aton_part(part: &str) -> Option<u32> {
    let (digits, radix) = if let Some(hex) = part.strip_prefix("0x").or_else(|| part.strip_prefix("0X")) {
        (hex, 16)
    } else if part.len() > 1 && part.starts_with('0') {
        (&part[1..], 8)
    } else {
        (part, 10)
    };
    if digits.is_empty() {
        return None;
    }
    digits.chars().try_fold(0u32, |n, c| n.checked_mul(radix)?.checked_add(c.to_digit(radix)?))
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
    // `localhost` is 127.0.0.1 for a tcp endpoint by address (the fix a refusal of it gives):
    // the system resolves it so on every machine, with no lookup a program could steer.
    let as_address = literal.or_else(|| is_localhost(host).then_some(IpAddr::V4(Ipv4Addr::LOCALHOST)));
    let endpoint = net.tcp.iter().any(|e| {
        e.port == port
            && match (&e.host, as_address) {
                (TcpHost::Name(n), _) if literal.is_none() => *n == normal(host),
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
    fn each_refusal_gets_the_one_entry_that_allows_it() {
        let fix = |r: Refused, host: &str, port: u16, by_name: bool| r.fix(host, port, by_name);
        // A host for the web ports; a tcp endpoint for any other, by address where it is one.
        assert_eq!(fix(Refused::HostNotListed, "a.test", 443, true), Some(Fix::host("a.test")));
        assert_eq!(fix(Refused::AddressNotListed, "192.0.2.1", 80, false), Some(Fix::host("192.0.2.1")));
        assert_eq!(fix(Refused::PortNotAllowed, "a.test", 8443, true), Some(Fix::tcp("a.test:8443".into())));
        assert_eq!(
            fix(Refused::HostNotListed, "a.test", 8443, false),
            None,
            "no tcp name without the own world"
        );
        assert!(Refused::HostNotListed.needs("a.test", 8443, false).unwrap().contains("ADDRESS:8443"));
        // The loopback: no entry (it would open the host's port, not the program's server).
        for (why, host) in [
            (Refused::AddressNotListed, "127.0.0.1"),
            (Refused::HostNotListed, "localhost"),
            (Refused::AddressNotListed, "::1"),
            (Refused::InternalAddress("127.0.1.1".parse().unwrap()), "myhost"),
        ] {
            assert_eq!(fix(why.clone(), host, 8000, true), None, "{host}");
            assert!(why.needs(host, 8000, true).unwrap().contains("NO_PROXY"), "{host}");
        }
        assert_eq!(fix(Refused::AddressNotListed, "[::1]", 8000, true), None);
        let internal = Refused::InternalAddress(IpAddr::V4(Ipv4Addr::LOCALHOST));
        assert_eq!(fix(internal.clone(), "localhost", 80, true), None);
        // Another internal address is listed by address.
        let private = Refused::InternalAddress("10.0.0.5".parse().unwrap());
        assert_eq!(fix(private, "db.internal", 5432, true), Some(Fix::tcp("10.0.0.5:5432".into())));
        assert_eq!(fix(Refused::RateSpent, "a.test", 443, true), None);
        // Each fix, applied, allows the target (resolution aside).
        let n = net(&[], &["127.0.0.1:8000"]);
        assert_eq!(check_target(&n, "localhost", 8000), Ok(()), "localhost is 127.0.0.1 for tcp");
        assert_eq!(check_target(&n, "127.0.0.1", 8000), Ok(()));
        assert_eq!(check_target(&n, "localhost", 8001), Err(Refused::HostNotListed));
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
    fn numeric_hosts_are_addresses_not_names() {
        for (host, ip) in [
            ("3221225985", "192.0.2.1"),
            ("2130706433", "127.0.0.1"),
            ("0x7f.1", "127.0.0.1"),
            ("127.1", "127.0.0.1"),
            ("0177.0.0.1", "127.0.0.1"),
            ("0x7F000001", "127.0.0.1"),
            ("127.0.1", "127.0.0.1"),
            ("0", "0.0.0.0"),
            ("10.0x10203", "10.1.2.3"),
            ("1.2.3.4", "1.2.3.4"),
            ("1.2.3.4.", "1.2.3.4"),
            ("0x000000000000000000000001", "0.0.0.1"),
            ("[::1]", "::1"),
        ] {
            assert_eq!(parse_ip_literal(host), Some(ip.parse().unwrap()), "{host}");
        }
        for name in [
            "example.org",
            "1.2.3.4.5",
            "256.1.1.1",
            "1.2.3.256",
            "1.16777216",
            "4294967296",
            "08",
            "0x",
            "0x.1",
            "1..2",
            ".1",
            "1.2.3.4..",
            "1e3",
            "0xg",
            "09.1",
            "",
            "a1",
        ] {
            assert_eq!(parse_ip_literal(name), None, "{name}");
        }
        let any = net(&["*"], &[]);
        for host in ["3221225985", "0x7f.1", "127.1", "0177.0.0.1", "2130706433", "0x5db8d822"] {
            assert_eq!(check_target(&any, host, 80), Err(Refused::AddressNotListed), "{host}");
        }
        let listed = net(&["192.0.2.1"], &[]);
        assert_eq!(check_target(&listed, "3221225985", 80), Ok(()), "the same address, listed");
        assert_eq!(check_target(&listed, "192.0.2.2", 80), Err(Refused::AddressNotListed));
    }

    /// The grammar above, compared with glibc's own `inet_aton` on every short string of the
    /// characters that matter, and on longer tricky ones.
    #[test]
    fn inet_aton_agrees_with_glibc() {
        // The program's own tools (curl, Python) read a host with the system's glibc, and lnk is
        // built against musl (`.cargo/config.toml`): so glibc is asked through Python's
        // `socket.inet_aton`, which calls it, all inputs in one run.
        fn glibc(inputs: &[String]) -> Vec<Option<Ipv4Addr>> {
            use std::io::Write as _;
            let script = "import socket, sys\n\
                for line in sys.stdin.read().split('\\n'):\n\
                \x20   try: print(socket.inet_ntoa(socket.inet_aton(line)))\n\
                \x20   except OSError: print('-')\n";
            let mut python = std::process::Command::new("python3")
                .args(["-c", script])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .expect("python3 (the test asks glibc's inet_aton through it)");
            let mut stdin = python.stdin.take().unwrap();
            let text = inputs.join("\n");
            let writer = std::thread::spawn(move || stdin.write_all(text.as_bytes()).unwrap());
            let out = python.wait_with_output().unwrap();
            writer.join().unwrap();
            assert!(out.status.success());
            let answers: Vec<_> =
                String::from_utf8(out.stdout).unwrap().lines().map(|line| line.parse().ok()).collect();
            assert_eq!(answers.len(), inputs.len());
            answers
        }
        let alphabet = ['0', '1', '7', '8', '9', 'x', 'X', 'f', 'g', '.'];
        let mut inputs: Vec<String> = Vec::new();
        let mut current = vec![String::new()];
        for _ in 0..5 {
            let mut next = Vec::new();
            for s in &current {
                for c in alphabet {
                    next.push(format!("{s}{c}"));
                }
            }
            inputs.extend(next.iter().cloned());
            current = next;
        }
        inputs.extend(
            [
                "4294967295",
                "4294967296",
                "0xffffffff",
                "0x100000000",
                "037777777777",
                "040000000000",
                "1.16777215",
                "1.16777216",
                "1.1.65535",
                "1.1.65536",
                "1.1.1.255",
                "1.1.1.256",
                "0x7f.0x0.0x0.0x1",
                "00000000000000000000000000177.1",
                "1.2.3.4.5",
                "255.255.255.255",
            ]
            .map(String::from),
        );
        // The C library lnk is linked with (musl's; glibc's in a glibc build) reads the names
        // the proxy resolves: whatever it takes for an address, the grammar above must take for
        // the same one, or a "name" could resolve to an address no rule looked at.
        unsafe extern "C" {
            fn inet_aton(cp: *const libc::c_char, inp: *mut libc::in_addr) -> libc::c_int;
        }
        let linked = |text: &str| {
            let c = std::ffi::CString::new(text).ok()?;
            let mut out = libc::in_addr { s_addr: 0 };
            // SAFETY: `c` is a NUL-terminated string and `out` a valid in_addr, both alive for
            // the call; inet_aton only reads the one and writes the other.
            let ok = unsafe { inet_aton(c.as_ptr(), &mut out) };
            (ok != 0).then(|| Ipv4Addr::from(u32::from_be(out.s_addr)))
        };
        for (text, glibc) in inputs.iter().zip(glibc(&inputs)) {
            assert_eq!(parse_inet_aton(text), glibc, "{text:?}");
            if let Some(address) = linked(text) {
                assert_eq!(parse_inet_aton(text), Some(address), "{text:?}, as lnk's C library reads it");
            }
        }
    }
}
