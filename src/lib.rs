//! age2048: strongly solves 2048 on small boards by age layering, and publishes the solution
//! as a dataset (Parquet, Elias-Fano indexes) to query, plot and play against.
//!
//! The rooms, and the way their imports point (see `ARCHITECTURE.md`):
//!
//! ```text
//! rules ◀── solver ──▶ store ◀── query ◀── report ◀── cli
//!             └──────▶ index ◀──────┘ ▲                 │
//!                                     └──── serve ◀─────┘
//! ```
//!
//! - [`rules`]: the game (boards, moves, symmetry, variants); no I/O.
//! - [`solver`]: forward and backward passes by age, resumable solves.
//! - [`store`]: every on-disk format of a data directory (paths, Parquet, manifests, work files).
//! - [`index`]: Elias-Fano sets and the age index file format.
//! - [`query`]: answers from solved data (tablebase look-ups, SQL catalog).
//! - [`report`]: figures, tables and comparisons (feature `report`).
//! - [`serve`]: the solution in the browser and its JSON API (feature `report`).
//! - [`cli`]: the commands.
//! - [`error`]: the kinds of error and their exit statuses.

pub mod bits;
pub mod cli;
pub mod error;
pub mod index;
pub mod query;
#[cfg(feature = "report")]
pub mod report;
pub mod rules;
#[cfg(feature = "report")]
pub mod serve;
pub mod solver;
pub mod store;
