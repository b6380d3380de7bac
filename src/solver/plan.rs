//! The memory budget of a solve (`solve --memory`): what the passes may hold, planned from the
//! budget before the forward pass (how many ids a layer being grown holds raw before its runs
//! are packed, [`super::spill`]) and from the forward pass's counts before the backward pass
//! (which ages are valued streamed, and whether the value tables hold f64 or fixed point).
//!
//! The sizes are models, not measurements: bytes an id of each structure the pass holds at an
//! age's peak, with the allocator's and the kernel's share on top ([`SLACK`]); the budgeted
//! solves of `benches/scale.sh` record the peak they reached beside the budget they were given.

use super::table::{self, Coding};
use super::{Result, SolveError};
use crate::rules::Variant;

/// The least budget a solve can keep to: the process, a forward batch's buffers and sort
/// scratch (2^25 ids), a stream's round of ranges, the writer's buffers.
pub const MIN_BUDGET: u64 = 1 << 30;

/// Share of the machine's memory a solve takes by default.
const DEFAULT_SHARE: f64 = 0.8;

/// What the models leave to the allocator and the kernel (freed blocks kept, huge pages'
/// rounding): a model's bytes are multiplied by it.
const SLACK: f64 = 1.25;

/// Fixed bytes of a pass besides its layers' (the process, batches, buffers).
const FIXED: f64 = 768.0 * (1 << 20) as f64;

/// The budget when none is given: a share of the machine's memory (`MemTotal`), or
/// [`MIN_BUDGET`] × 8 where that cannot be read.
pub fn default_budget() -> u64 {
    let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        m.lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kb| kb * 1024)
    });
    total.map_or(MIN_BUDGET * 8, |t| (t as f64 * DEFAULT_SHARE) as u64)
}

/// How a solve spends its budget.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    pub budget: u64,
    pub forward: super::forward::ForwardPlan,
    /// Every age valued streamed whatever it needs (the tests' way to run the budgeted paths
    /// on boards that fit any budget).
    pub stream_all: bool,
}

impl Plan {
    /// The plan of a budget of `budget` bytes; an error if no solve can keep to it.
    pub fn new(budget: u64) -> Result<Plan> {
        if budget < MIN_BUDGET {
            return Err(SolveError::Budget(format!(
                "--memory {}: a solve needs at least {} (the process, a batch's buffers, a \
                 stream's ranges)",
                human(budget),
                human(MIN_BUDGET)
            )));
        }
        // A layer being grown holds raw at most a twelfth of the budget before it is packed:
        // two such layers and the age's afterstates, one merge's copy, packed runs and the
        // batches fit beside one another.
        let cap = (budget / 12 / 8) as usize;
        Ok(Plan {
            budget,
            forward: super::forward::ForwardPlan { cap },
            stream_all: false,
        })
    }

    /// The plan of `budget` that packs layers beyond `cap` ids and values every age
    /// streamed, fitting or not (`solve --stream-cap`, for the tests).
    pub fn streaming(budget: u64, cap: usize) -> Result<Plan> {
        let mut plan = Plan::new(budget)?;
        plan.forward.cap = cap.max(1);
        plan.stream_all = true;
        Ok(plan)
    }

    /// The backward pass's plan from the forward pass's counts (`(age, states, afterstates)`
    /// per age), for `k` variants: the tables' coding (f64 if every age fits with it, else
    /// fixed point) and the ages valued streamed (those whose whole valuing does not fit).
    /// An error names the age that fits in no way.
    pub fn backward(
        &self,
        counts: &[(u32, u64, u64)],
        variants: &[Variant],
    ) -> Result<BackwardPlan> {
        let k = variants.len();
        let of = |age: u32| {
            counts
                .iter()
                .find(|c| c.0 == age)
                .map_or((0.0, 0.0), |c| (c.1 as f64, c.2 as f64))
        };
        let budget = self.budget as f64;
        let fits = |coding: Coding| -> std::result::Result<Vec<u32>, (u32, f64)> {
            let mut streamed = Vec::new();
            for &(age, _, _) in counts {
                let (s, a) = of(age);
                let (s2, s4) = (of(age + 2).0, of(age + 4).0);
                if !self.stream_all && whole_bytes(k, coding, s, a, s2, s4) <= budget {
                    continue;
                }
                let need = streamed_bytes(k, coding, self.forward.cap, s, a, s2, s4);
                if need > budget {
                    return Err((age, need));
                }
                streamed.push(age);
            }
            Ok(streamed)
        };
        let f64_plan = fits(Coding::F64);
        let (coding, streamed) = match f64_plan {
            Ok(s) => (Coding::F64, s),
            Err(_) => {
                let coding = fixed_coding(variants, counts);
                match fits(coding) {
                    Ok(s) => (coding, s),
                    Err((age, need)) => {
                        return Err(SolveError::Budget(format!(
                            "--memory {}: age {age} needs about {} even with fixed-point values \
                             streamed from the work files",
                            human(self.budget),
                            human(need as u64)
                        )))
                    }
                }
            }
        };
        Ok(BackwardPlan { coding, streamed })
    }
}

/// How the backward pass values its ages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackwardPlan {
    pub coding: Coding,
    /// Ages valued streamed, descending as the counts were given.
    pub streamed: Vec<u32>,
}

