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

/// A pair the helper made: its serial (its epoll entries' data), its number (`/dev/pts/N`) and
/// its peer's node as it was made (device, inode and change time: a number taken again since, or
/// the same number in another devpts instance, is another node).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pair {
    serial: u64,
    number: u32,
    /// The `ptmx` its master was made by (its device and inode: `/dev/ptmx`'s).
    ptmx: (u64, u64),
    node: Node,
}

/// A peer's node: its device, inode and change time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Node {
    device: u64,
    inode: u64,
    changed: (i64, u64),
}

impl Node {
    fn of(stat: &rustix::fs::Stat) -> Node {
        Node { device: stat.st_dev, inode: stat.st_ino, changed: (stat.st_ctime, stat.st_ctime_nsec) }
    }

    /// The node of the pair numbered `number` in the host's instance, if it is there.
    fn at(number: u32) -> Option<Node> {
        rustix::fs::stat(format!("/dev/pts/{number}")).ok().map(|stat| Node::of(&stat))
    }
}

/// The pairs the helper made for the call, and an epoll set that knows which still live: each
/// master and peer the helper makes is entered there with its pair's serial, and an epoll entry
/// holds no reference, so the kernel drops it with its file's last one. A pair lives while any
/// of its files does (a peer kept after its master closed keeps the pair's number taken), which
/// the entries left say exactly (see [`super::inotify`], which counts instances the same way).
#[derive(Debug, Default)]
pub struct Pairs {
    made: Mutex<Vec<Pair>>,
    live: std::sync::OnceLock<OwnedFd>,
    serials: std::sync::atomic::AtomicU64,
}

impl Pairs {
    fn made(&self) -> std::sync::MutexGuard<'_, Vec<Pair>> {
        self.made.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The epoll set, made at first use.
    fn live(&self) -> Result<BorrowedFd<'_>, Errno> {
        if let Some(live) = self.live.get() {
            return Ok(live.as_fd());
        }
        let made = rustix::event::epoll::create(rustix::event::epoll::CreateFlags::CLOEXEC)?;
        Ok(self.live.get_or_init(|| made).as_fd())
    }

    /// Enters `file` (a master or peer of `pair`) in the epoll set.
    fn enter(&self, pair: &Pair, file: &OwnedFd) -> Result<(), Errno> {
        let data = rustix::event::epoll::EventData::new_u64(pair.serial);
        rustix::event::epoll::add(self.live()?, file, data, rustix::event::epoll::EventFlags::empty())
    }

    /// Forgets the pairs none of whose files lives, reading the epoll set's entries through
    /// `fdinfo` (the helper's `/proc/self/fdinfo`).
    fn forget_ended(&self, made: &mut Vec<Pair>, fdinfo: BorrowedFd<'_>) -> Result<(), Errno> {
        let live = self.live()?;
        let name = std::os::fd::AsRawFd::as_raw_fd(&live).to_string();
        let info = rustix::fs::openat(
            fdinfo,
            name,
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )?;
        let mut text = Vec::new();
        std::io::Read::read_to_end(&mut std::fs::File::from(info), &mut text)
            .map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::IO))?;
        let serials = super::inotify::live_numbers(&text);
        made.retain(|pair| serials.contains(&pair.serial));
        Ok(())
    }
}

/// How long a pair past the bound waits for the closer before it is refused.
const SETTLE: std::time::Duration = std::time::Duration::from_millis(50);

/// Whether an open of `path` (relative to `dirfd`) is of `/dev/ptmx`, as `posix_openpt` spells it.
pub fn names_ptmx(dirfd: i32, path: &[u8]) -> bool {
    dirfd == super::request::AT_FDCWD && path == b"/dev/ptmx"
}

/// Makes a pair's master for a held open of `/dev/ptmx` with the program's `flags` (its
/// `O_NONBLOCK` and close-on-exec kept), and puts it in the program as the call's answer.
/// `ENOSPC` past [`MAX_PAIRS`] live pairs, or where they cannot be counted (`bounded` is then
/// set); `fdinfo` is the helper's `/proc/self/fdinfo`, where they are counted.
pub fn open_master(
    listener: BorrowedFd<'_>,
    id: u64,
    (pairs, fdinfo): (&Pairs, Option<BorrowedFd<'_>>),
    flags: u32,
    bounded: &mut bool,
) -> Result<(), Errno> {
    let mut made = pairs.made();
    // Counted or refused: a pair that cannot be counted is not made.
    let counted = fdinfo.ok_or(Errno::NOSPC).and_then(|fdinfo| pairs.forget_ended(&mut made, fdinfo));
    if let Err(e) = counted {
        *bounded = true;
        return Err(e);
    }
    if made.len() >= MAX_PAIRS {
        // A pair the program closed may live on only in a copy of its master the closer has
        // yet to close (see `super::closer::settle`): given a moment, then counted again. The
        // pairs are let go meanwhile: the receiver looks at them for a peer.
        drop(made);
        super::closer::settle(SETTLE);
        made = pairs.made();
        if let Some(fdinfo) = fdinfo {
            pairs.forget_ended(&mut made, fdinfo)?;
        }
    }
    if made.len() >= MAX_PAIRS {
        *bounded = true;
        return Err(Errno::NOSPC);
    }
    let master = rustix::pty::openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC)?;
    let number = number_of(&master)?;
    let node = Node::at(number).ok_or(Errno::IO)?;
    let serial = pairs.serials.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let made_by = rustix::fs::fstat(&master)?;
    let pair = Pair { serial, number, ptmx: (made_by.st_dev, made_by.st_ino), node };
    pairs.enter(&pair, &master)?;
    if flags & libc::O_NONBLOCK as u32 != 0 {
        rustix::fs::fcntl_setfl(&master, rustix::fs::OFlags::NONBLOCK)?;
    }
    let cloexec = flags & libc::O_CLOEXEC as u32 != 0;
    crate::sys::seccomp_notif_send_fd(listener, id, master.as_fd(), cloexec)?;
    made.push(pair);
    Ok(())
}

