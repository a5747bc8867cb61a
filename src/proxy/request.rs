//! What a sandboxed program sends the call's proxy, read strictly: the request line, the
//! headers, and where the one request's body ends.
//!
//! Why strict: the proxy stands between a hostile program and servers that each parse HTTP in
//! their own way. A request that two parsers could read differently (a folded header, two
//! `Content-Length`s, `Content-Length` with `Transfer-Encoding`, a coding other than `chunked`,
//! a chunk size that is not plain hex) is refused with 400 instead of passed on. What is passed
//! on has one reading only: the `Host` header is written from the checked target, the framing
//! header is the proxy's own canonical one, and exactly one request's body follows it; the
//! proxy reads no further, so bytes a program sends after that body (a pipelined or smuggled
//! second request) never reach any upstream.
//!
//! Pure functions and one small state machine ([`Body`]), unit-tested here, fuzzed
//! (`fuzz/fuzz_targets/proxy_request.rs`); [`super::server`] only moves the bytes.
//!
//! Trusted with: that what the proxy passes upstream has one reading only, and that nothing after
//! the one request's body reaches any upstream. What it trusts: nothing of the program's bytes:
//! every line, header and chunk is read strictly, or refused.

use std::net::IpAddr;

use super::policy::parse_ip_literal;

/// A request the proxy refuses to pass on (answered 400, recorded in the report), and the
/// target its request line named, when that line was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    pub target: Option<(String, u16)>,
    pub why: String,
}

impl std::fmt::Display for Malformed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "malformed request: {}", self.why)
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

impl ProxyRequest {
    pub fn target(&self) -> (&str, u16) {
        match self {
            ProxyRequest::Connect { host, port } | ProxyRequest::Forward { host, port, .. } => (host, *port),
        }
    }
}

/// A request head the proxy accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHead {
    pub request: ProxyRequest,
    /// For a plain-HTTP request, the head to send upstream, blank line included; empty for
    /// CONNECT.
    pub upstream: String,
    /// Where the request's body ends (for CONNECT, unused: the tunnel is opaque).
    pub body: Body,
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

/// Headers the proxy does not forward: its own, those about the client's connection (the
/// upstream connection is always `Connection: close`), and those it writes itself (`Host` from
/// the checked target, the framing header from what it parsed).
const DROPPED_HEADERS: &[&str] = &[
    "proxy-connection",
    "proxy-authorization",
    "connection",
    "keep-alive",
    "host",
    "content-length",
    "transfer-encoding",
];

/// Parses a request head (the request line and headers, without the blank line).
///
/// A plain-HTTP request's upstream head is: the origin-form request line; `Host` from the
/// request line's host and port (every client `Host` is dropped); the client's headers but
/// `DROPPED_HEADERS`; the canonical `Content-Length: N` or `Transfer-Encoding: chunked`; and
/// `Connection: close`. Refused, with the target if the request line was read: a control
/// character other than a tab inside a line (a lone CR or LF among them), a folded header, a
/// header name that is not a token (whitespace before the colon included), and any framing two
/// parsers could disagree on.
pub fn parse_request_head(head: &str) -> Result<RequestHead, Malformed> {
    let mut lines = head.split("\r\n");
    let request = parse_request_line(lines.next().unwrap_or_default())
        .map_err(|why| Malformed { target: None, why: format!("request line: {why}") })?;
    let (host, port) = request.target();
    let bad = |why: &str| Malformed { target: Some((host.to_owned(), port)), why: why.to_owned() };
    let mut kept = String::new();
    let mut content_length: Option<u64> = None;
    let mut chunked = false;
    for line in lines {
        if line.starts_with([' ', '\t']) {
            return Err(bad("obs-fold header (a line starting with a space or tab)"));
        }
        if line.bytes().any(|b| b.is_ascii_control() && b != b'\t') {
            return Err(bad("control characters in a header"));
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(bad("a header line without a colon"));
        };
        if name.is_empty() || !name.bytes().all(is_token_byte) {
            return Err(bad("an invalid header name (a token, with no space before the colon)"));
        }
        let value = value.trim_matches([' ', '\t']);
        let name = name.to_ascii_lowercase();
        match name.as_str() {
            "content-length" => {
                if content_length.is_some() {
                    return Err(bad("more than one Content-Length"));
                }
                let n = value
                    .bytes()
                    .all(|b| b.is_ascii_digit())
                    .then(|| value.parse::<u64>().ok())
                    .flatten()
                    .ok_or_else(|| bad("a Content-Length that is not one decimal number"))?;
                content_length = Some(n);
            }
            "transfer-encoding" => {
                if chunked {
                    return Err(bad("more than one Transfer-Encoding"));
                }
                if !value.eq_ignore_ascii_case("chunked") {
                    return Err(bad("a Transfer-Encoding other than exactly `chunked`"));
                }
                chunked = true;
            }
            _ if DROPPED_HEADERS.contains(&name.as_str()) => {}
            _ => {
                kept.push_str(line);
                kept.push_str("\r\n");
            }
        }
    }
    if chunked && content_length.is_some() {
        return Err(bad("both Content-Length and Transfer-Encoding"));
    }
    let body =
        if chunked { Body::Chunked(ChunkedBody::new()) } else { Body::Length(content_length.unwrap_or(0)) };
    let upstream = match &request {
        ProxyRequest::Connect { .. } => String::new(),
        ProxyRequest::Forward { origin_form, .. } => {
            if chunked && origin_form.ends_with("HTTP/1.0") {
                // RFC 9112 6.1: an HTTP/1.0 message with Transfer-Encoding has faulty framing.
                return Err(bad("Transfer-Encoding in an HTTP/1.0 request"));
            }
            let authority = if port == 80 { host.to_owned() } else { format!("{host}:{port}") };
            let framing = match (chunked, content_length) {
                (true, _) => "Transfer-Encoding: chunked\r\n".to_owned(),
                (false, Some(n)) => format!("Content-Length: {n}\r\n"),
                (false, None) => String::new(),
            };
            format!("{origin_form}\r\nHost: {authority}\r\n{kept}{framing}Connection: close\r\n\r\n")
        }
    };
    Ok(RequestHead { request, upstream, body })
}

