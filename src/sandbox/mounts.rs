//! The mount table, read to find a secret's other names: a bind mount shows the same folder at a
//! second path (a home bound again inside a grant, `/etc` bound at `/srv/x/etc`), and Landlock's
//! cut and the own world's masks work on paths. So for each hole lnk asks the table where else
//! the same file can be reached, and cuts and masks it there too (see [`super::holes`]).
//!
//! Two mounts show the same files when they are of the same file system (their `major:minor`)
//! and one's root (the folder of the file system it shows) is the other's or lies beneath it. A
//! path inside a mount is, inside the file system, its mount's root joined with what follows the
//! mount point; every other mount of that file system whose root lies above it shows it at its
//! own mount point joined with the rest, and one whose root lies inside it shows part of it, at
//! its mount point. Hard links to folders do not exist, so for a folder these are all its names.
//!
//! What it trusts: the kernel's `/proc/self/mountinfo`, and `statx`'s mount id. What it does
//! not see: file systems that show another's files under a device of their own (overlayfs over a
//! home, bindfs, an NFS export of a local folder); SECURITY.md says so.

use std::ffi::OsString;
use std::os::fd::AsFd;
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::path::{Path, PathBuf};

use crate::paths::within;

/// One line of `/proc/self/mountinfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// The mount's id (`statx`'s `stx_mnt_id`).
    pub id: u64,
    /// The file system's device, `major:minor`.
    pub device: (u32, u32),
    /// The folder of the file system the mount shows, from that file system's root.
    pub root: PathBuf,
    /// Where it is mounted, as this process sees it.
    pub point: PathBuf,
    /// Whether it is a file system of devices (`devtmpfs`, `devpts`): the host's `/dev`, or it
    /// bound elsewhere (a chroot's `dev`).
    pub devices: bool,
}

/// The mounts this process sees.
#[derive(Debug, Default)]
pub struct MountTable {
    mounts: Vec<Mount>,
}

impl MountTable {
    /// The mounts this process sees: `/proc/self/mountinfo`, read once a process (a launch
    /// looks at its holes and at what the next call trusts, before anything runs). An error
    /// (no `/proc`) is returned: without the table lnk cannot know a secret's other names, so
    /// the call is refused rather than run blind.
    pub fn of_this_process() -> Result<&'static MountTable, String> {
        static TABLE: std::sync::OnceLock<MountTable> = std::sync::OnceLock::new();
        if let Some(table) = TABLE.get() {
            return Ok(table);
        }
        let text = crate::procfs::read_whole("/proc/self/mountinfo").map_err(|e| {
            format!("cannot read /proc/self/mountinfo to find bind mounts of protected paths: {e}")
        })?;
        Ok(TABLE.get_or_init(|| MountTable::parse(&text)))
    }

    /// Parses mountinfo's text; a line that does not parse is left out (the kernel writes none).
    pub fn parse(text: &[u8]) -> MountTable {
        MountTable { mounts: text.split(|b| *b == b'\n').filter_map(parse_line).collect() }
    }

    /// Whether any mount that lies in, or holds, one of `roots` shows files another mount shows
    /// too: only then can a secret have a second name inside a grant, and [`Self::other_paths`]
    /// is worth asking.
    pub fn has_aliases_within(&self, roots: &[&Path]) -> bool {
        self.mounts.iter().any(|m| {
            roots.iter().any(|r| within(&m.point, r) || within(r, &m.point))
                && self.mounts.iter().any(|n| n.id != m.id && shows_same(m, n))
        })
    }

    /// Where a file system of devices is mounted (see [`Mount::devices`]): what every grant is
    /// cut around, at each path the table shows one.
    pub fn device_mounts(&self) -> Vec<PathBuf> {
        self.mounts.iter().filter(|m| m.devices).map(|m| m.point.clone()).collect()
    }

    /// The other paths at which `real` (a path without links that lies in mount `mount_id`, or
    /// would, were its last names made) can be reached: through each other mount of its file
    /// system whose root lies above it, and, for each whose root lies inside it, that mount's
    /// point (which shows part of it).
    pub fn other_paths(&self, real: &Path, mount_id: u64) -> Vec<PathBuf> {
        let Some(home) = self.mounts.iter().find(|m| m.id == mount_id) else { return Vec::new() };
        let Ok(rest) = real.strip_prefix(&home.point) else { return Vec::new() };
        // Not `join`: a secret that is itself a mount point has an empty `rest`, and `join` would
        // end its root with a `/`, which no other path is `within` (found in review).
        let inside = join_beneath(&home.root, rest);
        let mut paths = Vec::new();
        for other in self.mounts.iter().filter(|m| m.id != home.id && m.device == home.device) {
            if let Ok(beneath) = inside.strip_prefix(&other.root) {
                let path = join_beneath(&other.point, beneath);
                if path != real {
                    paths.push(path);
                }
            } else if within(&other.root, &inside) {
                paths.push(other.point.clone());
            }
        }
        paths
    }
}

