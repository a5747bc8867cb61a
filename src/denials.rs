//! Refusals that explain themselves: what the sandbox refused a call, and the grant that would
//! allow it.
//!
//! A refused exec or file access reaches the program as a bare `Permission denied`. The kernel
//! can say more (Landlock's audit records, Linux 6.15 and later), but only to a process that
//! may read the audit log, which an unprivileged helper may not. So lnk says what it knows, and
//! says how it knows it:
//!
//! - **Known:** a program named on lnk's command line that `commands` does not list; and in
//!   the Landlock-only mode, the held calls the helper refused (a metadata change outside the
//!   write grants, `setsid`, `setpgid`: see [`crate::notify`]). lnk refused them itself. (An
//!   `Operation not permitted` line is never inferred from: the kernel says it for many things,
//!   and what lnk refused it knows.)
//! - **Inferred:** the program's own error lines (`cat: /etc/shadow: Permission denied`,
//!   `sh: 1: seq: Permission denied`, Python's `[Errno 13] Permission denied: '/x'`, a
//!   `Read-only file system`) matched against the grants: the path
//!   named is looked up (outside the sandbox, where lnk runs), and if the grants explain the
//!   refusal, the denial says which grant would allow it. Each is marked `"inferred": true`:
//!   a program may print such a line for another reason, so it is never presented as fact, and
//!   a line the grants do not explain is left out.
//!
//! Nothing here changes what is enforced; it only reads what the call printed.

use std::path::{Path, PathBuf};

use crate::flags::SandboxFlags;
use crate::json;
use crate::sandbox_file::Commands;

/// The most denials a report lists: the first ones name the problem.
pub const MAX_DENIALS: usize = 20;

/// What was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Running a program.
    Run,
    Read,
    Write,
    /// Changing a file's mode, owner, times or extended attributes.
    Metadata,
    /// Making a session or process group of its own (`setsid`, `setpgid`).
    Session,
}

impl Access {
    pub fn name(self) -> &'static str {
        match self {
            Access::Run => "run",
            Access::Read => "read",
            Access::Write => "write",
            Access::Metadata => "metadata",
            Access::Session => "session",
        }
    }
}

/// One refusal, and what would allow it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    pub access: Access,
    /// The program or path refused.
    pub target: String,
    /// Why, in the sandbox file's terms.
    pub why: String,
    /// What to change in the sandbox file, when a change can allow it.
    pub fix: Option<String>,
    /// Found in the program's own output, not known from the kernel or lnk itself.
    pub inferred: bool,
}

impl Denial {
    pub fn to_json(&self) -> String {
        json::Object::new()
            .str("access", self.access.name())
            .str("target", &self.target)
            .str("why", &self.why)
            .raw("fix", &self.fix.as_deref().map_or("null".into(), json::string))
            .bool("inferred", self.inferred)
            .finish()
    }

    /// The `lnk:` line of the text report.
    pub fn line(&self) -> String {
        let fix = self.fix.as_deref().map(|f| format!("; {f}")).unwrap_or_default();
        let how = if self.inferred { " (inferred from the program's error output)" } else { "" };
        format!("denied: {} {}: {}{fix}{how}", self.access.name(), self.target, self.why)
    }
}

/// The denial for a program named on lnk's command line that `commands` does not list.
pub fn program_not_listed(name: &str) -> Denial {
    let found = crate::program_path::lookup(name).ok();
    Denial {
        access: Access::Run,
        target: name.to_owned(),
        why: match &found {
            Some(p) => format!("`{name}` ({}) is not among `commands`", p.path.display()),
            None => format!("`{name}` is not among `commands` (and is not on this computer's system PATH)"),
        },
        fix: found.map(|_| format!("add \"{name}\" to commands")),
        inferred: false,
    }
}

/// The denial for a `setsid` or `setpgid` (`call`) the helper refused (the Landlock-only mode).
pub fn session_refused(call: &str) -> Denial {
    Denial {
        access: Access::Session,
        target: call.to_owned(),
        why: "a session or process group of its own would leave the group lnk ends as one, and without a pid namespace of the call's own (the Landlock-only mode) nothing else would end it".into(),
        fix: Some(
            "run where user namespaces are allowed (see `lnk sandbox status`), or keep the process in its parent's session (no start_new_session, setsid or detached)"
                .into(),
        ),
        inferred: false,
    }
}

/// The denial for a metadata call (`chmod`, `chown`, times, attributes) on `path` that the
/// helper refused (the Landlock-only mode): `path` lies in `hole`, or outside every write grant.
pub fn metadata_refused(path: &Path, hole: Option<&Path>) -> Denial {
    let (why, fix) = match hole {
        Some(hole) => (
            format!(
                "it lies in `{}`, which the sandbox keeps out of every grant (a secret, the agent's records, or `[files] deny`), or on the way to it",
                hole.display()
            ),
            None,
        ),
        None => (
            "it is outside every `[files] write` grant (a file's mode, owner, times and attributes change only beneath them)"
                .to_owned(),
            Some(format!("add \"{}\" to [files] write", path.parent().unwrap_or(path).display())),
        ),
    };
    Denial { access: Access::Metadata, target: path.display().to_string(), why, fix, inferred: false }
}

