//! Why a user namespace is withheld on this machine, in the terms of the setting that withholds
//! it, and the fix: AppArmor's restriction (Ubuntu 23.10 and later) and lnk's profile for it,
//! the namespace counts in `/proc/sys/user`, an older Debian's switch, a container's filter.
//!
//! A leaf: it reads sysctls and formats sentences, and trusts the kernel's answers. Both the
//! probe that picks a call's mode (`sandbox::world`) and `lnk sandbox status` (`kernel`) say
//! these words, so they live below both.

use std::io;

/// lnk's AppArmor profile (`policy/apparmor/lnk`), printed by `lnk sandbox status
/// --apparmor-profile`.
pub const APPARMOR_PROFILE: &str = include_str!("../policy/apparmor/lnk");

/// The sysctl by which AppArmor restricts unprivileged user namespaces (Ubuntu 23.10 and
/// later): a new user namespace then gets no capability in it, so it cannot mount.
const APPARMOR_USERNS_SYSCTL: &str = "/proc/sys/kernel/apparmor_restrict_unprivileged_userns";

/// Whether AppArmor restricts unprivileged user namespaces on this machine.
pub fn apparmor_restricts_user_namespaces() -> bool {
    // Test builds may point at a file of their own, to stand for a kernel that has the sysctl.
    #[cfg(feature = "fault-points")]
    if let Some(path) = std::env::var_os("LNK_TEST_APPARMOR_SYSCTL") {
        return std::fs::read_to_string(path).is_ok_and(|v| v.trim() == "1");
    }
    std::fs::read_to_string(APPARMOR_USERNS_SYSCTL).is_ok_and(|v| v.trim() == "1")
}

/// The fix for a kernel whose AppArmor restricts unprivileged user namespaces (`restricts`),
/// naming the exact commands; `exe` is where this lnk lives (the profile covers the root-owned
/// install paths only). `None` when AppArmor is not what withholds them.
pub fn apparmor_fix(restricts: bool, exe: Option<&std::path::Path>) -> Option<String> {
    if !restricts {
        return None;
    }
    let covered =
        ["/usr/bin/lnk", "/usr/local/bin/lnk", "/usr/bin/lnk-link-run", "/usr/local/bin/lnk-link-run"];
    let moved = match exe {
        Some(exe) if !covered.iter().any(|c| exe == std::path::Path::new(c)) => format!(
            "`sudo install -m 0755 {} {} /usr/local/bin/` (the profile covers /usr/bin and /usr/local/bin only: a folder a user can write would give any program copied there user namespaces), then ",
            exe.with_file_name("lnk").display(),
            exe.with_file_name("lnk-link-run").display()
        ),
        _ => String::new(),
    };
    Some(format!(
        "AppArmor restricts unprivileged user namespaces here (kernel.apparmor_restrict_unprivileged_userns = 1). Fix: {moved}`lnk sandbox status --apparmor-profile | sudo tee /etc/apparmor.d/lnk && sudo apparmor_parser -r /etc/apparmor.d/lnk` (the profile in policy/apparmor/lnk), or lift the restriction for the whole machine with `sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0`"
    ))
}

/// Why a user namespace (with the call's other namespaces) could not be made, in the terms of
/// the setting that withholds it: the bare errno (`No space left on device`) tells a person
/// nothing. ENOSPC is a count in `/proc/sys/user` spent or set to 0; EPERM an older Debian's
/// `kernel.unprivileged_userns_clone`, or a filter or security module (Docker's default seccomp
/// profile refuses `unshare`).
pub fn user_namespace_error(e: &io::Error) -> String {
    let read = |path: &str| std::fs::read_to_string(path).ok().map(|v| v.trim().to_owned());
    match e.raw_os_error() {
        Some(libc::ENOSPC) => {
            let zero: Vec<String> = ["user", "mnt", "pid", "net", "ipc"]
                .iter()
                .map(|kind| format!("user.max_{kind}_namespaces"))
                .filter(|name| read(&format!("/proc/sys/{}", name.replace('.', "/"))).as_deref() == Some("0"))
                .collect();
            match zero.is_empty() {
                true => format!(
                    "{e}: a namespace limit in /proc/sys/user is reached (user.max_user_namespaces and the others count namespaces per user)"
                ),
                false => format!(
                    "{e}: {} is 0, which turns those namespaces off (`sudo sysctl {}=15000` turns them on)",
                    zero.join(", "),
                    zero[0]
                ),
            }
        }
        Some(libc::EPERM) if read("/proc/sys/kernel/unprivileged_userns_clone").as_deref() == Some("0") => {
            format!(
                "{e}: kernel.unprivileged_userns_clone is 0 (`sudo sysctl kernel.unprivileged_userns_clone=1` turns them on)"
            )
        }
        Some(libc::EPERM) => format!(
            "{e}: refused by a seccomp filter or a security module (a container's default seccomp profile refuses `unshare`)"
        ),
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_apparmor_restriction_is_named_with_its_exact_fix() {
        assert_eq!(apparmor_fix(false, None), None);
        let fix = apparmor_fix(true, Some(std::path::Path::new("/usr/local/bin/lnk"))).unwrap();
        assert!(fix.contains("kernel.apparmor_restrict_unprivileged_userns = 1"), "{fix}");
        assert!(
            fix.contains("lnk sandbox status --apparmor-profile | sudo tee /etc/apparmor.d/lnk"),
            "{fix}"
        );
        assert!(fix.contains("sudo apparmor_parser -r /etc/apparmor.d/lnk"), "{fix}");
        assert!(!fix.contains("sudo install"), "already where the profile attaches: {fix}");
        let elsewhere = apparmor_fix(true, Some(std::path::Path::new("/home/ann/.cargo/bin/lnk"))).unwrap();
        assert!(
            elsewhere.contains("sudo install -m 0755 /home/ann/.cargo/bin/lnk /home/ann/.cargo/bin/lnk-link-run /usr/local/bin/"),
            "{elsewhere}"
        );
        // The profile printed is the one shipped, and names what it attaches to.
        assert!(APPARMOR_PROFILE.contains("userns,"));
        assert!(APPARMOR_PROFILE.contains("profile lnk /usr/{local/,}bin/{lnk,lnk-link-run}"));
    }
}
