//! Succinct per-age indices: Elias–Fano sets of compacted board codes, and the on-disk
//! "age index" file that maps a state or afterstate code to its rank (and an afterstate
//! rank to its value).
//!
//! # Elias–Fano
//!
//! A sorted set of `m` distinct values `x_0 < … < x_{m-1}`, all `≤ max`, is stored in the
//! quasi-succinct representation of Elias ("Efficient storage and retrieval by content and
//! address of static files", J. ACM 21(2), 1974) and Fano ("On the number of bits required
//! to implement an associative memory", MIT Project MAC memo 61, 1971), as engineered by
//! Vigna ("Quasi-succinct indices", WSDM 2013) and in the `sux` crate:
//!
//! * each value is split into `l = ⌊log₂(U/m)⌋` low bits (with `U = max + 1`, capped at
//!   63), stored verbatim in an array of `m·l` bits;
//! * the high part `h_i = x_i >> l` is written in unary: bit `h_i + i` of a bitvector of
//!   `m + (max >> l) + 1` bits is set. Bucket `h` (the elements sharing high part `h`) is
//!   the run of ones after the `h`-th zero, so the vector has exactly `(max >> l) + 1`
//!   zeros and `m` ones.
//!
//! That costs at most `2 + ⌈log₂(U/m)⌉` bits per element, plus the inventories. Two inventories of absolute
//! positions make the bitvector navigable: the position of every 256th one (for
//! `select1`, hence `get(i)`) and of every 256th zero (for `select0`, hence `rank_of(x)`,
//! which jumps straight to the bucket of `x >> l` and scans its — on average one or two —
//! low parts). Select inside a word is Vigna's broadword algorithm ("Broadword
//! implementation of rank/select queries", WEA 2008) with a byte lookup table.
//!
//! Every structure is a view over `B: AsRef<[u8]>` (the model is the `fst` crate): it
//! works unchanged over a `Vec<u8>` or a memory map that the caller made. Words are read
//! with `u64::from_le_bytes`, so the file format is little-endian everywhere and the
//! slice needs no alignment; sections start at multiples of 8 bytes so that a word index
//! is a byte offset divided by 8. There is no `unsafe`.
//!
//! Serialised Elias–Fano section (all `u64` little-endian):
//!
//! ```text
//! [0] m   [1] max   [2] l   [3] high_bits
//! [4] low_words  [5] high_words  [6] select1 samples  [7] select0 samples
//! low words (m·l bits, plus one padding word so a value straddling two words is
//!   always read from in-bounds memory) | high words | select1 samples | select0 samples
//! ```
//!
//! Every header field is a function of `(m, max)`, so a reader recomputes and compares
//! them rather than trusting them, and re-derives the inventories from the bitvector.
//!
//!
//! The room has six parts: [`select`] (selection inside a word), [`elias_fano`] (the sets),
//! [`compaction`] (the paper's re-basing of one age's codes), [`raw`] (the `.a2i` file:
//! header, version, checksum; readers over any `AsRef<[u8]>`), [`fuse`] (a static function
//! from ids to a few bits: binary fuse graphs) and [`policy`] (the `.a2p` file of the policy
//! layout: an age's optimal moves). It depends on nothing else in the crate.

use crate::error::{ErrorKind, Kind};

pub mod compaction;
pub mod elias_fano;
pub mod fuse;
pub mod policy;
pub mod raw;
pub mod ribbon;
pub mod select;

pub use compaction::{board_age, max_exponent, CodeSet, Compaction};
pub use elias_fano::{encode_elias_fano, EfIter, EliasFano};
pub use policy::{
    encode_policy, MovesOf, Policy, PolicyBuilder, PolicyHeader, PolicyMeta, PolicyStats, Stored,
};
pub use raw::{
    encode_age_index, encode_age_index_with_stats, AgeIndex, AgeIndexHeader, AgeIndexMeta,
    AgeIndexStats, IndexOptions, ValueCoding, MAX_FRACTION_BITS,
};

/// Errors of this module.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// Bytes that should hold an index do not (bad magic, truncation, checksum, …).
    #[error("damaged index: {what}")]
    Corrupted { what: String },
    /// The caller asked to encode something that cannot be encoded.
    #[error("invalid input: {what}")]
    InvalidInput { what: String },
}

pub(crate) fn corrupted(what: impl Into<String>) -> IndexError {
    IndexError::Corrupted { what: what.into() }
}

pub(crate) fn invalid(what: impl Into<String>) -> IndexError {
    IndexError::InvalidInput { what: what.into() }
}

impl ErrorKind for IndexError {
    fn kind(&self) -> Kind {
        match self {
            IndexError::Corrupted { .. } => Kind::Data,
            IndexError::InvalidInput { .. } => Kind::Internal,
        }
    }
}

#[cfg(test)]
mod tests;
