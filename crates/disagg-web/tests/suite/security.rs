//! What the server accepts, over real loopback sockets: `Host`, `Origin` (and `--allow-origin`,
//! CORS preflight), `Content-Type`; no endpoint opens a file; stalled bodies, idle connections,
//! the connection bound and the simulation queue.

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use disagg_web::{Limits, ServeOptions};

fn default_server() -> disagg_web::RunningServer {
    start(ServeOptions::default())
}

#[test]
fn host_must_be_this_server() {
    let server = default_server();
    let addr = server.addr();
    let port = addr.port();
    for host in [
        "localhost".to_string(),
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        "127.0.0.1".to_string(),
        format!("[::1]:{port}"),
    ] {
        let a = exchange(
            addr,
            &request("GET", "/api/presets", &format!("Host: {host}\r\n"), ""),
        );
        assert_eq!(a.status, 200, "Host: {host}: {}", a.text());
    }
    for host in [
        "evil.example".to_string(),
        format!("evil.example:{port}"),
        format!("localhost:{}", port.wrapping_add(1).max(1)),
        format!("localhost.evil.example:{port}"),
        format!("10.1.2.3:{port}"),
    ] {
        for (m, ct) in [("GET", ""), ("POST", "Content-Type: application/json\r\n")] {
            let a = exchange(
                addr,
                &request(m, "/api/handoff", &format!("Host: {host}\r\n{ct}"), "{}"),
            );
            assert_eq!(a.status, 421, "Host: {host}: {}", a.text());
            assert!(a.head.contains("content-type: application/json"));
            let v = a.json();
            assert!(v["error"].as_str().unwrap().contains("Host"), "{v}");
        }
    }
    // No Host at all (HTTP/1.0).
    let a = exchange(addr, b"GET / HTTP/1.0\r\n\r\n");
    assert_eq!(a.status, 421, "{}", a.text());
    server.shutdown();
}

#[test]
fn post_needs_a_json_content_type() {
    let server = default_server();
    let addr = server.addr();
    for ct in [
        "",
        "Content-Type: text/plain\r\n",
        "Content-Type: application/x-www-form-urlencoded\r\n",
        "Content-Type: multipart/form-data; boundary=x\r\n",
        "Content-Type: application/jsonx\r\n",
    ] {
        for path in ["/api/handoff", "/api/run", "/api/sweep"] {
            let a = exchange(
                addr,
                &request(
                    "POST",
                    path,
                    &format!("Host: localhost\r\n{ct}"),
                    r#"{"rates": [1], "requests": 5}"#,
                ),
            );
            assert_eq!(a.status, 415, "{path} {ct:?}: {}", a.text());
            assert!(a.json()["error"]
                .as_str()
                .unwrap()
                .contains("application/json"));
        }
    }
    let a = exchange(
        addr,
        &request(
            "POST",
            "/api/handoff",
            "Host: localhost\r\nContent-Type: Application/JSON; charset=utf-8\r\n",
            "{}",
        ),
    );
    assert_eq!(a.status, 200, "{}", a.text());
    server.shutdown();
}

#[test]
fn cross_origin_requests_are_refused_unless_allowed() {
    let server = default_server();
    let addr = server.addr();
    let port = addr.port();
    let json = "Host: localhost\r\nContent-Type: application/json\r\n";
    for origin in [
        "http://evil.example",
        "null",
        "http://localhost:1",
        "https://localhost",
    ] {
        let a = exchange(
            addr,
            &request(
                "POST",
                "/api/handoff",
                &format!("{json}Origin: {origin}\r\n"),
                "{}",
            ),
        );
        assert_eq!(a.status, 403, "Origin {origin}: {}", a.text());
        assert!(a.json()["error"]
            .as_str()
            .unwrap()
            .contains("--allow-origin"));
        let a = exchange(
            addr,
            &request(
                "GET",
                "/api/catalogue",
                &format!("Host: localhost\r\nOrigin: {origin}\r\n"),
                "",
            ),
        );
        assert_eq!(a.status, 403, "GET with Origin {origin}");
        // No preflight for an origin that is not allowed.
        let a = exchange(
            addr,
            &request(
                "OPTIONS",
                "/api/run",
                &format!(
                    "Host: localhost\r\nOrigin: {origin}\r\nAccess-Control-Request-Method: POST\r\n"
                ),
                "",
            ),
        );
        assert_eq!(a.status, 403);
        assert!(a.header("access-control-allow-origin").is_none());
    }
    // The server's own origin (what the page sends) is fine, and needs no CORS headers.
    let a = exchange(
        addr,
        &request(
            "POST",
            "/api/handoff",
            &format!(
                "Host: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nOrigin: http://127.0.0.1:{port}\r\n"
            ),
            "{}",
        ),
    );
    assert_eq!(a.status, 200, "{}", a.text());
    assert!(a.header("access-control-allow-origin").is_none());
    server.shutdown();

    // --allow-origin names one more.
    let server = start(ServeOptions {
        allow_origins: vec!["http://localhost:3000/".into()],
        ..ServeOptions::default()
    });
    let addr = server.addr();
    let a = exchange(
        addr,
        &request(
            "POST",
            "/api/handoff",
            &format!("{json}Origin: http://localhost:3000\r\n"),
            "{}",
        ),
    );
    assert_eq!(a.status, 200, "{}", a.text());
    assert_eq!(
        a.header("access-control-allow-origin").as_deref(),
        Some("http://localhost:3000")
    );
    let a = exchange(
        addr,
        &request(
            "OPTIONS",
            "/api/run",
            "Host: localhost\r\nOrigin: http://localhost:3000\r\nAccess-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: content-type\r\n",
            "",
        ),
    );
    assert_eq!(a.status, 204, "{}", a.text());
    assert_eq!(
        a.header("access-control-allow-origin").as_deref(),
        Some("http://localhost:3000")
    );
    assert!(a
        .header("access-control-allow-methods")
        .unwrap()
        .contains("post"));
    assert!(a
        .header("access-control-allow-headers")
        .unwrap()
        .contains("content-type"));
    let a = exchange(
        addr,
        &request(
            "POST",
            "/api/handoff",
            &format!("{json}Origin: http://localhost:3001\r\n"),
            "{}",
        ),
    );
    assert_eq!(a.status, 403);
    server.shutdown();
}

