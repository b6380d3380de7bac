//! The SQL tab's query processes: the server runs no query itself. Each query goes to one of a
//! few processes of the same binary (its hidden command [`WORKER_COMMAND`]), each holding a
//! sandboxed DuckDB ([`super::sql`]) and limited by the kernel in the data it may hold
//! (`RLIMIT_DATA`, set between `fork` and `exec`): whatever a query makes DuckDB allocate,
//! inside its memory limit or outside it (a constant folded while binding, which no interrupt
//! reaches), the process fails at that limit, not the machine. The server's own memory then
//! holds no query's data but its reply.
//!
//! Two lanes, so that cheap queries do not wait behind expensive ones. A new query goes to
//! the short lane: one process under a small memory limit ([`SHORT_MEMORY`]) that gives each
//! query a slice ([`SLICE_CPU`] of CPU time, [`SLICE_WALL`] of time). A query answered within
//! it is done; one that runs out of its slice (even while DuckDB still prepares it), of the
//! short process's memory, or kills that process, is given back and runs again in the long
//! lane: [`LONG_WORKERS`] processes with the whole limit ([`DATA_LIMIT`]) and the rest of the
//! query's time. Its text is remembered, so that it goes to the long lane at once next time. A
//! long process with nothing of its own to run takes the short lane's queries.
//!
//! Spares: each lane keeps one process started ahead ([`keep_spare`]), which replaces a
//! process killed or died at once, so that a query that kills its process (each time with
//! another text, so never remembered as long) costs the short lane its slice, not DuckDB's
//! start-up as well, as long as the spare is started again before the next such query (a
//! start takes seconds on a loaded machine). A spare starts at a lower priority
//! ([`SPARE_NICE`]) than the queries it will run, so that it takes little of their CPU.
//!
//! Fair admission: each lane's queue takes its queries in turn by client address, and in the
//! order they came within one address (a connection has one query at a time), so a client
//! that sends many queries delays another address's by at most one of its own. A query waits
//! at most [`QUEUE_WAIT`] for a process; then it is answered 503 with `Retry-After`, an
//! estimate from the queue ahead of it and the lane's recent queries.
//!
//! Answers held: a process is handed a query only with one of the server's answer permits
//! (at most `MAX_SQL_ANSWERS`, and half of them for one client address), which the answer
//! holds until the client has taken it; a query waits for a permit as for a process, within the
//! same bound, and a client that leaves its answers unread delays only its own queries.
//!
//! Each process has a thread of the server that feeds it queries and waits for the answer
//! until the query's budget and a grace ([`GRACE`]); the process's own watchdog interrupts the
//! query at its budget, and a process that has not answered by the grace is killed, as is one
//! still preparing a query past its CPU time ([`PREPARE_CPU`] over both lanes) or past the
//! memory preparing may take ([`PREPARE_DATA`], refused at once in either lane). A process
//! that dies (out of memory: the allocation that fails aborts it, or DuckDB reports it) or is
//! killed is started again before the next query, and the client is answered in one line
//! that its query needed more memory, or more time, than the server allows. A process that
//! holds more than [`RECYCLE_AT`] of data after a query (its allocator keeps what a big query
//! took) is replaced too, so that the next query has the whole limit. The client's request
//! waits for its answer without holding a thread, and no thread a look-up needs waits on a
//! query.
//!
//! The pipes carry frames: a tag (`u16`, little-endian), a length (`u32`) and that many bytes.
//! The server sends the views' statements (tag [`VIEWS`]) once, then one query a frame (tag
//! [`QUERY`]: its budget, then its text); the process answers the views with [`READY`] or its
//! error, and each query with [`STARTED`] as soon as it has read it, then its HTTP status and
//! the reply's JSON text (200) or the refusal's one line, or [`SLICED`]. A process that ends
//! before [`STARTED`] had ended before the query reached it (killed while idle): the query
//! goes to a new process instead.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::{Hash, Hasher};
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::sql::{self, Budget, Limits, Ran as Ran_, Runner};
use super::{ApiError, ServeError};

/// The binary's hidden command that runs a query process (`age2048 serve-sql-worker`).
pub const WORKER_COMMAND: &str = "serve-sql-worker";

/// DuckDB's memory limit in a long lane's process.
pub const LONG_MEMORY: u64 = 1_500_000_000;

/// The data a long lane's process may hold (`RLIMIT_DATA`: its heap and private writable
/// mappings, not its code or the files it maps): DuckDB's memory limit ([`LONG_MEMORY`]) and
/// a margin of 1 GiB for what DuckDB allocates outside it and for the reply.
pub const DATA_LIMIT: u64 = LONG_MEMORY + (1 << 30);

/// DuckDB's memory limit in the short lane's process.
pub const SHORT_MEMORY: u64 = 256_000_000;

/// The data the short lane's process may hold: a query that needs more is given to the long
/// lane. With the long lane's two, the processes together may hold 5.5 GiB, within the 5.7 GiB
/// of the two processes of 2 GB and 1 GiB that ran every query before the lanes.
pub const SHORT_DATA_LIMIT: u64 = SHORT_MEMORY + (512 << 20);

/// A query process holding more data than this after a query (or half its limit, if less)
/// is replaced ([`bloated`]).
pub const RECYCLE_AT: u64 = 512 << 20;

/// How long after a query's budget its long process may still answer before it is killed.
pub const GRACE: Duration = Duration::from_secs(2);

/// The same for the short lane's process, which the cheap queries wait for.
const SHORT_GRACE: Duration = Duration::from_millis(500);

