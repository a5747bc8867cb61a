//! Unix sockets of the call's own (issue 30): in each mode the program binds,
//! listens on and connects to sockets of its own (by path beneath its write grants and its tmp
//! folder, relative or absolute; by abstract name), and Python's `multiprocessing` forkserver
//! and `Manager` work; it never reaches a socket it did not bind (an ssh-agent-like listener in
//! the home, a socket another process made in a write grant, the host's abstract sockets), by
//! any way a hostile program would try (a link, a rename over its own socket). The same in the
//! own world, where every connect is held (see `notify::world_connects`).
//!
//! The suite runs as root and as an ordinary user.

mod common;
use common::*;

use std::os::linux::net::SocketAddrExt as _;
use std::os::unix::net::{SocketAddr, UnixListener};

const POLICY: &str = "commands = [\"python3\"]\n[files]\nread = [\"~\"]\nwrite = [\"~/Link/Files\"]\n";

/// Listeners of the host's the program must never reach: in the home (read grant), in the write
/// grant (made outside the call), and an abstract one.
struct HostSockets {
    agent_socket: UnixListener,
    in_grant: UnixListener,
    abstract_name: String,
    abstract_socket: UnixListener,
}

impl HostSockets {
    fn new(agent: &Agent) -> HostSockets {
        let agent_socket = UnixListener::bind(agent.home.join("agent.sock")).unwrap();
        let in_grant = UnixListener::bind(agent.home.join("Link/Files/outside.sock")).unwrap();
        let abstract_name =
            format!("lnk-test-host-{}-{}", std::process::id(), agent.home.display().to_string().len());
        let address = SocketAddr::from_abstract_name(abstract_name.as_bytes()).unwrap();
        let abstract_socket = UnixListener::bind_addr(&address).unwrap();
        for l in [&agent_socket, &in_grant, &abstract_socket] {
            l.set_nonblocking(true).unwrap();
        }
        HostSockets { agent_socket, in_grant, abstract_name, abstract_socket }
    }

    fn assert_unreached(&self, mode: Mode) {
        for (what, l) in
            [("agent", &self.agent_socket), ("in grant", &self.in_grant), ("abstract", &self.abstract_socket)]
        {
            assert!(l.accept().is_err(), "{mode:?}: the host's {what} socket was reached");
        }
    }
}

/// What every mode tries against the host's sockets: connect to each, directly, through a link,
/// and (where the program can bind) through a rename of the host's socket over its own.
const HOSTILE: &str = r#"
def connect(addr):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2)
    s.connect(addr)
say("host_agent", attempt(lambda: connect(home + "/agent.sock")))
say("host_in_grant", attempt(lambda: connect(files + "/outside.sock")))
say("host_abstract", attempt(lambda: connect("\0" + host_abstract)))
def through_link():
    os.symlink(home + "/agent.sock", files + "/link.sock")
    connect("link.sock")
say("host_through_link", attempt(through_link))
def rename_over_own():
    mine = socket.socket(socket.AF_UNIX)
    mine.bind("mine.sock")
    mine.listen()
    os.rename(files + "/outside.sock", files + "/mine.sock")
    connect("mine.sock")
say("host_renamed_over_own", attempt(rename_over_own))
"#;

#[test]
fn the_calls_own_unix_sockets_work_and_no_other_socket_is_reached() {
    let own = r#"
import asyncio, multiprocessing
tmp = os.environ["TMPDIR"]
def echo(address, kind=socket.SOCK_STREAM):
    server = socket.socket(socket.AF_UNIX, kind)
    server.bind(address)
    server.listen()
    client = socket.socket(socket.AF_UNIX, kind)
    client.connect(address)
    accepted, _ = server.accept()
    client.sendall(b"ping")
    assert accepted.recv(4) == b"ping"
    return server
say("tmp_path", attempt(lambda: echo(tmp + "/a.sock") and None))
say("relative_in_grant", attempt(lambda: echo("rel.sock") and None))
say("seqpacket", attempt(lambda: echo("seq.sock", socket.SOCK_SEQPACKET) and None))
say("name_relative", echo("named.sock").getsockname())
say("name_abstract", repr(echo("\0lnk-own-name").getsockname()))
say("abstract_nobody", attempt(lambda: socket.socket(socket.AF_UNIX).connect("\0lnk-nobody")))
def never_listened():
    s = socket.socket(socket.AF_UNIX); s.bind("quiet.sock")
    socket.socket(socket.AF_UNIX).connect("quiet.sock")
say("never_listened", attempt(never_listened))
say("bound_twice", attempt(lambda: socket.socket(socket.AF_UNIX).bind("rel.sock")))
def nonblocking():
    s = socket.socket(socket.AF_UNIX); s.bind("nb.sock"); s.listen()
    c = socket.socket(socket.AF_UNIX); c.setblocking(False); c.connect("nb.sock")
    assert not c.getblocking() and c.fileno() >= 0
say("nonblocking", attempt(nonblocking))
say("datagram", attempt(lambda: socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)))
def umasked():
    old = os.umask(0o077)
    s = socket.socket(socket.AF_UNIX); s.bind("private.sock")
    os.umask(old)
    return oct(os.stat("private.sock").st_mode & 0o777)
