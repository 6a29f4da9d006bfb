//! Tests of the emitters: YAML that parses and has every field a generator must fill, headers,
//! scripts that `bash -n` accepts and read back, engine flags from a checked allow-list.

use super::*;
use serde_json::Value;

fn cat() -> Catalogue {
    Catalogue::builtin()
}

fn sc(flags: &[&str]) -> Scenario {
    Scenario::from_flags(flags).unwrap()
}

/// Scenarios covering the mapping: plain pools, explicit per-pool layouts, colocated, MoE with
/// expert parallelism, FP8 KV, chunked prefill and prefix caching, multi-node instances.
fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario::default(),
        sc(&[
            "--prefill",
            "2",
            "--decode",
            "3",
            "--prefill-device",
            "h200",
            "--rate",
            "6",
        ]),
        sc(&[
            "--model",
            "llama3-8b",
            "--devices-per-instance",
            "1",
            "--prefill-tp",
            "2",
            "--prefill-devices-per-instance",
            "2",
            "--decode",
            "2",
            "--kv-format",
            "fp8",
            "--batch-policy",
            "chunked",
            "--prefix-caching",
            "--max-num-batched-tokens",
            "4096",
            "--max-decode-batch",
            "128",
            "--kv-block-size",
            "32",
        ]),
        sc(&[
            "--mode",
            "colocated",
            "--prefill",
            "2",
            "--decode",
            "1",
            "--devices-per-instance",
            "8",
        ]),
        sc(&[
            "--model",
            "deepseek-v3",
            "--device",
            "h200",
            "--devices-per-instance",
            "16",
            "--tp",
            "16",
            "--ep",
            "16",
            "--weight-format",
            "fp8",
            "--kv-format",
            "fp8",
            "--compute-format",
            "fp8",
            "--kv-compress",
            "fp8",
        ]),
        sc(&[
            "--trace-file",
            "some trace.csv",
            "--time-scale",
            "0.25",
            "--link",
            "eth-100g",
        ]),
        // A token budget without chunked prefill (SGLang: `--max-prefill-tokens`), DeepSeek-V3
        // in BF16 (not its checkpoint's FP8: annotated), a device without a GPU product label.
        sc(&[
            "--model",
            "deepseek-v3",
            "--devices-per-instance",
            "16",
            "--max-num-batched-tokens",
            "2048",
            "--prefill-device",
            "h200",
            "--decode-device",
            "optical",
        ]),
    ]
}

fn deployments(engine: Engine) -> Vec<(Scenario, Deployment)> {
    scenarios()
        .into_iter()
        .map(|s| {
            let d = Deployment::from_scenario(&s, &cat(), engine, 8)
                .unwrap_or_else(|e| panic!("{:?}: {}", s.to_args(), e.0));
            (s, d)
        })
        .collect()
}

fn header(s: &Scenario, d: &Deployment) -> Header {
    Header {
        rank: Some((1, 1)),
        rate_rps: Some(s.rate),
        slo_attainment: Some(0.95),
        slo_attainment_ci: Some((0.94, 0.96)),
        ttft_p99_s: Some(0.5),
        tpot_p99_s: Some(0.02),
        ..Header::of_run(s, d, &cat(), None).unwrap()
    }
}

