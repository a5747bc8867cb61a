//! The sweep: what is still running, what died without a word, and what may be cleaned up.
//!
//! For each record, the sweep takes the record's lock without waiting. A lock it cannot take
//! belongs to a live supervisor: that record is left alone. A lock it takes means the supervisor
//! is gone; then, under the lock (so two sweeps act once per record):
//!
//! - a record that never recorded an end is *lost*: its group is killed only when it is provably
//!   the command's ([`identity::prove_group`]), otherwise nothing is signalled and the record
//!   says leftovers are possible;
//! - an ended record whose message was not handed over is told now (marked first);
//! - an ended, told record over a day old is removed with its output.
//!
//! A record that does not parse is never acted on: it is moved aside as `<id>.corrupt` and
//! reported, and nothing is signalled.
//!
//! A record, lock or output file that is not the caller's (another owner, a hard link; see
//! [`crate::records::owner`]) is never acted on either, and not even moved aside: it is reported as
//! skipped, with the reason, and left for a human.
//!
//! Trusted with: which process groups are killed for a supervisor that died, and which records and
//! output files are removed: a bug here could kill processes that are not the command's, or remove
//! files that are not lnk's. What it trusts: the record lock (one it can take means the supervisor
//! is gone), a record only once it parsed strictly and is the caller's, and the kernel's `/proc`
//! and pidfds, through [`identity`], for whether a group is still the command's.

use std::path::Path;

use super::bridge::{self, Told};
use super::output_file;
use crate::records::format::{Record, State};
use crate::records::{KEEP_MS, ReadError, Records, identity, now_ms};

/// What the sweep did, for its report.
#[derive(Debug, Default)]
pub struct SweepReport {
    pub running: Vec<String>,
    /// (id, killed its group, leftovers possible)
    pub lost: Vec<(String, bool, bool)>,
    pub told: Vec<String>,
    pub removed: Vec<String>,
    pub corrupt: Vec<(String, String)>,
    /// (id, why): files that are not the caller's, left alone.
    pub skipped: Vec<(String, String)>,
}

/// Why a lost record's supervisor is gone, in the words the record keeps.
const DIED: &str = "its supervisor died without a word";

/// Sweeps every record.
pub fn sweep(records: &Records, files_dir: &Path, bridge: Option<&Path>) -> Result<SweepReport, String> {
    let mut report = SweepReport::default();
    let (ids, orphans) = records.listing();
    let now = now_ms();
    for id in ids {
        if !records.settled(&id, now) {
            sweep_one(records, files_dir, bridge, &id, &mut report, DIED);
        }
    }
    remove_orphan_locks(records, &orphans, &mut report)?;
    Ok(report)
}

/// Sweeps one record (also used by `stop` on a record whose supervisor is gone).
pub fn sweep_one(
    records: &Records,
    files_dir: &Path,
    bridge: Option<&Path>,
    id: &str,
    report: &mut SweepReport,
    why: &str,
) {
    let lock = match records.try_lock(id) {
        Ok(Some(lock)) => lock,
        Ok(None) => {
            report.running.push(id.to_owned());
            return;
        }
        // Not the caller's lock, or not one that can be opened: nothing is known, nothing done.
        Err(why) => {
            report.skipped.push((id.to_owned(), why));
            return;
        }
    };
    // Re-read under the lock: another sweep may have finished it a moment ago.
    let mut record = match records.read_checked(id) {
        Ok(r) => r,
        Err(ReadError::NotOurs(why)) => {
            report.skipped.push((id.to_owned(), why));
            return;
        }
        // Removed a moment ago by another sweep: nothing is left to do.
        Err(ReadError::Missing(_)) => return,
        Err(ReadError::Invalid(why)) => {
            let _ = rustix::fs::renameat(
                records.dir(),
                format!("{id}.toml").as_str(),
                records.dir(),
                format!("{id}.corrupt").as_str(),
            );
            report.corrupt.push((id.to_owned(), why));
            return;
        }
    };
    if !record.state.ended() {
        let (killed, leftovers) = end_lost(&record);
        record.state = State::Lost;
        record.detail = why.to_owned();
        record.leftovers_possible = leftovers;
        record.ended_ms = Some(now_ms());
        if records.write(&lock, &record).is_err() {
            return;
        }
        report.lost.push((id.to_owned(), killed, leftovers));
    }
    if let Ok(Told::Sent) = bridge::tell(records, &lock, &mut record, bridge) {
        report.told.push(id.to_owned());
    }
    let old = record.ended_ms.is_some_and(|e| now_ms().saturating_sub(e) > KEEP_MS);
    if record.told && old {
        if let Err(why) = output_file::remove(files_dir, id) {
            report.skipped.push((id.to_owned(), why));
        }
        records.remove(lock);
        report.removed.push(id.to_owned());
    }
}

/// Ends what is left of a lost command's group if, and only if, it is provably the command's,
/// and each group the command made of its own that is (see [`identity::prove_leader`]).
/// Returns (killed, leftovers possible).
fn end_lost(record: &Record) -> (bool, bool) {
    let Some(group) = &record.group else {
        // Never started: no process was recorded, so none can be left.
        return (false, false);
    };
    let same_boot = identity::boot_id().ok().as_deref() == Some(group.boot_id.as_str());
    // The groups the command made: each ended if its leader still provably leads it; one whose
    // leader is gone may hold processes no one can prove the command's.
    let mut own_groups_left = record.more_groups;
    for leader in &record.groups {
        match identity::prove_leader(group, leader) {
            Ok(pidfd) => {
                own_groups_left |= identity::signal_group(&pidfd, leader.pid, libc::SIGKILL).is_err()
            }
            Err(_) => own_groups_left |= same_boot,
        }
    }
    match identity::prove_group(group) {
        Ok(pidfd) => {
            let killed = identity::signal_group(&pidfd, group.keeper_pid, libc::SIGKILL).is_ok();
            (killed, !killed || own_groups_left)
        }
        Err(_) if !same_boot => (false, false),
        // The keeper kills its group (and whatever the command made) when its supervisor dies,
        // so leftovers need both to have died at once; but that cannot be proven either way,
        // so say so.
        Err(_) => (false, true),
    }
}

/// Removes lock files whose start died before publishing a record, under the start lock so no
/// start is between creating its lock and publishing its record.
fn remove_orphan_locks(
    records: &Records,
    orphans: &[String],
    report: &mut SweepReport,
) -> Result<(), String> {
    if orphans.is_empty() {
        return Ok(());
    }
    let _starts = records.lock_starts()?;
    // Listed before the start lock was taken: only those still without a record are orphans.
    let (_, still) = records.listing();
    for id in orphans.iter().filter(|id| still.contains(id)) {
        match records.try_lock(id) {
            Ok(Some(lock)) => records.remove(lock),
            Ok(None) => {}
            Err(why) => report.skipped.push((id.clone(), why)),
        }
    }
    Ok(())
}
