//! Rigorous solves (issue 64): goal variants in fixed point rounded down (`-u32`, `-u53`)
//! against an integer brute-force recursion on unreduced boards written here, bit for bit at
//! every state and at both starts; at most the f64 solve's values and within the stated
//! distance of them; the compact layout, `verify`, and a line for every bad input.

use std::collections::HashMap;

use age2048::rules::{Group, Shape, Symmetry};
use age2048::store::Manifest;

use crate::common::{
    fresh_dir, manifests_of, run, sql_rows, state_values, stderr, stdout, store_manifest,
};
use crate::restricted::{code, playable, tiles, Grid};

/// A probability as a fraction `(num, den)`, and the decimal a variant's name writes of it.
type Prob = (u128, u128, &'static str);

/// The rules of a (restricted) goal game in integers times `2^-bits`, every step rounded down,
/// spelt out on grids: each spawn's probability `floor(p·2^bits)` from its fraction, an
/// afterstate's sum over empty cells of exact products divided once, a discount's product
/// floored.
struct BruteFloor {
    rows: usize,
    cols: usize,
    caps: Vec<u32>,
    need: Vec<u32>, // 0 = free
    goal: u32,
    bits: u32,
    /// Each tile that spawns with the integer of its probability.
    spawns: Vec<(u32, u128)>,
    gamma: Option<u128>,
    states: HashMap<Grid, u128>,
}

impl BruteFloor {
    #[allow(clippy::too_many_arguments)]
    fn new(
        rows: usize,
        cols: usize,
        caps: Option<&str>,
        need: Option<&str>,
        goal: u32,
        p4: Prob,
        gamma: Option<Prob>,
        bits: u32,
    ) -> BruteFloor {
        let floor = |n: u128, d: u128| (n << bits) / d;
        let mut spawns = Vec::new();
        if p4.0 < p4.1 {
            spawns.push((2, floor(p4.1 - p4.0, p4.1)));
        }
        if p4.0 > 0 {
            spawns.push((4, floor(p4.0, p4.1)));
        }
        BruteFloor {
            rows,
            cols,
            caps: caps.map_or(vec![u32::MAX; rows * cols], tiles),
            need: need.map_or(vec![0; rows * cols], tiles),
            goal,
            bits,
            spawns,
            gamma: gamma.map(|g| floor(g.0, g.1)),
            states: HashMap::new(),
        }
    }

    fn wins(&self, g: &Grid) -> bool {
        crate::restricted::wins(self.goal, &self.need, g)
    }

    /// Player to move.
    fn state(&mut self, g: &Grid) -> u128 {
        if let Some(&v) = self.states.get(g) {
            return v;
        }
        let v = if self.wins(g) {
            1 << self.bits
        } else {
            let mut best: Option<u128> = None;
            let shape = (self.rows, self.cols);
            for a in playable(g, shape, &self.caps, self.goal, &self.need) {
                let after = if self.wins(&a) {
                    1 << self.bits
                } else {
                    self.spawned(&a, false)
                };
                let q = self.gamma.map_or(after, |g| (g * after) >> self.bits);
                best = Some(best.map_or(q, |b| b.max(q)));
            }
            best.unwrap_or(0)
        };
        self.states.insert(g.clone(), v);
        v
    }

    /// Computer to move on `g`: the floored mean over empty cells of the spawns' exact terms;
    /// the children are states, or (`twice`) boards where the computer spawns again.
    fn spawned(&mut self, g: &Grid, twice: bool) -> u128 {
        let (mut sum, mut n) = (0u128, 0u128);
        for i in 0..g.len() {
            if g[i] != 0 {
                continue;
            }
            n += 1;
            for (t, p) in self.spawns.clone() {
                let mut s = g.clone();
                s[i] = t;
                let v = if twice {
                    self.spawned(&s, false)
                } else {
                    self.state(&s)
                };
                sum += p * v;
            }
        }
        sum / (n << self.bits)
    }
}

/// The values at the starts (`value_initial`, `value_empty`) of a solve, as its manifest
/// holds them (`store::manifest` reads them bit for bit).
fn starts_of(m: &Manifest) -> [Option<f64>; 2] {
    [m.value_initial, m.value_empty]
}

/// One solve of `goal-G`, `goal-G-u32` and `goal-G-u53` side by side through the binary:
/// each rigorous variant equals [`BruteFloor`] bit for bit at every state it reaches (and the
/// solve holds no other) and at both starts; each is at most the f64 value (u53 within the
/// f64 solve's own error, 1e-12, which the restricted tests allow it against its brute force)
/// and below it by at most [`age2048::rules::Grid::loss`] of the spawns left. Returns the
/// f64 and u32 values from the empty board.
fn check(
    rows: usize,
    cols: usize,
    caps: Option<&str>,
    need: Option<&str>,
    goal: u32,
    p4: Prob,
    gamma: Option<Prob>,
) -> (f64, f64) {
    let board = format!("{rows}x{cols}");
    let dir = fresh_dir(&format!(
        "rigorous_{board}_{}",
        caps.map_or(0, |c| code(&tiles(c)))
            ^ need.map_or(0, |n| code(&tiles(n)).rotate_left(7))
            ^ (p4.0 * 1000 / p4.1) as u64
            ^ gamma.map_or(0, |g| (g.0 * 1000 / g.1) as u64) << 40
            ^ u64::from(goal) << 50
    ));
    let data = dir.display().to_string();
    let variants = format!("goal-{goal},goal-{goal}-u32,goal-{goal}-u53");
    let mut args = vec![
        "solve",
        "--board",
        &board,
        "--variant",
        &variants,
        "--p4",
        p4.2,
        "--data",
        &data,
        "--threads",
        "1",
    ];
    if let Some(g) = gamma {
        args.extend(["--discount", g.2]);
    }
    if let Some(c) = caps {
        args.extend(["--caps", c]);
    }
    if let Some(n) = need {
        args.extend(["--require", n]);
    }
    let o = run(&args);
    assert!(o.status.success(), "{args:?}: {o:?}");
    // The solve's last lines: each rigorous variant's bounds beside the f64 values.
    let err = stderr(&o);
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("proved lower")).collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(lines[0].contains("-u32: proved lower bounds (u32: integers times 2^-32"));
    // The three manifests, found by their variant names.
    let mut manifests: Vec<Manifest> = manifests_of(&dir, &board);
    manifests.sort_by(|a, b| a.arithmetic.cmp(&b.arithmetic));
    assert_eq!(manifests.len(), 3, "{args:?}");
    let arith: Vec<&str> = manifests.iter().map(|m| m.arithmetic.as_str()).collect();
    assert_eq!(arith, ["f64", "u32", "u53"]);
    assert!(manifests[1].variant.ends_with("-u32") && manifests[2].variant.ends_with("-u53"));
    // The `solves` view shows each manifest's starts bit for bit, its arithmetic and caps.
    let listed = sql_rows(
        &dir,
        "SELECT variant, arithmetic, caps, require, value_initial, value_empty FROM solves ORDER BY arithmetic",
    );
    assert_eq!(listed.len(), 4, "{listed:?}");
    for (row, m) in listed[1..].iter().zip(&manifests) {
        let starts = starts_of(m);
        let bits = |v: &[Option<f64>]| v.iter().map(|v| v.map(f64::to_bits)).collect::<Vec<_>>();
        let shown: Vec<Option<f64>> = row[4..].iter().map(|v| v.parse().ok()).collect();
        assert_eq!(
            row[..2],
            [m.variant.clone(), m.arithmetic.clone()],
            "{listed:?}"
        );
        let grids = [m.caps.clone(), m.require.clone()].map(Option::unwrap_or_default);
        assert_eq!(row[2..4], grids, "{listed:?}");
        assert_eq!(caps.is_some(), !grids[0].is_empty(), "{listed:?}");
        assert_eq!(bits(&shown), bits(&starts), "{}", m.variant);
    }
    let values: Vec<HashMap<u64, f64>> = manifests.iter().map(|m| state_values(&dir, m)).collect();
    let sym = Symmetry::new(
        Shape::new(rows, cols).unwrap(),
        Group::parse(&manifests[0].symmetry).unwrap(),
    );
    let max_age = manifests[0].max_age;
    let n = rows * cols;
    for (vi, bits) in [(1, 32u32), (2, 53)] {
        let m = &manifests[vi];
        let mut brute = BruteFloor::new(rows, cols, caps, need, goal, p4, gamma, bits);
        let unit = |q: u128| q as f64 / (1u64 << bits) as f64;
        let (initial, empty) = (
            brute.spawned(&vec![0; n], true),
            brute.spawned(&vec![0; n], false),
        );
        let starts = starts_of(m);
        assert_eq!(
            starts,
            [Some(unit(initial)), Some(unit(empty))],
            "{}",
            m.variant
        );
        // Printed rounded down to a decimal that tells units apart, beside the f64 values.
        let digits = if bits == 32 { 10 } else { 16 };
        let text = |q: u128| {
            let scale = 10u128.pow(digits);
            let x = (q * scale) >> bits;
            format!("{}.{:0w$} (f64 ", x / scale, x % scale, w = digits as usize)
        };
        let line = lines[vi - 1];
        assert!(
            line.contains(&format!("over the initial distribution {}", text(initial)))
                && line.contains(&format!("from the empty board {}", text(empty))),
            "{line}"
        );
        let mut ids = std::collections::HashSet::new();
        let loss = |spawns: u64| {
            let per = if gamma.is_some() { 5.0 } else { 3.0 };
            per * spawns as f64 / (1u64 << bits) as f64
        };
        let slack = if bits == 32 { 0.0 } else { 1e-12 };
        for (g, &q) in &brute.states {
            if g.iter().filter(|&&t| t != 0).count() < 2 {
                continue;
            }
            let id = sym.canon(code(g));
            ids.insert(id);
            let got = values[vi][&id];
            assert_eq!(
                got.to_bits(),
                unit(q).to_bits(),
                "{}: state {g:?}",
                m.variant
            );
            let f = values[0][&id];
            let age: u32 = g.iter().sum();
            let spawns = u64::from(max_age - age) / 2;
            assert!(
                got <= f + slack,
                "{}: state {g:?}: {got} above f64 {f}",
                m.variant
            );
            assert!(
                f - got <= loss(spawns) + 1e-12,
                "{}: state {g:?}: {got} more than {spawns} spawns' loss below f64 {f}",
                m.variant
            );
        }
        assert_eq!(
            ids.len(),
            values[vi].len(),
            "{}: states the brute force does not reach",
            m.variant
        );
        assert!(ids.len() > 50, "{}: {} states", m.variant, ids.len());
        let f64_starts = starts_of(&manifests[0]);
        for (f, r) in f64_starts.iter().zip(&starts) {
            let (f, r) = (f.unwrap(), r.unwrap());
            assert!(r <= f + slack && f - r <= loss(u64::from(max_age) / 2 + 1) + 1e-12);
        }
    }
    (
        manifests[0].value_empty.unwrap(),
        manifests[1].value_empty.unwrap(),
    )
}

