//! Held system calls (seccomp user notification): in the Landlock-only mode, the helper
//! performs the program's metadata calls (`chmod`, `chown`, `utimensat`, the xattr calls and
//! their siblings) beneath the write grants, and refuses them elsewhere; it makes the program's
//! TCP connections and listeners on the call's own loopback ([`sockets`], [`crate::proxy::loopback`]): to the
//! call's proxy with `[internet]`, and to the program's own servers; and it notes
//! the leader of each session or group the program makes (`setsid`, `setpgid`), which then goes
//! on into the kernel, so that the call's end ends those groups too (see [`crate::lifetime`]).
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
//! - For each held call the helper opens the program's memory, checks that the notification
//!   is still live (so the memory is the program's, not a process that reused its pid), reads
//!   each argument once ([`memory`]), decodes the call ([`request`]), and performs it on a
//!   descriptor it resolved and proved to lie beneath a write grant ([`metadata`]). It never
//!   lets a call whose arguments lie in memory go on after inspecting them: the program's
//!   threads could change them in between. (`setsid` and `setpgid` take numbers only, which
//!   the kernel copied into the notification: those go on.)
//! - It does so without capabilities (a root helper drops its effective set for the call), so
//!   the kernel checks the program's own rights.
//! - A program that dies while a call is held leaves nothing half done: each call is one
//!   system call of the helper's, done or not, and its answer then goes nowhere.
//!
//! What it costs: a socket pair and one message per launch; a held call costs two context
//! switches and a few system calls of the helper's.

pub mod groups;
pub mod memory;
pub mod metadata;
pub mod request;
pub mod shm;
pub mod sockets;

use std::io::IoSliceMut;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd as _, BorrowedFd, OwnedFd};

use rustix::io::Errno;
use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags, SocketFlags, SocketType,
};

pub use metadata::Grants;

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

    /// In the program's process, right after the filter is installed: hands the listener over.
    /// The caller then drops `listener`, before `execve`.
    pub fn send_listener(&self, listener: &OwnedFd) -> Result<(), &'static str> {
        let end = self.child_end.as_ref().ok_or("the notification channel was closed")?;
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        let fds = [listener.as_fd()];
        if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
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

/// The helper's side: waits for the listener, then answers each held call.
pub struct Notifier {
    grants: Grants,
    state: State,
    /// The held calls the helper refused that the report names (each kind once).
    refusals: Vec<crate::denials::Denial>,
    /// The processes of the call that may lead a group they made (`setsid`, `setpgid`), at
    /// most [`MAX_GROUPS`]: what ends the call signals besides the keeper's group (see
    /// [`groups`] and [`crate::lifetime`]).
    groups: Vec<groups::Leader>,
    /// Whether the program made any group (noted or past [`MAX_GROUPS`]): then what ends the
    /// call also looks for every process it left.
    made_groups: bool,
    /// Whether it made more than [`MAX_GROUPS`].
    more_groups: bool,
    /// Whether `groups` grew since [`Notifier::take_new_groups`] was last asked.
    new_groups: bool,
}

/// The most groups whose leaders are noted; past it, the call's end still finds every process
/// the program left (by the tree), and a record says leftovers are possible should the sweep
/// have to end the command.
pub const MAX_GROUPS: usize = crate::procfs::MAX_LEADERS;

enum State {
    /// The program's process has not sent the listener yet.
    Waiting(OwnedFd),
    Serving(OwnedFd),
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
    pub fn new(grants: Grants, helper_end: OwnedFd) -> Notifier {
        Notifier {
            grants,
            state: State::Waiting(helper_end),
            refusals: Vec::new(),
            groups: Vec::new(),
            made_groups: false,
            more_groups: false,
            new_groups: false,
        }
    }

