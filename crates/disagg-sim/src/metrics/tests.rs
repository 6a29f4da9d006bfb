//! Summary metrics of hand-built run records (`docs/serving-model.md#metrics`): every request stamp, step
//! total and link total below is chosen by hand (dyadic times, so the arithmetic is exact),
//! and every expected value is counted by hand or is the spec's formula written out.

use super::*;
use crate::engine::request::Req;
use crate::scenario::SimConfig;
use crate::scenario::{Role, Scenario};
use crate::serving::{InstanceResult, InstanceStats, LinkResult, LinkStats};

const NAN: f64 = f64::NAN;

fn cfg(flags: &[&str]) -> SimConfig {
    Scenario::from_flags(flags.iter().copied())
        .unwrap()
        .build(&disagg_model::Catalogue::builtin())
        .unwrap()
}

/// A request record with the given stamps: no decode-memory reservation, no decode steps.
#[allow(clippy::too_many_arguments)]
fn req(
    arrival: f64,
    prefill_start: f64,
    first_token: f64,
    kv_start: f64,
    kv_ready: f64,
    decode_start: f64,
    finish: f64,
    output: u32,
) -> Req {
    Req {
        arrival,
        prefill_start,
        first_token,
        kv_start,
        kv_ready,
        decode_start,
        finish,
        kv_req: NAN,
        kv_mem: NAN,
        prefill_done: NAN,
        adm: 0,
        prompt: 100,
        output,
        dinst: u32::MAX,
        dtarget: u32::MAX,
        units: 0,
    }
}

/// The main fixture's request shape: prefill queue `q`, prefill 0.5 s, KV wait 0.125 s,
/// transfer 0.25 s, decode queue 0.125 s, decode `d`. So TTFT = q + 0.5,
/// E2E = q + 1 + d, TPOT = (0.5 + d) / (output - 1), hand-off = 0.375.
fn staged(a: f64, q: f64, d: f64, output: u32) -> Req {
    let ps = a + q;
    let ft = ps + 0.5;
    let ks = ft + 0.125;
    let kr = ks + 0.25;
    let ds = kr + 0.125;
    req(a, ps, ft, ks, kr, ds, ds + d, output)
}

fn run(cfg: SimConfig, reqs: Vec<Req>, horizon: f64) -> RunResult {
    RunResult {
        cfg,
        reqs,
        step_ends: vec![],
        instances: vec![],
        link: LinkStats::default(),
        links: vec![],
        horizon,
        area: 0.0,
        rejected: 0,
        events: 0,
        closed_turns: 0,
        clipped_prompts: 0,
        sched: None,
    }
}

fn inst(name: &str, role: Role, pool: usize, stats: InstanceStats) -> InstanceResult {
    InstanceResult {
        name: name.into(),
        role,
        pool,
        stats,
    }
}

fn busy(busy_s: f64) -> InstanceStats {
    InstanceStats {
        busy_s,
        ..InstanceStats::default()
    }
}

/// Ten finished requests given in *decreasing* arrival order (so the arrival sort matters),
/// one unfinished request, 3 rejections; 4 prefill instances, 1 decode instance, 4 links
/// with 2 channels each; horizon 20 s; SLOs 1 s TTFT (default) and 0.25 s TPOT.
///
/// | rid | arrival | q    | d    | output | TTFT | TPOT       | E2E  | SLO  |
/// |-----|---------|------|------|--------|------|------------|------|------|
/// | 9   | 0       | 10   | 1    | 7      | 10.5 | warm-up (cut = floor(10 x 0.1) = 1) |
/// | 8   | 1       | 0.25 | 1    | 7      | 0.75 | 1.5/6=0.25 | 2.25 | met  |
/// | 7   | 2       | 0.75 | 1    | 7      | 1.25 | 0.25       | 2.75 | TTFT |
/// | 6   | 3       | 0.5  | 1    | 7      | 1.0  | 0.25       | 2.5  | met (ties) |
/// | 5   | 4       | 0.25 | 1.5  | 5      | 0.75 | 2/4=0.5    | 2.75 | TPOT |
/// | 4   | 5       | 0.25 | 0.5  | 2      | 0.75 | 1/1=1.0    | 1.75 | TPOT |
/// | 3   | 6       | 0.25 | 0.25 | 1      | 0.75 | -          | 1.5  | met  |
/// | 2   | 7       | 0.25 | 1    | 7      | 0.75 | 0.25       | 2.25 | met  |
/// | 1   | 8       | 0.25 | 1    | 7      | 0.75 | 0.25       | 2.25 | met  |
/// | 0   | 9       | 0.25 | 1    | 7      | 0.75 | 0.25       | 2.25 | met  |
fn main_run() -> RunResult {
    let c = cfg(&[
        "--prefill",
        "4",
        "--link-channels",
        "2",
        "--link-topology",
        "per-pair",
        "--tpot-slo",
        "0.25",
    ]);
    let mut reqs = vec![
        staged(9.0, 0.25, 1.0, 7),
        staged(8.0, 0.25, 1.0, 7),
        staged(7.0, 0.25, 1.0, 7),
        staged(6.0, 0.25, 0.25, 1),
        staged(5.0, 0.25, 0.5, 2),
        staged(4.0, 0.25, 1.5, 5),
        staged(3.0, 0.5, 1.0, 7),
        staged(2.0, 0.75, 1.0, 7),
        staged(1.0, 0.25, 1.0, 7),
        staged(0.0, 10.0, 1.0, 7),
    ];
    // Unfinished, but its KV landed: its hand-off (0.75 s) counts, nothing else does.
    reqs.push(req(4.5, 4.75, 5.0, 5.0, 5.75, NAN, NAN, 7));
    let mut r = run(c, reqs, 20.0);
    let st = |busy_s, steps, batch_sum, cb, pb, flops, bytes, cj, mj, peak| InstanceStats {
        busy_s,
        steps,
        compute_bound_s: cb,
        power_bound_s: pb,
        flops,
        bytes,
        batch_sum,
        compute_j: cj,
        memory_j: mj,
        peak_power_w: peak,
        // Scale-up energy without a layout is never added (the run below has none).
        comm_s: 1.0,
        comm_j: 2.0,
        // Nor optical energy without an engine device.
        optical_bound_s: 0.5,
        optical_flops: 4.0,
        optical_j: 3.0,
    };
    r.instances = vec![
        inst(
            "prefill-0",
            Role::Prefill,
            0,
            st(5.0, 10, 25, 4.0, 1.0, 4e15, 2e12, 100.0, 50.0, 700.0),
        ),
        inst(
            "prefill-1",
            Role::Prefill,
            0,
            st(15.0, 4, 6, 7.5, 0.0, 8e15, 1e12, 200.0, 25.0, 650.0),
        ),
        inst(
            "prefill-2",
            Role::Prefill,
            0,
            st(15.0, 3, 3, 15.0, 3.75, 6e15, 3e12, 300.0, 12.5, 600.0),
        ),
        inst("prefill-3", Role::Prefill, 0, InstanceStats::default()),
        inst(
            "decode-0",
            Role::Decode,
            1,
            st(19.0, 38, 95, 0.0, 9.5, 1e15, 5e13, 40.0, 400.0, 900.0),
        ),
    ];
    r.link = LinkStats {
        busy_s: 144.0,
        bytes: 3.2e10,
        transfers: 11,
        wait_s: 2.75,
        energy_j: 8.0,
        handoff_bytes: 0.0,
        transit_j: 0.75,
        transit_bound: 3,
        handoff_bytes_saved: None,
    };
    let link = |name: &str, busy_s, transfers| LinkResult {
        name: name.into(),
        busy_s,
        bytes: 1e9 * transfers as f64,
        transfers,
    };
    r.links = vec![
        link("kv-link-p0-d0", 40.0, 4),
        link("kv-link-p1-d0", 36.0, 3),
        link("kv-link-p2-d0", 36.0, 3),
        link("kv-link-p3-d0", 32.0, 1),
    ];
    r.area = 30.0;
    r.rejected = 3;
    r
}

