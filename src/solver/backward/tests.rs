//! The backward pass against itself: streamed and whole ages, segments and tables.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock};

use super::*;
use crate::rules::variant::Given;
use crate::rules::{Group, Shape};
use crate::solver::forward::absorbed;
use crate::solver::forward::{self, AgeLayer, Start};
use crate::solver::records::StateFigures;
use crate::solver::records::StateRec;
use crate::solver::records::{state_figures, FigureSums};

/// A writer that keeps every record it is handed, in segments of `segment` states.
struct Recorder {
    k: usize,
    /// The rule the records are to be ranked under.
    order: Option<crate::rules::Order>,
    segment: Option<usize>,
    ids: Vec<u64>,
    recs: Vec<StateRec>,
    pushes: usize,
}

impl AgeWriter for Recorder {
    type Written = (Vec<u64>, Vec<StateRec>, usize);
    fn wants(&self) -> Wants {
        match self.segment {
            None => Wants::Figures,
            Some(usize::MAX) => Wants::Whole,
            Some(n) => Wants::Segments(n),
        }
    }
    fn order(&self) -> Option<crate::rules::Order> {
        self.order
    }
    fn states(&mut self, ids: &[u64], recs: &mut Vec<StateRec>) -> Result<()> {
        let seg = self.segment.expect("records only when asked for");
        assert!(ids.len() <= seg && !ids.is_empty());
        assert!(
            self.ids.len().is_multiple_of(seg),
            "every segment but the last is full"
        );
        self.ids.extend_from_slice(ids);
        if self.pushes % 2 == 1 {
            // Taken: the pass must make its next segment in a vector of its own.
            let mut taken = std::mem::take(recs);
            taken.truncate(ids.len() * self.k);
            self.recs.append(&mut taken);
        } else {
            self.recs.extend_from_slice(&recs[..ids.len() * self.k]);
        }
        self.pushes += 1;
        Ok(())
    }
    fn finish(self, _: &AgeOutput) -> Result<Self::Written> {
        Ok((self.ids, self.recs, self.pushes))
    }
}

/// A record's fields, its floats as bits (a gap may be NaN), to compare records exactly.
fn rec_bits(r: &StateRec) -> (u64, u64, u8, u8, bool) {
    let (value, gap) = (r.value, r.gap);
    (value.to_bits(), gap.to_bits(), r.best, r.moves, r.terminal)
}

type Solved = Vec<(AgeOutput, (Vec<u64>, Vec<StateRec>, usize))>;

/// States and afterstates by age.
type Layered = BTreeMap<u32, (Vec<u64>, Vec<u64>)>;

/// The forward pass's layers by age, its top and bottom ages: a copy of the pass made once a
/// board, group and forward class for the whole test binary, since the tests here solve the
/// same boards several ways and the layers do not depend on how the backward pass runs.
fn forward_layers(game: &Game, variants: &[Variant]) -> (Layered, u32, u32) {
    type Key = (Shape, Group, ForwardClass);
    type Made = Arc<OnceLock<(Layered, u32, u32)>>;
    static MADE: OnceLock<Mutex<HashMap<Key, Made>>> = OnceLock::new();
    let class = variants[0].forward_class();
    // The map is locked only to find the key's cell: another board's pass goes on meanwhile.
    let cell = MADE
        .get_or_init(Default::default)
        .lock()
        .unwrap()
        .entry((game.shape(), game.sym.group(), class))
        .or_default()
        .clone();
    cell.get_or_init(|| {
        let mut layers = BTreeMap::new();
        let top = forward::run(game, &class, Start::Fresh, |l: AgeLayer| {
            layers.insert(l.age, (l.states, l.afterstates));
            Ok(())
        })
        .unwrap();
        let bottom = *layers.keys().next().unwrap();
        (layers, top, bottom)
    })
    .clone()
}

/// Every age of a solve, in memory, its records handed over in segments of `records`
/// states (or not at all), folded in segments of `segment` otherwise.
fn solve(game: &Game, variants: &[Variant], records: Option<usize>, segment: usize) -> Solved {
    solve_with(
        game,
        variants,
        records,
        segment,
        super::super::table::PERFECT_FROM,
    )
}

/// [`solve`] with the pass's tables perfect hashes from `perfect_from` ids on.
fn solve_with(
    game: &Game,
    variants: &[Variant],
    records: Option<usize>,
    segment: usize,
    perfect_from: usize,
) -> Solved {
    solve_ranked(game, variants, records, segment, perfect_from, None)
}

