//! The flags of `lnk sandbox run`: the whole of what one sandbox grants, spelled out.
//!
//! A sandbox file is turned into these flags (`lnk sandbox flags FILE --tool run`), and `lnk
//! sandbox run` is driven by them, so a reviewer can read exactly what a file grants a tool with
//! every `~` expanded and every default made explicit. The two directions are one code path:
//! [`SandboxFlags::to_args`] and [`SandboxFlags::from_args`] round-trip (a unit test checks it).
//!
//! The flags are a complete sandbox. A flag left out grants nothing: no `--command` means no
//! program may run, no `--read` means no folder beyond what a program needs to start.
//!
//! | flag | meaning |
//! |---|---|
//! | `--tool run\|file` | which tool the sandbox serves; always first |
//! | `--command NAME` | a program that may run (repeated) |
//! | `--any-command` | any program on the system PATH (`commands = ["*"]`) |
//! | `--read DIR` | a folder readable, with all beneath (repeated) |
//! | `--write DIR` | a folder writable and readable, with all beneath (repeated) |
//! | `--deny PATH` | a path no grant reaches, a hole in the grant it lies in (repeated); the built-in protected set ([`crate::protected`]) applies whether or not it is listed, and `lnk sandbox flags` lists it where it makes a hole |
//! | `--timeout SECONDS` | `[tool.run] timeout`; the call stops a tenth before it |
//! | `--output CHARS` | `[tool.run] output`, per stream |
//! | `--processes N` | `[tool.run] processes`: processes and threads at once |
//! | `--inotify-instances N`, `--inotify-watches N` | `[tool.run] inotify_instances`, `inotify_watches` |
//! | `--internet-host PATTERN` | a host the call's proxy lets through (repeated) |
//! | `--internet-tcp HOST:PORT` | a plain TCP endpoint (repeated) |
//! | `--per-minute N` | new connections a minute through the proxy |
//!
//! Trusted with: the whole of what a sandbox grants as it passes between the sandbox file, the
//! command line and a background record (a flag lost or misread on the way would grant more, or
//! less, than the file says). What it trusts: a [`SandboxFile`] as `sandbox_file` validated it and
//! the home it is given for `~`; nothing of the words [`SandboxFlags::from_args`] reads, each
//! validated as strictly as in a file.

use std::path::{Path, PathBuf};

use crate::paths::GrantPath;
use crate::sandbox_file::{
    Appetite, Bounds, Commands, HostPattern, INOTIFY_INSTANCES, INOTIFY_WATCHES, OUTPUT_CHARS, PER_MINUTE,
    PROCESSES, SandboxFile, TIMEOUT_SECS, TcpEndpoint, Tool, values,
};

/// What one sandbox grants one tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxFlags {
    pub tool: Tool,
    /// For the file tool always `Listed([])`: it runs no program of the file's.
    pub commands: Commands,
    pub read: Vec<PathBuf>,
    pub write: Vec<PathBuf>,
    /// Holes in the grants: `[files] deny`, and the protected set where it lies in a grant.
    pub deny: Vec<PathBuf>,
    /// Present only when the file's `[internet] tools` lists this tool.
    pub internet: Option<InternetFlags>,
    pub timeout_secs: u32,
    pub output_chars: u32,
    /// The call's share of the user's processes and kernel counters.
    pub appetite: Appetite,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InternetFlags {
    pub hosts: Vec<HostPattern>,
    pub tcp: Vec<TcpEndpoint>,
    pub per_minute: u32,
}

/// A problem with the flags given to `lnk sandbox run`: a usage error (exit 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlagError(pub String);

impl std::fmt::Display for FlagError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The flags that may be given more than once, each adding a value; any other flag given twice
/// is a usage error (which of two limits was meant is not lnk's to guess).
pub const REPEATABLE: &[&str] = &[
    "--read",
    "--write",
    "--deny",
    "--command",
    "--internet-host",
    "--internet-tcp",
    "--agent-dir",
    "--env",
    "--resolve",
];

/// Why `flag` may not be given again, if it was given before (`seen`, which this keeps).
pub fn given_twice(flag: &str, seen: &mut Vec<String>) -> Option<String> {
    if REPEATABLE.contains(&flag) {
        return None;
    }
    if seen.iter().any(|f| f == flag) {
        return Some(format!("`{}` is given twice: give it once", flag.escape_debug()));
    }
    seen.push(flag.to_owned());
    None
}

