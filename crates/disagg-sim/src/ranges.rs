//! The valid range of every numeric input, defined once.
//!
//! [`RANGES`] lists each numeric flag of the CLI with its scenario key (if it is a [`Scenario`]
//! option), its bounds, its unit and what it means. [`Scenario::build`] checks every scenario key
//! against it; the CLI checks its own flags (and the raw text of every numeric flag, so errors quote
//! the value as typed) against it; the README's "Valid ranges" table is generated from it.
//!
//! [`Scenario`]: crate::Scenario
//! [`Scenario::build`]: crate::Scenario::build

use disagg_model::Error;
use serde::Serialize;

use crate::scenario::{MAX_CHANNELS, MAX_DEVICES, MAX_INSTANCES, MAX_REQUESTS};

/// The bounds of a numeric input.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Bounds {
    /// A whole number in `[min, max]`.
    Int {
        /// Smallest valid value.
        min: u64,
        /// Largest valid value.
        max: u64,
    },
    /// A finite real number between `min` and `max` (NaN and infinities are never valid).
    Float {
        /// Lower bound.
        min: f64,
        /// Whether `min` itself is valid.
        min_inclusive: bool,
        /// Upper bound.
        max: f64,
        /// Whether `max` itself is valid.
        max_inclusive: bool,
    },
}

/// One numeric input: its flag, scenario key, bounds, unit and meaning.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct NumRange {
    /// The CLI flag (`--rate`).
    pub flag: &'static str,
    /// The scenario key (`rate`) for options of [`crate::Scenario`]; `None` for command-only flags.
    pub key: Option<&'static str>,
    /// The commands that take the flag (`run`, `compare`, `sweep`, `plan`, `handoff`,
    /// `trace-stats`, `bench`, `serve`).
    pub commands: &'static [&'static str],
    /// The valid values.
    pub bounds: Bounds,
    /// Unit (empty: a pure number).
    pub unit: &'static str,
    /// One line: what it means.
    pub meaning: &'static str,
}

/// A parsed numeric value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Num {
    /// A whole number.
    Int(u64),
    /// A real number.
    Float(f64),
}

/// The commands that take the scenario options.
const SCENARIO: &[&str] = &["run", "compare", "sweep", "plan"];
const TRACE: &[&str] = &["run", "compare", "sweep", "plan", "trace-stats"];
const HANDOFF: &[&str] = &["handoff"];
const SCENARIO_AND_HANDOFF: &[&str] = &["run", "compare", "sweep", "plan", "handoff"];
/// The commands that take the custom-hardware flags (`--layers`, `--link-bandwidth-gb-s`,
/// `--device-*`): add a command here when it gets them (a unit test of the CLI checks both ways).
const CUSTOM_HW: &[&str] = SCENARIO_AND_HANDOFF;

const fn int(min: u64, max: u64) -> Bounds {
    Bounds::Int { min, max }
}

/// `[min, max]`.
const fn closed(min: f64, max: f64) -> Bounds {
    Bounds::Float {
        min,
        min_inclusive: true,
        max,
        max_inclusive: true,
    }
}

/// `(min, max]`.
const fn open_closed(min: f64, max: f64) -> Bounds {
    Bounds::Float {
        min,
        min_inclusive: false,
        max,
        max_inclusive: true,
    }
}

macro_rules! ranges {
    ($( $flag:literal, $key:expr, $cmds:expr, $bounds:expr, $unit:literal, $meaning:literal; )*) => {
        /// Every numeric input, in the order of the README table.
        pub const RANGES: &[NumRange] = &[$(NumRange {
            flag: $flag,
            key: $key,
            commands: $cmds,
            bounds: $bounds,
            unit: $unit,
            meaning: $meaning,
        }),*];
    };
}

