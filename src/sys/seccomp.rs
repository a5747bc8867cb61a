//! seccomp: installing a filter (on the calling thread only), and the user-notification
//! listener's ioctls (receive a held call, answer it, put a descriptor in the program, let it go
//! on). The numbers and layouts the kernel defines for them are here too.
//!
//! Trusted with: installing each filter as compiled, and each listener ioctl acting on the held
//! call it names: a wrong layout could answer another call, or put a descriptor elsewhere in the
//! program. What it trusts: the kernel's numbers and layouts as written here (`AUDIT_ARCH`, the
//! newer call numbers, the ioctl structures), and its callers for what to answer.

use super::errno;

/// `AUDIT_ARCH_*` of the architecture lnk was built for: a call made through another table
/// (`int 0x80` on x86_64) is killed by lnk's filters, and not answered by the helper.
#[cfg(target_arch = "x86_64")]
pub const AUDIT_ARCH: u32 = 0xc000_003e;
#[cfg(target_arch = "aarch64")]
pub const AUDIT_ARCH: u32 = 0xc000_00b7;
#[cfg(target_arch = "riscv64")]
pub const AUDIT_ARCH: u32 = 0xc000_00f3;

/// System calls newer than the `libc` crate's tables. Numbers from 424 on are the same on every
/// architecture.
pub const SYS_FCHMODAT2: libc::c_long = 452;
pub const SYS_SETXATTRAT: libc::c_long = 463;
pub const SYS_REMOVEXATTRAT: libc::c_long = 466;

/// One classic BPF instruction, laid out as the kernel's `struct sock_filter`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Instruction {
    pub code: u16,
    pub jt: u8,
    pub jf: u8,
    pub k: u32,
}

/// `SECCOMP_RET_KILL_PROCESS`, the action lnk's filters end in.
pub const SECCOMP_RET_KILL_PROCESS: u32 = 0x8000_0000;
/// `SECCOMP_RET_USER_NOTIF`.
pub const SECCOMP_RET_USER_NOTIF: u32 = 0x7fc0_0000;

/// `SECCOMP_SET_MODE_FILTER`.
const SECCOMP_SET_MODE_FILTER: libc::c_uint = 1;

/// Installs a seccomp filter on the calling thread, after setting `no_new_privs` (which the
/// kernel requires of a process without `CAP_SYS_ADMIN`). The kernel copies and checks the
/// program; a malformed one is refused (`EINVAL`), never half-installed.
pub fn install_seccomp_filter(program: &[Instruction]) -> Result<(), rustix::io::Errno> {
    seccomp_set_filter(program, 0).map(drop)
}

/// `SECCOMP_FILTER_FLAG_NEW_LISTENER`.
const SECCOMP_FILTER_FLAG_NEW_LISTENER: libc::c_uint = 1 << 3;

/// Installs a seccomp filter (as [`install_seccomp_filter`]) that may hold calls
/// (`SECCOMP_RET_USER_NOTIF`), and returns its listener (close-on-exec, as the kernel makes it).
pub fn install_seccomp_filter_with_listener(
    program: &[Instruction],
) -> Result<std::os::fd::OwnedFd, rustix::io::Errno> {
    use std::os::fd::FromRawFd as _;
    let fd = seccomp_set_filter(program, SECCOMP_FILTER_FLAG_NEW_LISTENER)?;
    // SAFETY: with NEW_LISTENER the kernel returned a new descriptor to this process, owned by
    // nothing else.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as i32) })
}

/// `seccomp(SECCOMP_SET_MODE_FILTER, flags, program)`, after `no_new_privs`; the call's result.
fn seccomp_set_filter(
    program: &[Instruction],
    flags: libc::c_uint,
) -> Result<libc::c_long, rustix::io::Errno> {
    rustix::thread::set_no_new_privs(true)?;
    let len = u16::try_from(program.len()).map_err(|_| rustix::io::Errno::INVAL)?;
    let fprog = libc::sock_fprog { len, filter: program.as_ptr().cast_mut().cast::<libc::sock_filter>() };
    // SAFETY: `Instruction` is `#[repr(C)]` with the fields of `struct sock_filter` (u16, u8,
    // u8, u32) in order, so the pointer is to `len` valid sock_filters; the kernel only reads
    // them, during the call, while `program` is borrowed.
    let ret = unsafe {
        libc::syscall(libc::SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &fprog as *const libc::sock_fprog)
    };
    if ret < 0 { Err(rustix::io::Errno::from_raw_os_error(errno())) } else { Ok(ret) }
}