const TENTH: Prob = (1, 10, "0.1");
const QUARTER: Prob = (1, 4, "0.25");
const NINE_TENTHS: Prob = (9, 10, "0.9");

#[test]
fn rigorous_solves_equal_an_integer_brute_force_on_2x3() {
    let (f, r) = check(2, 3, None, None, 32, TENTH, None);
    assert!(r < f && f - r < 1e-8, "{r} vs {f}");
    check(
        2,
        3,
        Some("16 8 8 / 8 8 8"),
        Some("8 8 . / . . ."),
        32,
        QUARTER,
        Some(NINE_TENTHS),
    );
    check(
        2,
        3,
        Some("16 16 16 / 8 8 8"),
        Some("16 . . / . . ."),
        32,
        TENTH,
        None,
    );
}

#[test]
fn rigorous_solves_equal_an_integer_brute_force_on_2x4() {
    check(2, 4, None, None, 16, QUARTER, None);
    check(2, 4, Some("16 16 8 4 / 8 8 8 4"), None, 32, QUARTER, None);
}

#[test]
fn rigorous_solves_equal_an_integer_brute_force_on_3x3() {
    check(
        3,
        3,
        Some("8 8 8 / 8 8 8 / 8 8 8"),
        Some(". . . / . 8 . / . . ."),
        32,
        TENTH,
        None,
    );
}

