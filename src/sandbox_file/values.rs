//! The values a sandbox file may hold: program names, host patterns and TCP endpoints.
//!
//! Each parser takes the string as written and either returns the typed value or a message that
//! says what a valid one looks like. They are strict on purpose: a value that is *almost* right
//! (`"https://example.org"` as a host, `"git "` as a program) is far more likely to be a mistake
//! than an intent, and guessing would widen a grant.
//!
//! Trusted with: each value's one meaning: a program name that could be a path, or a host pattern
//! wider than written, would widen a grant. What it trusts: nothing of the string, from a sandbox
//! file or a command line.

use std::fmt;
use std::net::{IpAddr, Ipv6Addr};

/// Longest program name accepted; longer names are not on any system PATH.
pub const PROGRAM_NAME_MAX: usize = 255;
/// The longest DNS name (RFC 1035).
pub const HOST_NAME_MAX: usize = 253;

/// Checks that `name` is a plain program name: what [`crate::program_path`] looks up, never a
/// path. No `/`, NUL, control characters or whitespace, not `.` or `..`, not empty.
pub fn program_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("a program name is empty".into());
    }
    if name.contains('/') {
        return Err(format!(
            "`{}` is a path: list the program's name (it is looked up on the system PATH)",
            name.escape_debug()
        ));
    }
    if name.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(format!(
            "`{}` contains whitespace or a control character: list one program's name",
            name.escape_debug()
        ));
    }
    if name == "." || name == ".." {
        return Err(format!("`{name}` is not a program name"));
    }
    if name.len() > PROGRAM_NAME_MAX {
        return Err(format!("a program name is longer than {PROGRAM_NAME_MAX} bytes"));
    }
    Ok(())
}

/// Which hosts the call's proxy lets through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostPattern {
    /// `"*"`: any host.
    Any,
    /// An exact host name, lower-cased.
    Exact(String),
    /// `*.suffix`: any name ending in `.suffix` (not `suffix` itself), lower-cased.
    Subdomains(String),
    /// An IP address, listed explicitly (IP literals are refused unless listed).
    Address(IpAddr),
}

impl HostPattern {
    pub fn parse(s: &str) -> Result<HostPattern, String> {
        if s == "*" {
            return Ok(HostPattern::Any);
        }
        if let Some(ip) = parse_ip(s) {
            return Ok(HostPattern::Address(ip));
        }
        if let Some(suffix) = s.strip_prefix("*.") {
            let suffix = host_name(suffix).map_err(|e| format!("after `*.`: {e}"))?;
            return Ok(HostPattern::Subdomains(suffix));
        }
        if s.contains('*') {
            return Err(format!("`{}`: `*` is allowed only alone or as `*.suffix`", s.escape_debug()));
        }
        Ok(HostPattern::Exact(host_name(s)?))
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostPattern::Any => f.write_str("*"),
            HostPattern::Exact(h) => f.write_str(h),
            HostPattern::Subdomains(s) => write!(f, "*.{s}"),
            HostPattern::Address(IpAddr::V6(a)) => write!(f, "[{a}]"),
            HostPattern::Address(a) => write!(f, "{a}"),
        }
    }
}

/// A plain TCP endpoint: an exact host (a name or an address) and a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpEndpoint {
    pub host: TcpHost,
    pub port: u16,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TcpHost {
    Name(String),
    Address(IpAddr),
}

impl TcpEndpoint {
    /// `host:port`, `1.2.3.4:port` or `[v6]:port`; the port in 1–65535.
    pub fn parse(s: &str) -> Result<TcpEndpoint, String> {
        let hint = "write `host:port`, such as `db.example.net:5432` or `[2001:db8::1]:22`";
        let Some((host, port)) = s.rsplit_once(':') else {
            return Err(format!("`{}` has no port: {hint}", s.escape_debug()));
        };
        let port = parse_port(port).ok_or_else(|| {
            format!("`{}` is not a port: use a number from 1 to 65535", port.escape_debug())
        })?;
        let host = if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            let a: Ipv6Addr =
                v6.parse().map_err(|_| format!("`{}` is not an IPv6 address", v6.escape_debug()))?;
            TcpHost::Address(IpAddr::V6(a))
        } else if host.contains(':') {
            return Err(format!("`{}`: put an IPv6 address in brackets; {hint}", s.escape_debug()));
        } else if let Ok(a) = host.parse::<std::net::Ipv4Addr>() {
            TcpHost::Address(IpAddr::V4(a))
        } else if host.contains('*') {
            return Err(format!("`{}`: a tcp endpoint names one exact host, no `*`", s.escape_debug()));
        } else {
            TcpHost::Name(host_name(host)?)
        };
        Ok(TcpEndpoint { host, port })
    }
}

