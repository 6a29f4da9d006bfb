use super::*;
use std::path::PathBuf;

fn cat() -> Catalogue {
    Catalogue::builtin()
}

fn read_as(text: &str, model: Option<&str>) -> Result<Imported, String> {
    let cat = cat();
    read_text(text, &ReadOptions { cat: &cat, model })
}

fn dep(text: &str) -> Deployment {
    read_as(text, None).unwrap().deployment
}

fn err(text: &str) -> String {
    let e = read_as(text, None).unwrap_err();
    assert_eq!(e.lines().count(), 1, "{e}");
    e
}

fn workers(replicas: u32, tp: u32) -> Workers {
    Workers {
        replicas,
        tp,
        pp: 1,
        ep: None,
        dp: None,
        device: None,
        max_num_seqs: None,
        max_num_batched_tokens: None,
    }
}

const DEVICE_NOTE: &str = "device: not in the file (nodeSelector nvidia.com/gpu.product): the \
                           command line's --device, else h100";
const LINK_NOTE: &str = "link: not in the file (annotation disagg.dev/kv-link): the command \
                         line's --link, else ib-ndr";

/// A deployment of `model` with the defaults of a file that says nothing else.
fn base(name: &str, model: &str, engine: Engine, p: Workers, d: Workers) -> Deployment {
    Deployment {
        name: name.into(),
        model: model.into(),
        engine,
        prefill: Some(p),
        decode: Some(d),
        colocated: None,
        link: None,
        kv_transfer_backend: "nixl".into(),
        kv_format: None,
        weight_format: None,
        compute_format: None,
        kv_compress: None,
        layouts_modelled: true,
        chunked_prefill: false,
        prefix_caching: true,
        block_size: None,
        gpus_per_node: 8,
        not_mapped: vec![],
    }
}

/// `../shared/formats/REL` (or `$DISAGG_SHARED/formats/REL`), or None after saying the test is
/// skipped: the example manifests are third-party and never committed here.
fn shared(rel: &str) -> Option<PathBuf> {
    let root = std::env::var_os("DISAGG_SHARED").map_or_else(
        || PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared")),
        PathBuf::from,
    );
    let p = root.join("formats").join(rel);
    if p.exists() {
        Some(p)
    } else {
        println!("skipped: {} not found (set DISAGG_SHARED)", p.display());
        None
    }
}

fn read_shared(rel: &str, model: Option<&str>) -> Option<Result<Imported, UsageError>> {
    let p = shared(rel)?;
    let cat = cat();
    Some(read_with(&p, &ReadOptions { cat: &cat, model }))
}

const QWEN_NOTE: &str =
    "model: 'Qwen/Qwen3-0.6B' is not in the catalogue: simulated as --model llama3-8b (the \
     command line's)";

#[test]
fn the_dynamo_vllm_examples_import() {
    for (rel, format, extra) in [
        ("dynamo/vllm_disagg_v1beta1.yaml", "dynamo-v1beta1", None),
        ("dynamo/vllm_disagg_v1alpha1.yaml", "dynamo-v1alpha1", None),
        (
            "dynamo/vllm_disagg_planner_v1beta1.yaml",
            "dynamo-v1beta1",
            Some(
                "component 'Planner' (planner: SLA autoscaling is not simulated; the replicas \
                 written are kept)",
            ),
        ),
    ] {
        let Some(r) = read_shared(rel, None) else {
            return;
        };
        // Qwen3-0.6B is not in the catalogue: one line naming it with the closest keys.
        let e = r.unwrap_err().0;
        assert!(
            e.ends_with(
                "model 'Qwen/Qwen3-0.6B' is not in the catalogue (closest: qwen3-32b, \
                 qwen3-30b-a3b, bloom-176b); give --model KEY to simulate it as a catalogue model"
            ),
            "{e}"
        );
        let got = read_shared(rel, Some("llama3-8b")).unwrap().unwrap();
        assert_eq!(got.format, format);
        let name = if rel.contains("planner") {
            "vllm-disagg-planner"
        } else {
            "vllm-disagg"
        };
        let mut want = base(
            name,
            "llama3-8b",
            Engine::Vllm,
            workers(1, 1),
            workers(1, 1),
        );
        want.not_mapped = extra
            .into_iter()
            .chain([QWEN_NOTE, DEVICE_NOTE, LINK_NOTE])
            .map(String::from)
            .collect();
        assert_eq!(got.deployment, want, "{rel}");
    }
}

