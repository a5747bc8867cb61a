//! Ordinary programs work inside, in each mode: a local server beside `[internet]`, the person's
//! toolchains under `commands = ["*"]`, a memfd, the program's own processes by pid, a
//! terminal, a bound client socket, Unix sockets of the call's own (issue 30). Each also with
//! its hostile side: what the program did not make stays out of reach.
//!
//! The suite runs as root and as an ordinary user.

mod common;
use common::*;

#[test]
fn a_local_server_beside_internet_is_reached_directly_and_never_offered_as_the_hosts() {
    // With `[internet]`, the proxy variables are set; NO_PROXY names the loopback, so urllib and
    // curl reach the program's own server directly. A request for it sent to the proxy anyway
    // is refused without a fix: an entry would open the host's port of that number.
    let policy =
        "commands = [\"sh\", \"python3\", \"curl\", \"sleep\"]\n[internet]\nhosts = [\"example.org\"]\n";
    let script = r#"cd "$TMPDIR" && echo served > index.html
python3 -m http.server 8765 --bind 127.0.0.1 >/dev/null 2>&1 & server=$!
i=0; while ! curl -s -o /dev/null http://127.0.0.1:8765/ && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
python3 -c "import urllib.request; print('urllib=' + urllib.request.urlopen('http://127.0.0.1:8765/', timeout=5).read().decode().strip())"
python3 -c "import urllib.request; print('urllib_name=' + urllib.request.urlopen('http://localhost:8765/', timeout=5).read().decode().strip())"
echo curl=$(curl -s --max-time 5 http://localhost:8765/)
echo proxied=$(curl -s --noproxy '' --max-time 5 -o /dev/null -w '%{http_code}' http://127.0.0.1:8765/)
echo no_proxy=$NO_PROXY
kill $server"#;
    for mode in modes() {
        let agent = Agent::new("local-server-internet", policy);
        let r = Report::from(run(in_mode(&mut agent.command(&[], &["sh", "-c", script]), mode)));
        assert_eq!(r.code, Some(0), "{mode:?}: {}", r.raw);
        r.assert_said("urllib", "served");
        r.assert_said("urllib_name", "served");
        r.assert_said("curl", "served");
        r.assert_said("no_proxy", "localhost,127.0.0.1,::1,127.0.0.0/8");
        // Through the proxy: refused, and no entry offered for the loopback.
        r.assert_said("proxied", "403");
        let denials = r.json["denials"].as_array().cloned().unwrap_or_default();
        for d in &denials {
            assert!(
                d["fix"].is_null() || !d["fix"]["value"].as_str().unwrap_or("").starts_with("127."),
                "{mode:?}: a loopback port offered: {d}"
            );
        }
    }
}

#[test]
fn under_any_program_a_toolchain_beneath_a_read_grant_runs() {
    // rustup's `~/.cargo/bin`, `~/.local/bin`: beneath a read grant, run by path. With a list of
    // programs they stay refused (the kernel answers EACCES: Landlock's execute right).
    let setup = |agent: &Agent| {
        let cargo = agent.home.join(".cargo/bin");
        let local = agent.home.join(".local/bin");
        std::fs::create_dir_all(&cargo).unwrap();
        std::fs::create_dir_all(&local).unwrap();
        std::fs::write(cargo.join("mytool"), "#!/bin/sh\necho tool-ran\n").unwrap();
        std::fs::copy("/bin/true", local.join("mytrue")).unwrap();
        for f in [cargo.join("mytool"), local.join("mytrue")] {
            std::fs::set_permissions(&f, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        }
    };
    let script = "~/.cargo/bin/mytool 2>/dev/null || echo tool-refused; \
                  ~/.local/bin/mytrue 2>/dev/null && echo elf-ran || echo elf-refused";
    for mode in modes() {
        let any = Agent::new("toolchain-any", "commands = [\"*\"]\n[files]\nread = [\"~\"]\n");
        setup(&any);
        let r = Report::from(run(in_mode(&mut any.command(&[], &["sh", "-c", script]), mode)));
        assert!(r.out().contains("tool-ran") && r.out().contains("elf-ran"), "{mode:?}: {}", r.raw);
        let listed = Agent::new("toolchain-listed", "commands = [\"sh\"]\n[files]\nread = [\"~\"]\n");
        setup(&listed);
        let r = Report::from(run(in_mode(&mut listed.command(&[], &["sh", "-c", script]), mode)));
        assert!(r.out().contains("tool-refused") && r.out().contains("elf-refused"), "{mode:?}: {}", r.raw);
    }
}

#[test]
fn a_plain_memfd_works_and_none_is_executable() {
    // glibc's callers, JITs and Wayland clients ask for a plain memfd. Each is made, and none can
    // be executed (Landlock does not govern a memfd): the own world's pid namespace makes every
    // memfd non-executable, the Landlock-only mode's helper makes it sealed so. One asked
    // executable (`MFD_EXEC`) is refused. Where the host keeps memfds executable
    // (`vm.memfd_noexec` 0) and lnk is not root, the own world cannot make them so: there a plain
    // one is refused and the report lists it among what the call lacks.
    let script = r#"import errno, fcntl, os, stat
def attempt(f):
    try:
        f(); return 'ok'
    except OSError as e:
        return errno.errorcode[e.errno]
try:
    fd = os.memfd_create('plain', os.MFD_CLOEXEC)
    print('plain=ok', flush=True)
except OSError as e:
    print('plain=' + errno.errorcode[e.errno], flush=True)
    fd = os.memfd_create('sealed', os.MFD_CLOEXEC | 8)  # MFD_NOEXEC_SEAL
os.write(fd, b'#!/bin/sh\necho ran\n'); os.lseek(fd, 0, 0)
print('read=' + os.read(fd, 100).decode().split()[-1], flush=True)
seals = fcntl.fcntl(fd, 1034)  # F_GET_SEALS
print('seal_exec=%s' % bool(seals & 0x20), flush=True)  # F_SEAL_EXEC
print('mode_exec=%s' % bool(os.fstat(fd).st_mode & 0o111), flush=True)
try:
    os.fchmod(fd, 0o755); print('chmod=ok', flush=True)
except OSError as e:
    print('chmod=' + errno.errorcode[e.errno], flush=True)
try:
    os.memfd_create('exec', 0x10)  # MFD_EXEC
    print('exec_memfd=ok', flush=True)
except OSError as e:
    print('exec_memfd=' + errno.errorcode[e.errno], flush=True)
# A POSIX ACL changes a mode where a chmod is checked against the exec seal: refused.
import struct
acl = struct.pack('<I', 2) + b''.join(struct.pack('<HHI', tag, perm, 0xffffffff) for tag, perm in ((1, 7), (4, 5), (0x20, 5)))
print('acl=' + attempt(lambda: os.setxattr(fd, 'system.posix_acl_access', acl)), flush=True)
print('acl_by_path=' + attempt(lambda: os.setxattr('/proc/self/fd/%d' % fd, 'system.posix_acl_access', acl)), flush=True)
print('mode_exec_after=%s' % bool(os.fstat(fd).st_mode & 0o111), flush=True)
# A huge-page memfd's mode is not checked against its seal: never made executable.
try:
    huge = os.memfd_create('huge', os.MFD_CLOEXEC | 4)  # MFD_HUGETLB
    os.fchmod(huge, 0o755)
    print('huge=%s' % ('executable' if os.fstat(huge).st_mode & 0o111 else 'not-executable'), flush=True)
except OSError as e:
    print('huge=refused', flush=True)
pid = os.fork()
if pid == 0:
    try:
        os.execv('/proc/self/fd/%d' % fd, ['x'])
    except OSError as e:
        print('run=' + errno.errorcode[e.errno], flush=True)
    os._exit(0)
os.waitpid(pid, 0)
"#;
    for mode in modes() {
        let agent = Agent::new("memfd", "commands = [\"python3\"]\n");
        let r = Report::from(run(in_mode(&mut agent.command(&[], &["python3", "-c", script]), mode)));
        assert_eq!(r.code, Some(0), "{mode:?}: {}", r.raw);
        let lacks_plain = r.json["enforced"]["lacks"]
            .as_array()
            .is_some_and(|l| l.iter().any(|l| l.as_str().is_some_and(|l| l.starts_with("plain memfds"))));
        let host_keeps_them_executable =
            std::fs::read_to_string("/proc/sys/vm/memfd_noexec").map_or(true, |v| v.trim() == "0");
        let sealed_only =
            mode == Mode::OwnWorld && !rustix::process::geteuid().is_root() && host_keeps_them_executable;
        r.assert_said("plain", if sealed_only { "EPERM" } else { "ok" });
        assert_eq!(lacks_plain, sealed_only, "{mode:?}: {}", r.raw);
        r.assert_said("read", "ran");
        r.assert_said("seal_exec", "True");
        r.assert_said("mode_exec", "False");
        assert_ne!(r.said("chmod"), "ok", "{mode:?}: {}", r.raw);
        r.assert_said("exec_memfd", if sealed_only { "EPERM" } else { "EACCES" });
        r.assert_said("run", "EACCES");
        assert_ne!(r.said("acl"), "ok", "{mode:?}: {}", r.raw);
        assert_ne!(r.said("acl_by_path"), "ok", "{mode:?}: {}", r.raw);
        r.assert_said("mode_exec_after", "False");
        assert_ne!(r.said("huge"), "executable", "{mode:?}: {}", r.raw);
        if mode == Mode::LandlockOnly {
            let named = r.json["denials"]
                .as_array()
                .is_some_and(|d| d.iter().any(|d| d["target"] == "memfd_create(MFD_EXEC)"));
            assert!(named, "{}", r.raw);
        }
    }
}

#[test]
fn the_programs_own_processes_by_pid_and_no_other() {
    // setpriority, prlimit and sched_setaffinity by the program's own pid work; a pid no process
    // has is ESRCH, as the kernel says it; the host's process is out of reach and unchanged.
    let mut victim = std::process::Command::new("sleep").arg("60").spawn().unwrap();
    let script = format!(
        r#"import errno, os, resource
def attempt(f):
    try:
        f(); return 'ok'
    except OSError as e:
        return errno.errorcode[e.errno]
me = os.getpid()
print('nice_self=' + attempt(lambda: os.setpriority(os.PRIO_PROCESS, me, 5)), flush=True)
print('prlimit_self=' + attempt(lambda: resource.prlimit(me, resource.RLIMIT_NOFILE)), flush=True)
print('affinity_self=' + attempt(lambda: os.sched_setaffinity(me, os.sched_getaffinity(0))), flush=True)
print('nobody=' + attempt(lambda: os.setpriority(os.PRIO_PROCESS, 4194300, 5)), flush=True)
print('victim=' + attempt(lambda: os.setpriority(os.PRIO_PROCESS, {victim}, 19)), flush=True)
print('victim_limit=' + attempt(lambda: resource.prlimit({victim}, resource.RLIMIT_CPU, (1, 1))), flush=True)
print('group=' + attempt(lambda: os.setpriority(os.PRIO_PGRP, 0, 5)), flush=True)
# pid 1: lnk's own in the own world, the host's init without it.
print('init_limit=' + attempt(lambda: resource.prlimit(1, resource.RLIMIT_CPU, (1, 1))), flush=True)
print('init_nice=' + attempt(lambda: os.setpriority(os.PRIO_PROCESS, 1, 5)), flush=True)
child = os.fork()
if child == 0:
    import time; time.sleep(5); os._exit(0)
print('child=' + attempt(lambda: os.setpriority(os.PRIO_PROCESS, child, 6)), flush=True)
os.kill(child, 9); os.waitpid(child, 0)
"#,
        victim = victim.id()
    );
    let nice_of = |pid: u32| -> String {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        stat.rsplit(')').next().unwrap().split_whitespace().nth(16).unwrap().to_owned()
    };
    let before = nice_of(victim.id());
    for mode in modes() {
        let agent = Agent::new("own-pids", "commands = [\"python3\"]\n");
        let r = Report::from(run(in_mode(&mut agent.command(&[], &["python3", "-c", &script]), mode)));
        assert_eq!(r.code, Some(0), "{mode:?}: {}", r.raw);
        for own in ["nice_self", "prlimit_self", "affinity_self"] {
            r.assert_said(own, "ok");
        }
        r.assert_said("nobody", "ESRCH");
        r.assert_said("group", "EPERM");
        r.assert_said("init_limit", "EPERM");
        r.assert_said("init_nice", "EPERM");
        // Another process: not there in the own world's pid namespace (or the call's own if its
        // number is taken there); refused without one.
        assert_ne!(r.said("victim"), "ok", "{mode:?}: {}", r.raw);
        assert_ne!(r.said("victim_limit"), "ok", "{mode:?}: {}", r.raw);
        // Its own child: every pid of the own world is the call's; the Landlock-only mode lets
        // only the caller itself go on.
        r.assert_said("child", if mode == Mode::OwnWorld { "ok" } else { "EPERM" });
        assert_eq!(nice_of(victim.id()), before, "{mode:?}: the host's process was changed");
    }
    let _ = victim.kill();
    let _ = victim.wait();
}

#[test]
fn a_bound_socket_keeps_its_meaning_a_client_with_a_source_and_one_never_listened_refuses() {
    // A client that binds its source address before it connects (smtplib, ftplib,
    // `create_connection(source_address=…)`) connects; a socket bound and never listened on
    // refuses connections at once (no hang); bound twice is EINVAL; bind, then listen, serves;
    // sockets bound and closed, more than a call may hold at once, are forgotten.
    let script = r#"import errno, smtplib, socket, threading
def attempt(f):
    try:
        return f()
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e))
def smtp_server(listener):
    conn, _ = listener.accept()
    conn.sendall(b'220 here ESMTP\r\n')
    for line in conn.makefile('rb'):
        if line.upper().startswith(b'QUIT'):
            conn.sendall(b'221 bye\r\n'); break
        conn.sendall(b'250 ok\r\n')
    conn.close()
server = socket.socket()
server.bind(('127.0.0.1', 0))
port = server.getsockname()[1]
print('bound_name=%s' % (server.getsockname()[0] == '127.0.0.1' and port != 0), flush=True)
print('never_listened=' + attempt(lambda: socket.create_connection(('127.0.0.1', port), timeout=5) and 'connected'), flush=True)
server.listen()
threading.Thread(target=smtp_server, args=(server,), daemon=True).start()
s = smtplib.SMTP('127.0.0.1', port, source_address=('127.0.0.1', 0), timeout=5)
print('smtp=%d' % s.noop()[0], flush=True)
s.quit()
echo = socket.socket(); echo.bind(('127.0.0.1', 0)); echo.listen()
def echo_once():
    c, _ = echo.accept(); c.sendall(c.recv(100)); c.close()
threading.Thread(target=echo_once, daemon=True).start()
client = socket.create_connection(echo.getsockname(), timeout=5, source_address=('127.0.0.1', 0))
client.sendall(b'ping')
print('echo=' + client.recv(100).decode(), flush=True)
for i in range(100):  # more than a call may hold at once: those closed are forgotten
    t = socket.socket(); t.bind(('127.0.0.1', 0)); t.close()
# A bound socket kept by a copy after its descriptor listened still holds its port: counted.
import os
copies = []
try:
    while len(copies) < 200:
        t = socket.socket(); t.bind(('127.0.0.1', 0)); copies.append(os.dup(t.fileno())); t.listen(); t.close()
    print('copies=none', flush=True)
except OSError as e:
    print('copies=' + errno.errorcode[e.errno], flush=True)
print('copies_held=%d' % len(copies), flush=True)
for c in copies:
    os.close(c)
# At its most sockets, a call may still listen on one it bound (the kernel would let it).
full = []
try:
    while len(full) < 200:
        t = socket.socket(); t.bind(('127.0.0.1', 0)); full.append(t)
except OSError:
    pass
print('listen_at_most=' + attempt(lambda: full[-1].listen() or 'ok'), flush=True)
print('bound_at_most=%d' % len(full), flush=True)
for t in full:
    t.close()
twice = socket.socket(); twice.bind(('127.0.0.1', 0))
print('bind_twice=' + str(attempt(lambda: twice.bind(('127.0.0.1', 0)) or 'ok')), flush=True)
"#;
    for mode in modes() {
        let agent = Agent::new("bound-client", "commands = [\"python3\"]\n");
        let r = Report::from(run(in_mode(&mut agent.command(&[], &["python3", "-c", script]), mode)));
        assert_eq!(r.code, Some(0), "{mode:?}: {}", r.raw);
        r.assert_said("bound_name", "True");
        r.assert_said("never_listened", "ECONNREFUSED");
        r.assert_said("smtp", "250");
        r.assert_said("echo", "ping");
        r.assert_said("bind_twice", "EINVAL");
        r.assert_said("listen_at_most", "ok");
        if mode == Mode::LandlockOnly {
            // 64 at once, the call's bound on its servers and bound sockets.
            r.assert_said("copies", "EADDRINUSE");
            let full: usize = r.said("bound_at_most").parse().unwrap();
            assert!((1..=64).contains(&full), "{full} bound at once");
            let held: usize = r.said("copies_held").parse().unwrap();
            assert!(held <= 64, "{held} bound sockets held");
        }
    }
}

#[test]
fn udp_between_the_calls_own_sockets_works_in_the_own_world_and_is_refused_by_name_without_it() {
    // The own world's loopback carries UDP; the Landlock-only mode shares the host's network,
    // where the helper makes TCP only: there a UDP socket is refused (EPERM), named in the
    // report, and `status` lists it among what the mode lacks.
    let script = r#"import errno, socket
try:
    a = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); a.bind(('127.0.0.1', 0))
    b = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); b.settimeout(5)
    b.sendto(b'datagram', a.getsockname())
    print('udp=' + a.recv(100).decode(), flush=True)
