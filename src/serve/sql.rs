//! The SQL tab's queries: exactly one read-only statement, checked before it runs, on a DuckDB
//! that could not do harm if the check missed something, answered as `{"columns": […],
//! "rows": [[…], …]}`, capped in rows and in time.
//!
//! The check ([`check`]): the text is one statement (the CLI's splitter), it begins as a query
//! does (`SELECT`, `WITH`, `FROM`, `VALUES`, `TABLE`, `DESCRIBE`, `SHOW`, `SUMMARIZE`, `(`),
//! names no word of a statement that writes, loads or configures (`COPY`, `ATTACH`, `INSTALL`,
//! `LOAD`, `SET`, `PRAGMA`, `INSERT`, `CREATE`, …) outside quotes and comments, and DuckDB's
//! own parser reads it as a `SELECT` (`json_serialize_sql` serialises nothing else).
//!
//! The sandbox ([`sandbox`]): the catalog's in-memory DuckDB with its views, then external
//! access off but for the data directory (`allowed_directories`), no extension installed or
//! loaded on demand, no spilling to a temporary directory, a memory limit, one thread a query,
//! and the configuration locked, so no statement can change a setting back.
//!
//! The pool ([`Sql`]): a few connections of that database, each on a thread of its own, fed by
//! a bounded queue (a query beyond it is answered 503 at once); the client's connection waits
//! for its answer, so it runs one query at a time, and no thread a look-up needs waits on a
//! query. A watchdog interrupts a query past its time limit.

use std::path::Path;
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arrow::array::{Array, RecordBatch};
use arrow::datatypes::{Field, Schema};
use duckdb::{Connection, InterruptHandle};
use serde_json::{json, Value};

use super::{ApiError, ServeError};
use crate::query::catalog::sql_str;
use crate::query::error::one_line;
use crate::query::sql::{split_statements, QueryResult};
use crate::query::text::{printable, Target, LOSSLESS};

/// How a query may begin.
const FIRST_WORDS: [&str; 8] = [
    "SELECT",
    "WITH",
    "FROM",
    "VALUES",
    "TABLE",
    "DESCRIBE",
    "SHOW",
    "SUMMARIZE",
];

/// Words of statements that write, load, attach or configure: refused anywhere in a query
/// (outside quotes and comments), whatever the parser would make of them.
const FORBIDDEN: [&str; 33] = [
    "ALTER",
    "ANALYZE",
    "ATTACH",
    "BEGIN",
    "CALL",
    "CHECKPOINT",
    "COMMENT",
    "COMMIT",
    "COPY",
    "CREATE",
    "DEALLOCATE",
    "DELETE",
    "DETACH",
    "DROP",
    "EXECUTE",
    "EXPORT",
    "FORCE",
    "GRANT",
    "IMPORT",
    "INSERT",
    "INSTALL",
    "LOAD",
    "MERGE",
    "PRAGMA",
    "PREPARE",
    "RESET",
    "REVOKE",
    "ROLLBACK",
    "SET",
    "TRUNCATE",
    "UPDATE",
    "USE",
    "VACUUM",
];

