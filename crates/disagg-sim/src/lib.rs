//! disagg-sim: the exact discrete-event simulator of prefill/decode-disaggregated LLM serving,
//! bit-for-bit with the reference Python simulator (Disaggregated_Inference_Sim).
//!
//! Flow: [`Scenario`] (the reference CLI flags) → [`Scenario::build`] → [`SimConfig`] →
//! [`simulate`] (engine + serving model, optionally with an [`Observer`]) → [`RunResult`] →
//! [`Summary`].
//!
//! ```
//! use disagg_sim::{Scenario, simulate};
//! let sc = Scenario { model: "llama3-8b".into(), devices_per_instance: 1, rate: 8.0,
//!                     requests: 50, fast: true, ..Scenario::default() };
//! let cfg = sc.build(&disagg_model::Catalogue::builtin()).unwrap();
//! let run = simulate(&cfg, &cfg.generate_workload()).unwrap();
//! let s = run.summary();
//! assert_eq!(s.requests.completed, 50);
//! ```

pub use disagg_model::pymath;
pub mod budget;
pub mod capacity;
pub mod document;
pub mod engine;
pub mod input;
pub mod kv_memory;
pub mod layer_summary;
pub mod levers;
pub mod link;
pub mod metrics;
pub mod model_json;
pub mod observer;
pub mod options;
mod plain;
pub mod prefix_cache;
pub mod presets;
pub mod pyrand;
pub mod ranges;
pub mod reference;
pub mod scenario;
pub mod sched;
pub mod search;
pub mod serving;
pub mod sessions;
pub mod speculative;
pub mod stats;
pub mod steady;
pub mod trace;
pub mod workload;

pub use document::RunDocument;
pub use metrics::{CalibrationSummary, Summary, SCHEMA_VERSION};
pub use observer::{
    InstanceInfo, InstanceSample, Observer, Sample, SampleRow, StepEvent, StepKind, TimeSeries,
    TransferEvent,
};
pub use pyrand::{poisson_workload, GenRequest, LengthDist, PyRandom};
pub use scenario::{
    FirstToken, HandoffOptions, LinkSharing, LinkTopology, Mode, Pool, ReserveKvOn, Role, Scenario,
    SimConfig, WorkloadSpec,
};
pub use search::{
    analytic_capacity, decode_instance_rps, kv_link_bound_rps, kv_link_reference_rps,
    kv_link_wire_rps, max_sustainable_rate, prefill_instance_rps, Analytic, SustainableRate,
};
pub use serving::{
    simulate, simulate_config, simulate_config_observed, simulate_observed, simulate_workload,
    InstanceResult, InstanceStats, LinkResult, LinkStats, RequestRecord, RunResult,
};
pub use stats::{Dist, P50P99};
pub use trace::ChromeTrace;
pub use workload::{ClosedLoop, Workload};