except OSError as e:
    print('udp=' + errno.errorcode[e.errno], flush=True)
"#;
    for mode in modes() {
        let agent = Agent::new("udp", "commands = [\"python3\"]\n");
        let r = Report::from(run(in_mode(&mut agent.command(&[], &["python3", "-c", script]), mode)));
        assert_eq!(r.code, Some(0), "{mode:?}: {}", r.raw);
        let named = r.json["denials"]
            .as_array()
            .and_then(|d| d.iter().find(|d| d["target"] == "socket(SOCK_DGRAM)").map(|d| d["cause"].clone()));
        if mode == Mode::OwnWorld {
            r.assert_said("udp", "datagram");
            assert_eq!(named, None, "{}", r.raw);
        } else {
            r.assert_said("udp", "EPERM");
            assert_eq!(named, Some(serde_json::json!("needs_own_world")), "{}", r.raw);
            let lacks = r.json["enforced"]["lacks"].to_string();
            assert!(lacks.contains("no UDP"), "{lacks}");
        }
    }
}

/// A pty pair of the test's own, as a harness's terminal: its master and its peer's path.
fn persons_terminal() -> (std::os::fd::OwnedFd, String) {
    use rustix::pty::{OpenptFlags, openpt, ptsname, unlockpt};
    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC).expect("a pty here");
    unlockpt(&master).unwrap();
    let name = ptsname(&master, Vec::new()).unwrap().into_string().unwrap();
    (master, name)
}

