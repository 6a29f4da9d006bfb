//! What to simulate: [`Scenario`] (the reference CLI's flags as a serde struct) and its validated,
//! resolved form [`SimConfig`] (simulator.md §7.1, cost-model.md §3.8).

use disagg_model::custom::{CustomDevice, CustomLink, CustomModel, Overlay};
use disagg_model::{
    Catalogue, CompressAt, CostModel, CostOptions, Detection, Device, Error, Formats, KvTransit,
    Link, LmHead, ModelSpec, Parallel, PortLoads, QuantFormat, RankLayout, RankOptions, SendMode,
    Transfer,
};
use disagg_trace::TraceFormat;
use serde::{Deserialize, Serialize};

use crate::levers::{BatchPolicy, DecodeRouter, KvPolicy, Levers, Preemption, Speculative, SwapIn};
use crate::pyrand::{poisson_workload, GenRequest, LengthDist};
use crate::sessions::SessionShape;
use crate::workload::{Source, TraceInfo, Workload};

/// Largest number of requests a generated workload may have.
pub const MAX_REQUESTS: u64 = 50_000_000;
/// Largest number of instances in one pool.
pub const MAX_INSTANCES: u32 = 1024;
/// Largest number of link channels.
pub const MAX_CHANNELS: u32 = 4096;
/// Largest number of devices per instance.
pub const MAX_DEVICES: u32 = 1024;
/// TTFT SLO when neither `--ttft-slo` nor a named workload gives one, s.
pub const DEFAULT_TTFT_SLO_S: f64 = 1.0;
/// TPOT SLO when neither `--tpot-slo` nor a named workload gives one, s per token.
pub const DEFAULT_TPOT_SLO_S: f64 = 0.025;
/// Most sequences in a decode batch unless `--max-decode-batch` says otherwise (the reference's
/// `SimConfig.max_decode_batch`).
pub const DEFAULT_MAX_DECODE_BATCH: u32 = 256;
/// Largest number of KV links (`--link-topology per-pair`: prefill x decode instances).
pub const MAX_LINKS: u32 = 65_536;

/// Scenario keys that outputs leave out at their defaults: the scheduling levers, the decode batch
/// cap, the generator's length bounds and the CED overrides (a run that does not use them echoes
/// what it echoed before they existed, byte for byte).
pub const QUIET_DEFAULT_KEYS: &[&str] = &[
    "batch_policy",
    "max_num_batched_tokens",
    "kv_policy",
    "kv_block_size",
    "max_seq_len",
    "preemption",
    "swap_in",
    "host_link",
    "prefix_caching",
    "prefix_handoff",
    "decode_router",
    "prefix_from_trace",
    "handoff_ranks",
    "nics_per_instance",
    "tp",
    "pp",
    "ep",
    "microbatches",
    "expert_imbalance",
    "scale_up_link",
    "prefill_tp",
    "prefill_pp",
    "decode_tp",
    "decode_pp",
    "devices_from_layout",
    "weight_format",
    "kv_format",
    "compute_format",
    "fft_efficiency",
    "ft_samples_per_s",
    "ft_enob",
    "ft_static_w",
    "ft_mask_rate",
    "ft_detection",
    "ft_overlap",
    "ppa",
    "speculative",
    "gamma",
    "alpha",
    "spec_seed",
    "max_decode_batch",
    "prompt_min",
    "prompt_max",
    "output_min",
    "output_max",
    "ced_encoder_layers",
    "ced_replay",
    "ced_replay_on",
    "kv_retention",
];

/// Removes from `v` (a scenario as JSON) the [`QUIET_DEFAULT_KEYS`] that hold their defaults.
pub fn quiet_defaults(v: &mut serde_json::Value) {
    let d = serde_json::to_value(Scenario::default()).expect("scenario");
    if let Some(o) = v.as_object_mut() {
        // A key the default leaves out (`handoff_ranks`, `nics_per_instance`) is quiet when
        // absent or null.
        let null = serde_json::Value::Null;
        for k in QUIET_DEFAULT_KEYS {
            if o.get(*k).unwrap_or(&null) == d.get(*k).unwrap_or(&null) {
                o.shift_remove(*k);
            }
        }
    }
}

