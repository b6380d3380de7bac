//! The forward pass of a solve: one layer file per finished age, and `forward.json` saying
//! which are durable. Every layer it lists is checked; the pass resumes after the last age
//! whose layers (and all before it) are intact, and then the backward pass starts over.

use std::sync::mpsc::Receiver;
use std::time::Instant;

use super::{
    join_helping, layers_of, send_helping, stored_afterstates, Class, Event, CHECKPOINT,
    INITIAL_AGES,
};
use crate::solver::checkpoint::Checkpointer;
use crate::solver::forward::{self, AgeLayer, Start};
use crate::solver::{Result, SolveError};
use crate::store::work::{BackwardProgress, ForwardProgress, WorkDir};
use crate::store::StoreError;

/// What the forward pass left: its progress (complete), its ages, and whether the backward
/// pass must start over (the forward pass was redone in part).
pub(super) struct Forward {
    pub progress: ForwardProgress,
    pub redo_backward: bool,
    pub max_age: u32,
    pub min_age: u32,
}

/// The forward pass of `s`, resumed after its last durable age or run from the start.
pub(super) fn run(s: &Class) -> Result<Forward> {
    let mut fwd: ForwardProgress = match s.work.read_json("forward.json") {
        Ok(f) => f.unwrap_or_default(),
        Err(e) => {
            s.damaged(&e, "starting the forward pass over");
            ForwardProgress::default()
        }
    };
    let mut redo_backward = check_layers(s, &mut fwd);
    redo_backward |= agree_on_resume(s, &mut fwd)?;
    if !fwd.complete {
        pass(s, &mut fwd)?;
    }
    let (Some(max_age), Some(min_age)) = (fwd.done_age, fwd.min_age) else {
        return Err(SolveError::NoState {
            board: s.shape().to_string(),
        });
    };
    Ok(Forward {
        progress: fwd,
        redo_backward,
        max_age,
        min_age,
    })
}

/// Checks the layers `fwd` lists; where one is damaged, `fwd` is cut back to the intact ages
/// before it and `true` returned (the backward pass starts over).
fn check_layers(s: &Class, fwd: &mut ForwardProgress) -> bool {
    let work = &s.work;
    if fwd.done_age.is_none() {
        return false;
    }
    // A backward pass under way has let go of the layers of the ages above the last it
    // recorded as done but two (`retire_layers`): only the rest are checked.
    let retired_above = match work.read_json::<BackwardProgress>("backward.json") {
        Ok(Some(b)) if fwd.complete => b.done_age.map(|d| (d + 2).max(INITIAL_AGES)),
        _ => None,
    };
    let needed = |a: u32| retired_above.is_none_or(|top| a <= top);
    let bad = fwd
        .ages
        .iter()
        .filter(|&&a| needed(a))
        .find_map(|&a| work.check_layers(a).err());
    let Some(e) = bad.or_else(|| {
        fwd.ages
            .is_empty()
            .then(|| StoreError::corrupt(work.path().join("forward.json"), "lists no layer"))
    }) else {
        return false;
    };
    let intact: Vec<u32> = fwd
        .ages
        .iter()
        .copied()
        .take_while(|&a| !needed(a) || work.check_layers(a).is_ok())
        .collect();
    let redo = match intact.last() {
        Some(a) => format!("redoing the forward pass after age {a}"),
        None => "starting the forward pass over".to_string(),
    };
    s.damaged(&e, &redo);
    *fwd = ForwardProgress {
        done_age: intact.last().copied(),
        min_age: intact.first().copied(),
        counts: fwd
            .counts
            .iter()
            .copied()
            .filter(|c| intact.contains(&c.0))
            .collect(),
        ages: intact,
        complete: false,
        seconds: fwd.seconds,
    };
    true
}

/// Over several processes, every process resumes its forward pass after the same age: the
/// last one all of them finished (what was made beyond it is made again); `true` if the
/// backward pass must start over. One process resumes after its own.
fn agree_on_resume(s: &Class, fwd: &mut ForwardProgress) -> Result<bool> {
    let ex = s.ex;
    if ex.is_single() {
        return Ok(false);
    }
    let complete = ex.agree_all(fwd.complete)?;
    let done = ex.agree_min(fwd.done_age.map_or(0, |a| u64::from(a) + 1))?;
    if complete {
        return Ok(false);
    }
    let keep = |a: u32| u64::from(a) < done;
    fwd.ages.retain(|&a| keep(a));
    fwd.counts.retain(|c| keep(c.0));
    fwd.done_age = fwd.ages.last().copied();
    fwd.min_age = fwd.ages.first().copied();
    fwd.complete = false;
    Ok(true)
}

