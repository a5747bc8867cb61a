//! The ELF and `#!` reader on arbitrary bytes: it never panics and never reads out of bounds,
//! whatever a hostile file in a system folder claims about its program headers.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = lnk::sandbox::elf::classify(data);
});
