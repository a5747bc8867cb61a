//! Helpers shared by the integration tests: the real binaries, and scratch folders.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

pub fn lnk() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_lnk"));
    c.env("HOME", "/home/test-user");
    c
}

pub fn link_run() -> Command {
    Command::new(env!("CARGO_BIN_EXE_lnk-link-run"))
}

pub fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("the binary runs")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A scratch folder removed when dropped.
pub struct Scratch {
    pub path: PathBuf,
}

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        static N: AtomicUsize = AtomicUsize::new(0);
        let base = std::env::var_os("LNK_TEST_TMP").map(PathBuf::from).unwrap_or_else(std::env::temp_dir);
        let path = base.join(format!(
            "lnk-test-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        Scratch { path }
    }

    pub fn file(&self, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let p = self.path.join(name);
        std::fs::write(&p, contents).unwrap();
        p
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

pub fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}
