//! Engine properties: fast path = plain loop, determinism, `Send`, observers, the trace writer,
//! validation, rejection, replay edge cases and the capacity search.

use disagg_model::{Catalogue, Error};
use disagg_sim::{
    analytic_capacity, max_sustainable_rate, simulate, simulate_observed, ChromeTrace, GenRequest,
    Observer, RunResult, Scenario, SimConfig, StepEvent, StepKind, Summary, TimeSeries,
    TransferEvent,
};

fn cfg(flags: &[&str]) -> SimConfig {
    Scenario::from_flags(flags)
        .unwrap()
        .build(&Catalogue::builtin())
        .unwrap()
}

fn chapter(extra: &[&str]) -> SimConfig {
    let mut f = vec![
        "--model",
        "llama3-8b",
        "--devices-per-instance",
        "1",
        "--rate",
        "8",
    ];
    f.extend_from_slice(extra);
    cfg(&f)
}

fn run(c: &SimConfig) -> RunResult {
    simulate(c, &c.generate_workload()).unwrap()
}

fn json(s: &Summary) -> String {
    serde_json::to_string(s).unwrap()
}

#[test]
fn fast_and_plain_agree_on_every_summary_number() {
    for extra in [
        &[][..],
        &["--link", "eth-25g", "--rate", "14"][..],
        &[
            "--link",
            "eth-25g",
            "--rate",
            "14",
            "--kv-compress",
            "fp4-block",
            "--kv-compress-at",
            "endpoint",
        ][..],
    ] {
        let mut fast = extra.to_vec();
        fast.push("--fast");
        let a = run(&chapter(&fast));
        let b = run(&chapter(extra));
        assert_eq!(json(&a.summary()), json(&b.summary()), "{extra:?}");
        // Stamps too (`docs/serving-model.md#event-order` item 8: identical on these runs).
        assert_eq!(a.len(), b.len(), "{extra:?}");
        assert!(
            a.requests().zip(b.requests()).all(|(x, y)| x == y),
            "{extra:?}"
        );
    }
}

#[test]
fn multi_instance_multi_channel_fast_equals_plain() {
    let extra = [
        "--prefill",
        "2",
        "--decode",
        "2",
        "--link-channels",
        "2",
        "--rate",
        "16",
        "--link",
        "eth-25g",
    ];
    let mut fast = extra.to_vec();
    fast.push("--fast");
    let a = run(&chapter(&fast));
    let b = run(&chapter(&extra));
    let (sa, sb) = (a.summary(), b.summary());
    assert_eq!(sa.requests.completed, 800);
    assert_eq!(json(&sa), json(&sb));
    assert_eq!(a.len(), b.len());
    assert!(a.requests().zip(b.requests()).all(|(x, y)| x == y));
    // Both pools were used.
    assert!(sa.instances.iter().all(|i| i.steps > 0));
}

#[test]
fn two_runs_are_byte_identical() {
    let c = chapter(&["--fast", "--link", "eth-100g"]);
    assert_eq!(json(&run(&c).summary()), json(&run(&c).summary()));
    let c = cfg(&["--mode", "colocated", "--requests", "200"]);
    assert_eq!(json(&run(&c).summary()), json(&run(&c).summary()));
}

#[test]
fn a_run_is_send() {
    fn assert_send<T: Send>() {}
    fn assert_sync<T: Sync>() {}
    assert_send::<RunResult>();
    assert_send::<SimConfig>();
    assert_send::<Summary>();
    assert_send::<Scenario>();
    assert_send::<ChromeTrace<Vec<u8>>>();
    assert_sync::<SimConfig>();
    let c = chapter(&["--fast", "--requests", "100"]);
    let h = std::thread::spawn(move || run(&c).summary());
    assert_eq!(h.join().unwrap().requests.completed, 100);
}

#[derive(Default)]
struct Counter {
    arrivals: usize,
    finishes: usize,
    rejected: usize,
    prefill_steps: u64,
    decode_steps: u64,
    decode_tokens: u64,
    transfers: usize,
    last_finish: f64,
    ended: Option<f64>,
}

