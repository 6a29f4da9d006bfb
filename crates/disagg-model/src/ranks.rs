//! The rank-aware KV hand-off (issue 13 §3, beyond the reference): a prefill instance sharded over
//! `tp x pp` GPUs holds its KV cache in shards, and each rank sends its shard over its own NIC to
//! the decode ranks that own those heads and layers, possibly under a different layout.
//!
//! # The sharding rule
//!
//! Ranks are numbered stage-major: rank `i` is tensor-parallel rank `r = i % tp` of pipeline stage
//! `s = i / tp`.
//!
//! * **Layers** split evenly over the pipeline stages: stage `s` holds layers
//!   `s*L/pp .. (s+1)*L/pp` (`L % pp == 0` is required).
//! * **KV heads** split evenly over the tensor-parallel ranks. With `Hkv >= tp` rank `r` holds heads
//!   `r*Hkv/tp .. (r+1)*Hkv/tp` (`Hkv % tp == 0` is required). With `Hkv < tp` (GQA: 8 KV heads on
//!   TP16) each head is replicated on `tp/Hkv` consecutive ranks: rank `r` holds head
//!   `r / (tp/Hkv)` (`tp % Hkv == 0` is required).
//! * **A replicated head crosses the KV link once.** On the prefill side only the lowest-index
//!   replica sends it; on the decode side it goes to the lowest-index decode rank that owns it, which
//!   then copies it to the other decode replicas over the decode instance's scale-up link (NVLink;
//!   the device's `scale_up` key): one transfer per primary of `latency + (replicas - 1) * bytes /
//!   bandwidth`, counted separately as `replicate_bytes` and `replicate_s`.
//!
//! A flow from prefill rank `p` to decode rank `d` carries the heads and layers both hold (the
//! heads `p` sends and `d` receives over the KV link): `P * (2 * layers * heads * hd) * kv_bytes`
//! bytes, the same operation order as [`ModelSpec::handoff_bytes`], so one flow of every layer and
//! head is the single transfer's byte count bit for bit.
//!
//! # Models described by layer kinds
//!
//! A model with an [`Arch`] (issue 16) keeps a different slice per layer kind, and the rule above
//! applies kind by kind ([`RULE_KINDS`]):
//!
//! * **Layers** split evenly over the stages as above; each layer's bytes are its slice of the
//!   hand-off ([`Arch::layer_slices`]): `kept_tokens(P) * values_per_token` KV values (`P` for
//!   full and MLA layers, `min(P, W)` for a sliding window, the current chunk for chunked
//!   attention) and a linear-attention layer's fixed state, which does not grow with `P`.
//! * **Full, sliding-window and chunked layers** shard by their KV heads exactly as above
//!   (replicated heads cross the link once and are copied over the decode scale-up link).
//! * **A linear-attention layer's state** shards by its value heads (`v_heads`, the same
//!   divisibility rule and replication as KV heads); its conv and recurrent state split evenly
//!   with the heads (`values * heads / v_heads`, which must be a whole number).
//! * **MLA layers are not sharded**: every TP rank of an instance holds the whole latent of its
//!   stage's layers. Each decode rank receives its own copy over the KV link (no scale-up copy):
//!   decode TP rank `r` takes a layer's latent from prefill TP rank `r % tp_prefill` of the stage
//!   holding the layer, which spreads the copies over the prefill ranks (each sends to
//!   `tp_decode / tp_prefill` ranks, or the first `tp_decode` prefill ranks send one each). So the
//!   link carries `tp_decode` copies of every latent: `mla_copies`, against the `logical_bytes`.
//! * The kept tokens follow the model's retention rule ([`Retention`]); a decode layout under
//!   which two kinds replicate their heads by different factors (Qwen3-Next's 2 KV heads and 32
//!   value heads on TP64) is refused.
//!
//! [`PortLoads`] (the simulator's `--handoff-ranks`) keeps each flow's shares of the layer groups
//! and recomputes its bytes per prompt length the same way, so windows, chunks and fixed states
//! are exact there too.
//!
//! A flow's bytes keep the integer order of [`ModelSpec::handoff_bytes`]: its kept KV values
//! summed as integers times `kv_bytes`, plus its conv and recurrent states (each summed over the
//! linear layer groups in order, then added), so with one rank on each side the one flow is the
//! single transfer's byte count bit for bit. Its `parts` give each layer kind's share.
//!
//! # The time
//!
//! Each instance has `nics` NICs (default one per GPU); rank `i` uses NIC `i % nics`. A NIC is a
//! full-duplex port with the chosen link's bandwidth and latency (the link's channel count is not
//! used). The flows form a bipartite graph between prefill and decode NICs; with every flow ready
//! at once the fluid makespan is `latency + max over NICs (bytes through it) / bandwidth`: no port
//! can finish earlier, and a preemptive open-shop schedule reaches that bound (the load matrix,
//! padded so every row and column sums to the largest port load, splits into matchings, each run at
//! full rate on every port it uses). The latency is paid once per port: its flows follow each
//! other back to back. That is `finish_s`.
//!
//! With a pipeline on the prefill side, stage `s`'s last micro-batch slot ends at fraction
//! `(mb + s) / (mb + pp - 1)` of the prefill's compute time (mb micro-batches, default pp); its
//! flows may start then, `lead = prefill * (pp - 1 - s) / (mb + pp - 1)` before the prefill ends.
//! The time exposed after the prefill is the same port bound with those starts: for every port and
//! every start among its flows, `latency + (bytes of its flows starting then or later) /
//! bandwidth - lead`, the largest over all (a lower bound on the makespan; equal to `finish_s` with
//! one stage).
//!
//! Then, on each decode rank, after its last arrival (the makespan, plus its primary's copy for a
//! replica): the optional gather pass `--kv-relayout-cost hbm` reads and writes what the rank holds
//! once, `2 * bytes / (mem_bw * bw_eff)` of the decode device.

use serde::{Deserialize, Serialize};

use crate::arch::{Arch, Attention, Retention};
use crate::calc::{count, HandoffDoc, HandoffSpec};
use crate::catalogue::{Catalogue, Device, Link, ModelSpec};
use crate::error::Error;
use crate::handoff::SendMode;

/// The largest number of GPUs (and NICs) of one instance a layout may have.
pub const MAX_DEVICES: u64 = 1024;

/// The largest number of pipeline micro-batches.
pub const MAX_MICROBATCHES: u64 = 65_536;

/// The sharding rule in one sentence (the JSON's `rule`).
pub const RULE: &str = "layers split evenly over PP stages, KV heads over TP ranks (rank r of tp \
holds heads r*Hkv/tp..(r+1)*Hkv/tp, or with Hkv < tp the one head r/(tp/Hkv), replicated on tp/Hkv \
ranks); ranks are numbered stage*tp + r and use NIC rank % nics; a replicated head crosses the KV \
link once, from its lowest-index prefill replica to its lowest-index decode owner, which copies it \
to the other decode replicas over the decode scale-up link";

