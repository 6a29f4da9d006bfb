//! Deployable plans (`disagg plan --emit`) and the way back (`disagg run --deployment`).
//!
//! [`Deployment`] is the one description both directions share: what a serving stack needs to
//! know about a disaggregated (or aggregated) configuration: model, engine, each role's replicas
//! and parallelism, engine limits, KV transfer. `plan --emit` builds it from a winning
//! [`disagg_sim::Scenario`] and writes it in a stack's format (the emitter files of this module);
//! `run --deployment` reads a stack's file into it ([`import`]), lists what it could not map, and
//! turns it back into scenario flags ([`Deployment::to_args`]).
//!
//! Everything here is SI and catalogue keys inside; the stacks' own spellings (Hugging Face model
//! ids, engine flags, Kubernetes resource names) only at the edges, in the emitters and importers.

pub mod import;

/// The serving engine the workers run (`--engine`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    Vllm,
    Sglang,
}

/// The files `plan --emit` writes (`--emit FORMAT`, repeatable).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Format {
    /// `dynamo.yaml`: a `DynamoGraphDeployment` (`nvidia.com/v1beta1`).
    Dynamo,
    /// `llm-d-values.yaml`: llm-d modelservice Helm values.
    LlmD,
    /// `vllm.sh`: vLLM launch commands (prefill, decode, proxy).
    Vllm,
    /// `sglang.sh`: SGLang launch commands (prefill, decode, router).
    Sglang,
}

/// One role's workers: `replicas` instances of `tp x pp` GPUs (times `dp` with data parallelism).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Workers {
    /// Instances of this role (the stack's replicas).
    pub replicas: u32,
    /// Tensor-parallel degree.
    pub tp: u32,
    /// Pipeline-parallel degree.
    pub pp: u32,
    /// Expert-parallel degree (MoE models), if set.
    pub ep: Option<u32>,
    /// Data-parallel degree inside one instance, if set.
    pub dp: Option<u32>,
    /// Catalogue key of the GPU (`h100`), if the file says (node selector, annotation).
    pub device: Option<String>,
    /// Most sequences in one decode batch (`--max-num-seqs`, `--max-running-requests`).
    pub max_num_seqs: Option<u32>,
    /// Token budget of one prefill batch (`--max-num-batched-tokens`, `--chunked-prefill-size`).
    pub max_num_batched_tokens: Option<u64>,
}

impl Workers {
    /// GPUs one instance holds: tp x pp x dp.
    pub fn gpus(&self) -> u32 {
        self.tp * self.pp * self.dp.unwrap_or(1)
    }
}

/// A deployment: what `plan --emit` writes and `run --deployment` reads.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Deployment {
    /// The deployment's name (Kubernetes object name).
    pub name: String,
    /// Catalogue key of the model (`llama3.1-70b`).
    pub model: String,
    /// The engine of every worker.
    pub engine: Engine,
    /// Prefill workers (disaggregated), or None.
    pub prefill: Option<Workers>,
    /// Decode workers (disaggregated), or None.
    pub decode: Option<Workers>,
    /// Aggregated workers (colocated prefill and decode), or None.
    pub colocated: Option<Workers>,
    /// Catalogue key of the KV link between the pools (`ib-ndr`), if the file says.
    pub link: Option<String>,
    /// The engines' KV transfer backend (`nixl`, `mooncake`).
    pub kv_transfer_backend: String,
    /// KV cache format (`fp8`), weight format (`fp8`), compute format, if not the default bf16.
    pub kv_format: Option<String>,
    pub weight_format: Option<String>,
    pub compute_format: Option<String>,
    /// KV compression on the link (a catalogue compression key), if any; no stack has a field for
    /// it (disagg's annotation carries it).
    pub kv_compress: Option<String>,
    /// True: each role's `tp`/`pp` are the simulator's explicit layouts (`--prefill-tp` ...,
    /// communication modelled); false: each instance is simulated as one ideal device group of
    /// `tp x pp` GPUs (`--prefill-devices-per-instance`), as for models whose layouts are not
    /// modelled.
    pub layouts_modelled: bool,
    /// Chunked prefill on.
    pub chunked_prefill: bool,
    /// Prefix caching on.
    pub prefix_caching: bool,
    /// KV block (page) size in tokens, if set.
    pub block_size: Option<u64>,
    /// GPUs per node (a worker larger than this spans nodes).
    pub gpus_per_node: u32,
    /// What a file said that could not be mapped (import), one line each: `field: value (why)`.
    pub not_mapped: Vec<String>,
    /// The simulated scenario's flags without the workload's ([`Scenario::to_args`] minus
    /// [`is_workload_flag`]s), as disagg recorded them ([`SCENARIO_ARGS_ANNOTATION`]); empty
    /// when the file has no record. [`Deployment::recorded_args`] says when they still hold.
    pub scenario_args: Vec<String>,
}

