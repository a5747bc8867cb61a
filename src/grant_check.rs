//! What `lnk sandbox check` finds on this computer, beyond the sandbox file's text.
//!
//! [`crate::sandbox_file`] checks the text; this looks at what the grants name here, so that a
//! grant `lnk sandbox run` would refuse is an error at `check`, with its line and column, and not
//! a surprise at the first call. Each error is found by the code `run` uses, so the two cannot
//! disagree:
//!
//! | finding | kind | why |
//! |---|---|---|
//! | a read or write grant passes through a symbolic link (`/lib` → `usr/lib` on a merged-usr system; a `~/Link/Files/proj` → `~/.ssh` planted by an earlier call) | error | `run` opens grants with [`grants::open_no_symlinks`] and refuses a link: following it would grant whatever the link points at. The help names the real folder |
//! | a grant names a file, or cannot be opened | error | the same open |
//! | a grant lies in a `[files] deny` path | error | [`protected::grant_in_denied`], as `run` |
//! | a write grant holds a file system of devices mounted elsewhere (the host's `/dev` bound in a chroot) | error | as `run` ([`crate::sandbox::refusal::devices_in_write_grant`]) |
//! | a grant lies in the host's `/dev` (not `/dev/shm`) | error | as `run` ([`crate::protected::device_grant`]): the person's terminals, disks and console lie there |
//! | a write grant overlaps an agent's records folder (`--agent-dir`) | error | as `run`: Landlock cannot carve the records out of a write grant |
//! | a write grant reaches the sandbox file itself, or the lnk that checks it (by the path it was called by, a link on the way, or its image) | error | as `run` ([`trusted`]): a program could rewrite what the next call grants, or replace what it runs |
//! | a write grant overlaps lnk's private tmp base (`$TMPDIR/lnk-<uid>`: every call's tmp folder) | error | as `run` ([`crate::sandbox::over_tmp_base`]) |
//! | `[internet] tcp` names an endpoint by name where this kernel gives calls no own world, or lists the proxy's own address, or too many | error | as `run`, which refuses the first as unsupported (125: a limit of the mode) and the rest as refused (126): the door's own checks ([`crate::proxy::host_door::plan_refusal`], [`crate::proxy::door::Door::new`]) |
//! | a grant is, or holds, the host's `/tmp` or `/dev/shm` | warning | every process shares them: the grant opens other users' and other calls' files there |
//! | a grant holds protected paths that exist here, or an agent's records folder | warning | the grant is wider than it looks, and lnk cuts these holes in it ([`protected`]); the warning says which, and that anything else secret in it stays reachable |
//!
//! It decides for the mode this kernel gives calls (`run`'s probe, kept answer included; the
//! answer names it), so what `run` refuses in that mode it reports. What it cannot promise: the
//! computer may change between `check` and `run`, so `run` looks again. `~` is this process's HOME; without one, `~` grants are not looked at and a warning
//! says so. A grant that does not exist is not a finding: it grants nothing, as in `run`.

use std::path::{Path, PathBuf};

use crate::diagnostic::Diagnostic;
use crate::paths::{GrantPath, overlaps};
use crate::protected;
use crate::sandbox::grants::{self, GrantError};
use crate::sandbox::trusted::{self, Trusted};
use crate::sandbox_file::{GrantString, grant_strings};

/// A grant string with the folder it names on this computer.
struct Grant {
    written: GrantString,
    path: PathBuf,
}