/// The boards and variants that [`perfect_tables_give_the_records_of_open_ones`] and
/// [`the_pass_ranks_the_optimal_moves_as_the_rules_moves_do`] both check.
const SHARED: [((usize, usize), &[&str]); 3] = [
    ((3, 3), &["goal-128"]),
    ((2, 4), &["expectation", "optimistic", "pessimistic"]),
    ((4, 4), &["goal-8"]),
];

/// The game and variants of a case.
fn case(shape: (usize, usize), names: &[&str]) -> (Game, Vec<Variant>) {
    let game = Game::new(Shape::new(shape.0, shape.1).unwrap(), Group::Full);
    let variants = names
        .iter()
        .map(|n| Variant::parse(n, Given::default()).unwrap())
        .collect();
    (game, variants)
}

/// The solve of [`SHARED`]'s case `i` with open tables, its records handed over whole and
/// ranked under no rule: made once for the tests that compare other solves with it.
fn shared_open(i: usize) -> &'static Solved {
    static SOLVED: [std::sync::OnceLock<Solved>; SHARED.len()] =
        [const { std::sync::OnceLock::new() }; SHARED.len()];
    SOLVED[i].get_or_init(|| {
        let (game, variants) = case(SHARED[i].0, SHARED[i].1);
        solve_with(&game, &variants, Some(usize::MAX), SEGMENT, usize::MAX)
    })
}

/// [`solve_with`], the records ranked under `order`.
fn solve_ranked(
    game: &Game,
    variants: &[Variant],
    records: Option<usize>,
    segment: usize,
    perfect_from: usize,
    order: Option<crate::rules::Order>,
) -> Solved {
    let (mut layers, top, bottom) = forward_layers(game, variants);
    let mut pass = Backward::new(game, variants).unwrap();
    pass.segment = segment;
    pass.perfect_from = perfect_from;
    let mut out = Vec::new();
    pass.run(
        top,
        bottom,
        None,
        |_, _, _, _| {
            Ok(Recorder {
                k: variants.len(),
                order,
                segment: records,
                ids: Vec::new(),
                recs: Vec::new(),
                pushes: 0,
            })
        },
        |age| {
            let (s, a) = layers.remove(&age).unwrap_or_default();
            Ok(Layers::Whole(s, a))
        },
        |o, written| {
            out.push((o, written));
            Ok(())
        },
    )
    .unwrap();
    out
}

/// A writer that keeps what a streamed age hands over: its state values and afterstate
/// figures.
#[derive(Default)]
struct Kept {
    values: Vec<f64>,
    fig: Option<AfterFigures>,
}

impl AgeWriter for Kept {
    type Written = (Vec<f64>, Option<AfterFigures>);
    fn wants(&self) -> Wants {
        Wants::Figures
    }
    fn afterstate_figures(&mut self, fig: &AfterFigures) -> Result<()> {
        self.fig = Some(fig.clone());
        Ok(())
    }
    fn state_values(&mut self, values: &[f64]) -> Result<()> {
        self.values.extend_from_slice(values);
        Ok(())
    }
    fn states(&mut self, _: &[u64], _: &mut Vec<StateRec>) -> Result<()> {
        Ok(())
    }
    fn finish(self, _: &AgeOutput) -> Result<Self::Written> {
        Ok((self.values, self.fig))
    }
}

/// Per age: the state values (bits) and figures of a pass holding `holding`, every age
/// whole or every age streamed from its encoded layer file (which keeps the afterstates at
/// every other age, so both the read and the made-again afterstates are valued).
fn values_of(
    game: &Game,
    variants: &[Variant],
    holding: Holding,
    streamed: bool,
) -> Vec<(u32, Vec<u64>, Vec<StateFigures>)> {
    let (mut layers, top, bottom) = forward_layers(game, variants);
    let mut pass = Backward::new(game, variants).unwrap().with_holding(holding);
    pass.segment = 7;
    pass.perfect_from = 64;
    let mut out = Vec::new();
    pass.run(
        top,
        bottom,
        None,
        |_, _, _, _| Ok(Kept::default()),
        |age| {
            let (s, a) = layers.remove(&age).unwrap_or_default();
            if !streamed || s.is_empty() {
                return Ok(Layers::Whole(s, a));
            }
            let kept: &[u64] = if age % 4 == 0 { &a } else { &[] };
            let bytes = crate::store::idcodec::encode(age, &s, kept);
            Ok(Layers::Streamed {
                file: crate::store::idcodec::LayerFile::open(bytes, age).unwrap(),
                afterstates: a.len(),
            })
        },
        |o, (values, _)| {
            let values = if o.summary.values.is_empty() {
                values
            } else {
                o.summary.values.clone()
            };
            out.push((
                o.age,
                values.iter().map(|v| v.to_bits()).collect(),
                o.summary.figures.iter().map(FigureSums::figures).collect(),
            ));
            Ok(())
        },
    )
    .unwrap();
    out
}

