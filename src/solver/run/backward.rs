//! The backward pass of a solve: planned within the budget from the forward pass's counts,
//! resumed after the last age recorded as done (over several processes, the last one every
//! process recorded) or started over, its ages valued by [`Backward`] and handed to a writer
//! thread that writes the small ones, records each age as done and checkpoints.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Receiver;
use std::time::Instant;

use super::forward::Forward;
use super::{
    checked_record, join_helping, layers_of, send_helping, stored_afterstates, wait_helping,
    AgeRecord, Class, Event, CHECKPOINT, INITIAL_AGES,
};
use crate::rules::Variant;
use crate::solver::backward::{
    AfterFigures, Afterstates, AgeOutput, AgeWriter, Backward, Holding, Layers, Level, Phase, Wants,
};
use crate::solver::budget::Budget;
use crate::solver::checkpoint::Checkpointer;
use crate::solver::output::{AgeFiles, Files};
use crate::solver::plan::{human, size_arg, BackwardPlan, Needs};
use crate::solver::records::StateRec;
use crate::solver::table::Coding;
use crate::solver::{Result, SolveError};
use crate::store::work::{BackwardProgress, ValuesWriter, WorkDir};
use crate::store::{Store, StoreError};

/// The state values of the ages finished since the last checkpoint (at most two): held
/// (`Some`) for a small age, already in `.work/` (`None`) for a big one.
type Recent = Vec<(u32, Option<Vec<f64>>)>;

/// From this many state values (64 MiB) on, an age's values go to `.work/` as soon as the
/// age is finished instead of waiting in memory for the next checkpoint.
const SAVE_AT_ONCE: usize = 8 << 20;

/// Over several processes, no process has recorded an age as done yet.
const NONE: u64 = u64::MAX;

/// The backward pass of `s` after its forward pass `fwd`: its progress once every age is
/// valued, or `None` where it must start over and a layer it needs is gone (the caller then
/// solves the class again from the start).
pub(super) fn run(s: &Class, fwd: &mut Forward) -> Result<Option<BackwardProgress>> {
    crate::solver::huge::trim();
    let (work, ex, k) = (&s.work, s.ex, s.k());
    let names: Vec<String> = s.variants.iter().map(Variant::name).collect();
    let mut bwd: BackwardProgress = match work.read_json("backward.json") {
        Ok(b) => b.unwrap_or_default(),
        Err(e) => {
            s.damaged(&e, "starting the backward pass over");
            BackwardProgress::default()
        }
    };
    let counts = counts(s, fwd)?;
    let ghosts = ghosts(s, &counts);
    let (mut bplan, smallest) = plan(s, &Needs::new(&counts, &ghosts).over(ex.processes()))?;
    tell_plan(s, &counts, &bplan, smallest);
    // The rest of the run on disk, checked before the pass starts: its output, and the state
    // values of three ages at once (two for a resume, one being written); the work files
    // shrink as it goes (`retire_layers`).
    let rest = Store::run_bytes_estimate(&counts, &s.storages);
    s.store
        .ensure_free("the rest of the solve (projected)", rest, s.cfg.min_free)?;
    let max_age = fwd.max_age;
    let same_pass = bwd.variants == names
        && bwd.top == max_age
        && bwd.storage == s.storages
        && (bwd.done_age.is_none() || bwd.tables == bplan.coding.name());
    if same_pass && bwd.done_age.is_some() {
        // A resume keeps the tables' coding its finished ages were valued with.
        bplan.coding = crate::solver::table::Coding::parse(&bwd.tables).unwrap_or(bplan.coding);
    }
    let ages = &fwd.progress.ages;
    let mut redo = fwd.redo_backward;
    if !redo && same_pass {
        if let Some(done) = bwd.done_age {
            if let Err(e) = check_backward(work, ages, done, max_age, k) {
                s.damaged(&e, "starting the backward pass over");
                redo = true;
            }
        }
    }
    redo |= agree_on_resume(s, ages, max_age, &mut bwd, redo || !same_pass)?;
    let restart = (redo || !same_pass) && ages.iter().any(|&a| work.check_layers(a).is_err());
    if ex.agree_any(restart)? {
        s.damaged(
            &StoreError::corrupt(
                work.path().join("layers"),
                "let go by an earlier backward pass",
            ),
            "starting the solve over",
        );
        return Ok(None);
    }
    if redo || !same_pass {
        bwd = BackwardProgress {
            variants: names.clone(),
            storage: s.storages.clone(),
            tables: bplan.coding.name(),
            top: max_age,
            done_age: None,
            seconds: 0.0,
        };
        work.write_json("backward.json", &bwd)?;
        work.clear_backward()?;
        if ex.is_leader() {
            for n in &names {
                s.store.clear_variant(s.shape(), n)?;
            }
        }
    }
    // No process writes an age's files before the leader cleared the old ones.
    ex.barrier()?;
    if bwd.done_age != Some(fwd.min_age) {
        let pass = Pass {
            s,
            ages,
            // The writer's queue of finished ages: this process's share of the job's, within
            // what the budget leaves it.
            write_ahead: bplan.write_ahead(s.cfg.write_ahead, ex.processes()),
            streamed: bplan.streamed.iter().copied().collect(),
            counts,
        };
        pass.run(&bplan, fwd.min_age, &mut bwd)?;
    }
    Ok(Some(bwd))
}