const SHAPE_MAX: u64 = 1 << 24;
/// Largest token budget and `max_seq_len` (100M tokens: far beyond any context).
const MAX_BUDGET: u64 = 100_000_000;
/// Largest KV block (65,536 tokens; engines use 16 to 128).
const MAX_BLOCK: u64 = 65_536;
/// Largest generated length clip bound (`--prompt-max` ...: 10M tokens, as `--prompt`'s mean).
const MAX_LENGTH: u64 = 10_000_000;
/// Largest `--max-decode-batch` (1M sequences: beyond any KV memory).
const MAX_BATCH: u64 = 1_000_000;
/// Largest `--microbatches` (a step is split into at most its tokens anyway).
const MAX_MICROBATCHES: u64 = 1_000_000;
/// Largest `gamma` (drafts of a few tokens are the practice; 64 bounds the verify pass).
const MAX_GAMMA: u64 = 64;

ranges! {
    // Scenario options (run, compare, sweep, plan; also scenario files, `--vary`, the web API).
    "--rate", Some("rate"), SCENARIO, closed(1e-6, 1e6), "req/s", "Poisson arrival rate";
    "--requests", Some("requests"), SCENARIO, int(1, MAX_REQUESTS), "requests", "requests generated";
    "--prompt", Some("prompt"), SCENARIO, closed(1.0, 1e7), "tokens", "mean prompt length";
    "--prompt-cv", Some("prompt_cv"), SCENARIO, closed(0.0, 100.0), "", "coefficient of variation of prompt lengths";
    "--output", Some("output"), SCENARIO, closed(1.0, 1e7), "tokens", "mean output length";
    "--output-cv", Some("output_cv"), SCENARIO, closed(0.0, 100.0), "", "coefficient of variation of output lengths";
    "--prompt-min", Some("prompt_min"), SCENARIO, int(1, MAX_LENGTH), "tokens", "shortest generated prompt (clip bound)";
    "--prompt-max", Some("prompt_max"), SCENARIO, int(1, MAX_LENGTH), "tokens", "longest generated prompt (clip bound)";
    "--output-min", Some("output_min"), SCENARIO, int(1, MAX_LENGTH), "tokens", "shortest generated output (clip bound)";
    "--output-max", Some("output_max"), SCENARIO, int(1, MAX_LENGTH), "tokens", "longest generated output (clip bound)";
    "--seed", Some("seed"), SCENARIO, int(0, u64::MAX), "", "workload seed";
    "--ttft-slo", Some("ttft_slo"), SCENARIO, closed(1e-6, 1e6), "s", "TTFT SLO";
    "--tpot-slo", Some("tpot_slo"), SCENARIO, closed(1e-6, 1e6), "s/token", "TPOT SLO";
    "--devices-per-instance", Some("devices_per_instance"), SCENARIO_AND_HANDOFF, int(1, MAX_DEVICES as u64), "devices", "devices per instance (tensor parallel)";
    "--prefill-devices-per-instance", Some("prefill_devices_per_instance"), SCENARIO, int(1, MAX_DEVICES as u64), "devices", "devices per prefill instance";
    "--decode-devices-per-instance", Some("decode_devices_per_instance"), SCENARIO, int(1, MAX_DEVICES as u64), "devices", "devices per decode instance";
    "--prefill", Some("prefill"), SCENARIO, int(0, MAX_INSTANCES as u64), "instances", "prefill instances (colocated: prefill + decode instances)";
    "--decode", Some("decode"), SCENARIO, int(0, MAX_INSTANCES as u64), "instances", "decode instances";
    "--link-channels", Some("link_channels"), SCENARIO_AND_HANDOFF, int(1, MAX_CHANNELS as u64), "channels", "concurrent transfers on the KV link";
    "--power-cap", Some("power_cap"), SCENARIO, closed(1.0, 1e5), "W", "power cap per device (above the device's idle power)";
    "--prefill-power-cap", Some("prefill_power_cap"), SCENARIO, closed(1.0, 1e5), "W", "power cap per prefill device";
    "--decode-power-cap", Some("decode_power_cap"), SCENARIO, closed(1.0, 1e5), "W", "power cap per decode device";
    "--turns", Some("turns"), SCENARIO, int(1, 10_000), "turns", "turns per session";
    "--think", Some("think"), SCENARIO, closed(0.0, 1e7), "s", "mean think time between a reply and the next turn";
    "--system-prompts", Some("system_prompts"), SCENARIO, int(0, 1_000_000), "prompts", "distinct shared system prompts";
    "--system-len", Some("system_len"), SCENARIO, int(0, 10_000_000), "tokens", "system prompt length";
    "--prefix-share", Some("prefix_share"), SCENARIO, closed(0.0, 1.0), "", "fraction of sessions with a system prompt";
    "--max-num-batched-tokens", Some("max_num_batched_tokens"), SCENARIO, int(1, MAX_BUDGET), "tokens", "token budget of one scheduled step";
    "--kv-block-size", Some("kv_block_size"), SCENARIO, int(1, MAX_BLOCK), "tokens", "tokens per KV block (paged)";
    "--max-seq-len", Some("max_seq_len"), SCENARIO, int(0, MAX_BUDGET), "tokens", "reservation floor of the max KV policy";
    "--max-decode-batch", Some("max_decode_batch"), SCENARIO, int(1, MAX_BATCH), "sequences", "most sequences running on a colocated or decode instance";
    "--gamma", Some("gamma"), SCENARIO, int(1, MAX_GAMMA), "tokens", "drafted tokens per verify pass";
    "--alpha", Some("alpha"), SCENARIO, closed(0.0, 1.0), "", "acceptance probability of each drafted token";
    "--spec-seed", Some("spec_seed"), SCENARIO, int(0, u64::MAX), "", "seed of the acceptance draws";
    "--tp", Some("tp"), SCENARIO, int(0, MAX_DEVICES as u64), "devices", "tensor-parallel degree (0: 1)";
    "--pp", Some("pp"), SCENARIO, int(0, MAX_DEVICES as u64), "stages", "pipeline stages (0: 1)";
    "--ep", Some("ep"), SCENARIO, int(0, MAX_DEVICES as u64), "devices", "expert-parallel degree (0: 1)";
    "--microbatches", Some("microbatches"), SCENARIO, int(0, MAX_MICROBATCHES), "micro-batches", "micro-batches per pipelined step";
    "--expert-imbalance", Some("expert_imbalance"), SCENARIO, closed(0.0, 1000.0), "", "busiest GPU's expert load over the mean (0: 1)";
    "--prefill-tp", Some("prefill_tp"), SCENARIO, int(0, MAX_DEVICES as u64), "devices", "the prefill pool's tensor-parallel degree";
    "--prefill-pp", Some("prefill_pp"), SCENARIO, int(0, MAX_DEVICES as u64), "stages", "the prefill pool's pipeline stages";
    "--decode-tp", Some("decode_tp"), SCENARIO, int(0, MAX_DEVICES as u64), "devices", "the decode pool's tensor-parallel degree";
    "--decode-pp", Some("decode_pp"), SCENARIO, int(0, MAX_DEVICES as u64), "stages", "the decode pool's pipeline stages";
    "--nics-per-instance", Some("nics_per_instance"), SCENARIO, int(1, MAX_DEVICES as u64), "NICs", "rank-aware hand-off of a run: NICs per instance";
    "--ced-encoder-layers", Some("ced_encoder_layers"), SCENARIO, int(0, SHAPE_MAX), "layers", "CED: encoder layers (0: no CED; below the model's layers)";
    "--ced-replay", Some("ced_replay"), SCENARIO, int(1, MAX_BUDGET), "tokens", "CED: prompt tokens replayed through the whole model";
    "--fft-efficiency", Some("fft_efficiency"), SCENARIO, closed(1e-6, 1e6), "", "speed of FFT work on the digital units relative to dense FLOPs";
    "--ft-samples-per-s", Some("ft_samples_per_s"), SCENARIO, closed(1.0, 1e18), "samples/s", "optical engine: converter samples per second";
    "--ft-enob", Some("ft_enob"), SCENARIO, int(1, 32), "bits", "optical engine: effective bits of the converters";
    "--ft-static-w", Some("ft_static_w"), SCENARIO, closed(0.0, 1e5), "W", "optical engine: static power per device";
    "--ft-mask-rate", Some("ft_mask_rate"), SCENARIO, closed(1e-6, 1e12), "Hz", "optical engine: mask rewrites per second";
    "--max-context", Some("max_context"), SCENARIO, int(1, 100_000_000), "tokens", "clip replayed prompts to this length";
    "--time-scale", Some("time_scale"), TRACE, closed(1e-6, 1e6), "", "multiplier of a trace's inter-arrival gaps";
    "--start", Some("trace_start"), TRACE, closed(0.0, 1e9), "s", "start of the replayed window after the first arrival";
    "--duration", Some("trace_duration"), TRACE, closed(1e-6, 1e9), "s", "length of the replayed window";
    "--max-requests", Some("max_requests"), TRACE, int(1, MAX_REQUESTS), "requests", "replay at most this many requests";
    // compare
    "--sweep-rate", None, &["compare"], closed(1e-6, 1e6), "req/s", "each arrival rate of a rate sweep";
    // sweep
    "--threads", None, &["sweep"], int(1, 1024), "threads", "worker threads";
    // plan
    "--target-rate", None, &["plan"], closed(1e-6, 1e6), "req/s", "rate the cheapest configuration must sustain";
    "--slo-target", None, &["plan"], open_closed(0.0, 1.0), "", "fraction of measured requests that must meet both SLOs";
    "--energy-price", None, &["plan"], closed(0.0, 1e6), "USD/kWh", "energy price";
    "--price", None, &["plan"], closed(0.0, 1e6), "USD/h", "price override KEY=USD (per GPU, or per instance's link port)";
    "--prefill-counts", None, &["plan"], int(1, 64), "instances", "each prefill instance count to try (list or range)";
    "--decode-counts", None, &["plan"], int(1, 64), "instances", "each decode instance count to try (list or range)";
    "--top", None, &["plan"], int(1, 1_000_000), "rows", "rows of the ranked table";
    "--ci-half-width", None, &["plan"], closed(1e-4, 0.5), "", "max-rate: 95% interval half-width of the SLO attainment to reach";
    "--max-replications", None, &["plan"], int(2, 10_000), "replications", "max-rate: most replications per rate";
    "--gpus", None, &["plan"], int(1, 1_000_000), "GPUs", "GPU budget: the most GPUs a candidate may use";
    "--gpus-per-node", None, &["plan"], int(1, 1024), "GPUs", "GPUs per node: an instance fits a node or spans whole nodes";
    "--emit-top", None, &["plan"], int(1, 1000), "plans", "write the K best plans (--emit)";
    // handoff
    "--prompt-tokens", None, HANDOFF, int(1, u32::MAX as u64), "tokens", "prompt tokens whose KV cache is handed off";
    "--kv-keep", None, HANDOFF, closed(1e-4, 1.0), "", "fraction of coefficients freq-keep-k keeps";
    "--concurrent", None, HANDOFF, int(1, 65_536), "hand-offs", "hand-offs leaving at once";
    "--prefill-tp", None, HANDOFF, int(1, MAX_DEVICES as u64), "ranks", "rank-aware hand-off: tensor-parallel ranks of the prefill instance";
    "--prefill-pp", None, HANDOFF, int(1, MAX_DEVICES as u64), "stages", "rank-aware hand-off: pipeline stages of the prefill instance";
    "--decode-tp", None, HANDOFF, int(1, MAX_DEVICES as u64), "ranks", "rank-aware hand-off: tensor-parallel ranks of the decode instance";
    "--decode-pp", None, HANDOFF, int(1, MAX_DEVICES as u64), "stages", "rank-aware hand-off: pipeline stages of the decode instance";
    "--prefill-microbatches", None, HANDOFF, int(1, 65_536), "micro-batches", "rank-aware hand-off: micro-batches of the prefill pipeline";
    "--nics-per-instance", None, HANDOFF, int(1, MAX_DEVICES as u64), "NICs", "rank-aware hand-off: NICs per instance";
    "--layers", Some("layers"), CUSTOM_HW, int(1, SHAPE_MAX), "", "custom model: transformer layers";
    "--d-model", Some("d_model"), CUSTOM_HW, int(1, SHAPE_MAX), "", "custom model: hidden size";
    "--heads", Some("heads"), CUSTOM_HW, int(1, SHAPE_MAX), "", "custom model: query heads";
    "--kv-heads", Some("kv_heads"), CUSTOM_HW, int(1, SHAPE_MAX), "", "custom model: key/value heads";
    "--head-dim", Some("head_dim"), CUSTOM_HW, int(1, SHAPE_MAX), "", "custom model: head dimension";
    "--d-ff", Some("d_ff"), CUSTOM_HW, int(1, SHAPE_MAX), "", "custom model: MLP width";
    "--vocab", Some("vocab"), CUSTOM_HW, int(1, SHAPE_MAX), "", "custom model: vocabulary size";
    "--weight-bytes", Some("weight_bytes"), CUSTOM_HW, closed(0.0625, 16.0), "bytes", "custom model: bytes per weight";
    "--kv-bytes", Some("kv_bytes"), CUSTOM_HW, closed(0.0625, 16.0), "bytes", "custom model: bytes per cached K or V value";
    "--link-bandwidth-gb-s", Some("link_bandwidth_gb_s"), CUSTOM_HW, closed(1e-6, 1e6), "GB/s", "custom link: bandwidth per channel and direction";
    "--link-latency-us", Some("link_latency_us"), CUSTOM_HW, closed(0.0, 1e9), "µs", "custom link: latency per transfer";
    "--link-pj-per-bit", Some("link_pj_per_bit"), CUSTOM_HW, closed(0.0, 1e6), "pJ/bit", "custom link: energy";
    "--device-peak-tflops", Some("device_peak_tflops"), CUSTOM_HW, closed(1e-3, 1e6), "TFLOP/s", "custom device: dense BF16 peak";
    "--device-mem-bw-tb-s", Some("device_mem_bw_tb_s"), CUSTOM_HW, closed(1e-6, 1e4), "TB/s", "custom device: memory bandwidth";
    "--device-mem-gb", Some("device_mem_gb"), CUSTOM_HW, closed(1e-3, 1e6), "GB", "custom device: memory capacity";
    "--device-tdp-w", Some("device_tdp_w"), CUSTOM_HW, closed(1.0, 1e5), "W", "custom device: TDP";
    "--device-idle-w", Some("device_idle_w"), CUSTOM_HW, closed(0.0, 1e5), "W", "custom device: idle power";
    // bench, serve
    "--repeat", None, &["bench"], int(1, 100), "", "repetitions of each case";
    "--port", None, &["serve"], int(0, 65_535), "", "port to listen on (0: any free port)";
    "--threads", None, &["serve"], int(0, 1024), "threads", "worker threads (0: automatic)";
    "--memory-budget", None, &["serve"], int(0, 16_777_216), "MiB", "memory the simulations may hold at once (0: half of what the server can have)";
}

