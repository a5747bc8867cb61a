//! Path handling shared by every part of lnk: the sandbox file's grants, the file tool's paths,
//! and the team folders.
//!
//! Everything here is *lexical*: it looks at the text of a path and never at the file system. That
//! is on purpose. The file system is where an attacker plants symlinks, so nothing here resolves
//! one; the callers that touch the disk open what this module computes with `openat2`
//! (`RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`) or a component-wise `O_NOFOLLOW` walk, where a symlink
//! makes the open fail instead of leading elsewhere. Under that rule a lexical `a/..` means the
//! same as the kernel's: with no symlinks, `a/..` is where one started.
//!
//! Guarantees (each has a property test below and a fuzz target in `fuzz/`):
//! - [`RelativePath::parse`] never yields a path that climbs above its root: a `..` that would is
//!   an error, not clamped, so the caller learns the path was wrong.
//! - The result has no `.`, `..` or empty components, no NUL, and every component fits `NAME_MAX`.
//! - [`is_beneath`] is component-wise: `/home/al` is not beneath `/home/a`; so is [`within`],
//!   its byte-wise form for normal paths (the same answer on every pair, a property test).
//!
//! Trusted with: the lexical rules every grant and file tool path is checked by: a path let climb
//! above its root, or `/home/al` taken to lie beneath `/home/a`, would reach the wrong folder. What
//! it trusts: the harness's `HOME` and `TMPDIR` (each must be absolute, without `..`), the kernel's
//! `/proc/self/fd` in [`real_path`], and nothing else on the disk: its callers open what it
//! computes without following links.

use std::fmt;
use std::path::{Component, Path, PathBuf};

/// The longest path the kernel takes (`PATH_MAX`, counting the NUL).
pub const PATH_MAX: usize = 4096;
/// The longest single name the kernel takes (`NAME_MAX`).
pub const NAME_MAX: usize = 255;
/// The longest team name; team names are folder names a person reads.
pub const TEAM_NAME_MAX: usize = 64;

/// Why a path was refused. Every variant says what to do in its `Display`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathError {
    Empty,
    Nul,
    TooLong,
    NameTooLong,
    /// A grant path must be absolute or start with `~`.
    NotAbsolute,
    /// `~user` is another person's home, which lnk never looks up.
    OtherUsersHome,
    /// A grant path may not contain `..`: it would be resolved by the kernel, not by lnk.
    DotDotInGrant,
    /// A relative path's `..` would climb above its root.
    ClimbsOutOfRoot,
    /// A relative path was given where an absolute one is not allowed, or the reverse.
    Absolute,
    BadTeamName(String),
    NoHome,
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathError::Empty => write!(f, "the path is empty"),
            PathError::Nul => write!(f, "the path contains a NUL character"),
            PathError::TooLong => write!(f, "the path is longer than {PATH_MAX} bytes"),
            PathError::NameTooLong => {
                write!(f, "a name in the path is longer than {NAME_MAX} bytes")
            }
            PathError::NotAbsolute => {
                write!(f, "the path must be absolute (`/…`) or start at the home folder (`~`, `~/…`)")
            }
            PathError::OtherUsersHome => {
                write!(f, "`~name` (another user's home) is not supported: write `~/…` or an absolute path")
            }
            PathError::DotDotInGrant => {
                write!(f, "the path contains `..`: write the folder it means directly")
            }
            PathError::ClimbsOutOfRoot => write!(f, "the path climbs out of its root with `..`"),
            PathError::Absolute => write!(f, "the path must be relative to its root, not absolute"),
            PathError::BadTeamName(name) => write!(
                f,
                "`{name}` is not a team name: use 1 to {TEAM_NAME_MAX} letters, digits, `-`, `_` or `.`, not starting with `.`"
            ),
            PathError::NoHome => {
                write!(f, "the home folder is unknown: set HOME to an absolute path")
            }
        }
    }
}

impl std::error::Error for PathError {}

fn check_text(s: &str) -> Result<(), PathError> {
    if s.is_empty() {
        return Err(PathError::Empty);
    }
    if s.contains('\0') {
        return Err(PathError::Nul);
    }
    if s.len() >= PATH_MAX {
        return Err(PathError::TooLong);
    }
    if s.split('/').any(|name| name.len() > NAME_MAX) {
        return Err(PathError::NameTooLong);
    }
    Ok(())
}

