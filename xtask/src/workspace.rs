//! The repository as every command sees it: `course::workspace` (its root,
//! build output, packages, cargo run in it), named here as the commands
//! name it.

pub use course::workspace::*;
