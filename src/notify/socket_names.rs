//! The sockets the helper named for the program (in the Landlock-only mode), so that a
//! `getsockname` of any other goes on into the kernel from the receiver, without a hand-over.
//!
//! Why. The Landlock-only mode holds every `getsockname`: a socket the helper bound or made a
//! listener for in the program's place must tell the address the program asked for (see
//! [`super::sockets`], [`super::unix_sockets`]), and a filter cannot tell which socket a
//! descriptor is. Every other socket's call goes on, and the kernel tells the program of a
//! socket of its own. Programs ask it often (Python asks it of each connection it accepts), and
//! handing each one to the server cost a hand-over and two wake-ups (bench/README.md).
//!
//! What it keeps: the inode of each socket the helper named, noted by the server when it puts
//! one at the program's descriptor, and never forgotten, so the set is a superset of the named
//! sockets alive: a socket found in it is handed over, and the server decides exactly, as
//! before. Past [`MAX_NOTED`] sockets, every call is handed over.
//!
//! Trusted with: nothing beyond speed. A socket wrongly missing from the set would tell the
//! program the address the helper chose in its place (the call's loopback address, its port)
//! rather than the one it asked for: its own socket, nothing of the host's.

use std::collections::HashSet;
use std::sync::Mutex;

/// The most sockets noted; past it, the set answers "maybe" for every socket.
const MAX_NOTED: usize = 1 << 16;

#[derive(Default)]
pub(super) struct SocketNames {
    noted: Mutex<Noted>,
}

#[derive(Default)]
struct Noted {
    inodes: HashSet<u64>,
    full: bool,
}

impl SocketNames {
    /// Notes that the socket `inode` was named by the helper.
    pub(super) fn note(&self, inode: u64) {
        let mut noted = self.noted.lock().unwrap_or_else(|e| e.into_inner());
        if noted.inodes.len() >= MAX_NOTED {
            noted.full = true;
        } else {
            noted.inodes.insert(inode);
        }
    }

    /// Whether the socket `inode` may have been named by the helper.
    pub(super) fn may_have_named(&self, inode: u64) -> bool {
        let noted = self.noted.lock().unwrap_or_else(|e| e.into_inner());
        noted.full || noted.inodes.contains(&inode)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_noted_socket_may_be_named_and_past_the_bound_every_socket_may() {
        let names = SocketNames::default();
        assert!(!names.may_have_named(7));
        names.note(7);
        assert!(names.may_have_named(7) && !names.may_have_named(8));
        for inode in 100..100 + MAX_NOTED as u64 {
            names.note(inode);
        }
        assert!(names.may_have_named(8), "past the bound, nothing is let go on unasked");
    }
}
