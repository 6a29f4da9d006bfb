//! The one error type of the library: a message the user can act on (one line, naming the bad
//! value and the valid choices); the command line prints it after `error: ` and exits with 2.

/// An error the user can fix: printed as one line, exit code 2.
#[derive(Debug)]
pub struct UsageError(pub String);

impl<E: std::fmt::Display> From<E> for UsageError {
    fn from(e: E) -> Self {
        UsageError(e.to_string())
    }
}

/// What a command returns.
pub type CmdResult = Result<(), UsageError>;