/// The words of `text` outside quotes and comments, upper-cased, and the first character of
/// code (to tell a statement opening with `(`).
fn words(text: &str) -> (Vec<String>, Option<char>) {
    let mut out = Vec::new();
    let mut first = None;
    let mut chars = text.chars().peekable();
    let mut word = String::new();
    let flush = |w: &mut String, out: &mut Vec<String>| {
        if !w.is_empty() {
            out.push(std::mem::take(w).to_ascii_uppercase());
        }
    };
    while let Some(c) = chars.next() {
        if c.is_ascii_alphanumeric() || c == '_' {
            first.get_or_insert(c);
            word.push(c);
            continue;
        }
        flush(&mut word, &mut out);
        match c {
            '\'' | '"' => {
                first.get_or_insert(c);
                // A quoted string or identifier ('' and "" escape themselves).
                while let Some(d) = chars.next() {
                    if d == c {
                        if chars.peek() == Some(&c) {
                            chars.next();
                        } else {
                            break;
                        }
                    }
                }
            }
            '-' if chars.peek() == Some(&'-') => {
                for d in chars.by_ref() {
                    if d == '\n' {
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut prev = ' ';
                for d in chars.by_ref() {
                    if prev == '*' && d == '/' {
                        break;
                    }
                    prev = d;
                }
            }
            c if c.is_whitespace() => {}
            c => {
                first.get_or_insert(c);
            }
        }
    }
    flush(&mut word, &mut out);
    (out, first)
}

/// The one statement of `text` if it is a read-only query by its words; the reason otherwise
/// (400). DuckDB's parser checks it too, before it runs ([`Sql`]).
pub fn check(text: &str) -> Result<String, ApiError> {
    let refuse = |why: String| Err(ApiError::bad(format!("refused: {why}")));
    let statements = split_statements(text);
    let statement = match statements.as_slice() {
        [] => return refuse("the query is empty".into()),
        [one] => one.clone(),
        more => {
            return refuse(format!(
                "{} statements; run one at a time (a read-only SELECT)",
                more.len()
            ))
        }
    };
    let (words, first) = words(&statement);
    let opening = words.first().map(String::as_str).unwrap_or("");
    if first != Some('(') && !FIRST_WORDS.contains(&opening) {
        return refuse(format!(
            "only read-only queries run here (SELECT, WITH, FROM, VALUES, TABLE, DESCRIBE, SHOW, SUMMARIZE), not {}",
            if opening.is_empty() { "this" } else { opening }
        ));
    }
    if let Some(w) = words.iter().find(|w| FORBIDDEN.contains(&w.as_str())) {
        return refuse(format!(
            "{w} is not allowed: queries here only read the views (no COPY, ATTACH, INSTALL, LOAD, SET, PRAGMA or writes)"
        ));
    }
    Ok(statement)
}

/// The settings that lock the catalog's DuckDB down, in the order DuckDB takes them (the
/// directory list before external access is turned off, the lock last).
fn sandbox_settings(data: &Path) -> Vec<String> {
    let mut dir = data.to_string_lossy().into_owned();
    if !dir.ends_with('/') {
        dir.push('/');
    }
    vec![
        "SET autoinstall_known_extensions = false".into(),
        "SET autoload_known_extensions = false".into(),
        "SET temp_directory = ''".into(),
        "SET memory_limit = '2GB'".into(),
        "SET threads = 1".into(),
        format!("SET allowed_directories = [{}]", sql_str(&dir)),
        "SET enable_external_access = false".into(),
    ]
}

/// Locks down `conn` (whose views read the Parquet files under `data`, an absolute path) and
/// returns `n` connections to its database for the workers, each asking for lossless Arrow.
pub fn sandbox(conn: Connection, data: &Path, n: usize) -> Result<Vec<Connection>, ServeError> {
    let fail = |context: String| {
        move |e: duckdb::Error| ServeError::Sandbox {
            context,
            message: one_line(&e.to_string()),
        }
    };
    for s in sandbox_settings(data) {
        conn.execute_batch(&s).map_err(fail(s.clone()))?;
    }
    let mut conns = Vec::with_capacity(n);
    for _ in 0..n {
        let c = conn
            .try_clone()
            .map_err(fail("a worker's connection".into()))?;
        c.execute_batch(LOSSLESS).map_err(fail(LOSSLESS.into()))?;
        conns.push(c);
    }
    conn.execute_batch("SET lock_configuration = true")
        .map_err(fail("SET lock_configuration = true".into()))?;
    Ok(conns)
}

/// DuckDB's parser on `statement`: `Ok` if it is one `SELECT` (which `json_serialize_sql`
/// alone serialises), its reason otherwise.
fn parsed_as_select(conn: &Connection, statement: &str) -> Result<(), ApiError> {
    let out: String = conn
        .query_row("SELECT json_serialize_sql(?::VARCHAR)", [statement], |r| {
            r.get(0)
        })
        .map_err(|e| ApiError::new(500, format!("DuckDB's parser: {e}")))?;
    let v: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
    if v["error"].as_bool() == Some(false) {
        return Ok(());
    }
    let why = v["error_message"]
        .as_str()
        .unwrap_or("not a query")
        .to_string();
    Err(ApiError::bad(format!(
        "refused: only a read-only SELECT runs here ({})",
        one_line(&why)
    )))
}

/// The first `max_rows` rows of `statement` (and whether there were more), fetched chunk by
/// chunk so that a big result is never held whole; a failure mid-stream is an error, not a
/// short result.
fn run_capped(
    conn: &Connection,
    statement: &str,
    max_rows: usize,
) -> Result<(QueryResult, bool), String> {
    let fail = |e: duckdb::Error| one_line(&e.to_string());
    let mut stmt = conn.prepare(statement).map_err(fail)?;
    let schema = stmt.stream_arrow([]).map_err(fail)?.get_schema();
    let mut batches = Vec::new();
    let mut rows = 0usize;
    let mut truncated = false;
    while let Some(chunk) = stmt.step().map_err(fail)? {
        let b = RecordBatch::from(&chunk);
        let keep = b.num_rows().min(max_rows - rows);
        if keep < b.num_rows() {
            truncated = true;
        }
        rows += keep;
        batches.push(b.slice(0, keep));
        if truncated || rows == max_rows {
            // One more chunk tells whether anything was cut at exactly the cap.
            if !truncated {
                truncated = stmt.step().map_err(fail)?.is_some_and(|c| c.len() > 0);
            }
            break;
        }
    }
    Ok((QueryResult { schema, batches }, truncated))
}

/// `{"columns", "types", "rows"}` of a result: each row an array in column order, values as
/// the CLI's JSON output writes them (numbers, strings, booleans, lists, objects, null).
fn result_json(result: &QueryResult) -> Result<Value, String> {
    let columns: Vec<String> = result
        .schema
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let batch = result.concat().map_err(|e| one_line(&e.to_string()))?;
    let batch = printable(&batch, Target::Json);
    let types: Vec<String> = batch
        .schema()
        .fields()
        .iter()
        .map(|f| f.data_type().to_string())
        .collect();
    let mut rows: Vec<Value> = Vec::with_capacity(batch.num_rows());
    if batch.num_rows() > 0 && batch.num_columns() > 0 {
        // Named by position, so columns of the same name (SELECT 1, 1) stay apart.
        let fields: Vec<Field> = batch
            .schema()
            .fields()
            .iter()
            .enumerate()
            .map(|(i, f)| f.as_ref().clone().with_name(format!("c{i}")))
            .collect();
        let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), batch.columns().to_vec())
            .map_err(|e| e.to_string())?;
        let mut buf = Vec::new();
        {
            let mut w = arrow::json::WriterBuilder::new()
                .with_explicit_nulls(true)
                .build::<_, arrow::json::writer::JsonArray>(&mut buf);
            w.write(&batch).map_err(|e| e.to_string())?;
            w.finish().map_err(|e| e.to_string())?;
        }
        let objects: Vec<serde_json::Map<String, Value>> =
            serde_json::from_slice(&buf).map_err(|e| e.to_string())?;
        for mut o in objects {
            rows.push(Value::Array(
                (0..columns.len())
                    .map(|i| o.remove(&format!("c{i}")).unwrap_or(Value::Null))
                    .collect(),
            ));
        }
    }
    Ok(json!({ "columns": columns, "types": types, "rows": rows }))
}

