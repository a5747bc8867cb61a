//! The record of one background command, and its on-disk form.
//!
//! A record is a small TOML file. It is written by lnk only, with the writer below (every string
//! escaped, so a program name or argument holding `"`, a newline or `[table]` stays data), and
//! read back strictly with toml_edit: an unknown key, a missing key, a wrong type or a value out
//! of range makes the whole record invalid. An invalid record is never acted on: no signal is
//! sent on the strength of a number from a file that did not parse exactly.
//!
//! Its size is bounded, and the reader's limit and the writer's bounds are one constant,
//! [`MAX_RECORD_BYTES`], so a record lnk writes is always one it can read back (a record the
//! reader refused would lose how its command ended). What a record holds is of three kinds:
//! - `output_end`, the only part a command's behaviour decides: at most
//!   [`OUTPUT_END_MAX_BYTES`] bytes of UTF-8, which escaping can make at most 6 times larger
//!   (a control character is written `\u0001`): at most 3/8 of the limit;
//! - what the caller gave `start` (program, arguments, sandbox flags, conversation): `start`
//!   refuses a command whose first record is over [`START_RECORD_MAX_BYTES`], half the limit;
//! - numbers, a state and a `detail` sentence of lnk's own, which fit in the last 1/8.
//!
//! [`Records::write`](super::Records::write) refuses a record over the limit all the same,
//! rather than write one that could not be read.
//!
//! Trusted with: that a record reads back as lnk wrote it, so that nothing a program prints or a
//! caller passes can forge a field (a group number the sweep would kill). What it trusts:
//! `toml_edit`'s parser; nothing in a file it reads.

use std::fmt::Write as _;

use toml_edit::{Document, Item};

/// The largest record the reader accepts, and so the largest the writer may write.
pub const MAX_RECORD_BYTES: usize = 1 << 20;

/// The most bytes of `output_end` (UTF-8, before escaping) a record keeps: 64 KiB. At 6 escaped
/// bytes per byte at worst, 384 KiB of the record. The default `[tool.run] output` (30000
/// characters, so 15000 at the end) always fits, even in 4-byte characters.
pub const OUTPUT_END_MAX_BYTES: usize = MAX_RECORD_BYTES / 16;

/// The most bytes of `detail` a record keeps (lnk's own sentence; a refusal's may quote paths).
pub const DETAIL_MAX_BYTES: usize = 4096;

/// The start of `text`, at most `max` bytes, never splitting a character.
pub fn clip(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The largest first record `start` accepts (the caller's program, arguments, sandbox flags and
/// conversation): half the limit, leaving room for `output_end` and lnk's own fields.
pub const START_RECORD_MAX_BYTES: usize = MAX_RECORD_BYTES / 2;

/// How far a background command got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// The record exists; the supervisor is starting the command.
    Starting,
    Running,
    Exited,
    Signaled,
    TimedOut,
    Stopped,
    /// The supervisor died without a word, or the agent went away (`stop --all`).
    Lost,
    /// The command could not be started (refused, not found, the sandbox could not be made).
    Failed,
}

impl State {
    pub fn name(self) -> &'static str {
        match self {
            State::Starting => "starting",
            State::Running => "running",
            State::Exited => "exited",
            State::Signaled => "signaled",
            State::TimedOut => "timed_out",
            State::Stopped => "stopped",
            State::Lost => "lost",
            State::Failed => "failed",
        }
    }

    fn from_name(name: &str) -> Option<State> {
        [
            State::Starting,
            State::Running,
            State::Exited,
            State::Signaled,
            State::TimedOut,
            State::Stopped,
            State::Lost,
            State::Failed,
        ]
        .into_iter()
        .find(|s| s.name() == name)
    }

    /// Whether the command has ended (and the record says how).
    pub fn ended(self) -> bool {
        !matches!(self, State::Starting | State::Running)
    }
}

