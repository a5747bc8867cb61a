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