/// The errors and warnings for the valid sandbox file `source` (read from `file`), with `~` as
/// `home` (`None`: HOME is unknown), the agents' records folders `agent_dirs` (absolute), in the
/// mode this kernel gives calls (`own_world`).
pub fn on_this_computer(
    source: &str,
    file: &Path,
    home: Option<&Path>,
    agent_dirs: &[PathBuf],
    own_world: bool,
) -> Vec<Diagnostic> {
    let mut found = Vec::new();
    let mut skipped_home = false;
    // lnk's private tmp base, as `run` finds it (`$TMPDIR/lnk-<uid>`).
    let tmp_base = crate::private_tmp::base_path(rustix::process::geteuid().as_raw()).ok();
    let mut all = Vec::new();
    for written in grant_strings(source) {
        let path = match (GrantPath::parse(&written.text), home) {
            (Ok(g @ GrantPath::Absolute(_)), _) => g.expand(Path::new("/")),
            (Ok(g), Some(home)) => g.expand(home),
            (Ok(_), None) => {
                skipped_home = true;
                continue;
            }
            // Not reached for a file `SandboxFile::parse` accepted.
            (Err(_), _) => continue,
        };
        all.push(Grant { written, path });
    }
    let (grant_list, deny): (Vec<&Grant>, Vec<&Grant>) = all.iter().partition(|g| g.written.key != "deny");
    let deny_paths: Vec<PathBuf> = deny.iter().map(|d| d.path.clone()).collect();
    let grant_paths: Vec<&PathBuf> = grant_list.iter().map(|g| &g.path).collect();

    for grant in &grant_list {
        let at = |message: String| Diagnostic::new(message, grant.written.span.clone());
        match grants::open_no_symlinks(&grant.path, true) {
            Ok(_) => {}
            Err(e @ GrantError::Symlink(_)) => {
                let help = match std::fs::canonicalize(&grant.path) {
                    Ok(real) => format!("name the real folder: `{}`", real.display()),
                    Err(_) => "name the real folder, or remove the link".to_owned(),
                };
                found.push(at(e.to_string()).with_help(help));
            }
            Err(e) => found.push(at(e.to_string()).with_help("a grant names a folder that can be opened")),
        }
        if let Some(denied) = deny_paths.iter().find(|d| grant.path.starts_with(d)) {
            let why = protected::grant_in_denied_why(&grant.path, denied);
            found.push(at(why).with_help("a grant inside a denied path would lose to it silently"));
        }
        if let Some(why) = crate::protected::device_grant(&grant.path) {
            found.push(at(why).with_help("remove the grant: a program's devices are the call's own"));
        }
        if let Some(shared) = shared_place(&grant.path) {
            found.push(
                at(format!(
                    "`{}` opens `{shared}`, which every process here shares: other users' and other calls' files in it become the program's to read{}",
                    grant.written.text,
                    if grant.written.key == "write" { " and change" } else { "" }
                ))
                .with_help(format!("grant a folder of your own beneath `{shared}`; each call has a tmp folder of its own (`$TMPDIR`)"))
                .as_warning(),
            );
        }
        if grant.written.key == "write" {
            let devices = crate::sandbox::mounts::MountTable::of_this_process().map(|t| t.device_mounts());
            if let Some(why) =
                devices.ok().and_then(|d| crate::sandbox::refusal::devices_in_write_grant(&grant.path, &d))
            {
                found.push(at(why).with_help("grant a folder that holds no mount of /dev"));
            }
            if let Some(why) =
                tmp_base.as_deref().and_then(|base| crate::sandbox::over_tmp_base(&grant.path, base))
            {
                found.push(at(why).with_help("narrow the grant, or set TMPDIR to a folder outside it"));
            }
            if let Some(records) = agent_dirs.iter().find(|r| overlaps(&grant.path, r)) {
                let why = crate::sandbox::over_records(&grant.path, records);
                found.push(at(why).with_help("Landlock cannot carve the records out of a write grant"));
            }
        }
        if let Some(warning) = wider_than_it_looks(grant, home, &grant_paths, agent_dirs) {
            found.push(warning);
        }
    }
    // What the next call trusts, out of every write grant (as `run` refuses it).
    let writes: Vec<&Grant> = grant_list.iter().copied().filter(|g| g.written.key == "write").collect();
    let write_paths: Vec<PathBuf> = writes.iter().map(|g| g.path.clone()).collect();
    let mut files = trusted::own_paths();
    files.push(Trusted { path: file.to_owned(), what: "the sandbox file" });
    match trusted::reached_by_write_grants(&files, &write_paths) {
        Ok(None) => {}
        Ok(Some(reached)) => found.push(
            Diagnostic::new(reached.why(&files, &write_paths), writes[reached.grant].written.span.clone())
                .with_help("keep the sandbox file and lnk outside every write grant, or narrow the grant"),
        ),
        Err(why) => found.push(Diagnostic::new(why, None)),
    }
    found.extend(endpoints_here(source, own_world));
    if skipped_home {
        found.push(
            Diagnostic::new("HOME is not set, so the `~` grants were not looked at", None)
                .with_help("set HOME to the home folder the sandbox will run in")
                .as_warning(),
        );
    }
    found
}

