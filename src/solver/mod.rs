//! The solver: enumerates every reachable state and afterstate of a board by age and values
//! them exactly under each variant's spawn rule, then hands every finished age to the store.
//!
//! - [`layer`]: sorted id layers (radix sort, union) and the rank hash of a layer;
//! - [`forward`]: the forward pass, by increasing age (three layers kept);
//! - [`backward`]: the backward pass, by decreasing age (ages n, n+2, n+4 kept);
//! - [`records`]: what the backward pass finds of a state, and an age's figures, summed
//!   exactly ([`exact`]) so that any order or split of the states gives the same bits;
//! - [`output`]: one finished age as files (Parquet, index) and per-age figures;
//! - [`run`]: the orchestration of one solve, resumable after any finished age: the forward
//!   pass, the backward pass and the finish, each in a module of its own;
//! - [`exchange`]: a solve spread over processes (MPI): who owns a board, the one interface
//!   the passes call to move boards and values between processes, the named operations the
//!   orchestration agrees through (a barrier, agreeing on a minimum, the leader), and under
//!   the feature `mpi` the start-up of a process of the job;
//! - [`checkpoint`]: finished ages made durable on a thread of their own;
//! - [`budget`]: how many bytes of finished ages may wait for the writer;
//! - [`plan`]: the memory budget of a solve (resolved once: [`plan::MemoryBudget`]) and what
//!   the passes may hold within it;
//! - [`huge`]: big buffers backed by transparent huge pages;
//! - [`memory`]: the process's resident memory, and its peak phase by phase;
//! - [`guaranteed`]: the largest tile a player can force, from small in-memory solves.
//!
//! The passes do no I/O; [`run`] reaches the disk only through the store.

pub mod backward;
mod budget;
mod checkpoint;
mod error;
pub mod exact;
pub mod exchange;
pub mod forward;
pub mod guaranteed;
mod huge;
pub mod layer;
mod memory;
pub mod output;
pub mod plan;
pub mod reach;
pub mod records;
pub mod run;
pub mod spill;
pub mod table;

pub use error::{Result, SolveError};
pub use memory::can_trace as can_trace_memory;
pub use run::{
    solve, Event, Precision, SolveConfig, StorageRequest, DEFAULT_MIN_FREE,
    DEFAULT_POINTS_FRACTION_BITS, DEFAULT_PROBABILITY_FRACTION_BITS, DEFAULT_WRITE_AHEAD,
};
