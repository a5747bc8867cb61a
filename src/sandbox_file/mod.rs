//! The sandbox file: what an agent may run, read, write and reach.
//!
//! The file is the person's (the threat model trusts it), but a person makes mistakes, so it is
//! read strictly: an unknown key, a value of the wrong type, a number out of range or a path that
//! is not absolute is an error with its line and column, never a guess. Every problem in a file is
//! reported at once. Parsing never panics and never hangs on any input: the file is opened
//! without blocking (a FIFO cannot stall it), read up to [`MAX_FILE_BYTES`], and the TOML parser
//! is bounded in nesting. The parser is a fuzz target (`fuzz/fuzz_targets/sandbox_file.rs`).
//!
//! Defaults are chosen to fail closed: an absent `commands` runs nothing, absent `[files]` grants
//! nothing beyond what a program needs to start, absent `[internet]` is no network at all.
//!
//! What this module trusts: nothing in the file. What it guarantees: a [`SandboxFile`] holds only
//! validated values (plain program names, absolute or `~`-based paths without `..`, host names,
//! endpoints with ports in range, numbers within the documented bounds).

mod schema;
pub mod values;

use std::io::Read as _;
use std::path::Path;

use crate::diagnostic::Diagnostic;
use crate::paths::GrantPath;
pub use values::{HostPattern, TcpEndpoint, TcpHost};

/// Link's default sandbox file, embedded so every command works with no file at all.
pub const EMBEDDED_DEFAULT: &str = include_str!("../../policy/default.toml");
/// The embedded default's `commands`, in its order (see [`SandboxFile::embedded_default`]).
#[rustfmt::skip]
const DEFAULT_COMMANDS: &[&str] = &[
    "sh", "bash", "python3", "node", "git", "curl", "jq", "true", "false", "echo", "printf", "test",
    "env", "pwd", "date", "sleep", "ls", "cat", "head", "tail", "wc", "sort", "uniq", "cut", "tr",
    "tee", "diff", "cmp", "grep", "sed", "awk", "find", "xargs", "stat", "file", "basename",
    "dirname", "realpath", "mkdir", "touch", "cp", "mv", "rm", "rmdir", "ln", "chmod", "tar",
    "gzip", "gunzip", "zcat", "unzip", "sha256sum", "md5sum", "base64",
];
/// The name the embedded default goes by in diagnostics and reports.
pub const EMBEDDED_DEFAULT_NAME: &str = "<embedded policy/default.toml>";

/// A sandbox file larger than this is refused: real ones are a few hundred bytes, and reading an
/// unbounded file (or `/dev/zero` behind a symlink) must not exhaust memory.
pub const MAX_FILE_BYTES: usize = 1 << 20;

/// A bounded integer key: its default and the range a file may set.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub default: u32,
    pub min: u32,
    pub max: u32,
}

/// `[tool.run] timeout`, in seconds: two minutes by default, at most a day.
pub const TIMEOUT_SECS: Bounds = Bounds { default: 120, min: 1, max: 86_400 };
/// `[tool.run] output`, in characters per stream: half from the start, half from the end.
pub const OUTPUT_CHARS: Bounds = Bounds { default: 30_000, min: 1, max: 1_000_000 };
/// `[internet] per_minute`: new connections a minute through the call's proxy.
pub const PER_MINUTE: Bounds = Bounds { default: 60, min: 1, max: 10_000 };
/// `[tool.run] processes`: the most processes and threads a call has at once (see
/// [`Appetite`]).
pub const PROCESSES: Bounds = Bounds { default: 1024, min: 16, max: 4_000_000 };
/// `[tool.run] inotify_instances`: the most inotify instances a call holds at once.
pub const INOTIFY_INSTANCES: Bounds = Bounds { default: 32, min: 1, max: 65_536 };
/// `[tool.run] inotify_watches`: the most inotify watches a call holds at once.
pub const INOTIFY_WATCHES: Bounds = Bounds { default: 16_384, min: 1, max: 4_000_000 };

/// A call's share of what the kernel counts per user, shared with every other process of the
/// person's: its processes and threads (a fork loop would otherwise take the machine's pids),
/// and its inotify instances and watches (all 128 of a user's instances, taken by one call, left
/// every other program of the person's without file watching). See
/// [`crate::sandbox`] for how each mode holds a call to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Appetite {
    pub processes: u32,
    pub inotify_instances: u32,
    pub inotify_watches: u32,
}

impl Appetite {
    pub const DEFAULT: Appetite = Appetite {
        processes: PROCESSES.default,
        inotify_instances: INOTIFY_INSTANCES.default,
        inotify_watches: INOTIFY_WATCHES.default,
    };
}

/// `[tool.scheduler] hops`: how far down a chain a background start may be.
pub const HOPS: Bounds = Bounds { default: 8, min: 1, max: 64 };

