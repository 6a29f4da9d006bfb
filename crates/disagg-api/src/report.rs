//! The text report of one run, in the reference's layout (`docs/serving-model.md#outputs`): renderers know nothing
//! about events, only the [`Summary`].

use std::fmt::Write;

use disagg_sim::metrics::STAGES;
use disagg_sim::{Mode, Summary};

use crate::format::fixed;

fn ms8(x: f64) -> String {
    if x.is_nan() {
        format!("{:>8}", "-")
    } else {
        format!("{:8.1}", 1e3 * x)
    }
}

pub use crate::format::or_na;

/// A percentage of a fraction with one decimal, or `n/a`.
fn pct1(x: f64) -> String {
    fixed(100.0 * x, 1)
}

/// The warnings of one command: each distinct message is printed once on stderr as `warning:
/// MSG` when told, and kept for the JSON output (a value each command holds, not a global).
#[derive(Clone, Debug, Default)]
pub struct Warnings(Vec<String>);

impl Warnings {
    /// Prints `warning: MSG` on stderr (once per distinct message) and keeps it.
    pub fn warn(&mut self, msg: &str) {
        if !self.0.iter().any(|m| m == msg) {
            eprintln!("warning: {}", disagg_model::escape(msg));
            self.0.push(msg.to_string());
        }
    }

    /// Tells a run's own warnings ([`Summary::warnings`]) through [`Warnings::warn`].
    pub fn summary(&mut self, s: &Summary) {
        for m in &s.warnings {
            self.warn(m);
        }
    }

    /// Tells the generator's prompt clipping of `cfg`'s workload (for commands that run many
    /// configurations of one workload and print no per-run report: `plan`).
    pub fn clipping(&mut self, cfg: &disagg_sim::SimConfig) {
        let w = cfg.requests();
        if w.clipped_prompts > 0 {
            self.warn(&disagg_sim::workload::clipping_warning(
                w.clipped_prompts,
                w.requests.len() as u64,
                cfg.workload.prompt.hi.max(0) as u64,
            ));
        }
    }

    /// Every warning told so far (for a `warnings` array in JSON output; empty: leave it out).
    pub fn list(&self) -> &[String] {
        &self.0
    }
}

/// The warnings of many runs (a sweep), told once at the end: the one warning, or how many runs
/// warned and the first warning.
#[derive(Default)]
pub struct RunWarnings {
    n: u64,
    warned: u64,
    first: Option<String>,
}

impl RunWarnings {
    /// Counts one run's summary.
    pub fn add(&mut self, summary: &serde_json::Value) {
        self.n += 1;
        if let Some(w) = summary["warnings"].as_array().filter(|w| !w.is_empty()) {
            self.warned += 1;
            if self.first.is_none() {
                self.first = w[0].as_str().map(str::to_string);
            }
        }
    }

    /// Tells one line through `warnings` if any run warned.
    pub fn finish(self, warnings: &mut Warnings) {
        match self.first {
            Some(m) if self.warned == 1 => warnings.warn(&m),
            Some(m) => warnings.warn(&format!(
                "{} of {} runs warned (each run's summary.warnings in --jsonl); the first: {m}",
                self.warned, self.n
            )),
            None => {}
        }
    }
}

fn pct0(x: f64) -> String {
    format!("{:.0}%", 100.0 * x)
}

