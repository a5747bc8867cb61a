//! `src/sys/arena.rs` on its own, for Miri (see Cargo.toml).
#[path = "../../src/sys/arena.rs"]
pub mod arena;