/// A folder granted by the sandbox file: absolute, or beneath the home folder.
///
/// Kept unexpanded so `lnk sandbox check` can validate a file without knowing whose home it will
/// run in; [`GrantPath::expand`] makes it absolute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrantPath {
    /// `~` (empty) or `~/rest`.
    Home(RelativePath),
    Absolute(PathBuf),
}

impl GrantPath {
    /// Parses a grant as written: `~`, `~/…` or `/…`; no `..`; `.` and repeated slashes are
    /// dropped.
    pub fn parse(s: &str) -> Result<GrantPath, PathError> {
        check_text(s)?;
        if s.split('/').any(|c| c == "..") {
            return Err(PathError::DotDotInGrant);
        }
        if s == "~" {
            return Ok(GrantPath::Home(RelativePath::root()));
        }
        if let Some(rest) = s.strip_prefix("~/") {
            return Ok(GrantPath::Home(RelativePath::parse_or_root(rest)?));
        }
        if s.starts_with('~') {
            return Err(PathError::OtherUsersHome);
        }
        if !s.starts_with('/') {
            return Err(PathError::NotAbsolute);
        }
        Ok(GrantPath::Absolute(RelativePath::parse_or_root(&s[1..])?.under(Path::new("/"))))
    }

    /// The absolute folder this grant names, for a person whose home is `home`.
    pub fn expand(&self, home: &Path) -> PathBuf {
        match self {
            GrantPath::Home(rel) => rel.under(home),
            GrantPath::Absolute(p) => p.clone(),
        }
    }
}

/// A normalised path relative to some root: no `.`, `..` or empty components, never climbing
/// above the root. The empty path is the root itself.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RelativePath {
    components: Vec<String>,
}

impl RelativePath {
    pub fn root() -> RelativePath {
        RelativePath::default()
    }

    /// Normalises `s` lexically. `..` removes the previous name; a `..` with nothing left to
    /// remove is [`PathError::ClimbsOutOfRoot`]. An absolute path is refused: the caller decides
    /// the root, never the path.
    pub fn parse(s: &str) -> Result<RelativePath, PathError> {
        check_text(s)?;
        if s.starts_with('/') {
            return Err(PathError::Absolute);
        }
        let mut components: Vec<String> = Vec::new();
        for name in s.split('/') {
            match name {
                "" | "." => {}
                ".." => {
                    if components.pop().is_none() {
                        return Err(PathError::ClimbsOutOfRoot);
                    }
                }
                name => components.push(name.to_owned()),
            }
        }
        Ok(RelativePath { components })
    }

    /// As [`RelativePath::parse`], but the empty string is the root rather than an error.
    fn parse_or_root(s: &str) -> Result<RelativePath, PathError> {
        if s.is_empty() { Ok(RelativePath::root()) } else { RelativePath::parse(s) }
    }

    pub fn is_root(&self) -> bool {
        self.components.is_empty()
    }

    pub fn components(&self) -> impl Iterator<Item = &str> {
        self.components.iter().map(String::as_str)
    }

    /// The same path with its first `n` names removed.
    pub fn skip(&self, n: usize) -> RelativePath {
        RelativePath { components: self.components.iter().skip(n).cloned().collect() }
    }

    /// This path beneath `root`.
    pub fn under(&self, root: &Path) -> PathBuf {
        let mut p = root.to_path_buf();
        p.extend(&self.components);
        p
    }
}

impl fmt::Display for RelativePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.components.is_empty() {
            return f.write_str(".");
        }
        f.write_str(&self.components.join("/"))
    }
}

/// Where `path` leads once every link is followed, or `None` when it does not exist. One `open`
/// (`O_PATH`, so nothing is read or locked) and one `readlink` of its `/proc/self/fd` entry,
/// where `realpath` reads every component as a link (about four system calls per component:
/// measured at 90 of a launch's 900 for the protected set). Falls back to `canonicalize` when
/// `/proc` cannot say.
pub fn real_path(path: &Path) -> Option<PathBuf> {
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::open(path, OFlags::PATH | OFlags::CLOEXEC, Mode::empty()).ok()?;
    let link = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&fd));
    match rustix::fs::readlink(link.as_str(), Vec::new()) {
        Ok(real) if real.as_bytes().starts_with(b"/") => Some(PathBuf::from(
            <std::ffi::OsString as std::os::unix::ffi::OsStringExt>::from_vec(real.into_bytes()),
        )),
        _ => std::fs::canonicalize(path).ok(),
    }
}