say("umask_kept", umasked())
def after_a_strict_umask():
    # ssh-agent's umask for one bind leaves nothing of it behind: shared memory and an abstract
    # name (whose file the helper keeps private whatever the umask) work after it.
    os.umask(0o277)
    socket.socket(socket.AF_UNIX).bind("strict.sock")
    echo("\0lnk-strict")
    os.umask(0o022)
    from multiprocessing import shared_memory
    m = shared_memory.SharedMemory(create=True, size=16); m.close(); m.unlink()
say("after_strict_umask", attempt(after_a_strict_umask))
def passes_credentials():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    a.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
say("pass_credentials", attempt(passes_credentials))
say("automatic_name", attempt(lambda: socket.socket(socket.AF_UNIX).bind("")))
async def serve():
    async def handle(reader, writer):
        writer.write(await reader.read(5)); await writer.drain(); writer.close()
    server = await asyncio.start_unix_server(handle, tmp + "/asyncio.sock")
    reader, writer = await asyncio.open_unix_connection(tmp + "/asyncio.sock")
    writer.write(b"hello"); await writer.drain()
    said = await reader.read(5)
    server.close()
    return said.decode()
say("asyncio", asyncio.run(serve()))
if __name__ == "__main__":
    with multiprocessing.get_context("forkserver").Pool(2) as pool:
        say("forkserver", pool.map(abs, [-1, -2]))
    with multiprocessing.Manager() as manager:
        d = manager.dict(); d["k"] = 7
        say("manager", d["k"])
"#;
    for mode in modes() {
        let agent = Agent::new("unix-sockets", POLICY);
        let host = HostSockets::new(&agent);
        let files = agent.home.join("Link/Files");
        let head = format!(
            "home = {:?}\nfiles = {:?}\nhost_abstract = {:?}\n",
            agent.home.display().to_string(),
            files.display().to_string(),
            host.abstract_name
        );
        let script = format!("{PY_PRELUDE}\n{head}{HOSTILE}{own}");
        let r = Report::from(run(in_mode(
            agent.command(&[], &["python3", "-c", &script]).current_dir(&files),
            mode,
        )));
        host.assert_unreached(mode);
        assert_eq!(r.code, Some(0), "{mode:?}: {}", r.raw);
        for name in ["tmp_path", "relative_in_grant", "seqpacket", "nonblocking"] {
            r.assert_said(name, "ok");
        }
        r.assert_said("name_relative", "named.sock");
        r.assert_said("name_abstract", "b'\\x00lnk-own-name'");
        r.assert_said("abstract_nobody", "ECONNREFUSED");
        r.assert_said("never_listened", "ECONNREFUSED");
        r.assert_said("bound_twice", "EADDRINUSE");
        r.assert_said("datagram", "EPERM");
        // The file's mode as the program's umask makes it (the Landlock-only mode's
        // helper binds it).
        r.assert_said("umask_kept", "0o700");
        r.assert_said("after_strict_umask", "ok");
        // An automatic name, and a socket passing credentials (which gets one): of the
        // host's abstract names without the own world, refused; the world's own in it.
        let own_names = if mode == Mode::OwnWorld { "ok" } else { "EPERM" };
        r.assert_said("automatic_name", own_names);
        r.assert_said("pass_credentials", own_names);
        r.assert_said("asyncio", "hello");
        r.assert_said("forkserver", "[1, 2]");
        r.assert_said("manager", "7");
        // The host's: a path is refused and named; an abstract name is the call's own,
        // and none of the call's has it.
        r.assert_said("host_agent", "EACCES");
        r.assert_said("host_in_grant", "EACCES");
        r.assert_said("host_abstract", "ECONNREFUSED");
        r.assert_said("host_through_link", "EACCES");
        r.assert_said("host_renamed_over_own", "EACCES");
        let denials = r.json["denials"].as_array().cloned().unwrap_or_default();
        let agent_path = agent.home.join("agent.sock").display().to_string();
        let named = denials.iter().find(|d| d["target"] == agent_path.as_str());
        let named = named.unwrap_or_else(|| panic!("the host socket is named: {}", r.raw));
        assert_eq!(named["access"], "connect", "{named}");
        assert_eq!(named["cause"], "protected", "{named}");
        assert!(named["fix"].is_null(), "no grant reaches another's socket: {named}");
    }
}

