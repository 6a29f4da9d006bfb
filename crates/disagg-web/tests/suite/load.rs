//! The bounded load and fault test: 32 client threads x 20 small `/api/run` calls, 50 idle
//! sockets and 8 stalled request bodies at once, while `GET /` and `GET /api/catalogue` keep being
//! answered (median under 100 ms, none slower than 1 s: a server whose workers were all taken by
//! simulations would answer after a whole run); afterwards the stalled bodies got 408, the idle sockets were closed,
//! the server still serves, and the process's RSS grew by less than [`RSS_GROWTH_BOUND`].
//! Loopback only, bounded in count and in time (it ends by itself in well under a minute).

use crate::common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::*;
use disagg_web::ServeOptions;

/// How much the resident set may grow over the whole test (the server runs in this process).
const RSS_GROWTH_BOUND: u64 = 64 << 20;
/// The median latency bound for the page and the catalogue under load.
const QUICK: Duration = Duration::from_millis(100);
/// No probe may take longer: one slow probe on a busy 2-core machine is the OS scheduler, many are
/// a server that stopped answering.
const STARVED: Duration = Duration::from_secs(1);

fn run_body(i: usize, j: usize) -> String {
    format!(
        r#"{{"model": "llama3-8b", "devices_per_instance": 1, "requests": 40, "rate": 4, "seed": {}}}"#,
        i * 20 + j + 1
    )
}

#[test]
fn survives_bounded_load_and_faults() {
    let read_timeout = Duration::from_secs(3);
    let server = start(ServeOptions {
        read_timeout,
        ..ServeOptions::default()
    });
    let addr = server.addr();
    // Warm up (first-use allocations are not growth).
    assert_eq!(post(addr, "/api/run", &run_body(0, 0)).status, 200);
    assert_eq!(get(addr, "/api/catalogue").status, 200);
    let rss0 = rss_bytes();

    let t0 = Instant::now();
    let mut idle_socks: Vec<_> = (0..50).map(|_| idle(addr)).collect();
    let mut stalled: Vec<_> = (0..8).map(|_| stalled_body(addr)).collect();
    let done = AtomicBool::new(false);
    let (statuses, probes) = std::thread::scope(|s| {
        let clients: Vec<_> = (0..32)
            .map(|i| {
                s.spawn(move || {
                    (0..20)
                        .map(|j| post(addr, "/api/run", &run_body(i, j)).status)
                        .collect::<Vec<u16>>()
                })
            })
            .collect();
        let probe = s.spawn(|| {
            let mut seen = Vec::new();
            while !done.load(Ordering::SeqCst) {
                for path in ["/", "/api/catalogue"] {
                    let (a, took) = timed_get(addr, path);
                    assert_eq!(a.status, 200, "{path}: {}", a.text());
                    seen.push((path, took));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            seen
        });
        let statuses: Vec<u16> = clients
            .into_iter()
            .flat_map(|h| h.join().expect("a client"))
            .collect();
        done.store(true, Ordering::SeqCst);
        (statuses, probe.join().expect("the probe"))
    });
    let took = t0.elapsed();
    assert_eq!(statuses.len(), 640);
    assert!(statuses.iter().all(|&s| s == 200), "{statuses:?}");
    assert!(probes.len() >= 4, "too few probes: {}", probes.len());
    let mut sorted: Vec<Duration> = probes.iter().map(|p| p.1).collect();
    sorted.sort();
    let q = |f: f64| sorted[((sorted.len() - 1) as f64 * f).round() as usize];
    eprintln!(
        "640 runs in {took:?}; {} GET probes: p50 {:?}, p99 {:?}, slowest {:?}",
        sorted.len(),
        q(0.5),
        q(0.99),
        q(1.0)
    );
    assert!(q(0.5) < QUICK, "median GET took {:?} under load", q(0.5));
    for (path, t) in &probes {
        assert!(*t < STARVED, "GET {path} took {t:?} under load");
    }

    // The stalled bodies got a 408 and were closed; the idle sockets were closed.
    for s in &mut stalled {
        let (bytes, closed) = read_until_closed(s, read_timeout + Duration::from_secs(5));
        assert!(closed, "a stalled connection is still open");
        assert_eq!(parse(&bytes).status, 408);
    }
    for s in &mut idle_socks {
        let (_, closed) = read_until_closed(s, read_timeout + Duration::from_secs(5));
        assert!(closed, "an idle connection is still open");
    }
    assert!(
        t0.elapsed() < Duration::from_secs(120),
        "{:?}",
        t0.elapsed()
    );

    // Still serving.
    assert_eq!(post(addr, "/api/run", &run_body(99, 0)).status, 200);
    let (a, t) = timed_get(addr, "/");
    assert_eq!(a.status, 200);
    assert!(t < STARVED, "{t:?}");
    if let (Some(before), Some(after)) = (rss0, rss_bytes()) {
        eprintln!("RSS {} MiB -> {} MiB", before >> 20, after >> 20);
        assert!(
            after < before + RSS_GROWTH_BOUND,
            "RSS grew from {before} to {after} bytes"
        );
    } else {
        eprintln!("note: no /proc/self/status here; the RSS bound is not checked");
    }
    server.shutdown();
}
