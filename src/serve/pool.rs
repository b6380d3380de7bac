//! The SQL tab's query processes: the server runs no query itself. Each query goes to one of a
//! few processes of the same binary (its hidden command [`WORKER_COMMAND`]), each holding a
//! sandboxed DuckDB ([`super::sql`]) and limited by the kernel to [`DATA_LIMIT`] bytes of data
//! (`RLIMIT_DATA`, set between `fork` and `exec`): whatever a query makes DuckDB allocate,
//! inside its memory limit or outside it (a constant folded while binding, which no interrupt
//! reaches), the process fails at that limit, not the machine. The server's own memory then
//! holds no query's data but its reply.
//!
//! Each process has a thread of the server that feeds it queries from a bounded queue (a
//! query beyond it is answered 503 at once) and waits for the answer until the query's time
//! limit and a grace ([`GRACE`]); the process's own watchdog interrupts the query at the
//! limit, and a process that has not answered by the grace is killed. A process that dies
//! (out of memory: the allocation that fails aborts it, or DuckDB reports it) or is killed
//! is started again before the next query, and the client is answered in one line that its
//! query needed more memory, or more time, than the server allows. A process that holds more
//! than [`RECYCLE_AT`] of data after a query (its allocator keeps what a big query took) is
//! replaced too, so that the next query has the whole limit. The client's request
//! waits for its answer without holding a thread, and no thread a look-up needs waits on a
//! query.
//!
//! The pipes carry frames: a tag (`u16`, little-endian), a length (`u32`) and that many bytes.
//! The server sends the views' statements (tag [`VIEWS`]) once, then one query a frame (tag
//! [`QUERY`]); the process answers the views with [`READY`] or its error, and each query
//! with [`STARTED`] as soon as it has read it, then its HTTP status and the reply's JSON text
//! (200) or the refusal's one line. A process that ends before [`STARTED`] had ended before
//! the query reached it (killed while idle): the query goes to a new process instead.

use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, sync_channel, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::sql::{self, Limits, Runner};
use super::{ApiError, ServeError};

/// The binary's hidden command that runs a query process (`age2048 serve-sql-worker`).
pub const WORKER_COMMAND: &str = "serve-sql-worker";

/// The data a query process may hold (`RLIMIT_DATA`: its heap and private writable mappings,
/// not its code or the files it maps): DuckDB's memory limit ([`sql::MEMORY_LIMIT`], 2 GB)
/// and a margin of 1 GiB for what DuckDB allocates outside it and for the reply.
pub const DATA_LIMIT: u64 = 2_000_000_000 + (1 << 30);

/// A query process holding more data than this after a query is replaced ([`bloated`]).
pub const RECYCLE_AT: u64 = 512 << 20;

/// How long after a query's time limit its process may still answer before it is killed.
pub const GRACE: Duration = Duration::from_secs(2);

/// Query processes: queries running at once.
pub const WORKERS: usize = 2;

/// Queries waiting beyond those running: more are answered 503 at once.
const QUEUE: usize = 32;

/// Tags of the frames.
const VIEWS: u16 = 1;
const QUERY: u16 = 2;
const READY: u16 = 3;
const FAILED: u16 = 4;
const STARTED: u16 = 5;

/// How long a query process may take to start (DuckDB opened, the views defined).
const START_DEADLINE: Duration = Duration::from_secs(60);

/// Writes one frame.
fn write_frame(w: &mut impl Write, tag: u16, bytes: &[u8]) -> io::Result<()> {
    let len = u32::try_from(bytes.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a frame over 4 GiB"))?;
    w.write_all(&tag.to_le_bytes())?;
    w.write_all(&len.to_le_bytes())?;
    w.write_all(bytes)?;
    w.flush()
}

/// Reads one frame of at most `cap` bytes; `None` at the end of the stream.
fn read_frame(r: &mut impl Read, cap: usize) -> io::Result<Option<(u16, Vec<u8>)>> {
    let mut head = [0u8; 6];
    match r.read_exact(&mut head) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let tag = u16::from_le_bytes([head[0], head[1]]);
    let len = u32::from_le_bytes([head[2], head[3], head[4], head[5]]) as usize;
    if len > cap {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a frame of {len} bytes, over the {cap} allowed"),
        ));
    }
    let mut bytes = vec![0u8; len];
    r.read_exact(&mut bytes)?;
    Ok(Some((tag, bytes)))
}