/// One simulation, as the reference CLI describes it. Field names are the CLI flags with `-` → `_`
/// (but `trace_start`, `trace_duration`, `sort_trace`: `--start`, `--duration`, `--sort`); every
/// default is the reference default (simulator.md §7.1). Each field has one row in
/// [`crate::options::OPTIONS`] (its flag, kind and help), which every parser derives from; the
/// enum fields read their names through that table in serde too.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Scenario {
    /// `--model` (catalogue key).
    pub model: String,
    /// `--device` (catalogue key).
    pub device: String,
    /// `--devices-per-instance`.
    pub devices_per_instance: u32,
    /// `--mode`: `disagg` or `colocated`.
    #[serde(deserialize_with = "crate::options::by_name")]
    pub mode: Mode,
    /// `--prefill`: prefill instances (colocated: instances = prefill + decode).
    pub prefill: u32,
    /// `--decode`: decode instances.
    pub decode: u32,
    /// `--link` (catalogue key).
    pub link: String,
    /// `--link-channels`.
    pub link_channels: u32,
    /// `--rate`: Poisson arrival rate, requests/s.
    pub rate: f64,
    /// `--requests`.
    pub requests: u64,
    /// `--prompt`: mean prompt length, tokens.
    pub prompt: f64,
    /// `--prompt-cv`.
    pub prompt_cv: f64,
    /// `--output`: mean output length, tokens.
    pub output: f64,
    /// `--output-cv`.
    pub output_cv: f64,
    /// `--prompt-min`: lower clip bound of generated prompt lengths, tokens (the reference's
    /// `LengthDist` `lo`, 1; a named workload keeps its own bounds).
    pub prompt_min: u64,
    /// `--prompt-max`: upper clip bound of generated prompt lengths, tokens (`hi`, 32768).
    pub prompt_max: u64,
    /// `--output-min`: lower clip bound of generated output lengths, tokens (1).
    pub output_min: u64,
    /// `--output-max`: upper clip bound of generated output lengths, tokens (32768).
    pub output_max: u64,
    /// `--ttft-slo`, seconds (`None`: the named workload's, else 1.0 s; see [`Scenario::slos`]).
    pub ttft_slo: Option<f64>,
    /// `--tpot-slo`, seconds per token (`None`: the named workload's, else 0.025 s).
    pub tpot_slo: Option<f64>,
    /// `--seed`.
    pub seed: u64,
    /// `--power-cap`: per-device cap, W.
    pub power_cap: Option<f64>,
    /// `--prefill-power-cap`, W.
    pub prefill_power_cap: Option<f64>,
    /// `--decode-power-cap`, W.
    pub decode_power_cap: Option<f64>,
    /// `--dvfs`.
    pub dvfs: bool,
    /// `--fast`: the exact macro-step decode path.
    pub fast: bool,
    /// `--prefill-device`.
    pub prefill_device: Option<String>,
    /// `--decode-device`.
    pub decode_device: Option<String>,
    /// `--prefill-devices-per-instance`.
    pub prefill_devices_per_instance: Option<u32>,
    /// `--decode-devices-per-instance`.
    pub decode_devices_per_instance: Option<u32>,
    /// `--kv-compress`: a compression preset. `None`: no compression stage at all; `Some("none")`:
    /// the identity preset at `kv_compress_at` (in transit it still adds its latency and energy).
    pub kv_compress: Option<String>,
    /// `--kv-compress-at`: `transit` or `endpoint` (used only with `kv_compress`).
    #[serde(deserialize_with = "crate::options::by_name")]
    pub kv_compress_at: CompressAt,
    /// `--prefill-lm-head`: `all` or `last` (`None`: the model's own, `all`).
    #[serde(deserialize_with = "crate::options::by_name_opt")]
    pub prefill_lm_head: Option<LmHead>,
    /// `--kv-retention` (issue 16): what a layer-kind model's sliding-window and chunked layers
    /// keep (`None`: the model's, `window`). Left out of every echo when unset.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::options::by_name_opt"
    )]
    pub kv_retention: Option<disagg_model::Retention>,
    /// `--ced-encoder-layers`: E of a causal encoder-decoder (levers-cost.md §8; `None`: the
    /// model's, 0 for every preset but the `-ced` ones; 0 turns CED off).
    pub ced_encoder_layers: Option<u64>,
    /// `--ced-replay`: W, the prompt tokens a CED model replays (`None`: the model's, 128).
    pub ced_replay: Option<u64>,
    /// `--ced-replay-on`: where a CED model replays, `prefill` or `decode` (`None`: the
    /// model's, `prefill`).
    #[serde(deserialize_with = "crate::options::by_name_opt")]
    pub ced_replay_on: Option<disagg_model::ReplayOn>,
    /// `--send`: `whole` (the reference: the KV leaves after the whole prefill step) or `layerwise`
    /// (each layer's slice leaves as soon as that layer is done; also spelt `layer-wise`).
    #[serde(deserialize_with = "crate::options::by_name")]
    pub send: SendMode,
    /// `--link-sharing`: `fifo` (the reference: C independent FIFO channels) or `fair` (the
    /// transfers in flight share the link's bandwidth equally).
    #[serde(deserialize_with = "crate::options::by_name")]
    pub link_sharing: LinkSharing,
    /// `--link-topology`: `shared` (the reference: one link for every hand-off), `per-prefill` (one
    /// link per prefill instance) or `per-pair` (one link per prefill-decode pair).
    #[serde(deserialize_with = "crate::options::by_name")]
    pub link_topology: LinkTopology,
    /// `--reserve-kv-on`: `arrival` (the reference: decode admission reserves the KV after it has
    /// landed) or `transfer` (a decode instance reserves it before the transfer starts).
    #[serde(deserialize_with = "crate::options::by_name")]
    pub reserve_kv_on: ReserveKvOn,
    /// `--first-token`: `prefill` (the reference: the first token is out at the end of prefill) or
    /// `decode` (the decode instance emits it when it admits the request, after the KV landed).
    /// A no-op in colocated mode, where the instance that prefills also decodes. The other four
    /// hand-off options are refused in colocated mode unless at their defaults.
    #[serde(deserialize_with = "crate::options::by_name")]
    pub first_token: FirstToken,
    /// `--batch-policy`: `prefill-priority` (the reference's default), `decode-priority` or
    /// `chunked` (levers-scheduling.md §2.1; anything else switches the scheduled instances on).
    #[serde(deserialize_with = "crate::options::by_name")]
    pub batch_policy: BatchPolicy,
    /// `--max-num-batched-tokens`: token budget of one scheduled step (`None`: the prefill budget,
    /// 8192; any value given switches the scheduled instances on).
    pub max_num_batched_tokens: Option<u64>,
    /// `--kv-policy`: `oracle` (the reference's default), `pow2`, `max` or `paged`.
    #[serde(deserialize_with = "crate::options::by_name")]
    pub kv_policy: KvPolicy,
    /// `--kv-block-size`: tokens per KV block when paged (inert otherwise).
    pub kv_block_size: u64,
    /// `--max-seq-len`: reservation floor of the `max` policy, tokens (inert otherwise).
    pub max_seq_len: u64,
    /// `--max-decode-batch`: most sequences running on a colocated or decode instance (the
    /// reference's `SimConfig.max_decode_batch`, 256, which its CLI does not expose).
    pub max_decode_batch: u32,
    /// `--preemption`: what a paged instance does with a victim, `recompute` or `swap`.
    #[serde(deserialize_with = "crate::options::by_name")]
    pub preemption: Preemption,
    /// `--host-link`: the swap path (a catalogue link key; its channels are irrelevant).
    pub host_link: String,
    /// `--swap-in`: when a swapped-out row comes back: `own-blocks` (the reference: as soon as its
    /// own blocks fit) or `next-step` (only when its next step's blocks fit too: no swap thrash).
    #[serde(deserialize_with = "crate::options::by_name")]
    pub swap_in: SwapIn,
    /// `--prefix-caching`: the prefix cache of colocated and prefill instances.
    pub prefix_caching: bool,
    /// `--speculative`: speculative decoding with draft `mtp` or a catalogue model key.
    pub speculative: Option<String>,
    /// `--gamma`: drafted tokens per verify pass (used only with `speculative`).
    pub gamma: u32,
    /// `--alpha`: acceptance probability of each drafted token (used only with `speculative`).
    pub alpha: f64,
    /// `--spec-seed`: seed of the acceptance draws (used only with `speculative`).
    pub spec_seed: u64,
    /// `--prefix-handoff` (beyond the reference): decode instances keep their own prefix cache
    /// and a hand-off sends only the KV of the prompt tokens the decode instance does not hold.
    pub prefix_handoff: bool,
    /// `--decode-router` (beyond the reference): `least-loaded` (the reference) or `prefix`.
    #[serde(deserialize_with = "crate::options::by_name")]
    pub decode_router: DecodeRouter,
    /// `--prefix-from-trace` (beyond the reference): a Mooncake trace's `hash_ids` become the
    /// requests' prefix chains.
    pub prefix_from_trace: bool,
    /// `--handoff-ranks` (beyond the reference): each hand-off's stream time is the busiest NIC
    /// of the rank-aware plan between the pools' layouts (`disagg_model::ranks`). Left out of
    /// every echo when off (outputs byte-identical to those before the option).
    #[serde(
        skip_serializing_if = "std::ops::Not::not",
        deserialize_with = "crate::options::switch_or_null"
    )]
    pub handoff_ranks: bool,
    /// `--nics-per-instance` (with `handoff_ranks`): NICs per instance; absent: one per GPU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nics_per_instance: Option<u32>,
    /// `--tp`: tensor-parallel degree of every pool's instances (levers-cost.md §5.2; 0 or
    /// absent: 1). Any of `tp`, `pp`, `ep`, `microbatches` builds the global layout.
    pub tp: Option<u32>,
    /// `--pp`: pipeline stages (0 or absent: 1).
    pub pp: Option<u32>,
    /// `--ep`: expert-parallel degree, 1 or `tp` (MoE models; 0 or absent: 1).
    pub ep: Option<u32>,
    /// `--microbatches`: micro-batches per step (absent: `pp`).
    pub microbatches: Option<u32>,
    /// `--expert-imbalance`: the busiest GPU's expert load over the mean (0 or absent: 1.0).
    pub expert_imbalance: Option<f64>,
    /// `--scale-up-link`: the link of the tensor/pipeline/expert traffic (absent: the device's).
    pub scale_up_link: Option<String>,
    /// `--prefill-tp`: the prefill pool's own layout (does not inherit `--tp`/`--pp`).
    pub prefill_tp: Option<u32>,
    /// `--prefill-pp`.
    pub prefill_pp: Option<u32>,
    /// `--decode-tp`: the decode pool's own layout.
    pub decode_tp: Option<u32>,
    /// `--decode-pp`.
    pub decode_pp: Option<u32>,
    /// `--devices-from-layout` (beyond the reference, which requires devices per instance to
    /// equal tp x pp already): a pool with a layout gets tp x pp devices per instance, so a sweep
    /// over `tp` needs no matching devices axis.
    pub devices_from_layout: bool,
    /// `--weight-format`: bf16, fp8, int8, int4 or fp4 (levers-cost.md §6).
    #[serde(deserialize_with = "crate::options::by_name")]
    pub weight_format: QuantFormat,
    /// `--kv-format`: the KV cache's (and so the hand-off's) format.
    #[serde(deserialize_with = "crate::options::kv_format_by_name")]
    pub kv_format: QuantFormat,
    /// `--compute-format`: bf16 (weight-only) or the weight format (W8A8, W4A4).
    #[serde(deserialize_with = "crate::options::compute_format_by_name")]
    pub compute_format: QuantFormat,
    /// `--fft-efficiency`: replaces `fft_efficiency` on every device given (levers-cost.md §9.3;
    /// `None`: the devices' own).
    pub fft_efficiency: Option<f64>,
    /// `--ft-samples-per-s`: the transform engine's converter rate (levers-cost.md §10.1).
    pub ft_samples_per_s: Option<f64>,
    /// `--ft-enob`: the engine's effective bits.
    pub ft_enob: Option<u32>,
    /// `--ft-static-w`: the engine's static power, W (laser and tuning W/2 each).
    pub ft_static_w: Option<f64>,
    /// `--ft-mask-rate`: Fourier-plane mask rewrites per second.
    pub ft_mask_rate: Option<f64>,
    /// `--ft-detection`: `coherent` or `intensity`.
    #[serde(deserialize_with = "crate::options::by_name_opt")]
    pub ft_detection: Option<Detection>,
    /// `--ft-overlap`: optical and GPU work overlap within a step.
    pub ft_overlap: bool,
    /// `--ppa`: the summary's area, silicon cost and perf per W / mm² / $ (levers-cost.md §11).
    pub ppa: bool,
    /// `--workload`: a named workload (`chat`, `coding-agent`, `offline-batch`, `long-rag`,
    /// `voice`): its length distributions and sessions replace `prompt`/`output`/`turns`/...; its
    /// SLOs apply where `ttft_slo`/`tpot_slo` are not given.
    pub workload: Option<String>,
    /// `--turns`: turns per session (closed loop after the first).
    pub turns: u32,
    /// `--think`: mean think time between a reply and the next turn, s.
    pub think: f64,
    /// `--system-prompts`: distinct shared system prompts.
    pub system_prompts: u64,
    /// `--system-len`: system prompt length, tokens.
    pub system_len: u64,
    /// `--prefix-share`: fraction of sessions that open with a system prompt.
    pub prefix_share: f64,
    /// `--trace-file`: replay a trace (Azure CSV, Mooncake JSONL, BurstGPT CSV, or the reference's
    /// JSON rows) instead of generating requests; `rate`, `requests` and the lengths are then unused.
    pub trace_file: Option<String>,
    /// `--trace-format`: force a format instead of detecting it.
    #[serde(deserialize_with = "crate::options::by_name_opt")]
    pub trace_format: Option<TraceFormat>,
    /// `--time-scale`: multiply every inter-arrival gap of the trace.
    pub time_scale: f64,
    /// `--start`: start of the replayed window, s after the trace's first arrival.
    pub trace_start: Option<f64>,
    /// `--duration`: length of the replayed window, s.
    pub trace_duration: Option<f64>,
    /// `--max-requests`: replay at most this many requests.
    pub max_requests: Option<u64>,
    /// `--skip-bad-lines`: skip (and count) malformed trace lines instead of stopping.
    pub skip_bad_lines: bool,
    /// `--sort`: sort a trace whose timestamps are out of order (with a warning) instead of
    /// rejecting it.
    pub sort_trace: bool,
    /// `--max-context`: clip replayed prompts to this many tokens (default: the model's context).
    pub max_context: Option<u64>,
    /// `--layers` and the other custom-shape keys below override the `model` preset's fields
    /// (as `disagg handoff` does); `None` keeps the preset's. Left out of the echo when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layers: Option<u64>,
    /// `--d-model`: hidden size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub d_model: Option<u64>,
    /// `--heads`: query heads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heads: Option<u64>,
    /// `--kv-heads`: key/value heads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kv_heads: Option<u64>,
    /// `--head-dim`: head dimension.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head_dim: Option<u64>,
    /// `--d-ff`: MLP width.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub d_ff: Option<u64>,
    /// `--vocab`: vocabulary size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vocab: Option<u64>,
    /// `--weight-bytes`: bytes per weight.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight_bytes: Option<f64>,
    /// `--kv-bytes`: bytes per cached K or V value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kv_bytes: Option<f64>,
    /// `--link-bandwidth-gb-s`: overrides the `link` preset's bandwidth per channel, GB/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link_bandwidth_gb_s: Option<f64>,
    /// `--link-latency-us`: overrides the link's latency per transfer, µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link_latency_us: Option<f64>,
    /// `--link-pj-per-bit`: overrides the link's energy, pJ per bit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link_pj_per_bit: Option<f64>,
    /// `--device-peak-tflops`: overrides every pool's device's dense BF16 peak, TFLOP/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_peak_tflops: Option<f64>,
    /// `--device-mem-bw-tb-s`: overrides every pool's device's HBM bandwidth, TB/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_mem_bw_tb_s: Option<f64>,
    /// `--device-mem-gb`: overrides every pool's device's HBM capacity, GB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_mem_gb: Option<f64>,
    /// `--device-tdp-w`: overrides every pool's device's TDP, W.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_tdp_w: Option<f64>,
    /// `--device-idle-w`: overrides every pool's device's idle power, W.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_idle_w: Option<f64>,
}