/// The sharding rule of a model described by layer kinds (the JSON's `rule` for it).
pub const RULE_KINDS: &str = "layers split evenly over PP stages, each layer's bytes its slice \
by kind (full layers P tokens, sliding min(P, W), chunked the current chunk, a linear layer its \
fixed state); full, sliding and chunked layers shard their KV heads over TP ranks and a linear \
layer its state by value heads (rank r of tp holds heads r*H/tp..(r+1)*H/tp, or with H < tp the \
one head r/(tp/H), replicated on tp/H ranks); ranks are numbered stage*tp + r and use NIC rank % \
nics; a replicated head crosses the KV link once, from its lowest-index prefill replica to its \
lowest-index decode owner, which copies it to the other decode replicas over the decode scale-up \
link; MLA layers are not sharded: every TP rank holds its stage's whole latent, and decode TP \
rank r receives its own copy over the KV link from prefill TP rank r % tp_prefill of the stage \
holding the layer (tp_decode copies on the wire)";

/// A tensor- and pipeline-parallel layout of one instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct RankLayout {
    /// Tensor-parallel ranks (KV heads split over them).
    pub tp: u32,
    /// Pipeline stages (layers split over them).
    pub pp: u32,
}

impl RankLayout {
    /// `tp` x `pp`.
    pub fn new(tp: u32, pp: u32) -> Self {
        RankLayout { tp, pp }
    }

    /// GPUs of the instance: `tp * pp`.
    pub fn devices(&self) -> u64 {
        self.tp as u64 * self.pp as u64
    }

    /// `TP8` or `TP4 PP2`.
    pub fn label(&self) -> String {
        if self.pp == 1 {
            format!("TP{}", self.tp)
        } else {
            format!("TP{} PP{}", self.tp, self.pp)
        }
    }

    /// Checks the layout against `model`. `side` (`prefill` or `decode`) names the options in the
    /// errors: `prefill_tp`, `decode_pp`, ...
    pub fn validate(&self, side: &str, model: &ModelSpec) -> Result<(), Error> {
        let hkv = model.n_kv_heads;
        let l = model.n_layers;
        for (name, v) in [("tp", self.tp), ("pp", self.pp)] {
            if v == 0 {
                return Err(Error::invalid(
                    format!("{side}_{name}"),
                    "must be at least 1, got 0",
                ));
            }
        }
        if self.devices() > MAX_DEVICES {
            return Err(Error::invalid(
                format!("{side}_tp"),
                format!(
                    "TP{} x PP{} is {} GPUs, absurdly many (limit {MAX_DEVICES})",
                    self.tp,
                    self.pp,
                    self.devices()
                ),
            ));
        }
        let tp = self.tp as u64;
        // The head counts the layers shard by: the model's KV heads, or per layer kind (MLA
        // layers are not sharded).
        let sharded: Vec<(u64, String)> = match &model.arch {
            None => vec![(hkv, format!("KV heads of {}", model.name))],
            Some(a) => sharded_kinds(a)
                .into_iter()
                .map(|(h, att)| {
                    let what = match att {
                        Attention::Linear { .. } => "value heads",
                        _ => "KV heads",
                    };
                    (
                        h,
                        format!("{what} of {}'s {} layers", model.name, att.kind()),
                    )
                })
                .collect(),
        };
        for (h, what) in sharded {
            let ok = if tp <= h {
                h.is_multiple_of(tp)
            } else {
                tp.is_multiple_of(h)
            };
            if !ok {
                return Err(Error::invalid(
                    format!("{side}_tp"),
                    format!(
                        "{tp} neither divides the {h} {what} nor is a multiple of them; valid: \
                         {}, or a multiple of {h}",
                        divisors(h)
                    ),
                ));
            }
        }
        if !l.is_multiple_of(self.pp as u64) {
            return Err(Error::invalid(
                format!("{side}_pp"),
                format!(
                    "{} does not divide the {l} layers of {}; valid: {}",
                    self.pp,
                    model.name,
                    divisors(l)
                ),
            ));
        }
        Ok(())
    }

    /// The layers of stage `stage`: `stage*L/pp .. (stage+1)*L/pp`, half open.
    pub fn stage_layers(&self, stage: u32, n_layers: u64) -> [u64; 2] {
        let pp = self.pp as u64;
        let s = stage as u64;
        [s * n_layers / pp, (s + 1) * n_layers / pp]
    }

    /// How many ranks hold each head: `tp / Hkv` when `Hkv < tp`, else 1.
    pub fn replicas(&self, n_kv_heads: u64) -> u64 {
        (self.tp as u64 / n_kv_heads).max(1)
    }

    /// The heads tensor-parallel rank `tp_rank` holds, half open: `r*Hkv/tp .. (r+1)*Hkv/tp`, or the
    /// one head `r / (tp/Hkv)` when heads are replicated.
    pub fn rank_heads(&self, tp_rank: u32, n_kv_heads: u64) -> [u64; 2] {
        let tp = self.tp as u64;
        let r = tp_rank as u64;
        let rep = self.replicas(n_kv_heads);
        if rep > 1 {
            let h = r / rep;
            [h, h + 1]
        } else {
            [r * n_kv_heads / tp, (r + 1) * n_kv_heads / tp]
        }
    }

    /// The heads rank `tp_rank` sends or receives over the KV link: its heads when it is the
    /// lowest-index replica of them, none otherwise.
    pub fn link_heads(&self, tp_rank: u32, n_kv_heads: u64) -> [u64; 2] {
        let h = self.rank_heads(tp_rank, n_kv_heads);
        if (tp_rank as u64).is_multiple_of(self.replicas(n_kv_heads)) {
            h
        } else {
            [h[0], h[0]]
        }
    }
}

/// The sharded layer groups of `arch` (every attention but MLA) in group order, with the heads
/// they shard by.
fn sharded_kinds(arch: &Arch) -> Vec<(u64, Attention)> {
    arch.groups()
        .filter_map(|(_, r)| r.attention.shard_heads().map(|h| (h, r.attention)))
        .collect()
}

/// `1, 2, 4, 8` (the divisors of `n`).
fn divisors(n: u64) -> String {
    (1..=n)
        .filter(|d| n.is_multiple_of(*d))
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The length of the overlap of two half-open ranges.
fn common(a: [u64; 2], b: [u64; 2]) -> [u64; 2] {
    let lo = a[0].max(b[0]);
    let hi = a[1].min(b[1]);
    [lo, hi.max(lo)]
}

/// KV bytes of `tokens` tokens over `layers` layers and `heads` heads:
/// `tokens * (2 * layers * heads * hd) * kv_bytes` (K and V).
pub fn shard_bytes(model: &ModelSpec, tokens: u64, layers: u64, heads: u64) -> f64 {
    tokens as f64
        * ((2 * layers as i128 * heads as i128 * model.hd() as i128) as f64 * model.kv_bytes)
}

/// A model's layer kinds as the rank-aware hand-off prices them: the attention of each layer
/// group ([`Arch::groups`] order), each layer's group, the retention rule and the KV value size.
#[derive(Clone, Debug, PartialEq)]
struct Kinds {
    groups: Vec<Attention>,
    layer_group: Vec<usize>,
    retention: Retention,
    kv_bytes: f64,
}

/// A share of one layer group: `layers` of its layers, `heads` of its `of` heads (1 of 1 for an
/// MLA latent, which is not sharded).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Share {
    group: usize,
    layers: u64,
    heads: u64,
    of: u64,
}

