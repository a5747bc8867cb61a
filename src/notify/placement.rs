//! Where a held call is served: on the CPU where the program's thread waits for it.
//!
//! Why. A held call stops the program's thread until the helper answers, so what it costs is
//! the helper's work and three wake-ups: the kernel wakes the receiver, the receiver wakes the
//! server, and the server's answer wakes the program's thread. A wake-up onto a CPU that sleeps
//! costs 15–25 µs on a VM (its idle CPU halts, and the host must wake it: bench/README.md),
//! and the scheduler prefers an idle CPU; onto the CPU the waker is about to leave for a wait,
//! it costs a few. So the three are kept on one CPU:
//!
//! - the kernel wakes the receiver on the CPU of the thread whose call it holds, and that thread
//!   on the CPU of the answer's sender (`SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP`, Linux 6.6): each
//!   time, the waker goes on to wait;
//! - before it hands a call over, the receiver allows the server the CPU it is on itself, and
//!   no other (`sched_setaffinity`), when the server has no call in hand (moving a busy thread
//!   would stop it) and is not already there.
//!
//! Only the helper's own server thread is ever moved, never a thread of the program's, and it
//! only ever gets a CPU the helper runs on. Speed only: where the kernel refuses either step
//! (an older kernel, a CPU outside a container's set), calls are served as before, wherever the
//! scheduler puts them.
//!
//! Trusted with nothing: a bug here can slow held calls, and cannot change an answer.

use std::sync::Mutex;

use rustix::process::Pid;

/// The server thread's id while it runs: told by the server when it starts, and taken back
/// before it ends ([`Told`]), under the lock [`Placement::bring`] holds while it moves it. So
/// the id is never used once the thread is gone and its number free for another process's
/// (found in review).
#[derive(Default)]
pub(super) struct ServerThread(Mutex<Option<Pid>>);

/// The server's side: its id, taken back when dropped (the thread's end, a panic's too).
pub(super) struct Told<'a>(&'a ServerThread);

impl ServerThread {
    /// Called by the server thread itself, first thing; the id is told while the result lives.
    pub(super) fn tell(&self) -> Told<'_> {
        *self.lock() = Some(rustix::thread::gettid());
        Told(self)
    }

    /// Sends `signal` to the server thread, while it runs (under the lock its end takes: never
    /// to a number it no longer has). False where it is gone or the signal was not sent.
    pub(super) fn interrupt(&self, signal: i32) -> bool {
        let told = self.lock();
        told.is_some_and(|tid| crate::sys::interrupt_thread(tid, signal).is_ok())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Pid>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Told<'_> {
    fn drop(&mut self) {
        *self.0.lock() = None;
    }
}

/// The receiver's side: moves the server to the receiver's CPU.
pub(super) struct Placement {
    /// The CPU the server was last allowed, alone.
    pinned_to: Option<usize>,
}

impl Placement {
    pub(super) fn new() -> Placement {
        Placement { pinned_to: None }
    }

    /// Allows `server` only the CPU this thread runs on, unless it is there already. Called by
    /// the receiver just before it hands over a call, when the server has none.
    pub(super) fn bring(&mut self, server: &ServerThread) {
        let cpu = rustix::thread::sched_getcpu();
        if self.pinned_to == Some(cpu) {
            return;
        }
        // Held across the call: the server cannot end its life as told meanwhile.
        let told = server.lock();
        let Some(tid) = *told else { return };
        let mut only = rustix::thread::CpuSet::new();
        only.set(cpu);
        self.pinned_to = rustix::thread::sched_setaffinity(Some(tid), &only).ok().map(|()| cpu);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::thread::{CpuSet, sched_getaffinity, sched_getcpu, sched_setaffinity};
    use std::sync::{Arc, mpsc};

    #[test]
    fn the_server_follows_the_receiver_to_its_cpu_and_is_allowed_no_other() {
        let server = Arc::new(ServerThread::default());
        let (ready, started) = mpsc::channel();
        let (ask, asked) = mpsc::channel::<()>();
        let (answer, answered) = mpsc::channel();
        let thread = {
            let server = Arc::clone(&server);
            std::thread::spawn(move || {
                let _told = server.tell();
                ready.send(()).unwrap();
                // Each question: which CPUs it may run on, and where it runs, once woken.
                for () in asked {
                    let allowed = sched_getaffinity(None).unwrap();
                    answer.send((allowed.count(), sched_getcpu())).unwrap();
                }
            })
        };
        started.recv().unwrap();
        let mine = sched_getaffinity(None).unwrap();
        let cpus: Vec<usize> = (0..CpuSet::MAX_CPU).filter(|&c| mine.is_set(c)).collect();
        let mut placement = Placement::new();
        for &cpu in cpus.iter().take(4) {
            // The receiver on `cpu` brings the server there.
            let mut only = CpuSet::new();
            only.set(cpu);
            sched_setaffinity(None, &only).unwrap();
            placement.bring(&server);
            assert_eq!(placement.pinned_to, Some(cpu));
            ask.send(()).unwrap();
            assert_eq!(answered.recv().unwrap(), (1, cpu), "allowed one CPU, the receiver's");
        }
        sched_setaffinity(None, &mine).unwrap();
        drop(ask);
        thread.join().unwrap();
        // Ended, its number free for another process's thread: never moved again (a move of
        // a number no thread has fails anyway, so what is checked is that none is kept).
        assert_eq!(*server.lock(), None, "an ended server's number is still kept");
        let mut later = Placement::new();
        later.bring(&server);
        assert_eq!(later.pinned_to, None, "a server that ended was moved");
        if cpus.len() < 2 {
            eprintln!("NOTE: one CPU here: the server was not seen to move between CPUs");
        }
    }
}