#[test]
fn a_terminal_of_the_calls_own_works_and_the_persons_stays_out_of_reach() {
    // `script`, `pty.fork` and `openpty` work in both modes; the call holds a bounded number of
    // terminals at once (ENOSPC past them), and the person's stay the person's.
    let script_line = "script -qec 'test -t 0 && echo stdin-is-a-terminal' /dev/null";
    let forked = r#"import errno, os, pty
pid, fd = pty.fork()
if pid == 0:
    print('child-isatty=%s' % os.isatty(0), flush=True)
    os._exit(0)
out = b''
while True:
    try:
        chunk = os.read(fd, 100)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
os.waitpid(pid, 0)
print('forked=' + out.decode().strip(), flush=True)
held = []
try:
    while len(held) < 40:
        held.append(os.openpty())
    print('bound=none', flush=True)
except OSError as e:
    print('bound=%s' % errno.errorcode[e.errno], flush=True)
print('held=%d' % len(held), flush=True)
for m, s in held:
    os.close(m); os.close(s)
# A pair whose master is closed lives on while its peer is kept: counted still.
peers = []
try:
    while len(peers) < 40:
        m, s = os.openpty()
        os.close(m)
        peers.append(s)
    print('orphans=none', flush=True)
except OSError as e:
    print('orphans=%s' % errno.errorcode[e.errno], flush=True)
print('orphans_held=%d' % len(peers), flush=True)
"#;
    for mode in modes() {
        let agent = Agent::new("terminal", "commands = [\"script\", \"sh\", \"python3\"]\n");
        let r = Report::from(run(in_mode(&mut agent.command(&[], &["sh", "-c", script_line]), mode)));
        assert!(r.out().contains("stdin-is-a-terminal"), "{mode:?}: {}", r.raw);
        let r = Report::from(run(in_mode(&mut agent.command(&[], &["python3", "-c", forked]), mode)));
        assert_eq!(r.code, Some(0), "{mode:?}: {}", r.raw);
        r.assert_said("forked", "child-isatty=True");
        r.assert_said("bound", "ENOSPC");
        let held: usize = r.said("held").parse().unwrap();
        assert!((1..16).contains(&held), "{mode:?}: held {held}");
        r.assert_said("orphans", "ENOSPC");
        let orphans: usize = r.said("orphans_held").parse().unwrap();
        assert!((1..=16).contains(&orphans), "{mode:?}: {orphans} peers kept");
        if mode == Mode::LandlockOnly {
            let named = r.json["denials"]
                .as_array()
                .is_some_and(|d| d.iter().any(|d| d["target"] == "terminals (/dev/ptmx)"));
            assert!(named, "{}", r.raw);
        }
        // A pair the program closed is not counted while the helper's copy of its master waits
        // for the closer (a fault point makes each close 2 ms late, as a busy machine does: a
        // run in CI refused the next pair at once): the bound waits for the closer a moment.
        let late = [("LNK_FAULT", "held-close-late:fail")];
        let r =
            Report::from(run(in_mode(&mut agent.command(&[], &["python3", "-c", forked]), mode).envs(late)));
        let orphans: usize = r.said("orphans_held").parse().unwrap();
        assert!((1..=16).contains(&orphans), "{mode:?}, closes late: {orphans} peers kept");
        // The machine's terminals are still there for everyone else.
        drop(persons_terminal());
    }
}

