//! The processes of a solve (`mpirun -np N age2048 solve`): the one interface the passes and
//! the orchestration call to move boards and values between processes ([`Exchange`]), and
//! behind the feature `mpi` the one transport that does it and the start-up of a process of
//! the job ([`mpi::Mpi`], [`mpi::run_mpi`], through the `mpi` crate).
//!
//! Every state and afterstate of an age is owned by one process, the one whose part
//! ([`Parts::of`], a function of the id alone) it falls in. The forward pass hands each layer
//! it made to [`Exchange::route`], which sends each id to its owner and returns the ids this
//! process owns; the backward pass asks [`Exchange::fetch_rounds`] for the values of the boards it
//! looks up that others own. The orchestration agrees through named operations: a
//! [`Exchange::barrier`], [`Exchange::agree_min`] / [`Exchange::agree_max`] (and
//! [`Exchange::agree_any`], [`Exchange::agree_all`]), the leader ([`Exchange::is_leader`]) and
//! the gathers of the finish. In a single process ([`Exchange::single`]) every one of them
//! moves nothing and every id is owned, so the single-process solve runs the same code.
//!
//! Collectives: every process calls the same methods in the same order (the passes go
//! through the same ages in lockstep). A collective's counts and displacements are 32-bit in
//! MPI, so an exchange moves its elements in rounds: in one call a process sends, and
//! receives, at most [`message_limit`] elements ([`MESSAGE_LIMIT`], or less by
//! [`MESSAGE_LIMIT_VAR`]). Each process cuts its own share into rounds of its own size and
//! the processes agree on the number of rounds, so a receiver only appends what each round
//! brings.

#[cfg(feature = "mpi")]
pub mod mpi;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use rayon::prelude::*;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::{Result, SolveError};
use crate::rules::{Game, Shape};
use crate::store::parts::Parts;

/// The most elements (ids and values, or bytes) a process sends, and receives, in one call of
/// a collective: 2^24 (128 MiB of ids), well under the 2^31 that MPI's 32-bit counts and
/// displacements hold. An exchange that moves more goes in rounds.
pub const MESSAGE_LIMIT: usize = 1 << 24;

/// The most ids a process asks in one round of [`Exchange::fetch_rounds`] (or the message limit, if
/// smaller): the buckets, the messages and the answers of a round exist at once, never those
/// of its whole wanted set (each several times the set's 8 bytes an id).
pub const FETCH_ROUND: usize = 1 << 18;

/// The environment variable that sets a smaller limit than [`MESSAGE_LIMIT`] (a number of
/// elements from 1 up), read once: the tests force many rounds with it. Under `mpirun` a
/// process on another host sees it when the launcher passes it (`mpirun -x`).
pub const MESSAGE_LIMIT_VAR: &str = "AGE2048_MPI_MESSAGE_LIMIT";

/// The limit in force: [`MESSAGE_LIMIT`], or the one [`MESSAGE_LIMIT_VAR`] sets (read once);
/// an error names a value that is not a number from 1 to [`MESSAGE_LIMIT`].
pub fn message_limit() -> Result<usize> {
    static LIMIT: OnceLock<std::result::Result<usize, String>> = OnceLock::new();
    LIMIT
        .get_or_init(|| match std::env::var_os(MESSAGE_LIMIT_VAR) {
            None => Ok(MESSAGE_LIMIT),
            Some(v) => v
                .to_str()
                .and_then(|t| t.trim().parse::<usize>().ok())
                .filter(|n| (1..=MESSAGE_LIMIT).contains(n))
                .ok_or_else(|| {
                    format!(
                        "{MESSAGE_LIMIT_VAR}={}: not a number of elements from 1 to \
                         {MESSAGE_LIMIT}",
                        v.to_string_lossy()
                    )
                }),
        })
        .clone()
        .map_err(SolveError::Processes)
}

/// The elements `from[r * per..(r + 1) * per]` (what is left of them), round `r` of a share
/// cut into rounds of `per`.
pub(crate) fn round_of<T>(from: &[T], r: usize, per: usize) -> &[T] {
    let lo = r.saturating_mul(per).min(from.len());
    &from[lo..lo.saturating_add(per).min(from.len())]
}

/// How a process answers the ids others ask of it ([`Exchange::fetch_rounds`]): their values (`k` each),
/// in the order asked.
pub type Answer<'a> = dyn Fn(&[u64]) -> Result<Vec<f64>> + Sync + 'a;

