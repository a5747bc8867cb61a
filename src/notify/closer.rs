//! The helper's copies of the program's descriptors, closed on a thread of their own.
//!
//! Why. Closing a socket's last descriptor waits out its linger time when the program set
//! `SO_LINGER` and data is still unsent (a peer that never reads): up to the time the program
//! chose. A copy the helper took (`pidfd_getfd`) is the last descriptor whenever the program
//! closes its own meanwhile, so a held calls' thread that closed it there waited on the program
//! (found in review: a program froze every held call for 20 s, with `listen` on one thread and
//! `close` on another). So a copy is handed here when the helper is done with it
//! ([`ProgramCopy`]'s drop), and this thread closes it; the held calls go on.
//!
//! Cheap: a copy handed over while the closer waits wakes it; one handed over while it works
//! through a run of held calls (it closes them a [`BATCH`] at a time) wakes nothing, so a run of
//! held calls pays no wake-up each, and a copy is closed at most a millisecond late.
//!
//! Bounded: at most [`MAX_WAITING`] copies wait to be closed (each is a descriptor of the
//! helper's, which its other work needs). Past that, or where the thread could not start, a
//! copy is closed where it is dropped, as before: what it waits is then bounded by the call's
//! timeout, which the helper's main thread keeps.
//!
//! Trusted with nothing but closing: a bug here leaks descriptors of the helper's, or waits.

use std::ops::Deref;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::{OnceLock, mpsc};

/// The most copies waiting to be closed.
const MAX_WAITING: usize = 256;

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

/// The closer's thread's end, once started.
static CLOSER: OnceLock<Option<mpsc::SyncSender<OwnedFd>>> = OnceLock::new();
/// How long a copy handed over while the closer is closing a batch may wait: its socket lives
/// that much longer (a peer sees the program's close that much later) when the program closes
/// its own descriptor meanwhile.
const BATCH: std::time::Duration = std::time::Duration::from_millis(1);

/// Starts the closer's thread, once, from a thread that may start one (the helper's main
/// thread, with the held calls' threads: the server, once confined, may not).
pub fn start() {
    CLOSER.get_or_init(|| {
        let (tx, rx) = mpsc::sync_channel::<OwnedFd>(MAX_WAITING);
        let started = std::thread::Builder::new().name("lnk-held-close".into()).spawn(move || {
            for first in &rx {
                drop(first);
                // While copies keep coming, they are closed in batches, one each `BATCH`: the
                // server hands one over without waking this thread (it is not waiting), so the
                // held calls pay no wake-up each (measured: 14 µs a connect). Once a batch finds
                // none, it waits again, and the next copy wakes it.
                loop {
                    std::thread::sleep(BATCH);
                    let mut closed = false;
                    while let Ok(copy) = rx.try_recv() {
                        drop(copy);
                        closed = true;
                    }
                    if !closed {
                        break;
                    }
                }
            }
        });
        started.ok().map(|_| tx)
    });
}

/// Closes `copy` on the closer's thread; where it is full or was never started, here.
pub fn close_apart(copy: OwnedFd) {
    match CLOSER.get() {
        Some(Some(tx)) => {
            if let Err(mpsc::TrySendError::Full(copy) | mpsc::TrySendError::Disconnected(copy)) =
                tx.try_send(copy)
            {
                drop(copy);
            }
        }
        _ => drop(copy),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    #[test]
    fn a_lingering_socket_whose_last_descriptor_is_a_copy_holds_up_no_one() {
        // A connection whose peer never reads, its send buffer full, lingering 30 s: its last
        // close waits that long where it is made.
        start();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (_peer, _) = listener.accept().unwrap();
        client.set_nonblocking(true).unwrap();
        let chunk = [0u8; 65536];
        while client.write(&chunk).is_ok() {}
        rustix::net::sockopt::set_socket_linger(&client, Some(std::time::Duration::from_secs(30))).unwrap();
        let copy = ProgramCopy::new(rustix::io::fcntl_dupfd_cloexec(&client, 0).unwrap());
        // The program closes its own: the copy is the last.
        drop(client);
        let started = std::time::Instant::now();
        drop(copy);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "the copy's close waited {:?}",
            started.elapsed()
        );
    }
}
