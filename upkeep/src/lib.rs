//! What keeps the repository consistent with itself: the files the step
//! folders make, the move to another Kubernetes release, and the rules
//! between the workspace's crates.
//!
//! - [`steps`]: `cargo xtask steps`, what the step folders make written where
//!   readers look (the README's table of steps, the teacher notes' table of
//!   Go's branches, the `#[path]` declarations of a folder's `check.rs`,
//!   `starter.rs` and `capture.rs`), then the starters;
//! - [`bump`]: `cargo xtask bump-kubernetes`, versions.toml, the Go wrapper
//!   modules and the k8s-openapi feature moved to another release, and the
//!   book passages whose Go source changed listed; [`gomod`]: a go.mod
//!   read and edited by Go itself;
//! - its tests hold the rules: no import circle in any crate and no module
//!   of a program naming its command line (`imports.rs`), a crate two
//!   packages use pinned once (`pins.rs`), no function of the tooling over
//!   80 lines but the ones `long-functions.txt` still lists (`lengths.rs`), ARCHITECTURE.md against `cargo
//!   metadata` (`tests/architecture.rs`), and a new step folder built,
//!   registered, tested, captured, checked and offered by the workshop
//!   (`tests/new_step.rs`).
//!
//! Never: is called by a step, the course or the book; writes a file the
//! step folders or the pinned versions do not make.

pub mod bump;
pub mod gomod;
#[cfg(test)]
mod imports;
#[cfg(test)]
mod lengths;
#[cfg(test)]
mod pins;
pub mod steps;