/// The reference's `format_report`, line for line, plus a line on the hand-off.
pub fn text(s: &Summary) -> String {
    let mut o = String::new();
    let mode = s.mode.as_str();
    let _ = writeln!(
        o,
        "── {mode} ── {} done, {} rejected, sim {:.1}s",
        s.requests.completed, s.requests.rejected, s.horizon_s
    );
    o.push_str(&header_lines(s));
    if let Some(c) = &s.calibration {
        o.push_str(&calibration_lines(c));
    }
    if let Some(w) = overload_warning(s) {
        let _ = writeln!(o, "warning: {w}");
    }
    let opts = &s.options;
    let beyond: Vec<String> = [
        ("send", opts.send.as_str(), "whole"),
        ("link-sharing", opts.link_sharing.as_str(), "fifo"),
        ("reserve-kv-on", opts.reserve_kv_on.as_str(), "arrival"),
    ]
    .iter()
    .filter(|(_, v, d)| v != d)
    .map(|(k, v, _)| format!("{k} {v}"))
    .collect();
    if !beyond.is_empty() {
        let _ = writeln!(o, "hand-off     {}", beyond.join("   "));
    }
    let _ = writeln!(
        o,
        "latency (ms)       mean      p50      p90      p99   (first token from {})",
        s.first_token.as_str()
    );
    for (k, d) in [
        ("ttft", &s.ttft_s),
        ("tpot", &s.tpot_s),
        ("itl", &s.itl_s),
        ("e2e", &s.e2e_s),
    ] {
        let _ = writeln!(
            o,
            "  {k:<10} {} {} {} {}",
            ms8(d.mean),
            ms8(d.p50),
            ms8(d.p90),
            ms8(d.p99)
        );
    }
    let [goodput] = crate::metrics::pick(["goodput_rps"]);
    let _ = writeln!(
        o,
        "throughput   {:9.0} tok/s   {:.2} req/s   goodput {} req/s   SLO met {}{}",
        s.throughput_tok_s,
        s.throughput_rps,
        goodput.cell_or_na(s),
        pct_sign(s.slo_attainment),
        offered_note(s)
    );
    let mut util: Vec<String> = s
        .instances
        .iter()
        .map(|i| format!("{} {}", i.name, pct0(i.utilisation)))
        .collect();
    if s.mode == Mode::Disagg {
        util.push(format!("kv-link {}", pct0(s.link_busy)));
    }
    let _ = writeln!(o, "utilisation  {}", util.join("  "));
    let eff: Vec<String> = s
        .instances
        .iter()
        .map(|i| {
            format!(
                "{} MFU {} MBU {} batch {:.1}",
                i.name,
                pct0(i.mfu),
                pct0(i.mbu),
                i.mean_batch
            )
        })
        .collect();
    let _ = writeln!(o, "efficiency   {}", eff.join("  "));
    let shares = s.stage_share.as_array();
    let stages: Vec<String> = STAGES
        .iter()
        .zip(shares)
        .filter(|(_, v)| *v >= 0.005)
        .map(|(k, v)| format!("{k} {}", pct0(v)))
        .collect();
    let _ = writeln!(o, "where time goes  {}", stages.join("  "));
    let e = &s.energy;
    let mut parts = vec![
        format!("static {}", pct0(e.static_frac)),
        format!("compute {}", pct0(e.compute_frac)),
        format!("memory {}", pct0(e.memory_frac)),
        format!("link {}", pct0(e.link_frac)),
    ];
    if let Some(t) = e.optical_static_frac {
        parts.push(format!("optical static {}", pct0(t)));
    }
    if let Some(t) = e.optical_conversions_frac {
        parts.push(format!("conversions {}", pct0(t)));
    }
    if let Some(t) = e.transit_frac {
        parts.push(format!("transit {}", pct0(t)));
    }
    if let Some(t) = e.scale_up_frac {
        parts.push(format!("scale-up {}", pct0(t)));
    }
    let _ = writeln!(
        o,
        "power        avg {} W   {} J/token   {} tok/J   energy: {}",
        fixed(s.avg_power_w, 0),
        or_na(s.j_per_token, 2),
        or_na(s.tokens_per_j, 2),
        parts.join("  ")
    );
    if s.mode == Mode::Disagg {
        let l = &s.link;
        if let (Some(c), Some(at), Some(r)) = (&l.compression, &l.compress_at, l.compression_ratio)
        {
            let _ = writeln!(
                o,
                "kv hand-off  {c} at {at} (ratio {r:.2}): {:.1} GB -> {:.1} GB on the link, \
                 transit-bound {} of transfers, stage {} J",
                l.handoff_bytes / 1e9,
                l.bytes / 1e9,
                pct0(l.transit_bound_frac),
                fixed(l.transit_j, 1)
            );
        }
        let _ = writeln!(
            o,
            "kv link      {} transfers, {:.1} GB, hand-off p50 {} ms p99 {} ms, {:.3} J per request",
            l.transfers,
            l.bytes / 1e9,
            ms8(s.handoff_s.p50).trim(),
            ms8(s.handoff_s.p99).trim(),
            s.link_j_per_request
        );
        if let Some(saved) = l.handoff_bytes_saved {
            let _ = writeln!(
                o,
                "kv saved     {:.2} GB of prompt KV not sent (decode prefix caches held it)",
                saved / 1e9
            );
        }
    }
    if s.links.len() > 1 {
        let busiest = s
            .links
            .iter()
            .max_by(|a, b| a.utilisation.total_cmp(&b.utilisation));
        if let Some(b) = busiest {
            let _ = writeln!(
                o,
                "kv links     {} links, busiest {} {}",
                s.links.len(),
                b.name,
                pct0(b.utilisation)
            );
        }
    }
    if let Some(w) = &s.decode_mem_wait_s {
        let _ = writeln!(
            o,
            "decode mem   {} hand-offs waited {:.1} s for decode KV memory in all; per hand-off p50 {} ms p99 {} ms",
            w.handoffs,
            w.total_s,
            ms8(w.per_handoff.p50).trim(),
            ms8(w.per_handoff.p99).trim()
        );
    }
    let capped: Vec<String> = s
        .instances
        .iter()
        .filter(|i| i.power_bound_frac > 0.0)
        .map(|i| format!("{} {} of busy time", i.name, pct0(i.power_bound_frac)))
        .collect();
    if !capped.is_empty() {
        let _ = writeln!(o, "power-capped {}", capped.join("  "));
    }
    let h = &s.hotspot;
    let mut line = format!(
        "hot-spot     stage={} -> {} (busy {})",
        h.stage.as_deref().unwrap_or("-"),
        h.resource,
        pct0(h.resource_util)
    );
    if !h.busy_over_90pct.is_empty() {
        let _ = write!(line, "   busy>90%: {}", h.busy_over_90pct.join(", "));
    }
    let _ = writeln!(o, "{line}");
    o.push_str(&scheduler_block(s));
    o.push_str(&cost_levers_block(s));
    o.push_str(&optical_block(s));
    o
}

/// The optical engines' line and the `--ppa` line (`docs/levers.md#fft-mixing`, `docs/levers.md#ppa`); empty without
/// an engine device and without `--ppa`.
/// One `calibrated` line per fitted device of a run (the pools on it joined with `/`):
/// `calibrated   prefill/decode on h100-fit: fitted to perf_model.csv (8 groups), CV MAPE
/// prefill 7.9% decode 3.1%`.
pub fn calibration_lines(c: &[disagg_sim::CalibrationSummary]) -> String {
    let mut o = String::new();
    let mut done: Vec<&str> = Vec::new();
    for x in c {
        if done.contains(&x.device.as_str()) {
            continue;
        }
        done.push(&x.device);
        let pools: Vec<&str> = c
            .iter()
            .filter(|y| y.device == x.device)
            .map(|y| y.pool.as_str())
            .collect();
        let _ = writeln!(
            o,
            "calibrated   {}",
            calibration_phrase(&pools.join("/"), &x.device, &x.calibration)
        );
    }
    o
}

/// The `calibrated` lines of many runs (a comparison, a sweep, a plan): every calibrated pool
/// of any run, once.
pub fn calibration_of_runs<'a>(runs: impl IntoIterator<Item = &'a Summary>) -> String {
    let mut all: Vec<disagg_sim::CalibrationSummary> = Vec::new();
    for s in runs {
        add_calibration(&mut all, s);
    }
    calibration_lines(&all)
}

/// Adds the calibrated pools of `s` that `all` does not hold yet (same pool and device).
pub fn add_calibration(all: &mut Vec<disagg_sim::CalibrationSummary>, s: &Summary) {
    for c in s.calibration.iter().flatten() {
        if !all.iter().any(|x| x.pool == c.pool && x.device == c.device) {
            all.push(c.clone());
        }
    }
}

/// `prefill/decode on h100-fit: fitted to perf_model.csv (8 groups), CV MAPE prefill 7.9% decode
/// 3.1%` (also `disagg handoff`'s line).
pub fn calibration_phrase(who: &str, device: &str, c: &disagg_model::Calibration) -> String {
    format!(
        "{who} on {device}: fitted to {}, CV MAPE prefill {}% decode {}%",
        c.summary(),
        pct1(c.cv_prefill_mape),
        pct1(c.cv_decode_mape)
    )
}

pub fn optical_block(s: &Summary) -> String {
    let mut o = String::new();
    if let Some(opt) = &s.optical {
        // The instances with an engine (static energy), each: its optical-bound share of busy
        // time, then conversion and static energy.
        let parts: Vec<String> = opt
            .iter()
            .filter(|i| i.static_j != 0.0)
            .map(|i| {
                format!(
                    "{} {} optical-bound, conversions {} J, static {} J",
                    i.name,
                    pct0(i.optical_bound_frac),
                    fixed(i.conversion_j, 1),
                    fixed(i.static_j, 1)
                )
            })
            .collect();
        let _ = writeln!(o, "optical      {}", parts.join("  "));
    }
    if let Some(p) = &s.ppa {
        let line = match (p.total_mm2, p.total_usd, p.perf_per_mm2, p.perf_per_kusd) {
            (Some(mm2), Some(usd), Some(per_mm2), Some(per_kusd)) => format!(
                "ppa          {} mm2, ${} of silicon: {} tok/J, {} tok/s per mm2, {} tok/s per $1k",
                fixed(mm2, 0),
                fixed(usd, 0),
                or_na(p.perf_per_w, 2),
                or_na(per_mm2, 3),
                fixed(per_kusd, 1)
            ),
            _ => {
                // Each device without an area once, in role order.
                let mut unknown: Vec<&str> = Vec::new();
                for (_, r) in &p.pools.0 {
                    if r.mm2_per_instance.is_none() && !unknown.contains(&r.device.as_str()) {
                        unknown.push(&r.device);
                    }
                }
                format!(
                    "ppa          area unknown (no die area for {}): {} tok/J",
                    unknown.join(", "),
                    or_na(p.perf_per_w, 2)
                )
            }
        };
        let _ = writeln!(o, "{line}");
    }
    o
}

