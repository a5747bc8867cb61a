//! The held calls' receiver: the helper's thread that takes each held call from the kernel,
//! answers those decided by their numbers alone, and hands the rest to the confined server.
//!
//! It reads no byte of the program's: only the kernel's notification (the calling thread, the
//! call's number and its six register arguments) and `/proc`. What it does with them:
//!
//! - `setsid` and `setpgid`: notes the process of the call that may lead the new group (see
//!   [`super::groups`]) and lets the call go on into the kernel, which answers it;
//! - a call naming a process by pid: lets it go on when the pid is the caller's own, else
//!   answers `ESRCH` or `EPERM` as the kernel would;
//! - a UDP socket: refuses it, named;
//! - a terminal's peer (`TIOCGPTPEER`): on a copy of the program's master, opens the peer of a
//!   pair the server made for the call ([`super::terminal`]; a pty's peer opens without waiting);
//! - a `getsockname` of a socket the helper never named (its inode, read from the descriptor's
//!   link in `/proc`, not in [`super::socket_names`]): lets it go on;
//! - every other call (its arguments lie in the program's memory, or it makes what the call's
//!   appetite counts: [`super::inotify`]): opens the calling thread's memory (and, for a socket
//!   call, a pidfd of the thread and the descriptor's `fdinfo`), checks the call is still held
//!   (so what it opened is that thread's), takes a socket call's copy of the descriptor through
//!   that pidfd ([`handles::Taking`]), and hands them to the server ([`super::server`]),
//!   brought to this CPU ([`super::placement`]); then opens, for the server, what else it asks
//!   of that call's thread ([`super::handles`]), a copy of one of its descriptors included.
//!
//! It never waits on the program: every open is of `/proc` (or a pty's peer, above), nothing it
//! opens is read here, and what it looks at of a descriptor is its link, never its file's
//! attributes (a FUSE or NFS file's would wait on that file system). A copy it drops is closed
//! apart ([`super::closer`]).
//! Nor does it wait on the server: a call handed over is queued, and a server busy with one
//! call (a connect to a slow listener) holds up only the calls it serves, never the receiver
//! or the call's lifetime, which runs on the helper's main thread (see [`crate::lifetime`]).
//!
//! Trusted with: the held calls it answers itself, and which thread's handles the server gets.
//! What it trusts: the kernel's notifications, `/proc`, and `SECCOMP_IOCTL_NOTIF_ID_VALID`.

use std::collections::HashMap;
use std::os::fd::{AsFd as _, BorrowedFd, OwnedFd};
use std::sync::{Arc, mpsc};

use rustix::event::{PollFd, PollFlags};
use rustix::io::Errno;

use super::handles::{self, Requests};
use super::memory::Memory;
use super::placement::Placement;
use super::request::{self, Call, Counted, SocketCall};
use super::{Held, NOTIF_SIZE, Shared};

/// A call handed to the server: the notification and the calling thread's memory (none for a
/// call whose arguments are all in its registers: an inotify instance's).
pub(super) struct Job {
    pub(super) held: Held,
    pub(super) memory: Option<Memory>,
    /// For a socket call (`connect`, `bind`, `listen`, `getsockname`), what the server needs of
    /// the descriptor it names ([`handles::Taking`]: a copy, its `fdinfo`), taken while the
    /// call is held (so of that thread's table): the held socket calls act on the copy or tell
    /// a TCP socket by it (see [`super::sockets`], [`super::world_connects`],
    /// [`super::unix_sockets`]) without asking the receiver, a wake-up of each thread apiece.
    pub(super) taken: Vec<(handles::What, OwnedFd)>,
}

/// The most calls handed over and not yet answered. Each holds up to three descriptors of the
/// helper's (the thread's memory; a socket call's copy and `fdinfo`): unbounded, a program with
/// many threads and a slow held call filled the helper's descriptor table, and what needs a
/// descriptor to count (a `/proc` read) failed open (found in review). Past it, a call whose arguments lie in memory waits, holding nothing but
/// its notification, until the server has answered some; the calls answered from their numbers
/// alone (`setsid`, `fork`, …) are still answered at once.
const MAX_HANDED_OVER: usize = 64;

