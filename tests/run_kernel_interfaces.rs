//! `lnk sandbox run`: the seccomp filter and Landlock's scopes, attacked from inside by a
//! hostile Python program making raw system calls. Each call's answer is asserted exactly
//! (EPERM, ENOSYS, a SIGSYS kill), so a call that merely failed for another reason, or a
//! missing tool, can never pass as blocked.
//!
//! System call numbers are x86_64's; on another architecture these tests fail in CI and skip
//! loudly elsewhere.

mod common;
use common::*;

const POLICY: &str = "commands = [\"python3\"]\n[files]\nread = [\"~\"]\nwrite = [\"~/Link/Files\"]\n";

fn x86_64() -> bool {
    require(cfg!(target_arch = "x86_64"), "x86_64 (the tests' system call numbers)")
}

#[test]
fn dangerous_system_calls_are_refused() {
    if !x86_64() {
        return;
    }
    let agent = Agent::new("seccomp", POLICY);
    let reports = agent.python_in_each_mode(
        r#"
for name, nr, args in [
    ("io_uring_setup", 425, (1, 0)),
    ("ptrace", 101, (0, 0, 0, 0)),
    ("process_vm_readv", 310, (os.getppid(), 0, 0, 0, 0, 0)),
    ("bpf", 321, (0, 0, 0)),
    ("userfaultfd", 323, (0,)),
    ("keyctl", 250, (0, 0)),
    ("add_key", 248, (0, 0, 0, 0, 0)),
    ("perf_event_open", 298, (0, 0, -1, -1, 0)),
    ("mount", 165, (0, 0, 0, 0, 0)),
    ("fsopen", 430, (0, 0)),
    ("open_tree", 428, (-100, 0, 0)),
    ("open_tree_attr", 467, (-100, 0, 0, 0, 0)),
    ("move_mount", 429, (-1, 0, -1, 0, 0)),
    ("fsmount", 432, (-1, 0, 0)),
    ("fspick", 433, (-100, 0, 0)),
    ("mount_setattr", 442, (-100, 0, 0, 0, 0)),
    ("umount2", 166, (0, 0)),
    ("pivot_root", 155, (0, 0)),
    ("chroot", 161, (0,)),
    ("unshare_user", 272, (0x10000000,)),
    ("unshare_net", 272, (0x40000000,)),
    ("setns", 308, (0, 0)),
    ("open_by_handle_at", 304, (0, 0, 0)),
    ("name_to_handle_at", 303, (0, 0, 0, 0, 0)),
    ("kexec_load", 246, (0, 0, 0, 0)),
    ("init_module", 175, (0, 0, 0)),
    ("finit_module", 313, (0, 0, 0)),
]:
    say(name, sc(nr, *args))
# A session and a group of its own, each tried in a child of its own (a session leader may not
# make a group, nor a group leader a session).
for name, nr, args in [("setsid", 112, ()), ("setpgid", 109, (0, 0))]:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(w, sc(nr, *args).encode())
        os._exit(0)
    os.waitpid(pid, 0)
    os.close(w)
    say(name, os.read(r, 64).decode())
say("clone3", sc(435, 0, 0))
r = libc.syscall(ctypes.c_long(56), ctypes.c_long(0x10000000 | 17), ctypes.c_long(0), ctypes.c_long(0), ctypes.c_long(0), ctypes.c_long(0))
if r == 0:
    os._exit(0)
say("clone_newuser", "ok" if r >= 0 else errno.errorcode[ctypes.get_errno()])
say("fork", attempt(lambda: os.waitpid(os.fork() or os._exit(0), 0)))
"#,
    );
    for (mode, r) in reports {
        for name in [
            "io_uring_setup",
            "ptrace",
            "process_vm_readv",
            "bpf",
            "userfaultfd",
            "keyctl",
            "add_key",
            "perf_event_open",
            "mount",
            "fsopen",
            "open_tree",
            "open_tree_attr",
            "move_mount",
            "fsmount",
            "fspick",
            "mount_setattr",
            "umount2",
            "pivot_root",
            "chroot",
            "unshare_user",
            "unshare_net",
            "setns",
            "open_by_handle_at",
            "name_to_handle_at",
            "kexec_load",
            "init_module",
            "finit_module",
            "clone_newuser",
        ] {
            assert_eq!(r.said(name), "EPERM", "{mode}: {name}");
        }
        // A session or group of its own, in each mode: the own world's pid namespace ends them
        // all, and without one the helper notes each group and ends it with the call (see
        // `run_lifetime.rs`).
        for name in ["setsid", "setpgid"] {
            assert_eq!(r.said(name), "ok", "{mode}: {name}");
        }
        // clone3 answers ENOSYS so libc falls back to clone, whose flags the filter can read; an
        // ordinary fork still works.
        assert_eq!(r.said("clone3"), "ENOSYS", "{mode}");
        assert_eq!(r.said("fork"), "ok", "{mode}");
    }
}