/// Opens the peer of `master` (a copy of the program's descriptor) for a held
/// `ioctl(fd, TIOCGPTPEER, flags)`, if it is a pair the helper made for the call: its number
/// noted, and the peer opened the very node the helper saw made (a master of another devpts
/// instance with the same number opens another node). `ENOTTY` for a descriptor that is no pty
/// master (as the kernel answers); `EPERM` for a master of another's (`foreign` is then set).
pub fn open_peer(master: &OwnedFd, pairs: &Pairs, flags: u32, foreign: &mut bool) -> Result<OwnedFd, Errno> {
    let stat = rustix::fs::fstat(master)?;
    let is_master = rustix::fs::FileType::from_raw_mode(stat.st_mode)
        == rustix::fs::FileType::CharacterDevice
        && (rustix::fs::major(stat.st_rdev), rustix::fs::minor(stat.st_rdev)) == PTMX;
    if !is_master {
        return Err(Errno::NOTTY);
    }
    let number = number_of(master)?;
    // Made by the same `ptmx` with the same number: one of the call's, or (a `/dev/ptmx` that
    // finds another instance, in another mount namespace) one the node below tells apart.
    let ptmx = (stat.st_dev, stat.st_ino);
    let Some(pair) = pairs.made().iter().copied().find(|p| p.number == number && p.ptmx == ptmx) else {
        *foreign = true;
        return Err(Errno::PERM);
    };
    let kept = (libc::O_ACCMODE | libc::O_NONBLOCK) as u32;
    let flags = OpenptFlags::from_bits_retain(flags & kept) | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC;
    let peer = rustix::pty::ioctl_tiocgptpeer(master, flags)?;
    if Node::of(&rustix::fs::fstat(&peer)?) != pair.node {
        *foreign = true;
        return Err(Errno::PERM);
    }
    pairs.enter(&pair, &peer)?;
    Ok(peer)
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

    fn fdinfo() -> OwnedFd {
        let dir = rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC;
        rustix::fs::open("/proc/self/fdinfo", dir, rustix::fs::Mode::empty()).unwrap()
    }

    #[test]
    fn only_the_calls_own_pairs_get_a_peer_and_a_pair_lives_while_any_of_its_files_does() {
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
        // Noted as the call's, as `open_master` notes it, the same master gets its peer.
        let number = number_of(&theirs).unwrap();
        let made_by = rustix::fs::fstat(&theirs).unwrap();
        let pair = Pair {
            serial: 7,
            number,
            ptmx: (made_by.st_dev, made_by.st_ino),
            node: Node::at(number).unwrap(),
        };
        pairs.made().push(pair);
        let mut foreign = false;
        let peer = open_peer(&theirs, &pairs, libc::O_RDWR as u32, &mut foreign).unwrap();
        let peer_stat = rustix::fs::fstat(&peer).unwrap();
        // A pty peer: one of the majors 136-143 (`UNIX98_PTY_SLAVE_MAJOR`).
        assert!(!foreign && (136..=143).contains(&rustix::fs::major(peer_stat.st_rdev)));
        // The same number with another node (another devpts instance's pair, or the number
        // taken again since) is not the call's.
        pairs.made()[0].node.inode ^= 1;
        assert_eq!(open_peer(&theirs, &pairs, libc::O_RDWR as u32, &mut foreign).err(), Some(Errno::PERM));
        assert!(foreign);
        pairs.made()[0].node.inode ^= 1;
        // A file is no master.
        let file = OwnedFd::from(std::fs::File::open("/dev/null").unwrap());
        assert_eq!(open_peer(&file, &pairs, 0, &mut false).err(), Some(Errno::NOTTY));
        // The pair lives while its peer does, its master closed (the number stays taken)...
        drop(theirs);
        let fdinfo = fdinfo();
        let mut made = pairs.made().clone();
        pairs.forget_ended(&mut made, fdinfo.as_fd()).unwrap();
        assert_eq!(made.len(), 1, "a peer kept alive keeps its pair counted");
        // ...and ends with its last file.
        drop(peer);
        pairs.forget_ended(&mut made, fdinfo.as_fd()).unwrap();
        assert!(made.is_empty());
        assert!(
            names_ptmx(-100, b"/dev/ptmx")
                && !names_ptmx(3, b"/dev/ptmx")
                && !names_ptmx(-100, b"/dev/pts/ptmx")
        );
    }
}