/// What the receiver serves with.
pub(super) struct Parts {
    pub(super) listener: Arc<OwnedFd>,
    pub(super) requests: Requests,
    pub(super) jobs: mpsc::Sender<Job>,
    pub(super) shared: Arc<Shared>,
    /// Polls ready when the call ends.
    pub(super) stop: OwnedFd,
    /// Written a byte each time a group is noted (the call's lifetime records it), and closed
    /// when the receiver ends.
    pub(super) news: OwnedFd,
    /// Whether a held socket call's answer may put a new socket at its descriptor: the
    /// Landlock-only mode where the kernel gives no copies of the program's descriptors (see
    /// [`super::sockets`]; with copies, the calls act on the copy: [`super::socket_copies`],
    /// and the own world's connects, [`super::world_connects`]).
    pub(super) puts_sockets: bool,
}

/// Runs until the listener is done (no process uses the filter any more), `stop` polls ready
/// (the call ended), or the server is gone.
pub(super) fn run(parts: Parts) {
    let Parts { listener, requests, jobs, shared, stop, news, puts_sockets } = parts;
    let mut handed: HashMap<u64, u32> = HashMap::new();
    let mut state = State {
        handed: &mut handed,
        waiting: std::collections::VecDeque::new(),
        placement: Placement::new(),
        puts_sockets,
    };
    serve(&listener, &requests, &jobs, &shared, &stop, &news, &mut state);
    // Whatever the server asks from now on is answered at once: its call is no longer held.
    requests.close();
}

fn serve(
    listener: &OwnedFd,
    requests: &Requests,
    jobs: &mpsc::Sender<Job>,
    shared: &Shared,
    stop: &OwnedFd,
    news: &OwnedFd,
    state: &mut State<'_>,
) {
    loop {
        // First what the server asked, or told: an answered call is told without a wake-up
        // (see `handles::Opener::done`), so it is read here, before each wait.
        if !answer_requests(listener, requests, (jobs, shared), state, false) {
            return;
        }
        let mut fds = [
            PollFd::new(listener, PollFlags::IN),
            PollFd::new(&requests.ready, PollFlags::IN),
            PollFd::new(stop, PollFlags::IN),
        ];
        // While calls are in the server's hands, a wait of a bounded time: a connect that keeps
        // the server too long is interrupted (see `super::pending`).
        let wait = super::pending::look_again_in(!state.handed.is_empty()).map(|wait| {
            rustix::event::Timespec { tv_sec: wait.as_secs() as i64, tv_nsec: i64::from(wait.subsec_nanos()) }
        });
        match rustix::event::poll(&mut fds, wait.as_ref()) {
            Ok(_) | Err(Errno::INTR) => {}
            Err(_) => return,
        }
        super::pending::interrupt_if_overdue(&shared.server_thread);
        let (held_ready, asked, stopped) = (fds[0].revents(), fds[1].revents(), fds[2].revents());
        if !stopped.is_empty() {
            return;
        }
        // The server is gone (its end of the requests closed): nothing serves the calls. The
        // receiver ends, the listener closes with it, and the kernel answers every held call
        // `ENOSYS`, rather than this loop spinning on a closed pipe while the calls wait (seen
        // once a bug made the server end).
        if asked.intersects(PollFlags::HUP | PollFlags::ERR) && !asked.intersects(PollFlags::IN) {
            return;
        }
        if !answer_requests(listener, requests, (jobs, shared), state, !asked.is_empty()) {
            return;
        }
        if held_ready.intersects(PollFlags::IN) {
            if !take_one(listener.as_fd(), jobs, shared, news, state) {
                return;
            }
        } else if held_ready.intersects(PollFlags::HUP | PollFlags::ERR | PollFlags::NVAL) {
            // No process uses the filter any more, so none has a call held.
            return;
        }
        // Calls waiting for room: each answer is news to be woken for.
        requests.wake_for_answers(!state.waiting.is_empty());
    }
}