impl Kinds {
    /// The kinds of `model`'s [`Arch`]; `None` without one.
    fn of(model: &ModelSpec) -> Option<Kinds> {
        let a = model.arch.as_deref()?;
        let groups: Vec<Attention> = a.groups().map(|(_, r)| r.attention).collect();
        // `runs()` is the cycle `cycles` times then the tail; `groups()` is the cycle then the
        // tail, so run `i` of a cycle is group `i % cycle.len()`, and tail run `j` group
        // `cycle.len() + j`.
        let c = a.cycle.len();
        let mut layer_group = Vec::new();
        for _ in 0..a.cycles {
            for (i, r) in a.cycle.iter().enumerate() {
                layer_group.extend(std::iter::repeat_n(i, r.count as usize));
            }
        }
        for (j, r) in a.tail.iter().enumerate() {
            layer_group.extend(std::iter::repeat_n(c + j, r.count as usize));
        }
        Some(Kinds {
            groups,
            layer_group,
            retention: a.retention,
            kv_bytes: model.kv_bytes,
        })
    }

    /// Layers of each group within `layers` (half open), in group order.
    fn counts(&self, layers: [u64; 2]) -> Vec<u64> {
        let mut n = vec![0u64; self.groups.len()];
        for g in &self.layer_group[layers[0] as usize..layers[1] as usize] {
            n[*g] += 1;
        }
        n
    }

    /// `values * heads / of`, which must be whole (`what` names the model in the error).
    fn split(values: i128, s: &Share, what: &str) -> Result<i128, Error> {
        let v = values * s.heads as i128;
        if v % s.of as i128 != 0 {
            return Err(Error::invalid(
                "model",
                format!(
                    "{what}'s linear-attention state of {values} values does not split evenly \
                     over its {} value heads ({} of them on one rank)",
                    s.of, s.heads
                ),
            ));
        }
        Ok(v / s.of as i128)
    }

    /// Checks that every share splits into whole values.
    fn check(&self, shares: &[Share], what: &str) -> Result<(), Error> {
        for s in shares {
            let (c, r) = self.groups[s.group].state_values();
            Self::split(c, s, what)?;
            Self::split(r, s, what)?;
        }
        Ok(())
    }

    /// Bytes of `shares` of a `p`-token prompt: the kept KV values summed as integers times
    /// `kv_bytes`, plus (the conv states summed over the shares in order, plus the recurrent
    /// states likewise): [`Arch::handoff_parts`]'s order, so every layer's whole share is
    /// [`ModelSpec::handoff_bytes`] bit for bit. Shares must have passed [`Kinds::check`].
    fn bytes(&self, shares: &[Share], p: u64) -> f64 {
        let (mut kv, mut conv, mut rec) = (0i128, 0.0, 0.0);
        for s in shares {
            let a = &self.groups[s.group];
            let n = s.layers as i128;
            let per = a.values_per_token() * s.heads as i128 / s.of as i128;
            kv += n * per * a.kept_tokens(p, self.retention) as i128;
            if let Attention::Linear {
                conv_bytes,
                state_bytes,
                ..
            } = *a
            {
                let (c, r) = a.state_values();
                let (c, r) = (
                    c * s.heads as i128 / s.of as i128,
                    r * s.heads as i128 / s.of as i128,
                );
                conv += (n * c) as f64 * conv_bytes;
                rec += (n * r) as f64 * state_bytes;
            }
        }
        kv as f64 * self.kv_bytes + (conv + rec)
    }
}

crate::named_enum! {
    /// The optional on-GPU gather pass on each decode rank (`--kv-relayout-cost`).
    pub enum Relayout: "KV relayout cost" {
        /// No cost (the default).
        #[default]
        Off = "off",
        /// Read and write the rank's KV once at the decode device's effective HBM bandwidth.
        Hbm = "hbm",
    }
}

/// Which instance a NIC belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// The prefill instance (NICs send).
    Prefill,
    /// The decode instance (NICs receive).
    Decode,
}

/// What the plan is asked for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RankOptions {
    /// The prefill instance's layout.
    pub prefill: RankLayout,
    /// The decode instance's layout.
    pub decode: RankLayout,
    /// NICs per instance (both sides); `None`: one per GPU.
    pub nics_per_instance: Option<u64>,
    /// Micro-batches of the prefill pipeline; `None`: the prefill's `pp`.
    pub microbatches: Option<u64>,
    /// The prefill's compute time, s; `None`: every stage's flows start at 0.
    pub prefill_s: Option<f64>,
    /// The gather pass on the decode ranks.
    pub relayout: Relayout,
}

impl RankOptions {
    /// `prefill` to `decode`, one NIC per GPU, no prefill time, no gather pass.
    pub fn new(prefill: RankLayout, decode: RankLayout) -> Self {
        RankOptions {
            prefill,
            decode,
            nics_per_instance: None,
            microbatches: None,
            prefill_s: None,
            relayout: Relayout::Off,
        }
    }
}

/// One instance's layout in the plan.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LayoutDoc {
    /// Tensor-parallel ranks.
    pub tp: u32,
    /// Pipeline stages.
    pub pp: u32,
    /// GPUs: `tp * pp`.
    pub devices: u64,
    /// NICs.
    pub nics: u64,
    /// `TP8` or `TP4 PP2`.
    pub label: String,
}

/// Both layouts.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Layouts {
    /// The prefill instance.
    pub prefill: LayoutDoc,
    /// The decode instance.
    pub decode: LayoutDoc,
}

/// One prefill rank to decode rank transfer over the KV link.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Flow {
    /// Prefill rank (`stage * tp + r`).
    pub from: u32,
    /// Decode rank.
    pub to: u32,
    /// Bytes.
    pub bytes: f64,
    /// KV heads carried, half open `[first, end)` (`[0, 0]` for a model described by layer
    /// kinds: see `parts`).
    pub heads: [u64; 2],
    /// Layers carried, half open `[first, end)` (for a model described by layer kinds, the range
    /// the flow's layers lie in).
    pub layers: [u64; 2],
    /// For a model described by layer kinds, each layer group's share of the flow, in the
    /// model's group order (empty otherwise).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<FlowPart>,
    /// The parts as shares of the layer groups (how the bytes follow from the prompt length).
    #[serde(skip)]
    shares: Vec<Share>,
}

/// One layer group's share of a flow (a model described by layer kinds).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FlowPart {
    /// The attention kind: `full`, `mla`, `sliding`, `chunked` or `linear`.
    pub kind: &'static str,
    /// Layers of the group carried.
    pub layers: u64,
    /// The heads carried (KV heads; value heads of a linear state), half open; `None` for an MLA
    /// latent (not sharded: the whole latent).
    pub heads: Option<[u64; 2]>,
    /// The heads the group has (`None` for MLA).
    pub of_heads: Option<u64>,
    /// Its bytes (alone; the flow's bytes are summed in the integer order).
    pub bytes: f64,
}

