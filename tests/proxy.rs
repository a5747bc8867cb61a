//! The call's proxy (`[internet]`), tested against a small internet of the tests' own
//! (`tests/proxy_world.py`: servers on addresses of their own in a user and network namespace
//! the test makes), with lnk running there as an ordinary user. The program in the sandbox acts
//! like a hostile one: it connects around the proxy, to the proxy's port elsewhere, over UDP,
//! MPTCP and IPv6, and names hosts that resolve to the harness's own addresses.
//!
//! Most tests run in both of lnk's ways to confine `[internet]`: the program's own network
//! namespace (the own world), and the held door of the Landlock-only mode, where the program
//! shares the world's network and the helper makes each of its connects
//! (`crate::proxy::host_door`). The Landlock-only mode is simulated with the test build's
//! `LNK_TEST_LANDLOCK_ONLY`, and once for real: inside a world where no user namespace can be
//! made.

mod common;
#[path = "proxy/requests.rs"]
mod requests;

use common::{Agent, PY_PRELUDE, Report, apply_fix, assert_check_ok, lnk_bin, require, stderr, stdout};
use std::process::Command;

const WORLD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/proxy_world.py");

/// Whether this machine can make the tests' world: user namespaces, `ip`, `openssl`.
fn world_available() -> bool {
    let ok = Command::new("unshare")
        .args(["-Urn", "sh", "-c", "command -v openssl >/dev/null && (command -v ip || test -x /usr/sbin/ip || test -x /sbin/ip) >/dev/null"])
        .status()
        .is_ok_and(|s| s.success());
    require(ok, "user namespaces with `unshare`, `ip` and `openssl` (the proxy tests' own internet)")
}

/// An agent whose calls run inside the tests' world.
struct World {
    agent: Agent,
    /// Whether lnk runs in its Landlock-only mode (the held door), simulated.
    held: bool,
}

impl World {
    fn new(name: &str, policy: &str) -> World {
        World::in_mode(name, policy, false)
    }

    /// The same world twice: with the own world's namespace, and with the held door.
    fn both(name: &str, policy: &str) -> [World; 2] {
        [World::in_mode(name, policy, false), World::in_mode(&format!("{name}-held"), policy, true)]
    }

    /// Which way the world's calls confine `[internet]`, for messages.
    fn mode(&self) -> &'static str {
        if self.held { "landlock-only (held door)" } else { "own world" }
    }

    fn in_mode(name: &str, policy: &str, held: bool) -> World {
        let agent = Agent::new(name, policy);
        let www = agent.dir.join("world/www");
        std::fs::create_dir_all(&www).unwrap();
        std::fs::write(www.join("hello.txt"), "hello from allowed\n").unwrap();
        std::fs::create_dir_all(agent.dir.join("tmp")).unwrap();
        World { agent, held }
    }

    /// The calls' `TMPDIR`: a folder of this test's own. lnk names its tmp folders by uid, and
    /// the world's uid 1234 is a different outer user when the suite runs as root and as the
    /// ordinary user, so a shared `/tmp/lnk-1234` would belong to the other run.
    fn tmp(&self) -> std::path::PathBuf {
        self.agent.dir.join("tmp")
    }

    fn www(&self) -> std::path::PathBuf {
        self.agent.dir.join("world/www")
    }

    /// `lnk sandbox run --file POLICY --report json EXTRA… -- CMD…`, in the world, as an
    /// ordinary user.
    fn run(&self, extra: &[&str], cmd: &[&str]) -> Report {
        self.run_as(false, extra, cmd)
    }

    /// The same, as the world's root when `as_root` (lnk run by root, with capabilities).
    fn run_as(&self, as_root: bool, extra: &[&str], cmd: &[&str]) -> Report {
        let inner = self.agent.command(extra, cmd);
        let mut c = self.in_world(as_root);
        c.arg(inner.get_program()).args(inner.get_args());
        Report::from(c.output().expect("unshare runs"))
    }

    /// `unshare -Urn python3 proxy_world.py DIR --`, to which the caller adds the command.
    fn in_world(&self, as_root: bool) -> Command {
        let mut c = Command::new("unshare");
        c.args(["-Urn", "python3", WORLD])
            .arg(self.agent.dir.join("world"))
            .arg("--")
            .env("HOME", &self.agent.home)
            .env("TMPDIR", self.tmp())
            .env("WORLD_AS_ROOT", if as_root { "1" } else { "0" })
            .current_dir(&self.agent.home);
        if self.held {
            c.env("LNK_TEST_LANDLOCK_ONLY", "1");
        }
        c
    }

    fn python(&self, extra: &[&str], script: &str) -> Report {
        self.python_as(false, extra, script)
    }

    fn python_as(&self, as_root: bool, extra: &[&str], script: &str) -> Report {
        let full = format!("{PY_PRELUDE}\n{script}");
        self.run_as(as_root, extra, &["python3", "-c", &full])
    }
}

const RESOLVE: &[&str] = &[
    "--resolve",
    "allowed.test:80:192.0.2.1",
    "--resolve",
    "allowed.test:443:192.0.2.1",
    "--resolve",
    "unlisted.test:80:198.51.100.7",
    "--resolve",
    "a.suffix.test:80:192.0.2.1",
    "--resolve",
    "evilsuffix.test:80:192.0.2.1",
    "--resolve",
    "suffix.test:80:192.0.2.1",
];

