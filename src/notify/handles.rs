//! What the held calls' server may ask the receiver to open: handles on the held thread's own
//! memory, descriptors and status, and nothing else.
//!
//! The server reads the program's bytes, so it runs confined (Landlock and seccomp, see
//! [`crate::thread_confinement`]). Landlock's scope then keeps it from the program's `/proc`
//! files too: reading `/proc/<tid>/mem` or following `/proc/<tid>/fd/N` is a ptrace access,
//! which Landlock allows only towards a process of the same or a nested domain, and the
//! program's domain is neither. So the receiver, which reads no byte of the program's, opens
//! them for the server, and only for a call it handed over and that is still held:
//!
//! - the server names the call by its id, never by a thread: the receiver takes the thread from
//!   its own table of the calls it handed over (the kernel's notifications), so a server taken
//!   over can ask for no other process's memory or descriptors;
//! - after opening, the receiver checks the call is still held (`SECCOMP_IOCTL_NOTIF_ID_VALID`),
//!   so what it opened is that thread's and not a process's that took its number since;
//! - each handle is opened without following the program's links on the receiver's side: its
//!   working folder and descriptors as `O_PATH` (never opened for reading or writing, so never
//!   a FIFO or a device the program put there), its memory and `fdinfo` as the kernel's own
//!   files.
//!
//! Trusted with: which processes' handles the confined server gets: a bug here could hand it
//! another process's memory. What it trusts: the kernel's notifications and `/proc`, and
//! `SECCOMP_IOCTL_NOTIF_ID_VALID`.

use std::collections::VecDeque;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use super::closer::ProgramCopy;

/// A handle of the held thread's, as the server asks for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum What {
    /// Its memory, for reading (`/proc/<tid>/mem`).
    Memory,
    /// Its memory, for reading and writing (a call whose answer the program's memory receives).
    WritableMemory,
    /// Its working folder (`O_PATH`).
    Cwd,
    /// Its root folder (`O_PATH`): the own world's, where it has one.
    Root,
    /// Its descriptor N (`O_PATH`, through `/proc/<tid>/fd/N`).
    Fd(i32),
    /// What the kernel says of its descriptor N (`/proc/<tid>/fdinfo/N`).
    FdInfo(i32),
    /// Its `/proc/<tid>/status` (the umask).
    Status,
    /// A copy of its descriptor N (`pidfd_getfd`), where the kernel gives one.
    Copy(i32),
}

/// One request, with where its answer goes.
pub(super) struct Request {
    pub(super) id: u64,
    /// `None`: the call was answered, and its id is forgotten.
    pub(super) what: Option<What>,
    pub(super) reply: Option<mpsc::SyncSender<Result<OwnedFd, Errno>>>,
}

/// The server's side: asks the receiver for a handle of a held call's.
#[derive(Clone)]
pub struct Opener {
    inbox: Arc<Inbox>,
    wake: Arc<OwnedFd>,
}

/// What the server asked or told, and not yet read by the receiver.
struct Inbox {
    /// The requests waiting; `None` once the receiver ended (a request is then answered at
    /// once).
    queue: Mutex<Option<VecDeque<Request>>>,
    /// Whether the receiver is to be woken for an answered call (it has calls waiting for
    /// room); else it reads of them when it wakes for anything else.
    wake_for_answers: AtomicBool,
}

/// The receiver's side: the requests waiting, and the descriptor that polls ready when one
/// comes.
pub(super) struct Requests {
    inbox: Arc<Inbox>,
    pub(super) ready: OwnedFd,
}

/// A pair of ends: the server's [`Opener`] and the receiver's [`Requests`].
pub(super) fn pair() -> Result<(Opener, Requests), Errno> {
    let (ready, wake) =
        rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC | rustix::pipe::PipeFlags::NONBLOCK)?;
    let inbox = Arc::new(Inbox {
        queue: Mutex::new(Some(VecDeque::new())),
        wake_for_answers: AtomicBool::new(false),
    });
    Ok((Opener { inbox: Arc::clone(&inbox), wake: Arc::new(wake) }, Requests { inbox, ready }))
}

impl Opener {
    /// A handle of the held call `id`'s thread; `ENOENT` when the call is no longer held.
    pub fn open(&self, id: u64, what: What) -> Result<OwnedFd, Errno> {
        let (reply, answer) = mpsc::sync_channel(1);
        self.push(Request { id, what: Some(what), reply: Some(reply) }, true);
        answer.recv().unwrap_or(Err(Errno::NOENT))
    }