/// `SECCOMP_IOCTL_NOTIF_RECV`: `_IOWR('!', 0, struct seccomp_notif)` (80 bytes).
const SECCOMP_IOCTL_NOTIF_RECV: libc::c_ulong = 0xc050_2100;
/// `SECCOMP_IOCTL_NOTIF_SEND`: `_IOWR('!', 1, struct seccomp_notif_resp)` (24 bytes).
const SECCOMP_IOCTL_NOTIF_SEND: libc::c_ulong = 0xc018_2101;
/// `SECCOMP_IOCTL_NOTIF_ID_VALID`: `_IOW('!', 2, __u64)`.
const SECCOMP_IOCTL_NOTIF_ID_VALID: libc::c_ulong = 0x4008_2102;
/// `SECCOMP_IOCTL_NOTIF_SET_FLAGS`: `_IOW('!', 4, __u64)` (Linux 6.6).
const SECCOMP_IOCTL_NOTIF_SET_FLAGS: libc::c_ulong = 0x4008_2104;
/// `SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP`.
const SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP: u64 = 1;

/// Receives one held call into `raw` (a `struct seccomp_notif`, zeroed first as the kernel
/// requires).
pub fn seccomp_notif_recv(
    listener: std::os::fd::BorrowedFd<'_>,
    raw: &mut [u8; 80],
) -> Result<(), rustix::io::Errno> {
    use std::os::fd::AsRawFd as _;
    raw.fill(0);
    // SAFETY: the kernel writes at most 80 bytes, the size this ioctl's number encodes, into a
    // live buffer of that size.
    let ret = unsafe { libc::ioctl(listener.as_raw_fd(), SECCOMP_IOCTL_NOTIF_RECV as _, raw.as_mut_ptr()) };
    if ret < 0 { Err(rustix::io::Errno::from_raw_os_error(errno())) } else { Ok(()) }
}

/// Asks the kernel to wake the listener's reader, and a held thread when its call is answered,
/// on the CPU of the thread that woke it (`SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP`), where that
/// thread is about to wait: a held call then costs no wake-up of an idle CPU. Speed only;
/// kernels before 6.6 refuse it (`EINVAL`), and then nothing changes.
pub fn seccomp_notif_wake_on_this_cpu(
    listener: std::os::fd::BorrowedFd<'_>,
) -> Result<(), rustix::io::Errno> {
    use std::os::fd::AsRawFd as _;
    let flags = SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP;
    // SAFETY: the kernel reads no memory: the flags are the argument itself, by value.
    let ret = unsafe { libc::ioctl(listener.as_raw_fd(), SECCOMP_IOCTL_NOTIF_SET_FLAGS as _, flags) };
    if ret < 0 { Err(rustix::io::Errno::from_raw_os_error(errno())) } else { Ok(()) }
}

/// Whether the held call `id` is still held (its thread alive and waiting).
pub fn seccomp_notif_id_valid(listener: std::os::fd::BorrowedFd<'_>, id: u64) -> bool {
    use std::os::fd::AsRawFd as _;
    // SAFETY: the kernel reads one u64 from a live local.
    unsafe { libc::ioctl(listener.as_raw_fd(), SECCOMP_IOCTL_NOTIF_ID_VALID as _, &id as *const u64) == 0 }
}

/// Answers the held call `id`: it returns `val`, or fails with `-error` when `error` is negative.
pub fn seccomp_notif_send(
    listener: std::os::fd::BorrowedFd<'_>,
    id: u64,
    val: i64,
    error: i32,
) -> Result<(), rustix::io::Errno> {
    respond(listener, id, val, error, 0)
}

/// `SECCOMP_IOCTL_NOTIF_SEND`: the held call `id`'s answer, or with `flags` its going on.
fn respond(
    listener: std::os::fd::BorrowedFd<'_>,
    id: u64,
    val: i64,
    error: i32,
    flags: u32,
) -> Result<(), rustix::io::Errno> {
    use std::os::fd::AsRawFd as _;
    /// `struct seccomp_notif_resp`.
    #[repr(C)]
    struct Response {
        id: u64,
        val: i64,
        error: i32,
        flags: u32,
    }
    let response = Response { id, val, error, flags };
    // SAFETY: `Response` is `struct seccomp_notif_resp` (24 bytes, the size the ioctl's number
    // encodes); the kernel only reads it.
    let ret = unsafe {
        libc::ioctl(listener.as_raw_fd(), SECCOMP_IOCTL_NOTIF_SEND as _, &response as *const Response)
    };
    if ret < 0 { Err(rustix::io::Errno::from_raw_os_error(errno())) } else { Ok(()) }
}

/// `SECCOMP_IOCTL_NOTIF_ADDFD`: `_IOW('!', 3, struct seccomp_notif_addfd)` (24 bytes).
const SECCOMP_IOCTL_NOTIF_ADDFD: libc::c_ulong = 0x4018_2103;
/// `SECCOMP_ADDFD_FLAG_SETFD`: put the descriptor at `newfd`, as `dup2` would.
const SECCOMP_ADDFD_FLAG_SETFD: u32 = 1;

