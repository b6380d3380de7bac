//! Errors of the server: the ones that stop it from starting ([`ServeError`]), and the ones a
//! request is answered with ([`ApiError`]: a status and one line, sent as `{"error": "…"}`).

use std::net::SocketAddr;

use crate::error::{one_line, ErrorKind, Kind};
use crate::query::QueryError;
use crate::rules::{BoardError, VariantError};
use crate::store::StoreError;

/// Why the server did not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Query(#[from] QueryError),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The address cannot be listened on (in use, not this machine's, not allowed).
    #[error("cannot listen on {addr}: {message}")]
    Bind { addr: SocketAddr, message: String },
    /// DuckDB refused a setting of the sandbox (the server does not run without it).
    #[error("DuckDB, {context}: {message}")]
    Sandbox { context: String, message: String },
}

impl ErrorKind for ServeError {
    fn kind(&self) -> Kind {
        match self {
            ServeError::Query(e) => e.kind(),
            ServeError::Store(e) => e.kind(),
            ServeError::Bind { .. } => Kind::Input,
            ServeError::Sandbox { .. } => Kind::Internal,
        }
    }
}

/// A request refused or failed: the HTTP status and the one line the CLI would print.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub status: u16,
    pub message: String,
    /// For a refusal of a busy server (503): when to come back, in seconds (`Retry-After`).
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(status: u16, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
            retry_after: None,
        }
    }

    /// 503: the server is busy; come back in `seconds`.
    pub fn busy(message: impl Into<String>, seconds: u64) -> ApiError {
        ApiError {
            retry_after: Some(seconds),
            ..ApiError::new(503, message)
        }
    }

    /// 400: the request is not one the server can use.
    pub fn bad(message: impl Into<String>) -> ApiError {
        ApiError::new(400, message)
    }

    /// The status an error of the crate is answered with: the user's mistake 400 (a board no
    /// game reaches 404), a board and variant not solved 404, other bad data 503, a fault 500.
    pub fn from_error(e: &(dyn std::error::Error + 'static), kind: Kind) -> ApiError {
        let unreachable = matches!(
            e.downcast_ref::<QueryError>(),
            Some(QueryError::Unreachable { .. })
        );
        let not_solved = matches!(
            e.downcast_ref::<StoreError>(),
            Some(StoreError::NotSolved { .. })
        ) || matches!(
            e.downcast_ref::<QueryError>(),
            Some(QueryError::Store(StoreError::NotSolved { .. }))
        );
        let status = match kind {
            _ if unreachable || not_solved => 404,
            Kind::Input => 400,
            Kind::Data => 503,
            Kind::Internal => 500,
        };
        ApiError::new(status, one_line(e))
    }
}

impl From<QueryError> for ApiError {
    fn from(e: QueryError) -> ApiError {
        let kind = e.kind();
        ApiError::from_error(&e, kind)
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> ApiError {
        let kind = e.kind();
        ApiError::from_error(&e, kind)
    }
}

impl From<BoardError> for ApiError {
    fn from(e: BoardError) -> ApiError {
        ApiError::bad(one_line(&e))
    }
}

impl From<VariantError> for ApiError {
    fn from(e: VariantError) -> ApiError {
        ApiError::bad(one_line(&e))
    }
}
