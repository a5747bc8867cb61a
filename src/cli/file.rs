//! `lnk file`: the file session's command line.
//!
//! Trusted with: which folders a file session serves: the grants it hands [`crate::file_tool`].
//! What it trusts: the launcher's `LNK_SANDBOX_FLAGS` (or, run alone, `--read` and `--write`),
//! parsed as strictly as any flags; the `--files-dir` and `HOME` it is given; and the sandbox it
//! runs in.

use std::path::PathBuf;

use super::args::{self, UsageError};
use crate::exit;
use crate::file_tool;
use crate::flags::SandboxFlags;

pub const USAGE: &str = "\
Usage:
  lnk sandbox run --file FILE --tool file -- lnk file --files-dir DIR

Answers one JSON request per line on standard input with one JSON answer per line on
standard output (see the README for every operation). Run by `lnk sandbox run --tool file`,
which always passes its standard input to a session, it takes the sandbox's grants from the
launcher; run alone (tests, benchmarks), give them
with --read DIR and --write DIR.
";

use crate::file_tool::FLAGS_VAR;

pub fn main(args: &[String]) -> Result<u8, UsageError> {
    let parsed = args::parse(args, &["--files-dir", "--read", "--write"], &[])?;
    if parsed.help {
        out!("{USAGE}");
        return Ok(0);
    }
    let files_dir = PathBuf::from(
        parsed.value("--files-dir").ok_or_else(|| UsageError("`--files-dir` is needed".into()))?,
    );
    let mut own = Vec::new();
    for flag in ["--read", "--write"] {
        for (f, v) in args.iter().zip(args.iter().skip(1)) {
            if f == flag {
                own.extend([f.clone(), v.clone()]);
            }
        }
    }
    let from_launcher = std::env::var(FLAGS_VAR).ok();
    let flag_args: Vec<String> = match (from_launcher, own.is_empty()) {
        (Some(_), false) => {
            return Err(UsageError(
                "grants come from the launcher here; --read and --write are not taken".into(),
            ));
        }
        (Some(text), true) => match crate::json::parse::parse(&text) {
            Ok(crate::json::parse::Value::Array(items)) => {
                items.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect()
            }
            _ => return Err(UsageError(format!("{FLAGS_VAR} is not a JSON array of flags"))),
        },
        (None, _) => own,
    };
    let flags = SandboxFlags::from_args(&flag_args).map_err(|e| UsageError(e.0))?;
    let home = match crate::paths::home_dir() {
        Ok(h) => h,
        Err(e) => {
            eprintln!("lnk file: {e}");
            return Ok(exit::HELPER_FAILED);
        }
    };
    match file_tool::serve(home, &files_dir, flags.read, flags.write) {
        Ok(()) => Ok(0),
        Err(why) => {
            eprintln!("lnk file: {why}");
            Ok(exit::HELPER_FAILED)
        }
    }
}
