//! Telling the agent a background command ended: at most once.
//!
//! A message twice is worse than one lost in a crash (the seed's rule), so the record is marked
//! told, durably (written, synced, renamed, folder synced), *before* the first byte goes to the
//! bridge, and the mark is cleared only when `connect()` failed: then provably nothing was
//! delivered, and a later sweep may try again. Any failure after connecting (a short write, a
//! closed socket, a timeout) keeps the mark: the message may have arrived.
//!
//! The message is one JSON line on the bridge's Unix socket:
//!
//! ```json
//! {"schema":1,"from":"run:r0123…","to":"<conversation>","hop":3,"id":"r0123…","state":"exited",
//!  "exit_code":0,"signal":null,"text":"… exited with 0","output_end":"…"}
//! ```
//!
//! `output_end` is the last half of `[tool.run] output` characters of the command's output,
//! exactly, and at most 64 KiB (see `output_end`).
//!
//! Trusted with: what the agent is told of an ended background command, and that it is told at most
//! once. What it trusts: the bridge's path as the harness gave it (whatever listens there is told)
//! and the record whose lock its caller holds; the command's output enters the message only as a
//! JSON string.

use std::io::Write as _;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use crate::json;
use crate::records::{Record, RecordLock, Records, State};

/// What became of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Told {
    /// Handed to the bridge (or possibly: the connection broke after it was open).
    Sent,
    /// The bridge could not be reached; the mark was cleared for a later try.
    BridgeDown,
    /// Told before: not sent again.
    AlreadyTold,
    /// No bridge was named: left for a sweep that has one.
    NoBridge,
}

/// The sentence a message and `list` use for how a command ended.
pub fn ending(record: &Record) -> String {
    let id = &record.id;
    match record.state {
        State::Exited => format!(
            "background command {id} ({}) exited with {}",
            record.program,
            record.exit_code.unwrap_or(0)
        ),
        State::Signaled => {
            format!(
                "background command {id} ({}) was killed by signal {}",
                record.program,
                record.signal.unwrap_or(0)
            )
        }
        State::TimedOut => {
            format!("background command {id} ({}) timed out after {} s", record.program, record.timeout_secs)
        }
        State::Stopped => format!("background command {id} ({}) was stopped", record.program),
        State::Lost if record.leftovers_possible => format!(
            "background command {id} ({}) was lost ({}); processes it left may still run",
            record.program, record.detail
        ),
        State::Lost => format!("background command {id} ({}) was lost ({})", record.program, record.detail),
        State::Failed => {
            format!("background command {id} ({}) failed to start: {}", record.program, record.detail)
        }
        State::Starting | State::Running => {
            format!("background command {id} ({}) is running", record.program)
        }
    }
}

/// The message line for an ended record.
pub fn message(record: &Record) -> String {
    let opt = |v: Option<i32>| v.map_or("null".to_owned(), |n| n.to_string());
    json::Object::new()
        .num("schema", json::SCHEMA)
        .str("from", &format!("run:{}", record.id))
        .str("to", &record.conversation)
        .num("hop", i64::from(record.hop) + 1)
        .str("id", &record.id)
        .str("state", record.state.name())
        .raw("exit_code", &opt(record.exit_code))
        .raw("signal", &opt(record.signal))
        .bool("leftovers_possible", record.leftovers_possible)
        .str("text", &ending(record))
        .str("output_end", &record.output_end)
        .finish()
}

/// Tells the bridge that `record` ended, at most once. The caller holds the record's lock.
pub fn tell(
    records: &Records,
    lock: &RecordLock,
    record: &mut Record,
    bridge: Option<&Path>,
) -> Result<Told, String> {
    if record.told {
        return Ok(Told::AlreadyTold);
    }
    let Some(bridge) = bridge else { return Ok(Told::NoBridge) };
    record.told = true;
    records.write(lock, record)?;
    #[cfg(feature = "fault-points")]
    crate::fault::point("after-told-mark");
    let mut stream = match connect_without_waiting(bridge) {
        Ok(s) => s,
        Err(_) => {
            // Nothing was written: provably not delivered.
            record.told = false;
            records.write(lock, record)?;
            return Ok(Told::BridgeDown);
        }
    };
    let _ = stream.set_write_timeout(Some(Duration::from_secs(5)));
    let mut line = message(record);
    line.push('\n');
    // Whatever happens now, the mark stays: the bridge may have read some or all of it.
    let _ = stream.write_all(line.as_bytes());
    Ok(Told::Sent)
}

/// Connects to the bridge without ever waiting for it: a bridge that listens but does not
/// accept fills its backlog, and a blocking `connect` would then wait forever (holding the
/// command's slot). A Unix socket's non-blocking `connect` answers at once, `EAGAIN` when the
/// backlog is full: the bridge is then treated as down (nothing was written), and a later sweep
/// tries again.
fn connect_without_waiting(bridge: &Path) -> std::io::Result<UnixStream> {
    use rustix::net::{AddressFamily, SocketAddrUnix, SocketFlags, SocketType};
    let socket = rustix::net::socket_with(
        AddressFamily::UNIX,
        SocketType::STREAM,
        SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
        None,
    )?;
    rustix::net::connect(&socket, &SocketAddrUnix::new(bridge)?)?;
    let stream = UnixStream::from(socket);
    stream.set_nonblocking(false)?;
    Ok(stream)
}
