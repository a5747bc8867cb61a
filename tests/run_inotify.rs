//! A call's inotify instances and watches: bounded by its appetite however the program races
//! its own descriptors, and, where the helper makes the watches for it (the Landlock-only mode),
//! made as the kernel would: from its working folder, following links or not as asked, with its
//! own rights, answered with the kernel's errors.
//!
//! Each test acts as a hostile program would, in each mode this machine gives, and the suite
//! runs as root and as an ordinary user.

mod common;
use common::*;

const POLICY: &str = r#"commands = ["sh", "python3"]
[files]
read = ["~"]
write = ["~/Link/Files"]
[tool.run]
timeout = 60
"#;

#[test]
fn a_call_takes_no_more_than_its_share_of_the_persons_inotify_instances_and_watches() {
    let script = "import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
made, why = [], 'never'
while len(made) < 200:
    fd = libc.inotify_init1(os.O_CLOEXEC)
    if fd < 0:
        why = errno.errorcode[ctypes.get_errno()]; break
    made.append(fd)
print('instances=%d' % len(made), flush=True); print('instances_why=' + why, flush=True)
base = os.environ['TMPDIR'] + '/w'
watches, why = 0, 'never'
for i in range(100):
    os.makedirs('%s/%d' % (base, i), exist_ok=True)
    if libc.inotify_add_watch(made[0], ('%s/%d' % (base, i)).encode(), 0x100) < 0:
        why = errno.errorcode[ctypes.get_errno()]; break
    watches += 1
print('watches=%d' % watches, flush=True); print('watches_why=' + why, flush=True)
# fanotify's unprivileged groups count per user too, and nothing counts a call's share: refused.
fan = libc.syscall(300, 0x200, 0)  # fanotify_init(FAN_REPORT_FID, O_RDONLY)
print('fanotify=' + ('ok' if fan >= 0 else errno.errorcode[ctypes.get_errno()]), flush=True)
";
    let policy = POLICY.replace("timeout = 60", "timeout = 60\ninotify_instances = 4\ninotify_watches = 10");
    for mode in modes() {
        let agent = Agent::new("inotify-share", &policy);
        let r = Report::from(run(in_mode(&mut agent.command(&[], &["python3", "-c", script]), mode)));
        assert_eq!(r.code, Some(0), "{mode:?}: {}", r.raw);
        r.assert_said("instances", "4");
        r.assert_said("instances_why", "EMFILE");
        r.assert_said("watches", "10");
        r.assert_said("watches_why", "ENOSPC");
        r.assert_said("fanotify", "EPERM");
        // The person's own watchers still start.
        let mine = rustix::fs::inotify::init(rustix::fs::inotify::CreateFlags::CLOEXEC);
        assert!(mine.is_ok(), "{mode:?}: {mine:?}");
    }
}

