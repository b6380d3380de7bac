//! The rules of 2048 on an R×C board (R·C ≤ 16), and nothing else: board codes and text,
//! moves and rewards, the symmetry group that identifies boards, the spawn rule of each
//! variant and the arithmetic of its values, and the starting distribution. No I/O and no
//! global state: every other room builds on these, and these on nothing.

pub mod board;
mod error;
pub mod game;
pub mod moves;
pub mod order;
pub mod restrict;
pub mod rigorous;
pub mod shape;
pub mod symmetry;
pub mod variant;

pub use board::{format_board, parse_board};
pub use error::{BoardError, VariantError};
pub use game::Game;
pub use moves::{Dir, Rules};
pub use order::{Order, Ranked};
pub use restrict::{RestrictError, Restriction};
pub use rigorous::{Arithmetic, Grid, Rigor};
pub use shape::Shape;
pub use symmetry::{Group, Symmetry};
pub use variant::{ForwardClass, Kind, Variant};
