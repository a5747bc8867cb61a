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
];

/// The system's secret files on this computer: [`IN_SYSTEM`] and the host's private SSH keys.
pub fn system_secrets() -> Vec<PathBuf> {
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
}

/// The built-in protected paths for `home` that are holes in `grants`: each lies strictly
/// beneath a grant, and no grant names it or a path beneath it. Lexical: nothing is looked up.
pub fn builtin_holes(home: &Path, grants: &[&PathBuf]) -> Vec<PathBuf> {
    IN_HOME.iter().map(|rel| home.join(rel)).filter(|p| is_hole(p, grants)).collect()
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
        holes.extend(system_secrets().into_iter().filter(|p| !grants.iter().any(|g| g.starts_with(p))));
    }
    holes
}

/// Whether `path` lies strictly beneath a grant and no grant names it or a path beneath it.
pub fn is_hole(path: &Path, grants: &[&PathBuf]) -> bool {
    let inside = grants.iter().any(|g| path.starts_with(g) && path != g.as_path());
    let named = grants.iter().any(|g| g.starts_with(path));
    inside && !named
}

/// A grant that lies in (or is) a denied path: `[files] deny` wins over no grant silently, so
/// the caller refuses the sandbox instead.
pub fn grant_in_denied<'a>(
    deny: &'a [PathBuf],
    grants: &[&'a PathBuf],
) -> Option<(&'a PathBuf, &'a PathBuf)> {
    deny.iter().find_map(|d| grants.iter().find(|g| g.starts_with(d)).map(|g| (*g, d)))
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
        // Named itself, or beneath it: the person means it.
        let aws_config = home.join(".aws/config");
        let holes = builtin_holes(&home, &[&read_home, &aws_config]);
        assert!(!holes.contains(&home.join(".aws")) && holes.contains(&home.join(".ssh")));
        // Not in any grant: nothing to cut.
        let files = home.join("Link/Files");
        assert!(builtin_holes(&home, &[&files]).is_empty());
        // A grant of the secret's folder itself is not a hole in it.
        let ssh = home.join(".ssh");
        assert!(!is_hole(&ssh, &[&ssh]));
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
