//! The KV hand-off: what one prompt's cache costs to move (`docs/cost-model.md#handoff`, `docs/cost-model.md#seed-calculator`), and the
//! chapter's layer-wise closed form. The link model of the simulator asks [`transfer`] for every
//! hand-off; the calculator (`disagg handoff`) asks [`handoff`].

use serde::Serialize;

use crate::catalogue::{CompressAt, KvTransit, Link, ModelSpec};
use crate::cost::CostModel;
use crate::link::{LayerPlan, SharedCase, XferSpec};

crate::named_enum! {
    /// How the KV cache leaves the prefill instance.
    pub enum SendMode: "send mode" {
        /// After the whole prefill step (the reference).
        #[default]
        Whole = "whole",
        /// Layer by layer, each layer's slice as soon as that layer's prefill ends.
        Layerwise = "layerwise" (also "layer-wise", "layer"),
    }
}

/// One transfer over one channel (`docs/cost-model.md#handoff`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Transfer {
    /// Time the transfer holds a channel, seconds: `fixed_s + stream_s`.
    pub time_s: f64,
    /// The fixed part: link latency (plus the in-link stage's latency), seconds.
    pub fixed_s: f64,
    /// The part that scales with bytes: wire time, or the in-link stage's compute time when that is
    /// longer, seconds.
    pub stream_s: f64,
    /// Uncompressed KV bytes.
    pub kv_bytes: f64,
    /// Bytes on the wire.
    pub wire_bytes: f64,
    /// Link energy, joules (on the wire bytes).
    pub link_j: f64,
    /// In-link compression stage energy, joules (on the uncompressed bits).
    pub transit_j: f64,
    /// The in-link stage, not the wire, set the time.
    pub transit_bound: bool,
}

impl XferSpec {
    /// The link's view of transfer `x` of request `rid` (`plan`: layer-wise slices, if any).
    #[inline]
    pub fn of(rid: u32, x: &Transfer, plan: Option<LayerPlan>) -> Self {
        XferSpec {
            rid,
            fixed_s: x.fixed_s,
            stream_s: x.stream_s,
            time_s: x.time_s,
            wire_bytes: x.wire_bytes,
            plan,
        }
    }
}

/// The transfer of a `prompt_tokens` prompt's KV over `link`, with optional compression.
pub fn transfer(
    model: &ModelSpec,
    link: &Link,
    transit: Option<&KvTransit>,
    prompt_tokens: u64,
) -> Transfer {
    let parts = model.handoff_parts(prompt_tokens);
    if parts.state_bytes == 0.0 {
        return transfer_bytes(model.kv_bytes, link, transit, prompt_tokens, parts.kv_bytes);
    }
    transfer_parts(
        model.kv_bytes,
        link,
        transit,
        prompt_tokens,
        parts.kv_bytes,
        parts.state_bytes,
    )
}

/// [`transfer`] for a precomputed `s = handoff_bytes(prompt_tokens)`.
#[inline]
pub fn transfer_bytes(
    kv_bytes: f64,
    link: &Link,
    transit: Option<&KvTransit>,
    prompt_tokens: u64,
    s: f64,
) -> Transfer {
    transfer_parts(kv_bytes, link, transit, prompt_tokens, s, 0.0)
}

/// The transfer of `s` bytes of attention KV and `state` bytes of linear-attention state: a
/// compression format shrinks (and its stage processes) the KV only; the state crosses as it is
/// (`wire = s / ratio + state`). With `state = 0.0` this is the chapter's transfer bit for bit.
#[inline]
fn transfer_parts(
    kv_bytes: f64,
    link: &Link,
    transit: Option<&KvTransit>,
    prompt_tokens: u64,
    s: f64,
    state: f64,
) -> Transfer {
    let lat = link.latency_s;
    let with_state = |wire: f64| if state == 0.0 { wire } else { wire + state };
    match transit {
        None
        | Some(KvTransit {
            at: CompressAt::Endpoint,
            ..
        }) => {
            let wire = with_state(transit.map_or(s, |tr| s / tr.compression.ratio));
            Transfer {
                time_s: link.transfer_time(wire),
                fixed_s: lat,
                stream_s: link.wire_time(wire),
                kv_bytes: with_state(s),
                wire_bytes: wire,
                link_j: link.energy_j(wire),
                transit_j: 0.0,
                transit_bound: false,
            }
        }
        Some(tr) => {
            let wire = with_state(s / tr.compression.ratio);
            let t_wire = link.wire_time(wire);
            let t_ops =
                tr.ops(s, prompt_tokens, kv_bytes, false) / (tr.ops_per_byte * link.bandwidth_bps);
            let fixed = lat + tr.latency_s;
            let stream = t_wire.max(t_ops);
            Transfer {
                time_s: fixed + stream,
                fixed_s: fixed,
                stream_s: stream,
                kv_bytes: with_state(s),
                wire_bytes: wire,
                link_j: link.energy_j(wire),
                transit_j: ((s * 8.0) * tr.pj_per_bit) * 1e-12,
                transit_bound: t_ops > t_wire,
            }
        }
    }
}

