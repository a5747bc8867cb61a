//! The harness example in `examples/harness.py` runs as written against the built binaries, so
//! the README's example for harness authors cannot rot.

mod common;
use common::*;

#[test]
fn the_python_harness_example_runs() {
    let out = run(std::process::Command::new("python3")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/harness.py"))
        .arg(lnk_bin())
        .arg(link_run_bin()));
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("harness example: all ok"), "{}", stdout(&out));
}

#[test]
fn the_example_runs_with_lnk_beneath_tmp() {
    rerun_with_binaries_beneath_tmp("the_example_runs_with_lnk_beneath_tmp");
}

#[test]
fn the_readme_stays_short_enough_to_read_whole() {
    // Issue 24's bar: a harness author reads the README whole; at most 400 lines.
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    assert!(readme.lines().count() <= 400, "README.md has {} lines", readme.lines().count());
}