    /// The descriptor to poll for reading, while there is one.
    pub fn fd(&self) -> Option<BorrowedFd<'_>> {
        match &self.state {
            State::Waiting(fd) | State::Serving(fd) => Some(fd.as_fd()),
            State::Done => None,
        }
    }

    /// The held calls refused that the report names, known (not inferred); and without
    /// `[internet]`, the connects the call's loopback refused (with it, they are in the proxy's
    /// log, which the report takes them from).
    pub fn refusals(&self) -> Vec<crate::denials::Denial> {
        let mut all = self.refusals.clone();
        if let Some(loopback) = self.grants.connects.as_ref().filter(|l| !l.has_routes()) {
            all.extend(crate::proxy::log::lock(&loopback.log()).denials());
        }
        all
    }

    /// The leaders of the groups the program made, as noted.
    pub fn leaders(&self) -> &[groups::Leader] {
        &self.groups
    }

    /// The same, by pid and start time, for a record.
    pub fn groups(&self) -> Vec<crate::procfs::Process> {
        self.groups.iter().map(|l| l.process).collect()
    }

    /// Whether the program made any group of its own.
    pub fn made_groups(&self) -> bool {
        self.made_groups
    }

    /// Whether it made more groups than [`Notifier::groups`] holds.
    pub fn more_groups(&self) -> bool {
        self.more_groups
    }

    /// The listeners made for the program's servers (see [`crate::proxy::loopback::Loopback::made`]).
    pub fn servers(&self) -> Vec<crate::proxy::loopback::Server> {
        self.grants.connects.as_ref().map(|l| l.made()).unwrap_or_default()
    }

    /// Whether groups were noted since this was last asked.
    pub fn take_new_groups(&mut self) -> bool {
        std::mem::take(&mut self.new_groups)
    }

    /// Called when [`Notifier::fd`] polls ready: takes the listener, or answers one held call.
    /// `hung_up`: the poll said the other side is gone. For the listener that means no process
    /// uses the filter any more (and so none has a call held): it is done, rather than polled
    /// ready again and again until the call ends.
    pub fn ready(&mut self, hung_up: bool) {
        match std::mem::replace(&mut self.state, State::Done) {
            State::Waiting(end) => {
                if let Some(listener) = receive_listener(&end) {
                    self.state = State::Serving(listener);
                }
            }
            State::Serving(_) if hung_up => {}
            State::Serving(listener) => {
                if self.answer_one(&listener) {
                    self.state = State::Serving(listener);
                }
            }
            State::Done => {}
        }
    }
}

/// Receives the listener, or `None` when the program's process ended without sending it.
fn receive_listener(end: &OwnedFd) -> Option<OwnedFd> {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let mut byte = [0u8; 1];
    let received =
        rustix::net::recvmsg(end, &mut [IoSliceMut::new(&mut byte)], &mut control, RecvFlags::CMSG_CLOEXEC)
            .ok()?;
    if received.bytes == 0 {
        return None;
    }
    control.drain().find_map(|message| match message {
        RecvAncillaryMessage::ScmRights(mut fds) => fds.next(),
        _ => None,
    })
}

impl Notifier {
    /// Answers one held call. Returns false when the listener is done (no process uses the
    /// filter any more).
    fn answer_one(&mut self, listener: &OwnedFd) -> bool {
        let mut raw = [0u8; NOTIF_SIZE];
        match crate::sys::seccomp_notif_recv(listener.as_fd(), &mut raw) {
            Ok(()) => {}
            // The calling thread was killed (or the call interrupted) before it was read.
            Err(Errno::NOENT) | Err(Errno::INTR) => return true,
            Err(_) => return false,
        }
        let held = Held::parse(&raw);
        // A new session or group: its leader is noted, so that the call's end ends its group
        // too, and the call goes on into the kernel. Its arguments are numbers in registers,
        // nothing the program could change after they were read.
        if let Ok(request::Call::Session(call)) = request::decode_call(i64::from(held.nr), held.args) {
            if held.arch == crate::sys::AUDIT_ARCH {
                self.note_group(listener.as_fd(), &held, call);
                let _ = crate::sys::seccomp_notif_continue(listener.as_fd(), held.id);
            } else {
                let _ = crate::sys::seccomp_notif_send(listener.as_fd(), held.id, 0, -libc::ENOSYS);
            }
            return true;
        }
        let mut refused = None;
        let answer = without_capabilities(|| perform(listener.as_fd(), &self.grants, &held, &mut refused));
        if let Some(denial) = refused {
            name(&mut self.refusals, denial);
        }
        // ENOENT: the program (or the thread) is gone; nothing waits for this answer.
        let _ = match answer {
            Ok(Reply::Done) => crate::sys::seccomp_notif_send(listener.as_fd(), held.id, 0, 0),
            Ok(Reply::Continue) => crate::sys::seccomp_notif_continue(listener.as_fd(), held.id),
            Ok(Reply::Sent) => Ok(()),
            Err(e) => crate::sys::seccomp_notif_send(listener.as_fd(), held.id, 0, -e.raw_os_error()),
        };
        true
    }

