//! A worker's engine command line (vLLM, SGLang, Dynamo's wrappers of both) read into the fields
//! disagg simulates; every flag it does not map and that matters is kept as a `not_mapped` line
//! (`docs/deployment.md#mapping`).

use super::super::shell::command_words;
use super::super::Engine;

/// What one worker's command line says.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct EngineArgs {
    /// The engine, if the command names it (`dynamo.vllm`, `vllm serve`, `sglang.launch_server`).
    pub engine: Option<Engine>,
    /// The model id (`--model`, `--model-path`, `vllm serve MODEL`).
    pub model: Option<String>,
    pub tp: Option<u32>,
    pub pp: Option<u32>,
    pub dp: Option<u32>,
    /// `--ep-size` (SGLang).
    pub ep: Option<u32>,
    /// `--enable-expert-parallel` (vLLM: EP over tp x dp).
    pub expert_parallel: bool,
    /// `--enable-dp-attention` (SGLang: DP inside the TP group).
    pub dp_attention: bool,
    pub max_num_seqs: Option<u32>,
    pub max_num_batched_tokens: Option<u64>,
    pub chunked_prefill: Option<bool>,
    pub prefix_caching: Option<bool>,
    pub block_size: Option<u64>,
    /// `--kv-cache-dtype` as a disagg format (`fp8`), `Some("bf16")` for the engine's default.
    pub kv_format: Option<String>,
    /// `--quantization fp8` as a weight format.
    pub weight_format: Option<String>,
    /// The KV transfer backend (`nixl`, `mooncake`) of `--kv-transfer-config` or
    /// `--disaggregation-transfer-backend`.
    pub kv_backend: Option<String>,
    /// `--disaggregation-mode` (`prefill`, `decode`), `--is-prefill-worker`.
    pub disagg_mode: Option<String>,
    /// Flags that matter and are not mapped: `--flag value (why)`.
    pub not_mapped: Vec<String>,
}

fn is_separator(w: &str) -> bool {
    matches!(w, ";" | "|" | "||" | "&" | "&&" | "\n")
}

/// The engine a word names and where its flags start, if it does: `dynamo.vllm`,
/// `vllm serve`, `vllm.entrypoints.openai.api_server`, `dynamo.sglang`,
/// `sglang.launch_server`; an engine disagg does not simulate is an error.
fn engine_at(words: &[String], i: usize) -> Result<Option<(Engine, usize)>, String> {
    let w = words[i].as_str();
    let base = w.rsplit('/').next().unwrap_or(w);
    Ok(match base {
        "dynamo.vllm" | "vllm.entrypoints.openai.api_server" => Some((Engine::Vllm, i + 1)),
        "vllm" if words.get(i + 1).map(String::as_str) == Some("serve") => {
            Some((Engine::Vllm, i + 2))
        }
        "dynamo.sglang" | "sglang.launch_server" => Some((Engine::Sglang, i + 1)),
        "sglang" if words.get(i + 1).map(String::as_str) == Some("serve") => {
            Some((Engine::Sglang, i + 2))
        }
        "dynamo.trtllm" | "trtllm-serve" | "dynamo.llama_cpp" | "dynamo.mocker" => {
            return Err(format!(
                "engine '{w}' is not simulated (valid: vllm, sglang)"
            ))
        }
        _ => None,
    })
}

/// A worker's words (the container's command then its args, a `sh -c "..."` string split) from
/// the engine's flags on, with the engine named, if it is.
pub(crate) fn engine_words(command: &[String]) -> Result<(Option<Engine>, Vec<String>), String> {
    let mut words = Vec::new();
    for w in command {
        // A whole command in one word (`sh -c "python3 -m dynamo.vllm ..."`): split it.
        if w.contains(char::is_whitespace) && !w.trim_start().starts_with('{') {
            words.extend(command_words(w).map_err(|e| format!("{w:?}: {e}"))?);
        } else {
            words.push(w.clone());
        }
    }
    for i in 0..words.len() {
        if let Some((e, from)) = engine_at(&words, i)? {
            let end = words[from..]
                .iter()
                .position(|w| is_separator(w))
                .map_or(words.len(), |p| from + p);
            return Ok((Some(e), words[from..end].to_vec()));
        }
    }
    // No engine named (an image's default command, llm-d's `modelCommand: vllmServe`): the
    // flags are the words from the first flag on.
    let from = words
        .iter()
        .position(|w| w.starts_with('-'))
        .unwrap_or(words.len());
    Ok((None, words[from..].to_vec()))
}