/// Hugging Face model ids of catalogue models, as serving stacks name them (`--model`). The first
/// id of a key is the one emitted; every id is recognised on import (case-insensitively). Llama
/// 3.1 70B and 8B have Llama 3's shapes (their difference, RoPE scaling and context, is not
/// modelled), so they map to the Llama 3 keys.
pub const MODEL_IDS: &[(&str, &[&str])] = &[
    (
        "llama3-8b",
        &[
            "meta-llama/Llama-3.1-8B-Instruct",
            "meta-llama/Meta-Llama-3-8B-Instruct",
            "meta-llama/Llama-3.1-8B",
            "meta-llama/Meta-Llama-3-8B",
        ],
    ),
    (
        "llama3-70b",
        &[
            "meta-llama/Llama-3.1-70B-Instruct",
            "meta-llama/Meta-Llama-3-70B-Instruct",
            "meta-llama/Llama-3.3-70B-Instruct",
            "meta-llama/Llama-3.1-70B",
            "meta-llama/Meta-Llama-3-70B",
        ],
    ),
    (
        "llama3.1-405b",
        &[
            "meta-llama/Llama-3.1-405B-Instruct",
            "meta-llama/Llama-3.1-405B-Instruct-FP8",
            "meta-llama/Llama-3.1-405B",
        ],
    ),
    (
        "llama3.2-1b",
        &[
            "meta-llama/Llama-3.2-1B-Instruct",
            "meta-llama/Llama-3.2-1B",
        ],
    ),
    (
        "llama2-7b",
        &["meta-llama/Llama-2-7b-hf", "meta-llama/Llama-2-7b-chat-hf"],
    ),
    (
        "llama2-70b",
        &[
            "meta-llama/Llama-2-70b-hf",
            "meta-llama/Llama-2-70b-chat-hf",
        ],
    ),
    (
        "mistral-7b",
        &[
            "mistralai/Mistral-7B-Instruct-v0.3",
            "mistralai/Mistral-7B-v0.1",
        ],
    ),
    (
        "mixtral-8x7b",
        &[
            "mistralai/Mixtral-8x7B-Instruct-v0.1",
            "mistralai/Mixtral-8x7B-v0.1",
        ],
    ),
    (
        "mixtral-8x22b",
        &[
            "mistralai/Mixtral-8x22B-Instruct-v0.1",
            "mistralai/Mixtral-8x22B-v0.1",
        ],
    ),
    ("yi-34b", &["01-ai/Yi-34B"]),
    ("opt-13b", &["facebook/opt-13b"]),
    ("bloom-176b", &["bigscience/bloom"]),
    (
        "deepseek-v3",
        &[
            "deepseek-ai/DeepSeek-V3",
            "deepseek-ai/DeepSeek-V3-0324",
            "deepseek-ai/DeepSeek-V3.1",
        ],
    ),
    (
        "deepseek-r1",
        &["deepseek-ai/DeepSeek-R1", "deepseek-ai/DeepSeek-R1-0528"],
    ),
    (
        "deepseek-v2-lite",
        &[
            "deepseek-ai/DeepSeek-V2-Lite",
            "deepseek-ai/DeepSeek-V2-Lite-Chat",
        ],
    ),
    (
        "kimi-k2",
        &[
            "moonshotai/Kimi-K2-Instruct",
            "moonshotai/Kimi-K2-Instruct-0905",
        ],
    ),
    (
        "qwen3-235b-a22b",
        &[
            "Qwen/Qwen3-235B-A22B",
            "Qwen/Qwen3-235B-A22B-FP8",
            "Qwen/Qwen3-235B-A22B-Instruct-2507",
        ],
    ),
    (
        "qwen3-30b-a3b",
        &["Qwen/Qwen3-30B-A3B", "Qwen/Qwen3-30B-A3B-FP8"],
    ),
    ("qwen3-32b", &["Qwen/Qwen3-32B", "Qwen/Qwen3-32B-FP8"]),
    ("qwen3-next-80b-a3b", &["Qwen/Qwen3-Next-80B-A3B-Instruct"]),
    ("gpt-oss-120b", &["openai/gpt-oss-120b"]),
    ("gpt-oss-20b", &["openai/gpt-oss-20b"]),
    ("gemma3-27b", &["google/gemma-3-27b-it"]),
    (
        "llama4-scout",
        &["meta-llama/Llama-4-Scout-17B-16E-Instruct"],
    ),
    (
        "llama4-maverick",
        &[
            "meta-llama/Llama-4-Maverick-17B-128E-Instruct",
            "meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8",
        ],
    ),
];

/// The GPU product labels Kubernetes' GPU feature discovery puts on nodes
/// (`nvidia.com/gpu.product`), by catalogue device key: the node selector emitted for a role's
/// device, and how a device is recognised on import.
pub const GPU_PRODUCTS: &[(&str, &str)] = &[
    ("h100", "NVIDIA-H100-80GB-HBM3"),
    ("h200", "NVIDIA-H200"),
    ("a100", "NVIDIA-A100-SXM4-80GB"),
    ("a100-40g", "NVIDIA-A100-SXM4-40GB"),
    ("b200", "NVIDIA-B200"),
];

/// The annotation (DGD) or label (llm-d values) keys disagg writes for what a stack's file has no
/// field for, and reads back: the KV link between the pools, and the deployment's GPUs per node.
pub const KV_LINK_ANNOTATION: &str = "disagg.dev/kv-link";
pub const GPUS_PER_NODE_ANNOTATION: &str = "disagg.dev/gpus-per-node";

/// The catalogue key of a Hugging Face model id (case-insensitive), or None.
pub fn model_of_id(id: &str) -> Option<&'static str> {
    let id = id.trim().trim_end_matches('/');
    MODEL_IDS
        .iter()
        .find(|(_, ids)| ids.iter().any(|x| x.eq_ignore_ascii_case(id)))
        .map(|(k, _)| *k)
}

/// The Hugging Face id emitted for a catalogue model, or None (a model without one is emitted by
/// its catalogue key, and said so in the file's header).
pub fn id_of_model(key: &str) -> Option<&'static str> {
    MODEL_IDS
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, ids)| ids[0])
}

/// The catalogue device of a GPU product label, or None.
pub fn device_of_product(label: &str) -> Option<&'static str> {
    GPU_PRODUCTS
        .iter()
        .find(|(_, p)| p.eq_ignore_ascii_case(label.trim()))
        .map(|(k, _)| *k)
}

/// The GPU product label of a catalogue device, or None.
pub fn product_of_device(key: &str) -> Option<&'static str> {
    GPU_PRODUCTS
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, p)| *p)
}

