//! The call's inotify instances and watches in the Landlock-only mode, counted by the helper
//! (see [`crate::sandbox::appetite`] for why, and for the own world, where the kernel counts
//! them in the call's user namespace).
//!
//! The kernel counts them per user: the call's with every other program of the person's. A
//! count read from the call's descriptor tables is not enough (found in review): an instance
//! passed over a socket pair and not yet received is in no table, and a process that made itself
//! not dumpable hides its table from an ordinary user's helper. Nor is a count read before a
//! call let go on into the kernel, which fetches the descriptor again: a second thread swaps
//! another instance in between (found in review). So the server makes both for the program:
//!
//! - **Instances**: a held `inotify_init`/`inotify_init1` is answered with an instance the
//!   server made (`SECCOMP_IOCTL_NOTIF_ADDFD`), after which it keeps none of it but an entry in
//!   an epoll set of its own. An epoll entry holds no reference: the kernel drops it when the
//!   instance's last reference goes, wherever that was (a table, a message in flight). So the
//!   entries left are exactly the call's live instances, read from the epoll's `fdinfo`.
//! - **Each instance is marked**: before it is handed over, it gets one watch of lnk's own, on a
//!   memfd the helper made and holds while the instance lives (an inode nothing else reaches,
//!   which never changes), so the instance is known again by that watch in any `fdinfo` that
//!   shows it. The program's first watch then has the number 2.
//! - **Watches**: a held `inotify_add_watch` is made by the server on a copy of the very
//!   instance the call names (`pidfd_getfd`, taken by the receiver), never let go on: the copy's
//!   `fdinfo` gives that instance's watches exactly, the others' are as last read (an instance's
//!   watches grow only by the server's own adds, one at a time, so a count last read errs only
//!   high, by the watches removed since), and the watch is added only within the bound. The
//!   path is resolved as the kernel would for the program (see [`super::metadata`]'s
//!   `open_target`: from its working folder, no magic link, the last link not followed with
//!   `IN_DONT_FOLLOW`) by the server, which holds no capability, so the kernel checks the
//!   program's own right to read what it watches. A file of `/proc` is refused (`EACCES`): the
//!   Landlock-only mode reads no process's `/proc`, and the server's `/proc/self` is lnk's.
//!
//! Where the receiver cannot copy the calling process's descriptors (a kernel before 5.6, a
//! container's profile that refuses `pidfd_getfd`, or, for an ordinary user, a process that made
//! itself not dumpable), nothing would count its watches, so no instance is made (`EMFILE`, a
//! refusal the report names).
//!
//! Past a bound the call gets what the kernel answers past its own limit: `EMFILE`, `ENOSPC`.
//!
//! Trusted with: that a Landlock-only call takes no more of the person's inotify instances and
//! watches than its appetite, and that a watch is only where the program could watch itself.
//! What it trusts: the kernel's notification (numbers only), epoll's release of an entry with
//! its file's last reference, `fdinfo`'s list of an instance's watches, and the program's path
//! as [`super::memory`] read it, resolved as above.

use std::collections::HashMap;
use std::os::fd::{AsFd as _, AsRawFd as _, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use super::Grants;
use super::handles::{CallHandles, What};
use super::memory::Memory;
use super::request::{AT_FDCWD, Target};

/// `inotify_init1`'s flags: `IN_NONBLOCK`, `IN_CLOEXEC`.
const INIT_FLAGS: u64 = (libc::IN_NONBLOCK | libc::IN_CLOEXEC) as u64;

/// `procfs`'s magic number (`statfs`'s `f_type`).
const PROC_SUPER_MAGIC: i64 = 0x9fa0;

/// One instance the server made.
struct Instance {
    /// Its mark: the device and inode lnk's own watch is on.
    mark: (u64, u64),
    /// The memfd that inode is, held while the instance lives (the last close of an unlinked
    /// file removes its watches).
    _marker: OwnedFd,
    /// Its watches, lnk's mark not counted, as last read.
    watches: u32,
}

/// The call's instances, as the server made them.
pub struct Inotify {
    instances_bound: u32,
    watches_bound: u32,
    /// The weak set: one entry per live instance, its data the instance's number.
    live: OwnedFd,
    /// `/proc/self/fdinfo` (`O_PATH`), where the counts are read: the confined server's one
    /// place in `/proc` (see [`Inotify::fdinfo_folder`]).
    fdinfo: OwnedFd,
    instances: HashMap<u64, Instance>,
    next: u64,
}

/// Why a call was refused, for the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// At its bound.
    Bound,
    /// Its instance could not be counted (its `fdinfo` unread, lnk's mark removed, or no copy
    /// of the program's descriptors to be had).
    Uncounted,
    /// A watch on `path`, which lies in `hole`, or where the program may not read (`None`).
    Place { path: PathBuf, hole: Option<PathBuf> },
}