#[test]
fn from_scenario_maps_pools_layouts_and_limits() {
    let cat = cat();
    let d = Deployment::from_scenario(&Scenario::default(), &cat, Engine::Vllm, 8).unwrap();
    let w = |replicas, tp, seqs, toks| Workers {
        replicas,
        tp,
        pp: 1,
        ep: None,
        dp: None,
        device: Some("h100".into()),
        max_num_seqs: seqs,
        max_num_batched_tokens: toks,
    };
    // No token budget unless the scenario sets one (any value switches the scheduled
    // instances on).
    assert_eq!(d.prefill, Some(w(1, 4, None, None)));
    assert_eq!(d.decode, Some(w(1, 4, Some(256), None)));
    assert_eq!(d.colocated, None);
    assert!(!d.layouts_modelled && !d.chunked_prefill && !d.prefix_caching);
    assert_eq!(
        (d.name.as_str(), d.model.as_str(), d.link.as_deref()),
        ("disagg-llama3-70b-1p1d", "llama3-70b", Some("ib-ndr"))
    );
    assert_eq!((d.block_size, d.kv_format.clone()), (Some(16), None));

    let s = &scenarios()[2];
    let d = Deployment::from_scenario(s, &cat, Engine::Sglang, 8).unwrap();
    let p = d.prefill.as_ref().unwrap();
    assert_eq!(
        (p.replicas, p.tp, p.pp, p.max_num_batched_tokens),
        (1, 2, 1, Some(4096))
    );
    let dd = d.decode.as_ref().unwrap();
    // The decode pool has no layout of its own: one device, tp 1.
    assert_eq!((dd.replicas, dd.tp, dd.max_num_seqs), (2, 1, Some(128)));
    assert!(d.layouts_modelled && d.chunked_prefill && d.prefix_caching);
    assert_eq!(
        (d.kv_format.as_deref(), d.block_size),
        (Some("fp8"), Some(32))
    );

    // A device without a GPU product label is annotated; DeepSeek-V3 in BF16 too.
    let d = Deployment::from_scenario(&scenarios()[6], &cat, Engine::Vllm, 8).unwrap();
    let ann = d.annotations(true);
    assert!(ann.contains(&("disagg.dev/device-decode".into(), "optical".into())));
    assert!(!ann.iter().any(|(k, _)| k == "disagg.dev/device-prefill"));
    assert!(ann.contains(&("disagg.dev/weight-format".into(), "bf16".into())));

    let d = Deployment::from_scenario(&scenarios()[3], &cat, Engine::Vllm, 8).unwrap();
    let c = d.colocated.as_ref().unwrap();
    assert_eq!(
        (c.replicas, c.tp, c.max_num_seqs, c.max_num_batched_tokens),
        (3, 8, Some(256), None)
    );
    assert_eq!((d.prefill.clone(), d.link.clone()), (None, None));
    assert_eq!(d.name, "disagg-llama3-70b-3x");

    let d = Deployment::from_scenario(&scenarios()[4], &cat, Engine::Vllm, 8).unwrap();
    let p = d.prefill.as_ref().unwrap();
    assert_eq!((p.tp, p.ep, d.nodes_of(p)), (16, Some(16), 2));
    assert_eq!(d.weight_format.as_deref(), Some("fp8"));
    assert_eq!(d.kv_compress.as_deref(), Some("fp8"));
    assert_eq!(d.name, "disagg-deepseek-v3-1p1d");
    // The workload's flags are not the deployment's: the round trip's command line gives them.
    let (carried, rest) = split_carried(&scenarios()[5].to_args());
    assert_eq!(carried, ["--link", "eth-100g"]);
    assert_eq!(
        rest,
        ["--trace-file", "some trace.csv", "--time-scale", "0.25"]
    );
    let (carried, rest) =
        split_carried(&sc(&["--batch-policy", "decode-priority", "--seed", "3"]).to_args());
    assert!(carried.is_empty());
    assert_eq!(rest, ["--batch-policy", "decode-priority", "--seed", "3"]);

    // Errors: a model the catalogue lacks; an instance that does not split over whole nodes.
    let e = Deployment::from_scenario(&sc(&["--model", "llama9"]), &cat, Engine::Vllm, 8);
    assert!(e.unwrap_err().0.starts_with("--model: "));
    let e = Deployment::from_scenario(&sc(&["--devices-per-instance", "9"]), &cat, Engine::Vllm, 8);
    assert_eq!(
        e.unwrap_err().0,
        "--gpus-per-node: a prefill instance of 9 GPUs does not split evenly over 2 nodes of 8 \
         GPUs; give a --gpus-per-node that divides it"
    );
}

/// Every format for `engine`: Dynamo runs it; llm-d and vllm.sh run vLLM, sglang.sh SGLang.
fn formats_of(engine: Engine) -> Vec<Format> {
    match engine {
        Engine::Vllm => vec![Format::Dynamo, Format::LlmD, Format::Vllm],
        Engine::Sglang => vec![Format::Dynamo, Format::Sglang],
    }
}

