//! A background command's output file, `background/<id>.out` in the agent's files folder.
//!
//! The files folder is writable by the agent's sandboxes, so code the agent ran may have planted
//! anything there: `background/` swapped for a symlink, `<id>.out` made a symlink or a hard link
//! to a secret, a FIFO. So the file is reached only through descriptors: the files folder is
//! opened once, `background` beneath it with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`, and the
//! output created there with `O_CREAT | O_EXCL | O_NOFOLLOW` (a planted name of any kind makes
//! the start fail; nothing is truncated). Reading checks the inode against the one recorded at
//! creation, opens without following links and without blocking, and refuses anything else.
//!
//! The output file is also checked to be the caller's (on the descriptor read, or before it
//! is removed): the files folder is the caller's, but if another user could ever write in it,
//! what they put there is left alone (see `records::owner`).
//!
//! The file is bounded: past `cap` bytes, output is counted and dropped, and a line saying how
//! much was dropped ends the file.
//!
//! Trusted with: that creating, reading or removing an output file touches that file and no other:
//! a bug here could let code the agent ran have lnk overwrite a secret, or show one through `read`.
//! What it trusts: the files folder's path as the harness gave it (opened once, as given), the
//! inode the record kept, and the kernel's `openat2` and `fstat`; nothing that lies beneath the
//! folder.

use std::io::Write as _;
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

/// The default cap on one command's output file.
pub const DEFAULT_CAP: u64 = 64 << 20;

fn beneath(dir: &OwnedFd, name: &str, flags: OFlags, mode: Mode) -> Result<OwnedFd, Errno> {
    let how = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    loop {
        match rustix::fs::openat2(dir, name, flags | OFlags::CLOEXEC, mode, how) {
            Err(Errno::AGAIN) => continue,
            other => return other,
        }
    }
}

/// Opens `<files_dir>/background`, creating it, never through a link.
fn background_dir(files_dir: &Path) -> Result<OwnedFd, String> {
    let files =
        rustix::fs::open(files_dir, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
            .map_err(|e| format!("cannot open the files folder {}: {e}", files_dir.display()))?;
    let open = || beneath(&files, "background", OFlags::PATH | OFlags::DIRECTORY, Mode::empty());
    match open() {
        Ok(fd) => Ok(fd),
        Err(Errno::NOENT) => {
            match rustix::fs::mkdirat(&files, "background", Mode::from_raw_mode(0o755)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => return Err(format!("cannot create {}/background: {e}", files_dir.display())),
            }
            open().map_err(|e| refusal(files_dir, "background", e))
        }
        Err(e) => Err(refusal(files_dir, "background", e)),
    }
}

fn refusal(files_dir: &Path, name: &str, e: Errno) -> String {
    let why = match e {
        Errno::LOOP | Errno::XDEV => "it is, or passes through, a symbolic link".to_owned(),
        Errno::EXIST => "something is already there (planted?)".to_owned(),
        Errno::NOTDIR => "it is not a folder".to_owned(),
        other => std::io::Error::from(other).to_string(),
    };
    format!("refusing {}/{name}: {why}", files_dir.display())
}

/// The output file being written, with its cap.
pub struct OutputFile {
    file: std::fs::File,
    cap: u64,
    pub written: u64,
    pub dropped: u64,
    /// (device, inode), recorded so `read` can tell the file from anything swapped in.
    pub inode: (u64, u64),
}

impl OutputFile {
    /// Creates `background/<id>.out`, exclusively.
    pub fn create(files_dir: &Path, id: &str, cap: u64) -> Result<OutputFile, String> {
        let dir = background_dir(files_dir)?;
        let name = format!("{id}.out");
        let fd = beneath(
            &dir,
            &name,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW,
            Mode::from_raw_mode(0o644),
        )
        .map_err(|e| refusal(files_dir, &format!("background/{name}"), e))?;
        let stat = rustix::fs::fstat(&fd).map_err(|e| e.to_string())?;
        if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile
            || stat.st_nlink != 1
        {
            return Err(format!(
                "refusing {}/background/{name}: not a new regular file",
                files_dir.display()
            ));
        }
        Ok(OutputFile {
            file: std::fs::File::from(fd),
            cap,
            written: 0,
            dropped: 0,
            inode: (stat.st_dev, stat.st_ino),
        })
    }

    /// Appends output, up to the cap; the rest is counted.
    pub fn push(&mut self, data: &[u8]) {
        let room = self.cap.saturating_sub(self.written) as usize;
        let n = room.min(data.len());
        if n > 0 && self.file.write_all(&data[..n]).is_ok() {
            self.written += n as u64;
        } else if n > 0 {
            // A full disk: the rest is dropped and counted, never retried forever.
            self.dropped += n as u64;
        }
        self.dropped += (data.len() - n) as u64;
    }

    /// Ends the file with a line saying what was dropped, if anything was.
    pub fn finish(mut self) {
        if self.dropped > 0 {
            let _ = writeln!(
                self.file,
                "\n[… lnk dropped {} bytes of output past the {}-byte cap …]",
                self.dropped, self.cap
            );
        }
        let _ = self.file.sync_data();
    }
}

/// Reads part of an output file: `offset` and `length`, or the last `length` bytes when
/// `from_end`. Refuses a name that is no longer the file created for this record.
pub fn read(
    files_dir: &Path,
    id: &str,
    inode: (u64, u64),
    offset: u64,
    length: u64,
    from_end: bool,
) -> Result<(Vec<u8>, u64), String> {
    let dir = background_dir(files_dir)?;
    let name = format!("{id}.out");
    let fd = beneath(&dir, &name, OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK, Mode::empty())
        .map_err(|e| refusal(files_dir, &format!("background/{name}"), e))?;
    let stat = rustix::fs::fstat(&fd).map_err(|e| e.to_string())?;
    if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
        return Err(format!("refusing background/{name}: not a regular file"));
    }
    let uid = crate::records::owner::caller();
    if stat.st_uid != uid {
        return Err(format!(
            "refusing background/{name}: it belongs to uid {}, not to you (uid {uid}), so it is not the file lnk wrote",
            stat.st_uid
        ));
    }
    if (stat.st_dev, stat.st_ino) != inode {
        return Err(format!("refusing background/{name}: it is not the file lnk wrote (replaced or linked)"));
    }
    let size = stat.st_size as u64;
    let start = if from_end { size.saturating_sub(length) } else { offset.min(size) };
    let len = length.min(size - start).min(1 << 20) as usize;
    let mut buf = vec![0u8; len];
    let mut done = 0;
    while done < len {
        match rustix::io::pread(&fd, &mut buf[done..], start + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e.to_string()),
        }
    }
    buf.truncate(done);
    Ok((buf, size))
}

