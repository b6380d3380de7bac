//! The report's figures: one per quantity, one line per board (or per variant where that is
//! the point), each written as SVG, PNG and the CSV of the exact series drawn.
//!
//! Per-age series come from `sql/per_age.sql` (DuckDB); the quantile band and the variants
//! side by side come from frames over the Parquet files ([`super::frames`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, StringArray, UInt64Array};

use super::data::{board_key, variant_key, AgeRow};
use super::frames::{QuantileBand, VariantSeries};
use super::render::{Band, Figure, Line, Panel, VLines, PALETTE};
use super::{csv_bytes, ReportError};
use crate::rules::variant::Given;
use crate::rules::{Kind, Variant};
use plotters::prelude::SeriesLabelPosition;

/// A figure ready to be written, with the CSV of its series and a one-sentence description.
pub struct FigureSpec {
    pub figure: Figure,
    pub description: String,
    /// The data series as drawn: a CSV with header.
    pub csv: Vec<u8>,
    /// The query (or Polars computation) the series comes from.
    pub source: String,
}

/// What the figures need to know about a board.
#[derive(Debug, Clone)]
pub struct BoardInfo {
    pub board: String,
    /// The variant drawn for this board in the one-variant figures (expectation if solved).
    pub variant: String,
    pub largest_tile: Option<u64>,
    pub max_age: Option<u64>,
}

fn color(i: usize) -> plotters::style::RGBColor {
    PALETTE[i % PALETTE.len()]
}

fn boards_list(boards: &[BoardInfo]) -> String {
    boards
        .iter()
        .map(|b| b.board.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn variants_phrase(boards: &[BoardInfo]) -> String {
    let mut vs: Vec<&str> = boards.iter().map(|b| b.variant.as_str()).collect();
    vs.sort_by_key(|v| variant_key(v));
    vs.dedup();
    if vs.len() == 1 {
        format!("variant {}", vs[0])
    } else {
        format!("variants {}", vs.join("/"))
    }
}

/// Long-format CSV `board, variant, age, <columns...>`.
fn long_csv(
    rows: &[(String, String, u64, Vec<Option<f64>>)],
    columns: &[&str],
    int_columns: &[bool],
) -> Result<Vec<u8>, ReportError> {
    // Canonical order, the same as `ORDER BY board, variant, age` in SQL.
    let mut rows: Vec<_> = rows.iter().collect();
    rows.sort_by(|a, b| (&a.0, &a.1, a.2).cmp(&(&b.0, &b.1, b.2)));
    let mut cols: Vec<(&str, ArrayRef)> = vec![
        (
            "board",
            Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| r.0.as_str()),
            )),
        ),
        (
            "variant",
            Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| r.1.as_str()),
            )),
        ),
        (
            "age",
            Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.2))),
        ),
    ];
    for (j, name) in columns.iter().enumerate() {
        let a: ArrayRef = if int_columns.get(j).copied().unwrap_or(false) {
            Arc::new(UInt64Array::from_iter(
                rows.iter().map(|r| r.3[j].map(|v| v as u64)),
            ))
        } else {
            Arc::new(Float64Array::from_iter(rows.iter().map(|r| r.3[j])))
        };
        cols.push((*name, a));
    }
    csv_bytes(cols)
}

