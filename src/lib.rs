//! lnk: a tiny, setuid-free sandbox helper for AI-agent harnesses.
//!
//! The harness calls `lnk` for every sandbox launch. It reads the agent's sandbox file, makes a
//! Landlock + seccomp sandbox from it, runs one program in it and owns that program's whole
//! process tree. `lnk-link-run` runs background commands under supervisors of their own.
//!
//! One module per concern, each saying in its own documentation what it guarantees and what it
//! trusts:
//!
//! | module | concern |
//! |---|---|
//! | [`sandbox_file`] | the sandbox file: parsing, validation, defaults |
//! | [`diagnostic`] | compiler-style errors for it |
//! | [`denials`] | what the sandbox refused a call, why, and the grant that would allow it, right or absent |
//! | [`paths`] | lexical path handling shared by everything: `~`, `..`, teams, beneath |
//! | [`program_path`] | finding a program on the system PATH, never the caller's |
//! | [`protected`] | the protected set: secrets kept out of every grant they lie in |
//! | [`flags`] | the flags of `lnk sandbox run`, made from a sandbox file |
//! | [`grant_check`] | what `lnk sandbox check` finds on this computer: grants through links, wide grants |
//! | [`sandbox`] | the sandbox itself: Landlock ruleset and seccomp filter |
//! | [`lifetime`] | the process lifetime: keeper, process group, killing, reaping |
//! | [`notify`] | held system calls in the Landlock-only mode: metadata calls performed by the helper beneath the write grants; connects, servers and `/dev/shm` made by the helper on the call's own loopback and folder; sessions noted |
//! | [`output`] | the output capture: start and end of each stream, bounded |
//! | [`proxy`] | the call's proxy for `[internet]`: the network door, the policy, the threads |
//! | [`private_tmp`] | each call's own temporary folder |
//! | [`procfs`] | what `/proc` says of a process: its place in the tree, its start time |
//! | [`sock_diag`] | the kernel's socket diagnostics: whether a socket is in use, whether the host listens on a port |
//! | [`run`], [`report`] | `lnk sandbox run`, and how a call ended |
//! | [`file_tool`] | `lnk file`: the file session's operations, through descriptors |
//! | [`background`] | `lnk-link-run`: start, the supervisor, stop, the bridge, output files |
//! | [`records`] | records, their locks, the proof a group is still the command's, the sweep |
//! | [`sys`] | the raw system calls no safe wrapper covers: every `unsafe` of the crate outside its tests, each with why it is sound |
//! | [`json`] | the JSON the harness reads |
//! | [`exit`] | the exit codes, for the core and the command line alike |
//! | [`cli`] | the command lines, a thin layer over the above |

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