/// The fixed point that holds every value of `variants`: probabilities at 2^-31 (1 fits a
/// u32), points at the most fraction bits under which the largest score a game of the
/// board's largest age can make fits (each tile `2^e` made by merges scores at most
/// `(e - 1)·2^e`, so a board of age `m` scores at most `m·log2 m`).
pub fn fixed_coding(variants: &[Variant], counts: &[(u32, u64, u64)]) -> Coding {
    if variants.iter().all(|v| !v.scored()) {
        return Coding::Fixed32 { fraction_bits: 31 };
    }
    let top = counts.iter().map(|c| c.0).max().unwrap_or(4).max(4) as f64;
    let bound = top * top.log2();
    let int_bits = (bound + 1.0).log2().ceil() as i32;
    Coding::Fixed32 {
        fraction_bits: (32 - int_bits).clamp(0, 31) as u8,
    }
}

/// Bytes of a value table of `n` ids.
fn table_bytes(k: usize, coding: Coding, n: f64) -> f64 {
    n * table::PerfectTable::bytes_per_id(k, coding)
}

/// The whole valuing of an age (`s` states, `a` afterstates, `s2`, `s4` states of ages n + 2
/// and n + 4): both tables, the age's ids and values and records, the level built beside them
/// (measured at 53–57 bytes a state of 4x4 `goal-32`'s largest ages with f64).
fn whole_bytes(k: usize, coding: Coding, s: f64, a: f64, s2: f64, s4: f64) -> f64 {
    let kf = k as f64;
    let tables = table_bytes(k, coding, s2) + table_bytes(k, coding, s4);
    let age = s * (8.0 + 8.0 * kf + 20.0 * kf) + a * (8.0 + 16.0 * kf);
    (tables + age + table_bytes(k, coding, s)) * SLACK + FIXED
}

/// The streamed valuing of an age: the states' and afterstates' ids never whole. First the
/// tables of n + 2 and n + 4 beside the afterstates made again (packed runs within the
/// forward cap, about 2 bytes an afterstate packed) and their table being built; then the
/// tables of n + 2 and of the afterstates beside the age's own being built.
fn streamed_bytes(k: usize, coding: Coding, cap: usize, s: f64, a: f64, s2: f64, s4: f64) -> f64 {
    let t = |n| table_bytes(k, coding, n);
    // The tables are single allocations of their planned size; the rest takes the slack.
    let remake = ((cap as f64 * 8.0).min(a * 8.0) + 2.0 * a) * SLACK;
    let first = t(s2) + t(s4) + t(a) + remake;
    let second = t(s2) + t(a) + t(s) + s * 0.5 * SLACK;
    first.max(second) + FIXED
}

/// Bytes as people read them (GiB with two decimals, or MiB).
pub fn human(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= (1u64 << 30) as f64 {
        format!("{:.2} GiB", b / (1u64 << 30) as f64)
    } else {
        format!("{:.0} MiB", b / (1u64 << 20) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::variant::Given;

    fn variant(name: &str) -> Variant {
        Variant::parse(name, Given::default()).unwrap()
    }

    /// Ages 4.. of `n` states each and half as many afterstates.
    fn counts(top: u32, n: u64) -> Vec<(u32, u64, u64)> {
        (4..=top).step_by(2).map(|a| (a, n, n / 2)).collect()
    }

    #[test]
    fn a_budget_below_the_least_is_refused_naming_both() {
        let e = Plan::new(MIN_BUDGET - 1).unwrap_err().to_string();
        assert!(e.starts_with("--memory 1024 MiB"), "{e}");
        assert!(e.contains("at least 1.00 GiB"), "{e}");
        assert!(Plan::new(MIN_BUDGET).is_ok());
    }

    #[test]
    fn the_plan_holds_f64_where_it_fits_then_streams_then_rounds_then_refuses() {
        let goal = [variant("goal-64")];
        let plan = Plan::new(16 << 30).unwrap();
        // Small ages: everything whole, f64.
        let small = plan.backward(&counts(200, 1 << 20), &goal).unwrap();
        assert_eq!(
            small,
            BackwardPlan {
                coding: Coding::F64,
                streamed: vec![]
            }
        );
        // Ages of 500 M states: f64 tables do not fit 16 GiB even streamed; fixed point does.
        let big = plan.backward(&counts(40, 500 << 20), &goal).unwrap();
        assert_eq!(big.coding, Coding::Fixed32 { fraction_bits: 31 });
        assert_eq!(big.streamed.len(), 19);
        // Ages of 4 G states fit in no way: the age and what it needs are named.
        let e = plan
            .backward(&counts(40, 4 << 30), &goal)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--memory 16.00 GiB: age 4 needs about"), "{e}");
        // Everything streamed when asked, whatever fits.
        let all = Plan::streaming(16 << 30, 100).unwrap();
        assert_eq!(
            all.backward(&counts(20, 1000), &goal)
                .unwrap()
                .streamed
                .len(),
            9
        );
    }

    #[test]
    fn points_get_the_fraction_bits_their_largest_score_leaves() {
        let e = [variant("expectation")];
        // 4x3 reaches ages of about 6,000: scores below 6000·log2(6000) < 2^17.
        assert_eq!(
            fixed_coding(&e, &counts(6000, 1)),
            Coding::Fixed32 { fraction_bits: 15 }
        );
        assert_eq!(
            fixed_coding(&[variant("goal-2048")], &counts(6000, 1)),
            Coding::Fixed32 { fraction_bits: 31 }
        );
    }
}