/// The entry of `flag` as `command` takes it.
pub fn for_command(command: &str, flag: &str) -> Option<&'static NumRange> {
    RANGES
        .iter()
        .find(|r| r.flag == flag && r.commands.contains(&command))
}

/// The entry of a flag (the first, for flags several commands take with different ranges).
pub fn for_flag(flag: &str) -> Option<&'static NumRange> {
    RANGES.iter().find(|r| r.flag == flag)
}

/// The entry of a scenario key.
pub fn for_key(key: &str) -> Option<&'static NumRange> {
    RANGES.iter().find(|r| r.key == Some(key))
}

/// A float in its shortest round-trip form, with an exponent when huge or tiny: `0.025`, `4096`,
/// `1e6`, `1e-300`, `1e308`, `NaN`, `inf`.
pub fn show_f64(x: f64) -> String {
    let a = x.abs();
    if !x.is_finite() || a == 0.0 || (1e-4..1e6).contains(&a) {
        format!("{x}")
    } else {
        format!("{x:e}")
    }
}

impl Bounds {
    /// `[1e-6, 1e6]`, `(0, 1]`, `1 to 4096` (whole numbers).
    pub fn describe(&self) -> String {
        match *self {
            Bounds::Int { min, max } => format!("{min} to {max}"),
            Bounds::Float {
                min,
                min_inclusive,
                max,
                max_inclusive,
            } => format!(
                "{}{}, {}{}",
                if min_inclusive { '[' } else { '(' },
                show_f64(min),
                show_f64(max),
                if max_inclusive { ']' } else { ')' }
            ),
        }
    }
}

