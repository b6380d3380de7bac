//! Errors of the rules: bad board sizes, board text, symmetry groups and variant names. All
//! are mistakes in what a user typed.

use crate::error::{ErrorKind, Kind};

/// Errors about board shapes, board text and symmetry groups (the rules do no I/O).
#[derive(Debug, thiserror::Error)]
pub enum BoardError {
    #[error("bad board size '{text}': {reason}")]
    Shape { text: String, reason: String },
    #[error("bad board '{text}': {reason}")]
    Parse { text: String, reason: String },
    #[error("unknown symmetry group '{0}' (expected full, flips or none)")]
    Symmetry(String),
}

/// Errors about variant names and spawn parameters.
#[derive(Debug, thiserror::Error)]
pub enum VariantError {
    #[error("unknown variant '{0}' (expected expectation, optimistic, pessimistic, goal-<T> or guaranteed-<T>)")]
    Unknown(String),
    #[error("bad goal tile in variant '{name}': {reason}")]
    Goal { name: String, reason: String },
    #[error("bad --p4 value '{0}': the probability of a 4 must be a number in [0, 1]")]
    P4(String),
    #[error("bad --discount value '{0}': the discount γ must be a number in (0, 1]")]
    Discount(String),
    #[error(
        "variant '{name}' takes no discount ({discount}): only goal-T variants are discounted"
    )]
    NotDiscountable { name: String, discount: String },
    #[error("variant '{name}': its {what} differs from --{what} {given}")]
    Conflict {
        name: String,
        what: &'static str,
        given: String,
    },
    #[error("variant '{name}' gives its {what} twice")]
    Repeated { name: String, what: &'static str },
    #[error("variant name '{name}' is {len} bytes, at most {max} are stored (give p4 or the discount with fewer digits)")]
    NameTooLong {
        name: String,
        len: usize,
        max: usize,
    },
    #[error("variant '{name}': its -caps= and -need= are not one hexadecimal digit a cell (exponents; caps at least 2, a required tile at most its cap, 0 in a free cell)")]
    Limits { name: String },
    #[error("variant '{name}': -{arith} (rigorous arithmetic, every step rounded down) applies to goal-T variants only, whose values are probabilities")]
    NotRigorous { name: String, arith: &'static str },
    #[error("variant '{0}': -u64 is not offered: values on a grid of 2^-64 do not fit the f64 values every reader reads; -u53 is the finest grid that does (-u32 is Slizkov's)")]
    NoU64(String),
    #[error("variant '{0}' is listed twice")]
    Duplicate(String),
}

impl ErrorKind for BoardError {
    fn kind(&self) -> Kind {
        Kind::Input
    }
}

impl ErrorKind for VariantError {
    fn kind(&self) -> Kind {
        Kind::Input
    }
}