/// The parallel layouts' and the formats' lines (`docs/cost-model.md#parallelism`, `docs/cost-model.md#quantisation`), as the reference
/// prints them; empty without those levers.
pub fn cost_levers_block(s: &Summary) -> String {
    let mut o = String::new();
    if let Some(p) = &s.parallel {
        let parts: Vec<String> = p
            .iter()
            .map(|r| {
                format!(
                    "{} tp {} pp {} ep {} on {}: {:.0}% of busy time on the link",
                    r.role.as_str(),
                    r.tp,
                    r.pp,
                    r.ep,
                    r.link,
                    100.0 * r.comm_frac
                )
            })
            .collect();
        let _ = writeln!(o, "parallel     {}", parts.join("  "));
    }
    if let Some(f) = &s.formats {
        let _ = writeln!(
            o,
            "formats      weights {}, KV {}, compute {} (accuracy not simulated)",
            f.weights.as_str(),
            f.kv.as_str(),
            f.compute.as_str()
        );
    }
    if let Some(l) = &s.layers {
        o.push_str(&layers_lines(l));
    }
    o
}

/// The `layers`, `mla` and `moe` lines of a model described by layer kinds (issue 16).
pub fn layers_lines(l: &disagg_sim::layer_summary::LayersSummary) -> String {
    use crate::format::{bytes, thousands};
    let mut o = String::new();
    let kinds: Vec<String> = l
        .kinds
        .iter()
        .map(|k| {
            format!(
                "{} {}",
                k.layers,
                if k.kind == "mla" { "MLA" } else { &k.kind }
            )
        })
        .collect();
    let mut kv = format!("KV {} B/token", thousands(l.kv_bytes_per_token as u64));
    if l.windowed_kv_bytes_per_token > 0.0 {
        let _ = write!(
            kv,
            " + {} B per token kept by the windowed layers ({} rule)",
            thousands(l.windowed_kv_bytes_per_token as u64),
            l.retention.as_str()
        );
    }
    if l.state_bytes_per_request > 0.0 {
        let _ = write!(
            kv,
            " + {} of state per request",
            bytes(l.state_bytes_per_request)
        );
    }
    let _ = writeln!(
        o,
        "layers       {}: {kv}; {:.1} of {:.1} B params per token",
        kinds.join(" + "),
        l.active_params / 1e9,
        l.params / 1e9
    );
    if let Some(m) = &l.mla {
        let _ = writeln!(
            o,
            "mla          {} layers cache a {}-value latent per token (per-head K and V: {}); \
             decode attends in the latent, {} FLOP per cached token per layer (prefill {})",
            m.layers,
            m.latent_values,
            thousands(m.per_head_values),
            thousands(m.decode_flops_per_key),
            thousands(m.prefill_flops_per_key)
        );
    }
    if let Some(m) = &l.moe {
        let shared = if m.shared_experts > 0 {
            format!(" + {} shared", m.shared_experts)
        } else {
            String::new()
        };
        let _ = writeln!(
            o,
            "moe          {} layers, {} experts top-{}{shared}: a decode step reads {} of weights \
             at 1 row ({:.1} experts/layer), {} at {} rows ({:.1})",
            m.layers,
            m.experts,
            m.top_k,
            bytes(m.weight_bytes_read_b1),
            m.experts_touched_b1,
            bytes(m.weight_bytes_read),
            m.batch,
            m.experts_touched
        );
    }
    o
}

/// What a scheduled run's KV capacity is: `1,751 units x 16 tokens`.
fn capacity(units: u64, unit_tokens: u64) -> String {
    format!(
        "{} units x {} token{}",
        crate::format::thousands(units),
        crate::format::thousands(unit_tokens),
        if unit_tokens == 1 { "" } else { "s" }
    )
}

/// Seconds as milliseconds with `dp` decimals, or `n/a`.
fn ms_dp(x: Option<f64>, dp: usize) -> String {
    x.map_or_else(|| "n/a".to_string(), |v| or_na(1e3 * v, dp))
}

/// What `full_need` of a request is under KV policy `policy` (`docs/levers.md#kv-reservation`).
fn full_need_words(policy: &str) -> &'static str {
    match policy {
        "oracle" => "prompt + output tokens",
        "pow2" => "prompt + output rounded up to a power of two, tokens",
        "max" => "max(max_seq_len, prompt + output) tokens",
        "paged" => "blocks of prompt + output, plus the free-block watermark",
        _ => "its KV reservation",
    }
}

