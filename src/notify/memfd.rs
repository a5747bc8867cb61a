//! A held `memfd_create` (the Landlock-only mode), made by the server sealed non-executable.
//!
//! Landlock does not govern a memfd: its inode lies on an internal mount that no rule names, so
//! an executable one would run whatever the program wrote into it, past `commands`. The kernel
//! can refuse to execute one only when it is sealed so (`MFD_NOEXEC_SEAL`, Linux 6.3): a
//! program that asks for a plain memfd (glibc's callers, JITs, Wayland clients) gets one made
//! here with that seal added, and keeps every other property it asked for (close-on-exec, huge
//! pages); such a memfd also allows sealing, which a plain one forbids. One asked executable
//! (`MFD_EXEC`) is refused (`EACCES`, as the own world's kernel answers it), and named.
//!
//! Trusted with: that no memfd of the program's is executable. What it trusts: the kernel's
//! `MFD_NOEXEC_SEAL`, and the name as [`super::memory`] read it (a name only: it names nothing).

use std::os::fd::OwnedFd;

use rustix::io::Errno;

use super::Refusal;
use super::memory::Memory;

/// The longest name `memfd_create` takes (`MFD_NAME_MAX_LEN`).
const NAME_MAX: usize = 249;

/// Makes the memfd a held `memfd_create(name, flags)` asks for, sealed non-executable; the
/// refusal of an executable one is put in `refused`.
pub fn make(memory: &Memory, name: u64, flags: u32, refused: &mut Option<Refusal>) -> Result<OwnedFd, Errno> {
    if flags & libc::MFD_EXEC != 0 {
        *refused = Some(Refusal::MemfdExecutable);
        return Err(Errno::ACCESS);
    }
    if name == 0 {
        return Err(Errno::FAULT);
    }
    let name = memory.read_cstring(name, NAME_MAX, Errno::INVAL)?;
    let name = std::ffi::CString::new(name).map_err(|_| Errno::INVAL)?;
    let flags = rustix::fs::MemfdFlags::from_bits_retain(flags | libc::MFD_NOEXEC_SEAL);
    // A kernel without the seal (before 6.3) answers EINVAL: then none is made, as none could be
    // made non-executable.
    rustix::fs::memfd_create(name.as_c_str(), flags)
}
