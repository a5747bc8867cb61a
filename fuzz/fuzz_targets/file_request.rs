//! The file session's request handling on arbitrary lines: it never panics, and every answer is
//! one JSON object on one line (a session must never be broken by a request).
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use lnk::file_tool::roots::Roots;

fn files() -> &'static (PathBuf, PathBuf) {
    static DIRS: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    DIRS.get_or_init(|| {
        let home = std::env::temp_dir().join(format!("lnk-fuzz-request-{}", std::process::id()));
        let files = home.join("Link/Files");
        std::fs::create_dir_all(files.join("d")).unwrap();
        std::fs::write(files.join("d/f.txt"), "line one\nline two\n").unwrap();
        (home, files)
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(line) = std::str::from_utf8(data) else { return };
    if line.contains('\n') {
        return;
    }
    let (home, files) = files();
    // No write grant: the fuzzer exercises every operation, and every mutation is refused.
    let mut roots = Roots::new(home.clone(), files, vec![home.clone()], vec![]).unwrap();
    let answer = lnk::file_tool::answer(&mut roots, line, 1);
    assert!(!answer.contains('\n'));
    assert!(matches!(lnk::json::parse::parse(&answer), Ok(lnk::json::parse::Value::Object(_))), "{answer}");
});
