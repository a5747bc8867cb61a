//! `lnk sandbox run`: nothing one call does weakens the next or the host (the brief's "across
//! calls"): no set-user-id or set-group-id bit set by any call that sets a mode, nor kept by a
//! copy; nothing of the host's reached through lnk's own descriptors (the default standard
//! input); no file attribute changed outside the write grants; no lease that makes the harness
//! wait; no tmp folder left behind whatever modes its program left.
//!
//! Hostile Python in both modes (the own world, and Landlock only on a simulated kernel), as
//! root and as the ordinary user (the suite runs twice); each victim is checked from outside
//! too. System call numbers are x86_64's; elsewhere these tests fail in CI and skip loudly.

mod common;
use common::*;

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::Path;

const POLICY: &str = "commands = [\"python3\", \"cp\", \"install\", \"sh\", \"mkdir\", \"chmod\", \"touch\"]\n\
                      [files]\nread = [\"~\"]\nwrite = [\"~/Link/Files\"]\n";

fn x86_64() -> bool {
    require(cfg!(target_arch = "x86_64"), "x86_64 (the tests' system call numbers)")
}

/// Every file beneath `dir` with a set-user-id or set-group-id bit.
fn set_id_files(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let meta = entry.path().symlink_metadata().unwrap();
        if meta.mode() & 0o6000 != 0 {
            found.push(format!("{} {:o}", entry.path().display(), meta.mode()));
        }
        if meta.is_dir() {
            found.extend(set_id_files(&entry.path()));
        }
    }
    found
}

#[test]
fn no_call_sets_a_set_id_bit_and_no_copy_keeps_one() {
    if !x86_64() {
        return;
    }
    let agent = Agent::new("set-id", POLICY);
    let files = agent.home.join("Link/Files");
    std::fs::write(files.join("f"), "x").unwrap();
    // A set-user-id program of the user's own, in a read grant, for a copy to try to keep.
    let docs = agent.home.join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::copy("/bin/true", docs.join("suid")).unwrap();
    std::fs::set_permissions(docs.join("suid"), std::fs::Permissions::from_mode(0o4755)).unwrap();
    let script = r#"
import stat
keep = []
def P(s):
    b = ctypes.create_string_buffer(s.encode()); keep.append(b); return ctypes.addressof(b)
f = "Link/Files/f"
say("chmod_setuid", attempt(lambda: os.chmod(f, 0o4755)))
say("chmod_setgid", attempt(lambda: os.chmod(f, 0o2755)))
say("fchmod_setuid", attempt(lambda: os.fchmod(os.open(f, os.O_RDONLY), 0o4711)))
say("fchmodat2_setuid", sc(452, -100, P(f), 0o4755, 0))
say("open_creat_setuid", attempt(lambda: os.open("Link/Files/n1", os.O_CREAT | os.O_WRONLY, 0o4755)))
say("openat_creat_setgid", sc(257, -100, P("Link/Files/n2"), os.O_CREAT | os.O_WRONLY, 0o2755))
say("creat_setuid", sc(85, P("Link/Files/n3"), 0o4755))
say("tmpfile_setuid", attempt(lambda: os.open("Link/Files", os.O_TMPFILE | os.O_WRONLY, 0o4755)))
say("mknod_setuid", attempt(lambda: os.mknod("Link/Files/n4", stat.S_IFREG | 0o4755)))
say("open_plain", attempt(lambda: os.close(os.open("Link/Files/n5", os.O_CREAT | os.O_WRONLY, 0o755))))
say("openat2", sc(437, -100, P("Link/Files/f"), 0, 0))
"#;
    let home = agent.home.clone();
    for (mode, r) in
        agent.in_each_mode_at(&home, &[], &[], &["python3", "-c", &format!("{PY_PRELUDE}\n{script}")])
    {
        for name in [
            "chmod_setuid",
            "chmod_setgid",
            "fchmod_setuid",
            "fchmodat2_setuid",
            "open_creat_setuid",
            "openat_creat_setgid",
            "creat_setuid",
            "tmpfile_setuid",
            "mknod_setuid",
        ] {
            assert_eq!(r.said(name), "EPERM", "{mode}: {name}; stderr:\n{}", r.err());
        }
        // A plain file is made as ever; openat2 (whose mode a filter cannot read) is not there.
        r.assert_said("open_plain", "ok");
        r.assert_said("openat2", "ENOSYS");
    }
    // Copies that keep modes: cp -p, cp -a, install -m.
    let copies = "cp -p docs/suid Link/Files/c1; cp -a docs/suid Link/Files/c2; \
                  install -m 4755 docs/suid Link/Files/c3; echo copied";
    for (mode, r) in agent.in_each_mode_at(&home, &[], &[], &["sh", "-c", copies]) {
        assert!(r.out().contains("copied"), "{mode}: {}", r.raw);
    }
    assert_eq!(set_id_files(&files), Vec::<String>::new(), "a set-id bit in a write grant");
}