    /// Notes the process that leads the group a held `setsid` or `setpgid` makes, when it is
    /// provably the call's (see [`groups`]).
    fn note_group(&mut self, listener: BorrowedFd<'_>, held: &Held, call: &str) {
        self.made_groups = true;
        let Some(leader) = groups::leader_of(listener, held, call) else { return };
        if self.groups.contains(&leader) {
            return;
        }
        if self.groups.len() < MAX_GROUPS {
            self.groups.push(leader);
            self.new_groups = true;
        } else if !self.more_groups {
            self.more_groups = true;
            self.new_groups = true;
        }
    }
}

/// Keeps `denial` for the report, once, and no more than the report lists.
fn name(refusals: &mut Vec<crate::denials::Denial>, denial: crate::denials::Denial) {
    if refusals.len() < crate::denials::MAX_DENIALS && !refusals.contains(&denial) {
        refusals.push(denial);
    }
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
}

/// Decodes and performs one held call, answering for the program. A refusal the report should
/// name is put in `refused`.
fn perform(
    listener: BorrowedFd<'_>,
    grants: &Grants,
    held: &Held,
    refused: &mut Option<crate::denials::Denial>,
) -> Result<Reply, Errno> {
    if held.arch != crate::sys::AUDIT_ARCH {
        return Err(Errno::NOSYS);
    }
    let call = request::decode_call(i64::from(held.nr), held.args)?;
    let memory = memory::Memory::open(held.pid).map_err(|_| Errno::PERM)?;
    let process = match call {
        request::Call::Socket(_) => Some(open_process(held.pid)?),
        request::Call::Metadata(_) | request::Call::Session(_) | request::Call::Shm(_) => None,
    };
    // What was opened is the holding thread's only while its call is still held.
    if !crate::sys::seccomp_notif_id_valid(listener, held.id) {
        return Err(Errno::NOENT);
    }
    match (call, process) {
        (request::Call::Metadata(request), _) => {
            metadata::perform(grants, held.pid, &memory, &request, refused).map(|()| Reply::Done)
        }
        (request::Call::Socket(call), Some(process)) => {
            // A socket is held only with the call's loopback; without one, none could be made.
            let loopback = grants.connects.as_ref().ok_or(Errno::PERM)?;
            sockets::perform(listener, held.id, loopback, held.pid, &process, &memory, call)
        }
        (request::Call::Shm(call), _) => {
            shm::perform(listener, held.id, &grants.shm, held.pid, &memory, call)
        }
        (request::Call::Socket(_), None) | (request::Call::Session(_), _) => Err(Errno::PERM),
    }
}

/// The holding thread's `/proc` folder, opened once: what is read through it afterwards is that
/// thread's, whatever process later takes its number.
fn open_process(tid: u32) -> Result<OwnedFd, Errno> {
    use rustix::fs::{Mode, OFlags};
    rustix::fs::open(
        format!("/proc/{tid}"),
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|_| Errno::PERM)
}

/// Runs `f` with no effective capability on this thread (a root helper's are set aside and put
/// back), so the kernel checks what `f` does against the program's rights, which has none.
fn without_capabilities<T>(f: impl FnOnce() -> Result<T, Errno>) -> Result<T, Errno> {
    use rustix::thread::{CapabilitySet, CapabilitySets};
    let held = rustix::thread::capabilities(None).map_err(|_| Errno::PERM)?;
    if held.effective.is_empty() {
        return f();
    }
    let lowered = CapabilitySets { effective: CapabilitySet::empty(), ..held };
    rustix::thread::set_capabilities(None, lowered).map_err(|_| Errno::PERM)?;
    let result = f();
    // Put back for the helper's own work (as root: reaping, removing the call's tmp folder).
    if rustix::thread::set_capabilities(None, held).is_err() {
        // A helper that cannot take its capabilities back goes on without them: less, never more.
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listener_is_done_once_no_process_uses_the_filter() {
        use crate::sandbox::seccomp::{self, Metadata, Network, SeccompPolicy, Sessions};
        let filter = seccomp::build(SeccompPolicy {
            network: Network::None,
            metadata: Metadata::Notified,
            ipc: false,
            openat2: false,
            sessions: Sessions::Held,
        });
        let channel = Channel::new().unwrap();
        // SAFETY: the child makes only system calls (prctl, seccomp, sendmsg, close, _exit) on
        // what was made before the fork, and never returns into the test harness.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let sent = crate::sys::install_seccomp_filter_with_listener(&filter)
                .ok()
                .is_some_and(|listener| channel.send_listener(&listener).is_ok());
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
        let grants =
            Grants { write_roots: Vec::new(), holes: Vec::new(), never_granted, connects: None, shm };
        let mut notifier = Notifier::new(grants, channel.into_helper_end().unwrap());
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
