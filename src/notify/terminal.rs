//! Terminals in the Landlock-only mode: pty pairs of the call's own, made by the helper in the
//! host's devpts instance (without a mount namespace there is no instance of the call's own).
//!
//! The host's `/dev/pts` holds the person's terminals, and Landlock cannot tell the call's pairs
//! there from theirs; a pair's master is made by opening `/dev/ptmx`, and every pair made draws
//! from the machine's pool (`kernel.pty.max`), which the person's terminals share. So the
//! program is granted neither (see [`crate::protected::device_grant`]), and:
//!
//! - an open of `/dev/ptmx` is made by the server ([`open_master`]): seccomp holds the opens that
//!   may be `posix_openpt`'s (`O_NOCTTY`, which musl and most callers give, or exactly `O_RDWR`,
//!   glibc's `getpt` behind `openpty` and `forkpty`; a filter cannot read the path), and the
//!   server, whose Landlock lets it open `/dev/ptmx` and nothing else of `/dev`, makes the master,
//!   notes its pair by number and its peer's birth time, and puts it in the program as the
//!   call's answer. At most [`MAX_PAIRS`] of the call's pairs live at once (`ENOSPC` past them,
//!   as the kernel answers past `kernel.pty.max`, named in the report);
//! - `ioctl(master, TIOCGPTPEER, flags)` (how glibc's `openpty` asks for the peer: by no path) is
//!   answered by the receiver ([`open_peer`]), on a copy of the program's descriptor
//!   (`pidfd_getfd`), only for a pair the helper made for this call (its number, and its peer's
//!   birth time, so a number the person's terminal took since is not it): the peer is opened with
//!   `O_NOCTTY` (the helper takes no terminal) and put in the program. The receiver does it, not
//!   the server: the kernel checks the peer's open against the opener's Landlock domain, and the
//!   server's grants no `/dev/pts`.
//!
//! A terminal of the person's is never opened, read or written for the program: no path to one is
//! granted, and a master the program did not get from the helper (one passed in as a standard
//! stream) gets no peer (`EPERM`, named). A program that opens a peer by its path
//! (`ptsname`, then `open`) is refused by Landlock: only `TIOCGPTPEER` works here.
//!
//! Trusted with: which pairs are the call's. What it trusts: the kernel's devpts (a pair's number
//! is unique while its master is open, and its peer's node is made with the pair) and the copy
//! `pidfd_getfd` gives.

use std::os::fd::{AsFd as _, BorrowedFd, OwnedFd};
use std::sync::Mutex;

use rustix::io::Errno;
use rustix::pty::OpenptFlags;

/// The most terminals (pty pairs) a call holds at once, in either mode (the own world's devpts
/// instance has this `max`). Every pair made draws from the machine's pool (`kernel.pty.max`),
/// which the person's terminals and containers' share.
pub const MAX_PAIRS: usize = 16;

/// `/dev/ptmx`'s device number (major 5, minor 2): every pty master is this device.
const PTMX: (u32, u32) = (5, 2);

/// A pair the helper made: its number (`/dev/pts/N`) and its peer's birth time (the node's
/// change time, set when the pair is made).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pair {
    number: u32,
    born: (i64, u64),
}

impl Pair {
    /// The pair numbered `number` as it is now, if its peer's node is there.
    fn now(number: u32) -> Option<Pair> {
        let node = rustix::fs::stat(format!("/dev/pts/{number}")).ok()?;
        Some(Pair { number, born: (node.st_ctime, node.st_ctime_nsec as u64) })
    }

    /// Whether this pair still lives (its number not freed, nor taken again since).
    fn lives(self) -> bool {
        Pair::now(self.number) == Some(self)
    }
}

/// The pairs the helper made for the call.
#[derive(Debug, Default)]
pub struct Pairs {
    made: Mutex<Vec<Pair>>,
}

impl Pairs {
    fn made(&self) -> std::sync::MutexGuard<'_, Vec<Pair>> {
        self.made.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether `pair` is one the helper made for the call.
    fn holds(&self, pair: Pair) -> bool {
        self.made().contains(&pair)
    }
}

/// Whether an open of `path` (relative to `dirfd`) is of `/dev/ptmx`, as `posix_openpt` spells it.
pub fn names_ptmx(dirfd: i32, path: &[u8]) -> bool {
    dirfd == super::request::AT_FDCWD && path == b"/dev/ptmx"
}