#[test]
fn a_socket_bound_outside_the_write_grants_is_refused_with_a_fix_that_works_and_never_in_a_secret() {
    // In the Landlock-only mode, where the helper binds: in the own world the kernel does, under
    // the world's read-only mounts and Landlock.
    let agent = Agent::new("unix-bind-fix", POLICY);
    std::fs::create_dir_all(agent.home.join("srv")).unwrap();
    let home = agent.home.display().to_string();
    let script = format!(
        "{PY_PRELUDE}\ns = socket.socket(socket.AF_UNIX)\nsay(\"bind\", attempt(lambda: s.bind({:?})))\n",
        format!("{home}/srv/served.sock")
    );
    let go = |agent: &Agent| {
        Report::from(run(in_mode(
            agent.command(&[], &["python3", "-c", &script]).current_dir(&agent.home),
            Mode::LandlockOnly,
        )))
    };
    let r = go(&agent);
    r.assert_said("bind", "EACCES");
    assert!(!agent.home.join("srv/served.sock").exists(), "nothing was made outside the grants");
    let denials = r.json["denials"].as_array().cloned().unwrap_or_default();
    let target = format!("{home}/srv/served.sock");
    let denial = denials.iter().find(|d| d["target"] == target.as_str());
    let denial = denial.unwrap_or_else(|| panic!("the bind is named: {}", r.raw));
    assert_eq!(denial["access"], "listen", "{denial}");
    assert_eq!(denial["cause"], "outside_grants", "{denial}");
    apply_fix(&agent.policy, &denial["fix"]);
    assert_check_ok(&agent.policy, &agent.home);
    go(&agent).assert_said("bind", "ok");
    assert!(agent.home.join("srv/served.sock").exists());

    // A secret in a write grant (`~/.ssh` with `write = ["~"]`): refused, named as one, no fix;
    // and beside it, in the home, where the program itself may add nothing new either.
    let agent = Agent::new("unix-bind-secret", "commands = [\"python3\"]\n[files]\nwrite = [\"~\"]\n");
    std::fs::create_dir_all(agent.home.join(".ssh")).unwrap();
    let script = format!(
        "{PY_PRELUDE}\ns = socket.socket(socket.AF_UNIX)\nsay(\"bind\", attempt(lambda: s.bind(\".ssh/agent.sock\")))\n\
         say(\"beside\", attempt(lambda: socket.socket(socket.AF_UNIX).bind(\"beside.sock\")))\n\
         say(\"file_beside\", attempt(lambda: open(\"beside.txt\", \"w\")))\n"
    );
    let r = Report::from(run(in_mode(
        agent.command(&[], &["python3", "-c", &script]).current_dir(&agent.home),
        Mode::LandlockOnly,
    )));
    r.assert_said("bind", "EACCES");
    assert!(!agent.home.join(".ssh/agent.sock").exists(), "nothing was made in the secret");
    r.assert_said("file_beside", "EACCES");
    r.assert_said("beside", "EACCES");
    assert!(!agent.home.join("beside.sock").exists(), "nothing was made beside the secret");
    let denials = r.json["denials"].as_array().cloned().unwrap_or_default();
    assert!(
        denials.iter().any(|d| d["cause"] == "protected"
            && d["fix"].is_null()
            && d["target"].as_str().is_some_and(|t| t.ends_with(".ssh/agent.sock"))),
        "{}",
        r.raw
    );
    assert!(denials.iter().any(|d| d["cause"] == "beside_protected" && d["fix"].is_null()), "{}", r.raw);
}

