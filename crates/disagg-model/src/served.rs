//! The models served disaggregated today (issue 16), described layer kind by layer kind.
//!
//! Every number is read from the model's published configuration file; [`served_source`] names
//! the repository, path and commit (the facts as collected in `../shared/models/models.json`).
//! Conventions: KV in BF16 (2 bytes) unless an engine option says otherwise; weights in the
//! format the checkpoint ships (FP8 for DeepSeek-V3/R1 and Kimi K2, BF16 elsewhere; gpt-oss's
//! MXFP4 experts are `--weight-format fp4`); an embedding and an LM head of `V x d` each; MLPs
//! of three matrices (gated); norms, biases and attention sinks (weights, not cache) left out.

use crate::arch::{Arch, Attention, LayerRun, Mlp, Retention};
use crate::catalogue::{LmHead, ModelSpec};

fn run(count: u64, attention: Attention, mlp: Mlp) -> LayerRun {
    LayerRun {
        count,
        attention,
        mlp,
    }
}

fn full(kv_heads: u64, head_dim: u64) -> Attention {
    Attention::Full { kv_heads, head_dim }
}

fn sliding(kv_heads: u64, head_dim: u64, window: u64) -> Attention {
    Attention::Sliding {
        kv_heads,
        head_dim,
        window,
    }
}

fn chunked(kv_heads: u64, head_dim: u64, chunk: u64) -> Attention {
    Attention::Chunked {
        kv_heads,
        head_dim,
        chunk,
    }
}

/// DeepSeek's MLA: nope 128, rope 64, v 128, latent 512, query rank `q_lora`.
fn mla(q_lora_rank: u64) -> Attention {
    Attention::Mla {
        kv_lora_rank: 512,
        qk_rope_head_dim: 64,
        qk_nope_head_dim: 128,
        v_head_dim: 128,
        q_lora_rank,
    }
}

fn dense(d_ff: u64) -> Mlp {
    Mlp::Dense { d_ff }
}

fn moe(experts: u64, top_k: u64, shared_experts: u64, d_ff_expert: u64) -> Mlp {
    Mlp::Moe {
        experts,
        top_k,
        shared_experts,
        d_ff_expert,
        d_ff_shared: None,
    }
}

struct Shape<'a> {
    key: &'a str,
    name: &'a str,
    d: u64,
    heads: u64,
    vocab: u64,
    context: u64,
    weight_bytes: f64,
    why: &'a str,
}

fn model(s: Shape, cycle: Vec<LayerRun>, cycles: u64, tail: Vec<LayerRun>) -> ModelSpec {
    let arch = Arch {
        cycle,
        cycles,
        tail,
        retention: Retention::Window,
        tied_embeddings: s.key == "gemma3-27b",
        why_kv: s.why.into(),
    };
    let (kv_heads, head_dim, d_ff) = arch.display_shape();
    ModelSpec {
        key: s.key.into(),
        name: s.name.into(),
        n_layers: arch.n_layers(),
        d_model: s.d,
        n_heads: s.heads,
        n_kv_heads: kv_heads,
        head_dim: Some(head_dim),
        d_ff,
        vocab: s.vocab,
        weight_bytes: s.weight_bytes,
        kv_bytes: 2.0,
        prefill_lm_head: LmHead::All,
        context_tokens: Some(s.context),
        moe: None,
        fft: None,
        ced: None,
        arch: Some(Box::new(arch)),
    }
}

const MLA_WHY: &str = "MLA: every layer caches one 576-value latent per token shared by all heads \
                       (not per-head K and V), and every tensor-parallel rank needs all of it";