/// What a query process needs to know, given on its command line.
pub struct WorkerArgs {
    /// The data directory (absolute), the one directory DuckDB may read.
    pub data: PathBuf,
    pub timeout: Duration,
    pub max_rows: usize,
    pub max_bytes: usize,
}

/// The hidden command: a query process, serving the frames of its standard input on its
/// standard output until the input ends (the server closed it, or died).
pub fn worker_main(a: &WorkerArgs) -> Result<(), ServeError> {
    let broken = |e: io::Error| ServeError::Sandbox {
        context: "a query process's pipe".into(),
        message: e.to_string(),
    };
    let mut input = BufReader::new(io::stdin().lock());
    let mut output = BufWriter::new(io::stdout().lock());
    let Some((VIEWS, views)) = read_frame(&mut input, usize::MAX).map_err(broken)? else {
        return Err(broken(io::Error::new(
            io::ErrorKind::InvalidData,
            "the first frame is not the views",
        )));
    };
    let duck = match sql::open(&String::from_utf8_lossy(&views), &a.data) {
        Ok(d) => d,
        Err(e) => {
            write_frame(&mut output, FAILED, e.to_string().as_bytes()).map_err(broken)?;
            return Err(e);
        }
    };
    write_frame(&mut output, READY, b"").map_err(broken)?;
    let runner = Runner::start(
        duck,
        Limits {
            max_rows: a.max_rows,
            max_bytes: a.max_bytes,
            timeout: a.timeout,
        },
    );
    while let Some((tag, query)) = read_frame(&mut input, usize::MAX).map_err(broken)? {
        if tag != QUERY {
            continue;
        }
        write_frame(&mut output, STARTED, b"").map_err(broken)?;
        let statement = String::from_utf8_lossy(&query);
        let (status, body) = match runner.answer(&statement) {
            Ok(json) => (200, json),
            Err(e) => (e.status, e.message.into_bytes()),
        };
        write_frame(&mut output, status, &body).map_err(broken)?;
    }
    Ok(())
}

/// A query waiting for a process, and where its answer goes.
struct Job {
    statement: String,
    answer: tokio::sync::oneshot::Sender<Result<Vec<u8>, ApiError>>,
}

/// How the server starts a query process.
#[derive(Clone)]
struct Recipe {
    data: PathBuf,
    views: Arc<String>,
    limits: Limits,
}

/// A query process running, with the thread reading its answers.
struct Process {
    child: Child,
    stdin: ChildStdin,
    answers: Receiver<io::Result<(u16, Vec<u8>)>>,
}

