//! The call's proxy's parsing of what a sandboxed program sends it: never panics, and a head
//! it forwards upstream is exactly one clean request head (no lone CR or LF to smuggle another
//! header or request through), whose host the policy then decides on without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lnk::flags::InternetFlags;
use lnk::proxy::policy::{self, ProxyRequest};
use lnk::sandbox_file::{HostPattern, TcpEndpoint};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = lnk::proxy::ResolveOverride::parse(text);
    let Ok((request, upstream)) = policy::parse_request_head(text) else { return };
    let (host, port) = match &request {
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
            assert!(!upstream.to_ascii_lowercase().contains("\r\nproxy-authorization:"));
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
