//! `solve --trace-memory FILE`: the process's peak resident memory phase by phase, a row a
//! phase (`reports/bench/memory.md` says what each phase holds).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use super::output::say;
use super::CliError;
use crate::solver::Event;

/// The file of `--trace-memory`: a header, then a row an [`Event::Memory`], each written as
/// it comes (a killed solve keeps the rows so far).
pub struct MemoryTrace {
    path: PathBuf,
    /// `None` once a write failed (told once; the solve goes on untraced).
    file: Mutex<Option<std::fs::File>>,
    started: Instant,
}

impl MemoryTrace {
    /// The columns: the pass and age, the age's states and afterstates, the phase that
    /// ended, the peak resident bytes during it, the bytes resident at its end, seconds
    /// since the solve started, and the bytes this process has sent the others so far (0 in
    /// one process).
    const HEADER: &'static str =
        "pass\tage\tstates\tafterstates\tphase\tpeak_bytes\tresident_bytes\tseconds\tsent_bytes\n";

    /// Checks that the system tells phases apart, then creates `path` (replacing it) with
    /// the header.
    pub fn create(path: &Path) -> Result<MemoryTrace, CliError> {
        let shown = path.display();
        if !crate::solver::can_trace_memory() {
            return Err(CliError::Usage(format!(
                "--trace-memory {shown}: this system does not let a process read and reset its peak memory (/proc/self/status, /proc/self/clear_refs)"
            )));
        }
        let file = std::fs::File::create(path)
            .and_then(|mut f| f.write_all(Self::HEADER.as_bytes()).map(|()| f))
            .map_err(|e| CliError::Usage(format!("--trace-memory {shown}: {e}")))?;
        Ok(MemoryTrace {
            path: path.to_path_buf(),
            file: Mutex::new(Some(file)),
            started: Instant::now(),
        })
    }

    /// Writes the row of `e` if it is an [`Event::Memory`], with the bytes sent so far.
    pub fn record(&self, e: &Event, sent: u64) {
        let Event::Memory {
            pass,
            age,
            states,
            afterstates,
            phase,
            peak,
            resident,
        } = e
        else {
            return;
        };
        let row = format!(
            "{pass}\t{age}\t{states}\t{afterstates}\t{phase}\t{peak}\t{resident}\t{:.3}\t{sent}\n",
            self.started.elapsed().as_secs_f64()
        );
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = file.as_mut() {
            if let Err(err) = f.write_all(row.as_bytes()) {
                say(&format!(
                    "--trace-memory {}: {err}; the solve goes on without it",
                    self.path.display()
                ));
                *file = None;
            }
        }
    }
}
