//! disagg-model's behaviour pinned module by module against independent values: hand
//! arithmetic, `docs/cost-model.md`'s formulas written out, and CPython's own results (issue 11,
//! mutation testing). One test binary, so a mutant costs one link, not six.

mod arch_kinds;
mod calc;
mod calc_levers;
mod calibrated;
mod catalogue;
mod ced;
mod cost;
mod cost_fixtures;
mod custom;
mod exact;
mod fft;
mod handoff;
mod levers;
mod parallel;
mod pymath;
mod quant;
mod ranks;
mod ranks_kinds;
mod seed;
mod served;
