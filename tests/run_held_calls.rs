//! `lnk sandbox run`: the metadata calls the Landlock-only mode holds for the helper
//! (seccomp user notification, see `src/notify`), attacked by a hostile program: a link swapped
//! while a held call is answered, a descriptor from a read grant, `chown` to another user, a
//! held call from a thread while another ends the process, magic links, the folders on the way
//! to a secret. Each runs in both modes (in the own world a read-only mount answers instead),
//! as root and as the ordinary user (the suite runs twice), and each victim is checked from
//! outside.
//!
//! System call numbers are x86_64's; elsewhere these tests fail in CI and skip loudly.

mod common;
use common::*;

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::Path;
use std::time::{Duration, Instant};

const POLICY: &str = "commands = [\"python3\"]\n[files]\nread = [\"~\"]\nwrite = [\"~/Link/Files\"]\n";

fn x86_64() -> bool {
    require(cfg!(target_arch = "x86_64"), "x86_64 (the tests' system call numbers)")
}

/// A file of the person's outside every write grant, mode 0600, and what it looks like.
fn victim(agent: &Agent) -> (std::path::PathBuf, (u32, i64, i64, u32, u32)) {
    let path = agent.home.join("project/deploy.key");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, "key").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let m = std::fs::metadata(&path).unwrap();
    (path, (m.mode(), m.mtime(), m.mtime_nsec(), m.uid(), m.gid()))
}

fn looks(path: &std::path::Path) -> (u32, i64, i64, u32, u32) {
    let m = std::fs::metadata(path).unwrap();
    (m.mode(), m.mtime(), m.mtime_nsec(), m.uid(), m.gid())
}

#[test]
fn a_link_swapped_under_held_calls_never_reaches_outside_the_write_grants() {
    if !x86_64() {
        return;
    }
    let agent = Agent::new("held-swap", POLICY);
    let (secret, before) = victim(&agent);
    // One process swaps `~/Link/Files/l` between a file inside and the secret outside, as fast
    // as it can; another changes `l`'s mode, times, owner and attributes over and over.
    let script = format!(
        r#"
import signal
files = os.path.expanduser("~/Link/Files")
inside, link = files + "/inside", files + "/l"
open(inside, "w").write("x")
for leftover in (link, link + ".new"):
    if os.path.lexists(leftover):
        os.unlink(leftover)
# The swapper is a process of its own, so it swaps while a held call is being answered.
swapper = os.fork()
if swapper == 0:
    n = 0
    while True:
        target = inside if n % 2 else "{secret}"
        try:
            if os.path.lexists(link + ".new"):
                os.unlink(link + ".new")
            os.symlink(target, link + ".new"); os.rename(link + ".new", link)
        except OSError:
            pass
        n += 1
answers = set()
i = 0
# At least 1500 rounds, and on until the swapper has been seen both ways (it may start late on a
# busy machine), within a bound.
while i < 1500 or ("ok" not in answers and i < 50000):
    for call in (lambda: os.chmod(link, 0o777), lambda: os.utime(link, (0, 0)),
                 lambda: os.chown(link, os.getuid(), os.getgid()),
                 lambda: os.setxattr(link, "user.lnk", b"x")):
        answers.add(attempt(call))
    i += 1
os.kill(swapper, signal.SIGKILL); os.waitpid(swapper, 0)
say("answers", ",".join(sorted(answers)))
say("inside", "%o" % (os.stat(inside).st_mode & 0o777))
"#,
        secret = secret.display()
    );
    let files = agent.home.join("Link/Files");
    for (mode, r) in agent.python_in_each_mode(&script) {
        let answers = r.said("answers");
        assert!(answers.contains("ok"), "{mode}: the calls inside never went through: {answers}");
        // A call refused because its name no longer led where the file is names nothing: a
        // file inside the write grant is never reported as outside it (with a fix already in
        // the file).
        for denial in r.json["denials"].as_array().unwrap() {
            let target = denial["target"].as_str().unwrap_or_default();
            assert!(
                !Path::new(target).starts_with(&files),
                "{mode}: named as refused inside the grant: {denial}"
            );
        }
    }
    assert_eq!(looks(&secret), before, "the secret's mode, times or owner changed");
    assert!(xattr_absent(&secret), "an extended attribute was set on the secret");
}

