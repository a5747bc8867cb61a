//! `lnk file`: one sandbox serves a session's file calls.
//!
//! The harness starts `lnk sandbox run --file FILE --tool file -- lnk file --files-dir DIR` once
//! per session and then writes one JSON request per line on its standard input; each gets one
//! JSON answer per line on standard output, with the request's `id` echoed and `seq`, the
//! request's line number in the session (1-based; blank lines get no answer but count):
//!
//! ```text
//! {"id":1,"op":"read","path":"notes.md","offset":0,"limit":100}
//! {"id":1,"seq":1,"ok":{"size":120,"mtime_ns":…,"offset":0,"lines":3,"more":false,"text":"…"}}
//! {"id":2,"op":"read","path":"../x"}
//! {"id":2,"seq":2,"error":{"kind":"bad_path","message":"the path climbs out of its root with `..`"}}
//! {"id":{"turn":3},"op":"stat","path":"."}
//! {"id":null,"raw_id":"{\"turn\":3}","seq":3,"ok":{…}}
//! ```
//!
//! An id that is not a string or an integer, or one in a line that is not valid JSON, cannot be
//! echoed as it was: the answer then has `"id":null` and `raw_id`, the id's text as written
//! (see [`answer_id`]). With `seq` a harness can match every answer, even to a line with no id.
//!
//! What it guarantees, on top of the sandbox it runs in:
//! - it starts nothing: `execve` and `execveat` are refused by a seccomp filter it installs on
//!   itself before reading the first request;
//! - every path goes through [`roots`]: beneath its root, no symlink followed, and written only
//!   where a `[files] write` grant covers it;
//! - a write is atomic (a new file, synced, renamed over the old name): never half-written, even
//!   if the session is killed mid-write; the new file keeps the old one's owner, group and
//!   permission bits, and the temporary file a killed write leaves is removed by the next session
//!   that writes there (see [`ops::temp`]);
//! - a write never replaces a file the session could not open for writing, nor one whose owner
//!   and group it cannot give the replacement: `denied`, nothing written (see `ops::write`);
//! - every name can be reached by the name an answer gives: one that is not UTF-8 comes escaped,
//!   with `"escaped": true`, and goes back the same way (see `names`);
//! - `write` and `edit` told which version they replace (`expect`) answer `changed` and write
//!   nothing when the file is another version now;
//! - every answer is bounded and says so: a read or list says `more` and where to go on, a
//!   search says whether it is `complete` and what it skipped;
//! - a bad request is an error answer, never the end of the session; a line over
//!   [`MAX_LINE`] bytes is refused without being held in memory whole.
//!
//! Trusted with: what the agent's file calls may read and change: a bug here could let a request
//! read or write outside the grants, or run a program. What it trusts: the sandbox it runs in (it
//! does not itself keep the protected set or `[files] deny` out of its grants) and the grants the
//! launcher passed; nothing of a request: each line is parsed strictly and each path resolved by
//! [`roots`].

mod names;
mod ops;
pub mod roots;

use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::json::{self, parse::Value};
use roots::Roots;

/// The variable `lnk sandbox run --tool file` passes the sandbox's flags in (a JSON array),
/// which `lnk file` reads: the session's grants are the sandbox's.
pub const FLAGS_VAR: &str = "LNK_SANDBOX_FLAGS";

/// The longest request line: a write's content must fit.
pub const MAX_LINE: usize = 16 << 20;

/// An error answer: a kind a program can branch on, and a message a person can read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileError {
    pub kind: &'static str,
    pub message: String,
}

impl FileError {
    pub fn new(kind: &'static str, message: impl Into<String>) -> FileError {
        FileError { kind, message: message.into() }
    }

    /// Maps a system error to a kind, naming the path.
    pub fn from_errno(e: rustix::io::Errno, path: &str) -> FileError {
        use rustix::io::Errno;
        let (kind, what) = match e {
            Errno::NOENT => ("not_found", "does not exist"),
            Errno::LOOP | Errno::XDEV => {
                ("symlink", "is, or passes through, a symbolic link, which is never followed")
            }
            Errno::EXIST => ("exists", "already exists"),
            Errno::NOTDIR => ("not_a_folder", "is not a folder (or a part of it is not)"),
            Errno::ISDIR => ("not_a_file", "is a folder"),
            Errno::ACCESS | Errno::PERM | Errno::ROFS => ("denied", "may not be reached here"),
            Errno::NOTEMPTY => ("not_empty", "is not empty"),
            Errno::NAMETOOLONG => ("bad_path", "is too long"),
            _ => ("io", ""),
        };
        let message = if what.is_empty() {
            format!("`{path}`: {}", std::io::Error::from(e))
        } else {
            format!("`{path}` {what}")
        };
        FileError { kind, message }
    }
}