/// An age valued a chunk at a time (ids from its work file, afterstates read or made
/// again within a cap that packs them, tables built as the values come) gets the bits of
/// the same age valued whole, with f64 tables and with fixed-point ones; and fixed point
/// at 2^-31 is within a few units of it of the f64 values.
#[test]
fn streamed_ages_are_valued_as_whole_ones() {
    for (shape, variant) in [((2, 4), "expectation"), ((3, 3), "goal-32")] {
        let (game, variants) = case(shape, &[variant]);
        let fixed = Coding::Fixed32 {
            fraction_bits: if variants[0].scored() { 16 } else { 31 },
        };
        let held = |coding, cap| Holding { coding, cap };
        // Whole and streamed under each coding, then fixed point streamed with no cap. The
        // cap bounds only the afterstates a streamed age makes again, so the whole f64
        // run is also the exact one the rounded values are held to.
        let runs = [
            (held(Coding::F64, 50), false),
            (held(Coding::F64, 50), true),
            (held(fixed, 50), false),
            (held(fixed, 50), true),
            (held(fixed, usize::MAX), true),
        ];
        // The runs at once: segments of seven states keep each mostly on one thread.
        let out: Vec<_> = std::thread::scope(|scope| {
            let runs: Vec<_> = runs
                .iter()
                .map(|(holding, streamed)| {
                    scope.spawn(|| values_of(&game, &variants, holding.clone(), *streamed))
                })
                .collect();
            runs.into_iter().map(|r| r.join().unwrap()).collect()
        });
        for (whole, streamed, coding) in [(0, 1, Coding::F64), (2, 3, fixed)] {
            let (whole, streamed) = (&out[whole], &out[streamed]);
            assert_eq!(whole.len(), streamed.len());
            for (w, s) in whole.iter().zip(streamed) {
                assert_eq!(w, s, "{variant}, {coding:?}, age {}", w.0);
            }
        }
        let (exact, rounded) = (&out[0], &out[4]);
        assert_eq!(exact.len(), rounded.len());
        let tolerance = if variants[0].scored() { 1e-2 } else { 1e-7 };
        for (e, r) in exact.iter().zip(rounded) {
            for (&a, &b) in e.1.iter().zip(&r.1) {
                let (a, b) = (f64::from_bits(a), f64::from_bits(b));
                assert!((a - b).abs() <= tolerance, "age {}: {a} against {b}", e.0);
            }
        }
    }
}

/// A state holding the goal tile (a start holding a 4, under `goal-4`) is recorded whole
/// as absorbed: its value 1, terminal, no move, whatever record its place in a buffer kept
/// from an earlier segment or age held. Regression: only the value was written, so such a
/// start kept the moves and best move of the state valued there before it, and 4x4
/// `goal-4 --layout compact` counted 30 terminal states at age 6 where there are 33.
#[test]
fn absorbed_states_are_recorded_whole_in_reused_buffers() {
    let game = Game::new(Shape::new(4, 4).unwrap(), Group::Full);
    let variants = [Variant::parse("goal-4", Given::default()).unwrap()];
    let class = variants[0].forward_class();
    let absorbed_rec = StateRec {
        value: 1.0,
        ..StateRec::default()
    };
    let mut seen = 0;
    for (records, segment) in [(Some(5), SEGMENT), (None, 7), (None, SEGMENT)] {
        for (out, (ids, recs, _)) in solve(&game, &variants, records, segment) {
            // Terminal: the goal tile on the board, or no valid move.
            let terminal = out
                .states
                .iter()
                .filter(|&&s| {
                    absorbed(&class, s) || game.rules.moves(s).iter().all(Option::is_none)
                })
                .count() as u64;
            assert_eq!(
                out.summary.figures[0].figures().n_terminal_states,
                terminal,
                "age {}",
                out.age
            );
            for (&s, r) in ids.iter().zip(&recs) {
                if absorbed(&class, s) {
                    assert_eq!(
                        rec_bits(r),
                        rec_bits(&absorbed_rec),
                        "age {} state {s:x}",
                        out.age
                    );
                    seen += 1;
                }
            }
        }
    }
    assert!(seen > 0, "no start holds a 4");
}