#[test]
fn a_rigorous_solve_in_the_compact_layout_gives_the_full_layouts_bits_and_verifies() {
    let caps = "16 16 8 4 / 8 8 8 4";
    let variant = "goal-32-caps=44323332-u32";
    let solve = |name: &str, extra: &[&str]| {
        let dir = fresh_dir(name);
        let data = dir.display().to_string();
        let mut args = vec![
            "solve",
            "--board",
            "2x4",
            "--data",
            &data,
            "--threads",
            "1",
            "-q",
            "--variant",
            "goal-32-u32",
            "--caps",
            caps,
        ];
        args.extend_from_slice(extra);
        let o = run(&args);
        assert!(o.status.success(), "{args:?}: {o:?}");
        let v = run(&["verify", "--data", &data]);
        assert!(v.status.success(), "verify {data}: {v:?}");
        dir
    };
    let full = solve("rigorous_full", &[]);
    let compact = solve("rigorous_compact", &["--layout", "compact"]);
    let (a, b) = (
        store_manifest(&full, "2x4", variant),
        store_manifest(&compact, "2x4", variant),
    );
    assert_eq!(
        b.storage.value_fraction_bits,
        Some(32),
        "the grid's own bits"
    );
    assert_eq!(
        (a.arithmetic.as_str(), b.arithmetic.as_str()),
        ("u32", "u32")
    );
    assert_eq!(starts_of(&a), starts_of(&b));
    let ask = |d: &std::path::Path| {
        let data = d.display().to_string();
        let o = run(&[
            "best",
            "--board",
            "2x4",
            "--data",
            &data,
            "--variant",
            variant,
            "2 2 0 0 / 0 4 0 0",
            "8 4 2 0 / 2 0 0 0",
        ]);
        assert!(o.status.success(), "{o:?}");
        stdout(&o)
    };
    assert_eq!(ask(&full), ask(&compact));
}

#[test]
fn every_bad_rigorous_solve_gets_one_line_and_exit_2() {
    let cases: [(&[&str], &str); 5] = [
        (
            &["--variant", "expectation-u32"],
            "applies to goal-T variants only",
        ),
        (
            &["--variant", "guaranteed-16-u53"],
            "applies to goal-T variants only",
        ),
        (
            &[
                "--variant",
                "goal-32-u32",
                "--layout",
                "compact",
                "--precision",
                "16",
            ],
            "--precision 16: the rigorous variant goal-32-u32 keeps its values at 2^-32",
        ),
        (
            &[
                "--variant",
                "goal-32-u53",
                "--layout",
                "compact",
                "--precision",
                "40",
            ],
            "give --precision f64",
        ),
        (&["--variant", "goal-32-u64"], "-u53 is the finest grid"),
    ];
    let dir = fresh_dir("rigorous_bad");
    let data = dir.display().to_string();
    for (extra, says) in cases {
        let mut args = vec!["solve", "--board", "2x3", "--data", &data];
        args.extend_from_slice(extra);
        let o = run(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    assert!(!dir.join("manifest").exists(), "nothing solved");
}
