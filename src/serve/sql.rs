//! The SQL tab's queries: exactly one read-only statement, decided by DuckDB's own parser,
//! on a DuckDB that could not do harm if the decision were wrong, answered as `{"columns":
//! […], "types": […], "rows": [[…], …]}`, capped in rows, in bytes and in time.
//!
//! The check ([`Duck::prepare_one`]): DuckDB's C API splits the text into its statements
//! (`duckdb_extract_statements`, the parser that runs it, so no quoting it knows hides a
//! second statement), there must be exactly one, and prepared it must be a `SELECT`
//! (`duckdb_prepared_statement_type`; `WITH`, `FROM`, `VALUES`, `TABLE`, `DESCRIBE`, `SHOW`
//! and `SUMMARIZE` are `SELECT`s to DuckDB, and so is a pragma it rewrites into a table
//! function, such as `PRAGMA version`). Any other answer is refused with DuckDB's own words.
//! Preparing runs nothing: a `COPY … TO` into the data directory, which the sandbox would
//! let DuckDB prepare, is refused by its type before it runs. The Rust client would run every statement but the last while preparing, which is
//! why the count comes first, from the C API.
//!
//! Everything here runs in a query process of the server ([`super::pool`]), never in the
//! server itself, so that what DuckDB allocates outside its memory limit (a constant folded
//! while binding, such as `SELECT range(300000000)`) is bounded by that process's limit.
//!
//! The sandbox ([`open`]): an in-memory DuckDB opened here (the C API keeps its handle for
//! the queries' connection) with the catalog's views, then external access off but for the
//! data directory (`allowed_directories`), no extension installed or loaded on demand, no
//! spilling to a temporary directory, a memory limit, one thread a query, and the
//! configuration locked, so no statement can change a setting back.
//!
//! The answer ([`answer`]): DuckDB's result is streamed chunk by chunk (each chunk handed
//! over as Arrow through the C data interface, only its rows whose strings fit the reply's
//! room, DuckDB's copy freed at once), each chunk's rows
//! written as JSON text straight into the reply, which stops at the row cap (`--max-rows`)
//! or at [`MAX_REPLY_BYTES`] of rows, with a note; no whole copy of the result is made, and
//! the conversion runs under the same deadline as the query (the deadline also stops it
//! between rows).
//!
//! The runner ([`Runner`]): the connection's queries one at a time, each on a thread of its
//! own, a watchdog thread interrupting each at its time limit (the server kills the process if
//! that is not enough) and lowering the priority of one past [`DEMOTE_CPU`] of CPU time, so
//! that the long analyses of one client do not slow the short queries of the others.

use std::ffi::{CStr, CString};
use std::path::Path;
use std::ptr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arrow::array::{Array, AsArray, RecordBatch, StructArray};
use arrow::datatypes::{FieldRef, Schema, SchemaRef};
use arrow::ffi::{from_ffi, FFI_ArrowArray, FFI_ArrowSchema};
use arrow::json::writer::{make_encoder, EncoderOptions};
use duckdb::{ffi, Connection};
use serde_json::{json, Value};

use super::{ApiError, ServeError};
use crate::query::catalog::sql_str;
use crate::query::error::one_line;
use crate::query::text::{printable, Target, LOSSLESS};

/// The most bytes of rows a query answers with (the rest are cut, with a note).
pub const MAX_REPLY_BYTES: usize = 32 * 1024 * 1024;

/// The names of DuckDB's statement types (`duckdb_statement_type`), to say what was refused.
fn statement_type_name(t: ffi::duckdb_statement_type) -> &'static str {
    const NAMES: [&str; 31] = [
        "INVALID",
        "SELECT",
        "INSERT",
        "UPDATE",
        "EXPLAIN",
        "DELETE",
        "PREPARE",
        "CREATE",
        "EXECUTE",
        "ALTER",
        "TRANSACTION",
        "COPY",
        "ANALYZE",
        "VARIABLE_SET",
        "CREATE_FUNC",
        "DROP",
        "EXPORT",
        "PRAGMA",
        "VACUUM",
        "CALL",
        "SET",
        "LOAD",
        "RELATION",
        "EXTENSION",
        "LOGICAL_PLAN",
        "ATTACH",
        "DETACH",
        "MULTI",
        "COPY_DATABASE",
        "UPDATE_EXTENSIONS",
        "MERGE_INTO",
    ];
    NAMES.get(t as usize).copied().unwrap_or("UNKNOWN")
}

/// A worker's connection to the queries' database, through DuckDB's C API: it checks a
/// text, prepares it once and streams its result.
pub struct Duck {
    con: ffi::duckdb_connection,
}

// SAFETY: a DuckDB connection may be used from any thread, one at a time (a worker owns its
// connection; the watchdog only interrupts it, which DuckDB allows from another thread).
unsafe impl Send for Duck {}

/// A C string of DuckDB's, read as one line (empty for none).
///
/// # Safety
/// `p` is null or a NUL-terminated string that lives for the call.
unsafe fn c_text(p: *const std::os::raw::c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    one_line(&CStr::from_ptr(p).to_string_lossy())
}

/// A prepared statement, destroyed when dropped.
pub struct Prepared(ffi::duckdb_prepared_statement);

impl Drop for Prepared {
    fn drop(&mut self) {
        // SAFETY: destroyed once, as the C API asks even when preparing failed.
        unsafe { ffi::duckdb_destroy_prepare(&mut self.0) }
    }
}

/// A query's streaming result with what reads its chunks as Arrow; destroyed when dropped.
struct Streamed {
    result: ffi::duckdb_result,
    options: ffi::duckdb_arrow_options,
    /// The chunks' Arrow type: a struct of the columns.
    ffi_schema: FFI_ArrowSchema,
    schema: SchemaRef,
}

