//! What every error of the crate says about itself: whose mistake it is. Each room has its own
//! error type (thiserror, with the board, age and file it is about and the error that caused
//! it as its `source`); `main` maps the kind to the exit status.
//!
//! | kind | meaning | exit status |
//! |---|---|---|
//! | [`Kind::Input`] | bad input: a board, variant, flag, query or file the user gave | 2 |
//! | [`Kind::Data`] | bad data: a data directory that is missing, unsolved, damaged or busy | 2 |
//! | [`Kind::Internal`] | a fault of this program (a bug, or the machine failing it) | 1 |

/// Whose mistake an error is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The user gave something that cannot be used.
    Input,
    /// The data on disk is missing, incomplete, damaged or in use.
    Data,
    /// Not the user's fault: a bug, or an operating-system failure outside the data.
    Internal,
}

impl Kind {
    /// The process exit status for an error of this kind.
    pub fn exit_code(self) -> u8 {
        match self {
            Kind::Input | Kind::Data => 2,
            Kind::Internal => 1,
        }
    }
}

/// Implemented by every error type of the crate.
pub trait ErrorKind {
    fn kind(&self) -> Kind;
}

/// An error and its sources on one line (`error: cause: cause`), each message once: how every
/// command (and `serve`'s API) states a problem.
pub fn one_line(e: &dyn std::error::Error) -> String {
    let mut parts: Vec<String> = vec![e.to_string()];
    let mut src = e.source();
    while let Some(s) = src {
        let m = s.to_string();
        // A transparent wrapper repeats its source's message; say it once.
        if parts.last() != Some(&m) {
            parts.push(m);
        }
        src = s.source();
    }
    let line = parts.join(": ");
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}
