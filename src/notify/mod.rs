//! Held system calls (seccomp user notification): in the Landlock-only mode, the helper
//! performs the program's metadata calls (`chmod`, `chown`, `utimensat`, the xattr calls and
//! their siblings) beneath the write grants, and refuses them elsewhere; it makes the program's
//! TCP connections and listeners on the call's own loopback ([`sockets`],
//! [`crate::proxy::loopback`]): to the call's proxy with `[internet]`, and to the program's own
//! servers; it makes the program's POSIX shared memory in a folder of the call's own ([`shm`]);
//! and it notes the process of the call that leads each session or group the program makes
//! (`setsid`, `setpgid`), which then goes on into the kernel, so that the call's end ends those
//! groups too ([`groups`], [`crate::lifetime`]).
//!
//! Why. Without a mount namespace nothing makes the rest of the file system read-only, and
//! Landlock does not govern metadata: allowed outright, `chmod` would reach every file the
//! program's user owns (`~/.ssh` included); refused outright, ordinary work fails (`touch`,
//! `chmod +x`, `cp -p`, `tar x`, `git init`, a linker's executable bit). So seccomp holds exactly
//! these calls (every other call runs at full speed) and the helper answers each one.
//!
//! How, and what it trusts:
//! - The program's process installs its filter with a listener and hands the listener to the
//!   helper on a socket pair made before the fork, then closes it: the program never holds it
//!   when it runs (the listener is close-on-exec too).
//! - Held calls are served apart from the call's lifetime: the helper's main thread keeps the
//!   timeout, the stop signals and the keeper (see [`crate::lifetime`]) and only polls; at the
//!   first held call it starts two threads, so a held call that takes long (or a bug that
//!   blocks) never defers a stop. A program that makes no held call starts none.
//!   - the **receiver** ([`receiver`]) takes each call from the kernel. It reads nothing of the
//!     program's: `setsid` and `setpgid` it answers from their numbers; for every other call it
//!     opens the calling thread's memory, checks that the notification is still live (so the
//!     memory is the program's, not a process that reused its pid), and hands both over;
//!   - the **server** ([`server`]), confined before it reads a byte (no capability, Landlock,
//!     seccomp), reads each argument once ([`memory`]), decodes the call ([`request`]), and
//!     performs it on a descriptor it resolved and proved to lie beneath a write grant
//!     ([`metadata`]), or on the call's loopback or shared memory folder. What it needs of the
//!     program's `/proc` files the receiver opens for it, for that call only ([`handles`]).
//! - It never lets a call whose arguments lie in memory go on after inspecting them: the
//!   program's threads could change them in between. (`setsid` and `setpgid` take numbers
//!   only, which the kernel copied into the notification: those go on.)
//! - Every open made for the program refuses what would block or is not what is meant: the
//!   program's own files are reached as `O_PATH` descriptors; the one file opened with the
//!   program's flags (its shared memory) is opened without blocking and refused unless it is a
//!   regular file (a FIFO there once froze the helper: found in review).
//! - A program that dies while a call is held leaves nothing half done: each call is one
//!   system call of the helper's, done or not, and its answer then goes nowhere.
//!
//! What it costs: a socket pair and one message per launch; at the first held call, two
//! threads; a held call costs three wake-ups (receiver, server, the program's thread), kept on
//! the held thread's CPU ([`placement`]), two more for each handle the server asks the receiver
//! for (a socket call's are taken with it), and a few system calls of the helper's.

mod closer;
pub mod counts;
pub mod groups;
pub mod handles;
pub mod inotify;
pub mod memfd;
pub mod memory;
pub mod metadata;
mod pending;
mod placement;
mod receiver;
pub mod request;
mod server;
pub mod shm;
mod socket_copies;
mod socket_names;
pub mod sockets;
pub mod terminal;
pub mod unix_records;
pub mod unix_sockets;
pub mod world_connects;

use std::io::IoSliceMut;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd as _, BorrowedFd, OwnedFd};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rustix::io::Errno;
use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags, SocketFlags, SocketType,
};

pub use metadata::Grants;
pub use pending::block_interrupt_here;