#[test]
fn the_dynamo_sglang_examples_import() {
    let Some(r) = read_shared("dynamo/sglang_disagg_v1beta1.yaml", Some("llama3-8b")) else {
        return;
    };
    let mut want = base(
        "sglang-disagg",
        "llama3-8b",
        Engine::Sglang,
        workers(1, 1),
        workers(1, 1),
    );
    want.block_size = Some(16);
    want.not_mapped = [QWEN_NOTE, DEVICE_NOTE, LINK_NOTE]
        .map(String::from)
        .to_vec();
    assert_eq!(r.unwrap().deployment, want);

    let r = read_shared(
        "dynamo/sglang_disagg_multinode_v1beta1.yaml",
        Some("llama3-8b"),
    );
    let mut want = base(
        "sglang-disagg-multinode",
        "llama3-8b",
        Engine::Sglang,
        workers(1, 8),
        workers(1, 8),
    );
    // Two nodes of 4 GPUs per instance: TP 8.
    want.gpus_per_node = 4;
    want.not_mapped = [
        QWEN_NOTE,
        "decode, prefill: --mem-fraction-static 0.82 (KV capacity is the device's; not modelled)",
        DEVICE_NOTE,
        LINK_NOTE,
    ]
    .map(String::from)
    .to_vec();
    assert_eq!(r.unwrap().unwrap().deployment, want);
}

#[test]
fn the_llm_d_example_imports() {
    let Some(r) = read_shared("llm-d/ms-pd_values.yaml", None) else {
        return;
    };
    let got = r.unwrap();
    assert_eq!(got.format, "llm-d-modelservice");
    let mut want = base(
        "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic",
        "llama3-70b",
        Engine::Vllm,
        workers(1, 4),
        workers(4, 1),
    );
    want.weight_format = Some("fp8".into());
    want.block_size = Some(128);
    want.not_mapped = [
        "model: 'RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic' read as llama3-70b (the \
         catalogue's meta-llama/Llama-3.3-70B-Instruct, by name, FP8 weights)",
        "prefill, decode: --max-model-len 32000 (context limit; not modelled: --max-context \
         clips a trace's prompts)",
        DEVICE_NOTE,
        LINK_NOTE,
    ]
    .map(String::from)
    .to_vec();
    assert_eq!(got.deployment, want);
    assert_eq!(
        want.to_args(&cat()).unwrap().join(" "),
        "--model llama3-70b --mode disagg --prefill 1 --decode 4 --prefill-devices-per-instance \
         4 --decode-devices-per-instance 1 --prefill-tp 4 --weight-format fp8 --prefix-caching \
         --kv-block-size 128"
    );
}

#[test]
fn the_llm_d_disaggregated_set_imports() {
    let Some(r) = read_shared("llm-d/kustomize-vllm-base/disaggregatedset.yaml", None) else {
        return;
    };
    let got = r.unwrap();
    assert_eq!(got.format, "llm-d-disaggregatedset");
    // 2 slices of 4 x TP1 prefill and 1 x TP4 decode; gpt-oss's checkpoint is MXFP4.
    let mut want = base(
        "pd-disagg-vllm",
        "gpt-oss-120b",
        Engine::Vllm,
        workers(8, 1),
        workers(2, 4),
    );
    want.weight_format = Some("fp4".into());
    want.block_size = Some(128);
    want.not_mapped = [
        "spec.slices 2 (each slice's prefill hands off to its own decode; simulated as one set \
         of every slice's workers)",
        DEVICE_NOTE,
        LINK_NOTE,
    ]
    .map(String::from)
    .to_vec();
    assert_eq!(got.deployment, want);
    let (args, notes) = want.to_args_noted(&cat()).unwrap();
    assert_eq!(
        args.join(" "),
        "--model gpt-oss-120b --mode disagg --prefill 8 --decode 2 \
         --prefill-devices-per-instance 1 --decode-devices-per-instance 4 --weight-format fp4 \
         --kv-block-size 128"
    );
    assert_eq!(
        notes,
        [
            "layouts: decode TP4 x PP1 as 4 ideal GPUs (layouts are not modelled for a model \
             described by layer kinds)",
            "prefix caching (not modelled for gpt-oss-120b's windowed or linear-attention \
             layers)"
        ]
    );
}