/// Which programs `run` may start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Commands {
    /// `["*"]`: any program on the system PATH.
    Any,
    /// These names only; empty turns `run` off.
    Listed(Vec<String>),
}

/// The tools lnk sandboxes. A sandbox file may name others (`[tool.scheduler]`, or tools of the
/// harness in `[internet] tools`); lnk accepts and ignores those.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    Run,
    File,
}

impl Tool {
    pub fn name(self) -> &'static str {
        match self {
            Tool::Run => "run",
            Tool::File => "file",
        }
    }

    pub fn from_name(name: &str) -> Option<Tool> {
        match name {
            "run" => Some(Tool::Run),
            "file" => Some(Tool::File),
            _ => None,
        }
    }
}

/// `[internet]`: present means the listed tools may reach these hosts through the call's proxy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Internet {
    pub hosts: Vec<HostPattern>,
    pub tcp: Vec<TcpEndpoint>,
    pub per_minute: u32,
    /// Tool names; `["run"]` when the key is absent.
    pub tools: Vec<String>,
}

impl Internet {
    pub fn serves(&self, tool: Tool) -> bool {
        self.tools.iter().any(|t| t == tool.name())
    }
}

/// A parsed, validated sandbox file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxFile {
    pub commands: Commands,
    /// Folders readable, with all beneath.
    pub read: Vec<GrantPath>,
    /// Folders writable (and readable), with all beneath.
    pub write: Vec<GrantPath>,
    /// Paths no grant reaches, besides the built-in protected set (`[files] deny`).
    pub deny: Vec<GrantPath>,
    pub internet: Option<Internet>,
    pub timeout_secs: u32,
    pub output_chars: u32,
    /// `[tool.run] processes`, `inotify_instances` and `inotify_watches`.
    pub appetite: Appetite,
    pub hops: u32,
}

impl SandboxFile {
    /// Parses and validates a sandbox file's text. On failure, every problem found.
    pub fn parse(source: &str) -> Result<SandboxFile, Vec<Diagnostic>> {
        if source.trim().is_empty() {
            return Err(vec![Diagnostic::new("the sandbox file is empty", None).with_help(
                "a sandbox file lists at least `commands`; see policy/default.toml for a start",
            )]);
        }
        schema::parse(source)
    }

    /// Link's embedded default: `policy/default.toml` as parsed, built directly rather than
    /// parsed on every launch (parsing it was about a tenth of a millisecond, 2% of a launch).
    /// A unit test checks it is exactly what parsing the embedded text gives, so the two cannot
    /// drift apart.
    pub fn embedded_default() -> SandboxFile {
        let home = |rest: &str| GrantPath::parse(rest).ok();
        // `~` and `~/Link/Files` are valid grant paths (see the unit test); were either ever not,
        // refusing everything is the closed failure.
        let (Some(read), Some(write)) = (home("~"), home("~/Link/Files")) else {
            return SandboxFile::nothing();
        };
        SandboxFile {
            commands: Commands::Listed(DEFAULT_COMMANDS.iter().map(|c| (*c).to_owned()).collect()),
            read: vec![read],
            write: vec![write],
            deny: Vec::new(),
            internet: None,
            timeout_secs: 120,
            output_chars: 30_000,
            appetite: Appetite::DEFAULT,
            hops: 8,
        }
    }

    /// The sandbox that grants nothing: no programs, no files, no network.
    pub fn nothing() -> SandboxFile {
        SandboxFile {
            commands: Commands::Listed(Vec::new()),
            read: Vec::new(),
            write: Vec::new(),
            deny: Vec::new(),
            internet: None,
            timeout_secs: TIMEOUT_SECS.default,
            output_chars: OUTPUT_CHARS.default,
            appetite: Appetite::DEFAULT,
            hops: HOPS.default,
        }
    }
}

/// Why a sandbox file could not be used.
#[derive(Debug)]
pub enum LoadError {
    /// The file could not be opened or read, or is not a regular file of sane size.
    Unreadable(String),
    /// The file was read; these are its problems. `source` is its text for rendering (lossy
    /// when the file is not UTF-8).
    Invalid { source: String, diagnostics: Vec<Diagnostic> },
}

impl LoadError {
    /// Every problem as a JSON array of [`Diagnostic::to_json`] objects; an unreadable file is one
    /// problem with no line.
    pub fn to_json(&self, file_name: &str) -> String {
        match self {
            LoadError::Unreadable(why) => {
                crate::json::array([Diagnostic::new(why.clone(), None).to_json(file_name, "")])
            }
            LoadError::Invalid { source, diagnostics } => {
                crate::json::array(diagnostics.iter().map(|d| d.to_json(file_name, source)))
            }
        }
    }

