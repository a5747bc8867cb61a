//! `lnk sandbox …`: check a sandbox file, show the flags it makes, the programs it offers, and
//! what the kernel can enforce.

use std::path::Path;

use super::args::{self, UsageError};
use super::exit;
use crate::flags::SandboxFlags;
use crate::json;
use crate::kernel::KernelSupport;
use crate::paths;
use crate::program_path;
use crate::sandbox_file::{self, Commands, EMBEDDED_DEFAULT_NAME, SandboxFile, Tool};

pub const USAGE: &str = "\
Usage:
  lnk sandbox check FILE
      Validate FILE. Exit 0 if it is valid, 1 with every problem otherwise.
  lnk sandbox flags [FILE] [--tool run|file]
      Print the flags of `lnk sandbox run` that FILE makes for the tool (default run),
      one flag and its value per line, with ~ expanded.
  lnk sandbox commands [FILE] [--json]
      The programs FILE offers: each listed name this computer has on the system PATH,
      with the path found and the file it really is; then the names it lacks.
  lnk sandbox status [--json]
      The Landlock ABI, seccomp, user namespaces, pidfd and openat2 on this kernel,
      and which guarantees follow.

Without FILE, Link's embedded default (policy/default.toml) is used.
";

pub fn main(args: &[String]) -> Result<u8, UsageError> {
    let verb = args.first().map(String::as_str);
    let rest = args.get(1..).unwrap_or_default();
    match verb {
        Some("check") => check(rest),
        Some("flags") => flags(rest),
        Some("commands") => commands(rest),
        Some("status") => status(rest),
        Some("--help" | "-h" | "help") => {
            out!("{USAGE}");
            Ok(0)
        }
        None => Err(UsageError("a sandbox command is needed".into())),
        Some(other) => Err(UsageError(format!("unknown sandbox command `{}`", other.escape_debug()))),
    }
}

/// Loads FILE, or the embedded default when none is given. Prints the diagnostics and returns
/// `Err(exit code)` when the file cannot be used.
fn load(file: Option<&str>) -> Result<SandboxFile, u8> {
    let Some(file) = file else {
        return Ok(SandboxFile::embedded_default());
    };
    sandbox_file::load(Path::new(file)).map_err(|e| {
        eprint!("{}", e.render(file));
        exit::INVALID
    })
}

/// At most one positional argument: the sandbox file.
fn one_file(parsed: &args::ParsedArgs) -> Result<Option<&str>, UsageError> {
    match parsed.positional.as_slice() {
        [] => Ok(None),
        [file] => Ok(Some(file.as_str())),
        [_, extra, ..] => Err(UsageError(format!("unexpected argument `{}`", extra.escape_debug()))),
    }
}

fn check(args: &[String]) -> Result<u8, UsageError> {
    let parsed = args::parse(args, &[], &[])?;
    if parsed.help {
        out!("{USAGE}");
        return Ok(0);
    }
    let file = one_file(&parsed)?.ok_or_else(|| UsageError("`check` needs a FILE".into()))?;
    Ok(match load(Some(file)) {
        Ok(_) => {
            outln!("{file}: ok");
            0
        }
        Err(code) => code,
    })
}

fn flags(args: &[String]) -> Result<u8, UsageError> {
    let parsed = args::parse(args, &["--tool"], &[])?;
    if parsed.help {
        out!("{USAGE}");
        return Ok(0);
    }
    let tool = match parsed.value("--tool") {
        None => Tool::Run,
        Some(name) => Tool::from_name(name).ok_or_else(|| {
            UsageError(format!("`--tool {}`: the tool is `run` or `file`", name.escape_debug()))
        })?,
    };
    let file = match load(one_file(&parsed)?) {
        Ok(f) => f,
        Err(code) => return Ok(code),
    };
    let home = match paths::home_dir() {
        Ok(h) => h,
        Err(e) => {
            eprintln!("lnk: {e}");
            return Ok(exit::HELPER_FAILED);
        }
    };
    for (flag, value) in SandboxFlags::from_file(&file, tool, &home).to_pairs() {
        match value {
            Some(value) => outln!("{flag} {value}"),
            None => outln!("{flag}"),
        }
    }
    Ok(0)
}

