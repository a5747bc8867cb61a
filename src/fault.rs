//! Fault points for the crash tests, compiled only with the `fault-points` feature (which the
//! test suite turns on and a release build never has). `LNK_FAULT=<name>` makes the process kill
//! itself with SIGKILL when it reaches the point of that name, as a crash there would.

/// Dies with SIGKILL if `LNK_FAULT` names this point.
pub fn point(name: &str) {
    if std::env::var_os("LNK_FAULT").is_some_and(|v| v == name) {
        let _ = rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
    }
}
