//! The `age2048` binary: parses the command line, runs it, and turns an error into one line on
//! standard error and an exit status (see [`age2048::cli`] for the statuses).

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

use age2048::cli::{self, Cli};
use age2048::error::ErrorKind;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // Help and version go to stdout with status 0, usage errors to stderr with 2;
            // a closed stream is not worth a panic.
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    match cli::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.is_broken_pipe() => ExitCode::SUCCESS,
        Err(e) => {
            // One `write`, so that a line from one of several processes is not interleaved.
            let line = format!("age2048: error: {}\n", cli::one_line(&e));
            let _ = std::io::stderr().write_all(line.as_bytes());
            ExitCode::from(e.kind().exit_code())
        }
    }
}