/// The look-ups in perfect tables (whose parts are found from each stream's last: a spawn
/// on a cell, a move in a direction) give every state's record the open tables give, bit
/// for bit, over boards and variants of both tiles, one tile, and several at once.
#[test]
fn perfect_tables_give_the_records_of_open_ones() {
    let own = [((2, 3), &["goal-8-p4=0"][..])];
    for (i, &(shape, names)) in SHARED.iter().chain(&own).enumerate() {
        let (game, variants) = case(shape, names);
        let solved;
        let open = match SHARED.get(i) {
            Some(_) => shared_open(i),
            None => {
                solved = solve_with(&game, &variants, Some(usize::MAX), SEGMENT, usize::MAX);
                &solved
            }
        };
        let perfect = solve_with(&game, &variants, Some(usize::MAX), SEGMENT, 0);
        assert_eq!(open.len(), perfect.len());
        for ((o, (_, o_recs, _)), (p, (_, p_recs, _))) in open.iter().zip(&perfect) {
            let bits = |r: &[StateRec]| r.iter().map(rec_bits).collect::<Vec<_>>();
            assert_eq!(o.age, p.age);
            assert_eq!(bits(o_recs), bits(p_recs), "{shape:?} age {}", o.age);
        }
    }
}

#[test]
fn summaries_in_segments_are_the_records_figures_and_values() {
    for names in [
        &["expectation", "optimistic", "pessimistic"][..],
        &["goal-64"],
    ] {
        let (game, variants) = case((2, 3), names);
        check_summaries(&game, &variants);
    }
}

/// The records handed to the writer in segments are every state's, in row order; the
/// figures and values folded from them (in segments of any length, records wanted or not)
/// are those of [`state_figures`] over all of them at once.
fn check_summaries(game: &Game, variants: &[Variant]) {
    let k = variants.len();
    let full = solve(game, variants, Some(1 << 20), SEGMENT);
    let cases = [
        (None, 1),
        (None, 7),
        (None, 64),
        (Some(5), SEGMENT),
        (Some(usize::MAX), 3),
    ];
    for (records, segment) in cases {
        let summed = solve(game, variants, records, segment);
        assert_eq!(full.len(), summed.len());
        let mut segmented = 0;
        for ((f, (ids, recs, _)), (s, (s_ids, s_recs, pushes))) in full.iter().zip(&summed) {
            assert_eq!(
                (f.age, &f.states, &f.afterstates),
                (s.age, &s.states, &s.afterstates)
            );
            assert_eq!(
                ids, &f.states,
                "age {}: every state's records, in order",
                f.age
            );
            match records {
                Some(n) => {
                    // Compared bit for bit (a gap may be NaN).
                    let keys = |r: &[StateRec]| r.iter().map(rec_bits).collect::<Vec<_>>();
                    assert_eq!((s_ids, keys(s_recs)), (ids, keys(recs)));
                    assert_eq!(*pushes, s.states.len().div_ceil(n));
                }
                None => assert!(s_recs.is_empty() && *pushes == 0),
            }
            let bits = |x: f64| x.to_bits();
            let want: Vec<u64> = recs.iter().map(|r| bits(r.value)).collect();
            assert_eq!(
                s.summary
                    .values
                    .iter()
                    .copied()
                    .map(bits)
                    .collect::<Vec<_>>(),
                want
            );
            if records == Some(usize::MAX) {
                assert!(
                    s.summary.figures.is_empty(),
                    "the writer sums a whole age's"
                );
                continue;
            }
            for (vi, v) in variants.iter().enumerate() {
                let want = state_figures(recs, f.states.len(), k, vi, v).figures();
                let got = s.summary.figures[vi].figures();
                let b = |x: Option<f64>| x.map(f64::to_bits);
                assert_eq!(got.n_terminal_states, want.n_terminal_states);
                for (g, w) in [
                    (got.mean_state_value, want.mean_state_value),
                    (got.mean_action_gap, want.mean_action_gap),
                    (got.frac_gap_lt_1, want.frac_gap_lt_1),
                ] {
                    assert_eq!(b(g), b(w), "age {} variant {}", s.age, v.name());
                }
            }
            segmented += usize::from(s.states.len() > segment.min(records.unwrap_or(usize::MAX)));
        }
        if records != Some(usize::MAX) {
            assert!(segmented > 0, "no age of more than {segment} states");
        }
    }
}

