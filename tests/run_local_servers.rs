//! `lnk sandbox run`: a program's local servers and its clients of them, in each mode. In the own
//! world its network namespace's loopback is its own; in the Landlock-only mode the helper makes
//! each listener and connection on the call's own loopback address (`crate::notify::loopback`),
//! takes no port of the host's (its server on 8000 never stops the host's own), answers every
//! socket call as the kernel would, and says in the report where each server really listened.
//!
//! Each test runs in both modes (the Landlock-only one on a simulated kernel without user
//! namespaces), as root and as the ordinary user (the suite runs twice).

mod common;
use common::*;

const POLICY: &str = "commands = [\"python3\", \"sh\", \"curl\"]\n[files]\nread = [\"~\"]\nwrite = [\"~/Link/Files\"]\n[tool.run]\ntimeout = 30\n";

#[test]
fn a_local_server_and_its_client_work_in_each_mode_and_take_nothing_of_the_hosts() {
    let agent = Agent::new("local-server", POLICY);
    let script = r#"
import threading, urllib.request, http.server, os
# A server on a port of its choosing (port 0), as a test suite starts its app.
server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen()
port = server.getsockname()[1]
say("port0_name", server.getsockname()[0])
def answer():
    while True:
        c, _ = server.accept()
        c.sendall(b"hi"); c.close()
threading.Thread(target=answer, daemon=True).start()
for host in ["127.0.0.1", "localhost"]:
    c = socket.create_connection((host, port), timeout=5)
    say("client_" + host, c.recv(2).decode())
# An HTTP server on a port it names, its client by name, and by the wildcard.
class Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"hello")
    def log_message(self, *a):
        pass
httpd = http.server.ThreadingHTTPServer(("", 8765), Hello)
say("asked_name", httpd.socket.getsockname())
threading.Thread(target=httpd.serve_forever, daemon=True).start()
say("http", urllib.request.urlopen("http://localhost:8765/", timeout=5).status)
# Over IPv6 loopback.
six = socket.socket(socket.AF_INET6)
six.bind(("::1", 0)); six.listen()
p6 = six.getsockname()[1]
say("v6_name", six.getsockname()[0])
c6 = socket.create_connection(("::1", p6), timeout=5)
say("v6", "ok" if six.accept() else "no")
# listen() of a socket never bound: on loopback, never the host's every interface.
auto = socket.socket(); auto.listen()
say("auto_name", auto.getsockname()[0])
socket.create_connection(("127.0.0.1", auto.getsockname()[1]), timeout=5)
# Not the host's other addresses; not an address twice.
say("other_address", attempt(lambda: socket.socket().bind(("192.0.2.1", 0))))
say("twice", attempt(lambda: socket.socket().bind(("127.0.0.1", 8765))))
print("ready", flush=True)
"#;
    for (mode, r) in agent.python_in_each_mode(script) {
        let context = format!("{mode}: {}", r.raw);
        assert!(r.out().contains("ready"), "{context}");
        r.assert_said("port0_name", "127.0.0.1");
        r.assert_said("client_127.0.0.1", "hi");
        r.assert_said("client_localhost", "hi");
        r.assert_said("asked_name", "('0.0.0.0', 8765)");
        r.assert_said("http", "200");
        r.assert_said("v6_name", "::1");
        r.assert_said("v6", "ok");
        r.assert_said("auto_name", "0.0.0.0");
        r.assert_said("other_address", "EADDRNOTAVAIL");
        r.assert_said("twice", "EADDRINUSE");
        let servers = r.json["servers"].as_array().unwrap();
        match mode {
            "own-world" => assert!(servers.is_empty(), "{context}"),
            _ => {
                // Where each really listened: the call's own loopback address, never the port
                // the program named.
                let named = servers
                    .iter()
                    .find(|s| s["asked"] == "0.0.0.0:8765")
                    .unwrap_or_else(|| panic!("{context}"));
                let listened = named["listened"].as_str().unwrap();
                assert!(
                    listened.starts_with("127.")
                        && !listened.starts_with("127.0.")
                        && !listened.ends_with(":8765"),
                    "{context}"
                );
                assert_eq!(servers.len(), 4, "{context}");
            }
        }
    }
}

