//! `lnk sandbox run`: the calls Landlock does not govern, attacked from inside by a hostile
//! Python program, in both modes (the call's own world, and Landlock only on a simulated kernel
//! without user namespaces), as root and as an ordinary user (the suite runs twice).
//!
//! Each test also checks, from outside, that the target was left as it was: an answer of
//! `EPERM` that came with a changed victim would still fail.
//!
//! System call numbers are x86_64's; elsewhere these tests fail in CI and skip loudly.

mod common;
use common::*;

use std::process::{Child, Command, Stdio};

const POLICY: &str = "commands = [\"python3\"]\n[files]\nread = [\"~\"]\nwrite = [\"~/Link/Files\"]\n";

fn x86_64() -> bool {
    require(cfg!(target_arch = "x86_64"), "x86_64 (the tests' system call numbers)")
}

/// A process of the test's own (same user as the sandbox), killed when dropped.
struct Victim(Child);

impl Victim {
    fn start() -> Victim {
        Victim(Command::new("sleep").arg("3600").stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap())
    }
    fn pid(&self) -> u32 {
        self.0.id()
    }
    fn proc_file(&self, name: &str) -> String {
        std::fs::read_to_string(format!("/proc/{}/{name}", self.pid())).unwrap()
    }
}

impl Drop for Victim {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn other_processes_limits_priority_and_scheduling_are_out_of_reach() {
    if !x86_64() {
        return;
    }
    let victim = Victim::start();
    let limits_before = victim.proc_file("limits");
    let stat_before = victim.proc_file("stat");
    let affinity_before = victim.proc_file("status");
    let agent = Agent::new("other-procs", POLICY);
    let script = format!(
        r#"
v = {victim}
one = (ctypes.c_uint64 * 2)(1, 1)
mask = (ctypes.c_ulong * 16)(*([1] * 16))
param = ctypes.c_int(0)
attr = (ctypes.c_uint32 * 14)(56)
A = ctypes.addressof
say("prlimit_other", sc(302, v, 0, A(one), 0))
say("prlimit_self_read", sc(302, 0, 0, 0, A(one)))
say("setpriority_other", sc(141, 0, v, 10))
say("setpriority_group", sc(141, 1, 0, 10))
say("setpriority_user", sc(141, 2, 0, 10))
say("setpriority_self", sc(141, 0, 0, 1))
say("affinity_other", sc(203, v, 8, A(mask)))
say("affinity_self", sc(203, 0, 8, A(mask)))
say("setscheduler_other", sc(144, v, 0, A(param)))
say("setparam_other", sc(142, v, A(param)))
say("setattr_other", sc(314, v, A(attr), 0))
say("ioprio_other", sc(251, 1, v, (2 << 13) | 7))
say("ioprio_user", sc(251, 3, 0, (2 << 13) | 7))
say("ioprio_self", sc(251, 1, 0, (2 << 13) | 4))
say("migrate_pages_other", sc(256, v, 8, A(mask), A(mask)))
say("move_pages_other", sc(279, v, 0, 0, 0, 0, 0))
say("kcmp", sc(312, v, os.getpid(), 0, 0, 0))
say("process_madvise", sc(440, 0, 0, 0, 0, 0))
say("process_mrelease", sc(448, 0, 0))
say("pidfd_getfd", sc(438, 0, 0, 0))
"#,
        victim = victim.pid()
    );
    for (mode, r) in agent.python_in_each_mode(&script) {
        for name in [
            "prlimit_other",
            "setpriority_other",
            "setpriority_group",
            "setpriority_user",
            "affinity_other",
            "setscheduler_other",
            "setparam_other",
            "setattr_other",
            "ioprio_other",
            "ioprio_user",
            "migrate_pages_other",
            "move_pages_other",
            "kcmp",
            "process_madvise",
            "process_mrelease",
            "pidfd_getfd",
        ] {
            // The own world's pid namespace holds the call's processes only: a host process's
            // number is no process there (ESRCH), where the kernel answers for a pid.
            let said = r.said(name);
            let by_pid = name.ends_with("_other");
            let own_world_answer = mode == "own-world" && by_pid && said == "ESRCH";
            assert!(said == "EPERM" || own_world_answer, "{mode}: {name} said {said}; stderr:\n{}", r.err());
        }
        // A program may still act on itself.
        for name in ["prlimit_self_read", "setpriority_self", "affinity_self", "ioprio_self"] {
            assert_eq!(r.said(name), "ok", "{mode}: {name}; stderr:\n{}", r.err());
        }
    }
    assert_eq!(victim.proc_file("limits"), limits_before, "the victim's limits changed");
    assert_eq!(
        victim.proc_file("stat").split(' ').nth(18),
        stat_before.split(' ').nth(18),
        "its nice value changed"
    );
    let cpus = |s: &str| s.lines().find(|l| l.starts_with("Cpus_allowed:")).map(str::to_owned);
    assert_eq!(cpus(&victim.proc_file("status")), cpus(&affinity_before), "its affinity changed");
}

/// A System V shared memory segment (mode 0600) and a POSIX message queue of the test's own.
struct HostIpc {
    shm_id: i32,
    queue: std::ffi::CString,
}

impl HostIpc {
    fn new(key: i32) -> HostIpc {
        let queue = std::ffi::CString::new(format!("/lnk-test-{}", std::process::id())).unwrap();
        // SAFETY: shmget, shmat and mq_open with valid arguments; the segment is written within
        // its 4096 bytes and detached; the queue descriptor is closed.
        unsafe {
            let shm_id = libc::shmget(key, 4096, libc::IPC_CREAT | 0o600);
            assert!(shm_id >= 0, "shmget: {}", std::io::Error::last_os_error());
            let at = libc::shmat(shm_id, std::ptr::null(), 0);
            std::ptr::copy_nonoverlapping(b"secret".as_ptr(), at.cast::<u8>(), 6);
            libc::shmdt(at);
            let mq = libc::mq_open(
                queue.as_ptr(),
                libc::O_CREAT | libc::O_RDWR,
                0o600,
                std::ptr::null_mut::<libc::mq_attr>(),
            );
            assert!(mq >= 0, "mq_open: {}", std::io::Error::last_os_error());
            libc::mq_close(mq);
            HostIpc { shm_id, queue }
        }
    }

