//! Path resolution of the file tool against a real tree with an escape oracle (after cap-std's
//! fuzz target): whatever the path, anything opened lies beneath the files folder, and a read
//! never returns the secret kept beside it, reachable only through planted links.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use lnk::file_tool::roots::Roots;

struct Tree {
    home: PathBuf,
    files: PathBuf,
}

fn tree() -> &'static Tree {
    static TREE: OnceLock<Tree> = OnceLock::new();
    TREE.get_or_init(|| {
        let base = std::env::temp_dir().join(format!("lnk-fuzz-paths-{}", std::process::id()));
        let home = base.join("home");
        let files = home.join("Link/Files");
        std::fs::create_dir_all(files.join("a/b")).unwrap();
        std::fs::create_dir_all(home.join("Link/Teams/t/Shared/x")).unwrap();
        std::fs::write(files.join("a/b/f"), "public").unwrap();
        std::fs::write(base.join("secret"), "SECRET").unwrap();
        let _ = std::os::unix::fs::symlink(base.join("secret"), files.join("s"));
        let _ = std::os::unix::fs::symlink(&base, files.join("a/up"));
        let _ = std::os::unix::fs::symlink("../../..", files.join("a/b/rel"));
        let _ = std::os::unix::fs::symlink(&base, home.join("Link/Teams/t/Shared/x/out"));
        Tree { home, files }
    })
}

fuzz_target!(|data: &[u8]| {
    let t = tree();
    let mut roots = Roots::new(t.home.clone(), &t.files, vec![t.home.clone()], vec![]).unwrap();
    // Any bytes, not only UTF-8: an escaped path (`"escaped": true`) decodes to any bytes.
    if let Ok(target) = roots.resolve(data, false) {
        let abs = target.abs.clone();
        assert!(
            abs.starts_with(&t.files) || abs.starts_with(t.home.join("Link/Teams")),
            "{data:?} -> {abs:?}"
        );
    }
    let Ok(path) = std::str::from_utf8(data) else { return };
    for escaped in [false, true] {
        let request =
            lnk::json::Object::new().str("op", "read").str("path", path).bool("escaped", escaped).finish();
        let answer = lnk::file_tool::answer(&mut roots, &request, 1);
        assert!(!answer.contains("SECRET"), "{path:?} -> {answer}");
        let list =
            lnk::json::Object::new().str("op", "list").str("path", path).bool("escaped", escaped).finish();
        let answer = lnk::file_tool::answer(&mut roots, &list, 2);
        assert!(!answer.contains("\"secret\""), "{path:?} listed outside: {answer}");
    }
});