    /// Tells the receiver the call `id` was answered: nothing more is opened for it. It is
    /// not woken for this unless it asked to be (see [`Requests::wake_for_answers`]): the
    /// wake-up would come between the answer and the program's thread, on the CPU they share
    /// (see [`super::placement`]).
    pub fn done(&self, id: u64) {
        self.push(Request { id, what: None, reply: None }, false);
    }

    /// Queues `request`, and wakes the receiver if `wake` or it asked to be woken for every
    /// answer. The setting is read after the queue's lock is let go (see
    /// [`Requests::wake_for_answers`]).
    fn push(&self, request: Request, wake: bool) {
        // Once the receiver is gone the request is dropped here, and its reply with it.
        if let Some(queue) = self.inbox.queue.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            queue.push_back(request);
        }
        // A full pipe already says there is something to read.
        if wake || self.inbox.wake_for_answers.load(Ordering::SeqCst) {
            let _ = rustix::io::write(&*self.wake, &[1]);
        }
    }
}

/// The handles of one held call, as the server asks for them.
pub struct CallHandles<'a> {
    from: From<'a>,
    /// Handles the receiver took with the call, before it checked the call was still held
    /// (see [`Taking`]): given again without asking.
    taken: Vec<(What, OwnedFd)>,
}

enum From<'a> {
    /// The receiver, for the held call of this id.
    Receiver(&'a Opener, u64),
    /// Opened at once, of this thread, unchecked (the unit tests' stand-in for a held call).
    #[cfg(test)]
    Thread(u32),
}

impl<'a> CallHandles<'a> {
    /// The handles of the held call `id`: `taken`, those the receiver took with it; any other
    /// asked of the receiver.
    pub fn new(opener: &'a Opener, id: u64, taken: Vec<(What, OwnedFd)>) -> CallHandles<'a> {
        CallHandles { from: From::Receiver(opener, id), taken }
    }

    /// Handles of thread `tid` opened at once, for the unit tests.
    #[cfg(test)]
    pub fn of_thread(tid: u32) -> CallHandles<'static> {
        CallHandles { from: From::Thread(tid), taken: Vec::new() }
    }

    /// `what`, if the receiver took it with the call; never asks.
    pub fn taken(&self, what: What) -> Option<BorrowedFd<'_>> {
        self.taken.iter().find(|(w, _)| *w == what).map(|(_, fd)| fd.as_fd())
    }

    /// A copy of the program's descriptor `fd`, closed apart from the held calls when dropped
    /// (see [`super::closer`]): the one the receiver took with the call (a duplicate), else
    /// asked for.
    pub fn copy(&self, fd: i32) -> Result<ProgramCopy, Errno> {
        self.open(What::Copy(fd)).map(ProgramCopy::new)
    }

    /// `what`, to look at: the one the receiver took with the call, else opened as by
    /// [`CallHandles::open`] (never a copy: see [`CallHandles::copy`]).
    pub fn reach(&self, what: What) -> Result<Handle<'_>, Errno> {
        match (self.taken(what), what) {
            (Some(taken), _) => Ok(Handle::Taken(taken)),
            (None, What::Copy(_)) => Err(Errno::INVAL),
            (None, _) => self.open(what).map(Handle::Opened),
        }
    }

    /// `what` of the held call's thread; `ENOENT` when the call is no longer held. One the
    /// receiver took with the call is given again (a duplicate: an `fdinfo` is read with
    /// `pread`, so a duplicate's shared offset does not matter). A copy to keep is asked with
    /// [`CallHandles::copy`], whose drop closes it as [`super::closer`] says.
    pub fn open(&self, what: What) -> Result<OwnedFd, Errno> {
        if let Some(taken) = self.taken(what) {
            return rustix::io::fcntl_dupfd_cloexec(taken, 0);
        }
        match self.from {
            From::Receiver(opener, id) => opener.open(id, what),
            #[cfg(test)]
            From::Thread(tid) => open_unchecked(tid, what),
        }
    }
}

impl Drop for CallHandles<'_> {
    fn drop(&mut self) {
        let_go(std::mem::take(&mut self.taken));
    }
}

