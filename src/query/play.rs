//! Playing games against the solution: games on real (unreduced) boards, started from the
//! two-spawn distribution and continued with the variant's spawn rule, the moves chosen by a
//! policy that reads the tablebase (or by a random or greedy baseline). A Monte Carlo check
//! of the whole solve: the mean score of optimal play estimates the exact value at the starts.
//!
//! * Spawns follow the variant: `expectation` and `goal-T` place a 2 or a 4 (probability
//!   `p4`) in a uniformly random empty cell; `optimistic`/`pessimistic` draw the tile the same
//!   way, then take the cell whose state value (under the variant) is largest/smallest;
//!   `guaranteed-T` takes the worst cell and tile of positive probability, and the worst start.
//!   Ties are broken by the game's random numbers.
//! * A goal variant's game ends when the goal tile appears (a success) or no move is left.
//!   For a discounted goal a game is worth γ^(moves played to make the goal), 0 if it is not
//!   made: the mean over games estimates the exact value.
//! * Determinism: game `i` draws from its own generator seeded from `(seed, i)` (xoshiro256**
//!   seeded by SplitMix64, written out here so the streams never change with a dependency),
//!   and games are summed with integers (a discounted goal's games as a count of games per
//!   number of moves to the goal, summed in that order), so a seed gives the same results
//!   whatever the number of threads.
//!
//! [`Session`] is the same game one move at a time, for a person at the terminal: it keeps
//! the score and the regret of each move (best q − chosen q).

use std::collections::BTreeMap;

use rayon::prelude::*;

use super::{Evaluation, QueryError, Result, Tablebase};
use crate::rules::board::{self, MAX_EXP};
use crate::rules::{format_board, Dir, Kind};

/// SplitMix64's output function: a bijection of `u64` that scrambles its bits.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// xoshiro256** (Blackman & Vigna), seeded by SplitMix64.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// A generator whose four words are the SplitMix64 sequence started at `seed`.
    pub fn new(seed: u64) -> Rng {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(GOLDEN);
            mix(x)
        };
        Rng {
            s: [next(), next(), next(), next()],
        }
    }

    /// The generator of game `game` of a run seeded with `seed` (distinct games of one seed
    /// start from distinct states: `mix` is a bijection).
    pub fn for_game(seed: u64, game: u64) -> Rng {
        Rng::new(mix(mix(seed) ^ game))
    }

    pub fn next_u64(&mut self) -> u64 {
        let r = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        r
    }

    /// Uniform in `[0, 1)` with 53 random bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `0..n` (`n > 0`), by Lemire's multiply-and-reject.
    pub fn below(&mut self, n: usize) -> usize {
        let n = n as u64;
        let threshold = n.wrapping_neg() % n;
        loop {
            let m = u128::from(self.next_u64()) * u128::from(n);
            if (m as u64) >= threshold {
                return (m >> 64) as usize;
            }
        }
    }
}

/// How moves are chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// The best move of the tablebase (the first of equal ones in the order L, R, U, D).
    Optimal,
    /// A uniformly random valid move.
    Random,
    /// The valid move with the largest immediate reward (ties at random).
    Greedy,
}

impl Policy {
    pub fn name(self) -> &'static str {
        match self {
            Policy::Optimal => "optimal",
            Policy::Random => "random",
            Policy::Greedy => "greedy",
        }
    }
}

/// One move of a game, as `--watch` shows it.
#[derive(Clone, Debug)]
pub struct Turn {
    /// The board before the move.
    pub board: u64,
    /// Its q-values, value and best move.
    pub eval: Evaluation,
    pub dir: Dir,
    pub reward: u32,
    /// The board after the move, before the spawn.
    pub after: u64,
    /// The board after the spawn.
    pub next: u64,
}

/// The outcome of one game.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GameRecord {
    /// Sum of the rewards (merged tiles).
    pub score: u64,
    /// Moves played.
    pub moves: u64,
    /// Largest tile exponent at the end.
    pub max_exp: u8,
    /// The goal tile appeared (goal and guaranteed variants).
    pub reached_goal: bool,
}

/// Plays games of one solved board and variant with one policy.
pub struct Player<'a> {
    tb: &'a Tablebase,
    policy: Policy,
    starts: Vec<(u64, f64)>,
}