/// A refused or failed call: the errno the program gets, and whether the report names it.
type Failed = (Errno, Option<Refused>);

impl Inotify {
    pub fn new(instances_bound: u32, watches_bound: u32) -> Result<Inotify, Errno> {
        let live = rustix::event::epoll::create(rustix::event::epoll::CreateFlags::CLOEXEC)?;
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let fdinfo = rustix::fs::open("/proc/self/fdinfo", flags, Mode::empty())?;
        Ok(Inotify { instances_bound, watches_bound, live, fdinfo, instances: HashMap::new(), next: 1 })
    }

    /// The folder the counts are read in, which the server's Landlock lets it read beneath
    /// (Landlock's rule is on this folder's inode; held open, it is the one a lookup of its
    /// entries passes, whatever `/proc` makes of its own cache).
    pub fn fdinfo_folder(&self) -> BorrowedFd<'_> {
        self.fdinfo.as_fd()
    }

    /// A held `inotify_init` (`flags` 0) or `inotify_init1(flags)`: the instance made for the
    /// program, or why not (`EMFILE` at the bound, as the kernel answers).
    pub fn make(&mut self, flags: u64, handles: &CallHandles<'_>) -> Result<OwnedFd, Failed> {
        if flags & !INIT_FLAGS != 0 {
            return Err((Errno::INVAL, None));
        }
        if !self.can_copy(handles)? {
            return Err((Errno::MFILE, Some(Refused::Uncounted)));
        }
        self.forget_ended().map_err(|e| (e, Some(Refused::Uncounted)))?;
        if self.instances.len() >= self.instances_bound as usize {
            return Err((Errno::MFILE, Some(Refused::Bound)));
        }
        let (instance, marker, mark) = make_marked(flags).map_err(|e| (e, None))?;
        let number = self.next;
        self.next += 1;
        let data = rustix::event::epoll::EventData::new_u64(number);
        rustix::event::epoll::add(&self.live, &instance, data, rustix::event::epoll::EventFlags::empty())
            .map_err(|e| (e, None))?;
        self.instances.insert(number, Instance { mark, _marker: marker, watches: 0 });
        Ok(instance)
    }

    /// Whether the receiver can copy the held thread's descriptors, asked by asking for one no
    /// table holds (`EBADF` once the kernel let the copy be tried). Asked at each instance: the
    /// answer is the calling process's too (one that made itself not dumpable gives an ordinary
    /// user's helper no copy).
    fn can_copy(&self, handles: &CallHandles<'_>) -> Result<bool, Failed> {
        match handles.open(What::Copy(i32::MAX)) {
            Err(Errno::BADF) => Ok(true),
            // The call is no longer held: no one waits for the answer.
            Err(Errno::NOENT) => Err((Errno::NOENT, None)),
            _ => Ok(false),
        }
    }

    /// Adds a watch on `target` (an `O_PATH` descriptor of lnk's own) with `mask` to
    /// `instance` (a copy of the program's descriptor), within the bound; its number, as the
    /// kernel gives it.
    fn add_watch(&mut self, instance: &OwnedFd, target: &OwnedFd, mask: u32) -> Result<i32, Failed> {
        let uncounted = |e: Errno| (e, Some(Refused::Uncounted));
        self.forget_ended().map_err(|_| uncounted(Errno::NOSPC))?;
        let watches = watches_in(&self.read_fdinfo(instance.as_fd()).map_err(|_| uncounted(Errno::NOSPC))?);
        let Some(number) = self.instances.iter().find(|(_, i)| watches.contains(&i.mark)).map(|(n, _)| *n)
        else {
            return Err(uncounted(Errno::NOSPC));
        };
        let read = (watches.len() as u32).saturating_sub(1);
        let others: u64 =
            self.instances.iter().filter(|(n, _)| **n != number).map(|(_, i)| u64::from(i.watches)).sum();
        // A watch of the same file changes its mask and takes no more (as the kernel counts).
        let stat = rustix::fs::fstat(target).map_err(|e| (e, None))?;
        let new = !watches.contains(&(stat.st_dev, stat.st_ino));
        if new && others + u64::from(read) >= u64::from(self.watches_bound) {
            return Err((Errno::NOSPC, Some(Refused::Bound)));
        }
        let flags = rustix::fs::inotify::WatchFlags::from_bits_retain(mask);
        let added = rustix::fs::inotify::add_watch(instance, proc_self(target).as_str(), flags);
        // Read again: exactly what it holds now (or, unread, one more than before, which errs
        // high).
        let now = match self.read_fdinfo(instance.as_fd()) {
            Ok(info) => (watches_in(&info).len() as u32).saturating_sub(1),
            Err(_) => read + 1,
        };
        if let Some(instance) = self.instances.get_mut(&number) {
            instance.watches = now;
        }
        added.map_err(|e| (e, None))
    }

    /// Forgets the instances whose last reference is gone (their epoll entries with them).
    fn forget_ended(&mut self) -> Result<(), Errno> {
        let live = live_numbers(&self.read_fdinfo(self.live.as_fd())?);
        self.instances.retain(|number, _| live.contains(number));
        Ok(())
    }

    /// The `fdinfo` of one of lnk's own descriptors.
    fn read_fdinfo(&self, fd: BorrowedFd<'_>) -> Result<Vec<u8>, Errno> {
        let flags = OFlags::RDONLY | OFlags::CLOEXEC;
        let info = rustix::fs::openat(&self.fdinfo, fd.as_raw_fd().to_string(), flags, Mode::empty())?;
        // Whole: an instance's watches may fill many pages.
        let mut text = Vec::new();
        std::io::Read::read_to_end(&mut std::fs::File::from(info), &mut text)
            .map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::IO))?;
        Ok(text)
    }
}

