//! The integration tests: the real binary (`CARGO_BIN_EXE_age2048`) on real solves, one module
//! a subject. They are one test crate, not one per file, so that one build links them once and
//! the test threads keep both cores busy across subjects (a subject's long solve runs beside
//! another's short checks) instead of each crate's run waiting out its slowest test. Run one
//! subject with `cargo test --test integration budget::`.

mod common;

mod brute;
mod budget;
mod cli;
mod compact;
mod goals;
#[cfg(feature = "mpi")]
mod hosts;
#[cfg(feature = "mpi")]
mod mpi;
#[cfg(feature = "mpi")]
mod mpi_budget;
mod play;
mod policy;
mod report_cli;
mod restricted;
mod rigorous;
mod serve;
mod solve_3x3;
mod trust;
