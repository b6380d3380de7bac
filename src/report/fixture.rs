//! A small synthetic dataset in exactly the solver's on-disk layout, for tests and development.
//!
//! [`write_fixture`] writes `states/`, `afterstates/`, `ages/` (Hive-partitioned Parquet) and
//! `manifest/` for the boards 2x2 and 2x3 and the variants `expectation`, `optimistic` and
//! `pessimistic`. Boards are real 2048 boards (tile sum = age, canonical under the board's
//! reflections; `terminal`, `moves` and `empty` are computed from the board), the values are
//! invented but shaped like the real ones, and the `ages` table and the manifest are computed
//! from the rows written, so every cross-check (`ages` vs `states`, manifest vs SQL) holds.
//! Digests in the fixture manifest are FNV-1a stand-ins, not SHA-256.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, UInt32Array, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use super::ReportError;

/// Boards of the fixture: (rows, cols, largest tile exponent enumerated).
pub const FIXTURE_BOARDS: [(usize, usize, u8); 2] = [(2, 2, 5), (2, 3, 6)];
/// Variants of the fixture.
pub const FIXTURE_VARIANTS: [&str; 3] = ["expectation", "optimistic", "pessimistic"];
/// At most this many states (and afterstates) are kept per age.
const CAP: usize = 300;

/// Deterministic SplitMix64.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn cell(code: u64, i: usize) -> u8 {
    ((code >> (4 * i)) & 15) as u8
}

fn encode(cells: &[u8]) -> u64 {
    cells
        .iter()
        .enumerate()
        .fold(0, |acc, (i, &e)| acc | (u64::from(e) << (4 * i)))
}

/// Smallest code among the board's reflections (and transposes on square boards).
fn canonical(cells: &[u8], r: usize, c: usize) -> u64 {
    let mut best = u64::MAX;
    let at = |rr: usize, cc: usize| cells[rr * c + cc];
    for flip_r in [false, true] {
        for flip_c in [false, true] {
            let mut v = vec![0u8; r * c];
            for rr in 0..r {
                for cc in 0..c {
                    let sr = if flip_r { r - 1 - rr } else { rr };
                    let sc = if flip_c { c - 1 - cc } else { cc };
                    v[rr * c + cc] = at(sr, sc);
                }
            }
            best = best.min(encode(&v));
            if r == c {
                let mut t = vec![0u8; r * c];
                for rr in 0..r {
                    for cc in 0..c {
                        t[rr * c + cc] = v[cc * c + rr];
                    }
                }
                best = best.min(encode(&t));
            }
        }
    }
    best
}

fn line_can_move(line: &[u8]) -> bool {
    let mut seen_empty = false;
    let mut prev = None;
    for &x in line {
        if x == 0 {
            seen_empty = true;
        } else {
            if seen_empty || prev == Some(x) {
                return true;
            }
            prev = Some(x);
        }
    }
    false
}

/// Valid moves of a board in the order L, R, U, D.
fn valid_moves(cells: &[u8], r: usize, c: usize) -> Vec<&'static str> {
    let mut v = Vec::new();
    let rows: Vec<Vec<u8>> = (0..r)
        .map(|i| (0..c).map(|j| cells[i * c + j]).collect())
        .collect();
    let cols: Vec<Vec<u8>> = (0..c)
        .map(|j| (0..r).map(|i| cells[i * c + j]).collect())
        .collect();
    let rev = |l: &Vec<u8>| l.iter().rev().copied().collect::<Vec<u8>>();
    if rows.iter().any(|l| line_can_move(l)) {
        v.push("L");
    }
    if rows.iter().any(|l| line_can_move(&rev(l))) {
        v.push("R");
    }
    if cols.iter().any(|l| line_can_move(l)) {
        v.push("U");
    }
    if cols.iter().any(|l| line_can_move(&rev(l))) {
        v.push("D");
    }
    v
}

fn tile_sum(cells: &[u8]) -> u32 {
    cells
        .iter()
        .map(|&e| if e == 0 { 0 } else { 1u32 << e })
        .sum()
}

