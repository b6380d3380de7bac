//! The `age2048` binary: parses the command line and reports errors (anyhow lives only here).

use std::process::ExitCode;

use clap::Parser;

use age2048::cli::{self, Cli, Command};

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Solve(a) => cli::run_solve(&a)?,
        Command::Best(a) => {
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            cli::run_best(&a, &mut out)?
        }
        Command::Guaranteed(a) => {
            let stdout = std::io::stdout();
            cli::run_guaranteed(&a, &mut stdout.lock())?
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("age2048: error: {e:#}");
            ExitCode::from(2)
        }
    }
}