fn refusals(r: &Report) -> Vec<(String, u64, String)> {
    r.json["internet"]["refusals"]
        .as_array()
        .unwrap_or_else(|| panic!("no internet report: {}", r.raw))
        .iter()
        .map(|x| {
            (
                x["host"].as_str().unwrap().to_owned(),
                x["port"].as_u64().unwrap(),
                x["why"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

const CURL_POLICY: &str = r#"
commands = ["curl", "sh"]
[internet]
hosts = ["allowed.test", "*.suffix.test"]
"#;

#[test]
fn an_allowed_host_is_reached_by_plain_http_and_by_connect() {
    if !world_available() {
        return;
    }
    for w in World::both("proxy-allowed", CURL_POLICY) {
        for as_root in [false, true] {
            let r = w.run_as(
                as_root,
                RESOLVE,
                &[
                    "sh",
                    "-c",
                    "curl -fsS http://allowed.test/hello.txt && curl -fsSk https://allowed.test/hello.txt",
                ],
            );
            assert_eq!(r.code, Some(0), "{}, as root: {as_root}: {}", w.mode(), r.raw);
            assert_eq!(r.out(), "hello from allowed\nhello from allowed\n", "{}", r.raw);
            assert_eq!(r.json["internet"]["connections"], 2, "{}", r.raw);
            assert_eq!(r.json["internet"]["refused"], 0, "{}", r.raw);
            assert_eq!(r.json["enforced"]["network"], "proxy");
            let (mode, confinement) =
                if w.held { ("landlock-only", "held connects") } else { ("own-world", "network namespace") };
            assert_eq!(r.json["enforced"]["mode"], mode, "{}", r.raw);
            assert_eq!(r.json["internet"]["confinement"], confinement, "{}", r.raw);
        }
    }
}

#[test]
fn an_unlisted_host_is_refused_and_named_in_the_report() {
    if !world_available() {
        return;
    }
    for w in World::both("proxy-unlisted", CURL_POLICY) {
        let r = w.run(
        RESOLVE,
        &[
            "sh",
            "-c",
            "curl -sS -o /dev/null -w '%{http_code}\\n' http://unlisted.test/; curl -sSk https://unlisted.test/; echo connect=$?",
        ],
    );
        assert!(r.out().starts_with("403\n"), "{}", r.raw);
        assert!(r.out().contains("connect=56"), "curl's CONNECT must fail: {}", r.raw);
        assert!(!r.out().contains("unlisted-host"), "{}", r.raw);
        let refused = refusals(&r);
        assert_eq!(refused.len(), 2, "{}", r.raw);
        assert_eq!((refused[0].0.as_str(), refused[0].1), ("unlisted.test", 80));
        assert_eq!((refused[1].0.as_str(), refused[1].1), ("unlisted.test", 443));
        assert!(refused.iter().all(|x| x.2.contains("not listed")), "{}: {refused:?}", w.mode());
        // And in `denials`, known, with the change that would allow it.
        let denial = r.json["denials"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["target"] == "unlisted.test:80")
            .unwrap_or_else(|| panic!("{}: {}", w.mode(), r.raw))
            .clone();
        assert_eq!(
            (denial["access"].as_str(), denial["cause"].as_str(), denial["inferred"].as_bool()),
            (Some("connect"), Some("not_allowed"), Some(false))
        );
        assert_eq!(denial["fix"]["words"], "add \"unlisted.test\" to [internet] hosts");
        assert_eq!(
            (denial["fix"]["table"].as_str(), denial["fix"]["key"].as_str()),
            (Some("internet"), Some("hosts"))
        );
    }
}

#[test]
fn suffix_patterns_match_subdomains_only() {
    if !world_available() {
        return;
    }
    let w = World::new("proxy-suffix", CURL_POLICY);
    let r = w.run(
        RESOLVE,
        &[
            "sh",
            "-c",
            "for h in a.suffix.test evilsuffix.test suffix.test; do echo $h=$(curl -s -o /dev/null -w '%{http_code}' http://$h/hello.txt); done",
        ],
    );
    assert_eq!(r.out(), "a.suffix.test=200\nevilsuffix.test=403\nsuffix.test=403\n", "{}", r.raw);
}

#[test]
fn a_listed_name_resolving_to_an_internal_address_is_refused() {
    if !world_available() {
        return;
    }
    let policy = r#"
commands = ["curl", "sh"]
[internet]
hosts = ["allowed.test", "rebind.test", "mapped.test", "private.test"]
"#;
    let w = World::new("proxy-internal", policy);
    let r = w.run(
        &[
            "--resolve",
            "rebind.test:80:127.0.0.1",
            "--resolve",
            "mapped.test:80:[::ffff:127.0.0.1]",
            "--resolve",
            "private.test:80:10.1.2.3",
        ],
        &["sh", "-c", "for h in rebind.test mapped.test private.test; do echo $h=$(curl -s -w ' %{http_code}' http://$h:80/); done"],
    );
    let out = r.out();
    for host in ["rebind.test", "mapped.test", "private.test"] {
        let line =
            out.lines().find(|l| l.starts_with(&format!("{host}="))).unwrap_or_else(|| panic!("{}", r.raw));
        assert!(line.ends_with(" 403") && !line.contains("harness-secret"), "{line}: {}", r.raw);
    }
    let refused = refusals(&r);
    assert!(
        refused.iter().any(|x| x.0 == "rebind.test" && x.2.contains("internal address 127.0.0.1")),
        "{refused:?}"
    );
    assert!(refused.iter().any(|x| x.0 == "private.test" && x.2.contains("10.1.2.3")), "{refused:?}");

    // With its address listed, the same server is reachable (the refusal is the rule, not the
    // world being unreachable); on a port other than 80 or 443, it is not; an unlisted
    // literal is refused. (`--noproxy ''`: NO_PROXY sends the loopback direct, to the
    // program's own servers; a listed loopback host is the host's, through the proxy.)
    let listed = World::new(
        "proxy-internal-listed",
        "commands = [\"curl\", \"sh\"]\n[internet]\nhosts = [\"rebind.test\", \"127.0.0.1\"]\n",
    );
    let r = listed.run(
        &["--resolve", "rebind.test:80:127.0.0.1"],
        &[
            "sh",
            "-c",
            "echo name=$(curl -s http://rebind.test/); echo literal=$(curl -s --noproxy '' http://127.0.0.1/); \
             echo port=$(curl -s --noproxy '' -o /dev/null -w %{http_code} http://127.0.0.1:8080/); \
             echo other=$(curl -s --noproxy '' -o /dev/null -w %{http_code} http://127.0.0.2/)",
        ],
    );
    assert_eq!(r.out(), "name=harness-secret\nliteral=harness-secret\nport=403\nother=403\n", "{}", r.raw);
}

#[test]
fn a_program_cannot_go_around_the_proxy() {
    if !world_available() {
        return;
    }
    let policy = r#"
commands = ["python3"]
[internet]
hosts = ["*"]
tcp = ["192.0.2.1:5432"]
"#;
    // In each mode, as an ordinary user and as root (who keeps capabilities in its own
    // namespaces).
    for w in World::both("proxy-around", policy) {
        for as_root in [false, true] {
            let r = w.python_as(as_root, &[], AROUND_THE_PROXY);
            let said = |name: &str, expected: &str| {
                assert_eq!(r.said(name), expected, "{name}, {}, as root: {as_root}: {}", w.mode(), r.raw)
            };
            // Every address but the proxy's and the listed endpoint's is unreachable, on any port:
            // the namespace has loopback only; the held door makes no other connection.
            said("direct_server", "ENETUNREACH");
            said("proxy_port_unlisted", "ENETUNREACH");
            // The endpoint's own address: in the namespace it is on loopback, where only its
            // forwarder listens; the held door connects nowhere else.
            let endpoint_address = if w.held { "ENETUNREACH" } else { "ECONNREFUSED" };
            said("proxy_port_elsewhere", endpoint_address);
            said("endpoint_other_port", endpoint_address);
            // The harness's loopback is not the program's: nothing listens there (the own
            // world's namespace), or nothing is connected there (the held door).
            said("harness_loopback", "ECONNREFUSED");
            said("harness_loopback_proxy_port", "ECONNREFUSED");
            said("ipv6", "ENETUNREACH");
            said("ipv6_loopback_proxy_port", "ECONNREFUSED");
            for name in ["mptcp", "sctp", "netlink", "unshare_net"] {
                said(name, "EPERM");
            }
            // Unix sockets of the call's own, in each mode (run_unix_sockets.rs).
            said("unix", "ok");
            if w.held {
                // The host's network: no UDP at all; the program's server listens on the call's
                // own loopback (see run_local_servers.rs).
                said("udp_out", "EPERM");
                said("udp_loopback", "EPERM");
                said("bind", "ok");
            } else {
                // UDP stays in the namespace: out is unreachable, its own loopback is the
                // program's, and the program may serve there (a local server and its client).
                said("udp_out", "ENETUNREACH");
                said("udp_loopback", "ok");
                said("bind", "ok");
            }
            // Never on an address that is not loopback: the host's in the held door's mode.
            said("bind_elsewhere", "EADDRNOTAVAIL");
            assert_ne!(r.said("dns"), "ok", "the program has no DNS: {}", r.raw);
            // The proxy itself is reached, by IPv4 and by a v4-mapped IPv6 address, blocking or
            // not, and refuses an IP literal that is not listed.
            said("proxy_reached", "got:HTTP/1.1 403");
            said("proxy_reached_mapped", "got:HTTP/1.1 403");
            said("proxy_reached_nonblocking", "got:HTTP/1.1 403");
            said("proxy_reached_blocking", "got:HTTP/1.1 403");
            said("forwarder", "got:pg-ok");
            // Nothing the program did reached the server behind the proxy's port elsewhere.
            assert!(!r.out().contains("door-bypassed"), "{}", r.raw);
        }
    }
}

/// A hostile program's ways around the proxy (see `a_program_cannot_go_around_the_proxy`).
const AROUND_THE_PROXY: &str = r#"
import select
def got(fn):
    try:
        return "got:" + fn().decode().strip()
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e))
def connect(family, address):
    def go():
        s = socket.socket(family, socket.SOCK_STREAM)
        s.settimeout(3)
        s.connect(address)
        return s.recv(64)
    return got(go)
say("direct_server", connect(socket.AF_INET, ("198.51.100.7", 80)))
say("proxy_port_elsewhere", connect(socket.AF_INET, ("192.0.2.1", 3128)))
say("proxy_port_unlisted", connect(socket.AF_INET, ("198.51.100.7", 3128)))
say("endpoint_other_port", connect(socket.AF_INET, ("192.0.2.1", 80)))
say("harness_loopback", connect(socket.AF_INET, ("127.0.0.1", 8080)))
say("harness_loopback_proxy_port", connect(socket.AF_INET, ("127.0.0.2", 3128)))
say("ipv6", connect(socket.AF_INET6, ("2001:db8::1", 3128)))
say("ipv6_loopback_proxy_port", connect(socket.AF_INET6, ("::1", 3128)))
say("mptcp", attempt(lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)))
say("sctp", attempt(lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM, 132)))
def udp_out():
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.sendto(b"x", ("198.51.100.7", 53))
say("udp_out", attempt(udp_out))
def udp_loopback():
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.sendto(b"x", ("127.0.0.1", 8053))
say("udp_loopback", attempt(udp_loopback))
say("unix", attempt(lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)))
say("netlink", attempt(lambda: socket.socket(16, socket.SOCK_RAW, 0)))
def listen():
    s = socket.socket(); s.bind(("127.0.0.1", 3129)); s.listen()