impl Observer for Counter {
    fn arrival(&mut self, _rid: usize, _t: f64) {
        self.arrivals += 1;
    }
    fn rejected(&mut self, _rid: usize, _t: f64) {
        self.rejected += 1;
    }
    fn finish(&mut self, _rid: usize, t: f64) {
        self.finishes += 1;
        self.last_finish = self.last_finish.max(t);
    }
    fn step(&mut self, ev: &StepEvent) {
        match ev.kind {
            StepKind::Prefill => self.prefill_steps += 1,
            StepKind::Decode => {
                self.decode_steps += 1;
                self.decode_tokens += ev.tokens;
            }
        }
    }
    fn transfer(&mut self, _ev: &TransferEvent) {
        self.transfers += 1;
    }
    fn end(&mut self, h: f64) {
        self.ended = Some(h);
    }
}

#[test]
fn observer_sees_every_event_and_changes_nothing() {
    for fast in [true, false] {
        let c = chapter(if fast { &["--fast"][..] } else { &[][..] });
        let wl = c.generate_workload();
        let mut o = Counter::default();
        let a = simulate_observed(&c, &wl, &mut o).unwrap();
        let b = simulate(&c, &wl).unwrap();
        assert_eq!(json(&a.summary()), json(&b.summary()));
        assert_eq!(o.arrivals, 800);
        assert_eq!(o.finishes, 800);
        assert_eq!(o.transfers, 800);
        assert_eq!(o.prefill_steps, 702);
        assert_eq!(o.decode_steps, 13_859);
        assert_eq!(o.decode_tokens, 205_435);
        assert_eq!(o.ended, Some(a.horizon()));
        // The last finish is the horizon (fast path: up to the clock re-basing ulp).
        assert!((o.last_finish - a.horizon()).abs() <= 1e-12);
    }
}

#[test]
fn chrome_trace_is_valid_and_complete() {
    let c = chapter(&["--fast", "--requests", "200"]);
    let wl = c.generate_workload();
    let mut tr = ChromeTrace::new(Vec::new());
    let r = simulate_observed(&c, &wl, &mut tr).unwrap();
    let bytes = tr.finish().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(v["displayTimeUnit"], "ms");
    let ev = v["traceEvents"].as_array().unwrap();
    // The sampler runs at t = 0 before any step ends: "counters" is track 1.
    assert_eq!(ev[0]["ph"], "M");
    assert_eq!(ev[0]["args"]["name"], "counters");
    assert_eq!(ev[0]["pid"], 1);
    let count = |ph: &str, cat: Option<&str>| {
        ev.iter()
            .filter(|e| {
                e["ph"] == ph
                    && match cat {
                        None => true,
                        Some(c) => e["cat"] == c,
                    }
            })
            .count()
    };
    let s = r.summary();
    assert_eq!(count("X", Some("prefill")) as u64, s.instances[0].steps);
    assert_eq!(count("X", Some("decode")) as u64, s.instances[1].steps);
    assert_eq!(count("X", Some("kv")), 200);
    assert_eq!(count("M", None), 4); // counters, prefill-0, kv-link, decode-0
    let counters = count("C", None);
    let expect = (r.horizon() / 0.05).floor() as usize + 1;
    assert!(counters.abs_diff(expect) <= 1, "{counters} vs {expect}");
    // A slice in microseconds, with the reference's labels.
    let first_prefill = ev.iter().find(|e| e["cat"] == "prefill").unwrap();
    let rec = r.request(0);
    assert_eq!(
        first_prefill["ts"].as_f64().unwrap(),
        rec.prefill_start_s.unwrap() * 1e6
    );
    assert!(first_prefill["name"]
        .as_str()
        .unwrap()
        .starts_with("prefill n=1 tok="));
    let kv = ev.iter().find(|e| e["cat"] == "kv").unwrap();
    assert_eq!(kv["name"], "kv r0 162 MB"); // 1236 tokens x 131072 B
                                            // The population counter is the number of requests arrived and not finished (from the
                                            // stamps) at every sample; it starts at 0, stays above 0 while requests are in the system
                                            // (here: after the first arrival, until the end), and returns to 0 at the horizon, when the
                                            // last request finishes (the sampler stops there: its last sample still counts that one).
    let pop: Vec<(f64, i64)> = ev
        .iter()
        .filter(|e| e["ph"] == "C")
        .map(|e| {
            (
                e["ts"].as_f64().unwrap() / 1e6,
                e["args"]["in_system"].as_i64().unwrap(),
            )
        })
        .collect();
    let in_system_at = |t: f64| {
        r.requests()
            .filter(|q| q.arrival_s <= t && !matches!(q.finish_s, Some(f) if f <= t))
            .count() as i64
    };
    assert_eq!(pop[0], (0.0, 0));
    for &(t, n) in &pop {
        assert_eq!(n, in_system_at(t), "at {t} s");
        assert!(t == 0.0 || n > 0, "empty at {t} s");
    }
    assert_eq!(pop[pop.len() - 1].1, 1);
    assert_eq!(in_system_at(r.horizon()), 0);
}