#[test]
fn the_other_shared_files_are_refused_naming_what_is_read() {
    for (rel, needle) in [
        (
            "dynamo/dgdr_v1beta1_sample.yaml",
            "kind 'DynamoGraphDeploymentRequest' is not read (a DGDR asks the operator to \
             profile and generate a DGD: import the DGD it generates); disagg reads a \
             DynamoGraphDeployment (nvidia.com/v1beta1, nvidia.com/v1alpha1), llm-d \
             modelservice values (prefill/decode/modelArtifacts), an llm-d DisaggregatedSet or \
             a vllm.sh/sglang.sh of disagg plan --emit",
        ),
        (
            "llm-d/kustomize-vllm-base/patch-prefill.yaml",
            "kind 'Deployment' is not read;",
        ),
        ("llm-d/gaie-pd_values.yaml", "no deployment found;"),
    ] {
        let Some(r) = read_shared(rel, None) else {
            return;
        };
        let e = r.unwrap_err().0;
        assert!(e.contains(needle), "{rel}: {e}");
        assert_eq!(e.lines().count(), 1);
    }
}

/// A v1beta1 vLLM graph with every mapped flag, a shell-string command, node selectors, a
/// multi-node decode and disagg's annotations.
const VLLM_V1BETA1: &str = r#"
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata:
  name: mine
  annotations:
    disagg.dev/kv-link: eth-100g
    disagg.dev/gpus-per-node: "4"
    disagg.dev/kv-compress: kivi2
    disagg.dev/compute-format: fp8
    disagg.dev/colour: blue
spec:
  backendFramework: vllm
  components:
  - name: Frontend
    type: frontend
    replicas: 1
  - name: p
    type: prefill
    replicas: 3
    podTemplate:
      spec:
        nodeSelector:
          nvidia.com/gpu.product: NVIDIA-H200
        containers:
        - name: main
          command: [/bin/sh, -c]
          args:
          - >-
            python3 -m dynamo.vllm --model meta-llama/Llama-3.1-70B-Instruct
            --tensor-parallel-size 2 --pipeline-parallel-size 2
            --max-num-batched-tokens 4096 --max-num-seqs 8 --enable-chunked-prefill
            --no-enable-prefix-caching --block-size 32 --kv-cache-dtype fp8
            --quantization fp8
            --kv-transfer-config '{"kv_connector":"MooncakeConnector","kv_role":"kv_both"}'
            --disaggregation-mode prefill --gpu-memory-utilization 0.85 --frobnicate 3
          resources:
            limits:
              nvidia.com/gpu: "4"
  - name: d
    type: decode
    replicas: 2
    multinode:
      nodeCount: 2
    podTemplate:
      spec:
        nodeSelector:
          nvidia.com/gpu.product: NVIDIA-B200
        containers:
        - name: main
          command: [python3, -m, dynamo.vllm]
          args: [--model, meta-llama/Llama-3.1-70B-Instruct, -tp, "8",
                 --max-num-seqs, "128", --max-num-batched-tokens, "4096",
                 --enable-chunked-prefill, --block-size, "32", --kv-cache-dtype, fp8,
                 --quantization, fp8, --disaggregation-mode, decode]
          resources:
            limits:
              nvidia.com/gpu: 4
"#;

