//! The server: opens the data (the catalog's check, every solve for look-ups, the sandboxed
//! DuckDB) without writing to it, listens, and serves HTTP/1.1 through hyper on a small tokio
//! runtime: hyper reads each request with strict framing (one `Content-Length`, no obsolete
//! line folding, HTTP/1.0 and 1.1 only) within a deadline for the whole head, keeps
//! connections alive and answers pipelined requests in order, one at a time a connection.
//!
//! Each request: its body read within a size cap and a deadline, the guard first, then the
//! app's files, the report's files, or an `/api/` route, answered on tokio's blocking pool
//! (look-ups are synchronous reads of memory-mapped indexes), or by the query pool
//! ([`super::pool`]: query processes) for `POST /api/sql`, whose answer is awaited without holding a thread.
//! Connections are bounded in number, overall and per client address, so threads, sockets and
//! memory stay bounded whatever the clients do, and no client alone can take every connection.
//!
//! An answer leaves in frames of [`FRAME`] bytes, so hyper holds little of it and the rest
//! stays in the answer until the client reads it; a connection whose answer is not read
//! within the write timeout is closed, and the answer's memory freed. Query answers (up to
//! [`MAX_REPLY_BYTES`] each) are held [`MAX_SQL_ANSWERS`] at a time, from the query's start
//! until their last frame is taken, so clients who send queries and never read hold at most
//! that many, and only for the write timeout.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::{pin, Pin};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};

use super::api::{answer, App, MAX_LOG};
use super::figures::Figures;
use super::guard::Guard;
use super::http::{busy_wire, Reply, Request, Target};
use super::pool::{Permit, Sql};
use super::solved::Solved;
use super::sql::MAX_REPLY_BYTES;
use super::{assets, ApiError, Config, ServeError, MAX_BODY};
use crate::query::catalog;
use crate::store::{Store, StoreError};

/// Connections served at once; one more is answered 503 and closed.
pub const MAX_CONNECTIONS: usize = 256;

/// Connections one client address may hold at once (a browser opens about six; a lab's
/// proxy or a load test more); one more is answered 503 and closed.
pub const MAX_PER_CLIENT: usize = 64;

/// How long a request's head may take to arrive, counted from the end of the previous
/// answer on a kept-alive connection (so it is also how long a connection may idle).
pub const HEAD_DEADLINE: Duration = Duration::from_secs(15);

/// How long a request's body may take to arrive once its head has.
pub const BODY_DEADLINE: Duration = Duration::from_secs(15);

/// The largest request head hyper reads (its read buffer).
const MAX_HEAD: usize = 16 * 1024;

/// The bytes of an answer handed to hyper at a time (hyper writes them before it takes more).
pub const FRAME: usize = 64 * 1024;

/// Query answers held at once, from the query's start in a query process until the client
/// has taken the last frame (each at most [`MAX_REPLY_BYTES`] of rows and a note); a query
/// beyond them waits in the pool's queue (and is answered 503 if none comes free in time).
pub const MAX_SQL_ANSWERS: usize = 8;

/// The most the server's own heap may hold beyond what it held once started (the solves
/// opened, the query processes running), in bytes: [`MAX_SQL_ANSWERS`] query answers, each its
/// rows and [`pool::ANSWER_MARGIN`](super::pool::ANSWER_MARGIN), and for each of
/// [`MAX_CONNECTIONS`] connections a request's head and the largest body a route takes (a game
/// log); the answers of the other routes (a look-up's, a game's: kilobytes) are not counted.
pub fn heap_bound(max_reply_bytes: usize) -> u64 {
    let answers = MAX_SQL_ANSWERS * (max_reply_bytes + super::pool::ANSWER_MARGIN);
    let requests = MAX_CONNECTIONS * (MAX_HEAD + MAX_LOG);
    (answers + requests) as u64
}

/// Threads of the blocking pool that answers look-ups and pages.
const BLOCKING_THREADS: usize = 32;

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

/// Allocations at least this large get pages of their own from the kernel, given back when
/// freed ([`start`]): the query answers (up to [`MAX_REPLY_BYTES`] each).
pub const OWN_PAGES_FROM: usize = 1 << 20;