pub mod dynamo;
pub mod emit;
pub mod llmd;
pub mod script;
pub mod sglang;
pub mod shell;
pub mod vllm;

pub use emit::{max_rate_plan, prepare_dir, target_plans, write_files};

use disagg_model::{Catalogue, QuantFormat};
use disagg_sim::{Mode, Role as SimRole, Scenario};

use crate::UsageError;

/// disagg's annotation of the KV compression on the link (a catalogue compression key).
pub const KV_COMPRESS_ANNOTATION: &str = "disagg.dev/kv-compress";
/// disagg's annotation of [`Deployment::layouts_modelled`] (`true` or `false`).
pub const LAYOUTS_ANNOTATION: &str = "disagg.dev/layouts-modelled";
/// disagg's annotations of the weight, KV-cache and compute formats (when not bf16).
pub const WEIGHT_FORMAT_ANNOTATION: &str = "disagg.dev/weight-format";
pub const KV_FORMAT_ANNOTATION: &str = "disagg.dev/kv-format";
pub const COMPUTE_FORMAT_ANNOTATION: &str = "disagg.dev/compute-format";
/// disagg's annotation of a role's device (catalogue key): `disagg.dev/device-prefill`, `-decode`,
/// `-worker` (the node selector says the same for the GPUs Kubernetes labels).
pub const DEVICE_ANNOTATION_PREFIX: &str = "disagg.dev/device-";
/// disagg's annotation of [`Deployment::scenario_args`]: the simulated scenario's flags without
/// the workload's, shell-quoted and space-separated.
pub const SCENARIO_ARGS_ANNOTATION: &str = "disagg.dev/scenario-args";

/// The option headings whose flags describe the workload (requests, trace, SLOs), not the
/// deployment: the `<workload args>` of a round trip.
const WORKLOAD_HEADINGS: [&str; 3] = ["Workload", "Trace replay", "SLOs"];

/// Whether scenario flag `flag` describes the workload (arrivals, lengths, trace, SLOs).
pub fn is_workload_flag(flag: &str) -> bool {
    disagg_sim::options::for_flag(flag).is_some_and(|o| WORKLOAD_HEADINGS.contains(&o.heading))
}

/// `args` (a [`Scenario::to_args`] list) split into the deployment's flags and the workload's.
pub fn split_workload(args: &[String]) -> (Vec<String>, Vec<String>) {
    let (mut dep, mut work) = (Vec::new(), Vec::new());
    let mut cur_is_work = false;
    for a in args {
        if a.starts_with("--") {
            cur_is_work = is_workload_flag(a);
        }
        if cur_is_work {
            work.push(a.clone());
        } else {
            dep.push(a.clone());
        }
    }
    (dep, work)
}