/// A query waiting for a worker, and where its answer goes.
struct Job {
    statement: String,
    answer: Sender<Result<Value, ApiError>>,
}

/// Queries that are running, by worker: when each must stop, and how to stop it.
struct Watchdog {
    slots: Mutex<Vec<Slot>>,
}

struct Slot {
    deadline: Option<Instant>,
    handle: Arc<InterruptHandle>,
    fired: bool,
}

impl Watchdog {
    fn arm(&self, i: usize, deadline: Instant) {
        let mut s = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        s[i].deadline = Some(deadline);
        s[i].fired = false;
    }

    /// Ends the watch of worker `i`; true if its query was interrupted.
    fn disarm(&self, i: usize) -> bool {
        let mut s = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        s[i].deadline = None;
        s[i].fired
    }

    fn patrol(&self) {
        loop {
            std::thread::sleep(Duration::from_millis(20));
            let now = Instant::now();
            let mut s = self.slots.lock().unwrap_or_else(|p| p.into_inner());
            for slot in s.iter_mut() {
                if slot.deadline.is_some_and(|d| now >= d) && !slot.fired {
                    slot.handle.interrupt();
                    slot.fired = true;
                }
            }
        }
    }
}

/// The query pool.
pub struct Sql {
    jobs: SyncSender<Job>,
    pub max_rows: usize,
    pub timeout: Duration,
    pub workers: usize,
}

/// Queries waiting beyond those running: more are answered 503 at once.
const QUEUE: usize = 32;

impl Sql {
    /// Starts one worker thread a connection of `conns` and the watchdog.
    pub fn start(conns: Vec<Connection>, max_rows: usize, timeout: Duration) -> Sql {
        let workers = conns.len();
        let (tx, rx) = sync_channel::<Job>(QUEUE);
        let rx = Arc::new(Mutex::new(rx));
        let watchdog = Arc::new(Watchdog {
            slots: Mutex::new(
                conns
                    .iter()
                    .map(|c| Slot {
                        deadline: None,
                        handle: c.interrupt_handle(),
                        fired: false,
                    })
                    .collect(),
            ),
        });
        {
            let w = watchdog.clone();
            std::thread::Builder::new()
                .name("sql-watchdog".into())
                .spawn(move || w.patrol())
                .expect("a thread starts");
        }
        for (i, conn) in conns.into_iter().enumerate() {
            let rx = rx.clone();
            let watchdog = watchdog.clone();
            std::thread::Builder::new()
                .name(format!("sql-{i}"))
                .spawn(move || worker(i, conn, &rx, &watchdog, max_rows, timeout))
                .expect("a thread starts");
        }
        Sql {
            jobs: tx,
            max_rows,
            timeout,
            workers,
        }
    }