/// What the pass holds, age by age `(age, states, afterstates)`: from the forward pass's
/// counts (or, for work files of an older version, the layer files' headers).
fn counts(s: &Class, fwd: &Forward) -> Result<Vec<(u32, u64, u64)>> {
    let f = &fwd.progress;
    if f.counts.len() == f.ages.len() {
        return Ok(f.counts.clone());
    }
    f.ages
        .iter()
        .map(|&a| {
            let boards = s
                .work
                .open_layers(a)?
                .map_or((0, 0), |f| (f.states(), f.afterstates()));
            Ok((a, boards.0, boards.1))
        })
        .collect()
}

/// Over several processes, the ghosts of each age `(age, ids)`: the afterstates its states
/// move to that others own, as the forward pass kept them (none in one process; an age whose
/// file is missing counts none, and the pass makes them again).
fn ghosts(s: &Class, counts: &[(u32, u64, u64)]) -> Vec<(u32, u64)> {
    if s.ex.is_single() {
        return Vec::new();
    }
    (counts.iter())
        .filter_map(|c| Some((c.0, s.work.asked_count(c.0)?)))
        .collect()
}

/// The backward plan of this process and the smallest budget that holds every age of every
/// process. Over several processes the processes agree: each plans its own share, the
/// smallest named is the largest of theirs, the tables are in fixed point if any process's
/// must be, and if any process's budget holds an age in no way, every process refuses,
/// naming that smallest. Collective.
fn plan(s: &Class, needs: &Needs) -> Result<(BackwardPlan, u64)> {
    let (ex, variants, can_stream) = (s.ex, s.variants, s.can_stream);
    let smallest = ex.agree_max(s.plan.smallest_of(needs, variants, can_stream))?;
    let mine = s
        .plan
        .backward_of(needs, variants, can_stream, smallest, None);
    if ex.agree_any(mine.is_err())? {
        return Err(mine.err().unwrap_or_else(|| {
            SolveError::Budget(format!(
                "--memory {}: another process's share of an age does not fit it; the smallest \
                 budget that holds every age is --memory {}",
                human(s.plan.budget),
                size_arg(smallest)
            ))
        }));
    }
    let mut bplan = mine?;
    let fixed = ex.agree_any(bplan.coding != Coding::F64)?;
    if fixed && bplan.coding == Coding::F64 {
        let coding = crate::solver::plan::fixed_coding(variants, needs.counts);
        bplan = s
            .plan
            .backward_of(needs, variants, can_stream, smallest, Some(coding))?;
    }
    Ok((bplan, smallest))
}

/// For a restricted solve, the plan line's note of the symmetry group boards are identified by.
fn restricted_group(s: &Class) -> String {
    if s.class.limits.is_none() {
        return String::new();
    }
    format!(
        "; symmetry {} ({} of the board's, those that keep the caps and the requirement)",
        s.group.name(),
        s.game.sym.order()
    )
}