/// Where the command's process group is, as the supervisor recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupIdentity {
    /// The keeper's pid, which is the process group's number.
    pub keeper_pid: i32,
    /// The keeper's start time in clock ticks since boot (`/proc/<pid>/stat` field 22).
    pub keeper_start: u64,
    /// `/proc/sys/kernel/random/boot_id` when it was recorded.
    pub boot_id: String,
    /// The inode of `/proc/self/ns/pid` of the supervisor: the pid namespace the number means
    /// something in.
    pub pid_namespace: u64,
}

/// The supervisor's own identity, so `stop` can signal it and nothing else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SupervisorIdentity {
    pub pid: i32,
    pub start: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub id: String,
    pub program: String,
    pub args: Vec<String>,
    /// The flags of `lnk sandbox run` the command runs under.
    pub sandbox: Vec<String>,
    pub conversation: String,
    /// The hop of the call that started the command.
    pub hop: u32,
    pub timeout_secs: u32,
    /// `[tool.run] output`: half of it is the output's end told in the message.
    pub output_chars: u32,
    pub started_ms: u64,
    pub state: State,
    pub supervisor: Option<SupervisorIdentity>,
    pub group: Option<GroupIdentity>,
    /// The leaders of the groups the command made of its own (the Landlock-only mode's held
    /// `setsid` and `setpgid`), at most [`crate::procfs::MAX_LEADERS`], on the boot and in the pid namespace of
    /// `group`: the sweep ends each one it can prove (see `background::sweep`).
    pub groups: Vec<crate::procfs::Process>,
    /// The command made more groups than `groups` holds.
    pub more_groups: bool,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// Why it failed or was lost, in words.
    pub detail: String,
    /// Lost with processes that could not be proven the command's, so not signalled.
    pub leftovers_possible: bool,
    pub ended_ms: Option<u64>,
    /// Output bytes written to the file, and bytes dropped past the cap.
    pub output_bytes: u64,
    pub output_dropped: u64,
    /// (device, inode) of `background/<id>.out`, so `read` can tell it from a swapped-in file.
    pub output_inode: Option<(u64, u64)>,
    /// The end of the output, as the message tells it.
    pub output_end: String,
    /// The message was handed to the bridge (or is being): never send it again.
    pub told: bool,
    /// What the sandbox refused the command (see [`crate::denials`]); empty until it ends.
    pub denials: Vec<crate::denials::Denial>,
}

/// The current record format; a record of another version is not read.
pub const VERSION: i64 = 1;

/// A group leader as a record keeps it, `PID:START` (pid 2 and above, start time in ticks).
fn parse_leader(text: &str) -> Result<crate::procfs::Process, String> {
    let bad = || format!("`groups` holds `{}`, not PID:START", text.escape_debug());
    let (pid, start) = text.split_once(':').ok_or_else(bad)?;
    let digits = |s: &str| !s.is_empty() && s.len() <= 20 && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(pid) || !digits(start) {
        return Err(bad());
    }
    let pid: i32 = pid.parse().ok().filter(|p| *p >= 2).ok_or_else(bad)?;
    let start: u64 = start.parse().map_err(|_| bad())?;
    Ok(crate::procfs::Process { pid, start })
}

/// A TOML basic string. JSON's string escapes (`\"`, `\\`, `\n`, `\r`, `\t`, `\uXXXX` for every
/// other control character and DEL) are all TOML basic-string escapes too, so the JSON writer's
/// escaping serves: nothing in the value can end the string or the line.
fn toml_string(s: &str) -> String {
    crate::json::string(s)
}

fn toml_array(items: &[String]) -> String {
    let parts: Vec<String> = items.iter().map(|s| toml_string(s)).collect();
    format!("[{}]", parts.join(", "))
}