/// What a process does with each round of values it fetched ([`Exchange::fetch_rounds`]): the
/// round's ids and their values (`k` each).
pub type Received<'a> = dyn FnMut(&[u64], &[f64]) -> Result<()> + 'a;

/// What moves data between the processes of a solve: a few MPI collectives.
pub trait Transport: Send + Sync {
    /// This process's rank.
    fn rank(&self) -> u32;
    /// The number of processes.
    fn ranks(&self) -> u32;
    /// `send[d]` to process `d` (each shorter than 2^31); returns what each process sent to
    /// this one, by rank.
    fn all_to_all(&self, send: &[&[u64]]) -> Result<Vec<Vec<u64>>>;
    /// Every process's `bytes`, by rank.
    fn all_gather(&self, bytes: &[u8]) -> Result<Vec<Vec<u8>>>;
    /// The largest of every process's `x`.
    fn all_max(&self, x: u64) -> Result<u64>;
    /// Ends every process of the job with status `code` (a process that cannot go on must not
    /// leave the others waiting in a collective).
    fn abort(&self, code: i32) -> !;
}

/// The moves between processes the passes make, and how much they moved.
pub struct Exchange<'t> {
    transport: Option<&'t dyn Transport>,
    parts: Parts,
    shape: Shape,
    rank: u32,
    /// Elements a process sends to one other in one round of a collective: the message
    /// limit over the number of processes, so that what one process sends, and receives, in
    /// a call stays within the limit.
    per_process: usize,
    /// Bytes this process sent to others: the forward pass's ids, the backward pass's
    /// requests and answers.
    sent_forward: AtomicU64,
    sent_backward: AtomicU64,
}