#[test]
fn a_v1beta1_graph_maps_every_field() {
    let got = read_as(VLLM_V1BETA1, None).unwrap();
    assert_eq!(got.format, "dynamo-v1beta1");
    let want = Deployment {
        name: "mine".into(),
        model: "llama3-70b".into(),
        engine: Engine::Vllm,
        prefill: Some(Workers {
            replicas: 3,
            tp: 2,
            pp: 2,
            ep: None,
            dp: None,
            device: Some("h200".into()),
            max_num_seqs: Some(8),
            max_num_batched_tokens: Some(4096),
        }),
        decode: Some(Workers {
            replicas: 2,
            tp: 8,
            pp: 1,
            ep: None,
            dp: None,
            device: Some("b200".into()),
            max_num_seqs: Some(128),
            max_num_batched_tokens: Some(4096),
        }),
        colocated: None,
        link: Some("eth-100g".into()),
        kv_transfer_backend: "mooncake".into(),
        kv_format: Some("fp8".into()),
        weight_format: Some("fp8".into()),
        compute_format: Some("fp8".into()),
        kv_compress: Some("kivi2".into()),
        layouts_modelled: true,
        chunked_prefill: true,
        prefix_caching: false,
        block_size: Some(32),
        gpus_per_node: 4,
        not_mapped: vec![
            "disagg.dev/colour: 'blue' (not a disagg annotation)".into(),
            "p: --gpu-memory-utilization 0.85 (KV capacity is the device's; not modelled)".into(),
            "p: --frobnicate 3 (unknown to disagg; not simulated)".into(),
        ],
    };
    assert_eq!(got.deployment, want);
    let (args, notes) = want.to_args_noted(&cat()).unwrap();
    assert_eq!(
        args.join(" "),
        "--model llama3-70b --mode disagg --prefill 3 --decode 2 --prefill-device h200 \
         --decode-device b200 --prefill-devices-per-instance 4 --decode-devices-per-instance 8 \
         --prefill-tp 2 --prefill-pp 2 --decode-tp 8 --link eth-100g --kv-compress kivi2 \
         --weight-format fp8 --kv-format fp8 --compute-format fp8 --max-num-batched-tokens 4096 \
         --max-decode-batch 128 --batch-policy chunked --kv-block-size 32"
    );
    assert_eq!(
        notes,
        ["prefill --max-num-seqs 8 (the simulator bounds decode batches only)"]
    );
}

/// A v1alpha1 SGLang graph: services, subComponentType, `resources.limits.gpu`, SGLang's flags.
const SGLANG_V1ALPHA1: &str = r#"
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata:
  name: sg
spec:
  services:
    Frontend:
      componentType: frontend
      replicas: 1
    Prefill:
      componentType: worker
      subComponentType: prefill
      replicas: 2
      resources:
        limits:
          gpu: "8"
      extraPodSpec:
        nodeSelector:
          nvidia.com/gpu.product: NVIDIA-L4
        mainContainer:
          command: [python3, -m, dynamo.sglang]
          args: [--model-path, deepseek-ai/DeepSeek-V3, --tp, "8", --dp-size, "8",
                 --enable-dp-attention, --ep-size, "8", --chunked-prefill-size, "16384",
                 --quantization, fp8,
                 --page-size, "64", --disaggregation-mode, prefill,
                 --disaggregation-transfer-backend, nixl, --kv-cache-dtype, fp8_e4m3]
    Decode:
      componentType: worker
      subComponentType: decode
      replicas: 1
      resources:
        limits:
          gpu: "8"
      extraPodSpec:
        mainContainer:
          command: [python3, -m, dynamo.sglang]
          args: [--model-path, deepseek-ai/DeepSeek-V3, --tp-size, "8", --ep-size, "8",
                 --max-running-requests, "256", --page-size, "64", --quantization, fp8,
                 --disaggregation-mode, decode, --disaggregation-transfer-backend, nixl,
                 --kv-cache-dtype, fp8_e4m3, --disable-radix-cache]
"#;

