//! Independent brute-force oracle for the age2048 solver.
//!
//! The oracle (`brute/oracle.rs`) shares no code with the solver: it is written from the
//! rules alone, works on raw (unreduced) boards, enumerates the reachable boards by a forward
//! search, values them by a memoised recursion and counts symmetry orbits with its own
//! permutation code. These tests check the oracle itself (move rule, published 2x2 numbers,
//! internal consistency) and then the solver, only through its command-line binary and its
//! manifest files: per-age counts, manifest values, and q-values board by board via
//! `age2048 best --format csv`, for the expectation game and the other variants.

#[path = "brute/oracle.rs"]
mod oracle;

use oracle::*;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use crate::common::{
    best_rows, cached, manifest, manifests_of, run_ok, BestRow as Row, Boards, Cell,
};

/// Relative tolerance for values and q-values (with a tiny absolute floor for zeros).
const TOL: f64 = 1e-9;
/// Boards of 2x4 fed to `best` (of ~20 million reachable ones), in the `full` group.
const SAMPLE_2X4: usize = 60_000;
/// Shown discrepancies per check.
const SHOW: usize = 8;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= TOL * a.abs().max(b.abs()) + 1e-12
}

// ------------------------------------------------------------------------------------------
// Caches shared by the tests of this subject (they run on parallel threads).

/// The oracle solved for one shape and variant, computed once per test run.
fn oracle_for(shape: Shape, v: Variant) -> Arc<Mutex<Solved>> {
    type Memo = Mutex<HashMap<String, Cell<Arc<Mutex<Solved>>>>>;
    static MAP: OnceLock<Memo> = OnceLock::new();
    let key = format!("{} {} {}", shape.name(), v.base_name(), v.p4);
    cached(&MAP, key, || Arc::new(Mutex::new(Solved::new(shape, v))))
        .get()
        .unwrap()
        .clone()
}

