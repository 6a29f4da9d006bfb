//! The server over real sockets on the loopback interface: several clients at once, bounded in count
//! and time; bodies over the limit; garbage on the wire.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use disagg_web::{Limits, ServeOptions, Server};

use crate::common;
use serde_json::Value;

fn start(threads: usize) -> disagg_web::RunningServer {
    let server = Server::bind(ServeOptions {
        host: "127.0.0.1".into(),
        port: 0,
        threads,
        limits: Limits::default(),
        ..ServeOptions::default()
    })
    .expect("binds a free loopback port");
    assert!(server.addr().ip().is_loopback());
    assert_ne!(server.addr().port(), 0);
    assert!(server.url().starts_with("http://127.0.0.1:"));
    server.spawn()
}

/// One HTTP/1.1 exchange: status, headers (lower-case names), body (chunked bodies decoded).
fn exchange(addr: SocketAddr, raw: &[u8]) -> (u16, String, Vec<u8>) {
    let a = common::exchange(addr, raw);
    (a.status, a.head, a.body)
}

fn post(addr: SocketAddr, path: &str, body: &str) -> (u16, String, Vec<u8>) {
    let raw = format!(
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    exchange(addr, raw.as_bytes())
}

#[test]
fn many_clients_at_once() {
    let server = start(4);
    let addr = server.addr();
    let (status, head, page) = exchange(
        addr,
        b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 200);
    assert!(head.contains("content-type: text/html"));
    assert!(String::from_utf8_lossy(&page).contains("<html"));

    // 8 clients x 6 runs of the `docs/cost-model.md#compression` preset, all at once, on 4 workers.
    let t0 = Instant::now();
    let answers: Vec<Vec<Value>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..8)
            .map(|i| {
                s.spawn(move || {
                    (0..6)
                        .map(|j| {
                            let body = if (i + j) % 3 == 0 {
                                r#"{"preset": "eth25g-14rps", "latency_samples": 200, "series": true}"#
                            } else {
                                r#"{"preset": "eth25g-14rps"}"#
                            };
                            let (status, _, b) = post(addr, "/api/run", body);
                            assert_eq!(status, 200, "{}", String::from_utf8_lossy(&b));
                            serde_json::from_slice::<Value>(&b).expect("JSON")
                        })
                        .collect()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().expect("client")).collect()
    });
    let took = t0.elapsed();
    assert!(took < Duration::from_secs(60), "{took:?}");
    let first = &answers[0][0]["summary"];
    assert_eq!(first["handoff_s"]["p99"], 9.657760737543722);
    for a in answers.iter().flatten() {
        assert_eq!(
            &a["summary"], first,
            "every client gets the same exact answer"
        );
    }
    // A sweep in parallel with a run.
    std::thread::scope(|s| {
        let a = s.spawn(|| {
            post(
                addr,
                "/api/sweep",
                r#"{"preset": "link-eth-25g", "rates": [2, 4, 6, 8, 10, 12], "compact": true}"#,
            )
        });
        let b = s.spawn(|| post(addr, "/api/handoff", r#"{"send": "layerwise"}"#));
        assert_eq!(a.join().unwrap().0, 200);
        assert_eq!(b.join().unwrap().0, 200);
    });
    server.shutdown();
}

#[test]
fn oversized_and_garbage_requests_do_not_hurt_it() {
    let server = start(2);
    let addr = server.addr();
    // A body over the limit, announced by Content-Length: 413 before reading it.
    let big = "x".repeat(Limits::default().max_body_bytes + 10);
    let (status, _, body) = post(addr, "/api/run", &big);
    assert_eq!(status, 413);
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["limit"], "max_body_bytes");
    // Garbage, a half request, a client that goes away.
    for raw in [
        &b"\x00\x01\x02 nonsense\r\n\r\n"[..],
        b"GET",
        b"POST /api/run HTTP/1.1\r\nContent-Length: 100\r\n\r\n{\"ra",
    ] {
        if let Ok(mut s) = TcpStream::connect(addr) {
            let _ = s.write_all(raw);
            let _ = s.shutdown(std::net::Shutdown::Write);
            let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
            let mut sink = Vec::new();
            let _ = s.read_to_end(&mut sink);
        }
    }
    // Errors over the wire are the API's JSON.
    let (status, head, body) = post(addr, "/api/run", r#"{"rate": "x"}"#);
    assert_eq!(status, 400);
    assert!(head.contains("content-type: application/json"));
    assert!(String::from_utf8_lossy(&body).contains("rate"));
    let (status, head, _) = exchange(
        addr,
        b"GET /api/run HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 405);
    assert!(head.contains("allow: post"));
    // Still serving.
    let (status, _, _) = post(addr, "/api/handoff", "{}");
    assert_eq!(status, 200);
    server.shutdown();
}
