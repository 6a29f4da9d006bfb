//! Measures `disagg serve` over loopback (not a test): the request that once took the server down
//! (200,000 requests of 10,000 closed-loop turns: its answer, the peak RSS, the next answers), the
//! p50/p99 latency of `/api/run` and `/api/sweep` under 32 concurrent clients (alternating), the
//! latency of `GET /` and `GET /api/catalogue` while 8 request bodies stall and 600 sockets sit
//! idle, and the process's RSS before and after.
//!
//! ```text
//! cargo run --release -p disagg-web --example serve_load [-- RUNS_PER_CLIENT]
//! ```

#[path = "../tests/suite/common/mod.rs"]
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

/// The process's peak resident set (`VmHWM`), bytes.
fn peak_rss_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
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
    println!("RSS before: {}, peak {}", mib(rss0), mib(peak_rss_bytes()));

    // The request that once grew the server to 4 GB and aborted it.
    let big =
        r#"{"requests": 200000, "turns": 10000, "model": "llama3-8b", "devices_per_instance": 1}"#;
    let t = Instant::now();
    let a = post(addr, "/api/run", big);
    println!(
        "200,000 requests x 10,000 turns: {} in {:.2} s, peak RSS {}",
        a.status,
        t.elapsed().as_secs_f64(),
        mib(peak_rss_bytes())
    );
    let (a, t) = timed_get(addr, "/");
    let r = post(addr, "/api/run", body);
    println!(
        "then GET / {} in {:.2} ms, a 200-request /api/run {}",
        a.status,
        t.as_secs_f64() * 1e3,
        r.status
    );

    // 32 concurrent clients x per_client calls, alternating /api/run and a 3-rate /api/sweep.
    let sweep = r#"{"model": "llama3-8b", "devices_per_instance": 1, "requests": 100, "rates": [2, 4, 8], "compact": true}"#;
    let t0 = Instant::now();
    let calls: Vec<(bool, Duration)> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..32)
            .map(|c| {
                s.spawn(move || {
                    (0..per_client)
                        .map(|k| {
                            let is_run = (c + k) % 2 == 0;
                            let t = Instant::now();
                            let a = if is_run {
                                post(addr, "/api/run", body)
                            } else {
                                post(addr, "/api/sweep", sweep)
                            };
                            assert_eq!(a.status, 200, "{}", a.text());
                            (is_run, t.elapsed())
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let wall = t0.elapsed();
    let of =
        |run: bool| -> Vec<Duration> { calls.iter().filter(|c| c.0 == run).map(|c| c.1).collect() };
    println!(
        "32 concurrent clients x {per_client} calls in {:.2} s: /api/run (200 requests) {}; /api/sweep (3 x 100 requests) {}",
        wall.as_secs_f64(),
        quantiles(of(true)),
        quantiles(of(false))
    );

    // GETs while 8 bodies stall and 600 sockets sit idle.
    let _stalled: Vec<_> = (0..8).map(|_| stalled_body(addr)).collect();
    let _idle: Vec<_> = (0..600).map(|_| idle(addr)).collect();
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
        "GET / under 8 stalled bodies + 600 idle sockets: {}",
        quantiles(page)
    );
    println!("GET /api/catalogue under the same: {}", quantiles(cat));
    println!("RSS after: {}", mib(rss_bytes()));
    server.shutdown();
}
