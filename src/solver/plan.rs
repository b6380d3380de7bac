//! The memory budget of a solve (`solve --memory`): what the passes may hold, planned from the
//! budget before the forward pass (how many ids a layer being grown holds raw before its runs
//! are packed, [`super::spill`]) and from the forward pass's counts before the backward pass
//! (which ages are valued streamed, and whether the value tables hold f64 or fixed point).
//!
//! The sizes are models, not measurements: bytes an id of each structure the pass holds at an
//! age's peak, plus a fixed part ([`Plan::fixed`]) for what does not grow with the board. What
//! an age needs depends on the counts alone, never on the budget, so a refusal can name the
//! smallest budget that holds every age ([`Plan::smallest`]), and that budget is then
//! accepted. The budgeted solves of `benches/budget.sh` record the peak they reached beside
//! the smallest budget named.

use super::table::{self, Coding};
use super::{Result, SolveError};
use crate::rules::Variant;

/// What a solve holds whatever the board ([`Plan::fixed`] by default): the process (the
/// binary and its libraries, each thread's stack and buffers), a streamed chunk's ids, values
/// and records ([`super::backward`]: 2^20 ids), a stream's round of ranges
/// ([`super::spill`]), the Parquet and policy writers' buffers, and the writer's queue of
/// finished ages ([`WRITE_AHEAD_BUDGETED`]).
pub const FIXED: u64 = 256 << 20;

/// The least budget a solve can keep to with the default fixed part ([`least_budget`]).
pub const MIN_BUDGET: u64 = least_budget(FIXED);

/// The least budget a solve can keep to with a fixed part of `fixed` bytes: that, and half
/// as much again for the forward pass's raw layers and batches ([`Plan::with_fixed`]). Half,
/// not as much again: their caps scale with what the budget leaves beyond the fixed part, so
/// a process whose share is small need not be given a second fixed part for them
/// (`reports/bench/mpi.md`).
pub const fn least_budget(fixed: u64) -> u64 {
    fixed + fixed / 2
}

/// The writer's queue of finished ages under a budget that leaves no more room for it (the
/// default is `solver::DEFAULT_WRITE_AHEAD`): part of [`FIXED`].
pub const WRITE_AHEAD_BUDGETED: u64 = 64 << 20;

/// Share of the machine's memory a solve takes by default.
const DEFAULT_SHARE: f64 = 0.8;

/// What the models leave to the allocator and the kernel (freed blocks kept, huge pages'
/// rounding) on the vectors of an age: a model's bytes are multiplied by it. The value
/// tables are single allocations of their planned size and take none.
const SLACK: f64 = 1.25;

/// Bytes a state and an afterstate of a streamed age's work file, read whole into memory
/// (the layer code takes 3.7–5.2 bits an id; rounded up).
const LAYER_FILE_BYTES: f64 = 0.75;

/// Bytes a state the writer keeps until the age is valued (the policy layout's move of each
/// state).
const WRITER_BYTES: f64 = 1.0;

/// The budget when none is given: a share of this host's memory (`MemTotal`), or
/// [`MIN_BUDGET`] × 16 where that cannot be read, split evenly between the `sharers`
/// processes of the solve on this host (over several hosts, each host's own: a process
/// shares its host's memory, not another's).
pub fn default_budget(sharers: u32) -> u64 {
    let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        m.lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kb| kb * 1024)
    });
    let machine = total.map_or(MIN_BUDGET * 16, |t| (t as f64 * DEFAULT_SHARE) as u64);
    machine / u64::from(sharers.max(1))
}

/// The memory budget of a solve, resolved once (`solve --memory`, or a share of the
/// host's) and carried by its configuration: what the plan is made from, and what the
/// allocator keeps of freed memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryBudget {
    /// The bytes the solve may hold at once.
    pub bytes: u64,
    /// The fixed part the models assume ([`FIXED`], unless `solve --fixed-memory`).
    pub fixed: u64,
    /// Given by the user: then what the solve frees goes back at once (`solver::huge`).
    pub given: bool,
    /// The processes of the solve on this host, between which the default is split.
    pub sharers: u32,
}

