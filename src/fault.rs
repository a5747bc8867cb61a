//! Fault points for the crash tests, compiled only with the `fault-points` feature (which the
//! test suite turns on and a release build never has). `LNK_FAULT=<name>` makes the process kill
//! itself with SIGKILL when it reaches the point of that name, as a crash there would;
//! `LNK_FAULT=<name>:stop` stops it there (SIGSTOP: a process frozen at that step, which the
//! test then kills or continues), and `LNK_FAULT=<name>:slow` makes that step 300 ms slower, so
//! a test can see what others observe in the meantime.

use std::time::Duration;

/// Dies, stops or waits if `LNK_FAULT` names this point.
pub fn point(name: &str) {
    let Some(fault) = std::env::var_os("LNK_FAULT") else { return };
    let Some(fault) = fault.to_str() else { return };
    let (point, action) = fault.split_once(':').unwrap_or((fault, "kill"));
    if point != name {
        return;
    }
    let me = rustix::process::getpid();
    match action {
        "stop" => {
            let _ = rustix::process::kill_process(me, rustix::process::Signal::STOP);
        }
        "slow" => std::thread::sleep(Duration::from_millis(300)),
        _ => {
            let _ = rustix::process::kill_process(me, rustix::process::Signal::KILL);
        }
    }
}