impl fmt::Display for TcpEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            TcpHost::Name(n) => write!(f, "{n}:{}", self.port),
            TcpHost::Address(IpAddr::V6(a)) => write!(f, "[{a}]:{}", self.port),
            TcpHost::Address(a) => write!(f, "{a}:{}", self.port),
        }
    }
}

/// Only plain decimal digits: `"+80"` and `"0x50"` are not ports a person meant.
fn parse_port(s: &str) -> Option<u16> {
    if s.is_empty() || s.len() > 5 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<u16>().ok().filter(|p| *p != 0)
}

/// An IPv4 address, or an IPv6 address bare or in brackets.
fn parse_ip(s: &str) -> Option<IpAddr> {
    let inner = s.strip_prefix('[').and_then(|x| x.strip_suffix(']')).unwrap_or(s);
    inner.parse::<IpAddr>().ok()
}

/// A DNS host name (RFC 1123 labels: letters, digits and `-`, 1–63 characters, not starting or
/// ending with `-`), at most 253 characters, returned lower-cased. A trailing dot and an
/// all-numeric last label are refused: the first is a different name to some resolvers, the
/// second is a mistyped address.
pub fn host_name(s: &str) -> Result<String, String> {
    let shown = s.escape_debug().to_string();
    if s.is_empty() {
        return Err("the host name is empty".into());
    }
    if s.len() > HOST_NAME_MAX {
        return Err(format!("the host name is longer than {HOST_NAME_MAX} characters"));
    }
    if s.contains("://") || s.contains('/') {
        return Err(format!("`{shown}` looks like a URL: list the host name alone, such as `example.org`"));
    }
    if s.ends_with('.') {
        return Err(format!("`{shown}` ends with a dot: write the name without it"));
    }
    for label in s.split('.') {
        let ok = !label.is_empty()
            && label.len() <= 63
            && !label.starts_with('-')
            && !label.ends_with('-')
            && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
        if !ok {
            return Err(format!(
                "`{shown}` is not a host name: each dot-separated part is 1 to 63 letters, digits or `-`"
            ));
        }
    }
    if s.rsplit('.').next().is_some_and(|l| l.bytes().all(|b| b.is_ascii_digit())) {
        return Err(format!("`{shown}` is not a host name or a valid IP address"));
    }
    Ok(s.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_names_are_plain() {
        assert!(program_name("python3").is_ok());
        assert!(program_name("x86_64-linux-gnu-gcc-12").is_ok());
        for bad in ["", "/bin/sh", "a/b", "a b", "a\nb", "a\0b", ".", "..", "tab\t"] {
            assert!(program_name(bad).is_err(), "{bad:?} accepted");
        }
        assert!(program_name(&"a".repeat(256)).is_err());
    }

    #[test]
    fn host_patterns() {
        assert_eq!(HostPattern::parse("*"), Ok(HostPattern::Any));
        assert_eq!(HostPattern::parse("Example.ORG"), Ok(HostPattern::Exact("example.org".into())));
        assert_eq!(HostPattern::parse("*.example.com"), Ok(HostPattern::Subdomains("example.com".into())));
        assert_eq!(HostPattern::parse("10.0.0.1"), Ok(HostPattern::Address("10.0.0.1".parse().unwrap())));
        assert_eq!(HostPattern::parse("[::1]"), Ok(HostPattern::Address("::1".parse().unwrap())));
        for bad in [
            "",
            "*.",
            "a.*.com",
            "ex*ample.org",
            "https://example.org",
            "example.org.",
            "-a.org",
            "a..b",
            "1.2.3.999",
            "a_b.org",
        ] {
            assert!(HostPattern::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn tcp_endpoints() {
        let e = TcpEndpoint::parse("db.example.net:5432").unwrap();
        assert_eq!(e.to_string(), "db.example.net:5432");
        assert_eq!(TcpEndpoint::parse("[2001:db8::1]:22").unwrap().to_string(), "[2001:db8::1]:22");
        assert_eq!(TcpEndpoint::parse("192.0.2.1:1").unwrap().port, 1);
        assert_eq!(TcpEndpoint::parse("h:65535").unwrap().port, 65535);
        for bad in [
            "db",
            "db:",
            "db:0",
            "db:65536",
            "db:+80",
            "db:0x50",
            ":80",
            "2001:db8::1:22",
            "*.a.org:80",
            "a b:1",
        ] {
            assert!(TcpEndpoint::parse(bad).is_err(), "{bad:?} accepted");
        }
    }
}
