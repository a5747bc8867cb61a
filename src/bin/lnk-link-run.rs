//! `lnk-link-run`: background commands under supervisors of their own. A thin dispatcher; the
//! work is in the library's `background` and `records` modules.

/// A fixed arena in front of the C library's allocator, for a faster start (see
/// `lnk::sys::StartArena`).
#[global_allocator]
static MEMORY: lnk::sys::StartArena<{ lnk::sys::START_ARENA_BYTES }> = lnk::sys::StartArena::new();

fn main() -> std::process::ExitCode {
    lnk::sys::ensure_standard_fds();
    match lnk::cli::utf8_args(std::env::args_os().skip(1)) {
        Ok(args) => lnk::cli::link_run::main(&args),
        Err((lossy, why)) => lnk::cli::link_run::not_utf8(&lossy, &why),
    }
}