say("bind", attempt(listen))
say("bind_elsewhere", attempt(lambda: socket.socket().bind(("198.51.100.7", 3129))))
say("unshare_net", sc(272, 0x40000000))
say("dns", attempt(lambda: socket.getaddrinfo("allowed.test", 80)))
def via_proxy(family, host):
    def go():
        s = socket.socket(family, socket.SOCK_STREAM)
        s.settimeout(3)
        s.connect((host, 3128))
        s.sendall(b"CONNECT 192.0.2.1:3128 HTTP/1.1\r\n\r\n")
        return s.recv(12)
    return go
say("proxy_reached", got(via_proxy(socket.AF_INET, "127.0.0.1")))
say("proxy_reached_mapped", got(via_proxy(socket.AF_INET6, "::ffff:127.0.0.1")))
def nonblocking():
    s = socket.socket()
    s.setblocking(False)
    r = s.connect_ex(("127.0.0.1", 3128))
    assert r in (0, errno.EINPROGRESS), r
    select.select([], [s], [], 3)
    assert s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0
    s.sendall(b"CONNECT 192.0.2.1:3128 HTTP/1.1\r\n\r\n")
    select.select([s], [], [], 3)
    # The descriptor itself, not Python's idea of it: what the program's socket was, the
    # connected one is (non-blocking, close-on-exec).
    import fcntl
    flags = fcntl.fcntl(s.fileno(), fcntl.F_GETFL)
    assert flags & os.O_NONBLOCK, "non-blocking"
    assert fcntl.fcntl(s.fileno(), fcntl.F_GETFD) & fcntl.FD_CLOEXEC, "close-on-exec"
    return s.recv(12)
say("proxy_reached_nonblocking", got(nonblocking))
def blocking():
    import fcntl
    s = socket.socket()
    os.set_inheritable(s.fileno(), True)
    s.connect(("127.0.0.1", 3128))
    assert not fcntl.fcntl(s.fileno(), fcntl.F_GETFL) & os.O_NONBLOCK, "blocking"
    assert not fcntl.fcntl(s.fileno(), fcntl.F_GETFD) & fcntl.FD_CLOEXEC, "inheritable"
    s.sendall(b"CONNECT 192.0.2.1:3128 HTTP/1.1\r\n\r\n")
    return s.recv(12)
say("proxy_reached_blocking", got(blocking))
say("forwarder", got(lambda: socket.create_connection(("192.0.2.1", 5432), timeout=3).recv(64)))
"#;

#[test]
fn a_held_connect_reads_the_address_once_and_a_swapped_descriptor_gains_nothing() {
    if !world_available() {
        return;
    }
    // Threads race a connect: one flips the address in memory between the proxy's and the
    // server's behind the proxy's port elsewhere (which Landlock's port rule alone would let
    // through), another swaps the descriptor for a fresh socket. The helper reads the address
    // once and never lets the call go on, so the program only ever reaches the proxy.
    let w = World::in_mode(
        "proxy-held-race",
        "commands = [\"python3\"]\n[internet]\nhosts = [\"192.0.2.1\"]\n",
        true,
    );
    let r = w.python(
        &[],
        r#"
import threading, struct
proxy = struct.pack("=H", socket.AF_INET) + struct.pack(">H", 3128) + bytes([127, 0, 0, 1]) + bytes(8)
bypass = struct.pack("=H", socket.AF_INET) + struct.pack(">H", 3128) + bytes([192, 0, 2, 1]) + bytes(8)
buf = ctypes.create_string_buffer(proxy, 16)
stop = False
def flip():
    while not stop:
        ctypes.memmove(buf, bypass, 16)
        ctypes.memmove(buf, proxy, 16)
fd_box = [None]
def swap():
    # Now and then, so that some connects finish unswapped even on a busy machine.
    import time
    while not stop:
        fd = fd_box[0]
        if fd is not None:
            t = socket.socket()
            os.dup2(t.fileno(), fd)
            t.close()
        time.sleep(0.003)
flipper = threading.Thread(target=flip); flipper.start()
swapper = threading.Thread(target=swap); swapper.start()
answers = {}
def seen_both():
    return "ENETUNREACH" in answers and any(k.startswith("HTTP/1.0 200") for k in answers)
# At least 300 connects, and on until both outcomes were seen (a starved flipper may show one
# address for a while on a busy machine), within a bound.
i = 0
while i < 300 or (i < 3000 and not seen_both()):
    i += 1
    s = socket.socket()
    s.settimeout(2)
    fd_box[0] = s.fileno()
    r = libc.connect(s.fileno(), buf, 16)
    fd_box[0] = None
    if r != 0:
        key = errno.errorcode.get(ctypes.get_errno(), "?")
    else:
        try:
            s.sendall(b"GET http://192.0.2.1/hello.txt HTTP/1.1\r\nHost: 192.0.2.1\r\n\r\n")
            key = s.recv(200).decode(errors="replace").split("\r\n")[0] or "closed"
        except OSError as e:
            key = errno.errorcode.get(e.errno, "?")
    answers[key] = answers.get(key, 0) + 1
    s.close()
stop = True
flipper.join(); swapper.join()
say("answers", sorted(answers.items()))
"#,
    );
    assert_eq!(r.json["enforced"]["mode"], "landlock-only", "{}", r.raw);
    let answers = r.said("answers");
    assert!(!answers.contains("door-bypassed"), "the server behind the proxy's port elsewhere: {answers}");
    assert!(answers.contains("HTTP/1.0 200"), "the proxy is reached: {answers}");
    assert!(answers.contains("ENETUNREACH"), "the swapped-in address is refused: {answers}");
}

