//! The call's inotify instances and watches in the Landlock-only mode, counted by the helper
//! (see [`crate::sandbox::appetite`] for why, and for the own world, where the kernel counts
//! them in the call's user namespace).
//!
//! The kernel counts them per user: the call's with every other program of the person's. A
//! count read from the call's descriptor tables is not enough (found in review): an instance
//! passed over a socket pair and not yet received is in no table, and a process that made itself
//! not dumpable hides its table from an ordinary user's helper. So:
//!
//! - **Instances** are made by the receiver: a held `inotify_init`/`inotify_init1` is answered
//!   with an instance it made (`SECCOMP_IOCTL_NOTIF_ADDFD`), after which it keeps none of it but
//!   an entry in an epoll set of its own. An epoll entry holds no reference: the kernel drops it
//!   when the instance's last reference goes, wherever that was (a table, a message in flight).
//!   So the entries left are exactly the call's live instances, read from the epoll's `fdinfo`.
//! - **Each instance is marked**: before it is handed over, it gets one watch of lnk's own, on a
//!   memfd the helper made and holds while the instance lives (an inode nothing else reaches,
//!   which never changes), so
//!   the instance is known again by that watch in any `fdinfo` that shows it. The program's
//!   first watch then has the number 2.
//! - **Watches**: a held `inotify_add_watch` on a descriptor is let go on only if the call stays
//!   within its bound: that instance's watches are read exactly from the caller's `fdinfo` (the
//!   descriptor must be in the caller's table to be used), the others' as last read, each plus
//!   the adds let go on in the last [`IN_FLIGHT`] that its reads did not grow by. An instance lnk cannot read (not dumpable, its
//!   mark removed) is refused as one at the bound: the count never errs low.
//!
//! Past a bound the call gets what the kernel answers past its own limit: `EMFILE`, `ENOSPC`.
//!
//! Trusted with: that a Landlock-only call takes no more of the person's inotify instances and
//! watches than its appetite. What it trusts: the kernel's notification (numbers only), epoll's
//! release of an entry with its file's last reference, and `fdinfo`'s list of an instance's
//! watches.

use std::collections::{HashMap, VecDeque};
use std::os::fd::{AsRawFd as _, BorrowedFd, OwnedFd};
use std::time::{Duration, Instant};

use rustix::io::Errno;

/// How long a watch let go on is counted beside the count last read.
const IN_FLIGHT: Duration = Duration::from_millis(200);

/// `inotify_init1`'s flags: `IN_NONBLOCK`, `IN_CLOEXEC`.
const INIT_FLAGS: u64 = (libc::IN_NONBLOCK | libc::IN_CLOEXEC) as u64;

/// One instance the receiver made.
struct Instance {
    /// Its mark: the device and inode lnk's own watch is on.
    mark: (u64, u64),
    /// The memfd that inode is, held while the instance lives (the last close of an unlinked
    /// file removes its watches).
    _marker: OwnedFd,
    /// Its watches, lnk's mark not counted, as last read.
    watches: u32,
    /// When each add let go on since was.
    recent: VecDeque<Instant>,
}

/// The call's instances, as the receiver made them.
pub struct Inotify {
    instances_bound: u32,
    watches_bound: u32,
    /// The weak set: one entry per live instance, its data the instance's number.
    live: OwnedFd,
    instances: HashMap<u64, Instance>,
    next: u64,
}

/// Why a call was refused, for the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// At its bound.
    Bound,
    /// Its instance could not be read (its process not dumpable, or lnk's mark removed).
    Uncounted,
}

impl Inotify {
    pub fn new(instances_bound: u32, watches_bound: u32) -> Result<Inotify, Errno> {
        let live = rustix::event::epoll::create(rustix::event::epoll::CreateFlags::CLOEXEC)?;
        Ok(Inotify { instances_bound, watches_bound, live, instances: HashMap::new(), next: 1 })
    }

    /// A held `inotify_init` (`flags` 0) or `inotify_init1(flags)`: the instance made for the
    /// program, or why not (`EMFILE` at the bound, as the kernel answers).
    pub fn make(&mut self, flags: u64) -> Result<OwnedFd, (Errno, Option<Refused>)> {
        if flags & !INIT_FLAGS != 0 {
            return Err((Errno::INVAL, None));
        }
        self.forget_ended().map_err(|e| (e, Some(Refused::Uncounted)))?;
        if self.instances.len() >= self.instances_bound as usize {
            return Err((Errno::MFILE, Some(Refused::Bound)));
        }
        let (instance, marker, mark) = make_marked(flags).map_err(|e| (e, None))?;
        let number = self.next;
        self.next += 1;
        let event = rustix::event::epoll::Event {
            flags: rustix::event::epoll::EventFlags::empty(),
            data: rustix::event::epoll::EventData::new_u64(number),
        };
        rustix::event::epoll::add(&self.live, &instance, event.data, event.flags).map_err(|e| (e, None))?;
        self.instances
            .insert(number, Instance { mark, _marker: marker, watches: 0, recent: VecDeque::new() });
        Ok(instance)
    }

