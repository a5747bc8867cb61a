//! The raw system calls lnk makes that neither rustix nor the landlock crate wrap. Every
//! `unsafe` block of the crate outside its tests lives in this folder, each with the reason it
//! is sound, so a reviewer audits them in one place; what it offers the rest is safe to call
//! (a fork checks the process has one thread; descriptors are borrowed or owned once).
//!
//! | file | what |
//! |---|---|
//! | [`seccomp`] | filters, and the held calls' listener |
//! | [`probes`] | what this kernel gives, asked in throwaway children |
//! | [`process`] | fork, exec, descriptors, signals |
//! | [`world`] | the own world's namespaces and mounts |
//! | [`net`] | the own world's loopback, a socket option, the proxy's NSS services (glibc builds) |
//! | [`arena`] | the binaries' memory allocator: a fixed arena in front of `malloc` |
//!
//! Trusted with: the soundness of every `unsafe` block, and that each wrapper makes exactly the
//! call its name says (a wrong flag or layout would weaken whatever its caller builds on it). What
//! it trusts: the kernel's interface (numbers and layouts, from `libc` or written here), and its
//! callers for what to ask: it decides nothing.

mod arena;
mod net;
mod probes;
mod process;
mod seccomp;
mod world;

pub use arena::{START_ARENA_BYTES, StartArena};
pub use net::*;
pub use probes::*;
pub use process::*;
pub use seccomp::*;
pub use world::*;

use std::io;

/// This thread's `errno`, read right after a failed libc call.
fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(libc::EINVAL)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The mode's cache key reads the filters' count from `/proc/self/status` only when this
    /// says there are filters (`sandbox::mode::cache_place`): it must agree with the kernel's
    /// own line there, in a thread with filters too.
    #[test]
    fn the_seccomp_mode_agrees_with_proc_status() {
        let from_status = || {
            let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
            let line = status.lines().find_map(|l| l.strip_prefix("Seccomp:")).unwrap().trim().to_owned();
            line.parse::<u32>().unwrap()
        };
        assert_eq!(seccomp_mode().unwrap(), from_status());
        // A thread of its own takes a filter (one that allows everything), leaving the others'.
        std::thread::spawn(move || {
            let allow = [libc::sock_filter { code: 0x06, jt: 0, jf: 0, k: 0x7fff_0000 }];
            let program = libc::sock_fprog { len: 1, filter: allow.as_ptr().cast_mut() };
            // SAFETY: a one-instruction filter that allows every call, read by the kernel during
            // the calls; `no_new_privs` first, as an unprivileged filter needs.
            unsafe {
                assert_eq!(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
                assert_eq!(libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &program), 0);
            }
            assert_eq!(seccomp_mode().unwrap(), 2);
            assert_eq!(from_status(), 2);
        })
        .join()
        .unwrap();
    }

    /// `abort_now` in a child that shares its parent's memory ends the child, by `SIGABRT`, and
    /// not the parent (musl's `abort` signals the thread id it cached: the parent's, found in
    /// review). Run in a forked child of the test (one thread there), which reports by its exit.
    #[test]
    fn abort_now_in_a_child_sharing_memory_ends_that_child_alone() {
        // SAFETY: the forked child makes system calls and musl calls that take no lock another
        // thread of the test could hold (musl's `fork` resets its allocator's), then `_exit`s.
        let forked = unsafe { libc::fork() };
        assert!(forked >= 0);
        if forked == 0 {
            let code = match spawn_sharing_memory(&mut || abort_now()) {
                Ok(pid) => {
                    let mut status = 0;
                    // SAFETY: waits for the child just started, into a live local.
                    let waited =
                        unsafe { libc::waitpid(pid.as_raw_nonzero().get(), &mut status, libc::__WALL) };
                    let aborted = libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGABRT;
                    if waited > 0 && aborted { 0 } else { 1 }
                }
                Err(_) => 2,
            };
            exit_now(code);
        }
        let mut status = 0;
        // SAFETY: waits for the child forked above, into a live local.
        assert_eq!(unsafe { libc::waitpid(forked, &mut status, 0) }, forked);
        assert!(libc::WIFEXITED(status), "the parent of the aborting child was ended: status {status:#x}");
        assert_eq!(libc::WEXITSTATUS(status), 0, "the child did not end by SIGABRT");
    }

    #[test]
    fn fork_refuses_while_the_process_has_other_threads() {
        // The test harness runs this on a thread of its own, beside its main thread.
        let (stop, wait) = std::sync::mpsc::channel::<()>();
        let other = std::thread::spawn(move || wait.recv());
        let refused = fork().err().map(|e| e.to_string()).unwrap_or_default();
        assert!(refused.contains("one thread"), "{refused}");
        let refused = clone_into_namespaces(0).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(refused.contains("one thread"), "{refused}");
        let refused =
            spawn_sharing_memory(&mut || exit_now(0)).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(refused.contains("one thread"), "{refused}");
        stop.send(()).unwrap();
        other.join().unwrap().unwrap();
    }

    /// The proxy's lookups in a static lnk: with the services pinned to `files dns`, a name in
    /// `/etc/hosts` resolves (every system lists `localhost` there), without any NSS module.
    #[test]
    fn a_name_in_etc_hosts_resolves_with_files_and_dns() {
        use std::net::ToSocketAddrs as _;
        resolve_hosts_with_files_and_dns().unwrap();
        let found: Vec<std::net::SocketAddr> = ("localhost", 80).to_socket_addrs().unwrap().collect();
        assert!(found.iter().any(|a| a.ip().is_loopback()), "{found:?}");
    }
}
