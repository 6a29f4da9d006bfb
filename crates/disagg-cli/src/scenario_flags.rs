//! The options of one simulation, shared by `run`, `compare` (and later `sweep`): the reference
//! CLI's flags, a scenario file and named presets, layered as
//! defaults < `--preset` < `--config` file < flags.

use std::path::{Path, PathBuf};

use clap::Args;
use disagg_sim::scenario::Scenario;

use crate::UsageError;

/// Options of one simulation. Every flag left out keeps the preset's, the file's, or the
/// reference's default (shown in brackets).
#[derive(Args, Debug, Clone, Default)]
pub struct ScenarioFlags {
    /// Start from a named scenario (`disagg presets` lists them).
    #[arg(long, value_name = "NAME", help_heading = "Scenario")]
    pub preset: Option<String>,
    /// Read options from a TOML scenario file (keys: the flags' names with '_' for '-').
    #[arg(long, value_name = "FILE.toml", help_heading = "Scenario")]
    pub config: Option<PathBuf>,
    /// Model [llama3-70b].
    #[arg(long, help_heading = "Model and hardware")]
    pub model: Option<String>,
    /// Device of every instance [h100].
    #[arg(long, help_heading = "Model and hardware")]
    pub device: Option<String>,
    /// Devices per instance, tensor parallel [4].
    #[arg(
        long,
        value_name = "N",
        allow_negative_numbers = true,
        help_heading = "Model and hardware"
    )]
    pub devices_per_instance: Option<u32>,
    /// Device of the prefill pool [--device].
    #[arg(long, help_heading = "Model and hardware")]
    pub prefill_device: Option<String>,
    /// Device of the decode pool [--device].
    #[arg(long, help_heading = "Model and hardware")]
    pub decode_device: Option<String>,
    /// Devices per prefill instance [--devices-per-instance].
    #[arg(
        long,
        value_name = "N",
        allow_negative_numbers = true,
        help_heading = "Model and hardware"
    )]
    pub prefill_devices_per_instance: Option<u32>,
    /// Devices per decode instance [--devices-per-instance].
    #[arg(
        long,
        value_name = "N",
        allow_negative_numbers = true,
        help_heading = "Model and hardware"
    )]
    pub decode_devices_per_instance: Option<u32>,
    /// Where the prefill step runs the LM head: all (every prompt token) or last [all].
    #[arg(long, value_name = "all|last", help_heading = "Model and hardware")]
    pub prefill_lm_head: Option<String>,
    /// disagg or colocated [disagg].
    #[arg(long, help_heading = "Pools and link")]
    pub mode: Option<String>,
    /// Prefill instances (colocated: instances = prefill + decode) [1].
    #[arg(
        long,
        value_name = "N",
        allow_negative_numbers = true,
        help_heading = "Pools and link"
    )]
    pub prefill: Option<u32>,
    /// Decode instances [1].
    #[arg(
        long,
        value_name = "N",
        allow_negative_numbers = true,
        help_heading = "Pools and link"
    )]
    pub decode: Option<u32>,
    /// KV link [ib-ndr].
    #[arg(long, help_heading = "Pools and link")]
    pub link: Option<String>,
    /// Concurrent transfers on the link [1].
    #[arg(
        long,
        value_name = "N",
        allow_negative_numbers = true,
        help_heading = "Pools and link"
    )]
    pub link_channels: Option<u32>,
    /// KV compression preset (none, fp8, fp4-block, freq-keep-k, ...) [no compression].
    #[arg(long, value_name = "NAME", help_heading = "Pools and link")]
    pub kv_compress: Option<String>,
    /// Where to compress: transit (in the link) or endpoint (on the prefill GPU) [transit].
    #[arg(long, value_name = "WHERE", help_heading = "Pools and link")]
    pub kv_compress_at: Option<String>,
    /// How the KV cache leaves prefill: whole (after the step, the reference) or layerwise (each
    /// layer's slice as soon as that layer is done) [whole].
    #[arg(
        long,
        value_name = "whole|layerwise",
        help_heading = "Beyond the reference"
    )]
    pub send: Option<String>,
    /// fifo (C independent FIFO channels, the reference) or fair (processor sharing: active
    /// transfers split the bandwidth equally) [fifo].
    #[arg(long, value_name = "fifo|fair", help_heading = "Beyond the reference")]
    pub link_sharing: Option<String>,
    /// shared (one link for everything, the reference), per-prefill (one per prefill instance:
    /// its NIC) or per-pair (one per prefill-decode pair) [shared].
    #[arg(long, value_name = "TOPOLOGY", help_heading = "Beyond the reference")]
    pub link_topology: Option<String>,
    /// When decode KV memory is reserved: arrival (when the KV lands, the reference) or transfer
    /// (before the transfer starts, so decode memory throttles hand-offs) [arrival].
    #[arg(
        long,
        value_name = "arrival|transfer",
        help_heading = "Beyond the reference"
    )]
    pub reserve_kv_on: Option<String>,
    /// Who emits the first token: prefill (at the end of prefill, DistServe's accounting, the
    /// reference) or decode (after the KV lands, llm-d/Dynamo: the hand-off shows in TTFT) [prefill].
    #[arg(
        long,
        value_name = "prefill|decode",
        help_heading = "Beyond the reference"
    )]
    pub first_token: Option<String>,
    /// A named workload: chat, coding-agent, offline-batch, long-rag, voice (its lengths,
    /// sessions and SLOs; a shared prefix is sent and computed like any prompt: no prefix caching).
    #[arg(long, value_name = "NAME", help_heading = "Workload")]
    pub workload: Option<String>,
    /// Turns per session; turns after the first are closed-loop [1].
    #[arg(
        long,
        value_name = "N",
        allow_negative_numbers = true,
        help_heading = "Workload"
    )]
    pub turns: Option<u32>,
    /// Mean think time between a reply and the next turn, s [0].
    #[arg(
        long,
        value_name = "S",
        allow_negative_numbers = true,
        help_heading = "Workload"
    )]
    pub think: Option<f64>,
    /// Distinct shared system prompts [0].
    #[arg(long, value_name = "N", help_heading = "Workload")]
    pub system_prompts: Option<u64>,
    /// System prompt length, tokens [0].
    #[arg(long, value_name = "TOKENS", help_heading = "Workload")]
    pub system_len: Option<u64>,
    /// Fraction of sessions with a system prompt [1.0].
    #[arg(
        long,
        value_name = "F",
        allow_negative_numbers = true,
        help_heading = "Workload"
    )]
    pub prefix_share: Option<f64>,
    /// Replay a request trace instead of generating requests: Azure LLM inference CSV, Mooncake
    /// JSONL, BurstGPT CSV or the reference's JSON rows, detected from the content. Timestamps out
    /// of order are rejected unless --sort is given.
    #[arg(long, value_name = "FILE", help_heading = "Trace replay")]
    pub trace_file: Option<String>,
    /// Clip replayed prompts to this many tokens [the model's context; reported, never silent].
    #[arg(long, value_name = "TOKENS", help_heading = "Trace replay")]
    pub max_context: Option<u64>,
    #[command(flatten)]
    pub trace: crate::trace_cmd::TraceReadFlags,
    /// Poisson arrival rate, requests/s [4].
    #[arg(
        long,
        value_name = "R",
        allow_negative_numbers = true,
        help_heading = "Workload"
    )]
    pub rate: Option<f64>,
    /// Number of requests [800].
    #[arg(
        long,
        value_name = "N",
        allow_negative_numbers = true,
        help_heading = "Workload"
    )]
    pub requests: Option<u64>,
    /// Mean prompt length, tokens [2048].
    #[arg(
        long,
        value_name = "TOKENS",
        allow_negative_numbers = true,
        help_heading = "Workload"
    )]
    pub prompt: Option<f64>,
    /// Coefficient of variation of prompt lengths (log-normal) [0.5].
    #[arg(
        long,
        value_name = "CV",
        allow_negative_numbers = true,
        help_heading = "Workload"
    )]
    pub prompt_cv: Option<f64>,
    /// Mean output length, tokens [256].
    #[arg(
        long,
        value_name = "TOKENS",
        allow_negative_numbers = true,
        help_heading = "Workload"
    )]
    pub output: Option<f64>,
    /// Coefficient of variation of output lengths [0.5].
    #[arg(
        long,
        value_name = "CV",
        allow_negative_numbers = true,
        help_heading = "Workload"
    )]
    pub output_cv: Option<f64>,
    /// Workload seed (CPython-compatible Mersenne Twister) [1].
    #[arg(long, value_name = "N", help_heading = "Workload")]
    pub seed: Option<u64>,
    /// TTFT SLO, seconds [1.0].
    #[arg(
        long,
        value_name = "S",
        allow_negative_numbers = true,
        help_heading = "SLOs"
    )]
    pub ttft_slo: Option<f64>,
    /// TPOT SLO, seconds per output token [0.025].
    #[arg(
        long,
        value_name = "S",
        allow_negative_numbers = true,
        help_heading = "SLOs"
    )]
    pub tpot_slo: Option<f64>,
    /// Power cap per device, W [TDP].
    #[arg(
        long,
        value_name = "W",
        allow_negative_numbers = true,
        help_heading = "Power"
    )]
    pub power_cap: Option<f64>,
    /// Power cap per prefill device, W [--power-cap].
    #[arg(
        long,
        value_name = "W",
        allow_negative_numbers = true,
        help_heading = "Power"
    )]
    pub prefill_power_cap: Option<f64>,
    /// Power cap per decode device, W [--power-cap].
    #[arg(
        long,
        value_name = "W",
        allow_negative_numbers = true,
        help_heading = "Power"
    )]
    pub decode_power_cap: Option<f64>,
    /// Lower the clock on memory-bound steps.
    #[arg(long, help_heading = "Power")]
    pub dvfs: bool,
    /// The exact macro-step decode path (same numbers, much faster).
    #[arg(long, help_heading = "Scenario")]
    pub fast: bool,
    #[command(flatten)]
    pub model_shape: crate::custom::ModelFlags,
    #[command(flatten)]
    pub link_custom: crate::custom::LinkFlags,
    #[command(flatten)]
    pub device_custom: crate::custom::DeviceFlags,
}

