//! Records of background commands, and the locks that say whose supervisor is alive.
//!
//! Layout, in the agent's folder (`--agent-dir`), which no sandbox may read or write (a write
//! grant over it is refused; see `sandbox`):
//!
//! ```text
//! runs/start.lock     held while a start counts the running commands and publishes a record
//! runs/<id>.lock      held by the command's supervisor for its whole life; never renamed
//! runs/<id>.toml      the record; every update is written to a temporary file, synced and
//!                     renamed over it, so a reader sees the old or the new record, never a mix
//! ```
//!
//! The rules that make "the lock is free" mean "the supervisor is gone" (anchors/supervision.md
//! §3.1): the lock is a `flock` on a file that is never renamed (a rename would leave the lock on
//! the old inode); every descriptor to it is close-on-exec and the sandboxed command starts with
//! only descriptors 0–2, so nothing the command runs can hold or release it; and a lock file is
//! deleted only by whoever holds its lock, after checking that the path still names the inode
//! it locked.
//!
//! Only the caller's own records are acted on: the agent folder and `runs` are refused when
//! another user owns them or can write in them, and a record or lock file that is not the
//! caller's is skipped and reported, never acted on (see [`owner`]).
//!
//! Trusted with: what says a supervisor is alive, and records that are whole and the caller's: a
//! bug here could make the sweep kill a live command's group, or act on a record someone else
//! planted. What it trusts: the kernel's `flock` (a held lock means a live supervisor), the agent
//! folder's path as given (opened once, then checked), and nothing of a record file until
//! [`format`] has parsed it.

pub mod format;
pub mod identity;
pub mod owner;

use std::io::Write as _;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{FlockOperation, Mode, OFlags};
use rustix::io::Errno;

pub use format::{Record, State};

/// A record is ended and told for a day before the sweep removes it and its output.
pub const KEEP_MS: u64 = 24 * 60 * 60 * 1000;

/// The agent's records folder, opened once.
pub struct Records {
    pub path: PathBuf,
    dir: OwnedFd,
}

/// A held lock on one record.
pub struct RecordLock {
    pub id: String,
    fd: OwnedFd,
}

impl RecordLock {
    pub fn fd(&self) -> &OwnedFd {
        &self.fd
    }

    /// Wraps a lock descriptor inherited from `start` (the supervisor's).
    pub fn from_inherited(id: String, fd: OwnedFd) -> RecordLock {
        RecordLock { id, fd }
    }
}

fn io(what: &str, path: &Path, e: Errno) -> String {
    format!("{what} {}: {}", path.display(), std::io::Error::from(e))
}

/// Why a record could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadError {
    /// The file is not the caller's (another owner, a hard link, not a regular file): it is
    /// left alone and reported, never renamed aside or acted on.
    NotOurs(String),
    /// There is no such record (or the id is not a record id at all).
    Missing(String),
    /// Unreadable, or not a valid record.
    Invalid(String),
}

impl ReadError {
    pub fn message(self) -> String {
        match self {
            ReadError::NotOurs(m) | ReadError::Missing(m) | ReadError::Invalid(m) => m,
        }
    }
}

/// Refuses a file opened in the records folder that is not the caller's (see [`owner`]).
fn check_ours(fd: &OwnedFd, path: &Path) -> Result<(), String> {
    let stat = rustix::fs::fstat(fd).map_err(|e| io("cannot stat", path, e))?;
    match owner::not_ours(&stat, owner::caller()) {
        None => Ok(()),
        Some(why) => Err(owner::skipped(path, &why)),
    }
}