#[test]
fn the_hosts_dev_null_is_never_the_programs_to_change() {
    let agent = Agent::new("dev-null", POLICY);
    let before = std::fs::metadata("/dev/null").unwrap();
    let script = r#"
st = os.fstat(0)
say("is_null", os.major(st.st_rdev) == 1 and os.minor(st.st_rdev) == 3)
say("fchmod", attempt(lambda: os.fchmod(0, st.st_mode & 0o7777)))
say("futimens", attempt(lambda: os.utime(0)))
say("fchown", attempt(lambda: os.fchown(0, st.st_uid, st.st_gid)))
"#;
    for (mode, r) in agent.python_in_each_mode(script) {
        r.assert_said("is_null", "True");
        // The own world's /dev/null is on its read-only view; without one, seccomp refuses.
        let refused = if mode == "own-world" { "EROFS" } else { "EPERM" };
        for name in ["fchmod", "futimens", "fchown"] {
            assert_eq!(r.said(name), refused, "{mode}: {name}; stderr:\n{}", r.err());
        }
    }
    let after = std::fs::metadata("/dev/null").unwrap();
    assert_eq!((after.mode(), after.mtime(), after.uid()), (before.mode(), before.mtime(), before.uid()));
}

#[test]
fn file_attributes_change_nowhere_but_write_grants_and_no_lease_is_taken() {
    if !x86_64() {
        return;
    }
    let agent = Agent::new("attributes", POLICY);
    let docs = agent.home.join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(docs.join("r.txt"), "x").unwrap();
    let script = r#"
import fcntl, struct
fd = os.open(os.path.expanduser("~/docs/r.txt"), os.O_RDONLY)
say("setflags", attempt(lambda: fcntl.ioctl(fd, 0x40086602, struct.pack("l", 0x40))))
say("setflags32", attempt(lambda: fcntl.ioctl(fd, 0x40046602, struct.pack("i", 0x40))))
say("fssetxattr", attempt(lambda: fcntl.ioctl(fd, 0x401c5820, bytes(28))))
say("setversion", attempt(lambda: fcntl.ioctl(fd, 0x40087602, struct.pack("l", 7))))
say("ext4_setversion", attempt(lambda: fcntl.ioctl(fd, 0x40086604, struct.pack("l", 7))))
say("getflags", attempt(lambda: fcntl.ioctl(fd, 0x80086601, struct.pack("l", 0))))
attr = ctypes.create_string_buffer(24)
path = ctypes.create_string_buffer(os.path.expanduser("~/docs/r.txt").encode())
say("file_setattr", sc(469, -100, ctypes.addressof(path), ctypes.addressof(attr), 24, 0))
say("lease", attempt(lambda: fcntl.fcntl(fd, 1024, fcntl.F_RDLCK)))
"#;
    let before = std::fs::metadata(docs.join("r.txt")).unwrap();
    for (mode, r) in agent.python_in_each_mode(script) {
        // The own world's read-only view answers outside the write grants; without one, seccomp.
        let refused = if mode == "own-world" { "EROFS" } else { "EPERM" };
        for name in ["setflags", "fssetxattr", "setversion", "file_setattr"] {
            assert_eq!(r.said(name), refused, "{mode}: {name}; stderr:\n{}", r.err());
        }
        // A file system's own alias of a refused command (ext4's), and reading the flags.
        assert!(["EROFS", "EPERM"].contains(&r.said("ext4_setversion").as_str()), "{mode}: {}", r.raw);
        assert_ne!(r.said("getflags"), "EPERM", "{mode}: reading the flags is not refused");
        // The 32-bit form is no command of this architecture in the own world; refused anyway.
        assert_ne!(r.said("setflags32"), "ok", "{mode}");
        r.assert_said("lease", "EPERM");
    }
    let after = std::fs::metadata(docs.join("r.txt")).unwrap();
    assert_eq!(after.ctime(), before.ctime(), "the file's attributes changed");
}