    fn segment(&self) -> Vec<u8> {
        let mut out = vec![0u8; 6];
        // SAFETY: attaches the test's own segment read-only, copies 6 bytes, detaches.
        unsafe {
            let at = libc::shmat(self.shm_id, std::ptr::null(), libc::SHM_RDONLY);
            std::ptr::copy_nonoverlapping(at.cast::<u8>(), out.as_mut_ptr(), 6);
            libc::shmdt(at);
        }
        out
    }
}

impl Drop for HostIpc {
    fn drop(&mut self) {
        // SAFETY: removes the test's own segment and queue.
        unsafe {
            libc::shmctl(self.shm_id, libc::IPC_RMID, std::ptr::null_mut());
            libc::mq_unlink(self.queue.as_ptr());
        }
    }
}

#[test]
fn the_hosts_system_v_ipc_and_message_queues_are_out_of_reach() {
    if !x86_64() {
        return;
    }
    let key = 0x4c4e_0000 | (std::process::id() as i32 & 0xffff);
    let host = HostIpc::new(key);
    let agent = Agent::new("sysv", POLICY);
    let script = format!(
        r#"
rt = ctypes.CDLL("librt.so.1", use_errno=True)
say("shmget_host", sc(29, {key}, 0, 0))
say("shmat_host", sc(30, {shm_id}, 0, 0))
say("shmctl_host_rmid", sc(31, {shm_id}, 0, 0))
say("msgget", sc(68, 0, 0o1600))
say("semget", sc(64, 0, 1, 0o1600))
mq = rt.mq_open(b"{queue}", os.O_RDWR)
say("mq_open_host", "ok" if mq >= 0 else errno.errorcode[ctypes.get_errno()])
say("shm_own", sc(29, 0, 4096, 0o1600))
"#,
        shm_id = host.shm_id,
        queue = host.queue.to_str().unwrap()
    );
    for (mode, r) in agent.python_in_each_mode(&script) {
        if mode == "own-world" {
            // An IPC namespace of the call's own: the host's segment and queue do not exist
            // there, and the program's own work.
            assert_eq!(r.said("shmget_host"), "ENOENT", "{mode}");
            assert_eq!(r.said("shmat_host"), "EINVAL", "{mode}");
            assert_eq!(r.said("shmctl_host_rmid"), "EINVAL", "{mode}");
            assert_eq!(r.said("mq_open_host"), "ENOENT", "{mode}");
            for name in ["msgget", "semget", "shm_own"] {
                assert_eq!(r.said(name), "ok", "{mode}: {name}");
            }
        } else {
            for name in [
                "shmget_host",
                "shmat_host",
                "shmctl_host_rmid",
                "mq_open_host",
                "msgget",
                "semget",
                "shm_own",
            ] {
                assert_eq!(r.said(name), "EPERM", "{mode}: {name}; stderr:\n{}", r.err());
            }
        }
    }
    assert_eq!(host.segment(), b"secret");
}

#[test]
fn mode_owner_times_and_xattrs_change_only_inside_write_grants() {
    if !x86_64() {
        return;
    }
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    let agent = Agent::new("metadata", POLICY);
    // A file of the person's outside every write grant (not one of the protected set, which no
    // program can even open: see the secrets test).
    let secret = agent.home.join("project/deploy.key");
    std::fs::create_dir_all(secret.parent().unwrap()).unwrap();
    std::fs::write(&secret, "key").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let before = std::fs::metadata(&secret).unwrap();
    let script = format!(
        r#"
s = "{secret}"
f = os.path.expanduser("~/Link/Files/script.sh")
fd = os.open(s, os.O_RDONLY)
say("chmod", attempt(lambda: os.chmod(s, 0o777)))
say("fchmod_read_fd", attempt(lambda: os.fchmod(fd, 0o777)))
sb = ctypes.create_string_buffer(s.encode())
say("fchmodat2", sc(452, -100, ctypes.addressof(sb), 0o777, 0))
say("chown", attempt(lambda: os.chown(s, os.getuid(), os.getgid())))
say("fchown_read_fd", attempt(lambda: os.fchown(fd, os.getuid(), os.getgid())))
say("utime", attempt(lambda: os.utime(s, (0, 0))))
say("futimens_read_fd", attempt(lambda: os.utime(fd, (0, 0))))
say("setxattr", attempt(lambda: os.setxattr(s, "user.lnk", b"x")))
say("fsetxattr_read_fd", attempt(lambda: os.setxattr(fd, "user.lnk", b"x")))
open(f, "w").write("echo hi")
say("chmod_inside", attempt(lambda: os.chmod(f, 0o755)))
say("utime_inside", attempt(lambda: os.utime(f, (1, 1))))
say("setxattr_inside", attempt(lambda: os.setxattr(f, "user.lnk", b"x")))
say("inside_now", "%o,%d" % (os.stat(f).st_mode & 0o777, os.stat(f).st_mtime))
t = os.environ["TMPDIR"] + "/t"
open(t, "w").write("x")
say("chmod_tmp", attempt(lambda: os.chmod(t, 0o700)))
"#,
        secret = secret.display()
    );
    for (mode, r) in agent.python_in_each_mode(&script) {
        // Outside the write grants: a read-only mount in the own world, seccomp without one.
        let refused = if mode == "own-world" { "EROFS" } else { "EPERM" };
        for name in
            ["chmod", "fchmod_read_fd", "fchmodat2", "chown", "fchown_read_fd", "utime", "futimens_read_fd"]
        {
            assert_eq!(r.said(name), refused, "{mode}: {name}; stderr:\n{}", r.err());
        }
        // Extended attributes: none is set in the own world, where the kernel would perform it
        // (an ACL on a memfd would make it executable: see `sandbox::seccomp`); the helper sets
        // them beneath the write grants only.
        let (xattr_outside, xattr_inside) =
            if mode == "own-world" { ("ENOTSUP", "ENOTSUP") } else { ("EPERM", "ok") };
        for name in ["setxattr", "fsetxattr_read_fd"] {
            assert_eq!(r.said(name), xattr_outside, "{mode}: {name}; stderr:\n{}", r.err());
        }
        assert_eq!(r.said("setxattr_inside"), xattr_inside, "{mode}; stderr:\n{}", r.err());
        // Inside them: allowed in both (without the own world, the helper performs them).
        for name in ["chmod_inside", "utime_inside", "chmod_tmp"] {
            assert_eq!(r.said(name), "ok", "{mode}: {name}; stderr:\n{}", r.err());
        }
        assert_eq!(r.said("inside_now"), "755,1", "{mode}");
    }
    let after = std::fs::metadata(&secret).unwrap();
    assert_eq!(after.permissions().mode() & 0o7777, 0o600, "the secret's mode changed");
    assert_eq!((after.uid(), after.gid()), (before.uid(), before.gid()));
    assert_eq!(
        (after.mtime(), after.mtime_nsec()),
        (before.mtime(), before.mtime_nsec()),
        "its times changed"
    );
    assert!(xattr_absent(&secret), "an extended attribute was set");
}

#[test]
fn the_program_holds_no_capability() {
    if !x86_64() {
        return;
    }
    let agent = Agent::new("caps", POLICY);
    // Mode 000: readable only with CAP_DAC_OVERRIDE (what root's programs had).
    let locked = agent.home.join("locked.txt");
    std::fs::write(&locked, "root only").unwrap();
    std::fs::set_permissions(&locked, std::os::unix::fs::PermissionsExt::from_mode(0o000)).unwrap();
    let script = format!(
        r#"
hdr = (ctypes.c_uint32 * 2)(0x20080522, 0)
data = (ctypes.c_uint32 * 6)()
libc.capget(ctypes.addressof(hdr), ctypes.addressof(data))
say("sets", ",".join(str(x) for x in data))
say("ambient", sum(libc.prctl(47, 1, c, 0, 0) for c in range(41)))
say("bounding", sum(max(libc.prctl(23, c, 0, 0, 0), 0) for c in range(41)))
say("securebits", libc.prctl(27, 0, 0, 0, 0))
say("read_mode_000", attempt(lambda: open("{locked}").read()))
ts = (ctypes.c_long * 2)(0, 0)
say("clock_settime", sc(227, 0, ctypes.addressof(ts)))
buf = ctypes.create_string_buffer(64)
say("syslog_read", sc(103, 3, ctypes.addressof(buf), 64))
say("fanotify_permission", sc(300, 0x8, 0))
"#,
        locked = locked.display()
    );
    for (mode, r) in agent.python_in_each_mode(&script) {
        assert_eq!(r.said("sets"), "0,0,0,0,0,0", "{mode}: effective, permitted, inheritable");
        assert_eq!(r.said("ambient"), "0", "{mode}");
        if mode == "own-world" {
            // The program's child held CAP_SETPCAP in its user namespace: it dropped the
            // bounding set and locked the securebits (NOROOT, NO_SETUID_FIXUP, KEEP_CAPS, ambient
            // raise, each locked).
            assert_eq!(r.said("bounding"), "0", "{mode}");
            assert_eq!(r.said("securebits"), "239", "{mode}");
        }
        assert_eq!(r.said("read_mode_000"), "EACCES", "{mode}");
        for name in ["clock_settime", "syslog_read", "fanotify_permission"] {
            assert_eq!(r.said(name), "EPERM", "{mode}: {name}");
        }
    }
}

#[test]
fn an_unlisted_program_cannot_be_run_through_the_loader() {
    let loader = "/lib64/ld-linux-x86-64.so.2";
    if !x86_64() || !require(std::path::Path::new("/usr/bin/perl").exists(), "perl (the unlisted program)") {
        return;
    }
    let agent = Agent::new("loader", "commands = [\"sh\", \"cat\", \"ls\"]\n[files]\nread = [\"~\"]\n");
    let r = agent.run(&[
        "sh",
        "-c",
        &format!(
            "{loader} /usr/bin/perl -e 'print qq(perl ran\\n)'; echo loader=$?; cat /usr/bin/perl >/dev/null; echo cat=$?; ls /usr/bin >/dev/null && ls /usr/bin/perl >/dev/null; echo listed=$?; {loader} /usr/bin/cat /dev/null; echo listed_via_loader=$?"
        ),
    ]);
    assert!(!r.out().contains("perl ran"), "perl ran through the loader:\n{}", r.out());
    assert!(r.out().contains("loader=127"), "{}\n{}", r.out(), r.err());
    assert!(r.err().contains("/usr/bin/perl") && r.err().contains("Permission denied"), "{}", r.err());
    assert!(r.out().contains("cat=1"), "an unlisted program's file is unreadable: {}", r.out());
    assert!(r.out().contains("listed=0"), "the program folders are still listable: {}", r.out());
    assert!(r.out().contains("listed_via_loader=0"), "a listed program's file stays readable: {}", r.out());

    // Under commands = ["*"] nothing changes: any program may run, so any may be read.
    let any = Agent::new("loader-any", "commands = [\"*\"]\n[files]\nread = [\"~\"]\n");
    let r = any.run(&["sh", "-c", &format!("{loader} /usr/bin/perl -e 'print qq(perl ran\\n)'")]);
    assert!(r.out().contains("perl ran"), "{}\n{}", r.out(), r.err());
}

#[test]
fn secrets_are_kept_even_under_a_read_grant_of_home() {
    if !x86_64() {
        return;
    }
    let policy = "commands = [\"python3\"]\n[files]\nread = [\"~\"]\nwrite = [\"~/Link/Files\"]\ndeny = [\"~/private\"]\n";
    let agent = Agent::new("secrets", policy);
    let home = &agent.home;
    for (path, text) in [
        (".ssh/id_ed25519", "ssh key"),
        (".aws/credentials", "aws key"),
        (".netrc", "machine x password y"),
        (".config/gcloud/credentials.db", "gcloud"),
        (".config/gh/hosts.yml", "gh token"),
        ("private/notes.txt", "deployment secret"),
        ("project/README", "ordinary"),
        (".config/other/settings", "ordinary too"),
    ] {
        let p = home.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
    }
    // A link to a secret, inside the grant, is no way around it; the agent's records neither.
    std::os::unix::fs::symlink(home.join(".ssh/id_ed25519"), home.join("project/key-link")).unwrap();
    // A protected name that is a link: where it leads, inside the grant, is as secret.
    std::fs::create_dir_all(home.join("keys/gpg")).unwrap();
    std::fs::write(home.join("keys/gpg/secring"), "gpg key").unwrap();
    std::os::unix::fs::symlink(home.join("keys/gpg"), home.join(".gnupg")).unwrap();
    let records = home.join("Link/Agents/a/runs");
    std::fs::create_dir_all(&records).unwrap();
    std::fs::write(records.join("r1.lock"), "").unwrap();
    let script = format!(
        r#"
home = os.path.expanduser("~")
def read(p):
    return open(os.path.join(home, p)).read()
for name, p in [("ssh", ".ssh/id_ed25519"), ("aws", ".aws/credentials"), ("netrc", ".netrc"),
                ("gcloud", ".config/gcloud/credentials.db"), ("gh", ".config/gh/hosts.yml"),
                ("denied", "private/notes.txt"), ("through_link", "project/key-link"),
                ("link_target", "keys/gpg/secring"),
                ("ordinary", "project/README"), ("ordinary_config", ".config/other/settings")]:
    say(name, attempt(lambda: read(p)))
say("record_lock", attempt(lambda: open("{lock}")))
say("overwrite_ssh", attempt(lambda: open(os.path.join(home, ".ssh/id_ed25519"), "w")))
say("list_home", attempt(lambda: os.listdir(home)))
"#,
        lock = records.join("r1.lock").display()
    );
    let mut c = agent.command(
        &["--agent-dir", home.join("Link/Agents/a").to_str().unwrap()],
        &["python3", "-c", &format!("{PY_PRELUDE}\n{script}")],
    );
    for mode in modes() {
        let r = Report::from(run(in_mode(&mut c, mode)));
        for name in
            ["ssh", "aws", "netrc", "gcloud", "gh", "denied", "through_link", "link_target", "record_lock"]
        {
            assert_eq!(r.said(name), "EACCES", "{mode:?}: {name}; {}", r.err());
        }
        assert!(["EACCES", "EROFS"].contains(&r.said("overwrite_ssh").as_str()), "{mode:?}");
        for name in ["ordinary", "ordinary_config", "list_home"] {
            assert_eq!(r.said(name), "ok", "{mode:?}: {name}; {}", r.err());
        }
    }
    assert_eq!(std::fs::read_to_string(home.join(".ssh/id_ed25519")).unwrap(), "ssh key");
    // A grant that names a secret's folder means it.
    let named =
        Agent::new("secrets-named", "commands = [\"python3\"]\n[files]\nread = [\"~\", \"~/.aws\"]\n");
    std::fs::create_dir_all(named.home.join(".aws")).unwrap();
    std::fs::write(named.home.join(".aws/config"), "region").unwrap();
    named
        .python(r#"say("aws", attempt(lambda: open(os.path.expanduser("~/.aws/config")).read()))"#)
        .assert_said("aws", "ok");
    // A grant inside a denied path is refused, not silently either way.
    let clash = Agent::new(
        "secrets-clash",
        "commands = [\"true\"]\n[files]\nread = [\"~/private/ok\"]\ndeny = [\"~/private\"]\n",
    );
    let r = clash.run(&["true"]);
    assert_eq!(r.code, Some(126), "{}", r.raw);
    assert!(r.json["error"].as_str().unwrap().contains("deny"), "{}", r.raw);
    // `lnk sandbox flags` shows the holes.
    let flags = stdout(&run(lnk().env("HOME", home).args(["sandbox", "flags"]).arg(&agent.policy)));
    for hole in [".ssh", ".aws", ".netrc", "private"] {
        assert!(flags.contains(&format!("--deny {}", home.join(hole).display())), "{hole}: {flags}");
    }
}
