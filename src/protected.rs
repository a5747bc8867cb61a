//! The protected set: a person's secrets stay out of the sandbox even under `read = ["~"]`.
//!
//! The default sandbox file lets a program read the home folder, which holds SSH keys, cloud
//! credentials, package-registry tokens, password stores, keyrings and browser profiles; with
//! `[internet]` a program could send them out. So these paths are holes in any grant they lie
//! in: unreadable and unwritable, unless a grant names the path itself or a path beneath it (a
//! person who writes `read = ["~/.aws/config"]` means it). A deployment adds its own with
//! `[files] deny` (which no grant overrides: a grant beneath a denied path is refused), and the
//! agent's records folder is always one (a program that could read a record's lock file could
//! hold it and make a dead supervisor look alive).
//!
//! Landlock cannot subtract from a grant, so a grant with holes is granted entry by entry around
//! them (see [`crate::sandbox::grants::open_around`]): the folders on the way to a hole may only
//! be listed, everything else keeps the grant's rights. What that costs: a file or folder created
//! directly in such a folder after the call starts (outside the sandbox) is not reachable by the
//! call; and the names in a hole can be listed, not opened.
//!
//! What it trusts: that the person's secrets are where these conventional names say. A secret
//! kept elsewhere in a granted folder is not protected; `[files] deny` is for those.

use std::path::{Path, PathBuf};

use crate::paths::within;

/// Paths beneath the home folder that hold secrets.
pub const IN_HOME: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".kube",
    ".docker",
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".config/gh",
    ".config/hub",
    ".pypirc",
    ".npmrc",
    ".yarnrc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".gem/credentials",
    ".pgpass",
    ".my.cnf",
    ".vault-token",
    ".terraform.d/credentials.tfrc.json",
    ".config/rclone",
    ".s3cfg",
    ".boto",
    ".password-store",
    ".local/share/keyrings",
    ".local/share/kwalletd",
    ".config/op",
    ".mozilla",
    ".thunderbird",
    ".config/google-chrome",
    ".config/chromium",
    ".config/BraveSoftware",
    ".config/microsoft-edge",
    "snap/firefox",
    "snap/chromium",
];

/// Files of the system that only root may read, which are holes in the system folders every
/// program may read (and in any grant) when lnk runs as root. A program holds no capability, but
/// as uid 0 it is the owner of root's files, so their mode alone would not keep it out. An
/// ordinary user's program is kept out of them by their modes, as the user is. With the host's
/// SSH keys (`/etc/ssh/ssh_host_*_key`, see [`system_secrets`]).
pub const IN_SYSTEM: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/security/opasswd",
    "/etc/ssl/private",
    "/etc/pki/tls/private",
    "/etc/credstore",
    "/etc/credstore.encrypted",
    "/etc/NetworkManager/system-connections",
    "/etc/wireguard",
    "/etc/ppp/chap-secrets",
    "/etc/ppp/pap-secrets",
    "/etc/ipsec.secrets",
    "/etc/krb5.keytab",
    "/etc/letsencrypt/archive",
    "/etc/letsencrypt/keys",
    "/etc/libvirt/secrets",
    "/etc/apt/auth.conf",
    "/etc/apt/auth.conf.d",
    "/etc/netplan",
    "/etc/kubernetes",
    "/etc/rancher",
    "/etc/mysql/debian.cnf",
    "/etc/docker/key.json",
    "/etc/ceph",
    "/etc/cups/ssl",
    "/etc/openvpn",
    "/etc/ipsec.d/private",
    "/etc/swanctl",
    "/etc/wpa_supplicant",
    "/etc/iwd",
    "/etc/exim4/passwd.client",
    "/etc/postfix/sasl_passwd",
    "/etc/msmtprc",
];

/// Top-level files of `/proc` that only root may read (`kpageflags`, `slabinfo`, `timer_list`,
/// `vmallocinfo`, …: the kernel's memory layout and addresses). As root, a program of the own
/// world would read them in its own `/proc` (uid 0 is their owner); the world masks them (see
/// [`crate::sandbox::world`]). Found on this machine's `/proc` by their mode.
pub fn root_only_proc_files() -> Vec<std::ffi::OsString> {
    use std::os::unix::fs::PermissionsExt as _;
    let mut names = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        // Only the files need a look: the listing's own type (procfs always gives it) passes
        // over the processes' folders and the links without a `stat` each.
        if !entry.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        let Ok(meta) = entry.metadata() else { continue };
        if meta.is_file() && meta.permissions().mode() & 0o044 == 0 {
            names.push(entry.file_name());
        }
    }
    names
}

