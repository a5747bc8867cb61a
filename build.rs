//! One link choice, for launch speed (README, Performance); nothing else happens at build time.
//!
//! A dynamically linked Rust program loads `libgcc_s.so.1` for the unwinder the standard library
//! names, and that library's constructor probes the CPU with CPUID instructions, each a trap to
//! the hypervisor on a virtual machine (5–8 µs apiece on the development VMs): with the loading, about
//! a tenth of a millisecond of every `lnk` and `lnk-link-run` start. The release profile aborts
//! on panic and links with fat LTO, so its binaries never unwind and hold all their code in one
//! object: there, libgcc's static unwinder (`libgcc_eh.a`, what static and musl builds use)
//! takes every reference, and the binary no longer needs `libgcc_s` at all.
//!
//! A static build (lnk's default on x86_64: musl, see `.cargo/config.toml`; or glibc with
//! `crt-static`, as a `--target x86_64-unknown-linux-gnu` build is there) links `libgcc_eh.a` or
//! musl's unwinder itself, and no `libgcc_s` is ever loaded: nothing is done there. So this
//! matters only for a dynamic glibc build (another architecture).
//!
//! Only the release profile (whose `panic = "abort"` and `lto = true` are in Cargo.toml; a
//! `cargo test --release` binary is one LTO object too, and unwinds through the static
//! unwinder), never a fuzzing build (`cfg(fuzzing)`: no LTO there), only on GNU/Linux, and only
//! when the C compiler says where `libgcc_eh.a` is and builds for the machine it runs on (no
//! cross build: the host's `cc` would name the host's archive); otherwise nothing changes.
//! Without LTO the standard library's objects come after this library on the link line and
//! might take the shared unwinder, and one process must not mix two.
use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=CC");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let fuzzing = std::env::var_os("CARGO_CFG_FUZZING").is_some();
    if var("PROFILE") != "release"
        || fuzzing
        || var("HOST") != var("TARGET")
        || var("CARGO_CFG_TARGET_OS") != "linux"
        || var("CARGO_CFG_TARGET_ENV") != "gnu"
        || var("CARGO_CFG_TARGET_FEATURE").split(',').any(|f| f == "crt-static")
    {
        return;
    }
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let Ok(out) = Command::new(cc).arg("-print-file-name=libgcc_eh.a").output() else { return };
    // An unknown file is printed back as its bare name: only an absolute path that exists counts.
    let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let Some(folder) = path.parent().filter(|_| out.status.success() && path.is_absolute() && path.is_file())
    else {
        return;
    };
    println!("cargo:rustc-link-search=native={}", folder.display());
    println!("cargo:rustc-link-lib=static:-bundle=gcc_eh");
}
