//! The performance tooling: what the book's Performance page shows, measured.
//!
//! - [`bench`](mod@bench): `cargo xtask bench`, steps 7 and 8 against the Go
//!   sample-controller, a bare client and the floor at 2 in flight, at
//!   several sizes: time to converge, CPU time, memory, writes, requests;
//!   its figures as data (`{{#figure}}` reads them) and its tables and charts;
//! - [`firstbuild`]: `cargo xtask first-build`, a learner's first build;
//! - [`heap`]: `cargo xtask heap-profile`, step 8's heap by dhat;
//! - [`timeline`]: where one run's time went, from its flow;
//! - [`measure`]: what they share (starting a program, creating Foos,
//!   waiting for convergence, reading `/proc` and the API server's metrics).
//!
//! It runs the steps as binaries on `testcluster`'s control plane and reads
//! them with the course's flow. Nothing of it is in a step's package, and
//! the lesson never calls it; the book only reads what it wrote
//! (`book/src/outputs/*.json`, `.txt`, `.svg`).

pub mod bench;
pub mod firstbuild;
pub mod heap;
pub mod measure;
pub mod timeline;