impl Process {
    /// Starts a query process, gives it the views and waits until it is ready.
    fn start(r: &Recipe) -> Result<Process, String> {
        let mut cmd = Command::new(own_binary());
        if let Some(name) = std::env::args_os().next() {
            // Listed under the server's name (not `/proc/self/exe`).
            std::os::unix::process::CommandExt::arg0(&mut cmd, name);
        }
        cmd.arg(WORKER_COMMAND)
            .arg("--data")
            .arg(&r.data)
            .arg("--timeout")
            .arg(r.limits.timeout.as_secs_f64().to_string())
            .arg("--max-rows")
            .arg(r.limits.max_rows.to_string())
            .arg("--max-bytes")
            .arg(r.limits.max_bytes.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        limit_child(&mut cmd);
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start a query process: {e}"))?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = child.stdout.take().expect("piped");
        // The answers' frames: the reply's rows within their cap, and room for its head
        // (columns, types) and tail.
        let cap = r.limits.max_bytes + (4 << 20);
        let (tx, answers) = mpsc::channel();
        std::thread::Builder::new()
            .name("sql-reader".into())
            .spawn(move || {
                let mut out = BufReader::new(stdout);
                loop {
                    match read_frame(&mut out, cap) {
                        Ok(Some(f)) => {
                            if tx.send(Ok(f)).is_err() {
                                return;
                            }
                        }
                        Ok(None) => return,
                        Err(e) => {
                            let _ = tx.send(Err(e));
                            return;
                        }
                    }
                }
            })
            .map_err(|e| format!("cannot start a thread: {e}"))?;
        let mut p = Process {
            child,
            stdin,
            answers,
        };
        if let Err(e) = write_frame(&mut p.stdin, VIEWS, r.views.as_bytes()) {
            p.kill();
            return Err(format!("a query process's pipe: {e}"));
        }
        match p.answers.recv_timeout(START_DEADLINE) {
            Ok(Ok((READY, _))) => Ok(p),
            Ok(Ok((_, why))) => {
                p.kill();
                Err(String::from_utf8_lossy(&why).into_owned())
            }
            Ok(Err(e)) => {
                p.kill();
                Err(format!("a query process's pipe: {e}"))
            }
            Err(_) => {
                let status = p.kill();
                Err(format!(
                    "a query process ended before it was ready ({})",
                    status.map_or("still running".into(), |s| s.to_string())
                ))
            }
        }
    }

    /// Kills the process and reaps it; its exit status if it had ended already.
    fn kill(&mut self) -> Option<ExitStatus> {
        let ended = self.child.try_wait().ok().flatten();
        let _ = self.child.kill();
        let status = self.child.wait().ok();
        ended.or(status)
    }
}

/// The binary that is running, to start again as a query process (on Linux the one the
/// process was started from, even if the file was replaced since).
fn own_binary() -> PathBuf {
    let proc_exe = Path::new("/proc/self/exe");
    if proc_exe.exists() {
        return proc_exe.to_path_buf();
    }
    std::env::current_exe()
        .unwrap_or_else(|_| PathBuf::from(std::env::args().next().unwrap_or_default()))
}

/// The child's limits, set between `fork` and `exec`: [`DATA_LIMIT`] bytes of data, no core
/// file (a process that aborts for memory would write gigabytes), and killed when the thread
/// that started it ends (a feeding thread, which ends only with the server).
fn limit_child(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: only async-signal-safe calls (setrlimit, prctl) between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let data = libc::rlimit {
                rlim_cur: DATA_LIMIT as libc::rlim_t,
                rlim_max: DATA_LIMIT as libc::rlim_t,
            };
            if libc::setrlimit(libc::RLIMIT_DATA, &data) != 0 {
                return Err(io::Error::last_os_error());
            }
            let core = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            if libc::setrlimit(libc::RLIMIT_CORE, &core) != 0 {
                return Err(io::Error::last_os_error());
            }
            #[cfg(target_os = "linux")]
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// The query pool: a bounded queue and [`WORKERS`] query processes, each fed by a thread.
pub struct Sql {
    jobs: SyncSender<Job>,
    pub max_rows: usize,
    pub max_bytes: usize,
    pub timeout: Duration,
    pub workers: usize,
}

impl Sql {
    /// Starts `workers` query processes over the views `views` of `data` (an absolute path),
    /// each with the limits given, and the threads that feed them; an error if the first
    /// cannot start (the sandbox, or the views, refused).
    pub fn start(
        data: &Path,
        views: String,
        workers: usize,
        max_rows: usize,
        max_bytes: usize,
        timeout: Duration,
    ) -> Result<Sql, ServeError> {
        let recipe = Recipe {
            data: data.to_path_buf(),
            views: Arc::new(views),
            limits: Limits {
                max_rows,
                max_bytes,
                timeout,
            },
        };
        let (tx, rx) = sync_channel::<Job>(QUEUE);
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..workers {
            // Each process is started by its own thread, which lives as long as the server:
            // the kernel kills a process when the thread that started it ends.
            let (started_tx, started) = mpsc::channel();
            let rx = rx.clone();
            let recipe = recipe.clone();
            std::thread::Builder::new()
                .name(format!("sql-{i}"))
                .spawn(move || match Process::start(&recipe) {
                    Ok(p) => {
                        let _ = started_tx.send(Ok(()));
                        feed(Some(p), &recipe, &rx);
                    }
                    Err(e) => {
                        let _ = started_tx.send(Err(e));
                    }
                })
                .map_err(|e| ServeError::Sandbox {
                    context: "a query process".into(),
                    message: format!("cannot start a thread: {e}"),
                })?;
            started
                .recv()
                .unwrap_or_else(|_| Err("the query process's thread ended".into()))
                .map_err(|message| ServeError::Sandbox {
                    context: "a query process".into(),
                    message,
                })?;
        }
        Ok(Sql {
            jobs: tx,
            max_rows,
            max_bytes,
            timeout,
            workers,
        })
    }

    /// Hands the query of `body` (`{"query": "…"}`) to a query process and returns where its
    /// answer (the reply's JSON text) will come; a body that is not such JSON, or a query
    /// beyond the queue, is answered at once.
    pub fn submit(
        &self,
        body: &[u8],
    ) -> Result<tokio::sync::oneshot::Receiver<Result<Vec<u8>, ApiError>>, ApiError> {
        let statement = serde_json::from_slice::<Value>(body)
            .ok()
            .and_then(|v| v.get("query").and_then(Value::as_str).map(String::from))
            .ok_or_else(|| ApiError::bad("the body must be JSON: {\"query\": \"SELECT …\"}"))?;
        let (tx, rx) = tokio::sync::oneshot::channel();
        let job = Job {
            statement,
            answer: tx,
        };
        if let Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) = self.jobs.try_send(job)
        {
            return Err(ApiError::new(
                503,
                format!("{QUEUE} queries are waiting already; try again in a moment"),
            ));
        }
        Ok(rx)
    }
}

/// A query process's thread: takes the queue's queries one at a time, hands each to the
/// process and sends its answer on; starts the process again when it died or was killed.
fn feed(mut process: Option<Process>, recipe: &Recipe, rx: &Mutex<Receiver<Job>>) {
    loop {
        let job = {
            let rx = rx.lock().unwrap_or_else(|p| p.into_inner());
            match rx.recv() {
                Ok(j) => j,
                Err(_) => return,
            }
        };
        // A process that ended while idle (killed from outside) is not handed the query.
        if let Some(p) = process.as_mut() {
            if !matches!(p.child.try_wait(), Ok(None)) {
                p.kill();
                process = None;
            }
        }
        if process.is_none() {
            process = Process::start(recipe).ok();
        }
        let (reply, replace) = match process.as_mut() {
            None => (Err(not_started()), false),
            Some(p) => match run(p, &job.statement, recipe.limits.timeout) {
                Ran::Answered(reply, alive) => (reply, !alive || bloated(&p.child)),
                // The process had ended before it read the query: a new one runs it.
                Ran::NotStarted => {
                    p.kill();
                    process = Process::start(recipe).ok();
                    match process.as_mut() {
                        Some(p) => match run(p, &job.statement, recipe.limits.timeout) {
                            Ran::Answered(reply, alive) => (reply, !alive || bloated(&p.child)),
                            Ran::NotStarted => (Err(not_started()), true),
                        },
                        None => (Err(not_started()), false),
                    }
                }
            },
        };
        // The client may have gone; its answer goes nowhere then.
        let _ = job.answer.send(reply);
        if replace {
            // Started again now, so that the next query does not wait for it.
            if let Some(mut p) = process.take() {
                p.kill();
            }
            process = Process::start(recipe).ok();
        }
    }
}

/// True when a query process holds more than [`RECYCLE_AT`] of data after a query: DuckDB's
/// allocator keeps the address space a big query took, which counts against the process's
/// limit and would fail the next query, so the process is replaced.
fn bloated(child: &Child) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{}/status", child.id())) else {
        return false;
    };
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmData:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok());
    kib.is_some_and(|k| k * 1024 > RECYCLE_AT)
}

