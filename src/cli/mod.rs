//! The `lnk` command line: reads the words, calls the module that does the work, and turns its
//! answer into output and an exit code. No policy is decided here.
//!
//! Exit codes follow timeout(1), so a harness can tell the helper's failures from the program's:
//! see [`exit`].
//!
//! A usage error is one line on standard error with the help to read, and exit 2. With `--json`
//! or `--report json` anywhere on the command line, standard output is exactly one JSON object
//! whatever happens (a usage error, an invalid sandbox file, a missing HOME), starting with
//! `"schema"` ([`crate::json::SCHEMA`]): a harness parses it and never has to scrape text.
//!
//! Trusted with: what the harness is told: the exit code and, with `--json`, that standard output
//! is one JSON object. What it trusts: the modules it calls, for every decision; the command line
//! is the harness's, read strictly.

/// `println!` for the command line's answers: a reader that closed standard output
/// (`lnk sandbox flags | head -1`) ends the process quietly, as it does any Unix tool, instead of
/// a panic.
macro_rules! outln {
    () => { $crate::cli::write_out(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::cli::write_out(format_args!("{}\n", format_args!($($arg)*))) };
}
/// `print!` likewise.
macro_rules! out {
    ($($arg:tt)*) => { $crate::cli::write_out(format_args!($($arg)*)) };
}

pub mod args;
mod file;
pub mod link_run;
mod run;
mod sandbox;

use std::process::ExitCode;

use args::UsageError;

pub use crate::exit;

const USAGE: &str = "\
lnk: a sandbox helper for AI-agent harnesses

Usage:
  lnk sandbox run [FLAGS | --file FILE] [--report json] -- PROGRAM [ARG]...
                                         run a program in a sandbox
  lnk file --files-dir DIR               a file session (run inside `lnk sandbox run --tool file`)
  lnk sandbox check FILE [--json]        validate a sandbox file, and its grants on this computer
  lnk sandbox flags [FILE] [--tool run|file] [--json]
                                         the flags of `lnk sandbox run` the file makes
  lnk sandbox commands [FILE] [--json]   the programs the file offers on this computer
  lnk sandbox status [--json]            what this kernel can enforce

`lnk COMMAND --help` shows a command's own help. Without FILE, Link's embedded default sandbox
file is used. With --json (or --report json) standard output is one JSON object, always, also
for a usage error or an invalid sandbox file.
Exit codes: 0 ok, 1 invalid sandbox file, 2 usage error, 125 helper failed,
126 refused, 127 not found, 124 timed out.
";

/// The top-level commands, for suggesting a near one.
const COMMANDS: &[&str] = &["sandbox", "file", "help", "--help", "--version"];

/// Runs `lnk` with `args` (without the program name).
pub fn main(args: &[String]) -> ExitCode {
    let result = match args.first().map(String::as_str) {
        Some("sandbox") if args.get(1).map(String::as_str) == Some("run") => run::main(&args[2..]),
        Some("sandbox") => sandbox::main(&args[1..]),
        Some("file") => file::main(&args[1..]),
        Some("--help" | "-h" | "help") => {
            out!("{USAGE}");
            Ok(0)
        }
        Some("--version" | "-V") => {
            outln!("lnk {}", env!("CARGO_PKG_VERSION"));
            Ok(0)
        }
        Some(other) => Err(unknown("command", other, COMMANDS)),
        None => Err(UsageError("a command is needed: `sandbox` or `file`".into())),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(UsageError(why)) => usage_error(&why, help_for(args), wants_json(args)),
    }
}

/// The arguments as UTF-8; or, when one is not, all of them read lossily (to find `--json` and
/// the verb) with the usage error that names it: lnk takes names, paths and values as UTF-8
/// (the JSON it answers in can say nothing else exactly).
pub fn utf8_args(
    args: impl Iterator<Item = std::ffi::OsString>,
) -> Result<Vec<String>, (Vec<String>, String)> {
    let args: Vec<std::ffi::OsString> = args.collect();
    match args.iter().find(|a| a.to_str().is_none()) {
        None => Ok(args.into_iter().map(|a| a.into_string().unwrap_or_default()).collect()),
        Some(bad) => Err((
            args.iter().map(|a| a.to_string_lossy().into_owned()).collect(),
            format!(
                "an argument is not valid UTF-8: `{}`; lnk takes names, paths and values as UTF-8 (rename the file, or pass another path to it)",
                bad.to_string_lossy().escape_debug()
            ),
        )),
    }
}

/// `lnk`'s answer to arguments that are not UTF-8 (see [`utf8_args`]): a usage error, in JSON
/// too when JSON was asked for.
pub fn not_utf8(lossy: &[String], why: &str) -> ExitCode {
    usage_error(why, help_for(lossy), wants_json(lossy))
}

/// `lnk`'s usage error: one line on standard error naming what was wrong and the help to read
/// (`lnk: unknown flag `--tol`; did you mean `--tool`? (lnk sandbox run --help)`), and with
/// `json` nothing there but one JSON object on standard output instead. Exit 2 either way.
fn usage_error(why: &str, help: &str, json: bool) -> ExitCode {
    if json {
        outln!("{}", failure("usage_error", exit::USAGE, why).str("help", help).finish());
    } else {
        eprintln!("lnk: {why} ({help})");
    }
    ExitCode::from(exit::USAGE)
}

/// The start of a JSON output for a command that could not do its work: `schema`, `outcome`,
/// `exit_code` and `error`; the caller adds what it knows (`help`, `file`, `diagnostics`).
pub(crate) fn failure(outcome: &str, exit_code: u8, error: &str) -> crate::json::Object {
    crate::json::Object::output().str("outcome", outcome).num("exit_code", exit_code).str("error", error)
}

/// A sandbox file that cannot be used: its diagnostics on standard error, or with `json` one
/// object `{"outcome":"invalid_sandbox_file","diagnostics":[…]}` on standard output. Returns
/// `code`, the caller's exit code for it.
pub(crate) fn invalid_file(file: &str, e: &crate::sandbox_file::LoadError, json: bool, code: u8) -> u8 {
    if json {
        let o = failure("invalid_sandbox_file", code, &e.summary(file));
        outln!("{}", o.str("file", file).raw("diagnostics", &e.to_json(file)).finish());
    } else {
        eprint!("{}", e.render(file));
    }
    code
}

/// The helper could not do its work (no HOME, …): `lnk: why` on standard error, or with `json`
/// one object `{"outcome":"failed",…}`. Returns 125.
pub(crate) fn helper_failed(why: &dyn std::fmt::Display, json: bool) -> u8 {
    if json {
        outln!("{}", failure("failed", exit::HELPER_FAILED, &why.to_string()).finish());
    } else {
        eprintln!("lnk: {why}");
    }
    exit::HELPER_FAILED
}

/// Whether the caller asked for JSON: `--json`, `--report json` or `--report=json` anywhere
/// before `--`. Looked for in the whole command line up front, so a usage error found before the
/// switch is reached (`lnk sandbox run --tol x --report json -- ls`) is still JSON.
fn wants_json(args: &[String]) -> bool {
    let options = args.iter().take_while(|a| *a != "--");
    let mut previous = "";
    for arg in options {
        if arg == "--json" || arg == "--report=json" || (previous == "--report" && arg == "json") {
            return true;
        }
        previous = arg;
    }
    false
}

/// The help that explains the command `args` was meant for.
fn help_for(args: &[String]) -> &'static str {
    let word = |i: usize| args.get(i).map(String::as_str);
    match (word(0), word(1)) {
        (Some("sandbox"), Some("run")) => "lnk sandbox run --help",
        (Some("sandbox"), Some("check")) => "lnk sandbox check --help",
        (Some("sandbox"), Some("flags")) => "lnk sandbox flags --help",
        (Some("sandbox"), Some("commands")) => "lnk sandbox commands --help",
        (Some("sandbox"), Some("status")) => "lnk sandbox status --help",
        (Some("sandbox"), _) => "lnk sandbox --help",
        (Some("file"), _) => "lnk file --help",
        _ => "lnk --help",
    }
}

/// "unknown command `sandbx`; did you mean `sandbox`?"
pub(crate) fn unknown(what: &str, word: &str, known: &[&str]) -> UsageError {
    let shown = word.escape_debug();
    UsageError(match crate::diagnostic::nearest(word, known) {
        Some(near) => format!("unknown {what} `{shown}`; did you mean `{near}`?"),
        None => format!("unknown {what} `{shown}`; the {what}s are {}", known.join(", ")),
    })
}

/// Writes to standard output; if the reader has gone (`EPIPE`), exits at once with 141, the code
/// of a process killed by SIGPIPE, which is what a shell pipeline expects.
pub(crate) fn write_out(args: std::fmt::Arguments<'_>) {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    exit_if_gone(stdout.write_fmt(args).and_then(|()| stdout.flush()));
}

/// [`write_out`] for bytes (a program's own output, which need not be UTF-8).
pub(crate) fn write_out_bytes(bytes: &[u8]) {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    exit_if_gone(stdout.write_all(bytes).and_then(|()| stdout.flush()));
}

fn exit_if_gone(written: std::io::Result<()>) {
    if written.is_err_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) {
        std::process::exit(128 + libc::SIGPIPE);
    }
}