/// The denials the program's error output shows, explained by the grants. `cwd` is where the
/// program started (a relative path it names is taken from there).
///
/// `holes` gives the paths the call's grants were cut around ([`crate::protected::call_holes`]):
/// a refusal there is the protected set or `[files] deny` at work, whatever the grants say.
/// It is called only if some line names a refused path (finding the protected set is a few
/// dozen system calls, and most calls print no refusal).
pub fn infer(
    output: &str,
    flags: &SandboxFlags,
    cwd: &Path,
    holes: impl FnOnce() -> Vec<PathBuf>,
) -> Vec<Denial> {
    let mut denials: Vec<Denial> = Vec::new();
    let mut find_holes = Some(holes);
    let mut found: Option<Vec<PathBuf>> = None;
    for line in output.lines() {
        let Some((path, kind)) = refused_path(line) else { continue };
        let holes = found.get_or_insert_with(|| find_holes.take().map(|f| f()).unwrap_or_default());
        let Some(denial) = explain(&path, kind, flags, cwd, holes) else { continue };
        if !denials.iter().any(|d| d.target == denial.target && d.access == denial.access) {
            denials.push(denial);
        }
        if denials.len() == MAX_DENIALS {
            break;
        }
    }
    denials
}

/// What an error line says was refused: the path (or program name) and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refused {
    /// "Permission denied": reading, writing or running, which the grants tell apart.
    Denied,
    /// "Read-only file system": a write outside the write grants (the own world).
    ReadOnly,
}

const ENDINGS: &[(&str, Refused)] =
    &[("Permission denied", Refused::Denied), ("Read-only file system", Refused::ReadOnly)];

/// Finds the path in one error line: `…: PATH: <reason>` (C tools, shells), `<reason>: 'PATH'`
/// (Python), `cannot … 'PATH': <reason>` (coreutils quoting).
fn refused_path(line: &str) -> Option<(String, Refused)> {
    let line = line.trim();
    for (reason, kind) in ENDINGS {
        let Some(at) = line.find(reason) else { continue };
        // Python: "[Errno 13] Permission denied: '/x'".
        if let Some(rest) = line[at + reason.len()..].strip_prefix(": ") {
            if let Some(quoted) = unquote(rest) {
                return Some((quoted, *kind));
            }
        }
        // "prog: /x: Permission denied", "sh: 1: seq: Permission denied",
        // "touch: cannot touch '/x': Permission denied".
        let before = line[..at].trim_end().strip_suffix(':')?;
        let last = before.rsplit(": ").next()?.trim();
        let last = last.rsplit_once(' ').map_or(last, |(_, p)| p);
        let path = unquote(last).unwrap_or_else(|| last.to_owned());
        if !path.is_empty() && !path.contains(char::is_whitespace) {
            return Some((path, *kind));
        }
    }
    None
}

fn unquote(text: &str) -> Option<String> {
    for q in ['\'', '"', '‘', '`'] {
        if let Some(inner) = text.strip_prefix(q) {
            let close = if q == '‘' { '’' } else { q };
            return inner.find(close).map(|end| inner[..end].to_owned());
        }
    }
    None
}

/// Explains a refused path by the grants, or `None` when they do not explain it.
fn explain(
    named: &str,
    kind: Refused,
    flags: &SandboxFlags,
    cwd: &Path,
    holes: &[PathBuf],
) -> Option<Denial> {
    let inferred = |access, target: String, why: String, fix: Option<String>| {
        Some(Denial { access, target, why, fix, inferred: true })
    };
    // A bare name a shell could not run (`sh: 1: seq: Permission denied`): a program on the
    // system PATH that `commands` does not list. Any other bare name is a relative path.
    let program = (!named.contains('/') && kind == Refused::Denied)
        .then(|| crate::program_path::lookup(named).ok())
        .flatten();
    if let Some(found) = program {
        match &flags.commands {
            Commands::Any => return None,
            Commands::Listed(names) if names.iter().any(|n| n == named) => return None,
            Commands::Listed(_) => {}
        }
        return inferred(
            Access::Run,
            named.to_owned(),
            format!("`{named}` ({}) is not among `commands`", found.path.display()),
            Some(format!("add \"{named}\" to commands")),
        );
    }
    let path = normalize(&cwd.join(named))?;
    let target = path.display().to_string();
    // A program file on the system PATH that `commands` does not list.
    if kind == Refused::Denied {
        if let Some(name) = program_named_by(&path, flags) {
            return inferred(
                Access::Run,
                target,
                format!("`{name}` is not among `commands`"),
                Some(format!("add \"{name}\" to commands")),
            );
        }
    }
    let under = |grants: &[PathBuf]| grants.iter().any(|g| path.starts_with(g));
    if let Some(hole) = flags.deny.iter().chain(holes).find(|d| path.starts_with(d)) {
        return inferred(
            Access::Read,
            target,
            format!(
                "it lies in `{}`, which the sandbox keeps out of every grant (a secret, the agent's records, or `[files] deny`)",
                hole.display()
            ),
            None,
        );
    }
    let parent = path.parent().unwrap_or(&path).display().to_string();
    match kind {
        Refused::ReadOnly if !under(&flags.write) => inferred(
            Access::Write,
            target,
            "it is outside every `[files] write` grant".into(),
            Some(format!("add \"{parent}\" to [files] write")),
        ),
        Refused::Denied if !under(&flags.read) && !under(&flags.write) => inferred(
            Access::Read,
            target,
            "it is outside every `[files] read` and `write` grant".into(),
            Some(format!("add \"{parent}\" to [files] read (or write)")),
        ),
        Refused::Denied if !under(&flags.write) => inferred(
            Access::Write,
            target,
            "it is readable, but outside every `[files] write` grant".into(),
            Some(format!("add \"{parent}\" to [files] write")),
        ),
        _ => None,
    }
}