/// The CPU time DuckDB may take to prepare a query (parse, bind, and fold its constants,
/// which no interrupt reaches: `SELECT range(100000000)` takes many seconds there) before its
/// process is killed and the query refused, over both lanes (the short lane gives a query up
/// still preparing at its slice's CPU time; a long process refuses it at what is left). CPU
/// time, not time: on a loaded machine a query over many files may wait seconds to be
/// prepared.
pub const PREPARE_CPU: Duration = Duration::from_secs(1);

/// The data DuckDB may add to a query process while it prepares a query (binds it and folds
/// its constants) before the process is killed and the query refused, in either lane: a
/// constant of many values is reserved whole as soon as DuckDB starts building it
/// (`range(100000000)`: over a gigabyte at once), long before its CPU time shows, while
/// preparing the queries of the SQL tab adds a few MiB.
pub const PREPARE_DATA: u64 = 256 << 20;

/// The data process `pid` holds (`VmData` of `/proc/PID/status`: what `RLIMIT_DATA` counts).
fn data_of(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmData:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse::<u64>()
        .ok()?;
    Some(kib * 1024)
}

/// The CPU time process `pid` has used.
fn cpu_of(pid: u32) -> Option<Duration> {
    sql::stat_cpu(&format!("/proc/{pid}/stat"))
}

/// The short lane's slice: the CPU time a query may take there (the process's, so that a
/// loaded machine does not make a cheap query look expensive) …
pub const SLICE_CPU: Duration = Duration::from_millis(300);

/// … and the time, whatever the CPU did.
pub const SLICE_WALL: Duration = Duration::from_millis(1000);

/// The most an answer holds besides its rows (its columns, types and note).
pub const ANSWER_MARGIN: usize = 4 << 20;

/// The most data the query processes running queries may hold together (each lane's spare,
/// idle until it replaces one that ended, holds what DuckDB took to start).
pub const DATA_BOUND: u64 = LONG_WORKERS as u64 * DATA_LIMIT + SHORT_DATA_LIMIT;

/// Processes of the long lane.
pub const LONG_WORKERS: usize = 2;

/// Spare processes: one a lane, started ahead ([`keep_spare`]).
pub const SPARES: usize = 2;

/// How much lower a spare's start-up runs ([`keep_spare`]; its queries run at the server's
/// priority): DuckDB's start-up follows each process a hostile query ended, and at the
/// server's priority it took its share of the CPU from the queries running meanwhile (the
/// next hostile one among them), while it has until the next process ends to be ready.
pub const SPARE_NICE: i32 = 5;

/// Query processes: queries running at once (the short lane's one and the long lane's).
pub const WORKERS: usize = 1 + LONG_WORKERS;

/// The longest a query waits for a process (and an answer permit) before it is refused.
pub const QUEUE_WAIT: Duration = Duration::from_secs(10);

/// Query texts remembered as long (then forgotten all at once).
const KNOWN_LONG: usize = 4096;

/// Tags of the frames.
const VIEWS: u16 = 1;
const QUERY: u16 = 2;
const READY: u16 = 3;
const FAILED: u16 = 4;
const STARTED: u16 = 5;
const SLICED: u16 = 6;
const PREPARED: u16 = 7;

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

/// A query frame's bytes: the budget's time and CPU time in microseconds (`u64::MAX`: no CPU
/// budget), then the text.
fn query_frame(statement: &str, budget: Budget) -> Vec<u8> {
    let micros = |d: Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX - 1);
    let mut out = Vec::with_capacity(16 + statement.len());
    out.extend_from_slice(&micros(budget.wall).to_le_bytes());
    out.extend_from_slice(&budget.cpu.map_or(u64::MAX, micros).to_le_bytes());
    out.extend_from_slice(statement.as_bytes());
    out
}

/// The budget and the text of a query frame.
fn parse_query(bytes: &[u8]) -> Option<(Budget, String)> {
    let wall = u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?);
    let cpu = u64::from_le_bytes(bytes.get(8..16)?.try_into().ok()?);
    let budget = Budget {
        wall: Duration::from_micros(wall),
        cpu: (cpu != u64::MAX).then(|| Duration::from_micros(cpu)),
    };
    Some((budget, String::from_utf8_lossy(&bytes[16..]).into_owned()))
}

/// What a query process needs to know, given on its command line.
pub struct WorkerArgs {
    /// The data directory (absolute), the one directory DuckDB may read.
    pub data: PathBuf,
    /// The time limit the server states.
    pub timeout: Duration,
    pub max_rows: usize,
    pub max_bytes: usize,
    /// DuckDB's memory limit, in bytes.
    pub memory_limit: u64,
    /// How much the start-up's nice value is raised ([`SPARE_NICE`] for a spare): it runs on
    /// a thread of its own, so the queries, on threads of the main one's, keep the priority.
    pub start_nice: i32,
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
    let views = String::from_utf8_lossy(&views);
    let open = || sql::open(&views, &a.data, a.memory_limit);
    let opened = if a.start_nice > 0 {
        std::thread::scope(|scope| {
            std::thread::Builder::new()
                .name("sql-start".into())
                .spawn_scoped(scope, || {
                    lower_priority(a.start_nice);
                    open()
                })
                .ok()
                .and_then(|t| t.join().ok())
        })
        .unwrap_or_else(open)
    } else {
        open()
    };
    let duck = match opened {
        Ok(d) => d,
        Err(e) => {
            write_frame(&mut output, FAILED, e.to_string().as_bytes()).map_err(broken)?;
            return Err(e);
        }
    };
    write_frame(&mut output, READY, b"").map_err(broken)?;
    let mut runner = Runner::start(
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
        let Some((budget, statement)) = parse_query(&query) else {
            write_frame(&mut output, 400, b"a query frame without its budget").map_err(broken)?;
            continue;
        };
        let mut said = Ok(());
        let ran = runner.answer(&statement, budget, &mut || {
            said = write_frame(&mut output, PREPARED, b"");
        });
        said.map_err(broken)?;
        let (status, body) = match ran {
            Ran_::Reply(Ok(json)) => (200, json),
            Ran_::Reply(Err(e)) => (e.status, e.message.into_bytes()),
            Ran_::Sliced => (SLICED, Vec::new()),
        };
        write_frame(&mut output, status, &body).map_err(broken)?;
    }
    Ok(())
}