/// The "Scheduling and KV memory" block of a scheduled run's report (`docs/levers.md#lever-metrics`;
/// empty when the levers are off, so the report is then the plain one byte for byte).
pub fn scheduler_block(s: &Summary) -> String {
    let Some(b) = &s.scheduler else {
        return String::new();
    };
    let th = crate::format::thousands;
    let mut o = String::new();
    let _ = writeln!(o, "── scheduling and KV memory ──");
    let mut kv = capacity(b.kv_capacity_units, b.kv_unit_tokens);
    if let Some(p) = b.prefill_kv_capacity_units {
        let _ = write!(
            kv,
            " per decode instance, {} units per prefill instance",
            th(p)
        );
    }
    let _ = writeln!(
        o,
        "scheduling   batch {} (budget {} tokens a step)   KV {}: {}",
        b.batch_policy,
        th(b.token_budget),
        b.kv_policy,
        kv
    );
    let _ = writeln!(
        o,
        "             mean running {}   KV holding share {}   prefill tokens computed {}",
        or_na(b.mean_running, 1),
        pct_sign(b.kv_token_frac),
        th(b.computed_prefill_tokens)
    );
    let _ = writeln!(
        o,
        "             scheduling delay p50 {} ms   normalised latency {} ms/token",
        ms_dp(b.sched_delay_p50_s, 1),
        ms_dp(b.norm_latency_s_per_token, 2)
    );
    if let (Some(m), Some(n), Some(r)) = (&b.preemption, b.preemptions, b.recompute_tokens) {
        let _ = writeln!(
            o,
            "preemption   {m}: {} preemptions, {} tokens recomputed",
            th(n),
            th(r)
        );
    }
    if let Some(w) = &b.swap {
        let share = s
            .energy
            .swap_frac
            .map(|f| format!(" ({} of energy)", pct_sign(f)))
            .unwrap_or_default();
        let _ = writeln!(
            o,
            "swap         {} GB out  {} GB in  {} s on the host link  {} J{share}",
            fixed(w.out_gb, 2),
            fixed(w.in_gb, 2),
            fixed(w.seconds, 3),
            fixed(w.j, 1)
        );
    }
    if let Some(p) = &b.prefix_cache {
        let _ = writeln!(
            o,
            "prefix cache hit rate {} ({} of {} prompt tokens)   evicted {} tokens   cached at end {} tokens",
            pct_sign(p.hit_rate),
            th(p.hit_tokens),
            th(p.prompt_tokens),
            th(p.evicted_tokens),
            th(p.cached_tokens_end)
        );
    }
    if let Some(p) = &b.prefix_handoff {
        let _ = writeln!(
            o,
            "decode prefix hit rate {} ({} of {} hand-off prompt tokens, {} of {} hand-offs)   evicted {} tokens   cached at end {} tokens   router {}",
            pct_sign(p.hit_rate),
            th(p.hit_tokens),
            th(p.prompt_tokens),
            th(p.handoffs_hit),
            th(p.handoffs),
            th(p.evicted_tokens),
            th(p.cached_tokens_end),
            p.decode_router
        );
    }
    if let Some(x) = &b.speculative {
        let _ = writeln!(
            o,
            "speculative  draft {} gamma {} alpha {}: {} tokens per verify (closed form {}) over {} verify rows, drafting {} of busy time",
            x.draft,
            x.gamma,
            x.alpha,
            or_na(x.tokens_per_verify, 3),
            or_na(x.closed_form, 3),
            th(x.verify_rows),
            pct_sign(x.draft_time_frac)
        );
    }
    if s.requests.rejected > 0 {
        let _ = writeln!(o, "{}", rejection_line(s, b));
    }
    o
}

/// One line on the requests rejected at arrival: how many, why (their KV need can never fit,
/// `docs/serving-model.md#routing`) and which capacity.
fn rejection_line(s: &Summary, b: &disagg_sim::sched::SchedulerSummary) -> String {
    let first = |prefill: bool| {
        s.instances
            .iter()
            .find(|i| (i.role == disagg_sim::Role::Prefill) == prefill)
            .map_or("-", |i| i.name.as_str())
    };
    let mut line = format!(
        "rejected     {} requests can never fit: their KV need ({}) exceeds {}'s capacity of {}",
        crate::format::thousands(s.requests.rejected),
        full_need_words(&b.kv_policy),
        first(false),
        capacity(b.kv_capacity_units, b.kv_unit_tokens)
    );
    if let Some(p) = b.prefill_kv_capacity_units {
        let _ = write!(
            line,
            ", or their prompt exceeds {}'s {}",
            first(true),
            capacity(p, b.kv_unit_tokens)
        );
    }
    line
}

/// `12.3%`, or `n/a`.
/// What was simulated, said once (`docs/serving-model.md#simulated`): the `simulated` line
/// (model, formats, pools, link) and the `workload` line (arrivals, requests, SLOs).
pub fn header_lines(s: &Summary) -> String {
    format!(
        "simulated    {}\nworkload     {}\n",
        simulated_phrase(s),
        workload_phrase(s)
    )
}

/// `llama3-70b fp8/fp8/bf16: prefill 4 x 2 h100 (TP2xPP1), decode 2 x 8 h100; link ib-ndr, 2
/// channels, per-prefill links`.
pub fn simulated_phrase(s: &Summary) -> String {
    let x = &s.simulated;
    let mut o = disagg_model::escape(&x.model).to_string();
    if let Some(f) = &x.formats {
        let _ = write!(o, " {f}");
    }
    let pools: Vec<String> = x
        .pools
        .iter()
        .map(|p| {
            let mut q = format!(
                "{} {} x {} {}",
                p.role,
                p.instances,
                p.devices_per_instance,
                disagg_model::escape(&p.device)
            );
            if let Some(l) = &p.layout {
                let (tp, pp) = l.split_once('x').unwrap_or((l, "1"));
                let _ = write!(q, " (TP{tp}xPP{pp})");
            }
            q
        })
        .collect();
    let _ = write!(o, ": {}", pools.join(", "));
    if let Some(l) = &x.link {
        let _ = write!(o, "; link {}", disagg_model::escape(&l.name));
        if l.channels != 1 {
            let _ = write!(o, ", {} channels", l.channels);
        }
        if !disagg_sim::metrics::simulated::is_default_topology(&l.topology) {
            let _ = write!(o, ", {} links", l.topology);
        }
    }
    o
}

/// `poisson 8 req/s: 200 requests; SLO TTFT 1 s, TPOT 0.025 s (defaults)`, with a trace's file
/// name, format, time scale and what its read skipped or clipped, a session workload's turns.
pub fn workload_phrase(s: &Summary) -> String {
    let w = &s.workload;
    let a = &s.simulated.arrivals;
    let mut line = if let Some(t) = &w.trace {
        // The file's name only: the path is in `--json` (`summary.simulated.arrivals.trace_file`).
        let name = std::path::Path::new(&t.file)
            .file_name()
            .map_or(t.file.clone(), |n| n.to_string_lossy().into_owned());
        let mut line = format!(
            "trace {} ({}), time scale {}: {} requests",
            disagg_model::escape(&name),
            t.format,
            t.time_scale,
            crate::format::thousands(t.requests)
        );
        if let Some(c) = t.max_context {
            line.push_str(&format!(
                ", {} prompts clipped to {} tokens",
                crate::format::thousands(t.clipped_prompts),
                crate::format::thousands(c)
            ));
        }
        if t.bad_lines_skipped > 0 {
            line.push_str(&format!(
                ", {} malformed lines skipped",
                t.bad_lines_skipped
            ));
        }
        if t.failed_requests_skipped > 0 {
            line.push_str(&format!(
                ", {} failed requests skipped",
                t.failed_requests_skipped
            ));
        }
        if t.out_of_order > 0 {
            line.push_str(&format!(", {} out-of-order rows sorted", t.out_of_order));
        }
        line
    } else if w.source == "sessions" {
        format!(
            "sessions{} {} req/s: {} requests, {} closed-loop turns{}",
            w.name
                .as_deref()
                .map(|n| format!(" '{n}'"))
                .unwrap_or_default(),
            a.rate_rps.unwrap_or(f64::NAN),
            crate::format::thousands(w.requests),
            crate::format::thousands(w.closed_loop_turns),
            clipped_note(w)
        )
    } else {
        format!(
            "poisson {} req/s: {} requests{}",
            a.rate_rps.unwrap_or(f64::NAN),
            crate::format::thousands(w.requests),
            clipped_note(w)
        )
    };
    let slo = &s.simulated.slo;
    let from = |f: &str| match f {
        "workload" => "the workload's".to_string(),
        other => other.to_string(),
    };
    if slo.ttft_from == slo.tpot_from {
        let plural = match slo.ttft_from {
            "default" => "defaults".to_string(),
            other => from(other),
        };
        let _ = write!(
            line,
            "; SLO TTFT {} s, TPOT {} s ({plural})",
            slo.ttft_s, slo.tpot_s
        );
    } else {
        let _ = write!(
            line,
            "; SLO TTFT {} s ({}), TPOT {} s ({})",
            slo.ttft_s,
            from(slo.ttft_from),
            slo.tpot_s,
            from(slo.tpot_from)
        );
    }
    line
}

