//! A causal encoder-decoder with the replay on decode (`docs/levers.md#ced`), run whole: runs[6]
//! of the reference's levers-cost-runs.json ("70B CED (40+40) with the replay on decode"; the file
//! is copied into tests/fixtures/levers/cost-runs.json, see the README there), replayed from its
//! flags. Our
//! summary is laid out as the reference's `--json` summary and compared leaf by leaf: the same
//! keys, every number with f64 `==`, every name equal.

#[allow(unused_imports)]
use crate::golden_common;

use disagg_model::Catalogue;
use disagg_sim::{simulate_config, RunResult, Scenario, Summary};
use golden_common::{flags, load_from, same};
use serde_json::{json, Map, Value};

fn run_of(flags: &[String]) -> (RunResult, Summary) {
    let sc = Scenario::from_flags(flags).unwrap();
    let cfg = sc.build(&Catalogue::builtin()).unwrap();
    let run = simulate_config(&cfg).unwrap();
    let s = run.summary();
    (run, s)
}

fn dist(d: &disagg_sim::Dist) -> Value {
    json!({"mean": d.mean, "p50": d.p50, "p90": d.p90, "p99": d.p99, "max": d.max})
}

/// Our summary in the reference's `--json` layout (the keys of `docs/serving-model.md#metrics`, as golden
/// `summary_full`): what each reference field is, from our summary.
fn reference_layout(s: &Summary) -> Value {
    let per = |f: &dyn Fn(&disagg_sim::metrics::InstanceSummary) -> Value| -> Value {
        Value::Object(
            s.instances
                .iter()
                .map(|i| (i.name.clone(), f(i)))
                .collect::<Map<_, _>>(),
        )
    };
    let mut util: Map<String, Value> = s
        .instances
        .iter()
        .map(|i| (i.name.clone(), json!(i.utilisation)))
        .collect();
    util.insert("kv-link".into(), json!(s.link_busy));
    let stages = |a: [f64; 6]| -> Value {
        Value::Object(
            disagg_sim::metrics::STAGES
                .iter()
                .zip(a)
                .map(|(k, v)| (k.to_string(), json!(v)))
                .collect(),
        )
    };
    let e = &s.energy;
    json!({
        "mode": s.mode.as_str(),
        "requests": {
            "completed": s.requests.completed,
            "rejected": s.requests.rejected,
            "measured": s.requests.measured,
        },
        "latency_s": {
            "ttft": dist(&s.ttft_s),
            "tpot": dist(&s.tpot_s),
            "itl": dist(&s.itl_s),
            "e2e": dist(&s.e2e_s),
        },
        "throughput": {
            "output_tok_per_s": s.throughput_tok_s,
            "req_per_s": s.throughput_rps,
            "goodput_req_per_s": s.goodput_rps,
            "slo_attainment": s.slo_attainment,
        },
        "utilisation": util,
        "kv_link": {
            "bytes_GB": s.link.bytes / 1e9,
            "transfers": s.link.transfers,
            "mean_wait_ms": 1e3 * s.link.wait_s / s.link.transfers.max(1) as f64,
            "achieved_GBps": s.link.achieved_bps / 1e9,
        },
        "efficiency": per(&|i| json!({
            "mfu": i.mfu, "mbu": i.mbu, "mean_batch": i.mean_batch, "steps": i.steps,
        })),
        "compute_bound_fraction": per(&|i| json!(i.compute_bound_frac)),
        "stage_breakdown_s": stages(s.stage_breakdown_s.as_array()),
        "stage_share": stages(s.stage_share.as_array()),
        "hotspots": {
            "stage": s.hotspot.stage,
            "resource": s.hotspot.resource,
            "resource_util": s.hotspot.resource_util,
            "busy_over_90pct": s.hotspot.busy_over_90pct,
        },
        "littles_law": {
            "L_measured": s.littles_law.l_measured,
            "lambda_W": s.littles_law.lambda_w,
        },
        "energy": {
            "total_J": e.total_j,
            "avg_power_W": s.avg_power_w,
            "J_per_output_token": s.j_per_token,
            "output_tokens_per_J": s.tokens_per_j,
            "J_per_slo_met_request": s.j_per_slo_met_request,
            "breakdown": {
                "static": e.static_frac,
                "compute": e.compute_frac,
                "memory": e.memory_frac,
                "link": e.link_frac,
            },
            "per_instance": per(&|i| json!({
                "avg_w": i.avg_w, "peak_step_w": i.peak_step_w,
                "power_bound_frac": i.power_bound_frac,
            })),
        },
        "sim_time_s": s.horizon_s,
    })
}

