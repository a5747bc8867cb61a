//! Finding the dynamic loader an ELF program asks for (`PT_INTERP`).
//!
//! Landlock checks the execute right on the program *and* on the interpreter the kernel opens
//! for it (`ld-linux-x86-64.so.2`), so each allowed program's loader must be granted execute too,
//! and nothing else. Reading it from the file itself, instead of granting a list of well-known
//! loader paths, grants exactly what the allowed programs use.
//!
//! The parser reads at most [`HEADER_LIMIT`] bytes and checks every offset against what it read,
//! so a strange or hostile file yields `None`, never a panic or a huge allocation.
//!
//! Trusted with: which loader an allowed program's execute grant brings with it (a misread would
//! make another file executable). What it trusts: nothing of the bytes, for its own safety; the
//! loader it finds is the program file's word, and the program file is the system's (see
//! [`crate::program_path`]).

use std::io::Read as _;
use std::path::{Path, PathBuf};

/// Program headers beyond the first 64 KiB are not looked at; real loaders put them first.
const HEADER_LIMIT: u64 = 64 * 1024;
const PT_INTERP: u32 = 3;

/// What a program file is, as far as starting it goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Executable {
    /// An ELF file; `interpreter` is its loader, if it is dynamically linked.
    Elf { interpreter: Option<PathBuf> },
    /// A `#!` script; the kernel runs `interpreter` (which must be allowed too).
    Script { interpreter: PathBuf },
    /// Anything else: the kernel will refuse to execute it.
    Other,
}

/// Reads the start of `path` and says what it is.
pub fn inspect(path: &Path) -> std::io::Result<Executable> {
    let mut head = Vec::new();
    std::fs::File::open(path)?.take(HEADER_LIMIT).read_to_end(&mut head)?;
    Ok(classify(&head))
}

/// Classifies the first bytes of a file.
pub fn classify(head: &[u8]) -> Executable {
    if let Some(rest) = head.strip_prefix(b"#!") {
        let line = rest.split(|b| *b == b'\n').next().unwrap_or_default();
        let line = String::from_utf8_lossy(line);
        return match line.split_whitespace().next() {
            Some(interp) if interp.starts_with('/') => {
                Executable::Script { interpreter: PathBuf::from(interp) }
            }
            _ => Executable::Other,
        };
    }
    match elf_interpreter(head) {
        Some(interpreter) => Executable::Elf { interpreter },
        None => Executable::Other,
    }
}

fn elf_interpreter(head: &[u8]) -> Option<Option<PathBuf>> {
    if head.get(..4)? != b"\x7fELF" {
        return None;
    }
    let is_64 = match head.get(4)? {
        1 => false,
        2 => true,
        _ => return None,
    };
    let little = match head.get(5)? {
        1 => true,
        2 => false,
        _ => return None,
    };
    let u16_at = |o: usize| -> Option<u64> {
        let b: [u8; 2] = head.get(o..o.checked_add(2)?)?.try_into().ok()?;
        Some(u64::from(if little { u16::from_le_bytes(b) } else { u16::from_be_bytes(b) }))
    };
    let u32_at = |o: usize| -> Option<u64> {
        let b: [u8; 4] = head.get(o..o.checked_add(4)?)?.try_into().ok()?;
        Some(u64::from(if little { u32::from_le_bytes(b) } else { u32::from_be_bytes(b) }))
    };
    let u64_at = |o: usize| -> Option<u64> {
        let b: [u8; 8] = head.get(o..o.checked_add(8)?)?.try_into().ok()?;
        Some(if little { u64::from_le_bytes(b) } else { u64::from_be_bytes(b) })
    };
    let (phoff, phentsize, phnum) = if is_64 {
        (u64_at(0x20)?, u16_at(0x36)?, u16_at(0x38)?)
    } else {
        (u32_at(0x1c)?, u16_at(0x2a)?, u16_at(0x2c)?)
    };
    for i in 0..phnum {
        let ph = usize::try_from(phoff.checked_add(i.checked_mul(phentsize)?)?).ok()?;
        if u32_at(ph)? != PT_INTERP as u64 {
            continue;
        }
        let (offset, size) = if is_64 {
            (u64_at(ph + 0x08)?, u64_at(ph + 0x20)?)
        } else {
            (u32_at(ph + 0x04)?, u32_at(ph + 0x10)?)
        };
        let start = usize::try_from(offset).ok()?;
        let end = start.checked_add(usize::try_from(size).ok()?)?;
        let raw = head.get(start..end)?;
        let raw = raw.split(|b| *b == 0).next().unwrap_or_default();
        let text = std::str::from_utf8(raw).ok()?;
        return text.starts_with('/').then(|| Some(PathBuf::from(text)));
    }
    // No PT_INTERP: statically linked.
    Some(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_loader_of_a_real_program() {
        let sh = crate::program_path::lookup("sh").unwrap();
        match inspect(&sh.real).unwrap() {
            Executable::Elf { interpreter: Some(loader) } => assert!(loader.is_absolute(), "{loader:?}"),
            other => panic!("sh is a dynamically linked ELF here: {other:?}"),
        }
    }

    #[test]
    fn scripts_and_junk() {
        assert_eq!(
            classify(b"#!/usr/bin/perl -w\nprint 1;"),
            Executable::Script { interpreter: "/usr/bin/perl".into() }
        );
        assert_eq!(classify(b"#! /bin/sh\n"), Executable::Script { interpreter: "/bin/sh".into() });
        assert_eq!(classify(b"#!perl\n"), Executable::Other);
        assert_eq!(classify(b"hello"), Executable::Other);
        assert_eq!(classify(b"\x7fELF\x02\x01"), Executable::Other);
        // A header claiming program headers far past the end is refused, not followed.
        let mut h = vec![0u8; 64];
        h[..6].copy_from_slice(b"\x7fELF\x02\x01");
        h[0x20..0x28].copy_from_slice(&u64::MAX.to_le_bytes());
        h[0x38..0x3a].copy_from_slice(&3u16.to_le_bytes());
        h[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        assert_eq!(classify(&h), Executable::Other);
    }
}