/// One NIC's load.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NicLoad {
    /// Its instance.
    pub side: Side,
    /// NIC index within the instance.
    pub nic: u32,
    /// Ranks using it (`rank % nics == nic`).
    pub ranks: Vec<u32>,
    /// Bytes it sends (prefill) or receives (decode).
    pub bytes: f64,
    /// `bytes / bandwidth`, s.
    pub busy_s: f64,
}

/// One prefill rank.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PrefillRank {
    /// Rank (`stage * tp + r`).
    pub rank: u32,
    /// Decode ranks it sends to.
    pub fan_out: u32,
    /// Bytes it sends.
    pub bytes: f64,
}

/// One decode rank.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DecodeRank {
    /// Rank (`stage * tp + r`).
    pub rank: u32,
    /// Prefill ranks it receives from over the KV link.
    pub fan_in: u32,
    /// Bytes it receives over the KV link.
    pub link_bytes: f64,
    /// For a replica of heads it does not receive over the KV link: the decode rank that copies
    /// them to it over the scale-up link.
    pub copy_from: Option<u32>,
    /// KV bytes it holds when the hand-off is done.
    pub held_bytes: f64,
    /// Time after the hand-off started that its last byte arrived, s.
    pub arrival_s: f64,
    /// Its gather pass, s (0 with `--kv-relayout-cost off`).
    pub relayout_s: f64,
}

/// One prefill pipeline stage.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StageStart {
    /// Stage index.
    pub stage: u32,
    /// Its layers, half open.
    pub layers: [u64; 2],
    /// When its flows may start, from the prefill's start, s: `prefill * (mb + s) / (mb + pp -
    /// 1)` (0 without a prefill time).
    pub start_s: f64,
    /// How long before the prefill's end that is, s: `prefill * (pp - 1 - s) / (mb + pp - 1)`.
    pub lead_s: f64,
}

/// The rank-aware hand-off of one prompt.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RankPlan {
    /// Both layouts.
    pub layouts: Layouts,
    /// The sharding rule ([`RULE`]).
    pub rule: &'static str,
    /// Micro-batches of the prefill pipeline.
    pub microbatches: u64,
    /// Every prefill-to-decode transfer, by prefill rank then decode rank.
    pub flows: Vec<Flow>,
    /// Every NIC, prefill then decode.
    pub nics: Vec<NicLoad>,
    /// Every prefill rank.
    pub prefill_ranks: Vec<PrefillRank>,
    /// Every decode rank.
    pub decode_ranks: Vec<DecodeRank>,
    /// Every prefill stage with its start.
    pub stages: Vec<StageStart>,
    /// Bytes over the KV link: the flows' sum.
    pub link_bytes: f64,
    /// Bytes copied between decode replicas over the scale-up link.
    pub replicate_bytes: f64,
    /// The longest such copy, s (0 without replicas).
    pub replicate_s: f64,
    /// `off` or `hbm`.
    pub relayout: Relayout,
    /// The longest gather pass, s.
    pub relayout_s: f64,
    /// The last byte over the KV link, from the hand-off's start (every flow ready at once):
    /// `latency + max busy_s`, s.
    pub finish_s: f64,
    /// Until every decode rank holds its KV (copies and gather included), s.
    pub total_s: f64,
    /// Time after the prefill's end until every decode rank holds its KV, with the stages' starts,
    /// s (`total_s` with one stage or without a prefill time).
    pub exposed_s: f64,
    /// The single transfer's bytes, [`ModelSpec::handoff_bytes`] (`P * kv_bytes_per_token`
    /// without layer kinds).
    pub single_transfer_bytes: f64,
    /// The single transfer over one NIC, `latency + S / bandwidth`, s.
    pub single_transfer_s: f64,
    /// `single_transfer_s / total_s`.
    pub speedup: f64,
    /// A model described by layer kinds: the logical hand-off, [`ModelSpec::handoff_bytes`]
    /// (`link_bytes` is more when MLA latents are sent once per decode rank).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logical_bytes: Option<f64>,
    /// A model with MLA layers: copies of every latent on the KV link (the decode TP ranks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mla_copies: Option<u32>,
    /// A model with MLA layers: the MLA layers' share of the logical hand-off, bytes (one copy).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mla_logical_bytes: Option<f64>,
}

/// The hand-off of a `prompt_tokens` prompt's KV from `opts.prefill` to `opts.decode` over NICs of
/// `link`. `scale_up` is the decode instance's scale-up link (needed only when the decode layout
/// replicates heads); `decode_device` prices the gather pass.
///
/// The steps, in order: check the inputs (`Setup::new`), the stages' starts (`stage_starts`),
/// the flows (`plan_flows`), the NICs and the port bound (`nic_loads`), the prefill ranks'
/// fan-out (`prefill_ranks`), the decode ranks (`decode_ranks`), the copies between decode
/// replicas (`replica_copies`), the MLA latents' copies (`mla_terms`), and the plan assembled
/// from them.
pub fn rank_plan(
    model: &ModelSpec,
    link: &Link,
    scale_up: Option<&Link>,
    decode_device: &Device,
    prompt_tokens: u64,
    opts: &RankOptions,
) -> Result<RankPlan, Error> {
    let s = Setup::new(model, scale_up, prompt_tokens, opts)?;
    let (pl, dl) = (s.pl, s.dl);
    let stages = stage_starts(&s, opts.prefill_s);
    let (flows, replicated) = plan_flows(&s)?;
    let link_bytes: f64 = flows.iter().map(|f| f.bytes).sum();
    let (nics, link_exposed) = nic_loads(&s, link, &flows, &stages);
    let max_busy = nics.iter().map(|n| n.busy_s).fold(0.0, f64::max);
    let finish_s = link.latency_s + max_busy;
    let prefill_ranks = prefill_ranks(&s, &flows);
    let (mut decode_ranks, held_replicas) =
        decode_ranks(&s, &flows, decode_device, finish_s, opts.relayout)?;
    let copies = replica_copies(
        &s,
        &flows,
        &replicated,
        &held_replicas,
        finish_s,
        &mut decode_ranks,
    );
    let relayout_s = decode_ranks
        .iter()
        .map(|r| r.relayout_s)
        .fold(0.0, f64::max);

    let single_transfer_bytes = model.handoff_bytes(prompt_tokens);
    let (mla_copies, mla_logical_bytes) = mla_terms(&s);
    let single_transfer_s = link.transfer_time(single_transfer_bytes);
    let total_s = finish_s + copies.tail;
    let layout_doc = |x: RankLayout, nics: u64| LayoutDoc {
        tp: x.tp,
        pp: x.pp,
        devices: x.devices(),
        nics,
        label: x.label(),
    };
    Ok(RankPlan {
        layouts: Layouts {
            prefill: layout_doc(pl, s.nics_p),
            decode: layout_doc(dl, s.nics_d),
        },
        rule: if s.kinds.is_some() { RULE_KINDS } else { RULE },
        microbatches: s.mb,
        flows,
        nics,
        prefill_ranks,
        decode_ranks,
        stages,
        link_bytes,
        replicate_bytes: copies.bytes,
        replicate_s: copies.longest_s,
        relayout: opts.relayout,
        relayout_s,
        finish_s,
        total_s,
        exposed_s: link_exposed + copies.tail,
        single_transfer_bytes,
        single_transfer_s,
        speedup: single_transfer_s / total_s,
        logical_bytes: s.kinds.is_some().then_some(single_transfer_bytes),
        mla_copies,
        mla_logical_bytes,
    })
}