/// The socket pair the listener crosses, made in the helper before the fork.
pub struct Channel {
    child_end: Option<OwnedFd>,
    helper_end: Option<OwnedFd>,
}

impl Channel {
    pub fn new() -> Result<Channel, String> {
        let (child_end, helper_end) =
            rustix::net::socketpair(AddressFamily::UNIX, SocketType::SEQPACKET, SocketFlags::CLOEXEC, None)
                .map_err(|e| format!("cannot make the notification channel: {e}"))?;
        Ok(Channel { child_end: Some(child_end), helper_end: Some(helper_end) })
    }

    /// In the program's process, right after the filter is installed: hands the listener over,
    /// and in the own world a socket diagnostics socket of its network namespace (see
    /// [`world_connects`]). The caller then drops both, before `execve`.
    pub fn send_listener(
        &self,
        listener: &OwnedFd,
        world_diag: Option<&OwnedFd>,
    ) -> Result<(), &'static str> {
        let end = self.child_end.as_ref().ok_or("the notification channel was closed")?;
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        let both = [listener.as_fd(), world_diag.map_or(listener.as_fd(), |d| d.as_fd())];
        let fds = if world_diag.is_some() { &both[..] } else { &both[..1] };
        if !control.push(SendAncillaryMessage::ScmRights(fds)) {
            return Err("cannot pass the notification listener");
        }
        rustix::net::sendmsg(end, &[std::io::IoSlice::new(b"N")], &mut control, SendFlags::empty())
            .map_err(|_| "cannot pass the notification listener to the helper")?;
        Ok(())
    }

    /// In the helper, right after the fork: keeps only its own end, so it sees the end of the
    /// stream when the program's process dies without sending.
    pub fn into_helper_end(mut self) -> Option<OwnedFd> {
        self.child_end = None;
        self.helper_end.take()
    }
}

/// What the held calls need, planned with the sandbox before the program's process is made.
pub struct Plan {
    /// Where the held calls may act.
    pub grants: Grants,
    /// The call's tmp folder: the server's one place to open files (its shared memory folder).
    pub tmp: PathBuf,
    /// Every path no grant opens ([`crate::protected::never_granted`]), to name a refusal
    /// there as a secret's.
    pub never_granted: crate::protected::Secrets,
    /// The call's share of the person's processes and inotify counters, which the receiver
    /// holds it to (see [`counts`]).
    pub appetite: crate::sandbox_file::Appetite,
    /// Whether the call has its own world, whose pid namespace bounds its processes (then only
    /// its connects are held: see [`world_connects`]).
    pub own_world: bool,
}

/// A refusal the server met that the report names, made into a denial by the helper's main
/// thread (which may look at the file system; the server may not).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A metadata call on `path`, which lies in `hole`, or outside every write grant (`None`).
    Metadata { path: PathBuf, hole: Option<PathBuf> },
    /// A metadata call on a folder kept in place, or on the way to one (see [`Grants::kept`]).
    KeptInPlace { path: PathBuf },
    /// A metadata call on a device node (see [`metadata`]).
    Device { path: PathBuf },
    /// An inotify watch on `path`, which lies in `hole`, or where the program may not read
    /// (`None`).
    Watch { path: PathBuf, hole: Option<PathBuf> },
    /// A call past the call's appetite (see [`inotify`]), or one lnk could not count
    /// (`uncounted`), refused as one past it.
    Bounded { what: request::Counted, uncounted: bool },
    /// Processes of the call ended past its bound of tasks (see [`counts`]).
    Ended,
    /// An executable memfd (see [`memfd`]).
    MemfdExecutable,
    /// A UDP socket, on the host's network (see [`crate::sandbox::seccomp::Network::Held`]).
    Udp,
    /// A terminal past the most a call holds at once (see [`terminal`]).
    Terminals,
    /// A terminal's peer asked of a master the helper did not make for the call (see
    /// [`terminal`]): the person's.
    ForeignTerminal,
    /// A connect to a Unix socket at `path` that the call did not bind (see [`unix_sockets`]).
    ForeignUnixSocket { path: PathBuf },
    /// A Unix socket bound at `path`, which lies in `hole`, or outside every write grant
    /// (`None`).
    UnixBind { path: PathBuf, hole: Option<PathBuf> },
    /// A Unix socket bound at `path`, in a folder on the way to `hole`, where nothing new may be
    /// made.
    UnixBeside { path: PathBuf, hole: PathBuf },
    /// A Unix socket call where the kernel gives no copy of the program's descriptor.
    UnixWithoutCopy,
}

