//! Fault points for the crash tests, compiled only with the `fault-points` feature (which the
//! test suite turns on and a release build never has). `LNK_FAULT=<name>` makes the process kill
//! itself with SIGKILL when it reaches the point of that name, as a crash there would;
//! `LNK_FAULT=<name>:stop` stops it there (SIGSTOP: a process frozen at that step, which the
//! test then kills or continues), and `LNK_FAULT=<name>:slow` makes that step 300 ms slower, so
//! a test can see what others observe in the meantime. `LNK_FAULT=<name>:fail` makes the step
//! guarded by [`fails`] fail, for an error no crash can cause (a write the disk refuses).
//!
//! Trusted with: nothing in a release build, which does not have it. What it trusts: `LNK_FAULT`,
//! which whoever runs a test build sets.

use std::time::Duration;

/// What `LNK_FAULT` asks of the point `name`, if it names it (`kill` when it says nothing).
fn action_at(name: &str) -> Option<String> {
    let fault = std::env::var("LNK_FAULT").ok()?;
    let (point, action) = fault.split_once(':').unwrap_or((&fault, "kill"));
    (point == name).then(|| action.to_owned())
}

/// Whether `LNK_FAULT` is `<name>:fail`: the caller then fails that step as if the system had.
pub fn fails(name: &str) -> bool {
    action_at(name).as_deref() == Some("fail")
}

/// Dies, stops or waits if `LNK_FAULT` names this point.
pub fn point(name: &str) {
    let Some(action) = action_at(name) else { return };
    let me = rustix::process::getpid();
    match action.as_str() {
        "fail" => {}
        "stop" => {
            let _ = rustix::process::kill_process(me, rustix::process::Signal::STOP);
        }
        "slow" => std::thread::sleep(Duration::from_millis(300)),
        _ => {
            let _ = rustix::process::kill_process(me, rustix::process::Signal::KILL);
        }
    }
}