impl<'a> Player<'a> {
    pub fn new(tb: &'a Tablebase, policy: Policy) -> Player<'a> {
        Player {
            tb,
            policy,
            starts: tb.game().starts(tb.variant().p4),
        }
    }

    pub fn tablebase(&self) -> &Tablebase {
        self.tb
    }

    /// The q-values of a board (its text is formatted only for an error).
    pub fn probe(&self, code: u64) -> Result<Evaluation> {
        self.tb.evaluate(code, "").map_err(|e| self.shown(e, code))
    }

    /// `e` with the board shown, if it is about an unreachable board (formatted only then).
    fn shown(&self, e: QueryError, code: u64) -> QueryError {
        match e {
            QueryError::Unreachable {
                board,
                variant,
                age,
                ..
            } => QueryError::Unreachable {
                text: format_board(code, self.tb.game().shape()),
                board,
                variant,
                age,
            },
            e => e,
        }
    }

    /// True when the game is over because the goal tile is on the board.
    pub fn at_goal(&self, code: u64) -> bool {
        // The goal tile, or a restricted solve's requirement.
        self.tb.variant().forward_class().absorbs(code)
    }

    /// The candidate among `items` with the largest (`max`) or smallest state value, ties
    /// broken at random.
    fn extreme(&self, items: &[u64], max: bool, rng: &mut Rng) -> Result<u64> {
        if !self.tb.has_values() {
            return Err(self
                .tb
                .lacks_values("spawns that pick their cell by its value (this variant's)"));
        }
        let mut best: Vec<u64> = Vec::new();
        let mut best_v = 0.0;
        for &b in items {
            let v = self.probe(b)?.value;
            let better = best.is_empty() || if max { v > best_v } else { v < best_v };
            if better {
                best.clear();
                best_v = v;
            }
            if better || v == best_v {
                best.push(b);
            }
        }
        Ok(match best.len() {
            0 => 0,
            1 => best[0],
            n => best[rng.below(n)],
        })
    }

    /// A starting board: drawn from the two-spawn distribution (the worst start for
    /// `guaranteed-T`, whose spawner is an adversary).
    pub fn start(&self, rng: &mut Rng) -> Result<u64> {
        if matches!(self.tb.variant().kind, Kind::Guaranteed(_)) {
            let boards: Vec<u64> = self.starts.iter().map(|s| s.0).collect();
            return self.extreme(&boards, false, rng);
        }
        let u = rng.unit();
        let mut acc = 0.0;
        for &(b, p) in &self.starts {
            acc += p;
            if u < acc {
                return Ok(b);
            }
        }
        // Rounding left `acc` a hair below 1: the last start takes the remainder.
        Ok(self.starts.last().map_or(0, |s| s.0))
    }

    /// The board after a spawn on the afterstate `after`, by the variant's rule.
    pub fn spawn(&self, after: u64, rng: &mut Rng) -> Result<u64> {
        let v = self.tb.variant();
        let cells = self.tb.game().cells();
        let empty: Vec<usize> = (0..cells).filter(|&i| board::cell(after, i) == 0).collect();
        if empty.is_empty() {
            return Ok(after);
        }
        let draw_tile = |rng: &mut Rng| if rng.unit() < v.p4 { 2u8 } else { 1u8 };
        match v.kind {
            Kind::Expectation | Kind::Goal(_) => {
                let e = draw_tile(rng);
                let i = empty[rng.below(empty.len())];
                Ok(board::place(after, i, e))
            }
            Kind::Optimistic | Kind::Pessimistic => {
                let e = draw_tile(rng);
                let boards: Vec<u64> = empty.iter().map(|&i| board::place(after, i, e)).collect();
                self.extreme(&boards, v.kind == Kind::Optimistic, rng)
            }
            Kind::Guaranteed(_) => {
                let mut boards = Vec::with_capacity(2 * empty.len());
                for (e, p) in [(1u8, v.p2()), (2u8, v.p4)] {
                    if p > 0.0 {
                        boards.extend(empty.iter().map(|&i| board::place(after, i, e)));
                    }
                }
                self.extreme(&boards, false, rng)
            }
        }
    }

    /// The move the policy plays on `code` (`None`: no valid move), and the board's q-values
    /// when they were looked up (always for the optimal policy, or when `eval` is asked).
    pub fn choose(
        &self,
        code: u64,
        rng: &mut Rng,
        eval: bool,
    ) -> Result<(Option<Dir>, Option<Evaluation>)> {
        let probe = eval || (self.policy == Policy::Optimal && self.tb.has_values());
        let ev = if probe { Some(self.probe(code)?) } else { None };
        let moves = self.tb.moves(code);
        let valid: Vec<usize> = (0..4).filter(|&i| moves[i].is_some()).collect();
        let dir = match self.policy {
            Policy::Optimal if ev.is_some() => ev.as_ref().and_then(|e| e.best),
            // The policy layout: the stored move alone.
            Policy::Optimal => self
                .tb
                .best_move(code, "")
                .map_err(|e| self.shown(e, code))?,
            _ if valid.is_empty() => None,
            Policy::Random => Some(Dir::ALL[valid[rng.below(valid.len())]]),
            Policy::Greedy => {
                let reward = |i: usize| moves[i].map_or(0, |m| m.1);
                let top = valid.iter().map(|&i| reward(i)).max().unwrap_or(0);
                let ties: Vec<usize> = valid.into_iter().filter(|&i| reward(i) == top).collect();
                Some(Dir::ALL[ties[rng.below(ties.len())]])
            }
        };
        Ok((dir, ev))
    }

    /// Plays one game with `rng`; `watch` sees every move (with the board's q-values).
    pub fn play(
        &self,
        rng: &mut Rng,
        mut watch: Option<&mut dyn FnMut(&Turn)>,
    ) -> Result<GameRecord> {
        let mut b = self.start(rng)?;
        let mut rec = GameRecord {
            score: 0,
            moves: 0,
            max_exp: 0,
            reached_goal: false,
        };
        loop {
            if self.at_goal(b) {
                rec.reached_goal = true;
                break;
            }
            let (dir, ev) = self.choose(b, rng, watch.is_some())?;
            let Some(dir) = dir else { break };
            let Some((after, reward)) = self.tb.moves(b)[dir as usize] else {
                // The policy only plays valid moves; an optimal move that changes nothing
                // would be an index that disagrees with the rules.
                return Err(QueryError::Unreachable {
                    text: format_board(b, self.tb.game().shape()),
                    board: self.tb.game().shape().to_string(),
                    variant: self.tb.variant().name(),
                    age: board::age(b),
                });
            };
            rec.score += u64::from(reward);
            rec.moves += 1;
            let next = self.spawn(after, rng)?;
            if let (Some(w), Some(eval)) = (watch.as_mut(), ev) {
                w(&Turn {
                    board: b,
                    eval,
                    dir,
                    reward,
                    after,
                    next,
                });
            }
            b = next;
        }
        rec.max_exp = board::max_exp(b);
        Ok(rec)
    }
}

/// A mean with its standard error.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    pub mean: f64,
    /// Standard error of the mean: sample standard deviation / √n (0 for one game).
    pub se: f64,
}

