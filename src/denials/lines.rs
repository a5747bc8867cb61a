//! Reading a refusal out of one line of a program's error output: which path (or program) the
//! line names, which access the message says was refused, and how.
//!
//! The rule is to name only what the line itself names as a path. A word of the message is never
//! a target: gcc's `cannot execute '…/cc1': execv: Permission denied` names the quoted path, not
//! `execv`; coreutils' `cannot open '/x/f' for reading` names `/x/f`, not `reading`. A bare word
//! (no `/`) is taken only where its shape says it is an operand: `PROG: NAME: reason` with
//! exactly those three parts, or a shell's `sh: 1: NAME: reason` (a program it could not run).
//!
//! The shapes read (see the corpus in `tests/denials_corpus.rs` for real lines of each):
//!
//! | shape | tools |
//! |---|---|
//! | `PROG: PATH: Permission denied` | cat, ls, head, grep, bash, make, … |
//! | `PROG: cannot VERB 'PATH'…: Permission denied` | coreutils, git, gcc |
//! | `…[Errno 13] Permission denied: 'PATH'` | Python, pip |
//! | `EACCES: permission denied, OP 'PATH'` | node, npm |
//! | `tar: PATH: Cannot VERB: Permission denied` | tar |
//! | `…failed to VERB `PATH`` then `Permission denied (os error 13)` | cargo, Rust programs |
//!
//! Pure: it reads text only. Whether the grants explain a refusal is [`super::explain`]'s.
//!
//! Trusted with: taking from a line only what the line names (a word taken for a path would make a
//! denial for, and a fix toward, the wrong place). What it trusts: nothing: the line is the
//! program's, and any text yields a name or none.

/// What the message says was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hint {
    Read,
    Write,
    /// Running a program (`cannot execute`, a shell that could not run a command).
    Run,
    /// The message does not say (`open`, Python's `PermissionError`).
    Unknown,
}

/// How it was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// `EACCES`: Landlock, or the file's own permissions.
    Denied,
    /// `EROFS`: the own world's read-only view (or a read-only file system).
    ReadOnly,
    /// `ENOENT`: not there, as the program sees it. Only the own world makes something there
    /// look missing: the host's `/tmp` beneath the call's own (see `explain`).
    Missing,
    /// "does not exist": git's words for a repository it could not look at (Landlock's
    /// `EACCES` on its `stat`). A refusal only where the path is there on the host and no
    /// grant reaches it (see `explain`).
    Unseen,
}

/// One refusal a line names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    /// As printed: an absolute or relative path, or a program name when `program` is set.
    pub text: String,
    pub hint: Hint,
    pub reason: Reason,
    /// A command a shell could not run (`sh: 1: seq: Permission denied`): `text` is its name or
    /// path.
    pub program: bool,
    /// A bare word a launcher that also names files printed (`make: cc`, find's `-exec` as
    /// `find: ‘cc’`): the program it could not run, or, where the start folder has that name,
    /// that file (`find: ‘sub’`, a folder it could not read). [`super::explain`] tells which.
    pub program_or_file: bool,
}

/// The longest line read: past it, a line is someone's data, not an error message.
const MAX_LINE: usize = 4096;

