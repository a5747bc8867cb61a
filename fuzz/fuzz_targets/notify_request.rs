//! A held call's notification, as the kernel gives it (80 bytes of `struct seccomp_notif`), read
//! and decoded: it never panics, a call it cannot name is refused, and what it decodes keeps the
//! numbers the kernel gave (an fd or a directory fd is the argument's low 32 bits).
#![no_main]

use libfuzzer_sys::fuzz_target;
use lnk::notify::Held;
use lnk::notify::request::{Target, decode};

fuzz_target!(|data: &[u8]| {
    let mut raw = [0u8; 80];
    let n = data.len().min(80);
    raw[..n].copy_from_slice(&data[..n]);
    let held = Held::parse(&raw);
    if let Ok(request) = decode(i64::from(held.nr), held.args) {
        match request.target {
            Target::Fd(fd) => assert!(held.args.iter().any(|a| *a as u32 as i32 == fd)),
            Target::Path { dirfd, path, .. } => {
                assert!(dirfd == -100 || held.args.iter().any(|a| *a as u32 as i32 == dirfd));
                assert!(held.args.contains(&path));
            }
        }
    }
});