impl Estimate {
    /// From the sums `Σx` and `Σx²` of `n` numbers.
    fn from_float_sums(n: u64, sum: f64, sum_sq: f64) -> Estimate {
        if n == 0 {
            return Estimate { mean: 0.0, se: 0.0 };
        }
        let nf = n as f64;
        let mean = sum / nf;
        if n < 2 {
            return Estimate { mean, se: 0.0 };
        }
        let centred = (sum_sq - sum * mean).max(0.0);
        Estimate {
            mean,
            se: (centred / (nf - 1.0) / nf).sqrt(),
        }
    }

    /// From the exact sums `Σx` and `Σx²` of `n` integers.
    fn from_sums(n: u64, sum: u128, sum_sq: u128) -> Estimate {
        if n == 0 {
            return Estimate { mean: 0.0, se: 0.0 };
        }
        let nf = n as f64;
        let mean = sum as f64 / nf;
        if n < 2 {
            return Estimate { mean, se: 0.0 };
        }
        // Σ(x − mean)² = Σx² − (Σx)²/n, computed exactly in integers where it fits.
        let n128 = u128::from(n);
        let centred = sum_sq
            .checked_mul(n128)
            .and_then(|a| a.checked_sub(sum * sum))
            .map(|a| a as f64 / nf)
            .unwrap_or_else(|| (sum_sq as f64 - (sum as f64) * mean).max(0.0));
        Estimate {
            mean,
            se: (centred / (nf - 1.0) / nf).sqrt(),
        }
    }
}

