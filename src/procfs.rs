//! What `/proc` says of a process: the fields of its `stat` line that identify it and place it
//! in the process tree, and the whole tree's, for finding every descendant of a process.
//!
//! A pid alone names a process only while it lives; with its start time (clock ticks since
//! boot) it names one process for the whole boot, since a later process at the same number
//! starts later. Everything that acts on a process found here checks both.
//!
//! What it trusts: the kernel's `/proc`.

/// A `/proc` file, whole: in reads of at least 16 KiB (the kernel makes its text afresh at each
/// read, so few large reads are cheaper than `std::fs::read`'s growing ones from 32 bytes),
/// straight into the text's spare room, which is never zeroed first (zeroing it cost a launch
/// four page faults and a `memset` for a table of 2 KiB).
pub fn read_whole(path: &str) -> Result<Vec<u8>, rustix::io::Errno> {
    use rustix::fs::{Mode, OFlags};
    const CHUNK: usize = 16 * 1024;
    let fd = rustix::fs::open(path, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())?;
    let mut text: Vec<u8> = Vec::with_capacity(CHUNK);
    loop {
        if text.capacity() - text.len() < CHUNK {
            text.reserve(CHUNK);
        }
        match rustix::io::read(&fd, rustix::buffer::spare_capacity(&mut text)) {
            Ok(0) => return Ok(text),
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e),
        }
    }
}

/// The most leaders of groups a program made that lnk notes and records (see
/// [`crate::notify`] and [`crate::records`]): a bound on a record's size.
pub const MAX_LEADERS: usize = 64;

/// One process for the whole boot: its pid and its start time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Process {
    pub pid: i32,
    pub start: u64,
}

impl Process {
    /// The process at `pid` now, if any.
    pub fn at(pid: i32) -> Option<Process> {
        stat(pid).map(|s| Process { pid, start: s.start })
    }

    /// A pidfd on this process, if it is still alive (the same pid and start time), with its
    /// stat as read after the pidfd was opened (a process that took the number later would
    /// show a later start, so the stat is the pidfd's process's).
    pub fn open(&self) -> Option<(std::os::fd::OwnedFd, ProcStat)> {
        let pid = rustix::process::Pid::from_raw(self.pid).filter(|_| self.pid >= 2)?;
        let pidfd = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok()?;
        let stat = stat(self.pid).filter(|s| s.start == self.start && s.lives())?;
        Some((pidfd, stat))
    }
}

/// The fields of `/proc/<pid>/stat` lnk uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    pub state: char,
    pub ppid: i32,
    pub pgrp: i32,
    pub session: i32,
    /// How many threads it has.
    pub threads: u32,
    /// Start time in clock ticks since boot.
    pub start: u64,
}

impl ProcStat {
    /// Whether the process still runs: not a zombie, or a zombie only in its first thread.
    ///
    /// A process whose first thread ended alone (`SYS_exit`, not `exit_group`) while its other
    /// threads go on shows the first thread's state, `Z`, for the whole process; it still runs,
    /// holds its pid and group, and takes signals. What tells the two apart is the count of
    /// threads: a process that truly ended counts its one unreaped thread, one that lives on
    /// counts that thread and its live ones.
    pub fn lives(&self) -> bool {
        !matches!(self.state, 'Z' | 'X' | 'x') || self.threads > 1
    }
}

/// Reads `/proc/<pid>/stat`.
pub fn stat(pid: i32) -> Option<ProcStat> {
    let mut buf = [0u8; 1024];
    let fd = rustix::fs::open(
        format!("/proc/{pid}/stat"),
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .ok()?;
    let n = rustix::io::read(&fd, &mut buf).ok()?;
    parse(&buf[..n])
}

/// Parses a `stat` line. The command name (field 2) may hold spaces and parentheses, so the
/// fields are counted from the last `)`.
pub fn parse(text: &[u8]) -> Option<ProcStat> {
    let close = text.iter().rposition(|b| *b == b')')?;
    let rest = std::str::from_utf8(&text[close + 1..]).ok()?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state(3) ppid(4) pgrp(5) session(6) … num_threads(20) … starttime(22).
    Some(ProcStat {
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        pgrp: fields.get(2)?.parse().ok()?,
        session: fields.get(3)?.parse().ok()?,
        threads: fields.get(17)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

/// Every live process's pid and stat that this process can see, or the error that kept one
/// from being read (not its having ended meanwhile): for a count that must not come out low.
pub fn all_or_error() -> Result<Vec<(i32, ProcStat)>, rustix::io::Errno> {
    use rustix::io::Errno;
    let mut found = Vec::new();
    let dir = std::fs::read_dir("/proc").map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::IO))?;
    for entry in dir {
        let entry = entry.map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::IO))?;
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        let fd = match rustix::fs::open(
            format!("/proc/{pid}/stat"),
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(Errno::NOENT | Errno::SRCH) => continue,
            Err(e) => return Err(e),
        };
        let mut buf = [0u8; 1024];
        match rustix::io::read(&fd, &mut buf) {
            Ok(n) => found.extend(parse(&buf[..n]).map(|stat| (pid, stat))),
            Err(Errno::SRCH) => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(found)
}

/// Every live process's pid and stat that this process can see.
pub fn all() -> Vec<(i32, ProcStat)> {
    let mut found = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else { return found };
    for entry in dir.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        if let Some(stat) = stat(pid) {
            found.push((pid, stat));
        }
    }
    found
}

/// The descendants of `root` among `processes` (children before their own children), each with
/// its stat as read.
pub fn descendants(root: i32, processes: &[(i32, ProcStat)]) -> Vec<(i32, ProcStat)> {
    let mut out: Vec<(i32, ProcStat)> = Vec::new();
    let mut parents = vec![root];
    while let Some(parent) = parents.pop() {
        for (pid, stat) in processes.iter().filter(|(pid, s)| s.ppid == parent && *pid != root) {
            if !out.iter().any(|(p, _)| p == pid) {
                out.push((*pid, *stat));
                parents.push(*pid);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_is_read_past_an_odd_name() {
        let line = b"42 (a) b (c) d) S 7 42 42 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 3 0 123456 1 2 3\n";
        let s = parse(line).unwrap();
        assert_eq!((s.state, s.ppid, s.pgrp, s.session, s.threads, s.start), ('S', 7, 42, 42, 3, 123456));
        assert_eq!(parse(b"42 (x"), None);
    }

    #[test]
    fn a_zombie_lives_on_while_threads_of_its_run() {
        let with = |state: &str, threads: u32| {
            let line = format!("42 (a) {state} 7 42 42 0 -1 0 0 0 0 0 0 0 0 0 20 0 {threads} 0 123456 1 2 3");
            parse(line.as_bytes()).unwrap().lives()
        };
        assert!(with("S", 1) && with("R", 4) && with("T", 1));
        // Its first thread ended alone: `Z`, and its other threads counted with it.
        assert!(with("Z", 2));
        // Ended, and not yet reaped: its one thread.
        assert!(!with("Z", 1) && !with("X", 1));
    }

    #[test]
    fn this_process_and_its_children_are_found() {
        let me = rustix::process::getpid().as_raw_nonzero().get();
        let mine = stat(me).unwrap();
        assert!(mine.start > 0);
        let mut child = std::process::Command::new("sleep").arg("5").spawn().unwrap();
        let all = all();
        let found = descendants(me, &all);
        assert!(found.iter().any(|(pid, s)| *pid == child.id() as i32 && s.ppid == me), "{found:?}");
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