impl NumRange {
    /// What the valid values are: `a number in [0, 1e7] s`, `a positive number in [1e-6, 1e6]
    /// req/s`, `a whole number from 1 to 4096 channels`.
    pub fn expected(&self) -> String {
        let unit = if self.unit.is_empty() {
            String::new()
        } else {
            format!(" {}", self.unit)
        };
        match self.bounds {
            Bounds::Int { .. } => format!("a whole number from {}{unit}", self.bounds.describe()),
            Bounds::Float {
                min, min_inclusive, ..
            } if min > 0.0 || (min == 0.0 && !min_inclusive) => {
                format!("a positive number in {}{unit}", self.bounds.describe())
            }
            Bounds::Float { .. } => format!("a number in {}{unit}", self.bounds.describe()),
        }
    }

    /// Whether `v` is valid (never for NaN or an infinity).
    pub fn contains(&self, v: Num) -> bool {
        match (self.bounds, v) {
            (Bounds::Int { min, max }, Num::Int(i)) => (min..=max).contains(&i),
            (Bounds::Int { .. }, Num::Float(_)) => false,
            (
                Bounds::Float {
                    min,
                    min_inclusive,
                    max,
                    max_inclusive,
                },
                v,
            ) => {
                let x = match v {
                    Num::Int(i) => i as f64,
                    Num::Float(x) => x,
                };
                x.is_finite()
                    && (if min_inclusive { x >= min } else { x > min })
                    && (if max_inclusive { x <= max } else { x < max })
            }
        }
    }