#[test]
fn a_v1alpha1_sglang_graph_maps_every_field() {
    let got = read_as(SGLANG_V1ALPHA1, None).unwrap();
    assert_eq!(got.format, "dynamo-v1alpha1");
    let moe = |replicas, seqs, tokens| Workers {
        replicas,
        tp: 8,
        pp: 1,
        ep: Some(8),
        dp: None,
        device: None,
        max_num_seqs: seqs,
        max_num_batched_tokens: tokens,
    };
    let mut want = base(
        "sg",
        "deepseek-v3",
        Engine::Sglang,
        moe(2, None, Some(16384)),
        moe(1, Some(256), None),
    );
    want.kv_format = Some("fp8".into());
    want.weight_format = Some("fp8".into());
    want.chunked_prefill = true;
    // The prefix cache lives on the prefill instances: the decode's --disable-radix-cache is
    // a different value, listed.
    want.prefix_caching = true;
    want.block_size = Some(64);
    want.not_mapped = [
        "Prefill: --enable-dp-attention --dp-size 8 (attention data parallelism inside the TP \
         group; not modelled: simulated as TP 8)",
        "Prefill: nodeSelector nvidia.com/gpu.product NVIDIA-L4 (not a catalogue device; the \
         command line's --device, else h100)",
        DEVICE_NOTE,
        LINK_NOTE,
    ]
    .map(String::from)
    .to_vec();
    assert_eq!(got.deployment, want);
    // DeepSeek-V3 is described by layer kinds: ideal device groups instead of layouts, said.
    let (args, notes) = want.to_args_noted(&cat()).unwrap();
    assert_eq!(
        args.join(" "),
        "--model deepseek-v3 --mode disagg --prefill 2 --decode 1 \
         --prefill-devices-per-instance 8 --decode-devices-per-instance 8 --weight-format fp8 \
         --kv-format fp8 --max-num-batched-tokens 16384 --max-decode-batch 256 --batch-policy chunked \
         --prefix-caching --kv-block-size 64"
    );
    assert_eq!(
        notes,
        [
            "layouts: prefill TP8 x PP1 as 8 ideal GPUs, decode TP8 x PP1 as 8 ideal GPUs \
             (layouts are not modelled for a model described by layer kinds)",
            "expert parallelism: prefill EP8, decode EP8 (simulated with experts split by TP: \
             --ep needs modelled layouts and EP = TP in every pool)",
        ]
    );
}

/// llm-d values with no prefill workers (aggregated), parallelism outside the args, an
/// accelerator label and disagg's labels.
const LLMD_AGG: &str = r#"
modelArtifacts:
  uri: hf://mistralai/Mistral-7B-Instruct-v0.3
  labels:
    disagg.dev/layouts: ideal
routing:
  proxy:
    connector: nixlv2
decode:
  replicas: 3
  parallelism:
    tensor: 2
    data: 1
  acceleratorTypes:
    labelKey: nvidia.com/gpu.product
    labelValues: [NVIDIA-A100-SXM4-80GB]
  autoscaling:
    enabled: true
  containers:
  - name: vllm
    modelCommand: vllmServe
    args: [--max-num-seqs, "64", --enable-prefix-caching]
    resources:
      limits:
        nvidia.com/gpu: "2"
prefill:
  replicas: 0
"#;

#[test]
fn llm_d_values_without_prefill_are_colocated() {
    let got = read_as(LLMD_AGG, None).unwrap();
    assert_eq!(got.format, "llm-d-modelservice");
    let want = Deployment {
        name: "mistralai/Mistral-7B-Instruct-v0.3".into(),
        model: "mistral-7b".into(),
        engine: Engine::Vllm,
        prefill: None,
        decode: None,
        colocated: Some(Workers {
            replicas: 3,
            tp: 2,
            pp: 1,
            ep: None,
            dp: None,
            device: Some("a100".into()),
            max_num_seqs: Some(64),
            max_num_batched_tokens: None,
        }),
        link: None,
        kv_transfer_backend: "none".into(),
        kv_format: None,
        weight_format: None,
        compute_format: None,
        kv_compress: None,
        layouts_modelled: false,
        chunked_prefill: false,
        prefix_caching: true,
        block_size: None,
        gpus_per_node: 8,
        not_mapped: vec![
            "decode.autoscaling (not simulated; the replicas written are kept)".into(),
            "prefill: none (replicas 0 or create false): the decode workers serve whole \
             requests, simulated as colocated"
                .into(),
        ],
    };
    assert_eq!(got.deployment, want);
    assert_eq!(
        want.to_args(&cat()).unwrap().join(" "),
        "--model mistral-7b --mode colocated --prefill 3 --decode 0 --device a100 \
         --devices-per-instance 2 --max-decode-batch 64 --prefix-caching"
    );
}