/// A one-line-per-board figure of one optional column of `per_age`.
#[allow(clippy::too_many_arguments)]
fn per_board_figure(
    name: &str,
    quantity: &str,
    y_label: &str,
    column: &str,
    get: fn(&AgeRow) -> Option<f64>,
    rows: &[AgeRow],
    boards: &[BoardInfo],
    description: &str,
    legend: SeriesLabelPosition,
) -> Result<FigureSpec, ReportError> {
    let mut panel = Panel::new("age (sum of the tiles)", y_label);
    panel.legend = legend;
    let mut csv_rows = Vec::new();
    for (i, b) in boards.iter().enumerate() {
        let pts: Vec<(u64, f64)> = rows
            .iter()
            .filter(|r| r.board == b.board && r.variant == b.variant)
            .filter_map(|r| get(r).map(|v| (r.age, v)))
            .collect();
        csv_rows.extend(
            pts.iter()
                .map(|&(a, v)| (b.board.clone(), b.variant.clone(), a, vec![Some(v)])),
        );
        panel.lines.push(Line {
            label: b.board.clone(),
            color: color(i),
            dashed: false,
            points: pts.iter().map(|&(a, v)| (a as f64, v)).collect(),
        });
    }
    Ok(FigureSpec {
        figure: Figure {
            name: name.into(),
            title: format!(
                "{quantity} — {}, boards {}",
                variants_phrase(boards),
                boards_list(boards)
            ),
            panels: vec![panel],
            width: 1200,
            height: 760,
        },
        description: description.into(),
        csv: long_csv(&csv_rows, &[column], &[false])?,
        source: format!("sql/per_age.sql, column {column}"),
    })
}

/// Dashed verticals for a board: multiples of half its largest tile (or of the largest tile
/// when that would be too many lines), up to its last age.
fn big_tile_lines(b: &BoardInfo, i: usize) -> Option<VLines> {
    let tile = b.largest_tile?;
    let max_age = b.max_age?;
    let mut step = (tile / 2).max(4);
    if max_age / step > 16 {
        step = tile.max(4);
    }
    let xs: Vec<f64> = (1..)
        .map(|k| k * step)
        .take_while(|&x| x <= max_age)
        .map(|x| x as f64)
        .collect();
    (!xs.is_empty()).then(|| VLines {
        label: format!("{}: multiples of {step}", b.board),
        color: color(i),
        xs,
    })
}

/// States and afterstates per age, log scale, with the big-tile verticals.
fn counts_figure(rows: &[AgeRow], boards: &[BoardInfo]) -> Result<FigureSpec, ReportError> {
    let mut panel = Panel::new("age (sum of the tiles)", "number per age (log scale)");
    panel.log_y = true;
    panel.legend = SeriesLabelPosition::UpperRight;
    let mut csv_rows = Vec::new();
    for (i, b) in boards.iter().enumerate() {
        let sel: Vec<&AgeRow> = rows
            .iter()
            .filter(|r| r.board == b.board && r.variant == b.variant)
            .collect();
        csv_rows.extend(sel.iter().map(|r| {
            (
                b.board.clone(),
                b.variant.clone(),
                r.age,
                vec![Some(r.n_states as f64), Some(r.n_afterstates as f64)],
            )
        }));
        panel.lines.push(Line {
            label: format!("{} states", b.board),
            color: color(i),
            dashed: false,
            points: sel
                .iter()
                .filter(|r| r.n_states > 0)
                .map(|r| (r.age as f64, r.n_states as f64))
                .collect(),
        });
        panel.lines.push(Line {
            label: format!("{} afterstates", b.board),
            color: color(i),
            dashed: true,
            points: sel
                .iter()
                .filter(|r| r.n_afterstates > 0)
                .map(|r| (r.age as f64, r.n_afterstates as f64))
                .collect(),
        });
        panel.vlines.extend(big_tile_lines(b, i));
    }
    Ok(FigureSpec {
        figure: Figure {
            name: "states_afterstates_per_age".into(),
            title: format!(
                "States and afterstates per age — {}, boards {}",
                variants_phrase(boards),
                boards_list(boards)
            ),
            panels: vec![panel],
            width: 1200,
            height: 760,
        },
        description: "Number of states (solid) and afterstates (dashed) at each age, on a log scale; \
                      the dashed verticals mark multiples of each board's big tiles, where the counts dip \
                      before a new large tile forms."
            .into(),
        csv: long_csv(&csv_rows, &["n_states", "n_afterstates"], &[true, true])?,
        source: "sql/per_age.sql, columns n_states, n_afterstates".into(),
    })
}