/// The fifteen models, in the order.
pub fn served_models() -> Vec<ModelSpec> {
    let deepseek = |key: &str, name: &str| {
        model(
            Shape {
                key,
                name,
                d: 7168,
                heads: 128,
                vocab: 129280,
                context: 163840,
                weight_bytes: 1.0,
                why: MLA_WHY,
            },
            vec![
                run(3, mla(1536), dense(18432)),
                run(58, mla(1536), moe(256, 8, 1, 2048)),
            ],
            1,
            vec![],
        )
    };
    let qwen3_moe = |key: &str, name: &str, layers, d, heads, experts_ff| {
        model(
            Shape {
                key,
                name,
                d,
                heads,
                vocab: 151936,
                context: 40960,
                weight_bytes: 2.0,
                why: "GQA with 4 KV heads of an explicit head_dim 128 (not hidden/heads): every \
                      layer keeps K and V for every token",
            },
            vec![run(layers, full(4, 128), moe(128, 8, 0, experts_ff))],
            1,
            vec![],
        )
    };
    let gpt_oss = |key: &str, name: &str, pairs, experts| {
        model(
            Shape {
                key,
                name,
                d: 2880,
                heads: 64,
                vocab: 201088,
                context: 131072,
                weight_bytes: 2.0,
                why: "half the layers attend over a 128-token sliding window: they hand off at \
                      most 128 tokens, whatever the prompt",
            },
            vec![
                run(1, sliding(8, 64, 128), moe(experts, 4, 0, 2880)),
                run(1, full(8, 64), moe(experts, 4, 0, 2880)),
            ],
            pairs,
            vec![],
        )
    };
    let llama4 = |key: &str, name: &str, maverick: bool| {
        let why = "three layers in four attend only within 8,192-token chunks: they hand off the \
                   prompt's current chunk, the other quarter the whole prompt";
        let shape = Shape {
            key,
            name,
            d: 5120,
            heads: 40,
            vocab: 202048,
            context: if maverick { 1048576 } else { 10485760 },
            weight_bytes: 2.0,
            why,
        };
        if maverick {
            let e = moe(128, 1, 1, 8192);
            model(
                shape,
                vec![
                    run(1, chunked(8, 128, 8192), dense(16384)),
                    run(1, chunked(8, 128, 8192), e),
                    run(1, chunked(8, 128, 8192), dense(16384)),
                    run(1, full(8, 128), e),
                ],
                12,
                vec![],
            )
        } else {
            let e = moe(16, 1, 1, 8192);
            model(
                shape,
                vec![run(3, chunked(8, 128, 8192), e), run(1, full(8, 128), e)],
                12,
                vec![],
            )
        }
    };
    // One routed-expert width and one shared expert of the same width (512).
    let qwen3_next_moe = moe(512, 10, 1, 512);
    vec![
        deepseek("deepseek-v3", "DeepSeek-V3"),
        deepseek("deepseek-r1", "DeepSeek-R1"),
        model(
            Shape {
                key: "kimi-k2",
                name: "Kimi-K2-Instruct",
                d: 7168,
                heads: 64,
                vocab: 163840,
                context: 131072,
                weight_bytes: 1.0,
                why: MLA_WHY,
            },
            vec![
                run(1, mla(1536), dense(18432)),
                run(60, mla(1536), moe(384, 8, 1, 2048)),
            ],
            1,
            vec![],
        ),
        qwen3_moe("qwen3-235b-a22b", "Qwen3-235B-A22B", 94, 4096, 64, 1536),
        qwen3_moe("qwen3-30b-a3b", "Qwen3-30B-A3B", 48, 2048, 32, 768),
        model(
            Shape {
                key: "qwen3-32b",
                name: "Qwen3-32B",
                d: 5120,
                heads: 64,
                vocab: 151936,
                context: 40960,
                weight_bytes: 2.0,
                why: "plain GQA (8 KV heads, head_dim 128): every layer keeps K and V for every \
                      token",
            },
            vec![run(64, full(8, 128), dense(25600))],
            1,
            vec![],
        ),
        gpt_oss("gpt-oss-120b", "gpt-oss-120b", 18, 128),
        gpt_oss("gpt-oss-20b", "gpt-oss-20b", 12, 32),
        model(
            Shape {
                key: "gemma3-27b",
                name: "Gemma-3-27B",
                d: 5376,
                heads: 32,
                vocab: 262144,
                context: 131072,
                weight_bytes: 2.0,
                why: "five layers in six attend over a 1,024-token sliding window: only one in \
                      six hands off the whole prompt",
            },
            vec![
                run(5, sliding(16, 128, 1024), dense(21504)),
                run(1, full(16, 128), dense(21504)),
            ],
            10,
            vec![run(2, sliding(16, 128, 1024), dense(21504))],
        ),
        model(
            Shape {
                key: "llama3.1-405b",
                name: "Llama-3.1-405B",
                d: 16384,
                heads: 128,
                vocab: 128256,
                context: 131072,
                weight_bytes: 2.0,
                why: "plain GQA (8 KV heads) over 126 layers: the largest per-token KV here",
            },
            vec![run(126, full(8, 128), dense(53248))],
            1,
            vec![],
        ),
        llama4("llama4-scout", "Llama-4-Scout-17B-16E", false),
        llama4("llama4-maverick", "Llama-4-Maverick-17B-128E", true),
        model(
            Shape {
                key: "qwen3-next-80b-a3b",
                name: "Qwen3-Next-80B-A3B",
                d: 2048,
                heads: 16,
                vocab: 151936,
                context: 262144,
                weight_bytes: 2.0,
                why: "three layers in four are Gated DeltaNet linear attention: a fixed 1.1 MB \
                      state each, whatever the prompt; only 12 layers keep per-token KV",
            },
            vec![
                run(
                    3,
                    Attention::Linear {
                        conv_kernel: 4,
                        k_heads: 16,
                        k_head_dim: 128,
                        v_heads: 32,
                        v_head_dim: 128,
                        conv_bytes: 2.0,
                        state_bytes: 2.0,
                    },
                    qwen3_next_moe,
                ),
                run(1, full(2, 256), qwen3_next_moe),
            ],
            12,
            vec![],
        ),
        model(
            Shape {
                key: "mixtral-8x22b",
                name: "Mixtral-8x22B",
                d: 6144,
                heads: 48,
                vocab: 32000,
                context: 65536,
                weight_bytes: 2.0,
                why: "plain GQA (8 KV heads): every layer keeps K and V for every token; the \
                      experts change the compute, not the cache",
            },
            vec![run(56, full(8, 128), moe(8, 2, 0, 16384))],
            1,
            vec![],
        ),
        model(
            Shape {
                key: "deepseek-v2-lite",
                name: "DeepSeek-V2-Lite",
                d: 2048,
                heads: 16,
                vocab: 102400,
                context: 32768,
                weight_bytes: 2.0,
                why: MLA_WHY,
            },
            vec![
                run(1, mla(0), dense(10944)),
                run(26, mla(0), moe(64, 6, 2, 1408)),
            ],
            1,
            vec![],
        ),
    ]
}