    /// Runs the query of `body` (`{"query": "…"}`) on a worker and waits for its answer; a
    /// query the check refuses, or one beyond the queue, is answered at once.
    pub fn run(&self, body: &[u8]) -> Result<Value, ApiError> {
        let statement = serde_json::from_slice::<Value>(body)
            .ok()
            .and_then(|v| v.get("query").and_then(Value::as_str).map(String::from))
            .ok_or_else(|| ApiError::bad("the body must be JSON: {\"query\": \"SELECT …\"}"))
            .and_then(|q| check(&q))?;
        let (tx, rx) = channel();
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
        rx.recv()
            .unwrap_or_else(|_| Err(ApiError::new(500, "the query failed inside the server")))
    }
}

fn worker(
    i: usize,
    conn: Connection,
    rx: &Mutex<Receiver<Job>>,
    watchdog: &Watchdog,
    max_rows: usize,
    timeout: Duration,
) {
    loop {
        let job = {
            let rx = rx.lock().unwrap_or_else(|p| p.into_inner());
            match rx.recv() {
                Ok(j) => j,
                Err(_) => return,
            }
        };
        let reply = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            answer(i, &conn, watchdog, &job.statement, max_rows, timeout)
        }))
        .unwrap_or_else(|_| Err(ApiError::new(500, "the query failed inside the server")));
        // The client may have gone; its answer goes nowhere then.
        let _ = job.answer.send(reply);
    }
}

/// Runs one checked statement on worker `i`'s connection.
fn answer(
    i: usize,
    conn: &Connection,
    watchdog: &Watchdog,
    statement: &str,
    max_rows: usize,
    timeout: Duration,
) -> Result<Value, ApiError> {
    parsed_as_select(conn, statement)?;
    let start = Instant::now();
    watchdog.arm(i, start + timeout);
    let result = run_capped(conn, statement, max_rows);
    let interrupted = watchdog.disarm(i);
    let elapsed = start.elapsed();
    let (result, truncated) = match result {
        Ok(r) => r,
        Err(_) if interrupted => {
            return Err(ApiError::new(
                408,
                format!(
                    "the query ran longer than the limit of {} s and was interrupted (narrow it with WHERE board = …, variant = …, age …, or add a LIMIT)",
                    timeout.as_secs_f64()
                ),
            ))
        }
        Err(m) => return Err(ApiError::bad(m)),
    };
    let mut v = result_json(&result).map_err(|m| ApiError::new(500, m))?;
    let shown = result.num_rows();
    v["truncated"] = json!(truncated);
    v["note"] = if truncated {
        json!(format!(
            "showing the first {shown} rows; the query has more (add a LIMIT, or use age2048 sql for the whole result)"
        ))
    } else {
        Value::Null
    };
    v["elapsed_ms"] = json!(elapsed.as_secs_f64() * 1e3);
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_pass_the_check() {
        for q in [
            "SELECT 1",
            "  -- a comment\n select * from states limit 3;",
            "WITH t AS (SELECT 1 AS x) SELECT x FROM t",
            "FROM ages",
            "(SELECT 1) UNION (SELECT 2)",
            "DESCRIBE states",
            "SELECT 'COPY; ATTACH' AS s, \"update\" FROM t",
            "SELECT current_setting('threads')",
        ] {
            assert!(check(q).is_ok(), "{q}: {:?}", check(q));
        }
    }

    #[test]
    fn writes_and_settings_are_refused() {
        for (q, why) in [
            ("", "empty"),
            ("SELECT 1; SELECT 2", "2 statements"),
            ("COPY (SELECT 1) TO 'x.csv'", "not COPY"),
            ("ATTACH 'x.db'", "not ATTACH"),
            ("INSTALL httpfs", "not INSTALL"),
            ("LOAD httpfs", "not LOAD"),
            ("SET threads = 8", "not SET"),
            ("PRAGMA version", "not PRAGMA"),
            ("CREATE TABLE t AS SELECT 1", "not CREATE"),
            (
                "WITH t AS (SELECT 1) INSERT INTO x SELECT * FROM t",
                "INSERT is not allowed",
            ),
            ("SELECT 1 /* ; */ ; DROP TABLE x", "2 statements"),
            ("select * from t where x in (select 1); -- ;", "ok"),
        ] {
            match check(q) {
                Ok(_) => assert_eq!(why, "ok", "{q} passed"),
                Err(e) => {
                    assert_eq!(e.status, 400);
                    assert!(e.message.contains(why), "{q}: {}", e.message);
                }
            }
        }
    }
}