/// Time left after a prefill of `prefill_s` when the KV leaves layer by layer over an idle link:
/// `fixed + max(stream / L, stream - (prefill * (L - 1)) / L)` (the chapter's closed form, with the
/// reference's operation order).
pub fn layerwise_exposed(fixed_s: f64, stream_s: f64, prefill_s: f64, layers: u64) -> f64 {
    fixed_s + layerwise_tail(stream_s, prefill_s, layers, 0.0)
}

pub use crate::link::layerwise_tail;

/// [`layerwise_tail`] for slices of different sizes (a model described by layer kinds: sliding
/// and full layers, linear states): layer `j` of `L` is ready `prefill * j / L` after the
/// prefill's start, the slices leave in layer order from `wait_s` after the first was ready,
/// each taking `stream * frac_j` (`fracs` sum to 1). The last byte lands at
/// `max_j (max(r_j, r_1 + wait) + stream * sum_{i >= j} frac_i)`, measured from the prefill's end.
pub fn layerwise_tail_slices(stream_s: f64, prefill_s: f64, fracs: &[f64], wait_s: f64) -> f64 {
    let l = fracs.len() as f64;
    let ready = |j: usize| (prefill_s * j as f64) / l - prefill_s;
    let grant = ready(1) + wait_s;
    let mut rest = 0.0;
    let mut last = f64::NEG_INFINITY;
    for j in (1..=fracs.len()).rev() {
        rest += stream_s * fracs[j - 1];
        last = last.max(ready(j).max(grant) + rest);
    }
    last
}

/// The tail of a layer-wise hand-off of `model`'s `prompt_tokens` prompt: [`layerwise_tail`]
/// for layers of one size, [`layerwise_tail_slices`] when its layers' slices differ.
pub fn model_layerwise_tail(
    model: &ModelSpec,
    prompt_tokens: u64,
    stream_s: f64,
    prefill_s: f64,
    wait_s: f64,
) -> f64 {
    match model.layer_fractions(prompt_tokens) {
        None => layerwise_tail(stream_s, prefill_s, model.n_layers, wait_s),
        Some(f) => layerwise_tail_slices(stream_s, prefill_s, &f, wait_s),
    }
}

/// The calculator's answer for one prompt (the chapter's interactive).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Handoff {
    /// KV bytes per prompt token.
    pub kv_bytes_per_token: f64,
    /// Uncompressed KV bytes of the prompt.
    pub kv_bytes: f64,
    /// Bytes on the wire.
    pub wire_bytes: f64,
    /// Compression ratio (BF16 bytes per wire byte).
    pub compression_ratio: f64,
    /// Transfer time over an idle channel, seconds.
    pub transfer_s: f64,
    /// The prefill step of this prompt alone (overhead and any GPU compression pass included),
    /// seconds.
    pub prefill_s: f64,
    /// Time the hand-off adds after the prefill ends, seconds.
    pub exposed_s: f64,
    /// Hand-offs per second that fill one channel: `bandwidth / wire_bytes` (the chapter's λ_link;
    /// latency and channels ignored).
    pub link_saturation_rps: f64,
    /// Hand-offs per second the whole link can carry: `channels / transfer_s` (latency, in-link
    /// compute and channels included).
    pub link_capacity_rps: f64,
    /// Link energy per hand-off, joules.
    pub link_energy_j: f64,
    /// In-link compression stage energy per hand-off, joules.
    pub transit_energy_j: f64,
    /// The in-link compression stage, not the wire, limits the transfer.
    pub transit_bound: bool,
}

/// The hand-off of one `prompt_tokens` prompt prefilled on `prefill` and sent over `link`.
pub fn handoff(
    prefill: &CostModel,
    link: &Link,
    transit: Option<&KvTransit>,
    send: SendMode,
    prompt_tokens: u64,
) -> Handoff {
    handoff_draft(prefill, None, link, transit, send, prompt_tokens)
}

/// The transfer of a prompt's KV, the speculative draft's too when there is one (`docs/levers.md`
/// `docs/levers.md#speculative`): `S = handoff_bytes(P) + (fl(P) * draft.kv_bytes_per_token)`, the simulator's bytes.
fn transfer_with_draft(
    prefill: &CostModel,
    draft: Option<&CostModel>,
    link: &Link,
    transit: Option<&KvTransit>,
    prompt_tokens: u64,
) -> Transfer {
    let model = &prefill.model;
    match draft {
        None => transfer(model, link, transit, prompt_tokens),
        Some(d) => {
            let s = model.handoff_bytes(prompt_tokens)
                + prompt_tokens as f64 * d.model.kv_bytes_per_token();
            transfer_bytes(model.kv_bytes, link, transit, prompt_tokens, s)
        }
    }
}