#[test]
fn the_hosts_own_server_on_the_same_port_is_never_stopped() {
    // The host's own process listens on the wildcard at a port and the call's server asks for
    // that very port: both work, and the host's server still answers (the call took no port of
    // the host's). The host's listener is made first and kept: a port freed and taken again
    // later could be taken by anyone meanwhile.
    let agent = Agent::new("local-server-host", POLICY);
    let mine = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    let port = mine.local_addr().unwrap().port();
    let script = format!(
        r#"
s = socket.socket(); s.bind(("127.0.0.1", {port})); s.listen()
say("bound", s.getsockname()[1])
import time; print("listening", flush=True); time.sleep(3)
"#
    );
    let home = agent.home.clone();
    let full = format!("{PY_PRELUDE}\n{script}");
    let mut c = agent.command(&[], &["python3", "-c", &full]);
    c.current_dir(&home).env("LNK_TEST_LANDLOCK_ONLY", "1").stdout(std::process::Stdio::piped());
    let child = c.spawn().unwrap();
    let r = Report::from(child.wait_with_output().unwrap());
    r.assert_said("bound", &port.to_string());
    // The host's server is still the one at its port.
    let _client = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    mine.set_nonblocking(true).unwrap();
    let accepted = (0..250).any(|_| {
        mine.accept().is_ok() || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            false
        }
    });
    assert!(accepted, "the host's own server at {port} was taken: {}", r.raw);
    // And after the call nothing of it listens.
    let listened = r.json["servers"][0]["listened"].as_str().unwrap().to_owned();
    assert!(std::net::TcpStream::connect(&listened).is_err(), "{listened} outlived the call");
}

#[test]
fn held_socket_calls_answer_as_the_kernel_would() {
    // A connect on a socket already connected, on a listener, on a socket pair's end; a bind or
    // listen on a connected socket: each answered as the kernel answers, nothing replaced.
    let agent = Agent::new("local-server-kernel", POLICY);
    let script = r#"
import struct
server = socket.socket(); server.bind(("127.0.0.1", 0)); server.listen()
port = server.getsockname()[1]
# Connected blocking (a non-blocking connect the kernel completes later answers 0 once more).
c = socket.socket(); c.connect(("127.0.0.1", port))
accepted, _ = server.accept()
# Raw system calls: Python's own connect() takes EISCONN for success.
sa = struct.pack("HH4s8s", socket.AF_INET, socket.htons(port), socket.inet_aton("127.0.0.1"), b"\0" * 8)
buf = ctypes.create_string_buffer(sa, len(sa))
connect = lambda s: sc(42, s.fileno(), ctypes.addressof(buf), len(sa))
bind = lambda s: sc(49, s.fileno(), ctypes.addressof(buf), len(sa))
say("connect_connected", connect(c))
say("connect_listener", connect(server))
say("connect_accepted", connect(accepted))
say("bind_accepted", bind(accepted))
say("listen_accepted", sc(50, accepted.fileno(), 5))
say("bind_connected", bind(c))
say("listen_connected", sc(50, c.fileno(), 5))
a, b = socket.socketpair()
say("connect_pair", connect(a))
six = socket.socket(socket.AF_INET6)
say("v6_socket_v4_address", bind(six))
# The pair still works: nothing was put in its place.
a.sendall(b"x"); say("pair_kept", b.recv(1).decode())
c.sendall(b"y"); say("connection_kept", accepted.recv(1).decode())
"#;
    let check = |mode: &str, r: &Report| {
        for name in ["connect_connected", "connect_listener", "connect_accepted"] {
            assert_eq!(r.said(name), "EISCONN", "{mode}: {name}: {}", r.raw);
        }
        for name in [
            "bind_connected",
            "listen_connected",
            "bind_accepted",
            "listen_accepted",
            "connect_pair",
            "v6_socket_v4_address",
        ] {
            assert_eq!(r.said(name), "EINVAL", "{mode}: {name}: {}", r.raw);
        }
        r.assert_said("pair_kept", "x");
        r.assert_said("connection_kept", "y");
    };
    for (mode, r) in agent.python_in_each_mode(script) {
        check(mode, &r);
    }
    // Under a container's default seccomp profile, where the helper gets no copy of the
    // program's descriptor (`pidfd_getfd` refused), the kernel's socket diagnostics say it.
    let full = format!("{PY_PRELUDE}\n{script}");
    let mut inner = agent.command(&[], &["python3", "-c", &full]);
    inner.current_dir(&agent.home).env("TMPDIR", agent.dir.join("tmp"));
    std::fs::create_dir_all(agent.dir.join("tmp")).unwrap();
    let Some(mut contained) = docker_like(&agent.dir.path, &inner) else { return };
    let r = Report::from(run(&mut contained));
    assert_eq!(r.json["enforced"]["mode"], "landlock-only", "{}", r.raw);
    check("container", &r);
}