/// Raises the calling thread's nice value by `by` (at most to 19); a failure leaves it.
fn lower_priority(by: i32) {
    // SAFETY: no arguments, then the calling thread's own priority. Raising a nice value
    // needs no privilege.
    unsafe {
        let tid = libc::gettid() as libc::id_t;
        let nice = libc::getpriority(libc::PRIO_PROCESS, tid);
        libc::setpriority(libc::PRIO_PROCESS, tid, (nice + by).min(19));
    }
}

/// The lanes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lane {
    Short,
    Long,
}

/// A query's answer: the reply's JSON text, and the permit its memory holds until sent.
pub struct Answered {
    pub json: Vec<u8>,
    pub permit: Permit,
}

/// Where a query's answer goes.
type Answer = tokio::sync::oneshot::Sender<Result<Answered, ApiError>>;

/// A query waiting for a process, and where its answer goes.
struct Job {
    statement: String,
    /// Its text's hash, for the long queries remembered.
    key: u64,
    client: IpAddr,
    /// When it came, from which its time limit counts.
    came: Instant,
    /// When it joined the queue it waits in.
    queued: Instant,
    /// The CPU time DuckDB spent preparing it in the short lane before that lane gave it up,
    /// counted against [`PREPARE_CPU`] in the long lane.
    prepared_cpu: Duration,
    answer: Answer,
}

/// A lane's queue: by client address in turn, and in order within one address.
#[derive(Default)]
struct Turns {
    turn: VecDeque<IpAddr>,
    by_client: HashMap<IpAddr, VecDeque<Job>>,
    len: usize,
}

impl Turns {
    fn push(&mut self, job: Job) {
        let q = self.by_client.entry(job.client).or_default();
        if q.is_empty() {
            self.turn.push_back(job.client);
        }
        q.push_back(job);
        self.len += 1;
    }

    /// The next query whose client still waits: the first of the address whose turn it is,
    /// among the addresses `may` lets run one more (the others keep their place).
    fn pop(&mut self, may: impl Fn(IpAddr) -> bool) -> Option<Job> {
        // Addresses passed over since a query was taken out.
        let mut passed = 0;
        while passed < self.turn.len() {
            let Some(ip) = self.turn.pop_front() else {
                break;
            };
            let Some(q) = self.by_client.get_mut(&ip) else {
                continue;
            };
            if !may(ip) {
                self.turn.push_back(ip);
                passed += 1;
                continue;
            }
            passed = 0;
            let job = q.pop_front();
            if q.is_empty() {
                self.by_client.remove(&ip);
            } else {
                self.turn.push_back(ip);
            }
            let Some(job) = job else { continue };
            self.len -= 1;
            if !job.answer.is_closed() {
                return Some(job);
            }
        }
        None
    }

    /// Takes out the queries that waited longer than `wait` by `now`, or whose client left.
    fn expire(&mut self, now: Instant, wait: Duration) -> Vec<Job> {
        self.take_if(|job| job.answer.is_closed() || now.duration_since(job.queued) >= wait)
    }

    /// Takes out the queries `out` picks, in their order.
    fn take_if(&mut self, out: impl Fn(&Job) -> bool) -> Vec<Job> {
        let mut taken = Vec::new();
        for q in self.by_client.values_mut() {
            let mut kept = VecDeque::with_capacity(q.len());
            for job in q.drain(..) {
                if out(&job) {
                    taken.push(job);
                } else {
                    kept.push_back(job);
                }
            }
            *q = kept;
        }
        self.by_client.retain(|_, q| !q.is_empty());
        self.turn.retain(|ip| self.by_client.contains_key(ip));
        self.len -= taken.len();
        taken
    }
}

/// The pool's state, under one lock.
struct State {
    short: Turns,
    long: Turns,
    /// Answer permits not held.
    free: usize,
    max_answers: usize,
    /// Answer permits held, by client address, and the most one address may hold.
    held: HashMap<IpAddr, usize>,
    per_client: usize,
    /// Queries running, by lane.
    running: [usize; 2],
    /// A lane's recent run time (exponentially weighted), seconds.
    mean: [f64; 2],
    known_long: HashSet<u64>,
}

impl State {
    /// True if `client` may hold one more answer permit.
    fn may(&self, client: IpAddr) -> bool {
        may_hold(&self.held, self.per_client, client)
    }

    fn lane(&mut self, lane: Lane) -> &mut Turns {
        match lane {
            Lane::Short => &mut self.short,
            Lane::Long => &mut self.long,
        }
    }
}