/// What became of a query handed to a process.
enum Ran {
    /// The answer, and whether the process can take another query.
    Answered(Result<Vec<u8>, ApiError>, bool),
    /// The process ended before it read the query.
    NotStarted,
}

fn not_started() -> ApiError {
    ApiError::new(
        503,
        "no query process could be started; try again in a moment",
    )
}

/// Runs `statement` on `p`.
fn run(p: &mut Process, statement: &str, timeout: Duration) -> Ran {
    let deadline = Instant::now() + timeout + GRACE;
    if write_frame(&mut p.stdin, QUERY, statement.as_bytes()).is_err() {
        return Ran::NotStarted;
    }
    let mut started = false;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let reply = match p.answers.recv_timeout(left) {
            Ok(Ok((STARTED, _))) if !started => {
                started = true;
                continue;
            }
            Err(RecvTimeoutError::Disconnected) if !started => return Ran::NotStarted,
            Ok(Ok((200, json))) if started => (Ok(json), true),
            Ok(Ok((status, why))) if started && status >= 400 => (
                Err(ApiError::new(status, String::from_utf8_lossy(&why))),
                true,
            ),
            // A frame out of order, over the cap, or a broken pipe: the process is not
            // trusted again.
            Ok(Ok((tag, _))) => {
                p.kill();
                (
                    Err(ApiError::new(
                        500,
                        format!("the query's process answered out of order (frame {tag})"),
                    )),
                    false,
                )
            }
            Ok(Err(e)) => {
                p.kill();
                (
                    Err(ApiError::new(
                        500,
                        format!("the query's process answered out of bounds ({e})"),
                    )),
                    false,
                )
            }
            Err(RecvTimeoutError::Disconnected) => (Err(ended(p.kill())), false),
            Err(RecvTimeoutError::Timeout) => {
                p.kill();
                (
                    Err(ApiError::new(
                        408,
                        format!(
                            "the query needed more time than the limit of {} s and was stopped (narrow it with WHERE board = …, variant = …, age …, or add a LIMIT)",
                            timeout.as_secs_f64()
                        ),
                    )),
                    false,
                )
            }
        };
        return Ran::Answered(reply.0, reply.1);
    }
}