/// Opens what the server asked for, and forgets the calls it answered, handing over those
/// that waited for room (`woken`: the requests' pipe polled ready, and is drained). False when
/// the server is gone.
fn answer_requests(
    listener: &OwnedFd,
    requests: &Requests,
    (jobs, shared): (&mpsc::Sender<Job>, &Shared),
    state: &mut State<'_>,
    woken: bool,
) -> bool {
    for request in requests.take(woken) {
        match (request.what, request.reply) {
            (Some(what), Some(reply)) => {
                let answer = match state.handed.get(&request.id) {
                    Some(tid) => handles::open_for(listener.as_fd(), request.id, *tid, what),
                    None => Err(Errno::NOENT),
                };
                // A server that gave up asking drops nothing here: a copy may be the program's
                // last descriptor of its socket (see `super::closer`).
                if let Err(mpsc::SendError(Ok(handle))) = reply.send(answer) {
                    super::closer::close_apart(handle);
                }
            }
            _ => {
                state.handed.remove(&request.id);
                // Room again: a call that waited is handed over.
                while state.handed.len() < MAX_HANDED_OVER {
                    let Some(held) = state.waiting.pop_front() else { break };
                    if !hand_over(listener.as_fd(), held, (jobs, shared), state) {
                        return false;
                    }
                }
            }
        }
    }
    true
}

/// What the receiver keeps between calls: the calls handed over (id → thread), and those
/// waiting to be.
struct State<'a> {
    handed: &'a mut HashMap<u64, u32>,
    /// Calls waiting to be handed over (see [`MAX_HANDED_OVER`]).
    waiting: std::collections::VecDeque<Held>,
    /// Where the server runs (see [`super::placement`]).
    placement: Placement,
    /// See [`Parts::puts_sockets`].
    puts_sockets: bool,
}

/// Takes one held call and answers it or hands it over. False when there is nothing more to
/// take (the listener is done, or the server gone).
fn take_one(
    listener: BorrowedFd<'_>,
    jobs: &mpsc::Sender<Job>,
    shared: &Shared,
    news: &OwnedFd,
    state: &mut State<'_>,
) -> bool {
    let mut raw = [0u8; NOTIF_SIZE];
    match crate::sys::seccomp_notif_recv(listener, &mut raw) {
        Ok(()) => {}
        // The calling thread was killed (or the call interrupted) before it was read.
        Err(Errno::NOENT) | Err(Errno::INTR) => return true,
        Err(_) => return false,
    }
    let held = Held::parse(&raw);
    if held.arch != crate::sys::AUDIT_ARCH {
        let _ = crate::sys::seccomp_notif_send(listener, held.id, 0, -libc::ENOSYS);
        return true;
    }
    match request::decode_call(i64::from(held.nr), held.args) {
        // Numbers in registers, nothing the program could change after they were read: the
        // call goes on, and the kernel answers it.
        Ok(Call::Session(call)) => {
            if shared.note_group(listener, &held, call) {
                // A full pipe already says there is news.
                let _ = rustix::io::write(news, &[1]);
            }
            let _ = crate::sys::seccomp_notif_continue(listener, held.id);
            return true;
        }
        // Never held (see `super::counts`): let go on, should a filter ever hold one.
        Ok(Call::Counted(Counted::Task)) => {
            let _ = crate::sys::seccomp_notif_continue(listener, held.id);
            return true;
        }
        // No UDP on the host's network (see `crate::sandbox::seccomp::Network::Held`): refused,
        // and named.
        Ok(Call::Udp) => {
            shared.refused(super::Refusal::Udp);
            let _ = crate::sys::seccomp_notif_send(listener, held.id, 0, -libc::EPERM);
            return true;
        }
        // A terminal's peer: opened here, where no Landlock domain stands between (see
        // `super::terminal`), on a copy of the program's master.
        Ok(Call::PtyPeer { fd, flags }) => {
            answer_peer(listener, &held, shared, fd, flags);
            return true;
        }
        // A pid in a register: the caller's own goes on.
        Ok(Call::Pid(pid)) => {
            answer_pid(listener, &held, pid);
            return true;
        }
        // The name of a socket the helper never named: the kernel tells it.
        Ok(Call::Socket(SocketCall::Name { fd, .. })) if !named_by_the_helper(&held, shared, fd) => {
            let _ = crate::sys::seccomp_notif_continue(listener, held.id);
            return true;
        }
        _ => {}
    }
    if state.handed.len() >= MAX_HANDED_OVER {
        state.waiting.push_back(held);
        return true;
    }
    hand_over(listener, held, (jobs, shared), state)
}