    /// One line for a JSON output's `error`: `FILE: 2 errors`, or why it could not be read.
    pub fn summary(&self, file_name: &str) -> String {
        match self {
            LoadError::Unreadable(why) => format!("{file_name}: {why}"),
            LoadError::Invalid { diagnostics, .. } => {
                let n = diagnostics.iter().filter(|d| !d.warning).count();
                format!("{file_name}: {n} error{}", if n == 1 { "" } else { "s" })
            }
        }
    }

    /// A person-readable report naming `file_name`.
    pub fn render(&self, file_name: &str) -> String {
        match self {
            LoadError::Unreadable(why) => format!("{file_name}: error: {why}\n"),
            LoadError::Invalid { source, diagnostics } => {
                crate::diagnostic::render_all(diagnostics, file_name, source)
            }
        }
    }
}

/// One path string of `[files] read`, `write` or `deny` as written, with where it is, so a
/// finding about the folder it names can point at it (see [`crate::cli`]'s `check`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantString {
    /// `read`, `write` or `deny` (or `tcp`, from [`tcp_strings`]).
    pub key: &'static str,
    pub text: String,
    pub span: Option<std::ops::Range<usize>>,
}

/// The path strings of `[files]` in `source`, in file order. Meant for a file that
/// [`SandboxFile::parse`] accepted; for any other it returns what it can find.
pub fn grant_strings(source: &str) -> Vec<GrantString> {
    schema::grant_strings(source)
}

/// The strings of `[internet] tcp`, in file order, each with its span (key `tcp`).
pub fn tcp_strings(source: &str) -> Vec<GrantString> {
    schema::tcp_strings(source)
}

/// Reads and parses the sandbox file at `path`.
///
/// Opened with `O_NONBLOCK` and `O_NOCTTY`, so a FIFO or a terminal planted in its place returns
/// at once; then it must be a regular file no larger than [`MAX_FILE_BYTES`]. Symlinks are
/// followed: the file is the person's, and a dotfile manager's link is normal.
pub fn load(path: &Path) -> Result<SandboxFile, LoadError> {
    let source = read_source(path)?;
    SandboxFile::parse(&source).map_err(|diagnostics| LoadError::Invalid { source, diagnostics })
}

/// The bytes of a sandbox file, checked to be UTF-8 text of bounded size.
pub fn read_source(path: &Path) -> Result<String, LoadError> {
    use rustix::fs::{Mode, OFlags};
    let unreadable = |what: &str, e: &dyn std::fmt::Display| LoadError::Unreadable(format!("{what}: {e}"));
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| unreadable("cannot open the sandbox file", &std::io::Error::from(e)))?;
    let stat = rustix::fs::fstat(&fd).map_err(|e| unreadable("cannot stat the sandbox file", &e))?;
    let kind = rustix::fs::FileType::from_raw_mode(stat.st_mode);
    if kind != rustix::fs::FileType::RegularFile {
        let what = match kind {
            rustix::fs::FileType::Directory => "a directory",
            rustix::fs::FileType::Fifo => "a FIFO",
            rustix::fs::FileType::Socket => "a socket",
            rustix::fs::FileType::CharacterDevice => "a character device",
            rustix::fs::FileType::BlockDevice => "a block device",
            _ => "not a regular file",
        };
        return Err(LoadError::Unreadable(format!(
            "the sandbox file is {what}; give the path of a TOML file"
        )));
    }
    let mut bytes = Vec::new();
    std::fs::File::from(fd)
        .take(MAX_FILE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| unreadable("cannot read the sandbox file", &e))?;
    if bytes.len() > MAX_FILE_BYTES {
        return Err(LoadError::Unreadable(format!(
            "the sandbox file is larger than {} KiB; a sandbox file is a few lines of TOML",
            MAX_FILE_BYTES / 1024
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        let valid_up_to = e.utf8_error().valid_up_to();
        let source = String::from_utf8_lossy(e.as_bytes()).into_owned();
        // Lossy decoding keeps every valid byte where it was, so the offset of the first bad byte
        // is the same in `source`.
        LoadError::Invalid {
            source,
            diagnostics: vec![
                Diagnostic::new("the sandbox file is not UTF-8 text", Some(valid_up_to..valid_up_to + 1))
                    .with_help("save the file as UTF-8"),
            ],
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_default_parses() {
        let parsed = SandboxFile::parse(EMBEDDED_DEFAULT);
        assert!(parsed.is_ok(), "{parsed:?}");
        assert_ne!(parsed.unwrap(), SandboxFile::nothing());
    }

    #[test]
    fn the_built_default_is_exactly_the_embedded_text() {
        // Editing policy/default.toml without `embedded_default` (or the reverse) fails here.
        let parsed = SandboxFile::parse(EMBEDDED_DEFAULT).unwrap();
        assert_eq!(SandboxFile::embedded_default(), parsed);
    }
}