#[test]
fn the_held_doors_listeners_serve_the_call_and_no_other_process() {
    if !world_available() {
        return;
    }
    // The held door's listeners are on the world's loopback, where any process can connect.
    // While a call runs, another process of the world (outside any sandbox) connects to every
    // listening port on 127.0.0.1 and asks each for the allowed host's file.
    let policy = "commands = [\"curl\", \"sh\", \"sleep\"]\n[internet]\nhosts = [\"allowed.test\"]\n";
    let w = World::in_mode("proxy-held-stranger", policy, true);
    let stranger = r#"
import socket, sys, time
def listening():
    ports = set()
    for line in open("/proc/net/tcp").read().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        ip, port = local.split(":")
        if state == "0A" and ip == "0100007F":
            ports.add(int(port, 16))
    return ports
# Waits until the call's listeners are up (however slowly lnk starts), then takes them all.
deadline = time.time() + 20
while not listening() - {80, 8080} and time.time() < deadline:
    time.sleep(0.05)
time.sleep(0.2)
ports = listening()
served = []
for port in sorted(ports - {80, 8080}):
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=2)
        s.sendall(b"GET http://allowed.test/hello.txt HTTP/1.1\r\nHost: allowed.test\r\n\r\n")
        s.settimeout(2)
        answer = s.recv(4096).decode(errors="replace")
    except OSError as e:
        answer = "error " + str(e)
    served.append((port, answer))
print("tried", len(served), "listeners", sorted(ports))
print("stranger got", "hello from allowed" in "".join(a for _, a in served))
"#;
    let inner = w.agent.command(RESOLVE, &["sh", "-c", "sleep 8; curl -fsS http://allowed.test/hello.txt"]);
    let lnk = format!(
        "{:?} {}",
        inner.get_program(),
        inner
            .get_args()
            .map(|a| format!("'{}'", a.to_string_lossy().replace('\'', "'\\''")))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let script = format!(
        "{lnk} > {out} & pid=$!; python3 -c '{stranger}'; wait $pid",
        out = w.agent.dir.join("report.json").display(),
        stranger = stranger.replace('\'', "'\\''"),
    );
    let mut c = w.in_world(false);
    c.args(["sh", "-c", &script]);
    let out = c.output().unwrap();
    let said = common::stdout(&out);
    let report = std::fs::read_to_string(w.agent.dir.join("report.json")).unwrap_or_default();
    assert!(said.contains("stranger got False"), "{said}\n{}\n{report}", common::stderr(&out));
    assert!(
        !said.contains("tried 0 listeners"),
        "the proxy's listener was found: {said}\n{}\n{report}",
        common::stderr(&out)
    );
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(w.agent.dir.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["stdout"]["text"], "hello from allowed\n", "the call itself is served: {report}");
    // The strangers are counted, not named: they cannot push the call's own refusals out.
    let refusals = report["internet"]["refusals"].as_array().unwrap();
    assert!(report["internet"]["refused"].as_u64().unwrap() > refusals.len() as u64, "{report}");
    assert!(refusals.is_empty(), "{report}");
}

#[test]
fn the_held_door_neither_serves_late_nor_spends_the_hosts_loopback_ports() {
    if !world_available() {
        return;
    }
    // A program that resets its connections before the proxy accepts them, by the thousand:
    // no admission is left for a stranger to take over (the peer comes from `accept`), and the
    // helper's connecting sockets use a loopback address of the call's own, so their TIME_WAITs
    // never hold 127.0.0.1's ports; a direct connect to the program's own loopback, or to an
    // internal address, is answered as a namespace would, with no grant offered.
    let w = World::in_mode(
        "proxy-held-resets",
        "commands = [\"python3\"]\n[internet]\nhosts = [\"allowed.test\"]\n",
        true,
    );
    let r = w.python(
        &[],
        r#"
import struct
sources = set()
for i in range(400):
    s = socket.socket()
    s.connect(("127.0.0.1", 3128))
    sources.add(s.getsockname()[0])
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
say("sources", sorted(sources))
say("own_loopback", attempt(lambda: socket.create_connection(("127.0.0.1", 2375), timeout=2)))
say("metadata", attempt(lambda: socket.create_connection(("169.254.169.254", 80), timeout=2)))
"#,
    );
    let sources = r.said("sources");
    assert!(!sources.contains("'127.0.0.1'") && sources.starts_with("['127."), "{sources}");
    assert_eq!(sources.matches('\'').count(), 2, "one address for the call: {sources}");
    r.assert_said("own_loopback", "ECONNREFUSED");
    r.assert_said("metadata", "ENETUNREACH");
    let denials = r.json["denials"].as_array().unwrap();
    assert!(
        !denials.iter().any(|d| d["target"] == "127.0.0.1:2375"),
        "the program's own loopback: {}",
        r.raw
    );
    let metadata =
        denials.iter().find(|d| d["target"] == "169.254.169.254:80").unwrap_or_else(|| panic!("{}", r.raw));
    assert!(metadata["fix"].is_null(), "no grant offered for an internal address: {metadata}");
}

#[test]
fn a_connect_flood_leaves_the_hosts_other_processes_connecting() {
    if !world_available() {
        return;
    }
    // Three calls at once, each connecting to its proxy and closing, thousands of times, in a
    // world whose automatic ports are 1,000 (as a host's 28,000 would be after a longer flood):
    // the helper's connections reserve no port, so another process of the host still connects,
    // and each call's own connections go on.
    let w = World::in_mode(
        "proxy-held-flood",
        "commands = [\"python3\"]\n[internet]\nhosts = [\"allowed.test\"]\n",
        true,
    );
    let flood = r#"
import socket
done = failed = 0
for i in range(2500):
    s = socket.socket()
    try:
        s.connect(("127.0.0.1", 3128)); done += 1
    except OSError:
        failed += 1
    s.close()
print("done", done, "failed", failed)
"#;
    let check = r#"
import socket
server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen(512)
ok = 0
for i in range(300):
    s = socket.socket()
    s.connect(server.getsockname()); ok += 1
    server.accept()[0].close()
    s.close()
print("host-ok", ok)
"#;
    let policy = w.agent.policy.clone();
    let mut c = w.in_world(false);
    c.env("WORLD_PORT_RANGE", "40000 40999")
        .env("LNK", lnk_bin())
        .env("POLICY", &policy)
        .env("FLOOD", flood)
        .env("CHECK", check)
        .env("OUT", w.agent.dir.join("flood"))
        .args([
            "sh",
            "-c",
            r#"for i in 1 2 3; do "$LNK" sandbox run --report json --file "$POLICY" -- python3 -c "$FLOOD" > "$OUT.$i" & done; wait; python3 -c "$CHECK""#,
        ]);
    let out = c.output().unwrap();
    assert!(
        stdout(&out).contains("host-ok 300"),
        "another process could not connect: {}\n{}",
        stdout(&out),
        stderr(&out)
    );
    for i in 1..=3 {
        let report = std::fs::read_to_string(w.agent.dir.path.join(format!("flood.{i}"))).unwrap();
        let r: serde_json::Value = serde_json::from_str(report.trim()).unwrap();
        let text = r["stdout"]["text"].as_str().unwrap_or_default();
        // Its own connections go on until its own address's ports are spent (a thousand here,
        // about 28,000 on a host), as a process of its own would find.
        let done: u32 = text.split_whitespace().nth(1).and_then(|n| n.parse().ok()).unwrap_or(0);
        assert!(done >= 900, "call {i}: {report}");
    }
}