/// RFC 9110's `tchar`: the bytes of a header name.
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Where one request's body ends, found as its bytes arrive: `Content-Length` bytes (none
/// without a framing header), or a chunked body through its last chunk and trailers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// This many bytes are still to come.
    Length(u64),
    Chunked(ChunkedBody),
}

impl Body {
    /// How many of `input`'s first bytes belong to the body (all of them, unless it ends
    /// inside), or why the body is malformed. Once [`Body::is_done`], takes nothing.
    pub fn take(&mut self, input: &[u8]) -> Result<usize, String> {
        match self {
            Body::Length(left) => {
                let n = input.len().min(usize::try_from(*left).unwrap_or(usize::MAX));
                *left -= n as u64;
                Ok(n)
            }
            Body::Chunked(c) => c.take(input).map_err(|why| format!("chunked body: {why}")),
        }
    }

    pub fn is_done(&self) -> bool {
        match self {
            Body::Length(left) => *left == 0,
            Body::Chunked(c) => c.state == ChunkState::Done,
        }
    }
}

/// The longest chunk-size line (hex digits and CRLF) read.
const MAX_SIZE_LINE: usize = 64;
/// The most bytes of trailer fields (lines and their CRLFs) read after the last chunk.
const MAX_TRAILERS: usize = 8 * 1024;

/// RFC 9112 7.1's chunked coding, read strictly: a chunk size is hex digits and CRLF (no
/// extensions, no whitespace, no overflow), its data is followed by exactly CRLF, and after the
/// zero-size chunk come trailer fields as well formed as headers (bounded) and a blank line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkedBody {
    state: ChunkState,
    /// The line being read (a size, the CRLF after data, or a trailer), bounded.
    line: Vec<u8>,
    trailer_bytes: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ChunkState {
    Size,
    /// This many bytes of chunk data are still to come.
    Data(u64),
    /// The CRLF after a chunk's data.
    DataEnd,
    Trailer,
    Done,
}

impl ChunkedBody {
    pub fn new() -> ChunkedBody {
        ChunkedBody { state: ChunkState::Size, line: Vec::new(), trailer_bytes: 0 }
    }