#[test]
fn a_calls_tmp_is_removed_whatever_modes_its_program_left() {
    let agent = Agent::new("tmp-modes", POLICY);
    // The own world's TMPDIR on the host is the caller's; the simulated kernel's its own.
    let own_tmp = agent.dir.join("tmp-own");
    std::fs::create_dir_all(&own_tmp).unwrap();
    let script = "mkdir -p \"$TMPDIR/a/b/c\" && touch \"$TMPDIR/a/b/c/f\" && mkdir -m 000 \"$TMPDIR/z\"; \
                  chmod 000 \"$TMPDIR/a/b\" \"$TMPDIR/a\"; echo made";
    let home = agent.home.clone();
    let own = own_tmp.to_string_lossy().into_owned();
    let mut reports = Vec::new();
    reports.extend(agent.own_world_at(&home, &[], &[("TMPDIR", own.as_str())], &["sh", "-c", script]));
    reports.extend(agent.landlock_only_at(&home, &[], &[], &["sh", "-c", script]));
    for r in &reports {
        assert!(r.out().contains("made"), "{}", r.raw);
    }
    for base_parent in [own_tmp, agent.dir.join("tmp-landlock-only")] {
        for base in std::fs::read_dir(&base_parent).into_iter().flatten().flatten() {
            let left: Vec<_> = std::fs::read_dir(base.path())
                .into_iter()
                .flatten()
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("call-"))
                .map(|e| e.path())
                .collect();
            assert!(left.is_empty(), "a call's tmp folder outlived it: {left:?}");
        }
    }
}

#[test]
fn a_tree_too_deep_for_descriptors_or_the_stack_breaks_no_later_call() {
    // A program leaves 5,000 nested folders in its tmp (each made from the one before, so no
    // path is too long): removing them must neither run out of descriptors nor overflow the
    // helper's stack, and the next call must run.
    let agent = Agent::new("deep-tree", POLICY);
    let script = r#"
import os
os.chdir(os.environ["TMPDIR"])
for i in range(5000):
    os.mkdir("d"); os.chdir("d")
    if i % 1000 == 0:
        open("f", "w").write("x")
print("made")
"#;
    let home = agent.home.clone();
    for (mode, r) in agent.in_each_mode_at(&home, &[], &[], &["python3", "-c", script]) {
        assert_eq!(r.out(), "made\n", "{mode}: {}", r.raw);
    }
    for (mode, r) in agent.in_each_mode_at(&home, &[], &[], &["sh", "-c", "echo next"]) {
        assert_eq!(r.out(), "next\n", "{mode}: the next call did not run: {}", r.raw);
    }
    // No call folder is left in either mode's base.
    let parents = [std::env::temp_dir(), agent.dir.join("tmp-landlock-only")];
    let bases = parents.iter().flat_map(|p| std::fs::read_dir(p).into_iter().flatten().flatten());
    for base in bases.filter(|b| b.file_name().to_string_lossy().starts_with("lnk-")) {
        for call in std::fs::read_dir(base.path()).into_iter().flatten().flatten() {
            let deep = call.path().join("d");
            assert!(!deep.exists(), "a deep tree outlived its call: {}", call.path().display());
        }
    }
}