/// Whether two mounts show some of the same files.
fn shows_same(a: &Mount, b: &Mount) -> bool {
    a.device == b.device && (within(&a.root, &b.root) || within(&b.root, &a.root))
}

/// `point` joined with `rest`, where `rest` may be empty (`Path::join` of an empty path would add
/// a trailing `/`).
fn join_beneath(point: &Path, rest: &Path) -> PathBuf {
    if rest.as_os_str().is_empty() { point.to_owned() } else { point.join(rest) }
}

/// The mount id of what `fd` is (`statx`'s `STATX_MNT_ID`, Linux 5.8).
pub fn mount_id(fd: impl AsFd) -> Result<u64, String> {
    use rustix::fs::{AtFlags, StatxFlags};
    let stat = rustix::fs::statx(fd, c"", AtFlags::EMPTY_PATH, StatxFlags::MNT_ID)
        .map_err(|e| format!("cannot ask for a mount id (statx): {e}"))?;
    if stat.stx_mask & StatxFlags::MNT_ID.bits() == 0 {
        return Err("this kernel does not say which mount a file is in (statx without STATX_MNT_ID)".into());
    }
    Ok(stat.stx_mnt_id)
}

/// `ID PARENT MAJOR:MINOR ROOT POINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER_OPTIONS`.
fn parse_line(line: &[u8]) -> Option<Mount> {
    let mut fields = line.split(|b| *b == b' ');
    let id = std::str::from_utf8(fields.next()?).ok()?.parse().ok()?;
    let _parent = fields.next()?;
    let device = std::str::from_utf8(fields.next()?).ok()?;
    let (major, minor) = device.split_once(':')?;
    let device = (major.parse().ok()?, minor.parse().ok()?);
    let root = unescape(fields.next()?)?;
    let point = unescape(fields.next()?)?;
    // A root the kernel marks deleted (`//deleted`) or that is not absolute shows nothing a
    // path of this process can name.
    if !root.is_absolute() || !point.is_absolute() {
        return None;
    }
    // The file system's type follows the optional fields, after a lone `-`.
    let kind = fields.skip_while(|f| *f != b"-").nth(1)?;
    let devices = matches!(kind, b"devtmpfs" | b"devpts");
    Some(Mount { id, device, root, point, devices })
}

