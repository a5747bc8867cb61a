//! The held calls' server: the helper's thread that reads the program's bytes (a path, an
//! address, an attribute's value), decides, and performs each held call the receiver hands it
//! (see [`super::metadata`], [`super::sockets`], [`super::shm`]), and makes the inotify
//! instances and watches the call's appetite counts ([`super::inotify`]), confined before it
//! reads one.
//!
//! Its confinement ([`crate::thread_confinement::confine_held_calls`]), made first and for
//! good (Landlock and seccomp hold a thread and what it starts, never the rest of the process):
//!
//! - no capability, as root too, so the kernel checks each call it performs against the
//!   program's own rights;
//! - Landlock, handling every file right with three rules: the call's tmp folder (where the
//!   call's own `/dev/shm` is), reading the helper's own `/proc/self/fdinfo` (the inotify
//!   counts), and `/dev/ptmx` (the call's terminals, [`super::terminal`]). It opens nothing else
//!   for reading or writing: the grants' files are reached as
//!   `O_PATH` descriptors, which Landlock does not check and which can be neither read nor
//!   written; both scopes, so it signals no process outside its domain (none);
//! - seccomp, allowing only the calls it makes: no `execve`, no new process, no `ptrace`, no
//!   signal, and sockets of the internet families and of socket diagnostics only.
//!
//! Landlock's scope keeps it from the program's `/proc` files as well (a ptrace access): what it
//! needs of those, the receiver opens for it ([`super::handles`]). Should the confinement fail,
//! it serves nothing: every call it is handed is refused (`EPERM`), and lnk says why on its own
//! standard error.
//!
//! Trusted with: the held calls that act on what the program's memory names: a bug here acts
//! with the helper's rights, within the confinement above. What it trusts: the receiver's
//! handles, and what [`super::metadata`], [`super::sockets`] and [`super::shm`] trust.

use std::os::fd::{AsFd as _, BorrowedFd, OwnedFd};
use std::sync::{Arc, mpsc};

use rustix::io::Errno;

use super::handles::{CallHandles, Opener};
use super::inotify::{self, Inotify};
use super::pending::Pending;
use super::receiver::Job;
use super::request::{self, Call, Counted, ShmCall, SocketCall};
use super::{Grants, Refusal, Reply, Shared};

