//! `lnk-link-run`: background commands under supervisors of their own.
//!
//! Its verbs (start, list, read, stop, supervise, sweep) are built in a later issue; until then
//! it prints its usage and refuses every verb, so nothing can mistake it for working.

use lnk::cli::{args::UsageError, exit, finish};

const USAGE: &str = "\
lnk-link-run: background commands, each under a supervisor of its own

Usage:
  lnk-link-run start    --agent-dir DIR --files-dir DIR [--file FILE] -- PROGRAM [ARG]...
  lnk-link-run list     --agent-dir DIR [--json]
  lnk-link-run read ID  --agent-dir DIR --files-dir DIR
  lnk-link-run stop ID | --all  --agent-dir DIR
  lnk-link-run sweep    --agent-dir DIR --files-dir DIR

Not built yet: every verb exits 125.
";

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("--help" | "-h" | "help") => {
            print!("{USAGE}");
            Ok(0)
        }
        Some(verb @ ("start" | "list" | "read" | "stop" | "supervise" | "sweep")) => {
            eprintln!("lnk-link-run: `{verb}` is not built yet");
            Ok(exit::HELPER_FAILED)
        }
        Some(other) => Err(UsageError(format!("unknown verb `{}`", other.escape_debug()))),
        None => Err(UsageError("a verb is needed".into())),
    };
    finish(result, "lnk-link-run", USAGE)
}