/// The flag names, for [`is_sandbox_flag`] and for suggesting a near one.
pub const FLAG_NAMES: &[&str] = &[
    "--tool",
    "--command",
    "--any-command",
    "--read",
    "--write",
    "--deny",
    "--timeout",
    "--output",
    "--processes",
    "--inotify-instances",
    "--inotify-watches",
    "--internet-host",
    "--internet-tcp",
    "--per-minute",
];

/// Each flag as `lnk sandbox run --help` shows it, with one line on what it does; the same order
/// as [`FLAG_NAMES`] (a unit test checks the two agree).
pub const FLAG_HELP: &[(&str, &str)] = &[
    ("--tool run|file", "the tool the sandbox serves (default run)"),
    ("--command NAME", "a program that may run, found on the system PATH (repeated)"),
    ("--any-command", "any program on the system PATH"),
    ("--read DIR", "a folder readable, with all beneath (repeated)"),
    ("--write DIR", "a folder writable and readable, with all beneath (repeated)"),
    ("--deny PATH", "a path no grant reaches (repeated); the protected set always is"),
    ("--timeout SECONDS", "the call stops a tenth before this (default 120)"),
    ("--output CHARS", "characters kept per stream, from its start and end (default 30000)"),
    ("--processes N", "processes and threads the call has at once (default 1024)"),
    ("--inotify-instances N", "inotify instances the call holds at once (default 32)"),
    ("--inotify-watches N", "inotify watches the call holds at once (default 16384)"),
    ("--internet-host PATTERN", "a host the call's proxy lets through (repeated)"),
    ("--internet-tcp HOST:PORT", "a plain TCP endpoint the proxy lets through (repeated)"),
    ("--per-minute N", "new connections a minute through the proxy (default 60)"),
];

/// Whether `arg` is one of the sandbox flags (so the caller knows flags, not a file, were given).
pub fn is_sandbox_flag(arg: &str) -> bool {
    FLAG_NAMES.contains(&arg)
}

impl SandboxFlags {
    /// The flags a sandbox file makes for `tool`, with `~` expanded to `home`.
    pub fn from_file(file: &SandboxFile, tool: Tool, home: &Path) -> SandboxFlags {
        let expand = |grants: &[GrantPath]| grants.iter().map(|g| g.expand(home)).collect::<Vec<_>>();
        let internet = file.internet.as_ref().filter(|i| i.serves(tool)).map(|i| InternetFlags {
            hosts: i.hosts.clone(),
            tcp: i.tcp.clone(),
            per_minute: i.per_minute,
        });
        let read = expand(&file.read);
        let write = expand(&file.write);
        // The holes: the file's own `deny`, the protected set where it lies in a grant, and as
        // root the system's secrets.
        let grants: Vec<&PathBuf> = read.iter().chain(&write).collect();
        let mut deny = expand(&file.deny);
        let mut holes = crate::protected::builtin_holes(home, &grants);
        if rustix::process::geteuid().is_root() {
            holes.extend(crate::protected::system_holes(&grants));
        }
        // All of them, present or not: a launch cuts the whole set whatever the flags say, by
        // name, so asking the disk which are there (a `stat` each, about forty) would only cost
        // every launch; `lnk sandbox flags` shows those present ([`Self::from_file_as_shown`]).
        for hole in holes {
            if !deny.contains(&hole) {
                deny.push(hole);
            }
        }
        SandboxFlags {
            tool,
            commands: match tool {
                Tool::Run => file.commands.clone(),
                Tool::File => Commands::Listed(Vec::new()),
            },
            read,
            write,
            deny,
            internet,
            timeout_secs: file.timeout_secs,
            output_chars: file.output_chars,
            appetite: file.appetite,
        }
    }

    /// [`Self::from_file`] as `lnk sandbox flags` shows it: the protected set's holes only where
    /// this computer has them, so the list reads as what is cut; the file's own `deny` whole.
    pub fn from_file_as_shown(file: &SandboxFile, tool: Tool, home: &Path) -> SandboxFlags {
        let mut flags = SandboxFlags::from_file(file, tool, home);
        let own: Vec<PathBuf> = file.deny.iter().map(|g| g.expand(home)).collect();
        flags.deny.retain(|hole| own.contains(hole) || std::fs::symlink_metadata(hole).is_ok());
        flags
    }

