//! Every integration test of this crate in one test binary (one link instead of one per file).

mod api;
mod common;
mod connections;
mod fuzz_api;
mod load;
mod memory;
mod ranks;
mod security;
mod socket;