impl<'t> Exchange<'t> {
    /// One process: every board is its own, nothing moves.
    pub fn single(shape: Shape) -> Exchange<'static> {
        Exchange {
            transport: None,
            parts: Parts::ONE,
            shape,
            rank: 0,
            per_process: MESSAGE_LIMIT,
            sent_forward: AtomicU64::new(0),
            sent_backward: AtomicU64::new(0),
        }
    }

    /// The processes of `transport`, boards split by `parts` (one part a process); an error
    /// if [`MESSAGE_LIMIT_VAR`] holds no limit.
    pub fn new(transport: &'t dyn Transport, parts: Parts, shape: Shape) -> Result<Exchange<'t>> {
        if parts.count != transport.ranks() {
            return Err(SolveError::Internal(format!(
                "{} parts over {} processes",
                parts.count,
                transport.ranks()
            )));
        }
        let per_process = (message_limit()? / parts.count.max(1) as usize).max(1);
        Ok(Exchange {
            rank: transport.rank(),
            transport: (parts.count > 1).then_some(transport),
            parts,
            shape,
            per_process,
            sent_forward: AtomicU64::new(0),
            sent_backward: AtomicU64::new(0),
        })
    }

    pub fn is_single(&self) -> bool {
        self.transport.is_none()
    }

    pub fn rank(&self) -> u32 {
        self.rank
    }

    pub fn parts(&self) -> Parts {
        self.parts
    }

    /// Whether this process owns board `id`.
    #[inline]
    pub fn mine(&self, id: u64) -> bool {
        self.parts.of(id, self.shape) == self.rank
    }

    /// The canonical id of board `b` under `game`'s symmetry and whether this process owns
    /// it, from one making of `b`'s images: the owner of a board split by its big tiles is a
    /// function of the same images (by [`Exchange::mine`] on the id they would be made again).
    #[inline(always)]
    pub fn canon_and_mine(&self, game: &Game, b: u64) -> (u64, bool) {
        match game.sym.images_of(b) {
            Some(images) => (
                images.min(),
                self.parts.of_images(&images, self.shape) == self.rank,
            ),
            None => {
                let c = game.canon(b);
                (c, self.mine(c))
            }
        }
    }

    /// Bytes sent to other processes so far: (forward, backward).
    pub fn sent(&self) -> (u64, u64) {
        (
            self.sent_forward.load(Ordering::Relaxed),
            self.sent_backward.load(Ordering::Relaxed),
        )
    }

    /// Whether this process leads the solve (process 0; the only one of a single-process
    /// solve): it holds the directory's lock, clears old files and writes the manifests.
    pub fn is_leader(&self) -> bool {
        self.rank == 0
    }

    /// The number of processes of the solve.
    pub fn processes(&self) -> u32 {
        self.parts.count
    }

    /// Waits until every process is here. Collective; returns at once in one process.
    pub fn barrier(&self) -> Result<()> {
        self.agree_max(0).map(drop)
    }

    /// The largest of every process's `x` (`x` itself in one process). Collective.
    pub fn agree_max(&self, x: u64) -> Result<u64> {
        match self.transport {
            None => Ok(x),
            Some(t) => t.all_max(x),
        }
    }

    /// The smallest of every process's `x` (`x` itself in one process). Collective.
    pub fn agree_min(&self, x: u64) -> Result<u64> {
        Ok(u64::MAX - self.agree_max(u64::MAX - x)?)
    }

    /// Whether any process says `yes` (its own `yes` in one process). Collective.
    pub fn agree_any(&self, yes: bool) -> Result<bool> {
        Ok(self.agree_max(u64::from(yes))? == 1)
    }

    /// Whether every process says `yes` (its own `yes` in one process). Collective.
    pub fn agree_all(&self, yes: bool) -> Result<bool> {
        Ok(self.agree_min(u64::from(yes))? == 1)
    }

    /// Every process's `bytes`, by rank, gathered in rounds of at most the per-process
    /// share of the message limit. Collective.
    pub fn gather(&self, bytes: Vec<u8>) -> Result<Vec<Vec<u8>>> {
        let Some(t) = self.transport else {
            return Ok(vec![bytes]);
        };
        let per = self.per_process;
        let rounds = self.agree_max(bytes.len().div_ceil(per) as u64)? as usize;
        let mut got: Vec<Vec<u8>> = vec![Vec::new(); self.parts.count as usize];
        for r in 0..rounds {
            for (g, part) in got.iter_mut().zip(t.all_gather(round_of(&bytes, r, per))?) {
                g.extend_from_slice(&part);
            }
        }
        Ok(got)
    }

    /// Every process's `mine`, by rank: encoded as JSON, gathered and decoded over several
    /// processes, `mine` itself in one (nothing is encoded: no float goes through a parser).
    /// Collective.
    pub fn gather_values<T: Serialize + DeserializeOwned>(&self, mine: T) -> Result<Vec<T>> {
        if self.is_single() {
            return Ok(vec![mine]);
        }
        let bytes = serde_json::to_vec(&mine)
            .map_err(|e| SolveError::Internal(format!("encoding a share for the others: {e}")))?;
        self.gather(bytes)?
            .iter()
            .map(|b| serde_json::from_slice(b))
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| SolveError::Internal(format!("a share from another process: {e}")))
    }

    /// Every process's share of a small layer (`ids` sorted, `values[i * k + v]`), merged in
    /// id order; the share itself in one process. Collective.
    pub fn gather_layer(
        &self,
        ids: Vec<u64>,
        values: Vec<f64>,
        k: usize,
    ) -> Result<(Vec<u64>, Vec<f64>)> {
        if self.is_single() {
            return Ok((ids, values));
        }
        let mut bytes = Vec::with_capacity(ids.len() * 8 * (k + 1));
        for (i, id) in ids.iter().enumerate() {
            bytes.extend_from_slice(&id.to_le_bytes());
            for v in &values[i * k..(i + 1) * k] {
                bytes.extend_from_slice(&v.to_le_bytes());
            }
        }
        let mut all: Vec<(u64, Vec<f64>)> = Vec::new();
        for share in self.gather(bytes)? {
            let words: Vec<[u8; 8]> = share
                .chunks_exact(8)
                .map(|c| c.try_into().unwrap_or([0; 8]))
                .collect();
            for row in words.chunks_exact(k + 1) {
                let values = row[1..].iter().map(|&b| f64::from_le_bytes(b)).collect();
                all.push((u64::from_le_bytes(row[0]), values));
            }
        }
        all.sort_by_key(|r| r.0);
        let ids = all.iter().map(|r| r.0).collect();
        let values = all.into_iter().flat_map(|r| r.1).collect();
        Ok((ids, values))
    }

    /// Ends the job (every process) with `code`; in one process, returns.
    pub fn abort(&self, code: i32) {
        if let Some(t) = self.transport {
            t.abort(code);
        }
    }

    /// `buckets[d]` to process `d`, in rounds of at most the per-process share of the
    /// message limit; what every process sent here, by rank (each in the order it was sent).
    fn all_to_all(&self, buckets: &[Vec<u64>], forward: bool) -> Result<Vec<Vec<u64>>> {
        let t = self
            .transport
            .ok_or_else(|| SolveError::Internal("an exchange within one process".into()))?;
        let n = buckets.len();
        let per = self.per_process;
        let longest = buckets.iter().map(Vec::len).max().unwrap_or(0);
        let rounds = self.agree_max(longest.div_ceil(per) as u64)? as usize;
        let sent: usize = buckets
            .iter()
            .enumerate()
            .filter(|&(d, _)| d as u32 != self.rank)
            .map(|(_, b)| b.len() * 8)
            .sum();
        let counter = if forward {
            &self.sent_forward
        } else {
            &self.sent_backward
        };
        counter.fetch_add(sent as u64, Ordering::Relaxed);
        let mut got: Vec<Vec<u64>> = vec![Vec::new(); n];
        for r in 0..rounds {
            let send: Vec<&[u64]> = buckets.iter().map(|b| round_of(b, r, per)).collect();
            for (g, part) in got.iter_mut().zip(t.all_to_all(&send)?) {
                g.extend_from_slice(&part);
            }
        }
        Ok(got)
    }

    /// `ids` (sorted, distinct) split by owner, each bucket in the order of `ids`; and the
    /// owner of each id.
    fn buckets(&self, ids: &[u64]) -> (Vec<Vec<u64>>, Vec<u32>) {
        let n = self.parts.count as usize;
        let owners: Vec<u32> = ids
            .par_iter()
            .map(|&id| self.parts.of(id, self.shape))
            .collect();
        let mut buckets: Vec<Vec<u64>> = vec![Vec::new(); n];
        for (&id, &o) in ids.iter().zip(&owners) {
            buckets[o as usize].push(id);
        }
        (buckets, owners)
    }

    /// A layer this process made (sorted, distinct; some of it others own) sent to the
    /// owners: the layer of the ids this process owns that any process made, sorted and
    /// distinct. Collective.
    pub fn route(&self, ids: Vec<u64>) -> Result<Vec<u64>> {
        Ok(self.route_in(ids, false)?.0)
    }

    /// [`Exchange::route`], and the ids of `ids` that others own (sorted, distinct; none in
    /// one process): for a layer of afterstates, what the backward pass asks their owners for.
    /// Collective.
    pub fn route_keeping(&self, ids: Vec<u64>) -> Result<(Vec<u64>, Vec<u64>)> {
        self.route_in(ids, true)
    }

    /// [`Exchange::route_keeping`], the ids others own kept only if `keep` asks for them.
    ///
    /// `ids` go out a piece of [`FETCH_ROUND`] ids (or the message limit) at a time, as many
    /// rounds as the process with the most, so that only a round's buckets and messages exist
    /// beside the layer, never a second copy of it: the ids others own are kept by closing up
    /// `ids` behind the round's read, in their order (a sorted layer's filter is sorted).
    /// What a process sends another over the rounds comes in the order of its layer, so
    /// each process's run received is sorted and distinct.
    fn route_in(&self, mut ids: Vec<u64>, keep: bool) -> Result<(Vec<u64>, Vec<u64>)> {
        if self.is_single() {
            return Ok((ids, Vec::new()));
        }
        let round = FETCH_ROUND.min(self.per_process);
        let rounds = self.agree_max(ids.len().div_ceil(round) as u64)? as usize;
        let mut got: Vec<Vec<u64>> = vec![Vec::new(); self.parts.count as usize];
        let mut kept = 0;
        for r in 0..rounds {
            let lo = r.saturating_mul(round).min(ids.len());
            let hi = lo + round_of(&ids, r, round).len();
            let (buckets, owners) = self.buckets(&ids[lo..hi]);
            for (g, part) in got.iter_mut().zip(self.all_to_all(&buckets, true)?) {
                g.extend_from_slice(&part);
            }
            if keep {
                for i in lo..hi {
                    if owners[i - lo] != self.rank {
                        ids[kept] = ids[i];
                        kept += 1;
                    }
                }
            }
        }
        // Not shrunk: a copy of the kept ids would stand beside them at the peak.
        ids.truncate(kept);
        // Each process sent its bucket in the order of its layer: sorted and distinct, so the
        // layer is their merge (checked: a run out of order would be merged wrong).
        if let Some(r) = got.iter().position(|run| !super::layer::is_layer(run)) {
            return Err(SolveError::Internal(format!(
                "process {r} routed ids out of order"
            )));
        }
        Ok((super::layer::merge_layers(got), ids))
    }

    /// The values (`k` each, `[i * k + v]`) of `wanted` (sorted, distinct, none this
    /// process's), from their owners, each of which answers the ids asked of it with
    /// `answer` (their values in the order asked): handed to `each` a round at a time (the
    /// round's ids, a piece of `wanted` in order, and their values) as they come, never
    /// gathered, so that a process merges them into its table without holding the values of
    /// its whole wanted set. Every process goes through as many rounds as the one with the
    /// most to ask. Collective.
    pub fn fetch_rounds(
        &self,
        wanted: &[u64],
        k: usize,
        answer: &Answer<'_>,
        each: &mut Received<'_>,
    ) -> Result<()> {
        if self.is_single() {
            if !wanted.is_empty() {
                return Err(SolveError::Internal(
                    "a value asked of another process in a single-process solve".into(),
                ));
            }
            return Ok(());
        }
        // In rounds of at most `FETCH_ROUND` ids a process, as many as the process with the
        // most asks (the others ask nothing in the rounds past their own).
        let per = FETCH_ROUND.min(self.per_process * self.parts.count as usize);
        let rounds = self.agree_max(wanted.len().div_ceil(per) as u64)? as usize;
        let mut values = Vec::new();
        for r in 0..rounds {
            let ids = round_of(wanted, r, per);
            values.clear();
            self.fetch_round(ids, k, answer, &mut values)?;
            each(ids, &values)?;
        }
        Ok(())
    }

    /// One round of [`Exchange::fetch_rounds`]: the values of `wanted` appended to `out`.
    /// Collective.
    fn fetch_round(
        &self,
        wanted: &[u64],
        k: usize,
        answer: &Answer<'_>,
        out: &mut Vec<f64>,
    ) -> Result<()> {
        let (asked, owners) = self.buckets(wanted);
        let requests = self.all_to_all(&asked, false)?;
        let answers: Vec<Vec<u64>> = requests
            .iter()
            .map(|ids| -> Result<Vec<u64>> {
                let values = answer(ids)?;
                if values.len() != ids.len() * k {
                    return Err(SolveError::Internal(format!(
                        "{} values answered for {} ids × {k}",
                        values.len(),
                        ids.len()
                    )));
                }
                Ok(values.into_iter().map(f64::to_bits).collect())
            })
            .collect::<Result<_>>()?;
        drop(requests);
        drop(asked);
        let got = self.all_to_all(&answers, false)?;
        drop(answers);
        // Back into the order of `wanted`: each bucket's answers in the order it asked.
        let mut at = vec![0usize; got.len()];
        for &o in &owners {
            let o = o as usize;
            let vals = got[o].get(at[o] * k..(at[o] + 1) * k).ok_or_else(|| {
                SolveError::Internal(format!("process {o} answered too few values"))
            })?;
            out.extend(vals.iter().map(|&b| f64::from_bits(b)));
            at[o] += 1;
        }
        Ok(())
    }
}

