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
        #[cfg(feature = "report")]
        Command::Sql(a) => age2048::cli_report::run_sql_cmd(&a)?,
        #[cfg(feature = "report")]
        Command::Report(a) => {
            age2048::cli_report::run_report_cmd(&a)?;
        }
        #[cfg(feature = "report")]
        Command::Compare(a) => {
            let c = age2048::compare::compare(&a.data, &a.board, &a.variant_list(), &a.out)?;
            let stdout = std::io::stdout();
            age2048::compare::print_summary(&c, &mut stdout.lock())?;
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
