//! Refusals that explain themselves: what was refused, why, and the change to the sandbox file
//! that would allow it, or none.
//!
//! An agent reads `denials` and changes its request, so a wrong denial is worse than none. Each
//! one is right or absent:
//!
//! - **Known** (`inferred: false`): what lnk refused itself. A program named on lnk's command
//!   line that `commands` does not list; in the Landlock-only mode the held calls the helper
//!   refused (a metadata change outside the write grants, `setsid`, `setpgid`: see
//!   [`crate::notify`]); a connection the proxy or the held door refused ([`crate::proxy`]).
//! - **Inferred** (`inferred: true`): read from the program's own error lines ([`lines`]), then
//!   checked ([`explain`]): the target is a path the line names (never a word of the message),
//!   a relative one only where it is found from the folder the program started in; the access
//!   is the one the message names; the sandbox is blamed only where the grants explain the
//!   refusal and the file's own mode and owner would have let the program's user in (where they
//!   would not, the denial says so, with no fix); a fix grants the path named itself (or, for a
//!   file to be made, the nearest folder that exists), never `/`; a secret or a `deny` entry
//!   gets none. A line that does not fit is left out.
//!
//! The kernel does not tell an unprivileged process which layer refused (Landlock's audit
//! records need the audit log), so inference is what there is for the rest; an
//! `Operation not permitted` line is never read (the kernel says it for much that is not the
//! sandbox's doing, and what lnk refused it knows).
//!
//! Nothing here changes what is enforced.
//!
//! Trusted with: what the agent is told was refused and what to change (a wrong fix could have an
//! agent ask for, and a person grant, more than the program needed). What it trusts: what lnk
//! refused itself, as known; the program's output not at all: it is read as text the program chose,
//! with the work bounded, and each inference is checked ([`explain`]).

pub mod connects;
pub mod explain;
pub mod fix;
mod held;
pub mod lines;
pub mod look;

use std::path::{Path, PathBuf};

use crate::json;

pub use explain::Scene;
pub use fix::Fix;
pub use held::*;

/// The most denials a report lists: the first ones name the problem.
pub const MAX_DENIALS: usize = 20;
/// The most refusals the program's output may name that lnk looks at.
const MAX_LOOKED: usize = 100;

/// What was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Running a program.
    Run,
    Read,
    Write,
    /// Reading or writing: the message did not say which.
    ReadOrWrite,
    /// Changing a file's mode, owner, times or extended attributes.
    Metadata,
    /// Making a session or process group of its own (`setsid`, `setpgid`).
    Session,
    /// A network connection.
    Connect,
    /// A server's address (`bind`).
    Listen,
    /// Making what the call's appetite counts: a process or thread, an inotify instance or
    /// watch.
    Count,
}

impl Access {
    pub const ALL: [Access; 9] = [
        Access::Run,
        Access::Read,
        Access::Write,
        Access::ReadOrWrite,
        Access::Metadata,
        Access::Session,
        Access::Connect,
        Access::Listen,
        Access::Count,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Access::Run => "run",
            Access::Read => "read",
            Access::Write => "write",
            Access::ReadOrWrite => "read_or_write",
            Access::Metadata => "metadata",
            Access::Session => "session",
            Access::Connect => "connect",
            Access::Listen => "listen",
            Access::Count => "count",
        }
    }
}

/// Why it was refused, as a harness can act on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// The program is not among `commands`.
    NotListed,
    /// The program is on no folder of the system PATH: not installed (no fix: no sandbox file
    /// can run what is not there).
    NotInstalled,
    /// The path is outside the grants that would allow the access (`fix` names the grant).
    OutsideGrants,
    /// A secret, a `[files] deny` entry or the agent's records: no grant opens it.
    Protected,
    /// The file's own mode and owner refuse the program's user: not the sandbox.
    Permissions,
    /// Only the own world allows it: the host's `/tmp`, `/dev/shm`, a process's `/proc` folder,
    /// without one (no fix).
    NeedsOwnWorld,
    /// Something new directly in a write-granted folder that holds protected paths, which a
    /// grant lets the program change but not add to (no fix).
    BesideProtected,
    /// A connection `[internet]` does not allow.
    NotAllowed,
    /// Past the call's own bound on what it may hold at once (`[tool.run] processes`,
    /// `inotify_instances`, `inotify_watches`): no fix, `why` names the key.
    Appetite,
}

impl Cause {
    pub const ALL: [Cause; 9] = [
        Cause::NotListed,
        Cause::NotInstalled,
        Cause::OutsideGrants,
        Cause::Protected,
        Cause::Permissions,
        Cause::NeedsOwnWorld,
        Cause::BesideProtected,
        Cause::NotAllowed,
        Cause::Appetite,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Cause::NotListed => "not_listed",
            Cause::NotInstalled => "not_installed",
            Cause::OutsideGrants => "outside_grants",
            Cause::Protected => "protected",
            Cause::Permissions => "permissions",
            Cause::NeedsOwnWorld => "needs_own_world",
            Cause::BesideProtected => "beside_protected",
            Cause::NotAllowed => "not_allowed",
            Cause::Appetite => "appetite",
        }
    }
}