/// Reads one line; `before` holds the lines just before it, nearest last (for messages whose
/// path is on an earlier line, as Rust programs print them).
pub fn read(line: &str, before: &[&str]) -> Option<Named> {
    if line.len() > MAX_LINE {
        return None;
    }
    let line = line.trim();
    let (reason, at) = reason_in(line)?;
    let head = &line[..at];
    let tail = &line[at..];
    // git: "fatal: repository '/x/r' does not exist": the quoted path the words are said of,
    // in git's shape only (any other "does not exist" is a file that is missing).
    if reason == Reason::Unseen {
        let (path, before, after) = first_quoted_path(head)?;
        let git = before.trim_end().ends_with("repository");
        let text = (git && after.trim().is_empty()).then_some(path)?;
        return Some(Named { text, hint: Hint::Read, reason, program: false, program_or_file: false });
    }
    // node: "EACCES: permission denied, open '/x'".
    if let Some(named) = node_shape(tail, reason) {
        return Some(named);
    }
    // Python: "[Errno 13] Permission denied: '/x'" (a second path, `-> '/y'`, is the target of
    // a rename; the first is named).
    if let Some(rest) = after_reason(tail).and_then(|r| r.strip_prefix(": ")) {
        if let Some(path) = quoted(rest).filter(|p| looks_like_path(p)) {
            return Some(Named {
                text: path,
                hint: python_hint(head),
                reason,
                program: false,
                program_or_file: false,
            });
        }
    }
    // Rust programs: "Permission denied (os error 13)" alone, the path on a line before.
    if head.trim_end().is_empty() || head.trim_end().ends_with("Caused by:") {
        return rust_shape(before, reason);
    }
    // The reason follows a colon ("…: Permission denied"), or Python's "[Errno 13]" does.
    let head = head.trim_end();
    let head = strip_errno(head).unwrap_or(head);
    let head = head.strip_suffix(':')?.trim_end();
    if let Some(named) = launcher_shape(head, reason) {
        return Some(named);
    }
    // git: "fatal: cannot exec 'git-upload-pack '/r/.git'': Permission denied". A command with
    // its arguments in the quotes git ran through the shell (`sh -c`), which is what could not
    // be run; a bare name alone it ran itself. A path is read below. (`sh` is the one target
    // not taken from the line's own text: git's rule, not a guess.)
    if let Some((_, rest)) = head.split_once("cannot exec '").filter(|_| reason == Reason::Denied) {
        let word = rest.split([' ', '\'']).next().unwrap_or("");
        if !word.contains('/') && is_program_name(word) {
            let shell = rest[word.len()..].starts_with(' ');
            let text = if shell { "sh".to_owned() } else { word.to_owned() };
            return Some(Named { text, hint: Hint::Run, reason, program: true, program_or_file: false });
        }
    }
    // A quoted path before the reason: coreutils, git, gcc, Python's "can't open file". A move
    // or copy names its source first and the refused destination second.
    if let Some((path, before_quote, after)) = first_quoted_path(head) {
        let hint = verb_hint(before_quote, head);
        let destination =
            ["cannot move", "cannot copy", "failed to rename", "cannot rename", "inter-device move failed"]
                .iter()
                .any(|v| before_quote.to_ascii_lowercase().contains(v));
        let path = match after.trim_start().strip_prefix("to ").and_then(|rest| first_quoted_path(rest)) {
            Some((second, _, _)) if destination => second,
            _ => path,
        };
        return Some(Named { text: path, hint, reason, program: false, program_or_file: false });
    }
    let fields: Vec<&str> = head.split(": ").map(str::trim).collect();
    let named = |text: String, hint: Hint, program: bool| {
        Some(Named { text, hint, reason, program, program_or_file: false })
    };
    // tar: "tar: x/y: Cannot open", the path before tar's verb.
    if let [.., path, verb] = fields.as_slice() {
        if let Some(hint) = tar_verb(verb) {
            return plain_word_or_path(path).and_then(|text| named(text, hint, false));
        }
    }
    match fields.as_slice() {
        // A shell's builtin: "bash: line 1: cd: /x".
        [shell, line_no, builtin, path] if is_shell(shell) && is_line_number(line_no) => {
            let hint = match *builtin {
                "cd" | "pushd" | "source" | "." => Hint::Read,
                _ => return None,
            };
            return plain_path(path).and_then(|text| named(text, hint, false));
        }
        // A shell that could not run a command ("sh: 1: seq", "bash: line 1: ./x.sh": the name
        // is a program, or with bash a file it could not open for a redirect), or could not
        // make a redirect's file ("sh: 1: cannot create /x").
        [shell, line_no, name] if is_shell(shell) && is_line_number(line_no) => {
            if let Some(text) = plain_word_or_path(name) {
                return named(text, Hint::Run, true);
            }
            return phrase_path(name).and_then(|text| named(text, verb_hint(name, name), false));
        }
        // bash: "bash: ./x.sh" (running it); make: "make: ./x.sh".
        [shell, name] if is_shell(shell) || *shell == "make" => {
            return plain_path(name).and_then(|text| named(text, Hint::Run, true));
        }
        // "PROG: OPERAND": a bare word is an operand here, and only here.
        [program, operand] if is_program_name(program) => {
            if let Some(text) = plain_word_or_path(operand) {
                return named(text, program_hint(program), false);
            }
        }
        // less: "/x/y: Permission denied".
        [alone] => {
            return plain_path(alone)
                .filter(|p| p.starts_with('/'))
                .and_then(|text| named(text, Hint::Unknown, false));
        }
        _ => {}
    }
    // Otherwise only a path the last part plainly is ("cc1: fatal error: /x.c", "sort: cannot
    // read: /x"), or that the last phrase plainly ends with ("could not lock config file /x",
    // "unable to create file f.txt").
    let (last, rest) = fields.split_last()?;
    if let Some(text) =
        plain_path(last).filter(|p| p.starts_with('/') || p.starts_with("./") || p.starts_with("../"))
    {
        let verb = rest.last().copied().unwrap_or("");
        return named(text, verb_hint(verb, verb), false);
    }
    phrase_path(last).and_then(|text| named(text, verb_hint(last, head), false))
}

