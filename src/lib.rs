//! age2048: strongly solves 2048 on small boards by age layering, and publishes the solution
//! as a dataset (Parquet, Elias-Fano indexes) to query, plot and play against.
//!
//! See `ARCHITECTURE.md` for the code map, the data flow and the invariants.

pub mod backward;
pub mod best;
pub mod board;
pub mod cli;
#[cfg(feature = "report")]
pub mod cli_report;
#[cfg(feature = "report")]
pub mod compare;
pub mod error;
pub mod forward;
pub mod game;
pub mod guaranteed;
pub mod index;
pub mod layer;
#[cfg(feature = "report")]
pub mod report;
pub mod solve;
#[cfg(feature = "report")]
pub mod sql;
pub mod store;
pub mod symmetry;
pub mod variant;

pub use error::{Error, Result};
