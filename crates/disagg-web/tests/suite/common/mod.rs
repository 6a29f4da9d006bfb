//! A tiny raw HTTP/1.1 client for the socket tests and the load example: one request per
//! connection, exact bytes on the wire, bounded in time.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use disagg_web::{Limits, RunningServer, ServeOptions, Server};

/// A server on a free loopback port with `opts` (host and port are set here).
pub fn start(opts: ServeOptions) -> RunningServer {
    let server = Server::bind(ServeOptions {
        host: "127.0.0.1".into(),
        port: 0,
        ..opts
    })
    .expect("binds a free loopback port");
    server.spawn()
}

/// The default options with `limits`.
pub fn options(limits: Limits) -> ServeOptions {
    ServeOptions {
        limits,
        ..ServeOptions::default()
    }
}

/// One answer: status, head (lower case), body.
pub struct Answer {
    pub status: u16,
    pub head: String,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }
    /// The value of header `name` (lower case), if any.
    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == name).then(|| v.trim().to_string())
        })
    }
}

/// Sends `raw` on a new connection, reads to the end (the requests say `Connection: close`).
pub fn exchange(addr: SocketAddr, raw: &[u8]) -> Answer {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connects");
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(raw).expect("sends");
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).expect("reads");
    parse(&buf)
}

/// Parses one answer (chunked bodies decoded).
pub fn parse(buf: &[u8]) -> Answer {
    let split = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no header block in {:?}", String::from_utf8_lossy(buf)));
    let head = String::from_utf8_lossy(&buf[..split]).to_ascii_lowercase();
    let mut body = buf[split + 4..].to_vec();
    let status: u16 = head[9..12].parse().expect("a status code");
    if head.contains("transfer-encoding: chunked") {
        let mut out = Vec::new();
        let mut rest = &body[..];
        loop {
            let nl = rest.windows(2).position(|w| w == b"\r\n").unwrap();
            let n = usize::from_str_radix(std::str::from_utf8(&rest[..nl]).unwrap().trim(), 16)
                .unwrap();
            if n == 0 {
                break;
            }
            out.extend_from_slice(&rest[nl + 2..nl + 2 + n]);
            rest = &rest[nl + 4 + n..];
        }
        body = out;
    }
    Answer { status, head, body }
}

/// A request with the given extra header lines (each ending in `\r\n`).
pub fn request(method: &str, path: &str, headers: &str, body: &str) -> Vec<u8> {
    format!(
        "{method} {path} HTTP/1.1\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// `POST path` with `Host: localhost` and `Content-Type: application/json`.
pub fn post(addr: SocketAddr, path: &str, body: &str) -> Answer {
    exchange(
        addr,
        &request(
            "POST",
            path,
            "Host: localhost\r\nContent-Type: application/json\r\n",
            body,
        ),
    )
}

/// `GET path` with `Host: localhost`.
pub fn get(addr: SocketAddr, path: &str) -> Answer {
    exchange(
        addr,
        format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes(),
    )
}

/// `GET path` and how long the whole answer took.
pub fn timed_get(addr: SocketAddr, path: &str) -> (Answer, Duration) {
    let t0 = Instant::now();
    let a = get(addr, path);
    (a, t0.elapsed())
}

/// A connection that sent nothing.
pub fn idle(addr: SocketAddr) -> TcpStream {
    TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connects")
}

/// A connection that sent a request head announcing 1,000 body bytes and then 10 of them.
pub fn stalled_body(addr: SocketAddr) -> TcpStream {
    let mut s = idle(addr);
    s.write_all(
        b"POST /api/run HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
          Content-Length: 1000\r\n\r\n{\"rate\": 1",
    )
    .expect("sends");
    s
}

/// Reads what the server sends on `s` until it closes (or `within` passes): the bytes, and
/// whether it closed.
pub fn read_until_closed(s: &mut TcpStream, within: Duration) -> (Vec<u8>, bool) {
    let t0 = Instant::now();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let left = within.saturating_sub(t0.elapsed());
        if left.is_zero() {
            return (buf, false);
        }
        s.set_read_timeout(Some(left)).unwrap();
        match s.read(&mut chunk) {
            Ok(0) => return (buf, true),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return (buf, false),
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => return (buf, false),
            Err(_) => return (buf, true),
        }
    }
}

/// This process's resident set size, bytes (`VmRSS` in /proc/self/status).
pub fn rss_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
