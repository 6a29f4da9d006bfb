//! Wall-clock benchmark of the simulator (run with `--release`).
//!
//! `cargo run --release -p disagg-sim --example bench` runs the chapter configuration (Llama-3-8B,
//! 1xH100 per instance, 1P1D, 8 req/s, ib-ndr, fast path) at 800, 100,000 and 1,000,000 requests,
//! and a 2P2D run of 10,000 requests at 16 req/s, then the hand-off options: the 100,000-request
//! chapter run with layer-wise streaming over a fair-shared link, and a congested one (25 GbE at
//! 11 req/s, where layer-wise transfers overlap and cost O(layers) link events each).
//! `... --example bench -- 1000000` runs one size only (so the peak RSS printed is that run's);
//! `... -- 100000 lwfair` the layer-wise + fair chapter run alone.
//!
//! Each line: wall time of generate + simulate + summarise, engine events per second of simulate,
//! requests per second of the whole, and the process's peak RSS so far.

use std::time::Instant;

use disagg_sim::{simulate, Scenario};

fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn bench(label: &str, sc: &Scenario, reps: u32) {
    let cfg = sc
        .build(&disagg_model::Catalogue::builtin())
        .expect("valid scenario");
    let mut best = f64::INFINITY;
    let mut best_sim = f64::INFINITY;
    let mut events = 0;
    let mut tok = 0.0;
    for _ in 0..reps {
        let t0 = Instant::now();
        let wl = cfg.generate_workload();
        let t1 = Instant::now();
        let run = simulate(&cfg, &wl).expect("run");
        let t2 = Instant::now();
        let s = run.summary();
        let t3 = Instant::now();
        events = run.events();
        tok = s.throughput_tok_s;
        let total = (t3 - t0).as_secs_f64();
        if total < best {
            best = total;
            best_sim = (t2 - t1).as_secs_f64();
        }
        std::hint::black_box(&s);
    }
    let n = sc.requests as f64;
    println!(
        "{label:<34} wall {:>9.3} ms  (simulate {:>9.3} ms)  {:>6.2} M events/s  {:>6.2} M req/s  \
         {events} events  {tok:.1} tok/s  peak RSS {:.1} MiB",
        best * 1e3,
        best_sim * 1e3,
        events as f64 / best_sim / 1e6,
        n / best / 1e6,
        peak_rss_mib()
    );
}

fn chapter(n: u64) -> Scenario {
    Scenario {
        model: "llama3-8b".into(),
        devices_per_instance: 1,
        rate: 8.0,
        requests: n,
        fast: true,
        ..Scenario::default()
    }
}

fn layerwise_fair(n: u64) -> Scenario {
    Scenario {
        send: disagg_model::SendMode::Layerwise,
        link_sharing: disagg_sim::LinkSharing::Fair,
        ..chapter(n)
    }
}

fn main() {
    let only: Option<u64> = std::env::args().nth(1).and_then(|a| a.parse().ok());
    let lwfair = std::env::args().nth(2).is_some_and(|a| a == "lwfair");
    match only {
        Some(n) if lwfair => bench(
            &format!("chapter layerwise+fair, {n} req"),
            &layerwise_fair(n),
            1,
        ),
        Some(n) => bench(&format!("chapter 1P1D fast, {n} req"), &chapter(n), 1),
        None => {
            bench("chapter 1P1D fast, 800 req", &chapter(800), 20);
            bench(
                "chapter 2P2D fast 16 req/s, 10k req",
                &Scenario {
                    prefill: 2,
                    decode: 2,
                    rate: 16.0,
                    ..chapter(10_000)
                },
                5,
            );
            bench(
                "chapter 1P1D plain, 10k req",
                &Scenario {
                    fast: false,
                    ..chapter(10_000)
                },
                3,
            );
            bench("chapter 1P1D fast, 100k req", &chapter(100_000), 3);
            bench(
                "chapter layerwise+fair, 100k req",
                &layerwise_fair(100_000),
                3,
            );
            bench(
                "25GbE 11 req/s layerwise+fair, 100k",
                &Scenario {
                    link: "eth-25g".into(),
                    rate: 11.0,
                    ..layerwise_fair(100_000)
                },
                3,
            );
            bench(
                "25GbE 11 req/s layerwise+fifo, 100k",
                &Scenario {
                    link: "eth-25g".into(),
                    rate: 11.0,
                    link_sharing: disagg_sim::LinkSharing::Fifo,
                    ..layerwise_fair(100_000)
                },
                3,
            );
            bench("chapter 1P1D fast, 1M req", &chapter(1_000_000), 1);
        }
    }
}