/// Exact integer sums over games (order-free, so the same for any number of threads).
#[derive(Clone, Debug, Default, PartialEq)]
struct Totals {
    games: u64,
    score: u128,
    score_sq: u128,
    moves: u128,
    moves_sq: u128,
    goals: u64,
    /// Games ending with largest exponent `e`.
    by_max_exp: [u64; MAX_EXP as usize + 1],
    /// Games that made the goal, by the number of moves it took.
    goal_moves: BTreeMap<u64, u64>,
}

impl Totals {
    fn add(&mut self, r: &GameRecord) {
        self.games += 1;
        let (s, m) = (u128::from(r.score), u128::from(r.moves));
        self.score += s;
        self.score_sq += s * s;
        self.moves += m;
        self.moves_sq += m * m;
        self.goals += u64::from(r.reached_goal);
        self.by_max_exp[usize::from(r.max_exp.min(MAX_EXP))] += 1;
        if r.reached_goal {
            *self.goal_moves.entry(r.moves).or_default() += 1;
        }
    }

    fn merge(mut self, b: Totals) -> Totals {
        self.games += b.games;
        self.score += b.score;
        self.score_sq += b.score_sq;
        self.moves += b.moves;
        self.moves_sq += b.moves_sq;
        self.goals += b.goals;
        for (x, y) in self.by_max_exp.iter_mut().zip(b.by_max_exp) {
            *x += y;
        }
        for (m, c) in b.goal_moves {
            *self.goal_moves.entry(m).or_default() += c;
        }
        self
    }
}

/// The result of many games.
#[derive(Clone, Debug, PartialEq)]
pub struct PlaySummary {
    pub board: String,
    pub variant: String,
    pub policy: Policy,
    pub seed: u64,
    pub games: u64,
    /// Final score (sum of merged tiles).
    pub score: Estimate,
    /// Moves per game.
    pub moves: Estimate,
    /// Share of games that made the goal tile (goal and guaranteed variants).
    pub success: Option<Estimate>,
    /// Mean of γ^(moves to make the goal), 0 for a game that does not make it (discounted
    /// goal variants).
    pub discounted: Option<Estimate>,
    /// The exact value over the initial distribution (`value_initial` of the manifest): the
    /// expected score, for a goal variant the probability of making the goal, for a
    /// discounted goal the expected γ^(moves to make it).
    pub exact: Option<f64>,
    /// `(tile, share of games whose largest tile is at least it)`, from the smallest tile
    /// every game reached to the largest any game reached.
    pub reach: Vec<(u32, Estimate)>,
}

impl PlaySummary {
    /// The estimate the exact value is compared with: the discounted mean for a discounted
    /// goal, the success rate for a goal variant, the mean score otherwise.
    pub fn estimate(&self) -> Estimate {
        self.discounted.or(self.success).unwrap_or(self.score)
    }

    /// (estimate − exact) / standard error, when both are known and the error is positive.
    pub fn z(&self) -> Option<f64> {
        let e = self.estimate();
        let exact = self.exact?;
        (e.se > 0.0).then(|| (e.mean - exact) / e.se)
    }
}

/// Games played between two calls of the progress callback.
const BLOCK: u64 = 1024;

