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

/// disagg's annotations (`docs/deployment.md#annotations`): DGD `metadata.annotations`, llm-d
/// `modelArtifacts.labels`, `# key: value` comment lines of the scripts. They carry what no
/// stack has a field for; [`Deployment::annotations`] writes them and
/// [`Deployment::apply_annotation`] is their one reader.
///
/// The catalogue key of the KV link between the pools.
pub const KV_LINK_ANNOTATION: &str = "disagg.dev/kv-link";
/// GPUs per node (a worker larger than this spans nodes).
pub const GPUS_PER_NODE_ANNOTATION: &str = "disagg.dev/gpus-per-node";
/// The KV compression on the link (a catalogue compression key).
pub const KV_COMPRESS_ANNOTATION: &str = "disagg.dev/kv-compress";
/// `modelled` (absent: modelled) or `ideal`: [`Deployment::layouts_modelled`].
pub const LAYOUTS_ANNOTATION: &str = "disagg.dev/layouts";
/// The weight format, when it differs from the checkpoint's ([`native_weight_format`]).
pub const WEIGHT_FORMAT_ANNOTATION: &str = "disagg.dev/weight-format";
/// The KV-cache format, when no engine flag says it (not bf16, not fp8).
pub const KV_FORMAT_ANNOTATION: &str = "disagg.dev/kv-format";
/// The compute format, when not bf16.
pub const COMPUTE_FORMAT_ANNOTATION: &str = "disagg.dev/compute-format";
/// A role's device (catalogue key), `disagg.dev/device-prefill`, `-decode`, `-worker`: written
/// when the file has no node selector for it (a script, a device without a GPU product label).
pub const DEVICE_ANNOTATION_PREFIX: &str = "disagg.dev/device-";

/// The weight format of catalogue models whose published checkpoint is not BF16 (what an engine
/// serves by default): DeepSeek-V3/R1 and Kimi K2 in FP8, gpt-oss in MXFP4.
const NATIVE_WEIGHTS: &[(&str, &str)] = &[
    ("deepseek-v3", "fp8"),
    ("deepseek-r1", "fp8"),
    ("kimi-k2", "fp8"),
    ("gpt-oss-120b", "fp4"),
    ("gpt-oss-20b", "fp4"),
];

/// The weight format of catalogue model `key`'s published checkpoint (None: bf16).
pub fn native_weight_format(key: &str) -> Option<&'static str> {
    NATIVE_WEIGHTS
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, f)| *f)
}

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

/// The scenario flags a deployment's file carries: what [`Deployment::to_args`] writes
/// (`docs/deployment.md#mapping`). `--batch-policy` only as `chunked` (an engine's chunked
/// prefill); no engine has a flag for the other policies.
const CARRIED: &[&str] = &[
    "--model",
    "--mode",
    "--prefill",
    "--decode",
    "--device",
    "--prefill-device",
    "--decode-device",
    "--devices-per-instance",
    "--prefill-devices-per-instance",
    "--decode-devices-per-instance",
    "--tp",
    "--pp",
    "--ep",
    "--prefill-tp",
    "--prefill-pp",
    "--decode-tp",
    "--decode-pp",
    "--link",
    "--kv-compress",
    "--weight-format",
    "--kv-format",
    "--compute-format",
    "--max-num-batched-tokens",
    "--max-decode-batch",
    "--batch-policy",
    "--prefix-caching",
    "--kv-block-size",
];

/// `args` (a [`Scenario::to_args`] list) split into the flags a deployment's file carries and
/// the rest: the workload's, the SLOs and whatever no file says (`--seed`, `--kv-policy`, the
/// custom hardware flags ...), which the command line of a round trip gives.
pub fn split_carried(args: &[String]) -> (Vec<String>, Vec<String>) {
    let (mut carried, mut rest) = (Vec::new(), Vec::new());
    let mut i = 0;
    while i < args.len() {
        let end = args[i + 1..]
            .iter()
            .position(|a| a.starts_with("--"))
            .map_or(args.len(), |p| i + 1 + p);
        let words = &args[i..end];
        let value = words.get(1).map(String::as_str);
        let is_carried = CARRIED.contains(&words[0].as_str())
            && (words[0] != "--batch-policy" || value == Some("chunked"));
        if is_carried {
            carried.extend_from_slice(words);
        } else {
            rest.extend_from_slice(words);
        }
        i = end;
    }
    (carried, rest)
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
    /// The flags of the `# disagg run` line: the deployment's ([`Deployment::to_args`]) then
    /// [`Header::rest_args`].
    pub run_args: Vec<String>,
    /// The scenario's flags no file carries ([`split_carried`]: the workload's, the SLOs ...):
    /// the command line of the round trip (`disagg run --deployment FILE REST`).
    pub rest_args: Vec<String>,
    /// What the file cannot say (one line each).
    pub notes: Vec<String>,
    /// The container image (`--image`; None: a placeholder to replace).
    pub image: Option<String>,
    /// The Kubernetes namespace (`--namespace`; None: `default`).
    pub namespace: Option<String>,
}