/// True if `client`, holding `held[client]` answer permits, may hold one more.
fn may_hold(held: &HashMap<IpAddr, usize>, per_client: usize, client: IpAddr) -> bool {
    held.get(&client).copied().unwrap_or(0) < per_client
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    /// Each lane's spare process ([`keep_spare`]), by lane.
    spares: Mutex<[Option<Process>; SPARES]>,
    spare_taken: Condvar,
    /// Where killed processes go to be reaped.
    reaper: mpsc::Sender<Child>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn spares(&self) -> MutexGuard<'_, [Option<Process>; SPARES]> {
        self.spares.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A process for `recipe`'s lane: its spare if one is ready and alive, else one started
    /// now.
    fn fresh(&self, recipe: &Recipe) -> Option<Process> {
        let spare = self.spares()[recipe.lane as usize].take();
        self.spare_taken.notify_all();
        if let Some(mut p) = spare {
            if matches!(p.child.try_wait(), Ok(None)) {
                return Some(p);
            }
            p.kill();
        }
        Process::start(recipe, 0).ok()
    }
}

/// Keeps a spare process ready for `recipe`'s lane, started again each time one is taken, so
/// that a process killed (a query past its limits, whatever its text) is replaced at once, not
/// after DuckDB's start-up, and the short lane's cheap queries do not wait for it. A spare
/// runs no query until it replaces a process that has ended; its start-up runs
/// [`SPARE_NICE`] lower than the queries (a process started when no spare is ready runs at
/// theirs). Runs for as long as the server.
fn keep_spare(recipe: &Recipe, shared: &Shared) {
    let lane = recipe.lane as usize;
    loop {
        {
            let mut spares = shared.spares();
            while spares[lane].is_some() {
                spares = shared
                    .spare_taken
                    .wait(spares)
                    .unwrap_or_else(|p| p.into_inner());
            }
        }
        match Process::start(recipe, SPARE_NICE) {
            Ok(p) => shared.spares()[lane] = Some(p),
            // Tried again in a second; meanwhile a lane starts its own.
            Err(_) => std::thread::sleep(Duration::from_secs(1)),
        }
    }
}

/// One of the answer permits, held for a client address, given back when dropped.
pub struct Permit {
    shared: Arc<Shared>,
    client: IpAddr,
}

impl Drop for Permit {
    fn drop(&mut self) {
        {
            let mut st = self.shared.lock();
            st.free += 1;
            if let Some(n) = st.held.get_mut(&self.client) {
                *n -= 1;
                if *n == 0 {
                    st.held.remove(&self.client);
                }
            }
        }
        self.shared.changed.notify_all();
    }
}

/// The next query for a process of `lane`, with its answer permit: the lane's own first; a
/// long process with none of its own takes the short lane's. The second value is the lane the
/// query was queued in.
fn take(shared: &Arc<Shared>, lane: Lane) -> (Job, Permit, Lane) {
    let mut st = shared.lock();
    loop {
        // Queries of a text found long since they were queued go to the long lane.
        if lane == Lane::Short && st.short.len > 0 && !st.known_long.is_empty() {
            let State {
                short,
                long,
                known_long,
                ..
            } = &mut *st;
            for job in short.take_if(|j| known_long.contains(&j.key)) {
                long.push(job);
            }
        }
        if st.free > 0 {
            let State {
                short,
                long,
                held,
                per_client,
                ..
            } = &mut *st;
            let may = |ip: IpAddr| may_hold(held, *per_client, ip);
            let got = match lane {
                Lane::Short => short.pop(may).map(|j| (j, Lane::Short)),
                Lane::Long => long
                    .pop(may)
                    .map(|j| (j, Lane::Long))
                    .or_else(|| short.pop(may).map(|j| (j, Lane::Short))),
            };
            if let Some((job, from)) = got {
                st.free -= 1;
                *st.held.entry(job.client).or_insert(0) += 1;
                st.running[lane as usize] += 1;
                let permit = Permit {
                    shared: shared.clone(),
                    client: job.client,
                };
                return (job, permit, from);
            }
        }
        st = shared.changed.wait(st).unwrap_or_else(|p| p.into_inner());
    }
}

/// How long a client refused now should wait: the queue ahead of it over the lane's
/// processes, each at the lane's recent run time; 1 to 60 s.
fn retry_after(st: &State, lane: Lane) -> u64 {
    let procs = match lane {
        Lane::Short => 1,
        Lane::Long => LONG_WORKERS,
    };
    let ahead = st.short.len + if lane == Lane::Long { st.long.len } else { 0 };
    let secs = st.mean[lane as usize] * (ahead / procs + 1) as f64;
    (secs.ceil() as u64).clamp(1, 60)
}

/// The refusal of a query of `client` that waited [`QUEUE_WAIT`] in `lane`.
fn waited_too_long(st: &State, lane: Lane, client: IpAddr) -> ApiError {
    let after = retry_after(st, lane);
    let mine = if st.may(client) {
        String::new()
    } else {
        format!(
            "; {client} holds {} answers, as many as one address may",
            st.per_client
        )
    };
    ApiError::busy(
        format!(
            "the query waited {} s for a query process without one coming free ({} running, {} waiting, {} of {} answers being sent{mine}); try again in {after} s",
            QUEUE_WAIT.as_secs(),
            st.running[0] + st.running[1],
            st.short.len + st.long.len,
            st.max_answers - st.free,
            st.max_answers,
        ),
        after,
    )
}

/// Answers the queries that waited too long, every 100 ms, for as long as the server runs.
fn reap(shared: &Shared) {
    loop {
        std::thread::sleep(Duration::from_millis(100));
        let now = Instant::now();
        let mut st = shared.lock();
        for lane in [Lane::Short, Lane::Long] {
            for job in st.lane(lane).expire(now, QUEUE_WAIT) {
                if !job.answer.is_closed() {
                    let e = waited_too_long(&st, lane, job.client);
                    let _ = job.answer.send(Err(e));
                }
            }
        }
    }
}