#[test]
fn terminal_injection_is_refused_with_a_32_bit_compare() {
    if !x86_64() {
        return;
    }
    let agent = Agent::new("tiocsti", POLICY);
    let r = agent.python(
        r#"
buf = ctypes.create_string_buffer(b"x")
addr = ctypes.addressof(buf)
say("tiocsti", sc(16, 0, 0x5412, addr))
say("tiocsti_high_bits", sc(16, 0, (0x123 << 32) | 0x5412, addr))
say("tioclinux", sc(16, 0, 0x541c, addr))
say("other_ioctl", sc(16, 0, 0x5401, addr))
"#,
    );
    r.assert_said("tiocsti", "EPERM");
    r.assert_said("tiocsti_high_bits", "EPERM");
    r.assert_said("tioclinux", "EPERM");
    // An unrelated ioctl reaches the kernel, which answers for /dev/null: not a terminal.
    r.assert_said("other_ioctl", "ENOTTY");
}

#[test]
fn terminal_injection_is_refused_on_a_real_terminal() {
    // With the caller's terminal passed as standard input (--stdin), TIOCSTI would type into it.
    // SAFETY: plain libc calls on descriptors this test owns.
    let (master, slave_path) = unsafe {
        let m = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        assert!(m >= 0);
        assert_eq!(libc::grantpt(m), 0);
        assert_eq!(libc::unlockpt(m), 0);
        let name = std::ffi::CStr::from_ptr(libc::ptsname(m)).to_str().unwrap().to_owned();
        (m, name)
    };
    let agent = Agent::new("pty", POLICY);
    let slave = std::fs::OpenOptions::new().read(true).write(true).open(&slave_path).unwrap();
    let script = format!(
        "{PY_PRELUDE}\nimport fcntl, termios\nsay('isatty', os.isatty(0))\nsay('tiocsti', attempt(lambda: fcntl.ioctl(0, termios.TIOCSTI, b'x')))\nsay('tcgetpgrp', attempt(lambda: os.tcgetpgrp(0)))\n"
    );
    let mut cmd = agent.command(&["--stdin"], &["python3", "-c", &script]);
    cmd.stdin(slave);
    let r = Report::from(run(&mut cmd));
    r.assert_said("isatty", "True");
    r.assert_said("tiocsti", "EPERM");
    // The terminal is not the program's controlling terminal: its session has none.
    r.assert_said("tcgetpgrp", "ENOTTY");
    // SAFETY: closes the master this test opened.
    unsafe { libc::close(master) };
}

#[test]
fn the_x32_bit_and_the_32_bit_table_kill_the_process() {
    if !x86_64() {
        return;
    }
    let agent = Agent::new("x32", POLICY);
    let r = agent.python("sc(39 | 0x40000000)\nsay('survived', 'yes')");
    assert_eq!(r.outcome(), "signaled", "{}", r.raw);
    assert_eq!(r.json["program_signal"], libc::SIGSYS);
    assert!(!r.out().contains("survived"));

    // int 0x80: getpid through the i386 table, which seccomp sees as another architecture.
    let r = agent.python(
        r#"
import mmap
code = bytes([0xb8, 0x14, 0, 0, 0, 0xcd, 0x80, 0xc3])
m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
m.write(code)
addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
ctypes.CFUNCTYPE(ctypes.c_int)(addr)()
say("survived", "yes")
"#,
    );
    assert_eq!(r.outcome(), "signaled", "{}", r.raw);
    assert_eq!(r.json["program_signal"], libc::SIGSYS);
}