/// One refusal, and what would allow it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    pub access: Access,
    /// The program, the absolute path, or `host:port`.
    pub target: String,
    pub cause: Cause,
    /// Why, in the sandbox file's terms.
    pub why: String,
    /// The change to the sandbox file that allows it, when one does (`why` says what would be
    /// needed otherwise).
    pub fix: Option<Fix>,
    /// Found in the program's own output, not known from lnk itself.
    pub inferred: bool,
}

impl Denial {
    pub fn to_json(&self) -> String {
        json::Object::new()
            .str("access", self.access.name())
            .str("target", &self.target)
            .str("cause", self.cause.name())
            .str("why", &self.why)
            .raw("fix", &self.fix.as_ref().map_or("null".into(), Fix::to_json))
            .bool("inferred", self.inferred)
            .finish()
    }

    /// The `lnk:` line of the text report.
    pub fn line(&self) -> String {
        let fix = self.fix.as_ref().map(|f| format!("; {}", f.words())).unwrap_or_default();
        let how = if self.inferred { " (inferred from the program's error output)" } else { "" };
        format!("denied: {} {}: {}{fix}{how}", self.access.name(), self.target, self.why)
    }

    /// The fields as a background record keeps them (see [`crate::records`]): access, target,
    /// cause, why, fix ([`Fix::to_field`], empty for none), inferred.
    pub fn to_fields(&self) -> [String; 6] {
        [
            self.access.name().to_owned(),
            self.target.clone(),
            self.cause.name().to_owned(),
            self.why.clone(),
            self.fix.as_ref().map(Fix::to_field).unwrap_or_default(),
            self.inferred.to_string(),
        ]
    }

    /// Reads [`Denial::to_fields`] back; `None` if any field is not one it writes.
    pub fn from_fields(fields: &[String]) -> Option<Denial> {
        let [access, target, cause, why, fix, inferred] = fields else { return None };
        Some(Denial {
            access: *Access::ALL.iter().find(|a| a.name() == access)?,
            target: target.clone(),
            cause: *Cause::ALL.iter().find(|c| c.name() == cause)?,
            why: why.clone(),
            fix: Fix::from_field(fix),
            inferred: match inferred.as_str() {
                "true" => true,
                "false" => false,
                _ => return None,
            },
        })
    }
}

/// Adds `denial` to `denials` unless one of the same access and target is there, or the list
/// is full.
pub fn add(denials: &mut Vec<Denial>, denial: Denial) {
    let known = denials.iter().any(|d| d.access == denial.access && d.target == denial.target);
    if !known && denials.len() < MAX_DENIALS {
        denials.push(denial);
    }
}

/// The denial for a program named on lnk's command line that `commands` does not list, or that
/// no folder of the system PATH has (listed or not: "not installed" comes first, since no change
/// to the sandbox file would run it).
pub fn program_refused(name: &str) -> Denial {
    let (cause, why, fix) = match crate::program_path::lookup(name) {
        Ok(p) => (
            Cause::NotListed,
            format!("`{name}` ({}) is not among `commands`", p.path.display()),
            Some(Fix::program(name)),
        ),
        Err(e) => (Cause::NotInstalled, format!("`{name}`: {e}"), None),
    };
    Denial { access: Access::Run, target: name.to_owned(), cause, why, fix, inferred: false }
}

/// The denial for a script the kernel refused to execute (`EACCES`) because its interpreter is
/// not among `commands` (`npm`'s `#!/usr/bin/env node` without `env`): the interpreter's name,
/// with the fix that lists it when the system PATH finds that very file by its name. Read from the
/// script's first line (at most 256 bytes, outside the sandbox, as the program's user); `None`
/// where it has none, or its interpreter is listed (then the kernel refused something else).
pub fn interpreter_not_listed(script: &Path, names: &[String]) -> Option<Denial> {
    use std::io::Read as _;
    let mut head = [0u8; 256];
    let mut file = std::fs::File::open(script).ok()?;
    let read = file.read(&mut head).ok()?;
    let line = head[..read].strip_prefix(b"#!")?;
    let line = &line[..line.iter().position(|&b| b == b'\n')?];
    let line = std::str::from_utf8(line).ok()?.trim();
    let interpreter = Path::new(line.split_whitespace().next()?);
    let name = interpreter.file_name()?.to_str()?;
    if names.iter().any(|n| n == name) {
        return None;
    }
    let found = crate::program_path::lookup(name).ok();
    let same = |p: &Path| std::fs::canonicalize(interpreter).is_ok_and(|i| i == p);
    let fix = found.as_ref().filter(|f| same(&f.real)).map(|_| Fix::program(name));
    let why = match fix {
        Some(_) => format!(
            "`{}` is a script run by `{}` (`#!{line}`), which is not among `commands`",
            script.display(),
            interpreter.display()
        ),
        None => format!(
            "`{}` is a script run by `{}` (`#!{line}`), which is not a program of the system PATH: only those run",
            script.display(),
            interpreter.display()
        ),
    };
    Some(Denial {
        access: Access::Run,
        target: name.to_owned(),
        cause: Cause::NotListed,
        why,
        fix,
        inferred: false,
    })
}