/// The answer for a query whose process ended before answering (`status`, as reaped): an
/// allocation that fails at the process's limit aborts it (`SIGABRT`), and the kernel, short
/// of memory, kills with `SIGKILL`.
fn ended(status: Option<ExitStatus>) -> ApiError {
    use std::os::unix::process::ExitStatusExt;
    match status.and_then(|s| s.signal()) {
        Some(libc::SIGABRT | libc::SIGKILL) => ApiError::new(
            422,
            format!(
                "the query needed more memory than the server allows a query ({} MiB) and was stopped; select fewer or smaller values, or use age2048 sql",
                DATA_LIMIT >> 20
            ),
        ),
        _ => ApiError::new(
            500,
            format!(
                "the query's process ended before answering ({})",
                status.map_or("unknown status".into(), |s| s.to_string())
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_within_their_cap() {
        let mut wire = Vec::new();
        write_frame(&mut wire, QUERY, b"SELECT 1").unwrap();
        write_frame(&mut wire, 200, b"").unwrap();
        let mut r = &wire[..];
        assert_eq!(
            read_frame(&mut r, 8).unwrap(),
            Some((QUERY, b"SELECT 1".to_vec()))
        );
        assert_eq!(read_frame(&mut r, 8).unwrap(), Some((200, Vec::new())));
        assert_eq!(read_frame(&mut r, 8).unwrap(), None);
        // Over the cap: refused before anything is allocated for it.
        let e = read_frame(&mut &wire[..], 7).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        // Cut short inside a frame: an error, not the end.
        assert!(read_frame(&mut &wire[..10], 8).is_err());
    }

    #[test]
    fn a_process_that_died_is_answered_by_how() {
        use std::os::unix::process::ExitStatusExt;
        let abort = ended(Some(ExitStatus::from_raw(libc::SIGABRT)));
        assert_eq!(abort.status, 422);
        assert!(abort.message.contains("needed more memory"), "{abort:?}");
        let killed = ended(Some(ExitStatus::from_raw(libc::SIGKILL)));
        assert_eq!(killed.status, 422);
        let segv = ended(Some(ExitStatus::from_raw(libc::SIGSEGV)));
        assert_eq!(segv.status, 500);
        assert!(segv.message.contains("ended before answering"), "{segv:?}");
        let exited = ended(Some(ExitStatus::from_raw(2 << 8)));
        assert_eq!(exited.status, 500);
    }
}
