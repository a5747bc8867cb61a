//! The network door: namespaces of the program's own whose only way out is the call's proxy.
//!
//! Landlock's TCP rules are by port only, so alone they cannot say "this host and nothing
//! else": a program allowed to connect to the proxy's port could connect to that port anywhere.
//! So the program's child, before it enters Landlock and seccomp, makes a network namespace of
//! its own (with the call's own world, [`crate::sandbox::world`], which makes the namespaces;
//! this module fills the network one):
//!
//! ```text
//! program's netns: lo only (127.0.0.0/8, ::1), brought up by the child
//!   127.0.0.1:3128     the proxy's listening socket   ──(fd passed to the helper)──> proxy threads
//!   127.77.0.N:PORT    one per `tcp` endpoint name     ──(fd passed to the helper)──> forwarders
//!   ADDRESS:PORT       one per `tcp` endpoint address  ──(fd passed to the helper)──> forwarders
//! ```
//!
//! The listening sockets are made inside the namespace and handed to the helper over a
//! close-on-exec `SOCK_SEQPACKET` pair (one descriptor per message, `SCM_RIGHTS`), so the helper
//! accepts connections that were made in the program's namespace and connects out from its own.
//! There is no route, interface or address in the namespace but loopback: a connect anywhere
//! else fails with `ENETUNREACH`, UDP and every other socket kind are refused by seccomp, and the
//! host's abstract Unix sockets belong to the host's network namespace, not this one.
//!
//! For clients that know no proxy (psql, ssh, nc), each `tcp` endpoint given by name gets a
//! loopback address of its own (127.77.0.N), and a mount namespace shows the program an
//! `/etc/hosts` that maps the name to it. An endpoint given as an address gets that very address
//! on the namespace's loopback (a /32 or /128), so `psql -h 10.0.0.5` reaches its forwarder.
//!
//! What it trusts: the kernel's namespaces, made by the call's own world (a user namespace
//! mapping the caller to itself, setgroups denied, so it gains no power over anything outside);
//! Landlock (which refuses mounts) and seccomp (which refuses namespace calls) then close the rest
//! before `execve`.

use std::ffi::CString;
use std::mem::MaybeUninit;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::os::fd::{AsFd as _, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;

use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags, SocketFlags, SocketType,
};

use crate::flags::InternetFlags;
use crate::sandbox_file::TcpHost;

/// The proxy's port inside the program's namespace. Any port would do: nothing else listens
/// there. 3128 is the one people recognise as a proxy's.
pub const PROXY_PORT: u16 = 3128;

/// How long the helper waits for the program's child to hand over the listening sockets.
const RECEIVE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The most `tcp` endpoints by name a sandbox may have: each gets an address in 127.77.0.1–254.
pub const MAX_NAMED_ENDPOINTS: usize = 254;
/// The most `tcp` endpoint addresses a sandbox may have (each is an alias `lo:N` of loopback).
pub const MAX_ADDRESS_ENDPOINTS: usize = 254;

/// Where the child briefly mounts a tmpfs to make the hosts file in: the call's private tmp
/// folder, which is in the program's mount namespace and shows again once the tmpfs is detached.
struct HostsFile {
    contents: Vec<u8>,
    scratch_dir: CString,
    scratch_file: CString,
}

/// What a listening socket in the program's namespace is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listener {
    /// The HTTP proxy (CONNECT and absolute-URI requests).
    Proxy,
    /// A plain TCP forwarder to this `tcp` endpoint.
    Forward { host: String, port: u16 },
}

/// Everything the child needs, computed in the helper before the fork.
struct DoorPlan {
    /// Where each listening socket listens; `kinds[i]` is what `addresses[i]` is for.
    addresses: Vec<SocketAddr>,
    /// Addresses of `tcp` endpoints to put on the namespace's loopback first (those not already
    /// loopback addresses).
    loopback_aliases: Vec<IpAddr>,
    /// The `/etc/hosts` the program sees, when a `tcp` endpoint is given by name.
    hosts_file: Option<HostsFile>,
}

/// The door, prepared in the helper: the plan and both ends of the descriptor-passing pair.
pub struct Door {
    plan: DoorPlan,
    kinds: Vec<Listener>,
    child_end: Option<OwnedFd>,
    helper_end: OwnedFd,
}

