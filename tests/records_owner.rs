//! Records owned by someone else are never acted on (issue 10, item 7).
//!
//! The escape this guards against: root's `lnk-link-run sweep` killed a root process group
//! named by a record that uid 1001 planted in a records folder left writable to others. Here a
//! real process group of the test's own (a `sleep` leading its own session, exactly what a
//! keeper looks like) is named by planted records, and the sweep and `stop` must leave it alive
//! and say why.
//!
//! Planting a file owned by another uid needs root. The suite runs as root and again as an
//! ordinary user (scripts/test.sh); the parts that need root say so loudly when skipped, and
//! the root pass runs them.

mod common;
use common::background::*;
use common::*;

use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Child, Command};

/// The uid planted files get: not the caller, not root.
const OTHER: u32 = 1001;

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

fn skipped_unless_root(what: &str) -> bool {
    if is_root() {
        return false;
    }
    eprintln!(
        "\n!!! SKIPPED as uid {}: {what} needs root (the root pass of scripts/test.sh runs it) !!!\n",
        rustix::process::geteuid().as_raw()
    );
    true
}

/// A victim: `sleep` leading a session and process group of its own, as a keeper does, so a
/// record naming it is provable and a sweep that believed the record would kill it.
struct Victim(Child);

impl Victim {
    fn new() -> Victim {
        let mut cmd = Command::new("sleep");
        cmd.arg("120");
        // SAFETY: setsid is async-signal-safe, and the closure touches nothing else.
        unsafe {
            cmd.pre_exec(|| if libc::setsid() < 0 { Err(std::io::Error::last_os_error()) } else { Ok(()) });
        }
        Victim(cmd.spawn().unwrap())
    }

    fn pid(&self) -> i32 {
        self.0.id() as i32
    }

    fn alive(&mut self) -> bool {
        self.0.try_wait().unwrap().is_none()
    }
}