#[test]
fn every_format_reads_back_field_by_field() {
    let cat = cat();
    for engine in [Engine::Vllm, Engine::Sglang] {
        for (s, d) in deployments(engine) {
            let h = header(&s, &d);
            // The `# disagg run` line builds the plan's configuration.
            assert!(
                !h.notes
                    .iter()
                    .any(|n| n.contains("cannot say this plan exactly")),
                "{:?}: {:?}",
                s.to_args(),
                h.notes
            );
            for f in formats_of(engine) {
                let text = f.emit(&d, &h);
                let opts = import::ReadOptions {
                    cat: &cat,
                    model: None,
                };
                let got = import::read_text(&text, &opts)
                    .unwrap_or_else(|e| panic!("{f:?}: {e}\n{text}"))
                    .deployment;
                // Nothing left unmapped (llm-d says its colocated workers are its decode
                // pool), and every field as written.
                let colocated_note = "prefill: none (replicas 0 or create false): the decode \
                                      workers serve whole requests, simulated as colocated";
                let unmapped: Vec<&String> = got
                    .not_mapped
                    .iter()
                    .filter(|l| *l != colocated_note)
                    .collect();
                assert_eq!(unmapped, Vec::<&String>::new(), "{f:?}\n{text}");
                let want = Deployment {
                    name: got.name.clone(),
                    not_mapped: got.not_mapped.clone(),
                    ..d.clone()
                };
                assert_eq!(got, want, "{f:?}\n{text}");
                // The round trip's flags are the `# disagg run` line's.
                let mut rt = got.to_args(&cat).unwrap();
                rt.extend(h.rest_args.iter().cloned());
                assert_eq!(rt, h.run_args, "{f:?}");
            }
        }
    }
}

#[test]
fn a_plan_no_file_can_say_exactly_is_said_so() {
    // A modelled TP2 prefill layout beside an ideal 2-GPU decode instance: a file has one
    // layouts annotation, so its round trip would model the decode pool's TP2 too.
    let s = sc(&[
        "--model",
        "llama3-8b",
        "--prefill-tp",
        "2",
        "--prefill-devices-per-instance",
        "2",
        "--decode-devices-per-instance",
        "2",
    ]);
    let d = Deployment::from_scenario(&s, &cat(), Engine::Vllm, 8).unwrap();
    let h = Header::of_run(&s, &d, &cat(), None).unwrap();
    assert!(
        h.notes
            .iter()
            .any(|n| n.starts_with("the file cannot say this plan exactly")),
        "{:?}",
        h.notes
    );
}

#[test]
fn an_edited_file_reads_as_edited() {
    let cat = cat();
    let (s, d) = deployments(Engine::Vllm).swap_remove(1);
    let text = Format::Dynamo.emit(&d, &header(&s, &d));
    let edited = text.replacen("replicas: 3", "replicas: 4", 1);
    assert_ne!(edited, text);
    let opts = import::ReadOptions {
        cat: &cat,
        model: None,
    };
    let got = import::read_text(&edited, &opts).unwrap().deployment;
    assert_eq!(got.decode.unwrap().replicas, 4);
}

/// The header: the predictions, exactly one `# disagg run` line whose flags read back as the
/// scenario, and the round-trip line.
fn check_header(text: &str, s: &Scenario, file: &str) {
    let comments: Vec<&str> = text
        .lines()
        .skip_while(|l| l.starts_with("#!"))
        .take_while(|l| l.starts_with('#'))
        .collect();
    assert!(
        comments[0].starts_with("# Generated by disagg plan --emit"),
        "{text}"
    );
    assert!(
        comments[1].starts_with("# disagg predicts: at "),
        "{}",
        comments[1]
    );
    assert!(comments[1].contains("SLO attainment 95.0% (95% CI 94.0% to 96.0%)"));
    let runs: Vec<&&str> = comments
        .iter()
        .filter(|l| l.starts_with("# disagg run "))
        .collect();
    assert_eq!(runs.len(), 1, "{text}");
    let words = script::shell_words(runs[0].strip_prefix("# disagg run ").unwrap()).unwrap();
    let run = Scenario::from_flags(&words).unwrap();
    assert_eq!((run.model.as_str(), run.rate), (s.model.as_str(), s.rate));
    let rt = comments
        .iter()
        .find(|l| l.starts_with("# round trip: disagg run --deployment "))
        .unwrap();
    assert!(rt.contains(file), "{rt}");
}

fn yaml(text: &str) -> Value {
    serde_norway::from_str::<Value>(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn at<'a>(v: &'a Value, path: &str) -> &'a Value {
    path.split('.').fold(v, |v, k| match k.parse::<usize>() {
        Ok(i) => &v[i],
        Err(_) => &v[k],
    })
}