/// Makes a pair's master for a held open of `/dev/ptmx` with the program's `flags` (its
/// `O_NONBLOCK` and close-on-exec kept), and puts it in the program as the call's answer.
/// `ENOSPC` past [`MAX_PAIRS`] live pairs (`bounded` is then set).
pub fn open_master(
    listener: BorrowedFd<'_>,
    id: u64,
    pairs: &Pairs,
    flags: u32,
    bounded: &mut bool,
) -> Result<(), Errno> {
    let mut made = pairs.made();
    made.retain(|pair| pair.lives());
    if made.len() >= MAX_PAIRS {
        *bounded = true;
        return Err(Errno::NOSPC);
    }
    let master = rustix::pty::openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC)?;
    let number = number_of(&master)?;
    let pair = Pair::now(number).ok_or(Errno::IO)?;
    if flags & libc::O_NONBLOCK as u32 != 0 {
        rustix::fs::fcntl_setfl(&master, rustix::fs::OFlags::NONBLOCK)?;
    }
    let cloexec = flags & libc::O_CLOEXEC as u32 != 0;
    crate::sys::seccomp_notif_send_fd(listener, id, master.as_fd(), cloexec)?;
    made.push(pair);
    Ok(())
}

/// Opens the peer of `master` (a copy of the program's descriptor) for a held
/// `ioctl(fd, TIOCGPTPEER, flags)`, if it is a pair the helper made for the call. `ENOTTY` for
/// a descriptor that is no pty master (as the kernel answers); `EPERM` for a master of another's
/// (`foreign` is then set).
pub fn open_peer(master: &OwnedFd, pairs: &Pairs, flags: u32, foreign: &mut bool) -> Result<OwnedFd, Errno> {
    let stat = rustix::fs::fstat(master)?;
    let is_master = rustix::fs::FileType::from_raw_mode(stat.st_mode)
        == rustix::fs::FileType::CharacterDevice
        && (rustix::fs::major(stat.st_rdev), rustix::fs::minor(stat.st_rdev)) == PTMX;
    if !is_master {
        return Err(Errno::NOTTY);
    }
    let number = number_of(master)?;
    if !Pair::now(number).is_some_and(|pair| pairs.holds(pair)) {
        *foreign = true;
        return Err(Errno::PERM);
    }
    let kept = (libc::O_ACCMODE | libc::O_NONBLOCK) as u32;
    let flags = OpenptFlags::from_bits_retain(flags & kept) | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC;
    rustix::pty::ioctl_tiocgptpeer(master, flags)
}

/// The number of `master`'s pair (`TIOCGPTN`, as `ptsname` asks it).
fn number_of(master: &OwnedFd) -> Result<u32, Errno> {
    let name = rustix::pty::ptsname(master, Vec::new())?;
    let number = name.to_bytes().strip_prefix(b"/dev/pts/").ok_or(Errno::NOTTY)?;
    std::str::from_utf8(number).ok().and_then(|n| n.parse().ok()).ok_or(Errno::NOTTY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_calls_own_pairs_get_a_peer() {
        let pairs = Pairs::default();
        // A pair of the test's own (not made for the call): a master passed in.
        let Ok(theirs) = rustix::pty::openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC)
        else {
            eprintln!("SKIPPED: no /dev/ptmx here");
            assert!(std::env::var_os("CI").is_none(), "CI has /dev/ptmx");
            return;
        };
        rustix::pty::unlockpt(&theirs).unwrap();
        let mut foreign = false;
        assert_eq!(open_peer(&theirs, &pairs, libc::O_RDWR as u32, &mut foreign).err(), Some(Errno::PERM));
        assert!(foreign);
        // Once noted as the call's, the same master gets its peer.
        pairs.made().push(Pair::now(number_of(&theirs).unwrap()).unwrap());
        let mut foreign = false;
        let peer = open_peer(&theirs, &pairs, libc::O_RDWR as u32, &mut foreign).unwrap();
        let peer_stat = rustix::fs::fstat(&peer).unwrap();
        // A pty peer: one of the majors 136-143 (`UNIX98_PTY_SLAVE_MAJOR`).
        assert!(!foreign && (136..=143).contains(&rustix::fs::major(peer_stat.st_rdev)));
        // A file is no master.
        let file = std::fs::File::open("/dev/null").unwrap();
        let file = OwnedFd::from(file);
        assert_eq!(open_peer(&file, &pairs, 0, &mut foreign).err(), Some(Errno::NOTTY));
        // A pair closed is no longer the call's, whatever takes its number next.
        let number = number_of(&theirs).unwrap();
        drop(peer);
        drop(theirs);
        assert!(!pairs.made().iter().any(|p| p.number == number && p.lives()));
        assert!(
            names_ptmx(-100, b"/dev/ptmx")
                && !names_ptmx(3, b"/dev/ptmx")
                && !names_ptmx(-100, b"/dev/pts/ptmx")
        );
    }
}