/// A program a launcher could not run, by its bare name: `env: ‘cc’`, `xargs: cc`, `nice: ‘cc’`,
/// `nohup: failed to run command 'cc'`; and from the launchers that also name files, `make: cc`
/// (a recipe's command) and `find: ‘cc’` (`-exec`), which [`super::explain`] tells from a file
/// of that name (`find: ‘sub’`, a folder it could not read). A path (`make: ./x.sh`) is left to
/// the shapes below.
fn launcher_shape(head: &str, reason: Reason) -> Option<Named> {
    const RUNS_ONLY: &[&str] = &[
        "env", "xargs", "nice", "nohup", "timeout", "stdbuf", "setsid", "ionice", "chrt", "taskset", "flock",
        "time", "strace", "ltrace", "valgrind", "watch", "parallel", "exec",
    ];
    const RUNS_OR_NAMES_FILES: &[&str] = &["make", "gmake", "find"];
    if reason != Reason::Denied {
        return None;
    }
    let (launcher, operand) = head.split_once(": ")?;
    let launcher = launcher.rsplit('/').next().unwrap_or(launcher);
    let runs_only = RUNS_ONLY.contains(&launcher);
    if !runs_only && !RUNS_OR_NAMES_FILES.contains(&launcher) {
        return None;
    }
    let operand = operand.trim();
    let operand = operand.strip_prefix("failed to run command ").unwrap_or(operand);
    // The whole operand, quoted or not: a word inside a longer phrase is not the program.
    let word = match quoted(operand) {
        Some(inner) if operand.chars().count() == inner.chars().count() + 2 => inner,
        Some(_) => return None,
        None => operand.to_owned(),
    };
    if word.contains('/') || word == "." || word == ".." || !is_program_name(&word) {
        return None;
    }
    let hint = if runs_only { Hint::Run } else { program_hint(launcher) };
    Some(Named { text: word, hint, reason, program: runs_only, program_or_file: !runs_only })
}

/// `head` without a trailing Python `[Errno N]`.
fn strip_errno(head: &str) -> Option<&str> {
    let rest = head.strip_suffix(']')?;
    let at = rest.rfind("[Errno ")?;
    rest[at + 7..].bytes().all(|b| b.is_ascii_digit()).then(|| head[..at].trim_end())
}

/// Where the refusal is said, and which.
fn reason_in(line: &str) -> Option<(Reason, usize)> {
    const REASONS: &[(&str, Reason)] = &[
        ("Permission denied", Reason::Denied),
        ("permission denied", Reason::Denied),
        ("Read-only file system", Reason::ReadOnly),
        ("read-only file system", Reason::ReadOnly),
        ("No such file or directory", Reason::Missing),
        ("no such file or directory", Reason::Missing),
        ("Directory nonexistent", Reason::Missing),
        ("does not exist", Reason::Unseen),
    ];
    REASONS
        .iter()
        .filter_map(|(text, reason)| line.find(text).map(|at| (*reason, at)))
        .min_by_key(|(_, at)| *at)
}