/// The host's shared place a grant of `path` opens (`/tmp`, `/dev/shm`), if any: the grant is
/// one of them or holds one.
fn shared_place(path: &Path) -> Option<&'static str> {
    ["/tmp", "/dev/shm"].into_iter().find(|place| Path::new(place).starts_with(path))
}

/// What `run` refuses of `[internet] tcp` in this mode, in its words, at the entry: a name
/// without the own world (a limit of the mode), and what the door refuses in any mode.
fn endpoints_here(source: &str, own_world: bool) -> Vec<Diagnostic> {
    let Ok(parsed) = crate::sandbox_file::SandboxFile::parse(source) else { return Vec::new() };
    let Some(internet) = parsed.internet else { return Vec::new() };
    let net = crate::flags::InternetFlags {
        hosts: internet.hosts.clone(),
        tcp: internet.tcp.clone(),
        per_minute: internet.per_minute,
    };
    let strings = crate::sandbox_file::tcp_strings(source);
    let span_of =
        |words: &str| strings.iter().find(|s| words.contains(s.text.as_str())).and_then(|s| s.span.clone());
    let first_span = strings.first().and_then(|s| s.span.clone());
    let why = match own_world {
        false => crate::proxy::host_door::named_endpoint(&net).map(|why| {
            let span = net.tcp.iter().find_map(|e| match &e.host {
                crate::sandbox_file::TcpHost::Name(n) => Some(format!("{n}:{}", e.port)),
                _ => None,
            });
            (
                why,
                span.and_then(|s| span_of(&s)),
                "this kernel gives calls no namespaces of their own (`lnk sandbox status` says why): list the address, or enable user namespaces",
            )
        }),
        true => None,
    };
    let why = why.or_else(|| {
        let refused = match own_world {
            true => crate::proxy::door::Door::new(&net, Path::new("/tmp")).err(),
            false => crate::proxy::host_door::plan_refusal(&net),
        };
        refused.map(|why| (why, None, "as `lnk sandbox run` refuses it"))
    });
    // At the entry the words name, else the first.
    why.map(|(why, span, help)| {
        let span = span.or_else(|| span_of(&why)).or(first_span);
        Diagnostic::new(why, span).with_help(help)
    })
    .into_iter()
    .collect()
}