impl Door {
    /// Plans the door for these `[internet]` flags. Starts nothing.
    /// `scratch` is the call's private tmp folder (see [`HostsFile`]).
    pub fn new(net: &InternetFlags, scratch: &Path) -> Result<Door, String> {
        let proxy = SocketAddr::from((Ipv4Addr::LOCALHOST, PROXY_PORT));
        let mut addresses = vec![proxy];
        let mut kinds = vec![Listener::Proxy];
        let mut names: Vec<&str> = Vec::new();
        let mut loopback_aliases: Vec<IpAddr> = Vec::new();
        for endpoint in &net.tcp {
            let (address, host) = match &endpoint.host {
                TcpHost::Name(name) => {
                    let index = match names.iter().position(|n| n == name) {
                        Some(i) => i,
                        None => {
                            names.push(name);
                            names.len() - 1
                        }
                    };
                    if names.len() > MAX_NAMED_ENDPOINTS {
                        return Err(format!(
                            "[internet] tcp names more than {MAX_NAMED_ENDPOINTS} hosts; each needs a loopback address of its own"
                        ));
                    }
                    (IpAddr::V4(named_address(index)), name.clone())
                }
                TcpHost::Address(ip) => {
                    if !ip.is_loopback() && !loopback_aliases.contains(ip) {
                        loopback_aliases.push(*ip);
                    }
                    if loopback_aliases.len() > MAX_ADDRESS_ENDPOINTS {
                        return Err(format!(
                            "[internet] tcp lists more than {MAX_ADDRESS_ENDPOINTS} addresses"
                        ));
                    }
                    let host = match ip {
                        IpAddr::V4(v4) => v4.to_string(),
                        IpAddr::V6(v6) => format!("[{v6}]"),
                    };
                    (*ip, host)
                }
            };
            let listen = SocketAddr::new(address, endpoint.port);
            if listen == proxy {
                return Err(format!(
                    "[internet] tcp lists {listen}, where the call's proxy listens in the program's namespace; reach that endpoint by a name instead"
                ));
            }
            if addresses.contains(&listen) {
                continue;
            }
            addresses.push(listen);
            kinds.push(Listener::Forward { host, port: endpoint.port });
        }
        let hosts_file = match names.is_empty() {
            true => None,
            false => {
                let c = |p: &Path| {
                    CString::new(p.as_os_str().as_bytes())
                        .map_err(|_| "a NUL byte in the tmp path".to_owned())
                };
                Some(HostsFile {
                    contents: hosts_file(&names),
                    scratch_dir: c(scratch)?,
                    scratch_file: c(&scratch.join("hosts"))?,
                })
            }
        };
        let (child_end, helper_end) =
            rustix::net::socketpair(AddressFamily::UNIX, SocketType::SEQPACKET, SocketFlags::CLOEXEC, None)
                .map_err(|e| format!("socketpair: {e}"))?;
        Ok(Door {
            plan: DoorPlan { addresses, loopback_aliases, hosts_file },
            kinds,
            child_end: Some(child_end),
            helper_end,
        })
    }

    /// The TCP ports the program may connect to (Landlock's rules): the proxy's and each
    /// forwarder's.
    pub fn ports(&self) -> Vec<u16> {
        let mut ports: Vec<u16> = self.plan.addresses.iter().map(|a| a.port()).collect();
        ports.sort_unstable();
        ports.dedup();
        ports
    }