/// What the helper's threads found, for the call's lifetime and its report.
pub struct Shared {
    found: Mutex<Found>,
    /// The terminals the helper made for the call (see [`terminal`]).
    pairs: terminal::Pairs,
    /// The server thread, which the receiver brings to the CPU of the call it hands over.
    server_thread: placement::ServerThread,
    /// The sockets the helper named: a `getsockname` of any other goes on from the receiver.
    socket_names: socket_names::SocketNames,
}

#[derive(Default)]
struct Found {
    /// The refusals the report names (each once, no more than the report lists).
    refusals: Vec<Refusal>,
    /// The processes of the call that may lead a group they made (`setsid`, `setpgid`), at
    /// most [`MAX_GROUPS`]: what ends the call signals besides the keeper's group (see
    /// [`groups`] and [`crate::lifetime`]).
    leaders: Vec<groups::Leader>,
    /// Whether the program made any group (noted or past [`MAX_GROUPS`]): then what ends the
    /// call also looks for every process it left.
    made_groups: bool,
    /// Whether it made more than [`MAX_GROUPS`].
    more_groups: bool,
    /// Whether `leaders` grew since [`Notifier::take_new_groups`] was last asked.
    new_groups: bool,
}

impl Shared {
    fn found(&self) -> std::sync::MutexGuard<'_, Found> {
        self.found.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Notes the process that leads the group a held `setsid` or `setpgid` makes, when it is
    /// provably the call's (see [`groups`]). Returns whether there is news for the call's
    /// lifetime.
    fn note_group(&self, listener: BorrowedFd<'_>, held: &Held, call: &str) -> bool {
        self.found().made_groups = true;
        let leader = match groups::leader_of(listener, held, call) {
            groups::Noted::Leader(leader) => leader,
            groups::Noted::Nothing => return false,
            // A group that may be made and could not be noted: as one past the most noted.
            groups::Noted::Unknown => {
                let mut found = self.found();
                let news = !found.more_groups;
                found.more_groups = true;
                found.new_groups |= news;
                return news;
            }
        };
        let mut found = self.found();
        if found.leaders.contains(&leader) {
            return false;
        }
        if found.leaders.len() < MAX_GROUPS {
            found.leaders.push(leader);
        } else if !found.more_groups {
            found.more_groups = true;
        } else {
            return false;
        }
        found.new_groups = true;
        true
    }

    /// Keeps `refusal` for the report, once, and no more than the report lists.
    pub(super) fn refused(&self, refusal: Refusal) {
        let mut found = self.found();
        if found.refusals.len() < crate::denials::MAX_DENIALS && !found.refusals.contains(&refusal) {
            found.refusals.push(refusal);
        }
    }
}

/// The most groups whose leaders are noted; past it, the call's end still finds every process
/// the program left (by the tree), and a record says leftovers are possible should the sweep
/// have to end the command.
pub const MAX_GROUPS: usize = crate::procfs::MAX_LEADERS;

/// The helper's main thread's side of the held calls: it waits for the listener, starts the
/// threads that serve the calls at the first one, and reads what they found.
pub struct Notifier {
    /// What the threads need, until they start.
    plan: Option<(Grants, PathBuf, crate::sandbox_file::Appetite)>,
    /// The call's loopback (the report's servers, and its refused connects).
    loopback: Option<Arc<crate::proxy::loopback::Loopback>>,
    /// Every path no grant opens ([`crate::protected::never_granted`]), to name a refusal
    /// there as a secret's.
    never_granted: crate::protected::Secrets,
    /// The call's appetite, to name a refusal past it.
    appetite: crate::sandbox_file::Appetite,
    /// The watch over the call's tasks (see [`counts`]), run by the call's lifetime: root's
    /// (an ordinary user's are the kernel's to count, by `RLIMIT_NPROC`).
    tasks: Option<counts::TaskWatch>,
    state: State,
    shared: Arc<Shared>,
    /// Dropped with the notifier: the receiver then ends.
    _stop: Option<OwnedFd>,
}

