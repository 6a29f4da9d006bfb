//! Measures `disagg serve` over loopback (not a test): the p50/p99 latency of `/api/run` under
//! 32 concurrent clients, the latency of `GET /` and `GET /api/catalogue` while 8 request bodies
//! stall and 50 sockets sit idle, and the process's RSS before and after.
//!
//! ```text
//! cargo run --release -p disagg-web --example serve_load [-- RUNS_PER_CLIENT]
//! ```

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::*;
use disagg_web::ServeOptions;

fn quantiles(mut v: Vec<Duration>) -> String {
    v.sort();
    let q = |f: f64| v[((v.len() - 1) as f64 * f).round() as usize].as_secs_f64() * 1e3;
    format!(
        "n={} p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        v.len(),
        q(0.5),
        q(0.99),
        q(1.0)
    )
}

fn mib(b: Option<u64>) -> String {
    b.map_or("n/a".into(), |b| {
        format!("{:.1} MiB", b as f64 / (1 << 20) as f64)
    })
}

fn main() {
    let per_client: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20);
    let server = start(ServeOptions::default());
    let addr = server.addr();
    let body = r#"{"model": "llama3-8b", "devices_per_instance": 1, "requests": 200, "rate": 4}"#;
    assert_eq!(post(addr, "/api/run", body).status, 200);
    let rss0 = rss_bytes();
    println!(
        "server on {} ({} cores)",
        server.url(),
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    println!("RSS before: {}", mib(rss0));

    // 32 concurrent clients x per_client runs.
    let t0 = Instant::now();
    let runs: Vec<Duration> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..32)
            .map(|_| {
                s.spawn(|| {
                    (0..per_client)
                        .map(|_| {
                            let t = Instant::now();
                            let a = post(addr, "/api/run", body);
                            assert_eq!(a.status, 200, "{}", a.text());
                            t.elapsed()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let wall = t0.elapsed();
    println!(
        "/api/run (200 requests each) under 32 concurrent clients: {} ({:.0} runs/s)",
        quantiles(runs.clone()),
        runs.len() as f64 / wall.as_secs_f64()
    );

    // GETs while 8 bodies stall and 50 sockets sit idle.
    let _stalled: Vec<_> = (0..8).map(|_| stalled_body(addr)).collect();
    let _idle: Vec<_> = (0..50).map(|_| idle(addr)).collect();
    let mut page = Vec::new();
    let mut cat = Vec::new();
    for _ in 0..100 {
        let (a, t) = timed_get(addr, "/");
        assert_eq!(a.status, 200);
        page.push(t);
        let (a, t) = timed_get(addr, "/api/catalogue");
        assert_eq!(a.status, 200);
        cat.push(t);
        std::thread::sleep(Duration::from_millis(5));
    }
    println!(
        "GET / under 8 stalled bodies + 50 idle sockets: {}",
        quantiles(page)
    );
    println!("GET /api/catalogue under the same: {}", quantiles(cat));
    println!("RSS after: {}", mib(rss_bytes()));
    server.shutdown();
}