fn dist_of(mean: f64, p50: f64, p90: f64, p99: f64, max: f64) -> Dist {
    Dist {
        mean,
        p50,
        p90,
        p99,
        max,
    }
}

#[test]
fn main_fixture_latencies_and_slos() {
    let r = main_run();
    let s = r.summary();
    assert_eq!(
        s.requests,
        RequestCounts {
            completed: 10,
            rejected: 3,
            measured: 9
        }
    );
    // TTFT sorted: 0.75 x 7, 1.0, 1.25; n - 1 = 8: k = 4, 7.2, 7.92; mean 7.5 / 9.
    assert_eq!(
        s.ttft_s,
        dist_of(
            7.5 / 9.0,
            0.75,
            1.0 + (1.25 - 1.0) * (7.2 - 7.0),
            1.0 + (1.25 - 1.0) * (7.92 - 7.0),
            1.25
        )
    );
    // TPOT (output >= 2, so rid 3 is out): 0.25 x 6, 0.5, 1.0; n - 1 = 7: k = 3.5, 6.3,
    // 6.93; mean (1.5 + 0.5 + 1.0) / 8.
    assert_eq!(
        s.tpot_s,
        dist_of(
            3.0 / 8.0,
            0.25,
            0.5 + (1.0 - 0.5) * (6.3 - 6.0),
            0.5 + (1.0 - 0.5) * (6.93 - 6.0),
            1.0
        )
    );
    // E2E sorted: 1.5, 1.75, 2.25 x 4, 2.5, 2.75 x 2; sum 20.25, mean 2.25; k = 4 -> 2.25,
    // k = 7.2 and 7.92 between the two 2.75s.
    assert_eq!(s.e2e_s, dist_of(2.25, 2.25, 2.75, 2.75, 2.75));
    // No decode-step data: no ITL.
    assert!(s.itl_s.mean.is_nan() && s.itl_s.max.is_nan());
    // Hand-offs of every request with a KV (warm-up and unfinished included): 0.375 x 10 and
    // 0.75; n - 1 = 10: p50 k = 5, p99 k = 9.9.
    assert_eq!(
        s.handoff_s,
        P50P99 {
            p50: 0.375,
            p99: 0.375 + (0.75 - 0.375) * (9.9 - 9.0)
        }
    );
    assert_eq!(s.decode_mem_wait_s, None);
    assert_eq!(s.slo_met, 6);
    // `met_slos` per request: the same 6 of the measured requests.
    assert_eq!(m_rids_met(&r), 6);
    assert_eq!(s.slo_attainment, 6.0 / 9.0);
    assert_eq!(r.slo_attainment(), 6.0 / 9.0);
    // Offered: 6 / (9 measured + 3 rejected).
    assert_eq!(s.slo_attainment_offered, 0.5);
    // Goodput: 6 met over the measured arrival span 9 - 1 = 8 s.
    assert_eq!(s.goodput_rps, 0.75);
    // Output tokens of all 10 finished: 7 x 7 + 5 + 2 + 1 = 57, over 20 s.
    assert_eq!(s.throughput_tok_s, 57.0 / 20.0);
    assert_eq!(s.throughput_rps, 0.5);
    assert_eq!(s.first_token, FirstToken::Prefill);
    assert_eq!(s.mode, Mode::Disagg);
    assert_eq!(s.schema_version, SCHEMA_VERSION);
    assert!(s.warnings.is_empty());
    assert_eq!(s.workload.clipped_prompts, 0);
    assert_eq!(s.workload.prompt_cap_tokens, None);
    // Little's law: area / H; (10 / 20) x mean E2E of all 10 = (20.25 + 12) / 10.
    assert_eq!(
        s.littles_law,
        LittlesLaw {
            l_measured: 1.5,
            lambda_w: 0.5 * (32.25 / 10.0)
        }
    );

    let m = r.measured_latencies();
    assert_eq!(m.rids, vec![8, 7, 6, 5, 4, 3, 2, 1, 0]);
    assert_eq!(
        m.ttft_s,
        vec![0.75, 1.25, 1.0, 0.75, 0.75, 0.75, 0.75, 0.75, 0.75]
    );
    assert_eq!(m.tpot_s, vec![0.25, 0.25, 0.25, 0.5, 1.0, 0.25, 0.25, 0.25]);
    assert_eq!(
        m.e2e_s,
        vec![2.25, 2.75, 2.5, 2.75, 1.75, 1.5, 2.25, 2.25, 2.25]
    );
}