impl Record {
    pub fn to_toml(&self) -> String {
        let mut t = String::new();
        let mut line = |k: &str, v: String| {
            let _ = writeln!(t, "{k} = {v}");
        };
        line("version", VERSION.to_string());
        line("id", toml_string(&self.id));
        line("program", toml_string(&self.program));
        line("args", toml_array(&self.args));
        line("sandbox", toml_array(&self.sandbox));
        line("conversation", toml_string(&self.conversation));
        line("hop", self.hop.to_string());
        line("timeout_secs", self.timeout_secs.to_string());
        line("output_chars", self.output_chars.to_string());
        line("started_ms", self.started_ms.to_string());
        line("state", toml_string(self.state.name()));
        if let Some(s) = &self.supervisor {
            line("supervisor_pid", s.pid.to_string());
            line("supervisor_start", s.start.to_string());
        }
        if let Some(g) = &self.group {
            line("keeper_pid", g.keeper_pid.to_string());
            line("keeper_start", g.keeper_start.to_string());
            line("boot_id", toml_string(&g.boot_id));
            line("pid_namespace", g.pid_namespace.to_string());
        }
        if !self.groups.is_empty() {
            let each: Vec<String> = self.groups.iter().map(|p| format!("{}:{}", p.pid, p.start)).collect();
            line("groups", toml_array(&each));
        }
        if self.more_groups {
            line("more_groups", "true".into());
        }
        if let Some(c) = self.exit_code {
            line("exit_code", c.to_string());
        }
        if let Some(s) = self.signal {
            line("signal", s.to_string());
        }
        line("detail", toml_string(&self.detail));
        line("leftovers_possible", self.leftovers_possible.to_string());
        if let Some(e) = self.ended_ms {
            line("ended_ms", e.to_string());
        }
        line("output_bytes", self.output_bytes.to_string());
        line("output_dropped", self.output_dropped.to_string());
        if let Some((dev, ino)) = self.output_inode {
            line("output_dev", dev.to_string());
            line("output_ino", ino.to_string());
        }
        line("told", self.told.to_string());
        if !self.denials.is_empty() {
            let each: Vec<String> = self.denials.iter().map(|d| toml_array(&d.to_fields())).collect();
            line("denials", format!("[{}]", each.join(", ")));
        }
        // Last, so the short lines before it are within the first bytes of the file even when it
        // is large (see `Records::settled`).
        line("output_end", toml_string(&self.output_end));
        t
    }

