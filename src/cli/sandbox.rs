//! `lnk sandbox …`: check a sandbox file, show the flags it makes, the programs it offers, and
//! what the kernel can enforce.
//!
//! Trusted with: what a person and a harness are told of a sandbox file and this computer (a
//! `check` that passed what `lnk sandbox run` refuses would mislead them); nothing here is
//! enforced. What it trusts: the modules it calls: the sandbox file's reader, run's own checks
//! ([`crate::grant_check`]), the system PATH lookup and the kernel's probes.

use std::path::Path;

use super::args::{self, UsageError};
use crate::exit;
use crate::flags::SandboxFlags;
use crate::json;
use crate::paths;
use crate::program_path;
use crate::sandbox::kernel::KernelSupport;
use crate::sandbox_file::{self, Commands, EMBEDDED_DEFAULT_NAME, SandboxFile, Tool};

pub const USAGE: &str = "\
Usage:
  lnk sandbox check FILE [--agent-dir DIR]... [--json]
      Validate FILE and its grants on this computer. Exit 0 if it is valid, 1 otherwise.
  lnk sandbox flags [FILE] [--tool run|file] [--json]
      The flags of `lnk sandbox run` that FILE makes for the tool (default run).
  lnk sandbox commands [FILE] [--json]
      The programs FILE offers on this computer, and the names it lacks.
  lnk sandbox status [--json]
      What this kernel can enforce, and which guarantees follow.
  lnk sandbox run [SANDBOX FLAGS | --file FILE] [OPTIONS] -- PROGRAM [ARG]...
      Run PROGRAM in the sandbox.

`lnk sandbox COMMAND --help` shows a command's own help. Without FILE, Link's embedded
default (policy/default.toml) is used.
";

const CHECK_USAGE: &str = "\
Usage:
  lnk sandbox check FILE [--agent-dir DIR]... [--json]

Validates FILE: every problem in its text, with line and column; then, if the text is valid,
what `lnk sandbox run` would refuse on this computer (`~` is HOME), in the mode this kernel
gives calls (the JSON answer's `mode`), decided by run's own code and said in its words:
  error    a grant that passes through a symbolic link (name the real folder), names a
           file, or lies in a `[files] deny` path; a write grant over an --agent-dir
           folder, lnk's tmp base, the sandbox file or lnk itself; a `tcp` endpoint by
           name without the own world; what the proxy's door would refuse
  warning  a grant that holds protected paths (~/.ssh, ~/.aws, ...) or an --agent-dir
           folder (lnk cuts them out of the grant, and the warning names them); a grant
           of the shared /tmp or /dev/shm, which holds other users' and programs' files

Options:
  --agent-dir DIR   an agent's records folder, as given to `lnk sandbox run` (repeated)
  --json            one JSON object on standard output, diagnostics inside

Exit codes: 0 valid (warnings allowed), 1 invalid, 2 usage error.
";

const FLAGS_USAGE: &str = "\
Usage:
  lnk sandbox flags [FILE] [--tool run|file] [--json]

Prints the flags of `lnk sandbox run` that FILE makes for the tool (default run), one flag
and its value per line, with ~ expanded, every default explicit, and the protected paths
that are holes in a grant listed as --deny. Without FILE, Link's embedded default.

Options:
  --tool run|file   the tool (default run)
  --json            one JSON object; its \"args\" are the flags as separate arguments

Exit codes: 0 ok, 1 invalid sandbox file, 2 usage error, 125 HOME is not set.
";

const COMMANDS_USAGE: &str = "\
Usage:
  lnk sandbox commands [FILE] [--json]

The programs FILE offers: each listed name this computer has on the system PATH, with the
path found and the file it really is; then the names it lacks. Without FILE, Link's
embedded default.

Options:
  --json            one JSON object on standard output

Exit codes: 0 ok, 1 invalid sandbox file, 2 usage error.
";

const STATUS_USAGE: &str = "\
Usage:
  lnk sandbox status [--json]
  lnk sandbox status --apparmor-profile

The Landlock ABI, seccomp, user namespaces, pidfd and openat2 on this kernel, the mode a
call runs in, and which guarantees follow.

Options:
  --json              one JSON object on standard output
  --apparmor-profile  print lnk's AppArmor profile (policy/apparmor/lnk), which gives lnk user
                      namespaces where AppArmor restricts them (Ubuntu 24.04); the mode line
                      says when that is so, and how to install it

Exit codes: 0 ok, 2 usage error.
";

/// The verbs of `lnk sandbox`, for suggesting a near one.
const VERBS: &[&str] = &["run", "check", "flags", "commands", "status", "help"];

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
        None => Err(UsageError("a sandbox command is needed: run, check, flags, commands or status".into())),
        Some(other) => Err(super::unknown("sandbox command", other, VERBS)),
    }
}