impl Drop for Streamed {
    fn drop(&mut self) {
        // SAFETY: both were made for this result and are destroyed once.
        unsafe {
            ffi::duckdb_destroy_arrow_options(&mut self.options);
            ffi::duckdb_destroy_result(&mut self.result);
        }
    }
}

impl Streamed {
    /// Executes `p` as a streaming result and reads its schema.
    fn start(p: &Prepared) -> Result<Streamed, String> {
        // SAFETY: a zeroed result is what the C API fills; every pointer below belongs to it
        // and lives until `Streamed` drops (the logical types are destroyed here once read).
        unsafe {
            let mut result: ffi::duckdb_result = std::mem::zeroed();
            if ffi::duckdb_execute_prepared_streaming(p.0, &mut result) != ffi::DuckDBSuccess {
                let why = c_text(ffi::duckdb_result_error(&mut result));
                ffi::duckdb_destroy_result(&mut result);
                return Err(why);
            }
            let options = ffi::duckdb_result_get_arrow_options(&mut result);
            let mut s = Streamed {
                result,
                options,
                ffi_schema: FFI_ArrowSchema::empty(),
                schema: Arc::new(Schema::empty()),
            };
            let n = ffi::duckdb_column_count(&mut s.result);
            let mut types: Vec<ffi::duckdb_logical_type> = (0..n)
                .map(|i| ffi::duckdb_column_logical_type(&mut s.result, i))
                .collect();
            let mut names: Vec<*const std::os::raw::c_char> = (0..n)
                .map(|i| ffi::duckdb_column_name(&mut s.result, i))
                .collect();
            let err = ffi::duckdb_to_arrow_schema(
                s.options,
                types.as_mut_ptr(),
                names.as_mut_ptr(),
                n,
                &mut s.ffi_schema as *mut FFI_ArrowSchema as *mut ffi::ArrowSchema,
            );
            for t in &mut types {
                ffi::duckdb_destroy_logical_type(t);
            }
            error_data(err)?;
            let schema = Schema::try_from(&s.ffi_schema).map_err(|e| e.to_string())?;
            s.schema = Arc::new(schema);
            Ok(s)
        }
    }

    /// The next chunk as a record batch (`None` at the end), and whether rows of it were left
    /// out: only the first rows whose strings (top-level `VARCHAR` and `BLOB` values) fit in
    /// `room` bytes are copied out, since their JSON could not fit either; DuckDB's chunk is
    /// freed as soon as it is copied.
    fn next(&mut self, room: usize) -> Result<Option<(RecordBatch, bool)>, String> {
        // SAFETY: the result is live; a chunk fetched is destroyed once, after its copy.
        unsafe {
            let mut chunk = ffi::duckdb_fetch_chunk(self.result);
            if chunk.is_null() {
                let why = c_text(ffi::duckdb_result_error(&mut self.result));
                return if why.is_empty() { Ok(None) } else { Err(why) };
            }
            let size = ffi::duckdb_data_chunk_get_size(chunk) as usize;
            if size == 0 {
                ffi::duckdb_destroy_data_chunk(&mut chunk);
                return Ok(None);
            }
            let fit = rows_within(chunk, size, room);
            if fit < size {
                ffi::duckdb_data_chunk_set_size(chunk, fit as ffi::idx_t);
            }
            let mut array = FFI_ArrowArray::empty();
            let err = ffi::duckdb_data_chunk_to_arrow(
                self.options,
                chunk,
                &mut array as *mut FFI_ArrowArray as *mut ffi::ArrowArray,
            );
            ffi::duckdb_destroy_data_chunk(&mut chunk);
            error_data(err)?;
            let data = from_ffi(array, &self.ffi_schema).map_err(|e| e.to_string())?;
            Ok(Some((
                RecordBatch::from(StructArray::from(data)),
                fit < size,
            )))
        }
    }
}

/// How many of the first rows of `chunk` (of `size` rows) hold at most `room` bytes of
/// top-level strings (`VARCHAR`, `BLOB`); other types are not counted (the JSON writer's own
/// cap stops them).
///
/// # Safety
/// `chunk` is a live data chunk of a query result (whose vectors DuckDB hands out flat).
unsafe fn rows_within(chunk: ffi::duckdb_data_chunk, size: usize, room: usize) -> usize {
    let mut bytes = vec![0usize; size];
    for c in 0..ffi::duckdb_data_chunk_get_column_count(chunk) {
        let v = ffi::duckdb_data_chunk_get_vector(chunk, c);
        let mut t = ffi::duckdb_vector_get_column_type(v);
        let id = ffi::duckdb_get_type_id(t);
        ffi::duckdb_destroy_logical_type(&mut t);
        if id != ffi::DUCKDB_TYPE_DUCKDB_TYPE_VARCHAR && id != ffi::DUCKDB_TYPE_DUCKDB_TYPE_BLOB {
            continue;
        }
        let data = ffi::duckdb_vector_get_data(v) as *const ffi::duckdb_string_t;
        let validity = ffi::duckdb_vector_get_validity(v);
        for (r, b) in bytes.iter_mut().enumerate() {
            if validity.is_null() || ffi::duckdb_validity_row_is_valid(validity, r as ffi::idx_t) {
                *b += (*data.add(r)).value.inlined.length as usize;
            }
        }
    }
    let mut total = 0usize;
    for (r, b) in bytes.iter().enumerate() {
        total += b;
        if total > room {
            return r;
        }
    }
    size
}

