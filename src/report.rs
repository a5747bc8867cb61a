//! How a call ended, for the harness (one JSON object) and for a person (text).
//!
//! The helper's exit code follows timeout(1): the program's own code when it exited, 128 + N when
//! a signal N ended it, 124 when it timed out, 125 when the helper failed, 126 when it was
//! refused, 127 when it was not found. A call stopped by a signal to the helper exits 128 + that
//! signal, as a shell would.
//!
//! Trusted with: what the harness is told of a call: its outcome and exit code, what was enforced
//! and refused, and the program's kept output. What it trusts: the call's results as `run` gathered
//! them; in the JSON report the program's own words enter only as strings (see [`crate::json`]).

use std::path::PathBuf;
use std::time::Duration;

use crate::exit;
use crate::json;
use crate::lifetime::Exit;
use crate::output::Captured;
use crate::sandbox::Enforcement;

/// How the call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Exited(i32),
    Signaled(i32),
    TimedOut,
    /// The helper was told to stop by this signal.
    Stopped(i32),
    /// Refused before or at start, with the exit code (126 refused, 127 not found, 125 the
    /// kernel cannot give a guarantee).
    Refused(u8),
    Failed,
}

impl Outcome {
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Exited(_) => "exited",
            Outcome::Signaled(_) => "signaled",
            Outcome::TimedOut => "timed_out",
            Outcome::Stopped(_) => "stopped",
            Outcome::Refused(exit::NOT_FOUND) => "not_found",
            Outcome::Refused(exit::HELPER_FAILED) => "unsupported",
            Outcome::Refused(_) => "refused",
            Outcome::Failed => "failed",
        }
    }

    /// The helper's exit code.
    pub fn exit_code(self) -> u8 {
        match self {
            Outcome::Exited(c) => (c & 0xff) as u8,
            Outcome::Signaled(s) | Outcome::Stopped(s) => (128 + s).clamp(0, 255) as u8,
            Outcome::TimedOut => exit::TIMED_OUT,
            Outcome::Refused(code) => code,
            Outcome::Failed => exit::HELPER_FAILED,
        }
    }
}

/// Everything the harness learns about one call.
#[derive(Debug)]
pub struct Report {
    pub program: String,
    pub program_path: Option<PathBuf>,
    pub outcome: Outcome,
    pub exit: Option<Exit>,
    pub timed_out: bool,
    pub stopped_by: Option<i32>,
    /// Why it was refused or failed.
    pub error: Option<String>,
    pub stdout: Captured,
    pub stderr: Captured,
    pub landlock_abi: Option<u32>,
    pub enforcement: Option<Enforcement>,
    /// With `[internet]`: what the call's proxy let through and refused.
    pub internet: Option<crate::proxy::Log>,
    /// What the sandbox refused, known or inferred (see [`crate::denials`]).
    pub denials: Vec<crate::denials::Denial>,
    /// In the Landlock-only mode, the program's servers: (the address it asked for, where it
    /// really listened, on the call's loopback).
    pub servers: Vec<(std::net::SocketAddr, std::net::SocketAddr)>,
    pub wall: Duration,
}

impl Report {
    pub fn new(program: &str) -> Report {
        Report {
            program: program.to_owned(),
            program_path: None,
            outcome: Outcome::Failed,
            exit: None,
            timed_out: false,
            stopped_by: None,
            error: None,
            stdout: Captured::empty(),
            stderr: Captured::empty(),
            landlock_abi: None,
            enforcement: None,
            internet: None,
            denials: Vec::new(),
            servers: Vec::new(),
            wall: Duration::ZERO,
        }
    }