/// Plays `games` games (game `i` with [`Rng::for_game`]`(seed, i)`) on the global thread
/// pool; `progress` receives the number of games finished since its last call.
pub fn play_many(
    tb: &Tablebase,
    policy: Policy,
    games: u64,
    seed: u64,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<PlaySummary> {
    let player = Player::new(tb, policy);
    let blocks = games.div_ceil(BLOCK);
    let totals = (0..blocks)
        .into_par_iter()
        .map(|k| {
            let mut t = Totals::default();
            let end = ((k + 1) * BLOCK).min(games);
            for i in k * BLOCK..end {
                let mut rng = Rng::for_game(seed, i);
                t.add(&player.play(&mut rng, None)?);
            }
            progress(end - k * BLOCK);
            Ok::<Totals, QueryError>(t)
        })
        .try_reduce(Totals::default, |a, b| Ok(a.merge(b)))?;
    Ok(summarise(tb, policy, seed, &totals))
}

fn summarise(tb: &Tablebase, policy: Policy, seed: u64, t: &Totals) -> PlaySummary {
    let variant = tb.variant();
    let n = t.games;
    let success = variant.goal().map(|_| {
        let g = u128::from(t.goals);
        Estimate::from_sums(n, g, g)
    });
    let discounted = variant.discounted().then(|| {
        // In increasing number of moves: the same sum whatever the threads.
        let (mut sum, mut sum_sq) = (0.0, 0.0);
        for (&m, &c) in &t.goal_moves {
            let x = variant.discount.powi(i32::try_from(m).unwrap_or(i32::MAX));
            sum += c as f64 * x;
            sum_sq += c as f64 * x * x;
        }
        Estimate::from_float_sums(n, sum, sum_sq)
    });
    // Share of games reaching each tile: games whose largest exponent is ≥ e.
    let mut reach = Vec::new();
    let mut at_least = n;
    for e in 1..=MAX_EXP as usize {
        at_least -= t.by_max_exp[e - 1];
        if at_least == 0 {
            break;
        }
        if at_least == n && t.by_max_exp[e] == 0 {
            // Every game went past this tile: only the last such tile is shown.
            continue;
        }
        let k = u128::from(at_least);
        reach.push((1u32 << e, Estimate::from_sums(n, k, k)));
    }
    PlaySummary {
        board: tb.game().shape().to_string(),
        variant: variant.name(),
        policy,
        seed,
        games: n,
        score: Estimate::from_sums(n, t.score, t.score_sq),
        moves: Estimate::from_sums(n, t.moves, t.moves_sq),
        success,
        discounted,
        exact: tb.manifest().value_initial,
        reach,
    }
}

/// What a move of a [`Session`] did.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// The move changes nothing: not played.
    Invalid(Dir),
    /// The move was played.
    Moved {
        dir: Dir,
        reward: u32,
        /// q of the chosen move, and of the best move.
        q_chosen: f64,
        q_best: f64,
        /// `q_best − q_chosen` (never negative).
        regret: f64,
        best: Option<Dir>,
        /// The q-values of the board the move was played on.
        eval: Evaluation,
    },
}

/// One game played a move at a time by a person, with the regret of each move.
pub struct Session<'a> {
    player: Player<'a>,
    seed: u64,
    rng: Rng,
    pub board: u64,
    pub score: u64,
    pub moves: u64,
    pub optimal_moves: u64,
    pub total_regret: f64,
}

/// A move counts as optimal when its regret is at most this share of the best q (q-values
/// of equal moves agree to rounding).
pub const OPTIMAL_TOLERANCE: f64 = 1e-9;

/// True if a move whose q is `q` is optimal beside the best q `best`.
pub fn is_optimal(q: f64, best: f64) -> bool {
    best - q <= OPTIMAL_TOLERANCE * best.abs().max(1.0)
}