/// vLLM flags disagg may write, each checked in the shared docs (FIELDS.md section 3, the vLLM
/// NIXL notes) or vLLM's engine-argument reference (docs/deployment.md#engine-flags).
const VLLM_FLAGS: &[&str] = &[
    "--model",
    "--port",
    "--tensor-parallel-size",
    "--pipeline-parallel-size",
    "--data-parallel-size",
    "--enable-expert-parallel",
    "--max-num-seqs",
    "--max-num-batched-tokens",
    "--enable-chunked-prefill",
    "--enable-prefix-caching",
    "--no-enable-prefix-caching",
    "--block-size",
    "--kv-cache-dtype",
    "--kv-transfer-config",
    "--disaggregation-mode",
];

/// SGLang flags disagg may write (FIELDS.md section 3, pd_disaggregation.md, the Dynamo SGLang
/// examples, SGLang's server-argument reference).
const SGLANG_FLAGS: &[&str] = &[
    "--model-path",
    "--served-model-name",
    "--host",
    "--port",
    "--tp",
    "--pp-size",
    "--dp-size",
    "--ep-size",
    "--max-running-requests",
    "--chunked-prefill-size",
    "--max-prefill-tokens",
    "--enable-mixed-chunk",
    "--disable-radix-cache",
    "--page-size",
    "--kv-cache-dtype",
    "--disaggregation-mode",
    "--disaggregation-transfer-backend",
    "--disaggregation-bootstrap-port",
    "--nnodes",
    "--node-rank",
    "--dist-init-addr",
];