/// A held `inotify_add_watch(fd, path, mask)`, made for the program (see the module's
/// documentation): the watch's number, or why not, as the kernel answers.
pub fn add_watch_for(
    inotify: &mut Inotify,
    grants: &Grants,
    handles: &CallHandles<'_>,
    memory: &Memory,
    (fd, path, mask): (i32, u64, u32),
) -> Result<i32, Failed> {
    // The very instance the call names, now: a copy of lnk's own, which no swap of the
    // program's table changes.
    let instance = handles.copy(fd).map_err(|e| match e {
        Errno::BADF | Errno::NOENT => (e, None),
        // Not an inotify instance (nor anything the helper copies), as the kernel answers.
        Errno::NOTSOCK => (Errno::INVAL, None),
        _ => (Errno::NOSPC, Some(Refused::Uncounted)),
    })?;
    let kind = rustix::fs::readlink(proc_self(&instance).as_str(), Vec::new()).map_err(|e| (e, None))?;
    if kind.as_bytes() != b"anon_inode:inotify" {
        return Err((Errno::INVAL, None));
    }
    // `IN_DONT_FOLLOW` is the resolution's, not the watch's: the watch is added through
    // `/proc/self/fd/N`, a magic link the kernel must follow to the file resolved.
    let follow = mask & libc::IN_DONT_FOLLOW == 0;
    let mask = mask & !libc::IN_DONT_FOLLOW;
    if mask == 0 {
        return Err((Errno::INVAL, None));
    }
    let target = Target::Path { dirfd: AT_FDCWD, path, follow, empty_ok: false };
    let target = super::metadata::open_target(handles, memory, target).map_err(|e| (e, None))?;
    // `f_type`'s type is the architecture's (`i64` here, `u32` on some).
    #[allow(clippy::unnecessary_cast)]
    if rustix::fs::fstatfs(&target).is_ok_and(|fs| fs.f_type as i64 == PROC_SUPER_MAGIC) {
        return Err((Errno::ACCESS, None));
    }
    watchable(grants, &target)?;
    inotify.add_watch(&instance, &target, mask)
}