/// Value of the best afterstate per age, one panel per board with the variants overlaid
/// (expectation solid, optimistic and pessimistic dashed) — Fig. 7 of the 4x3 paper.
fn best_value_figure(
    series: &[VariantSeries],
    boards: &[String],
) -> Result<FigureSpec, ReportError> {
    let mut variants: Vec<&str> = series.iter().map(|s| s.variant.as_str()).collect();
    variants.sort_by_key(|v| variant_key(v));
    variants.dedup();
    let mut panels = Vec::new();
    let mut csv_rows = Vec::new();
    let mut shown: Vec<&String> = boards
        .iter()
        .filter(|b| series.iter().any(|s| s.board == **b))
        .collect();
    shown.dedup();
    for b in &shown {
        let mut p = Panel::new("age (sum of the tiles)", "value of the best afterstate");
        p.caption = Some(format!("board {b}"));
        for (k, v) in variants.iter().enumerate() {
            let Some(s) = series.iter().find(|s| s.board == **b && s.variant == *v) else {
                continue;
            };
            p.lines.push(Line {
                label: s.variant.clone(),
                color: color(k),
                dashed: *v != "expectation",
                points: s.points.iter().map(|&(a, y)| (a as f64, y)).collect(),
            });
            csv_rows.extend(
                s.points
                    .iter()
                    .map(|&(a, y)| (s.board.clone(), s.variant.clone(), a, vec![Some(y)])),
            );
        }
        panels.push(p);
    }
    let k = panels.len().max(1) as u32;
    Ok(FigureSpec {
        figure: Figure {
            name: "best_afterstate_value_per_age".into(),
            // Boards and variants are in the captions and legends: the title stays short
            // enough for one panel.
            title: "Value of the best afterstate per age, spawn rules overlaid".into(),
            panels,
            width: if k == 1 { 1200 } else { 640 * k },
            height: 760,
        },
        description: "Largest afterstate value at each age (the expected future score from the best \
                      position of that age), one panel per board with the solved spawn rules overlaid: \
                      expectation (solid), optimistic and pessimistic spawns (dashed), as in Fig. 7 of \
                      the 4x3 paper."
            .into(),
        csv: long_csv(&csv_rows, &["best_afterstate_value"], &[false])?,
        source: "Polars scan of ages/*/*/part-0.parquet, column best_afterstate_value".into(),
    })
}

/// P(goal) per age: for every goal variant `goal-T`, one panel per board, the value of the
/// best afterstate of each age. Discounted goals are left out: their values are expected
/// discounts, not probabilities.
fn goal_figure(rows: &[AgeRow], boards: &[String]) -> Result<Option<FigureSpec>, ReportError> {
    let is_goal = |v: &str| {
        Variant::parse(v, Given::default())
            .is_ok_and(|v| matches!(v.kind, Kind::Goal(_)) && v.probability())
    };
    let mut panels = Vec::new();
    let mut csv_rows = Vec::new();
    let mut shown = Vec::new();
    for b in boards {
        let mut variants: Vec<&str> = rows
            .iter()
            .filter(|r| r.board == *b && is_goal(&r.variant))
            .map(|r| r.variant.as_str())
            .collect();
        variants.sort_by_key(|v| (goal_tile(v), v.to_string()));
        variants.dedup();
        if variants.is_empty() {
            continue;
        }
        let mut p = Panel::new("age (sum of the tiles)", "probability of making the goal");
        p.caption = Some(format!("board {b}"));
        p.legend = SeriesLabelPosition::UpperRight;
        for (k, v) in variants.iter().enumerate() {
            let sel: Vec<&AgeRow> = rows
                .iter()
                .filter(|r| r.board == *b && r.variant == *v && r.best_afterstate_value.is_some())
                .collect();
            csv_rows.extend(sel.iter().map(|r| {
                (
                    r.board.clone(),
                    r.variant.clone(),
                    r.age,
                    vec![r.best_afterstate_value],
                )
            }));
            let series = |get: fn(&AgeRow) -> Option<f64>| -> Vec<(f64, f64)> {
                sel.iter()
                    .filter_map(|r| get(r).map(|y| (r.age as f64, y)))
                    .collect()
            };
            p.lines.push(Line {
                label: v.to_string(),
                color: color(k),
                dashed: false,
                points: series(|r| r.best_afterstate_value),
            });
        }
        shown.push(b.as_str());
        panels.push(p);
    }
    if panels.is_empty() {
        return Ok(None);
    }
    let k = panels.len() as u32;
    Ok(Some(FigureSpec {
        figure: Figure {
            name: "goal_probability_per_age".into(),
            title: format!("P(goal) per age — goal variants, boards {}", shown.join(", ")),
            panels,
            width: if k == 1 { 1200 } else { 640 * k },
            height: 760,
        },
        description: "For each solved goal variant goal-T, P(goal) at each age: the value of the best \
                      afterstate of that age, i.e. the probability of ever making T, under optimal play \
                      for T, from the most promising position of that age (after the move, before its \
                      spawn). It reaches 1 from the ages where some position forces T (or holds it: a \
                      board holding T is won, worth 1) and falls to 0 at the last ages, where every \
                      afterstate is lost."
            .into(),
        csv: long_csv(&csv_rows, &["best_afterstate_value"], &[false])?,
        source: "sql/per_age.sql, column best_afterstate_value (variants goal-T, undiscounted)"
            .into(),
    }))
}