/// Whether `path` is `root` or lies beneath it, comparing whole components. Both should be
/// absolute and normalised (as [`GrantPath::expand`] makes them); `.` and `..` are not resolved.
pub fn is_beneath(path: &Path, root: &Path) -> bool {
    path.starts_with(root)
}

/// [`is_beneath`] for two normal absolute paths (see [`normal`]), compared as bytes: with one
/// spelling of each path, `root` is `path`'s start exactly when `path` is `root` or goes on
/// with a `/` (or `root` is `/`). The sandbox's preparation compares its grants, holes, mounts
/// and protected set thousands of times a launch, where `Path::starts_with`'s walk name by name
/// was a twentieth of lnk's own time (measured for issue 32). Debug builds check that both
/// paths are normal, so a caller that breaks the rule fails the test suite, not a launch.
pub fn within(path: &Path, root: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt as _;
    // Compared as bytes: `Path`'s own `==` walks names, and would take `/a/` for `/a`.
    let is_normal = |p: &Path| normal(p).is_some_and(|n| n.as_os_str() == p.as_os_str());
    debug_assert!(is_normal(path), "not a normal path: {path:?}");
    debug_assert!(is_normal(root), "not a normal path: {root:?}");
    let (path, root) = (path.as_os_str().as_bytes(), root.as_os_str().as_bytes());
    match path.strip_prefix(root) {
        Some(rest) => rest.is_empty() || rest[0] == b'/' || root == b"/",
        None => false,
    }
}

/// Whether two folders overlap: one is the other or lies beneath it.
pub fn overlaps(a: &Path, b: &Path) -> bool {
    is_beneath(a, b) || is_beneath(b, a)
}

/// Where a file tool path points: the agent's files folder, or a team's shared folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentPath {
    /// Relative to the agent's files folder.
    Files(RelativePath),
    /// `teams/<team>/rest`: relative to `~/Link/Teams/<team>/Shared`.
    Team { team: String, rest: RelativePath },
}

impl AgentPath {
    /// Parses a path as the file tool receives it: relative, normalised, `teams/<team>/…` for a
    /// team's folder. `teams` alone or `teams/` with no team name is the files folder's own
    /// `teams` entry, which the agent may have created; only `teams/<name>` maps to a team.
    pub fn parse(s: &str) -> Result<AgentPath, PathError> {
        let rel = RelativePath::parse(s)?;
        if let [first, team, ..] = rel.components.as_slice() {
            if first == "teams" {
                validate_team_name(team)?;
                return Ok(AgentPath::Team { team: team.clone(), rest: rel.skip(2) });
            }
        }
        Ok(AgentPath::Files(rel))
    }

    /// The absolute path, given the agent's files folder and the home folder.
    pub fn resolve(&self, files_dir: &Path, home: &Path) -> PathBuf {
        match self {
            AgentPath::Files(rel) => rel.under(files_dir),
            AgentPath::Team { team, rest } => rest.under(&team_folder(home, team)),
        }
    }
}

/// `~/Link/Teams/<team>/Shared`, the folder a team's members share. `team` must be valid.
pub fn team_folder(home: &Path, team: &str) -> PathBuf {
    home.join("Link").join("Teams").join(team).join("Shared")
}

/// A team name is one folder name a person reads: letters, digits, `-`, `_`, `.`, not starting
/// with `.` (so never `.` or `..`, and never hidden).
pub fn validate_team_name(name: &str) -> Result<(), PathError> {
    let ok = !name.is_empty()
        && name.len() <= TEAM_NAME_MAX
        && !name.starts_with('.')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if ok { Ok(()) } else { Err(PathError::BadTeamName(name.chars().take(80).collect())) }
}

/// The one normalisation every absolute path gets before lnk compares it with another: `/`
/// once between names, no `.` name, no `/` at the end (`/home//ann/./` is `/home/ann`). `None`
/// for a relative path or one with `..`, which only the file system could resolve (through a
/// link, `a/..` is not where one started). The sandbox compares grants, holes and folders
/// name by name and, where it is hot, byte by byte; both need one spelling of each path, or
/// `HOME=/home/ann/` would make `/home/ann/.netrc` and the grant `/home/ann/` look unrelated
/// (found in review: such a `HOME` opened `~/.netrc` in the Landlock-only mode).
pub fn normal(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::RootDir => {}
            Component::Normal(name) => out.push(name),
            Component::CurDir => {}
            Component::ParentDir | Component::Prefix(_) => return None,
        }
    }
    path.is_absolute().then_some(out)
}