fn fixture() -> (Vec<String>, Value) {
    let g = load_from("levers", "cost-runs.json")["runs"][6].clone();
    assert_eq!(
        g["label"],
        "70B CED (40+40) with the replay on decode (CedDecodeInstance), 1P1D"
    );
    (flags(&g["flags"]), g["summary"].clone())
}

#[test]
fn runs_6_ced_replay_on_decode_is_the_reference_bit_for_bit() {
    let (flags, want) = fixture();
    assert_eq!(
        flags,
        ["--model", "llama3-70b-ced", "--ced-replay-on", "decode"]
    );
    let (_, s) = run_of(&flags);
    let n = same(&reference_layout(&s), &want, "summary");
    // Every number of the summary: 3 counts, 4 x 5 latencies, 4 throughput, 3 utilisations, 4
    // link, 2 x 4 efficiency, 2 compute-bound, 2 x 6 stages, resource_util, 2 Little, 5 energy
    // totals, 4 breakdown, 2 x 3 per instance, sim_time_s.
    assert_eq!(n, 3 + 20 + 4 + 3 + 4 + 8 + 2 + 12 + 1 + 2 + 5 + 4 + 6 + 1);
}

// ---------------------------------------------------------------------------------------------
// The event flow of `docs/levers.md` on a hand-built workload: every decode-side stamp, ITL and count
// derived here from the cost model's steps (each pinned by the reference fixtures in
// disagg-model) and the flow as `docs/levers.md` writes it.

use disagg_model::{ReplayOn, StepCost};
use disagg_sim::{simulate, GenRequest, SimConfig};

fn cfg(flags: &[&str]) -> SimConfig {
    Scenario::from_flags(flags)
        .unwrap()
        .build(&Catalogue::builtin())
        .unwrap()
}

fn req(rid: usize, at: f64, prompt: u32, output: u32) -> GenRequest {
    GenRequest {
        rid,
        arrival_s: at,
        prompt_len: prompt,
        output_len: output,
    }
}

const CED_DECODE: [&str; 4] = ["--model", "llama3-70b-ced", "--ced-replay-on", "decode"];