impl Drop for Victim {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_time(pid: i32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat.rsplit_once(')').unwrap().1.split_whitespace().collect();
    fields[19].parse().unwrap()
}

/// A record in the format lnk writes (`records::format`), naming `victim` as both supervisor
/// and keeper. `state` is "running" (the sweep would end its group) or an ended state.
fn record_text(id: &str, victim: i32, ended: Option<u64>) -> String {
    let start = start_time(victim);
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    let ns = std::fs::metadata("/proc/self/ns/pid").map(|m| std::os::unix::fs::MetadataExt::ino(&m)).unwrap();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
    let (state, end) = match ended {
        None => ("running".to_owned(), String::new()),
        Some(ms) => ("exited".to_owned(), format!("exit_code = 0\nended_ms = {ms}\n")),
    };
    format!(
        "version = 1\nid = \"{id}\"\nprogram = \"sleep\"\nargs = [\"120\"]\nsandbox = []\nconversation = \"\"\n\
         hop = 0\ntimeout_secs = 3600\noutput_chars = 200\nstarted_ms = {now}\nstate = \"{state}\"\n\
         supervisor_pid = {victim}\nsupervisor_start = {start}\nkeeper_pid = {victim}\nkeeper_start = {start}\n\
         boot_id = \"{}\"\npid_namespace = {ns}\n{end}detail = \"\"\nleftovers_possible = false\n\
         output_bytes = 0\noutput_dropped = 0\noutput_end = \"\"\ntold = {}\n",
        boot.trim(),
        ended.is_some()
    )
}

/// Plants `<id>.toml` and `<id>.lock` in `runs`, each owned by `toml_uid` / `lock_uid` (None:
/// the caller's).
fn plant(runs: &Path, id: &str, text: &str, toml_uid: Option<u32>, lock_uid: Option<u32>) {
    for (ext, body, uid) in [("toml", text, toml_uid), ("lock", "", lock_uid)] {
        let path = runs.join(format!("{id}.{ext}"));
        std::fs::write(&path, body).unwrap();
        if let Some(uid) = uid {
            std::os::unix::fs::chown(&path, Some(uid), Some(uid)).unwrap();
        }
    }
}

fn skipped_ids(report: &serde_json::Value) -> Vec<(String, String)> {
    report["skipped"]
        .as_array()
        .unwrap_or_else(|| panic!("no `skipped` in {report}"))
        .iter()
        .map(|s| (s["id"].as_str().unwrap().to_owned(), s["why"].as_str().unwrap().to_owned()))
        .collect()
}

fn why_skipped(report: &serde_json::Value, id: &str) -> String {
    skipped_ids(report)
        .into_iter()
        .find(|(i, _)| i == id)
        .map(|(_, why)| why)
        .unwrap_or_else(|| panic!("{id} not reported skipped: {report}"))
}

#[test]
fn records_that_are_not_the_callers_are_never_acted_on() {
    let bg = Bg::new("foreign-records");
    // `list` makes the records folder, as the caller's, mode 0700.
    assert_eq!(run(&mut bg.cmd("list")).status.code(), Some(0));
    let runs = bg.agent_dir.join("runs");
    let mut victim = Victim::new();
    let pid = victim.pid();

    // A record of the caller's own, but with a second hard link (lnk never makes one): it could
    // be another folder's record brought here, so it is not believed. Works as any user.
    let linked = "r00000000000000c1";
    plant(&runs, linked, &record_text(linked, pid, None), None, None);
    std::fs::hard_link(runs.join(format!("{linked}.toml")), bg.dir.join("second-link.toml")).unwrap();

    let root = !skipped_unless_root("planting records owned by another uid");
    let (foreign_record, foreign_lock, foreign_settled, foreign_orphan, foreign_output) = (
        "r00000000000000a1",
        "r00000000000000b1",
        "r00000000000000d1",
        "r00000000000000e1",
        "r00000000000000f1",
    );
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
    if root {
        // The review's escape: a record uid 1001 wrote, naming root's process group.
        plant(&runs, foreign_record, &record_text(foreign_record, pid, None), Some(OTHER), None);
        // The caller's record, but a lock file someone else made (and could hold or drop).
        plant(&runs, foreign_lock, &record_text(foreign_lock, pid, None), None, Some(OTHER));
        // Someone else's record that looks settled (ended, told, young): still reported.
        plant(&runs, foreign_settled, &record_text(foreign_settled, pid, Some(now)), Some(OTHER), None);
        // A lock without a record, someone else's: not removed as an orphan.
        let orphan = runs.join(format!("{foreign_orphan}.lock"));
        std::fs::write(&orphan, "").unwrap();
        std::os::unix::fs::chown(&orphan, Some(OTHER), Some(OTHER)).unwrap();
        // The caller's old, told record whose output file is someone else's: the record goes,
        // the output stays.
        let old = now - 2 * 24 * 3600 * 1000;
        plant(&runs, foreign_output, &record_text(foreign_output, pid, Some(old)), None, None);
        let out = bg.files_dir.join(format!("background/{foreign_output}.out"));
        std::fs::create_dir_all(out.parent().unwrap()).unwrap();
        std::fs::write(&out, "theirs").unwrap();
        std::os::unix::fs::chown(&out, Some(OTHER), Some(OTHER)).unwrap();
    }

    let report = bg.sweep(None);
    assert!(victim.alive(), "the sweep killed a group named by a record it must not trust: {report}");
    assert!(why_skipped(&report, linked).contains("2 hard links"), "{report}");
    assert!(runs.join(format!("{linked}.toml")).exists(), "the linked record was moved or removed");
    if root {
        for id in [foreign_record, foreign_lock, foreign_settled, foreign_orphan] {
            let why = why_skipped(&report, id);
            assert!(why.contains(&format!("belongs to uid {OTHER}, not to you (uid 0)")), "{id}: {why}");
            assert!(why.contains("left alone"), "{why}");
        }
        for file in [
            format!("{foreign_record}.toml"),
            format!("{foreign_record}.lock"),
            format!("{foreign_lock}.lock"),
            format!("{foreign_settled}.toml"),
            format!("{foreign_orphan}.lock"),
        ] {
            assert!(runs.join(&file).exists(), "{file} was moved or removed");
        }
        assert!(!runs.join(format!("{foreign_record}.corrupt")).exists(), "a foreign record was moved aside");
        assert!(why_skipped(&report, foreign_output).contains(&format!("uid {OTHER}")), "{report}");
        assert!(
            bg.files_dir.join(format!("background/{foreign_output}.out")).exists(),
            "removed their output"
        );
        assert!(!runs.join(format!("{foreign_output}.toml")).exists(), "the caller's old record stays");
        // The sweep also says so on stderr, for a human.
        let out = run(&mut bg.cmd("sweep"));
        assert!(stderr(&out).contains(&format!("{foreign_record} skipped: ")), "{}", stderr(&out));
        assert!(stdout(&out).contains("skipped "), "{}", stdout(&out));
    }

    // `stop` refuses each, saying why, and signals nothing.
    let mut stops = vec![(linked, "2 hard links".to_owned())];
    if root {
        stops.push((foreign_record, format!("belongs to uid {OTHER}")));
        stops.push((foreign_lock, format!("belongs to uid {OTHER}")));
    }
    for (id, why) in stops {
        let out = run(bg.cmd("stop").arg(id).arg("--json"));
        assert_eq!(out.status.code(), Some(125), "stop {id}: {}", stdout(&out));
        assert!(stderr(&out).contains(&why), "stop {id}: {}", stderr(&out));
        assert!(victim.alive(), "stop {id} killed the victim");
    }
    let out = run(bg.cmd("stop").arg("--all"));
    assert!(victim.alive(), "stop --all killed the victim: {}", stderr(&out));
    assert!(stderr(&out).contains("2 hard links"), "{}", stderr(&out));

    // `list` shows someone else's record as skipped, believing nothing in it.
    if root {
        let listed = bg.record(foreign_record);
        assert_eq!(listed["state"], "skipped", "{listed}");
        assert!(listed["detail"].as_str().unwrap().contains(&format!("uid {OTHER}")), "{listed}");
        let out = run(bg.cmd("read").arg(foreign_record));
        assert_eq!(out.status.code(), Some(125));
        assert!(stderr(&out).contains(&format!("belongs to uid {OTHER}")), "{}", stderr(&out));

        // The caller's record whose output file is someone else's (at the recorded inode):
        // `read` refuses it rather than show their file as the command's output.
        let id = "r0000000000000011";
        let out = bg.files_dir.join(format!("background/{id}.out"));
        std::fs::write(&out, "their secret").unwrap();
        std::os::unix::fs::chown(&out, Some(OTHER), Some(OTHER)).unwrap();
        let meta = std::fs::metadata(&out).unwrap();
        let (dev, ino) =
            (std::os::unix::fs::MetadataExt::dev(&meta), std::os::unix::fs::MetadataExt::ino(&meta));
        let text = record_text(id, pid, Some(now))
            .replace("output_end", &format!("output_dev = {dev}\noutput_ino = {ino}\noutput_end"));
        plant(&runs, id, &text, None, None);
        let out = run(bg.cmd("read").arg(id));
        assert!(!stdout(&out).contains("their secret"), "read showed another uid's file");
        assert_eq!(out.status.code(), Some(126), "{}", stderr(&out));
        assert!(stderr(&out).contains(&format!("belongs to uid {OTHER}")), "{}", stderr(&out));
    }
}

fn refused(bg: &Bg, verb: &str) -> String {
    let out = run(bg.cmd(verb).arg("--json"));
    assert_eq!(out.status.code(), Some(125), "{verb} was not refused: {}", stdout(&out));
    stderr(&out)
}

#[test]
fn a_records_folder_others_can_write_in_is_refused_with_the_fix() {
    let bg = Bg::new("open-records");
    let runs = bg.agent_dir.join("runs");
    std::fs::create_dir(&runs).unwrap();
    let chmod = |p: &Path, mode| std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();

    chmod(&runs, 0o777);
    for verb in ["sweep", "list"] {
        let err = refused(&bg, verb);
        assert!(err.contains(&format!("refusing the records folder {}", runs.display())), "{err}");
        assert!(err.contains("its mode is 0777, so every user can write in it"), "{err}");
        assert!(err.contains(&format!("`chmod 700 {}`", runs.display())), "{err}");
    }
    chmod(&runs, 0o770);
    let err = refused(&bg, "sweep");
    assert!(err.contains("its mode is 0770, so its group can write in it"), "{err}");

    // The agent folder too: whoever can write in it can replace `runs`.
    chmod(&runs, 0o700);
    chmod(&bg.agent_dir, 0o777);
    let err = refused(&bg, "sweep");
    assert!(err.contains(&format!("refusing the agent folder {}", bg.agent_dir.display())), "{err}");
    assert!(err.contains(&format!("`chmod go-w {}`", bg.agent_dir.display())), "{err}");
    chmod(&bg.agent_dir, 0o755);
    assert_eq!(run(&mut bg.cmd("sweep")).status.code(), Some(0), "a private folder is accepted");

    if skipped_unless_root("a records folder owned by another uid") {
        return;
    }
    // A start lock someone else made (and could hold forever) is refused, not waited on.
    let start_lock = runs.join("start.lock");
    std::fs::write(&start_lock, "").unwrap();
    std::os::unix::fs::chown(&start_lock, Some(OTHER), Some(OTHER)).unwrap();
    let out = bg.start_with(&[], &["sleep", "1"]);
    assert_eq!(out.status.code(), Some(125), "{}", stdout(&out));
    assert!(stderr(&out).contains(&format!("start.lock: it belongs to uid {OTHER}")), "{}", stderr(&out));
    std::fs::remove_file(&start_lock).unwrap();

    std::os::unix::fs::chown(&runs, Some(OTHER), Some(OTHER)).unwrap();
    let err = refused(&bg, "sweep");
    assert!(err.contains(&format!("it belongs to uid {OTHER}, but must belong to you (uid 0)")), "{err}");
    assert!(err.contains(&format!("`rm -r {}`", runs.display())), "{err}");
    std::os::unix::fs::chown(&runs, Some(0), Some(0)).unwrap();
    std::os::unix::fs::chown(&bg.agent_dir, Some(OTHER), Some(OTHER)).unwrap();
    let err = refused(&bg, "sweep");
    assert!(
        err.contains(&format!("belongs to uid {OTHER}, but must belong to you (uid 0) or root")),
        "{err}"
    );
}

#[test]
fn a_private_tmp_base_others_can_reach_is_refused_with_the_fix() {
    let bg = Bg::new("open-tmp-base");
    let tmp = bg.dir.join("tmp");
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    let base = tmp.join(format!("lnk-{uid}"));
    std::fs::create_dir_all(&base).unwrap();
    std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o777)).unwrap();
    let start = |bg: &Bg| {
        let mut c = bg.cmd("start");
        c.env("TMPDIR", &tmp).arg("--file").arg(&bg.policy).args(["--", "sleep", "1"]);
        let out = run(&mut c);
        assert_ne!(out.status.code(), Some(0), "started with a shared tmp base: {}", stdout(&out));
        stderr(&out)
    };
    let err = start(&bg);
    assert!(err.contains(&format!("refusing the private tmp base {}", base.display())), "{err}");
    assert!(err.contains("its mode is 0777, not 0700"), "{err}");
    assert!(err.contains(&format!("`chmod 700 {}`", base.display())), "{err}");

    if skipped_unless_root("a private tmp base owned by another uid") {
        return;
    }
    std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::chown(&base, Some(OTHER), Some(OTHER)).unwrap();
    let err = start(&bg);
    assert!(err.contains(&format!("it belongs to uid {OTHER}, not to you (uid 0)")), "{err}");
    assert!(err.contains(&format!("`rm -r {}`", base.display())), "{err}");
}
