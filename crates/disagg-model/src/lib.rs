//! disagg-model: the catalogue (models, accelerators, links, KV compression) and the exact cost model
//! of prefill/decode-disaggregated LLM serving, bit-for-bit with the reference simulator
//! (Disaggregated_Inference_Sim). Pure functions, no I/O.

pub mod arch;
pub mod calc;
pub mod catalogue;
pub mod ced;
pub mod cost;
pub mod custom;
pub mod draft;
pub mod error;
pub mod fft;
pub mod handoff;
pub mod link;
pub mod parallel;
pub mod ppa;
pub mod pymath;
pub mod quant;
pub mod ranks;
pub mod served;
pub mod variants;

pub use arch::{Arch, Attention, HandoffParts, KvReserve, LayerRun, Mlp, Retention};
pub use catalogue::{
    model_source, Calibration, Catalogue, CompressAt, Device, KvCompression, KvTransit, Link,
    LmHead, ModelSpec, GB, TB,
};
pub use ced::replay_attn;
pub use cost::{Bound, Chunk, CostModel, CostOptions, PyNum, RawStep, StepCost};
pub use draft::{spec_cost, Draft};
pub use error::{escape, Error};
pub use fft::{dm, Ops, OpticalStep, OpticalTerms};
pub use handoff::{
    handoff, handoff_draft, handoff_shared, handoff_shared_draft, layerwise_exposed,
    layerwise_exposed_after, layerwise_tail, layerwise_tail_slices, model_layerwise_tail, transfer,
    transfer_bytes, Handoff, SendMode, Sharing, Transfer,
};
pub use parallel::{int_div, LeverStep, Moe, Parallel, ParallelCost, Pass};
pub use quant::{Formats, QuantFormat};
pub use ranks::{rank_plan, PortLoads, RankLayout, RankOptions, RankPlan, Relayout};
pub use variants::{
    ActFormat, Ced, DecodeStyle, Detection, FftMixing, Mixer, ReplayOn, TransformEngine,
};
