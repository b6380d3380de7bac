//! `age2048 serve`: the web app over a solved data directory (see [`crate::serve`]).

use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;

use super::output::say;
use super::{one_line, CliError};
use crate::serve::{self, Config, Renderer};

/// Serve the solution in the browser: play, analyse any board, the figures, SQL.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Data directory written by `age2048 solve`.
    #[arg(long, default_value = "data")]
    pub data: PathBuf,
    /// Port to listen on (0: any free port).
    #[arg(long, default_value_t = 8048)]
    pub port: u16,
    /// Address to listen on; anything but loopback makes the data reachable from other machines.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: String,
    /// Open the page in the default browser.
    #[arg(long)]
    pub open: bool,
    /// The report folder the Figures tab shows (rendered into when stale or missing).
    #[arg(long, default_value = "reports")]
    pub reports: PathBuf,
    /// Seconds a query may run before it is interrupted (the README's slowest example query
    /// takes about a minute over every 3x3 state on two cores).
    #[arg(long, default_value = "120")]
    pub sql_timeout: String,
    /// Rows a query answers with at most (the rest are cut, with a note).
    #[arg(long, default_value_t = 10_000)]
    pub max_rows: usize,
    /// Seconds a client may take to read an answer; a connection whose answer is still unread
    /// then is closed, and the answer's memory freed.
    #[arg(long, default_value = "30")]
    pub write_timeout: String,
}

/// A query process of `serve` ([`crate::serve::pool`]): what the server says on its command
/// line.
#[derive(Args, Debug)]
pub struct WorkerArgs {
    #[arg(long)]
    pub data: PathBuf,
    /// Seconds a query may run.
    #[arg(long)]
    pub timeout: f64,
    #[arg(long)]
    pub max_rows: usize,
    #[arg(long)]
    pub max_bytes: usize,
    /// DuckDB's memory limit, in bytes.
    #[arg(long)]
    pub memory_limit: u64,
    /// How much lower the priority of the start-up (DuckDB opened, the views defined) is than
    /// the queries' (a spare's start).
    #[arg(long, default_value = "0")]
    pub start_nice: i32,
}

/// Runs a query process of `serve` until its standard input ends.
pub fn run_worker(a: &WorkerArgs) -> Result<(), CliError> {
    if !(a.timeout.is_finite() && a.timeout > 0.0) {
        return Err(CliError::Usage(format!("bad --timeout {}", a.timeout)));
    }
    serve::pool::worker_main(&serve::pool::WorkerArgs {
        data: a.data.clone(),
        timeout: Duration::from_secs_f64(a.timeout),
        max_rows: a.max_rows,
        max_bytes: a.max_bytes,
        memory_limit: a.memory_limit,
        start_nice: a.start_nice,
    })?;
    Ok(())
}

/// The report's side of the Figures tab.
fn renderer() -> Renderer {
    fn current(data: &Path, out: &Path) -> Result<bool, String> {
        crate::report::is_current(data, out).map_err(|e| one_line(&e))
    }
    fn render(data: &Path, out: &Path, say: &dyn Fn(&str)) -> Result<(), String> {
        crate::report::run_report(data, out, say)
            .map(|_| ())
            .map_err(|e| one_line(&e))
    }
    Renderer {
        current,
        render,
        page: crate::report::PAGE,
    }
}

impl ServeArgs {
    /// The configuration, checked.
    pub fn check(&self) -> Result<Config, CliError> {
        let ip: IpAddr = self.bind.trim().parse().map_err(|_| {
            CliError::Usage(format!(
                "bad --bind '{}': an IP address (127.0.0.1, ::1, 0.0.0.0)",
                self.bind
            ))
        })?;
        let timeout = seconds("--sql-timeout", &self.sql_timeout)?;
        let write_timeout = seconds("--write-timeout", &self.write_timeout)?;
        if self.max_rows == 0 {
            return Err(CliError::Usage("--max-rows must be at least 1".into()));
        }
        Ok(Config {
            data: self.data.clone(),
            addr: SocketAddr::new(ip, self.port),
            reports: self.reports.clone(),
            sql_timeout: timeout,
            max_rows: self.max_rows,
            write_timeout,
            renderer: Some(renderer()),
        })
    }
}

/// The seconds of `flag`, more than 0 and at most a day.
fn seconds(flag: &str, text: &str) -> Result<Duration, CliError> {
    text.trim()
        .parse()
        .ok()
        .filter(|t: &f64| t.is_finite() && *t > 0.0 && *t <= 86_400.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| {
            CliError::Usage(format!(
                "bad {flag} '{text}': seconds, more than 0 and at most 86400"
            ))
        })
}

/// Runs `age2048 serve` until the process is stopped.
pub fn run(a: &ServeArgs) -> Result<(), CliError> {
    let config = a.check()?;
    if !config.addr.ip().is_loopback() {
        say(&format!(
            "warning: listening on {}, not loopback: anyone who can reach this machine can play, look up and query the solved data",
            config.addr
        ));
    }
    let running = serve::start(config)?;
    let url = format!("http://{}/", running.addr);
    // The first line of standard output is the address (a script or a test reads it). A
    // closed standard output does not stop the server: it has nothing more to say there.
    let _ = write!(
        std::io::stdout().lock(),
        "age2048 serve: {url}\nserving {} solves ({}); Ctrl-C stops\n",
        running.solves().len(),
        running.solves().join(", ")
    )
    .and_then(|()| {
        writeln!(
            std::io::stdout().lock(),
            "memory bound: the server's own heap at most {} MiB beyond its start, the query processes' data at most {} MiB together",
            serve::server::heap_bound(serve::sql::MAX_REPLY_BYTES) >> 20,
            serve::pool::DATA_BOUND >> 20
        )
    })
    .and_then(|()| std::io::stdout().lock().flush());
    if a.open {
        if let Err(e) = std::process::Command::new("xdg-open")
            .arg(&url)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
        {
            say(&format!("note: could not open a browser ({e}); open {url}"));
        }
    }
    running.wait();
    Ok(())
}