#[test]
fn a_hole_in_a_write_grant_leaves_every_held_call_served() {
    // A `deny` inside a write grant, with a file beside it: the grant is cut around the hole, and
    // the held calls' server (whose Landlock rules for sockets are the grant's folders) still
    // serves a `chmod`, shared memory and a socket in a folder of the grant (found in review:
    // a file among the parts once made the server refuse every call).
    let policy = "commands = [\"python3\"]\n[files]\nread = [\"~\"]\nwrite = [\"~/Link/Files\"]\ndeny = [\"~/Link/Files/secret\"]\n";
    let agent = Agent::new("unix-hole-in-grant", policy);
    let files = agent.home.join("Link/Files");
    std::fs::create_dir_all(files.join("secret")).unwrap();
    std::fs::create_dir_all(files.join("sub")).unwrap();
    std::fs::write(files.join("beside.txt"), "x").unwrap();
    let script = format!(
        "{PY_PRELUDE}\nsay(\"chmod\", attempt(lambda: os.chmod(\"beside.txt\", 0o600)))\n\
         from multiprocessing import shared_memory\n\
         def shm():\n    m = shared_memory.SharedMemory(create=True, size=8); m.close(); m.unlink()\n\
         say(\"shm\", attempt(shm))\n\
         s = socket.socket(socket.AF_UNIX)\nsay(\"bind_sub\", attempt(lambda: s.bind(\"sub/s.sock\")))\n\
         say(\"bind_beside\", attempt(lambda: socket.socket(socket.AF_UNIX).bind(\"beside.sock\")))\n"
    );
    let r = Report::from(run(in_mode(
        agent.command(&[], &["python3", "-c", &script]).current_dir(&files),
        Mode::LandlockOnly,
    )));
    r.assert_said("chmod", "ok");
    r.assert_said("shm", "ok");
    r.assert_said("bind_sub", "ok");
    // Beside the hole, where the program may add nothing new itself.
    r.assert_said("bind_beside", "EACCES");
}

#[test]
fn under_a_containers_default_seccomp_profile_a_unix_socket_is_refused_by_name() {
    // Docker's and podman's default profiles refuse `pidfd_getfd`, on whose copy every Unix
    // socket call is made: each is refused (`EPERM`) and named; the host's socket stays unreached.
    let agent = Agent::new("unix-container", POLICY);
    let host = HostSockets::new(&agent);
    let script = format!(
        "{PY_PRELUDE}\ns = socket.socket(socket.AF_UNIX)\nsay(\"bind\", attempt(lambda: s.bind(os.environ[\"TMPDIR\"] + \"/a.sock\")))\n\
         say(\"connect\", attempt(lambda: socket.socket(socket.AF_UNIX).connect({:?})))\n",
        agent.home.join("agent.sock").display().to_string()
    );
    let tmp = agent.dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut inner = agent.command(&[], &["python3", "-c", &script]);
    inner.env("TMPDIR", &tmp);
    let Some(mut contained) = docker_like(&agent.dir.path, &inner) else { return };
    let r = Report::from(run(&mut contained));
    assert_eq!(r.json["enforced"]["mode"], "landlock-only", "{}", r.raw);
    r.assert_said("bind", "EPERM");
    r.assert_said("connect", "EPERM");
    host.assert_unreached(Mode::LandlockOnly);
    let denials = r.json["denials"].as_array().cloned().unwrap_or_default();
    assert!(
        denials
            .iter()
            .any(|d| d["target"] == "socket(AF_UNIX)"
                && d["why"].as_str().unwrap_or("").contains("pidfd_getfd")),
        "{}",
        r.raw
    );
}