#[test]
fn tcp_and_udp_in_a_network_namespace_tcp_on_the_calls_loopback_and_no_other_socket() {
    if !x86_64() {
        return;
    }
    let agent = Agent::new("sockets", POLICY);
    let reports = agent.python_in_each_mode(
        r#"
for name, fam, typ, proto in [
    ("inet_tcp", 2, 1, 0), ("inet_udp", 2, 2, 0), ("inet6_tcp", 10, 1, 0), ("mptcp", 2, 1, 262),
    ("sctp", 2, 1, 132), ("raw_icmp", 2, 3, 1), ("ping", 2, 2, 1), ("unix_stream", 1, 1, 0),
    ("unix_dgram", 1, 2, 0), ("netlink", 16, 3, 0), ("packet", 17, 3, 0), ("vsock", 40, 1, 0),
]:
    say(name, sc(41, fam, typ, proto))
sv = (ctypes.c_int * 2)()
say("pair_stream", sc(53, 1, 1 | 0x80000, 0, ctypes.addressof(sv)))
say("pair_seqpacket", sc(53, 1, 5, 0, ctypes.addressof(sv)))
say("pair_dgram", sc(53, 1, 2, 0, ctypes.addressof(sv)))
say("pair_inet", sc(53, 2, 1, 0, ctypes.addressof(sv)))
def out():
    s = socket.socket(); s.settimeout(2); s.connect(("192.0.2.1", 80))
say("connect_out", attempt(out))
def local():
    srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen()
    c = socket.create_connection(srv.getsockname(), timeout=2); a, _ = srv.accept()
    c.sendall(b"hi"); assert a.recv(2) == b"hi"
say("loopback_server", attempt(local))
"#,
    );
    for (mode, r) in reports {
        // TCP in each mode (on the host's network without a namespace, every socket call held:
        // see run_local_servers.rs); UDP only in a namespace of the call's own.
        for name in ["inet_tcp", "inet6_tcp"] {
            assert_eq!(r.said(name), "ok", "{mode}: {name}");
        }
        let udp = if mode == "own-world" { "ok" } else { "EPERM" };
        assert_eq!(r.said("inet_udp"), udp, "{mode}: inet_udp");
        for name in [
            "mptcp",
            "sctp",
            "raw_icmp",
            "ping",
            "unix_dgram",
            "netlink",
            "packet",
            "vsock",
            "pair_dgram",
            "pair_inet",
        ] {
            assert_eq!(r.said(name), "EPERM", "{mode}: {name}");
        }
        // Unix stream sockets: made, each connect held for the helper, reaching only the call's
        // own (run_unix_sockets.rs).
        assert_eq!(r.said("unix_stream"), "ok", "{mode}: unix_stream");
        assert_eq!(r.said("pair_stream"), "ok", "{mode}");
        assert_eq!(r.said("pair_seqpacket"), "ok", "{mode}");
        // Its own loopback, and nothing beyond it (without [internet]).
        assert_eq!(r.said("connect_out"), "ENETUNREACH", "{mode}");
        assert_eq!(r.said("loopback_server"), "ok", "{mode}");
    }
}

#[test]
fn host_unix_sockets_are_unreachable() {
    use std::os::linux::net::SocketAddrExt as _;
    use std::os::unix::net::{SocketAddr, UnixListener};
    let agent = Agent::new("unix", POLICY);
    // A pathname socket in a folder the sandbox may read (a Docker socket, say), and an abstract
    // socket (an X11 display, say), both of the host.
    let path = agent.home.join("server.sock");
    let pathname = UnixListener::bind(&path).unwrap();
    let name = format!("lnk-test-{}", std::process::id());
    let abstract_listener =
        UnixListener::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes()).unwrap()).unwrap();
    pathname.set_nonblocking(true).unwrap();
    abstract_listener.set_nonblocking(true).unwrap();
    let r = agent.python(&format!(
        r#"
def connect(addr):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(addr)
say("pathname", attempt(lambda: connect("{path}")))
say("abstract", attempt(lambda: connect("\0{name}")))
"#,
        path = path.display()
    ));
    // Made, each connect held: the host's socket file is not the call's world's (EACCES, named),
    // and the host's abstract names are not the world's (its network namespace has none).
    r.assert_said("pathname", "EACCES");
    r.assert_said("abstract", "ECONNREFUSED");
    assert!(pathname.accept().is_err(), "nothing reached the pathname socket");
    assert!(abstract_listener.accept().is_err(), "nothing reached the abstract socket");
}