/// Whether the program may watch `target` (an `O_PATH` descriptor of lnk's own): only where it
/// may read, as the kernel names the file now, and in no hole. Landlock does not govern
/// inotify, and a watch shows the names of what is made in a folder and when a file is opened
/// or read (found in review: a call watched `~/.aws`, the host's `/tmp` and `/dev/shm`).
fn watchable(grants: &Grants, target: &OwnedFd) -> Result<(), Failed> {
    use std::os::unix::ffi::OsStrExt as _;
    let named = rustix::fs::readlink(proc_self(target).as_str(), Vec::new()).map_err(|e| (e, None))?;
    let path = Path::new(std::ffi::OsStr::from_bytes(named.as_bytes()));
    // An unlinked file, a pipe, a socket: no place of the program's.
    if !path.is_absolute() || named.as_bytes().ends_with(b" (deleted)") {
        return Err((Errno::ACCESS, None));
    }
    let refused = |hole: Option<&PathBuf>| {
        (Errno::ACCESS, Some(Refused::Place { path: path.to_owned(), hole: hole.cloned() }))
    };
    if path.starts_with(&grants.tmp) {
        return Ok(());
    }
    // lnk's private tmp base holds every call's tmp folder: a hole but for the call's own.
    let tmp_base = grants.tmp.parent().map(Path::to_owned);
    if let Some(hole) = grants.holes.iter().chain(&tmp_base).find(|h| path.starts_with(h)) {
        return Err(refused(Some(hole)));
    }
    if !grants.readable.iter().any(|r| path.starts_with(r)) {
        return Err(refused(None));
    }
    Ok(())
}

/// `/proc/self/fd/N` for one of lnk's own descriptors: a path that leads to exactly that file.
fn proc_self(file: &OwnedFd) -> String {
    format!("/proc/self/fd/{}", file.as_raw_fd())
}

/// An instance with lnk's mark on it, the memfd the mark is on, and the mark (device, inode).
fn make_marked(flags: u64) -> Result<(OwnedFd, OwnedFd, (u64, u64)), Errno> {
    use rustix::fs::inotify::{CreateFlags, WatchFlags};
    let instance =
        rustix::fs::inotify::init(CreateFlags::from_bits_retain(flags as u32) | CreateFlags::CLOEXEC)?;
    let marker = rustix::fs::memfd_create(c"lnk-inotify-mark", rustix::fs::MemfdFlags::CLOEXEC)?;
    let stat = rustix::fs::fstat(&marker)?;
    rustix::fs::inotify::add_watch(&instance, proc_self(&marker).as_str(), WatchFlags::DELETE_SELF)?;
    Ok((instance, marker, (stat.st_dev, stat.st_ino)))
}

/// The (device, inode) of each watch an inotify `fdinfo` lists (`inotify wd:… ino:… sdev:…`).
/// The device is the kernel's number (`sdev`, major << 20 | minor), turned into the one `stat`
/// gives.
fn watches_in(fdinfo: &[u8]) -> Vec<(u64, u64)> {
    let field = |line: &str, key: &str| {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(key))
            .and_then(|v| u64::from_str_radix(v, 16).ok())
    };
    String::from_utf8_lossy(fdinfo)
        .lines()
        .filter(|l| l.starts_with("inotify wd:"))
        .filter_map(|l| {
            let (ino, sdev) = (field(l, "ino:")?, field(l, "sdev:")?);
            let (major, minor) = (sdev >> 20, sdev & 0xfffff);
            Some((libc::makedev(major as u32, minor as u32), ino))
        })
        .collect()
}

