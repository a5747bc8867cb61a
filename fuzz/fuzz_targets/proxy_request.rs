//! The call's proxy's parsing of what a sandboxed program sends it: never panics; a head it
//! forwards upstream is exactly one clean request head (no lone CR or LF to smuggle another
//! header or request through, exactly one `Host`, at most one framing header), whose host the
//! policy then decides on without panicking; a body's framing never takes more than it is
//! given, and nothing once it has ended.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lnk::flags::InternetFlags;
use lnk::proxy::policy;
use lnk::proxy::request::{self, Body, ChunkedBody, ProxyRequest};
use lnk::sandbox_file::{HostPattern, TcpEndpoint};

fuzz_target!(|data: &[u8]| {
    check_body(Body::Chunked(ChunkedBody::new()), data);
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = lnk::proxy::ResolveOverride::parse(text);
    let _ = policy::parse_ip_literal(text);
    let Ok(head) = request::parse_request_head(text) else { return };
    let upstream = &head.upstream;
    let (host, port) = match &head.request {
        ProxyRequest::Connect { host, port } => {
            assert!(upstream.is_empty());
            (host, *port)
        }
        ProxyRequest::Forward { host, port, origin_form } => {
            assert!(upstream.starts_with(origin_form.as_str()));
            assert!(upstream.ends_with("\r\n\r\n"));
            assert_eq!(upstream.matches("\r\n\r\n").count(), 1, "{upstream:?}");
            assert_eq!(upstream.matches('\n').count(), upstream.matches("\r\n").count(), "{upstream:?}");
            assert_eq!(upstream.matches('\r').count(), upstream.matches("\r\n").count(), "{upstream:?}");
            let lower = upstream.to_ascii_lowercase();
            assert!(!lower.contains("\r\nproxy-authorization:"));
            assert!(!lower.contains("\r\n ") && !lower.contains("\r\n\t"), "no folded line: {upstream:?}");
            assert_eq!(lower.matches("\r\nhost:").count(), 1, "{upstream:?}");
            let framing = lower.matches("\r\ncontent-length:").count()
                + lower.matches("\r\ntransfer-encoding:").count();
            assert!(framing <= 1, "{upstream:?}");
            (host, *port)
        }
    };
    assert!(port != 0 && !host.is_empty());
    let net = InternetFlags {
        hosts: vec![HostPattern::parse("*.example.com").unwrap(), HostPattern::parse("192.0.2.1").unwrap()],
        tcp: vec![TcpEndpoint::parse("db.example.net:5432").unwrap()],
        per_minute: 60,
    };
    let _ = policy::check_target(&net, host, port);
});

/// Feeds `data` to a body's framing in two pieces: it takes a prefix of each, all of the first
/// unless it ended there, and nothing after it ended.
fn check_body(mut body: Body, data: &[u8]) {
    let (first, second) = data.split_at(data.len() / 2);
    let Ok(n) = body.take(first) else { return };
    assert!(n <= first.len());
    if n < first.len() {
        assert!(body.is_done());
    }
    if body.is_done() {
        assert_eq!(body.take(second), Ok(0));
        return;
    }
    if let Ok(m) = body.take(second) {
        assert!(m <= second.len());
    }
}