impl Engine {
    /// Every engine's name, as `--engine` takes it.
    pub const NAMES: [&'static str; 2] = ["vllm", "sglang"];

    /// The engine named `s` (`--engine`); the error lists the valid names.
    pub fn parse(s: &str) -> Result<Engine, UsageError> {
        match s.trim() {
            "vllm" => Ok(Engine::Vllm),
            "sglang" => Ok(Engine::Sglang),
            other => Err(UsageError(format!(
                "unknown --engine '{other}'; valid: {}",
                Engine::NAMES.join(", ")
            ))),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Engine::Vllm => "vllm",
            Engine::Sglang => "sglang",
        }
    }
}

impl Format {
    /// Every format's name, as `--emit` takes it.
    pub const NAMES: [&'static str; 4] = ["dynamo", "llm-d", "vllm", "sglang"];

    /// The format named `s` (`--emit`); the error lists the valid names.
    pub fn parse(s: &str) -> Result<Format, UsageError> {
        match s.trim() {
            "dynamo" => Ok(Format::Dynamo),
            "llm-d" => Ok(Format::LlmD),
            "vllm" => Ok(Format::Vllm),
            "sglang" => Ok(Format::Sglang),
            other => Err(UsageError(format!(
                "unknown --emit format '{other}'; valid: {}",
                Format::NAMES.join(", ")
            ))),
        }
    }

    /// The file `plan --emit` writes for the format.
    pub fn file_name(self) -> &'static str {
        match self {
            Format::Dynamo => "dynamo.yaml",
            Format::LlmD => "llm-d-values.yaml",
            Format::Vllm => "vllm.sh",
            Format::Sglang => "sglang.sh",
        }
    }
}

/// What `plan --emit` writes (`--emit FORMAT` ..., `--emit-dir`, `--emit-top`, `--engine`,
/// `--image`, `--namespace`, `--gpus-per-node`), as the flags give it.
#[derive(Clone, Debug)]
pub struct EmitOptions {
    /// `--emit`, repeatable (format names, checked by [`EmitOptions::check`]).
    pub formats: Vec<String>,
    /// `--emit-dir`: required with `--emit`.
    pub dir: Option<std::path::PathBuf>,
    /// `--emit-top K`: the top K ranked plans, in `DIR/1/` ... `DIR/K/`.
    pub top: Option<usize>,
    /// `--engine` (default `vllm`).
    pub engine: String,
    /// `--image`: the container image (default: a placeholder to replace).
    pub image: Option<String>,
    /// `--namespace` (default `default`).
    pub namespace: String,
    /// GPUs per node (a worker larger spans nodes).
    pub gpus_per_node: u32,
}

impl Default for EmitOptions {
    fn default() -> Self {
        EmitOptions {
            formats: Vec::new(),
            dir: None,
            top: None,
            engine: "vllm".into(),
            image: None,
            namespace: "default".into(),
            gpus_per_node: 8,
        }
    }
}

/// [`EmitOptions`], checked.
#[derive(Clone, Debug)]
pub struct Emit {
    pub formats: Vec<Format>,
    pub dir: std::path::PathBuf,
    pub top: usize,
    pub engine: Engine,
    pub image: Option<String>,
    pub namespace: String,
    pub gpus_per_node: u32,
}

impl EmitOptions {
    /// The checked options, or None when nothing is to be emitted. Errors: an unknown format
    /// (the valid ones listed), `--emit-dir`/`--emit-top` without `--emit`, `--emit` without
    /// `--emit-dir`, `--emit-top` below 1, an unknown engine, a bad namespace or GPU count.
    pub fn check(&self) -> Result<Option<Emit>, UsageError> {
        if self.formats.is_empty() {
            if self.top.is_some() {
                return Err(UsageError(
                    "--emit-top: give --emit FORMAT (dynamo, llm-d, vllm, sglang) too".into(),
                ));
            }
            if self.dir.is_some() {
                return Err(UsageError(
                    "--emit-dir: give --emit FORMAT (dynamo, llm-d, vllm, sglang) too".into(),
                ));
            }
            return Ok(None);
        }
        let mut formats = Vec::new();
        for f in &self.formats {
            for part in f.split(',') {
                let f = Format::parse(part)?;
                if !formats.contains(&f) {
                    formats.push(f);
                }
            }
        }
        let Some(dir) = self.dir.clone() else {
            return Err(UsageError(
                "--emit: give --emit-dir DIR, the directory to write the files into".into(),
            ));
        };
        if dir.as_os_str() == "-" {
            return Err(UsageError(
                "--emit-dir: '-' is not a directory: give the directory to write the files into"
                    .into(),
            ));
        }
        let top = self.top.unwrap_or(1);
        if top == 0 {
            return Err(UsageError("--emit-top: K must be at least 1".into()));
        }
        let engine = Engine::parse(&self.engine)?;
        if !is_dns_label(&self.namespace) {
            return Err(UsageError(format!(
                "--namespace: '{}' is not a Kubernetes namespace (lowercase letters, digits and \
                 '-', at most 63, starting and ending with a letter or digit)",
                self.namespace.escape_debug()
            )));
        }
        if self.gpus_per_node == 0 {
            return Err(UsageError("--gpus-per-node: must be at least 1".into()));
        }
        if let Some(i) = &self.image {
            if i.trim().is_empty() || i.chars().any(|c| c.is_whitespace() || c.is_control()) {
                return Err(UsageError(format!(
                    "--image: '{}' is not a container image reference",
                    i.escape_debug()
                )));
            }
        }
        Ok(Some(Emit {
            formats,
            dir,
            top,
            engine,
            image: self.image.clone(),
            namespace: self.namespace.clone(),
            gpus_per_node: self.gpus_per_node,
        }))
    }
}

/// A Kubernetes DNS label (RFC 1123): lowercase letters, digits and '-', 1 to 63, alphanumeric
/// at both ends.
pub fn is_dns_label(s: &str) -> bool {
    let ok = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    !s.is_empty()
        && s.len() <= 63
        && s.chars().all(|c| ok(c) || c == '-')
        && s.starts_with(ok)
        && s.ends_with(ok)
}

/// What disagg predicts for an emitted configuration (each figure where known) and the command
/// that simulates it: the comment lines every emitted file begins with.
#[derive(Clone, Debug, Default)]
pub struct Header {
    /// Rank among the plan's answers (1 = the winner) and how many were emitted.
    pub rank: Option<(usize, usize)>,
    /// Offered rate, requests/s.
    pub rate_rps: Option<f64>,
    /// SLO attainment (fraction) and its 95% confidence interval, when known.
    pub slo_attainment: Option<f64>,
    pub slo_attainment_ci: Option<(f64, f64)>,
    pub ttft_p99_s: Option<f64>,
    pub tpot_p99_s: Option<f64>,
    pub goodput_rps: Option<f64>,
    pub tokens_per_s_per_gpu: Option<f64>,
    pub usd_per_hour: Option<f64>,
    /// [`Scenario::to_args`] of the configuration (rate or trace included).
    pub run_args: Vec<String>,
    /// What the file cannot say (one line each).
    pub notes: Vec<String>,
    /// The container image (`--image`; None: a placeholder to replace).
    pub image: Option<String>,
    /// The Kubernetes namespace (`--namespace`; None: `default`).
    pub namespace: Option<String>,
}

impl Header {
    /// The header of scenario `sc`'s run: its flags, and the figures of its summary if simulated.
    pub fn of_run(sc: &Scenario, s: Option<&disagg_sim::Summary>, gpus: u32) -> Header {
        let mut h = Header {
            rate_rps: sc.trace_file.is_none().then_some(sc.rate),
            run_args: sc.to_args(),
            ..Header::default()
        };
        if let Some(s) = s {
            h.slo_attainment = Some(s.slo_attainment);
            h.ttft_p99_s = Some(s.ttft_s.p99);
            h.tpot_p99_s = Some(s.tpot_s.p99);
            h.goodput_rps = Some(s.goodput_rps);
            if gpus > 0 {
                h.tokens_per_s_per_gpu = Some(s.throughput_tok_s / gpus as f64);
            }
        }
        h
    }