#[test]
fn main_fixture_stages_and_hotspot() {
    let s = main_run().summary();
    // Means over the 9 measured: queue (0.25 x 6 + 0.75 + 0.5) / 9 = 3 / 9; prefill 0.5;
    // KV wait 0.125; transfer 0.25; decode queue 0.125; decode (1 x 6 + 1.5 + 0.5 + 0.25) / 9.
    let means = [3.0 / 9.0, 0.5, 0.125, 0.25, 0.125, 8.25 / 9.0];
    assert_eq!(s.stage_breakdown_s.as_array(), means);
    let share = means.map(|v| v / 2.25);
    assert_eq!(s.stage_share.as_array(), share);
    assert_eq!(s.stage_share.kv_wait, 0.125 / 2.25);
    assert_eq!(s.kv_share_of_e2e, 0.125 / 2.25 + 0.25 / 2.25);
    // Largest stage mean (decode excluded) is prefill; its owner's busiest instance is
    // prefill-1 (0.75; prefill-2 ties at 0.75 later, prefill-0 0.25, prefill-3 0).
    // Over 90%: decode-0 (19/20 = 0.95); kv-link is exactly 144 / (2 x 4 x 20) = 0.9.
    assert_eq!(
        s.hotspot,
        Hotspot {
            stage: Some("prefill".into()),
            resource: "prefill-1".into(),
            resource_util: 0.75,
            busy_over_90pct: vec!["decode-0".into()],
        }
    );
    assert_eq!(s.link_busy, 0.9);
}

#[test]
fn main_fixture_energy_instances_and_link() {
    let r = main_run();
    let s = r.summary();
    let h = 20.0;
    let (ip, id) = (r.cfg.pools[0].cost.idle_w(), r.cfg.pools[1].cost.idle_w());
    assert!(ip > 0.0 && id > 0.0);
    // Left-to-right sums in instance order, as `docs/cost-model.md#energy` says.
    let static_j = 0.0 + ip * h + ip * h + ip * h + ip * h + id * h;
    let compute_j = 0.0 + 100.0 + 200.0 + 300.0 + 0.0 + 40.0;
    let memory_j = 0.0 + 50.0 + 25.0 + 12.5 + 0.0 + 400.0;
    // Without a compression stage the link stats' transit_j (0.75) is not added.
    let total = static_j + compute_j + memory_j + 8.0;
    assert_eq!(
        s.energy,
        Energy {
            total_j: total,
            static_j,
            compute_j,
            memory_j,
            link_j: 8.0,
            transit_j: 0.75,
            static_frac: static_j / total,
            compute_frac: compute_j / total,
            memory_frac: memory_j / total,
            link_frac: 8.0 / total,
            transit_frac: None,
            swap_j: None,
            swap_frac: None,
            scale_up_j: None,
            scale_up_frac: None,
            optical_static_j: None,
            optical_static_frac: None,
            optical_conversions_j: None,
            optical_conversions_frac: None,
        }
    );
    assert!(s.optical.is_none() && s.ppa.is_none());
    assert_eq!(s.j_per_token, total / 57.0);
    assert_eq!(s.tokens_per_j, 57.0 / total);
    assert_eq!(s.j_per_slo_met_request, total / 6.0);
    assert_eq!(s.avg_power_w, total / h);
    // (link J + transit J) / transfers.
    assert_eq!(s.link_j_per_request, (8.0 + 0.75) / 11.0);
    assert_eq!(
        s.link,
        LinkSummary {
            bytes: 3.2e10,
            transfers: 11,
            wait_s: 2.75,
            mean_wait_s: 2.75 / 11.0,
            achieved_bps: 3.2e10 / h,
            busy_s: 144.0,
            energy_j: 8.0,
            handoff_bytes: 0.0,
            transit_j: 0.75,
            transit_bound: 3,
            transit_bound_frac: 3.0 / 11.0,
            compression: None,
            compress_at: None,
            compression_ratio: None,
            handoff_bytes_saved: None,
        }
    );
    // Per link: busy / (2 channels x 20 s).
    let utils: Vec<(String, f64, u64)> = s
        .links
        .iter()
        .map(|l| (l.name.clone(), l.utilisation, l.transfers))
        .collect();
    assert_eq!(
        utils,
        vec![
            ("kv-link-p0-d0".to_string(), 1.0, 4),
            ("kv-link-p1-d0".to_string(), 0.9, 3),
            ("kv-link-p2-d0".to_string(), 0.9, 3),
            ("kv-link-p3-d0".to_string(), 0.8, 1),
        ]
    );
    assert_eq!((s.links[3].busy_s, s.links[3].bytes), (32.0, 1e9));

    let pd = &r.cfg.pools[0];
    let dd = &r.cfg.pools[1];
    let n = pd.devices as f64;
    assert_eq!(n, 4.0);
    let p0 = &s.instances[0];
    assert_eq!(p0.name, "prefill-0");
    assert_eq!(p0.role, Role::Prefill);
    assert_eq!(p0.device, pd.device.key);
    assert_eq!(p0.device_name, pd.device.name);
    assert_eq!(p0.devices, 4);
    assert_eq!(p0.utilisation, 0.25);
    assert_eq!(p0.mfu, 4e15 / (h * pd.device.peak_flops * n));
    assert_eq!(p0.mbu, 2e12 / (h * pd.device.mem_bw * n));
    assert_eq!(p0.mean_batch, 2.5);
    assert_eq!(p0.steps, 10);
    assert_eq!(p0.busy_s, 5.0);
    assert_eq!(p0.compute_bound_frac, 0.8);
    assert_eq!(p0.power_bound_frac, 0.2);
    assert_eq!(p0.avg_w, (ip * h + 100.0 + 50.0) / h);
    assert_eq!(p0.peak_step_w, 700.0);
    assert_eq!((p0.compute_j, p0.memory_j), (100.0, 50.0));
    assert_eq!(p0.kv_capacity_tokens, pd.kv_capacity_tokens);
    let p2 = &s.instances[2];
    assert_eq!((p2.mean_batch, p2.compute_bound_frac), (1.0, 1.0));
    assert_eq!(p2.power_bound_frac, 0.25);
    // An idle instance: no steps, no busy time -> fractions and batch are 0, not NaN.
    let p3 = &s.instances[3];
    assert_eq!(
        (
            p3.utilisation,
            p3.mean_batch,
            p3.compute_bound_frac,
            p3.power_bound_frac
        ),
        (0.0, 0.0, 0.0, 0.0)
    );
    assert_eq!(p3.avg_w, ip * h / h);
    let d0 = &s.instances[4];
    assert_eq!(d0.role, Role::Decode);
    assert_eq!(d0.utilisation, 0.95);
    assert_eq!(d0.mean_batch, 2.5);
    assert_eq!(d0.power_bound_frac, 0.5);
    assert_eq!(
        d0.mfu,
        1e15 / (h * dd.device.peak_flops * dd.devices as f64)
    );
    assert_eq!(d0.mbu, 5e13 / (h * dd.device.mem_bw * dd.devices as f64));
    assert_eq!(d0.avg_w, (id * h + 40.0 + 400.0) / h);
    assert_eq!(d0.kv_capacity_tokens, dd.kv_capacity_tokens);
}