/// Tells how the backward pass will hold its tables and what the rest takes on disk.
fn tell_plan(s: &Class, counts: &[(u32, u64, u64)], bplan: &BackwardPlan, smallest: u64) {
    let rest = Store::run_bytes_estimate(counts, &s.storages);
    (s.on_event)(Event::Plan {
        text: format!(
            "backward plan: tables {}, {} of {} ages valued a chunk at a time; budget {} (the \
             smallest that holds every age: --memory {}); disk: work {:.1} GB now, at most \
             {:.1} GB more (output and values)",
            bplan.coding.name(),
            bplan.streamed.len(),
            counts.len(),
            human(s.plan.budget),
            size_arg(smallest),
            s.work.bytes() as f64 / 1e9,
            rest as f64 / 1e9,
        ) + &restricted_group(s),
    });
}

/// Over several processes, every process resumes its backward pass after the same age: the
/// last one every process finished, the oldest of their last recorded ones (each keeps the
/// files to resume from any age down to its own: see the floor in [`checkpoint`]). If one
/// process cannot (it redoes its pass, recorded none, or lacks a file), every one starts it
/// over: `true`. One process resumes after its own.
fn agree_on_resume(
    s: &Class,
    ages: &[u32],
    max_age: u32,
    bwd: &mut BackwardProgress,
    redo: bool,
) -> Result<bool> {
    let ex = s.ex;
    if ex.is_single() {
        return Ok(false);
    }
    let mine = if redo {
        u64::MAX
    } else {
        bwd.done_age.map_or(u64::MAX - 1, u64::from)
    };
    let all = ex.agree_max(mine)?;
    let mut can = all < u64::MAX - 1;
    if can && all != mine {
        let done = all as u32;
        match check_backward(&s.work, ages, done, max_age, s.k()) {
            Ok(()) => bwd.done_age = Some(done),
            Err(e) => {
                s.damaged(&e, "starting the backward pass over");
                can = false;
            }
        }
    }
    ex.agree_any(!can)
}

/// The backward pass under way: what its loader and writers read.
struct Pass<'a> {
    s: &'a Class<'a>,
    /// The ages the forward pass wrote layers of.
    ages: &'a [u32],
    /// The most bytes of finished ages the writer's queue holds.
    write_ahead: u64,
    /// The ages valued a chunk at a time.
    streamed: BTreeSet<u32>,
    counts: Vec<(u32, u64, u64)>,
}