impl MemoryBudget {
    /// `given` bytes, or the default for `sharers` processes on this host
    /// ([`default_budget`]), with a fixed part of `fixed` bytes (or [`FIXED`]); an error if no
    /// solve can keep to it.
    pub fn resolve(given: Option<u64>, fixed: Option<u64>, sharers: u32) -> Result<MemoryBudget> {
        let budget = MemoryBudget {
            bytes: given.unwrap_or_else(|| default_budget(sharers)),
            fixed: fixed.unwrap_or(FIXED),
            given: given.is_some(),
            sharers: sharers.max(1),
        };
        budget.plan()?;
        Ok(budget)
    }

    /// The plan of this budget.
    pub fn plan(&self) -> Result<Plan> {
        Plan::with_fixed(self.bytes, self.fixed)
    }

    /// The budget and where it comes from, as the solve tells it at the start.
    pub fn describe(&self) -> String {
        let origin = if self.given {
            "--memory".to_string()
        } else if self.sharers > 1 {
            format!(
                "80 % of this host's over the solve's {} processes on it; --memory sets \
                 each one's",
                self.sharers
            )
        } else {
            "80 % of this host's; --memory sets it".to_string()
        };
        format!("memory budget {} ({origin})", human(self.bytes))
    }
}

/// How a solve spends its budget.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    pub budget: u64,
    /// The fixed part the models add to every age's need ([`FIXED`]; the tests plan small
    /// boards as if they were big with a smaller one, `solve --fixed-memory`).
    pub fixed: u64,
    pub forward: super::forward::ForwardPlan,
    /// Every age valued streamed whatever it needs (the tests' way to run the budgeted paths
    /// on boards that fit any budget).
    pub stream_all: bool,
}

impl Plan {
    /// The plan of a budget of `budget` bytes; an error if no solve can keep to it.
    pub fn new(budget: u64) -> Result<Plan> {
        Plan::with_fixed(budget, FIXED)
    }

    /// [`Plan::new`] with a fixed part of `fixed` bytes instead of [`FIXED`] (the least
    /// budget is then [`least_budget`]`(fixed)`).
    pub fn with_fixed(budget: u64, fixed: u64) -> Result<Plan> {
        let least = least_budget(fixed);
        if budget < least {
            return Err(SolveError::Budget(format!(
                "--memory {}: a solve needs at least {} (the process, a batch's buffers, a \
                 stream's ranges, the writer's queue)",
                human(budget),
                human(least)
            )));
        }
        // The forward pass's raw layers and batches are drawn from what the budget leaves
        // beyond the fixed part: the rest holds the process and what grows with the age
        // (packed runs, a streamed age's encoded file). Drawn from the whole budget, they
        // took the least budget past itself (4x3 `goal-256` given 512 MiB: 544 MiB at age 268).
        let usable = budget - fixed;
        // A layer being grown holds raw at most a twelfth of that before it is packed: two
        // such layers and the age's afterstates, one merge's copy, packed runs and the
        // batches fit beside one another.
        let cap = (usable / 12 / 8).max(1) as usize;
        // A batch of children holds at most a thirty-second of it (a batch's ids, their sort
        // scratch and the runs cut from them are a few times that).
        let batch = ((usable / 32 / 8) as usize).clamp(1 << 16, super::forward::BATCH_IDS);
        Ok(Plan {
            budget,
            fixed,
            forward: super::forward::ForwardPlan { cap, batch },
            stream_all: false,
        })
    }

    /// This plan, packing layers beyond `cap` ids and valuing every age streamed where the
    /// layout allows, fitting or not (`solve --stream-cap`, for the tests).
    pub fn streaming(mut self, cap: usize) -> Plan {
        self.forward.cap = cap.max(1);
        self.stream_all = true;
        self
    }

    /// The backward pass's plan from the forward pass's counts (`(age, states, afterstates)`
    /// per age), for `k` variants, where ages may be valued streamed only if `can_stream` (the
    /// policy layout): the tables' coding (f64 if every age fits with it, else fixed point),
    /// the ages valued streamed (those whose whole valuing does not fit) and the writer's
    /// queue. An error names the age that fits in no way and the smallest budget that holds
    /// every age ([`Plan::smallest`]).
    pub fn backward(
        &self,
        counts: &[(u32, u64, u64)],
        variants: &[Variant],
        can_stream: bool,
    ) -> Result<BackwardPlan> {
        let smallest = self.smallest(counts, variants, can_stream);
        self.backward_of(
            &Needs::new(counts, &[]),
            variants,
            can_stream,
            smallest,
            None,
        )
    }

