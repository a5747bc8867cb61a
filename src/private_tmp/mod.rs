//! Each call's own temporary folder.
//!
//! Without a mount namespace (lnk needs none) a call cannot have a different `/tmp`, so it gets
//! a fresh folder of its own, `TMPDIR` points at it, and Landlock grants it (and nothing else
//! under `/tmp`). It lives in `$TMPDIR/lnk-<uid>/` (the harness's `TMPDIR`, else `/tmp`), a
//! folder that must belong to the caller and be private (mode 0700), so no other user can plant
//! or read anything there. Both are checked on the descriptor opened with `O_NOFOLLOW`.
//!
//! When another user made (or loosened) `lnk-<uid>` first, the call is refused with a message
//! saying what was found and how to fix it; lnk does not fall back to another name. A fallback
//! name in the same shared folder can be squatted just the same (and its stale call folders
//! would need finding again), and a silent fallback would hide that someone is interfering with
//! the caller's tmp. The fixes are the caller's to choose: remove the folder, or point `TMPDIR`
//! at a folder of their own.
//!
//! The helper holds an exclusive `flock` on the call's folder for the call's life. The folder is
//! removed when the call ends, and if the helper is killed before it can remove it, the next call
//! finds the lock free and removes it: a free lock always means its call is over. Creating a
//! folder and taking its lock happen under a shared lock on the base folder, and a sweep under
//! an exclusive one, so a sweep never mistakes a folder being born for one whose call is over. Removal
//! works through descriptors, so it never follows a symlink the program planted, and gives the
//! owner back the rights a program took from its own folders (`chmod 000`), so no mode keeps a
//! call's folder alive; the sweep removes only `call-*` folders that belong to the caller
//! (checked on the descriptor it locked): one that does not is left alone.
//!
//! Trusted with: that a call's tmp folder is the call's alone, and is removed without following
//! anything the program left there: a bug here could let another user read or plant a call's files,
//! or have lnk remove files outside the folder. What it trusts: the harness's `TMPDIR` for where
//! the base lies, the kernel's `flock` (a free lock means the call is over), and the owner and mode
//! it reads on each descriptor; nothing inside a call's folder.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{FlockOperation, Mode, OFlags};
use rustix::io::Errno;

mod remove;
use remove::remove_tree;

/// `$TMPDIR/lnk-<uid>` (see [`crate::paths::tmp_dir`]): where every call's tmp folder lives.
pub fn base_path(uid: u32) -> Result<PathBuf, String> {
    Ok(crate::paths::tmp_dir()?.join(format!("lnk-{uid}")))
}

pub struct PrivateTmp {
    path: PathBuf,
    // Held for the call's life: the lock that tells a later sweep this folder is in use.
    _lock: Option<OwnedFd>,
}