#[test]
fn in_the_own_world_a_path_is_read_in_the_world_alone_and_waiting_connects_stop_no_other() {
    // A relative path through a link to an absolute target is resolved in the world, as the
    // kernel would: the program's own socket in its tmp folder is reached, and a secret's name answers
    // as it does by its absolute path (found in review: the helper resolved it in the host's
    // view, so a link told what a secret folder holds). Then 80 blocking connects wait on a full
    // listener while another connect is served at once.
    if !require(own_world_here(), "the call's own world (user namespaces that can mount)") {
        return;
    }
    let policy = "commands = [\"python3\"]\n[files]\nread = [\"~\"]\nwrite = [\"~/Link/Files\"]\ndeny = [\"~/secret\"]\n";
    let agent = Agent::new("unix-world-paths", policy);
    std::fs::create_dir_all(agent.home.join("secret")).unwrap();
    std::fs::write(agent.home.join("secret/token"), "t").unwrap();
    let files = agent.home.join("Link/Files");
    let script = format!(
        r#"{PY_PRELUDE}
import threading, time
home = {home:?}
mine = os.environ["TMPDIR"] + "/own.sock"
own = socket.socket(socket.AF_UNIX); own.bind(mine); own.listen()
os.symlink(mine, "link-own")
say("through_link", attempt(lambda: socket.socket(socket.AF_UNIX).connect("link-own")))
for name in ["token", "absent"]:
    os.symlink(home + "/secret/" + name, "probe-" + name)
    by_link = attempt(lambda: socket.socket(socket.AF_UNIX).connect("probe-" + name))
    by_path = attempt(lambda: socket.socket(socket.AF_UNIX).connect(home + "/secret/" + name))
    say("secret_" + name, by_link + "/" + by_path)
full = socket.socket(socket.AF_UNIX); full.bind("\0full"); full.listen(0)
waiting = []
def wait_in_line():
    c = socket.socket(socket.AF_UNIX); waiting.append(c); c.connect("\0full")
for _ in range(80):
    threading.Thread(target=wait_in_line, daemon=True).start()
time.sleep(1)
free = socket.socket(socket.AF_UNIX); free.bind("\0free"); free.listen()
start = time.monotonic()
c = socket.socket(socket.AF_UNIX); c.settimeout(5); c.connect("\0free")
say("other_connect_served", time.monotonic() - start < 2)
os._exit(0)
"#,
        home = agent.home.display().to_string()
    );
    let r = Report::from(run(in_mode(
        agent.command(&[], &["python3", "-c", &script]).current_dir(&files),
        Mode::OwnWorld,
    )));
    r.assert_said("through_link", "ok");
    for name in ["secret_token", "secret_absent"] {
        let said = r.said(name);
        let (by_link, by_path) = said.split_once('/').unwrap();
        assert_eq!(by_link, by_path, "{name}: a link tells no more than the path: {}", r.raw);
    }
    assert_eq!(r.said("secret_token"), r.said("secret_absent"), "a secret's names stay unknown: {}", r.raw);
    r.assert_said("other_connect_served", "True");
}

#[test]
fn in_the_own_world_without_copies_no_connect_is_held_and_unix_sockets_are_refused() {
    // Where a profile lets lnk make its namespaces but gives no copy of a descriptor
    // (`pidfd_getfd`), the own world holds no connect (each is the program's own again, TCP on
    // its loopback as before) and refuses `socket(AF_UNIX)`, saying so in `lacks`: never a Unix
    // socket whose connects nothing checks.
    if !require(own_world_here(), "the call's own world (user namespaces that can mount)") {
        return;
    }
    let agent = Agent::new("unix-world-no-copies", POLICY);
    let host = HostSockets::new(&agent);
    let script = format!(
        r#"{PY_PRELUDE}
say("unix", attempt(lambda: socket.socket(socket.AF_UNIX)))
def local():
    srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen()
    c = socket.create_connection(srv.getsockname(), timeout=2); a, _ = srv.accept()
say("tcp_loopback", attempt(local))
"#
    );
    let mut inner = agent.command(&[], &["python3", "-c", &script]);
    inner.current_dir(agent.home.join("Link/Files"));
    let Some(mut contained) = without_copies(&agent.dir.path, &inner) else { return };
    let r = Report::from(run(&mut contained));
    assert_eq!(r.json["enforced"]["mode"], "own-world", "{}", r.raw);
    r.assert_said("unix", "EPERM");
    r.assert_said("tcp_loopback", "ok");
    let lacks = r.json["enforced"]["lacks"].to_string();
    assert!(lacks.contains("no copy of a process's descriptor"), "{lacks}");
    host.assert_unreached(Mode::OwnWorld);
}