impl Default for Scenario {
    fn default() -> Self {
        Scenario {
            model: "llama3-70b".into(),
            device: "h100".into(),
            devices_per_instance: 4,
            mode: Mode::Disagg,
            prefill: 1,
            decode: 1,
            link: "ib-ndr".into(),
            link_channels: 1,
            rate: 4.0,
            requests: 800,
            prompt: 2048.0,
            prompt_cv: 0.5,
            output: 256.0,
            output_cv: 0.5,
            prompt_min: LengthDist::DEFAULT_LO as u64,
            prompt_max: LengthDist::DEFAULT_HI as u64,
            output_min: LengthDist::DEFAULT_LO as u64,
            output_max: LengthDist::DEFAULT_HI as u64,
            ttft_slo: None,
            tpot_slo: None,
            seed: 1,
            power_cap: None,
            prefill_power_cap: None,
            decode_power_cap: None,
            dvfs: false,
            fast: false,
            prefill_device: None,
            decode_device: None,
            prefill_devices_per_instance: None,
            decode_devices_per_instance: None,
            kv_compress: None,
            kv_compress_at: CompressAt::Transit,
            prefill_lm_head: None,
            kv_retention: None,
            ced_encoder_layers: None,
            ced_replay: None,
            ced_replay_on: None,
            send: SendMode::Whole,
            link_sharing: LinkSharing::Fifo,
            link_topology: LinkTopology::Shared,
            reserve_kv_on: ReserveKvOn::Arrival,
            first_token: FirstToken::Prefill,
            batch_policy: BatchPolicy::PrefillPriority,
            max_num_batched_tokens: None,
            kv_policy: KvPolicy::Oracle,
            kv_block_size: 16,
            max_seq_len: 2048,
            max_decode_batch: DEFAULT_MAX_DECODE_BATCH,
            preemption: Preemption::Recompute,
            swap_in: SwapIn::OwnBlocks,
            host_link: "pcie5".into(),
            prefix_caching: false,
            speculative: None,
            gamma: 3,
            alpha: 0.7,
            spec_seed: 0,
            prefix_handoff: false,
            decode_router: DecodeRouter::LeastLoaded,
            prefix_from_trace: false,
            handoff_ranks: false,
            nics_per_instance: None,
            tp: None,
            pp: None,
            ep: None,
            microbatches: None,
            expert_imbalance: None,
            scale_up_link: None,
            prefill_tp: None,
            prefill_pp: None,
            decode_tp: None,
            decode_pp: None,
            devices_from_layout: false,
            weight_format: QuantFormat::Bf16,
            kv_format: QuantFormat::Bf16,
            compute_format: QuantFormat::Bf16,
            fft_efficiency: None,
            ft_samples_per_s: None,
            ft_enob: None,
            ft_static_w: None,
            ft_mask_rate: None,
            ft_detection: None,
            ft_overlap: false,
            ppa: false,
            workload: None,
            turns: 1,
            think: 0.0,
            system_prompts: 0,
            system_len: 0,
            prefix_share: 1.0,
            trace_file: None,
            trace_format: None,
            time_scale: 1.0,
            trace_start: None,
            trace_duration: None,
            max_requests: None,
            skip_bad_lines: false,
            sort_trace: false,
            max_context: None,
            layers: None,
            d_model: None,
            heads: None,
            kv_heads: None,
            head_dim: None,
            d_ff: None,
            vocab: None,
            weight_bytes: None,
            kv_bytes: None,
            link_bandwidth_gb_s: None,
            link_latency_us: None,
            link_pj_per_bit: None,
            device_peak_tflops: None,
            device_mem_bw_tb_s: None,
            device_mem_gb: None,
            device_tdp_w: None,
            device_idle_w: None,
        }
    }
}

macro_rules! option_enum {
    ($(#[$m:meta])* $name:ident, $flag:literal, { $($(#[$vm:meta])* $var:ident = $s:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vm])* #[serde(rename = $s)] $var),+
        }
        impl $name {
            /// Accepted names (the first is the reference's default).
            pub const NAMES: &'static [&'static str] = &[$($s),+];
            /// The option's CLI flag.
            pub const FLAG: &'static str = $flag;
            /// Parses a name; the error names the flag and lists the valid names.
            pub fn parse(s: &str) -> Result<Self, Error> {
                match s {
                    $($s => Ok($name::$var),)+
                    other => Err(Error::unknown($flag, other, Self::NAMES.iter().copied())),
                }
            }
            /// The canonical name.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$var => $s),+
                }
            }
        }
    };
}

option_enum!(
    /// How transfers share a KV link (`--link-sharing`).
    LinkSharing, "--link-sharing", {
        /// C independent FIFO channels (the reference).
        #[default]
        Fifo = "fifo",
        /// Processor sharing: the transfers with bytes to send split the link's bandwidth equally.
        Fair = "fair",
    }
);

option_enum!(
    /// Which hand-offs share a KV link (`--link-topology`).
    LinkTopology, "--link-topology", {
        /// One link for everything (the reference).
        #[default]
        Shared = "shared",
        /// One link per prefill instance (its NIC).
        PerPrefill = "per-prefill",
        /// One link per prefill-decode pair.
        PerPair = "per-pair",
    }
);

option_enum!(
    /// When the decode side reserves a request's KV (`--reserve-kv-on`).
    ReserveKvOn, "--reserve-kv-on", {
        /// At decode admission, after the KV landed (the reference).
        #[default]
        Arrival = "arrival",
        /// Before the transfer starts, on the decode instance it goes to.
        Transfer = "transfer",
    }
);

option_enum!(
    /// Which first token TTFT and TPOT are measured from (`--first-token`).
    FirstToken, "--first-token", {
        /// The end of the prefill step (the reference).
        #[default]
        Prefill = "prefill",
        /// Decode admission after the KV landed (llm-d, Dynamo).
        Decode = "decode",
    }
);

/// The five hand-off options, resolved (echoed in the summary as `options`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct HandoffOptions {
    /// `--send`.
    pub send: SendMode,
    /// `--link-sharing`.
    pub link_sharing: LinkSharing,
    /// `--link-topology`.
    pub link_topology: LinkTopology,
    /// `--reserve-kv-on`.
    pub reserve_kv_on: ReserveKvOn,
    /// `--first-token`.
    pub first_token: FirstToken,
}

option_enum!(
    /// Serving mode (`--mode`).
    Mode, "--mode", {
        /// Prefill and decode pools joined by a KV link (the reference's default).
        #[default]
        Disagg = "disagg",
        /// Instances that do both phases (prefill priority).
        Colocated = "colocated",
    }
);

/// The role of an instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Prefill pool.
    Prefill,
    /// Decode pool.
    Decode,
    /// Colocated instance.
    Colocated,
}

impl Role {
    /// `prefill`, `decode` or `colocated` (also the instance name prefix).
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Prefill => "prefill",
            Role::Decode => "decode",
            Role::Colocated => "colocated",
        }
    }
}

/// One pool of identical instances, resolved.
#[derive(Clone, Debug)]
pub struct Pool {
    /// Role of its instances.
    pub role: Role,
    /// Number of instances.
    pub instances: usize,
    /// The accelerator.
    pub device: Device,
    /// Devices per instance.
    pub devices: u32,
    /// Per-device power cap, W.
    pub power_cap_w: Option<f64>,
    /// The pool's cost model.
    pub cost: CostModel,
    /// KV capacity of one instance, tokens.
    pub kv_capacity_tokens: u64,
    /// Speculative decoding: the draft's cost model on this pool's devices (no per-step
    /// overhead) and the KV bytes per token it stores (levers-scheduling.md §10.1).
    pub draft: Option<(CostModel, f64)>,
}

/// The workload a configuration generates (`poisson_workload`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WorkloadSpec {
    /// Arrival rate, requests/s.
    pub rate: f64,
    /// Number of requests.
    pub requests: u64,
    /// Prompt lengths.
    pub prompt: LengthDist,
    /// Output lengths.
    pub output: LengthDist,
    /// RNG seed.
    pub seed: u64,
}

impl WorkloadSpec {
    /// Generates the requests (CPython-identical).
    pub fn generate(&self) -> Vec<GenRequest> {
        poisson_workload(
            self.rate,
            self.requests as usize,
            &self.prompt,
            &self.output,
            self.seed,
        )
    }

    /// The same workload at another rate (same lengths, gaps scaled).
    pub fn at_rate(&self, rate: f64) -> WorkloadSpec {
        WorkloadSpec { rate, ..*self }
    }
}

/// A validated, resolved configuration: what the engine runs.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Serving mode.
    pub mode: Mode,
    /// The model (with the prefill LM-head option applied).
    pub model: ModelSpec,
    /// The KV link, with its channel count.
    pub link: Link,
    /// KV hand-off compression, if any.
    pub kv_transit: Option<KvTransit>,
    /// Pools in instance order: `[prefill, decode]` (disagg) or `[colocated]`.
    pub pools: Vec<Pool>,
    /// Token budget of one prefill step (8192).
    pub max_prefill_tokens: u64,
    /// Most sequences in a decode batch (256).
    pub max_decode_batch: usize,
    /// Fixed per-step overhead, s (0.5 ms): informational; every step's overhead comes from its
    /// pool's cost model (`CostModel::step_time`: this value, or a fitted device's own).
    pub step_overhead_s: f64,
    /// Fraction of the earliest requests excluded from latency statistics (0.1).
    pub warmup_frac: f64,
    /// Sampling period of the time series, s (0.05).
    pub sample_dt_s: f64,
    /// TTFT SLO, s.
    pub ttft_slo_s: f64,
    /// TPOT SLO, s per token.
    pub tpot_slo_s: f64,
    /// Use the macro-step decode path (disaggregated decode instances only).
    pub fast_forward: bool,
    /// DVFS on memory-bound steps (every pool).
    pub dvfs: bool,
    /// A per-pool device or device count was given.
    pub heterogeneous: bool,
    /// `"<n>x <device name>"` of the prefill and decode pools as configured (also in colocated
    /// mode, where they are not used), for reports of heterogeneous runs.
    pub pool_labels: [String; 2],
    /// Global per-device power cap, W.
    pub power_cap_w: Option<f64>,
    /// The workload's rate, count, lengths and seed (for a trace: its observed rate and mean
    /// lengths, used by the analytic bounds).
    pub workload: WorkloadSpec,
    /// Where the requests come from.
    pub source: Source,
    /// The cost model of `device` x `devices_per_instance` with the global cap and no DVFS, used by the
    /// analytic capacity bounds (simulator.md §5.9); `None` if the model does not fit there.
    pub base_cost: Option<CostModel>,
    /// The hand-off options (layer-wise streaming, link sharing and topology, decode-side
    /// reservation, TTFT convention).
    pub handoff: HandoffOptions,
    /// The scheduling levers, present exactly when they switch the scheduled instances on
    /// (levers-scheduling.md §2.1); `None` runs the plain instances.
    pub levers: Option<Levers>,
    /// The scenario this was built from.
    pub scenario: Scenario,
    /// `--handoff-ranks`: the NICs of the rank-aware plan between the pools' layouts; `None`:
    /// each hand-off is one transfer (the reference).
    pub rank_ports: Option<PortLoads>,
}

impl SimConfig {
    /// A hand-off's transfer `x` of `prompt_tokens` tokens as the link sees it: unchanged, or
    /// with `--handoff-ranks` its stream time the busiest NIC's wire time (`fixed + stream`
    /// its time; bytes and energy unchanged).
    #[inline]
    pub fn handoff_transfer(&self, x: Transfer, prompt_tokens: u64) -> Transfer {
        match &self.rank_ports {
            None => x,
            Some(ports) => {
                let stream_s = ports.stream_s(&self.link, prompt_tokens);
                Transfer {
                    stream_s,
                    time_s: x.fixed_s + stream_s,
                    ..x
                }
            }
        }
    }