#[test]
fn a_tcp_endpoint_is_reached_by_name_by_a_client_that_knows_no_proxy() {
    if !world_available() {
        return;
    }
    let policy = r#"
commands = ["python3"]
[internet]
hosts = ["allowed.test"]
tcp = ["db.test:5432", "192.0.2.1:5432", "[2001:db8::1]:80"]
"#;
    let w = World::new("proxy-tcp", policy);
    let r = w.python(
        &["--resolve", "db.test:5432:192.0.2.1"],
        r#"
s = socket.create_connection(("db.test", 5432), timeout=5)
f = s.makefile("rwb")
say("greeting", f.readline().decode().strip())
f.write(b"select 1\n"); f.flush()
say("echo", f.readline().decode().strip())
say("hosts", open("/etc/hosts").read().split("\n")[2])
say("hosts_write", attempt(lambda: open("/etc/hosts", "a")))
say("other_port", attempt(lambda: socket.create_connection(("db.test", 5433), timeout=3)))
by_address = socket.create_connection(("192.0.2.1", 5432), timeout=5)
say("by_address", by_address.recv(6).decode().strip())
v6 = socket.create_connection(("2001:db8::1", 80), timeout=5)
v6.sendall(b"GET / HTTP/1.0\r\n\r\n")
say("by_ipv6_address", v6.makefile("rb").read().decode().split("\r\n\r\n")[-1].strip())
say("other_address", attempt(lambda: socket.create_connection(("192.0.2.2", 5432), timeout=3)))
"#,
    );
    r.assert_said("greeting", "pg-ok");
    r.assert_said("echo", "echo:select 1");
    r.assert_said("hosts", "127.77.0.1\tdb.test");
    assert!(["EACCES", "EROFS"].contains(&r.said("hosts_write").as_str()), "{}", r.raw);
    // Another port of the endpoint's address: nothing listens there in the namespace.
    r.assert_said("other_port", "ECONNREFUSED");
    // An endpoint given as an address is reached at that address, IPv4 or IPv6; its
    // neighbours are not there.
    r.assert_said("by_address", "pg-ok");
    r.assert_said("by_ipv6_address", "ipv6-host");
    r.assert_said("other_address", "ENETUNREACH");
    assert_eq!(r.json["internet"]["connections"], 3, "{}", r.raw);
}

#[test]
fn in_the_held_door_a_tcp_endpoint_is_reached_by_address_and_a_name_is_refused() {
    if !world_available() {
        return;
    }
    let policy = r#"
commands = ["python3"]
[internet]
hosts = ["allowed.test"]
tcp = ["192.0.2.1:5432", "[2001:db8::1]:80"]
"#;
    let w = World::in_mode("proxy-held-tcp", policy, true);
    let r = w.python(
        &[],
        r#"
s = socket.create_connection(("192.0.2.1", 5432), timeout=5)
f = s.makefile("rwb")
say("greeting", f.readline().decode().strip())
f.write(b"select 1\n"); f.flush()
say("echo", f.readline().decode().strip())
v6 = socket.create_connection(("2001:db8::1", 80), timeout=5)
v6.sendall(b"GET / HTTP/1.0\r\n\r\n")
say("by_ipv6_address", v6.makefile("rb").read().decode().split("\r\n\r\n")[-1].strip())
say("other_port", attempt(lambda: socket.create_connection(("192.0.2.1", 5433), timeout=3)))
say("other_address", attempt(lambda: socket.create_connection(("192.0.2.2", 5432), timeout=3)))
"#,
    );
    assert_eq!(r.json["enforced"]["mode"], "landlock-only", "{}", r.raw);
    r.assert_said("greeting", "pg-ok");
    r.assert_said("echo", "echo:select 1");
    r.assert_said("by_ipv6_address", "ipv6-host");
    r.assert_said("other_port", "ENETUNREACH");
    r.assert_said("other_address", "ENETUNREACH");
    assert_eq!(r.json["internet"]["connections"], 2, "{}", r.raw);

    // By name, the program would need a hosts file, which needs a mount namespace: a limit of
    // the mode, not of the file (unsupported, 125), saying what to list instead; nothing runs.
    let named = World::in_mode(
        "proxy-held-named",
        "commands = [\"true\"]\n[internet]\ntcp = [\"db.test:5432\"]\n",
        true,
    );
    let r = named.run(&[], &["true"]);
    assert_eq!(r.outcome(), "unsupported", "{}", r.raw);
    assert_eq!(r.json["exit_code"], 125, "{}", r.raw);
    let error = r.json["error"].as_str().unwrap();
    assert!(error.contains("`db.test:5432` by name") && error.contains("address instead"), "{error}");
}

#[test]
fn under_the_held_connects_landlock_allows_the_asked_ports_only() {
    if !world_available() {
        return;
    }
    // A test build without the hold (`LNK_TEST_WITHOUT=held-connects`): the program's own
    // connects reach the kernel, where Landlock's rule is the only layer left. It refuses every
    // port but the proxy's and the endpoints', and every bind.
    let policy =
        "commands = [\"python3\"]\n[internet]\nhosts = [\"allowed.test\"]\ntcp = [\"192.0.2.1:5432\"]\n";
    let w = World::in_mode("proxy-held-landlock", policy, true);
    let script = format!(
        "{PY_PRELUDE}\n{}",
        r#"
def connect(address):
    s = socket.socket()
    s.settimeout(3)
    s.connect(address)
say("port_80", attempt(lambda: connect(("198.51.100.7", 80))))
say("port_8080", attempt(lambda: connect(("127.0.0.1", 8080))))
say("bind", attempt(lambda: socket.socket().bind(("127.0.0.1", 3129))))
say("endpoint_port", attempt(lambda: connect(("192.0.2.1", 5432))))
"#
    );
    let inner = w.agent.command(&[], &["python3", "-c", &script]);
    let mut c = w.in_world(false);
    c.arg(inner.get_program()).args(inner.get_args()).env("LNK_TEST_WITHOUT", "held-connects");
    let r = Report::from(c.output().unwrap());
    assert_eq!(r.json["enforced"]["mode"], "landlock-only", "{}", r.raw);
    r.assert_said("port_80", "EACCES");
    r.assert_said("port_8080", "EACCES");
    r.assert_said("bind", "EACCES");
    // The asked ports themselves are Landlock's to allow, on any address: why connects are held.
    r.assert_said("endpoint_port", "ok");
}