/// How the server starts a query process of a lane.
#[derive(Clone)]
struct Recipe {
    data: PathBuf,
    views: Arc<String>,
    limits: Limits,
    lane: Lane,
}

impl Recipe {
    /// DuckDB's memory limit and the process's data limit.
    fn memory(&self) -> (u64, u64) {
        match self.lane {
            Lane::Short => (SHORT_MEMORY, SHORT_DATA_LIMIT),
            Lane::Long => (LONG_MEMORY, DATA_LIMIT),
        }
    }

    fn grace(&self) -> Duration {
        match self.lane {
            Lane::Short => SHORT_GRACE,
            Lane::Long => GRACE,
        }
    }
}

/// A query process running, with the thread reading its answers.
struct Process {
    child: Child,
    stdin: ChildStdin,
    answers: Receiver<io::Result<(u16, Vec<u8>)>>,
    data_limit: u64,
}

impl Process {
    /// Starts a query process, gives it the views and waits until it is ready; its start-up
    /// runs `start_nice` lower in priority than its queries will.
    fn start(r: &Recipe, start_nice: i32) -> Result<Process, String> {
        let (memory, data_limit) = r.memory();
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
            .arg("--memory-limit")
            .arg(memory.to_string())
            .arg("--start-nice")
            .arg(start_nice.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        limit_child(&mut cmd, data_limit);
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start a query process: {e}"))?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = child.stdout.take().expect("piped");
        // The answers' frames: the reply's rows within their cap, and room for its head
        // (columns, types) and tail.
        let cap = r.limits.max_bytes + ANSWER_MARGIN;
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
            data_limit,
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

    /// Kills the process without waiting for the kernel to free its memory (a second for a
    /// gigabyte on a loaded machine): [`Process::discard`] reaps it.
    fn stop(&mut self) {
        let _ = self.child.kill();
    }

    /// Kills the process and hands it to `reaper` (reaped here if that thread has ended).
    fn discard(mut self, reaper: &mpsc::Sender<Child>) {
        self.stop();
        if let Err(mpsc::SendError(mut child)) = reaper.send(self.child) {
            let _ = child.wait();
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

/// The child's limits, set between `fork` and `exec`: `data_limit` bytes of data, no core
/// file (a process that aborts for memory would write gigabytes), and killed when the thread
/// that started it ends (a feeding thread, which ends only with the server).
fn limit_child(cmd: &mut Command, data_limit: u64) {
    use std::os::unix::process::CommandExt;
    // SAFETY: only async-signal-safe calls (setrlimit, prctl) between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let data = libc::rlimit {
                rlim_cur: data_limit as libc::rlim_t,
                rlim_max: data_limit as libc::rlim_t,
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

/// The query pool: the lanes' queues and their [`WORKERS`] query processes, each fed by a
/// thread.
pub struct Sql {
    shared: Arc<Shared>,
    pub max_rows: usize,
    pub max_bytes: usize,
    pub timeout: Duration,
    pub workers: usize,
}

impl Sql {
    /// Starts the query processes over the views `views` of `data` (an absolute path), each
    /// with the limits given, and the threads that feed them; at most `max_answers` answers
    /// are held at once. An error if a process cannot start (the sandbox, or the views,
    /// refused).
    pub fn start(
        data: &Path,
        views: String,
        max_answers: usize,
        max_rows: usize,
        max_bytes: usize,
        timeout: Duration,
    ) -> Result<Sql, ServeError> {
        let recipe = |lane| Recipe {
            data: data.to_path_buf(),
            views: Arc::new(views.clone()),
            limits: Limits {
                max_rows,
                max_bytes,
                timeout,
            },
            lane,
        };
        let (reaper, killed) = mpsc::channel::<Child>();
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                short: Turns::default(),
                long: Turns::default(),
                free: max_answers,
                max_answers,
                held: HashMap::new(),
                per_client: (max_answers / 2).max(1),
                running: [0; 2],
                mean: [0.1, 1.0],
                known_long: HashSet::new(),
            }),
            changed: Condvar::new(),
            spares: Mutex::new([None, None]),
            spare_taken: Condvar::new(),
            reaper,
        });
        let lanes =
            std::iter::once(Lane::Short).chain(std::iter::repeat_n(Lane::Long, LONG_WORKERS));
        let thread_error = |e: io::Error| ServeError::Sandbox {
            context: "a query process".into(),
            message: format!("cannot start a thread: {e}"),
        };
        for (i, lane) in lanes.enumerate() {
            // Each process is started by its own thread, which lives as long as the server:
            // the kernel kills a process when the thread that started it ends.
            let (started_tx, started) = mpsc::channel();
            let recipe = recipe(lane);
            let shared = shared.clone();
            std::thread::Builder::new()
                .name(format!("sql-{i}"))
                .spawn(move || match Process::start(&recipe, 0) {
                    Ok(p) => {
                        let _ = started_tx.send(Ok(()));
                        feed(Some(p), &recipe, &shared);
                    }
                    Err(e) => {
                        let _ = started_tx.send(Err(e));
                    }
                })
                .map_err(thread_error)?;
            started
                .recv()
                .unwrap_or_else(|_| Err("the query process's thread ended".into()))
                .map_err(|message| ServeError::Sandbox {
                    context: "a query process".into(),
                    message,
                })?;
        }
        {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("sql-queue".into())
                .spawn(move || reap(&shared))
                .map_err(thread_error)?;
        }
        std::thread::Builder::new()
            .name("sql-reap".into())
            .spawn(move || {
                for mut child in killed {
                    let _ = child.wait();
                }
            })
            .map_err(thread_error)?;
        for lane in [Lane::Short, Lane::Long] {
            let (recipe, shared) = (recipe(lane), shared.clone());
            std::thread::Builder::new()
                .name(format!("sql-spare-{lane:?}"))
                .spawn(move || keep_spare(&recipe, &shared))
                .map_err(thread_error)?;
        }
        Ok(Sql {
            shared,
            max_rows,
            max_bytes,
            timeout,
            workers: WORKERS,
        })
    }

    /// Queues the query of `body` (`{"query": "…"}`) from `client` and returns where its
    /// answer (the reply's JSON text) will come; a body that is not such JSON is answered at
    /// once.
    pub fn submit(
        &self,
        body: &[u8],
        client: IpAddr,
    ) -> Result<tokio::sync::oneshot::Receiver<Result<Answered, ApiError>>, ApiError> {
        let statement = serde_json::from_slice::<Value>(body)
            .ok()
            .and_then(|v| v.get("query").and_then(Value::as_str).map(String::from))
            .ok_or_else(|| ApiError::bad("the body must be JSON: {\"query\": \"SELECT …\"}"))?;
        let (tx, rx) = tokio::sync::oneshot::channel();
        let mut h = DefaultHasher::new();
        statement.hash(&mut h);
        let now = Instant::now();
        let job = Job {
            key: h.finish(),
            statement,
            client,
            came: now,
            queued: now,
            prepared_cpu: Duration::ZERO,
            answer: tx,
        };
        {
            let mut st = self.shared.lock();
            let lane = if st.known_long.contains(&job.key) {
                Lane::Long
            } else {
                Lane::Short
            };
            st.lane(lane).push(job);
        }
        self.shared.changed.notify_all();
        Ok(rx)
    }
}

/// The refusal of a query that ran out of its time limit `timeout`.
fn too_long(timeout: Duration) -> ApiError {
    ApiError::new(
        408,
        format!(
            "the query needed more time than the limit of {} s and was stopped (narrow it with WHERE board = …, variant = …, age …, or add a LIMIT)",
            timeout.as_secs_f64()
        ),
    )
}

/// The refusal of a query DuckDB did not prepare within [`PREPARE_CPU`].
fn slow_to_prepare() -> ApiError {
    ApiError::new(
        422,
        format!(
            "the query took more than {} s of CPU time to prepare and was stopped: DuckDB builds a query's constants (such as range(100000000), 100 million values) before it runs, where no time limit reaches; make them smaller, or use age2048 sql",
            PREPARE_CPU.as_secs_f64()
        ),
    )
}

/// The refusal of a query whose constants took more than [`PREPARE_DATA`] while DuckDB
/// prepared it.
fn big_to_prepare() -> ApiError {
    ApiError::new(
        422,
        format!(
            "the query took more than {} MiB of memory to prepare and was stopped: DuckDB builds a query's constants (such as range(100000000), 100 million values) before it runs, where no memory limit of DuckDB's reaches; make them smaller, or use age2048 sql",
            PREPARE_DATA >> 20
        ),
    )
}

/// A query process's thread: takes its lane's queries one at a time with an answer permit,
/// hands each to the process and sends its answer on, or gives a query its slice did not
/// answer to the long lane; replaces the process when it died or was killed.
fn feed(mut process: Option<Process>, recipe: &Recipe, shared: &Arc<Shared>) {
    let timeout = recipe.limits.timeout;
    loop {
        let (mut job, permit, from) = take(shared, recipe.lane);
        let left = timeout.saturating_sub(job.came.elapsed());
        // The short lane tries a query within its slice; a long process runs it to the end.
        let slice = recipe.lane == Lane::Short;
        let budget = if slice {
            Budget {
                wall: left.min(SLICE_WALL),
                cpu: Some(SLICE_CPU),
            }
        } else {
            Budget {
                wall: left,
                cpu: None,
            }
        };
        // Preparing is stopped at the slice's CPU time in the short lane, at what is left of
        // PREPARE_CPU in a long process.
        let prepare = if slice {
            SLICE_CPU
        } else {
            PREPARE_CPU.saturating_sub(job.prepared_cpu)
        };
        let t = Instant::now();
        let (ran, replace) = if left.is_zero() {
            (Ran::Answered(Err(too_long(timeout)), true), false)
        } else {
            run_in(
                &mut process,
                recipe,
                shared,
                &job.statement,
                budget,
                prepare,
            )
        };
        let took = t.elapsed().as_secs_f64();
        {
            let mut st = shared.lock();
            let lane = recipe.lane as usize;
            st.running[lane] -= 1;
            if !matches!(ran, Ran::Sliced { .. }) {
                st.mean[lane] = 0.8 * st.mean[lane] + 0.2 * took;
            }
            // A query the short lane gave back or whose process it had to replace, or one a
            // long process took from the short queue and ran longer than a slice, goes to the
            // long lane at once next time.
            let short_lost = recipe.lane == Lane::Short && replace;
            if matches!(ran, Ran::Sliced { .. })
                || short_lost
                || (from == Lane::Short && took > SLICE_WALL.as_secs_f64())
            {
                if st.known_long.len() >= KNOWN_LONG {
                    st.known_long.clear();
                }
                st.known_long.insert(job.key);
            }
            if let Ran::Sliced { preparing, .. } = ran {
                job.queued = Instant::now();
                job.prepared_cpu += preparing;
                st.long.push(job);
                drop(st);
                drop(permit);
                shared.changed.notify_all();
                if replace {
                    restart(&mut process, recipe, shared);
                }
                continue;
            }
        }
        shared.changed.notify_all();
        let Ran::Answered(reply, _) = ran else {
            unreachable!("a sliced query went to the long lane")
        };
        // The client may have gone; its answer goes nowhere then.
        let _ = job.answer.send(reply.map(|json| Answered { json, permit }));
        if replace {
            // Replaced now, so that the next query does not wait for it.
            restart(&mut process, recipe, shared);
        }
    }
}

/// Kills the process (if any) and puts another in its place: the lane's spare, or one
/// started now.
fn restart(process: &mut Option<Process>, recipe: &Recipe, shared: &Shared) {
    if let Some(p) = process.take() {
        p.discard(&shared.reaper);
    }
    *process = shared.fresh(recipe);
}

/// Runs `statement` within `budget` (and `prepare` of CPU time to prepare it) on the lane's
/// process, replaced first if it is not running; whether the process is to be replaced after.
fn run_in(
    process: &mut Option<Process>,
    recipe: &Recipe,
    shared: &Shared,
    statement: &str,
    budget: Budget,
    prepare: Duration,
) -> (Ran, bool) {
    // A process that ended while idle (killed from outside) is not handed the query.
    if let Some(p) = process.as_mut() {
        if !matches!(p.child.try_wait(), Ok(None)) {
            p.kill();
            *process = None;
        }
    }
    let slice = recipe.lane == Lane::Short;
    // Three tries: the lane's process and its spare may both have been killed together and
    // still look alive while the kernel tears them down; the last try starts a process now.
    for attempt in 0..3 {
        if process.is_none() {
            *process = if attempt < 2 {
                shared.fresh(recipe)
            } else {
                Process::start(recipe, 0).ok()
            };
        }
        let Some(p) = process.as_mut() else {
            return (Ran::Answered(Err(not_started()), false), false);
        };
        let grace = recipe.grace();
        match run(
            p,
            statement,
            budget,
            grace,
            prepare,
            recipe.limits.timeout,
            slice,
        ) {
            Ran::NotStarted if attempt < 2 => {
                // The process had ended before it read the query: a new one runs it.
                p.kill();
                *process = None;
            }
            Ran::NotStarted => return (Ran::Answered(Err(not_started()), false), true),
            ran @ (Ran::Answered(_, alive) | Ran::Sliced { alive, .. }) => {
                let replace = !alive || bloated(&p.child, p.data_limit);
                return (ran, replace);
            }
        }
    }
    unreachable!("the last attempt returns")
}

/// True when a query process holds more than [`RECYCLE_AT`] (or half its limit) of data after
/// a query: DuckDB's allocator keeps the address space a big query took, which counts against
/// the process's limit and would fail the next query, so the process is replaced.
fn bloated(child: &Child, data_limit: u64) -> bool {
    data_of(child.id()).is_some_and(|d| d > RECYCLE_AT.min(data_limit / 2))
}

/// What became of a query handed to a process.
enum Ran {
    /// The answer, and whether the process can take another query.
    Answered(Result<Vec<u8>, ApiError>, bool),
    /// Its slice ran out, or the short lane's process died or was killed running it: whether
    /// the process can take another query, and the CPU time it had spent still preparing the
    /// query when it was killed (zero if DuckDB had prepared it).
    Sliced { alive: bool, preparing: Duration },
    /// The process ended before it read the query.
    NotStarted,
}

fn not_started() -> ApiError {
    ApiError::busy(
        "no query process could be started; try again in a moment",
        5,
    )
}

/// Runs `statement` on `p` within `budget`, killing the process `grace` past it, or once
/// DuckDB has spent `prepare` of CPU time still preparing it; `timeout` is the limit the
/// refusal states; a `slice` that does not answer is [`Ran::Sliced`] (a query still preparing
/// at `prepare` too), one outside a slice still preparing at `prepare` is refused.
fn run(
    p: &mut Process,
    statement: &str,
    budget: Budget,
    grace: Duration,
    prepare: Duration,
    timeout: Duration,
    slice: bool,
) -> Ran {
    let deadline = Instant::now() + budget.wall + grace;
    let cpu0 = cpu_of(p.child.id());
    let data0 = data_of(p.child.id());
    // The CPU time spent on the query so far (`None` if the process cannot be read).
    let used = |p: &Process| {
        cpu0.zip(cpu_of(p.child.id()))
            .map(|(a, b)| b.saturating_sub(a))
    };
    // The data the process took on since it was handed the query.
    let grown = |p: &Process| {
        data0
            .zip(data_of(p.child.id()))
            .map_or(0, |(a, b)| b.saturating_sub(a))
    };
    if write_frame(&mut p.stdin, QUERY, &query_frame(statement, budget)).is_err() {
        return Ran::NotStarted;
    }
    let mut started = false;
    let mut prepared = false;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        // While DuckDB prepares, its CPU time is looked at every 50 ms.
        let left = if prepared {
            left
        } else {
            left.min(Duration::from_millis(50))
        };
        let reply = match p.answers.recv_timeout(left) {
            Ok(Ok((STARTED, _))) if !started => {
                started = true;
                continue;
            }
            Ok(Ok((PREPARED, _))) if started && !prepared => {
                prepared = true;
                continue;
            }
            // Still preparing: its constants are being built, which the query's own time limit
            // cannot stop; refused as soon as they take more memory than any query's
            // preparing needs, in either lane, and given up past the CPU time allowed (the
            // short lane gives the query to the long one, which refuses it).
            Err(RecvTimeoutError::Timeout) if !prepared && Instant::now() < deadline => {
                if grown(p) > PREPARE_DATA {
                    p.stop();
                    return Ran::Answered(Err(big_to_prepare()), false);
                }
                let spent = used(p);
                if spent.is_none_or(|u| u < prepare) {
                    continue;
                }
                p.stop();
                if slice {
                    return Ran::Sliced {
                        alive: false,
                        preparing: spent.unwrap_or(prepare),
                    };
                }
                (Err(slow_to_prepare()), false)
            }
            Err(RecvTimeoutError::Disconnected) if !started => return Ran::NotStarted,
            Ok(Ok((200, json))) if started => (Ok(json), true),
            Ok(Ok((SLICED, _))) if started && slice => {
                return Ran::Sliced {
                    alive: true,
                    preparing: Duration::ZERO,
                }
            }
            Ok(Ok((status, why))) if started && status >= 400 => (
                Err(ApiError::new(status, String::from_utf8_lossy(&why))),
                true,
            ),
            // A frame out of order, over the cap, or a broken pipe: the process is not
            // trusted again.
            Ok(Ok((tag, _))) => {
                p.stop();
                (
                    Err(ApiError::new(
                        500,
                        format!("the query's process answered out of order (frame {tag})"),
                    )),
                    false,
                )
            }
            Ok(Err(e)) => {
                p.stop();
                (
                    Err(ApiError::new(
                        500,
                        format!("the query's process answered out of bounds ({e})"),
                    )),
                    false,
                )
            }
            // The short lane's process died (at its small limit) or outran its slice: the
            // long lane tries the query.
            Err(RecvTimeoutError::Disconnected | RecvTimeoutError::Timeout) if slice => {
                let spent = if prepared { None } else { used(p) };
                p.stop();
                return Ran::Sliced {
                    alive: false,
                    preparing: spent.unwrap_or(Duration::ZERO),
                };
            }
            Err(RecvTimeoutError::Disconnected) => (Err(ended(p.kill())), false),
            Err(RecvTimeoutError::Timeout) => {
                p.stop();
                (Err(too_long(timeout)), false)
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
    fn queries_are_taken_by_address_in_turn() {
        let ip = |n: u8| IpAddr::from([10, 0, 0, n]);
        let mut waiting = Vec::new();
        let job = |statement: &str, client, waiting: &mut Vec<_>| {
            let (answer, rx) = tokio::sync::oneshot::channel();
            waiting.push(rx);
            Job {
                statement: statement.into(),
                key: 0,
                client,
                came: Instant::now(),
                queued: Instant::now(),
                prepared_cpu: Duration::ZERO,
                answer,
            }
        };
        let mut t = Turns::default();
        for (s, c) in [
            ("a1", 1),
            ("a2", 1),
            ("a3", 1),
            ("b1", 2),
            ("c1", 3),
            ("b2", 2),
        ] {
            t.push(job(s, ip(c), &mut waiting));
        }
        // A client gone: its query is skipped.
        t.push(job("d1", ip(4), &mut waiting));
        waiting.pop();
        let order: Vec<String> =
            std::iter::from_fn(|| t.pop(|_| true).map(|j| j.statement)).collect();
        assert_eq!(order, ["a1", "b1", "c1", "a2", "b2", "a3"]);
        assert_eq!(t.len, 0);
        // Queries taken out keep the others' turns.
        t.push(job("a1", ip(1), &mut waiting));
        t.push(job("b1", ip(2), &mut waiting));
        t.push(job("a2", ip(1), &mut waiting));
        let out: Vec<String> = t
            .take_if(|j| j.statement == "a1")
            .into_iter()
            .map(|j| j.statement)
            .collect();
        assert_eq!(out, ["a1"]);
        let order: Vec<String> =
            std::iter::from_fn(|| t.pop(|_| true).map(|j| j.statement)).collect();
        assert_eq!(order, ["a2", "b1"]);
        // An address that may not take another (its answer permits all held) keeps its
        // place while the others are served, and is served first once it may.
        for (s, c) in [("a1", 1), ("b1", 2), ("a2", 1), ("c1", 3), ("b2", 2)] {
            t.push(job(s, ip(c), &mut waiting));
        }
        let not_a = |i: IpAddr| i != ip(1);
        let order: Vec<String> = std::iter::from_fn(|| t.pop(not_a).map(|j| j.statement)).collect();
        assert_eq!(order, ["b1", "c1", "b2"]);
        assert_eq!(t.len, 2);
        assert!(t.pop(|_| false).is_none());
        let order: Vec<String> =
            std::iter::from_fn(|| t.pop(|_| true).map(|j| j.statement)).collect();
        assert_eq!(order, ["a1", "a2"]);
    }

    #[test]
    fn a_query_frame_carries_its_budget() {
        for budget in [
            Budget {
                wall: Duration::from_millis(1500),
                cpu: Some(Duration::from_millis(300)),
            },
            Budget {
                wall: Duration::from_secs(120),
                cpu: None,
            },
        ] {
            let f = query_frame("SELECT 'é'", budget);
            assert_eq!(parse_query(&f), Some((budget, "SELECT 'é'".to_string())));
        }
        assert_eq!(parse_query(b"short"), None);
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