/// Canonical boards by age: `(age, codes)`, each list sampled down to [`CAP`] and sorted.
fn boards_by_age(r: usize, c: usize, max_exp: u8, rng: &mut Rng) -> Vec<(u32, Vec<u64>)> {
    let n = r * c;
    let base = u64::from(max_exp) + 1;
    let total = base.pow(n as u32);
    let mut by_age: std::collections::BTreeMap<u32, BTreeSet<u64>> = Default::default();
    let mut cells = vec![0u8; n];
    for k in 0..total {
        let mut x = k;
        for cl in cells.iter_mut() {
            *cl = (x % base) as u8;
            x /= base;
        }
        let s = tile_sum(&cells);
        if s < 4 || cells.iter().filter(|&&e| e > 0).count() < 2 {
            continue;
        }
        by_age.entry(s).or_default().insert(canonical(&cells, r, c));
    }
    by_age
        .into_iter()
        .map(|(age, set)| {
            let mut v: Vec<u64> = set.into_iter().collect();
            // Deterministic sample: shuffle, truncate, sort.
            for i in (1..v.len()).rev() {
                let j = (rng.next() % (i as u64 + 1)) as usize;
                v.swap(i, j);
            }
            v.truncate(CAP);
            v.sort_unstable();
            (age, v)
        })
        .collect()
}

fn write_parquet(path: &Path, batch: &RecordBatch) -> Result<u64, ReportError> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(|e| ReportError::io("creating", dir, e))?;
    }
    let file = fs::File::create(path).map_err(|e| ReportError::io("creating", path, e))?;
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props))
        .map_err(|e| ReportError::shape("fixture parquet", e.to_string()))?;
    w.write(batch)
        .map_err(|e| ReportError::shape("fixture parquet", e.to_string()))?;
    w.close()
        .map_err(|e| ReportError::shape("fixture parquet", e.to_string()))?;
    fs::metadata(path)
        .map(|m| m.len())
        .map_err(|e| ReportError::io("reading", path, e))
}

fn write_bytes(path: &Path, bytes: &[u8]) -> Result<u64, ReportError> {
    crate::store::atomic_write(path, bytes)
        .map_err(|e| ReportError::shape("fixture parquet", e.to_string()))?;
    Ok(bytes.len() as u64)
}

fn fnv_digest(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    format!("{h:016x}").repeat(4)
}

fn batch(fields: Vec<Field>, cols: Vec<ArrayRef>) -> Result<RecordBatch, ReportError> {
    RecordBatch::try_new(Arc::new(Schema::new(fields)), cols)
        .map_err(|e| ReportError::Arrow { context: "building a fixture batch".into(), message: e.to_string() })
}

/// What [`write_fixture`] wrote, per board and variant.
#[derive(Debug, Clone)]
pub struct FixtureBoard {
    pub board: String,
    pub variant: String,
    /// `(age, n_states, n_afterstates, n_terminal_states)`
    pub ages: Vec<(u32, u64, u64, u64)>,
}