    /// The prefill pool (disagg).
    pub fn prefill_pool(&self) -> Option<&Pool> {
        self.pools.iter().find(|p| p.role == Role::Prefill)
    }
    /// The decode pool (disagg).
    pub fn decode_pool(&self) -> Option<&Pool> {
        self.pools.iter().find(|p| p.role == Role::Decode)
    }
    /// The colocated pool.
    pub fn colocated_pool(&self) -> Option<&Pool> {
        self.pools.iter().find(|p| p.role == Role::Colocated)
    }
    /// The replay window W of a CED model whose decode instances replay (levers-cost.md §8.3:
    /// `--ced-replay-on decode`, disaggregated); `None` for every other run.
    pub fn ced_decode_replay(&self) -> Option<u64> {
        match self.model.ced {
            Some(c)
                if c.replay_on == disagg_model::ReplayOn::Decode && self.mode == Mode::Disagg =>
            {
                Some(c.replay)
            }
            _ => None,
        }
    }
    /// Total number of instances.
    pub fn instance_count(&self) -> usize {
        self.pools.iter().map(|p| p.instances).sum()
    }
    /// Number of KV links the topology gives (0 in colocated mode).
    pub fn link_count(&self) -> usize {
        if self.mode != Mode::Disagg {
            return 0;
        }
        let p = self.prefill_pool().map_or(0, |x| x.instances);
        let d = self.decode_pool().map_or(0, |x| x.instances);
        match self.handoff.link_topology {
            LinkTopology::Shared => 1,
            LinkTopology::PerPrefill => p,
            LinkTopology::PerPair => p * d,
        }
    }
    /// This configuration's requests, open-loop view (closed-loop turns keep placeholder
    /// arrivals; use [`SimConfig::requests`] to run them as sessions).
    pub fn generate_workload(&self) -> Vec<GenRequest> {
        self.requests().requests
    }

    /// This configuration's requests, with closed-loop turns (what [`crate::simulate_config`] runs).
    pub fn requests(&self) -> Workload {
        self.source.workload(&self.workload)
    }

    /// Checks the invariants the engine relies on (always true for a [`Scenario::build`] result;
    /// this guards hand-edited configurations).
    pub fn check(&self) -> Result<(), Error> {
        let has = |r: Role| self.pools.iter().any(|p| p.role == r && p.instances > 0);
        match self.mode {
            Mode::Disagg if !(has(Role::Prefill) && has(Role::Decode)) => {
                return Err(Error::invalid(
                    "config",
                    "disaggregated mode needs a prefill and a decode pool with instances",
                ))
            }
            Mode::Colocated if !has(Role::Colocated) => {
                return Err(Error::invalid(
                    "config",
                    "colocated mode needs a colocated pool with instances",
                ))
            }
            _ => {}
        }
        if self.max_decode_batch == 0 || self.max_prefill_tokens == 0 {
            return Err(Error::invalid("config", "batch limits must be at least 1"));
        }
        if self.link.channels == 0 {
            return Err(Error::invalid("--link-channels", "must be at least 1"));
        }
        if !(self.sample_dt_s.is_finite() && self.sample_dt_s > 0.0) {
            return Err(Error::invalid("config", "sample_dt must be positive"));
        }
        if !(self.warmup_frac >= 0.0 && self.warmup_frac <= 1.0) {
            return Err(Error::invalid("config", "warmup_frac must be in [0, 1]"));
        }
        if self.mode == Mode::Colocated {
            let d = HandoffOptions::default();
            let h = self.handoff;
            if h.send != d.send
                || h.link_sharing != d.link_sharing
                || h.link_topology != d.link_topology
                || h.reserve_kv_on != d.reserve_kv_on
            {
                return Err(Error::invalid(
                    "config",
                    "the KV hand-off options need disaggregated mode",
                ));
            }
        }
        if self.mode == Mode::Disagg && self.fast_forward && self.levers.is_some() {
            return Err(Error::invalid(
                "--fast",
                "the fast decode path does not exist with the scheduling levers",
            ));
        }
        let ced_decode = self
            .model
            .ced
            .is_some_and(|c| c.replay_on == disagg_model::ReplayOn::Decode);
        if ced_decode
            && (self.mode != Mode::Disagg
                || self.fast_forward
                || self.levers.is_some()
                || self.handoff.send != SendMode::Whole
                || self.handoff.first_token != FirstToken::Prefill)
        {
            return Err(Error::invalid(
                "--ced-replay-on",
                "decode needs --mode disagg, the plain decode loop and the default hand-off, \
                 without the scheduling levers",
            ));
        }
        if self.link_count() > MAX_LINKS as usize {
            return Err(Error::invalid(
                "--link-topology",
                format!("{} links; at most {MAX_LINKS}", self.link_count()),
            ));
        }
        Ok(())
    }
}

fn rename(e: Error, flag: &'static str) -> Error {
    match e {
        Error::UnknownName { name, valid, .. } => Error::UnknownName {
            kind: flag,
            name,
            valid,
        },
        Error::Invalid { why, .. } => Error::Invalid {
            what: flag.to_string(),
            why,
        },
        Error::Cancelled => Error::Cancelled,
    }
}

impl Scenario {
    /// The scenario as outputs echo it: every key, but the [`QUIET_DEFAULT_KEYS`] only where they
    /// differ from their defaults.
    pub fn echo_value(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).expect("scenario");
        quiet_defaults(&mut v);
        v
    }
    /// Checks every numeric option against its range in [`crate::ranges::RANGES`].
    pub fn check_ranges(&self) -> Result<(), Error> {
        for r in crate::ranges::RANGES {
            if let Some(v) = r.key.and_then(|k| self.numeric(k)) {
                r.check(v)?;
            }
        }
        Ok(())
    }
}