/// The system's secret files on this computer: [`IN_SYSTEM`] and the host's private SSH keys
/// (looked for once a process).
pub fn system_secrets() -> Vec<PathBuf> {
    static FOUND: std::sync::OnceLock<Vec<PathBuf>> = std::sync::OnceLock::new();
    FOUND
        .get_or_init(|| {
            let mut secrets: Vec<PathBuf> = IN_SYSTEM.iter().map(PathBuf::from).collect();
            if let Ok(entries) = std::fs::read_dir("/etc/ssh") {
                for entry in entries.flatten() {
                    let name = entry.file_name();
                    let name = name.to_string_lossy();
                    if name.starts_with("ssh_host_") && name.ends_with("_key") {
                        secrets.push(entry.path());
                    }
                }
            }
            secrets
        })
        .clone()
}

/// The built-in protected paths for `home` that are holes in `grants` (see [`protected_holes`]).
pub fn builtin_holes(home: &Path, grants: &[&PathBuf]) -> Vec<PathBuf> {
    let paths: Vec<PathBuf> = IN_HOME.iter().map(|rel| home.join(rel)).collect();
    protected_holes(&paths, grants)
}

/// The holes protected paths make in `grants`: each path that lies strictly beneath a grant and
/// that no grant names. A grant beneath a protected path opens that folder alone: the path's
/// other entries are the holes then (on the way down to the grant), so granting
/// `~/.config/gcloud/configurations` leaves `~/.config/gcloud/access_tokens.db` closed.
pub fn protected_holes(paths: &[PathBuf], grants: &[&PathBuf]) -> Vec<PathBuf> {
    let mut holes = Vec::new();
    for path in paths.iter().filter(|p| is_hole(p, grants)) {
        let inner: Vec<&PathBuf> = grants.iter().copied().filter(|g| within(g, path)).collect();
        match inner.is_empty() {
            true => holes.push(path.clone()),
            false => holes.extend(around(path, &inner)),
        }
    }
    holes
}

/// The entries of folder `path`, and of the folders on the way to `inner` (grants beneath it),
/// that are not on the way to a grant: what stays closed around grants inside a protected path.
fn around(path: &Path, inner: &[&PathBuf]) -> Vec<PathBuf> {
    let mut holes = Vec::new();
    for entry in std::fs::read_dir(path).into_iter().flatten().flatten() {
        let entry = entry.path();
        if inner.iter().any(|g| **g == entry) {
            continue;
        }
        match inner.iter().any(|g| within(g, &entry)) {
            true => holes.extend(around(&entry, inner)),
            false => holes.push(entry),
        }
    }
    holes
}

/// Every hole a call's grants get, before links are followed: the file's `deny`, the protected
/// set where it lies in a grant, the agent's records folders and lnk's private tmp base
/// (`protected`) where they do, and as root the system's secrets unless a grant names them.
pub fn call_holes(
    deny: &[PathBuf],
    home: &Path,
    grants: &[&PathBuf],
    protected: &[PathBuf],
    as_root: bool,
) -> Vec<PathBuf> {
    let mut holes = deny.to_vec();
    holes.extend(builtin_holes(home, grants));
    holes.extend(protected.iter().filter(|p| is_hole(p, grants)).cloned());
    if as_root {
        holes.extend(system_holes(grants));
    }
    holes
}

/// As root, the holes the system's secrets make: in the system folders every program reads
/// (`/etc`, `/usr`) as well as in the grants, unless a grant names them.
pub fn system_holes(grants: &[&PathBuf]) -> Vec<PathBuf> {
    let system: Vec<PathBuf> = ["/etc", "/usr"].iter().map(PathBuf::from).collect();
    let mut with_system: Vec<&PathBuf> = grants.to_vec();
    with_system.extend(&system);
    protected_holes(&system_secrets(), &with_system)
}

/// Every path no grant opens, for telling a refusal apart from a missing grant
/// ([`crate::denials`]): the holes the grants were cut around ([`call_holes`]), and the
/// protected set wherever it lies ([`beyond_grants`]). A denial in one of these never offers a
/// grant.
pub fn never_granted(
    deny: &[PathBuf],
    home: &Path,
    grants: &[&PathBuf],
    protected: &[PathBuf],
    as_root: bool,
) -> Vec<PathBuf> {
    let mut paths = call_holes(deny, home, grants, protected, as_root);
    paths.extend(beyond_grants(home, grants, protected, as_root));
    paths
}

/// The protected set wherever it lies, inside a grant or not (the agent's records, the home's
/// secrets, as root the system's), except where a grant names the path or one beneath it: what
/// a link or a bind mount could show inside a grant by another name.
pub fn beyond_grants(home: &Path, grants: &[&PathBuf], protected: &[PathBuf], as_root: bool) -> Vec<PathBuf> {
    let mut all: Vec<PathBuf> = IN_HOME.iter().map(|rel| home.join(rel)).collect();
    all.extend(protected.iter().cloned());
    if as_root {
        all.extend(system_secrets());
    }
    let opened = |p: &Path| grants.iter().any(|g| within(g, p));
    all.retain(|p| !opened(p));
    all
}