/// `Ok` for an empty error of the C API, its message otherwise (the error is destroyed).
///
/// # Safety
/// `e` is an error data of the C API, not used after.
unsafe fn error_data(mut e: ffi::duckdb_error_data) -> Result<(), String> {
    if e.is_null() {
        return Ok(());
    }
    let out = if ffi::duckdb_error_data_has_error(e) {
        Err(c_text(ffi::duckdb_error_data_message(e)))
    } else {
        Ok(())
    };
    ffi::duckdb_destroy_error_data(&mut e);
    out
}

impl Duck {
    /// Runs a setting (or any statement) of the sandbox on this connection.
    fn execute(&self, sql: &str) -> Result<(), String> {
        let c = CString::new(sql).map_err(|e| e.to_string())?;
        // SAFETY: a live connection; the result is destroyed once.
        unsafe {
            let mut r: ffi::duckdb_result = std::mem::zeroed();
            let ok = ffi::duckdb_query(self.con, c.as_ptr(), &mut r) == ffi::DuckDBSuccess;
            let why = c_text(ffi::duckdb_result_error(&mut r));
            ffi::duckdb_destroy_result(&mut r);
            if ok {
                Ok(())
            } else {
                Err(why)
            }
        }
    }

    /// `text` prepared, if it is exactly one statement and DuckDB prepares it as a `SELECT`;
    /// the refusal otherwise (400), with DuckDB's own message when its parser or binder says
    /// no.
    pub fn prepare_one(&self, text: &str) -> Result<Prepared, ApiError> {
        let refuse = |why: String| Err(ApiError::bad(format!("refused: {why}")));
        let Ok(c) = CString::new(text) else {
            return refuse("the query holds a NUL character".into());
        };
        struct Extracted(ffi::duckdb_extracted_statements);
        impl Drop for Extracted {
            fn drop(&mut self) {
                // SAFETY: destroyed once, as the C API asks even when nothing was extracted.
                unsafe { ffi::duckdb_destroy_extracted(&mut self.0) }
            }
        }
        let mut ex = Extracted(ptr::null_mut());
        // SAFETY: a live connection, a NUL-terminated text, an out-pointer of ours.
        let n = unsafe { ffi::duckdb_extract_statements(self.con, c.as_ptr(), &mut ex.0) };
        if n == 0 {
            // SAFETY: the extracted statements are live until `ex` drops.
            let why = unsafe { c_text(ffi::duckdb_extract_statements_error(ex.0)) };
            return if why.is_empty() {
                refuse("the query is empty".into())
            } else {
                Err(ApiError::bad(why))
            };
        }
        if n > 1 {
            return refuse(format!(
                "{n} statements (DuckDB's parser); run one at a time (a read-only SELECT)"
            ));
        }
        let mut p = Prepared(ptr::null_mut());
        // SAFETY: statement 0 of the `n` = 1 extracted; `p` is destroyed once.
        let rc = unsafe { ffi::duckdb_prepare_extracted_statement(self.con, ex.0, 0, &mut p.0) };
        if rc != ffi::DuckDBSuccess {
            // SAFETY: the prepared statement lives until `p` drops.
            let why = unsafe { c_text(ffi::duckdb_prepare_error(p.0)) };
            return Err(ApiError::bad(if why.is_empty() {
                "DuckDB could not prepare the query".to_string()
            } else {
                why
            }));
        }
        // SAFETY: a prepared statement.
        let t = unsafe { ffi::duckdb_prepared_statement_type(p.0) };
        if t != ffi::duckdb_statement_type_DUCKDB_STATEMENT_TYPE_SELECT {
            return refuse(format!(
                "statement type {} (DuckDB's parser); only read-only queries run here (SELECT, WITH, FROM, VALUES, TABLE, DESCRIBE, SHOW, SUMMARIZE)",
                statement_type_name(t)
            ));
        }
        Ok(p)
    }

    /// `Ok` if `text` is one read-only query ([`Duck::prepare_one`]).
    pub fn one_query(&self, text: &str) -> Result<(), ApiError> {
        self.prepare_one(text).map(drop)
    }

    /// What interrupts this connection's query from another thread.
    fn interrupter(&self) -> Interrupter {
        Interrupter(self.con)
    }
}

/// Interrupts a worker's running query (`duckdb_interrupt`); the connection outlives it
/// (workers never end).
#[derive(Clone, Copy)]
struct Interrupter(ffi::duckdb_connection);

// SAFETY: `duckdb_interrupt` is made to be called from another thread than the query's.
unsafe impl Send for Interrupter {}

impl Interrupter {
    fn interrupt(&self) {
        // SAFETY: the connection is open for the life of the process.
        unsafe { ffi::duckdb_interrupt(self.0) }
    }
}

/// The settings that lock the catalog's DuckDB down, in the order DuckDB takes them (the
/// directory list before external access is turned off, the lock last).
fn sandbox_settings(data: &Path, memory_limit: u64) -> Vec<String> {
    let mut dir = data.to_string_lossy().into_owned();
    if !dir.ends_with('/') {
        dir.push('/');
    }
    vec![
        "SET autoinstall_known_extensions = false".into(),
        "SET autoload_known_extensions = false".into(),
        "SET temp_directory = ''".into(),
        format!("SET memory_limit = '{memory_limit}B'"),
        "SET threads = 1".into(),
        format!("SET allowed_directories = [{}]", sql_str(&dir)),
        "SET enable_external_access = false".into(),
    ]
}

