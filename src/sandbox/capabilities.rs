//! The program holds no capability: cleared in the program's child, after the namespaces are
//! made (they need capabilities) and before Landlock, seccomp and `execve`.
//!
//! Why. Run by root, a program would otherwise keep every capability: set the clock, read the
//! kernel log, stall other processes with fanotify permission events, and read any file whatever
//! its mode (`CAP_DAC_OVERRIDE`) beneath a read grant. Landlock and seccomp do not take these
//! away. In a user namespace of the call's own the capabilities reach only that namespace, but
//! they are dropped there too: the program needs none.
//!
//! What is cleared, in this order (the first two need `CAP_SETPCAP`, which the last removes):
//! the bounding set, every cap; the securebits, set and locked so that root's `execve` grants
//! nothing (`NOROOT`), uid changes do not restore capabilities (`NO_SETUID_FIXUP`), and no ambient
//! capability can be raised; the ambient set; the effective, permitted and inheritable sets. Then
//! the sets are read back and must be empty, or the program does not run.
//!
//! A process without `CAP_SETPCAP` (an ordinary user in the Landlock-only mode) cannot change
//! its bounding set or securebits. It holds no capability to begin with, and `no_new_privs`
//! (which Landlock sets) makes `execve` ignore set-uid bits and file capabilities, so it cannot
//! gain one: the three sets and the ambient set are still cleared and checked.
//!
//! Trusted with: that the program holds no capability: a bug here could let a program run by root
//! read any file beneath a read grant whatever its mode, or act on the whole host. What it trusts:
//! the kernel's `capset` and `prctl`, whose result is read back with `capget`, not assumed.

use rustix::thread::{CapabilitiesSecureBits, CapabilitySet, CapabilitySets};

/// Drops every capability of the calling thread (the program's child is single-threaded), and
/// checks that none is left.
pub fn drop_all() -> Result<(), &'static str> {
    let held = rustix::thread::capabilities(None).map_err(|_| "cannot read the capabilities (capget)")?;
    if held.effective.contains(CapabilitySet::SETPCAP) {
        // Dropping a capability that is not in the set is a no-op; EINVAL marks the end of the
        // kernel's capabilities.
        for bit in 0..64u32 {
            match rustix::thread::remove_capability_from_bounding_set(CapabilitySet::from_bits_retain(
                1 << bit,
            )) {
                Ok(()) => {}
                Err(rustix::io::Errno::INVAL) => break,
                Err(_) => return Err("cannot drop a capability from the bounding set"),
            }
        }
        let bits = CapabilitiesSecureBits::NO_ROOT
            | CapabilitiesSecureBits::NO_ROOT_LOCKED
            | CapabilitiesSecureBits::NO_SETUID_FIXUP
            | CapabilitiesSecureBits::NO_SETUID_FIXUP_LOCKED
            | CapabilitiesSecureBits::KEEP_CAPS_LOCKED
            | CapabilitiesSecureBits::NO_CAP_AMBIENT_RAISE
            | CapabilitiesSecureBits::NO_CAP_AMBIENT_RAISE_LOCKED;
        rustix::thread::set_capabilities_secure_bits(bits).map_err(|_| "cannot lock the securebits")?;
    }
    rustix::thread::clear_ambient_capability_set().map_err(|_| "cannot clear the ambient capabilities")?;
    let none = CapabilitySet::empty();
    rustix::thread::set_capabilities(
        None,
        CapabilitySets { effective: none, permitted: none, inheritable: none },
    )
    .map_err(|_| "cannot drop the capabilities (capset)")?;
    let left = rustix::thread::capabilities(None).map_err(|_| "cannot read the capabilities (capget)")?;
    if !left.effective.is_empty() || !left.permitted.is_empty() || !left.inheritable.is_empty() {
        return Err("capabilities are left after dropping them all");
    }
    Ok(())
}