/// Nothing finished: one request still in the system, `rejected` rejections, link energy
/// `link_j` with no transfers, no instances.
fn empty_run(rejected: u64, link_j: f64) -> Summary {
    let mut r = run(
        cfg(&[]),
        vec![req(0.5, 1.0, 2.0, NAN, NAN, NAN, NAN, 5)],
        4.0,
    );
    r.rejected = rejected;
    r.link.energy_j = link_j;
    r.link.wait_s = 0.5;
    assert!(r.slo_attainment().is_nan());
    r.summary()
}

#[test]
fn nothing_finished() {
    let s = empty_run(0, 0.0);
    assert_eq!(s.requests.completed, 0);
    assert_eq!(s.requests.measured, 0);
    assert!(s.slo_attainment.is_nan());
    assert!(s.slo_attainment_offered.is_nan());
    assert!(s.goodput_rps.is_nan());
    assert!(s.ttft_s.mean.is_nan() && s.e2e_s.p99.is_nan());
    assert!(s.stage_breakdown_s.as_array().iter().all(|v| v.is_nan()));
    // Zero energy, zero tokens, zero met.
    assert_eq!(s.energy.total_j, 0.0);
    assert!(s.j_per_token.is_nan());
    assert!(s.tokens_per_j.is_nan());
    assert_eq!(s.j_per_slo_met_request, f64::INFINITY);
    assert!(s.littles_law.lambda_w.is_nan());
    // No transfers: the transit-bound share is 0 and the mean wait divides by 1.
    assert_eq!(s.link.transit_bound_frac, 0.0);
    assert_eq!(s.link.mean_wait_s, 0.5);
    assert_eq!(s.link_j_per_request, 0.0);
    // No stage: the hot-spot is the busiest resource overall, here the only one.
    assert_eq!(s.hotspot.stage, None);
    assert_eq!(s.hotspot.resource, "kv-link");

    // With rejections, each counts as a miss: 0 / 2.
    let s = empty_run(2, 3.0);
    assert_eq!(s.slo_attainment_offered, 0.0);
    assert!(s.slo_attainment.is_nan());
    // Energy but no tokens and no met request.
    assert_eq!(s.energy.total_j, 3.0);
    assert!(s.j_per_token.is_nan());
    assert_eq!(s.tokens_per_j, 0.0);
    assert_eq!(s.j_per_slo_met_request, f64::INFINITY);
    assert_eq!(s.link_j_per_request, 3.0);
}

/// Two identical requests with the given stamps arriving together (so the goodput window is
/// 0 and undefined); warm-up cut floor(2 x 0.1) = 0.
fn twin_run(
    flags: &[&str],
    r0: Req,
    util: &[(&str, Role, usize, f64)],
    link_busy: f64,
) -> RunResult {
    let mut r = run(cfg(flags), vec![r0, r0], 10.0);
    r.instances = util
        .iter()
        .map(|&(n, role, pool, u)| inst(n, role, pool, busy(u * 10.0)))
        .collect();
    r.link.busy_s = link_busy;
    r
}

#[test]
fn hotspot_kv_link_tie_goes_to_the_first_stage() {
    // Stages [0, 0.25, 1, 1, 0.25, 0.5]: KV wait and transfer tie; the first wins.
    let r0 = req(0.0, 0.0, 0.25, 1.25, 2.25, 2.5, 3.0, 1);
    let r = twin_run(
        &[],
        r0,
        &[
            ("prefill-0", Role::Prefill, 0, 0.8),
            ("decode-0", Role::Decode, 1, 0.5),
        ],
        2.5,
    );
    let s = r.summary();
    assert_eq!(
        s.stage_breakdown_s.as_array(),
        [0.0, 0.25, 1.0, 1.0, 0.25, 0.5]
    );
    assert_eq!(s.hotspot.stage.as_deref(), Some("kv_wait"));
    // Owner kv-link: 2.5 / (1 channel x 1 link x 10 s).
    assert_eq!(s.hotspot.resource, "kv-link");
    assert_eq!(s.hotspot.resource_util, 0.25);
    assert!(s.hotspot.busy_over_90pct.is_empty());
    // Both met (output 1: TTFT only), but they arrived together: no goodput.
    assert_eq!(s.slo_met, 2);
    assert!(s.goodput_rps.is_nan());
}

#[test]
fn hotspot_decode_queue() {
    // Stages [0, 0.25, 0, 0.25, 2, 0.5]: decode queue is the largest -> decode-0, although
    // prefill-0 is busier.
    let r0 = req(0.0, 0.0, 0.25, 0.25, 0.5, 2.5, 3.0, 1);
    let r = twin_run(
        &[],
        r0,
        &[
            ("prefill-0", Role::Prefill, 0, 0.8),
            ("decode-0", Role::Decode, 1, 0.5),
        ],
        0.0,
    );
    let s = r.summary();
    assert_eq!(
        s.stage_breakdown_s.as_array(),
        [0.0, 0.25, 0.0, 0.25, 2.0, 0.5]
    );
    assert_eq!(s.hotspot.stage.as_deref(), Some("decode_queue"));
    assert_eq!(s.hotspot.resource, "decode-0");
    assert_eq!(s.hotspot.resource_util, 0.5);
}