#[test]
fn a_terminal_of_the_persons_is_never_opened_read_or_written() {
    // The person's terminal, by its path under a grant of `/` (which is cut around `/dev`), and
    // as a master passed in as standard input, whose peer no one opens for the program.
    let (master, peer_path) = persons_terminal();
    let script = format!(
        r#"import errno, fcntl, os
def attempt(f):
    try:
        f(); return 'ok'
    except OSError as e:
        return errno.errorcode[e.errno]
def write_peer_by_path():
    fd = os.open('{peer_path}', os.O_RDWR | os.O_NOCTTY)
    os.write(fd, b'pwned-by-path')
print('by_path=' + attempt(write_peer_by_path), flush=True)
print('read_by_path=' + attempt(lambda: os.open('{peer_path}', os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK)), flush=True)
def peer_of_stdin():
    fd = fcntl.ioctl(0, 0x5441, os.O_RDWR | os.O_NOCTTY)  # TIOCGPTPEER
    os.write(fd, b'pwned-by-peer')
print('peer=' + attempt(peer_of_stdin), flush=True)
print('console=' + attempt(lambda: os.open('/dev/vcs', os.O_RDONLY)), flush=True)
"#
    );
    for mode in modes() {
        let agent = Agent::new("persons-terminal", "commands = [\"python3\"]\n[files]\nread = [\"/\"]\n");
        let stdin = master.try_clone().unwrap();
        let mut cmd = agent.command(&["--stdin"], &["python3", "-c", &script]);
        cmd.stdin(std::process::Stdio::from(stdin));
        let r = Report::from(run(in_mode(&mut cmd, mode)));
        assert_eq!(r.code, Some(0), "{mode:?}: {}", r.raw);
        for name in ["by_path", "read_by_path", "peer", "console"] {
            let said = r.said(name);
            assert!(said != "ok", "{mode:?}: {name} was opened: {}", r.raw);
        }
        if mode == Mode::LandlockOnly {
            let named = r.json["denials"].as_array().is_some_and(|d| {
                d.iter().any(|d| d["target"].as_str().unwrap_or("").starts_with("ioctl(TIOCGPTPEER)"))
            });
            assert!(named, "{}", r.raw);
        }
    }
    // Nothing the program wrote reached the person's terminal.
    rustix::io::ioctl_fionbio(&master, true).unwrap();
    let mut seen = [0u8; 256];
    let n = rustix::io::read(&master, &mut seen).unwrap_or(0);
    let seen = String::from_utf8_lossy(&seen[..n]);
    assert!(!seen.contains("pwned"), "the person's terminal got: {seen}");
}

