//! Output of the commands: the `--format` choice, CSV quoting, and messages on standard error
//! that never panic (a closed or full stderr is ignored, as there is nowhere left to report).

use std::io::Write;

use clap::ValueEnum;

/// How results are printed.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq, Default)]
pub enum Format {
    /// Aligned text table.
    #[default]
    Table,
    /// CSV with a header line.
    Csv,
    /// JSON.
    Json,
}

/// Quotes a CSV field when it needs it.
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Writes a line to standard error, ignoring failures.
pub fn say(line: &str) {
    let mut e = std::io::stderr().lock();
    let _ = writeln!(e, "{line}");
}