    /// The comment lines (each starting with `# `, ending with a newline) for file `file`.
    pub fn lines(&self, file: &str) -> String {
        use std::fmt::Write as _;
        let f = |x: f64, d: usize| crate::format::fixed(x, d);
        let mut s = String::new();
        let which = match self.rank {
            Some((1, n)) if n > 1 => format!("the best of {n} ranked plans"),
            Some((k, n)) => format!("rank {k} of {n}"),
            None => "the plan's answer".into(),
        };
        let _ = writeln!(
            s,
            "# Generated by disagg plan --emit: {which}. Figures are disagg's predictions, not \
             measurements."
        );
        let mut fig = Vec::new();
        if let Some(r) = self.rate_rps {
            fig.push(format!("at {} req/s", f(r, 2)));
        }
        if let Some(a) = self.slo_attainment {
            let ci = match self.slo_attainment_ci {
                Some((lo, hi)) => {
                    format!(" (95% CI {}% to {}%)", f(100.0 * lo, 1), f(100.0 * hi, 1))
                }
                None => String::new(),
            };
            fig.push(format!("SLO attainment {}%{ci}", f(100.0 * a, 1)));
        }
        if let Some(x) = self.ttft_p99_s {
            fig.push(format!("TTFT p99 {} ms", f(1e3 * x, 1)));
        }
        if let Some(x) = self.tpot_p99_s {
            fig.push(format!("TPOT p99 {} ms", f(1e3 * x, 2)));
        }
        if let Some(x) = self.goodput_rps {
            fig.push(format!("goodput {} req/s", f(x, 2)));
        }
        if let Some(x) = self.tokens_per_s_per_gpu {
            fig.push(format!("{} tok/s/GPU", f(x, 1)));
        }
        if let Some(x) = self.usd_per_hour {
            fig.push(format!("${}/h", f(x, 2)));
        }
        if !fig.is_empty() {
            let _ = writeln!(s, "# disagg predicts: {}", fig.join(", "));
        }
        let _ = writeln!(s, "# disagg run {}", shell::shell_join(&self.run_args));
        let (_, work) = split_workload(&self.run_args);
        let work = if work.is_empty() {
            String::new()
        } else {
            format!(" {}", shell::shell_join(&work))
        };
        let _ = writeln!(s, "# round trip: disagg run --deployment {file}{work}");
        for n in &self.notes {
            let _ = writeln!(s, "# note: {n}");
        }
        s
    }
}

/// The roles of a deployment's workers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Prefill,
    Decode,
    /// Aggregated (colocated) workers.
    Worker,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Prefill => "prefill",
            Role::Decode => "decode",
            Role::Worker => "worker",
        }
    }
}

/// A format's name as it stands in a deployment (`None` for the default bf16).
fn format_name(f: QuantFormat) -> Option<String> {
    (f != QuantFormat::Bf16).then(|| f.as_str().to_string())
}

impl Deployment {
    /// The roles present, in order (prefill, decode; or worker), with their workers.
    pub fn roles(&self) -> Vec<(Role, &Workers)> {
        let mut v = Vec::new();
        if let Some(w) = &self.prefill {
            v.push((Role::Prefill, w));
        }
        if let Some(w) = &self.decode {
            v.push((Role::Decode, w));
        }
        if let Some(w) = &self.colocated {
            v.push((Role::Worker, w));
        }
        v
    }

    /// GPUs of the whole deployment.
    pub fn gpus(&self) -> u32 {
        self.roles()
            .iter()
            .map(|(_, w)| w.replicas * w.gpus())
            .sum()
    }

    /// The model as the engines name it: its Hugging Face id, else its catalogue key.
    pub fn model_id(&self) -> &str {
        id_of_model(&self.model).unwrap_or(&self.model)
    }

    /// Nodes one instance of `w` spans (1 when it fits on a node).
    pub fn nodes_of(&self, w: &Workers) -> u32 {
        w.gpus().div_ceil(self.gpus_per_node).max(1)
    }

    /// The deployment of scenario `sc` served by `engine` on nodes of `gpus_per_node` GPUs
    /// (`docs/deployment.md#mapping`): each pool's instances are a role's replicas; an explicit
    /// layout (`--prefill-tp`, `--tp` ...) gives tp/pp/ep (`layouts_modelled`), else each
    /// instance is `devices per instance`-way tensor parallel; the token budget is the
    /// scenario's `--max-num-batched-tokens`, else the prefill budget (8192); the decode batch
    /// cap is `--max-decode-batch`. Colocated scenarios give `worker`s. Errors: a model the
    /// catalogue lacks, an instance that does not split evenly over whole nodes.
    pub fn from_scenario(
        sc: &Scenario,
        cat: &Catalogue,
        engine: Engine,
        gpus_per_node: u32,
    ) -> Result<Deployment, UsageError> {
        cat.model(&sc.model)
            .map_err(|e| UsageError(format!("--model: {e}")))?;
        if gpus_per_node == 0 {
            return Err(UsageError("--gpus-per-node: must be at least 1".into()));
        }
        let budget = sc
            .max_num_batched_tokens
            .unwrap_or(disagg_sim::scenario::MAX_PREFILL_TOKENS);
        let mut layouts_modelled = false;
        let mut workers = |role: SimRole, replicas: u32, n: u32, device: &str| {
            let layout = sc.layout_for(role);
            let (tp, pp, ep) = match &layout {
                Some(l) => {
                    layouts_modelled = true;
                    (l.tp, l.pp, (l.ep > 1).then_some(l.ep))
                }
                None => (n, 1, None),
            };
            let decodes = role != SimRole::Prefill;
            let prefills = role != SimRole::Decode;
            Workers {
                replicas,
                tp,
                pp,
                ep,
                dp: None,
                device: Some(device.to_string()),
                max_num_seqs: decodes.then_some(sc.max_decode_batch),
                max_num_batched_tokens: prefills.then_some(budget),
            }
        };
        let pdev = sc.prefill_device.as_deref().unwrap_or(&sc.device);
        let ddev = sc.decode_device.as_deref().unwrap_or(&sc.device);
        let pn = sc
            .prefill_devices_per_instance
            .unwrap_or(sc.devices_per_instance);
        let dn = sc
            .decode_devices_per_instance
            .unwrap_or(sc.devices_per_instance);
        let (prefill, decode, colocated) = match sc.mode {
            Mode::Disagg => (
                Some(workers(SimRole::Prefill, sc.prefill, pn, pdev)),
                Some(workers(SimRole::Decode, sc.decode, dn, ddev)),
                None,
            ),
            Mode::Colocated => (
                None,
                None,
                Some(workers(
                    SimRole::Colocated,
                    sc.prefill + sc.decode,
                    sc.devices_per_instance,
                    &sc.device,
                )),
            ),
        };
        let (scenario_args, _) = split_workload(&sc.to_args());
        let d = Deployment {
            name: default_name(sc),
            model: sc.model.clone(),
            engine,
            prefill,
            decode,
            colocated,
            link: (sc.mode == Mode::Disagg).then(|| sc.link.clone()),
            kv_transfer_backend: "nixl".into(),
            kv_format: format_name(sc.kv_format),
            weight_format: format_name(sc.weight_format),
            compute_format: format_name(sc.compute_format),
            kv_compress: sc.kv_compress.clone(),
            layouts_modelled,
            chunked_prefill: sc.batch_policy == disagg_sim::levers::BatchPolicy::Chunked,
            prefix_caching: sc.prefix_caching,
            block_size: Some(sc.kv_block_size),
            gpus_per_node,
            not_mapped: Vec::new(),
            scenario_args,
        };
        for (role, w) in d.roles() {
            let (g, nodes) = (w.gpus(), d.nodes_of(w));
            if nodes > 1 && g % nodes != 0 {
                return Err(UsageError(format!(
                    "--gpus-per-node: a {} instance of {g} GPUs does not split evenly over {nodes} \
                     nodes of {gpus_per_node} GPUs; give a --gpus-per-node that divides it",
                    role.as_str()
                )));
            }
        }
        Ok(d)
    }