/// The overload warning of a run, without its `warning: ` (`None`: not overloaded):
/// `overloaded: offered 3.40 req/s > capacity 2.33 req/s (prefill bound); queues grew by 150
/// requests over the last quarter of arrivals`.
pub fn overload_warning(s: &Summary) -> Option<String> {
    let x = &s.overload;
    if !x.overloaded {
        return None;
    }
    let bound = match (x.capacity_rps, &x.bottleneck) {
        (Some(c), Some(b)) => Some((fixed(c, 2), b.as_str())),
        _ => None,
    };
    let offered = fixed(x.offered_rps, 2);
    let over = match &bound {
        Some((c, b)) if x.offered_rps > x.capacity_rps.unwrap_or(f64::INFINITY) => Some(format!(
            "offered {offered} req/s > capacity {c} req/s ({b} bound)"
        )),
        _ => None,
    };
    let growth = x.queues_growing.then(|| {
        format!(
            "queues grew by {} requests over the last quarter of arrivals",
            fixed(x.queue_growth.unwrap_or(f64::NAN), 0)
        )
    });
    Some(match (over, growth) {
        (Some(o), Some(g)) => format!("overloaded: {o}; {g}"),
        (Some(o), None) => format!("overloaded: {o}"),
        (None, g) => {
            let cap = match &bound {
                Some((c, b)) => {
                    format!("offered {offered} req/s <= capacity {c} req/s ({b} bound)")
                }
                None => format!("offered {offered} req/s"),
            };
            format!("overloaded: {}; {cap}", g.unwrap_or_default())
        }
    })
}

/// The header of several runs (`compare`): each header line once when every run has the same,
/// else one per run named `[NAME]`; then one `warning:` line per overloaded run.
pub fn runs_header(names: &[&str], runs: &[&Summary]) -> String {
    let mut o = String::new();
    for label in ["simulated", "workload"] {
        let lines: Vec<String> = runs
            .iter()
            .map(|s| match label {
                "simulated" => simulated_phrase(s),
                _ => workload_phrase(s),
            })
            .collect();
        if lines.windows(2).all(|w| w[0] == w[1]) {
            if let Some(l) = lines.first() {
                let _ = writeln!(o, "{label:<12} {l}");
            }
        } else {
            for (n, l) in names.iter().zip(&lines) {
                let _ = writeln!(o, "{label:<12} [{n}] {l}");
            }
        }
    }
    o.push_str(&overload_warnings(names, runs));
    o
}

/// One `warning: NAME overloaded: ...` line per overloaded run.
pub fn overload_warnings(names: &[&str], runs: &[&Summary]) -> String {
    let mut o = String::new();
    for (n, s) in names.iter().zip(runs) {
        if let Some(w) = overload_warning(s) {
            let _ = writeln!(o, "warning: {n} {w}");
        }
    }
    o
}

fn pct_sign(x: f64) -> String {
    if x.is_nan() {
        "n/a".into()
    } else {
        format!("{:.1}%", 100.0 * x)
    }
}

/// `, 3 prompts clipped to 32,768 tokens` when the generator clipped prompts.
fn clipped_note(w: &disagg_sim::workload::WorkloadSummary) -> String {
    match w.prompt_cap_tokens {
        Some(cap) if w.clipped_prompts > 0 => format!(
            ", {} prompts clipped to {} tokens",
            crate::format::thousands(w.clipped_prompts),
            crate::format::thousands(cap)
        ),
        _ => String::new(),
    }
}

/// ` of measured (12.3% of offered: 5 rejected count as misses)` when rejections make the two
/// figures differ.
fn offered_note(s: &Summary) -> String {
    if s.requests.rejected == 0 {
        return String::new();
    }
    format!(
        " of measured ({} of offered: {} rejected count as misses)",
        pct_sign(s.slo_attainment_offered),
        s.requests.rejected
    )
}

type Cell = Box<dyn Fn(&Summary) -> String>;

/// The scheduler figures of a table row (`docs/levers.md#lever-metrics`), `-` where a run does not
/// have them: mean running, preemptions, prefix hit rate (%), scheduling delay p50 (ms).
pub const SCHED_HEADS: [&str; 4] = ["mean running", "preemptions", "hit rate %", "delay p50 ms"];

/// [`SCHED_HEADS`]' cells of one run.
pub fn sched_cells(s: &Summary) -> [String; 4] {
    let dash = || "-".to_string();
    match &s.scheduler {
        None => [dash(), dash(), dash(), dash()],
        Some(b) => [
            or_na(b.mean_running, 1),
            b.preemptions.map_or_else(dash, |n| n.to_string()),
            b.prefix_cache
                .as_ref()
                .map_or_else(dash, |p| or_na(100.0 * p.hit_rate, 1)),
            b.sched_delay_p50_s.map_or_else(dash, |d| or_na(1e3 * d, 1)),
        ],
    }
}

/// Whether any of `runs` ran with the scheduling levers (its tables then show [`SCHED_HEADS`]).
pub fn any_levers(runs: &[&Summary]) -> bool {
    runs.iter().any(|s| s.scheduler.is_some())
}