impl Pass<'_> {
    /// Values every age from `bwd`'s last recorded one (or the top) down to `min_age`.
    fn run(&self, bplan: &BackwardPlan, min_age: u32, bwd: &mut BackwardProgress) -> Result<()> {
        let s = self.s;
        let t = Instant::now();
        let base_seconds = bwd.seconds;
        let phases = |age: u32, phase: Phase, states: usize, afterstates: usize| {
            s.phase_memory("backward", phase.name(), age, (states, afterstates));
        };
        // Over several processes, the ghosts the forward pass asked of others (its work files).
        let kept_asked = |age: u32| s.work.load_asked(age);
        let mut backward = Backward::new(s.game, s.variants)?
            .with_holding(Holding {
                coding: bplan.coding,
                cap: s.plan.forward.cap,
            })
            .with_exchange(s.ex)
            .with_kept_asked(&kept_asked);
        if s.cfg.trace_memory {
            backward = backward.with_phases(&phases);
        }
        let (top, next) = match bwd.done_age {
            Some(done) => {
                (s.on_event)(Event::Resumed {
                    pass: "backward",
                    age: done,
                });
                let levels = (
                    self.level(done, &backward)?,
                    self.level(done + 2, &backward)?,
                );
                (done - 2, Some(levels))
            }
            None => (bwd.top, None),
        };
        (s.on_event)(Event::BackwardStart {
            top,
            min_age,
            // From the forward pass's counts: a streamed age's file keeps no afterstates.
            boards: (self.counts.iter())
                .filter(|c| c.0 >= min_age && c.0 <= top)
                .map(|c| c.1 + c.2)
                .sum(),
        });
        // The pass writes a big age's files as it values it (`AgeFiles`); writing a small one,
        // and recording an age as done (its record, then a checkpoint), runs on a thread of
        // its own, after its files, while the pass values the next ages.
        // Its queue is bounded in bytes (the state values and deferred files it carries;
        // budget.rs); the count only keeps a run of small ages from queueing without end. At
        // two, the policy layout's pass waited on the writer's single-shard ribbons of 3x3's
        // ages (reports/bench/time.md).
        let (tx, rx) = std::sync::mpsc::sync_channel::<Finished>(16);
        let budget = Budget::new(usize::try_from(self.write_ahead).unwrap_or(usize::MAX));
        // Over several processes: the last age this process recorded as done (its checkpoint
        // on disk), and the oldest such age of every process as this one last heard (`NONE`
        // while one has recorded none). A process keeps the state values and layers of every
        // age down to that floor, so that a resume after the age every process finished finds
        // them; the floor is asked of every process once an age, and only ever falls.
        let durable = AtomicU64::new(bwd.done_age.map_or(NONE, u64::from));
        let floor = AtomicU64::new(durable.load(Ordering::Relaxed));
        let marks = Marks {
            durable: &durable,
            floor: &floor,
        };
        let (run, written) = std::thread::scope(|scope| {
            let writer = scope.spawn(|| {
                let _closer = budget.closer();
                self.write(rx, &budget, bwd, marks, (base_seconds, t))
            });
            let run = backward.run(
                top,
                min_age,
                next,
                |age, n_states, boards, streamed| self.open(age, n_states, boards, streamed),
                |age| self.load(age),
                |out: AgeOutput, written| self.hand_over(out, written, &budget, &tx, marks),
            );
            drop(tx);
            let written = join_helping(writer)
                .unwrap_or_else(|_| Err(SolveError::Internal("the writer thread panicked".into())));
            (run, written)
        });
        // The writer's own error says more than the pass's "the writer stopped".
        written?;
        run
    }

    /// The writer of age `age` of `n_states` states and `boards` boards, valued a chunk at a
    /// time if `streamed`.
    fn open(&self, age: u32, n_states: usize, boards: u64, streamed: bool) -> Result<AgeWork<'_>> {
        let (s, k) = (self.s, self.s.k());
        s.store.ensure_free(
            &format!("age {age}"),
            Store::age_bytes_estimate(boards, &s.storages, age),
            s.cfg.min_free,
        )?;
        // Written after the pass if what the writer would hold fits its budget (a streamed
        // age holds nothing whole to hand over).
        let defer = !streamed && AgeFiles::deferred_bytes(boards, k) <= self.write_ahead;
        Ok(AgeWork {
            files: AgeFiles::new(
                s.store,
                s.game,
                age,
                s.variants,
                &s.storages,
                defer,
                n_states,
            )?
            .in_groups_of(crate::store::rows_per_group(s.ex.processes())),
            work: &s.work,
            values: if streamed {
                Some(s.work.values_writer(age, n_states * k)?)
            } else {
                None
            },
        })
    }

    /// The layers of age `age` as the pass reads them.
    fn load(&self, age: u32) -> Result<Layers> {
        let s = self.s;
        let work = &s.work;
        let missing = || SolveError::from(StoreError::corrupt(work.layer_path_of(age), "missing"));
        if !self.ages.contains(&age) {
            // An age without states has no file.
            return Ok(Layers::Whole(Vec::new(), Vec::new()));
        }
        if self.streamed.contains(&age) {
            let afterstates = (self.counts.iter())
                .find(|c| c.0 == age)
                .map_or(0, |c| c.2 as usize);
            return Ok(Layers::Streamed {
                file: work.open_layers(age)?.ok_or_else(missing)?,
                afterstates,
            });
        }
        // A layer the forward pass wrote must be there (read once, checked whole).
        let file = work.open_layers(age)?.ok_or_else(missing)?;
        let (states, afterstates) = layers_of(&file, work, age)?;
        // A file without afterstates keeps a streamed age's states only: they are made again.
        // Over several processes every age is whole, and a process may own states of an age
        // but none of its afterstates.
        let afterstates = if afterstates.is_empty() && !states.is_empty() && s.ex.is_single() {
            stored_afterstates(s.game, s.class, work, age, s.plan.forward)?
        } else {
            afterstates
        };
        Ok(Layers::Whole(states, afterstates))
    }

    /// The level of age `age` for a resumed pass: its table built from its work files.
    fn level(&self, age: u32, backward: &Backward) -> Result<Level> {
        let (work, k) = (&self.s.work, self.s.k());
        if self.streamed.contains(&age) {
            return streamed_level(work, age, k, backward);
        }
        let ids = work.load_layers(age)?.0;
        let values = work.load_values(age)?.unwrap_or_default();
        if values.len() != ids.len() * k {
            return Err(StoreError::corrupt(
                work.values_path_of(age),
                format!(
                    "{} values for {} states × {k} variants",
                    values.len(),
                    ids.len()
                ),
            )
            .into());
        }
        Ok(backward.level(age, &ids, &values))
    }

    /// A valued age handed to the writer thread, with what its writer returned: only what is
    /// still needed of it goes, within the writer's budget.
    fn hand_over<'f>(
        &self,
        mut out: AgeOutput,
        (files, saved): (Files<'f>, bool),
        budget: &Budget,
        tx: &std::sync::mpsc::SyncSender<Finished<'f>>,
        marks: Marks,
    ) -> Result<()> {
        let stopped = || SolveError::Internal("the writer stopped".into());
        // Every process is here once an age (the pass's own thread).
        let oldest = self.s.ex.agree_max(marks.durable.load(Ordering::Relaxed))?;
        marks.floor.store(oldest, Ordering::Relaxed);
        let streamed = matches!(files, Files::Written(_));
        if streamed {
            // Only the state values are still needed (the pass let go of the afterstates once
            // their files were written).
            out.states = Vec::new();
        }
        if saved {
            // … nor those, once in `.work/`.
            out.summary.values = Vec::new();
        }
        let job = Finished { files, saved, out };
        let bytes = job.bytes();
        if !wait_helping(|| budget.try_acquire(bytes)).unwrap_or_else(|| budget.acquire(bytes)) {
            return Err(stopped());
        }
        send_helping(tx, job).map_err(|_| stopped())?;
        if streamed {
            // What a big age's work freed goes back to the kernel before the next age
            // allocates its own (small ages are not worth the call).
            crate::solver::huge::trim();
        }
        Ok(())
    }

    /// The writer thread: each finished age's files written (if still to be), its state
    /// values kept as a resume needs them, its record saved, and the progress checkpointed
    /// now and then.
    fn write(
        &self,
        rx: Receiver<Finished>,
        budget: &Budget,
        bwd: &mut BackwardProgress,
        marks: Marks,
        (base_seconds, t): (f64, Instant),
    ) -> Result<()> {
        let s = self.s;
        let work = &s.work;
        let single = s.ex.is_single();
        std::thread::scope(|inner| -> Result<()> {
            let mut cp = Checkpointer::start(inner, checkpoint(s, marks));
            let mut checkpoint = Instant::now();
            let every = s.cfg.checkpoint_every.unwrap_or(CHECKPOINT);
            // The state values of the last two finished ages since the last checkpoint: a
            // resume needs them only for the ages a checkpoint records, so a small age's are
            // held (`Some`) and written then (values of other small ages never reach the
            // disk); a big age's are written at once (`None`: by the pass itself if it wrote
            // the age, see `AgeWork`) rather than held (4x4 `goal-32`: 0.5 GB an age), and
            // removed if no checkpoint comes to need them.
            let mut recent: Recent = Vec::new();
            let mut pending = false;
            for job in rx {
                // What the pass acquired for this job, released once it is recorded.
                let bytes = job.bytes();
                let Finished {
                    files,
                    saved,
                    mut out,
                } = job;
                let (age, boards) = (out.age, out.boards);
                let written = match files {
                    Files::Written(w) => w,
                    Files::Deferred(f) => f.write(&out)?,
                };
                let values = std::mem::take(&mut out.summary.values);
                drop(out);
                keep_values(work, single, &mut recent, (age, values, saved))?;
                let (stats, files) = written.into_iter().unzip();
                work.save_record(age, &AgeRecord { stats, files })?;
                bwd.done_age = Some(age);
                pending = true;
                if checkpoint.elapsed() >= every && cp.idle() {
                    bwd.seconds = base_seconds + t.elapsed().as_secs_f64();
                    if !cp.submit((bwd.clone(), std::mem::take(&mut recent))) {
                        break;
                    }
                    pending = false;
                    checkpoint = Instant::now();
                }
                (s.on_event)(Event::Backward { age, boards });
                budget.release(bytes);
            }
            if pending {
                bwd.seconds = base_seconds + t.elapsed().as_secs_f64();
                let _ = cp.submit((bwd.clone(), std::mem::take(&mut recent)));
            }
            // The last checkpoint ends before the writer does.
            cp.finish()
        })
    }
}