    /// In the program's child, once the call's world has made the network namespace and before
    /// the sandbox is entered: brings loopback up, listens, and hands the listening sockets to the
    /// helper. Any failure is returned (and the child exits): the program never runs with a door
    /// half made. Returns the hosts file it mounted, if any: a new file, which Landlock must be
    /// told the program may read (the rules made in the helper name the host's `/etc/hosts`).
    pub fn open(&self) -> Result<Option<OwnedFd>, &'static str> {
        let plan = &self.plan;
        let child_end = self.child_end.as_ref().ok_or("the network door was opened twice")?;
        crate::sys::bring_loopback_up().map_err(|_| "cannot bring loopback up")?;
        for (alias, ip) in plan.loopback_aliases.iter().enumerate() {
            match ip {
                IpAddr::V4(v4) => crate::sys::add_loopback_address_v4(*v4, alias as u8 + 1),
                IpAddr::V6(v6) => crate::sys::add_loopback_address_v6(*v6),
            }
            .map_err(|_| "cannot put a tcp endpoint's address on loopback")?;
        }
        for address in &plan.addresses {
            let family = if address.is_ipv4() { AddressFamily::INET } else { AddressFamily::INET6 };
            let socket = rustix::net::socket_with(family, SocketType::STREAM, SocketFlags::CLOEXEC, None)
                .map_err(|_| "cannot make a listening socket")?;
            bind_when_ready(&socket, address)?;
            rustix::net::listen(&socket, 128).map_err(|_| "cannot listen")?;
            let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
            let mut control = SendAncillaryBuffer::new(&mut space);
            let fds = [socket.as_fd()];
            if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
                return Err("cannot pass a listening socket");
            }
            rustix::net::sendmsg(child_end, &[std::io::IoSlice::new(b"L")], &mut control, SendFlags::empty())
                .map_err(|_| "cannot pass a listening socket to the helper")?;
        }
        match &plan.hosts_file {
            Some(hosts) => mount_hosts_file(hosts).map(Some),
            None => Ok(None),
        }
    }

    /// Closes the helper's copy of the child's end, so [`Door::receive`] sees the end of the
    /// stream if the child dies before it sends everything. Call right after the fork.
    pub fn close_child_end(&mut self) {
        self.child_end = None;
    }

    /// In the helper, after the fork: receives the listening sockets, each with what it is for.
    pub fn receive(self) -> Result<Vec<(OwnedFd, Listener)>, String> {
        debug_assert!(self.child_end.is_none(), "close_child_end first, or a dead child hangs this");
        // The child sends at once; a bound keeps a child stuck in the kernel from stalling the
        // helper (the program then simply has no door, and so no network).
        rustix::net::sockopt::set_socket_timeout(
            &self.helper_end,
            rustix::net::sockopt::Timeout::Recv,
            Some(RECEIVE_TIMEOUT),
        )
        .map_err(|e| format!("socket timeout: {e}"))?;
        let mut received = Vec::new();
        for kind in self.kinds {
            let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
            let mut control = RecvAncillaryBuffer::new(&mut space);
            let mut byte = [0u8; 1];
            let got = rustix::net::recvmsg(
                &self.helper_end,
                &mut [std::io::IoSliceMut::new(&mut byte)],
                &mut control,
                RecvFlags::CMSG_CLOEXEC,
            )
            .map_err(|e| format!("receiving the proxy's socket: {e}"))?;
            if got.bytes == 0 {
                return Err("the program's child ended before its network namespace was made".into());
            }
            let fd = control.drain().find_map(|m| match m {
                RecvAncillaryMessage::ScmRights(mut fds) => fds.next(),
                _ => None,
            });
            received.push((fd.ok_or("a message without its socket")?, kind));
        }
        Ok(received)
    }
}

/// Binds `socket` to `address`, waiting for a moment while a just-added IPv6 address is still
/// tentative (the kernel completes loopback's address setup asynchronously; binding meanwhile
/// fails with `EADDRNOTAVAIL`). Waiting here, before `execve`, means the program never starts
/// before its endpoints are there.
fn bind_when_ready(socket: &OwnedFd, address: &SocketAddr) -> Result<(), &'static str> {
    for _ in 0..400 {
        match rustix::net::bind(socket, address) {
            Ok(()) => return Ok(()),
            Err(rustix::io::Errno::ADDRNOTAVAIL) if address.is_ipv6() => {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Err(_) => return Err("cannot bind a listening socket"),
        }
    }
    Err("cannot bind a listening socket: its address never became ready")
}

/// The loopback address of the `index`th `tcp` endpoint name: 127.77.0.1 onwards, a block no one
/// lists by accident.
fn named_address(index: usize) -> Ipv4Addr {
    Ipv4Addr::new(127, 77, 0, 1 + index as u8)
}

