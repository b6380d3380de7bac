//! The server: opens the data (the catalog's check, every solve for look-ups, the sandboxed
//! DuckDB), listens, and gives each connection a thread of its own that reads its requests one
//! after the other (so one connection runs one query at a time) and answers each: the guard
//! first, then the app's files, the report's files, or an `/api/` route. Connections are
//! bounded in number and closed when idle, so threads and memory stay bounded whatever the
//! clients do; a query waits for one of the query pool's connections ([`super::sql`]), so a
//! slow query holds its own connection's thread and nothing a look-up needs.

use std::io::{BufReader, BufWriter};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use super::api::{answer, App};
use super::figures::Figures;
use super::guard::Guard;
use super::http::{read_request, write_reply, ReadError, Reply, Request, Target};
use super::solved::Solved;
use super::sql::{sandbox, Sql};
use super::{assets, ApiError, Config, ServeError, MAX_BODY};
use crate::query::catalog;
use crate::store::{Store, StoreError};

/// Connections served at once; one more is answered 503 and closed.
const MAX_CONNECTIONS: usize = 256;

/// How long a connection may sit between requests (or take to send one) before it is closed.
const IDLE: Duration = Duration::from_secs(15);

/// Connections of the query pool: queries running at once.
const SQL_WORKERS: usize = 2;

/// A server that is listening.
pub struct Running {
    pub addr: SocketAddr,
    accept: JoinHandle<()>,
    app: Arc<App>,
}

impl Running {
    /// The solves served, as `board variant` (for the start-up line).
    pub fn solves(&self) -> Vec<String> {
        self.app
            .solved
            .all()
            .iter()
            .map(|s| format!("{} {}", s.board(), s.name()))
            .collect()
    }

    /// Serves until the process ends.
    pub fn wait(self) {
        let _ = self.accept.join();
    }
}

/// Opens the data directory and starts listening on `config.addr`.
pub fn start(config: Config) -> Result<Running, ServeError> {
    // An absolute path: the views name the files by it, and DuckDB's allowed directory is it.
    let data = config
        .data
        .canonicalize()
        .map_err(|_| StoreError::MissingDir {
            path: config.data.clone(),
        })?;
    let store = Store::open(&data)?;
    let (conn, contents) = catalog::open_with_contents(&store)?;
    let solved = Solved::open(&store, &contents);
    let sql = Sql::start(
        sandbox(conn, &data, SQL_WORKERS)?,
        config.max_rows,
        config.sql_timeout,
    );
    let listener = TcpListener::bind(config.addr).map_err(|e| ServeError::Bind {
        addr: config.addr,
        message: e.to_string(),
    })?;
    let addr = listener.local_addr().unwrap_or(config.addr);
    let app = Arc::new(App {
        figures: Arc::new(Figures::new(&data, &config.reports, config.renderer)),
        data,
        solved,
        sql,
        guard: Guard::new(addr),
    });
    let open = Arc::new(AtomicUsize::new(0));
    let accept = {
        let app = app.clone();
        std::thread::Builder::new()
            .name("accept".into())
            .spawn(move || {
                for stream in listener.incoming().flatten() {
                    if open.fetch_add(1, Ordering::AcqRel) >= MAX_CONNECTIONS {
                        open.fetch_sub(1, Ordering::AcqRel);
                        refuse_busy(stream);
                        continue;
                    }
                    let (app, still_open) = (app.clone(), open.clone());
                    let spawned = std::thread::Builder::new()
                        .name("connection".into())
                        .stack_size(256 * 1024)
                        .spawn(move || {
                            connection(&app, stream);
                            still_open.fetch_sub(1, Ordering::AcqRel);
                        });
                    if spawned.is_err() {
                        open.fetch_sub(1, Ordering::AcqRel);
                    }
                }
            })
            .map_err(|e| ServeError::Bind {
                addr,
                message: format!("cannot start a thread: {e}"),
            })?
    };
    Ok(Running { addr, accept, app })
}

/// Answers a connection beyond the bound, then closes it.
fn refuse_busy(stream: TcpStream) {
    let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
    let e = ApiError::new(
        503,
        format!("{MAX_CONNECTIONS} connections are open already; try again in a moment"),
    );
    let _ = write_reply(&mut &stream, &Reply::error(&e), false, true);
}

/// Serves one connection's requests, one at a time, until it closes or idles.
fn connection(app: &App, stream: TcpStream) {
    let Ok(peer) = stream.peer_addr() else { return };
    let _ = stream.set_read_timeout(Some(IDLE));
    let _ = stream.set_write_timeout(Some(IDLE));
    let _ = stream.set_nodelay(true);
    let Ok(write_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    let mut writer = BufWriter::new(write_half);
    loop {
        let (reply, head, close) = match read_request(&mut reader, peer, MAX_BODY) {
            Ok(rq) => {
                let reply =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handle(app, &rq)))
                        .unwrap_or_else(|_| {
                            Reply::error(&ApiError::new(
                                500,
                                "the request failed inside the server",
                            ))
                        });
                (reply, rq.method == "HEAD", rq.close)
            }
            Err(ReadError::Closed) => return,
            Err(ReadError::Refused(e)) => (Reply::error(&e), false, true),
        };
        if write_reply(&mut writer, &reply, head, close).is_err() || close {
            return;
        }
    }
}

/// The answer to one request.
fn handle(app: &App, rq: &Request) -> Reply {
    if let Err(e) = app.guard.check(rq) {
        return Reply::error(&e);
    }
    let t = Target::parse(&rq.target);
    if t.path == "/api/sql" && rq.method == "POST" {
        let json = rq
            .header("Content-Type")
            .is_some_and(|c| c.trim_start().starts_with("application/json"));
        if !json {
            // A form or text body would be a write a page of another site can send without
            // asking the browser first.
            return Reply::error(&ApiError::new(
                415,
                "the body must be sent as Content-Type: application/json",
            ));
        }
        return match app.sql.run(&rq.body) {
            Ok(v) => Reply::json(200, &v),
            Err(e) => Reply::error(&e),
        };
    }
    if t.path.starts_with("/api/") {
        return match answer(app, &rq.method, &t) {
            Ok((status, v)) => Reply::json(status, &v),
            Err(e) => Reply::error(&e),
        };
    }
    if !rq.reads() {
        return Reply::error(&ApiError::new(405, format!("{} takes GET only", t.path)));
    }
    if let Some(rel) = t.path.strip_prefix("/reports/") {
        return app.figures.file(rel).unwrap_or_else(|e| Reply::error(&e));
    }
    match assets::get(&t.path) {
        Some((content_type, bytes)) => Reply::file(content_type, bytes.to_vec()),
        None => Reply::error(&ApiError::new(404, format!("no such page: {}", t.path))),
    }
}