/// The inputs of [`never_granted`], kept to find it when it is first needed (a held call the
/// helper refuses), not on every launch.
#[derive(Debug)]
pub struct Secrets {
    pub deny: Vec<PathBuf>,
    pub home: PathBuf,
    pub grants: Vec<PathBuf>,
    pub protected: Vec<PathBuf>,
    pub as_root: bool,
    pub found: std::cell::OnceCell<Vec<PathBuf>>,
}

impl Secrets {
    /// [`never_granted`] for these inputs, found once.
    pub fn paths(&self) -> &[PathBuf] {
        self.found.get_or_init(|| {
            let grants: Vec<&PathBuf> = self.grants.iter().collect();
            never_granted(&self.deny, &self.home, &grants, &self.protected, self.as_root)
        })
    }
}

/// Whether `path` lies strictly beneath a grant and no grant names it.
pub fn is_hole(path: &Path, grants: &[&PathBuf]) -> bool {
    let inside = grants.iter().any(|g| within(path, g) && path.as_os_str() != g.as_os_str());
    let named = grants.iter().any(|g| g.as_os_str() == path.as_os_str());
    inside && !named
}

/// A grant that lies in (or is) a denied path: `[files] deny` wins over no grant silently, so
/// the caller refuses the sandbox instead.
pub fn grant_in_denied<'a>(
    deny: &'a [PathBuf],
    grants: &[&'a PathBuf],
) -> Option<(&'a PathBuf, &'a PathBuf)> {
    deny.iter().find_map(|d| grants.iter().find(|g| within(g, d)).map(|g| (*g, d)))
}

/// Why a grant inside a denied path is refused, as `run` and `check` say it.
pub fn grant_in_denied_why(grant: &Path, denied: &Path) -> String {
    format!(
        "the grant `{}` lies in `{}`, which `[files] deny` keeps out of every grant; remove one of them",
        grant.display(),
        denied.display()
    )
}

/// The host's devices: no grant opens one (see [`device_grant`]). Its `/dev/shm` is not among them.
pub fn is_device_path(path: &Path) -> bool {
    path.starts_with("/dev") && !path.starts_with("/dev/shm")
}

/// Why a grant of `grant` is refused, if it lies in the host's devices (for `run` and `check`
/// alike): the person's terminals (`/dev/pts`, a console's `/dev/vcs`), disks and inputs lie
/// there, and a device's own mode is often the person's (their terminal) or root's (as root,
/// the program is its owner). A grant that holds `/dev` (`/`) is cut around it instead.
pub fn device_grant(grant: &Path) -> Option<String> {
    is_device_path(grant).then(|| {
        format!(
            "`{}` lies in `/dev`, the host's devices (the person's terminals, disks and console), which no grant opens; every call gets /dev/null, /dev/zero, /dev/full, /dev/random and /dev/urandom, and a terminal of its own (/dev/ptmx)",
            grant.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_is_a_hole_unless_a_grant_names_it() {
        let home = PathBuf::from("/home/ann");
        let read_home = home.clone();
        let holes = builtin_holes(&home, &[&read_home]);
        assert!(holes.contains(&home.join(".ssh")) && holes.contains(&home.join(".config/gcloud")));
        // Named itself: the person means it.
        let aws = home.join(".aws");
        let holes = builtin_holes(&home, &[&read_home, &aws]);
        assert!(!holes.contains(&home.join(".aws")) && holes.contains(&home.join(".ssh")));
        // Not in any grant: nothing to cut.
        let files = home.join("Link/Files");
        assert!(builtin_holes(&home, &[&files]).is_empty());
        // A grant of the secret's folder itself is not a hole in it.
        let ssh = home.join(".ssh");
        assert!(!is_hole(&ssh, &[&ssh]));
    }

    #[test]
    fn a_grant_beneath_a_protected_folder_opens_that_folder_alone() {
        let dir = std::env::temp_dir().join(format!(
            "lnk-protected-inner-{}-{}",
            rustix::process::getuid().as_raw(),
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let gcloud = dir.join(".config/gcloud");
        std::fs::create_dir_all(gcloud.join("configurations/x")).unwrap();
        std::fs::write(gcloud.join("access_tokens.db"), "t").unwrap();
        std::fs::write(gcloud.join("configurations/config_default"), "c").unwrap();
        let (home, inner) = (dir.clone(), gcloud.join("configurations"));
        let mut holes = builtin_holes(&dir, &[&home, &inner]);
        holes.sort();
        assert!(holes.contains(&gcloud.join("access_tokens.db")), "{holes:?}");
        assert!(!holes.iter().any(|h| h.starts_with(&inner) || inner.starts_with(h)), "{holes:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_grant_inside_a_denied_path_is_found() {
        let deny = vec![PathBuf::from("/srv/secrets")];
        let inside = PathBuf::from("/srv/secrets/x");
        let other = PathBuf::from("/srv/data");
        assert_eq!(grant_in_denied(&deny, &[&other, &inside]), Some((&inside, &deny[0])));
        assert_eq!(grant_in_denied(&deny, &[&other]), None);
    }
}
