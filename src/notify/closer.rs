//! The helper's copies of the program's descriptors: closed where closing cannot wait, else on
//! a thread of their own.
//!
//! Why. Closing a socket's last descriptor waits out its linger time when the program set
//! `SO_LINGER` and data is still unsent (a peer that never reads): up to the time the program
//! chose. A copy the helper took (`pidfd_getfd`) is the last descriptor whenever the program
//! closes its own meanwhile, so a held calls' thread that closed it there waited on the program
//! (found in review: a program froze every held call for 20 s, with `listen` on one thread and
//! `close` on another). Closing a file of a FUSE or NFS file system asks that file system (a
//! flush), however many descriptors are left.
//!
//! So when the helper is done with a copy ([`ProgramCopy`]'s drop, [`close_apart`]):
//!
//! - an internet socket that does not linger (`SO_LINGER` off, asked on the copy), or a Unix
//!   socket with nothing queued to read (a queued message or connection may carry descriptors,
//!   whose closing would be this one's: found in review), is closed there and then, before the
//!   held call is answered: its close never waits, and the program's next call (a `bind` of
//!   the port or name it just closed) finds it gone, as without lnk (closing later broke
//!   exactly that: found in review);
//! - anything else (a lingering socket, a Unix socket with something queued, a file that is
//!   not a socket) is closed on the closer's thread, which may wait; nothing else does.
//!
//! What is left: a program that turns lingering on (or queues a descriptor on the socket's
//! peer), and closes its own descriptor, in the microsecond between the helper's look and its
//! close can still make that close wait, up to its linger time or the call's timeout, on the
//! thread that serves its own held calls: no other program's, and never the call's lifetime
//! (the helper's main thread).
//!
//! Bounded: while more than [`MAX_WAITING`] copies wait for the closer (it may wait on each),
//! the receiver takes no copy ([`has_room`]): the held calls that need one are answered as where
//! the kernel gives none, and none is ever closed in place of the closer (found in review: past
//! a bound, closing in place let a program freeze the held calls again).
//!
//! Trusted with nothing but closing: a bug here leaks descriptors of the helper's, or waits.

use std::ops::Deref;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, mpsc};

/// The most copies waiting for the closer before no more are taken.
const MAX_WAITING: usize = 64;

/// A copy of one of the program's descriptors, closed on the closer's thread when dropped.
pub struct ProgramCopy(Option<OwnedFd>);

impl ProgramCopy {
    pub fn new(copy: OwnedFd) -> ProgramCopy {
        ProgramCopy(Some(copy))
    }
}

impl Deref for ProgramCopy {
    type Target = OwnedFd;

    fn deref(&self) -> &OwnedFd {
        match &self.0 {
            Some(copy) => copy,
            // Taken only in `drop`.
            None => unreachable!("a copy is there until dropped"),
        }
    }
}

impl AsFd for ProgramCopy {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.deref().as_fd()
    }
}

impl Drop for ProgramCopy {
    fn drop(&mut self) {
        if let Some(copy) = self.0.take() {
            close_apart(copy);
        }
    }
}

/// The closer's thread's end, once started (`None`: it could not start).
static CLOSER: OnceLock<Option<Mutex<mpsc::Sender<OwnedFd>>>> = OnceLock::new();
/// How many copies were handed to the closer and are not yet closed.
static WAITING: AtomicUsize = AtomicUsize::new(0);

/// Starts the closer's thread, once, from a thread that may start one (the helper's main
/// thread, with the held calls' threads: the server, once confined, may not).
pub fn start() {
    CLOSER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<OwnedFd>();
        let started = std::thread::Builder::new().name("lnk-held-close".into()).spawn(move || {
            for copy in rx {
                // Test builds only: each close late, as on a busy machine.
                #[cfg(feature = "fault-points")]
                if crate::fault::fails("held-close-late") {
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
                drop(copy);
                WAITING.fetch_sub(1, Ordering::SeqCst);
            }
        });
        started.ok().map(|_| Mutex::new(tx))
    });
}

/// Whether a copy may be taken now: the closer runs, and few copies wait for it.
pub fn has_room() -> bool {
    matches!(CLOSER.get(), Some(Some(_))) && WAITING.load(Ordering::SeqCst) < MAX_WAITING
}

/// Waits, `within` at most, until no copy waits for the closer: for a count the copies would
/// make high (a terminal pair whose last file of the program's closed lives on while the
/// helper's copy of its master waits here; found in CI: the program's next pair was refused).
/// Bounded, as the closer may wait on what the program controls.
pub fn settle(within: std::time::Duration) {
    let until = std::time::Instant::now() + within;
    while WAITING.load(Ordering::SeqCst) > 0 && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_micros(50));
    }
}