/// Undoes mountinfo's octal escapes (`\040` a space, `\011` a tab, `\012` a newline, `\134` a
/// backslash).
fn unescape(field: &[u8]) -> Option<PathBuf> {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        if field[i] == b'\\' {
            let digits = field.get(i + 1..i + 4)?;
            let value = digits.iter().try_fold(0u32, |v, d| match d {
                b'0'..=b'7' => Some(v * 8 + u32::from(d - b'0')),
                _ => None,
            })?;
            out.push(u8::try_from(value).ok()?);
            i += 4;
        } else {
            out.push(field[i]);
            i += 1;
        }
    }
    let path = PathBuf::from(OsString::from_vec(out));
    (!path.as_os_str().as_bytes().contains(&0)).then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &[u8] = b"\
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw
24 27 0:6 / /dev rw,relatime - devtmpfs devtmpfs rw
40 27 254:0 /home/ann /srv/x/alias rw,relatime - ext4 /dev/vda rw
41 27 254:0 /etc /srv/x/etc rw,relatime - ext4 /dev/vda rw
42 27 254:0 /home/ann/.ssh/keys /srv/k rw,relatime - ext4 /dev/vda rw
43 27 254:0 /srv/with\\040space /mnt/a\\134b rw - ext4 /dev/vda rw
44 27 0:50 / /mnt/other rw - tmpfs tmpfs rw
45 24 0:26 / /srv/chroot/dev/pts rw shared:3 - devpts devpts rw,mode=600
broken line
";

    #[test]
    fn lines_parse_with_their_escapes() {
        let t = MountTable::parse(TABLE);
        assert_eq!(t.mounts.len(), 8);
        assert_eq!(t.mounts[5].root, PathBuf::from("/srv/with space"));
        assert_eq!(t.mounts[5].point, PathBuf::from("/mnt/a\\b"));
        assert_eq!(t.mounts[2].device, (254, 0));
        assert_eq!(unescape(b"a\\9"), None);
        assert_eq!(unescape(b"a\\000"), None, "a NUL is no path");
    }

    #[test]
    fn a_path_has_a_name_through_every_mount_of_its_file_system_above_it() {
        let t = MountTable::parse(TABLE);
        let mut ssh = t.other_paths(Path::new("/home/ann/.ssh"), 27);
        ssh.sort();
        // Through the home's bind, and the bind of a folder inside it.
        assert_eq!(ssh, vec![PathBuf::from("/srv/k"), PathBuf::from("/srv/x/alias/.ssh")]);
        assert_eq!(t.other_paths(Path::new("/etc/shadow"), 27), vec![PathBuf::from("/srv/x/etc/shadow")]);
        // From the alias back to the original, and a missing name's too.
        assert_eq!(
            t.other_paths(Path::new("/srv/x/alias/.netrc"), 40),
            vec![PathBuf::from("/home/ann/.netrc")]
        );
        // Another file system, or a mount id the table does not have: none.
        assert!(t.other_paths(Path::new("/mnt/other/x"), 44).is_empty());
        assert!(t.other_paths(Path::new("/x"), 99).is_empty());
    }

    #[test]
    fn a_secret_that_is_a_mount_point_has_the_names_of_its_folders_mounted_elsewhere() {
        // `~/.ssh` is a mount of `/vault/ssh`; its `keys` is mounted again at `/srv/w/keys`.
        let t = MountTable::parse(
            b"27 1 254:0 / / rw - ext4 /dev/vda rw
46 27 254:0 /vault/ssh /home/ann/.ssh rw - ext4 /dev/vda rw
47 27 254:0 /vault/ssh/keys /srv/w/keys rw - ext4 /dev/vda rw
",
        );
        let mut names = t.other_paths(Path::new("/home/ann/.ssh"), 46);
        names.sort();
        assert_eq!(names, vec![PathBuf::from("/srv/w/keys"), PathBuf::from("/vault/ssh")]);
    }

    #[test]
    fn file_systems_of_devices_are_known_wherever_they_are_mounted() {
        let t = MountTable::parse(TABLE);
        assert_eq!(t.device_mounts(), vec![PathBuf::from("/dev"), PathBuf::from("/srv/chroot/dev/pts")]);
    }

    #[test]
    fn aliases_matter_only_where_a_mount_meets_a_root() {
        let t = MountTable::parse(TABLE);
        assert!(t.has_aliases_within(&[Path::new("/srv")]));
        assert!(t.has_aliases_within(&[Path::new("/srv/x/alias/docs")]), "a grant inside a bind");
        let plain =
            MountTable::parse(b"27 1 254:0 / / rw - ext4 /dev/vda rw\n44 27 0:50 / /mnt/o rw - tmpfs t rw\n");
        assert!(!plain.has_aliases_within(&[Path::new("/mnt"), Path::new("/home")]));
    }

    #[test]
    fn this_process_finds_its_own_mount() {
        let table = MountTable::of_this_process().unwrap();
        let root = rustix::fs::open("/", rustix::fs::OFlags::PATH, rustix::fs::Mode::empty()).unwrap();
        let id = mount_id(&root).unwrap();
        assert!(table.mounts.iter().any(|m| m.id == id && m.point == Path::new("/")));
    }
}