/// The denial for a connection `[internet]` refused (the proxy's policy, or the held door's
/// direct connect): `fix` as the refusal gives it.
pub fn connect_refused(host: &str, port: u16, why: &str, fix: Option<Fix>) -> Denial {
    let target = match host.contains(':') && !host.starts_with('[') {
        true => format!("[{host}]:{port}"),
        false => format!("{host}:{port}"),
    };
    Denial {
        access: Access::Connect,
        target,
        cause: Cause::NotAllowed,
        why: why.to_owned(),
        fix,
        inferred: false,
    }
}

/// The denial for a server's address that is not the call's (a `bind` in the Landlock-only
/// mode to an address other than loopback or the wildcard): no fix, as in the own world's
/// namespace, where no other address exists.
pub fn listen_refused(address: std::net::SocketAddr) -> Denial {
    Denial {
        access: Access::Listen,
        target: address.to_string(),
        cause: Cause::NotAllowed,
        why: "the call's servers listen on its own loopback only (127.0.0.1, ::1, or the wildcard, taken as loopback): no other address is the call's".into(),
        fix: None,
        inferred: false,
    }
}

/// A call's denials: `known` (what lnk refused itself) first, then what [`infer`] reads from
/// `output`, each target once.
pub fn for_call(
    known: Vec<Denial>,
    output: &str,
    scene: &Scene<'_>,
    holes: impl FnOnce() -> Vec<PathBuf>,
) -> Vec<Denial> {
    let mut denials = Vec::new();
    for denial in known.into_iter().chain(infer(output, scene, holes)) {
        add(&mut denials, denial);
    }
    denials
}

/// The denials the program's output shows, each checked against the grants and the file's own
/// permissions (see the module's rules). `holes` gives every path no grant opens
/// ([`crate::protected::never_granted`]); it is called only if some line names a refused path
/// (finding them is a few dozen system calls, and most calls print no refusal).
pub fn infer(output: &str, scene: &Scene<'_>, holes: impl FnOnce() -> Vec<PathBuf>) -> Vec<Denial> {
    let mut denials: Vec<Denial> = Vec::new();
    let mut find_holes = Some(holes);
    let mut found: Option<Vec<PathBuf>> = None;
    let all: Vec<&str> = output.lines().collect();
    // A bound on the work, whatever the output: each line looked at costs at most
    // `look::MAX_DEPTH` lookups, and past the budget the rest is left out.
    let mut looked = 0;
    for (i, line) in all.iter().enumerate() {
        // In the own world, a server of the host's the program could not reach on loopback
        // (see [`connects`]); without it the helper names each one itself.
        if scene.own_world {
            if let Some((_, port)) = connects::read(line) {
                looked += 1;
                if let Some(denial) = connects::explain(port, scene.flags) {
                    add(&mut denials, denial);
                }
                continue;
            }
        }
        let before = &all[i.saturating_sub(4)..i];
        let Some(named) = lines::read(line, before) else { continue };
        looked += 1;
        if looked > MAX_LOOKED {
            break;
        }
        let holes = found.get_or_insert_with(|| find_holes.take().map(|f| f()).unwrap_or_default());
        if let Some(denial) = explain::explain(&named, scene, holes) {
            add(&mut denials, denial);
        }
        if denials.len() == MAX_DENIALS {
            break;
        }
    }
    denials
}

/// The lines of a long output that may name a refusal, kept as the output streams by (a
/// background command's output goes to a file, capped, and may be long): each line that says
/// "permission denied", "read-only file system", "no such file or directory" (what the own world
/// hides) or a refused connection, with the lines just before it. Bounded.
#[derive(Default)]
pub struct Scanner {
    partial: Vec<u8>,
    recent: std::collections::VecDeque<String>,
    kept: String,
    lines_kept: usize,
}

/// The most lines a [`Scanner`] keeps, and the longest line it looks at.
const SCANNER_LINES: usize = 400;
const SCANNER_LINE: usize = 4096;