/// One parsed request.
pub struct Request {
    fields: Value,
}

impl Request {
    fn field(&self, key: &str) -> Option<&Value> {
        self.fields.get(key)
    }

    pub fn str(&self, key: &str) -> Result<&str, FileError> {
        self.opt_str(key)?.ok_or_else(|| FileError::new("bad_request", format!("`{key}` is needed")))
    }

    pub fn opt_str(&self, key: &str) -> Result<Option<&str>, FileError> {
        match self.field(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_str()
                .map(Some)
                .ok_or_else(|| FileError::new("bad_request", format!("`{key}` must be a string"))),
        }
    }

    /// A path field as the bytes it names: its text, or with `"escaped": true` in the request,
    /// its escapes decoded (see `names`); `default` when it is absent.
    pub fn path(&self, key: &str, default: Option<&str>) -> Result<Vec<u8>, FileError> {
        let escaped = self.opt_bool("escaped")?.unwrap_or(false);
        match (self.opt_str(key)?, default) {
            (Some(text), _) => names::request_bytes(text, escaped),
            (None, Some(text)) => Ok(text.as_bytes().to_vec()),
            (None, None) => Err(FileError::new("bad_request", format!("`{key}` is needed"))),
        }
    }

    pub fn opt_u64(&self, key: &str) -> Result<Option<u64>, FileError> {
        match self.field(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => {
                v.as_i64().and_then(|n| u64::try_from(n).ok()).map(Some).ok_or_else(|| {
                    FileError::new("bad_request", format!("`{key}` must be a whole number ≥ 0"))
                })
            }
        }
    }

    pub fn opt_bool(&self, key: &str) -> Result<Option<bool>, FileError> {
        match self.field(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_bool()
                .map(Some)
                .ok_or_else(|| FileError::new("bad_request", format!("`{key}` must be true or false"))),
        }
    }
}

/// The longest `raw_id` echoed, in bytes.
const MAX_RAW_ID: usize = 200;

/// How much of a request line over [`MAX_LINE`] is kept, to find its `id`.
const KEPT_OF_LONG_LINE: usize = 4096;

/// The answer's `id` as JSON, and the raw text of an id that cannot be echoed as one.
///
/// A string or integer id is echoed as it was. Any other id (an object, a float, `true`), or
/// one in a line that is not valid JSON, is answered with `"id":null` and `"raw_id"`: the id's
/// text as written (at most [`MAX_RAW_ID`] bytes), for the harness to match on; an id found in a
/// broken line that is itself a string or an integer is echoed as the id.
fn answer_id(line: &str, parsed: Option<&Value>) -> (String, Option<String>) {
    let echo = |v: &Value| match v {
        Value::String(s) => Some(json::string(s)),
        Value::Int(n) => Some(n.to_string()),
        _ => None,
    };
    match parsed {
        Some(Value::Object(fields)) => match fields.get("id") {
            None | Some(Value::Null) => return ("null".into(), None),
            Some(v) => {
                if let Some(id) = echo(v) {
                    return (id, None);
                }
            }
        },
        Some(_) => return ("null".into(), None),
        None => {}
    }
    let Some(raw) = json::scan::top_level_field(line, "id") else { return ("null".into(), None) };
    if let Some(id) = json::parse::parse(raw).ok().as_ref().and_then(echo) {
        return (id, None);
    }
    let mut cut = raw.len().min(MAX_RAW_ID);
    while !raw.is_char_boundary(cut) {
        cut -= 1;
    }
    ("null".into(), Some(raw[..cut].to_owned()))
}

/// One answer line: the id (and raw id), the sequence number, and `ok` or `error`.
fn envelope((id, raw_id): (String, Option<String>), seq: u64, result: Result<String, FileError>) -> String {
    let mut out = json::Object::new().raw("id", &id);
    if let Some(raw) = raw_id {
        out = out.str("raw_id", &raw);
    }
    out = out.num("seq", seq);
    match result {
        Ok(ok) => out.raw("ok", &ok),
        Err(e) => {
            out.raw("error", &json::Object::new().str("kind", e.kind).str("message", &e.message).finish())
        }
    }
    .finish()
}