/// `path` made absolute against the current folder (as the kernel would take a relative one),
/// without resolving anything: `..` and links are left for a walk to follow. `None` when the
/// current folder is gone.
pub fn absolute_lexically(path: &Path) -> Option<PathBuf> {
    match path.is_absolute() {
        true => Some(path.to_owned()),
        false => std::env::current_dir().ok().map(|cwd| cwd.join(path)),
    }
}

/// The home folder: `$HOME`, which must be absolute and without `..`, in its normal spelling
/// (see [`normal`]). The harness is trusted to set it; lnk never guesses another.
pub fn home_dir() -> Result<PathBuf, PathError> {
    let home = std::env::var_os("HOME").ok_or(PathError::NoHome)?;
    normal(Path::new(&home)).ok_or(PathError::NoHome)
}

/// The folder lnk keeps its private tmp base in: `$TMPDIR` (absolute, without `..`, in its
/// normal spelling), else `/tmp`. A relative `TMPDIR` names no one folder for a helper started
/// from many; it is refused rather than guessed at.
pub fn tmp_dir() -> Result<PathBuf, String> {
    match std::env::var_os("TMPDIR").filter(|v| !v.is_empty()) {
        None => Ok(PathBuf::from("/tmp")),
        Some(dir) => normal(Path::new(&dir)).ok_or_else(|| {
            format!(
                "TMPDIR (`{}`) must be an absolute path without `..`: set it to the folder lnk should keep each call's tmp folder in, or unset it for /tmp",
                Path::new(&dir).display()
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn grants_expand_home_and_keep_absolute_paths() {
        let home = Path::new("/home/ann");
        let g = |s| GrantPath::parse(s).unwrap().expand(home);
        assert_eq!(g("~"), PathBuf::from("/home/ann"));
        assert_eq!(g("~/"), PathBuf::from("/home/ann"));
        assert_eq!(g("~/Link//Files/."), PathBuf::from("/home/ann/Link/Files"));
        assert_eq!(g("/srv/data/"), PathBuf::from("/srv/data"));
        assert_eq!(g("/"), PathBuf::from("/"));
    }

    #[test]
    fn every_spelling_of_a_path_has_one_normal_form() {
        for spelling in ["/home/ann", "/home/ann/", "/home//ann", "/home/ann/.", "//home/./ann//"] {
            assert_eq!(normal(Path::new(spelling)), Some(PathBuf::from("/home/ann")), "{spelling}");
        }
        assert_eq!(normal(Path::new("/")), Some(PathBuf::from("/")));
        assert_eq!(normal(Path::new("/home/ann/..")), None);
        assert_eq!(normal(Path::new("home/ann")), None);
    }

    #[test]
    fn bad_grants_are_refused_with_the_reason() {
        assert_eq!(GrantPath::parse(""), Err(PathError::Empty));
        assert_eq!(GrantPath::parse("Link/Files"), Err(PathError::NotAbsolute));
        assert_eq!(GrantPath::parse("~bob/x"), Err(PathError::OtherUsersHome));
        assert_eq!(GrantPath::parse("~/../etc"), Err(PathError::DotDotInGrant));
        assert_eq!(GrantPath::parse("/a\0b"), Err(PathError::Nul));
        assert_eq!(GrantPath::parse(&format!("/{}", "a".repeat(256))), Err(PathError::NameTooLong));
        assert_eq!(GrantPath::parse(&"/a".repeat(2100)), Err(PathError::TooLong));
    }

    #[test]
    fn relative_paths_never_climb() {
        assert_eq!(RelativePath::parse("a/../b").unwrap().to_string(), "b");
        assert_eq!(RelativePath::parse("./a//b/").unwrap().to_string(), "a/b");
        assert_eq!(RelativePath::parse("a/..").unwrap(), RelativePath::root());
        assert_eq!(RelativePath::parse(".."), Err(PathError::ClimbsOutOfRoot));
        assert_eq!(RelativePath::parse("a/../../b"), Err(PathError::ClimbsOutOfRoot));
        assert_eq!(RelativePath::parse("/etc"), Err(PathError::Absolute));
    }

    #[test]
    fn teams_map_to_their_shared_folder() {
        let home = Path::new("/home/ann");
        let files = Path::new("/home/ann/Link/Files");
        let p = AgentPath::parse("teams/blue/notes/a.md").unwrap();
        assert_eq!(p.resolve(files, home), PathBuf::from("/home/ann/Link/Teams/blue/Shared/notes/a.md"));
        let own = AgentPath::parse("teams").unwrap();
        assert_eq!(own.resolve(files, home), PathBuf::from("/home/ann/Link/Files/teams"));
        assert!(matches!(AgentPath::parse("teams/.hidden/x"), Err(PathError::BadTeamName(_))));
        assert!(matches!(AgentPath::parse("teams/a b/x"), Err(PathError::BadTeamName(_))));
        // `teams/x/..` is normalised first, so it never names a team folder's parent.
        assert_eq!(
            AgentPath::parse("teams/blue/.."),
            Ok(AgentPath::Files(RelativePath::parse("teams").unwrap()))
        );
    }

    #[test]
    fn beneath_compares_whole_names() {
        assert!(is_beneath(Path::new("/home/a/x"), Path::new("/home/a")));
        assert!(is_beneath(Path::new("/home/a"), Path::new("/home/a")));
        assert!(!is_beneath(Path::new("/home/al"), Path::new("/home/a")));
        assert!(overlaps(Path::new("/"), Path::new("/home")));
        for (path, root, beneath) in [
            ("/home/a/x", "/home/a", true),
            ("/home/a", "/home/a", true),
            ("/home/al", "/home/a", false),
            ("/home/a", "/home/al", false),
            ("/home", "/", true),
            ("/", "/", true),
            ("/", "/home", false),
        ] {
            assert_eq!(within(Path::new(path), Path::new(root)), beneath, "{path} in {root}");
        }
    }

    fn normal_names() -> impl Strategy<Value = Vec<String>> {
        proptest::collection::vec("[ab]{1,2}", 0..4)
    }

    fn path_text() -> impl Strategy<Value = String> {
        proptest::collection::vec(prop_oneof!["\\.\\.", "\\.", "", "[a-z]{1,3}", "teams"], 0..12)
            .prop_map(|parts| parts.join("/"))
    }

    proptest! {
        #[test]
        fn normalised_paths_stay_beneath_their_root(s in path_text()) {
            let root = Path::new("/r/root");
            if let Ok(rel) = RelativePath::parse(&s) {
                let p = rel.under(root);
                prop_assert!(is_beneath(&p, root));
                prop_assert!(rel.components().all(|c| !c.is_empty() && c != "." && c != ".."));
                // Normalising twice changes nothing.
                prop_assert_eq!(RelativePath::parse(&rel.to_string()).unwrap(), rel);
            }
        }

        #[test]
        fn agent_paths_stay_in_files_or_a_team_folder(s in path_text()) {
            let home = Path::new("/h");
            let files = Path::new("/h/Link/Files");
            if let Ok(p) = AgentPath::parse(&s) {
                let abs = p.resolve(files, home);
                match &p {
                    AgentPath::Files(_) => prop_assert!(is_beneath(&abs, files)),
                    AgentPath::Team { team, .. } => prop_assert!(is_beneath(&abs, &team_folder(home, team))),
                }
            }
        }

        #[test]
        fn within_is_is_beneath_for_normal_paths(a in normal_names(), b in normal_names()) {
            // Few short names, so one path is often a byte prefix of the other (`/a` of `/ab`)
            // without being a name prefix, as well as beneath it.
            let (a, b) = (Path::new("/").join(a.join("/")), Path::new("/").join(b.join("/")));
            prop_assert_eq!(within(&a, &b), is_beneath(&a, &b), "{:?} {:?}", a, b);
            prop_assert_eq!(within(&b, &a), is_beneath(&b, &a), "{:?} {:?}", b, a);
        }

        #[test]
        fn parse_never_panics(s in "\\PC{0,64}") {
            let _ = RelativePath::parse(&s);
            let _ = GrantPath::parse(&s);
            let _ = AgentPath::parse(&s);
        }
    }
}