/// Writes the fixture dataset under `data` (created if needed) and returns what it wrote.
pub fn write_fixture(data: &Path) -> Result<Vec<FixtureBoard>, ReportError> {
    let mut out = Vec::new();
    for &(r, c, max_exp) in &FIXTURE_BOARDS {
        let board = format!("{r}x{c}");
        let n = r * c;
        let mut rng = Rng(0x2048 + n as u64);
        let states_by_age = boards_by_age(r, c, max_exp, &mut rng);
        let max_age = states_by_age.last().map(|x| x.0).unwrap_or(0);
        for (vi, variant) in FIXTURE_VARIANTS.iter().enumerate() {
            let scale = [1.0, 1.7, 0.3][vi];
            let mut rng = Rng(0x5EED + 97 * vi as u64 + n as u64);
            let mut files = Vec::new();
            let mut ages_rows = Vec::new();
            let mut manifest_ages = Vec::new();
            let mut max_tile_exp = 0u8;
            let (mut tot_s, mut tot_a, mut tot_t) = (0u64, 0u64, 0u64);
            let mut value_at_4 = 0.0;
            for (age, codes) in &states_by_age {
                let age = *age;
                let remaining = f64::from(max_age - age) / 4.0;
                // States.
                let (mut ids, mut values, mut terms, mut moves, mut bests, mut gaps, mut empties) =
                    (vec![], vec![], vec![], vec![], vec![], vec![], vec![]);
                for &code in codes {
                    let cells: Vec<u8> = (0..n).map(|i| cell(code, i)).collect();
                    max_tile_exp = max_tile_exp.max(*cells.iter().max().unwrap_or(&0));
                    let mv = valid_moves(&cells, r, c);
                    let empty = cells.iter().filter(|&&e| e == 0).count() as u8;
                    let terminal = mv.is_empty();
                    let u = rng.unit();
                    let value = if terminal {
                        0.0
                    } else {
                        scale
                            * remaining
                            * (0.5 + 0.5 * f64::from(empty + 1) / n as f64)
                            * (0.7 + 0.6 * u)
                    };
                    ids.push(code);
                    values.push(value);
                    terms.push(terminal);
                    moves.push(mv.len() as u8);
                    bests.push(mv.get((rng.next() % 4) as usize % mv.len().max(1)).copied());
                    gaps.push(if mv.len() >= 2 {
                        Some(3.0 * rng.unit().powi(2) * (1.0 + remaining / 8.0))
                    } else {
                        None
                    });
                    empties.push(empty);
                }
                // Afterstates: boards of the same tile sum with at least one empty cell.
                let after: Vec<u64> = codes
                    .iter()
                    .copied()
                    .filter(|&code| (0..n).any(|i| cell(code, i) == 0))
                    .collect();
                let a_vals: Vec<f64> = after
                    .iter()
                    .map(|&code| {
                        let e = (0..n).filter(|&i| cell(code, i) == 0).count();
                        scale
                            * remaining
                            * (0.5 + 0.5 * (e as f64) / n as f64)
                            * (0.75 + 0.5 * rng.unit())
                    })
                    .collect();
                let a_empty: Vec<u8> = after
                    .iter()
                    .map(|&code| (0..n).filter(|&i| cell(code, i) == 0).count() as u8)
                    .collect();

                let n_s = ids.len() as u64;
                let n_a = after.len() as u64;
                let n_t = terms.iter().filter(|&&t| t).count() as u64;
                let mean = |v: &[f64]| {
                    if v.is_empty() {
                        None
                    } else {
                        Some(v.iter().sum::<f64>() / v.len() as f64)
                    }
                };
                let gap_vals: Vec<f64> = gaps.iter().flatten().copied().collect();
                ages_rows.push((
                    age,
                    n_s,
                    n_a,
                    n_t,
                    mean(&a_empty.iter().map(|&e| f64::from(e)).collect::<Vec<_>>()),
                    a_vals
                        .iter()
                        .copied()
                        .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x)))),
                    mean(&values),
                    mean(&gap_vals),
                    if gap_vals.is_empty() {
                        None
                    } else {
                        Some(
                            gap_vals.iter().filter(|&&g| g < 1.0).count() as f64
                                / gap_vals.len() as f64,
                        )
                    },
                ));
                if age == 4 {
                    value_at_4 = mean(&values).unwrap_or(0.0);
                }
                tot_s += n_s;
                tot_a += n_a;
                tot_t += n_t;

                let part = format!("board={board}/variant={variant}/age={age}/part-0.parquet");
                // The solver's own encoders: the fixture follows the layout by construction.
                let p = format!("states/{part}");
                let sb = crate::store::states_parquet(
                    &data.join(&p),
                    crate::store::StatesColumns {
                        id: ids,
                        value: values,
                        terminal: terms,
                        moves,
                        best: bests,
                        gap: gaps,
                        empty: empties,
                    },
                )
                .map_err(|e| ReportError::shape("fixture parquet", e.to_string()))?;
                files.push((p.clone(), write_bytes(&data.join(&p), &sb)?));
                let p = format!("afterstates/{part}");
                let ab = crate::store::afterstates_parquet(
                    &data.join(&p),
                    after.clone(),
                    a_vals,
                    a_empty,
                )
                .map_err(|e| ReportError::shape("fixture parquet", e.to_string()))?;
                files.push((p.clone(), write_bytes(&data.join(&p), &ab)?));

                let bits = if n_a > 1 {
                    (64 - (n_a - 1).leading_zeros()) as u64 + 2
                } else {
                    1
                };
                let a_bytes = (n_a * bits).div_ceil(8);
                let s_bytes = (n_s * (bits + 1)).div_ceil(8);
                manifest_ages.push(serde_json::json!({
                    "age": age, "n_states": n_s, "n_afterstates": n_a, "n_terminal_states": n_t,
                    "index": {
                        "file": format!("index/board={board}/variant={variant}/age={age}.idx"),
                        "file_bytes": a_bytes + s_bytes + 32,
                        "base": after.first().copied().unwrap_or(0),
                        "afterstate_id_bytes": a_bytes,
                        "state_id_bytes": s_bytes,
                        "bits_per_afterstate_id": bits,
                    }
                }));
            }
            let ab = batch(
                vec![
                    Field::new("age", DataType::UInt32, false),
                    Field::new("n_states", DataType::UInt64, false),
                    Field::new("n_afterstates", DataType::UInt64, false),
                    Field::new("n_terminal_states", DataType::UInt64, false),
                    Field::new("mean_empty_cells_afterstates", DataType::Float64, true),
                    Field::new("best_afterstate_value", DataType::Float64, true),
                    Field::new("mean_state_value", DataType::Float64, true),
                    Field::new("mean_action_gap", DataType::Float64, true),
                    Field::new("frac_gap_lt_1", DataType::Float64, true),
                ],
                vec![
                    Arc::new(UInt32Array::from(
                        ages_rows.iter().map(|x| x.0).collect::<Vec<_>>(),
                    )),
                    Arc::new(UInt64Array::from(
                        ages_rows.iter().map(|x| x.1).collect::<Vec<_>>(),
                    )),
                    Arc::new(UInt64Array::from(
                        ages_rows.iter().map(|x| x.2).collect::<Vec<_>>(),
                    )),
                    Arc::new(UInt64Array::from(
                        ages_rows.iter().map(|x| x.3).collect::<Vec<_>>(),
                    )),
                    Arc::new(Float64Array::from(
                        ages_rows.iter().map(|x| x.4).collect::<Vec<_>>(),
                    )),
                    Arc::new(Float64Array::from(
                        ages_rows.iter().map(|x| x.5).collect::<Vec<_>>(),
                    )),
                    Arc::new(Float64Array::from(
                        ages_rows.iter().map(|x| x.6).collect::<Vec<_>>(),
                    )),
                    Arc::new(Float64Array::from(
                        ages_rows.iter().map(|x| x.7).collect::<Vec<_>>(),
                    )),
                    Arc::new(Float64Array::from(
                        ages_rows.iter().map(|x| x.8).collect::<Vec<_>>(),
                    )),
                ],
            )?;
            let p = format!("ages/board={board}/variant={variant}/part-0.parquet");
            files.push((p.clone(), write_parquet(&data.join(&p), &ab)?));

            let files_json: Vec<_> = files
                .iter()
                .map(|(p, bytes)| {
                    let content = fs::read(data.join(p)).unwrap_or_default();
                    serde_json::json!({"path": p, "bytes": bytes, "sha256": fnv_digest(&content)})
                })
                .collect();
            let manifest = serde_json::json!({
                "tool": "age2048",
                "version": "0.1.0-fixture",
                "board": board,
                "variant": variant,
                "symmetry": (if r == c { "dihedral-8" } else { "reflections-4" }),
                "p4": 0.1,
                "n_states": tot_s,
                "n_afterstates": tot_a,
                "n_terminal_states": tot_t,
                "max_age": max_age,
                "max_tile": 1u64 << max_tile_exp,
                "value_two_2_tiles": value_at_4,
                "value_initial": value_at_4 * 0.98,
                "timings": {"forward_s": 0.01 * n as f64, "backward_s": 0.02 * n as f64, "total_s": 0.03 * n as f64},
                "peak_rss_bytes": 10_000_000u64 * n as u64,
                "ages": manifest_ages,
                "files": files_json,
            });
            let mp = data.join(format!("manifest/board={board}/variant={variant}.json"));
            if let Some(dir) = mp.parent() {
                fs::create_dir_all(dir).map_err(|e| ReportError::io("creating", dir, e))?;
            }
            let text = serde_json::to_string_pretty(&manifest).unwrap_or_default();
            fs::write(&mp, text).map_err(|e| ReportError::io("writing", &mp, e))?;
            out.push(FixtureBoard {
                board: board.clone(),
                variant: variant.to_string(),
                ages: ages_rows.iter().map(|x| (x.0, x.1, x.2, x.3)).collect(),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_and_canonical() {
        // 2 2 / 0 0 : L/R merge, U/D? tiles at top can move down.
        let cells = [1, 1, 0, 0];
        assert_eq!(valid_moves(&cells, 2, 2), vec!["L", "R", "D"]);
        // 2 4 / 4 2 : no move.
        assert!(valid_moves(&[1, 2, 2, 1], 2, 2).is_empty());
        assert_eq!(
            canonical(&[0, 0, 1, 1], 2, 2),
            canonical(&[1, 1, 0, 0], 2, 2)
        );
    }
}
