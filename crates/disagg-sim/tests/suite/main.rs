//! Every integration test of this crate in one test binary (one link instead of one per file).

mod analytic;
mod ced_run;
mod cost_levers_results;
mod cost_levers_runs;
mod cost_levers_s11;
mod golden;
mod golden_common;
mod handoff;
mod handoff_ranks;
mod handoff_ranks_kinds;
mod levers;
mod levers_config;
mod levers_properties;
mod levers_results;
mod levers_traces;
mod prefix_handoff;
mod properties;
mod published;
mod pymath;
mod readme_cost_levers;
mod readme_levers;
mod reference_summary;
mod sched_transfer;
mod sessions;
mod tie_breaks;