    /// [`Plan::backward`] of one of the processes of a solve, from its own counts and
    /// `ghosts` (`(age, ids)`: the afterstates of an age its states move to that others own,
    /// fetched a segment of states at a time; none in one process): `smallest` is the job's
    /// ([`Plan::smallest_of`] over every process), which a refusal names, and `coding`, where
    /// given, the tables' coding every process agreed on.
    pub fn backward_of(
        &self,
        needs: &Needs,
        variants: &[Variant],
        can_stream: bool,
        smallest: u64,
        coding: Option<Coding>,
    ) -> Result<BackwardPlan> {
        let counts = needs.counts;
        let budget = self.budget as f64;
        let ages = |coding| self.ages(needs, variants.len(), coding, can_stream, Some(budget));
        let fit = |coding| -> std::result::Result<(Vec<u32>, f64), (u32, f64)> {
            let mut streamed = Vec::new();
            let mut peak = (0, 0.0);
            for (age, need, is_streamed) in ages(coding) {
                if need > peak.1 {
                    peak = (age, need);
                }
                if is_streamed {
                    streamed.push(age);
                }
            }
            // The age that needs the most is the one named.
            if peak.1 > budget {
                return Err(peak);
            }
            Ok((streamed, peak.1))
        };
        let first = fit(coding.unwrap_or(Coding::F64));
        let (coding, (streamed, peak)) = match first {
            Ok(s) => (coding.unwrap_or(Coding::F64), s),
            Err(e) => {
                let coding = coding.unwrap_or_else(|| fixed_coding(variants, counts));
                let again = if coding == Coding::F64 {
                    Err(e)
                } else {
                    fit(coding)
                };
                match again {
                    Ok(s) => (coding, s),
                    Err((age, need)) => {
                        let how = if coding == Coding::F64 {
                            "with f64 values (a rigorous variant's values are held exactly, \
                             never in the tables' fixed point)"
                        } else if can_stream {
                            "even with fixed-point values streamed from the work files"
                        } else {
                            "even with fixed-point values, valued whole (only the policy layout \
                             is valued a chunk at a time, over several processes only under \
                             parts by tiles)"
                        };
                        return Err(SolveError::Budget(format!(
                            "--memory {}: age {age} needs about {} {how}; the smallest budget \
                             that holds every age is --memory {}",
                            human(self.budget),
                            human(need as u64),
                            size_arg(smallest)
                        )));
                    }
                }
            }
        };
        // The queue of finished ages takes what the budget leaves above the planned peak, at
        // least its share of the fixed part.
        let spare = (budget - peak).max(0.0) as u64;
        Ok(BackwardPlan {
            coding,
            streamed,
            write_ahead_limit: spare.max(WRITE_AHEAD_BUDGETED),
        })
    }

    /// The smallest budget with which [`Plan::backward`] holds every age of these counts: the
    /// largest need of an age valued in the cheapest way it can be (fixed point, streamed
    /// where allowed), rounded up to a whole MiB, and never below the least budget.
    pub fn smallest(
        &self,
        counts: &[(u32, u64, u64)],
        variants: &[Variant],
        can_stream: bool,
    ) -> u64 {
        self.smallest_of(&Needs::new(counts, &[]), variants, can_stream)
    }

    /// [`Plan::smallest`] of one of the processes of a solve, its ghosts counted
    /// ([`Plan::backward_of`]); the job's is the largest of its processes'.
    pub fn smallest_of(&self, needs: &Needs, variants: &[Variant], can_stream: bool) -> u64 {
        let coding = fixed_coding(variants, needs.counts);
        let need = self
            .ages(needs, variants.len(), coding, can_stream, None)
            .map(|(_, need, _)| need)
            .fold(0.0, f64::max);
        let least = least_budget(self.fixed);
        let mib = 1u64 << 20;
        ((need.ceil() as u64).div_ceil(mib) * mib).max(least)
    }

