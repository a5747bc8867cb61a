//! `src/sys/arena.rs` on its own, for Miri (see Cargo.toml).
#[path = "../../src/sys/arena.rs"]
pub mod arena;

/// What the arena takes from lnk's `sys::process`: under Miri, which runs no system call of
/// lnk's own, the standard library's abort.
mod process {
    pub fn abort_now() -> ! {
        std::process::abort()
    }
}