/// The goal tile of a goal variant's name, for ordering.
fn goal_tile(variant: &str) -> Option<u8> {
    Variant::parse(variant, Given::default()).ok()?.goal()
}

/// Quantile band of the state values per age for one board; `None` when no age has values.
pub fn quantile_figure(q: &QuantileBand) -> Result<Option<FigureSpec>, ReportError> {
    if q.age.is_empty() {
        return Ok(None);
    }
    let x: Vec<f64> = q.age.iter().map(|&a| a as f64).collect();
    let zip = |v: &[f64]| x.iter().copied().zip(v.iter().copied()).collect::<Vec<_>>();
    let mut p = Panel::new("age (sum of the tiles)", "state value");
    p.bands.push(Band {
        label: "5–95 % of states".into(),
        color: PALETTE[0],
        opacity: 0.18,
        lower: zip(&q.q05),
        upper: zip(&q.q95),
    });
    p.bands.push(Band {
        label: "25–75 % of states".into(),
        color: PALETTE[0],
        opacity: 0.38,
        lower: zip(&q.q25),
        upper: zip(&q.q75),
    });
    p.lines.push(Line {
        label: "median".into(),
        color: PALETTE[0],
        dashed: false,
        points: zip(&q.q50),
    });
    p.lines.push(Line {
        label: "mean".into(),
        color: PALETTE[1],
        dashed: true,
        points: zip(&q.mean),
    });
    let rows: Vec<_> = (0..q.age.len())
        .map(|i| {
            (
                q.board.clone(),
                q.variant.clone(),
                q.age[i],
                vec![
                    Some(q.n[i] as f64),
                    Some(q.q05[i]),
                    Some(q.q25[i]),
                    Some(q.q50[i]),
                    Some(q.q75[i]),
                    Some(q.q95[i]),
                    Some(q.mean[i]),
                ],
            )
        })
        .collect();
    Ok(Some(FigureSpec {
        figure: Figure {
            name: format!("state_value_quantiles_{}", q.board),
            title: format!("Distribution of state values per age — board {}, variant {}", q.board, q.variant),
            panels: vec![p],
            width: 1200,
            height: 760,
        },
        description: format!(
            "Spread of the values of the states of each age on board {} ({}): the bands hold the middle \
             50 % and 90 % of the states, with the median and the mean.",
            q.board, q.variant
        ),
        csv: long_csv(&rows, &["n", "q05", "q25", "q50", "q75", "q95", "mean"], &[true])?,
        source: format!(
            "type-7 quantiles and Polars mean per age over states/board={}/variant={}/ (DuckDB reference: sql/state_value_quantiles.sql)",
            q.board, q.variant
        ),
    }))
}