/// Whether the held thread's descriptor `fd` may be a socket the helper named (see
/// [`super::socket_names`]); true too when `/proc` cannot say what it is: the server then
/// decides. Only the descriptor's link is read (`/proc/<tid>/fd/N`, `socket:[INODE]` for a
/// socket), which asks nothing of the file's file system: a `stat` there would wait on a FUSE
/// or NFS file the program put at that number, and the receiver with it (found in review: 15 s
/// on a slow FUSE file). A thread gone since, whose number another took, makes this read
/// another's link: the call is then no longer held, and no answer reaches anyone.
fn named_by_the_helper(held: &Held, shared: &Shared, fd: i32) -> bool {
    if fd < 0 {
        return true;
    }
    let link = rustix::fs::readlink(format!("/proc/{}/fd/{fd}", held.pid), Vec::with_capacity(32));
    match link.ok().as_ref().and_then(|l| socket_inode(l.as_bytes())) {
        Some(inode) => shared.socket_names.may_have_named(inode),
        None => true,
    }
}

/// The inode of a socket, from its descriptor's link in `/proc` (`socket:[12345]`).
fn socket_inode(link: &[u8]) -> Option<u64> {
    let digits = link.strip_prefix(b"socket:[")?.strip_suffix(b"]")?;
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// Answers a held call that names a process by `pid` (see [`crate::sandbox::seccomp::Pids`]):
/// let go on when it is the caller's own process or thread, which cannot have ended while its
/// call is held (so its number is not another's); else `ESRCH` where no process has the number,
/// as the kernel answers, and `EPERM` where another has.
fn answer_pid(listener: BorrowedFd<'_>, held: &Held, pid: i32) {
    let caller = i32::try_from(held.pid).ok();
    if pid > 0 && (Some(pid) == caller || Some(pid) == super::groups::thread_group(held.pid)) {
        let _ = crate::sys::seccomp_notif_continue(listener, held.id);
        return;
    }
    let exists = rustix::process::Pid::from_raw(pid)
        .filter(|_| pid > 0)
        .is_some_and(|p| rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()).is_ok());
    let errno = if exists { libc::EPERM } else { libc::ESRCH };
    let _ = crate::sys::seccomp_notif_send(listener, held.id, 0, -errno);
}

/// Answers a held `ioctl(fd, TIOCGPTPEER, flags)`: the peer of the program's master `fd`, opened
/// on a copy of it if the helper made that pair for the call (see [`super::terminal`]). The copy
/// is the program's descriptor only while the call is held, which [`handles::open_for`] checks.
fn answer_peer(listener: BorrowedFd<'_>, held: &Held, shared: &Shared, fd: i32, flags: u32) {
    let mut foreign = false;
    let peer = handles::open_for(listener, held.id, held.pid, handles::What::Copy(fd))
        .map(super::closer::ProgramCopy::new)
        // Not a terminal multiplexer, as the kernel answers.
        .map_err(|e| if e == Errno::NOTSOCK { Errno::NOTTY } else { e })
        .and_then(|master| super::terminal::open_peer(&master, &shared.pairs, flags, &mut foreign));
    if foreign {
        shared.refused(super::Refusal::ForeignTerminal);
    }
    let _ = match peer {
        Ok(peer) => {
            let cloexec = flags & libc::O_CLOEXEC as u32 != 0;
            crate::sys::seccomp_notif_send_fd(listener, held.id, peer.as_fd(), cloexec).map(|_| ())
        }
        Err(e) => crate::sys::seccomp_notif_send(listener, held.id, 0, -e.raw_os_error()),
    };
}