#[test]
fn a_grant_in_the_hosts_devices_is_an_error_at_check_and_refused_at_run() {
    // `/dev` holds the person's terminals, disks and console: no grant opens it (a grant of `/`
    // is cut around it: see the test above); `/dev/shm` is not a device.
    let agent = Agent::new("device-grant", "commands = [\"true\"]\n[files]\nread = [\"/dev/pts\"]\n");
    let check = run(lnk().args(["sandbox", "check"]).arg(&agent.policy));
    assert_ne!(check.status.code(), Some(0), "{}", stdout(&check));
    let said = format!("{}{}", stdout(&check), stderr(&check));
    assert!(said.contains("sandbox.toml:3:") && said.contains("the host's devices"), "{said}");
    let r = Report::from(run(&mut agent.command(&[], &["true"])));
    assert_eq!(r.code, Some(126), "{}", r.raw);
    let shm = Agent::new("shm-grant", "commands = [\"true\"]\n[files]\nread = [\"/dev/shm\"]\n");
    let check = run(lnk().args(["sandbox", "check"]).arg(&shm.policy));
    assert!(!format!("{}{}", stdout(&check), stderr(&check)).contains("the host's devices"));
}

#[test]
fn a_device_reached_by_another_path_stays_closed() {
    // The host's `/dev` (and its `/dev/pts`) bound inside a grant (a chroot's `dev`) are cut in both
    // modes, so the person's terminal is closed there too (in the own world every mount is also
    // without devices but the call's own); `/dev/null` and a terminal of the call's still work.
    let agent = Agent::outside_tmp("device-alias", "commands = [\"python3\"]\n[files]\nread = [\"/\"]\n");
    let chroot_dev = agent.dir.join("chroot/dev");
    std::fs::create_dir_all(&chroot_dev).unwrap();
    let (_person, peer_path) = persons_terminal();
    let alias = chroot_dev.join(peer_path.trim_start_matches("/dev/"));
    let script = format!(
        r#"import errno, os
def attempt(path, flags):
    try:
        os.close(os.open(path, flags | os.O_NOCTTY | os.O_NONBLOCK)); return 'ok'
    except OSError as e:
        return errno.errorcode[e.errno]
print('alias_tty=' + attempt('{alias}', os.O_RDONLY), flush=True)
print('null=' + attempt('/dev/null', os.O_RDWR), flush=True)
print('node=' + attempt('{node}', os.O_RDONLY), flush=True)
m, s = os.openpty()
print('own_terminal=%s' % os.isatty(s), flush=True)
"#,
        alias = alias.display(),
        node = agent.home.join("node").display(),
    );
    // As root, a device node made on an ordinary file system (as a debootstrap chroot has):
    // closed in the own world, whose mounts have no devices; the Landlock-only mode cannot tell
    // it from a file (SECURITY.md says so).
    let root = rustix::process::geteuid().is_root();
    if root {
        let made =
            std::process::Command::new("mknod").arg(agent.home.join("node")).args(["c", "1", "3"]).status();
        assert!(made.is_ok_and(|s| s.success()));
    }
    for mode in modes() {
        let cmd = agent.command(&[], &["python3", "-c", &script]);
        let binds = [(std::path::Path::new("/dev"), chroot_dev.as_path())];
        let Some(mut bound) = with_binds(&binds, &cmd) else { return };
        let r = Report::from(run(in_mode(&mut bound, mode)));
        assert_eq!(r.code, Some(0), "{mode:?}: {}", r.raw);
        assert_ne!(r.said("alias_tty"), "ok", "{mode:?}: {}", r.raw);
        r.assert_said("null", "ok");
        r.assert_said("own_terminal", "True");
        if root && mode == Mode::OwnWorld {
            assert_ne!(r.said("node"), "ok", "{}", r.raw);
        }
    }
}