impl Header {
    /// The header of deployment `d` of scenario `sc`: the flags that simulate the deployed
    /// configuration, and the figures of `sc`'s summary if simulated. The `# disagg run` line is
    /// `d`'s flags (what `run --deployment` reads from the file) then the rest of `sc`'s, so
    /// that it and the round trip give the same run (`docs/deployment.md#round-trip`).
    pub fn of_run(
        sc: &Scenario,
        d: &Deployment,
        cat: &Catalogue,
        s: Option<&disagg_sim::Summary>,
    ) -> Result<Header, UsageError> {
        let (_, rest) = split_carried(&sc.to_args());
        let (mut run_args, notes) = d.to_args_noted(cat)?;
        run_args.extend(rest.iter().cloned());
        let mut h = Header {
            rate_rps: sc.trace_file.is_none().then_some(sc.rate),
            run_args,
            rest_args: rest,
            notes,
            ..Header::default()
        };
        if let Some(s) = s {
            h.slo_attainment = Some(s.slo_attainment);
            h.ttft_p99_s = Some(s.ttft_s.p99);
            h.tpot_p99_s = Some(s.tpot_s.p99);
            h.goodput_rps = Some(s.goodput_rps);
            let gpus = d.gpus();
            if gpus > 0 {
                h.tokens_per_s_per_gpu = Some(s.throughput_tok_s / gpus as f64);
            }
        }
        let hardware: Vec<&String> = h
            .rest_args
            .iter()
            .filter(|a| disagg_sim::options::hardware().any(|o| o.flag == a.as_str()))
            .collect();
        if !hardware.is_empty() {
            h.notes.push(
                "the scenario overrides the model, device or link presets: the engines serve the \
                 real checkpoint on the real hardware"
                    .into(),
            );
        }
        h.notes.extend(d.notes());
        if !simulates_alike(sc, &h.run_args, cat) {
            h.notes.push(
                "the file cannot say this plan exactly: its round trip simulates a configuration \
                 other than the plan's"
                    .into(),
            );
        }
        Ok(h)
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
        let work = if self.rest_args.is_empty() {
            String::new()
        } else {
            format!(" {}", shell::shell_join(&self.rest_args))
        };
        let _ = writeln!(s, "# round trip: disagg run --deployment {file}{work}");
        for n in &self.notes {
            let _ = writeln!(s, "# note: {n}");
        }
        s
    }
}

