//! `lnk sandbox run`: reads the command line into a [`RunRequest`], runs it, prints the report.
//!
//! Trusted with: turning the harness's words into the [`RunRequest`] exactly (a flag misread would
//! change the sandbox), and putting the report where the harness reads it. What it trusts: the
//! harness, for its words, its `HOME`, its `--env` values and the variables `--env NAME` passes on;
//! the sandbox file only as [`crate::sandbox_file`] read it; and [`crate::run`] for the call.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use super::args::UsageError;
use crate::exit;
use crate::flags::{SandboxFlags, is_sandbox_flag};
use crate::paths;
use crate::run::{RunRequest, run};
use crate::sandbox_file::{self, SandboxFile, Tool};

const USAGE_HEAD: &str = "\
Usage:
  lnk sandbox run [SANDBOX FLAGS | --file FILE [--tool run|file]] [OPTIONS] -- PROGRAM [ARG]...

Runs PROGRAM (a name, looked up on the system PATH) in a sandbox made from FILE, from the
sandbox flags (`lnk sandbox flags FILE` prints the ones a file makes), or from the embedded
default when neither is given.

Options:
  --file FILE            the sandbox file; beside it only --timeout and --output may be given
                         (one call's own limits)
  --report json|text     json: one JSON object on standard output, always (also for a usage
                         error); text: the program's output as it was kept and a summary for a
                         person (default)
  --stdin                pass the caller's standard input (default /dev/null)
  --env NAME=VALUE       set a variable in the program's clean environment (repeated);
                         --env NAME passes the caller's value
  --agent-dir DIR        the agent's records folder: no write grant may cover it (repeated)
  --resolve NAME:PORT:ADDRESS
                         with [internet]: the call's proxy uses ADDRESS for NAME on PORT, as
                         curl's --resolve (repeated); the address is checked like any other

Sandbox flags (a flag left out grants nothing):
";

const USAGE_TAIL: &str = "
Exit codes: the program's own, 128+N killed by signal N, 124 timed out, 125 the helper
failed or the kernel cannot enforce the sandbox, 126 refused, 127 not found, 2 usage error.
";

/// The options that are not sandbox flags.
const OPTIONS: &[&str] = &["--file", "--report", "--stdin", "--env", "--agent-dir", "--resolve"];

/// `lnk sandbox run --help`: the options, then every sandbox flag with one line from
/// [`crate::flags::FLAG_HELP`], so the help cannot miss a flag.
pub fn usage() -> String {
    let mut text = USAGE_HEAD.to_owned();
    for (flag, what) in crate::flags::FLAG_HELP {
        text.push_str(&format!("  {flag:<26} {what}\n"));
    }
    text.push_str(USAGE_TAIL);
    text
}

enum ReportFormat {
    Json,
    Text,
}

pub fn main(args: &[String]) -> Result<u8, UsageError> {
    let split = args.iter().position(|a| a == "--");
    let (options, command) = match split {
        Some(i) => (&args[..i], &args[i + 1..]),
        None => (args, &[][..]),
    };
    if options.iter().any(|a| a == "--help" || a == "-h") {
        out!("{}", usage());
        return Ok(0);
    }
    let Some((program, program_args)) = command.split_first() else {
        return Err(UsageError("a program is needed after `--`".into()));
    };

    let mut file: Option<String> = None;
    let mut tool: Option<String> = None;
    let mut report = ReportFormat::Text;
    let mut pass_stdin = false;
    let mut extra_env = Vec::new();
    let mut protected = Vec::new();
    let mut resolve = Vec::new();
    let mut sandbox_flags = Vec::new();
    let mut seen = Vec::new();
    let mut it = options.iter();
    while let Some(flag) = it.next() {
        if let Some(why) = crate::flags::given_twice(flag, &mut seen) {
            return Err(UsageError(why));
        }
        let mut value = || it.next().cloned().ok_or_else(|| UsageError(format!("`{flag}` needs a value")));
        match flag.as_str() {
            "--file" => file = Some(value()?),
            "--tool" => tool = Some(value()?),
            "--report" => {
                report = match value()?.as_str() {
                    "json" => ReportFormat::Json,
                    "text" => ReportFormat::Text,
                    other => {
                        return Err(UsageError(format!(
                            "`--report {}`: use json or text",
                            other.escape_debug()
                        )));
                    }
                }
            }
            "--stdin" => pass_stdin = true,
            "--env" => extra_env.push(env_entry(&value()?)?),
            "--agent-dir" => protected.push(absolute(&value()?)?),
            "--resolve" => resolve.push(
                crate::proxy::ResolveOverride::parse(&value()?)
                    .map_err(|e| UsageError(format!("--resolve {e}")))?,
            ),
            f if is_sandbox_flag(f) => {
                sandbox_flags.push(f.to_owned());
                if f != "--any-command" {
                    sandbox_flags.push(value()?);
                }
            }
            other => {
                let known: Vec<&str> = crate::flags::FLAG_NAMES.iter().chain(OPTIONS).copied().collect();
                let hint =
                    crate::diagnostic::nearest(other, &known).map(|n| format!("; did you mean `{n}`?"));
                return Err(UsageError(format!(
                    "unknown flag `{}`{}",
                    other.escape_debug(),
                    hint.unwrap_or_default()
                )));
            }
        }
    }
    let tool = match tool.as_deref() {
        None | Some("run") => Tool::Run,
        Some("file") => Tool::File,
        Some(other) => {
            return Err(UsageError(format!("`--tool {}`: the tool is run or file", other.escape_debug())));
        }
    };
    let json = matches!(report, ReportFormat::Json);
    // Beside a file, one call's own limits: `--timeout` (a long build, a quick probe) and
    // `--output`. Every other sandbox flag would change what the file allows: not both.
    let mut call_limits = Vec::new();
    if file.is_some() {
        for pair in sandbox_flags.chunks(2) {
            match pair[0].as_str() {
                "--timeout" | "--output" => call_limits.extend_from_slice(pair),
                other => {
                    return Err(UsageError(format!(
                        "give either --file or sandbox flags, not both (`{}`; beside --file only --timeout and --output, one call's limits)",
                        other.escape_debug()
                    )));
                }
            }
        }
        sandbox_flags.clear();
    }
    let call_limits = SandboxFlags::from_args(&call_limits).map_err(|e| UsageError(e.0))?;
    let given = |flag: &str| seen.iter().any(|f| f == flag);
    let home = match paths::home_dir() {
        Ok(h) => h,
        Err(e) => return Ok(super::helper_failed(&e, json)),
    };
    let flags = match (&file, sandbox_flags.is_empty()) {
        (Some(file), _) => match sandbox_file::load(Path::new(file)) {
            Ok(f) => {
                let mut flags = SandboxFlags::from_file(&f, tool, &home);
                if given("--timeout") {
                    flags.timeout_secs = call_limits.timeout_secs;
                }
                if given("--output") {
                    flags.output_chars = call_limits.output_chars;
                }
                flags
            }
            Err(e) => return Ok(super::invalid_file(file, &e, json, exit::HELPER_FAILED)),
        },
        (None, true) => SandboxFlags::from_file(&SandboxFile::embedded_default(), tool, &home),
        (None, false) => {
            sandbox_flags.splice(0..0, ["--tool".to_owned(), tool.name().to_owned()]);
            SandboxFlags::from_args(&sandbox_flags).map_err(|e| UsageError(e.0))?
        }
    };

    let req = RunRequest {
        flags,
        program: program.clone(),
        args: program_args.to_vec(),
        extra_env,
        pass_stdin,
        protected,
        home,
        sandbox_file: file.map(PathBuf::from),
        resolve,
    };
    let result = run(&req);
    // The report: on standard output, unless a file session's answers went there (then on
    // standard error: the two never share a stream). A harness that closed its end of
    // standard output gets 141, as from a process killed by SIGPIPE.
    let session = tool == Tool::File;
    match report {
        ReportFormat::Json if session => {
            let _ = writeln!(std::io::stderr(), "{}", result.to_json());
        }
        ReportFormat::Json => outln!("{}", result.to_json()),
        ReportFormat::Text => {
            if !session {
                super::write_out_bytes(result.stdout.text.as_bytes());
            }
            let _ = std::io::stderr().write_all(result.stderr.text.as_bytes());
            if let Some(summary) = result.summary() {
                let _ = std::io::stderr().write_all(summary.as_bytes());
            }
        }
    }
    Ok(result.outcome.exit_code())
}

fn env_entry(value: &str) -> Result<String, UsageError> {
    let (name, val) = match value.split_once('=') {
        Some((n, v)) => (n, Some(v.to_owned())),
        None => (value, None),
    };
    let valid =
        !name.is_empty() && !name.contains('\0') && !name.bytes().next().is_some_and(|b| b.is_ascii_digit());
    if !valid || val.as_deref().is_some_and(|v| v.contains('\0')) {
        return Err(UsageError(format!("`--env {}`: give NAME=VALUE or NAME", value.escape_debug())));
    }
    let val = match val {
        Some(v) => v,
        None => std::env::var(name)
            .map_err(|_| UsageError(format!("`--env {name}`: the caller has no such variable")))?,
    };
    Ok(format!("{name}={val}"))
}

fn absolute(value: &str) -> Result<PathBuf, UsageError> {
    let p = paths::normal(Path::new(value)).ok_or_else(|| {
        UsageError(format!("`{}`: give an absolute path without `..`", value.escape_debug()))
    })?;
    Ok(std::fs::canonicalize(&p).unwrap_or(p))
}