/// Lets go of handles taken with a call: a copy of the program's descriptor may be its last,
/// and is closed as [`super::closer`] says.
pub(super) fn let_go(taken: Vec<(What, OwnedFd)>) {
    for (what, taken) in taken {
        match what {
            What::Copy(_) => super::closer::close_apart(taken),
            _ => drop(taken),
        }
    }
}

/// A handle of a held call's, borrowed from those taken with it or opened for the asker.
pub enum Handle<'a> {
    Taken(BorrowedFd<'a>),
    Opened(OwnedFd),
}

impl AsFd for Handle<'_> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            Handle::Taken(fd) => fd.as_fd(),
            Handle::Opened(fd) => fd.as_fd(),
        }
    }
}

impl Requests {
    /// The requests waiting, taken; `woken`: `ready` polled ready, and is drained first.
    pub(super) fn take(&self, woken: bool) -> Vec<Request> {
        let mut drained = [0u8; 64];
        while woken && rustix::io::read(&self.ready, &mut drained).is_ok_and(|n| n > 0) {}
        let mut queue = self.inbox.queue.lock().unwrap_or_else(|e| e.into_inner());
        queue.as_mut().map(|q| q.drain(..).collect()).unwrap_or_default()
    }

    /// Whether each answered call wakes the receiver from now on. Set before the receiver
    /// next takes the requests and waits: an answer told before the setting is in the queue
    /// that take reads, and one told after it wakes the wait (the queue's lock orders the two).
    pub(super) fn wake_for_answers(&self, wake: bool) {
        self.inbox.wake_for_answers.store(wake, Ordering::SeqCst);
    }

    /// Ends the queue: what waits in it is dropped (its replies with it), and what comes later
    /// is dropped at once.
    pub(super) fn close(&self) {
        self.inbox.queue.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}

/// Opens `what` of thread `tid`, whose call `id` is held on `listener`; `ENOENT` once it is not
/// (whatever was opened is then dropped: it may be another process's). A copy is taken through
/// a pidfd of the thread opened before the check, and only after it: the check proves the pidfd
/// is the held thread's, so the copy can come from no other process's table, even once the
/// thread is gone and its number another's (a copy taken by number first would have been that
/// process's descriptor for a moment, its socket's cgroup tags rewritten: found in review).
pub(super) fn open_for(listener: BorrowedFd<'_>, id: u64, tid: u32, what: What) -> Result<OwnedFd, Errno> {
    let held = || crate::sys::seccomp_notif_id_valid(listener, id);
    if let What::Copy(fd) = what {
        if !super::closer::has_room() {
            return Err(Errno::MFILE);
        }
        looks_copyable(tid, fd)?;
        let thread = thread_pidfd(tid)?;
        if !held() {
            return Err(Errno::NOENT);
        }
        return copy_through(&thread, fd);
    }
    let opened = open_unchecked(tid, what)?;
    if !held() {
        return Err(Errno::NOENT);
    }
    Ok(opened)
}

fn open_unchecked(tid: u32, what: What) -> Result<OwnedFd, Errno> {
    let path_flags = OFlags::PATH | OFlags::CLOEXEC;
    let read = OFlags::RDONLY | OFlags::CLOEXEC;
    let fd_number = |fd: i32| if fd < 0 { Err(Errno::BADF) } else { Ok(fd) };
    // A descriptor the program does not have is `EBADF` to it, whatever `/proc` says.
    let no_such_descriptor = |e: Errno| if e == Errno::NOENT { Errno::BADF } else { e };
    match what {
        What::Memory => rustix::fs::open(format!("/proc/{tid}/mem"), read, Mode::empty()),
        What::WritableMemory => {
            rustix::fs::open(format!("/proc/{tid}/mem"), OFlags::RDWR | OFlags::CLOEXEC, Mode::empty())
        }
        What::Cwd => rustix::fs::open(format!("/proc/{tid}/cwd"), path_flags, Mode::empty()),
        What::Root => rustix::fs::open(format!("/proc/{tid}/root"), path_flags, Mode::empty()),
        What::Fd(fd) => {
            rustix::fs::open(format!("/proc/{tid}/fd/{}", fd_number(fd)?), path_flags, Mode::empty())
                .map_err(no_such_descriptor)
        }
        What::FdInfo(fd) => {
            rustix::fs::open(format!("/proc/{tid}/fdinfo/{}", fd_number(fd)?), read, Mode::empty())
                .map_err(no_such_descriptor)
        }
        What::Status => rustix::fs::open(format!("/proc/{tid}/status"), read, Mode::empty()),
        What::Copy(fd) => copy_of(tid, fd_number(fd)?),
    }
}

/// What the receiver takes with a held socket call (`connect`, `bind`, `listen`,
/// `getsockname` of descriptor `fd`), so that the server need not ask for it, a wake-up of each
/// thread apiece: a copy of the descriptor; and, where the answer may put a new socket at `fd`
/// (`puts_sockets`: the Landlock-only mode without copies, see [`super::sockets`]), its
/// `fdinfo` (the close-on-exec). Taken in two steps around the receiver's check that the call is still held,
/// as [`open_for`] takes them: a pidfd of the thread and the `fdinfo` before it
/// ([`Taking::begin`]), the copy through that pidfd after it ([`Taking::finish`]). What could not
/// be taken is left out, and asked for as any other (where the kernel gives no copy, the
/// server asks for the descriptor's `O_PATH` handle).
pub(super) struct Taking {
    fd: i32,
    thread: Option<OwnedFd>,
    fdinfo: Option<OwnedFd>,
}

impl Taking {
    /// Before the check that the call is held. No copy is taken of what does not look like a
    /// socket ([`looks_copyable`]), nor while the closer is behind
    /// ([`super::closer::has_room`]).
    pub(super) fn begin(tid: u32, nr: libc::c_long, fd: i32, puts_sockets: bool) -> Taking {
        let puts = puts_sockets && [libc::SYS_connect, libc::SYS_bind, libc::SYS_listen].contains(&nr);
        let fdinfo = match puts {
            true => open_unchecked(tid, What::FdInfo(fd)).ok(),
            false => None,
        };
        let copy = super::closer::has_room() && looks_copyable(tid, fd).is_ok();
        let thread = if copy { thread_pidfd(tid).ok() } else { None };
        Taking { fd, thread, fdinfo }
    }

