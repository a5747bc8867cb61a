//! The `lnk-link-run` command line: background commands' verbs.
//!
//! Trusted with: what the harness is told of background commands (each verb's answer and exit code,
//! and with `--json` one JSON object), and turning its words into a [`StartRequest`]. What it
//! trusts: the harness, for its words (the folders, the bridge, the conversation and the hop, which
//! the hop cap counts from, are taken as given), and the modules below for every decision.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use super::args::{self, ParsedArgs, UsageError};
use crate::background::{self, Agent, Failure, Reason, StartRequest, bridge, supervise, sweep};
use crate::flags::{FLAG_NAMES, SandboxFlags};
use crate::json;
use crate::records::{ReadError, Record};
use crate::sandbox_file::{self, HOPS, SandboxFile, Tool};

pub const USAGE: &str = "\
lnk-link-run: background commands, each under a supervisor of its own

Usage:
  lnk-link-run start --agent-dir DIR --files-dir DIR [--file FILE | SANDBOX FLAGS]
                     [--bridge SOCKET] [--conversation ID] [--hop N] [--timeout SECONDS]
                     [--output-cap BYTES] [--json] -- PROGRAM [ARG]...
  lnk-link-run list  --agent-dir DIR --files-dir DIR [--json]
  lnk-link-run read ID --agent-dir DIR --files-dir DIR [--offset N] [--length N | --end N] [--json]
  lnk-link-run stop (ID | --all) --agent-dir DIR --files-dir DIR [--bridge SOCKET] [--json]
  lnk-link-run sweep --agent-dir DIR --files-dir DIR [--bridge SOCKET] [--json]

`lnk-link-run VERB --help` shows a verb's own help. --agent-dir holds the records (never
reachable from a sandbox); --files-dir holds background/<id>.out. At most 4 commands run at
once; a command's timeout is an hour by default. With --json, every verb prints one JSON object
with \"schema\": 1, errors included.
Exit codes: 0 ok, 2 usage, 75 four already running (try later), 77 hop cap reached,
125 failed, 126 not allowed (or read: not the output file lnk wrote), 127 program or id not found.
";

const START_HELP: &str = "\
lnk-link-run start: start PROGRAM in the background, sandboxed, under a supervisor of its own