#[test]
fn per_minute_is_enforced_for_the_call_and_a_new_call_starts_afresh() {
    if !world_available() {
        return;
    }
    let policy = r#"
commands = ["curl", "sh"]
[internet]
hosts = ["allowed.test"]
per_minute = 2
"#;
    let w = World::new("proxy-rate", policy);
    let script = "for i in 1 2 3; do curl -s -o /dev/null -w '%{http_code} ' http://allowed.test/hello.txt; done; \
                  curl -sSk https://allowed.test/hello.txt; echo connect=$?";
    let r = w.run(RESOLVE, &["sh", "-c", script]);
    assert!(r.out().starts_with("200 200 429 "), "{}", r.raw);
    assert!(r.out().contains("connect=56"), "a CONNECT past the budget is refused: {}", r.raw);
    let refused = refusals(&r);
    assert_eq!(refused.len(), 2, "{}", r.raw);
    assert!(refused.iter().all(|x| x.2.contains("per_minute")), "{refused:?}");
    let again =
        w.run(RESOLVE, &["sh", "-c", "curl -s -o /dev/null -w '%{http_code}' http://allowed.test/hello.txt"]);
    assert_eq!(again.out(), "200", "each call has a budget of its own: {}", again.raw);
}

#[test]
fn localhost_and_browser_are_never_given() {
    if !world_available() {
        return;
    }
    let policy = r#"
commands = ["curl"]
[internet]
hosts = ["allowed.test"]
[localhost]
ports = [8080]
[browser]
enabled = true
"#;
    let w = World::new("proxy-localhost", policy);
    // Through the proxy (`--noproxy ''`: NO_PROXY sends the loopback direct).
    let r = w.run(RESOLVE, &["curl", "-s", "--noproxy", "", "-w", " %{http_code}", "http://localhost:8080/"]);
    assert!(!r.out().contains("harness-secret") && r.out().ends_with(" 403"), "{}", r.raw);
    assert_eq!(refusals(&r)[0].0, "localhost");
}

#[test]
fn real_clients_git_pip_and_node() {
    if !world_available() {
        return;
    }
    for w in World::both("proxy-clients", "commands = [\"*\"]\n[internet]\nhosts = [\"allowed.test\"]\n") {
        real_clients_in(&w);
    }
}

/// git, pip and node through the proxy, in `w`'s mode.
fn real_clients_in(w: &World) {
    let www = w.www();
    // A repository served over git's dumb HTTP protocol.
    let git = |dir: &std::path::Path, args: &[&str]| {
        let s = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .env("HOME", dir)
            .output()
            .unwrap();
        assert!(s.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&s.stderr));
    };
    let work = w.agent.dir.join("gitwork");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("README"), "cloned through the proxy\n").unwrap();
    git(&work, &["init", "-q", "-b", "main"]);
    git(&work, &["add", "README"]);
    git(&work, &["commit", "-qm", "one"]);
    git(&www, &["clone", "-q", "--bare", work.to_str().unwrap(), "repo.git"]);
    git(&www.join("repo.git"), &["update-server-info"]);
    // A package index with one wheel, made by hand.
    make_wheel(&www.join("simple/lnkdemo"));
    let node = r#"
const net = require('net'), tls = require('tls'), https = require('https');
const s = net.connect(3128, '127.0.0.1', () => s.write('CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\n'));
s.once('data', (d) => {
  if (!d.toString().startsWith('HTTP/1.1 200')) { console.log('no tunnel: ' + d); process.exit(1); }
  https.get({ host: 'allowed.test', path: '/hello.txt', rejectUnauthorized: false,
              createConnection: () => tls.connect({ socket: s, servername: 'allowed.test', rejectUnauthorized: false }) },
    (res) => { res.setEncoding('utf8'); res.on('data', (c) => process.stdout.write('node:' + c)); });
});
"#;
    let script = "set -e; cd \"$TMPDIR\"; git clone -q http://allowed.test/repo.git r; echo git:$(cat r/README); \
         python3 -m pip install -q --no-cache-dir --disable-pip-version-check --break-system-packages \
           --trusted-host allowed.test --index-url http://allowed.test/simple/ --target pkgs lnkdemo; \
         PYTHONPATH=pkgs python3 -c 'import lnkdemo; print(\"pip:\" + lnkdemo.HELLO)'; \
         node -e \"$NODE_SCRIPT\"";
    let r = w.run(&[RESOLVE, &["--env", &format!("NODE_SCRIPT={node}")]].concat(), &["sh", "-c", script]);
    let out = r.out();
    assert!(out.contains("git:cloned through the proxy"), "{}", r.raw);
    assert!(out.contains("pip:installed through the proxy"), "{}", r.raw);
    assert!(out.contains("node:hello from allowed"), "{}: {}", w.mode(), r.raw);
    assert_eq!(r.code, Some(0), "{}: {}", w.mode(), r.raw);
}