#[test]
fn time_series_samples_every_50_ms() {
    let c = chapter(&["--fast", "--requests", "100"]);
    let mut ts = TimeSeries::default();
    let r = simulate_observed(&c, &c.generate_workload(), &mut ts).unwrap();
    assert_eq!(ts.instances.len(), 2);
    assert_eq!(ts.rows[0].t, 0.0);
    assert_eq!(ts.rows[0].in_system, 0);
    let mut t = 0.0;
    for row in &ts.rows {
        assert_eq!(row.t, t);
        t += 0.05;
        assert!(row.in_system >= 0 && row.in_system <= 100);
        assert!(row.instances[1].kv_used <= row.instances[1].kv_cap);
    }
    assert!(t > r.horizon());
}

#[track_caller]
fn err(flags: &[&str]) -> String {
    let sc = match Scenario::from_flags(flags) {
        Ok(s) => s,
        Err(e) => return e.to_string(),
    };
    match sc.build(&Catalogue::builtin()) {
        Ok(_) => panic!("{flags:?} should be rejected"),
        Err(e) => {
            let s = e.to_string();
            assert!(!s.contains('\n'), "one line: {s}");
            s
        }
    }
}

#[test]
fn validation_names_the_option() {
    let e = err(&["--model", "gpt-5"]);
    assert!(
        e.contains("--model") && e.contains("llama3-8b") && e.contains("gpt-5"),
        "{e}"
    );
    let e = err(&["--device", "tpu"]);
    assert!(e.contains("--device") && e.contains("h100"), "{e}");
    let e = err(&["--prefill-device", "tpu"]);
    assert!(e.contains("--prefill-device"), "{e}");
    let e = err(&["--link", "carrier-pigeon"]);
    assert!(e.contains("--link") && e.contains("eth-25g"), "{e}");
    let e = err(&["--kv-compress", "zip"]);
    assert!(e.contains("--kv-compress") && e.contains("fp8"), "{e}");
    let e = err(&["--kv-compress", "fp8", "--kv-compress-at", "moon"]);
    assert!(e.contains("--kv-compress-at"), "{e}");
    let e = err(&["--mode", "mixed"]);
    assert!(e.contains("--mode") && e.contains("colocated"), "{e}");
    let e = err(&["--prefill-lm-head", "first"]);
    assert!(e.contains("--prefill-lm-head"), "{e}");
    for (flag, bad) in [
        ("--rate", "0"),
        ("--rate", "-1"),
        ("--rate", "inf"),
        ("--rate", "nan"),
        ("--ttft-slo", "0"),
        ("--tpot-slo", "-0.1"),
        ("--prompt", "0"),
        ("--output", "nan"),
        ("--power-cap", "0"),
    ] {
        let e = err(&[flag, bad]);
        assert!(e.starts_with(flag), "{flag} {bad}: {e}");
    }
    for (flag, bad) in [("--prompt-cv", "-0.5"), ("--output-cv", "inf")] {
        let e = err(&[flag, bad]);
        assert!(e.starts_with(flag), "{e}");
    }
    assert!(err(&["--requests", "0"]).starts_with("--requests"));
    assert!(err(&["--requests", "50000001"]).starts_with("--requests"));
    assert!(err(&["--link-channels", "0"]).starts_with("--link-channels"));
    assert!(err(&["--devices-per-instance", "0"]).starts_with("--devices-per-instance"));
    assert!(err(&["--prefill", "0"]).starts_with("--prefill"));
    assert!(err(&["--decode", "0"]).starts_with("--decode"));
    assert!(
        err(&["--mode", "colocated", "--prefill", "0", "--decode", "0"]).starts_with("--prefill")
    );
    let e = err(&["--devices-per-instance", "1"]);
    assert!(
        e.starts_with("--model") && e.contains("does not fit"),
        "{e}"
    );
    let e = err(&["--decode-devices-per-instance", "1"]);
    assert!(e.contains("does not fit") && e.contains("decode"), "{e}");
    let e = err(&["--power-cap", "50"]);
    assert!(e.starts_with("--power-cap") && e.contains("idle"), "{e}");
    let e = err(&["--decode-power-cap", "80"]);
    assert!(e.starts_with("--decode-power-cap"), "{e}");
    let e = err(&["--mode", "colocated", "--kv-compress", "fp8"]);
    assert!(e.starts_with("--kv-compress"), "{e}");
    assert!(err(&["--warp-drive", "1"]).contains("--warp-drive"));
    assert!(err(&["--rate"]).contains("--rate"));
    assert!(err(&["--rate", "fast"]).contains("--rate"));
    // Valid corner cases build.
    cfg(&["--mode", "colocated", "--prefill", "0", "--decode", "1"]);
    cfg(&["--prompt-cv", "0", "--output-cv", "0"]);
}