Usage:
  lnk-link-run start --agent-dir DIR --files-dir DIR [--file FILE | SANDBOX FLAGS]
                     [--bridge SOCKET] [--conversation ID] [--hop N] [--timeout SECONDS]
                     [--output-cap BYTES] [--json] -- PROGRAM [ARG]...

  --file FILE          the sandbox file; or the flags of `lnk sandbox run` (`lnk sandbox flags`)
  --bridge SOCKET      the harness's Unix socket, told when the command ends
  --conversation ID    kept in the record, shown by `list`
  --hop N              how deep in a chain of starts this one is (0 for the agent's own)
  --timeout SECONDS    stop the command after this long (default 3600)
  --output-cap BYTES   keep at most this much of its output (its start; what is dropped is counted)
  --json               print one JSON object: {\"schema\":1,\"ok\":true,\"id\":\"r…\",…}

Prints the new command's id. Exit 75 when 4 already run, 77 at the hop cap, 126 when the
sandbox does not allow PROGRAM, 127 when PROGRAM is not on this computer.
";

const LIST_HELP: &str = "\
lnk-link-run list: every background command of this agent, running or ended

Usage:
  lnk-link-run list --agent-dir DIR --files-dir DIR [--json]

A line per command: id, state, told or not told, program and arguments. With --json,
{\"schema\":1,\"ok\":true,\"records\":[…]}, each with its start and end time, exit code and
output size. A command that is recorded running but whose supervisor is gone is shown as \"lost\".
";

const READ_HELP: &str = "\
lnk-link-run read: a background command's captured output

Usage:
  lnk-link-run read ID --agent-dir DIR --files-dir DIR [--offset N] [--length N | --end N] [--json]

  --offset N   start N bytes into the kept output (default 0)
  --length N   at most N bytes from there (default 65536)
  --end N      the last N bytes instead
  --json       {\"schema\":1,\"ok\":true,\"id\":…,\"size\":…,\"length\":…,\"text\":…}

Exit 127 when there is no command with that id, 126 when its output file is not the one lnk
wrote.
";

const STOP_HELP: &str = "\
lnk-link-run stop: stop a background command (SIGTERM, then SIGKILL after the grace period)

Usage:
  lnk-link-run stop (ID | --all) --agent-dir DIR --files-dir DIR [--bridge SOCKET] [--json]

Waits (up to 30 s) until its supervisor has ended the command's whole process tree, and prints
how it ended. `--all` stops every command of the agent (recorded lost: the agent stopped).
Exit 127 when there is no command with that id.
";

const SWEEP_HELP: &str = "\
lnk-link-run sweep: after a crash or reboot, settle every record whose supervisor is gone

Usage:
  lnk-link-run sweep --agent-dir DIR --files-dir DIR [--bridge SOCKET] [--json]

A record is live only while its supervisor holds the lock on it. Each of the others that says
running is recorded lost, and its processes are killed where they are proven to be its own
(pid and start time); ended commands not yet told are told over --bridge. Nothing whose
supervisor is alive is touched.
";

/// The verbs a caller may give, for suggesting a near one (`supervise` is the helper's own).
const VERBS: &[&str] = &["start", "list", "read", "stop", "sweep", "help"];

/// The help of `verb`, or the overview.
fn help_of(verb: Option<&str>) -> &'static str {
    match verb {
        Some("start") => START_HELP,
        Some("list") => LIST_HELP,
        Some("read") => READ_HELP,
        Some("stop") => STOP_HELP,
        Some("sweep") => SWEEP_HELP,
        _ => USAGE,
    }
}

/// Where a usage error of `verb` points to: the verb's own help when the verb is known.
fn help_pointer(verb: Option<&str>) -> &'static str {
    match verb {
        Some("start") => "lnk-link-run start --help",
        Some("list") => "lnk-link-run list --help",
        Some("read") => "lnk-link-run read --help",
        Some("stop") => "lnk-link-run stop --help",
        Some("sweep") => "lnk-link-run sweep --help",
        _ => "lnk-link-run --help",
    }
}

/// The version of every `--json` output's shape, `lnk`'s and `lnk-link-run`'s alike.
use crate::json::SCHEMA;

const COMMON: [&str; 3] = ["--agent-dir", "--files-dir", "--bridge"];

impl From<UsageError> for Failure {
    fn from(e: UsageError) -> Failure {
        Failure::new(Reason::Usage, e.0)
    }
}

/// The start of every successful `--json` answer.
fn answer() -> json::Object {
    json::Object::new().num("schema", SCHEMA).bool("ok", true)
}

/// The `--json` answer of a failure: `{"schema":1,"ok":false,"reason":…,"error":…,"exit_code":…}`.
fn failure_json(f: &Failure) -> json::Object {
    let o = json::Object::new().num("schema", SCHEMA).bool("ok", false).str("reason", f.reason.word());
    match &f.invalid_file {
        None => o.str("error", &f.message).num("exit_code", f.exit_code()),
        Some(invalid) => o
            .str("error", &invalid.summary)
            .num("exit_code", f.exit_code())
            .str("file", &invalid.file)
            .raw("diagnostics", &invalid.diagnostics_json),
    }
}

/// One of `stop --all`'s failures, inside its answer: the command and why, without the fields
/// of a whole answer (`schema`, `ok`).
fn failure_entry(id: &str, f: &Failure) -> String {
    json::Object::new()
        .str("id", id)
        .str("reason", f.reason.word())
        .str("error", &f.message)
        .num("exit_code", f.exit_code())
        .finish()
}

/// Whether the caller asked for JSON: `--json` among the verb's own words (before `--`, after
/// which `start`'s program and arguments begin). Looked at before parsing, so that a usage error
/// is answered in JSON too.
fn wants_json(args: &[String]) -> bool {
    args.iter().take_while(|a| *a != "--").any(|a| a == "--json" || a.starts_with("--json="))
}

/// `list` and `sweep` take flags only: a stray word is a mistake to say, not to ignore.
fn no_words(parsed: ParsedArgs) -> Result<ParsedArgs, UsageError> {
    match parsed.positional.first() {
        Some(word) => Err(UsageError(format!("unexpected `{}`: this verb takes no ID", word.escape_debug()))),
        None => Ok(parsed),
    }
}

fn agent(parsed: &ParsedArgs) -> Result<Agent, Failure> {
    let dir = |flag: &str| {
        parsed.value(flag).map(PathBuf::from).ok_or_else(|| UsageError(format!("`{flag}` is needed")))
    };
    let (agent_dir, files_dir) = (dir("--agent-dir")?, dir("--files-dir")?);
    Agent::open(&agent_dir, &files_dir).map_err(|e| Failure::new(Reason::Failed, e))
}

/// Runs `lnk-link-run` with `args` (without the program name).
///
/// A usage error is one line on standard error naming what was wrong and the help to read
/// (`lnk-link-run: unknown verb `strat`; did you mean `start`? (lnk-link-run --help)`), exit 2;
/// with `--json` the same failure is also one JSON object on standard output, as every other
/// failure is.
pub fn main(args: &[String]) -> ExitCode {
    let verb = args.first().map(String::as_str);
    let rest = args.get(1..).unwrap_or_default();
    let json = wants_json(args);
    let result = match verb {
        Some("start") => start(rest),
        Some("list") => list(rest),
        Some("read") => read(rest),
        Some("stop") => stop(rest),
        Some("sweep") => sweep_verb(rest),
        Some("supervise") => supervise_verb(rest).map_err(Failure::from),
        // `lnk-link-run help stop` as well as `lnk-link-run stop --help`.
        Some("--help" | "-h" | "help") => {
            out!("{}", help_of(rest.first().map(String::as_str)));
            Ok(0)
        }
        Some("--version" | "-V") => {
            outln!("lnk-link-run {}", env!("CARGO_PKG_VERSION"));
            Ok(0)
        }
        Some(other) => Err(super::unknown("verb", other, VERBS).into()),
        None => Err(UsageError("a verb is needed: start, list, read, stop or sweep".into()).into()),
    };
    let failure = match result {
        Ok(code) => return ExitCode::from(code),
        Err(f) => f,
    };
    answer_failure(verb, json, failure)
}

/// The answer to arguments that are not UTF-8 (see [`super::utf8_args`]): a usage error, in
/// JSON too when JSON was asked for.
pub fn not_utf8(lossy: &[String], why: &str) -> ExitCode {
    let verb = lossy.first().map(String::as_str);
    answer_failure(verb, wants_json(lossy), UsageError(why.to_owned()).into())
}

/// A failure said on standard error, and with `json` as one object on standard output.
fn answer_failure(verb: Option<&str>, json: bool, failure: Failure) -> ExitCode {
    // `supervise` is started by `start`, never by a harness: its errors are not JSON.
    if json && verb != Some("supervise") {
        let mut o = failure_json(&failure);
        if failure.reason == Reason::Usage {
            o = o.str("help", help_pointer(verb));
        }
        outln!("{}", o.finish());
    }
    if failure.reason == Reason::Usage {
        eprintln!("lnk-link-run: {} ({})", failure.message, help_pointer(verb));
    } else {
        eprintln!("lnk-link-run: {}", failure.message);
    }
    ExitCode::from(failure.exit_code())
}

fn start(args: &[String]) -> Result<u8, Failure> {
    let split = args.iter().position(|a| a == "--").unwrap_or(args.len());
    let (options, command) = (&args[..split], args.get(split + 1..).unwrap_or_default());
    // Asked for before anything else is checked: `start --help` needs no program.
    if options.iter().any(|a| a == "--help" || a == "-h") {
        out!("{START_HELP}");
        return Ok(0);
    }
    let Some((program, program_args)) = command.split_first() else {
        return Err(UsageError("a program is needed after `--`".into()).into());
    };
    // Sandbox flags are passed through to SandboxFlags; the rest are start's own. `--timeout` is
    // start's: a background command's timeout (an hour by default), not a run call's.
    let mut own = Vec::new();
    let mut sandbox = Vec::new();
    let mut it = options.iter();
    while let Some(a) = it.next() {
        if FLAG_NAMES.contains(&a.as_str()) && a != "--tool" && a != "--timeout" {
            sandbox.push(a.clone());
            if a != "--any-command" {
                sandbox.push(it.next().cloned().ok_or_else(|| UsageError(format!("`{a}` needs a value")))?);
            }
        } else {
            own.push(a.clone());
        }
    }
    let mut values = vec![
        "--agent-dir",
        "--files-dir",
        "--bridge",
        "--file",
        "--conversation",
        "--hop",
        "--timeout",
        "--output-cap",
    ];
    // Test builds only: a shorter wait between SIGTERM and SIGKILL than the 5 s a harness gets,
    // so the suite's stops do not each take it.
    if cfg!(feature = "fault-points") {
        values.push("--grace-ms");
    }
    let parsed = args::parse(&own, &values, &["--json"])?;
    let number = |flag: &str, default: u64, max: u64| -> Result<u64, UsageError> {
        match parsed.value(flag) {
            None => Ok(default),
            Some(v) => v.parse::<u64>().ok().filter(|n| *n <= max).ok_or_else(|| {
                UsageError(format!("`{flag} {}`: give a whole number up to {max}", v.escape_debug()))
            }),
        }
    };
    let home = crate::paths::home_dir().map_err(|e| Failure::new(Reason::Failed, e.to_string()))?;
    let (flags, hops) = match (parsed.value("--file"), sandbox.is_empty()) {
        (Some(_), false) => {
            return Err(UsageError("give either --file or sandbox flags, not both".into()).into());
        }
        (Some(file), true) => match sandbox_file::load(Path::new(file)) {
            Ok(f) => (SandboxFlags::from_file(&f, Tool::Run, &home), f.hops),
            Err(e) => {
                return Err(Failure {
                    invalid_file: Some(background::InvalidFile {
                        file: file.to_owned(),
                        summary: e.summary(file),
                        diagnostics_json: e.to_json(file),
                    }),
                    ..Failure::new(Reason::InvalidSandboxFile, e.render(file).trim_end())
                });
            }
        },
        (None, true) => {
            let f = SandboxFile::embedded_default();
            (SandboxFlags::from_file(&f, Tool::Run, &home), f.hops)
        }
        (None, false) => {
            let mut all = vec!["--tool".to_owned(), "run".to_owned()];
            all.extend(sandbox);
            (SandboxFlags::from_args(&all).map_err(|e| UsageError(e.0))?, HOPS.default)
        }
    };
    let agent = agent(&parsed)?;
    let req = StartRequest {
        flags,
        hops,
        program: program.clone(),
        args: program_args.to_vec(),
        conversation: parsed.value("--conversation").unwrap_or_default().to_owned(),
        hop: number("--hop", 0, 1_000_000)? as u32,
        timeout_secs: number("--timeout", u64::from(background::DEFAULT_TIMEOUT_SECS), 30 * 86_400)?.max(1)
            as u32,
        output_cap: number("--output-cap", background::output_file::DEFAULT_CAP, 1 << 40)?,
        grace: Duration::from_millis(number("--grace-ms", 0, 600_000)?),
        bridge: parsed.value("--bridge").map(PathBuf::from),
        sandbox_file: parsed.value("--file").map(PathBuf::from),
    };
    let id = background::start(&agent, &req)?;
    if parsed.switch("--json") {
        outln!("{}", answer().str("id", &id).finish());
    } else {
        outln!("{id}");
    }
    Ok(0)
}

fn record_json(r: &Record, live: bool) -> String {
    let opt = |v: Option<i32>| v.map_or("null".to_owned(), |n| n.to_string());
    json::Object::new()
        .str("id", &r.id)
        .str("program", &r.program)
        .raw("args", &json::array(r.args.iter().map(|a| json::string(a))))
        .num("started_ms", r.started_ms)
        .raw("ended_ms", &r.ended_ms.map_or("null".to_owned(), |e| e.to_string()))
        .str("state", shown_state(r, live))
        .raw("exit_code", &opt(r.exit_code))
        .raw("signal", &opt(r.signal))
        .str("detail", &r.detail)
        .bool("leftovers_possible", r.leftovers_possible)
        .bool("told", r.told)
        .num("output_bytes", r.output_bytes)
        .num("output_dropped", r.output_dropped)
        .raw("denials", &denials_json(r))
        .finish()
}

/// What the sandbox refused the command (see [`crate::denials`]): `[]` when nothing.
fn denials_json(r: &Record) -> String {
    json::array(r.denials.iter().map(|d| d.to_json()))
}

/// A record that says running but whose supervisor is gone is shown as lost: the sweep will
/// record it so.
fn shown_state(r: &Record, live: bool) -> &'static str {
    if !r.state.ended() && !live { "lost" } else { r.state.name() }
}

fn list(args: &[String]) -> Result<u8, Failure> {
    let parsed = no_words(args::parse(args, &COMMON, &["--json"])?)?;
    if parsed.help {
        out!("{LIST_HELP}");
        return Ok(0);
    }
    let agent = agent(&parsed)?;
    let json = parsed.switch("--json");
    let mut out = Vec::new();
    for id in agent.records.ids() {
        let live = agent.records.is_live(&id);
        let unread = |state: &str, why: &str| {
            if json {
                json::Object::new().str("id", &id).str("state", state).str("detail", why).finish()
            } else {
                format!("{id}\t{state}\t{why}")
            }
        };
        out.push(match agent.records.read_checked(&id) {
            Ok(r) if json => record_json(&r, live),
            Ok(r) => format!(
                "{}\t{}\t{}\t{}{}",
                r.id,
                shown_state(&r, live),
                if r.told { "told" } else { "not told" },
                r.program,
                r.args.iter().map(|a| format!(" {a:?}")).collect::<String>()
            ),
            // Not the caller's: shown so a human looks at it, and nothing in it is believed.
            Err(ReadError::NotOurs(why)) => unread("skipped", &why),
            // Removed since the folder was listed (a sweep): no longer there.
            Err(ReadError::Missing(_)) => continue,
            Err(ReadError::Invalid(why)) => unread("corrupt", &why),
        });
    }
    if json {
        outln!("{}", answer().raw("records", &json::array(out)).finish());
    } else {
        out.iter().for_each(|l| outln!("{l}"));
    }
    Ok(0)
}

fn read(args: &[String]) -> Result<u8, Failure> {
    let parsed =
        args::parse(args, &["--agent-dir", "--files-dir", "--offset", "--length", "--end"], &["--json"])?;
    if parsed.help {
        out!("{READ_HELP}");
        return Ok(0);
    }
    let [id] = parsed.positional.as_slice() else {
        return Err(UsageError("`read` takes one ID".into()).into());
    };
    // Checked before anything is opened: an id names files, so it is never taken as a path.
    background::check_id(id)?;
    let num = |flag: &str| {
        parsed
            .value(flag)
            .map(|v| v.parse::<u64>().map_err(|_| UsageError(format!("`{flag}` takes a number"))))
            .transpose()
    };
    let (offset, length, end) = (num("--offset")?, num("--length")?, num("--end")?);
    let agent = agent(&parsed)?;
    let record = background::read_record(&agent.records, id)?;
    let Some(inode) = record.output_inode else {
        return Err(Failure::new(Reason::NoOutput, format!("{id} has no output (it never started)")));
    };
    let (from_end, len) = match end {
        Some(n) => (true, n),
        None => (false, length.unwrap_or(64 * 1024)),
    };
    let (bytes, size) =
        background::output_file::read(&agent.files_dir, id, inode, offset.unwrap_or(0), len, from_end)
            .map_err(|why| Failure::new(Reason::OutputRefused, why))?;
    if parsed.switch("--json") {
        let text = String::from_utf8_lossy(&bytes);
        outln!(
            "{}",
            answer()
                .str("id", id)
                .num("size", size)
                .num("length", bytes.len() as u64)
                .str("text", &text)
                .raw("denials", &denials_json(&record))
                .finish()
        );
    } else {
        let _ = std::io::stdout().write_all(&bytes);
        for denial in &record.denials {
            eprintln!("lnk-link-run: {}", denial.line());
        }
    }
    Ok(0)
}

fn stop(args: &[String]) -> Result<u8, Failure> {
    let parsed = args::parse(args, &COMMON, &["--all", "--json"])?;
    if parsed.help {
        out!("{STOP_HELP}");
        return Ok(0);
    }
    let all = parsed.switch("--all");
    if !matches!((all, parsed.positional.len()), (true, 0) | (false, 1)) {
        return Err(UsageError("`stop` takes one ID, or --all".into()).into());
    }
    if let [id] = parsed.positional.as_slice() {
        background::check_id(id)?;
    }
    let json = parsed.switch("--json");
    let agent = agent(&parsed)?;
    // `--all` is the agent stopping, moving or being deleted: each command is recorded lost and
    // told when the agent is back, so no bridge is used now.
    let (signal, bridge) =
        if all { (libc::SIGHUP, None) } else { (libc::SIGTERM, parsed.value("--bridge").map(Path::new)) };
    let show = |r: &Record| if json { record_json(r, false) } else { bridge::ending(r) };
    if !all {
        let r = background::stop(&agent, &parsed.positional[0], signal, bridge)?;
        match json {
            true => outln!("{}", answer().raw("stopped", &json::array([show(&r)])).finish()),
            false => outln!("{}", show(&r)),
        }
        return Ok(0);
    }
    let (mut stopped, mut failed) = (Vec::new(), Vec::new());
    for id in agent.records.ids() {
        match background::stop(&agent, &id, signal, bridge) {
            Ok(r) => stopped.push(show(&r)),
            // Each said on stderr, for a human; the JSON answer lists them.
            Err(f) => {
                eprintln!("lnk-link-run: {}", f.message);
                failed.push((id, f));
            }
        }
    }
    let failed_json = || json::array(failed.iter().map(|(id, f)| failure_entry(id, f)));
    match (json, failed.first()) {
        (true, None) => outln!("{}", answer().raw("stopped", &json::array(stopped)).finish()),
        (true, Some((_, first))) => {
            let summary = Failure::new(
                first.reason,
                format!("{} of {} commands could not be stopped", failed.len(), failed.len() + stopped.len()),
            );
            outln!(
                "{}",
                failure_json(&summary)
                    .raw("stopped", &json::array(stopped))
                    .raw("failed", &failed_json())
                    .finish()
            );
        }
        (false, _) => stopped.iter().for_each(|l| outln!("{l}")),
    }
    Ok(failed.first().map_or(0, |(_, f)| f.exit_code()))
}

fn sweep_verb(args: &[String]) -> Result<u8, Failure> {
    let parsed = no_words(args::parse(args, &COMMON, &["--json"])?)?;
    if parsed.help {
        out!("{SWEEP_HELP}");
        return Ok(0);
    }
    let agent = agent(&parsed)?;
    let report = sweep::sweep(&agent.records, &agent.files_dir, parsed.value("--bridge").map(Path::new))
        .map_err(|why| Failure::new(Reason::Failed, why))?;
    let strings = |v: &[String]| json::array(v.iter().map(|s| json::string(s)));
    let lost = json::array(report.lost.iter().map(|(id, killed, leftovers)| {
        json::Object::new()
            .str("id", id)
            .bool("killed", *killed)
            .bool("leftovers_possible", *leftovers)
            .finish()
    }));
    let pairs = |v: &[(String, String)]| {
        json::array(v.iter().map(|(id, why)| json::Object::new().str("id", id).str("why", why).finish()))
    };
    // Files that are not the caller's are a human's business: each is said on stderr too.
    for (id, why) in &report.skipped {
        eprintln!("lnk-link-run: {id} skipped: {why}");
    }
    if parsed.switch("--json") {
        outln!(
            "{}",
            answer()
                .raw("running", &strings(&report.running))
                .raw("lost", &lost)
                .raw("told", &strings(&report.told))
                .raw("removed", &strings(&report.removed))
                .raw("corrupt", &pairs(&report.corrupt))
                .raw("skipped", &pairs(&report.skipped))
                .finish()
        );
    } else {
        outln!(
            "running {}, lost {}, told {}, removed {}, corrupt {}, skipped {}",
            report.running.len(),
            report.lost.len(),
            report.told.len(),
            report.removed.len(),
            report.corrupt.len(),
            report.skipped.len()
        );
    }
    Ok(0)
}

/// The internal verb `start` runs the supervisor with; never answers in JSON.
fn supervise_verb(args: &[String]) -> Result<u8, UsageError> {
    let parsed = args::parse(
        args,
        &["--agent-dir", "--files-dir", "--bridge", "--id", "--output-cap", "--grace-ms"],
        &[],
    )?;
    let id = parsed.value("--id").ok_or_else(|| UsageError("`--id` is needed".into()))?.to_owned();
    let num = |flag: &str, default: u64| parsed.value(flag).and_then(|v| v.parse().ok()).unwrap_or(default);
    let agent = match agent(&parsed) {
        Ok(a) => a,
        Err(f) => {
            eprintln!("lnk-link-run: {}", f.message);
            return Ok(f.exit_code());
        }
    };
    let opts = supervise::SuperviseOptions {
        id,
        bridge: parsed.value("--bridge").map(PathBuf::from),
        output_cap: num("--output-cap", background::output_file::DEFAULT_CAP),
        grace: Duration::from_millis(num("--grace-ms", 0)),
    };
    Ok(background::supervise(&agent, &opts))
}
