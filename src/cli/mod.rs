//! The `lnk` command line: reads the words, calls the module that does the work, and turns its
//! answer into output and an exit code. No policy is decided here.
//!
//! Exit codes follow timeout(1), so a harness can tell the helper's failures from the program's:
//! see [`exit`].

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
pub use file::FLAGS_VAR as FILE_FLAGS_VAR;
pub mod link_run;
mod run;
mod sandbox;

use std::process::ExitCode;

use args::UsageError;

/// The helper's exit codes. A program's own exit code passes through unchanged when it ran.
pub mod exit {
    /// The sandbox file is invalid (`check`, `flags`, `commands`).
    pub const INVALID: u8 = 1;
    /// The command line is wrong: an unknown flag, a missing value.
    pub const USAGE: u8 = 2;
    /// The call timed out.
    pub const TIMED_OUT: u8 = 124;
    /// The helper itself failed, or the kernel cannot give a guarantee the sandbox needs.
    pub const HELPER_FAILED: u8 = 125;
    /// The program is not allowed by the sandbox file.
    pub const REFUSED: u8 = 126;
    /// The program is not on the system PATH (`lnk-link-run`: or there is no command with
    /// that id).
    pub const NOT_FOUND: u8 = 127;
    /// `lnk-link-run start`: 4 commands are already running; try again later (EX_TEMPFAIL).
    pub const TRY_LATER: u8 = 75;
    /// `lnk-link-run start`: the chain of starts is `[tool.scheduler] hops` deep; no further
    /// start from there (EX_NOPERM).
    pub const HOP_CAP: u8 = 77;
}

const USAGE: &str = "\
lnk: a sandbox helper for AI-agent harnesses

Usage:
  lnk sandbox run [FLAGS | --file FILE] -- PROGRAM [ARG]...
                                         run a program in a sandbox
  lnk file --files-dir DIR               a file session (run inside `lnk sandbox run --tool file`)
  lnk sandbox check FILE                 validate a sandbox file
  lnk sandbox flags [FILE] [--tool run|file]
                                         the flags of `lnk sandbox run` the file makes
  lnk sandbox commands [FILE] [--json]   the programs the file offers on this computer
  lnk sandbox status [--json]            what this kernel can enforce

Without FILE, Link's embedded default sandbox file is used.
Exit codes: 0 ok, 1 invalid sandbox file, 2 usage error, 125 helper failed,
126 refused, 127 not found, 124 timed out.
";

/// Runs `lnk` with `args` (without the program name).
pub fn main(args: &[String]) -> ExitCode {
    let result = match args.first().map(String::as_str) {
        Some("sandbox") if args.get(1).map(String::as_str) == Some("run") => {
            return finish(run::main(&args[2..]), "lnk", run::USAGE);
        }
        Some("file") => return finish(file::main(&args[1..]), "lnk", file::USAGE),
        Some("sandbox") => return finish(sandbox::main(&args[1..]), "lnk", sandbox::USAGE),
        Some("--help" | "-h" | "help") => {
            out!("{USAGE}");
            Ok(0)
        }
        Some("--version" | "-V") => {
            outln!("lnk {}", env!("CARGO_PKG_VERSION"));
            Ok(0)
        }
        Some(other) => Err(UsageError(format!("unknown command `{}`", other.escape_debug()))),
        None => Err(UsageError("a command is needed".into())),
    };
    finish(result, "lnk", USAGE)
}

/// Turns a command's result into an exit code, printing a usage error with `usage`.
pub fn finish(result: Result<u8, UsageError>, program: &str, usage: &str) -> ExitCode {
    match result {
        Ok(code) => ExitCode::from(code),
        Err(UsageError(why)) => {
            eprintln!("{program}: {why}\n\n{usage}");
            ExitCode::from(exit::USAGE)
        }
    }
}

/// Writes to standard output; if the reader has gone (`EPIPE`), exits at once with 141, the code
/// of a process killed by SIGPIPE, which is what a shell pipeline expects.
pub(crate) fn write_out(args: std::fmt::Arguments<'_>) {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_fmt(args).and_then(|()| stdout.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(128 + libc::SIGPIPE);
        }
    }
}