/// Builds every figure of the per-age tables (the quantile figure, which needs a query over
/// every state, is [`quantile_figure`]).
pub fn build_figures(
    rows: &[AgeRow],
    boards: &[BoardInfo],
    best_by_variant: &[VariantSeries],
) -> Result<Vec<FigureSpec>, ReportError> {
    let mut boards = boards.to_vec();
    boards.sort_by_key(|b| board_key(&b.board));
    let names: Vec<String> = boards.iter().map(|b| b.board.clone()).collect();
    let mut out = vec![counts_figure(rows, &boards)?];
    if !best_by_variant.is_empty() {
        out.push(best_value_figure(best_by_variant, &names)?);
    }
    let mut all_boards: Vec<String> = rows.iter().map(|r| r.board.clone()).collect();
    all_boards.sort_by_key(|b| board_key(b));
    all_boards.dedup();
    out.extend(goal_figure(rows, &all_boards)?);
    out.push(per_board_figure(
        "terminal_share_per_age",
        "Share of terminal states per age",
        "terminal states / states",
        "terminal_share",
        |r| r.terminal_share,
        rows,
        &boards,
        "Fraction of the states of each age in which no move is possible (the game is over).",
        SeriesLabelPosition::UpperLeft,
    )?);
    out.push(per_board_figure(
        "gap_below_1_share_per_age",
        "Share of states with action gap below 1",
        "states with gap < 1 / states with ≥ 2 moves",
        "frac_gap_lt_1",
        |r| r.frac_gap_lt_1,
        rows,
        &boards,
        "Fraction of the states of each age (among those with at least two moves) whose best move is \
         worth less than one point more than the second best: where a wrong move costs little.",
        SeriesLabelPosition::UpperLeft,
    )?);
    out.push(per_board_figure(
        "mean_empty_cells_per_age",
        "Mean number of empty cells per age (afterstates)",
        "mean empty cells of an afterstate",
        "mean_empty_cells_afterstates",
        |r| r.mean_empty_cells_afterstates,
        rows,
        &boards,
        "Average number of empty cells of the afterstates of each age: how crowded the board is \
         before the new tile appears.",
        SeriesLabelPosition::UpperRight,
    )?);
    out.push(per_board_figure(
        "mean_action_gap_per_age",
        "Mean action gap per age",
        "mean of best q − second best q",
        "mean_action_gap",
        |r| r.mean_action_gap,
        rows,
        &boards,
        "Average difference between the values of the best and the second best move, over the states \
         of each age with at least two moves: how much the choice of move matters.",
        SeriesLabelPosition::UpperRight,
    )?);
    Ok(out)
}

/// States optimal play reaches against all states, per age (log scale), for every policy
/// solve kept over the reached states (`solve --reach`); none without such a solve. Read from
/// the manifests (older solves' `ages` tables have no such column).
pub fn reached_figure(store: &crate::store::Store) -> Result<Option<FigureSpec>, ReportError> {
    // Per solve: board, variant, and per age its states and the states reached.
    type Solve = (String, String, Vec<(u64, u64, u64)>);
    let mut solves: Vec<Solve> = store
        .manifests()
        .into_iter()
        .filter_map(|(_, m)| m.ok())
        .filter(|m| m.storage.reach)
        .map(|m| {
            let ages = m
                .ages
                .iter()
                .filter(|a| a.n_states > 0)
                .map(|a| (u64::from(a.age), a.n_states, a.n_reached.unwrap_or(0)))
                .collect();
            (m.board, m.variant, ages)
        })
        .collect();
    if solves.is_empty() {
        return Ok(None);
    }
    solves.sort_by(|a, b| {
        (board_key(&a.0), variant_key(&a.1)).cmp(&(board_key(&b.0), variant_key(&b.1)))
    });
    let mut panel = Panel::new("age (sum of the tiles)", "states per age (log scale)");
    panel.log_y = true;
    panel.legend = SeriesLabelPosition::UpperRight;
    let mut csv_rows = Vec::new();
    for (i, (board, variant, ages)) in solves.iter().enumerate() {
        csv_rows.extend(ages.iter().map(|&(age, n, r)| {
            (
                board.clone(),
                variant.clone(),
                age,
                vec![Some(n as f64), Some(r as f64)],
            )
        }));
        panel.lines.push(Line {
            label: format!("{board} {variant}: all states"),
            color: color(i),
            dashed: false,
            points: ages.iter().map(|&(a, n, _)| (a as f64, n as f64)).collect(),
        });
        panel.lines.push(Line {
            label: format!("{board} {variant}: reached by optimal play"),
            color: color(i),
            dashed: true,
            points: ages
                .iter()
                .filter(|x| x.2 > 0)
                .map(|&(a, _, r)| (a as f64, r as f64))
                .collect(),
        });
    }
    let names: Vec<String> = solves.iter().map(|s| format!("{} {}", s.0, s.1)).collect();
    Ok(Some(FigureSpec {
        figure: Figure {
            name: "reached_states_per_age".into(),
            title: format!(
                "States optimal play reaches, per age — {}",
                names.join(", ")
            ),
            panels: vec![panel],
            width: 1200,
            height: 760,
        },
        description:
            "Per age, every state of the solve (solid) and the states a player reaches who \
                      follows one optimal move of each state from the start (dashed): the states a \
                      policy solve with --reach keeps."
                .into(),
        csv: long_csv(&csv_rows, &["n_states", "n_reached"], &[true, true])?,
        source: "manifest, ages[].n_states and ages[].n_reached".into(),
    }))
}