impl Scenario {
    /// Parses flags (`--flag value`, `--flag=value`, and switches such as `--dvfs`, which take no
    /// value): every option of [`crate::options::OPTIONS`], each read by [`Scenario::set`], on top
    /// of the defaults. Unknown flags are an error.
    pub fn from_flags<I, S>(args: I) -> Result<Scenario, Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut s = Scenario::default();
        let mut args = args.into_iter().map(|a| a.as_ref().to_string());
        while let Some(raw) = args.next() {
            if !raw.starts_with("--") {
                return Err(Error::invalid(raw, "expected an option starting with --"));
            }
            let (name, inline) = match raw.split_once('=') {
                Some((f, v)) => (f.to_string(), Some(v.to_string())),
                None => (raw.clone(), None),
            };
            let Some(opt) = crate::options::for_flag(&name) else {
                return Err(Error::invalid(name, "unknown option"));
            };
            let value = match (opt.kind, inline) {
                (crate::options::Kind::Switch, Some(_)) => {
                    return Err(Error::invalid(name, "takes no value"))
                }
                (crate::options::Kind::Switch, None) => "true".to_string(),
                (_, Some(v)) => v,
                (_, None) => args
                    .next()
                    .ok_or_else(|| Error::invalid(&name, "expects a value"))?,
            };
            s.set(opt.key, &value)?;
        }
        Ok(s)
    }

    /// The workload parameters (validated by [`Scenario::build`]).
    pub fn workload_spec(&self) -> WorkloadSpec {
        let named = self
            .workload
            .as_deref()
            .and_then(|w| crate::sessions::find_workload(w).ok());
        WorkloadSpec {
            rate: self.rate,
            requests: self.requests,
            prompt: named.as_ref().map_or(
                LengthDist::with_bounds(
                    self.prompt,
                    self.prompt_cv,
                    self.prompt_min as i64,
                    self.prompt_max as i64,
                ),
                |w| w.prompt,
            ),
            output: named.as_ref().map_or(
                LengthDist::with_bounds(
                    self.output,
                    self.output_cv,
                    self.output_min as i64,
                    self.output_max as i64,
                ),
                |w| w.output,
            ),
            seed: self.seed,
        }
    }

    /// The SLOs the run is judged by, each on its own: the value given, else the named
    /// workload's, else the default (1.0 s TTFT, 0.025 s TPOT). An explicit value always wins,
    /// even one equal to the default (as in the reference).
    pub fn slos(&self) -> (f64, f64) {
        let named = self
            .workload
            .as_deref()
            .and_then(|w| crate::sessions::find_workload(w).ok());
        (
            self.ttft_slo
                .unwrap_or(named.as_ref().map_or(DEFAULT_TTFT_SLO_S, |w| w.ttft_slo_s)),
            self.tpot_slo
                .unwrap_or(named.as_ref().map_or(DEFAULT_TPOT_SLO_S, |w| w.tpot_slo_s)),
        )
    }

    /// The scenario as a run reports it: the same, with the SLOs it was measured against filled
    /// in ([`Scenario::slos`]: given, else the named workload's, else the reference's default).
    /// Run documents echo this, so they say which SLOs their attainment figures use; scenarios
    /// meant as input (presets, a sweep's base) keep unset SLOs unset, so that a workload chosen
    /// later still brings its own.
    pub fn with_slos_resolved(&self) -> Scenario {
        let (ttft, tpot) = self.slos();
        Scenario {
            ttft_slo: Some(ttft),
            tpot_slo: Some(tpot),
            ..self.clone()
        }
    }

    /// How the trace file is read: `trace_format`, `time_scale`, the `trace_start` /
    /// `trace_duration` window, `max_requests`, `skip_bad_lines`, `sort_trace`, with prompts
    /// clipped to `max_context` tokens if given (`disagg trace-stats` reads with these too).
    pub fn trace_read_options(&self, max_context: Option<u64>) -> disagg_trace::ReadOptions {
        disagg_trace::ReadOptions {
            format: self.trace_format,
            time_scale: self.time_scale,
            start_s: self.trace_start,
            duration_s: self.trace_duration,
            max_requests: self.max_requests,
            skip_bad_lines: self.skip_bad_lines,
            max_context,
            unsorted: if self.sort_trace {
                disagg_trace::Unsorted::Sort
            } else {
                disagg_trace::Unsorted::Reject
            },
            keep_hash_ids: false,
        }
    }

    /// Validates the workload options and resolves where the requests come from (reading any
    /// trace file now).
    fn source(&self, model: &ModelSpec) -> Result<(Source, WorkloadSpec), Error> {
        for (lo_flag, lo, hi_flag, hi) in [
            (
                "--prompt-min",
                self.prompt_min,
                "--prompt-max",
                self.prompt_max,
            ),
            (
                "--output-min",
                self.output_min,
                "--output-max",
                self.output_max,
            ),
        ] {
            if lo > hi {
                return Err(Error::invalid(
                    lo_flag,
                    format!("{lo} is above {hi_flag} {hi}: no length fits"),
                ));
            }
        }
        let mut spec = self.workload_spec();
        let trace_only: [(&str, bool); 9] = [
            ("--prefix-from-trace", self.prefix_from_trace),
            ("--max-context", self.max_context.is_some()),
            ("--trace-format", self.trace_format.is_some()),
            ("--time-scale", self.time_scale != 1.0),
            ("--start", self.trace_start.is_some()),
            ("--duration", self.trace_duration.is_some()),
            ("--max-requests", self.max_requests.is_some()),
            ("--skip-bad-lines", self.skip_bad_lines),
            ("--sort", self.sort_trace),
        ];
        let Some(file) = &self.trace_file else {
            if let Some((flag, _)) = trace_only.iter().find(|(_, set)| *set) {
                return Err(Error::invalid(
                    *flag,
                    "applies to a replayed trace: give --trace-file",
                ));
            }
            let named = match &self.workload {
                Some(w) => Some(crate::sessions::find_workload(w)?),
                None => None,
            };
            let shape = match &named {
                Some(w) => w.shape,
                None => SessionShape {
                    turns: self.turns,
                    think_s: self.think,
                    system_prompts: self.system_prompts,
                    system_len: self.system_len,
                    share: self.prefix_share,
                },
            };
            if self.fast && shape.turns > 1 {
                return Err(Error::invalid(
                    "--fast",
                    "closed-loop session turns need the plain decode loop (as in the reference): drop --fast",
                ));
            }
            let source = if shape.is_plain() && named.is_none() {
                Source::Poisson
            } else {
                Source::Sessions {
                    name: self.workload.clone(),
                    shape,
                }
            };
            return Ok((source, spec));
        };
        if self.workload.is_some() {
            return Err(Error::invalid(
                "--workload",
                "a trace brings its own requests: give --workload or --trace-file, not both",
            ));
        }
        let max_context = self.max_context.or(model.context_tokens);
        let mut opts = self.trace_read_options(max_context);
        opts.keep_hash_ids = self.prefix_from_trace;
        let t = disagg_trace::read_path(std::path::Path::new(file), &opts)
            .map_err(|e| Error::invalid("--trace-file", e.to_string()))?;
        if t.rows.len() as u64 > MAX_REQUESTS {
            return Err(Error::invalid(
                "--trace-file",
                format!("{} requests is more than {MAX_REQUESTS}", t.rows.len()),
            ));
        }
        let mut rows = Vec::with_capacity(t.rows.len());
        for (i, r) in t.rows.iter().enumerate() {
            if r.prompt_len == 0
                || r.output_len == 0
                || r.prompt_len > u32::MAX as u64
                || r.output_len > u32::MAX as u64
            {
                return Err(Error::invalid(
                    "--trace-file",
                    format!(
                        "{file}:{}: request {i}: prompt and output must be between 1 and {} tokens, got {} and {}",
                        r.line,
                        u32::MAX,
                        r.prompt_len,
                        r.output_len
                    ),
                ));
            }
            rows.push(GenRequest {
                rid: i,
                arrival_s: r.arrival_s,
                prompt_len: r.prompt_len as u32,
                output_len: r.output_len as u32,
            });
        }
        let n = rows.len() as f64;
        let mean =
            |f: &dyn Fn(&GenRequest) -> u32| rows.iter().map(|r| f(r) as f64).sum::<f64>() / n;
        let span =
            rows.last().map_or(0.0, |r| r.arrival_s) - rows.first().map_or(0.0, |r| r.arrival_s);
        spec = WorkloadSpec {
            rate: if span > 0.0 { n / span } else { f64::NAN },
            requests: rows.len() as u64,
            prompt: LengthDist::new(mean(&|r| r.prompt_len), 0.0),
            output: LengthDist::new(mean(&|r| r.output_len), 0.0),
            seed: self.seed,
        };
        let info = TraceInfo {
            file: file.clone(),
            format: t.format.as_str().into(),
            requests: rows.len() as u64,
            clipped_prompts: t.report.clipped_prompts,
            max_context,
            bad_lines_skipped: t.report.bad_lines_skipped,
            failed_requests_skipped: t.report.failed_requests_skipped,
            out_of_order: t.report.out_of_order,
            time_scale: self.time_scale,
        };
        let chains = if self.prefix_from_trace {
            let c = crate::levers::trace_chains(&t.rows).ok_or_else(|| {
                Error::invalid(
                    "--prefix-from-trace",
                    format!("{file} has no hash_ids (Mooncake block hashes) to build chains from"),
                )
            })?;
            Some(std::sync::Arc::new(c))
        } else {
            None
        };
        Ok((
            Source::File {
                rows: std::sync::Arc::new(rows),
                info,
                chains,
            },
            spec,
        ))
    }

    /// Validates everything and resolves names, pools and cost models. Errors are one line naming
    /// the option with its CLI spelling. The steps, in order (the first error wins):
    /// numeric ranges, [model](Scenario::resolve_model), [devices](Scenario::resolve_devices),
    /// [link](Scenario::resolve_link), [instance counts](Scenario::check_instances),
    /// [KV transit](Scenario::kv_transit), [hand-off options](Scenario::resolve_handoff),
    /// [scheduling levers](Scenario::resolve_levers), [pools](Scenario::pools), then the
    /// [workload source](Scenario::source) (which reads any trace file).
    pub fn build(&self, cat: &Catalogue) -> Result<SimConfig, Error> {
        self.check_ranges()?;
        let mode = self.mode;
        let model = self.resolve_model(cat)?;
        let devices = self.resolve_devices(cat)?;
        let link = self.resolve_link(cat)?;
        self.check_instances()?;
        let kv_transit = self.kv_transit(cat, &model)?;
        // The reference's CLI refuses an unknown host link (a choice) before any validation.
        cat.link(&self.host_link)
            .map_err(|e| rename(e, HOST_LINK_FLAG))?;
        // Every name is checked whether or not it is used: a pool's layout checks the scale-up
        // link (in the reference's order and words, step 8); without a layout, here.
        if let Some(k) = self
            .scale_up_link
            .as_ref()
            .filter(|_| !self.pools_have_layouts())
        {
            cat.link(k).map_err(|e| rename(e, SCALE_UP_LINK_FLAG))?;
        }
        self.check_cost_levers(&model, kv_transit.is_some())?;
        let handoff = self.resolve_handoff()?;
        let levers = self.resolve_levers(cat, &model, kv_transit.is_some())?;
        self.check_ced(&model, levers.is_some())?;
        self.check_layer_kinds(&model)?;
        // The analytic bounds keep the model as given (levers-cost.md §14.3 item 5); everything
        // else sees the quantised copy (§2.2 step 2).
        let plain_model = model;
        let model = self.formats().apply(&plain_model);
        let mut pools = self.pools(&model, &devices, cat)?;
        if let Some(spec) = levers.as_ref().and_then(|l| l.speculative.as_ref()) {
            attach_draft(&mut pools, &model, &spec.draft, cat)?;
        }
        let base_cost = CostModel::new(
            &plain_model,
            &devices.all,
            self.devices_per_instance,
            CostOptions {
                power_cap_w: self.power_cap,
                ..CostOptions::default()
            },
        )
        .ok()
        .filter(|c| c.kv_capacity_tokens().is_ok());
        let rank_ports = self.resolve_rank_ports(&model, &link, &pools, cat)?;
        let (source, workload) = self.source(&model)?;
        let (ttft_slo_s, tpot_slo_s) = self.slos();
        Ok(SimConfig {
            mode,
            model,
            link,
            kv_transit,
            pools,
            max_prefill_tokens: MAX_PREFILL_TOKENS,
            max_decode_batch: self.max_decode_batch as usize,
            step_overhead_s: CostOptions::default().step_overhead_s,
            warmup_frac: 0.1,
            sample_dt_s: 0.05,
            ttft_slo_s,
            tpot_slo_s,
            fast_forward: self.fast,
            dvfs: self.dvfs,
            heterogeneous: self.is_heterogeneous(),
            pool_labels: self.pool_labels(&devices),
            power_cap_w: self.power_cap,
            workload,
            source,
            base_cost,
            handoff,
            levers,
            scenario: self.clone(),
            rank_ports,
        })
    }

    /// What a model described by layer kinds (issue 16) cannot run with, each refused naming the
    /// flag: parallel layouts and speculative decoding (their stage and draft arithmetic assume
    /// layers of one shape); with windowed layers or a linear state, the prefix cache (a cached
    /// segment would have to hold the windows of every prefix); with layers of different sizes,
    /// layer-wise sending in the simulator (its link sends equal slices; `disagg handoff
    /// --send layerwise` prices unequal ones).
    fn check_layer_kinds(&self, model: &ModelSpec) -> Result<(), Error> {
        if model.arch.is_none() {
            return Ok(());
        }
        let why = |flag: &str, what: &str| {
            Err(Error::invalid(
                flag,
                format!(
                    "{what}: not modelled for {}, which is described by layer kinds",
                    model.key
                ),
            ))
        };
        if self.any_layout() {
            return why(
                "--tp/--pp",
                "parallel layouts split layers of one shape over stages (use \
                 --devices-per-instance)",
            );
        }
        if self.speculative.is_some() {
            return why(
                "--speculative",
                "the draft's capacity and verify-pass arithmetic",
            );
        }
        if model.kv_is_bounded() && (self.prefix_caching || self.prefix_handoff) {
            return why(
                "--prefix-caching",
                "a prefix cache of sliding-window, chunked or linear-attention layers",
            );
        }
        if self.send == SendMode::Layerwise {
            // At one token and beyond every window and chunk (at most 2^24 tokens).
            if [1, (1 << 24) + 1]
                .iter()
                .any(|&p| model.layer_fractions(p).is_some())
            {
                return why(
                    "--send",
                    "layer-wise sending of layers whose slices differ in the simulator (`disagg \
                     handoff --send layerwise` prices it)",
                );
            }
        }
        Ok(())
    }

    /// `--handoff-ranks` and `--nics-per-instance`: the rank-aware plan's NICs between the
    /// prefill and decode pools' layouts (`layout_for`, else TP = devices per instance), on the
    /// KV link, the decode device pricing nothing but naming its scale-up link. It models an
    /// uncompressed hand-off of attention KV sent after the prefill, without a draft's KV. A
    /// model described by layer kinds hands off kind by kind (`disagg_model::ranks`): its ports
    /// are recomputed for each prompt length (sliding windows and chunks capped, linear states
    /// fixed, an MLA latent sent once per decode TP rank); only the stream time follows the
    /// ports, the transfer's bytes and energy stay the logical hand-off's.
    fn resolve_rank_ports(
        &self,
        model: &ModelSpec,
        link: &Link,
        pools: &[Pool],
        cat: &Catalogue,
    ) -> Result<Option<PortLoads>, Error> {
        const FLAG: &str = "--handoff-ranks";
        if !self.handoff_ranks {
            return match self.nics_per_instance {
                Some(_) => Err(Error::invalid(
                    "--nics-per-instance",
                    "applies only with --handoff-ranks",
                )),
                None => Ok(None),
            };
        }
        let why = |what: &str| {
            Error::invalid(
                FLAG,
                format!(
                    "the rank-aware hand-off models one uncompressed KV cache sent after the \
                     prefill: not with {what}"
                ),
            )
        };
        if self.mode != Mode::Disagg {
            return Err(Error::invalid(
                FLAG,
                "shapes the prefill-to-decode KV hand-off: disaggregated mode only",
            ));
        }
        if self.kv_compress.as_deref().is_some_and(|k| k != "none") {
            return Err(why("--kv-compress"));
        }
        if self.send != SendMode::Whole {
            return Err(why("--send layerwise"));
        }
        if self.speculative.is_some() {
            return Err(why("--speculative (the draft's KV)"));
        }
        let pool = |role: Role| pools.iter().find(|p| p.role == role).expect("a pool");
        let layout = |role: Role| match self.layout_for(role) {
            Some(par) => RankLayout::new(par.tp, par.pp),
            None => RankLayout::new(pool(role).devices, 1),
        };
        let mut opts = RankOptions::new(layout(Role::Prefill), layout(Role::Decode));
        opts.nics_per_instance = self.nics_per_instance.map(u64::from);
        let device = &pool(Role::Decode).device;
        let scale_up = match &self.scale_up_link {
            Some(k) => cat.link(k).ok(),
            None => cat.link(&device.scale_up).ok(),
        };
        PortLoads::new(model, link, scale_up, device, &opts)
            .map(Some)
            .map_err(|e| Error::invalid(FLAG, e.to_string()))
    }

    /// Step 1: the `model` preset with the custom-shape keys and `prefill_lm_head` applied.
    fn resolve_model(&self, cat: &Catalogue) -> Result<ModelSpec, Error> {
        let mut model = self
            .custom_model()
            .overlay(cat)
            .map_err(|e| rename(e, "--model"))?;
        if let Some(h) = self.prefill_lm_head {
            model.prefill_lm_head = h;
        }
        if let Some(r) = self.kv_retention {
            match model.arch.as_deref_mut() {
                Some(a) if a.has_windows() => a.retention = r,
                _ => {
                    let have: Vec<&str> = cat
                        .models
                        .iter()
                        .filter(|m| m.arch.as_deref().is_some_and(|a| a.has_windows()))
                        .map(|m| m.key.as_str())
                        .collect();
                    return Err(Error::invalid(
                        "--kv-retention",
                        format!(
                            "{} has no sliding-window or chunked layers ({} have)",
                            model.key,
                            have.join(", ")
                        ),
                    ));
                }
            }
        }
        self.apply_ced(&mut model)?;
        Ok(model)
    }

    /// The CED overrides of levers-cost.md §3.2, in order after the LM head: E, W, where the
    /// replay runs (each only if given; W and the placement are ignored unless E > 0 after the
    /// override; E = 0 turns CED off). Errors name the flag.
    fn apply_ced(&self, model: &mut ModelSpec) -> Result<(), Error> {
        if self.ced_encoder_layers.is_none()
            && self.ced_replay.is_none()
            && self.ced_replay_on.is_none()
        {
            return Ok(());
        }
        let mut c = model.ced.unwrap_or(disagg_model::Ced::new(0));
        if let Some(e) = self.ced_encoder_layers {
            c.encoder_layers = e;
        }
        if let Some(w) = self.ced_replay {
            c.replay = w;
        }
        if let Some(on) = self.ced_replay_on {
            c.replay_on = on;
        }
        model.ced = (c.encoder_layers > 0).then_some(c);
        let Some(c) = model.ced else {
            return Ok(());
        };
        const E_FLAG: &str = "--ced-encoder-layers";
        if model.fft.is_some() || model.moe.is_some() {
            return Err(Error::invalid(
                E_FLAG,
                format!(
                    "CED is modelled for dense attention models only; {} is not one",
                    model.name
                ),
            ));
        }
        if c.encoder_layers >= model.n_layers {
            return Err(Error::invalid(
                E_FLAG,
                format!(
                    "{} must be below the {} layers of {} (the decoder needs at least one)",
                    c.encoder_layers, model.n_layers, model.name
                ),
            ));
        }
        // W >= 1 is the range of --ced-replay (step 0).
        Ok(())
    }

    /// The weight, KV and compute formats (levers-cost.md §6).
    pub fn formats(&self) -> Formats {
        Formats {
            weight: self.weight_format,
            kv: self.kv_format,
            compute: self.compute_format,
        }
    }

    /// A layout from degrees `tp` and `pp` with the global `ep`, micro-batches, imbalance and
    /// scale-up link. Python's `or`: an absent or zero degree (or imbalance) is the default;
    /// zero micro-batches are kept (and refused by the check).
    fn layout(&self, tp: Option<u32>, pp: Option<u32>) -> Parallel {
        let or1 = |v: Option<u32>| v.filter(|&x| x != 0).unwrap_or(1);
        Parallel {
            tp: or1(tp),
            pp: or1(pp),
            ep: or1(self.ep),
            microbatches: self.microbatches,
            expert_imbalance: self.expert_imbalance.filter(|&x| x != 0.0).unwrap_or(1.0),
            scale_up_link: self.scale_up_link.clone(),
        }
    }

    /// The global layout (`--tp`, `--pp`, `--ep` or `--microbatches` given; levers-cost.md §5.2).
    fn global_layout(&self) -> Option<Parallel> {
        let any = self.tp.is_some()
            || self.pp.is_some()
            || self.ep.is_some()
            || self.microbatches.is_some();
        any.then(|| self.layout(self.tp, self.pp))
    }

    /// A pool's own layout (`--<pool>-tp` or `--<pool>-pp` given; no inheritance of `--tp`).
    fn pool_layout(&self, tp: Option<u32>, pp: Option<u32>) -> Option<Parallel> {
        (tp.is_some() || pp.is_some()).then(|| self.layout(tp, pp))
    }

    /// `parallel_for(role)`: the pool's own layout, else the global one (colocated: global only).
    pub fn layout_for(&self, role: Role) -> Option<Parallel> {
        let own = match role {
            Role::Prefill => self.pool_layout(self.prefill_tp, self.prefill_pp),
            Role::Decode => self.pool_layout(self.decode_tp, self.decode_pp),
            Role::Colocated => None,
        };
        own.or_else(|| self.global_layout())
    }

    /// Whether a pool of the mode has a layout (which [`Parallel::check`]s when it is built).
    fn pools_have_layouts(&self) -> bool {
        let roles: &[Role] = match self.mode {
            Mode::Disagg => &[Role::Prefill, Role::Decode],
            Mode::Colocated => &[Role::Colocated],
        };
        roles.iter().any(|&r| self.layout_for(r).is_some())
    }

    /// Whether any layout is set (global or per pool; pool flags count in colocated mode too).
    pub fn any_layout(&self) -> bool {
        self.global_layout().is_some()
            || self.pool_layout(self.prefill_tp, self.prefill_pp).is_some()
            || self.pool_layout(self.decode_tp, self.decode_pp).is_some()
    }

    /// `check_levers_2` (levers-cost.md §2.3), when a format is not BF16, speculative decoding is
    /// on, the model is MoE or a layout is set: items 2 to 6 in order (item 1, the format names,
    /// is the options' parser's; the draft's name and vocabulary are checked where it is built).
    fn check_cost_levers(&self, model: &ModelSpec, kv_transit: bool) -> Result<(), Error> {
        let formats = self.formats();
        let on = formats.is_quantised()
            || self.speculative.is_some()
            || model.moe.is_some()
            || self.any_layout();
        if !on {
            return Ok(());
        }
        formats.check(model)?;
        if self.kv_format != QuantFormat::Bf16 && kv_transit {
            return Err(Error::invalid(
                "--kv-format",
                "KV hand-off compression assumes a BF16 KV cache: not with kv_format != 'bf16'",
            ));
        }
        if self.fast && self.mode == Mode::Disagg {
            return Err(Error::invalid(
                "--fast",
                "fast_forward is the plain decode instance's fast path: not with parallelism, \
                 quantisation, speculative decoding or mixture-of-experts models",
            ));
        }
        if self.speculative.is_some() {
            let layouts = [
                self.global_layout(),
                self.pool_layout(self.prefill_tp, self.prefill_pp),
                self.pool_layout(self.decode_tp, self.decode_pp),
            ];
            if layouts.iter().flatten().any(|l| l.pp > 1) {
                return Err(Error::invalid(
                    "--speculative",
                    "speculative decoding with pipeline parallelism is not modelled",
                ));
            }
        }
        Ok(())
    }

    /// Step 2: the devices of every pool, each with the `device_*` overrides applied (errors
    /// name the flag that chose the device).
    fn resolve_devices(&self, cat: &Catalogue) -> Result<PoolDevices, Error> {
        let one = |key: &str, flag: &'static str| {
            self.custom_device(key)
                .overlay(cat)
                .map(|d| self.engine_overrides(d))
                .map_err(|e| rename(e, flag))
        };
        let all = one(&self.device, "--device")?;
        let prefill = match &self.prefill_device {
            Some(k) => Some(one(k, "--prefill-device")?),
            None => None,
        };
        let decode = match &self.decode_device {
            Some(k) => Some(one(k, "--decode-device")?),
            None => None,
        };
        Ok(PoolDevices {
            all,
            prefill,
            decode,
        })
    }

    /// `--fft-efficiency` and the `--ft-*` engine overrides applied to a device given on the
    /// command line (levers-cost.md §9.3, §10.1); the `--ft-*` ones only to a device with an
    /// engine.
    fn engine_overrides(&self, mut d: Device) -> Device {
        if let Some(x) = self.fft_efficiency {
            d.fft_efficiency = x;
        }
        if let Some(e) = d.engine.as_mut() {
            if let Some(x) = self.ft_samples_per_s {
                e.samples_per_s = x;
            }
            if let Some(x) = self.ft_enob {
                e.enob = x;
            }
            if let Some(w) = self.ft_static_w {
                e.laser_w = w / 2.0;
                e.tuning_w = w / 2.0;
            }
            if let Some(x) = self.ft_mask_rate {
                e.mask_rate_hz = x;
            }
            if let Some(x) = self.ft_detection {
                e.detection = x;
            }
            if self.ft_overlap {
                e.overlap = true;
            }
        }
        d
    }

    /// Step 3: the `link` preset with the `link_*` overrides and `link_channels` applied.
    fn resolve_link(&self, cat: &Catalogue) -> Result<Link, Error> {
        let mut link = self
            .custom_link()
            .overlay(cat)
            .map_err(|e| rename(e, "--link"))?;
        link.channels = self.link_channels;
        Ok(link)
    }

    /// Step 4: the mode has the instances it needs.
    fn check_instances(&self) -> Result<(), Error> {
        match self.mode {
            Mode::Disagg if self.prefill == 0 => Err(Error::invalid(
                "--prefill",
                "disaggregated mode needs at least one prefill instance",
            )),
            Mode::Disagg if self.decode == 0 => Err(Error::invalid(
                "--decode",
                "disaggregated mode needs at least one decode instance",
            )),
            Mode::Colocated if self.prefill + self.decode == 0 => Err(Error::invalid(
                "--prefill",
                "colocated mode needs at least one instance (--prefill + --decode)",
            )),
            _ => Ok(()),
        }
    }

    /// Step 5: the KV compression on the hand-off (`kv_compress` at `kv_compress_at`), if any:
    /// from a BF16 cache, in disaggregated mode only.
    fn kv_transit(&self, cat: &Catalogue, model: &ModelSpec) -> Result<Option<KvTransit>, Error> {
        let Some(key) = &self.kv_compress else {
            return Ok(None);
        };
        let c = cat
            .compression(key)
            .map_err(|e| rename(e, "--kv-compress"))?
            .for_model(model);
        if model.kv_bytes != 2.0 {
            return Err(Error::invalid(
                "--kv-compress",
                format!(
                    "KV compression starts from a BF16 cache (2 bytes per value); {} stores {}",
                    model.name, model.kv_bytes
                ),
            ));
        }
        if self.mode != Mode::Disagg {
            return Err(Error::invalid(
                "--kv-compress",
                "compresses the prefill-to-decode hand-off: disaggregated mode only",
            ));
        }
        Ok(Some(KvTransit::new(c, self.kv_compress_at)))
    }

    /// Step 6: the hand-off options. In colocated mode the four that shape the KV link must be at
    /// their defaults; `per-pair` must not give more than [`MAX_LINKS`] links.
    fn resolve_handoff(&self) -> Result<HandoffOptions, Error> {
        let handoff = self.handoff_options();
        if self.mode == Mode::Colocated {
            let d = HandoffOptions::default();
            for (flag, given, default) in [
                (SEND_FLAG, handoff.send.as_str(), d.send.as_str()),
                (
                    LinkSharing::FLAG,
                    handoff.link_sharing.as_str(),
                    d.link_sharing.as_str(),
                ),
                (
                    LinkTopology::FLAG,
                    handoff.link_topology.as_str(),
                    d.link_topology.as_str(),
                ),
                (
                    ReserveKvOn::FLAG,
                    handoff.reserve_kv_on.as_str(),
                    d.reserve_kv_on.as_str(),
                ),
            ] {
                if given != default {
                    return Err(Error::invalid(
                        flag,
                        format!(
                            "'{given}' shapes the prefill-to-decode KV hand-off: disaggregated \
                             mode only (colocated mode has no KV link)"
                        ),
                    ));
                }
            }
        }
        let pairs = self.prefill as u64 * self.decode as u64;
        if handoff.link_topology == LinkTopology::PerPair && pairs > MAX_LINKS as u64 {
            return Err(Error::invalid(
                "--link-topology",
                format!(
                    "per-pair gives {} x {} = {pairs} links; at most {MAX_LINKS}",
                    self.prefill, self.decode,
                ),
            ));
        }
        Ok(handoff)
    }

    /// Whether the levers switch the scheduled instances on (levers-scheduling.md §2.1): a batch
    /// policy other than prefill-priority, a token budget (any value, 8192 included), a KV policy
    /// other than oracle, prefix caching, or speculative decoding. Block size, `max_seq_len`,
    /// preemption mode, host link and the speculative parameters alone are inert.
    pub fn levers_on(&self) -> bool {
        self.batch_policy != BatchPolicy::PrefillPriority
            || self.max_num_batched_tokens.is_some()
            || self.kv_policy != KvPolicy::Oracle
            || self.prefix_caching
            || self.speculative.is_some()
    }

    /// Step 7: the scheduling levers (levers-scheduling.md §2.1-§2.3): `None` unless they switch
    /// the scheduled instances on ([`Scenario::levers_on`]). The host link must be a catalogue
    /// link whether or not it is used (the reference's CLI choices). With the levers on, in this
    /// order: a model that is not an attention transformer (FFT-mixing), `--fast` in
    /// disaggregated mode, speculative decoding with hand-off compression
    /// (`compressed`: a KV transit stage was resolved), prefix caching with swap preemption, and
    /// the hand-off options this project adds beyond the reference (not modelled with the levers
    /// yet). The ranges of block size, budget, gamma and alpha are checked with every other range
    /// (step 0). The draft of `--speculative` is kept as a name here: the cost side resolves it
    /// (`disagg_model::Draft::new`: unknown draft, vocabulary, capacity) where the engine is built.
    fn resolve_levers(
        &self,
        cat: &Catalogue,
        model: &ModelSpec,
        compressed: bool,
    ) -> Result<Option<Levers>, Error> {
        let host_link = cat
            .link(&self.host_link)
            .map_err(|e| rename(e, HOST_LINK_FLAG))?
            .clone();
        self.check_prefix_handoff()?;
        if !self.levers_on() {
            return Ok(None);
        }
        // (A CED model with the levers is refused by `check_ced`, with its own message.)
        if !model.is_attention() {
            return Err(Error::invalid(
                "--model",
                format!(
                    "{}: the scheduling levers (batch policy, token budget, KV policy, prefix \
                     caching, speculative decoding) are modelled for attention models without \
                     CED only",
                    model.key
                ),
            ));
        }
        let disagg = self.mode == Mode::Disagg;
        if disagg && self.fast {
            return Err(Error::invalid(
                "--fast",
                "the plain decode instance's fast path: not with the scheduling levers",
            ));
        }
        if disagg && compressed && self.speculative.is_some() {
            return Err(Error::invalid(
                "--speculative",
                "speculative decoding with KV hand-off compression (--kv-compress) is not modelled",
            ));
        }
        if self.prefix_caching
            && self.kv_policy == KvPolicy::Paged
            && self.preemption == Preemption::Swap
        {
            return Err(Error::invalid(
                "--prefix-caching",
                "prefix caching with swap preemption is not modelled: use --preemption recompute",
            ));
        }
        if disagg {
            let d = HandoffOptions::default();
            for (flag, given, default) in [
                (
                    LinkSharing::FLAG,
                    self.link_sharing.as_str(),
                    d.link_sharing.as_str(),
                ),
                (
                    LinkTopology::FLAG,
                    self.link_topology.as_str(),
                    d.link_topology.as_str(),
                ),
            ] {
                if given != default {
                    return Err(Error::invalid(
                        flag,
                        format!(
                            "'{given}' is not modelled with the scheduling levers yet (use \
                             {flag} {default}, or leave the levers at their defaults)"
                        ),
                    ));
                }
            }
        }
        Ok(Some(Levers {
            batch_policy: self.batch_policy,
            token_budget: self.max_num_batched_tokens.unwrap_or(MAX_PREFILL_TOKENS),
            budget_given: self.max_num_batched_tokens.is_some(),
            kv_policy: self.kv_policy,
            kv_block_size: self.kv_block_size,
            max_seq_len: self.max_seq_len,
            kv_watermark: KV_WATERMARK,
            preemption: self.preemption,
            swap_in: self.swap_in,
            host_link,
            prefix_caching: self.prefix_caching,
            speculative: self.speculative.as_ref().map(|draft| Speculative {
                draft: draft.clone(),
                gamma: self.gamma,
                alpha: self.alpha,
                seed: self.spec_seed,
            }),
            prefix_handoff: self.prefix_handoff,
            decode_router: self.decode_router,
        }))
    }

    /// Step 7b: what a CED model (levers-cost.md §8) runs with. The replay on decode needs
    /// disaggregated mode and the plain decode loop (not `--fast`), and keeps the reference's
    /// hand-off: whole caches after the encoder step (`--send whole`), the first token from the
    /// decode instance's replay step (`--first-token prefill`, the convention that counts it). CED
    /// is not modelled with the scheduling levers (speculative decoding included); formats other
    /// than BF16 are refused before, by the lever checks, and parallel layouts after, by each
    /// pool's layout check (levers-cost.md §2.3, §5.3).
    fn check_ced(&self, model: &ModelSpec, levers: bool) -> Result<(), Error> {
        let Some(c) = model.ced else {
            return Ok(());
        };
        if levers {
            return Err(Error::invalid(
                "--ced-encoder-layers",
                format!(
                    "{} is a causal encoder-decoder (CED): not modelled with the scheduling \
                     levers or speculative decoding",
                    model.name
                ),
            ));
        }
        if c.replay_on != disagg_model::ReplayOn::Decode {
            return Ok(());
        }
        const ON: &str = "--ced-replay-on";
        if self.mode != Mode::Disagg {
            return Err(Error::invalid(
                ON,
                "decode replays on the decode instance after the hand-off: needs --mode disagg",
            ));
        }
        if self.fast {
            return Err(Error::invalid(
                ON,
                "decode needs the plain decode loop: not with --fast",
            ));
        }
        if self.send != SendMode::Whole {
            return Err(Error::invalid(
                ON,
                "decode hands off after the encoder step: not modelled with --send layerwise",
            ));
        }
        if self.first_token != FirstToken::Prefill {
            return Err(Error::invalid(
                ON,
                "decode emits the first token at the end of the decode instance's replay step \
                 already: not with --first-token decode",
            ));
        }
        Ok(())
    }

    /// The prefix-aware hand-off's options (beyond the reference) need what they build on:
    /// `--prefix-handoff` needs `--prefix-caching` in disaggregated mode, `--decode-router
    /// prefix` needs `--prefix-handoff`, and `--prefix-from-trace` needs `--prefix-caching`.
    fn check_prefix_handoff(&self) -> Result<(), Error> {
        if self.prefix_handoff && (!self.prefix_caching || self.mode != Mode::Disagg) {
            return Err(Error::invalid(
                "--prefix-handoff",
                "needs --prefix-caching and --mode disagg (decode instances cache prefixes)",
            ));
        }
        if self.prefix_handoff
            && (self.send != SendMode::Whole || self.reserve_kv_on != ReserveKvOn::Arrival)
        {
            return Err(Error::invalid(
                "--prefix-handoff",
                "not modelled with --send layerwise or --reserve-kv-on transfer (use --send \
                 whole --reserve-kv-on arrival)",
            ));
        }
        if self.decode_router != DecodeRouter::LeastLoaded && !self.prefix_handoff {
            return Err(Error::invalid(
                "--decode-router",
                format!("'{}' needs --prefix-handoff", self.decode_router.as_str()),
            ));
        }
        if self.prefix_from_trace && !self.prefix_caching {
            return Err(Error::invalid(
                "--prefix-from-trace",
                "needs --prefix-caching (the chains feed the prefix cache)",
            ));
        }
        Ok(())
    }

    /// Step 8: the pools with their cost models and KV capacities: `[prefill, decode]` (each
    /// with its own device, device count and power cap where given) or `[colocated]`.
    fn pools(
        &self,
        model: &ModelSpec,
        devices: &PoolDevices,
        cat: &Catalogue,
    ) -> Result<Vec<Pool>, Error> {
        let pool = |role, instances: u32, dev: &Device, n, cap, cap_flag| {
            let n = match self.layout_for(role).filter(|_| self.devices_from_layout) {
                Some(l) => l.tp.saturating_mul(l.pp),
                None => n,
            };
            self.pool(model, role, instances as usize, dev, n, cap, cap_flag, cat)
        };
        Ok(match self.mode {
            Mode::Disagg => {
                let cap = |own: Option<f64>, flag| match own {
                    Some(c) => (Some(c), flag),
                    None => (self.power_cap, POWER_CAP_FLAG),
                };
                let (pcap, pflag) = cap(self.prefill_power_cap, "--prefill-power-cap");
                let (dcap, dflag) = cap(self.decode_power_cap, "--decode-power-cap");
                let p = pool(
                    Role::Prefill,
                    self.prefill,
                    devices.prefill(),
                    self.prefill_devices(),
                    pcap,
                    pflag,
                )?;
                let d = pool(
                    Role::Decode,
                    self.decode,
                    devices.decode(),
                    self.decode_devices(),
                    dcap,
                    dflag,
                )?;
                vec![p, d]
            }
            Mode::Colocated => vec![pool(
                Role::Colocated,
                self.prefill + self.decode,
                &devices.all,
                self.devices_per_instance,
                self.power_cap,
                POWER_CAP_FLAG,
            )?],
        })
    }

    /// One pool: `instances` x `n` devices `dev` under `cap` (errors about the cap name
    /// `cap_flag`; a model that leaves no room for KV cache names `--model`).
    #[allow(clippy::too_many_arguments)]
    fn pool(
        &self,
        model: &ModelSpec,
        role: Role,
        instances: usize,
        dev: &Device,
        n: u32,
        cap: Option<f64>,
        cap_flag: &'static str,
        cat: &Catalogue,
    ) -> Result<Pool, Error> {
        let formats = self.formats();
        let opts = CostOptions {
            power_cap_w: cap,
            dvfs: self.dvfs,
            compute_speedup: formats.compute_speedup(dev, role.as_str())?,
            prefill_only: role == Role::Prefill,
            ..CostOptions::default()
        };
        let mut cost = CostModel::new(model, dev, n, opts).map_err(|e| match e {
            Error::Invalid { what, why } if what.contains("power cap") => Error::Invalid {
                what: cap_flag.to_string(),
                why,
            },
            other => other,
        })?;
        if let Some(layout) = self.layout_for(role) {
            layout.check(model, n, role.as_str(), cat)?;
            cost = cost.with_layout(layout, cat)?;
        }
        let kv = cost.kv_capacity_tokens().map_err(|e| match e {
            Error::Invalid { why, .. } => Error::Invalid {
                what: "--model".into(),
                why: format!("{why} ({} pool)", role.as_str()),
            },
            other => other,
        })?;
        if kv == 0 {
            return Err(Error::invalid(
                "--model",
                format!(
                    "{} leaves no room for KV cache on {n}x {} ({} pool)",
                    model.name,
                    dev.name,
                    role.as_str()
                ),
            ));
        }
        Ok(Pool {
            role,
            instances,
            device: dev.clone(),
            devices: n,
            power_cap_w: cap,
            cost,
            kv_capacity_tokens: kv,
            draft: None,
        })
    }

    /// Devices per prefill instance.
    fn prefill_devices(&self) -> u32 {
        self.prefill_devices_per_instance
            .unwrap_or(self.devices_per_instance)
    }

    /// Devices per decode instance.
    fn decode_devices(&self) -> u32 {
        self.decode_devices_per_instance
            .unwrap_or(self.devices_per_instance)
    }

    /// Whether a per-pool device or device count was given.
    fn is_heterogeneous(&self) -> bool {
        self.prefill_device.is_some()
            || self.decode_device.is_some()
            || self.prefill_devices_per_instance.is_some()
            || self.decode_devices_per_instance.is_some()
    }

    /// `"<n>x <device name>"` of the prefill and decode pools as configured.
    fn pool_labels(&self, devices: &PoolDevices) -> [String; 2] {
        [
            format!("{}x {}", self.prefill_devices(), devices.prefill().name),
            format!("{}x {}", self.decode_devices(), devices.decode().name),
        ]
    }

    /// The custom model shape the scenario's keys describe on top of `model`.
    pub fn custom_model(&self) -> CustomModel {
        CustomModel {
            base: Some(self.model.clone()),
            layers: self.layers,
            d_model: self.d_model,
            heads: self.heads,
            kv_heads: self.kv_heads,
            head_dim: self.head_dim,
            d_ff: self.d_ff,
            vocab: self.vocab,
            weight_bytes: self.weight_bytes,
            kv_bytes: self.kv_bytes,
            ..Default::default()
        }
    }

    /// The custom link the scenario's keys describe on top of `link`.
    pub fn custom_link(&self) -> CustomLink {
        CustomLink {
            base: Some(self.link.clone()),
            bandwidth_gb_s: self.link_bandwidth_gb_s,
            latency_us: self.link_latency_us,
            pj_per_bit: self.link_pj_per_bit,
            ..Default::default()
        }
    }

    /// The custom device the scenario's `device_*` keys describe on top of device `key` (every
    /// pool's device gets the same overrides).
    pub fn custom_device(&self, key: &str) -> CustomDevice {
        CustomDevice {
            base: Some(key.to_string()),
            peak_tflops: self.device_peak_tflops,
            mem_bw_tb_s: self.device_mem_bw_tb_s,
            mem_gb: self.device_mem_gb,
            tdp_w: self.device_tdp_w,
            idle_w: self.device_idle_w,
            ..Default::default()
        }
    }

    /// The five hand-off options (echoed in the summary as `options`).
    pub fn handoff_options(&self) -> HandoffOptions {
        HandoffOptions {
            send: self.send,
            link_sharing: self.link_sharing,
            link_topology: self.link_topology,
            reserve_kv_on: self.reserve_kv_on,
            first_token: self.first_token,
        }
    }
}

