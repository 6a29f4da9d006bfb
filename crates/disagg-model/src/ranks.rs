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
        let ok = if tp <= hkv {
            hkv.is_multiple_of(tp)
        } else {
            tp.is_multiple_of(hkv)
        };
        if !ok {
            return Err(Error::invalid(
                format!("{side}_tp"),
                format!(
                    "{tp} neither divides the {hkv} KV heads of {} nor is a multiple of them; \
                     valid: {}, or a multiple of {hkv}",
                    model.name,
                    divisors(hkv)
                ),
            ));
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

/// The optional on-GPU gather pass on each decode rank (`--kv-relayout-cost`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Relayout {
    /// No cost (the default).
    #[default]
    Off,
    /// Read and write the rank's KV once at the decode device's effective HBM bandwidth.
    Hbm,
}

impl Relayout {
    /// Accepted names.
    pub const NAMES: [&'static str; 2] = ["off", "hbm"];
    /// Parses `off` or `hbm`.
    pub fn parse(s: &str) -> Result<Self, Error> {
        match s {
            "off" => Ok(Relayout::Off),
            "hbm" => Ok(Relayout::Hbm),
            _ => Err(Error::unknown("KV relayout cost", s, Self::NAMES)),
        }
    }
    /// The canonical name.
    pub fn as_str(self) -> &'static str {
        match self {
            Relayout::Off => "off",
            Relayout::Hbm => "hbm",
        }
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
    /// KV heads carried, half open `[first, end)`.
    pub heads: [u64; 2],
    /// Layers carried, half open `[first, end)`.
    pub layers: [u64; 2],
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
    /// The single transfer's bytes, `P * kv_bytes_per_token`.
    pub single_transfer_bytes: f64,
    /// The single transfer over one NIC, `latency + S / bandwidth`, s.
    pub single_transfer_s: f64,
    /// `single_transfer_s / total_s`.
    pub speedup: f64,
}

/// The hand-off of a `prompt_tokens` prompt's KV from `opts.prefill` to `opts.decode` over NICs of
/// `link`. `scale_up` is the decode instance's scale-up link (needed only when the decode layout
/// replicates heads); `decode_device` prices the gather pass.
pub fn rank_plan(
    model: &ModelSpec,
    link: &Link,
    scale_up: Option<&Link>,
    decode_device: &Device,
    prompt_tokens: u64,
    opts: &RankOptions,
) -> Result<RankPlan, Error> {
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
    // The rule shards attention KV: the model's hand-off must be exactly its L layers of Hkv heads
    // (not an FFT-mixing model's convolution state, nor a distilled state).
    if model.handoff_bytes(prompt_tokens) != shard_bytes(model, prompt_tokens, l, hkv) {
        return Err(Error::invalid(
            "model",
            format!(
                "{}'s hand-off is not its {l} layers of {hkv} KV heads (it holds other state); \
                 the rank-aware hand-off shards attention KV only",
                model.name
            ),
        ));
    }
    let rep_d = dl.replicas(hkv);
    let scale_up = match (rep_d > 1, scale_up) {
        (true, None) => {
            return Err(Error::invalid(
                "decode_tp",
                format!(
                    "TP{} replicates the {hkv} KV heads, which needs the decode device's scale-up \
                     link",
                    dl.tp
                ),
            ))
        }
        (_, s) => s,
    };

    // Stages and their starts.
    let slots = (mb + pl.pp as u64 - 1) as f64;
    let stages: Vec<StageStart> = (0..pl.pp)
        .map(|s| {
            let (start_s, lead_s) = match opts.prefill_s {
                Some(_) => (
                    prefill_s * ((mb + s as u64) as f64 / slots),
                    prefill_s * ((pl.pp - 1 - s) as f64 / slots),
                ),
                None => (0.0, 0.0),
            };
            StageStart {
                stage: s,
                layers: pl.stage_layers(s, l),
                start_s,
                lead_s,
            }
        })
        .collect();

    // Flows: every (prefill rank, decode rank) pair holding heads and layers in common.
    let ranks_p = pl.devices() as u32;
    let ranks_d = dl.devices() as u32;
    let mut flows = Vec::new();
    for p in 0..ranks_p {
        let (ps, pr) = (p / pl.tp, p % pl.tp);
        let p_layers = pl.stage_layers(ps, l);
        let p_heads = pl.link_heads(pr, hkv);
        for d in 0..ranks_d {
            let (ds, dr) = (d / dl.tp, d % dl.tp);
            let layers = common(p_layers, dl.stage_layers(ds, l));
            let heads = common(p_heads, dl.link_heads(dr, hkv));
            let (nl, nh) = (layers[1] - layers[0], heads[1] - heads[0]);
            if nl > 0 && nh > 0 {
                flows.push(Flow {
                    from: p,
                    to: d,
                    bytes: shard_bytes(model, prompt_tokens, nl, nh),
                    heads,
                    layers,
                });
            }
        }
    }
    let link_bytes: f64 = flows.iter().map(|f| f.bytes).sum();

    // NICs: the sum of their ranks' flows, in flow order. With them, the port bound with the
    // stages' starts, relative to the prefill's end: for each start among a port's flows, the
    // bytes starting then or later (every (head, layer) cell is sent by one rank, so there is
    // always a flow and the bound is finite).
    let lead = |f: &Flow| stages[(f.from / pl.tp) as usize].lead_s;
    let mut link_exposed = f64::NEG_INFINITY;
    let mut nics = Vec::new();
    for (side, n, ranks) in [
        (Side::Prefill, nics_p, ranks_p),
        (Side::Decode, nics_d, ranks_d),
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
    let max_busy = nics.iter().map(|n| n.busy_s).fold(0.0, f64::max);
    let finish_s = link.latency_s + max_busy;

    // Prefill ranks' fan-out.
    let prefill_ranks: Vec<PrefillRank> = (0..ranks_p)
        .map(|p| PrefillRank {
            rank: p,
            fan_out: flows.iter().filter(|f| f.from == p).count() as u32,
            bytes: flows.iter().filter(|f| f.from == p).map(|f| f.bytes).sum(),
        })
        .collect();

    // Decode ranks: fan-in, copies from their primary, gather pass.
    let hbm = decode_device.mem_bw * decode_device.bw_eff;
    let mut replicate_bytes = 0.0;
    let mut replicate_s: f64 = 0.0;
    let mut decode_ranks: Vec<DecodeRank> = (0..ranks_d)
        .map(|d| {
            // Every rank holds L/pp layers of Hkv/tp heads (one head when replicated).
            let held_bytes = shard_bytes(
                model,
                prompt_tokens,
                l / dl.pp as u64,
                (hkv / dl.tp as u64).max(1),
            );
            let into = |f: &&Flow| f.to == d;
            // Replicas are consecutive TP ranks and `rep_d` divides `tp`, so a rank's place
            // among its head's replicas is `d % rep_d` (the same as `(d % tp) % rep_d`).
            let nth = d as u64 % rep_d;
            DecodeRank {
                rank: d,
                fan_in: flows.iter().filter(into).count() as u32,
                link_bytes: flows.iter().filter(into).map(|f| f.bytes).sum(),
                copy_from: (nth != 0).then(|| d - nth as u32),
                held_bytes,
                arrival_s: finish_s,
                relayout_s: match opts.relayout {
                    Relayout::Off => 0.0,
                    Relayout::Hbm => 2.0 * held_bytes / hbm,
                },
            }
        })
        .collect();
    let mut tail: f64 = 0.0;
    // Copies exist only with replicas, and then the scale-up link was required above.
    if let Some(su) = scale_up {
        for i in 0..decode_ranks.len() {
            if let Some(src) = decode_ranks[i].copy_from {
                let b = decode_ranks[src as usize].link_bytes;
                let copy_s = su.transfer_time((rep_d - 1) as f64 * b);
                replicate_bytes += decode_ranks[i].held_bytes;
                replicate_s = replicate_s.max(copy_s);
                decode_ranks[i].arrival_s = finish_s + copy_s;
                tail = tail.max(copy_s + decode_ranks[i].relayout_s);
            }
        }
    }
    for r in &decode_ranks {
        if r.copy_from.is_none() {
            tail = tail.max(r.relayout_s);
        }
    }
    let relayout_s = decode_ranks
        .iter()
        .map(|r| r.relayout_s)
        .fold(0.0, f64::max);

    let single_transfer_bytes = model.handoff_bytes(prompt_tokens);
    let single_transfer_s = link.transfer_time(single_transfer_bytes);
    let total_s = finish_s + tail;
    let layout_doc = |x: RankLayout, nics: u64| LayoutDoc {
        tp: x.tp,
        pp: x.pp,
        devices: x.devices(),
        nics,
        label: x.label(),
    };
    Ok(RankPlan {
        layouts: Layouts {
            prefill: layout_doc(pl, nics_p),
            decode: layout_doc(dl, nics_d),
        },
        rule: RULE,
        microbatches: mb,
        flows,
        nics,
        prefill_ranks,
        decode_ranks,
        stages,
        link_bytes,
        replicate_bytes,
        replicate_s,
        relayout: opts.relayout,
        relayout_s,
        finish_s,
        total_s,
        exposed_s: link_exposed + tail,
        single_transfer_bytes,
        single_transfer_s,
        speedup: single_transfer_s / total_s,
    })
}

/// The ports of a rank plan for the simulator (`disagg run --handoff-ranks`): for every NIC of
/// both instances, the per-token bytes of its flows in the plan's flow order, so that the
/// busiest port of any prompt length is found without building the plan again. A flow's bytes
/// are `P * c` for its per-token shard `c` (one multiplication, [`shard_bytes`]), so the sums
/// are the plan's own, bit for bit.
#[derive(Clone, Debug, PartialEq)]
pub struct PortLoads {
    /// Per NIC (prefill side first), its flows' per-token bytes.
    ports: Vec<Vec<f64>>,
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
        let ports = plan
            .nics
            .iter()
            .map(|n| {
                let side = |f: &&Flow| {
                    let r = if n.side == Side::Prefill {
                        f.from
                    } else {
                        f.to
                    };
                    n.ranks.contains(&r)
                };
                plan.flows.iter().filter(side).map(|f| f.bytes).collect()
            })
            .collect();
        Ok(PortLoads { ports })
    }

    /// Each NIC's bytes for a `prompt_tokens` prompt, in the plan's NIC order (the plan's
    /// `nics[i].bytes`).
    pub fn port_bytes(&self, prompt_tokens: u64) -> Vec<f64> {
        let p = prompt_tokens as f64;
        self.ports
            .iter()
            .map(|fs| fs.iter().map(|c| p * c).sum())
            .collect()
    }

    /// The busiest port's wire time for a `prompt_tokens` prompt over NICs of `link`: the
    /// largest `bytes / bandwidth` over the NICs (the plan's `finish_s` less the latency).
    pub fn stream_s(&self, link: &Link, prompt_tokens: u64) -> f64 {
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
    // A KV format scales every shard's bytes (levers-cost.md §6.2 item 4).
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
