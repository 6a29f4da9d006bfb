//! disagg-trace's integration tests, one test binary (one link): the fixtures, the real traces
//! (skipped when absent) and the parsers' fuzz targets.

mod fuzz;
mod read;
mod real_traces;