    /// After the check said the call is held: the handles taken.
    pub(super) fn finish(self) -> Vec<(What, OwnedFd)> {
        let copy = self.thread.and_then(|thread| copy_through(&thread, self.fd).ok());
        let copy = copy.map(|copy| (What::Copy(self.fd), copy));
        copy.into_iter().chain(self.fdinfo.map(|info| (What::FdInfo(self.fd), info))).collect()
    }
}

/// Whether the kernel gives lnk copies of a process's descriptors (`pidfd_getfd`), asked of
/// lnk's own process: container runtimes' default seccomp profiles refuse it.
pub fn copies_available() -> bool {
    use rustix::process::{PidfdFlags, PidfdGetfdFlags};
    let Ok(me) = rustix::process::pidfd_open(rustix::process::getpid(), PidfdFlags::empty()) else {
        return false;
    };
    let number = std::os::fd::AsRawFd::as_raw_fd(&me);
    rustix::process::pidfd_getfd(me.as_fd(), number, PidfdGetfdFlags::empty()).is_ok()
}

/// A copy of thread `tid`'s descriptor `fd` (`pidfd_getfd`), unchecked (the unit tests' stand-in
/// for a held call's): `EPERM` where the kernel or a container's profile gives none.
fn copy_of(tid: u32, fd: i32) -> Result<OwnedFd, Errno> {
    copy_through(&thread_pidfd(tid)?, fd)
}

/// Whether thread `tid`'s descriptor `fd` looks like a kind [`copyable`] keeps, by its link in
/// `/proc` (which asks nothing of the file's file system), before a copy is taken: a copy of
/// any other file would be let go of, and closing it asks its file system (a FUSE or NFS
/// file's flush), on the closer's thread, which a program could keep busy so (found in
/// review). `ENOTSOCK` for another kind, `EBADF` for no descriptor.
fn looks_copyable(tid: u32, fd: i32) -> Result<(), Errno> {
    if fd < 0 {
        return Err(Errno::BADF);
    }
    let link = rustix::fs::readlink(format!("/proc/{tid}/fd/{fd}"), Vec::with_capacity(32))
        .map_err(|e| if e == Errno::NOENT { Errno::BADF } else { e })?;
    match link.as_bytes().starts_with(b"socket:[") || copyable_kind(link.as_bytes()) {
        true => Ok(()),
        false => Err(Errno::NOTSOCK),
    }
}

/// Whether `copy` is of a kind the helper keeps a copy of: a socket (asked of the socket
/// itself), an inotify instance, or the terminal multiplexer (`/dev/ptmx`, `/dev/pts/ptmx`),
/// told by its link in `/proc`. Neither asks anything of a file's file system: a copy of a FUSE
/// or NFS file would wait on it when looked at (found in review), and is let go of at once.
fn copyable(copy: &OwnedFd) -> bool {
    if rustix::net::sockopt::socket_type(copy).is_ok() {
        return true;
    }
    let own = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(copy));
    rustix::fs::readlink(own, Vec::with_capacity(32)).is_ok_and(|link| copyable_kind(link.as_bytes()))
}

