//! The own world's namespaces and mounts: id maps, a read-only tree, `/proc`, tmpfs, binds.
//!
//! Trusted with: making the own world's namespaces, id maps and mounts exactly as asked (a mount
//! left writable, or an id map wider than the caller, would weaken the own world). What it trusts:
//! the kernel's namespaces, and its callers for what to mount where and for the id maps, which it
//! writes as given.

use std::io;

/// `unshare(flags)`: the program's child enters namespaces of its own (see `sandbox::world`).
/// Must be called by a single-threaded process (a user namespace requires it).
pub fn unshare(flags: libc::c_int) -> Result<(), io::Error> {
    // SAFETY: unshare takes a flag word and touches no memory of ours.
    if unsafe { libc::unshare(flags) } == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// Denies `setgroups` and writes the `uid_map` and `gid_map` of the caller's new user namespace
/// (each mapping the caller to itself), so it gains nothing over anything outside.
pub fn map_ids_to_self(uid_map: &[u8], gid_map: &[u8]) -> Result<(), io::Error> {
    write_proc_self(c"/proc/self/setgroups", b"deny")?;
    write_proc_self(c"/proc/self/uid_map", uid_map)?;
    write_proc_self(c"/proc/self/gid_map", gid_map)
}

fn write_proc_self(path: &std::ffi::CStr, contents: &[u8]) -> Result<(), io::Error> {
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::open(path, OFlags::WRONLY | OFlags::CLOEXEC, Mode::empty())?;
    let written = rustix::io::write(&fd, contents)?;
    if written == contents.len() { Ok(()) } else { Err(io::Error::from_raw_os_error(libc::EIO)) }
}

/// `mount_setattr(root, "", AT_EMPTY_PATH | AT_RECURSIVE, { attr_set: MOUNT_ATTR_RDONLY })`:
/// every mount beneath `root` becomes read-only.
pub fn make_tree_read_only(root: &std::os::fd::OwnedFd) -> Result<(), io::Error> {
    const MOUNT_ATTR_RDONLY: u64 = 0x1;
    set_tree_attribute(root, MOUNT_ATTR_RDONLY)
}

/// `mount_setattr(root, "", AT_EMPTY_PATH | AT_RECURSIVE, { attr_set: MOUNT_ATTR_NODEV })`: no
/// device node beneath `root` can be opened, whatever its mode.
pub fn make_tree_without_devices(root: &std::os::fd::OwnedFd) -> Result<(), io::Error> {
    const MOUNT_ATTR_NODEV: u64 = 0x4;
    set_tree_attribute(root, MOUNT_ATTR_NODEV)
}

/// Sets the mount attribute `attribute` on every mount beneath `root`.
fn set_tree_attribute(root: &std::os::fd::OwnedFd, attribute: u64) -> Result<(), io::Error> {
    use std::os::fd::AsRawFd as _;
    const SYS_MOUNT_SETATTR: libc::c_long = 442;
    const AT_RECURSIVE: libc::c_uint = 0x8000;
    #[repr(C)]
    struct MountAttr {
        attr_set: u64,
        attr_clr: u64,
        propagation: u64,
        userns_fd: u64,
    }
    let attr = MountAttr { attr_set: attribute, attr_clr: 0, propagation: 0, userns_fd: 0 };
    // SAFETY: the path is a NUL-terminated literal and `attr` a live local of the size passed;
    // the kernel only reads both.
    let ret = unsafe {
        libc::syscall(
            SYS_MOUNT_SETATTR,
            root.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH as libc::c_uint | AT_RECURSIVE,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if ret == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// Mounts a new `proc` (no set-uid, devices or execution) over `/proc`: it shows the caller's
/// pid namespace only.
pub fn mount_proc() -> Result<(), io::Error> {
    // SAFETY: NUL-terminated literals; proc takes no data here.
    let ret = unsafe {
        libc::mount(
            c"proc".as_ptr(),
            c"/proc".as_ptr(),
            c"proc".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            std::ptr::null(),
        )
    };
    if ret == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// Makes every mount of the caller's (new) mount namespace private, so nothing mounted in it
/// propagates anywhere else.
pub fn make_mounts_private() -> Result<(), io::Error> {
    // SAFETY: NUL-terminated literals and null pointers where mount(2) allows them for a
    // propagation change.
    let ret = unsafe {
        libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        )
    };
    if ret == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// Bind-mounts `source` over `target` and makes that mount read-only.
pub fn bind_mount_read_only(source: &std::ffi::CStr, target: &std::ffi::CStr) -> Result<(), io::Error> {
    // SAFETY: both paths are NUL-terminated and outlive the calls; the type and data may be null
    // for a bind mount and for a remount of one.
    unsafe {
        if libc::mount(source.as_ptr(), target.as_ptr(), std::ptr::null(), libc::MS_BIND, std::ptr::null())
            != 0
        {
            return Err(io::Error::last_os_error());
        }
        let flags = libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV;
        if libc::mount(std::ptr::null(), target.as_ptr(), std::ptr::null(), flags, std::ptr::null()) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Mounts a small empty tmpfs (64 KiB, no devices, no set-uid, no execution) at `target`.
pub fn mount_small_tmpfs(target: &std::ffi::CStr) -> Result<(), io::Error> {
    mount_tmpfs(target, true, c"size=64k,mode=0755")
}

/// Mounts a new tmpfs on `target`: no set-uid, no devices, no execution when `noexec`, with
/// tmpfs's `options` (`size=…,mode=…`).
pub fn mount_tmpfs(target: &std::ffi::CStr, noexec: bool, options: &std::ffi::CStr) -> Result<(), io::Error> {
    let mut flags = libc::MS_NOSUID | libc::MS_NODEV;
    if noexec {
        flags |= libc::MS_NOEXEC;
    }
    // SAFETY: NUL-terminated strings that outlive the call; the data is tmpfs's option string.
    let ret = unsafe {
        libc::mount(c"tmpfs".as_ptr(), target.as_ptr(), c"tmpfs".as_ptr(), flags, options.as_ptr().cast())
    };
    if ret == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// Mounts a new devpts instance at `target`, with devpts's option string `options` (see
/// `crate::sandbox::world`): nothing set-user-id or executable on it.
pub fn mount_devpts(target: &std::ffi::CStr, options: &std::ffi::CStr) -> Result<(), io::Error> {
    let flags = libc::MS_NOSUID | libc::MS_NOEXEC;
    // SAFETY: NUL-terminated strings that outlive the call; the data is devpts's option string.
    let ret = unsafe {
        libc::mount(c"devpts".as_ptr(), target.as_ptr(), c"devpts".as_ptr(), flags, options.as_ptr().cast())
    };
    if ret == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// Detaches the mount at `target` (what was beneath it shows again; a bind mount of a file in
/// it keeps that file alive).
pub fn unmount_detach(target: &std::ffi::CStr) -> Result<(), io::Error> {
    // SAFETY: a NUL-terminated path and a flag word.
    if unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