#[test]
fn hotspot_colocated_owner() {
    // Colocated: prefill queue is the largest stage; its owner becomes "colocated", and the
    // busier colocated instance wins even though the (synthetic) link is busier still.
    let r0 = req(0.0, 1.0, 1.5, NAN, NAN, 1.5, 2.0, 1);
    let r = twin_run(
        &["--mode", "colocated"],
        r0,
        &[
            ("colocated-0", Role::Colocated, 0, 0.25),
            ("colocated-1", Role::Colocated, 0, 0.5),
        ],
        7.5,
    );
    let s = r.summary();
    assert_eq!(
        s.stage_breakdown_s.as_array(),
        [1.0, 0.5, 0.0, 0.0, 0.0, 0.5]
    );
    assert_eq!(s.hotspot.stage.as_deref(), Some("prefill_queue"));
    assert_eq!(s.hotspot.resource, "colocated-1");
    assert_eq!(s.hotspot.resource_util, 0.5);
    assert_eq!(s.mode, Mode::Colocated);
    // No hand-offs.
    assert!(s.handoff_s.p50.is_nan());
}

#[test]
fn stages_of_one_request() {
    // Plain hand-off: queue 0.25, prefill 0.5, KV wait 0.25, transfer 0.5, decode queue 0.5,
    // decode 2.
    let r = req(0.0, 0.25, 0.75, 1.0, 1.5, 2.0, 4.0, 9);
    assert_eq!(r.stages(), [0.25, 0.5, 0.25, 0.5, 0.5, 2.0]);
    // Layer-wise: the link started (0.5) before the first token (0.75): clamped to it, so
    // KV wait 0 and transfer = kv_ready - ft = 0.75.
    let r = req(0.0, 0.25, 0.75, 0.5, 1.5, 2.0, 4.0, 9);
    assert_eq!(r.stages(), [0.25, 0.5, 0.0, 0.75, 0.5, 2.0]);
    // Decode memory reserved at 1.25 (after ft 0.75): KV wait = 1.5 - 1.25 = 0.25; the 0.5
    // before the reservation goes to the decode queue: (2.25 - 2.0) + 0.5.
    let mut r = req(0.0, 0.25, 0.75, 1.5, 2.0, 2.25, 3.0, 9);
    r.kv_mem = 1.25;
    assert_eq!(r.stages(), [0.25, 0.5, 0.25, 0.5, 0.75, 0.75]);
    // Reserved before the first token (0.5 < 0.75): clamped to ft, nothing is moved.
    let mut r = req(0.0, 0.25, 0.75, 1.0, 1.5, 2.0, 4.0, 9);
    r.kv_mem = 0.5;
    assert_eq!(r.stages(), [0.25, 0.5, 0.25, 0.5, 0.5, 2.0]);
    // Colocated (no hand-off): decode queue from the first token.
    let r = req(1.0, 1.5, 2.0, NAN, NAN, 2.5, 3.5, 9);
    assert_eq!(r.stages(), [0.5, 0.5, 0.0, 0.0, 0.5, 1.0]);
    // Never reached decode: the decode stages stay 0.
    let r = req(1.0, 1.5, 2.0, NAN, NAN, NAN, 2.0, 1);
    assert_eq!(r.stages(), [0.5, 0.5, 0.0, 0.0, 0.0, 0.0]);
    // The array round trip keeps the order.
    let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    assert_eq!(Stages::from_array(a).as_array(), a);
    assert_eq!(Stages::from_array(a).decode_queue, 5.0);
}

#[test]
fn itl_from_step_ends() {
    // One decode instance, step ends 1, 1.25, 1.75, 2.5, 3.5 (steps 1..4 last 0.25, 0.5,
    // 0.75, 1). Request A: output 4, admitted at step 0 + 1, first token 0.5: ITLs
    // e[1] - 0.5 = 0.75, then steps 2 and 3: 0.5, 0.75. B: output 2, step 0, ft 0.25:
    // 1 - 0.25 = 0.75 only. C: output 5, step 0, ft 0: 1.0, then steps 1..3: 0.25, 0.5,
    // 0.75. D (output 1), E (no decode instance) and F (never admitted) have none.
    let mut a = req(0.0, 0.0, 0.5, NAN, NAN, 1.0, 2.0, 4);
    a.adm = 1;
    a.dinst = 0;
    let mut b = req(0.0, 0.0, 0.25, NAN, NAN, 0.5, 1.0, 2);
    b.dinst = 0;
    let mut c = req(0.0, 0.0, 0.0, NAN, NAN, 0.5, 2.0, 5);
    c.dinst = 0;
    let mut d = req(0.0, 0.0, 0.0, NAN, NAN, 0.5, 1.0, 1);
    d.dinst = 0;
    let e = req(0.0, 0.0, 0.0, NAN, NAN, 0.5, 1.5, 3);
    let mut f = req(0.0, 0.0, 0.0, NAN, NAN, NAN, 1.5, 3);
    f.dinst = 0;
    let mut r = run(cfg(&[]), vec![a, b, c, d, e, f], 4.0);
    r.step_ends = vec![vec![1.0, 1.25, 1.75, 2.5, 3.5]];
    // ITLs sorted: 0.25, 0.5 x 2, 0.75 x 4, 1.0; sum 5.25; n - 1 = 7: k = 3.5, 6.3, 6.93.
    assert_eq!(
        r.summary().itl_s,
        dist_of(
            5.25 / 8.0,
            0.75,
            0.75 + (1.0 - 0.75) * (6.3 - 6.0),
            0.75 + (1.0 - 0.75) * (6.93 - 6.0),
            1.0
        )
    );
}

