//! The arguments that name one solved board and variant (`--board`, `--data`, `--variant`,
//! `--p4`, `--discount`), shared by the commands that read a tablebase (`best`, `play`, `evaluate`) and
//! checked into a shape and a variant before any file is opened.

use std::path::PathBuf;

use clap::Args;

use super::CliError;
use crate::rules::variant::Given;
use crate::rules::{Shape, Variant};

#[derive(Args, Debug)]
pub struct SolvedArgs {
    /// Board size RxC.
    #[arg(long)]
    pub board: String,
    /// Data directory.
    #[arg(long, default_value = "data")]
    pub data: PathBuf,
    /// Variant whose solution is read: its spawn rule is the game's, its values judge the moves.
    #[arg(long, default_value = "expectation")]
    pub variant: String,
    /// Probability of a 4 of the solved variant.
    #[arg(long)]
    pub p4: Option<String>,
    /// Discount γ of the solved goal variant (as for `solve`).
    #[arg(long)]
    pub discount: Option<String>,
}

impl SolvedArgs {
    /// The board's shape and the variant, checked.
    pub fn check(&self) -> Result<(Shape, Variant), CliError> {
        let shape = Shape::parse(&self.board)?;
        let given = Given::from_args(self.p4.as_deref(), self.discount.as_deref())?;
        let variant = Variant::parse(&self.variant, given)?;
        Ok((shape, variant))
    }
}
