//! The progress of `age2048 solve` on standard error.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};

use super::output::say;
use crate::rules::Shape;
use crate::solver::Event;

/// Progress of a solve: a bar on a terminal, a plain line per finished age otherwise (for
/// logs, and for tests that act at a given age), nothing with `--quiet`; each with the pass's
/// rate in boards (states and afterstates) per second, and the backward pass's time left from
/// the boards still to value (ages differ in size by orders of magnitude, so counting ages
/// would mislead).
pub struct Progress {
    mode: Mode,
    pass: Mutex<Pass>,
}

/// The pass under way.
struct Pass {
    started: Instant,
    done: u64,
    /// Boards in all (0 if unknown: the forward pass finds them as it goes).
    total: u64,
}

impl Pass {
    fn new(total: u64) -> Pass {
        Pass {
            started: Instant::now(),
            done: 0,
            total,
        }
    }
}

enum Mode {
    Bar(ProgressBar),
    Plain,
    Quiet,
}

impl Progress {
    pub fn new(quiet: bool) -> Progress {
        let mode = if quiet {
            Mode::Quiet
        } else if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}")
                    .expect("valid template"),
            );
            Mode::Bar(bar)
        } else {
            Mode::Plain
        };
        Progress {
            mode,
            pass: Mutex::new(Pass::new(0)),
        }
    }

    /// Counts `boards` more done in the pass; returns the pass's rate and, if its total is
    /// known, the seconds left at that rate.
    fn advance(&self, boards: u64) -> (String, Option<f64>) {
        let mut p = self.pass.lock().unwrap_or_else(|e| e.into_inner());
        p.done += boards;
        let secs = p.started.elapsed().as_secs_f64();
        let per_s = if secs > 0.0 {
            p.done as f64 / secs
        } else {
            0.0
        };
        let left =
            (p.total > 0 && per_s > 0.0).then(|| p.total.saturating_sub(p.done) as f64 / per_s);
        let rate = if per_s >= 1e6 {
            format!("{:.2} M boards/s", per_s / 1e6)
        } else {
            format!("{:.1} k boards/s", per_s / 1e3)
        };
        (rate, left)
    }

    /// Shows what `e` tells of the solve of board `shape`.
    pub fn event(&self, shape: Shape, e: Event) {
        match e {
            Event::Damaged { problem, redo } => {
                // Damage is told even with --quiet: it explains a solve that takes longer.
                let line = format!("work file damaged: {problem}: {redo}");
                match &self.mode {
                    Mode::Bar(bar) => bar.println(line),
                    _ => say(&line),
                }
            }
            // `MemoryTrace`'s.
            Event::Memory { .. } => {}
            _ if matches!(self.mode, Mode::Quiet) => {}
            Event::Forward {
                age,
                states,
                afterstates,
            } => {
                let (rate, _) = self.advance((states + afterstates) as u64);
                let line = format!(
                    "forward: age {age}, {states} states, {afterstates} afterstates, {rate}"
                );
                match &self.mode {
                    Mode::Bar(bar) => {
                        bar.set_message(format!("{shape} {line}"));
                        bar.tick();
                    }
                    _ => say(&line),
                }
            }
            Event::BackwardStart {
                top,
                min_age,
                boards,
            } => {
                *self.pass.lock().unwrap_or_else(|e| e.into_inner()) = Pass::new(boards);
                match &self.mode {
                    Mode::Bar(bar) => {
                        bar.set_style(
                            ProgressStyle::with_template(
                                "{bar:40} {percent:>3}% {elapsed_precise} eta {eta} {msg}",
                            )
                            .expect("valid template"),
                        );
                        bar.set_length(boards.max(1));
                        bar.set_position(0);
                    }
                    _ => say(&format!(
                        "backward: from age {top} down to {min_age}, {boards} boards"
                    )),
                }
            }
            Event::Backward { age, boards } => {
                let (rate, left) = self.advance(boards);
                match &self.mode {
                    Mode::Bar(bar) => {
                        bar.set_message(format!("{shape} backward: age {age}, {rate}"));
                        bar.inc(boards);
                    }
                    _ => say(&format!(
                        "backward: age {age}, {boards} boards, {rate}{}",
                        left.map_or(String::new(), |s| format!(", {s:.0} s left"))
                    )),
                }
            }
            Event::Plan { text } => match &self.mode {
                Mode::Bar(bar) => bar.println(text),
                _ => say(&text),
            },
            Event::Resumed { pass, age } => {
                let line = format!("resuming the {pass} pass after age {age}");
                match &self.mode {
                    Mode::Bar(bar) => bar.println(line),
                    _ => say(&line),
                }
            }
        }
    }

    /// Clears the bar at the end of the solve.
    pub fn finish(&self) {
        if let Mode::Bar(bar) = &self.mode {
            bar.finish_and_clear();
        }
    }
}