#[test]
fn a_server_closed_and_started_again_on_its_port_finds_it_free_at_once() {
    // Found in review: a copy of the program's listener the helper let go of only after it had
    // answered (and then a millisecond late) kept the listener alive past the program's close:
    // a client reached a server that was closed, and the same server started again on its port
    // met `EADDRINUSE`. The same for a Unix socket's abstract name.
    let agent = Agent::new("local-server-again", POLICY);
    let script = r#"
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(); port = s.getsockname()[1]; s.close()
refused = rebound = 0
for _ in range(20):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except ConnectionRefusedError:
        refused += 1
    s = socket.socket(); s.bind(("127.0.0.1", port)); s.listen(); s.getsockname(); s.close()
    rebound += 1
say("refused", refused); say("rebound", rebound)
named = 0
for _ in range(20):
    u = socket.socket(socket.AF_UNIX); u.bind("\0lnk-again-%d" % os.getpid()); u.listen(); u.close()
    named += 1
say("named_again", named)
"#;
    for (mode, r) in agent.python_in_each_mode(script) {
        assert_eq!(r.said("refused"), "20", "{mode}: a closed server was reached: {}", r.raw);
        assert_eq!(r.said("rebound"), "20", "{mode}: {}", r.raw);
        assert_eq!(r.said("named_again"), "20", "{mode}: {}", r.raw);
    }
}

#[test]
fn a_program_keeps_its_own_socket_and_what_it_set_on_it() {
    // The kernel connects, binds and listens the socket the program made, with the options it
    // set first. The Landlock-only mode does the same on the program's own socket (its copy),
    // where the kernel gives the helper one: before, a socket of the helper's took its place and
    // the options were lost (`TCP_NODELAY`, `SO_KEEPALIVE`, a receive buffer's size).
    let agent = Agent::new("local-server-own-socket", POLICY);
    let script = r#"
server = socket.socket(); server.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
before = os.fstat(server.fileno()).st_ino
server.bind(("127.0.0.1", 0))
bound = os.fstat(server.fileno()).st_ino
server.listen()
say("listener_same_socket", before == bound == os.fstat(server.fileno()).st_ino)
say("listener_keepalive", server.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE))
port = server.getsockname()[1]
c = socket.socket()
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
buffer = c.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
before = os.fstat(c.fileno()).st_ino
c.connect(("127.0.0.1", port))
say("client_same_socket", before == os.fstat(c.fileno()).st_ino)
say("client_nodelay", c.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
say("client_buffer_kept", c.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) == buffer)
a, _ = server.accept(); c.sendall(b"z"); say("talks", a.recv(1).decode())
# But SO_REUSEPORT: in the Landlock-only mode its listener is on the call's address, where the
# option would share its port with another call's that drew the same address: cleared there.
shared = socket.socket(); shared.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
shared.bind(("127.0.0.1", 0)); shared.listen()
say("reuseport", shared.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT))
"#;
    for (mode, r) in agent.python_in_each_mode(script) {
        let context = format!("{mode}: {}", r.raw);
        for (name, expected) in [
            ("listener_same_socket", "True"),
            ("listener_keepalive", "1"),
            ("client_same_socket", "True"),
            ("client_nodelay", "1"),
            ("client_buffer_kept", "True"),
            ("talks", "z"),
        ] {
            assert_eq!(r.said(name), expected, "{name}: {context}");
        }
        let reuseport = if mode == "landlock-only" { "0" } else { "1" };
        assert_eq!(r.said("reuseport"), reuseport, "{context}");
    }
}

