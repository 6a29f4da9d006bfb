//! The connection bounds over real loopback sockets: idle sockets, however many, do not lock out
//! the page (at a bound the least recently active idle connection is closed to make room); one
//! peer address holds at most `max_connections_per_peer`; only when every connection in the way
//! is busy is a new one refused with a 503. Client sockets bind other loopback addresses
//! (127.0.0.2, ...) to be other peers.

use crate::common;

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use common::*;
use disagg_web::ServeOptions;

/// A connection to `addr` from the loopback address `127.0.0.<last>`.
fn connect_from(last: u8, addr: SocketAddr) -> TcpStream {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .expect("a runtime");
    let s = rt
        .block_on(async {
            let sock = tokio::net::TcpSocket::new_v4()?;
            sock.bind(SocketAddr::from(([127, 0, 0, last], 0)))?;
            sock.connect(addr).await
        })
        .expect("connects from another loopback address");
    let s = s.into_std().expect("a std socket");
    s.set_nonblocking(false).unwrap();
    s
}

/// `GET path` on `s` (keep-alive unless `close`), reading exactly one answer.
fn get_on(s: &mut TcpStream, path: &str, close: bool) -> Answer {
    let conn = if close { "Connection: close\r\n" } else { "" };
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n{conn}\r\n").as_bytes())
        .expect("sends");
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().unwrap());
            if buf.len() >= end + 4 + len {
                return parse(&buf[..end + 4 + len]);
            }
        }
        let n = s.read(&mut chunk).expect("reads an answer");
        assert!(
            n > 0,
            "closed before a whole answer: {:?}",
            String::from_utf8_lossy(&buf)
        );
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// `GET path` on a new connection from `127.0.0.<last>`, and how long it took.
fn timed_get_from(last: u8, addr: SocketAddr, path: &str) -> (Answer, Duration) {
    let t0 = Instant::now();
    let mut s = connect_from(last, addr);
    let a = get_on(&mut s, path, true);
    (a, t0.elapsed())
}

/// Has the server closed `s`? (Without waiting: what has arrived so far.)
fn closed(s: &TcpStream) -> bool {
    s.set_nonblocking(true).unwrap();
    let mut b = [0u8; 64];
    let r = (&*s).read(&mut b);
    s.set_nonblocking(false).unwrap();
    match r {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() != ErrorKind::WouldBlock,
    }
}