/// The checked inputs of [`rank_plan`] and what every later step reads.
struct Setup<'a> {
    model: &'a ModelSpec,
    prompt_tokens: u64,
    pl: RankLayout,
    dl: RankLayout,
    nics_p: u64,
    nics_d: u64,
    /// Micro-batches of the prefill pipeline.
    mb: u64,
    /// The prefill time (0.0 without one).
    prefill_s: f64,
    hkv: u64,
    l: u64,
    kinds: Option<Kinds>,
    /// How many decode ranks hold each replicated head.
    rep_d: u64,
    /// The decode scale-up link, required when `rep_d > 1`.
    scale_up: Option<&'a Link>,
    ranks_p: u32,
    ranks_d: u32,
}

impl<'a> Setup<'a> {
    /// Validates the layouts, the counts and the prefill time, then the model against the
    /// sharding rule, the decode replication factor, and the scale-up link it needs, in that
    /// order.
    fn new(
        model: &'a ModelSpec,
        scale_up: Option<&'a Link>,
        prompt_tokens: u64,
        opts: &RankOptions,
    ) -> Result<Self, Error> {
        let (pl, dl) = (opts.prefill, opts.decode);
        pl.validate("prefill", model)?;
        dl.validate("decode", model)?;
        let nics_p = count(
            "nics_per_instance",
            opts.nics_per_instance.unwrap_or(pl.devices()),
            MAX_DEVICES,
        )?;
        let nics_d = opts.nics_per_instance.unwrap_or(dl.devices());
        let mb = count(
            "prefill_microbatches",
            opts.microbatches.unwrap_or(pl.pp as u64),
            MAX_MICROBATCHES,
        )?;
        let prefill_s = match opts.prefill_s {
            Some(t) => crate::error::non_negative("prefill_s", t)?,
            None => 0.0,
        };
        let (hkv, l) = (model.n_kv_heads, model.n_layers);
        let kinds = Kinds::of(model);
        // The rule shards attention KV: the model's hand-off must be exactly its L layers of Hkv
        // heads (not an FFT-mixing model's convolution state, nor a distilled state), unless the
        // model is described by layer kinds, which shard kind by kind.
        if kinds.is_none()
            && model.handoff_bytes(prompt_tokens) != shard_bytes(model, prompt_tokens, l, hkv)
        {
            return Err(Error::invalid(
                "model",
                format!(
                    "{}'s hand-off is not its {l} layers of {hkv} KV heads (it holds other \
                     state); the rank-aware hand-off shards attention KV only",
                    model.name
                ),
            ));
        }
        let rep_d = decode_replicas(model, dl, kinds.as_ref())?;
        let scale_up = match (rep_d > 1, scale_up) {
            (true, None) => {
                let what = match &kinds {
                    None => format!("the {hkv} KV heads"),
                    Some(_) => format!("heads of {}", model.name),
                };
                return Err(Error::invalid(
                    "decode_tp",
                    format!(
                        "TP{} replicates {what}, which needs the decode device's scale-up link",
                        dl.tp
                    ),
                ));
            }
            (_, s) => s,
        };
        Ok(Setup {
            model,
            prompt_tokens,
            pl,
            dl,
            nics_p,
            nics_d,
            mb,
            prefill_s,
            hkv,
            l,
            kinds,
            rep_d,
            scale_up,
            ranks_p: pl.devices() as u32,
            ranks_d: dl.devices() as u32,
        })
    }
}

/// How many decode ranks hold each replicated head: one factor for every replicated kind.
fn decode_replicas(model: &ModelSpec, dl: RankLayout, kinds: Option<&Kinds>) -> Result<u64, Error> {
    let l = model.n_layers;
    Ok(match kinds {
        None => dl.replicas(model.n_kv_heads),
        Some(k) => {
            if k.layer_group.len() as u64 != l {
                return Err(Error::invalid(
                    "model",
                    format!(
                        "{} has {l} layers but its layer kinds list {}",
                        model.name,
                        k.layer_group.len()
                    ),
                ));
            }
            let mut reps = k
                .groups
                .iter()
                .filter_map(|a| a.shard_heads())
                .map(|h| dl.replicas(h))
                .filter(|r| *r > 1);
            let first = reps.next().unwrap_or(1);
            if let Some(other) = reps.find(|r| *r != first) {
                return Err(Error::invalid(
                    "decode_tp",
                    format!(
                        "TP{} replicates {}'s layer kinds' heads by different factors ({first} \
                         and {other}), which is not modelled",
                        dl.tp, model.name
                    ),
                ));
            }
            first
        }
    })
}

/// The prefill stages and their starts.
fn stage_starts(s: &Setup, prefill: Option<f64>) -> Vec<StageStart> {
    let (pl, mb, prefill_s) = (s.pl, s.mb, s.prefill_s);
    let slots = (mb + pl.pp as u64 - 1) as f64;
    (0..pl.pp)
        .map(|st| {
            let (start_s, lead_s) = match prefill {
                Some(_) => (
                    prefill_s * ((mb + st as u64) as f64 / slots),
                    prefill_s * ((pl.pp - 1 - st) as f64 / slots),
                ),
                None => (0.0, 0.0),
            };
            StageStart {
                stage: st,
                layers: pl.stage_layers(st, s.l),
                start_s,
                lead_s,
            }
        })
        .collect()
}

/// Flows: every (prefill rank, decode rank) pair holding heads and layers in common. Beside
/// each, the bytes of the heads the decode side replicates (copied on over the scale-up link).
fn plan_flows(s: &Setup) -> Result<(Vec<Flow>, Vec<f64>), Error> {
    let (pl, dl, l, hkv) = (s.pl, s.dl, s.l, s.hkv);
    let mut flows = Vec::new();
    let mut replicated: Vec<f64> = Vec::new();
    for p in 0..s.ranks_p {
        let (ps, pr) = (p / pl.tp, p % pl.tp);
        let p_layers = pl.stage_layers(ps, l);
        for d in 0..s.ranks_d {
            let (ds, dr) = (d / dl.tp, d % dl.tp);
            let layers = common(p_layers, dl.stage_layers(ds, l));
            let Some(k) = &s.kinds else {
                let heads = common(pl.link_heads(pr, hkv), dl.link_heads(dr, hkv));
                let (nl, nh) = (layers[1] - layers[0], heads[1] - heads[0]);
                if nl > 0 && nh > 0 {
                    let bytes = shard_bytes(s.model, s.prompt_tokens, nl, nh);
                    flows.push(Flow {
                        from: p,
                        to: d,
                        bytes,
                        heads,
                        layers,
                        parts: Vec::new(),
                        shares: Vec::new(),
                    });
                    replicated.push(if s.rep_d > 1 { bytes } else { 0.0 });
                }
                continue;
            };
            if let Some((flow, repl)) = kinds_flow(s, k, [p, pr], [d, dr], layers)? {
                flows.push(flow);
                replicated.push(repl);
            }
        }
    }
    Ok((flows, replicated))
}