/// Puts a copy of `file` in the descriptor table of the process holding call `id`, at number
/// `at` (replacing whatever is there, as `dup2` does), close-on-exec when `cloexec`. The held
/// call is still held afterwards: the caller answers it.
pub fn seccomp_notif_put_fd(
    listener: std::os::fd::BorrowedFd<'_>,
    id: u64,
    file: std::os::fd::BorrowedFd<'_>,
    at: i32,
    cloexec: bool,
) -> Result<(), rustix::io::Errno> {
    add_fd(listener, id, file, SECCOMP_ADDFD_FLAG_SETFD, at as u32, cloexec).map(drop)
}

/// `SECCOMP_IOCTL_NOTIF_ADDFD` with `flags`: a copy of `file` into the held process's table.
fn add_fd(
    listener: std::os::fd::BorrowedFd<'_>,
    id: u64,
    file: std::os::fd::BorrowedFd<'_>,
    flags: u32,
    newfd: u32,
    cloexec: bool,
) -> Result<i32, rustix::io::Errno> {
    use std::os::fd::AsRawFd as _;
    /// `struct seccomp_notif_addfd`.
    #[repr(C)]
    struct AddFd {
        id: u64,
        flags: u32,
        srcfd: u32,
        newfd: u32,
        newfd_flags: u32,
    }
    let request = AddFd {
        id,
        flags,
        srcfd: file.as_raw_fd() as u32,
        newfd,
        newfd_flags: if cloexec { libc::O_CLOEXEC as u32 } else { 0 },
    };
    // SAFETY: `AddFd` is `struct seccomp_notif_addfd` (24 bytes, the size the ioctl's number
    // encodes); the kernel only reads it, and `file` stays open for the call.
    let ret = unsafe {
        libc::ioctl(listener.as_raw_fd(), SECCOMP_IOCTL_NOTIF_ADDFD as _, &request as *const AddFd)
    };
    if ret < 0 { Err(rustix::io::Errno::from_raw_os_error(errno())) } else { Ok(ret) }
}

/// `SECCOMP_USER_NOTIF_FLAG_CONTINUE`: the held call goes on into the kernel as made.
const SECCOMP_USER_NOTIF_FLAG_CONTINUE: u32 = 1;

/// Lets the held call `id` go on into the kernel, which then performs it with the arguments the
/// program's memory holds at that moment. Only for calls whose arguments lie in registers, never
/// behind a pointer: what the helper saw is then exactly what the kernel performs.
pub fn seccomp_notif_continue(
    listener: std::os::fd::BorrowedFd<'_>,
    id: u64,
) -> Result<(), rustix::io::Errno> {
    respond(listener, id, 0, 0, SECCOMP_USER_NOTIF_FLAG_CONTINUE)
}

/// `SECCOMP_ADDFD_FLAG_SEND`: install the descriptor and answer the held call with its number, in
/// one step (Linux 5.14).
const SECCOMP_ADDFD_FLAG_SEND: u32 = 1 << 1;

/// Puts a copy of `file` in the descriptor table of the process holding call `id`, at the lowest
/// free number (close-on-exec when `cloexec`), and answers the call with that number, as `open`
/// would have. The call is answered: the caller sends nothing more for it.
pub fn seccomp_notif_send_fd(
    listener: std::os::fd::BorrowedFd<'_>,
    id: u64,
    file: std::os::fd::BorrowedFd<'_>,
    cloexec: bool,
) -> Result<i32, rustix::io::Errno> {
    add_fd(listener, id, file, SECCOMP_ADDFD_FLAG_SEND, 0, cloexec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd as _;

    #[test]
    fn a_listener_wakes_on_this_cpu_where_the_kernel_has_it() {
        // A filter that allows everything, with a listener, on a thread of its own (a filter
        // holds the thread that installs it and what it starts, never the test's others).
        let allow = [Instruction { code: 0x06, jt: 0, jf: 0, k: 0x7fff_0000 }];
        let listener = std::thread::spawn(move || install_seccomp_filter_with_listener(&allow))
            .join()
            .unwrap()
            .expect("a filter with a listener");
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
        let mut numbers = release.split(|c: char| !c.is_ascii_digit()).map(|n| n.parse::<u32>().unwrap_or(0));
        let version = (numbers.next().unwrap_or(0), numbers.next().unwrap_or(0));
        let set = seccomp_notif_wake_on_this_cpu(listener.as_fd());
        // The kernel answers an ioctl number it does not know `EINVAL`, as it does a kernel
        // before 6.6: only there may it fail.
        match version >= (6, 6) {
            true => assert_eq!(set, Ok(()), "Linux {release}"),
            false => assert_eq!(set, Err(rustix::io::Errno::INVAL), "Linux {release}"),
        }
    }
}