/// `path` with `.` and `..` taken away lexically (the program's view of it); `None` above `/`.
fn normalize(path: &Path) -> Option<PathBuf> {
    use std::path::Component;
    let mut out = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::RootDir | Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(name) => out.push(name),
            Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

/// The program name, when `path` is a file in a system PATH folder that `commands` does not
/// list.
fn program_named_by(path: &Path, flags: &SandboxFlags) -> Option<String> {
    let folder = path.parent()?;
    if !crate::program_path::SYSTEM_PATH.iter().any(|p| Path::new(p) == folder) {
        return None;
    }
    let name = path.file_name()?.to_str()?.to_owned();
    match &flags.commands {
        Commands::Any => None,
        Commands::Listed(names) if names.contains(&name) => None,
        Commands::Listed(_) => Some(name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags() -> SandboxFlags {
        let mut f = SandboxFlags::from_args(&[]).unwrap();
        f.commands = Commands::Listed(vec!["sh".into(), "cat".into(), "touch".into()]);
        f.read = vec![PathBuf::from("/home/ann")];
        f.write = vec![PathBuf::from("/home/ann/Link/Files")];
        f.deny = vec![PathBuf::from("/home/ann/.ssh")];
        f
    }

    fn one(line: &str) -> Option<Denial> {
        infer(line, &flags(), Path::new("/home/ann"), || vec![PathBuf::from("/home/ann/.aws")])
            .into_iter()
            .next()
    }

    #[test]
    fn error_lines_are_read_in_each_common_shape() {
        assert_eq!(
            refused_path("cat: /etc/shadow: Permission denied"),
            Some(("/etc/shadow".into(), Refused::Denied))
        );
        assert_eq!(refused_path("sh: 1: seq: Permission denied"), Some(("seq".into(), Refused::Denied)));
        assert_eq!(
            refused_path("PermissionError: [Errno 13] Permission denied: '/srv/x'"),
            Some(("/srv/x".into(), Refused::Denied))
        );
        assert_eq!(
            refused_path("touch: cannot touch '/home/ann/x': Read-only file system"),
            Some(("/home/ann/x".into(), Refused::ReadOnly))
        );
        assert_eq!(refused_path("all went well"), None);
    }

    #[test]
    fn a_refusal_is_explained_by_the_grant_that_would_allow_it() {
        let d = one("cat: /etc/shadow: Permission denied").unwrap();
        assert_eq!(
            (d.access, d.fix.as_deref()),
            (Access::Read, Some("add \"/etc\" to [files] read (or write)"))
        );
        assert!(d.inferred);
        let d = one("touch: cannot touch 'notes.txt': Read-only file system").unwrap();
        assert_eq!((d.access, d.target.as_str()), (Access::Write, "/home/ann/notes.txt"));
        let d = one("cat: /home/ann/.ssh/id: Permission denied").unwrap();
        assert!(
            d.fix.is_none() && d.why.contains("keeps out of every grant") && d.why.contains(".ssh"),
            "{d:?}"
        );
        // A hole the flags do not list (the protected set, found from the home and the grants)
        // is explained as one too, never as a missing write grant.
        let d = one("cat: /home/ann/.aws/credentials: Permission denied").unwrap();
        assert_eq!(d.access, Access::Read, "{d:?}");
        assert!(d.why.contains("`/home/ann/.aws`"), "{d:?}");
        // A listed program, or a path the grants do not explain, is not a denial.
        assert_eq!(one("sh: 1: cat: Permission denied"), None);
        assert_eq!(one("cat: /home/ann/Link/Files/x: Permission denied"), None);
    }
}