    /// Parses a record strictly. Any deviation is an error naming it.
    pub fn parse(text: &str) -> Result<Record, String> {
        let doc = Document::parse(text).map_err(|e| format!("not TOML: {}", e.message()))?;
        let root = doc.as_table();
        let known = [
            "version",
            "id",
            "program",
            "args",
            "sandbox",
            "conversation",
            "hop",
            "timeout_secs",
            "output_chars",
            "started_ms",
            "state",
            "supervisor_pid",
            "supervisor_start",
            "keeper_pid",
            "keeper_start",
            "boot_id",
            "pid_namespace",
            "groups",
            "more_groups",
            "exit_code",
            "signal",
            "detail",
            "leftovers_possible",
            "ended_ms",
            "output_bytes",
            "output_dropped",
            "output_dev",
            "output_ino",
            "output_end",
            "told",
            "denials",
        ];
        if let Some((k, _)) = root.iter().find(|(k, _)| !known.contains(k)) {
            return Err(format!("unknown key `{}`", k.escape_debug()));
        }
        let get = |k: &str| root.get(k);
        let string = |k: &str| -> Result<String, String> {
            get(k)
                .and_then(Item::as_str)
                .map(str::to_owned)
                .ok_or_else(|| format!("`{k}` is missing or not a string"))
        };
        let int = |k: &str, min: i64, max: i64| -> Result<Option<i64>, String> {
            match get(k) {
                None => Ok(None),
                Some(item) => match item.as_integer() {
                    Some(n) if (min..=max).contains(&n) => Ok(Some(n)),
                    _ => Err(format!("`{k}` is not an integer from {min} to {max}")),
                },
            }
        };
        let need = |k: &str, min: i64, max: i64| int(k, min, max)?.ok_or_else(|| format!("`{k}` is missing"));
        let boolean = |k: &str| {
            get(k).and_then(Item::as_bool).ok_or_else(|| format!("`{k}` is missing or not a boolean"))
        };
        let strings = |k: &str| -> Result<Vec<String>, String> {
            let array = get(k).and_then(Item::as_array).ok_or_else(|| format!("`{k}` is not an array"))?;
            array
                .iter()
                .map(|v| v.as_str().map(str::to_owned).ok_or_else(|| format!("`{k}` holds a non-string")))
                .collect()
        };
        if need("version", VERSION, VERSION).is_err() {
            return Err(format!("not a version {VERSION} record"));
        }
        let id = string("id")?;
        validate_id(&id)?;
        let state_name = string("state")?;
        let state = State::from_name(&state_name)
            .ok_or_else(|| format!("unknown state `{}`", state_name.escape_debug()))?;
        let supervisor =
            match (int("supervisor_pid", 2, i64::from(i32::MAX))?, int("supervisor_start", 0, i64::MAX)?) {
                (Some(pid), Some(start)) => Some(SupervisorIdentity { pid: pid as i32, start: start as u64 }),
                (None, None) => None,
                _ => return Err("`supervisor_pid` and `supervisor_start` go together".into()),
            };
        let group = match (int("keeper_pid", 2, i64::from(i32::MAX))?, int("keeper_start", 0, i64::MAX)?) {
            (Some(pid), Some(start)) => {
                let boot_id = string("boot_id")?;
                if !is_uuid(&boot_id) {
                    return Err("`boot_id` is not a UUID".into());
                }
                let ns = need("pid_namespace", 1, i64::MAX)? as u64;
                Some(GroupIdentity {
                    keeper_pid: pid as i32,
                    keeper_start: start as u64,
                    boot_id,
                    pid_namespace: ns,
                })
            }
            (None, None) => None,
            _ => return Err("`keeper_pid` and `keeper_start` go together".into()),
        };
        let groups = match get("groups") {
            None => Vec::new(),
            Some(_) if group.is_none() => return Err("`groups` without `keeper_pid`".into()),
            Some(_) => {
                let each = strings("groups")?;
                if each.len() > crate::procfs::MAX_LEADERS {
                    return Err(format!("`groups` holds more than {} leaders", crate::procfs::MAX_LEADERS));
                }
                each.iter().map(|g| parse_leader(g)).collect::<Result<Vec<_>, _>>()?
            }
        };
        let more_groups = match get("more_groups") {
            None => false,
            Some(_) => boolean("more_groups")?,
        };
        Ok(Record {
            id,
            program: string("program")?,
            args: strings("args")?,
            sandbox: strings("sandbox")?,
            conversation: string("conversation")?,
            hop: need("hop", 0, 1_000_000)? as u32,
            timeout_secs: need("timeout_secs", 1, 30 * 86_400)? as u32,
            output_chars: need("output_chars", 1, 1_000_000)? as u32,
            started_ms: need("started_ms", 0, i64::MAX)? as u64,
            state,
            supervisor,
            group,
            groups,
            more_groups,
            exit_code: int("exit_code", 0, 255)?.map(|c| c as i32),
            signal: int("signal", 1, 64)?.map(|s| s as i32),
            detail: string("detail")?,
            leftovers_possible: boolean("leftovers_possible")?,
            ended_ms: int("ended_ms", 0, i64::MAX)?.map(|e| e as u64),
            output_bytes: need("output_bytes", 0, i64::MAX)? as u64,
            output_dropped: need("output_dropped", 0, i64::MAX)? as u64,
            output_inode: match (int("output_dev", 0, i64::MAX)?, int("output_ino", 0, i64::MAX)?) {
                (Some(dev), Some(ino)) => Some((dev as u64, ino as u64)),
                (None, None) => None,
                _ => return Err("`output_dev` and `output_ino` go together".into()),
            },
            output_end: string("output_end")?,
            told: boolean("told")?,
            denials: denials(get("denials"))?,
        })
    }
}