#[test]
fn an_aggregated_graph_with_modelled_layouts_gives_the_global_layout() {
    let text = r#"
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata: {name: agg}
spec:
  components:
  - name: w
    type: worker
    replicas: 1
    podTemplate:
      spec:
        containers:
        - name: main
          command: [vllm, serve]
          args: [mistralai/Mixtral-8x7B-Instruct-v0.1, --tensor-parallel-size=4, --enable-expert-parallel]
"#;
    let d = dep(text);
    let w = d.colocated.clone().unwrap();
    assert_eq!((w.tp, w.ep, w.replicas), (4, Some(4), 1));
    assert_eq!(d.not_mapped, [DEVICE_NOTE]);
    let args = d.to_args(&cat()).unwrap();
    assert_eq!(
        args.join(" "),
        "--model mixtral-8x7b --mode colocated --prefill 1 --decode 0 --devices-per-instance 4 \
         --tp 4 --ep 4 --prefix-caching"
    );
}

#[test]
fn to_args_is_a_scenario_that_builds() {
    let cat = cat();
    for text in [VLLM_V1BETA1, LLMD_AGG, SGLANG_V1ALPHA1] {
        let d = dep(text);
        let mut args = d.to_args(&cat).unwrap();
        // The link and compression of the hand-written graph are valid keys; the KV format
        // other than BF16 refuses a transit compression, so drop it for the build.
        if let Some(i) = args.iter().position(|a| a == "--kv-compress") {
            args.drain(i..i + 2);
        }
        // DeepSeek-V3's FP8 weights need more than 8 H100s.
        args.splice(2..2, ["--device".to_string(), "h200".to_string()]);
        let s = disagg_sim::Scenario::from_flags(&args).unwrap();
        s.build(&cat).unwrap_or_else(|e| panic!("{args:?}: {e}"));
    }
}