/// Reads a verb's words; with `--help` among them, prints `usage` and returns `None`.
fn parse(
    args: &[String],
    values: &[&'static str],
    switches: &[&'static str],
    usage: &str,
) -> Result<Option<args::ParsedArgs>, UsageError> {
    let parsed = args::parse(args, values, switches)?;
    if parsed.help {
        out!("{usage}");
        return Ok(None);
    }
    Ok(Some(parsed))
}

/// Loads FILE, or the embedded default when none is given. When the file cannot be used, says
/// why (see [`super::invalid_file`]) and returns `Err(exit code)`.
fn load(file: Option<&str>, json: bool) -> Result<SandboxFile, u8> {
    let Some(file) = file else {
        return Ok(SandboxFile::embedded_default());
    };
    sandbox_file::load(Path::new(file)).map_err(|e| super::invalid_file(file, &e, json, exit::INVALID))
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
    let Some(parsed) = parse(args, &["--agent-dir"], &["--json"], CHECK_USAGE)? else { return Ok(0) };
    let json = parsed.switch("--json");
    let file = one_file(&parsed)?.ok_or_else(|| UsageError("`check` needs a FILE".into()))?;
    let mut agent_dirs = Vec::new();
    for dir in parsed.values("--agent-dir") {
        if !dir.starts_with('/') {
            return Err(UsageError(format!("`--agent-dir {}`: give an absolute path", dir.escape_debug())));
        }
        agent_dirs.push(std::fs::canonicalize(dir).unwrap_or_else(|_| dir.into()));
    }
    let source = match sandbox_file::read_source(Path::new(file)) {
        Ok(source) => source,
        Err(e) => return Ok(super::invalid_file(file, &e, json, exit::INVALID)),
    };
    if let Err(diagnostics) = SandboxFile::parse(&source) {
        let e = sandbox_file::LoadError::Invalid { source, diagnostics };
        return Ok(super::invalid_file(file, &e, json, exit::INVALID));
    }
    let home = paths::home_dir().ok();
    // The mode this kernel gives calls, as `run` would find it: what it refuses depends on it.
    let mode = KernelSupport::probe_for_launch().world.0;
    let own_world = mode.is_own_world();
    let found = crate::grant_check::on_this_computer(
        &source,
        Path::new(file),
        home.as_deref(),
        &agent_dirs,
        own_world,
    );
    if found.iter().any(|d| !d.warning) {
        let e = sandbox_file::LoadError::Invalid { source, diagnostics: found };
        return Ok(super::invalid_file(file, &e, json, exit::INVALID));
    }
    if json {
        let warnings = json::array(found.iter().map(|d| d.to_json(file, &source)));
        outln!(
            "{}",
            json::Object::output()
                .str("outcome", "ok")
                .str("file", file)
                .str("mode", mode.name())
                .raw("diagnostics", &warnings)
                .finish()
        );
    } else {
        if !found.is_empty() {
            eprint!("{}", crate::diagnostic::render_all(&found, file, &source));
        }
        outln!("{file}: ok");
    }
    Ok(0)
}

fn flags(args: &[String]) -> Result<u8, UsageError> {
    let Some(parsed) = parse(args, &["--tool"], &["--json"], FLAGS_USAGE)? else { return Ok(0) };
    let json = parsed.switch("--json");
    let tool = match parsed.value("--tool") {
        None => Tool::Run,
        Some(name) => Tool::from_name(name).ok_or_else(|| {
            UsageError(format!("`--tool {}`: the tool is `run` or `file`", name.escape_debug()))
        })?,
    };
    let name = one_file(&parsed)?;
    let file = match load(name, json) {
        Ok(f) => f,
        Err(code) => return Ok(code),
    };
    let home = match paths::home_dir() {
        Ok(h) => h,
        Err(e) => return Ok(super::helper_failed(&e, json)),
    };
    let flags = SandboxFlags::from_file_as_shown(&file, tool, &home);
    if json {
        outln!(
            "{}",
            json::Object::output()
                .str("outcome", "ok")
                .str("file", name.unwrap_or(EMBEDDED_DEFAULT_NAME))
                .str("tool", tool.name())
                .raw("args", &json::array(flags.to_args().iter().map(|a| json::string(a))))
                .finish()
        );
        return Ok(0);
    }
    for (flag, value) in flags.to_pairs() {
        match value {
            Some(value) => outln!("{flag} {value}"),
            None => outln!("{flag}"),
        }
    }
    Ok(0)
}

fn commands(args: &[String]) -> Result<u8, UsageError> {
    let Some(parsed) = parse(args, &[], &["--json"], COMMANDS_USAGE)? else { return Ok(0) };
    let json = parsed.switch("--json");
    let name = one_file(&parsed)?;
    let file = match load(name, json) {
        Ok(f) => f,
        Err(code) => return Ok(code),
    };
    let names = match &file.commands {
        Commands::Any => {
            if json {
                outln!(
                    "{}",
                    json::Object::output()
                        .str("outcome", "ok")
                        .bool("any", true)
                        .raw("offered", "[]")
                        .raw("missing", "[]")
                        .finish()
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
            json::Object::output()
                .str("outcome", "ok")
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
    let Some(parsed) = parse(args, &[], &["--json", "--apparmor-profile"], STATUS_USAGE)? else {
        return Ok(0);
    };
    if let Some(extra) = parsed.positional.first() {
        return Err(UsageError(format!("unexpected argument `{}`", extra.escape_debug())));
    }
    if parsed.switch("--apparmor-profile") {
        out!("{}", crate::user_namespaces::APPARMOR_PROFILE);
        return Ok(0);
    }
    let k = KernelSupport::probe();
    let lacks = {
        use crate::sandbox::appetite::{WorldMemfds, world_memfds};
        let sealed = k.world.0.is_own_world() && world_memfds() == WorldMemfds::SealedOnly;
        k.world.0.lacks(sealed, crate::notify::handles::copies_available())
    };
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
        let mut o = json::Object::output().str("outcome", "ok");
        o = match &k.landlock {
            Ok(abi) => o.num("landlock_abi", *abi).null("landlock_error"),
            Err(why) => o.null("landlock_abi").str("landlock_error", why),
        };
        let o = o
            .bool("seccomp", k.seccomp.is_ok())
            .raw("seccomp_error", &opt(&k.seccomp))
            .bool("seccomp_user_notification", k.seccomp_notify.is_ok())
            .raw("seccomp_user_notification_error", &opt(&k.seccomp_notify))
            .bool("user_namespaces", k.user_namespaces.is_ok())
            .raw("user_namespaces_error", &opt(&k.user_namespaces))
            .bool("pidfd", k.pidfd.is_ok())
            .raw("pidfd_error", &opt(&k.pidfd))
            .bool("openat2", k.openat2.is_ok())
            .raw("openat2_error", &opt(&k.openat2))
            .bool(
                "apparmor_restricts_user_namespaces",
                crate::user_namespaces::apparmor_restricts_user_namespaces(),
            )
            .str("mode", k.world.0.name())
            .raw("mode_reason", &k.world.1.as_deref().map_or("null".to_owned(), json::string))
            .raw("lacks", &json::array(lacks.iter().map(|l| json::string(l))))
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
        Some(why) => outln!("mode:                      {} ({why})", k.world.0.name()),
    }
    if !lacks.is_empty() {
        outln!("  so a call lacks:");
        for lack in &lacks {
            outln!("    {lack}");
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