    /// What the deployment's files cannot say, one line each (the header's notes).
    pub fn notes(&self) -> Vec<String> {
        let mut v = Vec::new();
        if id_of_model(&self.model).is_none() {
            v.push(format!(
                "model '{}' has no Hugging Face id in disagg's table: replace it with the \
                 checkpoint you serve",
                self.model
            ));
        }
        if self
            .scenario_args
            .iter()
            .any(|a| disagg_sim::options::hardware().any(|o| o.flag == a))
        {
            v.push(
                "the scenario overrides the model, device or link presets: the engines serve the \
                 real checkpoint on the real hardware"
                    .into(),
            );
        }
        if let Some(f) = &self.weight_format {
            v.push(format!(
                "weights {f}: serve a checkpoint quantised to {f} (the engines read the format \
                 from the checkpoint)"
            ));
        }
        if let Some(f) = self.kv_format.as_deref().filter(|f| *f != "fp8") {
            v.push(format!(
                "KV cache {f}: no engine flag; the engines keep their default"
            ));
        }
        if let Some(c) = &self.kv_compress {
            v.push(format!(
                "KV compression '{c}' on the link is simulated; no engine has a flag for it"
            ));
        }
        for (role, w) in self.roles() {
            if let Some(dev) = &w.device {
                if product_of_device(dev).is_none() {
                    v.push(format!(
                        "{} device '{dev}' has no GPU product label: no node selector",
                        role.as_str()
                    ));
                }
            }
        }
        v
    }

    /// disagg's annotations of the deployment (key, value), in a fixed order: what no stack
    /// field carries, written as DGD annotations and as `# key: value` comment lines in the
    /// other formats.
    pub fn annotations(&self) -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = Vec::new();
        let mut put = |k: &str, x: String| v.push((k.to_string(), x));
        if let Some(l) = &self.link {
            put(KV_LINK_ANNOTATION, l.clone());
        }
        if let Some(c) = &self.kv_compress {
            put(KV_COMPRESS_ANNOTATION, c.clone());
        }
        put(GPUS_PER_NODE_ANNOTATION, self.gpus_per_node.to_string());
        put(LAYOUTS_ANNOTATION, self.layouts_modelled.to_string());
        for (k, f) in [
            (WEIGHT_FORMAT_ANNOTATION, &self.weight_format),
            (KV_FORMAT_ANNOTATION, &self.kv_format),
            (COMPUTE_FORMAT_ANNOTATION, &self.compute_format),
        ] {
            if let Some(f) = f {
                put(k, f.clone());
            }
        }
        for (role, w) in self.roles() {
            if let Some(d) = &w.device {
                put(
                    &format!("{DEVICE_ANNOTATION_PREFIX}{}", role.as_str()),
                    d.clone(),
                );
            }
        }
        put(
            SCENARIO_ARGS_ANNOTATION,
            shell::shell_join(&self.scenario_args),
        );
        v
    }

    /// Reads one of disagg's annotations back into the deployment; false for a key that is not
    /// disagg's. A bad value is an error naming the key.
    pub fn apply_annotation(&mut self, key: &str, value: &str) -> Result<bool, UsageError> {
        let bad = |why: &str| UsageError(format!("annotation {key}: '{value}': {why}"));
        let v = value.trim().to_string();
        match key {
            KV_LINK_ANNOTATION => self.link = Some(v),
            KV_COMPRESS_ANNOTATION => self.kv_compress = Some(v),
            GPUS_PER_NODE_ANNOTATION => {
                self.gpus_per_node = v
                    .parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| bad("expected a whole number of GPUs, at least 1"))?
            }
            LAYOUTS_ANNOTATION => {
                self.layouts_modelled = v.parse().map_err(|_| bad("expected true or false"))?
            }
            WEIGHT_FORMAT_ANNOTATION => self.weight_format = Some(v),
            KV_FORMAT_ANNOTATION => self.kv_format = Some(v),
            COMPUTE_FORMAT_ANNOTATION => self.compute_format = Some(v),
            SCENARIO_ARGS_ANNOTATION => {
                self.scenario_args = shell::shell_words(&v).map_err(|e| bad(&e))?
            }
            k => match k.strip_prefix(DEVICE_ANNOTATION_PREFIX) {
                Some(role) => {
                    let w = match role {
                        "prefill" => self.prefill.as_mut(),
                        "decode" => self.decode.as_mut(),
                        "worker" => self.colocated.as_mut(),
                        _ => return Err(bad("expected a role: prefill, decode or worker")),
                    };
                    if let Some(w) = w {
                        w.device = Some(v);
                    }
                }
                None => return Ok(false),
            },
        }
        Ok(true)
    }

    /// disagg's recorded scenario flags ([`Deployment::scenario_args`]) when the file's fields
    /// still say what disagg wrote: the deployment of those flags
    /// ([`Deployment::from_scenario`]) equals this one (name and `not_mapped` aside). Then
    /// they reproduce the planned scenario exactly (the round trip); otherwise (the file was
    /// edited, or has no record) None: map the fields.
    pub fn recorded_args(&self, cat: &Catalogue) -> Option<Vec<String>> {
        if self.scenario_args.is_empty() {
            return None;
        }
        let sc = Scenario::from_flags(&self.scenario_args).ok()?;
        let mut d = Deployment::from_scenario(&sc, cat, self.engine, self.gpus_per_node).ok()?;
        d.name.clone_from(&self.name);
        d.not_mapped.clone_from(&self.not_mapped);
        d.kv_transfer_backend.clone_from(&self.kv_transfer_backend);
        (d == *self).then(|| self.scenario_args.clone())
    }
}