/// A server whose queue is full (backlog 0, one connection not yet accepted), and a thread
/// whose blocking connect to it waits (`ended["second"]` says how it ended), for the scripts
/// below.
const FULL_SERVER: &str = r#"
import threading, time
full = socket.socket(); full.bind(("127.0.0.1", 0)); full.listen(0)
port = full.getsockname()[1]
first = socket.create_connection(("127.0.0.1", port), timeout=5)
time.sleep(0.1)
ended = {}
def waits():
    s = socket.socket()
    try:
        s.connect(("127.0.0.1", port))
        ended["second"] = "connected"
    except OSError as e:
        ended["second"] = errno.errorcode[e.errno]
waiting = threading.Thread(target=waits); waiting.start()
time.sleep(0.3)
"#;

#[test]
fn a_blocking_connect_to_a_full_server_waits_as_bare_and_holds_up_no_other_call() {
    // A server whose queue is full (backlog 0, one connection not yet accepted) drops a new
    // client's handshake, and the kernel keeps a blocking connect waiting until it is accepted
    // (its next try, a second later). In the Landlock-only mode the helper makes that connect on
    // the program's socket: it must wait the same, and hold up none of the program's other held
    // calls meanwhile (the helper's one server thread must never wait for it). A non-blocking
    // connect there is under way at once, as the kernel says. (Before, the helper's listener
    // took a backlog of 4,096 whatever the program asked, and connected at once here.)
    let agent = Agent::new("local-server-full", POLICY);
    let script = format!(
        "{FULL_SERVER}{}",
        r#"
other = socket.socket(); other.bind(("127.0.0.1", 0)); other.listen()
say("other_calls_answered_while_it_waits", "second" not in ended)
quick = socket.socket(); quick.setblocking(False)
say("nonblocking", attempt(lambda: quick.connect(("127.0.0.1", port))))
quick.close()
full.accept()
waiting.join(20)
say("second", ended.get("second"))
"#
    );
    for (mode, r) in agent.python_in_each_mode(&script) {
        let context = format!("{mode}: {}", r.raw);
        assert_eq!(r.said("other_calls_answered_while_it_waits"), "True", "{context}");
        assert_eq!(r.said("nonblocking"), "EINPROGRESS", "{context}");
        assert_eq!(r.said("second"), "connected", "{context}");
    }
}

#[test]
fn a_connect_the_program_made_blocking_behind_the_helpers_back_holds_up_other_calls_two_seconds_at_most() {
    // The helper connects the program's socket with its file non-blocking for that one call; a
    // thread of the program's that makes the file blocking again in between (here the fault
    // point does, as a thread winning that race would) makes the connect block, and against a
    // full server it would wait for the kernel's next tries, two minutes. The receiver
    // interrupts it after 2 s, and it is waited for apart: the program's other held calls go on,
    // and the connect still ends as bare once the server accepts. Without the interruption the
    // other connect here waits until the call's timeout (seen: the fault point with the watch
    // switched off).
    let agent = Agent::new("local-server-made-blocking", POLICY);
    let script = format!(
        "{FULL_SERVER}{}",
        r#"
other = socket.socket(); other.bind(("127.0.0.1", 0)); other.listen()
c = socket.create_connection(("127.0.0.1", other.getsockname()[1]), timeout=25)
say("other_call_answered_while_it_waits", "second" not in ended)
full.accept()
waiting.join(20)
say("second", ended.get("second"))
"#
    );
    let full = format!("{PY_PRELUDE}\n{script}");
    let fault = [("LNK_FAULT", "held-connect-made-blocking-again:fail")];
    for (mode, r) in agent.in_each_mode_at(&agent.home, &[], &fault, &["python3", "-c", &full]) {
        let context = format!("{mode}: {}", r.raw);
        assert_eq!(r.said("other_call_answered_while_it_waits"), "True", "{context}");
        assert_eq!(r.said("second"), "connected", "{context}");
    }
}

