//! The server: opens the data (the catalog's check, every solve for look-ups, the sandboxed
//! DuckDB), listens, and runs a fixed pool of threads that take requests one at a time: the
//! guard first, then the app's files, the report's files, or an `/api/` route. Queries go on
//! to the query pool ([`super::sql`]), so the threads that answer look-ups never wait on one.

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;

use tiny_http::{Method, Request};

use super::api::{answer, App};
use super::figures::Figures;
use super::guard::Guard;
use super::http::{header, read_body, send, Reply, Target};
use super::solved::Solved;
use super::sql::{sandbox, Sql};
use super::{assets, ApiError, Config, ServeError, MAX_BODY};
use crate::query::catalog;
use crate::store::{Store, StoreError};

/// Threads taking requests (look-ups, game steps, files; each answer takes well under a
/// millisecond of CPU, so a few threads serve many clients).
const THREADS: usize = 8;

/// Connections of the query pool: queries running at once.
const SQL_WORKERS: usize = 2;

/// A server that is listening.
pub struct Running {
    pub addr: SocketAddr,
    threads: Vec<JoinHandle<()>>,
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
        for t in self.threads {
            let _ = t.join();
        }
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
    let server = tiny_http::Server::http(config.addr).map_err(|e| ServeError::Bind {
        addr: config.addr,
        message: e.to_string(),
    })?;
    let addr = server.server_addr().to_ip().unwrap_or(config.addr);
    let app = Arc::new(App {
        figures: Arc::new(Figures::new(&data, &config.reports, config.renderer)),
        data,
        solved,
        sql,
        guard: Guard::new(addr),
    });
    let server = Arc::new(server);
    let threads = (0..THREADS)
        .map(|i| {
            let server = server.clone();
            let app = app.clone();
            std::thread::Builder::new()
                .name(format!("http-{i}"))
                .spawn(move || loop {
                    if let Ok(rq) = server.recv() {
                        handle(&app, rq);
                    }
                })
                .expect("a thread starts")
        })
        .collect();
    Ok(Running {
        addr,
        threads,
        app,
    })
}

/// Answers one request.
fn handle(app: &App, mut rq: Request) {
    if let Err(e) = app.guard.check(&rq) {
        return send(rq, Reply::error(&e));
    }
    let t = Target::parse(rq.url());
    let method = rq.method().clone();
    if t.path == "/api/sql" && method == Method::Post {
        let json = header(&rq, "Content-Type")
            .is_some_and(|c| c.trim_start().starts_with("application/json"));
        if !json {
            // A form or text body would be a write a page of another site can send without
            // asking the browser first.
            return send(
                rq,
                Reply::error(&ApiError::new(
                    415,
                    "the body must be sent as Content-Type: application/json",
                )),
            );
        }
        return match read_body(&mut rq, MAX_BODY) {
            Ok(body) => app.sql.submit(rq, &body),
            Err(e) => send(rq, Reply::error(&e)),
        };
    }
    // Bodies of other requests are not read: refuse big ones rather than let them sit.
    if rq.body_length().is_some_and(|n| n > MAX_BODY) {
        return send(
            rq,
            Reply::error(&ApiError::new(
                413,
                format!("the request body is larger than {} KiB", MAX_BODY / 1024),
            )),
        );
    }
    let reply = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| route(app, &method, &t)))
        .unwrap_or_else(|_| {
            Reply::error(&ApiError::new(
                500,
                "the request failed inside the server",
            ))
        });
    send(rq, reply);
}

fn route(app: &App, method: &Method, t: &Target) -> Reply {
    let read = matches!(method, Method::Get | Method::Head);
    if t.path.starts_with("/api/") {
        return match answer(app, method, t) {
            Ok((status, v)) => Reply::json(status, &v),
            Err(e) => Reply::error(&e),
        };
    }
    if !read {
        return Reply::error(&ApiError::new(405, format!("{} takes GET only", t.path)));
    }
    if let Some(rel) = t.path.strip_prefix("/reports/") {
        return app
            .figures
            .file(rel)
            .unwrap_or_else(|e| Reply::error(&e));
    }
    match assets::get(&t.path) {
        Some((content_type, bytes)) => Reply::file(content_type, bytes.to_vec(), false),
        None => Reply::error(&ApiError::new(404, format!("no such page: {}", t.path))),
    }
}