/// Over several processes, the ages this process and all of them recorded as done.
#[derive(Clone, Copy)]
struct Marks<'a> {
    /// The last age this process recorded as done (its checkpoint on disk; `NONE` for none).
    durable: &'a AtomicU64,
    /// The oldest such age of every process as this one last heard (`NONE` while one has
    /// recorded none).
    floor: &'a AtomicU64,
}

/// The state values of finished age `age` (`saved` if in `.work/` already), kept as a resume
/// needs them: those of the initial states' ages for good, the others in `recent` until a
/// checkpoint records them.
fn keep_values(
    work: &WorkDir,
    single: bool,
    recent: &mut Recent,
    (age, values, saved): (u32, Vec<f64>, bool),
) -> Result<()> {
    if age <= INITIAL_AGES {
        // Kept for the values at the initial states (never removed).
        if !saved {
            work.save_values(age, &values)?;
        }
        return Ok(());
    }
    if recent.len() == 2 && single {
        // Finished after the last checkpoint, older than what any later one records: no
        // resume reads it.
        if let (old, None) = recent.remove(0) {
            work.remove_values(old)?;
        }
    }
    if saved {
        recent.push((age, None));
    } else if values.len() >= SAVE_AT_ONCE || !single {
        // Over several processes every age's values are saved: a resume may start after any
        // age another process recorded.
        work.save_values(age, &values)?;
        recent.push((age, None));
    } else {
        recent.push((age, Some(values)));
    }
    Ok(())
}