    /// The flags, each with its value if it takes one, in the order `lnk sandbox flags` prints
    /// them: one per line, so a reviewer reads a grant per line.
    pub fn to_pairs(&self) -> Vec<(&'static str, Option<String>)> {
        let mut pairs = vec![("--tool", Some(self.tool.name().to_owned()))];
        match &self.commands {
            Commands::Any => pairs.push(("--any-command", None)),
            Commands::Listed(names) => pairs.extend(names.iter().map(|n| ("--command", Some(n.clone())))),
        }
        pairs.extend(self.read.iter().map(|p| ("--read", Some(p.display().to_string()))));
        pairs.extend(self.write.iter().map(|p| ("--write", Some(p.display().to_string()))));
        pairs.extend(self.deny.iter().map(|p| ("--deny", Some(p.display().to_string()))));
        if self.tool == Tool::Run {
            pairs.push(("--timeout", Some(self.timeout_secs.to_string())));
            pairs.push(("--output", Some(self.output_chars.to_string())));
            pairs.push(("--processes", Some(self.appetite.processes.to_string())));
            pairs.push(("--inotify-instances", Some(self.appetite.inotify_instances.to_string())));
            pairs.push(("--inotify-watches", Some(self.appetite.inotify_watches.to_string())));
        }
        if let Some(net) = &self.internet {
            pairs.extend(net.hosts.iter().map(|h| ("--internet-host", Some(h.to_string()))));
            pairs.extend(net.tcp.iter().map(|t| ("--internet-tcp", Some(t.to_string()))));
            pairs.push(("--per-minute", Some(net.per_minute.to_string())));
        }
        pairs
    }

    /// The flags as `lnk sandbox run` takes them, as separate arguments.
    pub fn to_args(&self) -> Vec<String> {
        self.to_pairs()
            .into_iter()
            .flat_map(|(flag, value)| std::iter::once(flag.to_owned()).chain(value))
            .collect()
    }

    /// Parses flags as [`SandboxFlags::to_args`] writes them. `--tool` may be omitted (it is
    /// `run`); every value is validated as strictly as in a sandbox file.
    pub fn from_args(args: &[String]) -> Result<SandboxFlags, FlagError> {
        let mut flags = SandboxFlags {
            tool: Tool::Run,
            commands: Commands::Listed(Vec::new()),
            read: Vec::new(),
            write: Vec::new(),
            deny: Vec::new(),
            internet: None,
            timeout_secs: TIMEOUT_SECS.default,
            output_chars: OUTPUT_CHARS.default,
            appetite: Appetite::DEFAULT,
        };
        let mut any_command = false;
        let mut per_minute = None;
        let mut hosts = Vec::new();
        let mut tcp = Vec::new();
        let mut it = args.iter();
        let mut seen = Vec::new();
        while let Some(flag) = it.next() {
            if let Some(why) = given_twice(flag, &mut seen) {
                return Err(FlagError(why));
            }
            if flag == "--any-command" {
                any_command = true;
                continue;
            }
            if !is_sandbox_flag(flag) {
                return Err(FlagError(format!("unknown sandbox flag `{}`", flag.escape_debug())));
            }
            let value = it.next().ok_or_else(|| FlagError(format!("`{flag}` needs a value")))?;
            let bad = |why: String| FlagError(format!("`{flag} {}`: {why}", value.escape_debug()));
            match flag.as_str() {
                "--tool" => {
                    flags.tool =
                        Tool::from_name(value).ok_or_else(|| bad("the tool is `run` or `file`".into()))?
                }
                "--command" => {
                    values::program_name(value).map_err(bad)?;
                    if let Commands::Listed(names) = &mut flags.commands {
                        names.push(value.clone());
                    }
                }
                "--read" => flags.read.push(absolute_dir(value).map_err(bad)?),
                "--write" => flags.write.push(absolute_dir(value).map_err(bad)?),
                "--deny" => flags.deny.push(absolute_dir(value).map_err(bad)?),
                "--timeout" => flags.timeout_secs = bounded(value, TIMEOUT_SECS).map_err(bad)?,
                "--output" => flags.output_chars = bounded(value, OUTPUT_CHARS).map_err(bad)?,
                "--processes" => flags.appetite.processes = bounded(value, PROCESSES).map_err(bad)?,
                "--inotify-instances" => {
                    flags.appetite.inotify_instances = bounded(value, INOTIFY_INSTANCES).map_err(bad)?
                }
                "--inotify-watches" => {
                    flags.appetite.inotify_watches = bounded(value, INOTIFY_WATCHES).map_err(bad)?
                }
                "--internet-host" => hosts.push(HostPattern::parse(value).map_err(bad)?),
                "--internet-tcp" => tcp.push(TcpEndpoint::parse(value).map_err(bad)?),
                "--per-minute" => per_minute = Some(bounded(value, PER_MINUTE).map_err(bad)?),
                _ => unreachable!("every name in FLAG_NAMES is matched above"),
            }
        }
        if any_command {
            if flags.commands != Commands::Listed(Vec::new()) {
                return Err(FlagError("`--any-command` and `--command` exclude each other".into()));
            }
            flags.commands = Commands::Any;
        }
        if !hosts.is_empty() || !tcp.is_empty() || per_minute.is_some() {
            flags.internet =
                Some(InternetFlags { hosts, tcp, per_minute: per_minute.unwrap_or(PER_MINUTE.default) });
        }
        Ok(flags)
    }
}

