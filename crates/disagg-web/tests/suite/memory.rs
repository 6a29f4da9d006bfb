//! The memory budget over real sockets, with the server in a child process under an address-space
//! limit (`ulimit -v`): a simulation over the budget is a 413 naming `requests`, never an abort,
//! and the server goes on answering; a long closed-loop run stays small (its VmHWM is read from
//! /proc). The child is this test binary itself, re-run with `DISAGG_WEB_CHILD` set.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};

use common::*;
use disagg_web::{Limits, ServeOptions, Server};

/// The child's address-space limit, KiB (`ulimit -v`).
const ULIMIT_V_KIB: u64 = 1_500_000;
/// The request that used to grow the server to 4 GB and abort it.
const BIG: &str =
    r#"{"requests": 200000, "turns": 10000, "model": "llama3-8b", "devices_per_instance": 1}"#;
const SMALL: &str =
    r#"{"requests": 50, "model": "llama3-8b", "devices_per_instance": 1, "rate": 4}"#;

/// In the child (`DISAGG_WEB_CHILD` = the memory budget in MiB, or `default`): a server on a free
/// loopback port that prints `CHILD_PORT=n` and answers until its stdin closes. Otherwise nothing.
#[test]
fn child_server() {
    let Ok(budget) = std::env::var("DISAGG_WEB_CHILD") else {
        return;
    };
    let mut limits = Limits::default();
    if let Ok(mib) = budget.parse::<u64>() {
        limits.memory_budget_bytes = mib << 20;
    }
    let server = Server::bind(ServeOptions {
        host: "127.0.0.1".into(),
        port: 0,
        threads: 2,
        limits,
        ..ServeOptions::default()
    })
    .expect("binds");
    // (The harness has printed `test memory::child_server ... ` without a newline before this.)
    println!("\nCHILD_PORT={}", server.addr().port());
    std::io::stdout().flush().unwrap();
    std::thread::spawn(|| {
        let mut sink = String::new();
        while std::io::stdin().read_line(&mut sink).is_ok_and(|n| n > 0) {}
        std::process::exit(0);
    });
    server.run().unwrap();
}

/// The first 300 characters of an answer, for failure messages.
fn short(a: &Answer) -> String {
    a.text().chars().take(300).collect()
}

/// A child server under `ulimit -v` with the given budget; its address.
struct ChildServer {
    child: Child,
    addr: SocketAddr,
}

impl ChildServer {
    fn start(budget: &str) -> Self {
        let exe = std::env::current_exe().expect("the test binary");
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "ulimit -v {ULIMIT_V_KIB} && exec \"$0\" memory::child_server --exact --nocapture \
                 --test-threads=1"
            ))
            .arg(exe)
            .env("DISAGG_WEB_CHILD", budget)
            // One malloc arena per core reserves 64 MiB of address space each.
            .env("MALLOC_ARENA_MAX", "2")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starts the child");
        let out = BufReader::new(child.stdout.take().unwrap());
        let mut port = None;
        for line in out.lines() {
            let line = line.expect("reads the child's output");
            if let Some((_, p)) = line.split_once("CHILD_PORT=") {
                port = Some(p.trim().parse::<u16>().expect("a port"));
                break;
            }
        }
        let port = port.expect("the child printed its port");
        ChildServer {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
        }
    }

    /// The child's peak resident set (`VmHWM`), bytes.
    fn peak_rss(&self) -> u64 {
        let s = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("the child's /proc status");
        let line = s.lines().find(|l| l.starts_with("VmHWM:")).expect("VmHWM");
        line.split_whitespace()
            .nth(1)
            .unwrap()
            .parse::<u64>()
            .unwrap()
            * 1024
    }

    /// Still answering: the page and a small run are 200.
    fn still_serves(&self) {
        let a = get(self.addr, "/");
        assert_eq!(a.status, 200, "{}", short(&a));
        let a = post(self.addr, "/api/run", SMALL);
        assert_eq!(a.status, 200, "{}", short(&a));
    }
}

impl Drop for ChildServer {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn over_the_memory_budget_is_413_and_the_server_lives_on() {
    let server = ChildServer::start("96");
    let a = post(server.addr, "/api/run", BIG);
    assert_eq!(a.status, 413, "{}", short(&a));
    let v = a.json();
    assert_eq!(v["limit"], "memory_budget_bytes", "{v}");
    assert_eq!(v["max"], 96u64 << 20, "{v}");
    assert_eq!(v["field"], "requests", "{v}");
    let msg = v["error"].as_str().unwrap();
    assert!(msg.contains("200000") && msg.contains("budget"), "{msg}");
    server.still_serves();
    // A sweep of such points too.
    let a = post(
        server.addr,
        "/api/sweep",
        r#"{"requests": 200000, "turns": 10000, "rates": [1, 2]}"#,
    );
    assert_eq!(a.status, 413, "{}", short(&a));
    server.still_serves();
}

#[test]
fn under_ulimit_the_default_budget_holds_and_long_sessions_stay_small() {
    // The default budget is half the address-space limit: series for 200,000 requests (about
    // 1.6 GB) is refused before it allocates.
    let server = ChildServer::start("default");
    let series = BIG.replace('}', r#", "series": true}"#);
    let a = post(server.addr, "/api/run", &series);
    assert_eq!(a.status, 413, "{}", short(&a));
    assert_eq!(a.json()["limit"], "memory_budget_bytes");
    server.still_serves();
    // Without series it fits the budget: answered (or out of time), never a dropped connection.
    let a = post(server.addr, "/api/run", BIG);
    assert!([200, 413].contains(&a.status), "{}", short(&a));
    server.still_serves();
    // 30,000 requests in sessions of 10,000 turns: answered without the resident set exploding.
    let long =
        r#"{"requests": 30000, "turns": 10000, "model": "llama3-8b", "devices_per_instance": 1}"#;
    let a = post(server.addr, "/api/run", long);
    assert_eq!(a.status, 200, "{}", short(&a));
    let peak = server.peak_rss();
    eprintln!("child VmHWM {} MiB", peak >> 20);
    assert!(peak < 1 << 30, "the child's peak RSS was {peak} bytes");
    server.still_serves();
}