#[test]
fn a_bad_allow_origin_is_refused_at_bind() {
    for bad in ["localhost:3000", "http://x/path", "*"] {
        let e = disagg_web::Server::bind(ServeOptions {
            port: 0,
            allow_origins: vec![bad.into()],
            ..ServeOptions::default()
        })
        .err()
        .expect("refused");
        assert!(e.contains("--allow-origin") && e.contains(bad), "{e}");
    }
}

/// A FIFO in a fresh temporary directory (None if `mkfifo` is not there).
fn fifo() -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    let dir = std::env::temp_dir().join(format!("disagg-web-fifo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    let p = dir.join("fifo");
    let _ = std::fs::remove_file(&p);
    let ok = std::process::Command::new("mkfifo")
        .arg(&p)
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some((dir, p))
}

#[test]
fn no_endpoint_opens_a_file() {
    let fifo = fifo();
    if fifo.is_none() {
        eprintln!("note: no mkfifo here; the FIFO case is skipped");
    }
    let mut paths = vec!["/etc/passwd".to_string(), "/dev/zero".to_string()];
    if let Some((_, p)) = &fifo {
        paths.push(p.display().to_string());
    }
    let fields = [
        "trace_file",
        "workload_file",
        "catalogue",
        "config",
        "spec",
        "requests_out",
    ];
    let server = default_server();
    let addr = server.addr();
    let t0 = Instant::now();
    for path in &paths {
        for field in fields {
            for (endpoint, extra) in [
                ("/api/run", r#""requests": 5"#),
                ("/api/sweep", r#""rates": [1], "requests": 5"#),
                ("/api/handoff", r#""prompt_tokens": 1024"#),
            ] {
                let body = format!(r#"{{{extra}, "{field}": "{path}"}}"#);
                // In process and over the wire.
                let r = disagg_web::handle("POST", endpoint, body.as_bytes());
                let a = post(addr, endpoint, &body);
                for (status, text) in [(r.status, r.text()), (a.status, a.text())] {
                    assert!(
                        (400..500).contains(&status),
                        "{endpoint} {body}: {status} {text}"
                    );
                    assert!(!text.contains("root:"), "{endpoint} {body}: {text}");
                    assert!(!text.contains(path.as_str()), "echoes the path: {text}");
                    let v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
                    assert_eq!(v["field"], field, "{text}");
                    assert!(v["error"].as_str().unwrap().contains("does not read files"));
                }
            }
        }
    }
    // The issue's case: a sweep that used to answer with the file's lines.
    let a = post(
        addr,
        "/api/sweep",
        r#"{"rates":[1],"trace_file":"/etc/passwd"}"#,
    );
    assert_eq!(a.status, 422, "{}", a.text());
    assert!(!a.text().contains("root:"));
    // A path-like key nested in a batch item is refused too.
    let a = post(
        addr,
        "/api/handoff",
        r#"{"batch": [{"link": "ib-ndr"}, {"catalogue": "/etc/passwd"}]}"#,
    );
    assert_eq!(a.status, 422, "{}", a.text());
    // The scenario an answer carries ("trace_file": null, as the page sends it back) is fine.
    let sc = post(addr, "/api/run", r#"{"requests": 5}"#).json()["scenario"].clone();
    assert!(sc["trace_file"].is_null(), "{sc}");
    let a = post(addr, "/api/run", &sc.to_string());
    assert_eq!(a.status, 200, "{}", a.text());
    // Nothing blocked on the FIFO or read /dev/zero.
    assert!(t0.elapsed() < Duration::from_secs(30), "{:?}", t0.elapsed());
    assert_eq!(post(addr, "/api/handoff", "{}").status, 200);
    server.shutdown();
    if let Some((dir, _)) = fifo {
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[test]
fn a_stalled_body_gets_408_and_idle_connections_close() {
    let server = start(ServeOptions {
        read_timeout: Duration::from_secs(1),
        ..ServeOptions::default()
    });
    let addr = server.addr();
    let t0 = Instant::now();
    let mut stalled = stalled_body(addr);
    let mut idle_one = idle(addr);
    let mut half_head = idle(addr);
    std::io::Write::write_all(&mut half_head, b"GET / HTTP/1.1\r\nHost: loc").unwrap();
    let (bytes, closed) = read_until_closed(&mut stalled, Duration::from_secs(10));
    assert!(closed, "the stalled connection was not closed");
    let a = parse(&bytes);
    assert_eq!(a.status, 408, "{}", a.text());
    assert!(a.json()["error"]
        .as_str()
        .unwrap()
        .contains("did not arrive"));
    let took = t0.elapsed();
    assert!(took < Duration::from_secs(5), "{took:?}");
    for s in [&mut idle_one, &mut half_head] {
        let (_, closed) = read_until_closed(s, Duration::from_secs(10));
        assert!(closed, "an idle connection stayed open");
    }
    assert!(t0.elapsed() < Duration::from_secs(8));
    assert_eq!(get(addr, "/").status, 200);
    server.shutdown();
}

#[test]
fn connections_are_bounded() {
    let server = start(ServeOptions {
        max_connections: 4,
        read_timeout: Duration::from_secs(2),
        ..ServeOptions::default()
    });
    let addr = server.addr();
    // Idle connections at the bound make room: the least recently active one is closed.
    let mut held: Vec<_> = (0..4).map(|_| idle(addr)).collect();
    std::thread::sleep(Duration::from_millis(200));
    let a = get(addr, "/");
    assert_eq!(a.status, 200, "{}", a.text());
    let (_, closed) = read_until_closed(&mut held[0], Duration::from_secs(1));
    assert!(closed, "the oldest idle connection is still open");
    drop(held);
    // Busy ones (request bodies still arriving) do not: a new connection gets a 503.
    let held: Vec<_> = (0..4).map(|_| stalled_body(addr)).collect();
    std::thread::sleep(Duration::from_millis(200));
    let a = get(addr, "/");
    assert_eq!(a.status, 503, "{}", a.text());
    assert!(a.json()["error"].as_str().unwrap().contains("connections"));
    // Once they time out (408), it serves again.
    drop(held);
    let t0 = Instant::now();
    loop {
        let a = get(addr, "/");
        if a.status == 200 {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(10), "still {}", a.status);
        std::thread::sleep(Duration::from_millis(100));
    }
    server.shutdown();
}

#[test]
fn the_simulation_queue_is_bounded() {
    // One simulation at a time, one waiting: a third gets 503 while the quick endpoints answer.
    let server = start(ServeOptions {
        threads: 1,
        sim_queue: 1,
        limits: Limits {
            time_limit: Duration::from_secs(3),
            ..Limits::default()
        },
        ..ServeOptions::default()
    });
    let addr = server.addr();
    let long = r#"{"preset": "link-ib-ndr", "requests": 200000}"#;
    std::thread::scope(|s| {
        let a = s.spawn(|| post(addr, "/api/run", long));
        std::thread::sleep(Duration::from_millis(300));
        let b = s.spawn(|| post(addr, "/api/run", long));
        std::thread::sleep(Duration::from_millis(300));
        let c = post(addr, "/api/run", r#"{"requests": 5}"#);
        assert_eq!(c.status, 503, "{}", c.text());
        assert_eq!(c.header("retry-after").as_deref(), Some("1"));
        assert!(c.json()["error"].as_str().unwrap().contains("busy"));
        let (g, took) = timed_get(addr, "/api/catalogue");
        assert_eq!(g.status, 200);
        assert!(took < Duration::from_millis(500), "{took:?}");
        for h in [a, b] {
            let r = h.join().unwrap();
            assert!([200, 413].contains(&r.status), "{}", r.text());
        }
    });
    assert_eq!(post(addr, "/api/run", r#"{"requests": 5}"#).status, 200);
    server.shutdown();
}

#[test]
fn batched_handoff_is_one_call() {
    let server = default_server();
    let addr = server.addr();
    let a = post(
        addr,
        "/api/handoff",
        r#"{"prompt_tokens": 2048, "send": "layerwise", "batch": [{"link": "eth-25g"}, {"link": "nosuch"}, {"prompt_tokens": 1.5}, {}]}"#,
    );
    assert_eq!(a.status, 200, "{}", a.text());
    let v = a.json();
    let b = v["batch"].as_array().unwrap();
    assert_eq!(b.len(), 4);
    let one = post(
        addr,
        "/api/handoff",
        r#"{"prompt_tokens": 2048, "send": "layerwise", "link": "eth-25g"}"#,
    )
    .json();
    assert_eq!(b[0], one, "a batch item is the single answer");
    assert_eq!(b[1]["status"], 422);
    assert_eq!(b[2]["status"], 400);
    assert_eq!(
        b[2]["error"],
        "field 'prompt_tokens': expected a whole number, got 1.5"
    );
    assert_eq!(b[3]["prompt_tokens"], 2048);
    let many = format!(
        r#"{{"batch": [{}]}}"#,
        vec!["{}"; Limits::default().max_handoff_batch + 1].join(",")
    );
    let a = post(addr, "/api/handoff", &many);
    assert_eq!(a.status, 413);
    assert_eq!(a.json()["limit"], "max_handoff_batch");
    server.shutdown();
}

#[test]
fn head_answers_have_no_body() {
    let server = default_server();
    let a = exchange(
        server.addr(),
        b"HEAD / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(a.status, 200);
    assert!(a.head.contains("content-type: text/html"));
    assert!(a.body.is_empty(), "{} body bytes", a.body.len());
    server.shutdown();
}

#[test]
fn duplicate_host_or_origin_headers_are_400() {
    let server = default_server();
    let addr = server.addr();
    let port = addr.port();
    let json = "Content-Type: application/json\r\n";
    for headers in [
        format!("Host: 127.0.0.1:{port}\r\nHost: evil.example\r\n"),
        format!("Host: evil.example\r\nHost: 127.0.0.1:{port}\r\n"),
        format!("Host: localhost:{port}\r\nHost: localhost:{port}\r\n"),
        format!(
            "Host: localhost:{port}\r\nOrigin: http://localhost:{port}\r\nOrigin: http://evil.example\r\n"
        ),
        format!(
            "Host: localhost:{port}\r\nOrigin: http://localhost:{port}\r\nOrigin: http://localhost:{port}\r\n"
        ),
    ] {
        for (m, path) in [("GET", "/api/catalogue"), ("POST", "/api/handoff")] {
            let a = exchange(addr, &request(m, path, &format!("{headers}{json}"), "{}"));
            assert_eq!(a.status, 400, "{m} {headers:?}: {:.200}", a.text());
            let msg = a.json()["error"].as_str().unwrap().to_string();
            assert!(msg.contains("more than one"), "{msg}");
        }
    }
    // One of each is fine.
    let a = exchange(
        addr,
        &request(
            "POST",
            "/api/handoff",
            &format!("Host: localhost:{port}\r\nOrigin: http://localhost:{port}\r\n{json}"),
            "{}",
        ),
    );
    assert_eq!(a.status, 200, "{}", a.text());
    server.shutdown();
}

#[test]
fn allow_origin_matches_exactly() {
    let server = start(ServeOptions {
        allow_origins: vec!["http://localhost:3000".into()],
        ..ServeOptions::default()
    });
    let addr = server.addr();
    let port = addr.port();
    // (With `Host: localhost:PORT` the server's own origin is http://localhost:PORT.)
    let call = |origin: &str| {
        exchange(
            addr,
            &request(
                "POST",
                "/api/handoff",
                &format!(
                    "Host: localhost:{port}\r\nContent-Type: application/json\r\nOrigin: {origin}\r\n"
                ),
                "{}",
            ),
        )
    };
    for bad in [
        "http://localhost:3000.evil.example",
        "http://localhost:30001",
        "http://localhost:300",
        "http://localhost",
        "https://localhost:3000",
        "http://localhost:3000/path",
        "http://localhost:3000@evil.example",
        "http://evil.example/http://localhost:3000",
        "http://localhost:3000 http://evil.example",
        "xhttp://localhost:3000",
    ] {
        let a = call(bad);
        assert_eq!(a.status, 403, "Origin {bad}: {}", a.text());
        assert!(a.header("access-control-allow-origin").is_none(), "{bad}");
    }
    for good in [
        "http://localhost:3000",
        "http://localhost:3000/",
        "HTTP://LOCALHOST:3000",
        "http://LocalHost:3000/",
    ] {
        let a = call(good);
        assert_eq!(a.status, 200, "Origin {good}: {}", a.text());
        assert_eq!(
            a.header("access-control-allow-origin").as_deref(),
            Some("http://localhost:3000"),
            "{good}"
        );
    }
    server.shutdown();
}