/// Flags that take no value.
const SWITCHES: &[&str] = &[
    "--enable-expert-parallel",
    "--enable-chunked-prefill",
    "--no-enable-chunked-prefill",
    "--enable-prefix-caching",
    "--no-enable-prefix-caching",
    "--enable-dp-attention",
    "--disable-radix-cache",
    "--enable-mixed-chunk",
    "--trust-remote-code",
    "--skip-tokenizer-init",
    "--disable-uvicorn-access-log",
    "--disable-log-requests",
    "--enable-log-requests",
    "--disable-log-stats",
    "--enable-auto-tool-choice",
    "--enforce-eager",
    "--is-prefill-worker",
    "--is-decode-worker",
    "--disable-hybrid-kv-cache-manager",
    "--no-disable-hybrid-kv-cache-manager",
    "--async-scheduling",
    "--no-async-scheduling",
    "--enable-metrics",
    "--disable-cuda-graph",
    "--enable-eplb",
];

/// Serving plumbing that does not change what is simulated: read and dropped silently.
const PLUMBING: &[&str] = &[
    "--host",
    "--port",
    "--served-model-name",
    "--trust-remote-code",
    "--skip-tokenizer-init",
    "--tokenizer",
    "--tokenizer-mode",
    "--revision",
    "--download-dir",
    "--load-format",
    "--disaggregation-bootstrap-port",
    "--disaggregation-ib-device",
    "--disable-uvicorn-access-log",
    "--disable-access-log-for-endpoints",
    "--disable-log-requests",
    "--enable-log-requests",
    "--disable-log-stats",
    "--enable-metrics",
    "--enable-auto-tool-choice",
    "--tool-call-parser",
    "--reasoning-parser",
    "--chat-template",
    "--uvicorn-log-level",
    "--log-level",
    "--api-key",
    "--nnodes",
    "--node-rank",
    "--dist-init-addr",
    "--shutdown-timeout",
    "--connector",
    "--endpoint",
    "--namespace",
    "--seed",
    "--kv-events-config",
    "--is-decode-worker",
    "--no-disable-hybrid-kv-cache-manager",
];

/// Flags known to matter that disagg does not model, and why.
const NOT_MODELLED: &[(&str, &str)] = &[
    (
        "--gpu-memory-utilization",
        "KV capacity is the device's; not modelled",
    ),
    (
        "--mem-fraction-static",
        "KV capacity is the device's; not modelled",
    ),
    (
        "--max-model-len",
        "context limit; not modelled: --max-context clips a trace's prompts",
    ),
    ("--context-length", "context limit; not modelled"),
    ("--enforce-eager", "CUDA graphs off; not modelled"),
    ("--disable-cuda-graph", "CUDA graphs off; not modelled"),
    (
        "--speculative-config",
        "speculative decoding: give --speculative",
    ),
    (
        "--speculative-algorithm",
        "speculative decoding: give --speculative",
    ),
    (
        "--max-prefill-tokens",
        "one token budget per worker: --chunked-prefill-size's is simulated",
    ),
    ("--moe-a2a-backend", "all-to-all kernel; not modelled"),
    (
        "--enable-eplb",
        "expert load balancing; see --expert-imbalance",
    ),
    ("--swap-space", "host swap space; see --preemption swap"),
    ("--cpu-offload-gb", "weight offload; not modelled"),
    ("--data-parallel-size-local", "ranks per node; not modelled"),
    (
        "--scheduling-policy",
        "scheduling order; the simulator's is first come, first served",
    ),
    (
        "--schedule-policy",
        "scheduling order; the simulator's is first come, first served",
    ),
];

/// A disagg format name of an engine's KV cache dtype, or None (not mapped).
fn kv_format_of(dtype: &str) -> Option<&'static str> {
    match dtype.to_ascii_lowercase().as_str() {
        "auto" | "bf16" | "bfloat16" | "fp16" | "float16" => Some("bf16"),
        "fp8" | "fp8_e4m3" | "fp8_e5m2" | "fp8_inc" | "fp8_ds_mla" => Some("fp8"),
        _ => None,
    }
}

