//! The fuzz targets' corpus, kept in the repository, replayed in the ordinary test suite: the
//! parser and path handling never panic on any of it, whether or not a fuzzer runs.

use std::path::Path;

use lnk::paths::{AgentPath, GrantPath, RelativePath};
use lnk::sandbox_file::SandboxFile;

fn each_input(target: &str, mut f: impl FnMut(&str)) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus").join(target);
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        f(&String::from_utf8_lossy(&bytes));
        n += 1;
    }
    n
}

#[test]
fn the_sandbox_file_corpus_parses_without_panicking() {
    let n = each_input("sandbox_file", |text| match SandboxFile::parse(text) {
        Ok(_) => {}
        Err(d) => {
            assert!(!d.is_empty());
            let _ = lnk::diagnostic::render_all(&d, "corpus.toml", text);
        }
    });
    assert!(n >= 5, "the seed corpus is in the repository");
}

#[test]
fn the_paths_corpus_stays_beneath_its_roots() {
    let n = each_input("paths", |text| {
        if let Ok(rel) = RelativePath::parse(text) {
            assert!(rel.under(Path::new("/r")).starts_with("/r"));
        }
        let _ = AgentPath::parse(text);
        let _ = GrantPath::parse(text);
    });
    assert!(n >= 5);
}

#[test]
fn the_record_corpus_round_trips() {
    let n = each_input("record", |text| {
        if let Ok(r) = lnk::records::Record::parse(text) {
            assert_eq!(lnk::records::Record::parse(&r.to_toml()), Ok(r));
        }
    });
    assert!(n >= 2);
}

#[test]
fn the_output_and_elf_corpora_never_panic() {
    each_input("output", |text| {
        let mut t = lnk::output::OutputTail::new(10);
        t.push(text.as_bytes());
        let _ = t.finish();
    });
    each_input("elf", |text| {
        let _ = lnk::sandbox::elf::classify(text.as_bytes());
    });
}

#[test]
fn the_proxy_request_corpus_never_panics_and_forwards_clean_heads() {
    let n = each_input("proxy_request", |text| {
        let _ = lnk::proxy::ResolveOverride::parse(text);
        let _ = lnk::proxy::policy::parse_ip_literal(text);
        if let Ok(head) = lnk::proxy::request::parse_request_head(text) {
            let upstream = head.upstream;
            assert_eq!(upstream.matches('\n').count(), upstream.matches("\r\n").count(), "{upstream:?}");
        }
        let mut body = lnk::proxy::request::Body::Chunked(Default::default());
        if let Ok(n) = body.take(text.as_bytes()) {
            assert!(n <= text.len());
        }
    });
    assert!(n >= 5);
}

#[test]
fn the_notify_request_corpus_decodes_without_panicking() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/notify_request");
    let (mut decoded, mut connects) = (0, 0);
    for entry in std::fs::read_dir(&dir).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        let mut raw = [0u8; 80];
        let n = bytes.len().min(80);
        raw[..n].copy_from_slice(&bytes[..n]);
        let held = lnk::notify::Held::parse(&raw);
        match lnk::notify::request::decode_call(i64::from(held.nr), held.args) {
            Ok(lnk::notify::request::Call::Socket(lnk::notify::request::SocketCall::Connect(c))) => {
                let len = c.len;
                let address = &bytes[n..];
                let read = &address[..address.len().min(28).min(len.max(0) as usize)];
                let parsed = lnk::notify::sockets::parse_sockaddr(read, len as usize);
                assert!(parsed.is_ok_and(|a| a.port() == 3128), "{parsed:?}");
                connects += 1;
            }
            Ok(_) => decoded += 1,
            Err(_) => {}
        }
    }
    assert!(decoded >= 5, "the seed corpus holds calls that decode");
    assert!(connects >= 2, "and connects whose addresses decode");
}

#[test]
fn the_denial_lines_corpus_reads_without_panicking_and_names_only_what_it_holds() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/denial_lines");
    let mut named = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let before = &lines[i.saturating_sub(4)..i];
            if let Some(n) = lnk::denials::lines::read(line, before) {
                assert!(text.contains(n.text.as_str()), "{n:?}");
                named += 1;
            }
        }
    }
    assert!(named >= 10, "the seed corpus holds real refusals ({named})");
}