/// A warning when `grant` holds protected paths that exist here, or an agent's records folder:
/// lnk cuts them out (they are holes), so the grant is not all it reads as, and anything else
/// secret in it is still reachable.
fn wider_than_it_looks(
    grant: &Grant,
    home: Option<&Path>,
    all: &[&PathBuf],
    agent_dirs: &[PathBuf],
) -> Option<Diagnostic> {
    let only_this = [&grant.path];
    let mut holes: Vec<String> = Vec::new();
    if let Some(home) = home {
        for hole in protected::builtin_holes(home, &only_this) {
            // A hole only where no other grant names it, as `run` decides.
            if protected::is_hole(&hole, all) && std::fs::symlink_metadata(&hole).is_ok() {
                holes.push(format!("`{}`", hole.display()));
            }
        }
    }
    for records in agent_dirs {
        if protected::is_hole(records, &only_this) && protected::is_hole(records, all) {
            holes.push(format!("`{}` (the agent's records)", records.display()));
        }
    }
    if holes.is_empty() {
        return None;
    }
    Some(
        Diagnostic::new(
            format!(
                "`{}` holds more than it looks: lnk cuts these protected paths out of it: {}",
                grant.written.text,
                holes.join(", ")
            ),
            grant.written.span.clone(),
        )
        .with_help(
            "anything else secret in it stays reachable: narrow the grant, or list such paths in `[files] deny`; to grant a protected path, name it in a grant",
        )
        .as_warning(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "lnk-grant-check-{name}-{}-{}",
            rustix::process::getuid().as_raw(),
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_grant_through_a_link_is_an_error_at_the_string() {
        let home = scratch("link");
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::create_dir_all(home.join("Link/Files")).unwrap();
        std::os::unix::fs::symlink(home.join(".ssh"), home.join("Link/Files/proj")).unwrap();
        let source = "[files]\nwrite = [\"~/Link/Files/proj\"]\n";
        let found = on_this_computer(source, Path::new("/nonexistent/sb.toml"), Some(&home), &[], true);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(!found[0].warning && found[0].message.contains("symbolic link"), "{found:?}");
        assert_eq!(found[0].line_col(source), Some((2, 10)));
        let real = std::fs::canonicalize(home.join(".ssh")).unwrap();
        assert_eq!(
            found[0].help.as_deref(),
            Some(format!("name the real folder: `{}`", real.display()).as_str())
        );
        std::fs::remove_dir_all(&home).unwrap();
    }

    #[test]
    fn a_wide_grant_warns_with_the_holes_that_exist() {
        let home = scratch("wide");
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        let records = home.join(".local/state/agent");
        let found = on_this_computer(
            "[files]\nread = [\"~\"]\n",
            Path::new("/x.toml"),
            Some(&home),
            std::slice::from_ref(&records),
            true,
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].warning);
        assert!(found[0].message.contains(&format!("`{}`", home.join(".ssh").display())), "{found:?}");
        assert!(!found[0].message.contains(".aws"), "only what exists: {found:?}");
        assert!(found[0].message.contains("the agent's records"), "{found:?}");
        // Naming the secret grants it: no hole, no warning.
        let named = on_this_computer(
            "[files]\nread = [\"~\", \"~/.ssh\"]\n",
            Path::new("/x.toml"),
            Some(&home),
            &[],
            true,
        );
        assert!(named.is_empty(), "{named:?}");
        std::fs::remove_dir_all(&home).unwrap();
    }

    #[test]
    fn a_sandbox_file_inside_its_own_write_grant_is_an_error_at_the_grant() {
        let home = scratch("own-file");
        std::fs::create_dir_all(home.join("work")).unwrap();
        let source = "[files]\nread = [\"~\"]\nwrite = [\"~/work\"]\n";
        let file = home.join("work/sb.toml");
        std::fs::write(&file, source).unwrap();
        let found = on_this_computer(source, &file, Some(&home), &[], true);
        let error = found.iter().find(|d| !d.warning).expect("an error");
        assert!(
            error.message.contains("the sandbox file") && error.message.contains("write grant"),
            "{found:?}"
        );
        assert_eq!(error.line_col(source), Some((3, 10)));
        // Outside it: no error.
        let outside = home.join("sb.toml");
        std::fs::write(&outside, source).unwrap();
        assert!(on_this_computer(source, &outside, Some(&home), &[], true).iter().all(|d| d.warning));
        std::fs::remove_dir_all(&home).unwrap();
    }

    #[test]
    fn deny_records_and_a_missing_home_are_found() {
        let found = on_this_computer(
            "[files]\nwrite = [\"/srv/x/y\"]\ndeny = [\"/srv/x\"]\n",
            Path::new("/x.toml"),
            None,
            &[PathBuf::from("/srv/x")],
            true,
        );
        assert!(found.iter().any(|d| d.message.contains("`[files] deny`")), "{found:?}");
        assert!(found.iter().any(|d| d.message.contains("records folder")), "{found:?}");
        let no_home = on_this_computer("[files]\nread = [\"~\"]\n", Path::new("/x.toml"), None, &[], true);
        assert!(no_home.len() == 1 && no_home[0].warning && no_home[0].span.is_none(), "{no_home:?}");
    }
}