/// Reads a scenario file (`--config`) on top of `base`: keys are `Scenario`'s fields, plus
/// `preset`.
pub fn overlay_file(base: Scenario, path: &Path, cli_preset: bool) -> Result<Scenario, UsageError> {
    let table: toml::Table = crate::custom::read_toml("--config", path)?;
    overlay_table(base, table, &path.display().to_string(), cli_preset)
}

/// A scenario table on top of `base`; `at` (a file name, ...) prefixes messages.
pub fn overlay_table(
    base: Scenario,
    mut table: toml::Table,
    at: &str,
    cli_preset: bool,
) -> Result<Scenario, UsageError> {
    let mut base = base;
    if let Some(p) = table.remove("preset") {
        let name = p
            .as_str()
            .ok_or_else(|| UsageError(format!("{at}: preset: expected a string")))?;
        if !cli_preset {
            base = disagg_sim::presets::find(name)
                .map_err(|e| UsageError(format!("{at}: {e}")))?
                .scenario;
        }
    }
    let mut merged = toml::Table::try_from(&base).map_err(|e| UsageError(e.to_string()))?;
    for (k, v) in table {
        merged.insert(k, v);
    }
    let text = toml::to_string(&merged).map_err(|e| UsageError(e.to_string()))?;
    toml::from_str::<Scenario>(&text)
        .map_err(|e| UsageError(format!("{at}: {}", e.message().replace('\n', " "))))
}