#[test]
fn a_connect_takes_no_port_by_bind_and_the_program_may_not_make_it() {
    // In the Landlock-only mode the helper binds the program's socket on the call's address with
    // `IP_BIND_ADDRESS_NO_PORT` before it connects it, so that `connect` chooses the port, as for
    // any client, and none is taken from the host's automatic range for as long as the
    // connection lasts (`TIME_WAIT` too). Found in review: a thread of the program's clearing
    // the option between the helper's two steps made that bind take such a port, and a loop of
    // connects left the host's other processes without any. The program may not set the option
    // (its binds are held: it means nothing to it); and a bind that took a port all the same
    // (the fault point clears the option in between) fails closed.
    let agent = Agent::new("local-server-no-port", POLICY);
    let script = r#"
server = socket.socket(); server.bind(("127.0.0.1", 0)); server.listen()
port = server.getsockname()[1]
s = socket.socket()
say("option", attempt(lambda: s.setsockopt(socket.IPPROTO_IP, 24, 0)))
say("connect", attempt(lambda: s.connect(("127.0.0.1", port))))
"#;
    for (mode, r) in agent.python_in_each_mode(script) {
        let context = format!("{mode}: {}", r.raw);
        let refused = if mode == "landlock-only" { "EPERM" } else { "ok" };
        assert_eq!(r.said("option"), refused, "{context}");
        assert_eq!(r.said("connect"), "ok", "{context}");
    }
    let full = format!("{PY_PRELUDE}\n{script}");
    let fault = [("LNK_FAULT", "held-connect-source-takes-a-port:fail")];
    for (mode, r) in agent.in_each_mode_at(&agent.home, &[], &fault, &["python3", "-c", &full]) {
        let expected = if mode == "landlock-only" { "EADDRNOTAVAIL" } else { "ok" };
        assert_eq!(r.said("connect"), expected, "{mode}: {}", r.raw);
    }
}

#[test]
fn a_waiting_connect_undone_or_asked_again_is_answered_as_bare_and_holds_up_nothing() {
    // Found in review: a waiting connect that a thread of the program's undid (`shutdown`, then
    // its error read) was taken for done, answered 0 on a socket never connected, and the
    // helper's confirming connect started it anew, blocking, on the full queue: every other held
    // call waited two minutes. And a second connect while the first waited went the old way,
    // which put a socket of the helper's in the program's place; the kernel answers a
    // non-blocking one `EALREADY` (and makes a blocking one wait with the first).
    let agent = Agent::new("local-server-undone", POLICY);
    let script = r#"
import threading, time
full = socket.socket(); full.bind(("127.0.0.1", 0)); full.listen(0)
port = full.getsockname()[1]
first = socket.create_connection(("127.0.0.1", port), timeout=5)
ended = {}
s = socket.socket()
inode = os.fstat(s.fileno()).st_ino
def waits():
    try:
        s.connect(("127.0.0.1", port))
        ended["first"] = "ok, peer " + ("yes" if attempt(s.getpeername) == "ok" else "none")
    except OSError as e:
        ended["first"] = errno.errorcode[e.errno]
waiting = threading.Thread(target=waits); waiting.start()
time.sleep(0.5)
again = socket.socket(fileno=os.dup(s.fileno())); again.setblocking(False)
say("asked_again", attempt(lambda: again.connect(("127.0.0.1", port))))
say("same_socket", os.fstat(s.fileno()).st_ino == inode)
s.shutdown(socket.SHUT_RDWR)
s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
waiting.join(10)
say("first", ended.get("first", "still waiting"))
other = socket.socket(); t = time.monotonic(); other.bind(("127.0.0.1", 0)); other.listen()
say("other_calls_answered", "yes")
# A non-blocking connect, then asked again (raw calls: Python takes EISCONN for success): the
# kernel answers 0 the first time after the connection is made, then EISCONN.
import struct
sa = struct.pack("HH4s8s", socket.AF_INET, socket.htons(other.getsockname()[1]), socket.inet_aton("127.0.0.1"), b"\0" * 8)
buf = ctypes.create_string_buffer(sa, len(sa))
n = socket.socket(); n.setblocking(False)
tries = [sc(42, n.fileno(), ctypes.addressof(buf), len(sa)) for _ in range(1)]
time.sleep(0.2)
tries += [sc(42, n.fileno(), ctypes.addressof(buf), len(sa)) for _ in range(2)]
say("nonblocking_asked_again", ",".join(tries))
"#;
    for (mode, r) in agent.python_in_each_mode(script) {
        let context = format!("{mode}: {}", r.raw);
        assert_eq!(r.said("asked_again"), "EALREADY", "{context}");
        assert_eq!(r.said("same_socket"), "True", "{context}");
        let first = r.said("first");
        assert!(
            first == "ECONNABORTED" || first == "ECONNRESET" || first == "ok, peer yes",
            "the waiting connect was told {first}: {context}"
        );
        assert_eq!(r.said("other_calls_answered"), "yes", "{context}");
        assert_eq!(r.said("nonblocking_asked_again"), "EINPROGRESS,ok,EISCONN", "{context}");
    }
}