    /// Per age: its need in bytes as it would be valued within `budget` (whole if that fits
    /// and streaming is not forced, else streamed where allowed; with no budget, the cheaper
    /// way), and whether it is streamed. An age's need depends on the counts only.
    fn ages<'a>(
        &'a self,
        needs: &'a Needs<'a>,
        k: usize,
        coding: Coding,
        can_stream: bool,
        budget: Option<f64>,
    ) -> impl Iterator<Item = (u32, f64, bool)> + 'a {
        let counts = needs.counts;
        let of = move |age: u32| {
            counts
                .iter()
                .find(|c| c.0 == age)
                .map_or((0.0, 0.0), |c| (c.1 as f64, c.2 as f64))
        };
        let ghosts_of = move |age: u32| {
            (needs.ghosts.iter())
                .find(|c| c.0 == age)
                .map_or(0.0, |c| c.1 as f64)
        };
        let fixed = self.fixed as f64;
        let segment = needs.segment as f64;
        counts.iter().map(move |&(age, _, _)| {
            let (s, a) = of(age);
            let (s2, s4) = (of(age + 2).0, of(age + 4).0);
            // The ghosts of one segment of the age's states at a time.
            let g = ghosts_of(age) * (segment / s.max(1.0)).min(1.0);
            let whole = whole_bytes(k, coding, s, a, s2, s4) + ghost_bytes(k, coding, g) + fixed;
            if !can_stream {
                return (age, whole, false);
            }
            let streamed = streamed_bytes(k, coding, (s, a, g), s2, s4) + fixed;
            let Some(budget) = budget else {
                return (age, whole.min(streamed), streamed < whole);
            };
            if !self.stream_all && whole <= budget.max(streamed) {
                // Whole where it fits; where neither fits, whole if it needs no more.
                (age, whole, false)
            } else {
                (age, streamed, true)
            }
        })
    }
}

/// What a process's backward pass holds, age by age: its counts `(age, states, afterstates)`
/// and its ghosts `(age, afterstates others own that its states move to)` (none in one
/// process; an age not listed has none).
pub struct Needs<'a> {
    pub counts: &'a [(u32, u64, u64)],
    pub ghosts: &'a [(u32, u64)],
    /// The most states whose ghosts the process holds at once: a segment of an age's states,
    /// whose ghosts are fetched for it (the Parquet writer's row group is the largest).
    segment: usize,
}

impl<'a> Needs<'a> {
    pub fn new(counts: &'a [(u32, u64, u64)], ghosts: &'a [(u32, u64)]) -> Needs<'a> {
        let segment = crate::store::ROWS_PER_GROUP;
        Needs {
            counts,
            ghosts,
            segment,
        }
    }

    /// The needs of one of the `processes` of a solve, whose row groups, and so segments, are
    /// [`crate::store::rows_per_group`]'s.
    pub fn over(self, processes: u32) -> Needs<'a> {
        let segment = crate::store::rows_per_group(processes);
        Needs { segment, ..self }
    }
}

/// How the backward pass values its ages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackwardPlan {
    pub coding: Coding,
    /// Ages valued streamed, descending as the counts were given.
    pub streamed: Vec<u32>,
    /// The most bytes of finished ages the writer's queue may hold within the budget (the
    /// solve takes the smaller of this and its `write_ahead`: [`BackwardPlan::write_ahead`]).
    pub write_ahead_limit: u64,
}

impl BackwardPlan {
    /// The bytes of finished ages one process's writer queue holds: the job's `asked`
    /// (`solve --write-ahead`) split evenly between its `processes`, within what the budget
    /// leaves. Each process holds its share of every age, so it hands an age over whole, or
    /// writes it as it values it, as one process would, and its queue holds as much a state of
    /// its share (one process's queue in each would hold whole the ages of which one process
    /// holds none: those it writes as it values them).
    pub fn write_ahead(&self, asked: u64, processes: u32) -> u64 {
        (asked / u64::from(processes.max(1))).min(self.write_ahead_limit)
    }
}