/// Answers one request line; `seq` is its line number in the session (1-based).
pub fn answer(roots: &mut Roots, line: &str, seq: u64) -> String {
    let parsed = json::parse::parse(line);
    let id = answer_id(line, parsed.as_ref().ok());
    let result = match parsed {
        Err(why) => Err(FileError::new("bad_request", why)),
        Ok(fields @ Value::Object(_)) => dispatch(roots, &Request { fields }),
        Ok(_) => Err(FileError::new("bad_request", "a request is a JSON object")),
    };
    envelope(id, seq, result)
}

fn dispatch(roots: &mut Roots, req: &Request) -> Result<String, FileError> {
    match req.str("op")? {
        "read" => ops::read(roots, req),
        "write" => ops::write(roots, req),
        "edit" => ops::edit(roots, req),
        "list" => ops::list(roots, req),
        "stat" => ops::stat(roots, req),
        "search" => ops::search(roots, req),
        "mkdir" => ops::mkdir(roots, req),
        "move" => ops::rename(roots, req),
        "remove" => ops::remove(roots, req),
        other => Err(FileError::new(
            "bad_request",
            format!(
                "unknown op `{}`: read, write, edit, list, stat, search, mkdir, move, remove",
                other.escape_debug()
            ),
        )),
    }
}

/// Refuses `execve` and `execveat` from here on: a file session can never run code.
pub fn forbid_exec() -> Result<(), String> {
    crate::sandbox::seccomp::install(&exec_filter()).map_err(|e| e.to_string())
}

/// The filter [`forbid_exec`] installs, built apart so a test can build it before forking.
pub fn exec_filter() -> Vec<crate::bpf::Instruction> {
    use crate::bpf::{Answer, Entry, Policy};
    let mut policy = Policy::default();
    for nr in [libc::SYS_execve, libc::SYS_execveat] {
        policy.set(nr, Entry::Always(Answer::Errno(libc::EPERM as u16)));
    }
    policy.compile()
}

/// Runs a session: requests from standard input until it closes.
pub fn serve(home: PathBuf, files_dir: &Path, read: Vec<PathBuf>, write: Vec<PathBuf>) -> Result<(), String> {
    forbid_exec().map_err(|e| format!("cannot forbid exec: {e}"))?;
    let mut roots = Roots::new(home, files_dir, read, write)?;
    roots.sweep_files_folder();
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let stdout = std::io::stdout();
    let mut output = std::io::BufWriter::new(stdout.lock());
    let mut line = Vec::new();
    let mut seq = 0u64;
    loop {
        line.clear();
        let (n, too_long) = read_line(&mut input, &mut line).map_err(|e| e.to_string())?;
        if n == 0 {
            return Ok(());
        }
        // Every line counts, blank ones too: `seq` is the request's line number.
        seq += 1;
        let reply = match std::str::from_utf8(&line) {
            _ if too_long => envelope(
                answer_id(&String::from_utf8_lossy(&line), None),
                seq,
                Err(FileError::new("too_large", format!("a request line is at most {MAX_LINE} bytes"))),
            ),
            Ok(text) if text.trim().is_empty() => continue,
            Ok(text) => answer(&mut roots, text, seq),
            Err(_) => envelope(
                answer_id(&String::from_utf8_lossy(&line), None),
                seq,
                Err(FileError::new("bad_request", "a request line is UTF-8 JSON")),
            ),
        };
        if writeln!(output, "{reply}").and_then(|()| output.flush()).is_err() {
            return Ok(());
        }
    }
}

/// Reads one line into `line` (without the newline), keeping at most [`MAX_LINE`] bytes (of a
/// longer line, only its first [`KEPT_OF_LONG_LINE`] bytes, to find its `id`); returns the bytes
/// consumed (0 at the end) and whether the line was longer.
fn read_line(input: &mut impl std::io::BufRead, line: &mut Vec<u8>) -> std::io::Result<(usize, bool)> {
    let mut consumed = 0;
    let mut too_long = false;
    loop {
        let buf = input.fill_buf()?;
        if buf.is_empty() {
            return Ok((consumed, too_long));
        }
        let (chunk, done) = match memchr::memchr(b'\n', buf) {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        if !too_long && line.len() + chunk.len() > MAX_LINE {
            too_long = true;
            line.truncate(KEPT_OF_LONG_LINE);
        } else if !too_long {
            line.extend_from_slice(chunk);
        }
        let used = done.unwrap_or(buf.len());
        input.consume(used);
        consumed += used;
        if done.is_some() {
            return Ok((consumed, too_long));
        }
    }
}