/// The held connects' interrupt (`SIGURG`, see `notify::pending`) can reach the held calls'
/// server alone: every other thread of the helper has it blocked, the proxy's among them
/// (started before the held calls' own threads: found unblocked there), and the server has it
/// unblocked. In each mode, with `[internet]`, once a held call of the program's was served.
#[test]
fn the_held_connects_interrupt_is_blocked_in_every_thread_of_the_helpers_but_the_server() {
    for mode in modes() {
        let policy = format!("{POLICY}[internet]\nhosts = [\"example.test\"]\n");
        let agent = Agent::new("interrupt-mask", &policy);
        // A server and a connect to it: held in both modes (the own world holds every connect).
        let script = "import socket, time, os\n\
        s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n\
        c = socket.create_connection(s.getsockname())\n\
        open(os.path.expanduser('~/Link/Files/ready'), 'w').write('ready')\n\
        time.sleep(4)\n";
        let mut child = in_mode(&mut agent.command(&[], &["python3", "-c", script]), mode)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let ready = agent.home.join("Link/Files/ready");
        let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !ready.exists() {
            assert!(std::time::Instant::now() < until, "the program never got ready");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let mut threads = Vec::new();
        for task in std::fs::read_dir(format!("/proc/{}/task", child.id())).unwrap() {
            let task = task.unwrap().path();
            let name = std::fs::read_to_string(task.join("comm")).unwrap().trim().to_owned();
            let status = std::fs::read_to_string(task.join("status")).unwrap();
            let mask = status.lines().find_map(|l| l.strip_prefix("SigBlk:")).unwrap().trim().to_owned();
            let blocked = u64::from_str_radix(&mask, 16).unwrap() & (1 << (libc::SIGURG - 1)) != 0;
            threads.push((name, blocked));
        }
        let r = Report::from(ends_within(&mut child, std::time::Duration::from_secs(30), "the program"));
        assert_eq!(r.outcome(), "exited", "{}", r.raw);
        // The helper's main thread, the proxy's (its acceptor and resolver), and the held calls'
        // receiver, server and closer.
        assert!(threads.len() >= 5, "{mode:?}: {threads:?}");
        assert!(threads.iter().any(|(name, _)| name == "lnk-held-calls"), "{mode:?}: {threads:?}");
        for (name, blocked) in &threads {
            assert_eq!(*blocked, name != "lnk-held-calls", "{mode:?}: {name}: {threads:?}");
        }
    }
}