/// Opens the queries' in-memory DuckDB, defines the catalog's views on it (`views`, the
/// statements `query::catalog::views` wrote over the data directory `data`, an absolute
/// path), limits DuckDB to `memory_limit` bytes, locks it down, and returns a connection to it
/// that asks for lossless Arrow.
pub fn open(views: &str, data: &Path, memory_limit: u64) -> Result<Duck, ServeError> {
    let sandbox = |context: &str, message: String| ServeError::Sandbox {
        context: context.to_string(),
        message,
    };
    let mut db: ffi::duckdb_database = ptr::null_mut();
    // SAFETY: a null path opens an in-memory database into our out-pointer. It is never
    // closed: the process's queries use it until the process ends.
    if unsafe { ffi::duckdb_open(ptr::null(), &mut db) } != ffi::DuckDBSuccess {
        return Err(sandbox("opening DuckDB", "duckdb_open failed".into()));
    }
    // SAFETY: a database just opened; the connection does not close it.
    let conn = unsafe { Connection::open_from_raw(db) }
        .map_err(|e| sandbox("opening DuckDB", one_line(&e.to_string())))?;
    conn.execute_batch(views)
        .map_err(|e| sandbox("defining the views", one_line(&e.to_string())))?;
    for s in sandbox_settings(data, memory_limit) {
        conn.execute_batch(&s)
            .map_err(|e| sandbox(&s, one_line(&e.to_string())))?;
    }
    let mut con: ffi::duckdb_connection = ptr::null_mut();
    // SAFETY: the database is open (and stays so); the connection is never closed.
    if unsafe { ffi::duckdb_connect(db, &mut con) } != ffi::DuckDBSuccess {
        return Err(sandbox(
            "the queries' connection",
            "duckdb_connect failed".into(),
        ));
    }
    let duck = Duck { con };
    duck.execute(LOSSLESS).map_err(|m| sandbox(LOSSLESS, m))?;
    conn.execute_batch("SET lock_configuration = true")
        .map_err(|e| sandbox("SET lock_configuration = true", one_line(&e.to_string())))?;
    Ok(duck)
}

/// Why a query's answer stopped short of its result.
#[derive(Debug, PartialEq)]
enum Cut {
    Rows,
    Bytes,
}

/// The rows of a result as JSON text (`[…],[…],…`), written chunk by chunk within a row cap
/// and a byte cap.
struct RowWriter {
    /// The reply so far: its head (columns, types), then the rows written.
    out: Vec<u8>,
    /// Where the rows begin in `out`.
    base: usize,
    rows: usize,
    max_rows: usize,
    max_bytes: usize,
    cut: Option<Cut>,
    options: EncoderOptions,
}

impl RowWriter {
    fn new(max_rows: usize, max_bytes: usize) -> RowWriter {
        RowWriter {
            out: Vec::new(),
            base: 0,
            rows: 0,
            max_rows,
            max_bytes,
            cut: None,
            options: EncoderOptions::default().with_explicit_nulls(true),
        }
    }

    /// The bytes of rows that may still be written.
    fn room(&self) -> usize {
        (self.base + self.max_bytes).saturating_sub(self.out.len())
    }

    /// Writes the rows of `batch` (already [`printable`]) until a cap is reached; `stop` is
    /// asked between rows whether the query's time is up.
    fn write(&mut self, batch: &RecordBatch, stop: &dyn Fn() -> bool) -> Result<(), String> {
        let fields: Vec<FieldRef> = batch.schema().fields().iter().cloned().collect();
        let mut encoders = fields
            .iter()
            .zip(batch.columns())
            .map(|(f, c)| make_encoder(f, c.as_ref(), &self.options))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())?;
        let texts: Vec<Option<Text>> = batch.columns().iter().map(|c| Text::of(c)).collect();
        for row in 0..batch.num_rows() {
            if self.rows == self.max_rows {
                self.cut = Some(Cut::Rows);
                return Ok(());
            }
            if row % 256 == 0 && stop() {
                return Err("interrupted".into());
            }
            // A row whose values take more memory than the bytes left is not encoded at all
            // (JSON text is no shorter than the values' bytes, but for numbers).
            let room = self.room();
            let size: usize = batch
                .columns()
                .iter()
                .map(|c| {
                    c.slice(row, 1)
                        .to_data()
                        .get_slice_memory_size()
                        .unwrap_or(0)
                })
                .sum();
            if size > room {
                self.cut = Some(Cut::Bytes);
                return Ok(());
            }
            let mark = self.out.len();
            if self.rows > 0 {
                self.out.push(b',');
            }
            self.out.push(b'[');
            for (i, e) in encoders.iter_mut().enumerate() {
                if i > 0 {
                    self.out.push(b',');
                }
                if e.is_null(row) {
                    self.out.extend_from_slice(b"null");
                } else if let Some(t) = &texts[i] {
                    write_json_str(&mut self.out, t.value(row));
                } else {
                    e.encode(row, &mut self.out);
                }
            }
            self.out.push(b']');
            if self.out.len() > self.base + self.max_bytes {
                self.out.truncate(mark);
                self.cut = Some(Cut::Bytes);
                return Ok(());
            }
            self.rows += 1;
        }
        Ok(())
    }
}

