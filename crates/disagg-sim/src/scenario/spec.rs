//! [`Scenario`]: one simulation as the reference CLI's flags, a serde struct, and its defaults.

use disagg_model::{CompressAt, Detection, LmHead, QuantFormat, SendMode};
use disagg_trace::TraceFormat;
use serde::{Deserialize, Serialize};

use crate::levers::{BatchPolicy, DecodeRouter, KvPolicy, Preemption, SwapIn};
use crate::prefix_cache::PrefixEviction;
use crate::pyrand::LengthDist;

use super::{FirstToken, LinkSharing, LinkTopology, Mode, ReserveKvOn, DEFAULT_MAX_DECODE_BATCH};

/// One simulation, as the reference CLI describes it. Field names are the CLI flags with `-` → `_`
/// (but `trace_start`, `trace_duration`, `sort_trace`: `--start`, `--duration`, `--sort`); every
/// default is the reference default (`docs/serving-model.md#outputs`). Each field has one row in
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
    /// `--ced-encoder-layers`: E of a causal encoder-decoder (`docs/levers.md#ced`; `None`: the
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
    /// `chunked` (`docs/levers.md#scheduled-instances`; anything else switches the scheduled instances on).
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
    /// `--prefix-eviction` (beyond the reference): the prefix cache's eviction order, `lru` (the
    /// reference), `lfu` or `fifo`. Left out of every echo at `lru`.
    #[serde(
        skip_serializing_if = "is_default",
        deserialize_with = "crate::options::by_name_or_default"
    )]
    pub prefix_eviction: PrefixEviction,
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
    /// `--tp`: tensor-parallel degree of every pool's instances (`docs/cost-model.md#parallelism`; 0 or
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
    /// `--weight-format`: bf16, fp8, int8, int4 or fp4 (`docs/cost-model.md#quantisation`).
    #[serde(deserialize_with = "crate::options::by_name")]
    pub weight_format: QuantFormat,
    /// `--kv-format`: the KV cache's (and so the hand-off's) format.
    #[serde(deserialize_with = "crate::options::kv_format_by_name")]
    pub kv_format: QuantFormat,
    /// `--compute-format`: bf16 (weight-only) or the weight format (W8A8, W4A4).
    #[serde(deserialize_with = "crate::options::compute_format_by_name")]
    pub compute_format: QuantFormat,
    /// `--fft-efficiency`: replaces `fft_efficiency` on every device given (`docs/levers.md#fft-mixing`;
    /// `None`: the devices' own).
    pub fft_efficiency: Option<f64>,
    /// `--ft-samples-per-s`: the transform engine's converter rate (`docs/levers.md#fft-mixing`).
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
    /// `--ppa`: the summary's area, silicon cost and perf per W / mm² / $ (`docs/levers.md#ppa`).
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
            prefix_eviction: PrefixEviction::Lru,
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

/// Whether `v` is its type's default (serde: left out of the JSON).
fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}