#[test]
fn replay_on_decode_event_flow_by_hand() {
    let c = cfg(&CED_DECODE);
    let pcm = &c.pools[0].cost;
    let dcm = &c.pools[1].cost;
    assert!(pcm.encoder_only() && !dcm.encoder_only());
    // r0 and r1 arrive together (r0's prefill step starts before r1 arrives, so each has its
    // own); r1 has one output token; r2 comes alone much later with a prompt shorter than W = 128.
    let wl = [
        req(0, 0.0, 1000, 3),
        req(1, 0.0, 300, 1),
        req(2, 5.0, 50, 2),
    ];
    let run = simulate(&c, &wl).unwrap();
    let r: Vec<_> = (0..3).map(|i| run.request(i)).collect();
    let t = |s: StepCost| s.time_s;

    // Prefill: an encoder-only step each; no first token there; every request is handed off at
    // its step's end (r1 too, with one output token).
    let tp = t(pcm.prefill([1000]));
    let h1 = tp + t(pcm.prefill([300]));
    assert_eq!(r[0].prefill_start_s, Some(0.0));
    assert_eq!(
        r[0].handoff_start_s,
        Some(tp),
        "handed off at the encoder step's end"
    );
    assert_eq!(r[1].prefill_start_s, Some(tp));
    assert_eq!(r[1].handoff_start_s, Some(h1));
    assert_eq!(r[0].kv_start_s, Some(tp));
    let (kv0, kv1) = (r[0].kv_ready_s.unwrap(), r[1].kv_ready_s.unwrap());
    let g1 = r[1].kv_start_s.unwrap();
    assert!(g1 >= h1);
    assert_eq!(run.link().transfers, 3);

    // Decode step 1: r0's replay alone, from its KV landing; its first token at the end.
    assert_eq!(r[0].decode_start_s, Some(kv0));
    let ft0 = kv0 + t(dcm.ced_step(0, 0, &[(1000, 128)]));
    assert_eq!(r[0].first_token_s, Some(ft0));
    // r1 lands during that step (a precondition of what follows) and is admitted at its end.
    assert!(kv1 < ft0, "{kv1} {ft0}");
    assert_eq!(r[1].decode_start_s, Some(ft0));
    // Step 2: r0 decodes (context 1000 + 1, one row) while r1 replays its last 128 tokens; r1's
    // first (and only) token ends it.
    let e2 = ft0 + t(dcm.ced_step(1001, 1, &[(300, 128)]));
    assert_eq!(r[1].first_token_s, Some(e2));
    assert_eq!(r[1].finish_s, Some(e2));
    // Step 3: r0 alone (context 1002), a plain decode step; its third token finishes it.
    let f0 = e2 + t(dcm.decode_sum(1002, 1));
    assert_eq!(dcm.ced_step(1002, 1, &[]), dcm.decode_sum(1002, 1));
    assert_eq!(r[0].finish_s, Some(f0));
    assert_eq!(run.itls(0), vec![e2 - ft0, f0 - e2]);
    assert!(run.itls(1).is_empty());

    // r2: W = 128 > 50, so the whole prompt is replayed; then one decode step (51 positions).
    let kv2 = r[2].kv_ready_s.unwrap();
    let tp2 = t(pcm.prefill([50]));
    assert_eq!(r[2].handoff_start_s, Some(5.0 + tp2));
    assert_eq!(r[2].kv_start_s, Some(5.0 + tp2));
    assert_eq!(r[2].decode_start_s, Some(kv2));
    let ft2 = kv2 + t(dcm.ced_step(0, 0, &[(50, 50)]));
    assert_eq!(r[2].first_token_s, Some(ft2));
    let f2 = ft2 + t(dcm.decode_sum(51, 1));
    assert_eq!(r[2].finish_s, Some(f2));
    assert_eq!(run.itls(2), vec![f2 - ft2]);

    // Instances: prefill 3 steps of one request; decode 5 steps over 1 + 2 + 1 + 1 + 1 rows.
    let st = |i: usize| run.instances()[i].stats;
    assert_eq!((st(0).steps, st(0).batch_sum), (3, 3));
    assert_eq!((st(1).steps, st(1).batch_sum), (5, 6));
    assert_eq!(run.decode_step_ends(0), &[ft0, e2, f0, ft2, f2]);

    // The summary: TTFT includes the hand-off and the replay; TPOT starts at the replay's end;
    // the prefill stage is the encoder step; the hand-off runs from the encoder step's end.
    let s = run.summary();
    assert_eq!(s.requests.measured, 3);
    let mut ttft = [ft0, e2, ft2 - 5.0];
    ttft.sort_by(f64::total_cmp);
    assert_eq!((s.ttft_s.p50, s.ttft_s.max), (ttft[1], ttft[2]));
    assert_eq!(s.tpot_s.max, ((f0 - ft0) / 2.0).max(f2 - ft2));
    let stages = s.stage_breakdown_s.as_array();
    let r0_stages = [0.0, tp, 0.0, kv0 - tp, 0.0, f0 - kv0];
    let r1_stages = [tp, h1 - tp, g1 - h1, kv1 - g1, ft0 - kv1, e2 - ft0];
    let h2 = 5.0 + tp2;
    let r2_stages = [0.0, h2 - 5.0, 0.0, kv2 - h2, 0.0, f2 - kv2];
    for k in 0..6 {
        // The mean of the three requests' stages: their correctly rounded sum over 3.
        let want = disagg_sim::pymath::fsum(&[r0_stages[k], r1_stages[k], r2_stages[k]]) / 3.0;
        assert_eq!(stages[k], want, "stage {k}");
    }
    let mut handoff = [kv0 - tp, kv1 - h1, kv2 - (5.0 + tp2)];
    handoff.sort_by(f64::total_cmp);
    assert_eq!(s.handoff_s.p50, handoff[1]);
}