    fn take(&mut self, input: &[u8]) -> Result<usize, String> {
        let mut used = 0;
        while used < input.len() && self.state != ChunkState::Done {
            if let ChunkState::Data(left) = self.state {
                let n = (input.len() - used).min(usize::try_from(left).unwrap_or(usize::MAX));
                used += n;
                let left = left - n as u64;
                self.state = if left == 0 { ChunkState::DataEnd } else { ChunkState::Data(left) };
                continue;
            }
            let byte = input[used];
            used += 1;
            self.line.push(byte);
            if byte == b'\n' {
                self.end_line()?;
                self.line.clear();
            } else if self.line.len() >= self.line_limit() {
                return Err(match self.state {
                    ChunkState::DataEnd => "chunk data is not followed by CRLF".into(),
                    ChunkState::Trailer => format!("trailers longer than {MAX_TRAILERS} bytes"),
                    _ => "a chunk-size line that is too long".into(),
                });
            }
        }
        Ok(used)
    }

    /// The longest the current line may grow, its LF included.
    fn line_limit(&self) -> usize {
        match self.state {
            ChunkState::DataEnd => 2,
            ChunkState::Trailer => MAX_TRAILERS - self.trailer_bytes,
            _ => MAX_SIZE_LINE,
        }
    }

    fn end_line(&mut self) -> Result<(), String> {
        let text = self.line.strip_suffix(b"\r\n").ok_or("a line that does not end in CRLF")?;
        match self.state {
            ChunkState::Size => {
                let size = parse_chunk_size(text)?;
                self.state = if size == 0 { ChunkState::Trailer } else { ChunkState::Data(size) };
            }
            ChunkState::DataEnd => self.state = ChunkState::Size,
            ChunkState::Trailer if text.is_empty() => self.state = ChunkState::Done,
            ChunkState::Trailer => {
                check_trailer(text)?;
                self.trailer_bytes += self.line.len();
            }
            ChunkState::Data(_) | ChunkState::Done => unreachable!("no line is read in these states"),
        }
        Ok(())
    }
}

impl Default for ChunkedBody {
    fn default() -> Self {
        ChunkedBody::new()
    }
}

fn parse_chunk_size(text: &[u8]) -> Result<u64, String> {
    if text.contains(&b';') {
        return Err("chunk extensions are not forwarded".into());
    }
    if text.is_empty() || !text.iter().all(u8::is_ascii_hexdigit) {
        return Err("a chunk size that is not hex digits".into());
    }
    text.iter()
        .try_fold(0u64, |size, b| size.checked_mul(16)?.checked_add((*b as char).to_digit(16)? as u64))
        .ok_or_else(|| "a chunk size too large".into())
}