/// Whether flags `args` build the configuration `sc` builds (the scenario echo and what only
/// the report uses aside): the
/// round trip of a file whose `# disagg run` line is `args` then simulates the plan's candidate
/// exactly. A scenario that does not build here (a trace file not at hand) is taken as alike.
fn simulates_alike(sc: &Scenario, args: &[String], cat: &Catalogue) -> bool {
    let built = |s: &Scenario| {
        s.build(cat).ok().map(|mut c| {
            // What the report says, not what is simulated: a per-pool flag shows the pools
            // (`summary.pools`); the analytic bounds' cost model is `--devices-per-instance`'s
            // (`summary.analytic`).
            c.scenario = Scenario::default();
            c.heterogeneous = false;
            c.base_cost = None;
            format!("{c:?}")
        })
    };
    match (
        built(sc),
        Scenario::from_flags(args).ok().as_ref().and_then(built),
    ) {
        (Some(a), Some(b)) => a == b,
        _ => true,
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

    /// The workers of `role`, if the deployment has them.
    pub fn workers(&self, role: Role) -> Option<&Workers> {
        match role {
            Role::Prefill => self.prefill.as_ref(),
            Role::Decode => self.decode.as_ref(),
            Role::Worker => self.colocated.as_ref(),
        }
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
        // Only a budget the scenario sets: any value switches the scheduled instances on.
        let budget = sc.max_num_batched_tokens;
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
                max_num_batched_tokens: budget.filter(|_| prefills),
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
        let d = Deployment {
            name: default_name(sc),
            model: sc.model.clone(),
            engine,
            prefill,
            decode,
            colocated,
            link: (sc.mode == Mode::Disagg).then(|| sc.link.clone()),
            // Colocated workers transfer no KV.
            kv_transfer_backend: match sc.mode {
                Mode::Disagg => "nixl".into(),
                Mode::Colocated => "none".into(),
            },
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
        if self.weight_format.as_deref() != native_weight_format(&self.model) {
            let f = self.weight_format.as_deref().unwrap_or("bf16");
            v.push(format!(
                "weights {f}: serve a checkpoint in {f} (the engines read the format from the \
                 checkpoint)"
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
    /// field carries (`docs/deployment.md#annotations`). `selectors`: the format has node
    /// selectors (Dynamo, llm-d), so a role's device is annotated only when it has no GPU
    /// product label; without (the scripts) always.
    pub fn annotations(&self, selectors: bool) -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = Vec::new();
        let mut put = |k: &str, x: String| v.push((k.to_string(), x));
        if let Some(l) = &self.link {
            put(KV_LINK_ANNOTATION, l.clone());
        }
        if let Some(c) = &self.kv_compress {
            put(KV_COMPRESS_ANNOTATION, c.clone());
        }
        put(GPUS_PER_NODE_ANNOTATION, self.gpus_per_node.to_string());
        let layouts = if self.layouts_modelled {
            "modelled"
        } else {
            "ideal"
        };
        put(LAYOUTS_ANNOTATION, layouts.into());
        if self.weight_format.as_deref() != native_weight_format(&self.model) {
            let f = self.weight_format.as_deref().unwrap_or("bf16");
            put(WEIGHT_FORMAT_ANNOTATION, f.into());
        }
        // fp8 KV is the engines' `--kv-cache-dtype`.
        if let Some(f) = self.kv_format.as_deref().filter(|f| *f != "fp8") {
            put(KV_FORMAT_ANNOTATION, f.into());
        }
        if let Some(f) = &self.compute_format {
            put(COMPUTE_FORMAT_ANNOTATION, f.clone());
        }
        for (role, w) in self.roles() {
            if let Some(d) = &w.device {
                if !selectors || product_of_device(d).is_none() {
                    put(
                        &format!("{DEVICE_ANNOTATION_PREFIX}{}", role.as_str()),
                        d.clone(),
                    );
                }
            }
        }
        v
    }

    /// Reads one of disagg's annotations back into the deployment (the one reader of
    /// [`Deployment::annotations`]); false for a key that is not disagg's. A bad value is an
    /// error naming the value and the valid ones. A role's device annotation fills in only a
    /// device the file's node selector did not give.
    pub fn apply_annotation(&mut self, key: &str, value: &str) -> Result<bool, String> {
        let bad = |why: &str| format!("{key}: '{value}' ({why})");
        let v = value.trim().to_string();
        let format = |v: String| (v != "bf16").then_some(v);
        match key {
            KV_LINK_ANNOTATION => self.link = Some(v),
            KV_COMPRESS_ANNOTATION => self.kv_compress = Some(v),
            GPUS_PER_NODE_ANNOTATION => {
                self.gpus_per_node = v
                    .parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| bad("not a whole number of GPUs, at least 1"))?
            }
            LAYOUTS_ANNOTATION => {
                self.layouts_modelled = match v.as_str() {
                    "modelled" => true,
                    "ideal" => false,
                    _ => return Err(bad("valid: modelled, ideal")),
                }
            }
            WEIGHT_FORMAT_ANNOTATION => self.weight_format = format(v),
            KV_FORMAT_ANNOTATION => self.kv_format = format(v),
            COMPUTE_FORMAT_ANNOTATION => self.compute_format = format(v),
            k => match k.strip_prefix(DEVICE_ANNOTATION_PREFIX) {
                Some(role) => {
                    let w = match role {
                        "prefill" => self.prefill.as_mut(),
                        "decode" => self.decode.as_mut(),
                        "worker" => self.colocated.as_mut(),
                        _ => return Err(bad("valid roles: prefill, decode, worker")),
                    };
                    if let Some(w) = w.filter(|w| w.device.is_none()) {
                        w.device = Some(v);
                    }
                }
                None => return Ok(false),
            },
        }
        Ok(true)
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
            // SGLang's prefill token budget is `--max-prefill-tokens`; with chunked prefill the
            // chunk is the budget too (`--chunked-prefill-size`, which import reads as chunked).
            let chunked = prefills && d.chunked_prefill;
            if let Some(n) = w.max_num_batched_tokens {
                let f = if chunked {
                    "--chunked-prefill-size"
                } else {
                    "--max-prefill-tokens"
                };
                put(f, Some(n.to_string()));
            }
            if chunked {
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
