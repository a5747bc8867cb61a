//! Connects made on a copy of the program's socket without ever blocking the helper: the own
//! world's (see [`super::world_connects`]) and the Landlock-only mode's TCP connects (see
//! [`super::socket_copies`]).
//!
//! A connect is made with the copy's file non-blocking for that one call ([`without_blocking`]:
//! the copy shares the program's open file, so its flags are the program's, set back at once).
//! Done or failed at once, it is answered at once; a program's non-blocking connect under way
//! is answered `EINPROGRESS`, as the kernel answers it; a blocking one under way (or a Unix
//! connect the listener's full queue refused) is kept waiting apart ([`Pending`]), on a copy of
//! its own, looked at again between the server's calls and answered when done, while the
//! server serves the rest. On loopback a connect is mostly done before `connect` returns, so
//! most are answered at once.
//!
//! What the program sees differently: for the moment of each try its socket's file is
//! non-blocking to another thread of the program's (one that reads the flags then and writes
//! them back keeps that).
//!
//! **A program that makes the file blocking again** between the helper's `fcntl` and its
//! `connect` (a thread of its own doing so in a loop) makes that connect block: until the
//! listener answers, which a full queue (the program's own listener, never accepted from)
//! delays until the kernel gives up (about two minutes for TCP; never, for a Unix listener).
//! Every other held call of the program's would wait for it. So the server says when it
//! connects ([`Watching`]), and the receiver, which never blocks, interrupts a connect that has
//! kept the server [`CONNECT_AT_MOST`] with a signal to the server thread
//! ([`interrupt_if_overdue`]); the connect returns `EINTR` and is waited for apart as any
//! other under way. The receiver looks while calls are in the server's hands, at least every
//! [`LOOK_EVERY`]. The signal ([`INTERRUPT`]) is handled by a handler that does nothing
//! (`crate::sys::interrupt_with`, no `SA_RESTART`), blocked in every thread of the helper's
//! but the server, and sent to that thread alone, only while the server says it connects,
//! under the lock the server takes to say it is done (which then lets the signal land, so that
//! it interrupts nothing after).
//!
//! Trusted with: that no connect blocks the held calls' server for long. What it trusts: the
//! kernel's `O_NONBLOCK` on the copy's file, `poll`, `SO_ERROR`, and a signal's interrupting a
//! connect's wait (`EINTR`).

use std::os::fd::{AsFd as _, BorrowedFd, OwnedFd};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rustix::fs::OFlags;
use rustix::io::Errno;
use rustix::net::SocketAddrUnix;

use super::Reply;
use super::closer::ProgramCopy;
use super::placement::ServerThread;
use crate::proxy::loopback::{Loopback, Target};

/// How long a connect may keep the server before the receiver interrupts it.
pub(super) const CONNECT_AT_MOST: Duration = Duration::from_secs(2);

/// How often, at least, the receiver looks at the server's connect while calls are in its
/// hands.
pub(super) const LOOK_EVERY: Duration = Duration::from_secs(1);

/// The signal that interrupts a connect: ignored by default, so one that came before the
/// helper handles it, or from elsewhere, does nothing.
pub(super) const INTERRUPT: i32 = libc::SIGURG;

/// Blocks [`INTERRUPT`] in the calling thread, and so in every thread it starts from then on.
/// The helper calls it before it starts its first thread (the proxy's, which come before the
/// held calls' own), so that the held calls' server, which unblocks it, is the only thread the
/// signal can interrupt (found unblocked in the proxy's threads in issue 32's fourth round).
pub fn block_interrupt_here() {
    crate::sys::block_signal_here(INTERRUPT);
}

/// What the server's connect is at: one server thread per helper process.
static WATCH: Mutex<Watched> = Mutex::new(Watched::Idle);

#[derive(Clone, Copy)]
enum Watched {
    Idle,
    /// Connecting since then.
    Connecting(Instant),
    /// Sent [`INTERRUPT`] while connecting.
    Interrupted,
}

fn watch() -> MutexGuard<'static, Watched> {
    WATCH.lock().unwrap_or_else(|e| e.into_inner())
}

/// The server's word that it connects, for as long as this lives.
struct Watching;

impl Watching {
    fn start() -> Watching {
        *watch() = Watched::Connecting(Instant::now());
        Watching
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        let mut watched = watch();
        if matches!(*watched, Watched::Interrupted) {
            // The receiver sent the signal (before it let go of this lock), so it is this
            // thread's now; if the connect's return did not run its handler, the return of
            // this call does, and nothing after is interrupted.
            let _ = rustix::thread::gettid();
        }
        *watched = Watched::Idle;
    }
}