/// The text after the reason's words.
fn after_reason(tail: &str) -> Option<&str> {
    for text in [
        "Permission denied",
        "permission denied",
        "Read-only file system",
        "read-only file system",
        "No such file or directory",
        "no such file or directory",
        "Directory nonexistent",
        "does not exist",
    ] {
        if let Some(rest) = tail.strip_prefix(text) {
            return Some(rest);
        }
    }
    None
}

/// node's `EACCES: permission denied, open '/x'` and `EROFS: read-only file system, mkdir '/x'`.
fn node_shape(tail: &str, reason: Reason) -> Option<Named> {
    let rest = after_reason(tail)?.strip_prefix(", ")?;
    let (op, rest) = rest.split_once(' ')?;
    let path = quoted(rest).filter(|p| looks_like_path(p))?;
    let hint = match (reason, op) {
        (Reason::ReadOnly, _) => Hint::Write,
        (
            _,
            "mkdir" | "rmdir" | "unlink" | "rename" | "symlink" | "link" | "copyfile" | "chmod" | "utime",
        ) => Hint::Write,
        (_, "scandir" | "opendir" | "stat" | "lstat" | "access" | "readlink" | "realpath") => Hint::Read,
        (_, "spawn" | "uv_spawn") => Hint::Run,
        _ => Hint::Unknown,
    };
    Some(Named { text: path, hint, reason, program: hint == Hint::Run, program_or_file: false })
}

/// A Rust program's refusal, its path in backticks on one of the lines before
/// (`failed to create directory `/x``).
fn rust_shape(before: &[&str], reason: Reason) -> Option<Named> {
    for line in before.iter().rev().take(4) {
        let line = line.trim();
        if line.is_empty() || line == "Caused by:" {
            continue;
        }
        let start = line.find('`')?;
        let end = line[start + 1..].find('`')? + start + 1;
        let path = &line[start + 1..end];
        if !looks_like_path(path) || !path.contains('/') {
            return None;
        }
        return Some(Named {
            text: path.to_owned(),
            hint: verb_hint(&line[..start], line),
            reason,
            program: false,
            program_or_file: false,
        });
    }
    None
}

/// The text of a quoted string at the start of `text` (', ", ‘…’, `…`, or `…').
fn quoted(text: &str) -> Option<String> {
    let mut chars = text.chars();
    let open = chars.next()?;
    let close = match open {
        '\'' | '"' => open,
        '‘' => '’',
        '`' => {
            // GNU tools of old: `path'.
            let inner = &text[1..];
            return inner.find(['\'', '`']).map(|end| inner[..end].to_owned());
        }
        _ => return None,
    };
    let inner = &text[open.len_utf8()..];
    inner.find(close).map(|end| inner[..end].to_owned())
}

/// The first quoted string in `head` that looks like a path, the text before it, and the text
/// after it.
fn first_quoted_path(head: &str) -> Option<(String, &str, &str)> {
    for (at, c) in head.char_indices() {
        if matches!(c, '\'' | '"' | '‘' | '`') {
            if let Some(text) = quoted(&head[at..]).filter(|t| looks_like_path(t)) {
                // Past the closing quote (one character, whichever it was).
                let after_open = at + c.len_utf8() + text.len();
                let after =
                    head[after_open..].chars().next().map_or(after_open, |q| after_open + q.len_utf8());
                return Some((text, &head[..at], &head[after.min(head.len())..]));
            }
        }
    }
    None
}

/// Whether a quoted string could be a path: not empty, no line break, not a sentence.
fn looks_like_path(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 4096
        && !text.contains(['\n', '\0'])
        && (text.contains('/') || !text.contains(' '))
}

/// A field that is a path as it stands: absolute, `./`, `../`, `~/`, or with a `/` in it, and no
/// spaces (a field with spaces is a phrase).
fn plain_path(field: &str) -> Option<String> {
    let ok = !field.is_empty() && !field.contains(char::is_whitespace) && field.contains('/');
    ok.then(|| field.to_owned())
}