#[test]
fn decode_memory_waits_transit_and_clipping() {
    // --reserve-kv-on transfer: waits kv_mem - kv_req of every request that reserved (the
    // unfinished one too): 0.5, 0, 0.25; total 0.75; n - 1 = 2: k = 1, 1.8, 1.98.
    let c = cfg(&["--reserve-kv-on", "transfer", "--kv-compress", "fp8"]);
    let mut r0 = staged(0.0, 0.25, 1.0, 7);
    r0.kv_req = 1.0;
    r0.kv_mem = 1.5;
    let mut r1 = staged(1.0, 0.25, 1.0, 7);
    r1.kv_req = 2.0;
    r1.kv_mem = 2.0;
    let r2 = staged(2.0, 0.25, 1.0, 7);
    let mut r3 = req(3.0, 3.25, 3.75, NAN, NAN, NAN, NAN, 7);
    r3.kv_req = 3.0;
    r3.kv_mem = 3.25;
    let mut r = run(c, vec![r0, r1, r2, r3], 8.0);
    r.link.energy_j = 2.0;
    r.link.transit_j = 0.5;
    r.link.transfers = 2;
    r.link.transit_bound = 1;
    r.clipped_prompts = 2;
    let s = r.summary();
    let w = s.decode_mem_wait_s.unwrap();
    assert_eq!(w.handoffs, 3);
    assert_eq!(w.total_s, 0.75);
    assert_eq!(
        w.per_handoff,
        dist_of(
            0.25,
            0.25,
            0.25 + 0.25 * (1.8 - 1.0),
            0.25 + 0.25 * (1.98 - 1.0),
            0.5
        )
    );
    // With a compression stage its energy is part of the total: 0 static (no instances) +
    // 0 + 0 + 2 link + 0.5 transit.
    assert_eq!(s.energy.total_j, 2.5);
    assert_eq!(s.energy.transit_frac, Some(0.5 / 2.5));
    assert_eq!(s.link_j_per_request, 2.5 / 2.0);
    assert_eq!(s.link.transit_bound_frac, 0.5);
    assert_eq!(s.link.compression.as_deref(), Some("fp8"));
    assert_eq!(s.link.compression_ratio, Some(2.0));
    // Clipped prompts: one warning, and the workload summary says how many.
    assert_eq!(s.warnings.len(), 1);
    assert_eq!(s.workload.clipped_prompts, 2);
}

#[test]
fn parallel_and_formats_blocks_and_scale_up_energy() {
    // Per-pool layouts (prefill TP2 x PP2 with 3 micro-batches, decode TP4 on NVLink 3 of
    // A100s), FP8 weights and KV; hand-built step totals: horizon 10 s.
    let c = cfg(&[
        "--device",
        "a100",
        "--prefill-tp",
        "2",
        "--prefill-pp",
        "2",
        "--microbatches",
        "3",
        "--decode-tp",
        "4",
        "--weight-format",
        "fp8",
        "--kv-format",
        "fp8",
    ]);
    let reqs = vec![staged(0.0, 0.25, 1.0, 7)];
    let mut r = run(c, reqs, 10.0);
    let st = |busy_s, comm_s, comm_j| InstanceStats {
        busy_s,
        comm_s,
        comm_j,
        ..InstanceStats::default()
    };
    r.instances = vec![
        inst("prefill-0", Role::Prefill, 0, st(4.0, 1.0, 3.0)),
        inst("decode-0", Role::Decode, 1, st(8.0, 0.5, 1.0)),
        inst("decode-1", Role::Decode, 1, st(0.0, 0.0, 0.25)),
    ];
    let s = r.summary();
    let p = s.parallel.clone().expect("a parallel block");
    assert_eq!(p.len(), 2);
    let (a, b) = (&p[0], &p[1]);
    assert_eq!(
        (a.role, a.tp, a.pp, a.ep, a.microbatches),
        (Role::Prefill, 2, 2, 1, 3)
    );
    assert_eq!(
        (b.role, b.tp, b.pp, b.microbatches),
        (Role::Decode, 4, 1, 3)
    );
    assert_eq!(a.link, "NVLink 3 (one direction)");
    assert_eq!(
        (a.busy_s, a.comm_s, a.comm_j, a.comm_frac),
        (4.0, 1.0, 3.0, 0.25)
    );
    // The decode pool's sums over its two instances: 8 + 0, 0.5 + 0, 1 + 0.25.
    assert_eq!(
        (b.busy_s, b.comm_s, b.comm_j, b.comm_frac),
        (8.0, 0.5, 1.25, 0.0625)
    );
    // Scale-up energy: 3 + 1 + 0.25 J, added last to the total, with its share.
    let e = s.energy;
    assert_eq!(e.scale_up_j, Some(4.25));
    let before = e.static_j + e.compute_j + e.memory_j + e.link_j;
    assert_eq!(e.total_j, before + 4.25);
    assert_eq!(e.scale_up_frac, Some(4.25 / e.total_j));
    let f = s.formats.expect("a formats block");
    assert_eq!(
        (f.weights.as_str(), f.kv.as_str(), f.compute.as_str()),
        ("fp8", "fp8", "bf16")
    );
    assert_eq!((f.weight_bytes, f.kv_bytes), (1.0, 1.0));
    // An idle role's comm_frac is 0, not NaN; without layouts or formats, no blocks.
    let mut q = run(cfg(&["--tp", "4"]), vec![], 1.0);
    q.instances = vec![
        inst("prefill-0", Role::Prefill, 0, st(0.0, 0.0, 0.0)),
        inst("decode-0", Role::Decode, 1, st(0.0, 0.0, 0.0)),
    ];
    let sq = q.summary();
    assert!(sq.parallel.unwrap().iter().all(|x| x.comm_frac == 0.0));
    assert!(sq.formats.is_none());
    let plain = run(cfg(&[]), vec![], 1.0).summary();
    assert!(plain.parallel.is_none() && plain.formats.is_none());
    assert_eq!(plain.energy.scale_up_j, None);
}