#[test]
fn the_model_overrides_in_order() {
    use disagg_model::Ced;
    let ced = |flags: &[&str]| cfg(flags).model.ced;
    // The preset's CED, with W and the placement replaced.
    assert_eq!(
        ced(&["--model", "llama3-70b-ced", "--ced-replay", "64"]),
        Some(Ced {
            encoder_layers: 40,
            replay: 64,
            replay_on: ReplayOn::Prefill
        })
    );
    // A dense model becomes CED with E given (fixture model.llama3-70b.ced_encoder_layers=30...).
    let c = ced(&[
        "--model",
        "llama3-70b",
        "--ced-encoder-layers",
        "30",
        "--ced-replay",
        "64",
        "--ced-replay-on",
        "decode",
    ])
    .unwrap();
    assert_eq!(
        (c.encoder_layers, c.replay, c.replay_on),
        (30, 64, ReplayOn::Decode)
    );
    // W and the placement alone are ignored on a dense model; E = 0 turns CED off.
    assert_eq!(ced(&["--model", "llama3-70b", "--ced-replay", "64"]), None);
    assert_eq!(
        ced(&["--model", "llama3-70b", "--ced-replay-on", "decode"]),
        None
    );
    assert_eq!(
        ced(&["--model", "llama3-70b-ced", "--ced-encoder-layers", "0"]),
        None
    );
    // The LM head override applies too (before the CED ones).
    let m = cfg(&["--model", "llama3-8b-ced", "--prefill-lm-head", "last"]).model;
    assert_eq!(m.prefill_lm_head, disagg_model::LmHead::Last);
    assert_eq!(m.ced.unwrap().encoder_layers, 16);
}

#[test]
fn pools_and_capacity() {
    let c = cfg(&CED_DECODE);
    assert!(c.pools[0].cost.opts.prefill_only);
    assert!(!c.pools[1].cost.opts.prefill_only);
    // `docs/levers.md#ced`: the encoder-only prefill instance on 4xH100 holds 659,501 tokens of KV;
    // the decode instance keeps the whole model (Llama-3-70B's 448,288).
    assert_eq!(c.pools[0].kv_capacity_tokens, 659_501);
    assert_eq!(c.pools[1].kv_capacity_tokens, 448_288);
    assert_eq!(c.ced_decode_replay(), Some(128));
    // The replay on prefill: both pools keep the whole model; the ordinary flow.
    let p = cfg(&["--model", "llama3-70b-ced"]);
    assert_eq!(p.pools[0].kv_capacity_tokens, 448_288);
    assert_eq!(p.ced_decode_replay(), None);
    // Every other model: the prefill pool is marked, nothing else changes.
    let d = cfg(&["--model", "llama3-70b"]);
    assert!(d.pools[0].cost.opts.prefill_only && !d.pools[1].cost.opts.prefill_only);
    assert_eq!(d.pools[0].kv_capacity_tokens, 448_288);
    assert_eq!(d.ced_decode_replay(), None);
}

#[test]
fn replay_on_prefill_is_the_ordinary_flow_with_the_ced_prefill() {
    let c = cfg(&["--model", "llama3-70b-ced"]);
    let wl = [req(0, 0.0, 1000, 2), req(1, 0.0, 300, 1)];
    let run = simulate(&c, &wl).unwrap();
    let pcm = &c.pools[0].cost;
    // Each prefill step replays W = 128 of its prompt and emits the first token.
    let ft = pcm.prefill([1000]).time_s;
    let ft1 = ft + pcm.prefill([300]).time_s;
    let dense = cfg(&["--model", "llama3-70b"]).pools[0]
        .cost
        .prefill([1000])
        .time_s;
    assert!(ft < dense, "{ft} {dense}");
    assert!(!pcm.encoder_only());
    let (r0, r1) = (run.request(0), run.request(1));
    assert_eq!((r0.first_token_s, r1.first_token_s), (Some(ft), Some(ft1)));
    assert_eq!(r0.handoff_start_s, Some(ft));
    // r1 (one output token) finishes at prefill and is not handed off.
    assert_eq!((r1.finish_s, r1.kv_start_s), (Some(ft1), None));
    assert_eq!(run.link().transfers, 1);
    let kv0 = r0.kv_ready_s.unwrap();
    let f0 = kv0 + c.pools[1].cost.decode_sum(1001, 1).time_s;
    assert_eq!(r0.finish_s, Some(f0));
    // --fast and colocated mode are fine with the replay on prefill.
    cfg(&["--model", "llama3-70b-ced", "--fast"]);
    cfg(&["--model", "llama3-70b-ced", "--mode", "colocated"]);
}