#[test]
fn held_calls_act_where_the_program_means_and_with_its_rights_only() {
    if !x86_64() {
        return;
    }
    let agent = Agent::new("held-rights", POLICY);
    let (secret, before) = victim(&agent);
    let other_uid = 54_321;
    let script = format!(
        r#"
files = os.path.expanduser("~/Link/Files")
os.makedirs(files + "/sub", exist_ok=True)
open(files + "/sub/x", "w").write("x")
os.chdir(files + "/sub")
# Relative paths are the program's: from its working folder, and from a folder descriptor.
say("relative", attempt(lambda: os.chmod("x", 0o751)))
d = os.open(files, os.O_RDONLY | os.O_DIRECTORY)
say("dir_fd", attempt(lambda: os.chmod("sub/x", 0o750, dir_fd=d)))
say("mode", "%o" % (os.stat("x").st_mode & 0o777))
# A descriptor of a read grant's file is no way in; nor an O_PATH one, nor a magic link.
fd = os.open("{secret}", os.O_RDONLY)
say("fchmod_read_fd", attempt(lambda: os.fchmod(fd, 0o777)))
p = os.open("{secret}", os.O_PATH)
say("o_path_empty", sc(452, p, ctypes.addressof(ctypes.create_string_buffer(b"")), 0o777, 0x1000))
say("magic_link", attempt(lambda: os.chmod("/proc/self/fd/%d" % fd, 0o777)))
# The program's own descriptor of a write grant's file, by its magic link (glibc names a file so
# for fchmodat(…, AT_SYMLINK_NOFOLLOW) where the kernel lacks fchmodat2, as tar does as root).
w = os.open("x", os.O_PATH | os.O_NOFOLLOW)
say("magic_link_write", attempt(lambda: os.chmod("/proc/self/fd/%d" % w, 0o751)))
say("lchmod", attempt(lambda: os.chmod("x", 0o750, follow_symlinks=False)))
# chown to another user: never, whoever the helper is; to one's own: yes.
say("chown_other", attempt(lambda: os.chown("x", {other_uid}, -1)))
say("chown_own", attempt(lambda: os.chown("x", os.getuid(), os.getgid())))
# Times the program gives land as given; setting another user's file's times needs ownership.
say("utime", attempt(lambda: os.utime("x", (1, 2))))
say("mtime", "%d" % os.stat("x").st_mtime)
# An unknown flag is the kernel's answer, not a way around the check.
say("bad_flag", sc(260, -100, ctypes.addressof(ctypes.create_string_buffer(b"x")), 0, 0, 0x8000))
"#,
        secret = secret.display()
    );
    for (mode, r) in agent.python_in_each_mode(&script) {
        for name in ["relative", "dir_fd", "chown_own", "utime", "magic_link_write", "lchmod"] {
            assert_eq!(r.said(name), "ok", "{mode}: {name}; stderr:\n{}", r.err());
        }
        assert_eq!(r.said("mode"), "750", "{mode}");
        assert_eq!(r.said("mtime"), "2", "{mode}");
        let refused = if mode == "own-world" { "EROFS" } else { "EPERM" };
        assert_eq!(r.said("fchmod_read_fd"), refused, "{mode}");
        assert_ne!(r.said("o_path_empty"), "ok", "{mode}");
        assert_ne!(r.said("magic_link"), "ok", "{mode}");
        // (In a user namespace of the call's own, another uid is not even mapped: EINVAL.)
        let chown_other = r.said("chown_other");
        assert!(chown_other == "EPERM" || chown_other == "EINVAL", "{mode}: {chown_other}");
        assert_eq!(r.said("bad_flag"), "EINVAL", "{mode}");
    }
    assert_eq!(looks(&secret), before, "the secret changed");
    let x = agent.home.join("Link/Files/sub/x");
    assert_ne!(std::fs::metadata(&x).unwrap().uid(), other_uid, "a file was given to another user");
}