enum State {
    /// The program's process has not sent the listener yet.
    Waiting(OwnedFd),
    /// The listener, polled until the first held call.
    Listening(OwnedFd),
    /// The threads serve the calls; polled for news of groups (the end of the stream: the
    /// receiver ended).
    Served(OwnedFd),
    Done,
}

/// `struct seccomp_notif`'s size and layout (`linux/seccomp.h`): id, pid, flags, then
/// `struct seccomp_data` (nr, arch, instruction pointer, six arguments).
const NOTIF_SIZE: usize = 80;

/// A held call as the kernel gave it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Held {
    pub id: u64,
    pub pid: u32,
    pub nr: i32,
    pub arch: u32,
    pub args: [u64; 6],
}

impl Held {
    /// Reads a `struct seccomp_notif`.
    pub fn parse(raw: &[u8; NOTIF_SIZE]) -> Held {
        let u64_at = |at: usize| u64::from_ne_bytes(raw[at..at + 8].try_into().unwrap_or([0; 8]));
        let u32_at = |at: usize| u32::from_ne_bytes(raw[at..at + 4].try_into().unwrap_or([0; 4]));
        let mut args = [0u64; 6];
        for (i, arg) in args.iter_mut().enumerate() {
            *arg = u64_at(32 + 8 * i);
        }
        Held { id: u64_at(0), pid: u32_at(8), nr: u32_at(16) as i32, arch: u32_at(20), args }
    }
}

impl Notifier {
    /// `plan`: what the held calls need; `helper_end`: the channel the listener comes on.
    pub fn new(plan: Plan, helper_end: OwnedFd) -> Notifier {
        let Plan { grants, tmp, never_granted, appetite, own_world } = plan;
        Notifier {
            loopback: grants.connects.clone(),
            plan: Some((grants, tmp, appetite)),
            never_granted,
            appetite,
            tasks: (rustix::process::geteuid().is_root() && !own_world)
                .then(|| counts::TaskWatch::new(appetite.processes)),
            state: State::Waiting(helper_end),
            shared: Arc::new(Shared {
                found: Mutex::new(Found::default()),
                pairs: terminal::Pairs::default(),
                server_thread: placement::ServerThread::default(),
                socket_names: socket_names::SocketNames::default(),
            }),
            _stop: None,
        }
    }