fn commands(args: &[String]) -> Result<u8, UsageError> {
    let parsed = args::parse(args, &[], &["--json"])?;
    if parsed.help {
        out!("{USAGE}");
        return Ok(0);
    }
    let name = one_file(&parsed)?;
    let file = match load(name) {
        Ok(f) => f,
        Err(code) => return Ok(code),
    };
    let json = parsed.switch("--json");
    let names = match &file.commands {
        Commands::Any => {
            if json {
                outln!(
                    "{}",
                    json::Object::new().bool("any", true).raw("offered", "[]").raw("missing", "[]").finish()
                );
            } else {
                outln!("any program on the system PATH ({})", program_path::SYSTEM_PATH.join(":"));
            }
            return Ok(0);
        }
        Commands::Listed(names) => names,
    };
    let mut offered = Vec::new();
    let mut missing = Vec::new();
    for name in names {
        match program_path::lookup(name) {
            Ok(found) => offered.push(found),
            Err(_) => missing.push(name.as_str()),
        }
    }
    if json {
        let offered = offered.iter().map(|p| {
            json::Object::new()
                .str("name", &p.name)
                .str("path", &p.path.to_string_lossy())
                .str("real", &p.real.to_string_lossy())
                .finish()
        });
        let missing = missing.iter().map(|m| json::string(m));
        outln!(
            "{}",
            json::Object::new()
                .bool("any", false)
                .raw("offered", &json::array(offered))
                .raw("missing", &json::array(missing))
                .finish()
        );
        return Ok(0);
    }
    if offered.is_empty() && missing.is_empty() {
        outln!("no programs: run is off in {}", name.unwrap_or(EMBEDDED_DEFAULT_NAME));
    }
    for p in &offered {
        if p.path == p.real {
            outln!("{}\t{}", p.name, p.path.display());
        } else {
            outln!("{}\t{}\t(really {})", p.name, p.path.display(), p.real.display());
        }
    }
    if !missing.is_empty() {
        outln!("not on this computer: {}", missing.join(", "));
    }
    Ok(0)
}

fn status(args: &[String]) -> Result<u8, UsageError> {
    let parsed = args::parse(args, &[], &["--json"])?;
    if parsed.help {
        out!("{USAGE}");
        return Ok(0);
    }
    if let Some(extra) = parsed.positional.first() {
        return Err(UsageError(format!("unexpected argument `{}`", extra.escape_debug())));
    }
    let k = KernelSupport::probe();
    let feature = |r: &Result<(), String>| match r {
        Ok(()) => "available".to_owned(),
        Err(why) => format!("unavailable: {why}"),
    };
    let landlock = match &k.landlock {
        Ok(abi) => format!("ABI {abi}"),
        Err(why) => format!("unavailable: {why}"),
    };
    if parsed.switch("--json") {
        let opt = |r: &Result<(), String>| match r {
            Ok(()) => "null".to_owned(),
            Err(why) => json::string(why),
        };
        let guarantees = k.guarantees().into_iter().map(|g| {
            json::Object::new()
                .str("guarantee", g.name)
                .str("needs", g.needs)
                .bool("available", g.available)
                .finish()
        });
        let mut o = json::Object::new();
        o = match &k.landlock {
            Ok(abi) => o.num("landlock_abi", *abi).null("landlock_error"),
            Err(why) => o.null("landlock_abi").str("landlock_error", why),
        };
        let o = o
            .bool("seccomp", k.seccomp.is_ok())
            .raw("seccomp_error", &opt(&k.seccomp))
            .bool("seccomp_user_notification", k.seccomp_notify.is_ok())
            .bool("user_namespaces", k.user_namespaces.is_ok())
            .raw("user_namespaces_error", &opt(&k.user_namespaces))
            .bool("pidfd", k.pidfd.is_ok())
            .bool("openat2", k.openat2.is_ok())
            .str("mode", k.world.0.name())
            .raw("mode_reason", &k.world.1.as_deref().map_or("null".to_owned(), json::string))
            .raw(
                "lacks",
                &json::array(
                    (if k.world.0.is_own_world() {
                        &[][..]
                    } else {
                        crate::sandbox::world::LANDLOCK_ONLY_LACKS
                    })
                    .iter()
                    .map(|l| json::string(l)),
                ),
            )
            .raw("internet", &k.internet_confinement().map_or("null".to_owned(), json::string))
            .raw(
                "internet_error",
                &k.internet_confinement().err().map_or("null".to_owned(), |w| json::string(&w)),
            )
            .raw("guarantees", &json::array(guarantees));
        outln!("{}", o.finish());
        return Ok(0);
    }
    outln!("Landlock:                  {landlock}");
    outln!("seccomp filters:           {}", feature(&k.seccomp));
    outln!("seccomp user notification: {}", feature(&k.seccomp_notify));
    outln!("user namespaces:           {}", feature(&k.user_namespaces));
    outln!("pidfd:                     {}", feature(&k.pidfd));
    outln!("openat2:                   {}", feature(&k.openat2));
    match &k.world.1 {
        None => outln!("mode:                      {}", k.world.0.name()),
        Some(why) => {
            outln!("mode:                      {} ({why})", k.world.0.name());
            outln!("  so a call lacks:");
            for lack in crate::sandbox::world::LANDLOCK_ONLY_LACKS {
                outln!("    {lack}");
            }
        }
    }
    outln!();
    outln!("Guarantees on this kernel:");
    for g in k.guarantees() {
        outln!("  {}  {} (needs {})", if g.available { "yes" } else { "NO " }, g.name, g.needs);
    }
    outln!();
    match k.internet_confinement() {
        Ok(way) => outln!("[internet] on this kernel: {way}"),
        Err(why) => outln!("[internet] on this kernel: {why}"),
    }
    Ok(0)
}