#[test]
fn a_held_call_from_a_thread_while_another_ends_the_process_hangs_nothing() {
    if !x86_64() {
        return;
    }
    let agent = Agent::new("held-exit", POLICY);
    let script = r#"
import threading, time
f = os.path.expanduser("~/Link/Files/f")
open(f, "w").write("x")
def busy():
    while True:
        try:
            os.chmod(f, 0o644); os.utime(f, None)
        except OSError:
            pass
for _ in range(4):
    threading.Thread(target=busy, daemon=True).start()
time.sleep(0.2)
os._exit(3)
"#;
    let started = Instant::now();
    for (mode, r) in agent.python_in_each_mode(script) {
        assert_eq!(r.code, Some(3), "{mode}: {}", r.raw);
    }
    assert!(started.elapsed() < Duration::from_secs(180), "a held call kept a call from ending");
}

#[test]
fn more_calls_held_at_once_than_the_server_is_handed_are_all_answered() {
    // The receiver hands the server at most 64 calls at once; the rest wait until an answer
    // makes room. The server tells of its answers without waking the receiver, unless calls
    // wait (src/notify/handles.rs): were that wake-up lost, the calls still waiting once the
    // others' threads had ended would wait for ever. 128 threads released together each make
    // 40 held calls, and every one must end.
    if !x86_64() {
        return;
    }
    let agent = Agent::new("held-many", POLICY);
    let script = r#"import os, threading
d = os.path.expanduser("~/Link/Files")
go = threading.Barrier(128)
done = []
def work(i):
    f = os.path.join(d, "f%d" % i)
    open(f, "w").close()
    go.wait()
    for _ in range(20):
        os.chmod(f, 0o600); os.chmod(f, 0o644)
    done.append(i)
threads = [threading.Thread(target=work, args=(i,)) for i in range(128)]
for t in threads: t.start()
for t in threads: t.join()
print("done=%d" % len(done), flush=True)
"#;
    for (mode, r) in agent.in_each_mode_at(&agent.home, &["--timeout", "60"], &[], &["python3", "-c", script])
    {
        assert_eq!(r.code, Some(0), "{mode}: {}", r.raw);
        r.assert_said("done", "128");
    }
}

#[test]
fn the_folders_on_the_way_to_a_secret_keep_their_metadata_without_the_own_world() {
    if !x86_64() {
        return;
    }
    // With the whole home writable, `chmod 000 ~` would make every later call refuse to run
    // (lnk cannot look for the secrets beneath): the helper refuses it, as it refuses the
    // secret itself. (The own world lets a program change its write grants' modes; the next
    // call then refuses to run, naming the fix: `run_secrets.rs`.)
    let policy = "commands = [\"python3\"]\n[files]\nread = [\"~\"]\nwrite = [\"~\"]\n";
    let agent = Agent::new("held-way", policy);
    std::fs::create_dir_all(agent.home.join(".ssh")).unwrap();
    std::fs::write(agent.home.join(".ssh/id"), "SECRET").unwrap();
    let before = looks(&agent.home);
    let script = r#"
home = os.path.expanduser("~")
say("home", attempt(lambda: os.chmod(home, 0o000)))
say("ssh", attempt(lambda: os.chmod(home + "/.ssh", 0o777)))
open(home + "/Link/Files/f", "w").write("x")
say("inside", attempt(lambda: os.chmod(home + "/Link/Files/f", 0o700)))
"#;
    let full = format!("{PY_PRELUDE}\n{script}");
    let r = agent.landlock_only_at(&agent.home, &[], &[], &["python3", "-c", &full]);
    if let Some(r) = r {
        r.assert_said("home", "EPERM");
        r.assert_said("ssh", "EPERM");
        r.assert_said("inside", "ok");
    }
    assert_eq!(looks(&agent.home), before);
}