#[test]
fn bad_files_are_one_line_naming_the_problem() {
    let e = err("a: [1, 2\nb: 3\n");
    assert!(e.starts_with("not YAML: "), "{e}");
    assert!(e.contains("line 2 column"), "{e}");
    assert_eq!(
        err("apiVersion: v1\nkind: Service\n"),
        "kind 'Service' is not read; disagg reads a DynamoGraphDeployment (nvidia.com/v1beta1, \
         nvidia.com/v1alpha1), llm-d modelservice values (prefill/decode/modelArtifacts), an \
         llm-d DisaggregatedSet or a vllm.sh/sglang.sh of disagg plan --emit"
    );
    assert_eq!(
        err("apiVersion: nvidia.com/v2\nkind: DynamoGraphDeployment\n"),
        "DynamoGraphDeployment apiVersion 'nvidia.com/v2' is not read (valid: \
         nvidia.com/v1beta1, nvidia.com/v1alpha1)"
    );
    assert!(err("").starts_with("empty; "));
    // A script disagg did not write: one line saying which formats are read.
    let e = err("#!/bin/sh\nvllm serve x\n");
    assert!(
        e.starts_with("a shell script: no serve command: not a launch script written by disagg plan --emit (disagg reads a DynamoGraphDeployment"),
        "{e}"
    );
    let graph = |comps: &str| {
        format!(
            "apiVersion: nvidia.com/v1beta1\nkind: DynamoGraphDeployment\nmetadata: {{name: \
             g}}\nspec:\n  components:\n{comps}"
        )
    };
    let comp = |name: &str, t: &str, replicas: &str, args: &str| {
        format!(
            "  - name: {name}\n    type: {t}\n    replicas: {replicas}\n    podTemplate: \
             {{spec: {{containers: [{{name: main, command: [python3, -m, dynamo.vllm], args: \
             [{args}]}}]}}}}\n"
        )
    };
    let m = "--model, meta-llama/Llama-3.1-8B-Instruct";
    assert_eq!(
        err(&graph(&comp("Frontend", "frontend", "1", ""))),
        "no prefill, decode or worker component (found: frontend); nothing to simulate"
    );
    assert_eq!(
        err(&graph(
            &(comp("p", "prefill", "0", m) + &comp("d", "decode", "1", m))
        )),
        "component 'p' (prefill): replicas 0, nothing to simulate (give it 1 or more)"
    );
    assert_eq!(
        err(&graph(&comp("p", "prefill", "1", m))),
        "prefill workers but no decode workers"
    );
    assert_eq!(
        err(&graph(
            &(comp("p", "prefill", "1", m) + &comp("w", "worker", "1", m))
        )),
        "both aggregated workers and prefill/decode workers: one mode per deployment is simulated"
    );
    assert_eq!(
        err(&graph(&comp("w", "worker", "two", m))),
        "'w': replicas 'two' is not a whole number"
    );
    assert_eq!(
        err(&graph(&comp(
            "w",
            "worker",
            "1",
            "--model, meta-llama/Llama-9-1T"
        ))),
        "model 'meta-llama/Llama-9-1T' is not in the catalogue (closest: llama2-7b, llama3-8b, \
         llama3.2-1b); give --model KEY to simulate it as a catalogue model"
    );
    assert_eq!(
        err(&graph(&comp("w", "worker", "1", "--tp, '2'"))),
        "no model: the workers' args name none (--model, --model-path, vllm serve MODEL); give \
         --model KEY"
    );
    let trt = graph(
        "  - name: w\n    type: worker\n    podTemplate: {spec: {containers: [{name: main, \
         command: [python3, -m, dynamo.trtllm]}]}}\n",
    );
    assert_eq!(
        err(&trt),
        "'w': engine 'dynamo.trtllm' is not simulated (valid: vllm, sglang)"
    );
    // Two prefill components of one shape add up; of two shapes, refused.
    let two = graph(
        &(comp("p1", "prefill", "1", m)
            + &comp("p2", "prefill", "2", m)
            + &comp("d", "decode", "1", m)),
    );
    assert_eq!(dep(&two).prefill.unwrap().replicas, 3);
    let m4 = "--model, meta-llama/Llama-3.1-8B-Instruct, -tp, '4'";
    assert_eq!(
        err(&graph(
            &(comp("p1", "prefill", "1", m)
                + &comp("p2", "prefill", "1", m4)
                + &comp("d", "decode", "1", m))
        )),
        "components 'p1' and 'p2' are both prefill workers of different shapes: one shape per \
         role is simulated"
    );
}

#[test]
fn model_ids_resolve_by_table_key_or_name() {
    let cat = cat();
    assert_eq!(
        resolve_model("Qwen/Qwen3-32B-FP8", &cat),
        Some(("qwen3-32b".into(), true, None))
    );
    assert_eq!(
        resolve_model("llama3-8b", &cat),
        Some(("llama3-8b".into(), false, None))
    );
    assert_eq!(
        resolve_model("/models/Llama-3.1-8B-Instruct", &cat),
        Some((
            "llama3-8b".into(),
            false,
            Some(
                "model: '/models/Llama-3.1-8B-Instruct' read as llama3-8b (the catalogue's \
                 meta-llama/Llama-3.1-8B-Instruct, by name)"
                    .into()
            )
        ))
    );
    assert_eq!(resolve_model("org/unknown", &cat), None);
    assert_eq!(edit_distance("kitten", "sitting"), 3);
    assert_eq!(edit_distance("", "abc"), 3);
}
