//! Running SQL: splitting text into statements, running one statement and fetching its
//! whole result as Arrow batches (DuckDB's Arrow).

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use duckdb::Connection;

use super::error::one_line;
use super::{QueryError, Result};

/// A fully fetched statement result.
pub struct QueryResult {
    pub schema: SchemaRef,
    pub batches: Vec<RecordBatch>,
}

impl QueryResult {
    /// Number of rows over all batches.
    pub fn num_rows(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }

    /// All rows as one batch (an empty batch of the schema if there are none).
    pub fn concat(&self) -> Result<RecordBatch> {
        arrow::compute::concat_batches(&self.schema, &self.batches).map_err(|e| {
            QueryError::DuckDb {
                context: "concatenating result batches".into(),
                message: e.to_string(),
            }
        })
    }
}

/// Runs one statement and fetches its whole result as Arrow batches. On failure the error is
/// [`QueryError::Sql`] with DuckDB's message on one line.
pub fn query(conn: &Connection, statement: &str) -> Result<QueryResult> {
    let fail = |e: duckdb::Error| QueryError::Sql {
        message: one_line(&e.to_string()),
    };
    let mut stmt = conn.prepare(statement).map_err(fail)?;
    let stream = stmt.stream_arrow([]).map_err(fail)?;
    let schema = stream.get_schema();
    let mut batches = Vec::new();
    for b in stream {
        batches.push(b);
    }
    Ok(QueryResult { schema, batches })
}

/// Splits SQL text into statements at `;` outside quotes and comments.
///
/// Feed text with [`StatementSplitter::push`]; it returns the statements completed so far.
#[derive(Default)]
pub struct StatementSplitter {
    buf: String,
    state: SplitState,
}

#[derive(Default, Clone, Copy, PartialEq)]
enum SplitState {
    #[default]
    Code,
    Single,
    Double,
    LineComment,
    BlockComment,
}

impl StatementSplitter {
    /// Adds text; returns every statement it completes (without the `;`, trimmed, non-empty).
    pub fn push(&mut self, text: &str) -> Vec<String> {
        let mut done = Vec::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match self.state {
                SplitState::Code => match c {
                    ';' => {
                        if let Some(s) = Self::take(&mut self.buf) {
                            done.push(s);
                        }
                        continue;
                    }
                    '\'' => self.state = SplitState::Single,
                    '"' => self.state = SplitState::Double,
                    '-' if chars.peek() == Some(&'-') => self.state = SplitState::LineComment,
                    '/' if chars.peek() == Some(&'*') => self.state = SplitState::BlockComment,
                    _ => {}
                },
                SplitState::Single if c == '\'' => self.state = SplitState::Code,
                SplitState::Double if c == '"' => self.state = SplitState::Code,
                SplitState::LineComment if c == '\n' => self.state = SplitState::Code,
                SplitState::BlockComment if c == '*' && chars.peek() == Some(&'/') => {
                    self.buf.push(c);
                    self.buf.push(chars.next().unwrap_or('/'));
                    self.state = SplitState::Code;
                    continue;
                }
                _ => {}
            }
            self.buf.push(c);
        }
        done
    }

    /// The statement left without a final `;`, if it has any content.
    pub fn finish(mut self) -> Option<String> {
        Self::take(&mut self.buf)
    }

    fn take(buf: &mut String) -> Option<String> {
        let s = std::mem::take(buf);
        if has_code(&s) {
            Some(s.trim().to_string())
        } else {
            None
        }
    }
}

/// True if the text has anything but whitespace and comments.
fn has_code(s: &str) -> bool {
    let mut rest = s;
    loop {
        rest = rest.trim_start();
        if let Some(r) = rest.strip_prefix("--") {
            rest = r.split_once('\n').map(|(_, r)| r).unwrap_or("");
        } else if let Some(r) = rest.strip_prefix("/*") {
            rest = r.split_once("*/").map(|(_, r)| r).unwrap_or("");
        } else {
            return !rest.is_empty();
        }
    }
}

/// Splits a whole SQL text into statements.
pub fn split_statements(text: &str) -> Vec<String> {
    let mut sp = StatementSplitter::default();
    let mut v = sp.push(text);
    v.extend(sp.finish());
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_outside_quotes_and_comments() {
        let v = split_statements(
            "select 'a;b' as x; -- c;d\nselect \"q;\" from t /* ; */ ;\n  ;select 3",
        );
        assert_eq!(
            v,
            vec![
                "select 'a;b' as x",
                "-- c;d\nselect \"q;\" from t /* ; */",
                "select 3"
            ]
        );
        assert!(split_statements(" -- only a comment\n ; ").is_empty());
    }

    #[test]
    fn one_line_joins_duckdb_messages() {
        use crate::query::error::one_line;
        let m = "Parser Error: syntax error at or near \"SELEC\"\n\nLINE 1: SELEC 1\n        ^";
        assert_eq!(
            one_line(m),
            "Parser Error: syntax error at or near \"SELEC\" | LINE 1: SELEC 1"
        );
    }
}