/// A checkpoint of the backward pass: the state values it was handed, then everything written
/// so far reaches the disk, then the progress that vouches for it; only then may values older
/// ages no longer need go. It runs on its own thread while the writer writes the next ages.
fn checkpoint<'a>(
    s: &'a Class<'a>,
    marks: Marks<'a>,
) -> impl FnMut((BackwardProgress, Recent)) -> Result<()> + Send + 'a {
    let work = &s.work;
    let single = s.ex.is_single();
    // Ages above 8 whose state values are on disk and not yet known to be unneeded.
    let mut values_kept: BTreeSet<u32> = BTreeSet::new();
    move |(snapshot, recent): (BackwardProgress, Recent)| -> Result<()> {
        for (age, values) in recent {
            if let Some(values) = values {
                work.save_values(age, &values)?;
            }
            values_kept.insert(age);
        }
        s.store.sync()?;
        work.write_json("backward.json", &snapshot)?;
        let Some(done) = snapshot.done_age else {
            return Ok(());
        };
        marks.durable.store(u64::from(done), Ordering::Relaxed);
        // Over several processes, another may resume after an older age than this one's:
        // nothing is let go above the floor yet (nothing at all while a process has recorded
        // none).
        let done = if single {
            done
        } else {
            match marks.floor.load(Ordering::Relaxed) {
                NONE => return Ok(()),
                f => done.max(f as u32),
            }
        };
        // The layers above done + 2 are read by no later step, nor by a resume (it rebuilds
        // the levels of done and done + 2), but for the initial states' ages (the values at
        // the starts).
        work.retire_layers((done + 2).max(INITIAL_AGES))?;
        // Resuming needs the values of the last two finished ages; the initial states' ages
        // are kept for the values there.
        let stale: Vec<u32> = values_kept
            .iter()
            .copied()
            .filter(|&a| a > done + 2 && a > INITIAL_AGES)
            .collect();
        for a in stale {
            work.remove_values(a)?;
            values_kept.remove(&a);
        }
        Ok(())
    }
}

/// The writer of an age in the backward pass: its files ([`AgeFiles`]) and, for an age
/// written as the pass goes (a big one, unless `--write-ahead` says otherwise), its state
/// values saved to `.work/` (a resume reads them) while its level is built, when the pass
/// holds them anyway: saved later on the writer thread, they would stay in memory until that
/// thread came to them, under a backlog of writes into the next age
/// (`reports/bench/memory.md`).
struct AgeWork<'a> {
    files: AgeFiles<'a>,
    work: &'a WorkDir,
    /// A streamed age's state values, written to `.work/` as the pass makes them.
    values: Option<ValuesWriter>,
}