/// The `/etc/hosts` of a program with named `tcp` endpoints: loopback, then each name at the
/// address of its forwarders.
fn hosts_file(names: &[&str]) -> Vec<u8> {
    let mut text = String::from("127.0.0.1\tlocalhost\n::1\tlocalhost\n");
    for (i, name) in names.iter().enumerate() {
        text.push_str(&format!("{}\t{name}\n", named_address(i)));
    }
    text.into_bytes()
}

/// Shows the program its hosts file at `/etc/hosts`, in its own mount namespace (made private
/// first, so nothing propagates out): the file is made on a tmpfs mounted for a moment over the
/// call's tmp folder, bind-mounted read-only over `/etc/hosts`, and the tmpfs detached, so
/// nothing of it is left where the program can write. (A memfd cannot be the source: a bind
/// mount's source must be in the caller's mount namespace.)
fn mount_hosts_file(hosts: &HostsFile) -> Result<OwnedFd, &'static str> {
    use rustix::fs::{Mode, OFlags};
    crate::sys::make_mounts_private().map_err(|_| "cannot make the mount namespace private")?;
    crate::sys::mount_small_tmpfs(&hosts.scratch_dir)
        .map_err(|_| "cannot mount a tmpfs for the hosts file")?;
    let file = rustix::fs::open(
        hosts.scratch_file.as_c_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    )
    .map_err(|_| "cannot make the hosts file")?;
    let written = rustix::io::write(&file, &hosts.contents).map_err(|_| "cannot write the hosts file")?;
    if written != hosts.contents.len() {
        return Err("cannot write the hosts file");
    }
    drop(file);
    crate::sys::bind_mount_read_only(&hosts.scratch_file, c"/etc/hosts")
        .map_err(|_| "cannot mount the hosts file")?;
    crate::sys::unmount_detach(&hosts.scratch_dir).map_err(|_| "cannot detach the hosts file's tmpfs")?;
    rustix::fs::open(c"/etc/hosts", OFlags::PATH | OFlags::CLOEXEC, Mode::empty())
        .map_err(|_| "cannot open the mounted hosts file")
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::proxy::test_net as net;

    fn tmp() -> std::path::PathBuf {
        std::path::PathBuf::from("/tmp/lnk-0/call-test")
    }

    #[test]
    fn each_endpoint_gets_a_listener_and_each_name_a_hosts_line() {
        let door = Door::new(
            &net(&[
                "db.example.net:5432",
                "cache.example.net:6379",
                "db.example.net:6432",
                "192.0.2.7:22",
                "[2001:db8::5]:22",
                "127.0.0.1:8080",
            ]),
            &tmp(),
        )
        .unwrap();
        let expected: Vec<SocketAddr> = [
            "127.0.0.1:3128",
            "127.77.0.1:5432",
            "127.77.0.2:6379",
            "127.77.0.1:6432",
            "192.0.2.7:22",
            "[2001:db8::5]:22",
            "127.0.0.1:8080",
        ]
        .iter()
        .map(|a| a.parse().unwrap())
        .collect();
        assert_eq!(door.plan.addresses, expected);
        assert_eq!(door.kinds[3], Listener::Forward { host: "db.example.net".into(), port: 6432 });
        assert_eq!(door.kinds[5], Listener::Forward { host: "[2001:db8::5]".into(), port: 22 });
        // Loopback addresses are already on loopback; the others are added.
        let aliases: Vec<IpAddr> = vec!["192.0.2.7".parse().unwrap(), "2001:db8::5".parse().unwrap()];
        assert_eq!(door.plan.loopback_aliases, aliases);
        let hosts = String::from_utf8(door.plan.hosts_file.as_ref().unwrap().contents.clone()).unwrap();
        assert!(hosts.contains("127.77.0.1\tdb.example.net\n127.77.0.2\tcache.example.net\n"), "{hosts}");
        assert_eq!(door.ports(), vec![22, 3128, 5432, 6379, 6432, 8080]);
        let no_names = Door::new(&net(&["192.0.2.7:22"]), &tmp()).unwrap();
        assert!(no_names.plan.hosts_file.is_none(), "no names, no mount namespace");
        let clash = Door::new(&net(&["127.0.0.1:3128"]), &tmp()).err().unwrap();
        assert!(clash.contains("where the call's proxy listens"), "{clash}");
    }
}
