//! A listed program's own parts: the programs it runs itself, executable when it is.
//!
//! Some programs are a driver for others that they run by full path or through PATH, and are
//! useless without them:
//!
//! | listed | its parts |
//! |---|---|
//! | `git` | its exec path: `lib/git-core`, `libexec/git-core` (`git-remote-https` for `git clone https://…`, `git-upload-pack`, …) |
//! | a C or C++ compiler (`gcc`, `g++`, `cc`, `c++`, `cpp`, `clang`, `clang++`, with a version or target prefix: `gcc-12`, `x86_64-linux-gnu-gcc`) | its passes, `lib/gcc/TARGET/VERSION` and `libexec/gcc/TARGET/VERSION` (`cc1`, `cc1plus`, `collect2`, `lto-wrapper`), and the assembler and linkers it runs through PATH: `as`, `ld`, `ld.bfd`, `ld.gold` |
//!
//! Folders are relative to the prefix of the PATH folder the program was found in
//! (`/usr/bin/git` → `/usr/lib/git-core`; `/usr/local/bin/gcc` → `/usr/local/lib/gcc/…`). They
//! hold only the program's own parts, installed with it; a folder that is a link is skipped (its
//! target may hold other programs).
//!
//! What this grants beyond the listed program: the agent can run the parts directly too (`as`,
//! `ld`, `cc1` from a shell). That does not widen `commands`: the driver runs each of them with
//! any arguments the agent gives it (`gcc -Wa,…`, `-Wl,…`, `-x assembler`, `-B`), so a sandbox
//! that lists the compiler already lets the agent do whatever they do. They are confined exactly
//! as the compiler is.
//!
//! Trusted with: which programs beyond a listed one become executable: a wrong match would let the
//! agent run a program the file does not list. What it trusts: the system's installation, that
//! these folders beside a system PATH folder hold only the program's own parts (one that is a link
//! is skipped).

use std::os::fd::OwnedFd;
use std::path::Path;

use super::no_symlinks::open_no_symlinks;

/// Folders (relative to the prefix; a `*` is any one folder name) and programs (found on the
/// system PATH) that are `name`'s own parts.
pub fn parts_of(name: &str) -> (&'static [&'static str], &'static [&'static str]) {
    if name == "git" {
        return (&["lib/git-core", "libexec/git-core"], &[]);
    }
    if is_c_compiler(name) {
        return (&["lib/gcc/*/*", "libexec/gcc/*/*"], &["as", "ld", "ld.bfd", "ld.gold"]);
    }
    (&[], &[])
}

/// Whether `name` is a C or C++ compiler driver: one of the known names, with an optional
/// version suffix (`-12`, `-14.0`) and target prefix (`x86_64-linux-gnu-`).
fn is_c_compiler(name: &str) -> bool {
    const DRIVERS: [&str; 7] = ["gcc", "g++", "cc", "c++", "cpp", "clang", "clang++"];
    let base = match name.rsplit_once('-') {
        Some((base, version))
            if !version.is_empty() && version.bytes().all(|b| b.is_ascii_digit() || b == b'.') =>
        {
            base
        }
        _ => name,
    };
    DRIVERS.iter().any(|d| base == *d || base.strip_suffix(d).is_some_and(|target| target.ends_with('-')))
}

/// Opens the folders `pattern` names beneath `prefix` (a `*` component is every folder there
/// that is not a link), without following links.
pub fn open_folders(prefix: &Path, pattern: &str, out: &mut Vec<OwnedFd>) {
    let mut found = vec![prefix.to_owned()];
    for component in pattern.split('/') {
        let mut next = Vec::new();
        for folder in &found {
            if component != "*" {
                next.push(folder.join(component));
                continue;
            }
            for entry in std::fs::read_dir(folder).into_iter().flatten().flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    next.push(entry.path());
                }
            }
        }
        found = next;
    }
    for folder in found {
        // Absent on this system, or a link: skipped.
        if let Ok(Some(fd)) = open_no_symlinks(&folder, true) {
            out.push(fd);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiler_drivers_are_known_by_name_version_and_target() {
        for name in [
            "gcc",
            "g++",
            "cc",
            "c++",
            "cpp",
            "clang",
            "clang++",
            "gcc-12",
            "clang-14",
            "x86_64-linux-gnu-gcc-12",
            "x86_64-linux-gnu-g++",
        ] {
            assert!(is_c_compiler(name), "{name}");
        }
        for name in ["gccx", "xgcc", "g++-x", "ccache", "cc1", "as", "ld", "clang-format", "sh"] {
            assert!(!is_c_compiler(name), "{name}");
        }
        assert!(parts_of("git").0.contains(&"lib/git-core"));
        assert!(parts_of("gcc").1.contains(&"ld"));
        assert_eq!(parts_of("python3"), (&[][..], &[][..]));
    }
}