#[test]
fn inotify_instances_hidden_in_flight_or_behind_a_process_that_is_not_dumpable_still_count() {
    // Found in review: instances sent over a socket pair (in no descriptor table while in
    // flight), or kept by a process that made itself not dumpable, were not counted, and one
    // call took the person's every instance.
    let script = "import ctypes, errno, os, socket, array
libc = ctypes.CDLL(None, use_errno=True)
a, b = socket.socketpair()
hidden, why = 0, 'never'
while hidden < 200:
    fd = libc.inotify_init1(os.O_CLOEXEC)
    if fd < 0:
        why = errno.errorcode[ctypes.get_errno()]; break
    a.sendmsg([b'x'], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', [fd]))])
    os.close(fd); hidden += 1
print('in_flight=%d' % hidden, flush=True); print('in_flight_why=' + why, flush=True)
a.close(); b.close()
libc.prctl(4, 0)  # PR_SET_DUMPABLE 0
kept, why = [], 'never'
while len(kept) < 200:
    fd = libc.inotify_init1(os.O_CLOEXEC)
    if fd < 0:
        why = errno.errorcode[ctypes.get_errno()]; break
    kept.append(fd)
print('undumpable=%d' % len(kept), flush=True); print('undumpable_why=' + why, flush=True)
";
    let policy = POLICY.replace("timeout = 60", "timeout = 60\ninotify_instances = 4");
    for mode in modes() {
        let agent = Agent::new("inotify-hidden", &policy);
        let r = Report::from(run(in_mode(&mut agent.command(&[], &["python3", "-c", script]), mode)));
        assert_eq!(r.code, Some(0), "{mode:?}: {}", r.raw);
        r.assert_said("in_flight", "4");
        r.assert_said("in_flight_why", "EMFILE");
        // Those in flight were dropped with the socket pair: four again, no more. (In the
        // Landlock-only mode an ordinary user's helper gets no copy of a process's descriptors
        // once it is not dumpable, so nothing could count its watches: it gets no instance.)
        let none = mode == Mode::LandlockOnly && !rustix::process::geteuid().is_root();
        r.assert_said("undumpable", if none { "0" } else { "4" });
        r.assert_said("undumpable_why", "EMFILE");
    }
}

#[test]
fn swapping_the_descriptor_under_a_held_watch_adds_no_watch_past_the_bound() {
    // Found in review: the helper counted the descriptor's instance, then let the call go on
    // into the kernel, which fetched the descriptor again: a second thread that swapped another
    // instance (or swapped a pipe, which was let go on uncounted, for an instance) in between
    // added watches past the bound.
    let script = "import ctypes, errno, os, threading, time
libc = ctypes.CDLL(None, use_errno=True)
a = libc.inotify_init1(os.O_CLOEXEC)
b = libc.inotify_init1(os.O_CLOEXEC)
r, w = os.pipe()
x = os.dup(r)
base = os.environ['TMPDIR'] + '/w'
for i in range(400):
    os.makedirs('%s/%d' % (base, i), exist_ok=True)
done = False
def swap():
    while not done:
        for src in (r, a, r, b):
            libc.dup2(src, x)
            time.sleep(0.00005)
threading.Thread(target=swap).start()
added, refused = 0, {}
# Rounds until one add met an instance (a loaded machine can give the pipe every turn of one).
for round in range(10):
    for i in range(400):
        if libc.inotify_add_watch(x, ('%s/%d' % (base, i)).encode(), 0x100) >= 0:
            added += 1
        else:
            e = errno.errorcode[ctypes.get_errno()]
            refused[e] = refused.get(e, 0) + 1
    if added:
        break
done = True
print('added=%d' % added, flush=True)
print('refused=' + ','.join(sorted(refused)), flush=True)
";
    let policy = POLICY.replace("timeout = 60", "timeout = 60\ninotify_instances = 4\ninotify_watches = 10");
    for mode in modes() {
        let agent = Agent::new("inotify-swap", &policy);
        let r = Report::from(run(in_mode(&mut agent.command(&[], &["python3", "-c", script]), mode)));
        assert_eq!(r.code, Some(0), "{mode:?}: {}", r.raw);
        let added: u32 = r.said("added").parse().unwrap();
        assert!(added <= 10, "{mode:?}: {added} watches added past a bound of 10: {}", r.raw);
        assert!(added > 0, "{mode:?}: the swaps left no add to an instance: {}", r.raw);
        // The pipe's turns are the kernel's `EINVAL`; past the bound, `ENOSPC`.
        assert!(r.said("refused").contains("EINVAL"), "{mode:?}: {}", r.raw);
    }
}

#[test]
fn a_watch_is_made_as_the_kernel_would_make_it_for_the_program() {
    let script = r#"import ctypes, errno, os, struct, select
libc = ctypes.CDLL(None, use_errno=True)
IN_ATTRIB, IN_CREATE, IN_ONLYDIR, IN_DONT_FOLLOW, IN_MASK_CREATE = 0x4, 0x100, 0x1000000, 0x2000000, 0x10000000
def add(fd, path, mask):
    wd = libc.inotify_add_watch(fd, path if path is None else path.encode(), mask)
    return wd if wd >= 0 else errno.errorcode[ctypes.get_errno()]
fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
os.chdir(os.environ['TMPDIR'])
os.makedirs('d', exist_ok=True)
os.symlink('d', 'link')
wd = add(fd, 'd', IN_CREATE)
open('d/new', 'w').close()
select.select([fd], [], [], 5)
event = os.read(fd, 4096)
(got, mask, _, length) = struct.unpack_from('iIII', event)
name = event[16:16 + length].rstrip(b'\0').decode()
print('relative=' + ('same' if got == wd else '%s/%s' % (got, wd)) + ':' + name, flush=True)
print('again=' + ('same' if add(fd, 'd', IN_ATTRIB) == wd else 'other'), flush=True)
print('create_again=%s' % add(fd, 'd', IN_ATTRIB | IN_MASK_CREATE), flush=True)
print('onlydir_link=%s' % ('ok' if isinstance(add(fd, 'link', IN_ONLYDIR | IN_ATTRIB), int) else 'no'), flush=True)
print('onlydir_link_nofollow=%s' % add(fd, 'link', IN_ONLYDIR | IN_DONT_FOLLOW | IN_ATTRIB), flush=True)
print('onlydir_file=%s' % add(fd, 'd/new', IN_ONLYDIR | IN_ATTRIB), flush=True)
dfd = os.open('d', os.O_RDONLY)
print('own_descriptor=' + ('same' if add(fd, '/proc/self/fd/%d' % dfd, IN_ATTRIB) == wd else 'other'), flush=True)
print('missing=%s' % add(fd, 'nothing/here', IN_ATTRIB), flush=True)
print('null=%s' % add(fd, None, IN_ATTRIB), flush=True)
print('closed=%s' % add(999, 'd', IN_ATTRIB), flush=True)
r, w = os.pipe()
print('pipe=%s' % add(r, 'd', IN_ATTRIB), flush=True)
v = add(fd, '/proc/self/status', IN_ATTRIB)
print('proc=%s' % ('ok' if isinstance(v, int) else v), flush=True)
os.makedirs('locked/in', exist_ok=True); os.chmod('locked', 0)
print('unsearchable=%s' % add(fd, 'locked/in', IN_ATTRIB), flush=True)
"#;
    for mode in modes() {
        let agent = Agent::new("inotify-as-the-kernel", POLICY);
        let r = Report::from(run(in_mode(&mut agent.command(&[], &["python3", "-c", script]), mode)));
        assert_eq!(r.code, Some(0), "{mode:?}: {}", r.raw);
        // From its working folder, and its events come with the number it was given.
        r.assert_said("relative", "same:new");
        // The same file again: the same watch.
        r.assert_said("again", "same");
        r.assert_said("create_again", "EEXIST");
        // A link is followed unless the call says not to.
        r.assert_said("onlydir_link", "ok");
        r.assert_said("onlydir_link_nofollow", "ENOTDIR");
        r.assert_said("onlydir_file", "ENOTDIR");
        // The program's own descriptor, by its `/proc/self/fd` path.
        r.assert_said("own_descriptor", "same");
        r.assert_said("missing", "ENOENT");
        r.assert_said("null", "EFAULT");
        r.assert_said("closed", "EBADF");
        r.assert_said("pipe", "EINVAL");
        // With the program's rights (it holds no capability, as root too).
        r.assert_said("unsearchable", "EACCES");
        // `/proc`: the own world's is the call's; the Landlock-only mode reads none (and the
        // helper's `/proc/self` is not the program's).
        r.assert_said("proc", if mode == Mode::OwnWorld { "ok" } else { "EACCES" });
    }
}

#[test]
fn a_watch_is_only_where_the_program_may_read() {
    // Landlock does not govern inotify, and a watch shows the names of what is made in a folder
    // and when a file is opened or read. Found in review: where the helper made the watches, a
    // call watched `~/.aws`, the host's `/tmp` and `/dev/shm`. The own world shows none of them
    // (masks of mode 000, its own `/tmp`); the Landlock-only mode refuses them, named, and any
    // place the program may not read.
    let script = "import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(os.O_CLOEXEC)
for name, path in zip(sys.argv[1::2], sys.argv[2::2]):
    path = os.environ['TMPDIR'] if path == 'TMPDIR' else path
    wd = libc.inotify_add_watch(fd, path.encode(), 0x100)
    print(name + '=' + ('ok' if wd >= 0 else errno.errorcode[ctypes.get_errno()]), flush=True)
";
    let agent = Agent::new("inotify-where", POLICY);
    let home = &agent.home;
    std::fs::create_dir_all(home.join(".aws")).unwrap();
    std::fs::write(home.join(".aws/credentials"), "SECRET").unwrap();
    std::fs::create_dir_all(home.join("Link/Files")).unwrap();
    let outside = agent.elsewhere.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let paths: Vec<(&str, String)> = vec![
        ("secret", path_str(&home.join(".aws")).to_owned()),
        ("secret_file", path_str(&home.join(".aws/credentials")).to_owned()),
        ("host_tmp", "/tmp".to_owned()),
        ("host_shm", "/dev/shm".to_owned()),
        ("own_tmp", "TMPDIR".to_owned()),
        ("outside", path_str(&outside).to_owned()),
        ("granted", path_str(&home.join("Link/Files")).to_owned()),
        ("system", "/etc".to_owned()),
    ];
    let mut cmd = vec!["python3", "-c", script];
    for (name, path) in &paths {
        cmd.extend([*name, path.as_str()]);
    }
    for mode in modes() {
        let r = Report::from(run(in_mode(&mut agent.command(&[], &cmd), mode)));
        assert_eq!(r.code, Some(0), "{mode:?}: {}", r.raw);
        r.assert_said("secret", "EACCES");
        r.assert_said("secret_file", "EACCES");
        r.assert_said("own_tmp", "ok");
        r.assert_said("granted", "ok");
        r.assert_said("system", "ok");
        match mode {
            // Its own `/tmp` and `/dev/shm`. Outside the grants the world shows the host's
            // folders read-only, and a watch there is the kernel's to make (SECURITY.md).
            Mode::OwnWorld => {
                r.assert_said("host_tmp", "ok");
                r.assert_said("host_shm", "ok");
                r.assert_said("outside", "ok");
            }
            Mode::LandlockOnly => {
                r.assert_said("host_tmp", "EACCES");
                r.assert_said("host_shm", "EACCES");
                r.assert_said("outside", "EACCES");
                let denial = |target: &str| {
                    r.json["denials"]
                        .as_array()
                        .and_then(|d| d.iter().find(|d| d["target"] == target && d["access"] == "read"))
                        .cloned()
                        .unwrap_or_else(|| panic!("no read denial of {target}: {}", r.raw))
                };
                assert_eq!(denial(path_str(&home.join(".aws")))["cause"], "protected", "{}", r.raw);
                assert_eq!(denial("/tmp")["cause"], "needs_own_world", "{}", r.raw);
                // Outside every grant: the fix is a read grant, and taken, the watch is made.
                let outside_denial = denial(path_str(&outside));
                assert_eq!(outside_denial["cause"], "outside_grants", "{}", r.raw);
                let policy = agent.dir.file("fixed.toml", std::fs::read_to_string(&agent.policy).unwrap());
                apply_fix(&policy, &outside_denial["fix"]);
                assert_check_ok(&policy, home);
                let mut again = lnk();
                again.env("HOME", home).current_dir(home);
                again
                    .args(["sandbox", "run", "--report", "json", "--file"])
                    .arg(&policy)
                    .arg("--")
                    .args(&cmd);
                let r = Report::from(run(in_mode(&mut again, mode)));
                r.assert_said("outside", "ok");
            }
        }
    }
}