#[test]
fn optical_engines_energy_block_and_ppa() {
    // An optical-fft prefill pool of 2-device instances and an H100 decode pool, a
    // compression stage in transit, --ppa; horizon 8 s; two finished requests of 7 tokens.
    let c = cfg(&[
        "--model",
        "llama3-8b-hyena",
        "--prefill-device",
        "optical-fft",
        "--devices-per-instance",
        "2",
        "--kv-compress",
        "fp8",
        "--ppa",
    ]);
    let (ip, id) = (c.pools[0].cost.idle_w(), c.pools[1].cost.idle_w());
    let reqs = vec![staged(0.0, 0.25, 1.0, 7), staged(1.0, 0.25, 1.0, 7)];
    let mut r = run(c, reqs, 8.0);
    r.link.energy_j = 2.0;
    r.link.transit_j = 0.5;
    r.link.transfers = 2;
    r.instances = vec![
        inst(
            "prefill-0",
            Role::Prefill,
            0,
            InstanceStats {
                busy_s: 4.0,
                compute_j: 10.0,
                memory_j: 5.0,
                optical_bound_s: 1.0,
                optical_flops: 6.0,
                optical_j: 2.5,
                ..InstanceStats::default()
            },
        ),
        inst(
            "decode-0",
            Role::Decode,
            1,
            InstanceStats {
                busy_s: 2.0,
                compute_j: 1.0,
                memory_j: 0.5,
                ..InstanceStats::default()
            },
        ),
    ];
    let s = r.summary();
    let h = 8.0;
    // The engine's static power: laser 10 W + tuning 10 W per device, 2 devices: 40 W.
    let os = 40.0 * h;
    let static_j = 0.0 + ip * h + id * h;
    let (compute_j, memory_j) = (0.0 + 10.0 + 1.0, 0.0 + 5.0 + 0.5);
    // `docs/levers.md#fft-mixing` then `docs/cost-model.md#parallelism`: optical static, conversions, then transit.
    let total =
        (((static_j + compute_j + memory_j + 2.0) + (0.0 + os + 0.0)) + (0.0 + 2.5 + 0.0)) + 0.5;
    assert_eq!(s.energy.total_j, total);
    assert_eq!(s.energy.optical_static_j, Some(os));
    assert_eq!(s.energy.optical_static_frac, Some(os / total));
    assert_eq!(s.energy.optical_conversions_j, Some(2.5));
    assert_eq!(s.energy.optical_conversions_frac, Some(2.5 / total));
    assert_eq!(s.energy.transit_frac, Some(0.5 / total));
    let p0 = &s.instances[0];
    assert_eq!(p0.avg_w, ((((ip * h + 10.0) + 5.0) + os) + 2.5) / h);
    assert_eq!(s.instances[1].avg_w, (((id * h + 1.0) + 0.5) + 0.0) / h);
    let o = s.optical.as_ref().unwrap();
    assert_eq!(
        o,
        &vec![
            OpticalSummary {
                name: "prefill-0".into(),
                optical_bound_frac: 1.0 / 4.0,
                optical_flops: 6.0,
                conversion_j: 2.5,
                static_j: os,
            },
            OpticalSummary {
                name: "decode-0".into(),
                optical_bound_frac: 0.0,
                optical_flops: 0.0,
                conversion_j: 0.0,
                static_j: 0.0,
            },
        ]
    );
    // --ppa: optical-fft 817 + 100 mm², $357.23423079414755 per device; H100 814 mm²,
    // $339.09863688464617 (`docs/levers.md#ppa`); 14 tokens over 8 s.
    let tok_s = 14.0 / h;
    let usd = (0.0 + 2.0 * 357.23423079414755) + 2.0 * 339.09863688464617;
    let ppa = s.ppa.as_ref().unwrap();
    assert_eq!(ppa.total_mm2, Some((0.0 + 2.0 * 917.0) + 2.0 * 814.0));
    assert_eq!(ppa.total_usd, Some(usd));
    assert_eq!(ppa.perf_per_w, 14.0 / total);
    assert_eq!(ppa.perf_per_mm2, Some(tok_s / 3462.0));
    assert_eq!(ppa.perf_per_kusd, Some((1e3 * tok_s) / usd));
    let pools = &ppa.pools.0;
    assert_eq!(pools[0].0, "prefill");
    assert_eq!(pools[0].1.device, "Optical-FFT + H100-class");
    assert_eq!(pools[0].1.instances, 1);
    assert_eq!(pools[0].1.devices_per_instance, 2);
    assert_eq!(pools[0].1.mm2_per_instance, Some(2.0 * 917.0));
    assert_eq!(pools[1].0, "decode");
    assert_eq!(pools[1].1.device, "H100-SXM");
    assert_eq!(pools[1].1.usd_per_instance, Some(2.0 * 339.09863688464617));
}

#[test]
fn an_idle_engine_instance_is_not_optical_bound() {
    // busy 0: the optical-bound share is 0.0, not NaN.
    let c = cfg(&[
        "--model",
        "llama3-8b-hyena",
        "--device",
        "optical-fft",
        "--mode",
        "colocated",
    ]);
    let mut r = run(c, vec![], 2.0);
    r.instances = vec![inst(
        "colocated-0",
        Role::Colocated,
        0,
        InstanceStats::default(),
    )];
    let s = r.summary();
    assert_eq!(s.optical.as_ref().unwrap()[0].optical_bound_frac, 0.0);
    // 4 devices (the default) x 20 W x 2 s.
    assert_eq!(s.optical.as_ref().unwrap()[0].static_j, 160.0);
    assert!(s.ppa.is_none());
}

#[test]
fn scheduled_itls_and_normalised_latency_follow_the_request_records() {
    // A chunked-prefill run (the scheduled instances): the summary's ITL distribution comes
    // from the step-end difference arrays and the normalised latency from the steady set;
    // both are recomputed here from the per-request records, a different path.
    let run = chunked_run("12");
    let s = run.summary();
    let steady = &steady_records(&run)[..];
    let norm: Vec<f64> = steady
        .iter()
        .map(|r| (r.finish_s.unwrap() - r.arrival_s) / r.output_len as f64)
        .collect();
    let want = norm.iter().sum::<f64>() / norm.len() as f64;
    let got = s
        .scheduler
        .as_ref()
        .unwrap()
        .norm_latency_s_per_token
        .unwrap();
    assert!((got - want).abs() <= 1e-12 * want, "{got} vs {want}");
    let mut itls: Vec<f64> = steady.iter().flat_map(|r| run.itls(r.rid)).collect();
    assert!(itls.len() > 1000, "{} ITLs", itls.len());
    itls.sort_by(f64::total_cmp);
    let mean = itls.iter().sum::<f64>() / itls.len() as f64;
    assert!((s.itl_s.mean - mean).abs() <= 1e-12 * mean);
    assert_eq!(s.itl_s.max, *itls.last().unwrap());
    // p50 by the spec's interpolation (`docs/exactness.md#percentiles`) over the sorted list.
    let k = ((itls.len() - 1) * 50) as f64 / 100.0;
    let (lo, hi) = (k.floor() as usize, k.ceil() as usize);
    let p50 = itls[lo] + (itls[hi] - itls[lo]) * (k - lo as f64);
    assert_eq!(s.itl_s.p50, p50);
}