/// The default name of a scenario's deployment: `disagg-<model>-<P>p<D>d` (colocated
/// `disagg-<model>-<N>x`), a Kubernetes name.
pub fn default_name(sc: &Scenario) -> String {
    let model: String = sc
        .model
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let shape = match sc.mode {
        Mode::Disagg => format!("{}p{}d", sc.prefill, sc.decode),
        Mode::Colocated => format!("{}x", sc.prefill + sc.decode),
    };
    let mut n = format!("disagg-{model}-{shape}");
    n.truncate(63);
    n.trim_end_matches('-').to_string()
}

/// A candidate of a `--target-rate` plan as its scenario: `base` with the candidate's pools,
/// devices, link, compression, layouts and formats, at `rate` (what [`crate::plan::Search`]
/// simulated for it).
pub fn candidate_scenario(
    base: &Scenario,
    c: &crate::plan::Candidate,
    rate: f64,
) -> Result<Scenario, UsageError> {
    let mut sc = Scenario {
        prefill: c.prefill,
        decode: c.decode,
        prefill_device: Some(c.prefill_device.clone()),
        decode_device: Some(c.decode_device.clone()),
        link: c.link.clone(),
        kv_compress: (c.compression != "none").then(|| c.compression.clone()),
        rate,
        ..base.clone()
    };
    if let Some(Some(l)) = &c.prefill_layout {
        let l = crate::plan::parse_layouts("prefill layout", l)?[0];
        sc.prefill_tp = Some(l.tp);
        sc.prefill_pp = Some(l.pp);
        sc.prefill_devices_per_instance = Some(l.devices());
    }
    if let Some(Some(l)) = &c.decode_layout {
        let l = crate::plan::parse_layouts("decode layout", l)?[0];
        sc.decode_tp = Some(l.tp);
        sc.decode_pp = Some(l.pp);
        sc.decode_devices_per_instance = Some(l.devices());
    }
    if let Some(f) = &c.formats {
        let f = crate::plan::parse_formats("formats", f)?[0];
        sc.weight_format = f.weight;
        sc.kv_format = f.kv;
        sc.compute_format = f.compute;
    }
    Ok(sc)
}

/// The engine flags of one role's workers (`docs/deployment.md#engine-flags`), without the
/// model, ports and launcher: parallelism, batch limits, chunked prefill, prefix caching, block
/// size, KV cache dtype, and the disaggregation flags (`disaggregation` false: a plain
/// `vllm serve`, whose KV connector flag is still given).
pub fn engine_flags(d: &Deployment, role: Role, w: &Workers, dynamo: bool) -> Vec<String> {
    let mut a: Vec<String> = Vec::new();
    let mut put = |f: &str, v: Option<String>| {
        a.push(f.to_string());
        if let Some(v) = v {
            a.push(v);
        }
    };
    let prefills = role != Role::Decode;
    match d.engine {
        Engine::Vllm => {
            put("--tensor-parallel-size", Some(w.tp.to_string()));
            if w.pp > 1 {
                put("--pipeline-parallel-size", Some(w.pp.to_string()));
            }
            if let Some(dp) = w.dp {
                put("--data-parallel-size", Some(dp.to_string()));
            }
            if w.ep.is_some_and(|e| e > 1) {
                put("--enable-expert-parallel", None);
            }
            if let Some(n) = w.max_num_seqs {
                put("--max-num-seqs", Some(n.to_string()));
            }
            if let Some(n) = w.max_num_batched_tokens {
                put("--max-num-batched-tokens", Some(n.to_string()));
            }
            if prefills && d.chunked_prefill {
                put("--enable-chunked-prefill", None);
            }
            if prefills && d.prefix_caching {
                put("--enable-prefix-caching", None);
            } else {
                put("--no-enable-prefix-caching", None);
            }
            if let Some(b) = d.block_size {
                put("--block-size", Some(b.to_string()));
            }
            if d.kv_format.as_deref() == Some("fp8") {
                put("--kv-cache-dtype", Some("fp8".into()));
            }
            if role != Role::Worker {
                if dynamo {
                    put("--disaggregation-mode", Some(role.as_str().into()));
                }
                // Dynamo injects the connector into its decode workers; a plain vLLM (and
                // llm-d) gives it to both roles.
                if !dynamo || role == Role::Prefill {
                    put("--kv-transfer-config", Some(NIXL_KV_TRANSFER_CONFIG.into()));
                }
            }
        }
        Engine::Sglang => {
            put("--tp", Some(w.tp.to_string()));
            if w.pp > 1 {
                put("--pp-size", Some(w.pp.to_string()));
            }
            if let Some(dp) = w.dp {
                put("--dp-size", Some(dp.to_string()));
            }
            if let Some(ep) = w.ep.filter(|&e| e > 1) {
                put("--ep-size", Some(ep.to_string()));
            }
            if let Some(n) = w.max_num_seqs {
                put("--max-running-requests", Some(n.to_string()));
            }
            if let Some(n) = w.max_num_batched_tokens {
                put("--chunked-prefill-size", Some(n.to_string()));
            }
            if prefills && d.chunked_prefill {
                put("--enable-mixed-chunk", None);
            }
            if !(prefills && d.prefix_caching) {
                put("--disable-radix-cache", None);
            }
            if let Some(b) = d.block_size {
                put("--page-size", Some(b.to_string()));
            }
            if d.kv_format.as_deref() == Some("fp8") {
                put("--kv-cache-dtype", Some("fp8_e4m3".into()));
            }
            if role != Role::Worker {
                put("--disaggregation-mode", Some(role.as_str().into()));
                put(
                    "--disaggregation-transfer-backend",
                    Some(d.kv_transfer_backend.clone()),
                );
            }
        }
    }
    a
}