impl<'a> AgeWriter for AgeWork<'a> {
    /// The age's files, and whether its state values were saved.
    type Written = (Files<'a>, bool);

    fn wants(&self) -> Wants {
        self.files.wants()
    }

    fn order(&self) -> Option<crate::rules::Order> {
        self.files.order()
    }

    fn states(&mut self, ids: &[u64], recs: &mut Vec<StateRec>) -> Result<()> {
        self.files.states(ids, recs)
    }

    fn afterstates(&mut self, a: Afterstates<'_>) -> Result<bool> {
        self.files.afterstates(a)
    }

    fn afterstate_figures(&mut self, fig: &AfterFigures) -> Result<()> {
        self.files.afterstate_figures(fig)
    }

    fn state_values(&mut self, values: &[f64]) -> Result<()> {
        match &mut self.values {
            Some(w) => Ok(w.push(values)?),
            None => Ok(()),
        }
    }

    fn finish(self, out: &AgeOutput) -> Result<Self::Written> {
        if let Some(values) = self.values {
            // A streamed age: its values are in `.work/` once the writer is finished.
            values.finish()?;
            return Ok((self.files.finish(out)?, true));
        }
        let values = &out.summary.values;
        // The initial states' ages are kept to the end: the writer thread saves them.
        let save = out.age > INITIAL_AGES && !self.files.deferred();
        let work = self.work;
        let (files, saved) = rayon::join(
            || self.files.finish(out),
            || -> Result<bool> {
                if save {
                    work.save_values(out.age, values)?;
                }
                Ok(save)
            },
        );
        Ok((files?, saved?))
    }
}

/// A finished age on its way to being recorded as done: its files written, or to be written
/// first ([`Files::Deferred`]).
struct Finished<'a> {
    files: Files<'a>,
    /// Whether its state values are in `.work/` already ([`AgeWork`]).
    saved: bool,
    /// The age itself where its files are still to be written, else only its state values
    /// (`summary.values`, `[i * k + v]`: a resume starts from those of the last finished ages).
    out: AgeOutput,
}

impl Finished<'_> {
    /// The bytes it holds.
    fn bytes(&self) -> usize {
        self.out.bytes()
            + match &self.files {
                Files::Deferred(f) => f.bytes(),
                Files::Written(_) => 0,
            }
    }
}

/// The level of a streamed age for a resumed backward pass: its table built from its work
/// file's states a chunk at a time and its saved values.
fn streamed_level(work: &WorkDir, age: u32, k: usize, backward: &Backward) -> Result<Level> {
    let file = work
        .open_layers(age)?
        .ok_or_else(|| StoreError::corrupt(work.layer_path_of(age), "missing"))?;
    let n = file.states() as usize;
    let chunk = 1 << 22;
    let values = work.values_chunks(age, chunk * k)?;
    let count = values.as_ref().map_or(0, |v| v.total());
    if count != (n * k) as u64 {
        return Err(StoreError::corrupt(
            work.values_path_of(age),
            format!("{count} values for {n} states × {k} variants"),
        )
        .into());
    }
    let mut builder = backward.table_builder(n);
    // Chunks of ids and of values of the same states, side by side.
    for (ids, values) in file.state_chunks(chunk).zip(values.into_iter().flatten()) {
        let ids = ids.map_err(|e| StoreError::corrupt(work.layer_path_of(age), e.to_string()))?;
        let values = values?;
        if values.len() != ids.len() * k {
            return Err(StoreError::corrupt(work.values_path_of(age), "values out of step").into());
        }
        builder.push(&ids, &values);
    }
    Ok(Level::from_table(age, builder.finish()))
}

/// Checks the work files a backward pass resumed after age `done` needs: the record of every
/// age it finished (`done..=top`), and the state values it resumes from (ages `done` and
/// `done + 2`) or that the values at the initial states need (ages 4, 6, 8).
fn check_backward(
    work: &WorkDir,
    layer_ages: &[u32],
    done: u32,
    top: u32,
    k: usize,
) -> std::result::Result<(), StoreError> {
    for age in (done..=top).step_by(2) {
        checked_record(work, age, k)?;
    }
    for age in [done, done + 2, 4, 6, 8] {
        if age < done || age > top {
            continue;
        }
        let n = if layer_ages.contains(&age) {
            work.open_layers(age)?
                .ok_or_else(|| StoreError::corrupt(work.layer_path_of(age), "missing"))?
                .states() as usize
        } else {
            0
        };
        let values = work.values_chunks(age, 1)?.map_or(0, |v| v.total());
        if values != (n * k) as u64 {
            return Err(StoreError::corrupt(
                work.values_path_of(age),
                format!("{values} values for {n} states × {k} variants"),
            ));
        }
    }
    Ok(())
}