/// A text column, whose values [`write_json_str`] writes.
enum Text<'a> {
    Utf8(&'a arrow::array::StringArray),
    Large(&'a arrow::array::LargeStringArray),
    View(&'a arrow::array::StringViewArray),
}

impl<'a> Text<'a> {
    fn of(c: &'a dyn Array) -> Option<Text<'a>> {
        c.as_string_opt::<i32>()
            .map(Text::Utf8)
            .or_else(|| c.as_string_opt::<i64>().map(Text::Large))
            .or_else(|| c.as_string_view_opt().map(Text::View))
    }

    fn value(&self, row: usize) -> &'a str {
        match self {
            Text::Utf8(a) => a.value(row),
            Text::Large(a) => a.value(row),
            Text::View(a) => a.value(row),
        }
    }
}

/// `s` as a JSON string, the bytes serde_json writes: the runs that need no escape are found
/// eight bytes at a time and copied whole (serde_json's escaping goes a byte at a time, about
/// 20 MB a second in a debug build: most of the time a reply of long strings took).
fn write_json_str(out: &mut Vec<u8>, s: &str) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const TOP: u64 = 0x8080_8080_8080_8080;
    // True if a byte of `w` is a control character, `"` or `\` (exact for "any": the
    // classic tests for a byte below 0x20 and for a zero byte).
    let special = |w: u64| {
        let below = w.wrapping_sub(0x20 * ONES) & !w;
        let quote = (w ^ (b'"' as u64 * ONES)).wrapping_sub(ONES) & !(w ^ (b'"' as u64 * ONES));
        let slash = (w ^ (b'\\' as u64 * ONES)).wrapping_sub(ONES) & !(w ^ (b'\\' as u64 * ONES));
        (below | quote | slash) & TOP != 0
    };
    let b = s.as_bytes();
    out.reserve(b.len() + 2);
    out.push(b'"');
    let mut plain = 0; // where the run not yet copied begins
    let mut i = 0;
    while i < b.len() {
        if i + 8 <= b.len() {
            let w = u64::from_le_bytes(b[i..i + 8].try_into().expect("eight bytes"));
            if !special(w) {
                i += 8;
                continue;
            }
        }
        let c = b[i];
        let escaped: &[u8] = match c {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0..=0x1f => b"",
            _ => {
                i += 1;
                continue;
            }
        };
        out.extend_from_slice(&b[plain..i]);
        if escaped.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(c >> 4)]);
            out.push(HEX[usize::from(c & 0xf)]);
        } else {
            out.extend_from_slice(escaped);
        }
        i += 1;
        plain = i;
    }
    out.extend_from_slice(&b[plain..]);
    out.push(b'"');
}

/// Streams the result of `p` (one checked query) into the reply's JSON within the caps: its
/// columns and types (as printed), then its rows. `stop` says the deadline passed.
fn run_streamed(p: &Prepared, rows: &mut RowWriter, stop: &dyn Fn() -> bool) -> Result<(), String> {
    let mut result = Streamed::start(p)?;
    rows.out =
        head(&printable(&RecordBatch::new_empty(result.schema.clone()), Target::Json).schema());
    rows.base = rows.out.len();
    while let Some((chunk, short)) = result.next(rows.room())? {
        let batch = printable(&chunk, Target::Json);
        drop(chunk);
        rows.write(&batch, stop)?;
        if stop() {
            return Err("interrupted".into());
        }
        if short && rows.cut.is_none() && rows.rows < rows.max_rows {
            rows.cut = Some(Cut::Bytes);
        }
        if rows.cut.is_some() {
            break;
        }
        if rows.rows == rows.max_rows {
            // One more chunk tells whether anything was cut at exactly the cap.
            if result.next(0)?.is_some() {
                rows.cut = Some(Cut::Rows);
            }
            break;
        }
    }
    Ok(())
}

/// The reply's text up to its rows: `{"columns":[…],"types":[…],"rows":[`.
fn head(schema: &SchemaRef) -> Vec<u8> {
    let columns: Vec<&String> = schema.fields().iter().map(|f| f.name()).collect();
    let types: Vec<String> = schema
        .fields()
        .iter()
        .map(|f| f.data_type().to_string())
        .collect();
    let mut out = json!({ "columns": columns, "types": types })
        .to_string()
        .into_bytes();
    out.pop(); // the closing brace
    out.extend_from_slice(b",\"rows\":[");
    out
}

/// Queries that are running, by worker: when each must stop, and how to stop it.
struct Watchdog {
    slots: Mutex<Vec<Slot>>,
}

struct Slot {
    deadline: Option<Instant>,
    /// The process's CPU time when the query started and the most it may add (a slice).
    cpu: Option<(Duration, Duration)>,
    handle: Interrupter,
    fired: bool,
    /// The thread running the query (its id), and whether it was given a lower priority.
    thread: Option<(libc::pid_t, bool)>,
}

/// The CPU time a query's thread may take at the process's priority; past it the thread's
/// priority is lowered ([`DEMOTE_NICE`]), so that a query of many seconds (an analysis over
/// every state) leaves the CPU to the shorter queries of other clients (a second or less)
/// instead of sharing it evenly, and their answers (or refusals) do not wait on it.
pub const DEMOTE_CPU: Duration = Duration::from_secs(2);

/// How much a query thread's nice value is raised past [`DEMOTE_CPU`] (at most to 19): by 10,
/// it gets about a tenth of the CPU a thread of the process's priority gets when both want it.
pub const DEMOTE_NICE: i32 = 10;

/// The stack of a query's thread: a main thread's on Linux.
const QUERY_STACK: usize = 8 << 20;

/// The CPU time thread `tid` of this process has used.
fn thread_cpu(tid: libc::pid_t) -> Option<Duration> {
    stat_cpu(&format!("/proc/self/task/{tid}/stat"))
}

/// The CPU time (user and system) a `/proc` `stat` file gives, of a process or a thread.
pub(super) fn stat_cpu(path: &str) -> Option<Duration> {
    let stat = std::fs::read_to_string(path).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut fields = rest.split(' ').skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    // SAFETY: a query of a constant.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let hz = u64::try_from(hz).ok().filter(|&h| h > 0)?;
    Some(Duration::from_micros((user + system) * 1_000_000 / hz))
}

impl Slot {
    fn due(&self, now: Instant) -> bool {
        self.deadline.is_some_and(|d| now >= d)
            || self
                .cpu
                .is_some_and(|(start, most)| process_cpu().saturating_sub(start) >= most)
    }
}

