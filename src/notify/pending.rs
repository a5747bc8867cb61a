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
//! Trusted with: that no connect blocks the held calls' server. What it trusts: the kernel's
//! `O_NONBLOCK` on the copy's file, `poll` and `SO_ERROR`.

use std::os::fd::{AsFd as _, BorrowedFd, OwnedFd};

use rustix::fs::OFlags;
use rustix::io::Errno;
use rustix::net::SocketAddrUnix;

use super::Reply;
use super::closer::ProgramCopy;

/// A connect the program waits for, made and not yet done: looked at again after a pause that
/// grows from 1 ms to 32 ms (a Unix one is tried again; no poll tells a full queue's room).
pub struct Pending {
    /// The held call.
    pub id: u64,
    copy: ProgramCopy,
    wait: Wait,
    next: std::time::Instant,
    pause: std::time::Duration,
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
        let pause = std::time::Duration::from_millis(1);
        Pending { id, copy, wait, next: std::time::Instant::now() + pause, pause }
    }

    /// Whether it is time to look again (and then, the next time after a longer pause).
    pub fn due(&mut self, now: std::time::Instant) -> bool {
        if now < self.next {
            return false;
        }
        self.pause = (self.pause * 2).min(std::time::Duration::from_millis(32));
        self.next = now + self.pause;
        true
    }

    /// The connect's end, once it is over: `None` while it is not.
    pub fn done(&self) -> Option<Result<(), Errno>> {
        ended(self.copy.as_fd(), &self.wait)
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
                Ok(_) => Some(rustix::net::sockopt::socket_error(copy).and_then(|e| e).map(|()| {
                    // Once more, as a blocking connect ends: the socket is then connected for
                    // the kernel's later answers too (`EISCONN`, not 0 once more). Never
                    // blocks: the connection is made (writable, no error), so the kernel only
                    // notes it.
                    if let Some(target) = target {
                        let _ = rustix::net::connect(copy, target);
                    }
                })),
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
    match (made, &wait) {
        (Ok(()), _) => Ok(Reply::Done),
        // Under way, or (`EALREADY`) under way since a signal interrupted the program's wait and
        // its call came again: waited for, as the kernel would.
        (Err(Errno::INPROGRESS | Errno::ALREADY), Wait::Tcp { .. })
        | (Err(Errno::AGAIN), Wait::Unix { .. })
            if blocking =>
        {
            // On loopback a connect under way is mostly done by now: looked at on the copy in
            // hand, before one is kept.
            if let Some(done) = ended(copy, &wait) {
                return done.map(|()| Reply::Done);
            }
            // Out of descriptors: as a connect past its timeout, as elsewhere.
            let kept = rustix::io::fcntl_dupfd_cloexec(copy, 0).map_err(|_| Errno::AGAIN)?;
            let pending = Pending::new(id, ProgramCopy::new(kept), wait);
            match pending.done() {
                Some(Ok(())) => Ok(Reply::Done),
                Some(Err(e)) => Err(e),
                None => Ok(Reply::Later(pending)),
            }
        }
        (Err(e), _) => Err(e),
    }
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
    let made = connect(copy);
    if blocking {
        let _ = rustix::fs::fcntl_setfl(copy, flags);
    }
    Ok((made, blocking))
}
