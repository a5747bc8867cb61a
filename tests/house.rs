//! The shape a reviewer relies on, checked so it cannot drift: every `unsafe` of the crate
//! outside its tests is in `src/sys/`, and no source file is much over 600 lines of code (its
//! tests beside it aside).

use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A file's code: what comes before its test module.
fn code(text: &str) -> &str {
    let test_module = ["\n#[cfg(test)]\nmod tests", "\n#[cfg(test)]\npub(crate) mod tests"]
        .iter()
        .filter_map(|m| text.find(m))
        .min();
    &text[..test_module.unwrap_or(text.len())]
}

fn all_sources() -> Vec<PathBuf> {
    let mut files = Vec::new();
    sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut files);
    assert!(files.len() > 50, "the sources were found: {}", files.len());
    files
}

#[test]
fn every_unsafe_outside_the_tests_is_in_sys() {
    let sys = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/sys");
    let mut found = Vec::new();
    for file in all_sources().into_iter().filter(|f| !f.starts_with(&sys)) {
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in code(&text).lines().enumerate() {
            let line = line.trim_start();
            if !line.starts_with("//")
                && line.split(|c: char| !c.is_alphanumeric() && c != '_').any(|w| w == "unsafe")
            {
                found.push(format!("{}:{}: {line}", file.display(), n + 1));
            }
        }
    }
    assert!(found.is_empty(), "unsafe outside src/sys/:\n{}", found.join("\n"));
}

#[test]
fn no_source_file_is_much_over_600_lines_of_code() {
    let mut big = Vec::new();
    for file in all_sources() {
        let text = std::fs::read_to_string(&file).unwrap();
        let lines = code(&text).lines().count();
        if lines > 650 {
            big.push(format!("{}: {lines}", file.display()));
        }
    }
    assert!(big.is_empty(), "split these by what they do:\n{}", big.join("\n"));
}