    /// The descriptor to poll for reading, while there is one.
    pub fn fd(&self) -> Option<BorrowedFd<'_>> {
        match &self.state {
            State::Waiting(fd) | State::Listening(fd) | State::Served(fd) => Some(fd.as_fd()),
            State::Done => None,
        }
    }

    /// Called when [`Notifier::fd`] polls ready: takes the listener, starts serving at the first
    /// held call, or reads news of groups. `hung_up`: the poll said the other side is gone (for
    /// the listener: no process uses the filter any more, so none has a call held).
    pub fn ready(&mut self, hung_up: bool) {
        self.state = match std::mem::replace(&mut self.state, State::Done) {
            State::Waiting(end) => match receive_listener(&end) {
                Some((listener, world_diag)) => {
                    if let Some((grants, ..)) = self.plan.as_mut() {
                        grants.world_diag = world_diag;
                    }
                    State::Listening(listener)
                }
                None => State::Done,
            },
            State::Listening(_) if hung_up => State::Done,
            State::Listening(listener) => match self.serve(listener) {
                Some(news) => State::Served(news),
                // Nothing serves the calls: the listener is closed, and the kernel answers each
                // held call `ENOSYS`. Less than the program asked, never more.
                None => State::Done,
            },
            State::Served(news) => {
                let mut drained = [0u8; 64];
                match rustix::io::read(&news, &mut drained) {
                    Ok(0) => State::Done,
                    Err(e) if e != Errno::AGAIN && e != Errno::INTR => State::Done,
                    _ => State::Served(news),
                }
            }
            State::Done => State::Done,
        };
    }

    /// Starts the receiver and the server with `listener`. Returns the end the receiver tells
    /// news of groups on, or `None` when they could not be started.
    fn serve(&mut self, listener: OwnedFd) -> Option<OwnedFd> {
        let (grants, tmp, appetite) = self.plan.take()?;
        // The Landlock-only mode puts sockets of the helper's in the program's place only where
        // it gets no copy of the program's own (see `socket_copies`).
        let puts_sockets = grants.world_diag.is_none() && !handles::copies_available();
        // Read here, where `/proc` may be read: the server may not.
        if let Some(loopback) = &grants.connects {
            loopback.learn_port_band();
        }
        // The program is started, so this limit is the helper's alone: as many descriptors as
        // it may have, for what a program's many held calls make it hold.
        raise_descriptor_limit();
        use rustix::fs::{Mode, OFlags};
        let tmp =
            rustix::fs::open(&tmp, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).ok()?;
        let pipe = || {
            rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC | rustix::pipe::PipeFlags::NONBLOCK).ok()
        };
        let (news_r, news_w) = pipe()?;
        let (stop_r, stop_w) = pipe()?;
        let (opener, requests) = handles::pair().ok()?;
        let (jobs, handed) = std::sync::mpsc::channel();
        // A connect that keeps the server too long is interrupted by a signal to its thread
        // alone (see `pending`): handled by the process, blocked in this thread and the ones it
        // starts from now on, unblocked by the server. Where it cannot be handled (never seen),
        // no connect is interrupted.
        let _ = crate::sys::interrupt_with(pending::INTERRUPT);
        crate::sys::block_signal_here(pending::INTERRUPT);
        // Before the server, which may start no thread once confined.
        closer::start();
        // Speed only (see `placement`): a kernel without it wakes as before.
        let _ = crate::sys::seccomp_notif_wake_on_this_cpu(listener.as_fd());
        let listener = Arc::new(listener);
        let (server_listener, server_shared) = (Arc::clone(&listener), Arc::clone(&self.shared));
        std::thread::Builder::new()
            .name("lnk-held-calls".into())
            .spawn(move || server::run(server_listener, handed, opener, grants, server_shared, tmp, appetite))
            .ok()?;
        let shared = Arc::clone(&self.shared);
        std::thread::Builder::new()
            .name("lnk-held-recv".into())
            .spawn(move || {
                let (stop, news) = (stop_r, news_w);
                receiver::run(receiver::Parts { listener, requests, jobs, shared, stop, news, puts_sockets })
            })
            .ok()?;
        self._stop = Some(stop_w);
        Some(news_r)
    }

    /// The held calls refused that the report names, known (not inferred); and without
    /// `[internet]`, the connects the call's loopback refused (with it, they are in the proxy's
    /// log, which the report takes them from).
    pub fn refusals(&self) -> Vec<crate::denials::Denial> {
        let refusals = self.shared.found().refusals.clone();
        let mut all: Vec<crate::denials::Denial> = refusals
            .into_iter()
            .map(|refusal| match refusal {
                Refusal::Metadata { path, hole } => {
                    // Outside every write grant: a secret outside every grant too is named as
                    // one (and no grant is offered for it).
                    let secret = match hole {
                        Some(hole) => Some(hole),
                        None => self.never_granted.paths().iter().find(|p| path.starts_with(p)).cloned(),
                    };
                    crate::denials::metadata_refused(&path, secret.as_deref())
                }
                Refusal::KeptInPlace { path } => crate::denials::metadata_kept(&path),
                Refusal::Device { path } => crate::denials::device_metadata(&path),
                Refusal::Watch { path, hole } => crate::denials::watch_refused(&path, hole.as_deref()),
                Refusal::Bounded { what, uncounted } => {
                    crate::denials::appetite_reached(what.key(), what.bound(&self.appetite), uncounted)
                }
                Refusal::Ended => crate::denials::processes_ended(self.appetite.processes),
                Refusal::MemfdExecutable => crate::denials::memfd_executable(),
                Refusal::Udp => crate::denials::udp_without_own_world(),
                Refusal::Terminals => crate::denials::terminals_bounded(terminal::MAX_PAIRS),
                Refusal::ForeignTerminal => crate::denials::foreign_terminal(),
                Refusal::ForeignUnixSocket { path } => crate::denials::foreign_unix_socket(&path),
                Refusal::UnixBind { path, hole } => {
                    let secret = match hole {
                        Some(hole) => Some(hole),
                        None => self.never_granted.paths().iter().find(|p| path.starts_with(p)).cloned(),
                    };
                    crate::denials::unix_bind_refused(&path, secret.as_deref())
                }
                Refusal::UnixBeside { path, hole } => crate::denials::unix_bind_beside(&path, &hole),
                Refusal::UnixWithoutCopy => crate::denials::unix_without_copy(),
            })
            .collect();
        if let Some(loopback) = self.loopback.as_ref().filter(|l| !l.has_routes()) {
            all.extend(crate::proxy::log::lock(&loopback.log()).denials());
        }
        all
    }

    /// The leaders of the groups the program made, as noted.
    pub fn leaders(&self) -> Vec<groups::Leader> {
        self.shared.found().leaders.clone()
    }

    /// The same, by pid and start time, for a record.
    pub fn groups(&self) -> Vec<crate::procfs::Process> {
        self.shared.found().leaders.iter().map(|l| l.process).collect()
    }

    /// Whether the program made any group of its own.
    pub fn made_groups(&self) -> bool {
        self.shared.found().made_groups
    }

    /// Whether it made more groups than [`Notifier::groups`] holds.
    pub fn more_groups(&self) -> bool {
        self.shared.found().more_groups
    }

    /// The listeners made for the program's servers (see [`crate::proxy::loopback::Loopback::made`]).
    pub fn servers(&self) -> Vec<crate::proxy::loopback::Server> {
        self.loopback.as_ref().map(|l| l.made()).unwrap_or_default()
    }

    /// When the watch over the call's tasks next looks (see [`counts`]).
    pub fn watch_due(&self) -> Option<std::time::Instant> {
        self.tasks.as_ref().map(counts::TaskWatch::due)
    }

    /// Looks at the call's tasks, and ends its newest processes past its bound (see
    /// [`counts`]), naming it in the report.
    pub fn watch(&mut self) {
        let helper = rustix::process::getpid().as_raw_nonzero().get();
        if self.tasks.as_mut().is_some_and(|watch| watch.look(helper) > 0) {
            self.shared.refused(Refusal::Ended);
        }
    }

    /// Whether groups were noted since this was last asked.
    pub fn take_new_groups(&mut self) -> bool {
        std::mem::take(&mut self.shared.found().new_groups)
    }
}

