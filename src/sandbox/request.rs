//! What one call's sandbox is made from (the request), and the few words every part of the
//! sandbox shares: the Landlock ABI it is written for, where the program starts, why a sandbox
//! is refused.
//!
//! Trusted with nothing by itself: it is the vocabulary the parts of `sandbox` speak. It trusts
//! the caller (the `run` call, a background supervisor) to have put the request's paths in their
//! one spelling; `refusal` checks that it did.

use std::path::{Path, PathBuf};

use landlock::ABI;

use crate::flags::SandboxFlags;

/// The Landlock ABI every ruleset of lnk's is written for (6: file rights, TCP ports, both
/// scopes), each of its features a hard requirement.
pub(super) const PINNED_ABI: ABI = ABI::V6;

/// What one call's sandbox needs besides its flags.
pub struct SandboxRequest<'a> {
    pub flags: &'a SandboxFlags,
    /// The program to run, as named by the caller.
    pub program: &'a str,
    /// The call's private temporary folder (already created).
    pub private_tmp: &'a Path,
    /// Folders no write grant may cover: the agent's records.
    pub protected: &'a [PathBuf],
    /// The caller's home folder (`HOME`).
    pub home: &'a Path,
    /// The sandbox file the call was made from, if any: no write grant may reach it (see
    /// [`super::trusted`]), nor lnk itself.
    pub sandbox_file: Option<&'a Path>,
}

/// Where the program starts (the report's `enforced.cwd`): the caller's working folder as the
/// program's world shows it, so that a relative path means what the absolute one does; or,
/// where the world does not show that folder, the program's home (else its tmp folder).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartFolder {
    pub path: PathBuf,
    /// Why it is not the caller's working folder, when it is not.
    pub moved: Option<String>,
}

/// Why a sandbox could not be made, with the helper's exit code for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// 125 (the kernel or the helper cannot), 126 (the sandbox file refuses), 127 (not found).
    pub exit_code: u8,
    pub message: String,
}

impl Refusal {
    pub fn kernel(message: impl Into<String>) -> Refusal {
        Refusal { exit_code: crate::exit::HELPER_FAILED, message: message.into() }
    }
    pub fn refused(message: impl Into<String>) -> Refusal {
        Refusal { exit_code: crate::exit::REFUSED, message: message.into() }
    }
    pub fn not_found(message: impl Into<String>) -> Refusal {
        Refusal { exit_code: crate::exit::NOT_FOUND, message: message.into() }
    }
}