/// The board drawn in the quantile figure: the largest board whose main variant has states.
pub fn quantile_board(boards: &[BoardInfo], store: &crate::store::Store) -> Option<BoardInfo> {
    let mut v: Vec<&BoardInfo> = boards
        .iter()
        .filter(|b| super::frames::partition_dir(store, "states", &b.board, &b.variant).is_some())
        .collect();
    v.sort_by_key(|b| board_key(&b.board));
    v.last().map(|b| (*b).clone())
}

/// Main variant per board: expectation if present, else the first variant in report order.
pub fn main_variants(rows: &[AgeRow]) -> BTreeMap<String, String> {
    let mut m: BTreeMap<String, String> = BTreeMap::new();
    for r in rows {
        let e = m
            .entry(r.board.clone())
            .or_insert_with(|| r.variant.clone());
        if variant_key(&r.variant) < variant_key(e) {
            *e = r.variant.clone();
        }
    }
    m
}

/// The figure of `age2048 evaluate`: the mean regret of the agent's moves per age (with the
/// largest, dashed), and the share of its moves that are optimal.
pub fn regret_per_age(ev: &crate::query::evaluate::LogEvaluation) -> Figure {
    let x = |a: &crate::query::evaluate::AgeRegret| f64::from(a.age);
    let unit = if ev.scored { "points" } else { "probability" };
    let mut regret = Panel::new("age (sum of the tiles)", &format!("regret ({unit})"));
    regret.caption = Some("regret of the moves played".into());
    regret.lines.push(Line {
        label: "mean regret".into(),
        color: PALETTE[0],
        dashed: false,
        points: ev.ages.iter().map(|a| (x(a), a.mean_regret())).collect(),
    });
    regret.lines.push(Line {
        label: "largest regret".into(),
        color: PALETTE[3],
        dashed: true,
        points: ev.ages.iter().map(|a| (x(a), a.max_regret)).collect(),
    });
    let mut share = Panel::new("age (sum of the tiles)", "optimal moves / moves");
    share.caption = Some("share of optimal moves".into());
    share.legend = SeriesLabelPosition::LowerLeft;
    share.lines.push(Line {
        label: "optimal share".into(),
        color: PALETTE[2],
        dashed: false,
        points: ev.ages.iter().map(|a| (x(a), a.optimal_share())).collect(),
    });
    Figure {
        name: crate::store::evaluation::FIGURE.into(),
        title: format!(
            "Regret per age — board {}, variant {}, {} moves in {} games",
            ev.board,
            ev.variant,
            ev.moves.len(),
            ev.games.len()
        ),
        panels: vec![regret, share],
        width: 1400,
        height: 700,
    }
}