/// Writes `lnkdemo-1.0-py3-none-any.whl` and its index page into `dir` (a PEP 503 project page).
fn make_wheel(dir: &std::path::Path) {
    std::fs::create_dir_all(dir).unwrap();
    let script = r#"
import base64, hashlib, sys, zipfile, os
d = sys.argv[1]
name = "lnkdemo-1.0-py3-none-any.whl"
files = {
    "lnkdemo/__init__.py": b"HELLO = 'installed through the proxy'\n",
    "lnkdemo-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: lnkdemo\nVersion: 1.0\n",
    "lnkdemo-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = ""
for path, data in files.items():
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record += f"{path},sha256={digest},{len(data)}\n"
record += "lnkdemo-1.0.dist-info/RECORD,,\n"
with zipfile.ZipFile(os.path.join(d, name), "w") as z:
    for path, data in files.items():
        z.writestr(path, data)
    z.writestr("lnkdemo-1.0.dist-info/RECORD", record)
open(os.path.join(d, "index.html"), "w").write(f'<html><body><a href="{name}">{name}</a></body></html>')
"#;
    let s = Command::new("python3").args(["-c", script]).arg(dir).status().unwrap();
    assert!(s.success());
}

#[test]
fn without_user_namespaces_internet_goes_through_the_held_door() {
    if !world_available() {
        return;
    }
    // Inside the tests' internet, a kernel that refuses user namespaces (see
    // `without_user_namespaces`), not the test build's knob: lnk runs in its Landlock-only mode
    // and makes the program's connects itself.
    let w = World::new("proxy-nouserns", CURL_POLICY);
    let mut inner = w.agent.command(
        RESOLVE,
        &[
            "sh",
            "-c",
            "curl -fsS http://allowed.test/hello.txt; curl -sS -o /dev/null -w '%{http_code}\\n' http://unlisted.test/; \
             curl -sS --noproxy '*' http://192.0.2.1/hello.txt; echo direct=$?",
        ],
    );
    inner.env("TMPDIR", w.tmp());
    let wrapped = common::without_user_namespaces(&inner);
    let mut c = w.in_world(false);
    c.arg(wrapped.get_program()).args(wrapped.get_args());
    let r = Report::from(c.output().unwrap());
    assert_eq!(r.json["enforced"]["mode"], "landlock-only", "{}", r.raw);
    assert!(r.json["enforced"]["mode_reason"].as_str().unwrap().contains("user namespace"), "{}", r.raw);
    assert_eq!(r.out(), "hello from allowed\n403\ndirect=7\n", "{}", r.raw);
    assert_eq!(r.json["internet"]["connections"], 1, "{}", r.raw);
    let refused = refusals(&r);
    assert!(refused.iter().any(|x| x.0 == "unlisted.test"), "{refused:?}");
    assert!(
        refused.iter().any(|x| x.0 == "192.0.2.1" && x.1 == 80 && x.2.contains("a direct connection")),
        "the direct connect is named: {refused:?}"
    );
    let direct =
        r.json["denials"].as_array().unwrap().iter().find(|d| d["target"] == "192.0.2.1:80").cloned();
    let direct = direct.unwrap_or_else(|| panic!("{}", r.raw));
    assert_eq!(direct["fix"]["words"], "add \"192.0.2.1:80\" to [internet] tcp");
    assert!(direct["why"].as_str().unwrap().contains("through the proxy"), "{direct}");
}

#[test]
fn under_a_containers_default_seccomp_profile_internet_goes_through_the_held_door() {
    if !world_available() {
        return;
    }
    // Docker's and podman's default profiles refuse user namespaces and `pidfd_getfd`; the
    // held door needs neither (see `tests/containers/docker_like_seccomp.c`).
    let w = World::new("proxy-container", CURL_POLICY);
    let mut inner = w.agent.command(
        RESOLVE,
        &["sh", "-c", "curl -fsS http://allowed.test/hello.txt; curl -fsSk https://allowed.test/hello.txt"],
    );
    inner.env("TMPDIR", w.tmp());
    let Some(contained) = common::docker_like(&w.agent.dir.path, &inner) else { return };
    for as_root in [false, true] {
        let mut c = w.in_world(as_root);
        c.arg(contained.get_program()).args(contained.get_args());
        let r = Report::from(c.output().unwrap());
        assert_eq!(r.json["enforced"]["mode"], "landlock-only", "as root: {as_root}: {}", r.raw);
        assert_eq!(r.out(), "hello from allowed\nhello from allowed\n", "as root: {as_root}: {}", r.raw);
        assert_eq!(r.json["internet"]["confinement"], "held connects", "{}", r.raw);
    }
}

#[test]
fn status_says_how_internet_is_confined() {
    if !world_available() {
        return;
    }
    let out = common::run(common::lnk().args(["sandbox", "status"]));
    let text = common::stdout(&out);
    assert!(
        text.contains("[internet] on this kernel: a network namespace whose only door is the call's proxy"),
        "{text}"
    );
    // And where user namespaces are refused, status says each connect is held and made by the
    // helper.
    let mut status = common::lnk();
    status.args(["sandbox", "status", "--json"]);
    let out = common::run(&mut common::without_user_namespaces(&status));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(json["internet"].as_str().unwrap().contains("each connect held by seccomp"), "{json}");
    assert_eq!(json["internet_error"], serde_json::Value::Null, "{json}");
    assert_eq!(json["mode"], "landlock-only", "{json}");
}

#[test]
fn a_background_command_gets_the_same_proxy() {
    if !world_available() {
        return;
    }
    // Without --resolve (a background start takes none), the listed host is an address.
    for w in World::both("proxy-background", "commands = [\"curl\"]\n[internet]\nhosts = [\"192.0.2.1\"]\n") {
        let agent_dir = w.agent.home.join("Link/Agents/a");
        std::fs::create_dir_all(&agent_dir).unwrap();
        let files_dir = w.agent.home.join("Link/Files");
        let script = r#"
lr=$1; shift
"$lr" start --agent-dir "$AGENT" --files-dir "$FILES" --file "$POLICY" -- curl -fsS http://192.0.2.1/hello.txt >/dev/null
for i in $(seq 200); do "$lr" list --json --agent-dir "$AGENT" --files-dir "$FILES" | grep -q '"running"' || break; sleep 0.05; done
"$lr" start --agent-dir "$AGENT" --files-dir "$FILES" --file "$POLICY" -- curl -sS -o /dev/null -w '%{http_code}' http://198.51.100.7/ >/dev/null
for i in $(seq 200); do "$lr" list --json --agent-dir "$AGENT" --files-dir "$FILES" | grep -q '"running"' || break; sleep 0.05; done
"$lr" list --json --agent-dir "$AGENT" --files-dir "$FILES"
"#;
        let mut c = w.in_world(false);
        c.args(["sh", "-c", script, "sh", env!("CARGO_BIN_EXE_lnk-link-run")])
            .env("AGENT", &agent_dir)
            .env("FILES", &files_dir)
            .env("POLICY", &w.agent.policy);
        let out = c.output().unwrap();
        let list: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}\n{}", common::stdout(&out), common::stderr(&out)));
        let records = list["records"].as_array().unwrap();
        assert_eq!(records.len(), 2, "{list}");
        let mut outputs: Vec<String> = Vec::new();
        for r in records {
            assert_eq!(r["state"], "exited", "{r}");
            let id = r["id"].as_str().unwrap();
            let read = Command::new(env!("CARGO_BIN_EXE_lnk-link-run"))
                .args(["read", id, "--agent-dir"])
                .arg(&agent_dir)
                .arg("--files-dir")
                .arg(&files_dir)
                .env("HOME", &w.agent.home)
                .output()
                .unwrap();
            outputs.push(common::stdout(&read));
        }
        assert!(outputs.iter().any(|o| o.contains("hello from allowed")), "{}: {outputs:?}", w.mode());
        assert!(
            outputs.iter().any(|o| o.contains("403")),
            "{}: the unlisted address is refused: {outputs:?}",
            w.mode()
        );
    }
}

/// Advice is tested by taking it, for connections: each refusal's fix applied to the sandbox
/// file as a harness would, `check` passing, and the same command then working, in the own
/// world and with the held door. The harness's own server (127.0.0.1:8080 in this world) by
/// address and by `localhost`, without `[internet]` and with `hosts = ["localhost"]`; an
/// unlisted host; a listed host on another port (a `tcp` entry by name in the own world; none
/// without it, whose `why` says to list the address); a `tcp` name that resolves to loopback.
#[test]
fn each_connection_refusal_works_once_its_fix_is_applied() {
    if !world_available() {
        return;
    }
    let resolve = ["--resolve", "unlisted.test:80:198.51.100.7", "--resolve", "allowed.test:8081:192.0.2.1"];
    let cases = [
        ("by-address", "", "http://127.0.0.1:8080/", "127.0.0.1:8080", "harness-secret"),
        ("by-name", "", "http://localhost:8080/", "127.0.0.1:8080", "harness-secret"),
        (
            "hosts-localhost",
            "[internet]\nhosts = [\"localhost\"]\n",
            "http://127.0.0.1:8080/",
            "127.0.0.1:8080",
            "harness-secret",
        ),
        (
            "unlisted",
            "[internet]\nhosts = [\"allowed.test\"]\n",
            "http://unlisted.test/",
            "unlisted.test:80",
            "unlisted-host",
        ),
        (
            "other-port",
            "[internet]\nhosts = [\"allowed.test\"]\n",
            "http://allowed.test:8081/hello.txt",
            "allowed.test:8081",
            "hello from allowed",
        ),
        // NO_PROXY sends the loopback direct: the host's server there is named, and reached
        // once its address is a tcp endpoint (a forwarder on the namespace's loopback).
        (
            "tcp-name-loopback",
            "[internet]\ntcp = [\"localhost:8080\"]\n",
            "http://localhost:8080/",
            "127.0.0.1:8080",
            "harness-secret",
        ),
    ];
    for (name, internet, url, target, served) in cases {
        let policy = format!("commands = [\"curl\"]\n{internet}");
        for w in World::both(&format!("fix-net-{name}"), &policy) {
            // A tcp entry by name needs the own world: the held door's run refuses that file
            // (and check says so: see `sandbox_file.rs`).
            if w.held && internet.contains("localhost:") {
                continue;
            }
            let curl = ["curl", "-sS", "--max-time", "5", url];
            let first = w.run(&resolve, &curl);
            assert!(!first.out().contains(served), "{}: {name}: reached first: {}", w.mode(), first.raw);
            let denial = first.json["denials"]
                .as_array()
                .unwrap()
                .iter()
                .find(|d| d["target"] == target)
                .cloned()
                .unwrap_or_else(|| panic!("{}: {name}: no denial of {target}: {}", w.mode(), first.raw));
            if name == "other-port" && w.held {
                // No tcp entry by name without the own world: no fix, and why says what would.
                assert!(denial["fix"].is_null(), "{denial}");
                assert!(denial["why"].as_str().unwrap().contains("ADDRESS:8081"), "{denial}");
                continue;
            }
            apply_fix(&w.agent.policy, &denial["fix"]);
            assert_check_ok(&w.agent.policy, &w.agent.home);
            let again = w.run(&resolve, &curl);
            assert!(
                again.out().contains(served),
                "{}: {name}: after `{}`: {}\n{}",
                w.mode(),
                denial["fix"]["words"],
                again.raw,
                std::fs::read_to_string(&w.agent.policy).unwrap()
            );
        }
    }
}