/// Key numbers of several runs, one column per run.
pub fn side_by_side(names: &[&str], runs: &[&Summary]) -> String {
    let mut o = String::new();
    let ms = |x: f64| {
        if x.is_nan() {
            "-".to_string()
        } else {
            fixed(1e3 * x, 1)
        }
    };
    let rows: Vec<(&str, Cell)> = vec![
        (
            "requests done",
            Box::new(|s: &Summary| s.requests.completed.to_string()),
        ),
        (
            "TTFT p50 (ms)",
            Box::new(move |s: &Summary| ms(s.ttft_s.p50)),
        ),
        (
            "TTFT p99 (ms)",
            Box::new(move |s: &Summary| ms(s.ttft_s.p99)),
        ),
        (
            "TPOT p50 (ms)",
            Box::new(move |s: &Summary| ms(s.tpot_s.p50)),
        ),
        (
            "TPOT p99 (ms)",
            Box::new(move |s: &Summary| ms(s.tpot_s.p99)),
        ),
        ("ITL p99 (ms)", Box::new(move |s: &Summary| ms(s.itl_s.p99))),
        ("E2E p99 (ms)", Box::new(move |s: &Summary| ms(s.e2e_s.p99))),
        (
            "hand-off p99 (ms)",
            Box::new(move |s: &Summary| ms(s.handoff_s.p99)),
        ),
        (
            "SLO met (%)",
            Box::new(|s: &Summary| pct1(s.slo_attainment)),
        ),
        (
            "goodput (req/s)",
            Box::new(|s: &Summary| or_na(s.goodput_rps, 2)),
        ),
        (
            "throughput (tok/s)",
            Box::new(|s: &Summary| fixed(s.throughput_tok_s, 0)),
        ),
        (
            "J per token",
            Box::new(|s: &Summary| or_na(s.j_per_token, 3)),
        ),
        (
            "average power (W)",
            Box::new(|s: &Summary| fixed(s.avg_power_w, 0)),
        ),
        (
            "KV link busy (%)",
            Box::new(|s: &Summary| {
                if s.mode == Mode::Disagg {
                    fixed(100.0 * s.link_busy, 1)
                } else {
                    "-".into()
                }
            }),
        ),
        (
            "hot-spot",
            Box::new(|s: &Summary| {
                format!(
                    "{} -> {}",
                    s.hotspot.stage.as_deref().unwrap_or("-"),
                    s.hotspot.resource
                )
            }),
        ),
    ];
    let mut rows = rows;
    if any_levers(runs) {
        let heads = [
            "mean running",
            "preemptions",
            "prefix hit rate (%)",
            "sched delay p50 (ms)",
        ];
        for (k, head) in heads.into_iter().enumerate() {
            rows.push((head, Box::new(move |s: &Summary| sched_cells(s)[k].clone())));
        }
    }
    let _ = write!(o, "{:<20}", "");
    for n in names {
        let _ = write!(o, " {n:>26}");
    }
    o.push('\n');
    for (label, f) in rows {
        let _ = write!(o, "{label:<20}");
        for s in runs {
            let _ = write!(o, " {:>26}", f(s));
        }
        o.push('\n');
    }
    o
}

/// One row per run: what the hand-off does to the latencies and the SLOs.
pub fn variants_table(names: &[&str], runs: &[&Summary]) -> String {
    let mut o = String::new();
    let w = names.iter().map(|n| n.len()).max().unwrap_or(9).max(9);
    let ms = |x: f64| {
        if x.is_nan() {
            "-".to_string()
        } else {
            fixed(1e3 * x, 1)
        }
    };
    let levers = any_levers(runs);
    let _ = write!(
        o,
        "{:<w$}  {:>14} {:>13} {:>13} {:>9} {:>10} {:>9}",
        "variant", "hand-off p99", "TTFT p99", "TPOT p99", "SLO met", "link busy", "J/token"
    );
    if levers {
        let _ = write!(
            o,
            " {:>8} {:>11} {:>10} {:>11}",
            "mean", "", "prefix hit", "sched delay"
        );
    }
    o.push('\n');
    let _ = write!(
        o,
        "{:<w$}  {:>14} {:>13} {:>13} {:>9} {:>10} {:>9}",
        "", "(ms)", "(ms)", "(ms)", "(%)", "(%)", ""
    );
    if levers {
        let _ = write!(
            o,
            " {:>8} {:>11} {:>10} {:>11}",
            "running", "preemptions", "rate (%)", "p50 (ms)"
        );
    }
    o.push('\n');
    for (n, s) in names.iter().zip(runs) {
        let _ = write!(
            o,
            "{:<w$}  {:>14} {:>13} {:>13} {:>9} {:>10} {:>9}",
            n,
            ms(s.handoff_s.p99),
            ms(s.ttft_s.p99),
            ms(s.tpot_s.p99),
            pct1(s.slo_attainment),
            fixed(100.0 * s.link_busy, 1),
            or_na(s.j_per_token, 3)
        );
        if levers {
            let c = sched_cells(s);
            let _ = write!(o, " {:>8} {:>11} {:>10} {:>11}", c[0], c[1], c[2], c[3]);
        }
        o.push('\n');
    }
    if runs.iter().any(|s| s.link.handoff_bytes_saved.is_some()) {
        o.push('\n');
        o.push_str(&handoff_bytes_table(names, runs));
    }
    o
}

