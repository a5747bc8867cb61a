//! What the next call trusts stays out of this call's write grants: the lnk that runs it (the
//! path the harness calls it by, every link on the way, and the image itself) and the sandbox
//! file it reads. A program that could write one of them would choose what the next call runs
//! unsandboxed, or what it grants (found in review: a sandbox file inside its own write grant
//! rewritten to `read = ["~", "~/.ssh"]`; `work/tools/lnk` replaced between two calls).
//!
//! Each path is walked as the kernel resolves it ([`super::walk`]): the places it passes are
//! each link, by its own path, and where it leads; and, where bind mounts show a place again
//! inside a write grant, that other name too ([`super::mounts`]). Any of them inside a write
//! grant refuses the call, naming the path, the place, the grant and the fix.
//!
//! What it trusts: the kernel's answers to the walk, its mount table, and the exec path the
//! kernel recorded for this process (`AT_EXECFN`).

use std::path::{Path, PathBuf};

use super::mounts::MountTable;
use super::request::Refusal;
use super::walk::{Folders, walk};

/// A file the next call trusts, with what it is, for the refusal.
pub struct Trusted {
    pub path: PathBuf,
    /// What it is: "the sandbox file", "the lnk that runs this call".
    pub what: &'static str,
}

/// The files of lnk itself the next call runs: the path this process was started by (as the
/// kernel recorded it, relative to the folder it started in) and its image.
pub fn own_paths() -> Vec<Trusted> {
    let mut paths = Vec::new();
    let what = "the lnk that runs this call";
    let image = std::fs::read_link("/proc/self/exe").ok();
    // Called by the path of its image itself (the usual case), one walk does.
    if let Some(called) = crate::sys::exec_path().map(PathBuf::from).filter(|c| Some(c) != image.as_ref()) {
        paths.push(Trusted { path: called, what });
    }
    paths.extend(image.map(|path| Trusted { path, what }));
    paths
}

/// Refuses when any of `trusted` passes through one of `write` (normal, link-free grant paths).
pub fn refuse_write_grants_over(trusted: &[Trusted], write: &[PathBuf]) -> Result<(), Refusal> {
    match reached_by_write_grants(trusted, write).map_err(Refusal::kernel)? {
        Some(reached) => Err(Refusal::refused(reached.why(trusted, write))),
        None => Ok(()),
    }
}

/// A trusted file a write grant reaches: which file, which grant, and the place on the way to
/// the file that lies inside the grant.
pub struct Reached {
    pub file: usize,
    pub grant: usize,
    pub place: PathBuf,
}

impl Reached {
    /// What is wrong, and the fix.
    pub fn why(&self, trusted: &[Trusted], write: &[PathBuf]) -> String {
        let file = &trusted[self.file];
        let through = match self.place == file.path {
            true => String::new(),
            false => format!(" (through `{}`)", self.place.display()),
        };
        format!(
            "{} `{}` lies inside the write grant `{}`{through}: a program of the call could change it and so choose what the next call runs or grants. Keep it outside every write grant (lnk in `/usr/local/bin`, the sandbox file beside the agent's records), or narrow the grant",
            file.what,
            file.path.display(),
            write[self.grant].display()
        )
    }
}

/// The first of `trusted` that passes through one of `write`, if any.
pub fn reached_by_write_grants(trusted: &[Trusted], write: &[PathBuf]) -> Result<Option<Reached>, String> {
    if write.is_empty() {
        return Ok(None);
    }
    let roots: Vec<&Path> = write.iter().map(PathBuf::as_path).collect();
    let table = MountTable::of_this_process()?;
    let aliases = table.has_aliases_within(&roots);
    let mut walked = Folders::new();
    for (index, file) in trusted.iter().enumerate() {
        let Some(absolute) = crate::paths::absolute_lexically(&file.path) else { continue };
        let walk = walk(&absolute, &mut walked, aliases)?;
        // Each link and each folder a `..` stepped out of: what is at its name decides where
        // the path leads, and a program may put something else at a name whose folder it may
        // write, that is, strictly beneath a write grant. A grant's own folder, stepped out
        // of (`../sandbox.toml` from a work folder that is the grant), stays where it is
        // (found as a harness calls: refused before). The file itself, and its other names,
        // may be neither a grant nor in one.
        let mut places: Vec<(PathBuf, bool)> = walk.links.into_iter().map(|p| (p, true)).collect();
        places.extend(walk.kept.into_iter().map(|p| (p, true)));
        if let Some(real) = walk.real {
            if let Some(mount) = walk.mount {
                places.extend(table.other_paths(&real, mount).into_iter().map(|p| (p, false)));
            }
            places.push((real, false));
        }
        for (place, named_in_its_folder) in places {
            let reached =
                |w: &PathBuf| crate::paths::within(&place, w) && !(named_in_its_folder && place == *w);
            if let Some(grant) = write.iter().position(reached) {
                return Ok(Some(Reached { file: index, grant, place }));
            }
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trusted_file_through_a_link_into_a_write_grant_is_refused() {
        let d = std::env::temp_dir().join(format!(
            "lnk-trusted-{}-{}",
            rustix::process::getuid().as_raw(),
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("work/tools")).unwrap();
        std::fs::create_dir_all(d.join("safe")).unwrap();
        std::fs::write(d.join("work/tools/lnk"), "x").unwrap();
        std::fs::write(d.join("safe/sandbox.toml"), "x").unwrap();
        std::os::unix::fs::symlink(d.join("work/tools"), d.join("bin")).unwrap();
        let write = vec![d.join("work")];
        let trusted = |path: PathBuf| [Trusted { path, what: "it" }];
        let e = refuse_write_grants_over(&trusted(d.join("bin/lnk")), &write).unwrap_err();
        assert_eq!(e.exit_code, 126);
        let grant = format!("inside the write grant `{}`", d.join("work").display());
        assert!(e.message.contains(&grant), "{}", e.message);
        assert!(refuse_write_grants_over(&trusted(d.join("safe/sandbox.toml")), &write).is_ok());
        // A link to a safe file that lies in the write grant could be retargeted: refused too.
        std::os::unix::fs::symlink(d.join("safe/sandbox.toml"), d.join("work/sb.toml")).unwrap();
        let e = refuse_write_grants_over(&trusted(d.join("work/sb.toml")), &write).unwrap_err();
        assert!(e.message.contains("sb.toml"), "{}", e.message);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