/// Opens the data directory and starts listening on `config.addr`.
pub fn start(config: Config) -> Result<Running, ServeError> {
    // glibc's allocator raises its threshold for pages of their own to the size of each such
    // block freed (up to 32 MiB), after which a query answer is carved from the heap of the
    // thread that read it, and kept there when freed: the threads that read the query
    // processes' answers change with every process, and their heaps kept more answers with
    // every process replaced. A fixed threshold (which also stops the adjustment) gives every
    // answer's memory back when it is sent, so the heap holds the answers being sent, as its
    // bound counts (the threshold `solve --memory` sets through the solver's
    // `huge::hand_back`, which the server does not import). Not an error if refused.
    // SAFETY: a setting of the allocator, safe to change at any time.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, OWN_PAGES_FROM as libc::c_int);
    }
    // An absolute path: the views name the files by it, and DuckDB's allowed directory is it.
    let data = config
        .data
        .canonicalize()
        .map_err(|_| StoreError::MissingDir {
            path: config.data.clone(),
        })?;
    // Read-only: the seals of the files' checks are kept in memory, never written.
    let store = Store::open_read_only(&data)?;
    let (views, contents) = catalog::views(&store)?;
    let solved = Solved::open(&store, &contents);
    let sql = Sql::start(
        &data,
        views,
        MAX_SQL_ANSWERS,
        config.max_rows,
        MAX_REPLY_BYTES,
        config.sql_timeout,
    )?;
    let bind_error = |e: std::io::Error| ServeError::Bind {
        addr: config.addr,
        message: e.to_string(),
    };
    let listener = std::net::TcpListener::bind(config.addr).map_err(bind_error)?;
    listener.set_nonblocking(true).map_err(bind_error)?;
    let addr = listener.local_addr().unwrap_or(config.addr);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(BLOCKING_THREADS)
        .thread_name("serve")
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| ServeError::Bind {
            addr,
            message: format!("cannot start the runtime: {e}"),
        })?;
    let app = Arc::new(App {
        figures: Arc::new(Figures::new(&data, &config.reports, config.renderer)),
        data,
        solved,
        sql,
        guard: Guard::new(addr),
    });
    let write_timeout = config.write_timeout;
    let accept = {
        let app = app.clone();
        std::thread::Builder::new()
            .name("accept".into())
            .spawn(move || runtime.block_on(accept_loop(listener, app, write_timeout)))
            .map_err(|e| ServeError::Bind {
                addr,
                message: format!("cannot start a thread: {e}"),
            })?
    };
    Ok(Running { addr, accept, app })
}

/// The connections open, overall and by client address.
#[derive(Default)]
struct Open {
    total: usize,
    by_client: HashMap<IpAddr, usize>,
}

/// One open connection, counted until it drops.
struct Ticket {
    open: Arc<Mutex<Open>>,
    ip: IpAddr,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut o = self.open.lock().unwrap_or_else(|p| p.into_inner());
        o.total -= 1;
        if let Some(n) = o.by_client.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                o.by_client.remove(&self.ip);
            }
        }
    }
}

/// A ticket for a new connection from `ip`, or why there is none.
fn admit(open: &Arc<Mutex<Open>>, ip: IpAddr) -> Result<Ticket, ApiError> {
    let mut o = open.lock().unwrap_or_else(|p| p.into_inner());
    if o.total >= MAX_CONNECTIONS {
        return Err(ApiError::busy(
            format!("{MAX_CONNECTIONS} connections are open already; try again in a moment"),
            1,
        ));
    }
    let mine = o.by_client.entry(ip).or_insert(0);
    if *mine >= MAX_PER_CLIENT {
        return Err(ApiError::busy(
            format!("{MAX_PER_CLIENT} connections from {ip} are open already; close some first"),
            1,
        ));
    }
    *mine += 1;
    o.total += 1;
    Ok(Ticket {
        open: open.clone(),
        ip,
    })
}

/// When the answer a connection is sending was handed to hyper (`None`: none is being sent).
#[derive(Clone, Default)]
struct Watch(Arc<Mutex<Option<Instant>>>);

impl Watch {
    /// True if an answer has been waiting to be read for longer than `limit`.
    fn stalled(&self, limit: Duration) -> bool {
        let since = *self.0.lock().unwrap_or_else(|p| p.into_inner());
        since.is_some_and(|t| t.elapsed() > limit)
    }

    /// Marks an answer as being sent until the returned mark drops.
    fn sending(&self) -> Sending {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
        Sending(self.clone())
    }
}

/// An answer being sent on a connection ([`Watch::sending`]).
struct Sending(Watch);

impl Drop for Sending {
    fn drop(&mut self) {
        *self.0 .0.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }
}

/// An answer's body, handed to hyper [`FRAME`] bytes at a time, with what its sending holds
/// (the connection's mark and, for a query's answer, its permit), let go when hyper drops
/// it: after the last frame, or with the connection.
pub struct Answer {
    rest: Bytes,
    _sending: Sending,
    _permit: Option<Permit>,
}

impl Body for Answer {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.rest.is_empty() {
            return Poll::Ready(None);
        }
        let n = self.rest.len().min(FRAME);
        Poll::Ready(Some(Ok(Frame::data(self.rest.split_to(n)))))
    }

    fn is_end_stream(&self) -> bool {
        self.rest.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.rest.len() as u64)
    }
}