/// The rank the pass finds from the moves it makes to value a state is the one the writer
/// computed from the rules' moves again ([`first_rank`]), for every state of every age and
/// every variant (each its own optimal moves), whole or in segments; the other fields are
/// those of a pass asked for no rank, which ranks nothing.
#[test]
fn the_pass_ranks_the_optimal_moves_as_the_rules_moves_do() {
    use crate::rules::order::first_rank;
    use crate::rules::Order;
    // States whose optimal move is not the rule's first, over every shape (none on 4x4 to
    // goal-8, whose optimal moves the rule finds first or ties).
    let mut later = 0u64;
    for (i, &(shape, names)) in SHARED.iter().enumerate() {
        let (game, variants) = case(shape, names);
        let shape = game.shape();
        let k = variants.len();
        // The open tables' solve, its records whole: a pass asked for no rank.
        let plain = shared_open(i);
        for records in [usize::MAX, 5] {
            let order = Some(Order::POLICY);
            let ranked = solve_ranked(&game, &variants, Some(records), SEGMENT, usize::MAX, order);
            assert_eq!(plain.len(), ranked.len());
            for ((o, (_, p_recs, _)), (r, (ids, r_recs, _))) in plain.iter().zip(&ranked) {
                assert_eq!(o.age, r.age);
                assert_eq!(ids, &r.states);
                assert_eq!(r_recs.len(), ids.len() * k);
                for (i, &id) in ids.iter().enumerate() {
                    let moves = game.rules.moves(id);
                    for v in 0..k {
                        let (p, x) = (p_recs[i * k + v], r_recs[i * k + v]);
                        assert_eq!(rec_bits(&p), rec_bits(&x));
                        assert_eq!((p.optimal, p.rank), (x.optimal, 0));
                        let want = if x.moves >= 2 {
                            first_rank(Order::POLICY, &moves, shape, x.optimal)
                        } else {
                            0
                        };
                        assert_eq!(x.rank, want, "{shape} age {} {id:#x} variant {v}", r.age);
                        later += u64::from(x.rank > 0);
                    }
                }
            }
        }
    }
    // Not every optimal move is the rule's first: the test can tell ranks apart.
    assert!(later > 0, "every rank 0");
}

/// Records of `n` states of `k` variants, seeded: values, gaps (NaN under two moves), moves
/// and terminal flags drawn as a pass could make them.
fn random_records(seed: u64, n: usize, k: usize) -> Vec<StateRec> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..n * k)
        .map(|_| {
            let moves = (next() % 5) as u8;
            StateRec {
                value: (next() % 1_000_000) as f64 / 997.0 - 3.0,
                gap: if moves >= 2 {
                    (next() % 4000) as f64 / 1000.0
                } else {
                    f64::NAN
                },
                moves,
                terminal: moves == 0,
                ..StateRec::default()
            }
        })
        .collect()
}

/// Folded on all threads (segments above [`values::FOLD`] states), the figures are the bits
/// of one serial sum and the values the records' own, in order, whatever the segment's
/// length and the values already folded.
#[test]
fn records_folded_in_parallel_are_the_serial_figures_and_values() {
    use super::values::{fold_records, FOLD};
    use crate::rules::Kind;
    let all = [
        Variant::new(Kind::Expectation, 0.1),
        Variant::new(Kind::Goal(6), 0.1),
    ];
    for (seed, n) in [0, 1, FOLD - 1, FOLD, FOLD + 1, 3 * FOLD + 17]
        .into_iter()
        .enumerate()
    {
        for variants in [&all[..1], &all[..]] {
            let k = variants.len();
            let recs = random_records(seed as u64 + 1, n, k);
            let before = random_records(seed as u64 + 100, 5, k);
            let mut sums: Vec<FigureSums> = variants.iter().map(FigureSums::new).collect();
            let mut values = Vec::new();
            fold_records(&before, variants, &mut sums, &mut values);
            fold_records(&recs, variants, &mut sums, &mut values);
            let both: Vec<StateRec> = before.iter().chain(&recs).copied().collect();
            let want: Vec<f64> = both.iter().map(|r| r.value).collect();
            assert_eq!(values, want, "{n} states × {k}");
            for (vi, (sum, v)) in sums.iter().zip(variants).enumerate() {
                let serial = state_figures(&both, n + 5, k, vi, v);
                assert_eq!(sum.figures(), serial.figures(), "{n} states × {k}");
                assert_eq!(sum.to_words(), serial.to_words(), "{n} states × {k}");
            }
        }
    }
}