#[test]
fn ced_off_is_the_dense_model() {
    let a = cfg(&[
        "--model",
        "llama3-70b-ced",
        "--ced-encoder-layers",
        "0",
        "--requests",
        "40",
    ]);
    let b = cfg(&["--model", "llama3-70b", "--requests", "40"]);
    let (ra, rb) = (simulate_config(&a).unwrap(), simulate_config(&b).unwrap());
    let stamps = |r: &RunResult| r.requests().collect::<Vec<_>>();
    assert_eq!(stamps(&ra), stamps(&rb));
}

#[test]
fn refusals_name_the_option() {
    let err = |flags: &[&str]| {
        Scenario::from_flags(flags)
            .unwrap()
            .build(&Catalogue::builtin())
            .unwrap_err()
            .to_string()
    };
    let with = |extra: &[&str]| {
        let mut f = CED_DECODE.to_vec();
        f.extend_from_slice(extra);
        err(&f)
    };
    for (extra, flag) in [
        (&["--mode", "colocated"][..], "--ced-replay-on: "),
        (&["--fast"], "--ced-replay-on: "),
        (&["--send", "layerwise"], "--ced-replay-on: "),
        (&["--first-token", "decode"], "--ced-replay-on: "),
        (&["--batch-policy", "chunked"], "--ced-encoder-layers: "),
        (&["--speculative", "mtp"], "--ced-encoder-layers: "),
        (&["--kv-policy", "paged"], "--ced-encoder-layers: "),
        (&["--weight-format", "fp8"], "--weight-format: "),
    ] {
        let e = with(extra);
        assert!(e.starts_with(flag), "{extra:?}: {e}");
        assert!(!e.contains('\n'), "{e}");
    }
    // Parallel layouts: each pool's layout check (`docs/cost-model.md#parallelism`) refuses CED models.
    for extra in [
        &["--tp", "4"][..],
        &["--decode-tp", "2", "--decode-pp", "2"],
    ] {
        let e = with(extra);
        assert!(e.contains("without CED only"), "{extra:?}: {e}");
        assert!(!e.contains('\n'), "{e}");
    }
    // The scheduling levers are refused with the replay on prefill too.
    let e = err(&["--model", "llama3-70b-ced", "--prefix-caching"]);
    assert!(e.starts_with("--ced-encoder-layers: "), "{e}");
    // The shape: E below L, attention models without experts, W >= 1.
    for (flags, flag) in [
        (
            &["--model", "llama3-70b", "--ced-encoder-layers", "80"][..],
            "--ced-encoder-layers: ",
        ),
        (
            &["--model", "mixtral-8x7b", "--ced-encoder-layers", "4"],
            "--ced-encoder-layers: ",
        ),
        (
            &["--model", "llama3-8b-hyena", "--ced-encoder-layers", "4"],
            "--ced-encoder-layers: ",
        ),
        (
            &["--model", "llama3-70b-ced", "--ced-replay", "0"],
            "--ced-replay",
        ),
    ] {
        let e = err(flags);
        assert!(e.starts_with(flag), "{flags:?}: {e}");
    }
    // The largest E is L - 1.
    assert_eq!(
        cfg(&["--model", "llama3-70b", "--ced-encoder-layers", "79"])
            .model
            .ced
            .unwrap()
            .encoder_layers,
        79
    );
    // A hand-edited configuration is checked too (the engine's own guard).
    let mut c = cfg(&CED_DECODE);
    c.fast_forward = true;
    let e = simulate(&c, &[req(0, 0.0, 10, 2)]).unwrap_err().to_string();
    assert!(e.starts_with("--ced-replay-on: "), "{e}");
    let mut c = cfg(&CED_DECODE);
    c.mode = disagg_sim::Mode::Colocated;
    assert!(simulate(&c, &[req(0, 0.0, 10, 2)]).is_err());
}