/// Waits (up to 2 s) until the server closed `s`.
fn closes(s: &TcpStream) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(2) {
        if closed(s) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

/// Lets the server's accept loop see what was just opened or closed.
fn settle() {
    std::thread::sleep(Duration::from_millis(200));
}

fn quantile(v: &mut [Duration], q: f64) -> Duration {
    v.sort();
    v[((v.len() - 1) as f64 * q).round() as usize]
}

#[test]
fn six_hundred_idle_sockets_do_not_lock_out_the_page() {
    // A long read timeout: the idle sockets are not closed by time during the test.
    let opts = ServeOptions {
        read_timeout: Duration::from_secs(60),
        ..ServeOptions::default()
    };
    let per_peer = opts.max_connections_per_peer;
    assert!(600 > opts.max_connections && opts.max_connections > per_peer);
    let server = start(opts);
    let addr = server.addr();
    let held: Vec<TcpStream> = (0..600).map(|_| idle(addr)).collect();
    settle();
    let mut took = Vec::new();
    for i in 0..30 {
        // From another address and from the idle sockets' own address.
        for (last, path) in [(2, "/"), (1, "/"), (2, "/api/catalogue")] {
            let (a, t) = timed_get_from(last, addr, path);
            assert_eq!(
                a.status,
                200,
                "try {i}, {path} from 127.0.0.{last}: {}",
                a.text()
            );
            took.push(t);
        }
    }
    let p50 = quantile(&mut took, 0.5);
    let p99 = quantile(&mut took, 0.99);
    eprintln!("GET under 600 idle sockets: p50 {p50:?}, p99 {p99:?}");
    assert!(p99 < Duration::from_secs(1), "p99 {p99:?}");
    // The per-peer bound held: the server closed all but at most `per_peer` of them.
    settle();
    let open = held.iter().filter(|s| !closed(s)).count();
    assert!(
        open <= per_peer,
        "{open} idle sockets of one peer still open"
    );
    assert!(open >= per_peer / 2, "only {open} left open");
    server.shutdown();
}

#[test]
fn at_the_global_bound_the_least_recently_active_idle_connection_closes() {
    let server = start(ServeOptions {
        max_connections: 4,
        read_timeout: Duration::from_secs(60),
        ..ServeOptions::default()
    });
    let addr = server.addr();
    // Four connections from four addresses, in this order; the first then answers a request, so
    // the second is the least recently active.
    let mut c: Vec<TcpStream> = (3..7)
        .map(|last| {
            let s = connect_from(last, addr);
            std::thread::sleep(Duration::from_millis(30));
            s
        })
        .collect();
    assert_eq!(get_on(&mut c[0], "/api/presets", false).status, 200);
    settle();
    let (a, _) = timed_get_from(2, addr, "/");
    assert_eq!(a.status, 200, "{}", a.text());
    assert!(
        closes(&c[1]),
        "the least recently active idle connection stayed open"
    );
    settle();
    for (i, s) in c.iter().enumerate().filter(|(i, _)| *i != 1) {
        assert!(!closed(s), "connection {i} was closed out of turn");
    }
    // At the bound again (the answered GET closed its connection): the next in turn goes.
    c.push(connect_from(9, addr));
    settle();
    let (a, _) = timed_get_from(2, addr, "/");
    assert_eq!(a.status, 200, "{}", a.text());
    assert!(
        closes(&c[2]),
        "the next least recently active one stayed open"
    );
    settle();
    assert!(!closed(&c[0]) && !closed(&c[3]) && !closed(&c[4]));
    // A connection that was kept still answers.
    assert_eq!(get_on(&mut c[0], "/", false).status, 200);
    server.shutdown();
}

#[test]
fn busy_connections_are_not_closed_and_a_peer_is_bounded() {
    let server = start(ServeOptions {
        max_connections: 8,
        max_connections_per_peer: 3,
        read_timeout: Duration::from_secs(60),
        ..ServeOptions::default()
    });
    let addr = server.addr();
    // One peer at its bound with idle connections: a fourth closes its oldest.
    let idle: Vec<TcpStream> = (0..3)
        .map(|_| {
            let s = connect_from(7, addr);
            std::thread::sleep(Duration::from_millis(30));
            s
        })
        .collect();
    settle();
    let (a, _) = timed_get_from(7, addr, "/");
    assert_eq!(a.status, 200, "{}", a.text());
    assert!(closes(&idle[0]));
    assert!(!closed(&idle[1]) && !closed(&idle[2]));
    // A peer whose connections are all busy (request bodies still arriving): the next one from
    // it is refused, with a 503 that says why; other peers are served.
    let stalled: Vec<TcpStream> = (0..3)
        .map(|_| {
            let mut s = connect_from(8, addr);
            s.write_all(
                b"POST /api/run HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
                  Content-Length: 1000\r\n\r\n{\"rate\": 1",
            )
            .unwrap();
            s
        })
        .collect();
    settle();
    let (a, _) = timed_get_from(8, addr, "/");
    assert_eq!(a.status, 503, "{}", a.text());
    assert_eq!(a.header("retry-after").as_deref(), Some("1"));
    assert!(a.json()["error"].as_str().unwrap().contains("your address"));
    assert!(
        stalled.iter().all(|s| !closed(s)),
        "a busy connection was closed"
    );
    let (a, _) = timed_get_from(2, addr, "/");
    assert_eq!(a.status, 200, "{}", a.text());
    server.shutdown();
}
