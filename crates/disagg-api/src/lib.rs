//! The disagg library API: what the command line (`disagg`), the server (`disagg serve`) and the
//! Python package share, as typed calls returning values. Front ends parse their input (flags,
//! JSON, Python arguments), call these, and render.
//!
//! - [`sweep`]: the sweep model and its one executor (streaming rows, shards, resume);
//! - [`report`]: the text report of a run and the tables of many (warnings are a value,
//!   [`report::Warnings`]);
//! - [`custom`]: the catalogue with a user's file, and TOML files read with precise errors;
//! - [`output`]: output files written whole or not at all, and standard output;
//! - [`format`]: the number formats of every text report.

pub mod catalogue;
pub mod compare;
pub mod custom;
pub mod deploy;
pub mod error;
pub mod format;
pub mod handoff;
pub mod memory;
pub mod metrics;
pub mod output;
pub mod plan;
pub mod report;
pub mod requests;
pub mod run;
pub mod sweep;
pub mod trace;

pub use error::{CmdResult, UsageError};
