//! A held call's notification, as the kernel gives it (80 bytes of `struct seccomp_notif`), read
//! and decoded: it never panics, a call it cannot name is refused, and what it decodes keeps the
//! numbers the kernel gave (an fd or a directory fd is the argument's low 32 bits). The bytes
//! past the first 80 are a held socket call's address, as the program's memory holds it: decoded
//! without a panic, and only an IPv4 or IPv6 address of the length the kernel takes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lnk::notify::Held;
use lnk::notify::request::{Address, Call, Counted, SocketCall, Target, decode_call};
use lnk::notify::sockets::parse_sockaddr;
use lnk::notify::unix_sockets::{UnixAddress, parse_address};

/// The x86_64 numbers of the counted calls (the fuzz crate has no `libc` of its own).
mod libc_nr {
    pub const INOTIFY_INIT: i32 = 253;
    pub const INOTIFY_ADD_WATCH: i32 = 254;
    pub const INOTIFY_INIT1: i32 = 294;
    pub const SOCKET: i32 = 41;
    pub const IOCTL: i32 = 16;
}

fuzz_target!(|data: &[u8]| {
    let mut raw = [0u8; 80];
    let n = data.len().min(80);
    raw[..n].copy_from_slice(&data[..n]);
    let held = Held::parse(&raw);
    let low = |fd: i32| held.args.iter().any(|a| *a as u32 as i32 == fd);
    match decode_call(i64::from(held.nr), held.args) {
        Ok(Call::Metadata(request)) => match request.target {
            Target::Fd(fd) => assert!(low(fd)),
            Target::Path { dirfd, path, .. } => {
                assert!(dirfd == -100 || low(dirfd));
                assert!(held.args.contains(&path));
            }
        },
        Ok(Call::Socket(SocketCall::Connect(Address { fd, address, len })))
        | Ok(Call::Socket(SocketCall::Bind(Address { fd, address, len }))) => {
            assert!(low(fd) && low(len) && held.args.contains(&address));
        }
        Ok(Call::Socket(SocketCall::Listen { fd, backlog })) => assert!(low(fd) && low(backlog)),
        Ok(Call::Socket(SocketCall::Name { fd, address, len })) => {
            assert!(low(fd) && held.args.contains(&address) && held.args.contains(&len));
        }
        Ok(Call::Session(name)) => assert!(name == "setsid" || name == "setpgid"),
        // A shared-memory open or unlink: its path is the program's, read later from its memory.
        Ok(Call::Shm(_)) => {}
        // An inotify instance: counted by its numbers alone.
        Ok(Call::Counted(what)) => {
            let counted = [libc_nr::INOTIFY_INIT, libc_nr::INOTIFY_INIT1];
            assert!(counted.contains(&held.nr), "{what:?} from {}", held.nr);
            match what {
                Counted::Instance { flags } => assert!(flags == 0 || held.args.contains(&flags)),
                Counted::Watch => panic!("a watch is a call of its own"),
                Counted::Task => panic!("a task is never held"),
            }
        }
        // A terminal's peer: a descriptor and flags in registers.
        Ok(Call::PtyPeer { fd, flags }) => {
            assert!(held.nr == libc_nr::IOCTL && low(fd) && u64::from(flags) == held.args[2] & 0xffff_ffff);
        }
        // A UDP socket: refused from its number alone.
        Ok(Call::Udp) => assert_eq!(held.nr, libc_nr::SOCKET),
        // A pid in a register, answered from it.
        Ok(Call::Pid(pid)) => assert!(low(pid)),
        // A memfd: its name is the program's, read later from its memory.
        Ok(Call::Memfd { name, flags }) => {
            assert!(held.args.contains(&name) && u64::from(flags) == held.args[1] & 0xffff_ffff);
        }
        // A watch: its path is the program's, read later from its memory.
        Ok(Call::Watch { fd, path, mask }) => {
            assert_eq!(held.nr, libc_nr::INOTIFY_ADD_WATCH);
            assert!(low(fd) && held.args.contains(&path) && u64::from(mask) == held.args[2] & 0xffff_ffff);
        }
        Err(_) => {}
    }
    let address = &data[n..];
    let len = held.args[2] as u32 as usize;
    let read = &address[..address.len().min(28).min(len)];
    if let Ok(parsed) = parse_sockaddr(read, len) {
        let needed = if parsed.is_ipv4() { 16 } else { 24 };
        assert!(read.len() >= needed && len >= needed);
    }
    // A Unix address: a path is the bytes before the first NUL (none in it, never empty), an
    // abstract name every byte after the family, its leading NUL included.
    let unix = &address[..address.len().min(110)];
    match parse_address(unix) {
        Ok(UnixAddress::Path(path)) => assert!(!path.is_empty() && !path.contains(&0)),
        Ok(UnixAddress::Abstract(name)) => assert!(name.first() == Some(&0) && name.len() == unix.len() - 2),
        Ok(UnixAddress::Unnamed) => assert_eq!(unix.len(), 2),
        Err(_) => assert!(unix.len() < 2 || u16::from_ne_bytes([unix[0], unix[1]]) != 1),
    }
});
