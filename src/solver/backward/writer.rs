//! What the backward pass hands over, an age at a time: the [`AgeWriter`] an age's states
//! go to as they are valued, and the valued age ([`AgeOutput`]).

use crate::rules::Order;
use crate::solver::records::{StateRec, Summary};
use crate::solver::{Result, SolveError};

/// Everything the pass found at one age, for all variants (`k` of them, interleaved), handed
/// over (not copied) to whoever stores it. The states' records went to the age's
/// [`AgeWriter`] a segment at a time; what is left of them is their figures and values.
pub struct AgeOutput {
    pub age: u32,
    /// States and afterstates of the age (the vectors below may have been let go).
    pub boards: u64,
    pub states: Vec<u64>,
    /// Empty if the age's writer wrote their files before the states were valued
    /// ([`AgeWriter::afterstates`]).
    pub afterstates: Vec<u64>,
    /// The states' figures per variant and values `[i * k + v]`.
    pub summary: Summary,
    /// `after_values[i * k + v]`; empty with the afterstates.
    pub after_values: Vec<f64>,
}

/// An age's afterstates, valued, and its states' ids (not yet valued): what the age's
/// afterstate files are made of.
#[derive(Clone, Copy)]
pub struct Afterstates<'a> {
    pub age: u32,
    pub states: &'a [u64],
    pub ids: &'a [u64],
    /// `values[i * k + v]`.
    pub values: &'a [f64],
}

impl AgeOutput {
    /// Its afterstates and the ids of its states.
    pub fn afterstates(&self) -> Afterstates<'_> {
        Afterstates {
            age: self.age,
            states: &self.states,
            ids: &self.afterstates,
            values: &self.after_values,
        }
    }

    /// The bytes the age holds (its vectors' lengths).
    pub fn bytes(&self) -> usize {
        use std::mem::size_of;
        (self.states.len() + self.afterstates.len()) * size_of::<u64>()
            + (self.summary.values.len() + self.after_values.len()) * size_of::<f64>()
    }

    /// The value of state `i` for variant `v` as `[i * k + v]` (unclamped).
    pub fn state_value(&self, j: usize) -> f64 {
        self.summary.values[j]
    }
}

/// Where an age's states go as the pass values them (the `states` Parquet of the variants
/// that keep the age), and the age once valued.
pub trait AgeWriter: Send {
    /// What the age's files came to.
    type Written: Send;
    /// What the writer needs of the states' records.
    fn wants(&self) -> Wants;
    /// The age's afterstates, valued, before its states are: a writer that writes their
    /// files now says `true`, and the pass lets go of them (their ids and values, 16 bytes
    /// each) before it values the states. By default (`false`) they are kept for
    /// [`AgeWriter::finish`] and whoever receives the age.
    fn afterstates(&mut self, _: Afterstates<'_>) -> Result<bool> {
        Ok(false)
    }
    /// A streamed age's afterstate figures, in place of [`AgeWriter::afterstates`] (the ids
    /// and values never exist whole): only a writer of the policy layout can take them.
    fn afterstate_figures(&mut self, _: &AfterFigures) -> Result<()> {
        Err(SolveError::Internal(
            "this writer needs the afterstates whole (a streamed age writes the policy layout only)"
                .into(),
        ))
    }
    /// A streamed age's state values (`[i * k + v]`), the next in row order: they exist no
    /// longer than a segment, so a writer that keeps them (for a resume) takes them here.
    fn state_values(&mut self, _: &[f64]) -> Result<()> {
        Ok(())
    }
    /// The rule under which the pass ranks each state's optimal moves into
    /// [`StateRec::rank`] (what a policy file stores), from the moves it makes to value the
    /// state; `None` (the default): no rank. A writer that wraps another passes this on.
    fn order(&self) -> Option<Order> {
        None
    }
    /// The records of the next states of the age, `ids` in row order: `recs[i * k + v]` for
    /// `i < ids.len()` (the vector may be longer). The writer may take the vector.
    fn states(&mut self, ids: &[u64], recs: &mut Vec<StateRec>) -> Result<()>;
    /// The valued age (the pass builds its level table meanwhile).
    fn finish(self, out: &AgeOutput) -> Result<Self::Written>;
}

/// A streamed age's afterstates as figures, summed as their chunks are valued: the ages
/// table's columns about them and what the manifest's largest tile comes from.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AfterFigures {
    pub states: u64,
    pub afterstates: u64,
    /// Empty cells over all afterstates (an integer: its mean is the bits of the whole age's).
    pub empty_cells: u64,
    /// Per variant, the largest afterstate value as stored (clamped).
    pub best: Vec<Option<f64>>,
    /// The largest exponent of any cell of the age's states and afterstates.
    pub max_exponent: u8,
}

/// What an [`AgeWriter`] needs of an age's records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wants {
    /// Only the figures and values the pass folds from them.
    Figures,
    /// Every record, in segments of this many states: the pass makes an age's records a
    /// segment at a time and hands each over while it makes the next, so that the records of
    /// a whole age never exist at once. It folds the figures as they go.
    Segments(usize),
    /// The age's records in one piece, their figures unfolded (the writer sums them:
    /// [`Summary::figures`] is left empty).
    Whole,
}

/// A writer that writes nothing: for solves held in memory.
pub struct NoFiles;

impl AgeWriter for NoFiles {
    type Written = ();
    fn wants(&self) -> Wants {
        Wants::Figures
    }
    fn states(&mut self, _: &[u64], _: &mut Vec<StateRec>) -> Result<()> {
        Ok(())
    }
    fn finish(self, _: &AgeOutput) -> Result<()> {
        Ok(())
    }
}