/// Where a served model's configuration was read: `repository path @ commit`.
pub fn served_source(key: &str) -> Option<&'static str> {
    Some(match key {
        "deepseek-v3" => "ai-dynamo/aiconfigurator aic-core/src/aiconfigurator_core/model_configs/deepseek-ai--DeepSeek-V3_config.json @ 095f58a51c4ca8e61b66ec108d86f223f8d559ce (agrees with deepseek-ai/DeepSeek-V3 inference/configs/config_671B.json @ 9b4e9788e4a3a731f7567338ed15d3ec549ce03b)",
        "deepseek-r1" => "ai-dynamo/aiconfigurator aic-core/src/aiconfigurator_core/model_configs/deepseek-ai--DeepSeek-R1_config.json @ 095f58a51c4ca8e61b66ec108d86f223f8d559ce",
        "kimi-k2" => "ai-dynamo/aiconfigurator aic-core/src/aiconfigurator_core/model_configs/moonshotai--Kimi-K2-Instruct_config.json @ 095f58a51c4ca8e61b66ec108d86f223f8d559ce",
        "qwen3-235b-a22b" => "ai-dynamo/aiconfigurator aic-core/src/aiconfigurator_core/model_configs/Qwen--Qwen3-235B-A22B_config.json @ 095f58a51c4ca8e61b66ec108d86f223f8d559ce",
        "qwen3-30b-a3b" => "ai-dynamo/aiconfigurator aic-core/src/aiconfigurator_core/model_configs/Qwen--Qwen3-30B-A3B_config.json @ 095f58a51c4ca8e61b66ec108d86f223f8d559ce",
        "qwen3-32b" => "ai-dynamo/aiconfigurator aic-core/src/aiconfigurator_core/model_configs/Qwen--Qwen3-32B_config.json @ 095f58a51c4ca8e61b66ec108d86f223f8d559ce",
        "gpt-oss-120b" => "ai-dynamo/aiconfigurator aic-core/src/aiconfigurator_core/model_configs/openai--gpt-oss-120b_config.json @ 095f58a51c4ca8e61b66ec108d86f223f8d559ce (layer pattern: openai/gpt-oss gpt_oss/torch/model.py @ 7b583341fe16729127f6d5b94a7b09ccae97e1a1)",
        "gpt-oss-20b" => "ai-dynamo/aiconfigurator aic-core/src/aiconfigurator_core/model_configs/openai--gpt-oss-20b_config.json @ 095f58a51c4ca8e61b66ec108d86f223f8d559ce",
        "gemma3-27b" => "google/gemma_pytorch gemma/config.py (get_config_for_27b_v3) @ 014acb7ac4563a5f77c76d7ff98f31b568c16508 (agrees with AI-Hypercomputer/maxtext src/MaxText/configs/models/gemma3-27b.yml @ 14c44744fb7f1189bd8c7b19dca6286a6278ec60)",
        "llama3.1-405b" => "ai-dynamo/aiconfigurator aic-core/src/aiconfigurator_core/model_configs/meta-llama--Meta-Llama-3.1-405B_config.json @ 095f58a51c4ca8e61b66ec108d86f223f8d559ce",
        "llama4-scout" => "ai-dynamo/aiconfigurator aic-core/src/aiconfigurator_core/model_configs/meta-llama--Llama-4-Scout-17B-16E-Instruct_config.json @ 095f58a51c4ca8e61b66ec108d86f223f8d559ce (layer pattern: huggingface/transformers src/transformers/models/llama4/configuration_llama4.py @ 008e574391258935f3ecc3035c882e73bbcac419)",
        "llama4-maverick" => "ai-dynamo/aiconfigurator aic-core/src/aiconfigurator_core/model_configs/meta-llama--Llama-4-Maverick-17B-128E-Instruct_config.json @ 095f58a51c4ca8e61b66ec108d86f223f8d559ce (layer pattern: huggingface/transformers src/transformers/models/llama4/configuration_llama4.py @ 008e574391258935f3ecc3035c882e73bbcac419)",
        "qwen3-next-80b-a3b" => "ai-dynamo/aiconfigurator src/aiconfigurator/model_configs/Qwen--Qwen3-Next-80B-A3B-Thinking_config.json @ 1b7cfb10a6fa06880ad7911db5ddb949882ff76a (state shape: vllm-project/vllm vllm/model_executor/layers/mamba/mamba_utils.py @ 02d710837549a368073552333f66d714477415d2)",
        "mixtral-8x22b" => "ai-dynamo/aiconfigurator aic-core/src/aiconfigurator_core/model_configs/mistralai--Mixtral-8x22B-v0.1_config.json @ 095f58a51c4ca8e61b66ec108d86f223f8d559ce",
        "deepseek-v2-lite" => "deepseek-ai/DeepSeek-V3 inference/configs/config_16B.json @ 9b4e9788e4a3a731f7567338ed15d3ec549ce03b (context: deepseek-ai/DeepSeek-V2 README.md @ 07245dbf855936dce8dcec6977d3c0dc255b823d)",
        _ => return None,
    })
}