/// Removes an output file by name (never following a link), for the sweep's cleanup, unless
/// it is not the caller's: then it is left, and the reason returned for the sweep's report.
pub fn remove(files_dir: &Path, id: &str) -> Result<(), String> {
    let Ok(dir) = background_dir(files_dir) else { return Ok(()) };
    let name = format!("{id}.out");
    // O_PATH: the owner of whatever is there (a link itself, with O_NOFOLLOW), without opening it.
    let fd = match beneath(&dir, &name, OFlags::PATH | OFlags::NOFOLLOW, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Ok(()),
        Err(e) => return Err(refusal(files_dir, &format!("background/{name}"), e)),
    };
    let stat = rustix::fs::fstat(&fd).map_err(|e| format!("cannot stat background/{name}: {e}"))?;
    let uid = crate::records::owner::caller();
    if stat.st_uid != uid {
        return Err(crate::records::owner::skipped(
            &files_dir.join("background").join(&name),
            &format!("it belongs to uid {}, not to you (uid {uid})", stat.st_uid),
        ));
    }
    let _ = rustix::fs::unlinkat(&dir, name.as_str(), rustix::fs::AtFlags::empty());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_planted_name_makes_creation_fail_and_leaves_the_victim_alone() {
        let dir = std::env::temp_dir().join(format!(
            "lnk-outfile-{}-{}",
            rustix::process::getuid().as_raw(),
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("files/background")).unwrap();
        let victim = dir.join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let files = dir.join("files");
        std::os::unix::fs::symlink(&victim, files.join("background/r1.out")).unwrap();
        std::fs::hard_link(&victim, files.join("background/r2.out")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            files.join("background/r3.out"),
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        for id in ["r1", "r2", "r3"] {
            assert!(OutputFile::create(&files, id, 100).is_err(), "{id}");
        }
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        let mut ok = OutputFile::create(&files, "r4", 4).unwrap();
        ok.push(b"123456");
        assert_eq!((ok.written, ok.dropped), (4, 2));
        ok.finish();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