/// Raises this process's soft limit of open descriptors to its hard one.
fn raise_descriptor_limit() {
    use rustix::process::{Resource, Rlimit};
    let limit = rustix::process::getrlimit(Resource::Nofile);
    let _ = rustix::process::setrlimit(
        Resource::Nofile,
        Rlimit { current: limit.maximum, maximum: limit.maximum },
    );
}

/// Receives the listener, or `None` when the program's process ended without sending it.
fn receive_listener(end: &OwnedFd) -> Option<(OwnedFd, Option<OwnedFd>)> {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let mut byte = [0u8; 1];
    let received =
        rustix::net::recvmsg(end, &mut [IoSliceMut::new(&mut byte)], &mut control, RecvFlags::CMSG_CLOEXEC)
            .ok()?;
    if received.bytes == 0 {
        return None;
    }
    control.drain().find_map(|message| match message {
        RecvAncillaryMessage::ScmRights(mut fds) => fds.next().map(|listener| (listener, fds.next())),
        _ => None,
    })
}

/// How a held call is answered when it succeeds.
pub enum Reply {
    /// Done for the program: the call returns 0.
    Done,
    /// Let go on into the kernel, as made: only where the kernel's own checks (Landlock's)
    /// decide, or the call only tells the program about what is its own (see [`sockets`],
    /// [`shm`]).
    Continue,
    /// Answered already (a descriptor put in and its number returned in one step).
    Sent,
    /// Done for the program: the call returns this (an inotify watch's number).
    Value(i64),
    /// Under way: answered when it is done (a connect the program waits for, see
    /// [`pending`]).
    Later(Box<pending::Pending>),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listener_is_done_once_no_process_uses_the_filter() {
        use crate::sandbox::seccomp::{
            self, Counting, Memfd, Metadata, Network, Pids, SeccompPolicy, Sessions,
        };
        let filter = seccomp::build(SeccompPolicy {
            network: Network::None,
            metadata: Metadata::Notified,
            ipc: false,
            openat2: false,
            sessions: Sessions::Held,
            counting: Counting::Held,
            pids: Pids::Held,
            memfd: Memfd::Held,
        });
        let channel = Channel::new().unwrap();
        // SAFETY: the child makes only system calls (prctl, seccomp, sendmsg, close, _exit) on
        // what was made before the fork, and never returns into the test harness.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let sent = crate::sys::install_seccomp_filter_with_listener(&filter)
                .ok()
                .is_some_and(|listener| channel.send_listener(&listener, None).is_ok());
            // SAFETY: ends the child at once.
            unsafe { libc::_exit(i32::from(!sent)) };
        }
        let never_granted = crate::protected::Secrets {
            deny: Vec::new(),
            home: "/nonexistent".into(),
            grants: Vec::new(),
            protected: Vec::new(),
            as_root: false,
            found: std::cell::OnceCell::new(),
        };
        let shm = shm::ShmFolder::new("/nonexistent".into());
        let grants = Grants {
            write_roots: Vec::new(),
            holes: Vec::new(),
            kept: Vec::new(),
            readable: Vec::new(),
            tmp: PathBuf::new(),
            connects: None,
            shm,
            unix: unix_records::UnixSockets::new("/nonexistent".into()),
            socket_folders: Vec::new(),
            world_diag: None,
            host_diag: None,
        };
        let end = channel.into_helper_end().unwrap();
        let appetite = crate::sandbox_file::Appetite::DEFAULT;
        let plan = Plan { grants, tmp: "/nonexistent".into(), never_granted, appetite, own_world: false };
        let mut notifier = Notifier::new(plan, end);
        // SAFETY: waits for the child just forked.
        let mut status = 0;
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert_eq!(status, 0, "the child installed its filter and sent the listener");
        // The listener arrives, then polls hung up (its only user is gone): done, not polled
        // ready again and again (the helper spun on it until the call ended).
        let mut rounds = 0;
        while let Some(fd) = notifier.fd() {
            rounds += 1;
            assert!(rounds <= 3, "still polled after its filter's last user ended");
            let mut fds = [rustix::event::PollFd::from_borrowed_fd(fd, rustix::event::PollFlags::IN)];
            rustix::event::poll(&mut fds, None).unwrap();
            let revents = fds[0].revents();
            notifier.ready(revents.intersects(rustix::event::PollFlags::HUP | rustix::event::PollFlags::ERR));
        }
    }

    #[test]
    fn a_notification_is_read_field_by_field() {
        let mut raw = [0u8; NOTIF_SIZE];
        raw[0..8].copy_from_slice(&7u64.to_ne_bytes());
        raw[8..12].copy_from_slice(&1234u32.to_ne_bytes());
        raw[16..20].copy_from_slice(&90i32.to_ne_bytes());
        raw[20..24].copy_from_slice(&0xc000_003eu32.to_ne_bytes());
        raw[32..40].copy_from_slice(&0x1000u64.to_ne_bytes());
        raw[72..80].copy_from_slice(&u64::MAX.to_ne_bytes());
        let held = Held::parse(&raw);
        assert_eq!(
            held,
            Held { id: 7, pid: 1234, nr: 90, arch: 0xc000_003e, args: [0x1000, 0, 0, 0, 0, u64::MAX] }
        );
    }
}