/// For the receiver, before it waits: how long it may wait before it looks at the server's
/// connect again (`server_busy`: calls are in the server's hands, which may be connecting
/// already); `None`: as long as it likes.
pub(super) fn look_again_in(server_busy: bool) -> Option<Duration> {
    match *watch() {
        Watched::Connecting(since) => Some(CONNECT_AT_MOST.saturating_sub(since.elapsed()).min(LOOK_EVERY)),
        _ if server_busy => Some(LOOK_EVERY),
        _ => None,
    }
}

/// For the receiver, after each wait: interrupts the server's connect if it has kept the server
/// [`CONNECT_AT_MOST`] or longer.
pub(super) fn interrupt_if_overdue(server: &ServerThread) {
    let mut watched = watch();
    if let Watched::Connecting(since) = *watched {
        if since.elapsed() >= CONNECT_AT_MOST {
            // Sent or not (the server gone), looked at no more: never a wait of no time again
            // and again.
            let _ = server.interrupt(INTERRUPT);
            *watched = Watched::Interrupted;
        }
    }
}

/// The longest pause between two looks at a connect under way: the kernel's own tries of a
/// connection whose handshake went unanswered come seconds apart.
const LONGEST_PAUSE: Duration = Duration::from_millis(128);

/// A connect the program waits for, made and not yet done: looked at again after a pause that
/// grows from 1 ms to [`LONGEST_PAUSE`] (a Unix one is tried again; no poll tells a full
/// queue's room).
pub struct Pending {
    /// The held call.
    pub id: u64,
    copy: ProgramCopy,
    wait: Wait,
    next: Instant,
    pause: Duration,
    /// Noted on the call's loopback once connected (the Landlock-only mode's TCP connects:
    /// [`Loopback::connected_to`]), with the listener it goes to and the socket's inode.
    noted: Option<(Arc<Loopback>, Target, u64)>,
}

/// What a connect under way waits for.
pub enum Wait {
    /// A TCP connect under way, to `target` (`None`: `AF_UNSPEC`): done when the socket is
    /// writable.
    Tcp { target: Option<std::net::SocketAddr> },
    /// A Unix connect the listener's full queue refused: tried again, through `through` (whose
    /// file, if any, is held open in `_file`).
    Unix { through: SocketAddrUnix, _file: Option<OwnedFd> },
}

impl Pending {
    fn new(id: u64, copy: ProgramCopy, wait: Wait) -> Pending {
        let pause = Duration::from_millis(1);
        Pending { id, copy, wait, next: Instant::now() + pause, pause, noted: None }
    }

    /// Once connected, the connection is noted on `loopback`, to `target`, of the socket
    /// `inode` (see [`Loopback::connected_to`]).
    pub fn note_when_connected(&mut self, loopback: Arc<Loopback>, target: Target, inode: u64) {
        self.noted = Some((loopback, target, inode));
    }

    /// Whether it is time to look again (and then, the next time after a longer pause).
    pub fn due(&mut self, now: Instant) -> bool {
        if now < self.next {
            return false;
        }
        self.pause = (self.pause * 2).min(LONGEST_PAUSE);
        self.next = now + self.pause;
        true
    }

    /// When it is next time to look.
    pub fn next_look(&self) -> Instant {
        self.next
    }

    /// The connect's end, once it is over: `None` while it is not.
    pub fn done(&self) -> Option<Result<(), Errno>> {
        let done = ended(self.copy.as_fd(), &self.wait);
        match (&done, &self.noted) {
            (Some(Ok(())), Some((loopback, target, inode))) => {
                loopback.connected_to(target, self.copy.as_fd(), *inode)
            }
            (Some(Err(_)), Some((loopback, _, inode))) => loopback.not_connected(*inode),
            _ => {}
        }
        done
    }
}

