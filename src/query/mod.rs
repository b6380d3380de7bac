//! The read side: answers from a solved data directory.
//!
//! - [`tablebase`]: a solved board and variant opened for look-ups (memory-mapped age
//!   indexes, the only place that maps files);
//! - [`best`]: the q-values, value and best move of one board;
//! - [`play`]: games played against the solution (Monte Carlo, `--watch`, a person's game);
//! - [`evaluate`]: the regret of every move of an agent's logged games;
//! - [`catalog`] and [`sql`]: DuckDB views over the Parquet files, and running statements
//!   (feature `report`); [`text`] makes any result printable.

pub mod best;
#[cfg(feature = "report")]
pub mod catalog;
pub mod error;
pub mod evaluate;
pub mod play;
#[cfg(feature = "report")]
pub mod sql;
pub mod tablebase;
#[cfg(feature = "report")]
pub mod text;

pub use best::{Answer, Evaluation};
pub use error::{QueryError, Result};
pub use tablebase::Tablebase;