const CONFINED_POLICY: &str = r#"
commands = ["curl", "python3"]
[files]
write = ["~/Link/Files"]
[internet]
hosts = ["allowed.test"]
"#;

#[test]
fn the_proxys_threads_open_no_file_and_still_serve() {
    if !world_available() {
        return;
    }
    // A test build's fault point makes the thread that serves a connection try to open a file
    // the person can read (/etc/passwd) before it reads the request, and log what it got.
    for w in World::both("proxy-confined-open", CONFINED_POLICY) {
        for as_root in [false, true] {
            let inner = w.agent.command(RESOLVE, &["curl", "-fsS", "http://allowed.test/hello.txt"]);
            let mut c = w.in_world(as_root);
            c.env("LNK_FAULT", "proxy-thread-opens-a-file:fail")
                .arg(inner.get_program())
                .args(inner.get_args());
            let r = Report::from(c.output().expect("unshare runs"));
            assert_eq!(r.out(), "hello from allowed\n", "{}, as root {as_root}: served: {}", w.mode(), r.raw);
            let tried: Vec<String> = refusals(&r)
                .into_iter()
                .map(|(_, _, why)| why)
                .filter(|why| why.starts_with("fault point"))
                .collect();
            assert_eq!(tried.len(), 1, "{}: the fault point ran once: {}", w.mode(), r.raw);
            assert!(
                tried[0].ends_with("Operation not permitted (os error 1)"),
                "{}, as root {as_root}: {tried:?}",
                w.mode()
            );
        }
    }
}

/// The threads of process `pid` and what `/proc` says of each: (tid, `Seccomp` mode, `NoNewPrivs`).
fn threads_confinement(pid: u32) -> Vec<(u32, u32, u32)> {
    let mut threads = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).into_iter().flatten().flatten() {
        let Ok(status) = std::fs::read_to_string(task.path().join("status")) else { continue };
        let field = |name: &str| {
            status.lines().find_map(|l| l.strip_prefix(name)).and_then(|v| v.trim().parse().ok()).unwrap_or(0)
        };
        let tid = task.file_name().to_string_lossy().parse().unwrap_or(0);
        threads.push((tid, field("Seccomp:"), field("NoNewPrivs:")));
    }
    threads
}

/// The pid of the `lnk` that `parent` started.
fn lnk_child_of(parent: u32) -> Option<u32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|entry| {
        let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
        let (comm, rest) = stat.split_once(") ")?;
        let ppid: u32 = rest.split_whitespace().nth(1)?.parse().ok()?;
        (ppid == parent && comm.ends_with("(lnk")).then_some(pid)
    })
}

#[test]
fn while_the_proxy_reads_a_request_its_threads_run_under_seccomp_and_the_helper_does_not() {
    if !world_available() {
        return;
    }
    // The program sends half a request and says so (a file in its write grant), then waits:
    // while the proxy's thread waits for the rest, the test looks at the helper's threads.
    let script = r#"
import os, socket, sys, time
proxy = os.environ["HTTP_PROXY"].rsplit(":", 1)
s = socket.create_connection(("127.0.0.1", int(proxy[1])))
s.sendall(b"GET http://allowed.test/hello.txt HTTP/1.1\r\n")
open(sys.argv[1], "w").close()
time.sleep(4)
s.sendall(b"Host: allowed.test\r\nConnection: close\r\n\r\n")
answer = b""
while True:
    more = s.recv(65536)
    if not more:
        break
    answer += more
print(answer.split(b"\r\n\r\n", 1)[1].decode(), end="")
"#;
    for w in World::both("proxy-confined-threads", CONFINED_POLICY) {
        let marker = w.agent.home.join("Link/Files/half-sent");
        let _ = std::fs::remove_file(&marker);
        let inner = w.agent.command(RESOLVE, &["python3", "-c", script, marker.to_str().unwrap()]);
        let mut c = w.in_world(false);
        c.arg(inner.get_program())
            .args(inner.get_args())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let child = c.spawn().expect("unshare runs");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while !marker.exists() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let helper = lnk_child_of(child.id());
        // The connection's thread may not have been spawned yet: look again, well within the
        // program's 4 s of waiting.
        let look_until = std::time::Instant::now() + std::time::Duration::from_secs(3);
        let mut threads = helper.map(threads_confinement).unwrap_or_default();
        while threads.iter().filter(|(_, seccomp, _)| *seccomp == 2).count() < 2
            && std::time::Instant::now() < look_until
        {
            std::thread::sleep(std::time::Duration::from_millis(20));
            threads = helper.map(threads_confinement).unwrap_or_default();
        }
        let r = Report::from(child.wait_with_output().unwrap());
        assert!(marker.exists(), "{}: the program never sent its half request: {}", w.mode(), r.raw);
        let helper = helper.unwrap_or_else(|| panic!("{}: no lnk under the world", w.mode()));
        let confined: Vec<&(u32, u32, u32)> =
            threads.iter().filter(|(_, seccomp, nnp)| *seccomp == 2 && *nnp == 1).collect();
        // The accepting thread and the connection's, at least; the helper's own main thread
        // (which forks, signals and reports) is not confined by them.
        assert!(confined.len() >= 2, "{}: the proxy's threads under a filter: {threads:?}", w.mode());
        assert!(
            threads.iter().any(|(tid, seccomp, _)| *tid == helper && *seccomp == 0),
            "{}: the helper's main thread: {threads:?}",
            w.mode()
        );
        assert_eq!(
            r.out(),
            "hello from allowed\n",
            "{}: the request, finished, was served: {}",
            w.mode(),
            r.raw
        );
    }
}
