//! `serve`: the solution in the browser. One process serves a small web app (Play, Analyse,
//! Figures, SQL: plain HTML, CSS and JavaScript embedded in the binary) and the JSON API under
//! `/api/` the app is built on, over a solved data directory.
//!
//! - [`server`]: binds, and serves HTTP/1.1 through hyper on tokio (strict framing, a deadline
//!   for the head and for the body, at most 256 connections and 64 a client address,
//!   keep-alive and pipelining), a connection's requests answered one at a time;
//! - [`guard`]: what a request must be to be served (its `Host`, the origin of a write);
//! - [`http`]: a request as the app sees it, its target decoded, a reply with the headers
//!   every answer carries;
//! - [`api`]: the routes of `/api/`;
//! - [`solved`]: the solved boards and variants, opened for look-ups;
//! - [`game`]: a game replayed from its seed and moves, with the regret of each move (or,
//!   over a policy solve, the stored move of each board);
//! - [`pool`]: the query processes the SQL tab's queries run in, each under a data limit,
//!   killed past its time and started again: a short lane that tries every new query within
//!   a slice and a long lane for the queries it gives back, each queue taken by client
//!   address in turn, a query refused 503 with `Retry-After` if it waits too long;
//! - [`sql`]: what a query process runs: one read-only statement (DuckDB's parser decides) on
//!   a sandboxed DuckDB, its result streamed to JSON within caps in rows, bytes and time;
//! - [`figures`]: the report's figures and tables, rendered when stale;
//! - [`assets`]: the web app's files.
//!
//! Nothing in the data directory changes through the server, which never writes there (the
//! store is opened read-only: the seals of the start-up check stay in memory, so a read-only
//! mount serves as well): look-ups read the memory-mapped indexes, and queries run on a DuckDB whose external access is off but for the data
//! directory, its configuration locked. The report is rendered by the caller's [`Renderer`]
//! (the `report` room, which this room does not import).
//!
//! Memory: the server process runs no query and holds no DuckDB. What a query makes DuckDB
//! allocate, inside its memory limit or outside it (a constant folded while binding), is its
//! query process's, which the kernel stops at its data limit: [`pool::DATA_LIMIT`] in the
//! long lane's two (DuckDB's 1.5 GB and a margin of 1 GiB), [`pool::SHORT_DATA_LIMIT`] in the
//! short lane's one (256 MB and 512 MiB). The bound of the whole is their sum
//! ([`pool::DATA_BOUND`], 5.5 GiB, within the 5.7 GiB of the two processes of 2 GB and 1 GiB
//! before the lanes; each lane's spare process, idle until it replaces one, holds only what
//! DuckDB took to start) plus the server's own: its code, the index files it maps (clean pages,
//! at most their size), and its heap, which holds a request's data and an answer at a time for
//! each connection, query answers (each at most 32 MiB of rows and 4 MiB of head) at most
//! [`server::MAX_SQL_ANSWERS`] at once, and none past the write timeout
//! ([`server::heap_bound`] beyond what it held once started; `serve` prints both bounds when it
//! starts).

pub mod api;
pub mod assets;
pub mod error;
pub mod figures;
pub mod game;
pub mod guard;
pub mod http;
pub mod pool;
pub mod server;
pub mod solved;
pub mod sql;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use error::{ApiError, ServeError};
pub use server::{start, Running};

/// What `age2048 serve` was asked to do, checked.
pub struct Config {
    /// The solved data directory.
    pub data: PathBuf,
    /// The address to listen on (port 0: any free port).
    pub addr: SocketAddr,
    /// Where the report's figures and tables are read from (and rendered into when stale).
    pub reports: PathBuf,
    /// How long a query may run before it is interrupted.
    pub sql_timeout: Duration,
    /// The most rows a query answers with (the rest are cut, with a note).
    pub max_rows: usize,
    /// How long a client may take to read an answer before its connection is closed.
    pub write_timeout: Duration,
    /// How the report is checked and rendered (`None`: figures are served as they are).
    pub renderer: Option<Renderer>,
}

/// Renders the report of `data` into `out`, saying one line per step.
pub type Render = fn(data: &Path, out: &Path, say: &dyn Fn(&str)) -> Result<(), String>;

/// The report's side of the Figures tab, given by the caller.
#[derive(Clone, Copy)]
pub struct Renderer {
    /// True when the report in `out` was made from the solves in `data` as they are now.
    pub current: fn(data: &Path, out: &Path) -> Result<bool, String>,
    /// Renders the report of `data` into `out`, saying one line per step.
    pub render: Render,
    /// The report's page, relative to `out`.
    pub page: &'static str,
}

/// The largest request body read (a query, a board).
pub const MAX_BODY: usize = 64 * 1024;