/// [`handoff`] with a speculative draft (`draft`: its cost model on the prefill device): the
/// draft's KV of the prompt crosses too, and the prefill step is the target's then the draft's
/// prefill pass (as in the simulator's speculative step). `None` is [`handoff`].
pub fn handoff_draft(
    prefill: &CostModel,
    draft: Option<&CostModel>,
    link: &Link,
    transit: Option<&KvTransit>,
    send: SendMode,
    prompt_tokens: u64,
) -> Handoff {
    let model = &prefill.model;
    let x = transfer_with_draft(prefill, draft, link, transit, prompt_tokens);
    let mut step = prefill.prefill([prompt_tokens]);
    if let Some(tr) = transit.filter(|t| t.at == CompressAt::Endpoint) {
        step = prefill.endpoint_pass(step, tr, [prompt_tokens]);
    }
    let mut prefill_s = step.time_s;
    let mut kv_bytes_per_token = model.kv_bytes_per_token();
    if let Some(d) = draft {
        prefill_s += d.prefill([prompt_tokens]).time_s;
        kv_bytes_per_token += d.model.kv_bytes_per_token();
    }
    let exposed_s = match send {
        SendMode::Whole => x.time_s,
        SendMode::Layerwise => {
            x.fixed_s + model_layerwise_tail(model, prompt_tokens, x.stream_s, prefill_s, 0.0)
        }
    };
    Handoff {
        kv_bytes_per_token,
        kv_bytes: x.kv_bytes,
        wire_bytes: x.wire_bytes,
        compression_ratio: transit.map_or(1.0, |t| t.compression.ratio),
        transfer_s: x.time_s,
        prefill_s,
        exposed_s,
        link_saturation_rps: link.bandwidth_bps / x.wire_bytes,
        link_capacity_rps: link.channels as f64 / x.time_s,
        link_energy_j: x.link_j,
        transit_energy_j: x.transit_j,
        transit_bound: x.transit_bound,
    }
}

/// How concurrent hand-offs share a link in the calculator (the simulator's `--link-sharing`):
/// one name per link discipline, generated by the link's registry.
pub use crate::link::Sharing;

/// Time left after the prefill for a layer-wise transfer granted `wait_s` after its first slice
/// was ready: `fixed + max(stream / L, (stream + wait) - (prefill * (L - 1)) / L)`; with
/// `wait_s = 0` this is [`layerwise_exposed`] bit for bit.
pub fn layerwise_exposed_after(
    fixed_s: f64,
    stream_s: f64,
    prefill_s: f64,
    layers: u64,
    wait_s: f64,
) -> f64 {
    fixed_s + layerwise_tail(stream_s, prefill_s, layers, wait_s)
}

/// [`handoff`] for `concurrent` identical prompts prefilled together and handed off at once over
/// one link: the times are those of the last of them. FIFO: each holds one of the link's
/// channels from its grant to its landing, so the k-th waits for the `ceil(k / channels) - 1`
/// before it on its channel. Fair: all share the bandwidth, each at `min(1, channels / n)` of a
/// channel, and land together. With `concurrent = 1` this is [`handoff`].
pub fn handoff_shared(
    prefill: &CostModel,
    link: &Link,
    transit: Option<&KvTransit>,
    send: SendMode,
    prompt_tokens: u64,
    sharing: Sharing,
    concurrent: u32,
) -> Handoff {
    handoff_shared_draft(
        prefill,
        None,
        link,
        transit,
        send,
        prompt_tokens,
        sharing,
        concurrent,
    )
}

/// [`handoff_shared`] with a speculative draft ([`handoff_draft`]); `None` is [`handoff_shared`].
#[allow(clippy::too_many_arguments)]
pub fn handoff_shared_draft(
    prefill: &CostModel,
    draft: Option<&CostModel>,
    link: &Link,
    transit: Option<&KvTransit>,
    send: SendMode,
    prompt_tokens: u64,
    sharing: Sharing,
    concurrent: u32,
) -> Handoff {
    let mut h = handoff_draft(prefill, draft, link, transit, send, prompt_tokens);
    if concurrent <= 1 {
        return h;
    }
    let x = transfer_with_draft(prefill, draft, link, transit, prompt_tokens);
    let prefill_s = h.prefill_s;
    let case = SharedCase {
        fixed_s: x.fixed_s,
        stream_s: x.stream_s,
        time_s: x.time_s,
        channels: link.channels,
        concurrent,
        prefill_s,
        layers: prefill.model.n_layers,
        layerwise: send == SendMode::Layerwise,
    };
    let t = sharing.shared(&case, |stream_s, wait_s| {
        model_layerwise_tail(&prefill.model, prompt_tokens, stream_s, prefill_s, wait_s)
    });
    h.transfer_s = t.transfer_s;
    h.exposed_s = t.exposed_s;
    h.link_capacity_rps = link.channels as f64 / x.time_s;
    h
}