/// The fixed point that holds every value of `variants`: probabilities at 2^-31 (1 fits a
/// u32), points at the most fraction bits under which the largest score a game of the
/// board's largest age can make fits (each tile `2^e` made by merges scores at most
/// `(e - 1)·2^e`, so a board of age `m` scores at most `m·log2 m`).
///
/// A rigorous variant's values (`rules::rigorous`) are held exactly whatever the budget: its
/// values lie on a grid of 2^-32 or finer up to 1 inclusive, which no u32 code holds, and a
/// value rounded to nearest would no longer be a lower bound. With one, this is f64.
pub fn fixed_coding(variants: &[Variant], counts: &[(u32, u64, u64)]) -> Coding {
    if variants.iter().any(|v| v.rigor().is_some()) {
        return Coding::F64;
    }
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
/// and n + 4), besides the fixed part: both tables, the age's ids and values and records, the
/// level built beside them.
fn whole_bytes(k: usize, coding: Coding, s: f64, a: f64, s2: f64, s4: f64) -> f64 {
    let kf = k as f64;
    let tables = table_bytes(k, coding, s2) + table_bytes(k, coding, s4);
    let age = s * (8.0 + 8.0 * kf + 20.0 * kf) + a * (8.0 + 16.0 * kf);
    tables + table_bytes(k, coding, s) + age * SLACK
}

/// What the `g` ghosts of a segment of an age's states add to its valuing over several
/// processes: their ids and fetched values, and the table they are looked up in.
fn ghost_bytes(k: usize, coding: Coding, g: f64) -> f64 {
    g * (8.0 + 8.0 * k as f64) * SLACK + table_bytes(k, coding, g)
}

/// The streamed valuing of an age of `s` states, `a` afterstates and `g` ghosts of a segment
/// of its states (over several processes: the afterstates others own that they move to),
/// besides the fixed part: the states' and afterstates' ids never whole, read a chunk at a
/// time from the age's work file (held compressed). First the tables of n + 2 and n + 4
/// beside the afterstates' table being built; then the tables of n + 2 and of the
/// afterstates beside the age's own being built, a segment's ghosts and the writer's byte a
/// state.
fn streamed_bytes(k: usize, coding: Coding, (s, a, g): (f64, f64, f64), s2: f64, s4: f64) -> f64 {
    let t = |n| table_bytes(k, coding, n);
    let file = (s + a) * LAYER_FILE_BYTES;
    let first = t(s2) + t(s4) + t(a);
    let second = t(s2) + t(a) + t(s) + s * WRITER_BYTES * SLACK + ghost_bytes(k, coding, g);
    first.max(second) + file
}

/// A budget as `--memory` takes it: whole MiB (`1800M`).
pub fn size_arg(bytes: u64) -> String {
    format!("{}M", bytes.div_ceil(1 << 20))
}

/// Bytes as people read them (GiB with two decimals, or MiB).
pub fn human(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= (1u64 << 30) as f64 {
        format!("{:.2} GiB", b / (1u64 << 30) as f64)
    } else if b >= (1u64 << 20) as f64 {
        format!("{:.0} MiB", b / (1u64 << 20) as f64)
    } else {
        format!("{:.0} KiB", b / 1024.0)
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

    /// The default is the host's share split between the solve's processes on the host, and
    /// says so; a given budget is each process's, whatever shares the host.
    #[test]
    fn the_default_budget_is_split_between_a_hosts_processes() {
        let one = MemoryBudget::resolve(None, None, 1).unwrap();
        let three = MemoryBudget::resolve(None, None, 3).unwrap();
        assert_eq!(one.bytes, default_budget(1));
        assert_eq!(three.bytes, default_budget(1) / 3);
        assert_eq!((one.sharers, three.sharers), (1, 3));
        assert!(!one.given && !three.given);
        assert!(
            one.describe()
                .ends_with("(80 % of this host's; --memory sets it)"),
            "{}",
            one.describe()
        );
        assert!(
            three
                .describe()
                .contains("over the solve's 3 processes on it; --memory sets each one's"),
            "{}",
            three.describe()
        );
        // None counted is one.
        assert_eq!(
            MemoryBudget::resolve(None, None, 0).unwrap().bytes,
            one.bytes
        );
        let given = MemoryBudget::resolve(Some(MIN_BUDGET * 2), None, 3).unwrap();
        assert_eq!(given.bytes, MIN_BUDGET * 2);
        assert!(
            given.describe().ends_with("(--memory)"),
            "{}",
            given.describe()
        );
    }

    /// The writer's queue is the job's, split between its processes, and never more than
    /// what the budget leaves it.
    #[test]
    fn the_writers_queue_is_split_between_the_jobs_processes() {
        let goal = [variant("goal-32")];
        let plan = Plan::new(16 << 30).unwrap();
        let roomy = plan.backward(&counts(200, 1 << 20), &goal, true).unwrap();
        assert!(roomy.write_ahead_limit > 8 << 30, "{roomy:?}");
        let asked = 512 << 20;
        assert_eq!(roomy.write_ahead(asked, 1), asked);
        assert_eq!(roomy.write_ahead(asked, 0), asked);
        assert_eq!(roomy.write_ahead(asked, 2), asked / 2);
        assert_eq!(roomy.write_ahead(asked, 8), asked / 8);
        assert_eq!(roomy.write_ahead(0, 8), 0);
        // An age of a job of N processes is handed over whole by each process exactly when
        // one process would hand it over whole: its share's bytes within the share of the
        // queue.
        for processes in [1u32, 2, 3, 8] {
            let queue = roomy.write_ahead(asked, processes);
            for age_bytes in [asked / 2, asked - 8, asked, asked + 8, asked * 3] {
                let share = age_bytes / u64::from(processes);
                assert_eq!(
                    share <= queue,
                    age_bytes <= asked,
                    "{age_bytes} bytes over {processes}"
                );
            }
        }
        // Within the budget's room: the least budget leaves the queue its fixed share.
        let tight = Plan::new(MIN_BUDGET).unwrap();
        let tight = tight.backward(&counts(20, 1000), &goal, true).unwrap();
        assert_eq!(tight.write_ahead(8 << 30, 2), tight.write_ahead_limit);
    }

    #[test]
    fn a_budget_below_the_least_is_refused_naming_both() {
        let e = Plan::new(MIN_BUDGET - 1).unwrap_err().to_string();
        assert!(e.starts_with("--memory 384 MiB"), "{e}");
        assert!(e.contains("at least 384 MiB"), "{e}");
        assert!(Plan::new(MIN_BUDGET).is_ok());
        // A smaller fixed part lowers the least budget.
        assert!(Plan::with_fixed(MIN_BUDGET / 8, FIXED / 8).is_ok());
        assert!(Plan::with_fixed(MIN_BUDGET / 8 - 1, FIXED / 8).is_err());
    }

    /// The forward pass's raw layers and batches come out of what the budget leaves beyond
    /// the fixed part (drawn from the whole budget, 4x3 `goal-256`'s forward pass peaked at
    /// 544 MiB given 512 MiB).
    #[test]
    fn the_forward_pass_is_sized_from_the_budget_beyond_the_fixed_part() {
        let least = Plan::new(MIN_BUDGET).unwrap().forward;
        assert_eq!(least.cap as u64, (MIN_BUDGET - FIXED) / 96);
        assert_eq!(least.batch as u64, (MIN_BUDGET - FIXED) / 256);
        let roomy = Plan::new(8 * FIXED).unwrap().forward;
        assert_eq!(roomy.cap as u64, 7 * FIXED / 96);
        // With no fixed part the whole budget is theirs.
        let bare = Plan::with_fixed(MIN_BUDGET, 0).unwrap().forward;
        assert_eq!(bare.cap as u64, MIN_BUDGET / 96);
    }

    #[test]
    fn the_plan_holds_f64_where_it_fits_then_streams_then_rounds_then_refuses() {
        let goal = [variant("goal-64")];
        let plan = Plan::new(16 << 30).unwrap();
        // Small ages: everything whole, f64.
        let small = plan.backward(&counts(200, 1 << 20), &goal, true).unwrap();
        assert_eq!((small.coding, small.streamed), (Coding::F64, vec![]));
        // Ages of 600 M states: f64 tables do not fit 16 GiB even streamed; fixed point does.
        let big = plan.backward(&counts(40, 600 << 20), &goal, true).unwrap();
        assert_eq!(big.coding, Coding::Fixed32 { fraction_bits: 31 });
        assert_eq!(big.streamed.len(), 19);
        // Where only whole ages are allowed (an index layout), the same ages are refused.
        let e = plan
            .backward(&counts(40, 600 << 20), &goal, false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("only the policy layout"), "{e}");
        // Ages of 4 G states fit in no way: the age and what it needs are named.
        let e = plan
            .backward(&counts(40, 4 << 30), &goal, true)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--memory 16.00 GiB: age 4 needs about"), "{e}");
        // Everything streamed when asked, whatever fits.
        let all = Plan::new(16 << 30).unwrap().streaming(100);
        let streamed = all.backward(&counts(20, 1000), &goal, true).unwrap();
        assert_eq!(streamed.streamed.len(), 9);
    }

    /// What an age needs follows from the counts, not from the budget: a refusal names the
    /// smallest budget, that budget is accepted, and a MiB less is refused naming it again.
    #[test]
    fn the_smallest_budget_named_is_accepted() {
        let mut counts = counts(120, 0);
        // A hump of ages, the largest in the middle, afterstates about half the states.
        for c in counts.iter_mut() {
            let x = (c.0 as f64 - 60.0) / 20.0;
            c.1 = (60e6 * (-x * x).exp()) as u64 + 1000;
            c.2 = c.1 / 2;
        }
        for (variants, can_stream) in [
            (vec![variant("goal-32")], true),
            (vec![variant("goal-32")], false),
            (vec![variant("expectation"), variant("optimistic")], true),
        ] {
            let smallest = Plan::new(MIN_BUDGET)
                .unwrap()
                .smallest(&counts, &variants, can_stream);
            for budget in [MIN_BUDGET, smallest - (1 << 20), smallest / 2] {
                let e = Plan::new(budget)
                    .unwrap()
                    .backward(&counts, &variants, can_stream)
                    .unwrap_err()
                    .to_string();
                assert!(
                    e.ends_with(&format!("--memory {}", size_arg(smallest))),
                    "{e}"
                );
            }
            let plan = Plan::new(smallest).unwrap();
            let accepted = plan.backward(&counts, &variants, can_stream).unwrap();
            assert!(matches!(accepted.coding, Coding::Fixed32 { .. }));
            assert_eq!(!accepted.streamed.is_empty(), can_stream);
            assert_eq!(accepted.write_ahead_limit, WRITE_AHEAD_BUDGETED);
            // Any budget above it is accepted and names the same smallest; what the planned
            // peak leaves goes to the writer's queue.
            for more in [1 << 20, 1 << 30, 64 << 30] {
                let plan = Plan::new(smallest + more).unwrap();
                let roomy = plan.backward(&counts, &variants, can_stream).unwrap();
                assert!(roomy.write_ahead_limit >= WRITE_AHEAD_BUDGETED, "{roomy:?}");
                assert_eq!(plan.smallest(&counts, &variants, can_stream), smallest);
                if more == 64 << 30 {
                    assert_eq!(roomy.coding, Coding::F64);
                    assert!(roomy.write_ahead_limit > 32 << 30, "{roomy:?}");
                }
            }
        }
    }

    /// With one variant in fixed point, a streamed age needs about 23 bytes a state of the
    /// largest age (three tables, the writer's byte, the work file) besides the fixed part.
    #[test]
    fn a_streamed_age_needs_under_24_bytes_a_state() {
        let goal = [variant("goal-32")];
        // 4x4 `goal-32`'s largest ages: 62.8 M states, about half as many afterstates.
        let n = 62_829_771u64;
        let counts: Vec<_> = (500..=520).step_by(2).map(|a| (a, n, n / 2)).collect();
        let smallest = Plan::new(MIN_BUDGET)
            .unwrap()
            .smallest(&counts, &goal, true);
        let per_state = (smallest - FIXED) as f64 / n as f64;
        assert!(per_state < 24.0, "{per_state} bytes a state");
    }

    /// A process of several writes row groups of its share's size and so holds the ghosts
    /// of a segment of that many states: the fewer rows, the fewer ghosts at once, and one
    /// process's needs are those of a process of one.
    #[test]
    fn a_process_of_many_holds_the_ghosts_of_a_smaller_segment() {
        let goal = [variant("goal-32")];
        let plan = Plan::new(MIN_BUDGET).unwrap();
        let n = 62_829_771u64 / 8;
        let counts: Vec<_> = (500..=520).step_by(2).map(|a| (a, n, n / 2)).collect();
        let g: Vec<_> = counts.iter().map(|c| (c.0, n)).collect();
        let need = |needs: Needs| plan.smallest_of(&needs, &goal, false);
        let one = need(Needs::new(&counts, &g));
        assert_eq!(need(Needs::new(&counts, &g).over(1)), one);
        let two = need(Needs::new(&counts, &g).over(2));
        let eight = need(Needs::new(&counts, &g).over(8));
        assert!(eight < two && two < one, "{eight} {two} {one}");
        // Without ghosts the segment costs nothing.
        let none = need(Needs::new(&counts, &[]));
        assert_eq!(need(Needs::new(&counts, &[]).over(8)), none);
    }

    /// Over several processes a process also holds the ghosts of a segment of its states (the
    /// afterstates others own that they move to; over 4x4 `goal-16`'s largest ages about 0.3
    /// of its states over two processes and under 0.5 over three, with afterstates about 0.41
    /// of them): a streamed age still needs under 24 bytes a state of its share, and every
    /// process of a job names the same smallest, the largest of theirs.
    #[test]
    fn a_streamed_age_with_ghosts_needs_under_24_bytes_a_state_of_the_share() {
        let goal = [variant("goal-32")];
        let plan = Plan::new(MIN_BUDGET).unwrap();
        // A process's share of 4x4 `goal-32`'s largest ages over three processes.
        let n = 62_829_771u64 / 3;
        let counts: Vec<_> = (500..=520)
            .step_by(2)
            .map(|a| (a, n, n * 41 / 100))
            .collect();
        let none = plan.smallest(&counts, &goal, true);
        let mut last = none;
        for ghosts in [30, 40, 50] {
            let g: Vec<_> = counts.iter().map(|c| (c.0, n * ghosts / 100)).collect();
            let needs = Needs::new(&counts, &g);
            let smallest = plan.smallest_of(&needs, &goal, true);
            let per_state = (smallest - FIXED) as f64 / n as f64;
            assert!(
                per_state < 24.0,
                "ghosts {ghosts} %: {per_state} bytes a state"
            );
            // Ghosts cost: more of them, a bigger smallest.
            assert!(smallest > last, "ghosts {ghosts} %");
            last = smallest;
            // That budget is accepted, naming what it is given; a MiB less is refused, and
            // a refusal names the job's smallest it is given.
            let fits = Plan::new(smallest).unwrap();
            let ok = fits
                .backward_of(&needs, &goal, true, smallest, None)
                .unwrap();
            assert!(matches!(ok.coding, Coding::Fixed32 { .. }), "{ok:?}");
            let short = Plan::new(smallest - (1 << 20)).unwrap();
            let job = smallest + (7 << 20);
            let e = short
                .backward_of(&needs, &goal, true, job, None)
                .unwrap_err()
                .to_string();
            assert!(e.ends_with(&format!("--memory {}", size_arg(job))), "{e}");
        }
        // Valued whole, a segment's ghosts cost their ids, values and table.
        let g: Vec<_> = counts.iter().map(|c| (c.0, n / 2)).collect();
        let whole = plan.smallest_of(&Needs::new(&counts, &g), &goal, false);
        assert!(whole > plan.smallest(&counts, &goal, false));
        // A coding agreed on by the processes is the one planned, even where f64 fits.
        let roomy = Plan::new(64 << 30).unwrap();
        let needs = Needs::new(&counts, &g);
        let fixed = fixed_coding(&goal, &counts);
        let agreed = roomy
            .backward_of(&needs, &goal, true, none, Some(fixed))
            .unwrap();
        assert_eq!(agreed.coding, fixed);
        let own = roomy.backward_of(&needs, &goal, true, none, None).unwrap();
        assert_eq!(own.coding, Coding::F64);
    }

    #[test]
    fn rigorous_values_are_never_held_in_fixed_point() {
        let counts = counts(6000, 1);
        let both = [variant("goal-2048"), variant("goal-2048-u32")];
        assert_eq!(fixed_coding(&both, &counts), Coding::F64);
        assert_ne!(fixed_coding(&both[..1], &counts), Coding::F64);
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