/// Closes `copy`: here if it is a socket that does not linger, else on the closer's thread
/// (see the module's documentation). Where the closer never started, no copy is taken
/// ([`has_room`]); one made before that closes here.
pub fn close_apart(copy: OwnedFd) {
    if closes_at_once(&copy) {
        drop(copy);
        return;
    }
    match CLOSER.get() {
        Some(Some(closer)) => {
            WAITING.fetch_add(1, Ordering::SeqCst);
            let sent = closer.lock().unwrap_or_else(|e| e.into_inner()).send(copy);
            if let Err(mpsc::SendError(copy)) = sent {
                WAITING.fetch_sub(1, Ordering::SeqCst);
                drop(copy);
            }
        }
        _ => drop(copy),
    }
}

/// Whether closing `copy` here cannot wait: an internet socket that does not linger (it carries
/// no descriptor of anything), or a Unix socket with nothing queued to read. A message queued
/// on a Unix socket, or a connection queued on its listener, may carry descriptors (a lingering
/// socket, a file of a FUSE or NFS file system), whose closing would then be this close's
/// (found in review). Nothing here asks a file system.
fn closes_at_once(copy: &OwnedFd) -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec};
    use rustix::net::AddressFamily;
    match rustix::net::sockopt::socket_domain(copy) {
        Ok(AddressFamily::INET | AddressFamily::INET6) => {
            rustix::net::sockopt::socket_linger(copy).is_ok_and(|linger| linger.is_none())
        }
        Ok(AddressFamily::UNIX) => {
            let mut fds = [PollFd::new(copy, PollFlags::IN)];
            let now = Timespec { tv_sec: 0, tv_nsec: 0 };
            // Readable: a message or a connection queued (or the peer's end, which a bound
            // socket never connected shows too as a hang-up: not a queue).
            rustix::event::poll(&mut fds, Some(&now))
                .is_ok_and(|_| !fds[0].revents().intersects(PollFlags::IN))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    /// A connection whose peer never reads, its send buffer full, lingering 30 s: its last close
    /// waits that long where it is made. The peer and listener are kept with it.
    fn lingering() -> (std::net::TcpStream, std::net::TcpStream, std::net::TcpListener) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut socket = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (peer, _) = listener.accept().unwrap();
        socket.set_nonblocking(true).unwrap();
        let chunk = [0u8; 65536];
        while socket.write(&chunk).is_ok() {}
        rustix::net::sockopt::set_socket_linger(&socket, Some(std::time::Duration::from_secs(30))).unwrap();
        (socket, peer, listener)
    }

    /// Drops `copy`, the last descriptor of its socket, and checks that took no linger time.
    fn dropped_at_once(copy: ProgramCopy) {
        let started = std::time::Instant::now();
        drop(copy);
        let took = started.elapsed();
        assert!(took < std::time::Duration::from_secs(10), "the copy's close waited {took:?}");
    }

    #[test]
    fn a_lingering_socket_whose_last_descriptor_is_a_copy_holds_up_no_one() {
        start();
        let (socket, _peer, _listener) = lingering();
        let copy = ProgramCopy::new(rustix::io::fcntl_dupfd_cloexec(&socket, 0).unwrap());
        // The program closes its own: the copy is the last.
        drop(socket);
        dropped_at_once(copy);
    }

    #[test]
    fn a_unix_socket_carrying_a_lingering_one_in_its_queue_holds_up_no_one() {
        // Found in review: a Unix socket that does not linger, whose queue holds a message
        // carrying a lingering socket: its last close closes that one too, and waits for it.
        start();
        let (socket, _peer, _listener) = lingering();
        let (sender, receiver) = std::os::unix::net::UnixStream::pair().unwrap();
        let carried = [socket.as_fd()];
        let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut control = rustix::net::SendAncillaryBuffer::new(&mut space);
        assert!(control.push(rustix::net::SendAncillaryMessage::ScmRights(&carried)));
        let message = [std::io::IoSlice::new(b"x")];
        rustix::net::sendmsg(&sender, &message, &mut control, rustix::net::SendFlags::empty()).unwrap();
        drop(socket);
        let copy = ProgramCopy::new(rustix::io::fcntl_dupfd_cloexec(&receiver, 0).unwrap());
        drop(receiver);
        dropped_at_once(copy);
    }
}
