//! What the proxy passes on of a plain-HTTP request, tested as a hostile client would try it:
//! raw bytes in one write, a second request pipelined or smuggled after the first, a forged
//! `Host`, folded headers, framing that two parsers could read differently. The world's raw
//! recorder (192.0.2.3, `recorder.test`) answers with, and keeps, every byte it was sent, so each
//! test sees exactly what reached the upstream.

use super::*;

const RECORDER: &[&str] = &["--resolve", "recorder.test:80:192.0.2.3"];

/// Sends each request in its own connection to the proxy (`PIECES` may split one into writes
/// some time apart) and says what came back, as a JSON string.
const EXCHANGE: &str = r#"
import json, time
def exchange(*pieces):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    for i, piece in enumerate(pieces):
        if i:
            time.sleep(0.1)
        s.sendall(piece)
    out = b""
    while True:
        try:
            chunk = s.recv(65536)
        except OSError as e:
            out += ("<%s>" % e).encode()
            break
        if not chunk:
            break
        out += chunk
    s.close()
    return out
def show(name, *pieces):
    say(name, json.dumps(exchange(*pieces).decode("latin-1")))
"#;

/// What the program got back for `name`.
fn answer_to(r: &Report, name: &str) -> String {
    serde_json::from_str(&r.said(name)).unwrap_or_else(|e| panic!("{name}: {e}: {}", r.raw))
}

/// The body of an HTTP answer (after its head's blank line).
fn body(answer: &str) -> &str {
    answer.split_once("\r\n\r\n").map_or("", |(_, b)| b)
}

#[test]
fn one_request_reaches_its_host_with_the_checked_host_and_nothing_after_it() {
    if !world_available() {
        return;
    }
    let w = World::new(
        "proxy-one-request",
        "commands = [\"python3\"]\n[internet]\nhosts = [\"recorder.test\"]\n",
    );
    let script = format!(
        "{EXCHANGE}{}",
        r#"
then = b"GET http://recorder.test/smuggled HTTP/1.1\r\nHost: recorder.test\r\n\r\n"
show("host", b"GET http://recorder.test/first HTTP/1.1\r\nHost: evil.test\r\nHost: evil2.test\r\n\r\n" + then)
show("length", b"POST http://recorder.test/cl HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello" + then)
show("chunked", b"POST http://recorder.test/te HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-T: 1\r\n\r\n" + then)
show("chunked_in_pieces", b"POST http://recorder.test/te2 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
     b"lo\r\n0\r", b"\n\r\n" + then)
show("length_in_pieces", b"POST http://recorder.test/cl2 HTTP/1.1\r\nContent-Length: 10\r\n\r\nhello", b"world" + then)
show("connect", b"CONNECT recorder.test:80 HTTP/1.1\r\nHost: evil.test\r\n\r\nGET /in-tunnel HTTP/1.1\r\nHost: recorder.test\r\n\r\n")
"#
    );
    let r = w.python(RECORDER, &script);
    let head = |line: &str, framing: &str| {
        format!("{line}\r\nHost: recorder.test\r\n{framing}Connection: close\r\n\r\n")
    };
    let expected = [
        ("host", head("GET /first HTTP/1.1", "")),
        ("length", head("POST /cl HTTP/1.1", "Content-Length: 5\r\n") + "hello"),
        (
            "chunked",
            head("POST /te HTTP/1.1", "Transfer-Encoding: chunked\r\n") + "5\r\nhello\r\n0\r\nX-T: 1\r\n\r\n",
        ),
        (
            "chunked_in_pieces",
            head("POST /te2 HTTP/1.1", "Transfer-Encoding: chunked\r\n") + "5\r\nhello\r\n0\r\n\r\n",
        ),
        ("length_in_pieces", head("POST /cl2 HTTP/1.1", "Content-Length: 10\r\n") + "helloworld"),
    ];
    for (name, upstream_got) in &expected {
        let answer = answer_to(&r, name);
        assert!(answer.starts_with("HTTP/1.1 200 "), "{name}: {answer:?}");
        assert_eq!(body(&answer), upstream_got, "{name}: what the upstream got");
    }
    // CONNECT: what the client sent after the CONNECT head went into that tunnel, to its host.
    let answer = answer_to(&r, "connect");
    let tunnel = answer.strip_prefix("HTTP/1.1 200 Connection established\r\n\r\n").expect(&answer);
    assert_eq!(body(tunnel), "GET /in-tunnel HTTP/1.1\r\nHost: recorder.test\r\n\r\n");
    // And on the upstream's side: one connection each, none of them got a second request.
    let recorded = recorded(&w);
    assert_eq!(recorded.len(), expected.len() + 1, "{recorded:?}");
    for got in &recorded {
        assert!(!got.contains("smuggled") && !got.contains("evil"), "{got:?}");
    }
    assert_eq!(r.json["internet"]["connections"], recorded.len(), "{}", r.raw);
    assert_eq!(r.json["internet"]["refused"], 0, "{}", r.raw);
}

/// Everything the recorder got, one string per connection, in order.
fn recorded(w: &World) -> Vec<String> {
    let dir = w.agent.dir.join("world/recorded");
    let mut names: Vec<u64> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries.map(|e| e.unwrap().file_name().to_str().unwrap().parse().unwrap()).collect(),
        Err(_) => Vec::new(),
    };
    names.sort();
    names
        .iter()
        .map(|n| String::from_utf8_lossy(&std::fs::read(dir.join(n.to_string())).unwrap()).into_owned())
        .collect()
}

