//! The `lnk-link-run` command line: background commands' verbs.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::args::{self, ParsedArgs, UsageError};
use super::exit;
use crate::background::{self, Agent, StartRequest, bridge, supervise};
use crate::flags::{FLAG_NAMES, SandboxFlags};
use crate::json;
use crate::records::{ReadError, Record, sweep};
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

--agent-dir holds the records (never reachable from a sandbox); --files-dir holds
background/<id>.out. At most 4 commands run at once; a command's timeout is an hour by
default. Exit codes as `lnk sandbox run`: 126 refused, 127 not found, 125 failed, 2 usage.
";

const COMMON: [&str; 3] = ["--agent-dir", "--files-dir", "--bridge"];

fn agent(parsed: &ParsedArgs) -> Result<Agent, Result<u8, UsageError>> {
    let dir = |flag: &str| {
        parsed.value(flag).map(PathBuf::from).ok_or_else(|| Err(UsageError(format!("`{flag}` is needed"))))
    };
    let (agent_dir, files_dir) = (dir("--agent-dir")?, dir("--files-dir")?);
    Agent::open(&agent_dir, &files_dir).map_err(|e| {
        eprintln!("lnk-link-run: {e}");
        Ok(exit::HELPER_FAILED)
    })
}

macro_rules! open_agent {
    ($parsed:expr) => {
        match agent(&$parsed) {
            Ok(a) => a,
            Err(result) => return result,
        }
    };
}

pub fn main(args: &[String]) -> Result<u8, UsageError> {
    let verb = args.first().map(String::as_str);
    let rest = args.get(1..).unwrap_or_default();
    match verb {
        Some("start") => start(rest),
        Some("list") => list(rest),
        Some("read") => read(rest),
        Some("stop") => stop(rest),
        Some("sweep") => sweep_verb(rest),
        Some("supervise") => supervise_verb(rest),
        Some("--help" | "-h" | "help") => {
            out!("{USAGE}");
            Ok(0)
        }
        Some("--version" | "-V") => {
            outln!("lnk-link-run {}", env!("CARGO_PKG_VERSION"));
            Ok(0)
        }
        Some(other) => Err(UsageError(format!("unknown verb `{}`", other.escape_debug()))),
        None => Err(UsageError("a verb is needed".into())),
    }
}