/// The flow from prefill rank `p` (TP rank `pr`) to decode rank `d` (TP rank `dr`) of a model
/// described by layer kinds, over their common `layers`, kind by kind, with the bytes of the
/// heads the decode side replicates; `None` when they hold nothing in common.
fn kinds_flow(
    s: &Setup,
    k: &Kinds,
    [p, pr]: [u32; 2],
    [d, dr]: [u32; 2],
    layers: [u64; 2],
) -> Result<Option<(Flow, f64)>, Error> {
    let (pl, dl, prompt_tokens) = (s.pl, s.dl, s.prompt_tokens);
    let counts = k.counts(layers);
    let (mut shares, mut repl, mut parts) = (Vec::new(), Vec::new(), Vec::new());
    for (g, a) in k.groups.iter().enumerate() {
        if counts[g] == 0 {
            continue;
        }
        let (share, heads) = match a.shard_heads() {
            Some(h) => {
                let hs = common(pl.link_heads(pr, h), dl.link_heads(dr, h));
                if hs[1] == hs[0] {
                    continue;
                }
                if dl.replicas(h) > 1 {
                    repl.push(Share {
                        group: g,
                        layers: counts[g],
                        heads: hs[1] - hs[0],
                        of: h,
                    });
                }
                (hs[1] - hs[0], Some(hs))
            }
            // An MLA latent: decode TP rank r takes it from prefill TP rank r % tp.
            None if dr % pl.tp == pr => (1, None),
            None => continue,
        };
        let share = Share {
            group: g,
            layers: counts[g],
            heads: share,
            of: a.shard_heads().unwrap_or(1),
        };
        k.check(&[share], &s.model.name)?;
        parts.push(FlowPart {
            kind: a.kind(),
            layers: counts[g],
            heads,
            of_heads: a.shard_heads(),
            bytes: k.bytes(&[share], prompt_tokens),
        });
        shares.push(share);
    }
    if shares.is_empty() {
        return Ok(None);
    }
    let flow = Flow {
        from: p,
        to: d,
        bytes: k.bytes(&shares, prompt_tokens),
        heads: [0, 0],
        layers,
        parts,
        shares,
    };
    Ok(Some((flow, k.bytes(&repl, prompt_tokens))))
}

/// NICs: the sum of their ranks' flows, in flow order. With them, the port bound with the
/// stages' starts, relative to the prefill's end: for each start among a port's flows, the
/// bytes starting then or later (every (head, layer) cell is sent by one rank, so there is
/// always a flow and the bound is finite).
fn nic_loads(s: &Setup, link: &Link, flows: &[Flow], stages: &[StageStart]) -> (Vec<NicLoad>, f64) {
    let pl = s.pl;
    let lead = |f: &Flow| stages[(f.from / pl.tp) as usize].lead_s;
    let mut link_exposed = f64::NEG_INFINITY;
    let mut nics = Vec::new();
    for (side, n, ranks) in [
        (Side::Prefill, s.nics_p, s.ranks_p),
        (Side::Decode, s.nics_d, s.ranks_d),
    ] {
        for nic in 0..n as u32 {
            let uses = |f: &&Flow| {
                let r = if side == Side::Prefill { f.from } else { f.to };
                r as u64 % n == nic as u64
            };
            let bytes: f64 = flows.iter().filter(uses).map(|f| f.bytes).sum();
            for g in flows.iter().filter(uses) {
                let lg = lead(g);
                let later: f64 = flows
                    .iter()
                    .filter(uses)
                    .filter(|f| lead(f) <= lg)
                    .map(|f| f.bytes)
                    .sum();
                link_exposed = link_exposed.max(link.transfer_time(later) - lg);
            }
            nics.push(NicLoad {
                side,
                nic,
                ranks: (0..ranks).filter(|r| *r as u64 % n == nic as u64).collect(),
                bytes,
                busy_s: link.wire_time(bytes),
            });
        }
    }
    (nics, link_exposed)
}

/// Prefill ranks' fan-out.
fn prefill_ranks(s: &Setup, flows: &[Flow]) -> Vec<PrefillRank> {
    (0..s.ranks_p)
        .map(|p| PrefillRank {
            rank: p,
            fan_out: flows.iter().filter(|f| f.from == p).count() as u32,
            bytes: flows.iter().filter(|f| f.from == p).map(|f| f.bytes).sum(),
        })
        .collect()
}

/// Decode ranks: fan-in, copies from their primary, gather pass; beside them, per decode rank,
/// the bytes of those it holds that it holds as a replica.
fn decode_ranks(
    s: &Setup,
    flows: &[Flow],
    decode_device: &Device,
    finish_s: f64,
    relayout: Relayout,
) -> Result<(Vec<DecodeRank>, Vec<f64>), Error> {
    let (dl, l, rep_d) = (s.dl, s.l, s.rep_d);
    let hbm = decode_device.mem_bw * decode_device.bw_eff;
    let mut held_replicas = Vec::new();
    let decode_ranks: Vec<DecodeRank> = (0..s.ranks_d)
        .map(|d| {
            let held_bytes = match &s.kinds {
                // Every rank holds L/pp layers of Hkv/tp heads (one head when replicated).
                None => {
                    let b = shard_bytes(
                        s.model,
                        s.prompt_tokens,
                        l / dl.pp as u64,
                        (s.hkv / dl.tp as u64).max(1),
                    );
                    held_replicas.push(if rep_d > 1 { b } else { 0.0 });
                    b
                }
                // Its stage's layers: its heads of each sharded kind, the whole MLA latent.
                Some(k) => {
                    let (all, repl) = held_shares(s, k, d)?;
                    held_replicas.push(k.bytes(&repl, s.prompt_tokens));
                    k.bytes(&all, s.prompt_tokens)
                }
            };
            let into = |f: &&Flow| f.to == d;
            // Replicas are consecutive TP ranks and `rep_d` divides `tp`, so a rank's place
            // among its head's replicas is `d % rep_d` (the same as `(d % tp) % rep_d`).
            let nth = d as u64 % rep_d;
            Ok(DecodeRank {
                rank: d,
                fan_in: flows.iter().filter(into).count() as u32,
                link_bytes: flows.iter().filter(into).map(|f| f.bytes).sum(),
                copy_from: (nth != 0).then(|| d - nth as u32),
                held_bytes,
                arrival_s: finish_s,
                relayout_s: match relayout {
                    Relayout::Off => 0.0,
                    Relayout::Hbm => 2.0 * held_bytes / hbm,
                },
            })
        })
        .collect::<Result<_, Error>>()?;
    Ok((decode_ranks, held_replicas))
}