/// `--host-link`, as an unknown link's error names it.
const HOST_LINK_FLAG: &str = "--host-link";
/// `--scale-up-link`, as an unknown link's error names it.
const SCALE_UP_LINK_FLAG: &str = "--scale-up-link";
/// Token budget of one prefill step, and of a scheduled step without `--max-num-batched-tokens`.
pub const MAX_PREFILL_TOKENS: u64 = 8192;
/// Fraction of a paged instance's blocks kept free when admitting (not a flag in the reference).
pub const KV_WATERMARK: f64 = 0.01;
/// `--send`, as colocated-mode errors name it.
const SEND_FLAG: &str = "--send";
/// The global power cap's flag.
const POWER_CAP_FLAG: &str = "--power-cap";

/// The devices of a scenario's pools, resolved.
struct PoolDevices {
    /// `device`: every pool's, unless overridden.
    all: Device,
    /// `prefill_device`, if given.
    prefill: Option<Device>,
    /// `decode_device`, if given.
    decode: Option<Device>,
}

impl PoolDevices {
    fn prefill(&self) -> &Device {
        self.prefill.as_ref().unwrap_or(&self.all)
    }
    fn decode(&self) -> &Device {
        self.decode.as_ref().unwrap_or(&self.all)
    }
}

/// Speculative decoding: each pool's draft (levers-scheduling.md §10.1) — its cost model on the
/// pool's devices, its KV bytes per token — and the pool's KV capacity with the draft resident.
/// Errors name the draft (unknown, another vocabulary) or the pool it does not fit.
fn attach_draft(
    pools: &mut [Pool],
    model: &ModelSpec,
    draft: &str,
    cat: &Catalogue,
) -> Result<(), Error> {
    let d = disagg_model::Draft::new(model, draft, cat)?;
    for pool in pools.iter_mut() {
        let cm = d.cost_model(&pool.device, pool.devices, &pool.cost.opts)?;
        let cap = pool.cost.kv_capacity_tokens_with_draft(&d).map_err(|e| {
            Error::invalid("--speculative", format!("{} pool: {e}", pool.role.as_str()))
        })?;
        pool.kv_capacity_tokens = cap;
        pool.draft = Some((cm, d.kv_bytes_per_token()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every name is checked whether or not it is used: an unknown scale-up link is an error
    /// without a layout too (only a pool's layout checked it), naming the flag and the valid
    /// links; with a layout, the layout's check words it as the reference does.
    #[test]
    fn an_unknown_scale_up_link_is_refused_with_or_without_a_layout() {
        let cat = Catalogue::builtin();
        for bad in ["bogus", "", "../../etc/passwd"] {
            for mode in [Mode::Disagg, Mode::Colocated] {
                let s = Scenario {
                    scale_up_link: Some(bad.into()),
                    mode,
                    ..Scenario::default()
                };
                let e = s.build(&cat).unwrap_err().to_string();
                assert!(
                    e.starts_with(&format!("unknown --scale-up-link '{bad}'; valid: "))
                        && e.contains("nvlink4"),
                    "{bad:?} {mode:?}: {e}"
                );
            }
            // Colocated mode has no pool of its own layout: a prefill layout checks nothing.
            let s = Scenario {
                scale_up_link: Some(bad.into()),
                mode: Mode::Colocated,
                prefill_tp: Some(2),
                ..Scenario::default()
            };
            let e = s.build(&cat).unwrap_err().to_string();
            assert!(e.contains(&format!("'{bad}'")), "{e}");
            for tp in [1, 2] {
                let s = Scenario {
                    scale_up_link: Some(bad.into()),
                    tp: Some(tp),
                    devices_per_instance: tp,
                    ..Scenario::default()
                };
                let e = s.build(&cat).unwrap_err().to_string();
                assert_eq!(e, format!("prefill pool: unknown scale-up link '{bad}'"));
            }
        }
        let s = Scenario {
            scale_up_link: Some("nvlink5".into()),
            requests: 5,
            ..Scenario::default()
        };
        assert!(s.build(&cat).is_ok());
    }
}