    /// Checks a value held in a scenario or request (the error shows it in its shortest form).
    pub fn check(&self, v: Num) -> Result<(), Error> {
        if self.contains(v) {
            return Ok(());
        }
        let shown = match v {
            Num::Int(i) => i.to_string(),
            Num::Float(x) => show_f64(x),
        };
        Err(Error::invalid(
            self.flag,
            format!("must be {}, got {shown}", self.expected()),
        ))
    }

    /// Parses and checks the text the user typed. The error says what is valid (`must be a
    /// number in [0, 1e7] s`); the caller names the flag and quotes the text.
    pub fn parse(&self, raw: &str) -> Result<Num, String> {
        let t = raw.trim();
        let bad = || format!("must be {}", self.expected());
        let v = match self.bounds {
            Bounds::Int { .. } => Num::Int(t.parse::<u64>().map_err(|_| bad())?),
            Bounds::Float { .. } => Num::Float(t.parse::<f64>().map_err(|_| bad())?),
        };
        if self.contains(v) {
            Ok(v)
        } else {
            Err(bad())
        }
    }
}

/// The README's "Valid ranges" table (Markdown), generated from [`RANGES`].
pub fn markdown_table() -> String {
    let mut out = String::from(
        "| flag | scenario key | valid values | unit | commands | meaning |\n\
         |---|---|---|---|---|---|\n",
    );
    for r in RANGES {
        let kind = match r.bounds {
            Bounds::Int { .. } => "whole number ",
            Bounds::Float { .. } => "",
        };
        out.push_str(&format!(
            "| `{}` | {} | {kind}{} | {} | {} | {} |\n",
            r.flag,
            r.key.map_or("-".to_string(), |k| format!("`{k}`")),
            r.bounds.describe(),
            if r.unit.is_empty() { "-" } else { r.unit },
            r.commands.join(", "),
            r.meaning
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortest_forms() {
        assert_eq!(show_f64(1e308), "1e308");
        assert_eq!(show_f64(1e-300), "1e-300");
        assert_eq!(show_f64(1e6), "1e6");
        assert_eq!(show_f64(0.025), "0.025");
        assert_eq!(show_f64(4096.0), "4096");
        assert_eq!(show_f64(-1.0), "-1");
        assert_eq!(show_f64(f64::NAN), "NaN");
        assert_eq!(show_f64(f64::NEG_INFINITY), "-inf");
    }

    #[test]
    fn parse_quotes_the_text_as_typed() {
        let r = for_flag("--think").unwrap();
        let e = r.parse("1e308").unwrap_err();
        assert_eq!(e, "must be a number in [0, 1e7] s");
        assert!(!e.contains(">= 0"), "{e}");
        assert_eq!(r.parse(" 2.5 "), Ok(Num::Float(2.5)));
        for bad in ["NaN", "inf", "-inf", "-1", "abc", ""] {
            assert!(r.parse(bad).is_err(), "{bad}");
        }
        let n = for_flag("--requests").unwrap();
        assert_eq!(
            n.parse("18446744073709551616").unwrap_err(),
            "must be a whole number from 1 to 50000000 requests"
        );
        assert!(n.parse("1.5").is_err());
        assert_eq!(n.parse("800"), Ok(Num::Int(800)));
        let s = for_flag("--seed").unwrap();
        assert_eq!(s.parse("18446744073709551615"), Ok(Num::Int(u64::MAX)));
    }

    #[test]
    fn bounds_are_sane_and_unique() {
        for (i, r) in RANGES.iter().enumerate() {
            assert!(r.flag.starts_with("--"), "{r:?}");
            assert!(!r.commands.is_empty() && !r.meaning.is_empty(), "{r:?}");
            match r.bounds {
                Bounds::Int { min, max } => assert!(min <= max, "{r:?}"),
                Bounds::Float { min, max, .. } => {
                    assert!(min.is_finite() && max.is_finite() && min < max, "{r:?}")
                }
            }
            for other in &RANGES[..i] {
                assert!(
                    other.flag != r.flag || r.commands.iter().all(|c| !other.commands.contains(c)),
                    "{} twice for one command",
                    r.flag
                );
                assert!(r.key.is_none() || other.key != r.key, "{:?} twice", r.key);
            }
        }
        let open = for_flag("--slo-target").unwrap();
        assert!(!open.contains(Num::Float(0.0)) && open.contains(Num::Float(1.0)));
        assert!(!for_flag("--rate").unwrap().contains(Num::Float(1e-300)));
    }
}

#[cfg(test)]
mod defaults {
    use super::*;
    use crate::Scenario;

    #[test]
    fn every_default_and_preset_is_in_range() {
        Scenario::default().check_ranges().unwrap();
        for p in crate::presets::all() {
            p.scenario
                .check_ranges()
                .unwrap_or_else(|e| panic!("preset {}: {e}", p.name));
        }
        // A named workload's values stand in for these options: they must be valid values too.
        for w in crate::sessions::workloads() {
            let s = Scenario {
                prompt: w.prompt.mean,
                prompt_cv: w.prompt.cv,
                output: w.output.mean,
                output_cv: w.output.cv,
                ttft_slo: Some(w.ttft_slo_s),
                tpot_slo: Some(w.tpot_slo_s),
                turns: w.shape.turns,
                think: w.shape.think_s,
                system_prompts: w.shape.system_prompts,
                system_len: w.shape.system_len,
                prefix_share: w.shape.share,
                ..Scenario::default()
            };
            s.check_ranges()
                .unwrap_or_else(|e| panic!("workload {}: {e}", w.key));
        }
    }

    #[test]
    fn every_numeric_scenario_key_has_a_range() {
        // Every option set, so optional numbers show up as numbers.
        let s = Scenario {
            power_cap: Some(500.0),
            prefill_power_cap: Some(500.0),
            decode_power_cap: Some(500.0),
            prefill_devices_per_instance: Some(2),
            decode_devices_per_instance: Some(2),
            trace_start: Some(1.0),
            trace_duration: Some(1.0),
            max_requests: Some(1),
            max_context: Some(1),
            max_num_batched_tokens: Some(8192),
            tp: Some(2),
            pp: Some(2),
            ep: Some(2),
            microbatches: Some(3),
            expert_imbalance: Some(1.5),
            fft_efficiency: Some(0.0625),
            ft_samples_per_s: Some(1e12),
            ft_enob: Some(11),
            ft_static_w: Some(20.0),
            ft_mask_rate: Some(20000.0),
            prefill_tp: Some(2),
            prefill_pp: Some(1),
            decode_tp: Some(1),
            decode_pp: Some(2),
            nics_per_instance: Some(2),
            ced_encoder_layers: Some(16),
            ced_replay: Some(128),
            ttft_slo: Some(1.0),
            tpot_slo: Some(0.025),
            layers: Some(2),
            d_model: Some(64),
            heads: Some(2),
            kv_heads: Some(1),
            head_dim: Some(32),
            d_ff: Some(128),
            vocab: Some(1000),
            weight_bytes: Some(2.0),
            kv_bytes: Some(2.0),
            link_bandwidth_gb_s: Some(10.0),
            link_latency_us: Some(5.0),
            link_pj_per_bit: Some(10.0),
            device_peak_tflops: Some(100.0),
            device_mem_bw_tb_s: Some(2.0),
            device_mem_gb: Some(80.0),
            device_tdp_w: Some(700.0),
            device_idle_w: Some(100.0),
            ..Scenario::default()
        };
        let v = serde_json::to_value(&s).unwrap();
        let mut numeric = 0;
        for (k, x) in v.as_object().unwrap() {
            if x.is_number() {
                numeric += 1;
                let r = for_key(k).unwrap_or_else(|| panic!("scenario key {k} has no range"));
                assert!(
                    s.numeric(k).is_some(),
                    "Scenario::numeric does not know {k}"
                );
                assert!(r.contains(s.numeric(k).unwrap()), "{k}");
            }
        }
        assert_eq!(
            numeric,
            RANGES.iter().filter(|r| r.key.is_some()).count(),
            "a scenario key in RANGES that is not a numeric field"
        );
    }

    #[test]
    fn build_rejects_absurd_values_naming_the_flag() {
        let cat = disagg_model::Catalogue::builtin();
        let bad = |s: Scenario, needles: &[&str]| {
            let e = s.build(&cat).unwrap_err().to_string();
            for n in needles {
                assert!(e.contains(n), "'{n}' not in: {e}");
            }
        };
        bad(
            Scenario {
                rate: 1e-300,
                ..Scenario::default()
            },
            &["--rate", "1e-300", "[1e-6, 1e6] req/s"],
        );
        bad(
            Scenario {
                think: 1e308,
                ..Scenario::default()
            },
            &["--think", "got 1e308", "[0, 1e7] s"],
        );
        bad(
            Scenario {
                time_scale: f64::INFINITY,
                ..Scenario::default()
            },
            &["--time-scale", "got inf"],
        );
        bad(
            Scenario {
                prefix_share: f64::NAN,
                ..Scenario::default()
            },
            &["--prefix-share", "got NaN"],
        );
        bad(
            Scenario {
                trace_duration: Some(-1.0),
                ..Scenario::default()
            },
            &["--duration", "got -1"],
        );
    }
}