#[test]
fn scenario_serde_round_trip_and_strictness() {
    let sc = Scenario::from_flags([
        "--model=llama3-8b",
        "--devices-per-instance",
        "1",
        "--kv-compress",
        "fp8",
        "--fast",
    ])
    .unwrap();
    let text = serde_json::to_string(&sc).unwrap();
    assert!(text.contains("\"devices_per_instance\":1"));
    let back: Scenario = serde_json::from_str(&text).unwrap();
    assert_eq!(back, sc);
    // Missing fields take the reference defaults; unknown fields are refused.
    let d: Scenario = serde_json::from_str("{\"rate\": 6.0}").unwrap();
    assert_eq!(
        d,
        Scenario {
            rate: 6.0,
            ..Scenario::default()
        }
    );
    assert!(serde_json::from_str::<Scenario>("{\"rates\": 6.0}").is_err());
    let def = Scenario::default();
    assert_eq!(
        (
            def.model.as_str(),
            def.device.as_str(),
            def.devices_per_instance,
            def.mode.as_str()
        ),
        ("llama3-70b", "h100", 4, "disagg")
    );
    assert_eq!(
        (
            def.prefill,
            def.decode,
            def.link.as_str(),
            def.link_channels
        ),
        (1, 1, "ib-ndr", 1)
    );
    assert_eq!(
        (def.rate, def.requests, def.prompt, def.prompt_cv),
        (4.0, 800, 2048.0, 0.5)
    );
    assert_eq!(
        (
            def.output,
            def.output_cv,
            def.slos().0,
            def.slos().1,
            def.seed
        ),
        (256.0, 0.5, 1.0, 0.025, 1)
    );
    assert_eq!(def.kv_compress, None);
    assert_eq!(def.kv_compress_at.as_str(), "transit");
}

#[test]
fn kv_compress_none_is_a_stage_and_absent_is_not() {
    let plain = chapter(&["--fast", "--link", "eth-25g"]);
    assert!(plain.kv_transit.is_none());
    let none = chapter(&["--fast", "--link", "eth-25g", "--kv-compress", "none"]);
    assert!(none.kv_transit.is_some());
    let (a, b) = (run(&plain).summary(), run(&none).summary());
    // In transit the identity preset still adds 1 us and 1 pJ per input bit (`docs/cost-model.md#compression`).
    assert_eq!(a.handoff_s.p99, 0.4719423627574439);
    assert_eq!(b.handoff_s.p99, 0.47195731275744857);
    assert!(b.energy.transit_frac.is_some() && a.energy.transit_frac.is_none());
}

#[test]
fn rejection_against_the_decode_kv_capacity() {
    // 70B on 2xH100 holds 8,835 tokens: prompt + output above that is rejected at arrival.
    let c = cfg(&[
        "--devices-per-instance",
        "2",
        "--requests",
        "300",
        "--prompt",
        "6000",
        "--fast",
    ]);
    assert_eq!(c.decode_pool().unwrap().kv_capacity_tokens, 8_835);
    let wl = c.generate_workload();
    let too_big = wl
        .iter()
        .filter(|w| (w.prompt_len + w.output_len) as u64 > 8_835)
        .count() as u64;
    assert!(too_big > 0);
    let r = simulate(&c, &wl).unwrap();
    let s = r.summary();
    assert_eq!(s.requests.rejected, too_big);
    assert_eq!(s.requests.completed + too_big, 300);
    assert_eq!(r.len(), wl.len());
    for (rec, w) in r.requests().zip(&wl) {
        let rejected = (w.prompt_len + w.output_len) as u64 > 8_835;
        assert_eq!(rec.finish_s.is_none(), rejected);
        assert_eq!(rec.prefill_start_s.is_none(), rejected);
    }
    // Same for colocated.
    let c = cfg(&[
        "--mode",
        "colocated",
        "--devices-per-instance",
        "2",
        "--requests",
        "300",
        "--prompt",
        "6000",
    ]);
    let s = run(&c).summary();
    assert_eq!(s.requests.rejected, too_big);
}