/// Runs until the receiver is gone. `tmp` is the call's tmp folder (`O_PATH`), the one place
/// the server may open files; `appetite` bounds the inotify instances and watches it makes.
pub(super) fn run(
    listener: Arc<OwnedFd>,
    jobs: mpsc::Receiver<Job>,
    opener: Opener,
    grants: Grants,
    shared: Arc<Shared>,
    tmp: OwnedFd,
    appetite: crate::sandbox_file::Appetite,
) {
    // Told to the receiver, which moves it (see `super::placement`) and interrupts a connect
    // that keeps it too long (see `super::pending`, whose signal this thread alone takes), until
    // this thread ends.
    let _told = shared.server_thread.tell();
    crate::sys::unblock_signal_here(super::pending::INTERRUPT);
    // Made before the confinement (it opens `/proc/self/fdinfo`, which the confinement then
    // lets it read). None: nothing can count the call's inotify use, so none is made.
    let mut inotify = Inotify::new(appetite.inotify_instances, appetite.inotify_watches).ok();
    // The helper's own `/proc/self/fdinfo`, where the call's terminals are counted (and its
    // inotify instances, through their own descriptor of it). None: no terminal is made.
    let dir = rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC;
    let fdinfo = rustix::fs::open(c"/proc/self/fdinfo", dir, rustix::fs::Mode::empty()).ok();
    // `/dev/ptmx`, the one device it may open (see `super::terminal`); none on a machine
    // without one.
    let ptmx = rustix::fs::open(
        c"/dev/ptmx",
        rustix::fs::OFlags::PATH | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .ok();
    // A working folder of its own, where it binds the program's Unix sockets by their folder's
    // descriptor (see `super::unix_sockets`); the helper's other threads keep theirs. Where the
    // kernel or a container's profile refuses it, no Unix socket is bound (`fchdir` would move
    // the whole helper), and every other held call is served as before.
    let mut grants = grants;
    // Asked before the confinement, which refuses `prlimit64`.
    let max_pending = max_pending();
    grants.unix.set_own_folder(crate::sys::unshare(libc::CLONE_FS).is_ok());
    // In the own world, where it may make no socket once confined: the host's socket
    // diagnostics (see `super::world_connects`); none, and no path connect is made.
    if grants.world_diag.is_some() {
        grants.host_diag = crate::sock_diag::diagnostics_socket().ok();
    }
    let sockets_beneath: Vec<BorrowedFd<'_>> = grants.socket_folders.iter().map(|fd| fd.as_fd()).collect();
    let confined = crate::thread_confinement::confine_held_calls(
        tmp.as_fd(),
        fdinfo.as_ref().map(|f| f.as_fd()),
        ptmx.as_ref().map(|p| p.as_fd()),
        &sockets_beneath,
        grants.world_diag.is_some(),
    );
    drop(sockets_beneath);
    // Landlock holds them now: the descriptors would only count against the helper's limit.
    drop(std::mem::take(&mut grants.socket_folders));
    drop(ptmx);
    if let Err(why) = confined {
        // Said on lnk's own standard error: the report is the program's, and this is lnk's.
        eprintln!("lnk: the held calls' server could not confine itself ({why}): every held call is refused");
        for job in jobs.iter() {
            let _ = crate::sys::seccomp_notif_send(listener.as_fd(), job.held.id, 0, -libc::EPERM);
            opener.done(job.held.id);
            super::handles::let_go(job.taken);
        }
        return;
    }
    drop(tmp);
    // Test builds only: the confined thread tries to open a file, and the report says what it got
    // on lnk's standard error (see tests/run_harms_no_one.rs).
    #[cfg(feature = "fault-points")]
    if crate::fault::fails("held-calls-server-opens-a-file") {
        let opened =
            std::fs::File::open("/etc/passwd").map_or_else(|e| e.to_string(), |_| "opened".to_owned());
        eprintln!("lnk: fault point: the held calls' server opening /etc/passwd: {opened}");
    }
    // Test builds only: the server ends at once, as a bug would end it (tests/run_harms_no_one.rs).
    #[cfg(feature = "fault-points")]
    if crate::fault::fails("held-calls-server-ends") {
        return;
    }
    // Connects the program waits for, answered when done (see `super::pending`); while there
    // are any, the server looks at them between calls, each when it is due.
    let mut pending: Vec<Pending> = Vec::new();
    loop {
        let next_look = pending.iter().map(Pending::next_look).min();
        let job = match next_look {
            None => jobs.recv().ok(),
            Some(next) => {
                match jobs.recv_timeout(next.saturating_duration_since(std::time::Instant::now())) {
                    Ok(job) => Some(job),
                    Err(mpsc::RecvTimeoutError::Timeout) => None,
                    Err(mpsc::RecvTimeoutError::Disconnected) => break,
                }
            }
        };
        if let Some(mut job) = job {
            let id = job.held.id;
            let mut refused = None;
            let handles = CallHandles::new(&opener, id, std::mem::take(&mut job.taken));
            let fdinfo = fdinfo.as_ref().map(|f| f.as_fd());
            let names = &shared.socket_names;
            let serving = Serving { grants: &grants, pairs: &shared.pairs, fdinfo, handles: &handles, names };
            let answer = perform(listener.as_fd(), &serving, inotify.as_mut(), &mut job, &mut refused);
            // The copies taken with the call are let go of before it is answered, so that the
            // program's next call finds its socket as it left it (a port it closed, free):
            // see `super::closer`.
            drop(handles);
            if let Some(refusal) = refused {
                shared.refused(refusal);
            }
            match answer {
                // Waiting apart from the calls handed over (it needs no handle of the thread's
                // more), so that waiting connects never stop the receiver's (found in review),
                // and at most `max_pending` of them: past it, as a connect past its timeout.
                Ok(Reply::Later(waiting)) if pending.len() < max_pending => {
                    opener.done(id);
                    pending.push(*waiting);
                }
                answer => {
                    let answer = match answer {
                        Ok(Reply::Later(_)) => Err(Errno::AGAIN),
                        answer => answer,
                    };
                    answer_with(listener.as_fd(), id, answer);
                    opener.done(id);
                }
            }
        } else if pending.is_empty() {
            break;
        }
        // A connect is answered when done; one whose thread gave up waiting (a signal, its end)
        // is forgotten, as the kernel would carry it on.
        let now = std::time::Instant::now();
        pending.retain_mut(|waiting| {
            if !waiting.due(now) {
                return true;
            }
            let done = match crate::sys::seccomp_notif_id_valid(listener.as_fd(), waiting.id) {
                true => waiting.done(),
                false => Some(Err(Errno::INTR)),
            };
            let Some(done) = done else { return true };
            answer_with(listener.as_fd(), waiting.id, done.map(|()| Reply::Done));
            false
        });
    }
}

/// The most connects waiting at once: 1,024, and no more than a quarter of the helper's
/// descriptors (each holds two: a copy of the program's socket, and the socket file it names),
/// so that the rest of the held calls always have some (found in review).
fn max_pending() -> usize {
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile).current.unwrap_or(1024);
    usize::try_from(limit / 8).unwrap_or(1024).clamp(16, 1024)
}

/// Answers the held call `id` as `answer` says. `ENOENT` from the kernel: the program (or the
/// thread) is gone, and nothing waits for the answer.
fn answer_with(listener: BorrowedFd<'_>, id: u64, answer: Result<Reply, Errno>) {
    let _ = match answer {
        Ok(Reply::Done) => crate::sys::seccomp_notif_send(listener, id, 0, 0),
        Ok(Reply::Value(value)) => crate::sys::seccomp_notif_send(listener, id, value, 0),
        Ok(Reply::Continue) => crate::sys::seccomp_notif_continue(listener, id),
        Ok(Reply::Sent) | Ok(Reply::Later(_)) => Ok(()),
        Err(e) => crate::sys::seccomp_notif_send(listener, id, 0, -e.raw_os_error()),
    };
}