impl Records {
    /// Opens (creating if needed) `<agent_dir>/runs`, refusing links, and refusing either
    /// folder when someone else owns it or can write in it. Both are checked on the descriptors
    /// opened, and `runs` is made and opened through the agent folder's descriptor, so neither
    /// can be swapped between the check and its use.
    pub fn open(agent_dir: &Path) -> Result<Records, String> {
        let uid = owner::caller();
        let agent =
            rustix::fs::open(agent_dir, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
                .map_err(|e| io("cannot open the agent folder", agent_dir, e))?;
        let stat = rustix::fs::fstat(&agent).map_err(|e| io("cannot stat", agent_dir, e))?;
        owner::check_folder(&stat, agent_dir, owner::Folder::Agent, uid)?;
        let path = agent_dir.join("runs");
        match rustix::fs::mkdirat(&agent, "runs", Mode::from_raw_mode(0o700)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(io("cannot create", &path, e)),
        }
        let dir = rustix::fs::openat(
            &agent,
            "runs",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| io("cannot open (it must be a folder, not a link)", &path, e))?;
        let stat = rustix::fs::fstat(&dir).map_err(|e| io("cannot stat", &path, e))?;
        owner::check_folder(&stat, &path, owner::Folder::Records, uid)?;
        Ok(Records { path, dir })
    }

    /// Takes the start lock, which serialises counting and publishing.
    pub fn lock_starts(&self) -> Result<OwnedFd, String> {
        let fd = rustix::fs::openat(
            &self.dir,
            "start.lock",
            OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .map_err(|e| io("cannot open", &self.path.join("start.lock"), e))?;
        // A start lock someone else planted could be held by them forever.
        check_ours(&fd, &self.path.join("start.lock"))?;
        rustix::fs::flock(&fd, FlockOperation::LockExclusive)
            .map_err(|e| io("cannot lock", &self.path, e))?;
        Ok(fd)
    }

    /// Takes a free one of `count` slots, `slot-<n>.lock`, whose lock a supervisor holds for its
    /// whole life; `None` when every slot is held. Called under the start lock, so two starts
    /// never take the same slot, and a supervisor that dies frees its slot with its last
    /// descriptor. Counting what runs costs at most `count` tries however many records the
    /// agent keeps (counting live record locks took an open and a lock attempt per record,
    /// and starts slowed as an agent's day went on). The slot files are never removed: a file
    /// removed while locked and made again would be a second slot of the same number.
    pub fn take_slot(&self, count: usize) -> Result<Option<OwnedFd>, String> {
        for n in 0..count {
            let name = format!("slot-{n}.lock");
            let fd = rustix::fs::openat(
                &self.dir,
                name.as_str(),
                OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            )
            .map_err(|e| io("cannot open", &self.path.join(&name), e))?;
            // A slot file someone else planted could be held by them forever.
            check_ours(&fd, &self.path.join(&name))?;
            match rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => return Ok(Some(fd)),
                Err(Errno::WOULDBLOCK) => continue,
                Err(e) => return Err(io("cannot lock", &self.path.join(&name), e)),
            }
        }
        Ok(None)
    }

    /// Creates a new record's lock file, exclusively, and locks it.
    pub fn create_lock(&self, id: &str) -> Result<RecordLock, String> {
        let name = format!("{id}.lock");
        let fd = rustix::fs::openat(
            &self.dir,
            name.as_str(),
            OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .map_err(|e| io("cannot create", &self.path.join(&name), e))?;
        rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive)
            .map_err(|e| io("cannot lock", &self.path.join(&name), e))?;
        Ok(RecordLock { id: id.to_owned(), fd })
    }

    /// Tries to take a record's lock. `Ok(None)` when it is held: its supervisor is alive. The
    /// lock is only returned if the path still names the file locked (not one deleted and made
    /// anew meanwhile). A lock file that is not the caller's is an error, before it is locked:
    /// it is neither taken nor believed.
    pub fn try_lock(&self, id: &str) -> Result<Option<RecordLock>, String> {
        let name = format!("{id}.lock");
        let fd = match rustix::fs::openat(
            &self.dir,
            name.as_str(),
            OFlags::RDWR | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(e) => return Err(io("cannot open", &self.path.join(&name), e)),
        };
        check_ours(&fd, &self.path.join(&name))?;
        match rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(Errno::WOULDBLOCK) => return Ok(None),
            Err(e) => return Err(io("cannot lock", &self.path.join(&name), e)),
        }
        let held = rustix::fs::fstat(&fd).map_err(|e| io("cannot stat", &self.path.join(&name), e))?;
        match rustix::fs::statat(&self.dir, name.as_str(), rustix::fs::AtFlags::SYMLINK_NOFOLLOW) {
            Ok(now) if now.st_ino == held.st_ino && now.st_dev == held.st_dev => {
                Ok(Some(RecordLock { id: id.to_owned(), fd }))
            }
            _ => Ok(None),
        }
    }