/// A trailer field is held to a header's rules: a token name, a colon, no control characters.
fn check_trailer(text: &[u8]) -> Result<(), String> {
    if text.starts_with(b" ") || text.starts_with(b"\t") {
        return Err("an obs-fold trailer".into());
    }
    if text.iter().any(|b| b.is_ascii_control() && *b != b'\t') {
        return Err("control characters in a trailer".into());
    }
    let colon = text.iter().position(|b| *b == b':').ok_or("a trailer line without a colon")?;
    if colon == 0 || !text[..colon].iter().all(|b| is_token_byte(*b)) {
        return Err("an invalid trailer name".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(text: &str) -> RequestHead {
        parse_request_head(text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
    }

    fn refused(text: &str) -> String {
        match parse_request_head(text) {
            Ok(h) => panic!("{text:?} accepted: {h:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn request_heads_forward_only_clean_headers() {
        let h = head(
            "GET http://a.org/x HTTP/1.1\r\nHost: a.org\r\nProxy-Authorization: secret\r\nConnection: keep-alive\r\nAccept: */*",
        );
        assert!(matches!(h.request, ProxyRequest::Forward { port: 80, .. }));
        assert_eq!(h.upstream, "GET /x HTTP/1.1\r\nHost: a.org\r\nAccept: */*\r\nConnection: close\r\n\r\n");
        assert_eq!(h.body, Body::Length(0));
        let h = head("CONNECT a.org:443 HTTP/1.1\r\nHost: a.org:443");
        assert_eq!(h.request, ProxyRequest::Connect { host: "a.org".into(), port: 443 });
        assert_eq!(h.upstream, "");
        for bad in [
            "GET http://a.org/ HTTP/1.1\r\nHost: a\nX-Smuggled: 1",
            "GET http://a.org/ HTTP/1.1\r\nHost: a\rb",
            "GET http://a.org/ HTTP/1.1\r\nno colon",
            "GET http://a.org/ HTTP/1.1\r\nBad Name: x",
            "GET http://a.org/ HTTP/1.1\r\nHost : a.org",
            "GET http://a.org/ HTTP/1.1\r\n: empty name",
            "GET http://a.org/ HTTP/1.1\r\nX(y): 1",
        ] {
            refused(bad);
        }
    }

    #[test]
    fn the_host_header_is_written_from_the_checked_target() {
        let h = head("GET http://allowed.test/ HTTP/1.1\r\nHost: evil.test\r\nhOsT: evil2.test\r\nAccept: x");
        assert_eq!(
            h.upstream,
            "GET / HTTP/1.1\r\nHost: allowed.test\r\nAccept: x\r\nConnection: close\r\n\r\n"
        );
        let h = head("GET http://allowed.test:8080/ HTTP/1.0");
        assert_eq!(h.upstream, "GET / HTTP/1.0\r\nHost: allowed.test:8080\r\nConnection: close\r\n\r\n");
        let h = head("GET http://[2001:db8::1]/ HTTP/1.1\r\nHost: evil.test");
        assert_eq!(h.upstream, "GET / HTTP/1.1\r\nHost: [2001:db8::1]\r\nConnection: close\r\n\r\n");
        assert_eq!(h.upstream.to_ascii_lowercase().matches("\r\nhost:").count(), 1);
    }

    #[test]
    fn folded_headers_are_refused_with_the_target_named() {
        for fold in ["X-A: 1\r\n evil", "X-A: 1\r\n\tevil", "Host: a\r\n Host: evil.test"] {
            let e = parse_request_head(&format!("GET http://a.org:8080/ HTTP/1.1\r\n{fold}")).unwrap_err();
            assert_eq!(e.target, Some(("a.org".into(), 8080)));
            assert!(e.to_string().starts_with("malformed request: obs-fold header"), "{e}");
        }
        let e = parse_request_head("GET /relative HTTP/1.1").unwrap_err();
        assert_eq!(e.target, None);
        assert!(e.to_string().starts_with("malformed request: request line:"), "{e}");
    }

    #[test]
    fn framing_that_parsers_could_read_differently_is_refused() {
        let start = "POST http://a.org/ HTTP/1.1\r\n";
        for (framing, why) in [
            ("Content-Length: 5\r\nContent-Length: 5", "more than one Content-Length"),
            ("Content-Length: 5\r\nContent-Length: 6", "more than one Content-Length"),
            ("Content-Length: 5, 5", "not one decimal number"),
            ("Content-Length: +5", "not one decimal number"),
            ("Content-Length: -1", "not one decimal number"),
            ("Content-Length: 0x5", "not one decimal number"),
            ("Content-Length: 5 5", "not one decimal number"),
            ("Content-Length: ", "not one decimal number"),
            ("Content-Length: 99999999999999999999999", "not one decimal number"),
            ("Content-Length: 4\r\nTransfer-Encoding: chunked", "both Content-Length and Transfer-Encoding"),
            ("Transfer-Encoding: chunked\r\nContent-Length: 4", "both Content-Length and Transfer-Encoding"),
            ("Transfer-Encoding: gzip, chunked", "other than exactly `chunked`"),
            ("Transfer-Encoding: chunked, chunked", "other than exactly `chunked`"),
            ("Transfer-Encoding: identity", "other than exactly `chunked`"),
            ("Transfer-Encoding: xchunked", "other than exactly `chunked`"),
            ("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked", "more than one Transfer-Encoding"),
            ("Transfer-Encoding : chunked", "invalid header name"),
            ("Transfer-Encoding: chunked\u{b}", "control characters"),
        ] {
            let e = refused(&format!("{start}{framing}"));
            assert!(e.contains(why), "{framing:?}: {e}");
        }
        let e = refused("POST http://a.org/ HTTP/1.0\r\nTransfer-Encoding: chunked");
        assert!(e.contains("HTTP/1.0"), "{e}");
    }

    #[test]
    fn framing_headers_are_rewritten_canonically() {
        let h = head("POST http://a.org/ HTTP/1.1\r\ncontent-length:  007 \r\nX: y");
        assert_eq!(h.body, Body::Length(7));
        assert_eq!(
            h.upstream,
            "POST / HTTP/1.1\r\nHost: a.org\r\nX: y\r\nContent-Length: 7\r\nConnection: close\r\n\r\n"
        );
        let h = head("POST http://a.org/ HTTP/1.1\r\nTransfer-Encoding: Chunked");
        assert_eq!(h.body, Body::Chunked(ChunkedBody::new()));
        assert_eq!(
            h.upstream,
            "POST / HTTP/1.1\r\nHost: a.org\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        );
    }

    /// Feeds `input` in pieces of `step` bytes; returns how many were the body's, or the error.
    fn body_length(mut body: Body, input: &[u8], step: usize) -> Result<usize, String> {
        let mut used = 0;
        for piece in input.chunks(step) {
            let n = body.take(piece)?;
            used += n;
            if n < piece.len() {
                assert!(body.is_done(), "a body takes all it is given until it ends");
                break;
            }
        }
        assert!(body.is_done(), "the body did not end: {:?}", String::from_utf8_lossy(input));
        assert_eq!(body.take(b"more"), Ok(0), "an ended body takes nothing more");
        Ok(used)
    }

    #[test]
    fn a_body_ends_where_its_framing_says_and_not_later() {
        let next = b"GET http://evil.test/ HTTP/1.1\r\n\r\n";
        for step in [1, 2, 3, 7, 1000] {
            let cl = [b"hello".as_slice(), next].concat();
            assert_eq!(body_length(Body::Length(5), &cl, step), Ok(5));
            assert_eq!(body_length(Body::Length(0), &cl, step), Ok(0));
            for chunked in [
                b"5\r\nhello\r\n0\r\n\r\n".as_slice(),
                b"5\r\nhello\r\nA\r\n0123456789\r\n0\r\n\r\n",
                b"00000000000000000000005\r\nhello\r\n000\r\n\r\n",
                b"0\r\nX-Sum: 1\r\nY:\t2\r\n\r\n",
                b"ff\r\n",
            ] {
                if chunked.ends_with(b"\r\n\r\n") {
                    let input = [chunked, next].concat();
                    let body = Body::Chunked(ChunkedBody::new());
                    assert_eq!(body_length(body, &input, step), Ok(chunked.len()), "{chunked:?}");
                }
            }
        }
        let mut big = Body::Length(u64::MAX);
        assert_eq!(big.take(b"abc"), Ok(3));
        assert!(!big.is_done());
        let mut unended = Body::Chunked(ChunkedBody::new());
        assert_eq!(unended.take(b"5\r\nhel"), Ok(6));
        assert!(!unended.is_done());
    }

    #[test]
    fn malformed_chunked_bodies_are_refused() {
        for (input, why) in [
            (b"5 \r\nhello\r\n0\r\n\r\n".as_slice(), "not hex"),
            (b" 5\r\nhello\r\n0\r\n\r\n", "not hex"),
            (b"+5\r\nhello\r\n0\r\n\r\n", "not hex"),
            (b"0x5\r\nhello\r\n0\r\n\r\n", "not hex"),
            (b"\r\nhello\r\n0\r\n\r\n", "not hex"),
            (b"5;ext=1\r\nhello\r\n0\r\n\r\n", "extensions"),
            (b"5\nhello\r\n0\r\n\r\n", "CRLF"),
            (b"5\r\nhelloXX\r\n0\r\n\r\n", "not followed by CRLF"),
            (b"5\r\nhello\n0\r\n\r\n", "CRLF"),
            (b"5\r\nhello\r\n0\r\n\n", "CRLF"),
            (b"10000000000000000\r\n", "too large"),
            (b"0\r\n Folded: x\r\n\r\n", "obs-fold"),
            (b"0\r\nNo colon\r\n\r\n", "without a colon"),
            (b"0\r\nBad Name: x\r\n\r\n", "invalid trailer name"),
            (b"0\r\nX: a\rb\r\n\r\n", "control characters"),
        ] {
            let mut body = Body::Chunked(ChunkedBody::new());
            let e = body.take(input).unwrap_err();
            assert!(e.starts_with("chunked body: ") && e.contains(why), "{input:?}: {e}");
        }
        let mut long = Body::Chunked(ChunkedBody::new());
        assert!(long.take(&[b'0'; 100]).unwrap_err().contains("too long"));
        let mut trailers = Body::Chunked(ChunkedBody::new());
        let many = [b"0\r\n".as_slice(), &b"X: yyyyyyyyyyyyyyyyyyyyyyy\r\n".repeat(400)].concat();
        assert!(trailers.take(&many).unwrap_err().contains("trailers longer"));
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