/// The transfer backend of a vLLM `kv_connector` name.
fn backend_of_connector(c: &str) -> String {
    match c {
        "NixlConnector" => "nixl".into(),
        "MooncakeConnector" | "MooncakeConnectorV1" | "MooncakeStoreConnector" => "mooncake".into(),
        "P2pNcclConnector" | "PyNcclConnector" => "nccl".into(),
        "LMCacheConnectorV1" | "LMCacheConnector" => "lmcache".into(),
        other => other.to_ascii_lowercase(),
    }
}

fn is_flag(w: &str) -> bool {
    // `-1` is a value (SGLang's `--chunked-prefill-size -1`), `-tp` a flag.
    w.starts_with('-') && w.len() > 1 && w.parse::<f64>().is_err()
}

/// Reads a worker's engine flags (`words`: from the first flag or the positional model on, as
/// [`engine_words`] returns them). `role` prefixes nothing: the caller labels the lines.
pub(crate) fn parse(engine: Option<Engine>, words: &[String]) -> EngineArgs {
    let mut a = EngineArgs {
        engine,
        ..EngineArgs::default()
    };
    let mut i = 0;
    // `vllm serve MODEL`: the positional model comes first.
    if let Some(w) = words.first() {
        if !is_flag(w) {
            a.model = Some(w.clone());
            i = 1;
        }
    }
    while i < words.len() {
        let w = &words[i];
        i += 1;
        if !is_flag(w) {
            a.not_mapped
                .push(format!("{w} (a word disagg does not read)"));
            continue;
        }
        let (flag, inline) = match w.split_once('=') {
            Some((f, v)) => (f.to_string(), Some(v.to_string())),
            None => (w.clone(), None),
        };
        let switch = SWITCHES.contains(&flag.as_str());
        let value = match inline {
            Some(v) => Some(v),
            None if !switch && i < words.len() && !is_flag(&words[i]) => {
                i += 1;
                Some(words[i - 1].clone())
            }
            None => None,
        };
        a.flag(&flag, value);
    }
    a
}

impl EngineArgs {
    fn unmapped(&mut self, flag: &str, value: Option<&str>, why: &str) {
        let shown = match value {
            Some(v) => format!("{flag} {v}"),
            None => flag.to_string(),
        };
        self.not_mapped.push(format!("{shown} ({why})"));
    }