/// The prefix-aware hand-off's table (beyond the reference; shown under [`variants_table`] when
/// a variant has `--prefix-handoff`): one row per run, the KV sent and saved (GB, 1e9 bytes), the
/// link's busy share and the latencies it moves.
pub fn handoff_bytes_table(names: &[&str], runs: &[&Summary]) -> String {
    let mut o = String::new();
    let w = names.iter().map(|n| n.len()).max().unwrap_or(9).max(9);
    let ms = |x: f64| {
        if x.is_nan() {
            "-".to_string()
        } else {
            fixed(1e3 * x, 1)
        }
    };
    let _ = writeln!(
        o,
        "{:<w$}  {:>10} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9}",
        "variant", "hand-off", "saved", "link busy", "TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99"
    );
    let _ = writeln!(
        o,
        "{:<w$}  {:>10} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9}",
        "", "(GB)", "(GB)", "(%)", "(ms)", "(ms)", "(ms)", "(ms)"
    );
    for (n, s) in names.iter().zip(runs) {
        let _ = writeln!(
            o,
            "{:<w$}  {:>10} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9}",
            n,
            fixed(s.link.bytes / 1e9, 2),
            s.link
                .handoff_bytes_saved
                .map_or_else(|| "-".to_string(), |b| fixed(b / 1e9, 2)),
            fixed(100.0 * s.link_busy, 1),
            ms(s.ttft_s.p50),
            ms(s.ttft_s.p99),
            ms(s.tpot_s.p50),
            ms(s.tpot_s.p99)
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use disagg_sim::sched::report::{PrefixSummary, SchedulerSummary, SpecSummary, SwapSummary};

    /// A small run's summary with `flags` (the block's numbers are then set by hand).
    fn summary(flags: &[&str]) -> Summary {
        let mut all = vec!["--requests", "12"];
        all.extend_from_slice(flags);
        let cfg = disagg_sim::Scenario::from_flags(&all)
            .unwrap()
            .build(&disagg_model::Catalogue::builtin())
            .unwrap();
        disagg_sim::simulate_config(&cfg).unwrap().summary()
    }

    /// A block with every optional part, every number chosen by hand.
    fn full_block() -> SchedulerSummary {
        SchedulerSummary {
            batch_policy: "chunked".into(),
            token_budget: 2048,
            kv_policy: "paged".into(),
            kv_capacity_units: 1751,
            kv_unit_tokens: 16,
            mean_running: 12.34,
            kv_token_frac: 0.98765,
            computed_prefill_tokens: 123_456,
            prefill_kv_capacity_units: None,
            preemption: Some("swap".into()),
            preemptions: Some(7),
            recompute_tokens: Some(1200),
            swap: Some(SwapSummary {
                out_gb: 1.234,
                in_gb: 0.5,
                seconds: 0.0125,
                j: 12.34,
            }),
            prefix_cache: Some(PrefixSummary {
                hit_rate: 0.25,
                hit_tokens: 100,
                prompt_tokens: 400,
                evicted_tokens: 50,
                cached_tokens_end: 60,
            }),
            prefix_handoff: None,
            speculative: Some(SpecSummary {
                draft: "mtp".into(),
                gamma: 3,
                alpha: 0.7,
                verify_rows: 1000,
                tokens_per_verify: 2.5,
                closed_form: 2.5329999999999995,
                draft_time_frac: 0.042,
            }),
            sched_delay_p50_s: Some(0.0123),
            norm_latency_s_per_token: Some(0.014_56),
        }
    }

    #[test]
    fn the_block_names_every_figure_in_friendly_units() {
        let mut s = summary(&["--mode", "colocated", "--kv-policy", "paged"]);
        s.scheduler = Some(full_block());
        s.energy.swap_frac = Some(0.001);
        s.requests.rejected = 0;
        // 0.98765 -> 98.8%; 0.0123 s -> 12.3 ms; 0.01456 s -> 14.56 ms; 0.001 -> 0.1%;
        // 0.25 -> 25.0%; 0.042 -> 4.2%.
        let want = "\
── scheduling and KV memory ──
scheduling   batch chunked (budget 2,048 tokens a step)   KV paged: 1,751 units x 16 tokens
             mean running 12.3   KV holding share 98.8%   prefill tokens computed 123,456
             scheduling delay p50 12.3 ms   normalised latency 14.56 ms/token
preemption   swap: 7 preemptions, 1,200 tokens recomputed
swap         1.23 GB out  0.50 GB in  0.013 s on the host link  12.3 J (0.1% of energy)
prefix cache hit rate 25.0% (100 of 400 prompt tokens)   evicted 50 tokens   cached at end 60 tokens
speculative  draft mtp gamma 3 alpha 0.7: 2.500 tokens per verify (closed form 2.533) over 1,000 verify rows, drafting 4.2% of busy time
";
        assert_eq!(scheduler_block(&s), want);
        // The block closes the report, after the plain report's last line.
        let t = text(&s);
        assert!(t.ends_with(want), "{t}");
        let plain = &t[..t.len() - want.len()];
        assert!(plain.ends_with('\n') && plain.lines().last().unwrap().starts_with("hot-spot"));
        s.scheduler = None;
        assert_eq!(text(&s), plain);
    }

    #[test]
    fn the_prefix_aware_hand_off_lines() {
        let mut s = summary(&[]);
        let mut b = full_block();
        b.prefix_handoff = Some(disagg_sim::sched::report::HandoffPrefixSummary {
            handoffs: 12,
            handoffs_hit: 5,
            prompt_tokens: 24_000,
            hit_tokens: 6_000,
            hit_rate: 0.25,
            evicted_tokens: 1_500,
            cached_tokens_end: 7_000,
            decode_router: "prefix".into(),
        });
        s.scheduler = Some(b);
        // 0.25 -> 25.0%.
        let want = "decode prefix hit rate 25.0% (6,000 of 24,000 hand-off prompt tokens, 5 of 12 \
                    hand-offs)   evicted 1,500 tokens   cached at end 7,000 tokens   router prefix\n";
        assert!(
            scheduler_block(&s).contains(want),
            "{}",
            scheduler_block(&s)
        );
        // The link line: 1.5e9 bytes -> 1.50 GB; without the option, no line.
        assert!(!text(&s).contains("kv saved"));
        s.link.handoff_bytes_saved = Some(1.5e9);
        assert!(text(&s).contains(
            "\nkv saved     1.50 GB of prompt KV not sent (decode prefix caches held it)\n"
        ));
        // The compare table: sent and saved GB (3.2e10 -> 32.00), '-' for a plain run.
        s.link.bytes = 3.2e10;
        let mut plain = s.clone();
        plain.link.handoff_bytes_saved = None;
        let t = variants_table(&["plain", "prefix"], &[&plain, &s]);
        let rows: Vec<&str> = t.lines().collect();
        // Two heading lines and two rows, a blank line, then the bytes table's.
        assert_eq!(rows.len(), 4 + 1 + 4, "{t}");
        assert_eq!(rows[4], "");
        assert!(
            rows[5].starts_with("variant") && rows[5].contains("saved"),
            "{t}"
        );
        let cells = |r: &str| {
            r.split_whitespace()
                .take(3)
                .map(String::from)
                .collect::<Vec<_>>()
        };
        assert_eq!(cells(rows[7]), ["plain", "32.00", "-"]);
        assert_eq!(cells(rows[8]), ["prefix", "32.00", "1.50"]);
        assert!(!variants_table(&["plain"], &[&plain]).contains("saved"));
    }

    #[test]
    fn table_cells_of_the_scheduler_figures() {
        let mut s = summary(&["--mode", "colocated", "--kv-policy", "paged"]);
        let plain = {
            let mut p = s.clone();
            p.scheduler = None;
            p
        };
        s.scheduler = Some(full_block());
        // 12.34 -> 12.3; 7 preemptions; 0.25 -> 25.0 %; 0.0123 s -> 12.3 ms.
        assert_eq!(sched_cells(&s), ["12.3", "7", "25.0", "12.3"]);
        assert_eq!(sched_cells(&plain), ["-", "-", "-", "-"]);
        let mut b = full_block();
        b.preemptions = None;
        b.prefix_cache = None;
        b.sched_delay_p50_s = None;
        b.mean_running = 0.06;
        s.scheduler = Some(b);
        assert_eq!(sched_cells(&s), ["0.1", "-", "-", "-"]);
        assert!(any_levers(&[&plain, &s]));
        assert!(any_levers(&[&s, &plain]));
        assert!(!any_levers(&[&plain, &plain]));
        assert!(!any_levers(&[]));
        // The tables gain the figures only when a run has them.
        let t = side_by_side(&["a", "b"], &[&plain, &s]);
        assert!(t.contains("\nmean running         "), "{t}");
        assert!(t.ends_with(&format!("sched delay p50 (ms) {:>26} {:>26}\n", "-", "-")));
        let t = side_by_side(&["a", "b"], &[&plain, &plain]);
        assert!(!t.contains("mean running"), "{t}");
        assert!(t.lines().last().unwrap().starts_with("hot-spot"), "{t}");
        let t = variants_table(&["a", "b"], &[&plain, &s]);
        let lines: Vec<&str> = t.lines().collect();
        assert!(
            lines[1].ends_with("     running preemptions   rate (%)    p50 (ms)"),
            "{t}"
        );
        assert!(lines[2].ends_with(&format!(" {:>8} {:>11} {:>10} {:>11}", "-", "-", "-", "-")));
        assert!(lines[3].ends_with(&format!(
            " {:>8} {:>11} {:>10} {:>11}",
            "0.1", "-", "-", "-"
        )));
        let t = variants_table(&["a"], &[&plain]);
        assert!(
            t.lines().nth(1).unwrap().ends_with(&format!(" {:>9}", "")),
            "{t}"
        );
        assert!(!t.contains("preemptions"));
    }

    #[test]
    fn no_block_without_the_levers() {
        let s = summary(&["--mode", "colocated"]);
        assert!(s.scheduler.is_none());
        assert_eq!(scheduler_block(&s), "");
        let t = text(&s);
        assert!(!t.contains("scheduling"), "{t}");
        assert!(t.lines().last().unwrap().starts_with("hot-spot"), "{t}");
    }

    #[test]
    fn optional_parts_are_left_out_and_undefined_figures_say_n_a() {
        let mut s = summary(&["--mode", "colocated", "--kv-policy", "pow2"]);
        let mut b = full_block();
        b.kv_policy = "pow2".into();
        b.kv_unit_tokens = 1;
        b.kv_token_frac = f64::NAN;
        b.preemption = None;
        b.preemptions = None;
        b.recompute_tokens = None;
        b.swap = None;
        b.prefix_cache = None;
        b.speculative = None;
        b.sched_delay_p50_s = Some(f64::NAN);
        b.norm_latency_s_per_token = None;
        s.scheduler = Some(b);
        s.requests.rejected = 0;
        assert_eq!(
            scheduler_block(&s),
            "\
── scheduling and KV memory ──
scheduling   batch chunked (budget 2,048 tokens a step)   KV pow2: 1,751 units x 1 token
             mean running 12.3   KV holding share n/a   prefill tokens computed 123,456
             scheduling delay p50 n/a ms   normalised latency n/a ms/token
"
        );
    }

    #[test]
    fn a_speculative_run_without_verify_rows_says_n_a() {
        let mut s = summary(&["--mode", "colocated", "--speculative", "mtp"]);
        let mut b = full_block();
        b.swap = None;
        b.prefix_cache = None;
        b.preemption = None;
        b.preemptions = None;
        b.recompute_tokens = None;
        if let Some(x) = &mut b.speculative {
            x.tokens_per_verify = f64::NAN;
            x.verify_rows = 0;
            x.draft_time_frac = 0.0;
        }
        s.scheduler = Some(b);
        s.requests.rejected = 0;
        let t = scheduler_block(&s);
        assert!(
            t.ends_with(
                "speculative  draft mtp gamma 3 alpha 0.7: n/a tokens per verify (closed form \
                 2.533) over 0 verify rows, drafting 0.0% of busy time\n"
            ),
            "{t}"
        );
    }

    #[test]
    fn rejections_say_how_many_why_and_which_capacity() {
        // Colocated: the need against colocated-0's capacity, in the policy's words (`docs/levers.md#kv-reservation`).
        let mut s = summary(&["--mode", "colocated", "--kv-policy", "max"]);
        let mut b = full_block();
        for (policy, words) in [
            ("oracle", "prompt + output tokens"),
            (
                "pow2",
                "prompt + output rounded up to a power of two, tokens",
            ),
            ("max", "max(max_seq_len, prompt + output) tokens"),
            (
                "paged",
                "blocks of prompt + output, plus the free-block watermark",
            ),
        ] {
            b.kv_policy = policy.into();
            s.scheduler = Some(b.clone());
            s.requests.rejected = 1234;
            let last = scheduler_block(&s).lines().last().unwrap().to_string();
            assert_eq!(
                last,
                format!(
                    "rejected     1,234 requests can never fit: their KV need ({words}) exceeds \
                     colocated-0's capacity of 1,751 units x 16 tokens"
                )
            );
        }
        // No rejections: no line.
        s.requests.rejected = 0;
        assert!(!scheduler_block(&s).contains("rejected"));
        // Disaggregated: decode-0's capacity, or the prompt against prefill-0's.
        let mut s = summary(&["--kv-policy", "max"]);
        b.kv_policy = "max".into();
        b.prefill_kv_capacity_units = Some(900);
        s.scheduler = Some(b);
        s.requests.rejected = 2;
        let t = scheduler_block(&s);
        assert!(
            t.contains(
                "KV max: 1,751 units x 16 tokens per decode instance, 900 units per prefill \
                 instance\n"
            ),
            "{t}"
        );
        assert_eq!(
            t.lines().last().unwrap(),
            "rejected     2 requests can never fit: their KV need (max(max_seq_len, prompt + \
             output) tokens) exceeds decode-0's capacity of 1,751 units x 16 tokens, or their \
             prompt exceeds prefill-0's 900 units x 16 tokens"
        );
    }

    #[test]
    fn calibrated_lines_group_pools_by_device() {
        let cal = |cv_p: f64| disagg_model::Calibration {
            measurements: vec!["a.csv".into(), "b.csv".into()],
            fit: "f".into(),
            groups: vec!["g".into()],
            in_sample_prefill_mape: 0.0,
            in_sample_decode_mape: 0.0,
            cv_prefill_mape: cv_p,
            cv_decode_mape: 0.0312,
            tool: "t".into(),
        };
        let row = |pool: &str, device: &str, cv_p: f64| disagg_sim::CalibrationSummary {
            pool: pool.into(),
            device: device.into(),
            calibration: cal(cv_p),
        };
        let c = [
            row("prefill", "x-fit", 0.079),
            row("decode", "y-fit", 0.5),
            row("colocated", "x-fit", 0.079),
        ];
        assert_eq!(
            calibration_lines(&c),
            "calibrated   prefill/colocated on x-fit: fitted to a.csv, b.csv (1 group), CV MAPE \
             prefill 7.9% decode 3.1%\n\
             calibrated   decode on y-fit: fitted to a.csv, b.csv (1 group), CV MAPE prefill \
             50.0% decode 3.1%\n"
        );
        assert_eq!(calibration_lines(&[]), "");
    }
}