impl ScenarioFlags {
    /// The layered scenario (not yet validated: `Scenario::build` does that).
    pub fn scenario(&self) -> Result<Scenario, UsageError> {
        let mut s = match &self.preset {
            Some(name) => {
                disagg_sim::presets::find(name)
                    .map_err(|e| UsageError(format!("--preset: {e}")))?
                    .scenario
            }
            None => Scenario::default(),
        };
        if let Some(path) = &self.config {
            s = overlay_file(s, path, self.preset.is_some())?;
        }
        macro_rules! set {
            ($($f:ident),*) => { $( if let Some(v) = &self.$f { s.$f = v.clone(); } )* };
        }
        macro_rules! set_opt {
            ($($f:ident),*) => { $( if let Some(v) = &self.$f { s.$f = Some(v.clone()); } )* };
        }
        set!(
            model,
            device,
            devices_per_instance,
            mode,
            prefill,
            decode,
            link,
            link_channels,
            rate,
            requests,
            prompt,
            prompt_cv,
            output,
            output_cv,
            seed,
            send,
            link_sharing,
            link_topology,
            reserve_kv_on,
            first_token,
            turns,
            think,
            system_prompts,
            system_len,
            prefix_share
        );
        set_opt!(
            prefill_device,
            decode_device,
            prefill_devices_per_instance,
            decode_devices_per_instance,
            prefill_lm_head,
            kv_compress,
            power_cap,
            prefill_power_cap,
            decode_power_cap,
            ttft_slo,
            tpot_slo
        );
        macro_rules! set_opt2 {
            ($($f:ident),*) => { $( if let Some(v) = &self.$f { s.$f = Some(v.clone()); } )* };
        }
        set_opt2!(workload, trace_file, max_context);
        let t = &self.trace;
        if let Some(v) = &t.trace_format {
            s.trace_format = Some(v.clone());
        }
        if let Some(v) = t.time_scale {
            s.time_scale = v;
        }
        if let Some(v) = t.start {
            s.trace_start = Some(v);
        }
        if let Some(v) = t.duration {
            s.trace_duration = Some(v);
        }
        if let Some(v) = t.max_requests {
            s.max_requests = Some(v);
        }
        if t.skip_bad_lines {
            s.skip_bad_lines = true;
        }
        if t.sort {
            s.sort_trace = true;
        }
        if let Some(v) = &self.kv_compress_at {
            s.kv_compress_at = v.clone();
        }
        if self.dvfs {
            s.dvfs = true;
        }
        if self.fast {
            s.fast = true;
        }
        macro_rules! set_custom {
            ($g:ident: $($f:ident),*) => { $( if let Some(v) = self.$g.$f { s.$f = Some(v); } )* };
        }
        set_custom!(model_shape: layers, d_model, heads, kv_heads, head_dim, d_ff, vocab, weight_bytes, kv_bytes);
        set_custom!(link_custom: link_bandwidth_gb_s, link_latency_us, link_pj_per_bit);
        set_custom!(device_custom: device_peak_tflops, device_mem_bw_tb_s, device_mem_gb, device_tdp_w, device_idle_w);
        if s.trace_file.is_some() {
            self.check_trace_ignores("--trace-file")?;
        }
        self.check_ignored(&s)?;
        Ok(s)
    }