/// A plain path, or a bare name (`notes.txt`, `seq`): an operand where the shape says so.
fn plain_word_or_path(field: &str) -> Option<String> {
    let ok = !field.is_empty()
        && !field.contains(char::is_whitespace)
        && field != "."
        && field.chars().all(|c| !c.is_control());
    ok.then(|| field.to_owned())
}

/// The last word of a phrase, when it is plainly a path (`could not lock config file /x/y`), or
/// a name right after `file`, `directory` or `dir` (`unable to create file f.txt`).
fn phrase_path(phrase: &str) -> Option<String> {
    let (rest, word) = phrase.rsplit_once(' ')?;
    if word.starts_with('/') || word.starts_with("./") || word.starts_with("../") {
        return plain_path(word);
    }
    let noun = rest.rsplit(' ').next()?;
    matches!(noun, "file" | "directory" | "dir" | "folder").then(|| plain_word_or_path(word)).flatten()
}

fn is_shell(name: &str) -> bool {
    let name = name.rsplit('/').next().unwrap_or(name);
    matches!(name, "sh" | "bash" | "dash" | "zsh" | "ksh" | "busybox" | "ash" | "-sh" | "-bash")
}

/// `1`, `line 1`, `12`.
fn is_line_number(field: &str) -> bool {
    let digits = field.strip_prefix("line ").unwrap_or(field);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// A program's name as tools print it before their messages (`cat`, `ls`, `/usr/bin/cat`).
fn is_program_name(field: &str) -> bool {
    let name = field.rsplit('/').next().unwrap_or(field);
    !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'+'))
        && !is_line_number(name)
}

/// What the tool's name says the access was: tools that only read.
fn program_hint(program: &str) -> Hint {
    let name = program.rsplit('/').next().unwrap_or(program);
    const READERS: &[&str] = &[
        "cat",
        "head",
        "tail",
        "less",
        "more",
        "grep",
        "egrep",
        "fgrep",
        "rg",
        "wc",
        "sort",
        "uniq",
        "md5sum",
        "sha1sum",
        "sha256sum",
        "sha512sum",
        "diff",
        "cmp",
        "file",
        "od",
        "xxd",
        "hexdump",
        "strings",
        "ls",
        "find",
        "du",
        "stat",
        "readlink",
        "realpath",
        "tac",
        "nl",
        "cut",
        "awk",
        "sed",
        "jq",
        "bat",
        "source",
        ".",
    ];
    const WRITERS: &[&str] = &["tee", "touch", "mkdir", "rmdir", "rm", "ln", "install", "truncate", "shred"];
    if READERS.contains(&name) {
        Hint::Read
    } else if WRITERS.contains(&name) {
        Hint::Write
    } else {
        Hint::Unknown
    }
}

/// What the words before a quoted path (or the phrase around it) say the access was.
fn verb_hint(before: &str, whole: &str) -> Hint {
    let before = before.to_ascii_lowercase();
    let whole = whole.to_ascii_lowercase();
    const RUN: &[&str] = &["cannot execute", "can't execute", "couldn't execute", "cannot run", "exec"];
    const WRITE: &[&str] = &[
        "cannot touch",
        "cannot create",
        "cannot remove",
        "cannot make",
        "cannot mkdir",
        "cannot move",
        "cannot overwrite",
        "cannot write",
        "cannot change",
        "cannot set",
        "cannot link",
        "cannot lock",
        "could not lock",
        "could not create",
        "could not write",
        "could not open '",
        "cannot open output",
        "couldn't open temporary",
        "failed to create symbolic",
        "unable to create",
        "unable to write",
        "unable to unlink",
        "unable to append",
        "failed to create",
        "failed to write",
        "failed to remove",
        "failed to rename",
        "failed to copy",
        "cannot open temporary",
        "couldn't create",
        "error writing",
    ];
    const READ: &[&str] = &[
        "cannot open directory",
        "cannot read",
        "cannot access",
        "cannot stat",
        "cannot list",
        "could not read",
        "could not open directory",
        "unable to read",
        "failed to read",
        "error reading",
        "couldn't read",
    ];
    if whole.contains("for reading") {
        return Hint::Read;
    }
    if whole.contains("for writing") {
        return Hint::Write;
    }
    if RUN.iter().any(|v| before.contains(v)) {
        return Hint::Run;
    }
    if WRITE.iter().any(|v| before.contains(v)) {
        return Hint::Write;
    }
    if READ.iter().any(|v| before.contains(v)) {
        return Hint::Read;
    }
    Hint::Unknown
}