/// Opens the held thread's memory and hands the call to the server. False when the server is
/// gone.
fn hand_over(
    listener: BorrowedFd<'_>,
    held: Held,
    (jobs, shared): (&mpsc::Sender<Job>, &Shared),
    state: &mut State<'_>,
) -> bool {
    // The memory is the holding thread's only while its call is still held. An inotify
    // instance needs none (a process that is not dumpable may still ask for one).
    let registers_only = matches!(
        request::decode_call(i64::from(held.nr), held.args),
        Ok(Call::Counted(Counted::Instance { .. }))
    );
    let memory = Memory::open(held.pid);
    let socket_calls = [libc::SYS_connect, libc::SYS_bind, libc::SYS_listen, libc::SYS_getsockname];
    let nr = libc::c_long::from(held.nr);
    let taking = socket_calls
        .contains(&nr)
        .then(|| handles::Taking::begin(held.pid, nr, held.args[0] as i32, state.puts_sockets));
    let memory = match memory {
        Ok(memory) if crate::sys::seccomp_notif_id_valid(listener, held.id) => Some(memory),
        Ok(_) => return true,
        Err(_) if registers_only => None,
        Err(_) => {
            let _ = crate::sys::seccomp_notif_send(listener, held.id, 0, -libc::EPERM);
            return true;
        }
    };
    // A server with no call in hand waits for this one: it is brought to this CPU, where the
    // call's thread waits too.
    if state.handed.is_empty() {
        state.placement.bring(&shared.server_thread);
    }
    // The call was held after the pidfd was opened: the copy is that thread's (see
    // `handles::open_for`).
    let taken = taking.map(handles::Taking::finish).unwrap_or_default();
    state.handed.insert(held.id, held.pid);
    let id = held.id;
    if let Err(mpsc::SendError(job)) = jobs.send(Job { held, memory, taken }) {
        handles::let_go(job.taken);
        let _ = crate::sys::seccomp_notif_send(listener, id, 0, -libc::ENOSYS);
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd as _;

    #[test]
    fn a_getsockname_goes_on_only_for_a_socket_the_helper_never_named() {
        assert_eq!(socket_inode(b"socket:[12345]"), Some(12345));
        for link in
            [&b"socket:[]"[..], b"socket:[12a]", b"pipe:[7]", b"/tmp/socket:[1]", b"anon_inode:[eventfd]"]
        {
            assert_eq!(socket_inode(link), None, "{}", String::from_utf8_lossy(link));
        }
        let shared = Shared {
            found: std::sync::Mutex::new(super::super::Found::default()),
            pairs: super::super::terminal::Pairs::default(),
            server_thread: super::super::placement::ServerThread::default(),
            socket_names: super::super::socket_names::SocketNames::default(),
        };
        let me = rustix::thread::gettid().as_raw_nonzero().get() as u32;
        let held = Held { id: 1, pid: me, nr: libc::SYS_getsockname as i32, arch: 0, args: [0; 6] };
        let socket = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let fd = socket.as_raw_fd();
        assert!(!named_by_the_helper(&held, &shared, fd), "a socket never named goes on");
        shared.socket_names.note(rustix::fs::fstat(&socket).unwrap().st_ino);
        assert!(named_by_the_helper(&held, &shared, fd), "a named one is handed over");
        // Anything else is the server's to answer: a file, no descriptor, a negative number.
        let file = std::fs::File::open("/proc/self/stat").unwrap();
        for fd in [file.as_raw_fd(), 100_000, -1] {
            assert!(named_by_the_helper(&held, &shared, fd), "{fd}");
        }
    }
}
