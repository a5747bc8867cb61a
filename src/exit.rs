//! The exit codes of `lnk` and `lnk-link-run`, in one place for the command line, the report
//! and the core alike. They follow timeout(1): a program's own exit code passes through
//! unchanged when it ran, 128 + N when a signal N ended it; lnk's own codes are below.
//!
//! Trusted with: the meaning of each exit code, which a harness may read when it reads nothing
//! else. What it trusts: nothing; these are constants.

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