/// The shares decode rank `d` of a layer-kind model holds (its stage's layers: its heads of each
/// sharded kind, the whole MLA latent), and those of them it holds as a replica.
fn held_shares(s: &Setup, k: &Kinds, d: u32) -> Result<(Vec<Share>, Vec<Share>), Error> {
    let dl = s.dl;
    let (ds, dr) = (d / dl.tp, d % dl.tp);
    let counts = k.counts(dl.stage_layers(ds, s.l));
    let (mut all, mut repl) = (Vec::new(), Vec::new());
    for (g, a) in k.groups.iter().enumerate() {
        if counts[g] == 0 {
            continue;
        }
        let (heads, of) = match a.shard_heads() {
            Some(h) => {
                let hs = dl.rank_heads(dr, h);
                (hs[1] - hs[0], h)
            }
            None => (1, 1),
        };
        let share = Share {
            group: g,
            layers: counts[g],
            heads,
            of,
        };
        if a.shard_heads().is_some_and(|h| dl.replicas(h) > 1) {
            repl.push(share);
        }
        all.push(share);
    }
    k.check(&all, &s.model.name)?;
    Ok((all, repl))
}

/// The copies between decode replicas over the scale-up link.
struct Copies {
    /// Bytes copied.
    bytes: f64,
    /// The longest copy, s.
    longest_s: f64,
    /// The longest copy plus gather pass of any decode rank after the last byte over the KV
    /// link (the gather pass alone for a rank that copies nothing), s.
    tail: f64,
}

/// Each replica's copy from its primary: the replica's arrival is the KV link's finish plus its
/// copy. Copies exist only with replicas, and then the scale-up link was required.
fn replica_copies(
    s: &Setup,
    flows: &[Flow],
    replicated: &[f64],
    held_replicas: &[f64],
    finish_s: f64,
    decode_ranks: &mut [DecodeRank],
) -> Copies {
    let mut replicate_bytes = 0.0;
    let mut replicate_s: f64 = 0.0;
    // The replicated bytes each decode rank receives over the KV link (its flows' order).
    let replicated_in: Vec<f64> = (0..s.ranks_d)
        .map(|d| {
            flows
                .iter()
                .zip(replicated)
                .filter(|(f, _)| f.to == d)
                .map(|(_, b)| *b)
                .sum()
        })
        .collect();
    let mut tail: f64 = 0.0;
    if let Some(su) = s.scale_up {
        for i in 0..decode_ranks.len() {
            if let Some(src) = decode_ranks[i].copy_from {
                let b = replicated_in[src as usize];
                let copy_s = su.transfer_time((s.rep_d - 1) as f64 * b);
                replicate_bytes += held_replicas[i];
                replicate_s = replicate_s.max(copy_s);
                decode_ranks[i].arrival_s = finish_s + copy_s;
                tail = tail.max(copy_s + decode_ranks[i].relayout_s);
            }
        }
    }
    for r in decode_ranks.iter() {
        if r.copy_from.is_none() {
            tail = tail.max(r.relayout_s);
        }
    }
    Copies {
        bytes: replicate_bytes,
        longest_s: replicate_s,
        tail,
    }
}

/// MLA latents: one copy per decode TP rank on the link, against one in the logical hand-off
/// (the copies and the logical bytes; `None` without MLA layers).
fn mla_terms(s: &Setup) -> (Option<u32>, Option<f64>) {
    let l = s.l;
    let mla: Vec<Share> = s.kinds.as_ref().map_or_else(Vec::new, |k| {
        let counts = k.counts([0, l]);
        k.groups
            .iter()
            .enumerate()
            .filter(|(g, a)| a.shard_heads().is_none() && counts[*g] > 0)
            .map(|(g, _)| Share {
                group: g,
                layers: counts[g],
                heads: 1,
                of: 1,
            })
            .collect()
    });
    match (&s.kinds, mla.is_empty()) {
        (Some(k), false) => (Some(s.dl.tp), Some(k.bytes(&mla, s.prompt_tokens))),
        _ => (None, None),
    }
}

/// The ports of a rank plan for the simulator (`disagg run --handoff-ranks`): for every NIC of
/// both instances, its flows in the plan's flow order, so that the busiest port of any prompt
/// length is found without building the plan again. Without layer kinds a flow is `P * c` for
/// its per-token shard `c` (one multiplication, [`shard_bytes`]); with them a flow keeps its
/// shares of the layer groups and its bytes are recomputed for each prompt length the plan's way
/// (sliding windows and chunks keep `min(P, W)` and the current chunk, a linear state does not
/// grow with `P`). Either way the sums are the plan's own, bit for bit.
#[derive(Clone, Debug, PartialEq)]
pub struct PortLoads {
    /// Per NIC (prefill side first), its flows' per-token bytes (no layer kinds).
    ports: Vec<Vec<f64>>,
    /// Per NIC, its flows' shares of the layer groups (layer kinds).
    shares: Vec<Vec<Vec<Share>>>,
    /// The model's layer kinds, if it has them.
    kinds: Option<Kinds>,
}

impl PortLoads {
    /// The ports of the plan of `opts` (its `prefill_s` and gather pass are not used).
    pub fn new(
        model: &ModelSpec,
        link: &Link,
        scale_up: Option<&Link>,
        decode_device: &Device,
        opts: &RankOptions,
    ) -> Result<Self, Error> {
        let plan = rank_plan(model, link, scale_up, decode_device, 1, opts)?;
        let of_port = |n: &NicLoad| -> Vec<&Flow> {
            plan.flows
                .iter()
                .filter(|f| {
                    let r = if n.side == Side::Prefill {
                        f.from
                    } else {
                        f.to
                    };
                    n.ranks.contains(&r)
                })
                .collect()
        };
        let kinds = Kinds::of(model);
        let (ports, shares) = match kinds {
            None => (
                plan.nics
                    .iter()
                    .map(|n| of_port(n).iter().map(|f| f.bytes).collect())
                    .collect(),
                Vec::new(),
            ),
            Some(_) => (
                Vec::new(),
                plan.nics
                    .iter()
                    .map(|n| of_port(n).iter().map(|f| f.shares.clone()).collect())
                    .collect(),
            ),
        };
        Ok(PortLoads {
            ports,
            shares,
            kinds,
        })
    }

    /// Each NIC's bytes for a `prompt_tokens` prompt, in the plan's NIC order (the plan's
    /// `nics[i].bytes`).
    pub fn port_bytes(&self, prompt_tokens: u64) -> Vec<f64> {
        match &self.kinds {
            None => {
                let p = prompt_tokens as f64;
                self.ports
                    .iter()
                    .map(|fs| fs.iter().map(|c| p * c).sum())
                    .collect()
            }
            Some(k) => self
                .shares
                .iter()
                .map(|fs| fs.iter().map(|s| k.bytes(s, prompt_tokens)).sum())
                .collect(),
        }
    }

    /// The busiest port's wire time for a `prompt_tokens` prompt over NICs of `link`: the
    /// largest `bytes / bandwidth` over the NICs (the plan's `finish_s` less the latency).
    pub fn stream_s(&self, link: &Link, prompt_tokens: u64) -> f64 {
        if self.kinds.is_some() {
            return self
                .port_bytes(prompt_tokens)
                .into_iter()
                .map(|b| link.wire_time(b))
                .fold(0.0, f64::max);
        }
        let p = prompt_tokens as f64;
        self.ports
            .iter()
            .map(|fs| link.wire_time(fs.iter().map(|c| p * c).sum()))
            .fold(0.0, f64::max)
    }
}