/// A folder given on the command line: absolute, normalised, no `..` (as a grant in a file, but
/// `~` is not expanded here: the flags are already expanded).
fn absolute_dir(value: &str) -> Result<PathBuf, String> {
    if !value.starts_with('/') {
        return Err("give an absolute path".into());
    }
    let grant = GrantPath::parse(value).map_err(|e| e.to_string())?;
    Ok(grant.expand(Path::new("/")))
}

fn bounded(value: &str, bounds: Bounds) -> Result<u32, String> {
    let range = || format!("give a whole number from {} to {}", bounds.min, bounds.max);
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(range());
    }
    value.parse::<u32>().ok().filter(|n| (bounds.min..=bounds.max).contains(n)).ok_or_else(range)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox_file::EMBEDDED_DEFAULT;

    const EVERY_KEY: &str = include_str!("../policy/every-key.toml");

    fn round_trip(flags: &SandboxFlags) {
        let args = flags.to_args();
        assert_eq!(&SandboxFlags::from_args(&args).unwrap(), flags, "{args:?}");
    }

    #[test]
    fn flags_round_trip_for_every_policy_and_tool() {
        let home = Path::new("/home/ann");
        for text in [EMBEDDED_DEFAULT, EVERY_KEY, include_str!("../policy/locked-down.toml")] {
            let file = SandboxFile::parse(text).unwrap();
            for tool in [Tool::Run, Tool::File] {
                let mut flags = SandboxFlags::from_file(&file, tool, home);
                if tool == Tool::File {
                    // The file tool's flags carry no timeout or output: they take the defaults.
                    flags.timeout_secs = TIMEOUT_SECS.default;
                    flags.output_chars = OUTPUT_CHARS.default;
                    flags.appetite = Appetite::DEFAULT;
                }
                round_trip(&flags);
            }
        }
    }

    #[test]
    fn the_file_tool_gets_no_programs_and_internet_only_when_listed() {
        let home = Path::new("/home/ann");
        let file = SandboxFile::parse(EVERY_KEY).unwrap();
        let flags = SandboxFlags::from_file(&file, Tool::File, home);
        assert_eq!(flags.commands, Commands::Listed(Vec::new()));
        assert_eq!(flags.internet.is_some(), file.internet.as_ref().unwrap().serves(Tool::File));
        let mut only_run = file.clone();
        only_run.internet.as_mut().unwrap().tools = vec!["run".into()];
        assert!(SandboxFlags::from_file(&only_run, Tool::File, home).internet.is_none());
        assert!(SandboxFlags::from_file(&only_run, Tool::Run, home).internet.is_some());
    }

    #[test]
    fn every_flag_has_one_help_line_in_order() {
        let names: Vec<&str> = FLAG_HELP.iter().map(|(f, _)| f.split(' ').next().unwrap()).collect();
        assert_eq!(names, FLAG_NAMES);
        assert!(FLAG_HELP.iter().all(|(_, what)| !what.is_empty() && !what.contains('\n')));
    }

    #[test]
    fn bad_flags_are_usage_errors() {
        let args = |s: &[&str]| s.iter().map(|a| a.to_string()).collect::<Vec<_>>();
        for bad in [
            &["--read"][..],
            &["--read", "relative"],
            &["--read", "/a/../b"],
            &["--command", "/bin/sh"],
            &["--timeout", "0"],
            &["--timeout", "-1"],
            &["--output", "1e3"],
            &["--tool", "shell"],
            &["--bogus", "x"],
            &["--any-command", "--command", "sh"],
            &["--internet-tcp", "host"],
        ] {
            assert!(SandboxFlags::from_args(&args(bad)).is_err(), "{bad:?} accepted");
        }
    }
}
