//! The sandbox-file parser on arbitrary text: it never panics, every diagnostic renders, and a
//! file it accepts turns into flags that `lnk sandbox run` parses back to the same sandbox.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use lnk::flags::SandboxFlags;
use lnk::sandbox_file::{SandboxFile, Tool};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match SandboxFile::parse(text) {
        Ok(file) => {
            for tool in [Tool::Run, Tool::File] {
                let flags = SandboxFlags::from_file(&file, tool, Path::new("/home/fuzz"));
                let args = flags.to_args();
                let back = SandboxFlags::from_args(&args).expect("flags made from a valid file parse");
                assert_eq!(back.commands, flags.commands);
                assert_eq!(back.read, flags.read);
                assert_eq!(back.write, flags.write);
                assert_eq!(back.internet, flags.internet);
                for dir in flags.read.iter().chain(&flags.write) {
                    assert!(dir.is_absolute(), "{dir:?}");
                    assert!(!dir.components().any(|c| c == std::path::Component::ParentDir), "{dir:?}");
                }
            }
        }
        Err(diagnostics) => {
            assert!(!diagnostics.is_empty());
            let _ = lnk::diagnostic::render_all(&diagnostics, "fuzz.toml", text);
        }
    }
});