impl Scanner {
    /// Takes the next bytes of the output.
    pub fn push(&mut self, bytes: &[u8]) {
        for piece in bytes.split_inclusive(|b| *b == b'\n') {
            if self.partial.len() < SCANNER_LINE {
                let room = SCANNER_LINE - self.partial.len();
                self.partial.extend_from_slice(&piece[..piece.len().min(room)]);
            }
            if piece.ends_with(b"\n") {
                let line = String::from_utf8_lossy(&self.partial).trim_end().to_owned();
                self.partial.clear();
                self.line(line);
            }
        }
    }

    fn line(&mut self, line: String) {
        let lower = line.to_ascii_lowercase();
        let refusal = [
            "permission denied",
            "read-only file system",
            "no such file or directory",
            "directory nonexistent",
            "refused",
            "couldn't connect",
        ];
        if self.lines_kept < SCANNER_LINES && refusal.iter().any(|r| lower.contains(r)) {
            for before in self.recent.drain(..) {
                self.kept.push_str(&before);
                self.kept.push('\n');
            }
            self.kept.push_str(&line);
            self.kept.push('\n');
            self.lines_kept += 1;
            return;
        }
        if self.recent.len() == 4 {
            self.recent.pop_front();
        }
        self.recent.push_back(line);
    }

    /// The kept lines, as one text for [`infer`] (a last line without its newline included).
    pub fn finish(mut self) -> String {
        if !self.partial.is_empty() {
            let line = String::from_utf8_lossy(&self.partial).trim_end().to_owned();
            self.partial.clear();
            self.line(line);
        }
        self.kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scripts_interpreter_not_listed_is_named_with_the_fix_that_lists_it() {
        let dir = std::env::temp_dir().join(format!(
            "lnk-interp-{}-{}",
            rustix::process::getuid().as_raw(),
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let script = |name: &str, text: &str| {
            let path = dir.join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        let by_env = script("by-env", "#!/usr/bin/env node\nconsole.log(1)\n");
        let d = interpreter_not_listed(&by_env, &["npm".into()]).unwrap();
        assert_eq!((d.target.as_str(), d.fix.as_ref().map(|f| f.value.as_str())), ("env", Some("env")));
        assert!(interpreter_not_listed(&by_env, &["env".into()]).is_none(), "listed: not the cause");
        let elsewhere = script("elsewhere", "#!/opt/no-such/python\n");
        let d = interpreter_not_listed(&elsewhere, &[]).unwrap();
        assert!(d.fix.is_none() && d.why.contains("not a program of the system PATH"), "{d:?}");
        assert!(interpreter_not_listed(&script("plain", "\x7fELF"), &[]).is_none());
        assert!(interpreter_not_listed(&script("no-end", "#!/bin/sh"), &[]).is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_denial_survives_its_record_fields() {
        let d = Denial {
            access: Access::ReadOrWrite,
            target: "/x y".into(),
            cause: Cause::OutsideGrants,
            why: "w".into(),
            fix: Some(Fix::read(Path::new("/x y"))),
            inferred: true,
        };
        assert_eq!(Denial::from_fields(&d.to_fields()), Some(d.clone()));
        let none = Denial { fix: None, inferred: false, ..d };
        assert_eq!(Denial::from_fields(&none.to_fields()), Some(none));
        let mut bad = d_fields();
        bad[2] = "other".into();
        assert_eq!(Denial::from_fields(&bad), None);
        assert_eq!(Denial::from_fields(&d_fields()[..5]), None);
    }

    fn d_fields() -> Vec<String> {
        ["read", "/x", "protected", "w", "", "false"].map(String::from).to_vec()
    }

    #[test]
    fn the_scanner_keeps_refusals_and_the_lines_before_them_only() {
        let mut scan = Scanner::default();
        let mut text = String::new();
        for i in 0..1000 {
            text.push_str(&format!("line {i}\n"));
        }
        text.push_str(
            "error: failed to create directory `/x`\n\nCaused by:\n  Permission denied (os error 13)\n",
        );
        text.push_str("cat: /y: Permission denied");
        for chunk in text.as_bytes().chunks(7) {
            scan.push(chunk);
        }
        let kept = scan.finish();
        assert!(!kept.contains("line 5\n"), "{kept}");
        assert!(kept.contains("failed to create directory `/x`"), "{kept}");
        assert!(kept.ends_with("cat: /y: Permission denied\n"), "{kept}");
        let mut long = Scanner::default();
        long.push(&vec![b'a'; 100_000]);
        long.push(b": Permission denied\n");
        assert!(long.finish().len() <= SCANNER_LINE + 1, "a line is cut at its bound");
    }

    #[test]
    fn a_connect_names_host_and_port() {
        assert_eq!(connect_refused("a.test", 443, "w", None).target, "a.test:443");
        assert_eq!(connect_refused("2001:db8::1", 80, "w", None).target, "[2001:db8::1]:80");
    }
}