fn start(args: &[String]) -> Result<u8, UsageError> {
    let split = args
        .iter()
        .position(|a| a == "--")
        .ok_or_else(|| UsageError("a program is needed after `--`".into()))?;
    let (options, command) = (&args[..split], &args[split + 1..]);
    let Some((program, program_args)) = command.split_first() else {
        return Err(UsageError("a program is needed after `--`".into()));
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
    let values = [
        "--agent-dir",
        "--files-dir",
        "--bridge",
        "--file",
        "--conversation",
        "--hop",
        "--timeout",
        "--output-cap",
        "--grace-ms",
    ];
    let parsed = args::parse(&own, &values, &["--json"])?;
    if parsed.help {
        out!("{USAGE}");
        return Ok(0);
    }
    let number = |flag: &str, default: u64, max: u64| -> Result<u64, UsageError> {
        match parsed.value(flag) {
            None => Ok(default),
            Some(v) => v.parse::<u64>().ok().filter(|n| *n <= max).ok_or_else(|| {
                UsageError(format!("`{flag} {}`: give a whole number up to {max}", v.escape_debug()))
            }),
        }
    };
    let home = match crate::paths::home_dir() {
        Ok(h) => h,
        Err(e) => {
            eprintln!("lnk-link-run: {e}");
            return Ok(exit::HELPER_FAILED);
        }
    };
    let (flags, hops) = match (parsed.value("--file"), sandbox.is_empty()) {
        (Some(_), false) => return Err(UsageError("give either --file or sandbox flags, not both".into())),
        (Some(file), true) => match sandbox_file::load(Path::new(file)) {
            Ok(f) => (SandboxFlags::from_file(&f, Tool::Run, &home), f.hops),
            Err(e) => {
                eprint!("{}", e.render(file));
                return Ok(exit::HELPER_FAILED);
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
    let agent = open_agent!(parsed);
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
    };
    let json = parsed.switch("--json");
    match background::start(&agent, &req) {
        Ok(id) => {
            if json {
                outln!("{}", json::Object::new().str("id", &id).finish());
            } else {
                outln!("{id}");
            }
            Ok(0)
        }
        Err(e) => {
            if json {
                outln!(
                    "{}",
                    json::Object::new().num("exit_code", e.exit_code).str("error", &e.message).finish()
                );
            }
            eprintln!("lnk-link-run: {}", e.message);
            Ok(e.exit_code)
        }
    }
}

fn record_json(r: &Record, live: bool) -> String {
    let opt = |v: Option<i32>| v.map_or("null".to_owned(), |n| n.to_string());
    json::Object::new()
        .str("id", &r.id)
        .str("program", &r.program)
        .raw("args", &json::array(r.args.iter().map(|a| json::string(a))))
        .num("started_ms", r.started_ms)
        .str("state", shown_state(r, live))
        .raw("exit_code", &opt(r.exit_code))
        .raw("signal", &opt(r.signal))
        .str("detail", &r.detail)
        .bool("leftovers_possible", r.leftovers_possible)
        .bool("told", r.told)
        .num("output_bytes", r.output_bytes)
        .num("output_dropped", r.output_dropped)
        .finish()
}

/// A record that says running but whose supervisor is gone is shown as lost: the sweep will
/// record it so.
fn shown_state(r: &Record, live: bool) -> &'static str {
    if !r.state.ended() && !live { "lost" } else { r.state.name() }
}

fn list(args: &[String]) -> Result<u8, UsageError> {
    let parsed = args::parse(args, &COMMON, &["--json"])?;
    if parsed.help {
        out!("{USAGE}");
        return Ok(0);
    }
    let agent = open_agent!(parsed);
    let mut out = Vec::new();
    for id in agent.records.ids() {
        let live = agent.records.is_live(&id);
        match agent.records.read_checked(&id) {
            Ok(r) if parsed.switch("--json") => out.push(record_json(&r, live)),
            // Not the caller's: shown so a human looks at it, and nothing in it is believed.
            Err(ReadError::NotOurs(why)) if parsed.switch("--json") => out.push(
                json::Object::new().str("id", &id).str("state", "skipped").str("detail", &why).finish(),
            ),
            Err(ReadError::NotOurs(why)) => out.push(format!("{id}\tskipped\t{why}")),
            Ok(r) => out.push(format!(
                "{}\t{}\t{}\t{}{}",
                r.id,
                shown_state(&r, live),
                if r.told { "told" } else { "not told" },
                r.program,
                r.args.iter().map(|a| format!(" {a:?}")).collect::<String>()
            )),
            Err(ReadError::Invalid(why)) if parsed.switch("--json") => out.push(
                json::Object::new().str("id", &id).str("state", "corrupt").str("detail", &why).finish(),
            ),
            Err(ReadError::Invalid(why)) => out.push(format!("{id}\tcorrupt\t{why}")),
        }
    }
    if parsed.switch("--json") {
        outln!("{}", json::array(out));
    } else {
        out.iter().for_each(|l| outln!("{l}"));
    }
    Ok(0)
}

fn read(args: &[String]) -> Result<u8, UsageError> {
    let parsed =
        args::parse(args, &["--agent-dir", "--files-dir", "--offset", "--length", "--end"], &["--json"])?;
    if parsed.help {
        out!("{USAGE}");
        return Ok(0);
    }
    let [id] = parsed.positional.as_slice() else { return Err(UsageError("`read` takes one ID".into())) };
    let num = |flag: &str| {
        parsed
            .value(flag)
            .map(|v| v.parse::<u64>().map_err(|_| UsageError(format!("`{flag}` takes a number"))))
            .transpose()
    };
    let (offset, length, end) = (num("--offset")?, num("--length")?, num("--end")?);
    let agent = open_agent!(parsed);
    let record = match agent.records.read(id) {
        Ok(r) => r,
        Err(why) => {
            eprintln!("lnk-link-run: {why}");
            return Ok(exit::HELPER_FAILED);
        }
    };
    let Some(inode) = record.output_inode else {
        eprintln!("lnk-link-run: {id} has no output (it never started)");
        return Ok(exit::HELPER_FAILED);
    };
    let (from_end, len) = match end {
        Some(n) => (true, n),
        None => (false, length.unwrap_or(64 * 1024)),
    };
    match background::output_file::read(&agent.files_dir, id, inode, offset.unwrap_or(0), len, from_end) {
        Ok((bytes, size)) if parsed.switch("--json") => {
            let text = String::from_utf8_lossy(&bytes);
            outln!(
                "{}",
                json::Object::new()
                    .str("id", id)
                    .num("size", size)
                    .num("length", bytes.len() as u64)
                    .str("text", &text)
                    .finish()
            );
            Ok(0)
        }
        Ok((bytes, _)) => {
            let _ = std::io::stdout().write_all(&bytes);
            Ok(0)
        }
        Err(why) => {
            eprintln!("lnk-link-run: {why}");
            Ok(exit::REFUSED)
        }
    }
}

fn stop(args: &[String]) -> Result<u8, UsageError> {
    let parsed = args::parse(args, &COMMON, &["--all", "--json"])?;
    if parsed.help {
        out!("{USAGE}");
        return Ok(0);
    }
    let agent = open_agent!(parsed);
    let all = parsed.switch("--all");
    let ids = match (all, parsed.positional.as_slice()) {
        (true, []) => agent.records.ids(),
        (false, [id]) => vec![id.clone()],
        _ => return Err(UsageError("`stop` takes one ID, or --all".into())),
    };
    // `--all` is the agent stopping, moving or being deleted: each command is recorded lost and
    // told when the agent is back, so no bridge is used now.
    let (signal, bridge) =
        if all { (libc::SIGHUP, None) } else { (libc::SIGTERM, parsed.value("--bridge").map(Path::new)) };
    let mut status = 0;
    let mut out = Vec::new();
    for id in ids {
        match background::stop(&agent, &id, signal, bridge) {
            Ok(r) => {
                out.push(if parsed.switch("--json") { record_json(&r, false) } else { bridge::ending(&r) })
            }
            Err(why) => {
                eprintln!("lnk-link-run: {why}");
                status = exit::HELPER_FAILED;
            }
        }
    }
    if parsed.switch("--json") {
        outln!("{}", json::array(out));
    } else {
        out.iter().for_each(|l| outln!("{l}"));
    }
    Ok(status)
}

fn sweep_verb(args: &[String]) -> Result<u8, UsageError> {
    let parsed = args::parse(args, &COMMON, &["--json"])?;
    if parsed.help {
        out!("{USAGE}");
        return Ok(0);
    }
    let agent = open_agent!(parsed);
    let report = match sweep::sweep(&agent.records, &agent.files_dir, parsed.value("--bridge").map(Path::new))
    {
        Ok(r) => r,
        Err(why) => {
            eprintln!("lnk-link-run: {why}");
            return Ok(exit::HELPER_FAILED);
        }
    };
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
            json::Object::new()
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

fn supervise_verb(args: &[String]) -> Result<u8, UsageError> {
    let parsed = args::parse(
        args,
        &["--agent-dir", "--files-dir", "--bridge", "--id", "--output-cap", "--grace-ms"],
        &[],
    )?;
    let id = parsed.value("--id").ok_or_else(|| UsageError("`--id` is needed".into()))?.to_owned();
    let num = |flag: &str, default: u64| parsed.value(flag).and_then(|v| v.parse().ok()).unwrap_or(default);
    let agent = open_agent!(parsed);
    let opts = supervise::SuperviseOptions {
        id,
        bridge: parsed.value("--bridge").map(PathBuf::from),
        output_cap: num("--output-cap", background::output_file::DEFAULT_CAP),
        grace: Duration::from_millis(num("--grace-ms", 0)),
    };
    Ok(background::supervise(&agent, &opts))
}