/// The CPU time this process has used (its threads together; a query process runs one
/// query at a time on one DuckDB thread).
fn process_cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: an out-pointer of ours.
    if unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) } != 0 {
        return Duration::ZERO;
    }
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

impl Watchdog {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Slot>> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Watches worker `i`'s query, run by the calling thread.
    fn arm(&self, i: usize, deadline: Instant, cpu: Option<Duration>) {
        // SAFETY: no arguments.
        let tid = unsafe { libc::gettid() };
        let mut s = self.lock();
        s[i].deadline = Some(deadline);
        s[i].cpu = cpu.map(|most| (process_cpu(), most));
        s[i].fired = false;
        s[i].thread = Some((tid, false));
    }

    /// True once worker `i`'s query was interrupted (or its time is up).
    fn fired(&self, i: usize) -> bool {
        let s = self.lock();
        s[i].fired || s[i].due(Instant::now())
    }

    /// Ends the watch of worker `i`; true if its query was interrupted.
    fn disarm(&self, i: usize) -> bool {
        let mut s = self.lock();
        s[i].deadline = None;
        s[i].cpu = None;
        s[i].thread = None;
        s[i].fired
    }

    fn patrol(&self) {
        loop {
            std::thread::sleep(Duration::from_millis(20));
            let now = Instant::now();
            for slot in self.lock().iter_mut() {
                // Again at every round past the deadline: a query that began to execute after
                // an interrupt (which DuckDB clears when a query starts) is stopped too.
                if slot.due(now) {
                    slot.handle.interrupt();
                    slot.fired = true;
                }
                if let Some((tid, demoted @ false)) = &mut slot.thread {
                    if thread_cpu(*tid).is_some_and(|c| c >= DEMOTE_CPU) {
                        let who = *tid as libc::id_t;
                        // SAFETY: a thread of this process, which runs until its slot is
                        // disarmed under this lock. Raising a nice value needs no privilege;
                        // a failure leaves the priority as it was.
                        unsafe {
                            let nice = libc::getpriority(libc::PRIO_PROCESS, who);
                            let lower = (nice + DEMOTE_NICE).min(19);
                            libc::setpriority(libc::PRIO_PROCESS, who, lower);
                        }
                        *demoted = true;
                    }
                }
            }
        }
    }
}

/// What a query may take.
#[derive(Clone, Copy)]
pub struct Limits {
    pub max_rows: usize,
    pub max_bytes: usize,
    /// The time limit the server states (`--sql-timeout`); a query's own budget may be less.
    pub timeout: Duration,
}

/// What one run of a query may take: until `wall` has passed, and, for a slice (the short
/// queries' process trying a query first), `cpu` seconds of the process's CPU time; a slice
/// that runs out, or out of DuckDB's memory, gives the query back ([`Ran::Sliced`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Budget {
    pub wall: Duration,
    pub cpu: Option<Duration>,
}

/// What became of a query a runner was given.
#[derive(Debug, PartialEq)]
pub enum Ran {
    /// The reply's JSON text, or the refusal.
    Reply(Result<Vec<u8>, ApiError>),
    /// A slice ran out (of time or of memory) before the query was answered.
    Sliced,
}

/// One connection's queries, answered one at a time, each interrupted at its time limit by a
/// watchdog thread: what a query process of the server ([`super::pool`]) runs.
pub struct Runner {
    duck: Duck,
    watchdog: Arc<Watchdog>,
    limits: Limits,
}

impl Runner {
    /// Starts the watchdog of `duck`'s queries.
    pub fn start(duck: Duck, limits: Limits) -> Runner {
        let watchdog = Arc::new(Watchdog {
            slots: Mutex::new(vec![Slot {
                deadline: None,
                cpu: None,
                handle: duck.interrupter(),
                fired: false,
                thread: None,
            }]),
        });
        {
            let w = watchdog.clone();
            std::thread::Builder::new()
                .name("sql-watchdog".into())
                .spawn(move || w.patrol())
                .expect("a thread starts");
        }
        Runner {
            duck,
            watchdog,
            limits,
        }
    }

    /// The answer to `statement` within `budget`; `prepared` is called once DuckDB has
    /// prepared it (or refused to). The query runs on a thread of its own (DuckDB runs a
    /// query on the thread that asks for it, with one thread a query), so that the lower
    /// priority a long query is given past [`DEMOTE_CPU`], which an unprivileged process
    /// cannot raise again, ends with it.
    pub fn answer(&mut self, statement: &str, budget: Budget, prepared: &mut dyn FnMut()) -> Ran {
        let failed = || {
            Ran::Reply(Err(ApiError::new(
                500,
                "the query failed inside the server",
            )))
        };
        // `None` once prepared, then the answer.
        let (tx, rx) = std::sync::mpsc::channel::<Option<Ran>>();
        let Runner {
            duck,
            watchdog,
            limits,
        } = self;
        let (watchdog, limits) = (&**watchdog, *limits);
        std::thread::scope(|scope| {
            let query = std::thread::Builder::new()
                .name("sql-query".into())
                // A main thread's stack (DuckDB's parser and binder recurse into a query's
                // nesting).
                .stack_size(QUERY_STACK)
                .spawn_scoped(scope, move || {
                    let said = tx.clone();
                    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        answer(0, duck, watchdog, statement, limits, budget, &mut || {
                            let _ = said.send(None);
                        })
                    }))
                    .unwrap_or_else(|_| failed());
                    let _ = tx.send(Some(ran));
                });
            if query.is_err() {
                return failed();
            }
            for said in rx {
                match said {
                    None => prepared(),
                    Some(ran) => return ran,
                }
            }
            failed()
        })
    }
}