/// A chunked-prefill run (the scheduled instances) of Llama 3 8B on single H100s, 120 requests
/// at `rate` req/s.
fn chunked_run(rate: &str) -> RunResult {
    let c = cfg(&[
        "--model",
        "llama3-8b",
        "--devices-per-instance",
        "1",
        "--rate",
        rate,
        "--requests",
        "120",
        "--batch-policy",
        "chunked",
    ]);
    crate::simulate_config(&c).unwrap()
}

/// The steady set of a run, from its records: finished requests by (arrival, rid), the first 10%
/// dropped.
fn steady_records(run: &RunResult) -> Vec<crate::engine::result::RequestRecord> {
    let mut done: Vec<_> = run.requests().filter(|r| r.finish_s.is_some()).collect();
    done.sort_by(|a, b| a.arrival_s.total_cmp(&b.arrival_s).then(a.rid.cmp(&b.rid)));
    done.split_off(done.len() / 10)
}

/// How many measured requests `met_slos` says met both SLOs.
fn m_rids_met(r: &RunResult) -> usize {
    r.measured_latencies()
        .rids
        .iter()
        .filter(|&&rid| r.met_slos(rid as usize))
        .count()
}

#[test]
fn the_scheduling_delay_median_is_the_records_median() {
    // `scheduler.sched_delay_p50_s`: the median of prefill start - arrival over the steady set,
    // recomputed from the request records (statistics.median: the mean of the middle two).
    let run = chunked_run("14");
    let s = run.summary();
    let steady = &steady_records(&run)[..];
    let mut d: Vec<f64> = steady
        .iter()
        .map(|r| r.prefill_start_s.unwrap() - r.arrival_s)
        .collect();
    d.sort_by(f64::total_cmp);
    let n = d.len();
    let want = if n % 2 == 1 {
        d[n / 2]
    } else {
        (d[n / 2 - 1] + d[n / 2]) / 2.0
    };
    let got = s.scheduler.as_ref().unwrap().sched_delay_p50_s.unwrap();
    assert!(want > 0.0, "{want}");
    assert!((got - want).abs() <= 1e-12 * want, "{got} vs {want}");
    // A Poisson workload offers its rate.
    assert_eq!(s.overload.offered_rps, 14.0);
    // `met_slos` agrees with the summary's count on a real run.
    assert_eq!(m_rids_met(&run) as u64, s.slo_met);
}

#[test]
fn an_overloaded_run_grows_by_the_records_count() {
    // 40 req/s on one H100 pair: far above capacity; the growth is `queue_growth_of` the
    // records' arrivals, finishes and rejections (every request here finishes).
    let c = cfg(&[
        "--model",
        "llama3-8b",
        "--devices-per-instance",
        "1",
        "--rate",
        "40",
        "--requests",
        "200",
    ]);
    let run = crate::simulate_config(&c).unwrap();
    let s = run.summary();
    let mut a: Vec<f64> = run.requests().map(|r| r.arrival_s).collect();
    a.sort_by(f64::total_cmp);
    let mut f: Vec<f64> = run.requests().filter_map(|r| r.finish_s).collect();
    f.sort_by(f64::total_cmp);
    let mut rej: Vec<f64> = run
        .requests()
        .filter(|r| r.finish_s.is_none())
        .map(|r| r.arrival_s)
        .collect();
    rej.sort_by(f64::total_cmp);
    let want = overload::queue_growth_of(&a, &f, &rej).unwrap();
    assert!(want > 10.0, "{want}");
    assert_eq!(s.overload.queue_growth, Some(want));
    assert!(s.overload.queues_growing && s.overload.overloaded);
}

#[test]
fn a_session_workload_offers_its_measured_arrivals_over_their_span() {
    // Closed-loop sessions: the offered rate is the arrivals over their span, not `--rate`.
    let c = cfg(&[
        "--model",
        "llama3-8b",
        "--devices-per-instance",
        "1",
        "--workload",
        "chat",
        "--rate",
        "1",
        "--requests",
        "60",
    ]);
    let run = crate::simulate_config(&c).unwrap();
    let s = run.summary();
    let mut a: Vec<f64> = run.requests().map(|r| r.arrival_s).collect();
    a.sort_by(f64::total_cmp);
    let want = a.len() as f64 / (a[a.len() - 1] - a[0]);
    assert_eq!(s.overload.offered_rps, want);
    assert!(want != 1.0);
}

#[test]
fn calibration_of_names_each_fitted_pool_in_order() {
    let cal = disagg_model::Calibration {
        measurements: vec!["m.csv".into()],
        fit: "f".into(),
        groups: vec!["g".into()],
        in_sample_prefill_mape: 0.1,
        in_sample_decode_mape: 0.2,
        cv_prefill_mape: 0.3,
        cv_decode_mape: 0.4,
        tool: "t".into(),
    };
    let mut c = cfg(&["--prefill", "2", "--decode", "1"]);
    assert_eq!(calibration_of(&c), None);
    let roles: Vec<Role> = c.pools.iter().map(|p| p.role).collect();
    assert_eq!(roles, [Role::Prefill, Role::Decode]);
    c.pools[1].device.calibration = Some(cal.clone());
    c.pools[1].device.key = "d-fit".into();
    assert_eq!(
        calibration_of(&c),
        Some(vec![CalibrationSummary {
            pool: "decode".into(),
            device: "d-fit".into(),
            calibration: cal.clone(),
        }])
    );
    c.pools[0].device.calibration = Some(cal.clone());
    let got = calibration_of(&c).unwrap();
    let names: Vec<(&str, &str)> = got
        .iter()
        .map(|x| (x.pool.as_str(), x.device.as_str()))
        .collect();
    assert_eq!(names, [("prefill", "h100"), ("decode", "d-fit")]);
    // A pool without instances runs nothing, so it is not named.
    c.pools[0].instances = 0;
    assert_eq!(calibration_of(&c).unwrap().len(), 1);
    // The JSON flattens the provenance beside the pool and device.
    let v = serde_json::to_value(&got[0]).unwrap();
    assert_eq!(v["pool"], "prefill");
    assert_eq!(v["cv_decode_mape"], 0.4);
    assert_eq!(v["tool"], "t");
    // Colocated: the one pool.
    let mut c = cfg(&["--mode", "colocated"]);
    c.pools[0].device.calibration = Some(cal);
    assert_eq!(calibration_of(&c).unwrap()[0].pool, "colocated");
}
