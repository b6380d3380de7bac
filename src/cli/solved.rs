//! The arguments that name one solved board and variant (`--board`, `--data`, `--variant`,
//! `--p4`), shared by the commands that read a tablebase (`best`, `play`, `evaluate`) and
//! checked into a shape and a variant before any file is opened.

use std::path::PathBuf;

use clap::Args;

use super::CliError;
use crate::rules::variant::parse_p4_arg;
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
}

impl SolvedArgs {
    /// The board's shape and the variant, checked.
    pub fn check(&self) -> Result<(Shape, Variant), CliError> {
        let shape = Shape::parse(&self.board)?;
        let p4 = self.p4.as_deref().map(parse_p4_arg).transpose()?;
        let variant = Variant::parse(&self.variant, p4)?;
        Ok((shape, variant))
    }
}