/// The calculator's rank-aware options: `disagg handoff --handoff-ranks --prefill-tp ...`, and the
/// same keys in snake_case in `/api/handoff`'s body. Errors name the option by its key.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RankSpec {
    /// Model the hand-off rank by rank.
    pub handoff_ranks: bool,
    /// Prefill TP ranks; `None`: `devices_per_instance / prefill_pp`.
    pub prefill_tp: Option<u64>,
    /// Prefill PP stages; `None`: 1.
    pub prefill_pp: Option<u64>,
    /// Decode TP ranks; `None`: `devices_per_instance / decode_pp`.
    pub decode_tp: Option<u64>,
    /// Decode PP stages; `None`: 1.
    pub decode_pp: Option<u64>,
    /// Micro-batches of the prefill pipeline; `None`: `prefill_pp`.
    pub prefill_microbatches: Option<u64>,
    /// NICs per instance; `None`: one per GPU.
    pub nics_per_instance: Option<u64>,
    /// `off` or `hbm`.
    pub kv_relayout_cost: String,
    /// Decode device key; `None`: the prefill device.
    pub decode_device: Option<String>,
}

impl Default for RankSpec {
    fn default() -> Self {
        RankSpec {
            handoff_ranks: false,
            prefill_tp: None,
            prefill_pp: None,
            decode_tp: None,
            decode_pp: None,
            prefill_microbatches: None,
            nics_per_instance: None,
            kv_relayout_cost: "off".into(),
            decode_device: None,
        }
    }
}

impl RankSpec {
    /// Every key, in declaration order.
    pub const KEYS: [&'static str; 9] = [
        "handoff_ranks",
        "prefill_tp",
        "prefill_pp",
        "decode_tp",
        "decode_pp",
        "prefill_microbatches",
        "nics_per_instance",
        "kv_relayout_cost",
        "decode_device",
    ];

    /// The keys given other than `handoff_ranks`, in declaration order.
    fn given(&self) -> Vec<&'static str> {
        let set = [
            self.prefill_tp.is_some(),
            self.prefill_pp.is_some(),
            self.decode_tp.is_some(),
            self.decode_pp.is_some(),
            self.prefill_microbatches.is_some(),
            self.nics_per_instance.is_some(),
            self.kv_relayout_cost != "off",
            self.decode_device.is_some(),
        ];
        Self::KEYS[1..]
            .iter()
            .zip(set)
            .filter(|(_, on)| *on)
            .map(|(k, _)| *k)
            .collect()
    }
}

/// A side's layout from the options: `pp` defaults to 1, `tp` to `devices / pp`.
fn spec_layout(
    side: &str,
    tp: Option<u64>,
    pp: Option<u64>,
    devices: u64,
) -> Result<RankLayout, Error> {
    let pp = count(&format!("{side}_pp"), pp.unwrap_or(1), MAX_DEVICES)?;
    let tp = match tp {
        Some(t) => count(&format!("{side}_tp"), t, MAX_DEVICES)?,
        None => (devices / pp).max(1),
    };
    Ok(RankLayout::new(tp as u32, pp as u32))
}

/// The rank-aware hand-off of the calculator's answer `doc` to `spec` (one link): `None` without
/// `handoff_ranks`. `model` is the model the calculator used; `decode_device` replaces the
/// catalogue's device named by `decode_device` (or the prefill's) when a front end built a custom
/// one. It models one uncompressed prompt sent whole over one port per NIC, so it refuses a
/// compression stage, `send: layerwise`, `concurrent` above 1, `link_channels` and `all_links`;
/// the prefill layout must have `devices_per_instance` GPUs. The stages start within the
/// calculator's prefill step.
pub fn evaluate(
    cat: &Catalogue,
    spec: &HandoffSpec,
    doc: &HandoffDoc,
    rs: &RankSpec,
    model: &ModelSpec,
    decode_device: Option<Device>,
) -> Result<Option<RankPlan>, Error> {
    if !rs.handoff_ranks {
        return match rs.given().first() {
            Some(k) => Err(Error::invalid(*k, "applies only with handoff_ranks")),
            None => Ok(None),
        };
    }
    let why = "the rank-aware hand-off models one uncompressed prompt sent after the prefill, one \
               port per NIC";
    if doc.compression != "none" {
        return Err(Error::invalid(
            "compression",
            format!("'{}': {why}", doc.compression),
        ));
    }
    if doc.send != SendMode::Whole.as_str() {
        return Err(Error::invalid("send", format!("'{}': {why}", doc.send)));
    }
    if spec.concurrent != 1 {
        return Err(Error::invalid(
            "concurrent",
            format!("{}: {why}", spec.concurrent),
        ));
    }
    if let Some(c) = spec.link_channels {
        return Err(Error::invalid("link_channels", format!("{c}: {why}")));
    }
    if let Some(d) = &doc.speculative {
        return Err(Error::invalid(
            "speculative",
            format!("'{d}': the rank-aware hand-off models the target's KV heads only"),
        ));
    }
    // A KV format scales every shard's bytes (`docs/cost-model.md#quantisation` item 4).
    let model = &crate::calc::formats_of(spec)?.apply(model);
    let Some(row) = doc.row.as_ref() else {
        return Err(Error::invalid(
            "handoff_ranks",
            "needs one link, not all_links",
        ));
    };
    let d = spec.devices_per_instance;
    let prefill = spec_layout("prefill", rs.prefill_tp, rs.prefill_pp, d)?;
    let decode = spec_layout("decode", rs.decode_tp, rs.decode_pp, d)?;
    prefill.validate("prefill", model)?;
    decode.validate("decode", model)?;
    if prefill.devices() != d {
        let key = if rs.prefill_tp.is_some() {
            "prefill_tp"
        } else {
            "prefill_pp"
        };
        return Err(Error::invalid(
            key,
            format!(
                "{} is {} GPUs, not the prefill instance's {d} (devices per instance)",
                prefill.label(),
                prefill.devices()
            ),
        ));
    }
    let relayout = Relayout::parse(&rs.kv_relayout_cost)
        .map_err(|e| Error::invalid("kv_relayout_cost", e.to_string()))?;
    let device = match decode_device {
        Some(dev) => dev,
        None => {
            let key = rs.decode_device.as_deref().unwrap_or(&spec.prefill_device);
            cat.device(key)
                .map_err(|e| Error::invalid("decode_device", e.to_string()))?
                .clone()
        }
    };
    let link = Link {
        key: row.link.clone(),
        name: row.link_name.clone(),
        bandwidth_bps: row.link_bandwidth_bps,
        latency_s: row.link_latency_s,
        channels: row.link_channels,
        pj_per_bit: row.link_pj_per_bit,
    };
    let opts = RankOptions {
        prefill,
        decode,
        nics_per_instance: rs.nics_per_instance,
        microbatches: rs.prefill_microbatches,
        prefill_s: Some(row.handoff.prefill_s),
        relayout,
    };
    let scale_up = cat.link(&device.scale_up).ok();
    rank_plan(model, &link, scale_up, &device, doc.prompt_tokens, &opts).map(Some)
}
