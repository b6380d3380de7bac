//! The solved boards and variants of the data directory, each opened once for look-ups
//! (`query::Tablebase`), and what each holds: its layout, counts and values at the starts. A
//! solve that cannot be opened for look-ups is kept with its reason, shown as lacking.

use serde_json::{json, Value};

use super::ApiError;
use crate::error::one_line;
use crate::query::catalog::Contents;
use crate::query::Tablebase;
use crate::rules::variant::Given;
use crate::rules::{Shape, Variant};
use crate::store::{Manifest, Store, StoreError};

/// One finished solve.
pub struct Solve {
    pub shape: Shape,
    pub variant: Variant,
    pub manifest: Manifest,
    /// The solve opened for look-ups, or why it cannot be.
    pub tablebase: Result<Tablebase, String>,
}

impl Solve {
    pub fn board(&self) -> String {
        self.shape.to_string()
    }

    pub fn name(&self) -> String {
        self.variant.name()
    }

    fn json(&self) -> Value {
        let m = &self.manifest;
        let s = &m.storage;
        json!({
            "board": self.board(),
            "variant": self.name(),
            "scored": self.variant.scored(),
            "unit": self.variant.unit(),
            "goal": self.variant.goal().map(|g| 1u32 << g),
            "p4": self.variant.p4,
            "discount": m.discount,
            "layout": s.describe(),
            "full": s.is_full(),
            "state_ids": s.state_ids(),
            "states": m.n_states,
            "afterstates": m.n_afterstates,
            "max_tile": m.max_tile,
            "min_age": m.min_age,
            "max_age": m.max_age,
            "value_two_2_tiles": m.value_two_2_tiles,
            "value_initial": m.value_initial,
            "value_initial_distinct": m.value_initial_distinct,
            "lookups": self.tablebase.as_ref().err().map_or(Value::Null, |e| json!(e)),
        })
    }
}

/// Every finished solve, in the order boards and variants are listed.
pub struct Solved {
    store: Store,
    solves: Vec<Solve>,
    /// Unfinished solves (left out), as `board variant`.
    unfinished: Vec<String>,
}

/// Expectation first, then the other spawn rules, then goals and the rest by name, the
/// numbers in a name compared as numbers (goal-16, goal-128, goal-1024).
fn variant_rank(v: &Variant) -> (u8, Vec<(String, u64)>) {
    let n = v.name();
    let r = match n.as_str() {
        "expectation" => 0,
        "optimistic" => 1,
        "pessimistic" => 2,
        _ => 3,
    };
    (r, natural(&n))
}

/// A name as runs of other characters, each with the number that follows it (0 if none).
fn natural(name: &str) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let mut text = String::new();
    let mut chars = name.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            let mut n = u64::from(c as u8 - b'0');
            while let Some(d) = chars.peek().and_then(|d| d.to_digit(10)) {
                n = n.saturating_mul(10).saturating_add(u64::from(d));
                chars.next();
            }
            out.push((std::mem::take(&mut text), n));
        } else {
            text.push(c);
        }
    }
    if !text.is_empty() {
        out.push((text, 0));
    }
    out
}

impl Solved {
    /// Opens every solve `contents` lists (the catalog's check has passed them).
    pub fn open(store: &Store, contents: &Contents) -> Solved {
        let mut solves: Vec<Solve> = contents
            .solved
            .iter()
            .filter_map(|s| {
                // A variant name the solver wrote always parses; one that does not is not ours.
                let variant = Variant::parse(&s.variant, Given::default()).ok()?;
                let tablebase = Tablebase::open(store, s.shape, variant).map_err(|e| one_line(&e));
                Some(Solve {
                    shape: s.shape,
                    variant,
                    manifest: s.manifest.clone(),
                    tablebase,
                })
            })
            .collect();
        solves.sort_by_key(|s| (s.shape.cells(), s.shape.rows(), variant_rank(&s.variant)));
        Solved {
            store: store.clone(),
            solves,
            unfinished: contents
                .unfinished
                .iter()
                .map(|p| format!("{} {}", p.board, p.variant))
                .collect(),
        }
    }

    pub fn all(&self) -> &[Solve] {
        &self.solves
    }

    /// The solves of one board.
    pub fn of_board(&self, shape: Shape) -> impl Iterator<Item = &Solve> {
        self.solves.iter().filter(move |s| s.shape == shape)
    }

    /// The board named `board` and the tablebase of its variant named `variant` (with `p4`
    /// and a discount in the name, as `best --variant` takes them): 400 for a malformed name,
    /// 404 for one not solved here, as the CLI says it.
    pub fn find(&self, board: &str, variant: &str) -> Result<(&Solve, &Tablebase), ApiError> {
        let shape = Shape::parse(board)?;
        let variant = Variant::parse(variant, Given::default())?;
        let name = variant.name();
        let solve = self
            .solves
            .iter()
            .find(|s| s.shape == shape && s.name() == name)
            .ok_or_else(|| {
                ApiError::from(StoreError::NotSolved {
                    dir: self.store.root().to_path_buf(),
                    board: shape.to_string(),
                    variant: name.clone(),
                })
            })?;
        match &solve.tablebase {
            Ok(tb) => Ok((solve, tb)),
            Err(why) => Err(ApiError::new(503, why.clone())),
        }
    }

    /// What `/api/info` lists: every solve, and the unfinished ones left out.
    pub fn json(&self) -> Value {
        json!({
            "solves": self.solves.iter().map(Solve::json).collect::<Vec<_>>(),
            "unfinished": self.unfinished,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_are_listed_in_numeric_order() {
        let names = [
            "goal-1024",
            "goal-16",
            "pessimistic",
            "goal-128",
            "goal-2048-p4=0.2",
            "expectation",
            "goal-2048",
            "guaranteed-64",
            "goal-256",
            "optimistic",
        ];
        let mut variants: Vec<Variant> = names
            .iter()
            .map(|n| Variant::parse(n, Given::default()).unwrap())
            .collect();
        variants.sort_by_key(variant_rank);
        let sorted: Vec<String> = variants.iter().map(Variant::name).collect();
        assert_eq!(
            sorted,
            [
                "expectation",
                "optimistic",
                "pessimistic",
                "goal-16",
                "goal-128",
                "goal-256",
                "goal-1024",
                "goal-2048",
                "goal-2048-p4=0.2",
                "guaranteed-64",
            ]
        );
    }
}