#[test]
fn the_options_are_quiet_at_their_defaults() {
    let plain = Scenario::from_flags(["--model", "llama3-70b"]).unwrap();
    let echo = plain.echo_value();
    for k in ["ced_encoder_layers", "ced_replay", "ced_replay_on"] {
        assert!(echo.get(k).is_none(), "{k}");
    }
    let set = Scenario::from_flags(["--ced-replay", "64", "--ced-replay-on", "decode"]).unwrap();
    let echo = set.echo_value();
    assert_eq!(echo["ced_replay"], json!(64));
    assert_eq!(echo["ced_replay_on"], json!("decode"));
    assert!(echo.get("ced_encoder_layers").is_none());
    // A scenario file reads the same names; an unknown one is the flag's error.
    let from: Scenario = serde_json::from_value(json!({"ced_replay_on": "decode"})).unwrap();
    assert_eq!(from.ced_replay_on, Some(ReplayOn::Decode));
    let bad = serde_json::from_value::<Scenario>(json!({"ced_replay_on": "both"}));
    assert_eq!(
        bad.unwrap_err().to_string(),
        "unknown --ced-replay-on 'both'; valid: prefill, decode"
    );
}

#[test]
fn admission_waits_for_a_batch_slot_and_for_kv() {
    // One running row at most: r1 lands while r0 runs and is admitted when r0 finishes, alone.
    let mut flags = CED_DECODE.to_vec();
    flags.extend(["--max-decode-batch", "1"]);
    let c = cfg(&flags);
    let dcm = &c.pools[1].cost;
    let run = simulate(&c, &[req(0, 0.0, 1000, 2), req(1, 0.0, 300, 2)]).unwrap();
    let (r0, r1) = (run.request(0), run.request(1));
    let kv0 = r0.kv_ready_s.unwrap();
    let ft0 = kv0 + dcm.ced_step(0, 0, &[(1000, 128)]).time_s;
    let f0 = ft0 + dcm.decode_sum(1001, 1).time_s;
    assert_eq!((r0.first_token_s, r0.finish_s), (Some(ft0), Some(f0)));
    assert!(r1.kv_ready_s.unwrap() < f0);
    assert_eq!(r1.decode_start_s, Some(f0));
    let ft1 = f0 + dcm.ced_step(0, 0, &[(300, 128)]).time_s;
    assert_eq!(r1.first_token_s, Some(ft1));
    assert_eq!(r1.finish_s, Some(ft1 + dcm.decode_sum(301, 1).time_s));

    // Decode KV: Llama-3-70B on 2xH100 holds 8,835 tokens (`docs/cost-model.md#kv-capacity`); r0 reserves
    // 5,000 + 40 and r1 4,000 + 2, 9,042 together: r1 waits for r0 to finish and release its KV.
    let mut flags = CED_DECODE.to_vec();
    flags.extend(["--decode-devices-per-instance", "2"]);
    let c = cfg(&flags);
    assert_eq!(c.pools[1].kv_capacity_tokens, 8_835);
    let dcm = &c.pools[1].cost;
    let run = simulate(&c, &[req(0, 0.0, 5000, 40), req(1, 0.0, 4000, 2)]).unwrap();
    let (r0, r1) = (run.request(0), run.request(1));
    let f0 = r0.finish_s.unwrap();
    assert!(r1.kv_ready_s.unwrap() < f0);
    assert_eq!(r1.decode_start_s, Some(f0));
    let ft1 = f0 + dcm.ced_step(0, 0, &[(4000, 128)]).time_s;
    assert_eq!(r1.first_token_s, Some(ft1));
    assert_eq!(r1.finish_s, Some(ft1 + dcm.decode_sum(4001, 1).time_s));
    // r0: its replay and 39 decode steps; r1: its replay and one decode step.
    assert_eq!(run.decode_step_ends(0).len(), 42);
}

#[test]
fn endpoint_compression_counts_every_request() {
    // `docs/cost-model.md`: the encoder-only step compresses the KV of every request it hands off, one output
    // token or not (decoder-only, a one-token request has no hand-off and no compression).
    let mut flags = CED_DECODE.to_vec();
    flags.extend(["--kv-compress", "fp8", "--kv-compress-at", "endpoint"]);
    let c = cfg(&flags);
    let pcm = &c.pools[0].cost;
    let tr = c.kv_transit.as_ref().unwrap();
    let run = simulate(&c, &[req(0, 0.0, 1000, 1)]).unwrap();
    let plain = pcm.prefill([1000]);
    let with = pcm.endpoint_pass(plain, tr, [1000]);
    assert!(with.time_s > plain.time_s);
    assert_eq!(run.request(0).handoff_start_s, Some(with.time_s));
    assert_eq!(run.instances()[0].stats.bytes, with.bytes);
    assert_eq!(run.link().transfers, 1);
}