#[test]
fn replay_edge_cases() {
    let c = chapter(&["--fast"]);
    let wl = vec![
        GenRequest {
            rid: 0,
            arrival_s: 0.0,
            prompt_len: 100,
            output_len: 1,
        },
        GenRequest {
            rid: 1,
            arrival_s: 0.0,
            prompt_len: 9000,
            output_len: 0,
        },
        GenRequest {
            rid: 2,
            arrival_s: 0.0,
            prompt_len: 50,
            output_len: 2,
        },
        GenRequest {
            rid: 3,
            arrival_s: 0.5,
            prompt_len: 10,
            output_len: 3,
        },
        // Out of order arrival: it waits max(0, arrival - now) = 0.
        GenRequest {
            rid: 4,
            arrival_s: 0.25,
            prompt_len: 10,
            output_len: 4,
        },
    ];
    for fast in [true, false] {
        let mut c = c.clone();
        c.fast_forward = fast;
        let r = simulate(&c, &wl).unwrap();
        let s = r.summary();
        assert_eq!(s.requests.completed, 5);
        // Single-token outputs finish at the end of their prefill and are never handed off.
        for rid in [0, 1] {
            let q = r.request(rid);
            assert_eq!(q.finish_s, q.first_token_s);
            assert!(q.kv_start_s.is_none() && q.decode_start_s.is_none());
            assert!(r.itls(rid).is_empty());
        }
        // The 9,000-token prompt is over the 8,192 budget: it forms a batch with rid 0 only
        // because rid 0 came first (FIFO; the first member always enters).
        assert_eq!(
            r.request(1).prefill_start_s,
            Some(r.request(0).first_token_s.unwrap())
        );
        assert_eq!(r.itls(2).len(), 1);
        assert_eq!(r.request(4).arrival_s, 0.25);
        assert!(r.request(4).prefill_start_s.unwrap() >= 0.5);
    }
    // Empty workload.
    let r = simulate(&c, &[]).unwrap();
    assert_eq!(r.horizon(), 0.0);
    let s = r.summary();
    assert_eq!(s.requests.completed, 0);
    assert!(s.ttft_s.p99.is_nan());
    let text = json(&s);
    assert!(text.contains("\"p99\":null"));
    // Bad arrival.
    let bad = [GenRequest {
        rid: 0,
        arrival_s: f64::NAN,
        prompt_len: 1,
        output_len: 1,
    }];
    assert!(matches!(simulate(&c, &bad), Err(Error::Invalid { .. })));
}

#[test]
fn colocated_golden_numbers_survive_instance_count_change() {
    // --prefill 2 --decode 1 in colocated mode: three instances, load spread.
    let c = cfg(&["--mode", "colocated", "--prefill", "2", "--requests", "200"]);
    let s = run(&c).summary();
    assert_eq!(s.instances.len(), 3);
    assert!(s
        .instances
        .iter()
        .all(|i| i.name.starts_with("colocated-") && i.steps > 0));
    assert_eq!(s.link.transfers, 0);
    assert!(s.handoff_s.p99.is_nan());
}

#[test]
fn analytic_bounds_and_bisection() {
    let c = chapter(&["--fast", "--requests", "200", "--link", "eth-25g"]);
    let a = analytic_capacity(&c).unwrap();
    let cm = &c.base_cost.as_ref().unwrap();
    let pr = 4.0 / cm.prefill([2048u64; 4]).time_s;
    assert_eq!(a.prefill_rps, Some(pr));
    let b: u64 = 426_788 / 2304; // KV-bound batch (185 < 256)
    let dr = b as f64 / cm.decode_sum(2176 * b, b).time_s / 255.0;
    assert_eq!(a.decode_rps, Some(dr));
    let kr = 1.0 / c.link.transfer_time(2048.0 * c.model.kv_bytes_per_token());
    assert_eq!(a.kv_link_rps, Some(kr));
    assert_eq!(a.bottleneck, "kv-link");
    assert_eq!(a.ceiling_rps, kr);
    let m = max_sustainable_rate(&c, 0.9, 0.05, 0.0, None).unwrap();
    let (lo, hi) = m.bracket;
    assert_eq!(m.rate, lo);
    assert!(hi - lo <= 0.05 * hi && lo < hi);
    assert!(disagg_sim::search::attainment_at(&c, lo).unwrap() >= 0.9 || lo == 0.0);
    assert!(disagg_sim::search::attainment_at(&c, hi).unwrap() < 0.9);
    assert!(m.simulations >= 2);
    let col = analytic_capacity(&cfg(&["--mode", "colocated"])).unwrap();
    assert_eq!(col.bottleneck, "colocated");
    assert!(col.prefill_rps.is_none() && col.colocated_rps.is_some());
}