/// The values (`k` each) of `ids` looked up in a layer (`layer` sorted, `values[i * k + v]`):
/// how a process answers [`Exchange::fetch_rounds`]. An id the layer does not hold is an
/// inconsistency of the forward layers.
///
/// The ids asked come in increasing order (a bucket of a sorted request), so each is sought
/// from the last one's place on, by a galloping search: a walk through the layer, not a
/// binary search of all of it an id. Ids in any other order are found all the same.
pub fn answer_from(
    layer: &[u64],
    values: &[f64],
    k: usize,
    ids: &[u64],
    age: u32,
    board: Shape,
) -> Result<Vec<f64>> {
    let mut out = Vec::with_capacity(ids.len() * k);
    let mut from = 0;
    let mut last = None;
    for &id in ids {
        if last.is_some_and(|l| l >= id) {
            from = 0;
        }
        last = Some(id);
        let r = gallop(layer, from, id);
        if layer.get(r) != Some(&id) {
            return Err(SolveError::Inconsistent {
                board: board.to_string(),
                age,
                step: "look-up from another process",
            });
        }
        out.extend_from_slice(&values[r * k..(r + 1) * k]);
        from = r + 1;
    }
    Ok(out)
}

/// The first place `r >= from` of sorted `layer` with `layer[r] >= id` (`layer.len()` if
/// none): steps of 1, 2, 4, … from `from`, then a binary search within the last step.
fn gallop(layer: &[u64], from: usize, id: u64) -> usize {
    let (mut lo, mut hi, mut step) = (from, from, 1);
    while hi < layer.len() && layer[hi] < id {
        lo = hi + 1;
        hi = from + step;
        step *= 2;
    }
    let hi = hi.min(layer.len());
    lo + layer[lo..hi].partition_point(|&x| x < id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_process_moves_nothing() {
        let ex = Exchange::single(Shape::new(3, 3).unwrap());
        assert!(ex.is_single());
        assert!(ex.mine(12345));
        assert_eq!(ex.route(vec![1, 5, 9]).unwrap(), vec![1, 5, 9]);
        let mut rounds = 0;
        let mut each = |_: &[u64], _: &[f64]| -> Result<()> {
            rounds += 1;
            Ok(())
        };
        ex.fetch_rounds(&[], 2, &|_| Ok(Vec::new()), &mut each)
            .unwrap();
        assert!(ex
            .fetch_rounds(&[3], 1, &|_| Ok(vec![0.0]), &mut each)
            .is_err());
        assert_eq!(rounds, 0);
        assert!(ex.is_leader());
        ex.barrier().unwrap();
        assert_eq!(ex.agree_min(7).unwrap(), 7);
        assert_eq!(ex.agree_max(7).unwrap(), 7);
        assert!(ex.agree_any(true).unwrap() && !ex.agree_all(false).unwrap());
        assert_eq!(ex.gather(vec![1, 2]).unwrap(), vec![vec![1, 2]]);
        assert_eq!(ex.gather_values(vec![0.1f64]).unwrap(), vec![vec![0.1]]);
        assert_eq!(
            ex.gather_layer(vec![3], vec![0.5, 0.25], 2).unwrap(),
            (vec![3], vec![0.5, 0.25])
        );
        assert_eq!(ex.sent(), (0, 0));
    }

    #[test]
    fn rounds_cut_a_share_into_pieces_that_join_to_it() {
        let share: Vec<u64> = (0..1000).collect();
        for per in [1, 7, 500, 999, 1000, 1001, usize::MAX] {
            let rounds = share.len().div_ceil(per);
            let mut joined = Vec::new();
            for r in 0..rounds {
                let piece = round_of(&share, r, per);
                assert!(!piece.is_empty() && piece.len() <= per, "{per}: round {r}");
                joined.extend_from_slice(piece);
            }
            assert_eq!(joined, share, "{per}");
            // Rounds past a share's end (another process had more) send nothing.
            assert!(round_of(&share, rounds, per).is_empty());
            assert!(round_of(&share, rounds + 5, per).is_empty());
        }
        assert!(round_of::<u64>(&[], 0, 3).is_empty());
    }

    #[test]
    fn answers_come_from_the_layer_in_any_order() {
        let ids = vec![1u64, 2, 4, 9, 10];
        let vals = vec![1.0, 1.5, 2.0, 2.5, 4.0, 4.5, 9.0, 9.5, 10.0, 10.5];
        let shape = Shape::new(2, 2).unwrap();
        assert_eq!(
            answer_from(&ids, &vals, 2, &[4, 10], 8, shape).unwrap(),
            vec![4.0, 4.5, 10.0, 10.5]
        );
        assert!(answer_from(&ids, &vals, 2, &[3], 8, shape).is_err());
        // In any order, past either end, and over a long layer (galloping steps).
        assert_eq!(
            answer_from(&ids, &vals, 2, &[10, 1, 9], 8, shape).unwrap(),
            vec![10.0, 10.5, 1.0, 1.5, 9.0, 9.5]
        );
        assert!(answer_from(&ids, &vals, 2, &[11], 8, shape).is_err());
        assert!(answer_from(&ids, &vals, 2, &[0], 8, shape).is_err());
        let long: Vec<u64> = (0..5000).map(|i| i * 3).collect();
        let long_vals: Vec<f64> = long.iter().map(|&i| i as f64).collect();
        let asked: Vec<u64> = (0..5000).step_by(7).map(|i| i * 3).collect();
        let want: Vec<f64> = asked.iter().map(|&i| i as f64).collect();
        assert_eq!(
            answer_from(&long, &long_vals, 1, &asked, 8, shape).unwrap(),
            want
        );
        for id in [0u64, 1, 2999, 14997, 14998, 20000] {
            let r = long.partition_point(|&x| x < id);
            for from in [0, r.saturating_sub(1), r.saturating_sub(100), r] {
                assert_eq!(gallop(&long, from, id), r, "{id} from {from}");
            }
        }
    }
}
