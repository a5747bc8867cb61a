//! Telling, after the fact, whether a recorded process group is still the command's.
//!
//! The seed's rule ("same boot, and the leader the one recorded or gone") is unsound in its
//! "or gone" half: once every member has exited, the number can be reused by an unrelated group,
//! and `kill(-N)` would kill strangers (anchors/supervision.md §4, experiment E1). The rule here
//! keeps only what can be proven:
//!
//! 1. the record was made on this boot (`boot_id`) and in this pid namespace;
//! 2. the keeper, which leads the group and pins its number while alive, is alive now: a pidfd
//!    is opened on the recorded pid, and the process behind it has the recorded start time and
//!    leads both its process group and its session (pgrp = sid = the recorded number);
//! 3. the signal goes through that pidfd to the process group
//!    (`pidfd_send_signal(…, PIDFD_SIGNAL_PROCESS_GROUP)`), so it reaches the group of the
//!    verified process and not whatever holds the number later.
//!
//! When any of this fails, nothing is signalled: the record is lost, "leftovers possible".
//!
//! Trusted with: that a signal reaches only the recorded process or group: a bug here could kill
//! processes that are not the command's. What it trusts: the kernel's `/proc` (the boot id, the pid
//! namespace, each process's `stat`) and pidfds; a record's numbers only as far as they prove true
//! against them.

use std::os::fd::OwnedFd;

use super::format::GroupIdentity;

/// This boot's id.
pub fn boot_id() -> Result<String, String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_owned())
        .map_err(|e| format!("cannot read the boot id: {e}"))
}

/// The inode of this process's pid namespace.
pub fn pid_namespace() -> Result<u64, String> {
    rustix::fs::stat("/proc/self/ns/pid")
        .map(|s| s.st_ino)
        .map_err(|e| format!("cannot stat /proc/self/ns/pid: {e}"))
}

pub use crate::procfs::ProcStat;

/// Reads `/proc/<pid>/stat` (see [`crate::procfs`]).
pub fn proc_stat(pid: i32) -> Option<ProcStat> {
    crate::procfs::stat(pid)
}

/// The identity to record for a keeper that was just started (and is the caller's child, so its
/// number cannot have been reused).
pub fn record_group(keeper_pid: i32) -> Result<GroupIdentity, String> {
    let stat = proc_stat(keeper_pid).ok_or("cannot read the keeper's /proc stat")?;
    Ok(GroupIdentity {
        keeper_pid,
        keeper_start: stat.start,
        boot_id: boot_id()?,
        pid_namespace: pid_namespace()?,
    })
}

/// A pidfd on the recorded keeper, if and only if it is provably the recorded group's leader.
pub fn prove_group(group: &GroupIdentity) -> Result<OwnedFd, String> {
    if group.boot_id != boot_id()? {
        return Err("recorded on another boot; its processes ended with that boot".into());
    }
    if group.pid_namespace != pid_namespace()? {
        return Err("recorded in another pid namespace, where its numbers mean other processes".into());
    }
    let n = group.keeper_pid;
    let own_group = crate::sys::own_process_group();
    if n < 2 || n == own_group {
        return Err(format!("the recorded group {n} is not one that can be signalled"));
    }
    let pid = rustix::process::Pid::from_raw(n).ok_or("invalid pid")?;
    let pidfd = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty())
        .map_err(|_| "its keeper is gone, so the group's number is not provably the command's".to_owned())?;
    // Read after the pidfd was opened: a process at this number with the recorded start time is
    // the one the pidfd holds (anything that took the number later started later).
    let stat = proc_stat(n).ok_or("its keeper is gone")?;
    if stat.start != group.keeper_start {
        return Err("the recorded number now belongs to another process".into());
    }
    if stat.pgrp != n || stat.session != n || !stat.lives() {
        return Err("the recorded keeper no longer leads its group".into());
    }
    Ok(pidfd)
}

/// A pidfd on a group leader the command recorded (see `Record::groups`), if and only if it is
/// provably still that leader: the record's boot and pid namespace, the same pid and start time,
/// and its process group its own number. A group holds processes of one session only, and the
/// command's processes make or join sessions of their own descent only, so such a group is the
/// command's.
pub fn prove_leader(group: &GroupIdentity, leader: &crate::procfs::Process) -> Result<OwnedFd, String> {
    if group.boot_id != boot_id()? || group.pid_namespace != pid_namespace()? {
        return Err("recorded on another boot or in another pid namespace".into());
    }
    if leader.pid < 2 || leader.pid == crate::sys::own_process_group() {
        return Err(format!("the recorded leader {} is not one that can be signalled", leader.pid));
    }
    let (pidfd, stat) = leader.open().ok_or("the leader is gone, or its number now another process's")?;
    if stat.pgrp != leader.pid {
        return Err("the recorded leader no longer leads its group".into());
    }
    Ok(pidfd)
}

/// Sends `signal` to the process group led by the process behind `pidfd`.
pub fn signal_group(pidfd: &OwnedFd, group: i32, signal: i32) -> Result<(), String> {
    match crate::sys::pidfd_signal_group(pidfd, signal) {
        Ok(()) => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            // Before Linux 6.9: the group's number, right after the leader was verified alive
            // through the pidfd (the leader alive pins the number).
            let sig = rustix::process::Signal::from_named_raw(signal).ok_or("invalid signal")?;
            let pid = rustix::process::Pid::from_raw(group).ok_or("invalid pid")?;
            rustix::process::kill_process_group(pid, sig).map_err(|e| e.to_string())
        }
        Err(e) => Err(e.to_string()),
    }
}

/// Sends `signal` to one verified process (the supervisor, for `stop`).
pub fn signal_process(pid: i32, start: u64, signal: i32) -> Result<(), String> {
    let p = rustix::process::Pid::from_raw(pid).filter(|_| pid >= 2).ok_or("invalid pid")?;
    let pidfd =
        rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()).map_err(|_| "it is gone")?;
    if proc_stat(pid).map(|s| s.start) != Some(start) {
        return Err("its number now belongs to another process".into());
    }
    let sig = rustix::process::Signal::from_named_raw(signal).ok_or("invalid signal")?;
    rustix::process::pidfd_send_signal(&pidfd, sig).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_its_own_stat_and_the_boot() {
        let me = rustix::process::getpid().as_raw_nonzero().get();
        let stat = proc_stat(me).unwrap();
        assert!(stat.start > 0);
        assert_eq!(stat.pgrp, crate::sys::own_process_group());
        assert_eq!(boot_id().unwrap().len(), 36);
        assert!(pid_namespace().unwrap() > 0);
    }

    #[test]
    fn an_unprovable_group_is_refused() {
        let g = |pid, start, boot: &str| GroupIdentity {
            keeper_pid: pid,
            keeper_start: start,
            boot_id: boot.to_owned(),
            pid_namespace: pid_namespace().unwrap(),
        };
        let boot = boot_id().unwrap();
        assert!(
            prove_group(&g(1234, 1, "00000000-0000-0000-0000-000000000000"))
                .unwrap_err()
                .contains("another boot")
        );
        assert!(prove_group(&g(1, 1, &boot)).is_err());
        let own = crate::sys::own_process_group();
        assert!(prove_group(&g(own, 1, &boot)).is_err());
        // This process leads no group here (or has another start time): never provable.
        let me = rustix::process::getpid().as_raw_nonzero().get();
        assert!(prove_group(&g(me, 1, &boot)).is_err());
    }
}