#[test]
fn csv_export_round_trips() {
    let c = chapter(&["--fast", "--requests", "50"]);
    let r = run(&c);
    let mut buf = Vec::new();
    r.write_csv(&mut buf).unwrap();
    let text = String::from_utf8(buf).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next().unwrap(),
        "rid,arrival_s,prompt_len,output_len,prefill_start_s,first_token_s,kv_start_s,kv_ready_s,decode_start_s,finish_s"
    );
    assert_eq!(text.lines().count(), 1 + r.len());
    assert_eq!(r.len(), 50);
    for (line, rec) in lines.zip(r.requests()) {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells.len(), 10);
        assert_eq!(cells[0].parse::<usize>().unwrap(), rec.rid);
        assert_eq!(cells[1].parse::<f64>().unwrap(), rec.arrival_s);
        assert_eq!(cells[9].parse::<f64>().unwrap(), rec.finish_s.unwrap());
    }
}

/// Records samples like [`TimeSeries`] but lets the sampler skip event-free stretches.
#[derive(Default)]
struct SkippingSeries(TimeSeries);

impl Observer for SkippingSeries {
    fn wants_samples(&self) -> bool {
        true
    }
    fn sample(&mut self, s: &disagg_sim::Sample<'_>) {
        self.0.sample(s)
    }
}

/// The sampler skips the samples of an event-free stretch; read as a step function (a value holds
/// until the next sample) its series equals the reference's one-row-per-interval series at every
/// interval, and a very slow arrival rate no longer takes one sample per 50 ms of silence.
#[test]
fn the_sampler_skips_only_samples_that_cannot_differ() {
    for flags in [
        vec!["--rate", "0.01", "--requests", "20"],
        vec!["--rate", "8", "--requests", "200"],
        vec!["--rate", "0.005", "--requests", "10", "--mode", "colocated"],
    ] {
        let c = chapter(&flags);
        let wl = c.generate_workload();
        let mut every = TimeSeries::default();
        let a = simulate_observed(&c, &wl, &mut every).unwrap();
        let mut skip = SkippingSeries::default();
        let b = simulate_observed(&c, &wl, &mut skip).unwrap();
        assert_eq!(json(&a.summary()), json(&b.summary()), "{flags:?}");
        let (every, skip) = (&every.rows, &skip.0.rows);
        assert!(skip.len() <= every.len(), "{flags:?}");
        let mut k = 0;
        for row in every {
            // The last skipping-sampler row at or before this instant.
            while k + 1 < skip.len() && skip[k + 1].t <= row.t {
                k += 1;
            }
            let held = &skip[k];
            assert!(held.t <= row.t, "{flags:?}");
            let strip = |r: &disagg_sim::SampleRow| {
                (
                    r.in_system,
                    r.link_queue,
                    r.link_busy,
                    r.link_bytes_in_flight.to_bits(),
                    r.decode_mem_wait,
                    r.instances.clone(),
                )
            };
            assert_eq!(strip(held), strip(row), "{flags:?} at t = {}", row.t);
        }
        if flags[1] == "8" {
            // No event-free stretch of 50 s: every interval is sampled, as the reference does.
            assert_eq!(skip, every, "{flags:?}");
        } else {
            assert!(
                skip.len() * 5 < every.len(),
                "{flags:?}: {} of {} samples",
                skip.len(),
                every.len()
            );
        }
    }
    // 50 requests at 1e-6 req/s span ~5e7 s: 1e9 samples at 50 ms; now a few per request.
    let c = chapter(&["--requests", "50"]);
    let mut c = c;
    c.workload = c.workload.at_rate(1e-6);
    let mut skip = SkippingSeries::default();
    simulate_observed(&c, &c.generate_workload(), &mut skip).unwrap();
    let n = skip.0.rows.len();
    assert!(n > 50 && n < 50 * 2_000, "{n} samples");
}