    /// One flag with its value, if it took one.
    fn flag(&mut self, flag: &str, value: Option<String>) {
        let v = value.as_deref();
        let num = |v: Option<&str>| v.and_then(|v| v.trim().parse::<u64>().ok());
        let n32 = |v: Option<&str>| num(v).and_then(|n| u32::try_from(n).ok());
        macro_rules! set {
            ($field:ident, $parsed:expr) => {
                match $parsed {
                    Some(x) => self.$field = Some(x),
                    None => self.unmapped(flag, v, "expected a whole number"),
                }
            };
        }
        match flag {
            "--model" | "--model-path" => match v {
                Some(m) => self.model = Some(m.to_string()),
                None => self.unmapped(flag, v, "no model given"),
            },
            "--tensor-parallel-size" | "-tp" | "--tp" | "--tp-size" => set!(tp, n32(v)),
            "--pipeline-parallel-size" | "-pp" | "--pp-size" => set!(pp, n32(v)),
            "--data-parallel-size" | "-dp" | "--dp-size" | "--dp" => set!(dp, n32(v)),
            "--ep-size" | "--expert-parallel-size" => set!(ep, n32(v)),
            "--enable-expert-parallel" => self.expert_parallel = true,
            "--enable-dp-attention" => self.dp_attention = true,
            "--max-num-seqs" | "--max-running-requests" => set!(max_num_seqs, n32(v)),
            "--max-num-batched-tokens" => set!(max_num_batched_tokens, num(v)),
            "--chunked-prefill-size" => match v.and_then(|v| v.trim().parse::<i64>().ok()) {
                Some(n) if n > 0 => {
                    self.chunked_prefill = Some(true);
                    self.max_num_batched_tokens = Some(n as u64);
                }
                Some(_) => self.chunked_prefill = Some(false),
                None => self.unmapped(flag, v, "expected a whole number"),
            },
            "--enable-chunked-prefill" | "--enable-mixed-chunk" => {
                self.chunked_prefill = Some(true)
            }
            // SGLang's prefill token budget; `--chunked-prefill-size` says it for chunks.
            "--max-prefill-tokens" if self.max_num_batched_tokens.is_none() => {
                set!(max_num_batched_tokens, num(v))
            }
            "--no-enable-chunked-prefill" => self.chunked_prefill = Some(false),
            "--enable-prefix-caching" => self.prefix_caching = Some(true),
            "--no-enable-prefix-caching" | "--disable-radix-cache" => {
                self.prefix_caching = Some(false)
            }
            "--block-size" | "--page-size" => set!(block_size, num(v)),
            "--kv-cache-dtype" => match v.and_then(kv_format_of) {
                Some(f) => self.kv_format = Some(f.to_string()),
                None => self.unmapped(flag, v, "not a KV format disagg models"),
            },
            "--quantization" | "-q" => match v.map(str::to_ascii_lowercase).as_deref() {
                Some("fp8") => self.weight_format = Some("fp8".into()),
                _ => self.unmapped(
                    flag,
                    v,
                    "quantisation method; give --weight-format and --compute-format",
                ),
            },
            "--dtype" => match v.map(str::to_ascii_lowercase).as_deref() {
                Some("auto" | "bfloat16" | "bf16" | "float16" | "half") => {}
                _ => self.unmapped(flag, v, "activation dtype; give --compute-format"),
            },
            "--kv-transfer-config" => {
                let parsed: Option<serde_json::Value> =
                    v.and_then(|v| serde_json::from_str(v).ok());
                match parsed
                    .as_ref()
                    .and_then(|j| j.get("kv_connector"))
                    .and_then(|c| c.as_str())
                {
                    Some(c) => self.kv_backend = Some(backend_of_connector(c)),
                    None => self.unmapped(flag, v, "not JSON with a kv_connector"),
                }
            }
            "--disaggregation-transfer-backend" => match v {
                Some(b) => self.kv_backend = Some(b.to_ascii_lowercase()),
                None => self.unmapped(flag, v, "no backend given"),
            },
            "--disaggregation-mode" => match v {
                Some(m) => self.disagg_mode = Some(m.to_ascii_lowercase()),
                None => self.unmapped(flag, v, "no mode given"),
            },
            "--is-prefill-worker" => self.disagg_mode = Some("prefill".into()),
            _ if PLUMBING.contains(&flag) => {}
            _ => match NOT_MODELLED.iter().find(|(f, _)| *f == flag) {
                Some((_, why)) => self.unmapped(flag, v, why),
                None => self.unmapped(flag, v, "unknown to disagg; not simulated"),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &[&str]) -> Vec<String> {
        s.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn a_shell_string_splits_as_sh_would() {
        assert_eq!(
            command_words(
                r#"python3 -m dynamo.vllm --kv-transfer-config '{"a": 1}' --x "b c" d\ e && echo"#
            )
            .unwrap(),
            words(&[
                "python3",
                "-m",
                "dynamo.vllm",
                "--kv-transfer-config",
                r#"{"a": 1}"#,
                "--x",
                "b c",
                "d e",
                "&&",
                "echo"
            ])
        );
        assert_eq!(
            command_words("a;b\nc").unwrap(),
            words(&["a", ";", "b", "\n", "c"])
        );
        assert_eq!(command_words(r#""" x"#).unwrap(), words(&["", "x"]));
    }

    #[test]
    fn the_engine_is_found_in_a_command_or_a_shell_string() {
        let (e, w) =
            engine_words(&words(&["python3", "-m", "dynamo.vllm", "--model", "m"])).unwrap();
        assert_eq!((e, w), (Some(Engine::Vllm), words(&["--model", "m"])));
        let (e, w) = engine_words(&words(&[
            "/bin/sh",
            "-c",
            "pip list && python3 -m dynamo.sglang --model-path m --tp 2; sleep 1",
        ]))
        .unwrap();
        assert_eq!(
            (e, w),
            (
                Some(Engine::Sglang),
                words(&["--model-path", "m", "--tp", "2"])
            )
        );
        let (e, w) = engine_words(&words(&[
            "vllm",
            "serve",
            "org/m",
            "--tensor-parallel-size=4",
        ]))
        .unwrap();
        assert_eq!(
            (e, w),
            (
                Some(Engine::Vllm),
                words(&["org/m", "--tensor-parallel-size=4"])
            )
        );
        let (e, w) = engine_words(&words(&["--block-size", "16"])).unwrap();
        assert_eq!((e, w), (None, words(&["--block-size", "16"])));
        let e = engine_words(&words(&["python3", "-m", "dynamo.trtllm"])).unwrap_err();
        assert_eq!(
            e,
            "engine 'dynamo.trtllm' is not simulated (valid: vllm, sglang)"
        );
    }

    #[test]
    fn every_mapped_flag_reads() {
        let a = parse(
            Some(Engine::Vllm),
            &words(&[
                "org/m",
                "-tp",
                "4",
                "--pipeline-parallel-size=2",
                "--data-parallel-size",
                "2",
                "--enable-expert-parallel",
                "--max-num-seqs",
                "128",
                "--max-num-batched-tokens",
                "4096",
                "--enable-chunked-prefill",
                "--no-enable-prefix-caching",
                "--block-size",
                "32",
                "--kv-cache-dtype",
                "fp8_e4m3",
                "--quantization",
                "fp8",
                "--kv-transfer-config",
                r#"{"kv_connector":"MooncakeConnector","kv_role":"kv_both"}"#,
                "--disaggregation-mode",
                "prefill",
                "--gpu-memory-utilization",
                "0.9",
                "--port",
                "8000",
                "--frobnicate",
                "--trust-remote-code",
            ]),
        );
        assert_eq!(
            a,
            EngineArgs {
                engine: Some(Engine::Vllm),
                model: Some("org/m".into()),
                tp: Some(4),
                pp: Some(2),
                dp: Some(2),
                ep: None,
                expert_parallel: true,
                dp_attention: false,
                max_num_seqs: Some(128),
                max_num_batched_tokens: Some(4096),
                chunked_prefill: Some(true),
                prefix_caching: Some(false),
                block_size: Some(32),
                kv_format: Some("fp8".into()),
                weight_format: Some("fp8".into()),
                kv_backend: Some("mooncake".into()),
                disagg_mode: Some("prefill".into()),
                not_mapped: vec![
                    "--gpu-memory-utilization 0.9 (KV capacity is the device's; not modelled)"
                        .into(),
                    "--frobnicate (unknown to disagg; not simulated)".into(),
                ],
            }
        );
        let s = parse(
            Some(Engine::Sglang),
            &words(&[
                "--model-path",
                "org/m",
                "--tp-size",
                "8",
                "--dp-size",
                "8",
                "--enable-dp-attention",
                "--ep-size",
                "8",
                "--max-running-requests",
                "64",
                "--chunked-prefill-size",
                "8192",
                "--page-size",
                "64",
                "--disaggregation-mode",
                "decode",
                "--disaggregation-transfer-backend",
                "NIXL",
                "--kv-cache-dtype",
                "fp8_e5m2",
                "--disable-radix-cache",
                "--mem-fraction-static",
                "0.82",
            ]),
        );
        assert_eq!(
            s,
            EngineArgs {
                engine: Some(Engine::Sglang),
                model: Some("org/m".into()),
                tp: Some(8),
                pp: None,
                dp: Some(8),
                ep: Some(8),
                expert_parallel: false,
                dp_attention: true,
                max_num_seqs: Some(64),
                max_num_batched_tokens: Some(8192),
                chunked_prefill: Some(true),
                prefix_caching: Some(false),
                block_size: Some(64),
                kv_format: Some("fp8".into()),
                weight_format: None,
                kv_backend: Some("nixl".into()),
                disagg_mode: Some("decode".into()),
                not_mapped: vec![
                    "--mem-fraction-static 0.82 (KV capacity is the device's; not modelled)".into()
                ],
            }
        );
        let off = parse(None, &words(&["--chunked-prefill-size", "-1", "--tp", "x"]));
        assert_eq!(off.chunked_prefill, Some(false));
        assert_eq!(off.not_mapped, ["--tp x (expected a whole number)"]);
    }
}
