//! The flags of `disagg handoff` (shared by the one-prompt calculator and the rank-aware plan).

use clap::Args;

use crate::scenario_flags::HardwareFlags;
use crate::UsageError;

#[derive(Args, Debug)]
pub struct HandoffArgs {
    /// Model preset (see `disagg list models`), or the base of a custom shape.
    #[arg(long, default_value = "llama3-8b")]
    pub(crate) model: String,
    /// Prompt tokens whose KV cache is handed off.
    #[arg(
        long,
        default_value_t = 2048,
        value_name = "N",
        allow_negative_numbers = true
    )]
    pub(crate) prompt_tokens: u64,
    /// KV link (see `disagg list links`).
    #[arg(long, default_value = "eth-25g")]
    pub(crate) link: String,
    /// Concurrent transfers on the link (overrides the preset's channels).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub(crate) link_channels: Option<u64>,
    /// KV compression: none, fp8, fp4-block, freq-keep-k, int8, fp4-g16, kivi2 (see `disagg list
    /// compression`; bytes and compute only, accuracy is out of scope).
    #[arg(long, default_value = "none")]
    pub(crate) compression: String,
    /// Where to compress: link (a stage in the link, at line rate; the reference's `transit`) or gpu
    /// (on the prefill GPU before sending; the reference's `endpoint`).
    #[arg(long, default_value = "link")]
    pub(crate) compress_at: String,
    /// Fraction of coefficients kept by freq-keep-k (its ratio becomes 1/F).
    #[arg(long, value_name = "F", allow_negative_numbers = true)]
    pub(crate) kv_keep: Option<f64>,
    /// whole (after the prefill, the reference) or layerwise (each layer as soon as it is done).
    #[arg(long, default_value = "whole")]
    pub(crate) send: String,
    /// Device of the prefill instance (see `disagg list devices`).
    #[arg(long, default_value = "h100")]
    pub(crate) prefill_device: String,
    /// Devices per prefill instance (tensor parallel, treated as one bigger device).
    #[arg(
        long,
        default_value_t = 1,
        value_name = "N",
        allow_negative_numbers = true
    )]
    pub(crate) devices_per_instance: u64,
    /// How concurrent hand-offs share the link: fifo (channels, first come first served) or fair
    /// (processor sharing).
    #[arg(long, default_value = "fifo", value_name = "fifo|fair")]
    pub(crate) link_sharing: String,
    /// Hand-offs of this size leaving at once (a prefill batch): times are for the last of them.
    #[arg(
        long,
        default_value_t = 1,
        value_name = "N",
        allow_negative_numbers = true
    )]
    pub(crate) concurrent: u64,
    /// One row per link in the catalogue (the chapter's link table).
    #[arg(long, conflicts_with_all = ["link", "link_bandwidth_gb_s", "link_latency_us", "link_pj_per_bit"])]
    pub(crate) all_links: bool,
    /// KV cache format: bf16, fp8, int8, int4 or fp4 (the hand-off's bytes per value) [bf16].
    #[arg(long, value_name = "FORMAT")]
    pub(crate) kv_format: Option<String>,
    /// Weight format: bf16, fp8, int8, int4 or fp4 (the prefill step's weight bytes) [bf16].
    #[arg(long, value_name = "FORMAT")]
    pub(crate) weight_format: Option<String>,
    /// Matmul format: bf16 (weight-only quantisation) or the weight format (W8A8, W4A4: the
    /// prefill device's native units) [bf16].
    #[arg(long, value_name = "FORMAT")]
    pub(crate) compute_format: Option<String>,
    /// Speculative decoding's draft, mtp or a model key: the draft's KV of the prompt crosses
    /// too, and its prefill pass follows the target's [off].
    #[arg(long, value_name = "DRAFT")]
    pub(crate) speculative: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub(crate) json: bool,
    /// Model the hand-off rank by rank: each prefill rank sends its KV shard over its own NIC to
    /// the decode ranks that own those heads and layers (adds a per-rank table, or `ranks` in the
    /// JSON).
    #[arg(long, conflicts_with = "all_links")]
    pub(crate) handoff_ranks: bool,
    /// Tensor-parallel ranks of the prefill instance (with --handoff-ranks; default:
    /// --devices-per-instance / --prefill-pp).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub(crate) prefill_tp: Option<u64>,
    /// Pipeline stages of the prefill instance (with --handoff-ranks; default 1).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub(crate) prefill_pp: Option<u64>,
    /// Tensor-parallel ranks of the decode instance (with --handoff-ranks; default:
    /// --devices-per-instance / --decode-pp).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub(crate) decode_tp: Option<u64>,
    /// Pipeline stages of the decode instance (with --handoff-ranks; default 1).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub(crate) decode_pp: Option<u64>,
    /// Micro-batches of the prefill pipeline (with --handoff-ranks; default: --prefill-pp).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub(crate) prefill_microbatches: Option<u64>,
    /// NICs per instance, each with the link's bandwidth and latency; rank i uses NIC i % N (with
    /// --handoff-ranks or --rank-table; default: one per GPU).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub(crate) nics_per_instance: Option<u64>,
    /// An on-GPU gather pass on each decode rank after its KV arrives: off (default) or hbm (read
    /// and write it once at the decode device's effective HBM bandwidth).
    #[arg(long, value_name = "off|hbm")]
    pub(crate) kv_relayout_cost: Option<String>,
    /// Device of the decode instance, for its HBM and scale-up link (with --handoff-ranks or
    /// --rank-table; default: --prefill-device).
    #[arg(long)]
    pub(crate) decode_device: Option<String>,
    /// The rank-aware table: one transfer against TP8->TP8, TP8->TP4 and TP4->TP8 with a NIC per
    /// GPU (the README's table).
    #[arg(long, conflicts_with_all = ["all_links", "json", "handoff_ranks"])]
    pub(crate) rank_table: bool,
    /// The chapter's link table for the models served today (every model described by layer
    /// kinds: hand-off bytes and times over 25 GbE, 100 GbE and InfiniBand NDR at 2,048 and
    /// 32,768 prompt tokens; the README's table), as Markdown.
    #[arg(long, conflicts_with_all = ["all_links", "json", "handoff_ranks", "rank_table"])]
    pub(crate) models_table: bool,
    #[command(flatten)]
    pub(crate) hardware: HardwareFlags,
}

/// Respells an option named by its snake_case key as the flag (`send` -> `--send`).
pub fn flag_error(e: disagg_model::Error) -> UsageError {
    match e {
        disagg_model::Error::Invalid { what, why }
            if what.chars().all(|c| c.is_ascii_lowercase() || c == '_') =>
        {
            UsageError(format!("--{}: {why}", what.replace('_', "-")))
        }
        other => UsageError(other.to_string()),
    }
}