    /// Whether a record's supervisor holds its lock, without keeping the lock.
    pub fn is_live(&self, id: &str) -> bool {
        matches!(self.try_lock(id), Ok(None)) && self.exists(id)
    }

    fn exists(&self, id: &str) -> bool {
        rustix::fs::statat(&self.dir, format!("{id}.lock").as_str(), rustix::fs::AtFlags::SYMLINK_NOFOLLOW)
            .is_ok()
    }

    /// The ids of every record (by their `.toml`), sorted.
    pub fn ids(&self) -> Vec<String> {
        self.listing().0
    }

    /// One pass over the folder (through its checked descriptor, never its path): the ids with
    /// a record, and the ids with a lock file but no record (a start that died before
    /// publishing), both sorted.
    pub fn listing(&self) -> (Vec<String>, Vec<String>) {
        let mut records = Vec::new();
        let mut locks = Vec::new();
        for entry in rustix::fs::Dir::read_from(&self.dir).into_iter().flatten().flatten() {
            let Ok(name) = entry.file_name().to_str() else { continue };
            let (id, list) = match (name.strip_suffix(".toml"), name.strip_suffix(".lock")) {
                (Some(id), _) => (id, &mut records),
                (_, Some(id)) => (id, &mut locks),
                _ => continue,
            };
            if format::validate_id(id).is_ok() {
                list.push(id.to_owned());
            }
        }
        records.sort();
        locks.sort();
        let orphans = locks.into_iter().filter(|id| records.binary_search(id).is_err()).collect();
        (records, orphans)
    }

    /// Whether a record needs nothing from a sweep: ended, told, and younger than a day. Read
    /// without the lock and without the full parse (the sweep's steady state is thousands of
    /// such records): lnk writes every value on a line of its own, so these three lines are
    /// reliable for a record lnk wrote (and they come before `output_end`, the one long line, so
    /// they are within the bytes read). Anything unexpected answers `false`, and the record then
    /// gets the full, strict, locked treatment; a skip never acts, so it cannot act wrongly. A
    /// file that is not the caller's answers `false` too, so the sweep reports it.
    pub fn settled(&self, id: &str, now_ms: u64) -> bool {
        let Ok(fd) = rustix::fs::openat(
            &self.dir,
            format!("{id}.toml").as_str(),
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        ) else {
            return false;
        };
        if !rustix::fs::fstat(&fd).is_ok_and(|s| owner::not_ours(&s, owner::caller()).is_none()) {
            return false;
        }
        let mut buf = vec![0u8; 64 * 1024];
        let Ok(n) = rustix::io::read(&fd, &mut buf) else { return false };
        let text = String::from_utf8_lossy(&buf[..n]);
        let (mut ended, mut told, mut young) = (false, false, false);
        for line in text.lines() {
            if let Some(state) = line.strip_prefix("state = ") {
                ended = !matches!(state, "\"starting\"" | "\"running\"");
            } else if line == "told = true" {
                told = true;
            } else if let Some(ms) = line.strip_prefix("ended_ms = ") {
                young = ms.parse::<u64>().is_ok_and(|ms| now_ms.saturating_sub(ms) <= KEEP_MS);
            }
        }
        ended && told && young
    }

    /// Reads a record. Never follows a link; a file over [`format::MAX_RECORD_BYTES`] is
    /// refused, and so is a file that is not the caller's.
    pub fn read(&self, id: &str) -> Result<Record, String> {
        self.read_checked(id).map_err(ReadError::message)
    }

    /// Reads a record, telling a file that is not the caller's (checked on the descriptor
    /// read) from one that is missing or invalid. An id that is not a record id is never made
    /// into a path.
    pub fn read_checked(&self, id: &str) -> Result<Record, ReadError> {
        format::validate_id(id).map_err(ReadError::Missing)?;
        let name = format!("{id}.toml");
        let path = self.path.join(&name);
        let invalid = |m: String| ReadError::Invalid(m);
        let fd = match rustix::fs::openat(
            &self.dir,
            name.as_str(),
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => {
                return Err(ReadError::Missing(format!(
                    "there is no background command {id} (`lnk-link-run list` shows them)"
                )));
            }
            Err(e) => return Err(invalid(io("cannot open", &path, e))),
        };
        check_ours(&fd, &path).map_err(ReadError::NotOurs)?;
        let limit = format::MAX_RECORD_BYTES as u64;
        let mut text = String::new();
        std::io::Read::read_to_string(
            &mut std::io::Read::take(std::fs::File::from(fd), limit + 1),
            &mut text,
        )
        .map_err(|e| invalid(format!("cannot read {}: {e}", path.display())))?;
        if text.len() as u64 > limit {
            return Err(invalid(format!(
                "{}: larger than {limit} bytes, so not a record lnk wrote",
                path.display()
            )));
        }
        let record = Record::parse(&text).map_err(|e| invalid(format!("{}: {e}", path.display())))?;
        if record.id != id {
            return Err(invalid(format!("{}: its id is {}", path.display(), record.id)));
        }
        Ok(record)
    }