#[test]
fn no_device_nodes_mode_or_owner_is_the_programs_to_change() {
    // A write grant that holds the host's `/dev` bound in it is refused (in the own world the
    // kernel would perform the program's `chmod` there); as root, a device node made on an
    // ordinary file system in a write grant keeps its mode in the Landlock-only mode, where the
    // helper performs the program's `chmod` (the own world's kernel performs it: SECURITY.md).
    let agent = Agent::outside_tmp("device-write", "commands = [\"python3\"]\n[files]\nwrite = [\"~/w\"]\n");
    let w = agent.home.join("w");
    std::fs::create_dir_all(w.join("dev")).unwrap();
    let cmd = agent.command(&[], &["python3", "-c", "print('ran')"]);
    if let Some(mut bound) = with_binds(&[(std::path::Path::new("/dev"), w.join("dev").as_path())], &cmd) {
        let r = Report::from(run(&mut bound));
        assert_eq!(r.code, Some(126), "{}", r.raw);
        assert!(r.raw.contains("a file system of devices is mounted"), "{}", r.raw);
    }
    if !rustix::process::geteuid().is_root() {
        return;
    }
    std::fs::remove_dir(w.join("dev")).unwrap();
    let node = w.join("node");
    assert!(std::process::Command::new("mknod").arg(&node).args(["c", "1", "3"]).status().unwrap().success());
    std::fs::set_permissions(&node, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let script = format!(
        "import errno, os\ntry:\n    os.chmod('{}', 0o666); print('chmod=ok')\nexcept OSError as e:\n    print('chmod=' + errno.errorcode[e.errno])\n",
        node.display()
    );
    let r =
        Report::from(run(in_mode(&mut agent.command(&[], &["python3", "-c", &script]), Mode::LandlockOnly)));
    r.assert_said("chmod", "EPERM");
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&node).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600, "the node's mode changed");
    let named = r.json["denials"]
        .as_array()
        .is_some_and(|d| d.iter().any(|d| d["why"].as_str().unwrap_or("").contains("device node")));
    assert!(named, "{}", r.raw);
}