impl PrivateTmp {
    /// Creates a fresh, locked folder, after removing any left by calls that died.
    pub fn create() -> Result<PrivateTmp, String> {
        // The effective uid: the owner of what this process creates.
        let uid = rustix::process::geteuid().as_raw();
        let base = base_path(uid)?;
        let base_fd = open_private_base(&base, uid)?;
        // A sweep holds the base folder's lock exclusively, a creation shares it, so a sweep can
        // never find a folder that was just made and not yet locked by its call.
        let lock_base =
            |op| rustix::fs::flock(&base_fd, op).map_err(|e| format!("cannot lock {}: {e}", base.display()));
        lock_base(FlockOperation::LockExclusive)?;
        sweep_stale(&base_fd, uid);
        lock_base(FlockOperation::LockShared)?;
        let pid = rustix::process::getpid().as_raw_nonzero();
        for attempt in 0u32..100 {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            let name = format!("call-{pid}-{nanos:x}-{attempt}");
            match rustix::fs::mkdirat(&base_fd, name.as_str(), Mode::from_raw_mode(0o700)) {
                Ok(()) => {}
                Err(Errno::EXIST) => continue,
                Err(e) => {
                    return Err(format!("cannot create the call's tmp folder in {}: {e}", base.display()));
                }
            }
            let dir = rustix::fs::openat(
                &base_fd,
                name.as_str(),
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| format!("cannot open the call's tmp folder: {e}"))?;
            rustix::fs::flock(&dir, FlockOperation::NonBlockingLockExclusive)
                .map_err(|e| format!("cannot lock the call's tmp folder: {e}"))?;
            return Ok(PrivateTmp { path: base.join(name), _lock: Some(dir) });
        }
        Err(format!("cannot find a free name for the call's tmp folder in {}", base.display()))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Lets the lock go but leaves the folder, as a killed helper would.
    #[cfg(test)]
    fn abandon(mut self) -> PathBuf {
        self._lock = None;
        let path = self.path.clone();
        std::mem::forget(self);
        path
    }
}

impl Drop for PrivateTmp {
    fn drop(&mut self) {
        // Called once every process of the call is dead, so nothing writes here any more.
        if let (Some(parent), Some(name)) = (self.path.parent(), self.path.file_name()) {
            let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            if let Ok(base) = rustix::fs::open(parent, flags, Mode::empty()) {
                let _ = remove_tree(&base, name);
            }
        }
    }
}

/// Opens (creating if needed) the per-user base folder, refusing one that is not the caller's,
/// not private, or a symlink.
pub(crate) fn open_private_base(base: &Path, uid: u32) -> Result<OwnedFd, String> {
    match rustix::fs::mkdir(base, Mode::from_raw_mode(0o700)) {
        Ok(()) | Err(Errno::EXIST) => {}
        Err(e) => return Err(format!("cannot create {}: {e}", base.display())),
    }
    let fd = rustix::fs::open(
        base,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| format!("cannot open {} (it must be a folder, not a link): {e}", base.display()))?;
    let stat = rustix::fs::fstat(&fd).map_err(|e| format!("cannot stat {}: {e}", base.display()))?;
    refuse_shared_base(base, stat.st_uid, stat.st_mode & 0o7777, uid)?;
    Ok(fd)
}

/// The refusal of a base folder that is not the caller's or not private, saying what was found
/// and how to fix it.
fn refuse_shared_base(base: &Path, owner: u32, mode: u32, uid: u32) -> Result<(), String> {
    let (owner_ok, mode_ok) = (owner == uid, mode & 0o077 == 0);
    if owner_ok && mode_ok {
        return Ok(());
    }
    let mut found = Vec::new();
    if !owner_ok {
        found.push(format!("it belongs to uid {owner}, not to you (uid {uid})"));
    }
    if !mode_ok {
        found.push(format!("its mode is {mode:04o}, not 0700"));
    }
    let b = base.display();
    let fix = if owner_ok {
        format!("`chmod 700 {b}`")
    } else {
        format!(
            "remove it (`rm -r {b}`, as root or uid {owner}; someone else made it, so look at it first) \
             and lnk makes a new one, or set TMPDIR to a folder of your own"
        )
    };
    Err(format!(
        "refusing the private tmp base {b}: {}; another user could plant or read the call's files there. Fix: {fix}",
        found.join(", and ")
    ))
}

/// Removes folders whose call is over: their lock is free. Only the caller's own: a folder that
/// belongs to someone else (it cannot be made in a private base, but may predate a fix of the
/// base's mode) is left alone. Read through the base's checked descriptor, not its path.
fn sweep_stale(base_fd: &OwnedFd, uid: u32) {
    let Ok(entries) = rustix::fs::Dir::read_from(base_fd) else { return };
    for entry in entries.flatten() {
        let Ok(name) = entry.file_name().to_str().map(str::to_owned) else { continue };
        if !name.starts_with("call-") {
            continue;
        }
        let Ok(dir) = open_call_folder(base_fd, &name, uid) else { continue };
        if !rustix::fs::fstat(&dir).is_ok_and(|s| s.st_uid == uid) {
            continue;
        }
        if rustix::fs::flock(&dir, FlockOperation::NonBlockingLockExclusive).is_ok() {
            let _ = remove_tree(base_fd, std::ffi::OsStr::new(&name));
        }
    }
}

/// Opens a call's folder to lock it. A folder of the caller's that its program made unreadable
/// (`chmod 000 /tmp` in the own world) is given back to its owner (`u+rwx`) first, so no mode
/// keeps a dead call's folder from its sweep; a live call's lock still holds.
fn open_call_folder(base_fd: &OwnedFd, name: &str, uid: u32) -> Result<OwnedFd, Errno> {
    let open = || {
        rustix::fs::openat(
            base_fd,
            name,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
    };
    match open() {
        Err(Errno::ACCESS) => {
            let path = rustix::fs::openat(
                base_fd,
                name,
                OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            let stat = rustix::fs::fstat(&path)?;
            let folder = rustix::fs::FileType::from_raw_mode(stat.st_mode) == rustix::fs::FileType::Directory;
            if stat.st_uid != uid || !folder {
                return Err(Errno::ACCESS);
            }
            rustix::fs::chmodat(base_fd, name, Mode::RWXU, rustix::fs::AtFlags::empty())?;
            open()
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_is_private_locked_and_removed() {
        let tmp = PrivateTmp::create().unwrap();
        let path = tmp.path().to_owned();
        let meta = std::fs::metadata(&path).unwrap();
        assert!(meta.is_dir());
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(meta.permissions().mode() & 0o777, 0o700);
        std::fs::write(path.join("f"), "x").unwrap();
        // A second call does not sweep a live one.
        let other = PrivateTmp::create().unwrap();
        assert!(path.exists());
        drop(other);
        drop(tmp);
        assert!(!path.exists());
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "lnk-ptmp-{name}-{}-{}",
            rustix::process::getuid().as_raw(),
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn root() -> bool {
        let root = rustix::process::geteuid().is_root();
        if !root {
            eprintln!(
                "\n!!! SKIPPED: needs root to give a folder to another uid (the root pass runs it) !!!\n"
            );
        }
        root
    }

    #[test]
    fn a_base_others_can_reach_is_refused_saying_what_was_found_and_the_fix() {
        use std::os::unix::fs::PermissionsExt as _;
        let uid = rustix::process::geteuid().as_raw();
        let dir = scratch("open-base");
        let base = dir.join(format!("lnk-{uid}"));
        std::fs::create_dir(&base).unwrap();
        std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = open_private_base(&base, uid).expect_err("a mode 0777 base was accepted");
        assert!(err.contains("its mode is 0777, not 0700"), "{err}");
        assert!(err.contains(&format!("`chmod 700 {}`", base.display())), "{err}");
        std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(open_private_base(&base, uid).is_ok());
        if root() {
            std::os::unix::fs::chown(&base, Some(1001), Some(1001)).unwrap();
            let err = open_private_base(&base, uid).expect_err("another uid's base was accepted");
            assert!(err.contains("it belongs to uid 1001, not to you (uid 0)"), "{err}");
            assert!(err.contains(&format!("`rm -r {}`", base.display())), "{err}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_sweep_leaves_a_call_folder_that_is_not_the_callers() {
        if !root() {
            return;
        }
        let dir = scratch("foreign-call");
        let base = dir.join("lnk-0");
        std::fs::create_dir(&base).unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o700)).unwrap();
        let (theirs, mine) = (base.join("call-1-theirs-0"), base.join("call-1-mine-0"));
        for d in [&theirs, &mine] {
            std::fs::create_dir(d).unwrap();
            std::fs::write(d.join("f"), "x").unwrap();
        }
        std::os::unix::fs::chown(&theirs, Some(1001), Some(1001)).unwrap();
        let fd = open_private_base(&base, 0).unwrap();
        sweep_stale(&fd, 0);
        assert!(theirs.join("f").exists(), "the sweep removed another uid's folder");
        assert!(!mine.exists(), "the sweep left the caller's own stale folder");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_folder_is_removed_whatever_modes_the_program_left() {
        use std::os::unix::fs::PermissionsExt as _;
        let tmp = PrivateTmp::create().unwrap();
        let path = tmp.path().to_owned();
        std::fs::create_dir_all(path.join("a/b/c")).unwrap();
        std::fs::write(path.join("a/b/c/f"), "x").unwrap();
        std::fs::write(path.join("a/g"), "x").unwrap();
        std::os::unix::fs::symlink("/etc", path.join("a/link")).unwrap();
        std::fs::create_dir(path.join("d")).unwrap();
        for (folder, mode) in [("a/b/c", 0o000), ("a/b", 0o100), ("a", 0o000), ("d", 0o500)] {
            std::fs::set_permissions(path.join(folder), std::fs::Permissions::from_mode(mode)).unwrap();
        }
        drop(tmp);
        assert!(!path.exists(), "a folder the program left mode 000 kept its call's tmp alive");
        assert!(Path::new("/etc/passwd").exists());
        // And the sweep does the same for a call that died.
        let abandoned = PrivateTmp::create().unwrap().abandon();
        std::fs::create_dir(abandoned.join("x")).unwrap();
        std::fs::set_permissions(abandoned.join("x"), std::fs::Permissions::from_mode(0o000)).unwrap();
        std::fs::set_permissions(&abandoned, std::fs::Permissions::from_mode(0o000)).unwrap();
        let _next = PrivateTmp::create().unwrap();
        assert!(!abandoned.exists(), "the sweep left a folder the program made mode 000");
    }

    #[test]
    fn a_dead_calls_folder_is_swept_by_the_next_call() {
        let path = PrivateTmp::create().unwrap().abandon();
        assert!(path.exists());
        let _next = PrivateTmp::create().unwrap();
        assert!(!path.exists());
    }
}