fn check_flags(engine: Engine, args: &[String]) {
    let allowed = match engine {
        Engine::Vllm => VLLM_FLAGS,
        Engine::Sglang => SGLANG_FLAGS,
    };
    for a in args.iter().filter(|a| a.starts_with("--")) {
        assert!(
            allowed.contains(&a.as_str()),
            "{a} is not on {engine:?}'s allow-list"
        );
    }
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not a list: {v:?}"))
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn dynamo_manifests_parse_and_fill_every_required_field() {
    for engine in [Engine::Vllm, Engine::Sglang] {
        for (s, d) in deployments(engine) {
            let h = Header {
                namespace: Some("serving".into()),
                ..header(&s, &d)
            };
            let text = Format::Dynamo.emit(&d, &h);
            check_header(&text, &s, "dynamo.yaml");
            let v = yaml(&text);
            // What FIELDS.md section 1 says a generator must fill, in our words: the v1beta1
            // kind, a name and namespace, the backend, components with a name, a type of the
            // CRD's enum and replicas, each with a main container with an image; workers with
            // the engine's command and args and a GPU limit; nodeCount when multinode.
            assert_eq!(v["apiVersion"], "nvidia.com/v1beta1");
            assert_eq!(v["kind"], "DynamoGraphDeployment");
            assert_eq!(at(&v, "metadata.name"), &Value::from(d.name.clone()));
            assert_eq!(at(&v, "metadata.namespace"), "serving");
            assert_eq!(at(&v, "spec.backendFramework"), engine.as_str());
            let ann = at(&v, "metadata.annotations");
            for (k, val) in d.annotations(true) {
                assert_eq!(ann[k.as_str()], Value::from(val), "{k}");
            }
            let comps = at(&v, "spec.components").as_array().unwrap();
            let types: Vec<&str> = comps.iter().map(|c| c["type"].as_str().unwrap()).collect();
            let want: Vec<&str> = if d.colocated.is_some() {
                vec!["frontend", "worker"]
            } else {
                vec!["frontend", "prefill", "decode"]
            };
            assert_eq!(types, want);
            for c in comps {
                let name = c["name"].as_str().unwrap();
                assert!(is_dns_label(name), "{name}");
                assert!(c["replicas"].as_u64().is_some());
                let main = at(c, "podTemplate.spec.containers.0");
                assert_eq!(main["name"], "main");
                assert!(main["image"]
                    .as_str()
                    .unwrap()
                    .contains("SET-THE-DYNAMO-VERSION"));
                if c["type"] == "frontend" {
                    continue;
                }
                let role = match c["type"].as_str().unwrap() {
                    "prefill" => Role::Prefill,
                    "decode" => Role::Decode,
                    _ => Role::Worker,
                };
                let w = d
                    .roles()
                    .into_iter()
                    .find(|(r, _)| *r == role)
                    .unwrap()
                    .1
                    .clone();
                assert_eq!(c["replicas"].as_u64(), Some(w.replicas as u64));
                let module = format!("dynamo.{}", engine.as_str());
                assert_eq!(
                    strings(&main["command"]),
                    ["python3", "-m", module.as_str()]
                );
                let args = strings(&main["args"]);
                check_flags(engine, &args);
                let flag = |f: &str| {
                    args.iter()
                        .position(|a| a == f)
                        .map(|i| args[i + 1].clone())
                };
                let model_flag = if engine == Engine::Vllm {
                    "--model"
                } else {
                    "--model-path"
                };
                assert_eq!(flag(model_flag).as_deref(), Some(d.model_id()));
                let tp_flag = if engine == Engine::Vllm {
                    "--tensor-parallel-size"
                } else {
                    "--tp"
                };
                assert_eq!(flag(tp_flag), Some(w.tp.to_string()));
                if role != Role::Worker {
                    // Every disaggregated worker says its mode (the Dynamo bug the issue cites).
                    assert_eq!(
                        flag("--disaggregation-mode").as_deref(),
                        Some(role.as_str())
                    );
                }
                if engine == Engine::Vllm && role == Role::Prefill {
                    assert_eq!(
                        flag("--kv-transfer-config").as_deref(),
                        Some(NIXL_KV_TRANSFER_CONFIG)
                    );
                }
                if engine == Engine::Sglang && role != Role::Worker {
                    assert_eq!(
                        flag("--disaggregation-transfer-backend").as_deref(),
                        Some("nixl")
                    );
                }
                let nodes = d.nodes_of(&w);
                let gpus = at(main, "resources.limits")["nvidia.com/gpu"]
                    .as_str()
                    .unwrap();
                assert_eq!(gpus.parse::<u32>().unwrap() * nodes, w.gpus());
                if nodes > 1 {
                    assert_eq!(at(c, "multinode.nodeCount").as_u64(), Some(nodes as u64));
                } else {
                    assert!(c.get("multinode").is_none());
                }
                let product =
                    at(c, "podTemplate.spec.nodeSelector")["nvidia.com/gpu.product"].clone();
                assert_eq!(
                    product.as_str(),
                    w.device.as_deref().and_then(product_of_device)
                );
            }
        }
    }
}

#[test]
fn llmd_values_parse_and_fill_every_required_field() {
    for (s, d) in deployments(Engine::Vllm) {
        let text = Format::LlmD.emit(&d, &header(&s, &d));
        check_header(&text, &s, "llm-d-values.yaml");
        let v = yaml(&text);
        // FIELDS.md section 2a in our words: the model artifact (name, hf:// URI), the routing
        // proxy with the NIXL v2 connector, and per role create/replicas/parallelism and a vLLM
        // container (vllm serve) with the KV connector, the NIXL side-channel host and GPU (and
        // RDMA on InfiniBand) resources.
        assert_eq!(
            at(&v, "modelArtifacts.uri"),
            &Value::from(format!("hf://{}", d.model_id()))
        );
        assert_eq!(at(&v, "modelArtifacts.name"), d.model_id());
        assert_eq!(at(&v, "routing.proxy.connector"), "nixlv2");
        assert_eq!(
            at(&v, "routing.proxy.enabled").as_bool(),
            Some(d.colocated.is_none())
        );
        let pairs: Vec<(&str, Option<&Workers>, Role)> = match &d.colocated {
            Some(w) => vec![
                ("decode", Some(w), Role::Worker),
                ("prefill", None, Role::Prefill),
            ],
            None => vec![
                ("decode", d.decode.as_ref(), Role::Decode),
                ("prefill", d.prefill.as_ref(), Role::Prefill),
            ],
        };
        for (key, w, role) in pairs {
            let r = &v[key];
            let Some(w) = w else {
                assert_eq!(r["create"].as_bool(), Some(false));
                continue;
            };
            assert_eq!(r["create"].as_bool(), Some(true));
            assert_eq!(r["replicas"].as_u64(), Some(w.replicas as u64));
            assert_eq!(at(r, "parallelism.tensor").as_u64(), Some(w.tp as u64));
            let c = at(r, "containers.0");
            assert_eq!(c["modelCommand"], "vllmServe");
            let args = strings(&c["args"]);
            check_flags(Engine::Vllm, &args);
            assert_eq!(args[0], "--tensor-parallel-size");
            if role != Role::Worker {
                let i = args
                    .iter()
                    .position(|a| a == "--kv-transfer-config")
                    .unwrap();
                assert_eq!(args[i + 1], NIXL_KV_TRANSFER_CONFIG);
                assert_eq!(at(c, "env.0.name"), "VLLM_NIXL_SIDE_CHANNEL_HOST");
                assert_eq!(at(c, "env.0.valueFrom.fieldRef.fieldPath"), "status.podIP");
            }
            let lim = at(c, "resources.limits");
            let per = lim["nvidia.com/gpu"]
                .as_str()
                .unwrap()
                .parse::<u32>()
                .unwrap();
            assert_eq!(per * d.nodes_of(w), w.gpus());
            assert_eq!(
                lim.get("rdma/ib").is_some(),
                d.link.as_deref() == Some("ib-ndr")
            );
        }
    }
}

fn bash_n(text: &str) {
    let dir = std::env::temp_dir().join(format!("disagg-emit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("s.sh");
    std::fs::write(&f, text).unwrap();
    let out = std::process::Command::new("bash")
        .arg("-n")
        .arg(&f)
        .output();
    let _ = std::fs::remove_dir_all(&dir);
    match out {
        Ok(o) => assert!(
            o.status.success(),
            "{}\n{text}",
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => eprintln!("bash not found ({e}): syntax check skipped"),
    }
}

#[test]
fn scripts_pass_bash_n_and_read_back() {
    for (format, engine) in [
        (Format::Vllm, Engine::Vllm),
        (Format::Sglang, Engine::Sglang),
    ] {
        for (s, d) in deployments(engine) {
            let text = format.emit(&d, &header(&s, &d));
            check_header(&text, &s, format.file_name());
            assert!(text.starts_with("#!/usr/bin/env bash\n"));
            assert!(text.contains("\nset -euo pipefail\n"));
            bash_n(&text);
            // Every engine flag of every launch command is on the allow-list.
            for l in text
                .replace("\\\n", " ")
                .lines()
                .filter(|l| l.starts_with("serve "))
            {
                check_flags(engine, &script::shell_words(l).unwrap());
            }
            if d.colocated.is_none() {
                let router = match engine {
                    Engine::Vllm => "toy_proxy_server.py --port 8192",
                    Engine::Sglang => "sglang_router.launch_router --pd-disaggregation",
                };
                assert!(text.contains(router), "{text}");
            }
            let launches = text.lines().filter(|l| l.starts_with("serve ")).count();
            let instances: u32 = d.roles().iter().map(|(_, w)| w.replicas).sum();
            let per_node = |w: &Workers| {
                if engine == Engine::Sglang {
                    d.nodes_of(w)
                } else {
                    1
                }
            };
            let want: u32 = d
                .roles()
                .iter()
                .map(|(_, w)| w.replicas * per_node(w))
                .sum();
            assert_eq!(launches as u32, want, "{instances} instances");
        }
    }
}

#[test]
fn placements_pack_instances_on_nodes() {
    let d = Deployment::from_scenario(
        &sc(&[
            "--prefill",
            "3",
            "--decode",
            "2",
            "--devices-per-instance",
            "4",
            "--decode-devices-per-instance",
            "16",
        ]),
        &cat(),
        Engine::Vllm,
        8,
    )
    .unwrap();
    let p = script::placements(&d);
    type Placed = (Role, u32, Vec<(u32, Vec<u32>)>);
    let at: Vec<Placed> = p.into_iter().map(|x| (x.role, x.index, x.nodes)).collect();
    let g = |a: u32, b: u32| (a..b).collect::<Vec<u32>>();
    assert_eq!(
        at,
        vec![
            (Role::Prefill, 0, vec![(0, g(0, 4))]),
            (Role::Prefill, 1, vec![(0, g(4, 8))]),
            (Role::Prefill, 2, vec![(1, g(0, 4))]),
            (Role::Decode, 0, vec![(2, g(0, 8)), (3, g(0, 8))]),
            (Role::Decode, 1, vec![(4, g(0, 8)), (5, g(0, 8))]),
        ]
    );
}

#[test]
fn shell_words_read_what_shell_join_writes() {
    let words = [
        "a b",
        "it's",
        "",
        "$X",
        "{\"k\":\"v\"}",
        "--f=1",
        "back\\slash",
    ];
    let joined = script::shell_join(&words);
    assert_eq!(script::shell_words(&joined).unwrap(), words);
    assert_eq!(
        script::shell_words(r#"x "a\"b" 'c d'e \f"#).unwrap(),
        ["x", "a\"b", "c de", "f"]
    );
    assert_eq!(
        script::shell_words("'open").unwrap_err(),
        "unterminated single quote"
    );
}

#[test]
fn parse_script_refuses_what_disagg_did_not_write() {
    let e = |t: &str| script::parse_script(t).unwrap_err();
    assert_eq!(
        e("#!/bin/sh\necho hi\n"),
        "no serve command: not a launch script written by disagg plan --emit"
    );
    assert!(e("serve prefill 0 0 trtllm-serve m\n").contains("unknown launcher"));
    assert!(e("serve prefill 1 0 vllm serve m\n").contains("no prefill instance 0"));
    // Through `run --deployment`: one line naming the formats read.
    let cat = cat();
    let opts = import::ReadOptions {
        cat: &cat,
        model: None,
    };
    let e = import::read_text("#!/bin/sh\necho hi\n", &opts).unwrap_err();
    assert!(
        e.starts_with("a shell script: no serve command: not a launch script written by disagg plan --emit (disagg reads a DynamoGraphDeployment"),
        "{e}"
    );
    assert!(!e.contains('\n'));
}

#[test]
fn emit_options_are_checked() {
    let o = |f: &[&str], dir: Option<&str>, top: Option<usize>| EmitOptions {
        formats: f.iter().map(|s| s.to_string()).collect(),
        dir: dir.map(Into::into),
        top,
        ..EmitOptions::default()
    };
    let e = |x: EmitOptions| x.check().unwrap_err().0;
    assert_eq!(
        e(o(&["helm"], Some("d"), None)),
        "unknown --emit format 'helm'; valid: dynamo, llm-d, vllm, sglang"
    );
    assert_eq!(
        e(o(&[], None, Some(2))),
        "--emit-top: give --emit FORMAT (dynamo, llm-d, vllm, sglang) too"
    );
    assert_eq!(
        e(o(&["vllm"], None, None)),
        "--emit: give --emit-dir DIR, the directory to write the files into"
    );
    assert_eq!(
        e(o(&["vllm"], Some("d"), Some(0))),
        "--emit-top: K must be at least 1"
    );
    let mut bad = o(&["vllm"], Some("d"), None);
    bad.engine = "trtllm".into();
    assert_eq!(e(bad), "unknown --engine 'trtllm'; valid: vllm, sglang");
    let mut bad = o(&["vllm"], Some("d"), None);
    bad.namespace = "Prod".into();
    assert!(e(bad).starts_with("--namespace: 'Prod' is not a Kubernetes namespace"));
    let ok = o(&["dynamo,vllm", "dynamo"], Some("d"), Some(3))
        .check()
        .unwrap()
        .unwrap();
    assert_eq!(ok.formats, [Format::Dynamo, Format::Vllm]);
    assert_eq!((ok.top, ok.engine), (3, Engine::Vllm));
    assert!(o(&[], None, None).check().unwrap().is_none());
}

/// The shared example manifests (third-party, read at test time) parse with the same YAML
/// reader and have the fields the tests above require of ours.
#[test]
fn shared_dynamo_examples_have_the_fields_we_check() {
    let root = std::env::var("DISAGG_SHARED")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared")
        });
    let f = root.join("formats/dynamo/vllm_disagg_v1beta1.yaml");
    let Ok(text) = std::fs::read_to_string(&f) else {
        eprintln!("skipped: {} is absent", f.display());
        return;
    };
    let v = yaml(&text);
    assert_eq!(v["apiVersion"], "nvidia.com/v1beta1");
    for c in at(&v, "spec.components").as_array().unwrap() {
        assert!(c["type"].is_string() && c["replicas"].is_u64());
        assert_eq!(at(c, "podTemplate.spec.containers.0.name"), "main");
    }
}