/// What the server serves a call with: where the held calls may act, the call's terminals, and
/// the calling thread's handles.
struct Serving<'a> {
    grants: &'a Grants,
    pairs: &'a super::terminal::Pairs,
    /// The helper's `/proc/self/fdinfo`, where the call's terminals are counted.
    fdinfo: Option<BorrowedFd<'a>>,
    handles: &'a CallHandles<'a>,
    /// Where the sockets the helper names are noted.
    names: &'a super::socket_names::SocketNames,
}

/// Decodes and performs one held call, answering for the program. A refusal the report should
/// name is put in `refused`.
fn perform(
    listener: BorrowedFd<'_>,
    serving: &Serving<'_>,
    inotify: Option<&mut Inotify>,
    job: &mut Job,
    refused: &mut Option<Refusal>,
) -> Result<Reply, Errno> {
    let Serving { grants, pairs, fdinfo, handles, names } = *serving;
    let held = &job.held;
    // Handed over with every call but an inotify instance's.
    let memory = || job.memory.as_ref().ok_or(Errno::PERM);
    // An inotify call past the appetite, or one lnk could not count: named in the report.
    let mut counted = |what: Counted, failed: (Errno, Option<inotify::Refused>)| {
        *refused = match failed.1 {
            None => None,
            Some(inotify::Refused::Place { path, hole }) => Some(Refusal::Watch { path, hole }),
            Some(why) => Some(Refusal::Bounded { what, uncounted: why == inotify::Refused::Uncounted }),
        };
        failed.0
    };
    match request::decode_call(i64::from(held.nr), held.args)? {
        Call::Counted(what @ Counted::Instance { flags }) => {
            let Some(inotify) = inotify else {
                return Err(counted(what, (Errno::MFILE, Some(inotify::Refused::Uncounted))));
            };
            let made = inotify.make(flags, handles).map_err(|failed| counted(what, failed))?;
            // Put in the program's table as the call's answer (its close-on-exec as asked).
            let cloexec = flags & libc::IN_CLOEXEC as u64 != 0;
            crate::sys::seccomp_notif_send_fd(listener, held.id, made.as_fd(), cloexec)?;
            Ok(Reply::Sent)
        }
        Call::Watch { fd, path, mask } => {
            let what = Counted::Watch;
            let Some(inotify) = inotify else {
                return Err(counted(what, (Errno::NOSPC, Some(inotify::Refused::Uncounted))));
            };
            let wd = inotify::add_watch_for(inotify, grants, handles, memory()?, (fd, path, mask))
                .map_err(|failed| counted(what, failed))?;
            Ok(Reply::Value(i64::from(wd)))
        }
        Call::Metadata(request) => {
            super::metadata::perform(grants, handles, memory()?, &request, refused).map(|()| Reply::Done)
        }
        // The own world holds its connects only (see `super::world_connects`).
        Call::Socket(SocketCall::Connect(address)) if grants.world_diag.is_some() => {
            super::world_connects::connect(grants, handles, memory()?, held.id, address, refused)
        }
        Call::Socket(call) => {
            // A socket is held only with the call's loopback; without one, none could be made.
            let loopback = grants.connects.as_ref().ok_or(Errno::PERM)?;
            let memory = memory()?;
            let held_call = (listener, held.id, names);
            if let Some(answer) =
                super::unix_sockets::perform(held_call, grants, handles, memory, call, refused)
            {
                return answer;
            }
            // On the program's own socket where the receiver took a copy of it, else on one of
            // the helper's put in its place.
            if let Some(answer) =
                super::socket_copies::perform((held.id, names), loopback, handles, memory, call)
            {
                return answer;
            }
            super::sockets::perform(held_call, loopback, handles, memory, call)
        }
        // An open that may be `posix_openpt`'s or `shm_open`'s: the path read once decides.
        Call::Shm(ShmCall::Open { dirfd, path, flags, mode }) => {
            let path = memory()?.read_path(path)?;
            if super::terminal::names_ptmx(dirfd, &path) {
                let mut bounded = false;
                let made =
                    super::terminal::open_master(listener, held.id, (pairs, fdinfo), flags, &mut bounded);
                if bounded {
                    *refused = Some(Refusal::Terminals);
                }
                return made.map(|()| Reply::Sent);
            }
            super::shm::open(listener, held.id, &grants.shm, handles, (dirfd, &path), flags, mode)
        }
        Call::Shm(call) => super::shm::perform(&grants.shm, memory()?, call),
        Call::Memfd { name, flags } => {
            let made = super::memfd::make(memory()?, name, flags, refused)?;
            let cloexec = flags & libc::MFD_CLOEXEC != 0;
            crate::sys::seccomp_notif_send_fd(listener, held.id, made.as_fd(), cloexec)?;
            Ok(Reply::Sent)
        }
        // Answered by the receiver, never handed over.
        Call::Session(_)
        | Call::Pid(_)
        | Call::Udp
        | Call::PtyPeer { .. }
        | Call::Counted(Counted::Task | Counted::Watch) => Err(Errno::PERM),
    }
}