    /// Writes a record atomically: a temporary file, synced, renamed over the record, and the
    /// folder synced, so the new record is durable when this returns. Requires its lock, so
    /// two writers never interleave. A record the reader would refuse as too large is not
    /// written (the bounds in [`format`] keep every record lnk makes under the limit).
    pub fn write(&self, lock: &RecordLock, record: &Record) -> Result<(), String> {
        self.replace(lock, record)?;
        rustix::fs::fsync(&self.dir).map_err(|e| io("cannot sync", &self.path, e))
    }

    /// Writes a record atomically, as [`Records::write`], without syncing the folder: every
    /// reader sees the new record at once, and after a crash of the machine the name holds this
    /// record or the one before, each with its data on the disk (the file is synced before the
    /// rename, so the name never points at data the disk lacks). For the supervisor's `running`
    /// record, which `start` waits for: a crash of the machine kills the command too, and the
    /// sweep records it lost from either record.
    pub fn write_unsynced_name(&self, lock: &RecordLock, record: &Record) -> Result<(), String> {
        self.replace(lock, record)
    }

    /// Writes `record` to a temporary file, syncs it, and renames it over the record.
    fn replace(&self, _lock: &RecordLock, record: &Record) -> Result<(), String> {
        let text = record.to_toml();
        if text.len() > format::MAX_RECORD_BYTES {
            return Err(format!(
                "{}: the record would be {} bytes, over the {}-byte limit; not written",
                record.id,
                text.len(),
                format::MAX_RECORD_BYTES
            ));
        }
        let tmp = format!("{}.toml.tmp", record.id);
        let _ = rustix::fs::unlinkat(&self.dir, tmp.as_str(), rustix::fs::AtFlags::empty());
        let fd = rustix::fs::openat(
            &self.dir,
            tmp.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .map_err(|e| io("cannot create", &self.path.join(&tmp), e))?;
        let mut file = std::fs::File::from(fd);
        file.write_all(text.as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", self.path.join(&tmp).display()))?;
        file.sync_all().map_err(|e| format!("cannot sync {}: {e}", self.path.join(&tmp).display()))?;
        rustix::fs::renameat(&self.dir, tmp.as_str(), &self.dir, format!("{}.toml", record.id).as_str())
            .map_err(|e| io("cannot rename", &self.path.join(&tmp), e))
    }

    /// Removes a record, its lock file last (holding the lock), and leaves the output to the
    /// caller. By name: the lock was checked as the caller's when it was taken, and the record
    /// when it was read, and in a folder only the caller can write in nobody else can have
    /// swapped either name since (see [`owner`]).
    pub fn remove(&self, lock: RecordLock) {
        let id = &lock.id;
        let _ = rustix::fs::unlinkat(&self.dir, format!("{id}.toml").as_str(), rustix::fs::AtFlags::empty());
        let _ = rustix::fs::unlinkat(&self.dir, format!("{id}.lock").as_str(), rustix::fs::AtFlags::empty());
        drop(lock);
    }

    pub fn dir(&self) -> impl AsFd + '_ {
        &self.dir
    }
}

/// Milliseconds since the epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// A fresh record id: `r` and 16 hex digits from the clock and pid (made unique on disk by
/// `O_EXCL` on its lock file).
pub fn new_id(attempt: u32) -> String {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let pid = rustix::process::getpid().as_raw_nonzero().get() as u128;
    let mixed = (nanos ^ (pid << 40) ^ (u128::from(attempt) << 20)) as u64;
    format!("r{mixed:016x}")
}