    /// Flags a replayed trace (`--trace-file`, or `run --workload-file`) would silently ignore are
    /// an error: the trace brings its own arrivals, count and lengths.
    pub fn check_trace_ignores(&self, source: &str) -> Result<(), UsageError> {
        let mut given = self.workload_flags();
        given.push(("--seed", self.seed.map(|x| x.to_string())));
        if let Some((flag, v)) = given.iter().find(|(_, v)| v.is_some()) {
            return Err(UsageError(format!(
                "{flag} {}: a replayed trace ({source}) brings its own arrivals, count and \
                 lengths (no random draws), so {flag} would be ignored; drop one of them",
                v.as_deref().unwrap_or_default()
            )));
        }
        Ok(())
    }

    /// The generator's flags that were given: (flag, value as given).
    fn workload_flags(&self) -> Vec<(&'static str, Option<String>)> {
        let f = |v: Option<f64>| v.map(|x| x.to_string());
        let u = |v: Option<u64>| v.map(|x| x.to_string());
        vec![
            ("--rate", f(self.rate)),
            ("--requests", u(self.requests)),
            ("--prompt", f(self.prompt)),
            ("--prompt-cv", f(self.prompt_cv)),
            ("--output", f(self.output)),
            ("--output-cv", f(self.output_cv)),
            ("--turns", self.turns.map(|x| x.to_string())),
            ("--think", f(self.think)),
            ("--system-prompts", u(self.system_prompts)),
            ("--system-len", u(self.system_len)),
            ("--prefix-share", f(self.prefix_share)),
        ]
    }

    /// Flags the layered scenario would silently ignore are an error: lengths and sessions
    /// beside a named workload, KV-link flags in colocated mode. (A sweep that varies `mode`
    /// keeps its link flags: only the scenario's own mode is checked here.)
    fn check_ignored(&self, s: &Scenario) -> Result<(), UsageError> {
        if let Some(w) = &s.workload {
            // --rate and --requests apply to a named workload; its lengths and sessions replace
            // the rest.
            if let Some((flag, v)) = self.workload_flags()[2..].iter().find(|(_, v)| v.is_some()) {
                return Err(UsageError(format!(
                    "{flag} {}: the named workload '{w}' sets the lengths and sessions, so {flag} \
                     would be ignored; drop one of them",
                    v.as_deref().unwrap_or_default()
                )));
            }
        }
        if s.mode == "colocated" {
            let l = &self.link_custom;
            let f = |v: Option<f64>| v.map(|x| x.to_string());
            let given = [
                ("--link", self.link.clone()),
                ("--link-channels", self.link_channels.map(|x| x.to_string())),
                ("--link-bandwidth-gb-s", f(l.link_bandwidth_gb_s)),
                ("--link-latency-us", f(l.link_latency_us)),
                ("--link-pj-per-bit", f(l.link_pj_per_bit)),
                ("--kv-compress-at", self.kv_compress_at.clone()),
            ];
            if let Some((flag, v)) = given.iter().find(|(_, v)| v.is_some()) {
                return Err(UsageError(format!(
                    "{flag} {}: colocated mode has no KV link, so {flag} would be ignored; \
                     drop it or use --mode disagg",
                    v.as_deref().unwrap_or_default()
                )));
            }
        }
        Ok(())
    }
}