/// The data of each entry an epoll's `fdinfo` lists (`tfd: … events: … data: …`).
pub(super) fn live_numbers(fdinfo: &[u8]) -> Vec<u64> {
    String::from_utf8_lossy(fdinfo)
        .lines()
        .filter(|l| l.starts_with("tfd:"))
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            words.find(|w| *w == "data:")?;
            u64::from_str_radix(words.next()?, 16).ok()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instances_count_while_any_reference_lives_and_watches_only_within_the_bound() {
        let tid = rustix::thread::gettid().as_raw_nonzero().get() as u32;
        let handles = CallHandles::of_thread(tid);
        let mut inotify = Inotify::new(2, 3).unwrap();
        let a = inotify.make(0, &handles).unwrap();
        let b = inotify.make(libc::IN_NONBLOCK as u64, &handles).unwrap();
        assert_eq!(inotify.make(0, &handles).err(), Some((Errno::MFILE, Some(Refused::Bound))));
        assert_eq!(inotify.make(0x8000_0000, &handles).err().map(|e| e.0), Some(Errno::INVAL));
        // A copy in flight (here: a duplicate) keeps it counted; the last reference gone, not.
        let copy = a.try_clone().unwrap();
        drop(a);
        assert_eq!(inotify.make(0, &handles).err().map(|e| e.0), Some(Errno::MFILE));
        drop(copy);
        let c = inotify.make(0, &handles).unwrap();
        // Watches: the program's first is number 2 (lnk's mark is 1, and not counted).
        let folder = |p: &str| rustix::fs::open(p, OFlags::PATH | OFlags::CLOEXEC, Mode::empty()).unwrap();
        let (root, tmp, etc) = (folder("/"), folder("/tmp"), folder("/etc"));
        assert_eq!(inotify.add_watch(&b, &root, libc::IN_ATTRIB), Ok(2));
        // The same file again: its mask changes, and it takes no more.
        assert_eq!(inotify.add_watch(&b, &root, libc::IN_CREATE), Ok(2));
        assert_eq!(inotify.add_watch(&c, &root, libc::IN_ATTRIB), Ok(2));
        assert_eq!(inotify.add_watch(&b, &tmp, libc::IN_ATTRIB), Ok(3));
        // Three, on two instances: at the bound, a new file is refused, a mask still changes.
        assert_eq!(inotify.add_watch(&c, &etc, libc::IN_ATTRIB), Err((Errno::NOSPC, Some(Refused::Bound))));
        assert_eq!(inotify.add_watch(&b, &tmp, libc::IN_DELETE), Ok(3));
        // Removed, a watch is counted again once its instance is read.
        rustix::fs::inotify::remove_watch(&b, 3).unwrap();
        assert_eq!(inotify.add_watch(&b, &etc, libc::IN_ATTRIB), Ok(4));
        // An instance without lnk's mark is never added to.
        let unmarked = rustix::fs::inotify::init(rustix::fs::inotify::CreateFlags::CLOEXEC).unwrap();
        assert_eq!(
            inotify.add_watch(&unmarked, &tmp, libc::IN_ATTRIB),
            Err((Errno::NOSPC, Some(Refused::Uncounted)))
        );
    }

    #[test]
    fn an_instance_with_many_watches_is_read_whole() {
        let tid = rustix::thread::gettid().as_raw_nonzero().get() as u32;
        let handles = CallHandles::of_thread(tid);
        let mut inotify = Inotify::new(1, 1000).unwrap();
        let a = inotify.make(0, &handles).unwrap();
        let dir = std::env::temp_dir().join(format!("lnk-inotify-many-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for n in 0..300 {
            let file = dir.join(n.to_string());
            std::fs::write(&file, "").unwrap();
            let target = rustix::fs::open(&file, OFlags::PATH | OFlags::CLOEXEC, Mode::empty()).unwrap();
            assert_eq!(inotify.add_watch(&a, &target, libc::IN_MODIFY), Ok(n + 2));
        }
        let info = inotify.read_fdinfo(a.as_fd()).unwrap();
        assert!(info.len() > 4096, "{} bytes: more than one page", info.len());
        assert_eq!(watches_in(&info).len(), 301);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
