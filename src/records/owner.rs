//! Whose records these are: lnk acts only on the caller's own.
//!
//! Why this exists (issue 10, item 7): root's `lnk-link-run sweep` killed a root process group
//! named by a record that uid 1001 had planted in a records folder left writable to others. A
//! record is an instruction to signal a process group, so who wrote it matters as much as what
//! it says. The rules:
//!
//! - **The agent folder** (`--agent-dir`) must belong to the caller or to root and be writable
//!   by neither group nor others: whoever can write in it can replace `runs`.
//! - **The records folder** (`<agent-dir>/runs`) must belong to the caller (the effective uid,
//!   the owner of every file lnk creates) and be writable by neither group nor others. It is
//!   checked with `fstat` on the descriptor opened with `O_NOFOLLOW | O_DIRECTORY`, the one
//!   every later operation goes through, so a folder swapped in after the check is never used.
//! - **Each record file and lock file** is checked with `fstat` on the descriptor lnk actually
//!   reads or locks: it must belong to the caller, be a regular file, and have exactly one link.
//!   Anything else is *not ours*: it is never signalled on the strength of, locked, rewritten,
//!   renamed aside or removed; it is reported as skipped, with the reason, and left for a human.
//! - **Hard links.** lnk never makes a hard link in `runs`, so a second link means someone else
//!   made one. A link to a file the caller owns passes the owner check, and could bring another
//!   folder's record (or another lock) here; so a file with more than one link is not trusted
//!   either, whoever owns it.
//! - **Names after the check.** Once `runs` is the caller's and closed to others, only the
//!   caller can add, rename or remove names in it. So a name whose file was checked through its
//!   descriptor still names that file when lnk later renames or removes it by name: nobody else
//!   can swap it in between. A foreign file found in a good folder (planted while the folder
//!   was open, before it was fixed) stays foreign, and is left alone.

use std::path::Path;

use rustix::fs::{FileType, Stat};

/// The caller: the effective uid, which owns every file and folder lnk creates.
pub fn caller() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Which folder is being checked, for the rule and the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Folder {
    /// `--agent-dir`: the caller's or root's.
    Agent,
    /// `<agent-dir>/runs`: the caller's only.
    Records,
}

/// Refuses a folder that someone other than the caller (or, for the agent folder, root) owns
/// or can write in. The message says what was found and how to fix it.
pub fn check_folder(stat: &Stat, path: &Path, folder: Folder, uid: u32) -> Result<(), String> {
    let (owner, mode) = (stat.st_uid, stat.st_mode & 0o7777);
    let owner_ok = owner == uid || (folder == Folder::Agent && owner == 0);
    let mode_ok = mode & 0o022 == 0;
    if owner_ok && mode_ok {
        return Ok(());
    }
    let (what, who) = match folder {
        Folder::Agent => ("the agent folder", format!("you (uid {uid}) or root")),
        Folder::Records => ("the records folder", format!("you (uid {uid})")),
    };
    let mut found = Vec::new();
    if !owner_ok {
        found.push(format!("it belongs to uid {owner}, but must belong to {who}"));
    }
    if !mode_ok {
        found.push(format!(
            "its mode is {mode:04o}, so {} can write in it; it must not be writable by group or others",
            if mode & 0o002 != 0 { "every user" } else { "its group" }
        ));
    }
    let p = path.display();
    let fix = match folder {
        Folder::Agent if !owner_ok => {
            format!(
                "use an agent folder of your own, or, if this one should be yours: `chown {uid} {p}` and `chmod go-w {p}`"
            )
        }
        Folder::Agent => format!("`chmod go-w {p}`"),
        Folder::Records => format!(
            "if every file in it is yours: `chown -R {uid} {p}` and `chmod 700 {p}`; otherwise remove it \
             (`rm -r {p}`, as root or its owner) and lnk makes a new one"
        ),
    };
    Err(format!(
        "refusing {what} {p}: {}; another user could plant records there that lnk would act on. Fix: {fix}",
        found.join(", and ")
    ))
}

/// Why a file opened in the records folder is not the caller's to act on, if it is not.
pub fn not_ours(stat: &Stat, uid: u32) -> Option<String> {
    if stat.st_uid != uid {
        return Some(format!("it belongs to uid {}, not to you (uid {uid})", stat.st_uid));
    }
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Some("it is not a regular file".to_owned());
    }
    if stat.st_nlink != 1 {
        return Some(format!(
            "it has {} hard links, and lnk never makes one, so someone else did",
            stat.st_nlink
        ));
    }
    None
}

/// The sentence a skipped file gets: what was found, and what to do.
pub fn skipped(path: &Path, why: &str) -> String {
    format!(
        "{}: {why}; left alone (not signalled, not changed, not removed). Someone else put it there: \
         look at it, then remove it as root or its owner",
        path.display()
    )
}
