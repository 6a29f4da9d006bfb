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
    /// KV cache format (`fp8`), weight format (`fp8`), if set.
    pub kv_format: Option<String>,
    pub weight_format: Option<String>,
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