async fn accept_loop(listener: std::net::TcpListener, app: Arc<App>, write_timeout: Duration) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    let open = Arc::new(Mutex::new(Open::default()));
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(c) => c,
            Err(_) => {
                // Out of descriptors, or a connection reset before it was taken: try again.
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let ticket = match admit(&open, peer.ip()) {
            Ok(t) => t,
            Err(e) => {
                // A short answer fits the socket's empty buffer; then the connection closes.
                let _ = stream.try_write(&busy_wire(&e));
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        tokio::spawn(async move {
            let _ticket = ticket;
            let watch = Watch::default();
            let service = {
                let watch = watch.clone();
                service_fn(move |rq| {
                    let (app, watch) = (app.clone(), watch.clone());
                    async move { Ok::<_, Infallible>(serve(app, &watch, peer, rq).await) }
                })
            };
            let mut connection = pin!(http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEAD_DEADLINE)
                .keep_alive(true)
                .max_buf_size(MAX_HEAD)
                .serve_connection(TokioIo::new(stream), service));
            // The connection, until it ends or its answer waits unread past the write
            // timeout: then it is dropped, and with it the socket and the answer.
            let mut tick = tokio::time::interval(Duration::from_millis(250));
            std::future::poll_fn(|cx| {
                if connection.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(());
                }
                while tick.poll_tick(cx).is_ready() {
                    if watch.stalled(write_timeout) {
                        return Poll::Ready(());
                    }
                }
                Poll::Pending
            })
            .await;
        });
    }
}

/// A request's body within `cap` bytes and [`BODY_DEADLINE`], or the answer that refuses it
/// (after which the connection closes).
async fn read_body(body: Incoming, cap: usize) -> Result<Vec<u8>, ApiError> {
    let declared = body.size_hint().lower();
    if declared > cap as u64 {
        // A body up to 16 times the cap is read and dropped, so that the client, still
        // sending it, reads the refusal instead of a reset connection.
        if declared <= 16 * cap as u64 {
            let drain = Limited::new(body, 16 * cap).collect();
            let _ = tokio::time::timeout(BODY_DEADLINE, drain).await;
        }
        return Err(too_large(cap));
    }
    match tokio::time::timeout(BODY_DEADLINE, Limited::new(body, cap).collect()).await {
        Err(_) => Err(ApiError::new(
            408,
            format!(
                "the request body did not arrive within {} s",
                BODY_DEADLINE.as_secs()
            ),
        )),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(too_large(cap)),
        Ok(Err(e)) => Err(ApiError::bad(format!("the request body: {e}"))),
        Ok(Ok(collected)) => Ok(collected.to_bytes().to_vec()),
    }
}

fn too_large(cap: usize) -> ApiError {
    ApiError::new(
        413,
        format!("the request body is larger than {} KiB", cap / 1024),
    )
}

/// The answer to one request.
async fn serve(
    app: Arc<App>,
    watch: &Watch,
    peer: SocketAddr,
    rq: hyper::Request<Incoming>,
) -> hyper::Response<Answer> {
    let (parts, body) = rq.into_parts();
    let cap = if parts.uri.path() == "/api/evaluate" {
        MAX_LOG
    } else {
        MAX_BODY
    };
    let body = match read_body(body, cap).await {
        Ok(b) => b,
        Err(e) => return answer_with(Reply::error(&e).into_response(true), watch, None),
    };
    let rq = Request {
        method: parts.method.as_str().to_string(),
        target: parts
            .uri
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_string(),
        headers: parts
            .headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body,
        peer,
    };
    let (reply, permit) = if rq.method == "POST" && Target::parse(&rq.target).path == "/api/sql" {
        query(&app, &rq).await
    } else {
        let reply = tokio::task::spawn_blocking(move || handle(&app, &rq))
            .await
            .unwrap_or_else(|_| {
                Reply::error(&ApiError::new(500, "the request failed inside the server"))
            });
        (reply, None)
    };
    answer_with(reply.into_response(false), watch, permit)
}

/// `response` with its body sent as an [`Answer`], watched on its connection.
fn answer_with(
    response: hyper::Response<Bytes>,
    watch: &Watch,
    permit: Option<Permit>,
) -> hyper::Response<Answer> {
    response.map(|rest| Answer {
        rest,
        _sending: watch.sending(),
        _permit: permit,
    })
}

/// `POST /api/sql`: the guard, a JSON body, then the query pool's answer, awaited, with the
/// permit its memory holds.
async fn query(app: &App, rq: &Request) -> (Reply, Option<Permit>) {
    if let Err(e) = app.guard.check(rq) {
        return (Reply::error(&e), None);
    }
    let json = rq
        .header("Content-Type")
        .is_some_and(|c| c.trim_start().starts_with("application/json"));
    if !json {
        // A form or text body would be a write a page of another site can send without
        // asking the browser first.
        return (
            Reply::error(&ApiError::new(
                415,
                "the body must be sent as Content-Type: application/json",
            )),
            None,
        );
    }
    let answer = match app.sql.submit(&rq.body, rq.peer.ip()) {
        Ok(rx) => rx
            .await
            .unwrap_or_else(|_| Err(ApiError::new(500, "the query failed inside the server"))),
        Err(e) => Err(e),
    };
    match answer {
        Ok(a) => (
            Reply {
                status: 200,
                content_type: "application/json",
                body: a.json,
                retry_after: None,
            },
            Some(a.permit),
        ),
        Err(e) => (Reply::error(&e), None),
    }
}

/// The answer to any other request (synchronous: look-ups, pages, the report's files).
fn handle(app: &App, rq: &Request) -> Reply {
    if let Err(e) = app.guard.check(rq) {
        return Reply::error(&e);
    }
    let t = Target::parse(&rq.target);
    if t.path.starts_with("/api/") {
        return match answer(app, rq, &t) {
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
