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