/// The `denials` key: absent (none), or an array of [`crate::denials::Denial::to_fields`] arrays.
fn denials(item: Option<&Item>) -> Result<Vec<crate::denials::Denial>, String> {
    let Some(item) = item else { return Ok(Vec::new()) };
    let bad = || "`denials` is not an array of denials".to_owned();
    let array = item.as_array().ok_or_else(bad)?;
    if array.len() > crate::denials::MAX_DENIALS {
        return Err(bad());
    }
    array
        .iter()
        .map(|entry| {
            let fields = entry.as_array().ok_or_else(bad)?;
            let fields: Vec<String> = fields
                .iter()
                .map(|f| f.as_str().map(str::to_owned).ok_or_else(bad))
                .collect::<Result<_, _>>()?;
            crate::denials::Denial::from_fields(&fields).ok_or_else(bad)
        })
        .collect()
}

/// A record id names files, so it is strictly `r` followed by hex digits.
pub fn validate_id(id: &str) -> Result<(), String> {
    let ok = id.len() >= 2
        && id.len() <= 40
        && id.starts_with('r')
        && id[1..].bytes().all(|b| b.is_ascii_hexdigit());
    if ok { Ok(()) } else { Err(format!("`{}` is not a background command id", id.escape_debug())) }
}

fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.bytes()
            .enumerate()
            .all(|(i, b)| if [8, 13, 18, 23].contains(&i) { b == b'-' } else { b.is_ascii_hexdigit() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    pub fn sample() -> Record {
        Record {
            id: "r1a2b".into(),
            program: "sh".into(),
            args: vec!["-c".into(), "echo \"hi\"\n[table]\npgid = 1".into()],
            sandbox: vec!["--tool".into(), "run".into()],
            conversation: "c-1".into(),
            hop: 2,
            timeout_secs: 3600,
            output_chars: 30000,
            started_ms: 1,
            state: State::Running,
            supervisor: Some(SupervisorIdentity { pid: 10, start: 20 }),
            group: Some(GroupIdentity {
                keeper_pid: 11,
                keeper_start: 21,
                boot_id: "0b8a1c2d-1111-2222-3333-444455556666".into(),
                pid_namespace: 4026531836,
            }),
            groups: Vec::new(),
            more_groups: false,
            exit_code: None,
            signal: None,
            detail: String::new(),
            leftovers_possible: false,
            ended_ms: None,
            output_bytes: 0,
            output_dropped: 0,
            output_inode: Some((64769, 1234)),
            output_end: "\u{0}\u{7f}é".into(),
            told: false,
            denials: Vec::new(),
        }
    }

    #[test]
    fn a_record_round_trips() {
        let r = sample();
        assert_eq!(Record::parse(&r.to_toml()), Ok(r));
    }

    #[test]
    fn the_groups_a_command_made_round_trip_and_bad_ones_are_refused() {
        use crate::procfs::Process;
        let mut r = sample();
        r.groups =
            vec![Process { pid: 300, start: 9 }, Process { pid: 301, start: 18_446_744_073_709_551_615 }];
        r.more_groups = true;
        let text = r.to_toml();
        assert_eq!(Record::parse(&text), Ok(r.clone()));
        let many: Vec<String> =
            (2..2 + crate::procfs::MAX_LEADERS as i32 + 1).map(|p| format!("\"{p}:1\"")).collect();
        for bad in [
            text.replace("\"300:9\"", "\"1:9\""),
            text.replace("\"300:9\"", "\"300\""),
            text.replace("\"300:9\"", "\"-3:9\""),
            text.replace("\"300:9\"", "\"300:9:1\""),
            text.replace("\"300:9\"", "\"300:x\""),
            text.replace("\"300:9\"", "300"),
            text.replace("more_groups = true", "more_groups = 1"),
            format!(
                "groups = [{}]\n{}",
                many.join(", "),
                text.lines().filter(|l| !l.starts_with("groups")).collect::<Vec<_>>().join("\n")
            ),
        ] {
            assert!(Record::parse(&bad).is_err(), "accepted:\n{bad}");
        }
        // Groups need the group's boot and pid namespace.
        r.group = None;
        assert!(Record::parse(&r.to_toml()).is_err());
    }

    #[test]
    fn a_records_denials_round_trip_and_bad_ones_are_refused() {
        use crate::denials::{Access, Cause, Denial};
        let mut r = sample();
        r.denials = vec![
            Denial {
                access: Access::Read,
                target: "/srv/x \"y\"\n".into(),
                cause: Cause::OutsideGrants,
                why: "w".into(),
                fix: Some(crate::denials::Fix::read(std::path::Path::new("/srv/x"))),
                inferred: true,
            },
            Denial {
                access: Access::Session,
                target: "setsid".into(),
                cause: Cause::NeedsOwnWorld,
                why: "w".into(),
                fix: None,
                inferred: false,
            },
        ];
        let text = r.to_toml();
        assert_eq!(Record::parse(&text), Ok(r));
        for bad in [
            text.replace("\"outside_grants\"", "\"nowhere\""),
            text.replace("\"true\"]", "\"yes\"]"),
            text.replace("[\"session\", ", "[1, "),
            text.replace("denials = [[", "denials = [\"x\", ["),
        ] {
            assert!(Record::parse(&bad).is_err(), "accepted:\n{bad}");
        }
    }

    #[test]
    fn hostile_and_corrupt_records_are_refused() {
        let good = sample().to_toml();
        let cases = [
            good.replace("keeper_pid = 11", "keeper_pid = 1"),
            good.replace("keeper_pid = 11", "keeper_pid = 0"),
            good.replace("keeper_pid = 11", "keeper_pid = -1"),
            good.replace("keeper_pid = 11", "keeper_pid = \"11\""),
            good.replace("keeper_pid = 11", "keeper_pid = 99999999999"),
            good.replace("keeper_pid = 11\n", ""),
            good.replace("boot_id = \"0b8a1c2d-1111-2222-3333-444455556666\"", "boot_id = \"x\""),
            good.replace("state = \"running\"", "state = \"zombie\""),
            good.replace("version = 1", "version = 2"),
            good.replace("id = \"r1a2b\"", "id = \"../x\""),
            format!("{good}extra = 1\n"),
            format!("{good}keeper_pid = 12\n"),
            good[..good.len() / 2].to_owned(),
            String::new(),
        ];
        for case in cases {
            assert!(Record::parse(&case).is_err(), "accepted:\n{case}");
        }
    }

    #[test]
    fn the_largest_record_lnk_can_write_fits_the_reader_limit() {
        // The caller's part at the most `start` accepts, the worst-escaping output end at its
        // bound, and lnk's own fields at their longest.
        let mut r = sample();
        r.args = vec![];
        let base = r.to_toml().len();
        r.args = vec!["x".repeat(START_RECORD_MAX_BYTES - base - 4)];
        assert!(r.to_toml().len() <= START_RECORD_MAX_BYTES);
        r.output_end = "\u{1}".repeat(OUTPUT_END_MAX_BYTES);
        r.detail = "d".repeat(DETAIL_MAX_BYTES);
        r.state = State::Lost;
        r.exit_code = Some(255);
        r.signal = Some(64);
        r.ended_ms = Some(u64::MAX >> 1);
        r.output_bytes = u64::MAX >> 1;
        r.output_dropped = u64::MAX >> 1;
        let text = r.to_toml();
        assert!(text.len() <= MAX_RECORD_BYTES, "{} bytes", text.len());
        assert_eq!(Record::parse(&text), Ok(r));
    }

    proptest! {
        #[test]
        fn any_strings_round_trip_as_data(program in "\\PC*", arg in any::<String>(), end in any::<String>()) {
            let mut r = sample();
            r.program = program;
            r.args = vec![arg];
            r.output_end = end;
            prop_assert_eq!(Record::parse(&r.to_toml()), Ok(r));
        }
    }
}