    /// A held `inotify_add_watch` on the caller's descriptor whose `fdinfo` the receiver opened
    /// (`None`: not an inotify instance, which the kernel answers): `Ok` to let it go on, or why
    /// not (`ENOSPC` at the bound, as the kernel answers).
    pub fn admit_watch(&mut self, fdinfo: Option<&[u8]>) -> Result<(), (Errno, Refused)> {
        let Some(fdinfo) = fdinfo else { return Ok(()) };
        self.forget_ended().map_err(|e| (e, Refused::Uncounted))?;
        let now = Instant::now();
        let watches = watches_in(fdinfo);
        let Some((number, _)) = self.instances.iter().find(|(_, i)| watches.contains(&i.mark)) else {
            return Err((Errno::NOSPC, Refused::Uncounted));
        };
        let number = *number;
        let mut total: u64 = 0;
        for (n, instance) in self.instances.iter_mut() {
            while instance.recent.front().is_some_and(|at| now.duration_since(*at) > IN_FLIGHT) {
                instance.recent.pop_front();
            }
            if *n == number {
                // Read now: what grew since the last read has landed, that many of the recent.
                let read = (watches.len() as u32).saturating_sub(1);
                let landed = read.saturating_sub(instance.watches) as usize;
                instance.recent.drain(..landed.min(instance.recent.len()));
                instance.watches = read;
            }
            total += u64::from(instance.watches) + instance.recent.len() as u64;
        }
        if total >= u64::from(self.watches_bound) {
            return Err((Errno::NOSPC, Refused::Bound));
        }
        if let Some(instance) = self.instances.get_mut(&number) {
            instance.recent.push_back(now);
        }
        Ok(())
    }

    /// Forgets the instances whose last reference is gone (their epoll entries with them).
    fn forget_ended(&mut self) -> Result<(), Errno> {
        let info = std::fs::read(format!("/proc/self/fdinfo/{}", self.live.as_raw_fd()))
            .map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::IO))?;
        let live = live_numbers(&info);
        self.instances.retain(|number, _| live.contains(number));
        Ok(())
    }
}

/// An instance with lnk's mark on it, the memfd the mark is on, and the mark (device, inode).
fn make_marked(flags: u64) -> Result<(OwnedFd, OwnedFd, (u64, u64)), Errno> {
    use rustix::fs::inotify::{CreateFlags, WatchFlags};
    let instance =
        rustix::fs::inotify::init(CreateFlags::from_bits_retain(flags as u32) | CreateFlags::CLOEXEC)?;
    let marker = rustix::fs::memfd_create(c"lnk-inotify-mark", rustix::fs::MemfdFlags::CLOEXEC)?;
    let stat = rustix::fs::fstat(&marker)?;
    let path = format!("/proc/self/fd/{}", marker.as_raw_fd());
    rustix::fs::inotify::add_watch(&instance, path.as_str(), WatchFlags::DELETE_SELF)?;
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
fn live_numbers(fdinfo: &[u8]) -> Vec<u64> {
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

/// The caller's descriptor's `fdinfo` as the receiver read it, if the descriptor is an inotify
/// instance (`anon_inode:inotify`).
pub fn read_fdinfo(listener: BorrowedFd<'_>, id: u64, tid: u32, fd: i32) -> Result<Option<Vec<u8>>, Errno> {
    if fd < 0 {
        return Ok(None);
    }
    let link = match std::fs::read_link(format!("/proc/{tid}/fd/{fd}")) {
        Ok(link) => link,
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(None),
        Err(e) => return Err(Errno::from_io_error(&e).unwrap_or(Errno::ACCESS)),
    };
    if link.as_os_str() != "anon_inode:inotify" {
        return Ok(None);
    }
    let info = super::handles::open_for(listener, id, tid, super::handles::What::FdInfo(fd))?;
    let mut text = Vec::new();
    std::io::Read::read_to_end(&mut std::fs::File::from(info), &mut text)
        .map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::IO))?;
    Ok(Some(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instance_is_counted_while_any_reference_lives_and_known_again_by_its_mark() {
        let mut inotify = Inotify::new(2, 3).unwrap();
        let a = inotify.make(0).unwrap();
        let b = inotify.make(libc::IN_NONBLOCK as u64).unwrap();
        assert_eq!(inotify.make(0).err(), Some((Errno::MFILE, Some(Refused::Bound))));
        assert_eq!(inotify.make(0x8000_0000).err().map(|e| e.0), Some(Errno::INVAL));
        // A copy in flight (here: a duplicate) keeps it counted; the last reference gone, not.
        let copy = a.try_clone().unwrap();
        drop(a);
        assert_eq!(inotify.make(0).err().map(|e| e.0), Some(Errno::MFILE));
        drop(copy);
        let c = inotify.make(0).unwrap();
        // Watches: lnk's mark is known in the instance's own fdinfo, and not counted.
        let info = |fd: &OwnedFd| std::fs::read(format!("/proc/self/fdinfo/{}", fd.as_raw_fd())).unwrap();
        assert_eq!(watches_in(&info(&b)).len(), 1, "the mark");
        assert_eq!(inotify.admit_watch(Some(&info(&b))), Ok(()));
        rustix::fs::inotify::add_watch(&b, "/", rustix::fs::inotify::WatchFlags::ATTRIB).unwrap();
        assert_eq!(inotify.admit_watch(Some(&info(&c))), Ok(()));
        // b's first add landed (read now), c's is still counted as on its way: two, room for one.
        assert_eq!(inotify.admit_watch(Some(&info(&b))), Ok(()));
        // One read on b, one on its way to b, one to c: at the bound of 3.
        assert_eq!(inotify.admit_watch(Some(&info(&b))), Err((Errno::NOSPC, Refused::Bound)));
        // An instance without lnk's mark is never let past.
        let unmarked = rustix::fs::inotify::init(rustix::fs::inotify::CreateFlags::CLOEXEC).unwrap();
        assert_eq!(inotify.admit_watch(Some(&info(&unmarked))), Err((Errno::NOSPC, Refused::Uncounted)));
        assert_eq!(inotify.admit_watch(None), Ok(()), "not an instance: the kernel answers");
    }
}
