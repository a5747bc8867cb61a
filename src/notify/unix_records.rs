//! The Unix sockets the Landlock-only mode's helper bound for the program: each one's socket
//! (inode and cookie), its file held open, and the address the program asked for. Kept by the
//! held calls' server, used by [`super::unix_sockets`] (which binds and connects) and named in
//! [`super::Grants`].
//!
//! What it trusts: nothing; it only keeps what the binds recorded.

use std::cell::RefCell;
use std::os::fd::OwnedFd;
use std::path::PathBuf;

/// The sockets the helper bound for the call, kept by the held calls' server.
pub struct UnixSockets {
    /// The call's tmp folder, where the abstract names' files are.
    pub(super) tmp: PathBuf,
    /// Whether the server has a working folder of its own, where it binds (see
    /// [`UnixSockets::set_own_folder`]).
    pub(super) own_folder: bool,
    pub(super) state: RefCell<State>,
}

#[derive(Default)]
pub(super) struct State {
    pub(super) bound: Vec<Bound>,
    /// The folder of the abstract names' files, made at the first such bind.
    pub(super) abstract_folder: Option<OwnedFd>,
    /// The next abstract name's file.
    pub(super) next: u64,
}

/// A socket the helper bound for the program.
pub(super) struct Bound {
    /// The socket: its inode and cookie (which tell it from a later socket of the same inode).
    pub(super) inode: u64,
    pub(super) cookie: u64,
    /// Its socket file, held open so its inode stays this file's; and that file's device and
    /// inode.
    pub(super) file: OwnedFd,
    pub(super) id: (u64, u64),
    /// Where the kernel's socket diagnostics said the socket is bound (its device as the kernel
    /// keeps it, which on btrfs is not the one `stat` gives; and the file's inode).
    pub(super) vfs: (u32, u32),
    /// The address the program asked for, as the kernel would tell it (for `getsockname`).
    pub(super) asked: Vec<u8>,
    /// The abstract name it was bound by, if it was.
    pub(super) abstract_name: Option<Vec<u8>>,
}

impl UnixSockets {
    pub fn new(tmp: PathBuf) -> UnixSockets {
        UnixSockets { tmp, own_folder: false, state: RefCell::new(State::default()) }
    }

    /// Says whether the server thread has a working folder of its own (`unshare(CLONE_FS)`):
    /// without one, a bind would move the whole helper's, so none is made.
    pub fn set_own_folder(&mut self, own: bool) {
        self.own_folder = own;
    }

    /// The address the program bound the socket `inode` to, if the helper bound it.
    pub(super) fn asked(&self, inode: u64) -> Option<Vec<u8>> {
        self.state.borrow().bound.iter().find(|b| b.inode == inode).map(|b| b.asked.clone())
    }
}