/// A solver output directory: this subject's own, or the solve several subjects read.
enum Dir {
    Own(tempfile::TempDir),
    Shared(&'static Path),
}

impl Dir {
    fn path(&self) -> &Path {
        match self {
            Dir::Own(d) => d.path(),
            Dir::Shared(p) => p,
        }
    }
}

/// A solver output directory, solved once per test run; `Err` holds the solver's failure.
/// 2x4 `expectation` under the default symmetries is the solve of
/// [`crate::common::shared_solves`] (the same command, beside `goal-128`).
fn solved_dir(
    shape: Shape,
    group: Group,
    variants: &[String],
    p4: Option<f64>,
) -> Result<Arc<Dir>, String> {
    type Dirs = Mutex<HashMap<String, Cell<Result<Arc<Dir>, String>>>>;
    static MAP: OnceLock<Dirs> = OnceLock::new();
    let key = format!(
        "{} {} {} {:?}",
        shape.name(),
        group.name(),
        variants.join(","),
        p4
    );
    cached(&MAP, key, || {
        if shape.name() == "2x4"
            && group == Group::Full
            && variants == ["expectation"]
            && p4.is_none()
        {
            return Ok(Arc::new(Dir::Shared(crate::common::shared_solves_of(
                "2x4",
            ))));
        }
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let mut args: Vec<String> = vec![
            "solve".into(),
            "--board".into(),
            shape.name(),
            "--data".into(),
            dir.path().display().to_string(),
            "--symmetry".into(),
            group.name().into(),
            "--variant".into(),
            variants.join(","),
        ];
        if let Some(p4) = p4 {
            args.push("--p4".into());
            args.push(p4.to_string());
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run_ok(&args, None).map(|_| Arc::new(Dir::Own(dir)))
    })
    .get()
    .unwrap()
    .clone()
}

/// Variant names with a manifest in `dir` for `shape`.
fn manifest_variants(dir: &Path, shape: Shape) -> Vec<String> {
    manifests_of(dir, &shape.name())
        .into_iter()
        .map(|m| m.variant)
        .collect()
}

fn json_u64(m: &serde_json::Value, key: &str) -> u64 {
    m[key]
        .as_u64()
        .unwrap_or_else(|| panic!("manifest field {key:?} is not an integer: {}", m[key]))
}

fn json_f64(m: &serde_json::Value, key: &str) -> f64 {
    m[key]
        .as_f64()
        .unwrap_or_else(|| panic!("manifest field {key:?} is not a number: {}", m[key]))
}

/// Board texts, alternating `0` and `.` for empty cells.
fn texts(shape: Shape, boards: &[Board]) -> Vec<String> {
    boards
        .iter()
        .enumerate()
        .map(|(i, &b)| board_text(shape, b, if i % 2 == 0 { "0" } else { "." }))
        .collect()
}

fn fmt_q(q: &[Option<f64>; 4]) -> String {
    let f = |x: &Option<f64>| x.map_or("-".to_string(), |v| format!("{v}"));
    format!(
        "L {} R {} U {} D {}",
        f(&q[0]),
        f(&q[1]),
        f(&q[2]),
        f(&q[3])
    )
}

/// Collected discrepancies of one test, reported together at its end.
#[derive(Default)]
struct Failures(Vec<String>);

impl Failures {
    fn push(&mut self, s: impl Into<String>) {
        self.0.push(s.into());
    }
    fn check(self, what: &str) {
        if !self.0.is_empty() {
            panic!(
                "{what}: {} discrepancies:\n  {}",
                self.0.len(),
                self.0.join("\n  ")
            );
        }
    }
}

/// Compares `best` output for `boards` (reachable under the oracle's variant) with the oracle,
/// returning the solver's rows for further checks.
fn check_boards(
    what: &str,
    dir: &Path,
    solved: &Solved,
    variant: &str,
    boards: &[Board],
    fails: &mut Failures,
) -> Option<Vec<Row>> {
    let shape = solved.shape();
    let texts = texts(shape, boards);
    let rows = match best_rows(dir, &shape.name(), Some(variant), &[], Boards::File(&texts)) {
        Ok(rows) => rows,
        Err(e) => {
            fails.push(format!("{what}: {e}"));
            return None;
        }
    };
    let mut bad = 0usize;
    let mut first = Vec::new();
    for ((&b, text), row) in boards.iter().zip(&texts).zip(&rows) {
        let mut why = Vec::new();
        if &row.board != text {
            why.push(format!("board column {:?}", row.board));
        }
        let value = solved.reached_value(b);
        if !close(row.value, value) {
            why.push(format!("value {} vs oracle {value}", row.value));
        }
        // A board holding the goal tile has value 1 and is not expanded: only its value counts.
        if !solved.oracle.at_goal(b) {
            let q = solved.qs(b);
            for m in 0..4 {
                match (row.q[m], q[m]) {
                    (None, None) => {}
                    (Some(x), Some(y)) if close(x, y) => {}
                    (x, y) => why.push(format!("{} q {x:?} vs oracle {y:?}", MOVES[m])),
                }
            }
            let any = q.iter().any(Option::is_some);
            if !any && (row.value != 0.0 || !row.best.is_empty()) {
                why.push("terminal board needs value 0 and empty best".into());
            }
            match MOVES.iter().position(|m| row.best == m.to_string()) {
                Some(m) => match q[m] {
                    Some(qm) if close(qm, value) => {}
                    _ => why.push(format!("best {} is not optimal for the oracle", row.best)),
                },
                None if !any && row.best.is_empty() => {}
                None => why.push(format!("best {:?}", row.best)),
            }
            if !why.is_empty() {
                why.push(format!("solver {} / oracle {}", fmt_q(&row.q), fmt_q(&q)));
            }
        }
        if !why.is_empty() {
            bad += 1;
            if first.len() < SHOW {
                first.push(format!("{text:?}: {}", why.join("; ")));
            }
        }
    }
    if bad > 0 {
        fails.push(format!(
            "{what}: {bad} of {} boards differ from the oracle, first:\n    {}",
            boards.len(),
            first.join("\n    ")
        ));
    }
    Some(rows)
}

/// Compares the manifest's totals and per-age counts with the oracle's orbit counts.
fn check_counts(
    m: &serde_json::Value,
    solved: &Solved,
    group: Group,
    with_terminal: bool,
    what: &str,
    fails: &mut Failures,
) {
    let counts = age_counts(solved.shape(), group, &solved.reach);
    let total = totals(&counts);
    let keys = ["n_states", "n_afterstates", "n_terminal_states"];
    let k_max = if with_terminal { 3 } else { 2 };
    for k in 0..k_max {
        match m[keys[k]].as_u64() {
            Some(x) if x == total[k] => {}
            x => fails.push(format!("{what}: {} {x:?}, oracle {}", keys[k], total[k])),
        }
    }
    if m["symmetry"].as_str() != Some(group.name()) {
        fails.push(format!(
            "{what}: symmetry {}, expected {:?}",
            m["symmetry"],
            group.name()
        ));
    }
    let Some(ages) = m["ages"].as_array() else {
        fails.push(format!("{what}: no ages array"));
        return;
    };
    let mut got: BTreeMap<u64, [u64; 3]> = BTreeMap::new();
    for a in ages {
        let c = [
            json_u64(a, keys[0]),
            json_u64(a, keys[1]),
            json_u64(a, keys[2]),
        ];
        if c != [0, 0, 0] {
            got.insert(json_u64(a, "age"), c);
        }
    }
    let ages: Vec<u64> = counts.keys().chain(got.keys()).copied().collect();
    let mut bad = Vec::new();
    for age in ages.into_iter().collect::<std::collections::BTreeSet<_>>() {
        let o = counts.get(&age).copied().unwrap_or_default();
        let s = got.get(&age).copied().unwrap_or_default();
        if o[..k_max] != s[..k_max] {
            bad.push(format!(
                "age {age}: solver {:?} oracle {:?}",
                &s[..k_max],
                &o[..k_max]
            ));
        }
    }
    if !bad.is_empty() {
        let n = bad.len();
        bad.truncate(SHOW);
        fails.push(format!(
            "{what}: {n} ages differ (states, afterstates, terminal):\n    {}",
            bad.join("\n    ")
        ));
    }
    let max_age = solved.max_age();
    if m["max_age"].as_u64() != Some(max_age) {
        fails.push(format!(
            "{what}: max_age {}, oracle {max_age}",
            m["max_age"]
        ));
    }
}

/// Compares the manifest's `value_two_2_tiles`, `value_initial` and
/// `value_initial_distinct` with the oracle's. With `p4 = 1` two 2-tiles are unreachable, so
/// a missing or null value is accepted there.
fn check_manifest_values(
    m: &serde_json::Value,
    solved: &mut Solved,
    what: &str,
    fails: &mut Failures,
) {
    let v2 = solved.value_two_2_tiles();
    let vi = solved.value_initial();
    let vd = solved.value_initial_distinct();
    let optional2 = solved.oracle.variant.p4 >= 1.0;
    for (key, want, optional) in [
        ("value_two_2_tiles", v2, optional2),
        ("value_initial", vi, false),
        ("value_initial_distinct", vd, false),
    ] {
        match m[key].as_f64() {
            Some(x) if close(x, want) => {}
            None if optional => {}
            x => fails.push(format!("{what}: {key} {x:?}, oracle {want}")),
        }
    }
}

// ------------------------------------------------------------------------------------------
// 1. The oracle's own move rule.

fn row_after(text: &str, dir: char) -> Option<(String, u64)> {
    let cols = text.split_whitespace().count();
    let shape = Shape::new(1, cols);
    let rules = Rules::new(shape);
    rules
        .apply_letter(parse_board(shape, text), dir)
        .map(|(b, r)| (board_text(shape, b, "_"), r))
}

#[test]
fn oracle_move_rule() {
    let some = |s: &str, r: u64| Some((s.to_string(), r));
    // The three cases of the rules, moving right, and their mirrors moving left.
    assert_eq!(row_after("2 2 2 .", 'R'), some("_ _ 2 4", 4));
    assert_eq!(row_after("2 2 2 2", 'R'), some("_ _ 4 4", 8));
    assert_eq!(row_after("4 2 2 .", 'R'), some("_ _ 4 4", 4));
    assert_eq!(row_after(". 2 2 2", 'L'), some("4 2 _ _", 4));
    assert_eq!(row_after("2 2 2 2", 'L'), some("4 4 _ _", 8));
    assert_eq!(row_after(". 2 2 4", 'L'), some("4 4 _ _", 4));
    // Pairing from the side moved toward: 2 2 2 moving left pairs the left two.
    assert_eq!(row_after("2 2 2 .", 'L'), some("4 2 _ _", 4));
    // A merged tile does not merge again; rewards add up.
    assert_eq!(row_after("2 2 4 .", 'L'), some("4 4 _ _", 4));
    assert_eq!(row_after("4 4 8 8", 'L'), some("8 16 _ _", 24));
    assert_eq!(row_after("8 8 4 4", 'R'), some("_ _ 16 8", 24));
    assert_eq!(row_after("2 . . 2", 'L'), some("4 _ _ _", 4));
    assert_eq!(row_after("2 4 . 2", 'L'), some("2 4 2 _", 0));
    assert_eq!(row_after("2 . 4", 'R'), some("_ 2 4", 0));
    assert_eq!(row_after("2 4 8 16", 'R'), None);
    // Invalid moves: nothing changes.
    assert_eq!(row_after("2 4 8 16", 'L'), None);
    assert_eq!(row_after("2 4 . .", 'L'), None);
    assert_eq!(row_after(". . 2 4", 'R'), None);
    assert_eq!(row_after("2 4 2 4", 'L'), None);
    // A 1-row board cannot move up or down.
    assert_eq!(row_after("2 2 . .", 'U'), None);
    assert_eq!(row_after("2 2 . .", 'D'), None);

    // Columns: U moves toward row 0, D toward the last row.
    let col = Shape::new(4, 1);
    let rules = Rules::new(col);
    let b = parse_board(col, "2/2/2/.");
    assert_eq!(
        rules
            .apply_letter(b, 'U')
            .map(|(a, r)| (board_text(col, a, "."), r)),
        Some(("4/2/./.".into(), 4))
    );
    assert_eq!(
        rules
            .apply_letter(b, 'D')
            .map(|(a, r)| (board_text(col, a, "."), r)),
        Some(("././2/4".into(), 4))
    );
    assert_eq!(rules.apply_letter(b, 'L'), None);
    assert_eq!(
        rules
            .apply_letter(parse_board(col, "4/2/2/."), 'D')
            .map(|(a, r)| (board_text(col, a, "."), r)),
        Some(("././4/4".into(), 4))
    );
    assert_eq!(rules.apply_letter(parse_board(col, "./2/4/8"), 'D'), None);

    // Whole boards, each line independently.
    let s = Shape::new(3, 3);
    let rules = Rules::new(s);
    let b = parse_board(s, "2 2 4/0 4 4/8 0 8");
    let mv = |d| {
        rules
            .apply_letter(b, d)
            .map(|(a, r)| (board_text(s, a, "0"), r))
    };
    assert_eq!(mv('L'), Some(("4 4 0/8 0 0/16 0 0".into(), 4 + 8 + 16)));
    assert_eq!(mv('R'), Some(("0 4 4/0 0 8/0 0 16".into(), 28)));
    assert_eq!(mv('U'), Some(("2 2 8/8 4 8/0 0 0".into(), 8)));
    assert_eq!(mv('D'), Some(("0 0 0/2 2 8/8 4 8".into(), 8)));
    let s = Shape::new(2, 3);
    let rules = Rules::new(s);
    assert_eq!(rules.apply_letter(parse_board(s, "2 4 8/4 8 2"), 'U'), None);
    assert!(rules.is_terminal(parse_board(s, "2 4 8/4 8 2")));
    assert!(!rules.is_terminal(parse_board(s, "2 4 8/4 8 8")));

    // Text round trip; cell (r, c) is row r from the top, column c from the left.
    let s = Shape::new(2, 4);
    let b = parse_board(s, "2 . 4 8/. 16 . 2");
    assert_eq!(board_text(s, b, "0"), "2 0 4 8/0 16 0 2");
    assert_eq!(cell(b, s.idx(1, 1)), 4);
    assert_eq!(cell(b, s.idx(0, 3)), 3);
    assert_eq!(age(s, b), 2 + 4 + 8 + 16 + 2);

    // The tabulated board move agrees with the line rule on every 1x4 line.
    let s = Shape::new(1, 4);
    let rules = Rules::new(s);
    for key in 0..1u64 << 16 {
        if (0..4).any(|i| cell(key, i) == 15) {
            continue;
        }
        let line: Vec<u8> = (0..4).map(|i| cell(key, i)).collect();
        let (new, reward) = slide_line(&line);
        let want: Board = new
            .iter()
            .enumerate()
            .map(|(i, &e)| (e as u64) << (4 * i))
            .sum();
        let got = rules.apply(key, 0);
        assert_eq!(
            got,
            if want == key {
                None
            } else {
                Some((want, reward))
            },
            "line {line:?}"
        );
        let rev: Board = (0..4).map(|i| (cell(key, 3 - i) as u64) << (4 * i)).sum();
        let got_r = rules.apply(rev, 1).map(|(b, r)| {
            (
                (0..4)
                    .map(|i| (cell(b, 3 - i) as u64) << (4 * i))
                    .sum::<u64>(),
                r,
            )
        });
        assert_eq!(got_r, got, "mirrored line {line:?}");
    }
}

// ------------------------------------------------------------------------------------------
// The oracle's published numbers and internal consistency.

#[test]
fn oracle_published_2x2_and_self_consistency() {
    let s22 = Shape::new(2, 2);
    let arc = oracle_for(s22, Variant::new(Kind::Expectation));
    let mut o = arc.lock().unwrap();
    assert_eq!(totals(&age_counts(s22, Group::Flips, &o.reach))[0], 176);
    assert_eq!(totals(&age_counts(s22, Group::Full, &o.reach))[0], 110);
    let v2 = o.value_two_2_tiles();
    assert_eq!(format!("{v2:.3}"), "67.696", "{v2}");
    drop(o);

    for shape in [Shape::new(2, 2), Shape::new(2, 3), Shape::new(3, 2)] {
        for variant in [
            Variant::new(Kind::Expectation),
            Variant::new(Kind::Goal(4)),
            Variant::with_p4(Kind::Pessimistic, 0.0),
        ] {
            let solved = Solved::new(shape, variant);
            // Two independent forward searches agree, and the plain recursion from the initial
            // states alone (no deepest-first warm-up) reaches the same boards, same values.
            let fwd = solved.oracle.reach().sorted();
            let layered = Reach {
                states: solved.reach.states.clone(),
                afters: solved.reach.afters.clone(),
                terminals: solved.reach.terminals.clone(),
            }
            .sorted();
            assert_eq!(fwd.states, layered.states);
            assert_eq!(fwd.afters, layered.afters);
            assert_eq!(fwd.terminals, layered.terminals);
            let mut plain = Oracle::new(shape, variant);
            std::thread::scope(|sc| {
                std::thread::Builder::new()
                    .stack_size(1 << 28)
                    .spawn_scoped(sc, || {
                        for (b, _) in initial_states(shape, &variant) {
                            plain.value(b);
                        }
                    })
                    .unwrap();
            });
            assert_eq!(plain.state_v.len(), fwd.states.len());
            assert_eq!(plain.after_v.len(), fwd.afters.len());
            for &s in &fwd.states {
                assert_eq!(plain.state_v[&s], solved.reached_value(s));
            }
            // Orbit counts: hashing canonical forms agrees with counting least elements, and
            // with Burnside's lemma; values are invariant under the symmetries.
            for group in Group::ALL {
                let perms = group_perms(shape, group);
                for &b in &fwd.states {
                    for p in &perms {
                        assert!(
                            solved.oracle.state_v.get(&permute(b, p)).is_some(),
                            "not closed"
                        );
                        assert!(close(
                            solved.reached_value(permute(b, p)),
                            solved.reached_value(b)
                        ));
                    }
                }
                let a = age_counts(shape, group, &fwd);
                assert_eq!(a, age_counts_hashed(shape, group, &fwd));
                let fixed: usize = perms
                    .iter()
                    .map(|p| fwd.states.iter().filter(|&&b| permute(b, p) == b).count())
                    .sum();
                assert_eq!(fixed % perms.len(), 0);
                assert_eq!((fixed / perms.len()) as u64, totals(&a)[0]);
            }
        }
    }
    // The full group has 8 elements on squares, 4 on rectangles; flips 4; none 1.
    assert_eq!(group_perms(Shape::new(3, 3), Group::Full).len(), 8);
    assert_eq!(group_perms(Shape::new(2, 3), Group::Full).len(), 4);
    assert_eq!(group_perms(Shape::new(3, 3), Group::Flips).len(), 4);
    assert_eq!(group_perms(Shape::new(3, 3), Group::None).len(), 1);

    // 2x3 and 3x2 are transposes: same counts and same values.
    let a = oracle_for(Shape::new(2, 3), Variant::new(Kind::Expectation));
    let b = oracle_for(Shape::new(3, 2), Variant::new(Kind::Expectation));
    let (mut a, mut b) = (a.lock().unwrap(), b.lock().unwrap());
    assert_eq!(
        totals(&age_counts(a.shape(), Group::Full, &a.reach)),
        totals(&age_counts(b.shape(), Group::Full, &b.reach))
    );
    assert!(close(a.value_initial(), b.value_initial()));
    assert!(close(a.value_two_2_tiles(), b.value_two_2_tiles()));
}

#[test]
fn oracle_variant_properties() {
    for shape in [Shape::new(2, 2), Shape::new(2, 3)] {
        let exp = oracle_for(shape, Variant::new(Kind::Expectation));
        let exp = exp.lock().unwrap();
        let opt = Solved::new(shape, Variant::new(Kind::Optimistic));
        let pes = Solved::new(shape, Variant::new(Kind::Pessimistic));
        for &s in &exp.reach.states {
            let (o, e, p) = (
                opt.reached_value(s),
                exp.reached_value(s),
                pes.reached_value(s),
            );
            assert!(
                o >= e - 1e-9 * o.abs() && e >= p - 1e-9 * e.abs(),
                "{s:#x}: {o} {e} {p}"
            );
        }
        let max_t = exp
            .reach
            .states
            .iter()
            .map(|&b| max_exp(shape, b))
            .max()
            .unwrap();
        let mut goals: Vec<Solved> = (2..=max_t)
            .map(|t| Solved::new(shape, Variant::new(Kind::Goal(t))))
            .collect();
        for t in 2..=max_t {
            let g = &goals[(t - 2) as usize];
            let gu = Solved::new(shape, Variant::new(Kind::Guaranteed(t)));
            assert_eq!(g.reach.states.len(), gu.reach.states.len());
            for &s in &g.reach.states {
                let v = g.reached_value(s);
                assert!((0.0..=1.0 + 1e-12).contains(&v));
                let w = gu.reached_value(s);
                assert!(w == 0.0 || w == 1.0);
                assert!(w == 0.0 || close(v, 1.0), "guaranteed but goal {v}");
                if t < max_t {
                    let next = &goals[(t - 1) as usize];
                    assert!(next.reached_value(s) <= v + 1e-12);
                }
            }
        }
        // p4 = 1 is the p4 = 0 game with every tile doubled: same counts, twice the rewards.
        let mut only2 = Solved::new(shape, Variant::with_p4(Kind::Expectation, 0.0));
        let mut only4 = Solved::new(shape, Variant::with_p4(Kind::Expectation, 1.0));
        assert_eq!(
            totals(&age_counts(shape, Group::None, &only2.reach)),
            totals(&age_counts(shape, Group::None, &only4.reach))
        );
        assert!(close(2.0 * only2.value_initial(), only4.value_initial()));
        // The largest reachable tile is made with positive probability from two 2-tiles.
        assert!(goals.last_mut().unwrap().value_two_2_tiles() > 0.0);
    }
}

// ------------------------------------------------------------------------------------------
// 2-4. The expectation game against the solver, per shape and symmetry group.

fn expectation_vs_solver(shape: Shape, sample: Option<usize>) {
    let arc = oracle_for(shape, Variant::new(Kind::Expectation));
    let mut fails = Failures::default();
    // The small boards check every group on every state. The sampled (large) ones check the
    // solver's default, `full`: on a rectangle `flips` is the same four symmetries (one match
    // arm in `rules::symmetry`), and `none` is the identity, a path that takes no account of
    // the shape, already held to the oracle on every state of 2x2, 2x3 and 3x2.
    let groups = Group::ALL
        .into_iter()
        .filter(|&g| sample.is_none() || g == Group::Full);
    for group in groups {
        let what = format!("{} {}", shape.name(), group.name());
        let dir = match solved_dir(shape, group, &["expectation".into()], None) {
            Ok(d) => d,
            Err(e) => {
                fails.push(format!("{what}: {e}"));
                continue;
            }
        };
        let m = manifest(dir.path(), &shape.name(), "expectation");
        let mut solved = arc.lock().unwrap();
        check_counts(&m, &solved, group, true, &what, &mut fails);
        check_manifest_values(&m, &mut solved, &what, &mut fails);
        let boards: Vec<Board> = match sample {
            None => solved.reach.states.clone(),
            Some(n) => {
                // A seeded sample, plus every initial state.
                let mut rng = rand::rngs::StdRng::seed_from_u64(2048 + group as u64);
                let mut b: Vec<Board> = solved
                    .reach
                    .states
                    .choose_multiple(&mut rng, n)
                    .copied()
                    .collect();
                b.extend(
                    initial_states(shape, &solved.oracle.variant)
                        .iter()
                        .map(|x| x.0),
                );
                b
            }
        };
        check_boards(
            &what,
            dir.path(),
            &solved,
            "expectation",
            &boards,
            &mut fails,
        );
    }
    fails.check(&format!("{} expectation vs solver", shape.name()));
}

#[test]
fn solver_2x2_expectation() {
    // The published numbers, through the solver's manifest.
    let s = Shape::new(2, 2);
    for (group, n) in [(Group::Flips, 176), (Group::Full, 110)] {
        let dir = solved_dir(s, group, &["expectation".into()], None).expect("solve");
        let m = manifest(dir.path(), &s.name(), "expectation");
        assert_eq!(json_u64(&m, "n_states"), n, "2x2 {} states", group.name());
        assert_eq!(
            format!("{:.3}", json_f64(&m, "value_two_2_tiles")),
            "67.696"
        );
    }
    expectation_vs_solver(s, None);

    // Boards given as arguments and on standard input give the same rows as a file.
    let dir = solved_dir(s, Group::Full, &["expectation".into()], None).expect("solve");
    let arc = oracle_for(s, Variant::new(Kind::Expectation));
    let mut boards: Vec<Board> = arc.lock().unwrap().reach.states.clone();
    boards.sort_unstable();
    let t = texts(s, &boards[..boards.len().min(7)]);
    let file = best_rows(
        dir.path(),
        &s.name(),
        Some("expectation"),
        &[],
        Boards::File(&t),
    )
    .expect("best --input FILE");
    let refs: Vec<&str> = t.iter().map(String::as_str).collect();
    let (board, exp) = (s.name(), Some("expectation"));
    let args = best_rows(dir.path(), &board, exp, &[], Boards::Args(&refs)).expect("best BOARD...");
    let stdin = best_rows(
        dir.path(),
        &board,
        exp,
        &[],
        Boards::Stdin(&(t.join("\n") + "\n")),
    )
    .expect("best --input -");
    for ((a, b), c) in file.iter().zip(&args).zip(&stdin) {
        assert_eq!(format!("{a:?}"), format!("{b:?}"), "boards as arguments");
        assert_eq!(
            format!("{a:?}"),
            format!("{c:?}"),
            "boards on standard input"
        );
    }
}

#[test]
fn solver_2x3_expectation() {
    expectation_vs_solver(Shape::new(2, 3), None);
}

#[test]
fn solver_3x2_expectation() {
    expectation_vs_solver(Shape::new(3, 2), None);
}

#[test]
fn solver_2x4_expectation() {
    expectation_vs_solver(Shape::new(2, 4), Some(SAMPLE_2X4));
}

// ------------------------------------------------------------------------------------------
// The oracle's own numbers, printed (`cargo test --test integration oracle_report -- --ignored
// --nocapture`); 2x4 takes tens of seconds.

#[test]
#[ignore]
fn oracle_report() {
    for shape in [
        Shape::new(2, 2),
        Shape::new(2, 3),
        Shape::new(3, 2),
        Shape::new(2, 4),
    ] {
        let arc = oracle_for(shape, Variant::new(Kind::Expectation));
        let mut s = arc.lock().unwrap();
        for group in Group::ALL {
            let t = totals(&age_counts(shape, group, &s.reach));
            println!(
                "{} {}: states {} afterstates {} terminal {}",
                shape.name(),
                group.name(),
                t[0],
                t[1],
                t[2]
            );
        }
        println!(
            "{} expectation: max_age {} two 2-tiles {} initial {}",
            shape.name(),
            s.max_age(),
            s.value_two_2_tiles(),
            s.value_initial()
        );
        drop(s);
        if shape.cells() > 6 {
            continue;
        }
        let mut vs = variant_list(shape);
        vs.extend([0.0, 1.0, 0.5].map(|p4| Variant::with_p4(Kind::Expectation, p4)));
        for v in vs {
            let mut s = Solved::new(shape, v);
            let t = totals(&age_counts(shape, Group::Full, &s.reach));
            println!(
                "{} {} p4={}: full states {} afterstates {} terminal {}; two 2-tiles {} initial {}",
                shape.name(),
                v.base_name(),
                v.p4,
                t[0],
                t[1],
                t[2],
                s.value_two_2_tiles(),
                s.value_initial()
            );
        }
    }
}

// ------------------------------------------------------------------------------------------
// 5. Variants on 2x2 and 2x3.

/// Goal exponents from 4 up to the largest tile reachable in the expectation game.
fn goal_exps(shape: Shape) -> Vec<u8> {
    let arc = oracle_for(shape, Variant::new(Kind::Expectation));
    let solved = arc.lock().unwrap();
    let max_t = solved
        .reach
        .states
        .iter()
        .map(|&b| max_exp(shape, b))
        .max()
        .unwrap();
    (2..=max_t).collect()
}

fn variant_list(shape: Shape) -> Vec<Variant> {
    let mut v = vec![
        Variant::new(Kind::Optimistic),
        Variant::new(Kind::Pessimistic),
    ];
    for t in goal_exps(shape) {
        v.push(Variant::new(Kind::Goal(t)));
        v.push(Variant::new(Kind::Guaranteed(t)));
    }
    v
}

fn variant_dir(shape: Shape) -> Result<Arc<Dir>, String> {
    let names: Vec<String> = variant_list(shape).iter().map(Variant::base_name).collect();
    solved_dir(shape, Group::Full, &names, None)
}

fn variants_vs_solver(shape: Shape) {
    let mut fails = Failures::default();
    let dir = variant_dir(shape).unwrap_or_else(|e| panic!("{e}"));
    for v in variant_list(shape) {
        let name = v.base_name();
        let what = format!("{} {name}", shape.name());
        let arc = oracle_for(shape, v);
        let mut solved = arc.lock().unwrap();
        let m = manifest(dir.path(), &shape.name(), &name);
        check_manifest_values(&m, &mut solved, &what, &mut fails);
        if v.goal().is_none() {
            // Same boards as the expectation game.
            check_counts(&m, &solved, Group::Full, true, &what, &mut fails);
        }
        let boards = solved.reach.states.clone();
        check_boards(&what, dir.path(), &solved, &name, &boards, &mut fails);
    }
    fails.check(&format!("{} variants vs solver", shape.name()));
}

#[test]
fn solver_2x2_variants() {
    variants_vs_solver(Shape::new(2, 2));
}

#[test]
fn solver_2x3_variants() {
    variants_vs_solver(Shape::new(2, 3));
}

/// Goal variants stop at boards holding the goal tile: the solver's state and afterstate
/// counts should be those of the oracle's forward search that does not expand such boards
/// (terminal counts are not compared: whether a goal board counts as terminal is the
/// solver's convention).
#[test]
fn solver_goal_variant_counts() {
    let mut fails = Failures::default();
    for shape in [Shape::new(2, 2), Shape::new(2, 3)] {
        let dir = variant_dir(shape).unwrap_or_else(|e| panic!("{e}"));
        for v in variant_list(shape)
            .into_iter()
            .filter(|v| v.goal().is_some())
        {
            let what = format!("{} {}", shape.name(), v.base_name());
            let m = manifest(dir.path(), &shape.name(), &v.base_name());
            let arc = oracle_for(shape, v);
            let solved = arc.lock().unwrap();
            check_counts(&m, &solved, Group::Full, false, &what, &mut fails);
        }
    }
    fails.check("goal variant counts");
}

/// The properties, on the solver's own values: optimistic >= expectation >= pessimistic at
/// every state, goal probabilities in [0, 1] and non-increasing in T, guaranteed in {0, 1}
/// and guaranteed = 1 => goal = 1.
#[test]
fn solver_variant_properties() {
    let mut fails = Failures::default();
    for shape in [Shape::new(2, 2), Shape::new(2, 3)] {
        let dir = variant_dir(shape).unwrap_or_else(|e| panic!("{e}"));
        let exp_dir = solved_dir(shape, Group::Full, &["expectation".into()], None)
            .unwrap_or_else(|e| panic!("{e}"));
        let boards = oracle_for(shape, Variant::new(Kind::Expectation))
            .lock()
            .unwrap()
            .reach
            .states
            .clone();
        let t = texts(shape, &boards);
        let values = |d: &Path, name: &str, t: &[String]| -> Vec<f64> {
            best_rows(d, &shape.name(), Some(name), &[], Boards::File(t))
                .unwrap_or_else(|e| panic!("{e}"))
                .iter()
                .map(|r| r.value)
                .collect()
        };
        let e = values(exp_dir.path(), "expectation", &t);
        let o = values(dir.path(), "optimistic", &t);
        let p = values(dir.path(), "pessimistic", &t);
        let mut bad = Vec::new();
        for i in 0..boards.len() {
            if !(o[i] >= e[i] - TOL * o[i].abs() && e[i] >= p[i] - TOL * e[i].abs()) {
                bad.push(format!(
                    "{:?}: optimistic {} expectation {} pessimistic {}",
                    t[i], o[i], e[i], p[i]
                ));
            }
        }
        let exps = goal_exps(shape);
        for (k, &te) in exps.iter().enumerate() {
            let tile = 1u64 << te;
            // The goal-T boards; the larger goals' boards include them.
            let gb = oracle_for(shape, Variant::new(Kind::Goal(te)))
                .lock()
                .unwrap()
                .reach
                .states
                .clone();
            let gt = texts(shape, &gb);
            let g = values(dir.path(), &format!("goal-{tile}"), &gt);
            let gu = values(dir.path(), &format!("guaranteed-{tile}"), &gt);
            let next = exps
                .get(k + 1)
                .map(|&n| values(dir.path(), &format!("goal-{}", 1u64 << n), &gt));
            for i in 0..gb.len() {
                if !(0.0..=1.0 + 1e-12).contains(&g[i]) {
                    bad.push(format!("{:?}: goal-{tile} {}", gt[i], g[i]));
                }
                if gu[i] != 0.0 && gu[i] != 1.0 {
                    bad.push(format!("{:?}: guaranteed-{tile} {}", gt[i], gu[i]));
                }
                if gu[i] == 1.0 && !close(g[i], 1.0) {
                    bad.push(format!(
                        "{:?}: guaranteed-{tile} 1 but goal-{tile} {}",
                        gt[i], g[i]
                    ));
                }
                if let Some(n) = &next {
                    if n[i] > g[i] + 1e-12 {
                        bad.push(format!(
                            "{:?}: goal-{tile} {} < goal-{} {}",
                            gt[i],
                            g[i],
                            2 * tile,
                            n[i]
                        ));
                    }
                }
            }
        }
        if !bad.is_empty() {
            let n = bad.len();
            bad.truncate(SHOW);
            fails.push(format!(
                "{}: {n} violations:\n    {}",
                shape.name(),
                bad.join("\n    ")
            ));
        }
    }
    fails.check("variant properties");
}

/// Expectation with p4 = 0, 1 and 0.5: the reachable boards change with p4 = 0 or 1.
#[test]
fn solver_p4_variants() {
    let mut fails = Failures::default();
    for shape in [Shape::new(2, 2), Shape::new(2, 3)] {
        for p4 in [0.0, 1.0, 0.5] {
            let v = Variant::with_p4(Kind::Expectation, p4);
            let what = format!("{} expectation --p4 {p4}", shape.name());
            let dir = match solved_dir(shape, Group::Full, &["expectation".into()], Some(p4)) {
                Ok(d) => d,
                Err(e) => {
                    fails.push(format!("{what}: {e}"));
                    continue;
                }
            };
            // The variant's name carries the p4 suffix; find it among the manifests.
            let names = manifest_variants(dir.path(), shape);
            let name = match names.as_slice() {
                [n] if n.starts_with("expectation-p4=")
                    && n["expectation-p4=".len()..].parse::<f64>().ok() == Some(p4) =>
                {
                    n.clone()
                }
                _ => {
                    fails.push(format!(
                        "{what}: manifests {names:?}, expected one expectation-p4={p4}"
                    ));
                    continue;
                }
            };
            let arc = oracle_for(shape, v);
            let mut solved = arc.lock().unwrap();
            let m = manifest(dir.path(), &shape.name(), &name);
            check_counts(&m, &solved, Group::Full, true, &what, &mut fails);
            check_manifest_values(&m, &mut solved, &what, &mut fails);
            let boards = solved.reach.states.clone();
            check_boards(&what, dir.path(), &solved, &name, &boards, &mut fails);
        }
    }
    fails.check("p4 variants vs solver");
}

// ------------------------------------------------------------------------------------------
// 6. Discounted goals: V(s) = max over moves of γ · E[V(next state)], E[γ^(moves to make T)].

/// The discounts tested, 1 (the plain goal) among them.
const GAMMAS: [f64; 4] = [0.5, 0.9, 0.99, 1.0];

/// The discounted goal variants of a shape: goals 16 and 32, each γ of [`GAMMAS`]; on 2x3 also
/// goal-32 with p4 = 0 and 0.5 (two other forward classes).
fn discounted_list(shape: Shape) -> Vec<Variant> {
    let mut v = Vec::new();
    for t in [4u8, 5] {
        for g in GAMMAS {
            v.push(Variant::discounted_goal(t, g, 0.1));
        }
    }
    if shape.cells() == 6 {
        for p4 in [0.0, 0.5] {
            for g in [0.9, 1.0] {
                v.push(Variant::discounted_goal(5, g, p4));
            }
        }
    }
    v
}

#[test]
fn oracle_discounted_goal_by_hand_and_properties() {
    // 2x3, goal 32, γ = 0.9: from 16 8 8/. . 2, L merges the 8s (16 16 ./2 . .) and R too
    // (. 16 16/. . 2); whatever spawns, the same move then makes 32: two moves, 0.9² = 0.81,
    // and no move makes 32 sooner. U changes nothing.
    let s23 = Shape::new(2, 3);
    let v = Variant::discounted_goal(5, 0.9, 0.1);
    let mut o = Oracle::new(s23, v);
    let run = |o: &mut Oracle, text: &str| {
        let b = parse_board(s23, text);
        std::thread::scope(|sc| {
            std::thread::Builder::new()
                .stack_size(1 << 28)
                .spawn_scoped(sc, || {
                    let qs: Vec<Option<f64>> = (0..4).map(|m| o.q(b, m)).collect();
                    (o.value(b), qs)
                })
                .unwrap()
                .join()
                .unwrap()
        })
    };
    let (value, qs) = run(&mut o, "16 8 8/. . 2");
    assert!(close(value, 0.81), "{value}");
    assert!(close(qs[0].unwrap(), 0.81), "{qs:?}");
    assert!(close(qs[1].unwrap(), 0.81), "{qs:?}");
    assert_eq!(qs[2], None, "U changes nothing");
    // A move that makes the goal is worth γ; a board holding it is worth 1.
    let (value, qs) = run(&mut o, "16 16 2/. . 4");
    assert!(
        close(value, 0.9) && close(qs[0].unwrap(), 0.9),
        "{value} {qs:?}"
    );
    assert_eq!(run(&mut o, "32 2 ./. . .").0, 1.0);
    // 2x2, goal 8: 4 4/2 . makes 8 in one move (γ); a terminal board is worth 0.
    let s22 = Shape::new(2, 2);
    for g in GAMMAS {
        let mut o = Oracle::new(s22, Variant::discounted_goal(3, g, 0.1));
        assert!(close(o.value(parse_board(s22, "4 4/2 .")), g));
        assert_eq!(o.value(parse_board(s22, "2 4/4 2")), 0.0);
    }

    // On every reachable state: values grow with γ up to the probability of making the goal
    // (γ = 1, the plain goal, the last of GAMMAS), and are positive where it is.
    for shape in [Shape::new(2, 2), s23] {
        for t in [4u8, 5] {
            // γ = 1 is the plain goal's own oracle (one lock each: same name, same oracle).
            let solved: Vec<_> = GAMMAS
                .iter()
                .map(|&g| oracle_for(shape, Variant::discounted_goal(t, g, 0.1)))
                .collect();
            let solved: Vec<_> = solved.iter().map(|s| s.lock().unwrap()).collect();
            let plain = solved.last().unwrap();
            assert_eq!(plain.oracle.variant, Variant::new(Kind::Goal(t)));
            for o in &solved {
                assert_eq!(plain.reach.states.len(), o.reach.states.len());
            }
            for &s in &plain.reach.states {
                let p = plain.reached_value(s);
                let mut last = 0.0;
                for (k, o) in solved.iter().enumerate() {
                    let v = o.reached_value(s);
                    assert!(
                        v >= last - 1e-12,
                        "{s:#x}: not growing with γ at {}",
                        GAMMAS[k]
                    );
                    assert!(v <= p + 1e-12, "{s:#x}: {v} above P(goal) {p}");
                    assert!(v > 0.0 || p == 0.0, "{s:#x}: 0 but P(goal) {p}");
                    last = v;
                }
            }
        }
    }
}

fn discounted_dir(shape: Shape) -> Result<Arc<Dir>, String> {
    let names: Vec<String> = discounted_list(shape).iter().map(Variant::name).collect();
    solved_dir(shape, Group::Full, &names, None)
}

/// Every state's value and q-values, and the manifest's values at the starts, of discounted
/// goals on 2x2 and 2x3 against the oracle; γ = 1 leaves the plain goal's name and files.
fn discounted_vs_solver(shape: Shape) {
    let mut fails = Failures::default();
    let dir = discounted_dir(shape).unwrap_or_else(|e| panic!("{e}"));
    for v in discounted_list(shape) {
        let name = v.name();
        let what = format!("{} {name}", shape.name());
        let arc = oracle_for(shape, v);
        let mut solved = arc.lock().unwrap();
        let m = manifest(dir.path(), &shape.name(), &name);
        check_manifest_values(&m, &mut solved, &what, &mut fails);
        check_counts(&m, &solved, Group::Full, false, &what, &mut fails);
        if m["discount"].as_f64() != Some(v.discount) {
            fails.push(format!(
                "{what}: discount {} in the manifest",
                m["discount"]
            ));
        }
        let boards = solved.reach.states.clone();
        check_boards(&what, dir.path(), &solved, &name, &boards, &mut fails);
    }
    // γ = 1 is the plain goal: no other name.
    let names = manifest_variants(dir.path(), shape);
    if names.iter().any(|n| n.contains("discount=1")) {
        fails.push(format!(
            "{}: a discount of 1 in a name: {names:?}",
            shape.name()
        ));
    }
    fails.check(&format!("{} discounted goals vs solver", shape.name()));
}

#[test]
fn solver_2x2_discounted_goals() {
    discounted_vs_solver(Shape::new(2, 2));
}

#[test]
fn solver_2x3_discounted_goals() {
    discounted_vs_solver(Shape::new(2, 3));
}

/// `--discount γ` is the name's `-discount=γ`: the same answers, whichever way it is asked.
#[test]
fn solver_discount_flag_names_the_same_variant() {
    let shape = Shape::new(2, 3);
    let dir = discounted_dir(shape).unwrap_or_else(|e| panic!("{e}"));
    let arc = oracle_for(shape, Variant::discounted_goal(5, 0.9, 0.1));
    let boards: Vec<Board> = arc
        .lock()
        .unwrap()
        .reach
        .states
        .iter()
        .copied()
        .take(50)
        .collect();
    let t = texts(shape, &boards);
    let named = best_rows(
        dir.path(),
        &shape.name(),
        Some("goal-32-discount=0.9"),
        &[],
        Boards::File(&t),
    )
    .unwrap();
    let refs: Vec<&str> = t.iter().map(String::as_str).collect();
    let extra = ["--discount", "0.9"];
    let flagged = best_rows(
        dir.path(),
        &shape.name(),
        Some("goal-32"),
        &extra,
        Boards::Args(&refs),
    )
    .unwrap();
    for (a, b) in named.iter().zip(&flagged) {
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }
}
