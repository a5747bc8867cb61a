//! lnk: a tiny, setuid-free sandbox helper for AI-agent harnesses.
//!
//! The harness calls `lnk` for every sandbox launch. It reads the agent's sandbox file, makes a
//! Landlock + seccomp sandbox from it, runs one program in it and owns that program's whole
//! process tree. `lnk-link-run` runs background commands under supervisors of their own.
//!
//! One module per concern, each saying in its own documentation what it guarantees and what it
//! trusts. They form layers, read top-down: each imports only from its own layer or below
//! (the import graph has no circle; `farm-studio look` draws it).
//!
//! | layer | modules | what |
//! |---|---|---|
//! | the command line | [`cli`] | reads the words, calls one module below, turns its answer into output and an exit code |
//! | the calls | [`background`], [`run`], [`report`], [`file_tool`], [`grant_check`] | a background command (start, the supervisor, stop, the sweep, the bridge); one `lnk sandbox run` call and its report; `lnk file`'s operations; what `check` finds on this computer |
//! | the call's lifetime | [`lifetime`] | the keeper, the process group, killing and reaping |
//! | the sandbox | [`sandbox`] | the kernel's probe, which world a call gets, the grants opened once, the holes, the Landlock ruleset, the seccomp filter, the own world's mounts |
//! | what serves a running call | [`proxy`], [`notify`], [`denials`], [`records`] | the call's proxy and its loopback; the held calls of the Landlock-only mode; what was refused and the fix; the records and their locks |
//! | the vocabulary | [`flags`], [`program_path`], [`sandbox_file`], [`diagnostic`], [`private_tmp`] | the sandbox flags; the system PATH and folders; the sandbox file; its diagnostics; each call's tmp folder |
//! | the leaves | [`sys`], [`bpf`], [`thread_confinement`], [`user_namespaces`], [`sock_diag`], [`procfs`], [`paths`], [`protected`], [`output`], [`json`], [`exit`], [`fault`] | the raw system calls (every `unsafe` outside tests); the seccomp compiler; the helper's confined threads; why user namespaces are withheld; socket diagnostics; `/proc`; paths; the protected set; output capture; JSON; exit codes; test fault points |

pub mod background;
pub mod bpf;
pub mod cli;
pub mod denials;
pub mod diagnostic;
pub mod exit;
#[cfg(feature = "fault-points")]
pub mod fault;
pub mod file_tool;
pub mod flags;
pub mod grant_check;
pub mod json;
pub mod lifetime;
pub mod notify;
pub mod output;
pub mod paths;
pub mod private_tmp;
pub mod procfs;
pub mod program_path;
pub mod protected;
pub mod proxy;
pub mod records;
pub mod report;
pub mod run;
pub mod sandbox;
pub mod sandbox_file;
pub mod sock_diag;
pub mod sys;
pub mod thread_confinement;
pub mod user_namespaces;