/// See [`copyable`].
fn copyable_kind(link: &[u8]) -> bool {
    link == b"anon_inode:inotify" || link == b"/dev/ptmx" || link == b"/dev/pts/ptmx"
}

/// A pidfd of thread `tid`: it names that very thread, never one that takes its number later.
fn thread_pidfd(tid: u32) -> Result<OwnedFd, Errno> {
    use rustix::process::PidfdFlags;
    let pid =
        rustix::process::Pid::from_raw(i32::try_from(tid).map_err(|_| Errno::SRCH)?).ok_or(Errno::SRCH)?;
    // PIDFD_THREAD (Linux 6.9): the held call may be a thread's; before it, a leader's only.
    let thread = PidfdFlags::from_bits_retain(libc::O_EXCL as _);
    rustix::process::pidfd_open(pid, thread)
        .or_else(|_| rustix::process::pidfd_open(pid, PidfdFlags::empty()))
}

/// A copy of descriptor `fd` of the thread `thread` names (`pidfd_getfd`); `ESRCH` once it has
/// ended, `EBADF` for a number it has no descriptor at, `ENOTSOCK` when it is not of a kind
/// [`copyable`] keeps (the copy is then let go of on the closer's thread).
fn copy_through(thread: &OwnedFd, fd: i32) -> Result<OwnedFd, Errno> {
    if fd < 0 {
        return Err(Errno::BADF);
    }
    let copy = rustix::process::pidfd_getfd(thread.as_fd(), fd, rustix::process::PidfdGetfdFlags::empty())?;
    if !copyable(&copy) {
        super::closer::close_apart(copy);
        return Err(Errno::NOTSOCK);
    }
    Ok(copy)
}

/// Reads the whole of a small `/proc` file the receiver opened (a status, an `fdinfo`), from
/// its start whatever its offset.
pub fn read_small(file: impl AsFd) -> Result<Vec<u8>, Errno> {
    let mut text = vec![0u8; 4096];
    let mut filled = 0;
    while filled < text.len() {
        match rustix::io::pread(&file, &mut text[filled..], filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(Errno::INTR) => {}
            Err(e) => return Err(e),
        }
    }
    text.truncate(filled);
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd as _;

    #[test]
    fn only_sockets_inotify_instances_and_the_multiplexer_are_copied() {
        let me = rustix::thread::gettid().as_raw_nonzero().get() as u32;
        let thread = thread_pidfd(me).unwrap();
        let socket = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let inotify = rustix::fs::inotify::init(rustix::fs::inotify::CreateFlags::CLOEXEC).unwrap();
        assert!(copy_through(&thread, socket.as_raw_fd()).is_ok());
        assert!(copy_through(&thread, inotify.as_raw_fd()).is_ok());
        // A file is never kept: on FUSE or NFS its copy would wait on the file system.
        let file = std::fs::File::open("/proc/self/stat").unwrap();
        assert_eq!(copy_through(&thread, file.as_raw_fd()).err(), Some(Errno::NOTSOCK));
        // Nor is a copy of one taken: closing it would ask its file system.
        assert_eq!(looks_copyable(me, file.as_raw_fd()), Err(Errno::NOTSOCK));
        assert_eq!(looks_copyable(me, socket.as_raw_fd()), Ok(()));
        assert_eq!(looks_copyable(me, inotify.as_raw_fd()), Ok(()));
        assert_eq!(looks_copyable(me, 100_000), Err(Errno::BADF));
        assert_eq!(copy_through(&thread, 100_000).err(), Some(Errno::BADF));
        assert_eq!(copy_through(&thread, -1).err(), Some(Errno::BADF));
        assert!(copyable_kind(b"/dev/pts/ptmx") && copyable_kind(b"/dev/ptmx"));
        assert!(!copyable_kind(b"/home/ann/dev/ptmx") && !copyable_kind(b"socket:[1]"));
    }
}
