//! The capture scenarios of `cargo xtask book outputs`, one async fn per
//! output file: the step chapters' in `steps.rs`, "Running in a cluster"'s in
//! `cluster.rs`.

mod cluster;
mod steps;
mod workshop;

pub(super) use cluster::*;
pub(super) use steps::*;
pub(super) use workshop::*;