#[test]
fn what_the_helper_refused_is_named_in_the_report_as_known() {
    if !x86_64() {
        return;
    }
    let agent = Agent::new("held-denials", POLICY);
    let (secret, _) = victim(&agent);
    let ssh = agent.home.join(".ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::write(ssh.join("id_ed25519"), "k").unwrap();
    let script = format!(
        r#"
files = os.path.expanduser("~/Link/Files")
open(files + "/mine", "w").write("x")
say("outside", attempt(lambda: os.chmod("{secret}", 0o644)))
say("secret", attempt(lambda: os.chmod("{ssh}/id_ed25519", 0o644)))
# Refused by the kernel itself, inside a write grant: not the sandbox's doing, so not named.
say("chown_other", attempt(lambda: os.chown(files + "/mine", 54321, -1)))
"#,
        secret = secret.display(),
        ssh = ssh.display()
    );
    let full = format!("{PY_PRELUDE}\n{script}");
    let Some(r) = agent.landlock_only_at(&agent.home, &[], &[], &["python3", "-c", &full]) else { return };
    r.assert_said("outside", "EPERM");
    r.assert_said("secret", "EPERM");
    let denials = r.json["denials"].as_array().unwrap();
    let named = |target: &std::path::Path| {
        denials
            .iter()
            .find(|d| d["target"] == target.to_str().unwrap())
            .unwrap_or_else(|| panic!("{} not named: {}", target.display(), r.raw))
    };
    let outside = named(&secret);
    assert_eq!((outside["access"].as_str(), outside["inferred"].as_bool()), (Some("metadata"), Some(false)));
    assert_eq!(outside["cause"], "outside_grants");
    assert_eq!(
        outside["fix"]["value"],
        secret.parent().unwrap().display().to_string(),
        "its folder: grants name folders"
    );
    let in_secret = named(&ssh.join("id_ed25519"));
    assert!(in_secret["fix"].is_null(), "no grant opens a secret: {in_secret}");
    assert_eq!(in_secret["cause"], "protected");
    assert!(in_secret["why"].as_str().unwrap().contains(".ssh"), "{in_secret}");
    assert_eq!(denials.len(), 2, "nothing else is blamed on the sandbox: {}", r.raw);
}

#[test]
fn a_file_renamed_under_a_held_call_in_the_write_grant_is_never_named_outside_it() {
    if !x86_64() {
        return;
    }
    // Two files trade names inside the write grant as fast as a process can rename, while the
    // program changes the mode of one name over and over: the helper sometimes finds the name
    // no longer leads to the file it held. That is a refusal (the call is tried on a name that
    // moved), never a denial naming a file of the write grant as outside it.
    let agent = Agent::new("held-rename-race", POLICY);
    let script = r#"
import signal
files = os.path.expanduser("~/Link/Files")
a, b, t = files + "/a", files + "/b", files + "/t"
for name in (a, b):
    open(name, "w").write(name)
swapper = os.fork()
if swapper == 0:
    while True:
        try:
            os.rename(a, t); os.rename(b, a); os.rename(t, b)
        except OSError:
            pass
answers = set()
for i in range(4000):
    answers.add(attempt(lambda: os.chmod(a, 0o600 if i % 2 else 0o644)))
os.kill(swapper, signal.SIGKILL); os.waitpid(swapper, 0)
say("answers", ",".join(sorted(answers)))
"#;
    let files = agent.home.join("Link/Files");
    let r = agent.python_without_user_namespaces(script);
    assert!(r.said("answers").contains("ok"), "the calls never went through: {}", r.raw);
    for denial in r.json["denials"].as_array().unwrap() {
        let target = denial["target"].as_str().unwrap_or_default();
        assert!(!Path::new(target).starts_with(&files), "named as refused inside the grant: {denial}");
    }
}