/// vLLM's `--kv-transfer-config` of a NIXL disaggregated worker (the value Dynamo's and llm-d's
/// examples give both roles).
pub const NIXL_KV_TRANSFER_CONFIG: &str = r#"{"kv_connector":"NixlConnector","kv_role":"kv_both"}"#;

/// Reads engine flags `args` (as [`engine_flags`] writes them, after the model) into `w` and
/// `d`: the inverse of [`engine_flags`] for the script parser. Unknown flags are errors naming
/// them (a script disagg did not write).
pub(crate) fn read_engine_flags(
    d: &mut Deployment,
    role: Role,
    w: &mut Workers,
    args: &[String],
) -> Result<(), UsageError> {
    let mut i = 0;
    let num = |f: &str, v: Option<&String>| -> Result<u64, UsageError> {
        v.and_then(|x| x.parse::<u64>().ok())
            .ok_or_else(|| UsageError(format!("{f}: expected a whole number")))
    };
    let prefills = role != Role::Decode;
    // SGLang caches prefixes unless told not to (`--disable-radix-cache`).
    if prefills && d.engine == Engine::Sglang {
        d.prefix_caching = true;
    }
    while i < args.len() {
        let f = args[i].as_str();
        let v = args.get(i + 1);
        let mut takes = true;
        match f {
            "--tensor-parallel-size" | "--tp" => w.tp = num(f, v)? as u32,
            "--pipeline-parallel-size" | "--pp-size" => w.pp = num(f, v)? as u32,
            "--data-parallel-size" | "--dp-size" => w.dp = Some(num(f, v)? as u32),
            "--ep-size" => w.ep = Some(num(f, v)? as u32),
            "--enable-expert-parallel" => {
                takes = false;
                w.ep = Some(w.tp * w.dp.unwrap_or(1));
            }
            "--max-num-seqs" | "--max-running-requests" => w.max_num_seqs = Some(num(f, v)? as u32),
            "--max-num-batched-tokens" | "--chunked-prefill-size" => {
                w.max_num_batched_tokens = Some(num(f, v)?)
            }
            "--enable-chunked-prefill" | "--enable-mixed-chunk" => {
                takes = false;
                d.chunked_prefill = true;
            }
            "--enable-prefix-caching" => {
                takes = false;
                d.prefix_caching = true;
            }
            "--no-enable-prefix-caching" | "--disable-radix-cache" => {
                takes = false;
                if prefills {
                    d.prefix_caching = false;
                }
            }
            "--block-size" | "--page-size" => d.block_size = Some(num(f, v)?),
            "--kv-cache-dtype" => {
                if d.kv_format.is_none() && v.is_some_and(|x| x.starts_with("fp8")) {
                    d.kv_format = Some("fp8".into());
                }
            }
            "--kv-transfer-config"
            | "--disaggregation-mode"
            | "--disaggregation-bootstrap-port"
            | "--host"
            | "--port"
            | "--nnodes"
            | "--node-rank"
            | "--dist-init-addr"
            | "--served-model-name" => {}
            "--disaggregation-transfer-backend" => {
                d.kv_transfer_backend = v.cloned().unwrap_or_default()
            }
            other => {
                return Err(UsageError(format!(
                    "{other}: not an engine flag disagg writes"
                )))
            }
        }
        i += if takes { 2 } else { 1 };
    }
    Ok(())
}

#[cfg(test)]
mod emit_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_model_id_maps_to_a_catalogue_model_and_back() {
        let cat = disagg_model::Catalogue::builtin();
        for (key, ids) in MODEL_IDS {
            assert!(cat.model(key).is_ok(), "{key} is not in the catalogue");
            assert_eq!(id_of_model(key), Some(ids[0]));
            for id in *ids {
                assert_eq!(model_of_id(id), Some(*key), "{id}");
                assert_eq!(model_of_id(&id.to_lowercase()), Some(*key), "{id}");
            }
        }
        assert_eq!(model_of_id("meta-llama/Llama-9-1T"), None);
        for (key, label) in GPU_PRODUCTS {
            assert!(cat.device(key).is_ok(), "{key}");
            assert_eq!(device_of_product(label), Some(*key));
            assert_eq!(product_of_device(key), Some(*label));
        }
        assert_eq!(device_of_product("NVIDIA-L4"), None);
    }
}