/// Runs the forward pass from where `fwd` ends, its layers saved on their own thread while
/// the pass goes on to the next age; records it as complete.
fn pass(s: &Class, fwd: &mut ForwardProgress) -> Result<()> {
    let t = Instant::now();
    let base_seconds = fwd.seconds;
    let start = match fwd.done_age {
        Some(age) => {
            (s.on_event)(Event::Resumed {
                pass: "forward",
                age,
            });
            Start::After {
                age,
                afterstates: resumed_afterstates(s, age)?,
                afterstates_prev: resumed_afterstates(s, age.saturating_sub(2))?,
            }
        }
        None => Start::Fresh,
    };
    let (tx, rx) = std::sync::mpsc::sync_channel::<AgeLayer>(2);
    let progress = &mut *fwd;
    let (last, saved) = std::thread::scope(|scope| {
        let saver = scope.spawn(move || save_layers(s, rx, progress, base_seconds, t));
        let last = forward::run_exchanged(
            s.game,
            s.class,
            start,
            s.plan.forward,
            s.ex,
            |layer: AgeLayer| {
                if s.cfg.trace_memory {
                    let boards = (layer.n_states, layer.n_afterstates);
                    s.phase_memory("forward", "made", layer.age, boards);
                }
                send_helping(&tx, layer)
                    .map_err(|_| SolveError::Internal("the layer saver stopped".into()))
            },
        );
        drop(tx);
        let saved = join_helping(saver)
            .unwrap_or_else(|_| Err(SolveError::Internal("the layer saver panicked".into())));
        (last, saved)
    });
    // The saver's own error says more than the pass's "the saver stopped".
    saved?;
    let last = last?;
    fwd.done_age = Some(last);
    fwd.complete = true;
    fwd.seconds = base_seconds + t.elapsed().as_secs_f64();
    s.store.sync()?;
    s.work.write_json("forward.json", fwd)?;
    Ok(())
}

/// The afterstates of age `age` for a resumed pass. Over several processes, those this
/// process owns (its files keep them, a streamed age's too).
fn resumed_afterstates(s: &Class, age: u32) -> Result<Vec<u64>> {
    if s.ex.is_single() {
        return stored_afterstates(s.game, s.class, &s.work, age, s.plan.forward);
    }
    match s.work.open_layers(age)? {
        Some(file) => Ok(layers_of(&file, &s.work, age)?.1),
        None => Ok(Vec::new()),
    }
}

/// The layer saver: each finished age's layers written to the work folder, and the progress
/// that vouches for them checkpointed now and then.
fn save_layers(
    s: &Class,
    rx: Receiver<AgeLayer>,
    progress: &mut ForwardProgress,
    base_seconds: f64,
    t: Instant,
) -> Result<()> {
    let (store, work) = (s.store, &s.work);
    std::thread::scope(|inner| -> Result<()> {
        // The layers so far reach the disk before the progress that vouches for them, on the
        // checkpoint thread while this one saves the next ages.
        let mut cp = Checkpointer::start(inner, |snapshot: ForwardProgress| {
            store.sync()?;
            Ok(work.write_json("forward.json", &snapshot)?)
        });
        let mut checkpoint = Instant::now();
        let every = s.cfg.checkpoint_every.unwrap_or(CHECKPOINT);
        for layer in rx {
            // Encoded first, so that the check asks for the bytes the file takes (a streamed
            // age comes encoded).
            let bytes = match layer.encoded {
                Some(bytes) => bytes,
                None => WorkDir::encode_layers(layer.age, &layer.states, &layer.afterstates),
            };
            // Over several processes, the afterstates asked of others too, which the
            // backward plan counts (a streamed age's come encoded, and are written even if
            // none).
            let asked = match layer.asked_encoded {
                Some(bytes) => Some(bytes),
                None => (!layer.asked.is_empty())
                    .then(|| WorkDir::encode_layers(layer.age, &layer.asked, &[])),
            };
            store.ensure_free(
                &format!("the forward layers of age {}", layer.age),
                (bytes.len() + asked.as_ref().map_or(0, Vec::len)) as u64,
                s.cfg.min_free,
            )?;
            work.write_layers(layer.age, &bytes)?;
            drop(bytes);
            if let Some(asked) = asked {
                work.write_asked(layer.age, &asked)?;
            }
            progress.ages.push(layer.age);
            progress
                .counts
                .push((layer.age, layer.n_states as u64, layer.n_afterstates as u64));
            progress.min_age = Some(progress.min_age.map_or(layer.age, |m| m.min(layer.age)));
            progress.done_age = Some(layer.age);
            if checkpoint.elapsed() >= every && cp.idle() {
                progress.seconds = base_seconds + t.elapsed().as_secs_f64();
                if !cp.submit(progress.clone()) {
                    break;
                }
                checkpoint = Instant::now();
            }
            (s.on_event)(Event::Forward {
                age: layer.age,
                states: layer.n_states,
                afterstates: layer.n_afterstates,
            });
        }
        // The last checkpoint ends before the caller records the pass as done.
        cp.finish()
    })
}
