//! `disagg run --deployment FILE`: a Dynamo graph or llm-d values simulated as the scenario their
//! flags describe, notes on standard error, the command line winning, bad files refused in one
//! line.

use std::path::PathBuf;

use crate::common::{bad, disagg, ok_json};

fn tmp(name: &str, text: &str) -> String {
    let d = std::env::temp_dir().join(format!("disagg-cli-deploy-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let p = d.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// A disaggregated vLLM graph of Llama 3.1 8B: 2 prefill of TP2, 1 decode, on H100s over 100 GbE.
const GRAPH: &str = r#"
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata:
  name: small
  annotations:
    disagg.dev/kv-link: eth-100g
spec:
  components:
  - name: Frontend
    type: frontend
  - name: prefill
    type: prefill
    replicas: 2
    podTemplate:
      spec:
        nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}
        containers:
        - name: main
          command: [python3, -m, dynamo.vllm]
          args: [--model, meta-llama/Llama-3.1-8B-Instruct, --tensor-parallel-size, "2",
                 --no-enable-prefix-caching, --gpu-memory-utilization, "0.9"]
          resources: {limits: {nvidia.com/gpu: "2"}}
  - name: decode
    type: decode
    replicas: 1
    podTemplate:
      spec:
        nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}
        containers:
        - name: main
          command: [python3, -m, dynamo.vllm]
          args: [--model, meta-llama/Llama-3.1-8B-Instruct, --max-num-seqs, "64",
                 --no-enable-prefix-caching]
          resources: {limits: {nvidia.com/gpu: "1"}}
"#;

const ARGS: &str = "--model llama3-8b --mode disagg --prefill 2 --decode 1 --device h100 \
                    --prefill-devices-per-instance 2 --decode-devices-per-instance 1 \
                    --prefill-tp 2 --link eth-100g --max-decode-batch 64";

#[test]
fn a_graph_runs_as_the_flags_it_maps_to() {
    let f = tmp("graph.yaml", GRAPH);
    let run = ["run", "--deployment", &f, "--requests", "40", "--json"];
    let got = ok_json(&run);
    let d = &got["deployment"];
    assert_eq!(d["file"], f.as_str());
    assert_eq!(d["format"], "dynamo-v1beta1");
    let args: Vec<&str> = d["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(args.join(" "), ARGS);
    assert_eq!(
        d["not_mapped"],
        serde_json::json!([
            "prefill: --gpu-memory-utilization 0.9 (KV capacity is the device's; not modelled)"
        ])
    );
    // The same flags given directly simulate the same run.
    let mut direct: Vec<&str> = vec!["run"];
    direct.extend(ARGS.split(' '));
    direct.extend(["--requests", "40", "--json"]);
    let want = ok_json(&direct);
    assert_eq!(got["summary"], want["summary"]);
    assert_eq!(got["scenario"], want["scenario"]);
    // The text report: the notes on standard error, one line each.
    let o = disagg(&["run", "--deployment", &f, "--requests", "40"]);
    assert!(o.status.success());
    let err = String::from_utf8(o.stderr).unwrap();
    assert_eq!(
        err,
        format!(
            "note: deployment: {f} (dynamo-v1beta1) read as: {ARGS}\nnote: deployment: prefill: \
             --gpu-memory-utilization 0.9 (KV capacity is the device's; not modelled)\n"
        )
    );
}

#[test]
fn the_command_line_replaces_the_files_flags() {
    let f = tmp("graph2.yaml", GRAPH);
    let o = disagg(&[
        "run",
        "--deployment",
        &f,
        "--requests",
        "20",
        "--prefill",
        "3",
        "--rate",
        "2",
        "--json",
    ]);
    assert!(o.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["scenario"]["prefill"], 3);
    let line = "--prefill 3 from the command line replaces the file's --prefill 2";
    assert_eq!(doc["deployment"]["not_mapped"][1], line);
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(
        err.contains(&format!("note: deployment: {line}\n")),
        "{err}"
    );
}

#[test]
fn a_model_the_catalogue_lacks_is_named_with_close_matches_or_replaced() {
    let f = tmp(
        "qwen.yaml",
        &GRAPH.replace("meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen3-0.6B"),
    );
    bad(
        &["run", "--deployment", &f],
        &[
            "model 'Qwen/Qwen3-0.6B' is not in the catalogue (closest: qwen3-32b, qwen3-30b-a3b",
            "give --model KEY",
        ],
    );
    let doc = ok_json(&[
        "run",
        "--deployment",
        &f,
        "--model",
        "llama3-8b",
        "--requests",
        "20",
        "--json",
    ]);
    assert_eq!(doc["scenario"]["model"], "llama3-8b");
    assert_eq!(
        doc["deployment"]["not_mapped"][0],
        "model: 'Qwen/Qwen3-0.6B' is not in the catalogue: simulated as --model llama3-8b (the \
         command line's)"
    );
}

#[test]
fn bad_deployment_files_are_one_line_exit_2() {
    let missing = std::env::temp_dir().join("disagg-no-such-deployment.yaml");
    bad(
        &["run", "--deployment", &missing.display().to_string()],
        &[
            "--deployment: ",
            "disagg-no-such-deployment.yaml: file does not exist",
        ],
    );
    let f = tmp("broken.yaml", "spec:\n  components: [\n    - a\n  b: {\n");
    bad(&["run", "--deployment", &f], &["not YAML: ", "line "]);
    let f = tmp("svc.yaml", "apiVersion: v1\nkind: Service\n");
    bad(
        &["run", "--deployment", &f],
        &[
            "kind 'Service' is not read",
            "DynamoGraphDeployment (nvidia.com/v1beta1",
        ],
    );
    let f = tmp(
        "front.yaml",
        "apiVersion: nvidia.com/v1beta1\nkind: DynamoGraphDeployment\nspec:\n  components:\n  - \
         {name: f, type: frontend}\n",
    );
    bad(
        &["run", "--deployment", &f],
        &["no prefill, decode or worker component (found: frontend)"],
    );
    let f = tmp("zero.yaml", &GRAPH.replace("replicas: 2", "replicas: 0"));
    bad(
        &["run", "--deployment", &f],
        &["component 'prefill' (prefill): replicas 0"],
    );
    // A valid file whose scenario does not build: the build's one line, no notes before it.
    let f = tmp(
        "big.yaml",
        &GRAPH.replace("Llama-3.1-8B-Instruct", "Llama-3.1-70B-Instruct"),
    );
    bad(&["run", "--deployment", &f], &["--model: ", "decode pool"]);
    let f = tmp("run.sh", "#!/bin/sh\nvllm serve x\n");
    bad(
        &["run", "--deployment", &f],
        &[
            "not a launch script written by disagg plan --emit",
            "vllm.sh/sglang.sh",
        ],
    );
}

/// `../shared/formats/REL`, or None after saying the test is skipped (third-party files).
fn shared(rel: &str) -> Option<String> {
    let root = std::env::var_os("DISAGG_SHARED").map_or_else(
        || PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared")),
        PathBuf::from,
    );
    let p = root.join("formats").join(rel);
    if p.exists() {
        Some(p.display().to_string())
    } else {
        println!("skipped: {} not found (set DISAGG_SHARED)", p.display());
        None
    }
}

#[test]
fn the_llm_d_guide_values_simulate() {
    let Some(f) = shared("llm-d/ms-pd_values.yaml") else {
        return;
    };
    let doc = ok_json(&["run", "--deployment", &f, "--requests", "20", "--json"]);
    let s = &doc["scenario"];
    assert_eq!(s["model"], "llama3-70b");
    assert_eq!(
        (s["prefill"].clone(), s["decode"].clone()),
        (1.into(), 4.into())
    );
    assert_eq!(doc["deployment"]["format"], "llm-d-modelservice");
    assert_eq!(doc["deployment"]["not_mapped"].as_array().unwrap().len(), 4);
}