#[test]
fn nothing_outside_the_sandbox_can_be_signalled_traced_or_read() {
    if !x86_64() {
        return;
    }
    let mut sentinel = std::process::Command::new("sleep")
        .arg("3600")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = sentinel.id();
    let agent = Agent::new("scopes", POLICY);
    let reports = agent.python_in_each_mode(&format!(
        r#"
import signal
pid = {pid}
ppid = os.getppid()
say("kill_sentinel", attempt(lambda: os.kill(pid, signal.SIGKILL)))
say("kill_parent", attempt(lambda: os.kill(ppid, signal.SIGKILL)))
pidfd = libc.syscall(ctypes.c_long(434), ctypes.c_long(pid), ctypes.c_long(0))
say("pidfd_send_signal", sc(424, pidfd, 9, 0, 0))
parent_fd = libc.syscall(ctypes.c_long(434), ctypes.c_long(ppid), ctypes.c_long(0))
say("pidfd_signal_parent", sc(424, parent_fd, 9, 0, 0))
say("ptrace_attach", sc(101, 16, pid, 0, 0))
say("ptrace_parent", sc(101, 16, ppid, 0, 0))
say("environ", attempt(lambda: open(f"/proc/{{pid}}/environ", "rb").read()))
say("mem", attempt(lambda: open(f"/proc/{{ppid}}/mem", "rb").read(1)))
say("parent_environ", attempt(lambda: open(f"/proc/{{ppid}}/environ", "rb").read()))
say("own_environ", attempt(lambda: open("/proc/self/environ", "rb").read(1)))
say("cmdline", attempt(lambda: open(f"/proc/{{pid}}/cmdline", "rb").read()))
say("list_proc", attempt(lambda: sorted(int(p) for p in os.listdir("/proc") if p.isdigit())))
try:
    say("pids", sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
except OSError:
    say("pids", "none")
say("cpuinfo", attempt(lambda: open("/proc/cpuinfo").read(1)))
"#
    ));
    for (mode, r) in reports {
        // The program's parent: the keeper, or the world's pid 1; outside the Landlock domain
        // either way, so neither signal nor ptrace nor its /proc files reach it.
        for name in ["kill_parent", "pidfd_signal_parent", "ptrace_parent", "ptrace_attach"] {
            assert_eq!(r.said(name), "EPERM", "{mode}: {name}");
        }
        for name in ["mem", "parent_environ"] {
            assert_eq!(r.said(name), "EACCES", "{mode}: {name}");
        }
        assert_eq!(r.said("cpuinfo"), "ok", "{mode}");
        if mode == "own-world" {
            // A pid namespace of its own: the sentinel (and the harness) do not exist there;
            // its own /proc shows its own processes only (the world's pid 1, itself).
            assert_eq!(r.said("kill_sentinel"), "ESRCH", "{mode}");
            assert_eq!(r.said("pidfd_send_signal"), "EBADF", "{mode}: pidfd_open found no such process");
            for name in ["environ", "cmdline"] {
                assert_eq!(r.said(name), "ENOENT", "{mode}: {name}");
            }
            assert_eq!(r.said("own_environ"), "ok", "{mode}");
            // Itself: the next pid, or as root the first past the 300 its namespace keeps for
            // first use (see `sandbox::appetite`).
            let itself = if rustix::process::geteuid().is_root() { 300 } else { 2 };
            assert_eq!(r.said("pids"), format!("[1, {itself}]"), "{mode}");
        } else {
            assert_eq!(r.said("kill_sentinel"), "EPERM", "{mode}");
            assert_eq!(r.said("pidfd_send_signal"), "EPERM", "{mode}");
            // No /proc/<pid> at all, not even the program's own; system-wide figures only.
            for name in ["environ", "own_environ", "cmdline", "list_proc"] {
                assert_eq!(r.said(name), "EACCES", "{mode}: {name}");
            }
        }
    }
    assert!(sentinel.try_wait().unwrap().is_none(), "the process outside the sandbox still runs");
    sentinel.kill().unwrap();
    sentinel.wait().unwrap();
}
