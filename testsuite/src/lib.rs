//! The project's own test runs: what `cargo xtask test` (the README's test
//! command, and CI's) does from a bare machine to a green report, and the
//! machine readied for a workshop.
//!
//! - [`suites`]: `test` (every test of the workspace, every step against the
//!   oldest Kubernetes claimed, the captures re-run and compared, the book
//!   check), and the `parity` and `faults` suites alone;
//! - [`setup`]: what a fresh machine lacks, installed first (Chromium,
//!   musl-gcc, a CJK font, Rust's musl target, the book's tools) or the
//!   commands to install it;
//! - [`lanes`]: the workspace's tests in two lanes at once (the builds of
//!   patched copies beside the tests that wait on API servers);
//! - [`beside`]: the builds a later part needs, run meanwhile at the lowest
//!   priority; [`oldest`]: every step's check against the oldest release;
//! - [`prepare`]: `cargo xtask prepare`, a machine readied the day before a
//!   workshop (everything built, the control plane started once).
//!
//! It runs the other crates' work and owns none of it: the checks are
//! `course`'s, the book check `booktool`'s, the control plane
//! `testcluster`'s. Never: is called by another crate of the workspace but
//! xtask.

pub mod beside;
pub mod lanes;
pub mod oldest;
pub mod prepare;
pub mod setup;
pub mod suites;
