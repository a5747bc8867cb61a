//! The own world's network namespace, made by the keeper while the world's pid 1 builds the
//! mounts, instead of by the `clone` that starts pid 1.
//!
//! Why. A network namespace is the dearest namespace to make: the kernel registers its sysctl
//! tables and its loopback device, about half a millisecond on a 2-core VM, a tenth of an
//! own-world launch (`bench/README.md`). Made by the world's `clone`, it came before all of pid
//! 1's work; pid 1's mounts (another half millisecond) need no network. So the keeper clones pid
//! 1 into new user, mount, IPC and pid namespaces only, and then, on the other processor, makes
//! the network namespace inside pid 1's user namespace and hands it over; pid 1 joins it once
//! its mounts are made ([`join_from_keeper`]), before anything of the call's uses a network.
//!
//! The keeper may make a network namespace owned by pid 1's user namespace because it owns that
//! user namespace (the caller made it): it joins it (`setns` on a pidfd of pid 1, its own
//! unreaped child), as the owner's process may, then
//! `unshare`s the network namespace there and brings its loopback up. The keeper stays outside
//! the world's pid namespace, where no process of the call can name it, and runs nothing of the
//! call's. Where lnk is root (no user namespace), it makes the network namespace as root.
//!
//! The namespace crosses on a socket pair of the keeper and pid 1's own, made before the `clone`
//! and close-on-exec; pid 1 closes its end once it has joined, before the program exists. A
//! keeper that could not make it says why on the failure pipe, as for a `clone` the kernel
//! refused, and ends; pid 1 (which holds only its own end) sees the pair's end and fails too. So
//! the program never runs without a network namespace of its own, and nothing waits. The mode's
//! probe makes a network namespace too (see [`super::mode::probe`]), so a kernel that refuses one
//! gets the Landlock-only mode, as before.
//!
//! Trusted with: the world's network namespace being new, the call's own, and the one pid 1 and
//! the program are in. What it trusts: the kernel's `setns`, `unshare` and `/proc/<pid>/ns`.

use std::io::IoSliceMut;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd as _, OwnedFd};

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags, SocketFlags, SocketType,
};
use rustix::process::Pid;
use rustix::thread::{LinkNameSpaceType, ThreadNameSpaceType};

/// The socket pair the network namespace crosses: the keeper's end and pid 1's.
pub fn pair() -> Result<(OwnedFd, OwnedFd), Errno> {
    rustix::net::socketpair(AddressFamily::UNIX, SocketType::SEQPACKET, SocketFlags::CLOEXEC, None)
}

/// In the keeper, once pid 1 (`world`) is cloned: joins its user namespace (unless lnk is root),
/// makes a network namespace there, brings its loopback up and sends it to pid 1. The keeper is
/// then in that network namespace (and user namespace) itself; it uses neither.
pub fn make_for_world(world: Pid, user_namespace: bool, to_world: &OwnedFd) -> Result<(), Errno> {
    if user_namespace {
        // By a pidfd of pid 1, the keeper's own child (unreaped, so its number is its own): no
        // path through a `/proc` that may not be this pid namespace's.
        let world = rustix::process::pidfd_open(world, rustix::process::PidfdFlags::empty())?;
        rustix::thread::move_into_thread_name_spaces(world.as_fd(), ThreadNameSpaceType::USER)?;
    }
    crate::sys::unshare(libc::CLONE_NEWNET).map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::INVAL))?;
    crate::sys::bring_loopback_up().map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::INVAL))?;
    let net = rustix::fs::open(c"/proc/self/ns/net", OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())?;
    let fds = [net.as_fd()];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
        return Err(Errno::NOBUFS);
    }
    rustix::net::sendmsg(to_world, &[std::io::IoSlice::new(b"N")], &mut control, SendFlags::empty())?;
    Ok(())
}

/// In pid 1, once its mounts are made: waits for the keeper's network namespace and joins it.
pub fn join_from_keeper(from_keeper: OwnedFd) -> Result<(), &'static str> {
    let refused = "cannot make the call's network namespace";
    let mut byte = [0u8; 1];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let received = loop {
        match rustix::net::recvmsg(
            &from_keeper,
            &mut [IoSliceMut::new(&mut byte)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        ) {
            Err(Errno::INTR) => continue,
            other => break other,
        }
    };
    let mut fds: Vec<OwnedFd> = Vec::new();
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(rights) = message {
            fds.extend(rights);
        }
    }
    let net = match (received, fds.pop(), fds.is_empty()) {
        (Ok(r), Some(net), true) if r.bytes == 1 && byte == *b"N" => net,
        _ => return Err(refused),
    };
    rustix::thread::move_into_link_name_space(net.as_fd(), Some(LinkNameSpaceType::Network))
        .map_err(|_| refused)
}