/// Checks and runs one statement on worker `i`'s connections within `budget`: the reply's
/// JSON text, or the slice given back.
fn answer(
    i: usize,
    duck: &Duck,
    watchdog: &Watchdog,
    statement: &str,
    limits: Limits,
    budget: Budget,
    prepared: &mut dyn FnMut(),
) -> Ran {
    let start = Instant::now();
    watchdog.arm(i, start + budget.wall, budget.cpu);
    let mut rows = RowWriter::new(limits.max_rows, limits.max_bytes);
    let stop = || watchdog.fired(i);
    let result = duck.prepare_one(statement).map(|p| {
        prepared();
        if stop() {
            // Preparing took the query's time (DuckDB folds constants while preparing).
            return Err("interrupted".to_string());
        }
        run_streamed(&p, &mut rows, &stop)
    });
    let interrupted = watchdog.fired(i);
    watchdog.disarm(i);
    let elapsed = start.elapsed();
    let sliced = budget.cpu.is_some();
    let out_of_memory = |m: &str| m.starts_with("Out of Memory Error");
    match result {
        Ok(Ok(())) => {}
        Err(_) | Ok(Err(_)) if interrupted && sliced => return Ran::Sliced,
        Err(_) | Ok(Err(_)) if interrupted => {
            return Ran::Reply(Err(ApiError::new(
                408,
                format!(
                    "the query ran longer than the limit of {} s and was interrupted (narrow it with WHERE board = …, variant = …, age …, or add a LIMIT)",
                    limits.timeout.as_secs_f64()
                ),
            )))
        }
        // Out of memory while DuckDB prepared it: its constants, built before it runs, which
        // a bigger process would only build further (the server refuses them by the
        // process's memory, `pool::PREPARE_DATA`, when DuckDB does not).
        Err(e) if out_of_memory(&e.message) => {
            return Ran::Reply(Err(ApiError::new(
                422,
                format!(
                    "the query took more memory to prepare than the server allows ({}): DuckDB builds a query's constants (such as range(100000000), 100 million values) before it runs; make them smaller, or use age2048 sql",
                    e.message
                ),
            )))
        }
        Ok(Err(m)) if sliced && out_of_memory(&m) => return Ran::Sliced,
        Err(refused) => return Ran::Reply(Err(refused)),
        Ok(Err(m)) => return Ran::Reply(Err(ApiError::bad(m))),
    }
    let shown = rows.rows;
    let note = match rows.cut {
        None => Value::Null,
        Some(Cut::Rows) => json!(format!(
            "showing the first {shown} rows; the query has more (add a LIMIT, or use age2048 sql for the whole result)"
        )),
        Some(Cut::Bytes) => json!(format!(
            "showing the first {shown} rows, as many as fit in {} MiB; the query has more (select fewer columns, add a LIMIT, or use age2048 sql for the whole result)",
            limits.max_bytes / (1024 * 1024)
        )),
    };
    let tail = json!({
        "truncated": rows.cut.is_some(),
        "note": note,
        "elapsed_ms": elapsed.as_secs_f64() * 1e3,
    })
    .to_string();
    // The rows' text stays where it was written: the tail's fields follow it.
    let mut out = rows.out;
    out.extend_from_slice(b"],");
    out.extend_from_slice(&tail.as_bytes()[1..]);
    Ran::Reply(Ok(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A parser over a fresh in-memory database (no views: statements on tables are refused
    /// by the binder, which these tests do not need).
    fn parser() -> Duck {
        let mut db: ffi::duckdb_database = ptr::null_mut();
        let mut con: ffi::duckdb_connection = ptr::null_mut();
        // SAFETY: out-pointers of ours; the database stays open for the test's life.
        unsafe {
            assert_eq!(ffi::duckdb_open(ptr::null(), &mut db), ffi::DuckDBSuccess);
            assert_eq!(ffi::duckdb_connect(db, &mut con), ffi::DuckDBSuccess);
        }
        Duck { con }
    }

    #[test]
    fn one_query_by_duckdbs_parser() {
        let p = parser();
        let deep_sum = format!("SELECT {}", vec!["1"; 100].join("+"));
        let deep_nest = format!(
            "{}SELECT 1{}",
            "SELECT * FROM (".repeat(100),
            ")".repeat(100)
        );
        for q in [
            "SELECT 1",
            "  -- a comment\n select 42;",
            "WITH t AS (SELECT 1 AS x) SELECT x FROM t",
            "FROM range(3)",
            "VALUES (1), (2)",
            "(SELECT 1) UNION (SELECT 2)",
            "DESCRIBE SELECT 1 AS x",
            "SUMMARIZE SELECT 1 AS x",
            "SELECT 'COPY; ATTACH' AS s, \"update\" FROM (SELECT 1 AS \"update\")",
            "SELECT current_setting('threads')",
            "SELECT $$'$$ AS a",
            // A pragma DuckDB rewrites into a query is that query.
            "PRAGMA version",
            deep_sum.as_str(),
            deep_nest.as_str(),
        ] {
            assert_eq!(p.one_query(q), Ok(()), "{q}");
        }
    }

    #[test]
    fn hidden_statements_writes_and_settings_are_refused() {
        let p = parser();
        for (q, why) in [
            ("", "the query is empty"),
            ("  -- only a comment\n", "the query is empty"),
            ("SELECT 1; SELECT 2", "2 statements"),
            ("SELECT $$'$$ AS a; SELECT 42 AS hidden", "2 statements"),
            ("SELECT E'\\'' AS a; SELECT 43", "2 statements"),
            ("SELECT 1 /* ; */ ; DROP TABLE x", "2 statements"),
            ("COPY (SELECT 1) TO 'x.csv'", "statement type COPY"),
            ("ATTACH 'x.db'", "statement type ATTACH"),
            ("INSTALL httpfs", "statement type LOAD"),
            ("LOAD httpfs", "statement type LOAD"),
            ("SET threads = 8", "statement type SET"),
            ("PRAGMA enable_profiling", "statement type "),
            ("PRAGMA threads = 4", "statement type "),
            ("CREATE TABLE t AS SELECT 1", "statement type CREATE"),
            ("EXPLAIN SELECT 1", "statement type EXPLAIN"),
            ("SELEC 1", "Parser Error: syntax error at or near \"SELEC\""),
            ("SELECT * FROM no_such_table", "Catalog Error"),
            ("SELECT 1\0", "NUL"),
        ] {
            let e = p.one_query(q).expect_err(q);
            assert_eq!(e.status, 400, "{q}");
            assert!(e.message.contains(why), "{q}: {}", e.message);
        }
    }

    #[test]
    fn results_stream_as_json_rows() {
        let duck = parser();
        duck.execute(LOSSLESS).unwrap();
        let p = duck
            .prepare_one(
                "SELECT range AS n, 'a\"b' AS s, [range, 2] AS l, {'k': range} AS o, NULL AS z, 1.5::DECIMAL(4,1) AS d FROM range(3000)",
            )
            .unwrap();
        let mut w = RowWriter::new(2500, 1 << 20);
        run_streamed(&p, &mut w, &|| false).unwrap();
        let text = String::from_utf8(w.out).unwrap();
        assert!(
            text.starts_with(r#"{"columns":["n","s","l","o","z","d"],"types":["#),
            "{text:.200}"
        );
        assert!(
            text.contains(r#""rows":[[0,"a\"b",[0,2],{"k":0},null,"#),
            "{text:.300}"
        );
        assert_eq!((w.rows, w.cut), (2500, Some(Cut::Rows)));
        // Exactly at the cap: not cut.
        let p = duck.prepare_one("FROM range(2500)").unwrap();
        let mut w = RowWriter::new(2500, 1 << 20);
        run_streamed(&p, &mut w, &|| false).unwrap();
        assert_eq!((w.rows, w.cut), (2500, None));
        // Wide strings: only the rows that can fit are copied out of DuckDB's chunk, and the
        // JSON's own cap cuts the last of them.
        let p = duck
            .prepare_one("SELECT repeat('x', 100) AS s, range AS n FROM range(3000)")
            .unwrap();
        let mut w = RowWriter::new(100_000, 10_000);
        run_streamed(&p, &mut w, &|| false).unwrap();
        let per_row = r#",["xxxx","#.len() - 4 + 100 + ",0]".len();
        assert_eq!(w.cut, Some(Cut::Bytes));
        assert!(
            w.rows >= 10_000 / (per_row + 4) && w.rows <= 10_000 / per_row,
            "{} rows",
            w.rows
        );
        assert!(w.out.len() - w.base <= 10_000);
        // A failure mid-stream is an error, not a short result.
        let p = duck
            .prepare_one("SELECT CASE WHEN range < 5000 THEN range ELSE error('boom') END AS x FROM range(10000)")
            .unwrap();
        let mut w = RowWriter::new(100_000, 1 << 20);
        let e = run_streamed(&p, &mut w, &|| false).unwrap_err();
        assert!(e.contains("boom"), "{e}");
    }

    #[test]
    fn strings_are_written_as_serde_json_writes_them() {
        // Every ASCII character at every offset of an eight-byte word.
        let mut cases: Vec<String> = (0u8..128)
            .flat_map(|c| {
                (0..9).map(move |at| format!("{}{}{}", "a".repeat(at), c as char, "z".repeat(9)))
            })
            .collect();
        cases.extend(
            [
                "",
                "x",
                "plain text longer than eight bytes",
                "\"\\\n\r\t\u{8}\u{c}\u{0}\u{1f}\u{7f}",
                "é, 𝄞 and ✓ between \"quotes\" at every offset",
                "12345678\"2345678\\",
            ]
            .map(String::from),
        );
        cases.push("x".repeat(1000) + "\n" + &"y".repeat(7));
        for s in &cases {
            let mut out = Vec::new();
            write_json_str(&mut out, s);
            assert_eq!(
                String::from_utf8(out).unwrap(),
                serde_json::to_string(s).unwrap(),
                "{s:?}"
            );
        }
    }

    #[test]
    fn rows_stop_at_the_byte_cap_whole() {
        use arrow::array::{Int64Array, StringArray};
        use arrow::datatypes::{DataType, Field, Schema};
        let schema = Arc::new(Schema::new(vec![
            Field::new("n", DataType::Int64, true),
            Field::new("s", DataType::Utf8, true),
        ]));
        let batch = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from(vec![Some(1), None, Some(3), Some(4)])),
                Arc::new(StringArray::from(vec![
                    Some("a\"b"),
                    Some("c"),
                    None,
                    Some("x".repeat(100).as_str()),
                ])),
            ],
        )
        .unwrap();
        let mut w = RowWriter::new(10, 40);
        w.write(&batch, &|| false).unwrap();
        assert_eq!(
            String::from_utf8(w.out).unwrap(),
            r#"[1,"a\"b"],[null,"c"],[3,null]"#
        );
        assert_eq!((w.rows, w.cut), (3, Some(Cut::Bytes)));
        let mut w = RowWriter::new(2, 1 << 20);
        w.write(&batch, &|| false).unwrap();
        assert_eq!((w.rows, w.cut), (2, Some(Cut::Rows)));
        let mut w = RowWriter::new(10, 1 << 20);
        assert!(w.write(&batch, &|| true).is_err());
    }
}
