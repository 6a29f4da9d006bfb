//! disagg-web: `disagg serve`, the chapter's interactive page (the hand-off calculator and the live
//! simulator) and the JSON API it runs on, over the same exact engine as the CLI.
//!
//! * [`Api`] answers one HTTP request without sockets: `api.handle("POST", "/api/run", body)`.
//!   Every endpoint, every limit and every error class lives there, so tests call it in process.
//! * [`serve`] binds an HTTP server (axum on tokio/hyper, with tower layers for the limits and the
//!   `Host`/`Origin`/`Content-Type` checks; simulations on a bounded blocking pool), prints
//!   `disagg serving on http://HOST:PORT/` to stderr and blocks. [`Server`] is the same in two
//!   steps (bind, then run or spawn), for tests that need the address of port 0.
//!
//! The page's assets (`assets/`) are embedded with `include_str!`: nothing is fetched from the
//! network, nothing is built with npm.
//!
//! ```
//! let r = disagg_web::handle("POST", "/api/handoff",
//!     br#"{"prompt_tokens": 2048, "link": "eth-25g", "send": "layerwise"}"#);
//! assert_eq!(r.status, 200);
//! let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
//! assert_eq!(format!("{:.1}", v["exposed_s"].as_f64().unwrap() * 1e3), "28.7");
//! ```

mod api;
use disagg_sim::input;
mod observe;
mod page;
mod server;

use std::time::Duration;

use disagg_model::Catalogue;

pub use api::Api;
pub use server::{exposure_warning, serve, RunningServer, Server};

/// Limits on what one API call may ask for. Over a limit the answer is 413 with a JSON error that
/// names the limit (`{"error": "...", "limit": "max_requests", "max": 200000}`).
#[derive(Clone, Debug, PartialEq)]
pub struct Limits {
    /// Requests of one simulation (`requests`), per run and per sweep point.
    pub max_requests: u64,
    /// Rates in one `/api/sweep` call.
    pub max_sweep_points: usize,
    /// Simulated requests over all points of one `/api/sweep` call.
    pub max_sweep_requests: u64,
    /// Points per metric of `latency_samples` (the CDFs).
    pub max_latency_samples: usize,
    /// Items of one batched `/api/handoff` call (`"batch": [...]`).
    pub max_handoff_batch: usize,
    /// Request body size, bytes.
    pub max_body_bytes: usize,
    /// Wall-clock time one call may simulate for.
    pub time_limit: Duration,
    /// Memory, bytes, that the simulations running at once may hold together (each estimated
    /// with [`disagg_sim::budget::config_bytes`] before it allocates, and held until it ends).
    /// One simulation that alone needs more gets a 413 (`memory_budget_bytes`, field
    /// `requests`); one that would fit but finds the budget taken by others gets a 503 with
    /// `Retry-After`. Default: [`default_memory_budget`].
    pub memory_budget_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_requests: 200_000,
            max_sweep_points: 32,
            max_sweep_requests: 2_000_000,
            max_latency_samples: 500,
            max_handoff_batch: 256,
            max_body_bytes: 64 * 1024,
            time_limit: Duration::from_secs(10),
            memory_budget_bytes: default_memory_budget(),
        }
    }
}

/// Half of the memory this process can have, read once at start
/// ([`disagg_sim::budget::process_limit_bytes`]: the least of the machine's available memory,
/// the address-space limit `ulimit -v` and the cgroup's `memory.max`); 2 GiB where none is known.
pub fn default_memory_budget() -> u64 {
    static BUDGET: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *BUDGET.get_or_init(|| disagg_sim::budget::process_limit_bytes().map_or(2 << 30, |b| b / 2))
}

/// How to run the server.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// Address to bind (`127.0.0.1`; `0.0.0.0` or `::` to listen on every interface).
    pub host: String,
    /// Port; 0 picks a free one (the URL printed says which).
    pub port: u16,
    /// Simulations (`/api/run`, `/api/sweep`) that run at once on the blocking pool; 0 = the
    /// available parallelism (the number of cores). Everything else is answered on the async
    /// workers and never waits for a simulation.
    pub threads: usize,
    /// Simulations that may wait for a turn when `threads` are running; beyond that, 503.
    pub sim_queue: usize,
    /// Open connections at most. At the bound a new connection closes the least recently active
    /// idle one (no request in flight); only when every one is busy does it get a 503.
    pub max_connections: usize,
    /// Open connections from one peer address at most. At the bound a new connection from that
    /// address closes that address's least recently active idle one; if all of them are busy it
    /// gets a 503. Keeps one client from holding the whole `max_connections`.
    pub max_connections_per_peer: usize,
    /// Time to send a request's head, and its body; also how long an idle keep-alive connection
    /// stays open. A body that does not arrive in time gets a 408.
    pub read_timeout: Duration,
    /// Origins besides the server's own that may call it (`--allow-origin`,
    /// `scheme://host[:port]`); CORS preflights are answered for these only.
    pub allow_origins: Vec<String>,
    /// Per-call limits.
    pub limits: Limits,
    /// The catalogue (the CLI passes the one `--catalogue FILE` extended).
    pub catalogue: Catalogue,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            host: "127.0.0.1".into(),
            port: 8080,
            threads: 0,
            sim_queue: 64,
            max_connections: 512,
            max_connections_per_peer: 64,
            read_timeout: Duration::from_secs(5),
            allow_origins: Vec::new(),
            limits: Limits::default(),
            catalogue: Catalogue::builtin(),
        }
    }
}

/// One HTTP answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// `Content-Type`.
    pub content_type: &'static str,
    /// Body bytes.
    pub body: Vec<u8>,
    /// Further headers (`Allow`, `Server-Timing`, `Cache-Control`, ...).
    pub headers: Vec<(&'static str, String)>,
}

impl Response {
    /// The body as text (lossy).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    /// The value of header `name` (case-insensitive), if set.
    pub fn header(&self, name: &str) -> Option<&str> {
        if name.eq_ignore_ascii_case("content-type") {
            return Some(self.content_type);
        }
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// [`Api::handle`] on the built-in catalogue with the default limits.
pub fn handle(method: &str, path: &str, body: &[u8]) -> Response {
    static API: std::sync::OnceLock<Api> = std::sync::OnceLock::new();
    API.get_or_init(|| Api::new(Catalogue::builtin(), Limits::default()))
        .handle(method, path, body)
}