/// Whether the connect on `copy` that `wait` describes is over, and how it ended.
fn ended(copy: BorrowedFd<'_>, wait: &Wait) -> Option<Result<(), Errno>> {
    match wait {
        Wait::Tcp { target } => {
            let mut fds = [rustix::event::PollFd::new(&copy, rustix::event::PollFlags::OUT)];
            let zero = rustix::event::Timespec { tv_sec: 0, tv_nsec: 0 };
            match rustix::event::poll(&mut fds, Some(&zero)) {
                Ok(0) | Err(Errno::INTR) => None,
                Ok(_) => match (rustix::net::sockopt::socket_error(copy).and_then(|e| e), target) {
                    (Err(e), _) => Some(Err(e)),
                    (Ok(()), None) => Some(Ok(())),
                    // Connected, if its peer says so: a connect the program undid meanwhile
                    // (`shutdown`, its error read) is over, as the kernel then answers the
                    // waiting one (found in review: it was taken for done, and the next step
                    // started it anew).
                    (Ok(()), Some(_)) if !matches!(rustix::net::getpeername(copy), Ok(Some(_))) => {
                        Some(Err(Errno::CONNABORTED))
                    }
                    // Once more, as a blocking connect ends: the socket is then connected for
                    // the kernel's later answers too (`EISCONN`, not 0 once more). Made as every
                    // other (non-blocking, watched), and its answer is the connect's (a reset
                    // meanwhile is its error; one under way, which an established socket never
                    // is again, would be taken as undone).
                    (Ok(()), Some(target)) => {
                        match without_blocking(copy, |c| rustix::net::connect(c, target)) {
                            Ok((Ok(()) | Err(Errno::ISCONN), _)) => Some(Ok(())),
                            Ok((Err(Errno::INPROGRESS | Errno::ALREADY | Errno::INTR), _)) => {
                                Some(Err(Errno::CONNABORTED))
                            }
                            Ok((Err(e), _)) | Err(e) => Some(Err(e)),
                        }
                    }
                },
                Err(e) => Some(Err(e)),
            }
        }
        Wait::Unix { through, .. } => match without_blocking(copy, |c| rustix::net::connect(c, through)) {
            Ok((Err(Errno::AGAIN), _)) => None,
            Ok((made, _)) => Some(made),
            Err(e) => Some(Err(e)),
        },
    }
}

/// Makes the connect on `copy` (of the held call `id`) without blocking: done (or failed) at
/// once, or, for a program's blocking socket, kept waiting as `wait` says (on a copy of its
/// own, closed apart: see [`super::closer`]). A non-blocking socket's connect under way is
/// `EINPROGRESS`, as the kernel answers it.
pub fn start(
    id: u64,
    copy: BorrowedFd<'_>,
    wait: Wait,
    connect: impl Fn(BorrowedFd<'_>) -> Result<(), Errno>,
) -> Result<Reply, Errno> {
    let (made, blocking) = without_blocking(copy, &connect)?;
    let under_way = match (&made, &wait) {
        // Under way, or (`EALREADY`) under way since a signal interrupted the program's wait and
        // its call came again.
        (Err(Errno::INPROGRESS | Errno::ALREADY), Wait::Tcp { .. })
        | (Err(Errno::AGAIN), Wait::Unix { .. }) => true,
        // Interrupted by the receiver: the program made its file blocking again meanwhile.
        (Err(Errno::INTR), _) => true,
        _ => false,
    };
    if !under_way {
        return made.map(|()| Reply::Done);
    }
    if !blocking {
        // A non-blocking socket's answer, as the kernel gives it.
        return Err(match (made, &wait) {
            (Err(Errno::INTR), Wait::Tcp { .. }) => Errno::INPROGRESS,
            (Err(Errno::INTR), Wait::Unix { .. }) => Errno::AGAIN,
            (made, _) => made.err().unwrap_or(Errno::INPROGRESS),
        });
    }
    // Waited for, as the kernel would. On loopback a connect under way is mostly done by now:
    // looked at on the copy in hand, before one is kept; but not after an interruption, which
    // a Unix connect's look (a try again) could meet once more at once (found in review).
    if !matches!(made, Err(Errno::INTR)) {
        if let Some(done) = ended(copy, &wait) {
            return done.map(|()| Reply::Done);
        }
    }
    // Out of descriptors: as a connect past its timeout, as elsewhere.
    let kept = rustix::io::fcntl_dupfd_cloexec(copy, 0).map_err(|_| Errno::AGAIN)?;
    let pending = Pending::new(id, ProgramCopy::new(kept), wait);
    Ok(Reply::Later(Box::new(pending)))
}

/// Runs `connect` on `copy` with its file non-blocking, then as it was: what it made, and
/// whether the file was blocking. `Err` only where its flags could not be read or set.
fn without_blocking(
    copy: BorrowedFd<'_>,
    connect: impl Fn(BorrowedFd<'_>) -> Result<(), Errno>,
) -> Result<(Result<(), Errno>, bool), Errno> {
    let flags = rustix::fs::fcntl_getfl(copy)?;
    let blocking = !flags.contains(OFlags::NONBLOCK);
    if blocking {
        rustix::fs::fcntl_setfl(copy, flags | OFlags::NONBLOCK)?;
    }
    let made = {
        let _watching = Watching::start();
        // Test builds only: the program's thread made the file blocking again in between.
        #[cfg(feature = "fault-points")]
        if crate::fault::fails("held-connect-made-blocking-again") {
            let _ = rustix::fs::fcntl_setfl(copy, flags - OFlags::NONBLOCK);
        }
        connect(copy)
    };
    if blocking {
        let _ = rustix::fs::fcntl_setfl(copy, flags);
    }
    Ok((made, blocking))
}