/// tar's verbs (`tar: x: Cannot open: Permission denied`).
fn tar_verb(field: &str) -> Option<Hint> {
    // Capitalised and short, as tar writes it ("Cannot open", "Cannot change mode"): a phrase
    // that goes on to name a path ("cannot create /x") is not tar's.
    let rest = field.strip_prefix("Cannot ")?;
    if rest.contains('/') || rest.split(' ').count() > 3 {
        return None;
    }
    Some(match rest {
        "open" => Hint::Unknown,
        "stat" | "read" | "opendir" | "savedir" | "readlink" => Hint::Read,
        _ => Hint::Write,
    })
}

/// Python names no access; its exception line sometimes does (`open(…, 'w')` is not printed).
fn python_hint(head: &str) -> Hint {
    verb_hint(head, head)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(line: &str) -> Option<(String, Hint, bool)> {
        read(line, &[]).map(|n| (n.text, n.hint, n.program))
    }

    #[test]
    fn only_what_the_line_names_as_a_path_is_a_target() {
        let cc1 = "gcc: fatal error: cannot execute '/usr/lib/gcc/x86_64-linux-gnu/12/cc1': execv: Permission denied";
        assert_eq!(named(cc1), Some(("/usr/lib/gcc/x86_64-linux-gnu/12/cc1".into(), Hint::Run, false)));
        assert_eq!(
            named("cp: cannot open '/x/f' for reading: Permission denied"),
            Some(("/x/f".into(), Hint::Read, false))
        );
        assert_eq!(named("sh: 1: kill: Operation not permitted"), None);
        assert_eq!(named("cat: notes.txt: Permission denied"), Some(("notes.txt".into(), Hint::Read, false)));
        assert_eq!(named("sh: 1: seq: Permission denied"), Some(("seq".into(), Hint::Run, true)));
        // A launcher's program, by name; make and find name files the same way (`explain`
        // tells them apart), and a phrase with a name in it is no operand.
        for line in [
            "env: ‘cc’: Permission denied",
            "xargs: cc: Permission denied",
            "nohup: failed to run command 'cc': Permission denied",
            "timeout: failed to run command ‘cc’: Permission denied",
            "/usr/bin/nice: ‘cc’: Permission denied",
        ] {
            assert_eq!(named(line), Some(("cc".into(), Hint::Run, true)), "{line}");
        }
        for (line, hint) in
            [("make: cc: Permission denied", Hint::Unknown), ("find: ‘cc’: Permission denied", Hint::Read)]
        {
            let n = read(line, &[]).unwrap();
            assert_eq!(
                (n.text.as_str(), n.hint, n.program, n.program_or_file),
                ("cc", hint, false, true),
                "{line}"
            );
        }
        assert_eq!(named("make: ./run.sh: Permission denied"), Some(("./run.sh".into(), Hint::Run, true)));
        assert!(
            read("env: ‘cc’ and more: Permission denied", &[])
                .is_none_or(|n| !n.program_or_file && !n.program)
        );
        assert!(read("env: cc: No such file or directory", &[]).is_none_or(|n| !n.program));
        assert!(read("find: ‘..’: Permission denied", &[]).is_none_or(|n| !n.program_or_file));
        let git_exec = "fatal: cannot exec 'git-upload-pack '/var/tmp/r/.git'': Permission denied";
        assert_eq!(named(git_exec), Some(("sh".into(), Hint::Run, true)), "git ran it through the shell");
        let alone = "fatal: cannot exec 'git-upload-pack': Permission denied";
        assert_eq!(named(alone), Some(("git-upload-pack".into(), Hint::Run, true)));
        // git's "does not exist", said of the quoted path only.
        let git = read("fatal: repository '/var/tmp/r' does not exist", &[]).unwrap();
        assert_eq!((git.text.as_str(), git.hint, git.reason), ("/var/tmp/r", Hint::Read, Reason::Unseen));
        assert_eq!(read("fatal: repository '/var/tmp/r' on a host does not exist", &[]), None);
        assert_eq!(read("x: does not exist: '/srv/a/new.txt'", &[]), None, "not git's shape");
        assert_eq!(read("error: file '/srv/a/new.txt' does not exist", &[]), None, "not git's shape");
        assert_eq!(
            named("bash: line 1: ./run.sh: Permission denied"),
            Some(("./run.sh".into(), Hint::Run, true))
        );
        assert_eq!(named("bash: ./run.sh: Permission denied"), Some(("./run.sh".into(), Hint::Run, true)));
        // A phrase is no operand; a sentence with no path names nothing.
        assert_eq!(named("error: the operation was refused: Permission denied"), None);
        assert_eq!(named("fatal: Unable to read current working directory: Permission denied"), None);
        assert_eq!(named("Permission denied"), None);
    }

    #[test]
    fn each_tools_shape_gives_its_path_and_access() {
        let cases: &[(&str, &str, Hint)] = &[
            ("touch: cannot touch '/home/a/x': Read-only file system", "/home/a/x", Hint::Write),
            ("mkdir: cannot create directory ‘/opt/new’: Permission denied", "/opt/new", Hint::Write),
            ("ls: cannot open directory '/opt': Permission denied", "/opt", Hint::Read),
            ("PermissionError: [Errno 13] Permission denied: '/srv/x'", "/srv/x", Hint::Unknown),
            ("OSError: [Errno 30] Read-only file system: '/srv/y'", "/srv/y", Hint::Unknown),
            ("Error: EACCES: permission denied, open '/x/a.txt'", "/x/a.txt", Hint::Unknown),
            (
                "npm ERR! Error: EACCES: permission denied, mkdir '/usr/lib/node_modules/x'",
                "/usr/lib/node_modules/x",
                Hint::Write,
            ),
            ("[Error: EROFS: read-only file system, open '/etc/x']", "/etc/x", Hint::Write),
            ("tar: d/f: Cannot open: Permission denied", "d/f", Hint::Unknown),
            ("tar: d: Cannot mkdir: Permission denied", "d", Hint::Write),
            (
                "error: could not lock config file /r/.git/config: Permission denied",
                "/r/.git/config",
                Hint::Write,
            ),
            ("fatal: could not create work tree dir 'clone': Permission denied", "clone", Hint::Write),
            ("grep: /etc/shadow: Permission denied", "/etc/shadow", Hint::Read),
            ("error: unable to create file f.txt: Permission denied", "f.txt", Hint::Write),
            ("python3: can't open file '/x/y.py': [Errno 13] Permission denied", "/x/y.py", Hint::Unknown),
            ("cp: cannot stat '/x': Permission denied", "/x", Hint::Read),
            ("rm: cannot remove '/x': Permission denied", "/x", Hint::Write),
        ];
        for (line, path, hint) in cases {
            let n = read(line, &[]).unwrap_or_else(|| panic!("nothing read from {line}"));
            assert_eq!((n.text.as_str(), n.hint), (*path, *hint), "{line}");
        }
        let ro = read("touch: cannot touch 'x': Read-only file system", &[]).unwrap();
        assert_eq!(ro.reason, Reason::ReadOnly);
    }

    #[test]
    fn a_rust_programs_path_is_on_a_line_before() {
        let before = ["error: failed to create directory `/x/target/debug`", "", "Caused by:"];
        let n = read("  Permission denied (os error 13)", &before).unwrap();
        assert_eq!((n.text.as_str(), n.hint), ("/x/target/debug", Hint::Write));
        assert_eq!(read("  Permission denied (os error 13)", &["no path here"]), None);
    }

    #[test]
    fn long_or_odd_lines_name_nothing() {
        assert_eq!(read(&"a".repeat(5000), &[]), None);
        assert_eq!(read("x: : Permission denied", &[]), None);
        assert_eq!(read(": Permission denied", &[]), None);
        assert_eq!(read("'': Permission denied", &[]), None);
    }
}