    pub fn to_json(&self) -> String {
        let stream = |c: &Captured| {
            json::Object::new()
                .str("text", &c.text)
                .num("bytes", c.total_bytes)
                .num("chars", c.total_chars)
                .num("cut_chars", c.cut_chars)
                .num("cut_lines", c.cut_lines)
                .num("cut_bytes", c.cut_bytes)
                .finish()
        };
        let opt_num = |o: &mut json::Object, key: &str, v: Option<i32>| {
            *o = std::mem::take(o).raw(key, &v.map_or("null".to_owned(), |n| n.to_string()));
        };
        let mut o = json::Object::output()
            .str("outcome", self.outcome.name())
            .num("exit_code", self.outcome.exit_code())
            .str("program", &self.program)
            .raw(
                "program_path",
                &self.program_path.as_ref().map_or("null".into(), |p| json::string(&p.to_string_lossy())),
            );
        let (code, signal) = match self.exit {
            Some(Exit::Code(c)) => (Some(c), None),
            Some(Exit::Signal(s)) => (None, Some(s)),
            None => (None, None),
        };
        opt_num(&mut o, "program_exit_code", code);
        opt_num(&mut o, "program_signal", signal);
        o = o.bool("timed_out", self.timed_out).bool("stopped", self.stopped_by.is_some());
        opt_num(&mut o, "stop_signal", self.stopped_by);
        o = o.raw("error", &self.error.as_deref().map_or("null".into(), json::string));
        o = o.raw("stdout", &stream(&self.stdout)).raw("stderr", &stream(&self.stderr));
        let enforced = match &self.enforcement {
            None => "null".to_owned(),
            Some(e) => {
                let missing = e.missing_grants.iter().map(|p| json::string(&p.to_string_lossy()));
                let mut en = json::Object::new()
                    .str("mode", e.mode.name())
                    .raw("mode_reason", &e.mode_reason.as_deref().map_or("null".into(), json::string))
                    .raw("lacks", &json::array(e.lacks.iter().map(|l| json::string(l))))
                    .bool("read_only_outside_write_grants", e.mode.is_own_world())
                    .str("home", &e.home.to_string_lossy())
                    .bool("home_is_temporary", e.home_is_temporary)
                    .str("tmp", &e.tmp_dir.to_string_lossy())
                    .str("cwd", &e.start.path.to_string_lossy())
                    .bool("cwd_is_callers", e.start.moved.is_none())
                    .raw("cwd_reason", &e.start.moved.as_deref().map_or("null".into(), json::string))
                    .bool("capabilities", false)
                    .num("landlock_abi", e.landlock_abi)
                    .num("landlock_abi_required", crate::sandbox::REQUIRED_LANDLOCK_ABI)
                    .raw(
                        "landlock",
                        &json::array(
                            [
                                "filesystem",
                                "execute",
                                "truncate",
                                "refer",
                                "ioctl_dev",
                                "tcp",
                                "signal_scope",
                                "abstract_unix_socket_scope",
                            ]
                            .map(json::string),
                        ),
                    )
                    .bool("seccomp", true)
                    .bool("no_new_privs", true)
                    .str("network", if self.internet.is_some() { "proxy" } else { "none" });
                en = match e.executables {
                    Some(n) => en.num("executables", n as u64),
                    None => en.str("executables", "any the call may read"),
                };
                let appetite = json::Object::new()
                    .num("processes", u64::from(e.appetite.processes))
                    .num("inotify_instances", u64::from(e.appetite.inotify_instances))
                    .num("inotify_watches", u64::from(e.appetite.inotify_watches))
                    .str("counted_by", if e.mode.is_own_world() { "kernel" } else { "helper" })
                    .finish();
                en.raw("missing_grants", &json::array(missing)).raw("appetite", &appetite).finish()
            }
        };
        o = o.raw("enforced", &enforced);
        o = o.raw("internet", &self.internet.as_ref().map_or("null".to_owned(), internet_json));
        o = o.raw("denials", &json::array(self.denials.iter().map(|d| d.to_json())));
        let servers = self.servers.iter().map(|(asked, real)| {
            json::Object::new().str("asked", &asked.to_string()).str("listened", &real.to_string()).finish()
        });
        o = o.raw("servers", &json::array(servers));
        o.num("wall_ms", self.wall.as_millis() as u64).finish()
    }

    /// The line a person reads on standard error after the program's own output, when the call
    /// did not simply exit.
    pub fn summary(&self) -> Option<String> {
        let cut = |name: &str, c: &Captured| {
            (c.cut_chars > 0).then(|| {
                format!("{name}: {} characters ({} lines) cut from the middle", c.cut_chars, c.cut_lines)
            })
        };
        let mut lines: Vec<String> =
            [cut("stdout", &self.stdout), cut("stderr", &self.stderr)].into_iter().flatten().collect();
        let status = match self.outcome {
            Outcome::Exited(_) => None,
            Outcome::Signaled(s) => Some(format!("{} was killed by signal {s}", self.program)),
            Outcome::TimedOut => Some(format!(
                "timed out after {:.1} s, a tenth before the sandbox's timeout; everything it started was killed",
                self.wall.as_secs_f64()
            )),
            Outcome::Stopped(s) => Some(format!("stopped by signal {s}; everything it started was killed")),
            Outcome::Refused(_) | Outcome::Failed => Some(format!(
                "{}: {}",
                self.outcome.name(),
                self.error.as_deref().unwrap_or("no reason given")
            )),
        };
        if let Some(log) = &self.internet {
            lines.extend(log.refusals.iter().take(10).map(|r| match r.times {
                1 => format!("internet: refused {}:{}: {}", r.host, r.port, r.why),
                n => format!("internet: refused {}:{} ({n} times): {}", r.host, r.port, r.why),
            }));
            if log.refused > 10 {
                lines.push(format!("internet: {} refusals in all", log.refused));
            }
        }
        lines.extend(self.denials.iter().map(|d| d.line()));
        lines.extend(self.enforcement.as_ref().map(world_notes).into_iter().flatten());
        lines.extend(status);
        (!lines.is_empty()).then(|| lines.iter().map(|l| format!("lnk: {l}\n")).collect())
    }
}

/// What a person reading the text report would not guess: where the program started when it
/// was not the caller's folder, and what `/tmp` was (the JSON report has the same as fields:
/// `cwd_reason`, `tmp`, `mode`).
fn world_notes(e: &Enforcement) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(why) = &e.start.moved {
        notes.push(format!("started in `{}`, not the caller's folder: {why}", e.start.path.display()));
    }
    let tmp = e.tmp_dir.display();
    if !e.mode.is_own_world() {
        let why = e.mode_reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default();
        notes.push(format!(
            "Landlock-only mode{why}: the host's /tmp and /dev/shm are not the program's (only grants beneath them are), and /proc shows no process's folder; the call's own tmp folder is `{tmp}` ($TMPDIR)"
        ));
    } else if e.tmp_dir != std::path::Path::new("/tmp") {
        notes.push(format!(
            "the host's /tmp is shown read-only (a grant beneath it holds a secret); the call's own tmp folder is `{tmp}` ($TMPDIR)"
        ));
    }
    notes
}

/// The proxy's part of the report: how many connections went out, and each refusal with why.
fn internet_json(log: &crate::proxy::Log) -> String {
    let refusals = log.refusals.iter().map(|r| {
        json::Object::new()
            .str("host", &r.host)
            .num("port", r.port)
            .str("why", &r.why)
            .num("times", r.times)
            .finish()
    });
    json::Object::new()
        .str("proxy", &format!("http://127.0.0.1:{}", crate::proxy::door::PROXY_PORT))
        .str("confinement", log.confinement)
        .num("connections", log.connections)
        .num("refused", log.refused)
        .raw("refusals", &json::array(refusals))
        .finish()
}