impl<'a> Session<'a> {
    /// A new game of `tb`, its random numbers from `seed`.
    pub fn new(tb: &'a Tablebase, seed: u64) -> Result<Session<'a>> {
        let player = Player::new(tb, Policy::Optimal);
        let mut rng = Rng::for_game(seed, 0);
        let board = player.start(&mut rng)?;
        Ok(Session {
            player,
            seed,
            rng,
            board,
            score: 0,
            moves: 0,
            optimal_moves: 0,
            total_regret: 0.0,
        })
    }

    pub fn tablebase(&self) -> &Tablebase {
        self.player.tablebase()
    }

    /// The seed the game's random numbers come from.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The q-values of the current board.
    pub fn evaluation(&self) -> Result<Evaluation> {
        self.player.probe(self.board)
    }

    /// The goal tile is on the board (goal variants).
    pub fn won(&self) -> bool {
        self.player.at_goal(self.board)
    }

    /// No move can be played: no valid move, or the goal is made.
    pub fn over(&self) -> bool {
        self.won() || self.tablebase().moves(self.board) == [None; 4]
    }

    /// Plays `dir` without asking for values (the policy layout has none): its reward, or
    /// `None` if it cannot be played; then a tile spawns by the variant's rule. Counted in
    /// `score` and `moves`, not in `optimal_moves` or `total_regret`, which need q-values.
    pub fn step(&mut self, dir: Dir) -> Result<Option<u32>> {
        if self.over() {
            return Ok(None);
        }
        let Some((after, reward)) = self.tablebase().moves(self.board)[dir as usize] else {
            return Ok(None);
        };
        self.board = self.player.spawn(after, &mut self.rng)?;
        self.score += u64::from(reward);
        self.moves += 1;
        Ok(Some(reward))
    }

    /// Plays `dir` if it is valid (then a tile spawns by the variant's rule).
    pub fn play(&mut self, dir: Dir) -> Result<Outcome> {
        if self.over() {
            return Ok(Outcome::Invalid(dir));
        }
        let Some((after, reward)) = self.tablebase().moves(self.board)[dir as usize] else {
            return Ok(Outcome::Invalid(dir));
        };
        let eval = self.evaluation()?;
        let q_chosen = eval.q[dir as usize].unwrap_or(0.0);
        let q_best = eval.value;
        let regret = (q_best - q_chosen).max(0.0);
        self.board = self.player.spawn(after, &mut self.rng)?;
        self.score += u64::from(reward);
        self.moves += 1;
        self.total_regret += regret;
        self.optimal_moves += u64::from(is_optimal(q_chosen, q_best));
        Ok(Outcome::Moved {
            dir,
            reward,
            q_chosen,
            q_best,
            regret,
            best: eval.best,
            eval,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rng_is_fixed_and_uniform_enough() {
        // The stream is part of the output: a seed must give the same games forever.
        let mut r = Rng::new(0);
        let first: Vec<u64> = (0..3).map(|_| r.next_u64()).collect();
        let mut again = Rng::new(0);
        assert_eq!(first, (0..3).map(|_| again.next_u64()).collect::<Vec<_>>());
        assert_ne!(
            Rng::for_game(1, 0).next_u64(),
            Rng::for_game(1, 1).next_u64()
        );
        let mut counts = [0u32; 6];
        let mut r = Rng::new(7);
        for _ in 0..60_000 {
            counts[r.below(6)] += 1;
        }
        for c in counts {
            assert!((9_500..10_500).contains(&c), "{counts:?}");
        }
        let mean: f64 = (0..100_000).map(|_| r.unit()).sum::<f64>() / 100_000.0;
        assert!((mean - 0.5).abs() < 0.005);
    }

    #[test]
    fn estimates_from_integer_sums() {
        // 1, 2, 3, 4: mean 2.5, sample variance 5/3, se = sqrt(5/3 / 4).
        let e = Estimate::from_sums(4, 10, 30);
        assert_eq!(e.mean, 2.5);
        assert!((e.se - (5.0f64 / 3.0 / 4.0).sqrt()).abs() < 1e-15);
        assert_eq!(Estimate::from_sums(1, 7, 49).se, 0.0);
        assert!(is_optimal(5.0, 5.0) && !is_optimal(4.9, 5.0));
        let f = Estimate::from_float_sums(4, 10.0, 30.0);
        assert_eq!(f.mean, e.mean);
        assert!((f.se - e.se).abs() < 1e-15);
    }

    #[test]
    fn totals_count_games_by_moves_to_the_goal_whatever_the_split() {
        let game = |moves, reached_goal| GameRecord {
            score: 0,
            moves,
            max_exp: 3,
            reached_goal,
        };
        let games = [game(5, true), game(7, false), game(5, true), game(9, true)];
        let mut one = Totals::default();
        games.iter().for_each(|g| one.add(g));
        let (mut a, mut b) = (Totals::default(), Totals::default());
        games[..1].iter().for_each(|g| a.add(g));
        games[1..].iter().for_each(|g| b.add(g));
        assert_eq!(b.merge(a), one);
        assert_eq!(
            one.goal_moves.into_iter().collect::<Vec<_>>(),
            [(5, 2), (9, 1)]
        );
    }
}