#[test]
fn malformed_requests_are_refused_and_reported() {
    if !world_available() {
        return;
    }
    let w =
        World::new("proxy-malformed", "commands = [\"python3\"]\n[internet]\nhosts = [\"recorder.test\"]\n");
    let script = format!(
        "{EXCHANGE}{}",
        r#"
then = b"GET http://recorder.test/smuggled HTTP/1.1\r\n\r\n"
post = b"POST http://recorder.test/x HTTP/1.1\r\n"
show("te_cl", post + b"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + then)
show("two_lengths", post + b"Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello" + then)
show("bad_length", post + b"Content-Length: 5, 5\r\n\r\nhello" + then)
show("not_chunked", post + b"Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n" + then)
show("obs_fold", b"GET http://recorder.test/x HTTP/1.1\r\nX-A: 1\r\n Host: evil.test\r\n\r\n" + then)
show("bad_line", b"GET http://recorder.test/x HTTP/1.1 extra\r\n\r\n" + then)
show("bad_chunk", post + b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nzz\r\n" + then)
show("bad_chunk_later", post + b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n", b"5;x\r\nworld\r\n0\r\n\r\n" + then)
"#
    );
    let r = w.python(RECORDER, &script);
    let cases = [
        ("te_cl", "malformed request: both Content-Length and Transfer-Encoding"),
        ("two_lengths", "malformed request: more than one Content-Length"),
        ("bad_length", "malformed request: a Content-Length that is not one decimal number"),
        ("not_chunked", "malformed request: a Transfer-Encoding other than exactly `chunked`"),
        ("obs_fold", "malformed request: obs-fold header"),
        ("bad_line", "malformed request: request line:"),
        ("bad_chunk", "malformed request: chunked body: a chunk size that is not hex digits"),
        ("bad_chunk_later", "malformed request: chunked body: chunk extensions are not forwarded"),
    ];
    for (name, why) in cases {
        let answer = answer_to(&r, name);
        assert!(answer.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{name}: {answer:?}");
        assert!(answer.contains(why), "{name}: {answer:?}");
    }
    // Each is in the report, with the host and port its request line named (when it was read).
    let refused = refusals(&r);
    assert_eq!(refused.len(), cases.len(), "{}", r.raw);
    assert_eq!(r.json["internet"]["refused"], cases.len(), "{}", r.raw);
    for ((name, why), (host, port, said)) in cases.iter().zip(&refused) {
        assert!(said.starts_with(why), "{name}: {said}");
        let target = if *name == "bad_line" { ("", 0) } else { ("recorder.test", 80) };
        assert_eq!((host.as_str(), *port), target, "{name}");
    }
    // Only the two chunked bodies broken midway reached the upstream at all, and only up to the
    // last whole chunk before the break; nothing after.
    let recorded = recorded(&w);
    assert_eq!(recorded.len(), 2, "{recorded:?}");
    let head =
        "POST /x HTTP/1.1\r\nHost: recorder.test\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
    assert_eq!(recorded[0], head, "the bad chunk came in the same read as the good one");
    assert_eq!(recorded[1], format!("{head}5\r\nhello\r\n"));
    assert_eq!(r.json["internet"]["connections"], 2, "{}", r.raw);
}

#[test]
fn a_numeric_host_is_an_address_not_a_name() {
    if !world_available() {
        return;
    }
    let script = format!(
        "{EXCHANGE}{}",
        r#"
for host in ["3221225985", "0xc0.0x000201", "192.513", "0300.0.2.1", "0xc0000201", "2130706433", "0x7f.1", "127.1", "0177.0.0.1"]:
    answer = exchange(b"GET http://%s/hello.txt HTTP/1.1\r\n\r\n" % host.encode()).decode("latin-1")
    say(host, answer.split("\r\n")[0] + "|" + answer.split("\r\n\r\n", 1)[-1].strip())
"#
    );
    // Under `*`: names only; every spelling of an address is refused, public or internal.
    let any = World::new("proxy-numeric-any", "commands = [\"python3\"]\n[internet]\nhosts = [\"*\"]\n");
    let r = any.python(&[], &script);
    let hosts = [
        "3221225985",
        "0xc0.0x000201",
        "192.513",
        "0300.0.2.1",
        "0xc0000201",
        "2130706433",
        "0x7f.1",
        "127.1",
        "0177.0.0.1",
    ];
    for host in hosts {
        let said = r.said(host);
        assert!(said.starts_with("HTTP/1.1 403 ") && said.contains("listed itself"), "{host}: {said}");
    }
    let refused = refusals(&r);
    assert_eq!(refused.len(), hosts.len(), "{}", r.raw);
    assert!(refused.iter().zip(hosts).all(|(x, h)| x.0 == h && x.1 == 80), "{refused:?}");
    assert_eq!(r.json["internet"]["connections"], 0, "{}", r.raw);
    // With 192.0.2.1 listed, its other spellings reach it; 127.0.0.1's do not.
    let listed =
        World::new("proxy-numeric-listed", "commands = [\"python3\"]\n[internet]\nhosts = [\"192.0.2.1\"]\n");
    let r = listed.python(&[], &script);
    for host in &hosts[..5] {
        r.assert_said(host, "HTTP/1.0 200 OK|hello from allowed");
    }
    for host in &hosts[5..] {
        assert!(r.said(host).starts_with("HTTP/1.1 403 "), "{host}: {}", r.raw);
    }
}
