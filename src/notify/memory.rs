//! Reading a held call's arguments from the program's memory, through `/proc/<pid>/mem`.
//!
//! Not `process_vm_readv` and not `pidfd_getfd`: container runtimes' default seccomp profiles
//! (Docker's, podman's) refuse both unless the container holds `CAP_SYS_PTRACE`, and lnk's
//! Landlock-only mode is for exactly such places. Opening `/proc/<pid>/mem` needs only what the
//! kernel asks of a debugger of one's own child: the same user, and (with Yama) being an
//! ancestor, which the helper is.
//!
//! Each value is read once, into lnk's memory, and only that copy is used: the program's own
//! threads may change their memory at any time, so a value read twice could differ (a path
//! checked, then swapped). The file is opened before the notification's id is checked again
//! (see [`super::receiver`]), so it is the program's and not a process that took its pid.
//!
//! Trusted with: a held call's arguments as the helper acts on them, each read once and bounded,
//! and the one answer written into the program's memory (`getsockname`'s). What it trusts: the
//! kernel's `/proc/<tid>/mem` for whose memory it is, with the caller's check that the notification
//! is still live; nothing of what the memory holds.

use std::os::fd::OwnedFd;

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

/// The longest path the kernel takes, with its NUL.
const PATH_MAX: usize = 4096;
/// The longest extended attribute name and value the kernel takes.
pub const XATTR_NAME_MAX: usize = 255;
pub const XATTR_SIZE_MAX: usize = 65536;

/// A held call's process's memory.
pub struct Memory {
    file: OwnedFd,
}

impl Memory {
    /// Opens the memory of thread `tid` (the notifying thread: `/proc/<tid>` is there for any
    /// thread, listed or not).
    pub fn open(tid: u32) -> Result<Memory, Errno> {
        let path = format!("/proc/{tid}/mem");
        let file = rustix::fs::open(path.as_str(), OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())?;
        Ok(Memory { file })
    }

    /// The memory the receiver opened (see [`super::handles`]).
    pub fn from_file(file: OwnedFd) -> Memory {
        Memory { file }
    }

    /// Writes `bytes` at `address`; `EFAULT` where the program has no writable memory.
    pub fn write(&self, address: u64, bytes: &[u8]) -> Result<(), Errno> {
        let mut done = 0;
        while done < bytes.len() {
            let offset = address.checked_add(done as u64).ok_or(Errno::FAULT)?;
            match rustix::io::pwrite(&self.file, &bytes[done..], offset) {
                Ok(0) | Err(Errno::IO) => return Err(Errno::FAULT),
                Ok(n) => done += n,
                Err(Errno::INTR) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Reads exactly `buf.len()` bytes at `address`; `EFAULT` where the program has none.
    pub fn read(&self, address: u64, buf: &mut [u8]) -> Result<(), Errno> {
        let mut done = 0;
        while done < buf.len() {
            let offset = address.checked_add(done as u64).ok_or(Errno::FAULT)?;
            match rustix::io::pread(&self.file, &mut buf[done..], offset) {
                Ok(0) | Err(Errno::IO) => return Err(Errno::FAULT),
                Ok(n) => done += n,
                Err(Errno::INTR) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Reads a NUL-terminated string at `address`, at most `max` bytes before the NUL
    /// (`too_long` past that), without the NUL. Reads in pieces that never cross a page, so a
    /// short string at a page's end is read although the next page is not mapped.
    pub fn read_cstring(&self, address: u64, max: usize, too_long: Errno) -> Result<Vec<u8>, Errno> {
        let mut out = Vec::new();
        let mut at = address;
        loop {
            let to_page_end = 4096 - (at % 4096) as usize;
            let mut piece = vec![0u8; to_page_end.min(max + 1 - out.len())];
            self.read(at, &mut piece)?;
            if let Some(nul) = memchr::memchr(0, &piece) {
                out.extend_from_slice(&piece[..nul]);
                return Ok(out);
            }
            out.extend_from_slice(&piece);
            if out.len() > max {
                return Err(too_long);
            }
            at = at.checked_add(piece.len() as u64).ok_or(Errno::FAULT)?;
        }
    }

    /// A path argument: at most `PATH_MAX - 1` bytes (`ENAMETOOLONG`).
    pub fn read_path(&self, address: u64) -> Result<Vec<u8>, Errno> {
        if address == 0 {
            return Err(Errno::FAULT);
        }
        self.read_cstring(address, PATH_MAX - 1, Errno::NAMETOOLONG)
    }

    /// Two 64-bit words at `address` (a `timeval`, `timespec` or `utimbuf` pair).
    pub fn read_words<const N: usize>(&self, address: u64) -> Result<[i64; N], Errno> {
        let mut raw = vec![0u8; 8 * N];
        self.read(address, &mut raw)?;
        let mut words = [0i64; N];
        for (word, bytes) in words.iter_mut().zip(raw.chunks_exact(8)) {
            *word = i64::from_ne_bytes(bytes.try_into().map_err(|_| Errno::FAULT)?);
        }
        Ok(words)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_and_words_are_read_from_a_process_and_bounded() {
        // This process's own memory stands for the program's.
        let me = Memory::open(std::process::id()).unwrap();
        let text = b"a/path\0after";
        assert_eq!(me.read_path(text.as_ptr() as u64).unwrap(), b"a/path");
        let long = vec![b'x'; PATH_MAX + 10];
        assert_eq!(me.read_path(long.as_ptr() as u64), Err(Errno::NAMETOOLONG));
        let name = b"user.x\0";
        assert_eq!(me.read_cstring(name.as_ptr() as u64, XATTR_NAME_MAX, Errno::RANGE).unwrap(), b"user.x");
        let words: [i64; 4] = [1, 2, -3, 4];
        assert_eq!(me.read_words::<4>(words.as_ptr() as u64).unwrap(), words);
        assert_eq!(me.read_path(0), Err(Errno::FAULT));
        assert_eq!(me.read_path(8), Err(Errno::FAULT));
    }
}
